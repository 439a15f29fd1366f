// waterfall.js: x = time, one row per step nested by parent (collapsible), bars by kind,
// errors as red dots, propagation and cause links as arcs, retries as attempts,
// lifecycle badges, critical chains and the selected root cause's path highlighted.
//
// Rows are virtual: only those in view exist in the DOM, so 10,000 steps cost
// what 40 do (the content's height is set, rows are placed as the view scrolls).

const ROW_H = 24;
const OVERSCAN = 12;

function buildWaterfall(host) {
  // The axis spans the steps (a run's set-up before its first step would squeeze them).
  let t0 = Infinity, t1 = -Infinity;
  for (const s of RUN.steps) {
    t0 = Math.min(t0, s.start_ns);
    t1 = Math.max(t1, s.end_ns || s.start_ns);
  }
  if (!isFinite(t0)) { t0 = RUN.start_ns || 0; t1 = RUN.end_ns || t0; }
  const T0 = t0;
  const SPAN = Math.max(1, t1 - T0);
  const pct = (t) => (100 * (t - T0)) / SPAN;

  const collapsed = new Set();
  let rows = [];      // visible step ids in tree order
  let depthOf = new Map();
  let rowOf = new Map();

  function layoutRows() {
    rows = [];
    depthOf = new Map();
    const stack = (CHILDREN.get(null) || []).slice().reverse().map((id) => [id, 0]);
    while (stack.length) {
      const [id, depth] = stack.pop();
      rows.push(id);
      depthOf.set(id, depth);
      if (!collapsed.has(id)) {
        const kids = CHILDREN.get(id) || [];
        for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i], depth + 1]);
      }
    }
    rowOf = new Map(rows.map((id, i) => [id, i]));
    content.style.height = rows.length * ROW_H + "px";
  }
  function visibleRow(id) {
    let cur = id, hops = 0;
    while (cur !== null && !rowOf.has(cur) && hops++ < 10000) cur = parentOf(cur);
    return cur === null ? -1 : rowOf.get(cur);
  }

  // -- skeleton
  const axis = el("div", { class: "wf-axis" });
  for (let i = 0; i <= 4; i++) {
    const tick = el("span", { class: "tick" }, fmtDur(Math.round((SPAN * i) / 4)));
    tick.style.left = i * 25 + "%";
    axis.appendChild(tick);
  }
  const toolbar = el("div", { class: "wf-tools" },
    el("button", { type: "button", "data-act": "expand" }, "expand all"),
    el("button", { type: "button", "data-act": "collapse" }, "collapse all"),
    el("span", { class: "legend" }, ...Object.keys(KIND_COLOR).map((k) => {
      const sw = el("span", { class: "sw" });
      sw.style.background = KIND_COLOR[k];
      return el("span", { class: "lg" }, sw, k);
    }), el("span", { class: "lg" }, el("span", { class: "dot" }), "error"),
    el("span", { class: "lg" }, el("span", { class: "arc-sw" }), "propagation")));
  const head = el("div", { class: "wf-head" }, el("div", { class: "wf-namecol" }, "step (" + RUN.steps.length + ")"), axis);
  const content = el("div", { class: "wf-content" });
  const arcs = sv("svg", { class: "wf-arcs" });
  const scroller = el("div", { class: "wf-scroll", tabindex: "0", "aria-label": "steps" }, content);
  content.appendChild(arcs);
  const rowLayer = el("div", { class: "wf-rows" });
  content.appendChild(rowLayer);
  host.append(toolbar, head, scroller);

  toolbar.addEventListener("click", (ev) => {
    const act = ev.target.closest("button") && ev.target.closest("button").dataset.act;
    if (act === "expand") collapsed.clear();
    else if (act === "collapse") for (const [p] of CHILDREN) if (p !== null) collapsed.add(p);
    else return;
    layoutRows();
    draw();
  });

  const causeRank = new Map();
  (ANALYSIS.root_causes || []).forEach((c, i) => { if (!causeRank.has(c.step_id)) causeRank.set(c.step_id, i); });

  function rowView(id, i) {
    const s = STEPS.get(id);
    const depth = depthOf.get(id) || 0;
    const kids = CHILDREN.get(id);
    const cls = ["wf-row"];
    if (s.status === "error") cls.push("is-error");
    if (CRITICAL.has(id)) cls.push("crit");
    if (STATE.path.has(id)) cls.push("onpath");
    if (STATE.step === id) cls.push("sel");
    const row = el("div", { class: cls.join(" "), "data-step": id, role: "row" });
    row.style.top = i * ROW_H + "px";
    const name = el("div", { class: "wf-name" });
    name.style.paddingLeft = 6 + depth * 14 + "px";
    if (kids && kids.length) {
      name.appendChild(el("button", { type: "button", class: "twisty", "data-toggle": id, "aria-expanded": String(!collapsed.has(id)), title: (collapsed.has(id) ? "expand " : "collapse ") + kids.length + " children" }, collapsed.has(id) ? "▸" : "▾"));
    } else name.appendChild(el("span", { class: "twisty-pad" }));
    const chip = el("span", { class: "chip", title: s.kind });
    chip.style.background = KIND_COLOR[s.kind] || KIND_COLOR.other;
    name.append(chip, el("span", { class: "nm", title: s.name }, s.name), el("span", { class: "sid" }, "#" + shortId(id)));
    const attempts = ATTEMPTS_OF.get(id);
    if (attempts) name.appendChild(el("span", { class: "badge b-retry", title: "attempt " + s.attempt + " of " + attempts.length + " of one call" }, "↻ " + s.attempt + "/" + attempts.length));
    for (const e of ERR_BY_STEP.get(id) || []) {
      name.appendChild(el("span", { class: "badge " + (STAGE_CLASS[e.stage] || ""), title: e.type + ": " + oneLine(e.message, 200) }, e.stage));
    }
    if (causeRank.has(id)) name.appendChild(el("span", { class: "badge b-cause", title: "root-cause candidate" }, "cause #" + (causeRank.get(id) + 1)));
    const lane = el("div", { class: "wf-lane" });
    const bar = el("div", { class: "bar" + (s.end_ns === null || s.end_ns === undefined ? " open" : ""), title: s.kind + " " + s.name + " · " + fmtDur(s.duration_ns) });
    const left = pct(s.start_ns);
    const right = pct(s.end_ns === null || s.end_ns === undefined ? T0 + SPAN : s.end_ns);
    bar.style.left = left + "%";
    bar.style.width = Math.max(0.15, right - left) + "%";
    bar.style.background = KIND_COLOR[s.kind] || KIND_COLOR.other;
    lane.appendChild(bar);
    lane.appendChild(el("span", { class: "dur" }, fmtDur(s.duration_ns)));
    for (const e of ERR_BY_STEP.get(id) || []) {
      const t = e.time_ns || (e.stages && e.stages[0] && e.stages[0].time_ns) || s.end_ns || s.start_ns;
      const dot = el("span", { class: "dot", title: e.type + ": " + oneLine(e.message, 200) });
      dot.style.left = pct(t) + "%";
      lane.appendChild(dot);
    }
    row.append(name, lane);
    return row;
  }

  // Arcs: an error's propagation (stage to stage) and cause links (parent error to child).
  function arcList() {
    const out = [];
    const byId = new Map((LIFE.errors || []).map((e) => [e.error_id, e]));
    for (const e of LIFE.errors || []) {
      const crit = CRITICAL.has(e.step_id);
      const marks = (e.stages || []).filter((c) => c.step_id && STEPS.has(c.step_id));
      for (let i = 1; i < marks.length; i++) out.push({ a: marks[i - 1].step_id, ta: marks[i - 1].time_ns, b: marks[i].step_id, tb: marks[i].time_ns, crit, kind: "prop" });
      const p = e.parent_error_id && byId.get(e.parent_error_id);
      if (p && STEPS.has(p.step_id) && STEPS.has(e.step_id)) out.push({ a: p.step_id, ta: p.time_ns, b: e.step_id, tb: e.time_ns, crit, kind: "cause" });
    }
    return out.slice(0, 2000);
  }
  const ARCS = arcList();

  // The lane's box as the rows lay it out: its left edge (after the name column) and its width, which stops
  // short of the duration column (the lane's right margin).  An arc's ends are the bars' and dots' own x, and
  // the arc stays inside the lane: over neither the names nor the durations (nu33 finding 11), whatever the
  // width of the page.
  function laneBox() {
    const lane = rowLayer.querySelector(".wf-lane");
    if (lane) return { left: lane.offsetLeft, width: Math.max(10, lane.clientWidth) };
    const w = content.clientWidth;
    return { left: 320, width: Math.max(10, w - 320 - 64) };
  }
  // How far an arc between xa and xb bows, signed (negative: left): left into the bars where the lane has
  // room, else right, never past the lane's edges (a cubic whose two control points are offset by b reaches
  // 0.75 b beyond the nearer end, at most).
  function arcBend(xa, xb, span, lane) {
    const want = Math.min(120, 18 + span * 6);
    const roomLeft = (Math.min(xa, xb) - lane.left - 2) / 0.75;
    const roomRight = (lane.left + lane.width - Math.max(xa, xb) - 2) / 0.75;
    if (roomLeft >= want || roomLeft >= roomRight) return -Math.max(0, Math.min(want, roomLeft));
    return Math.max(0, Math.min(want, roomRight));
  }

  function drawArcs(first, last) {
    clear(arcs);
    const w = content.clientWidth;
    const lane = laneBox();
    arcs.setAttribute("width", String(w));
    arcs.setAttribute("height", String(rows.length * ROW_H));
    for (const a of ARCS) {
      const ra = visibleRow(a.a), rb = visibleRow(a.b);
      if (ra < 0 || rb < 0 || ra === rb) continue;
      if (Math.max(ra, rb) < first || Math.min(ra, rb) > last) continue;
      const at = (t) => lane.left + (lane.width * Math.max(0, Math.min(100, pct(t)))) / 100;
      const xa = at(a.ta || STEPS.get(a.a).start_ns), xb = at(a.tb || STEPS.get(a.b).start_ns);
      const ya = ra * ROW_H + ROW_H / 2, yb = rb * ROW_H + ROW_H / 2;
      const bend = arcBend(xa, xb, Math.abs(rb - ra), lane);
      arcs.appendChild(sv("path", { class: "arc " + a.kind + (a.crit ? " crit" : ""), d: `M ${xa} ${ya} C ${xa + bend} ${ya}, ${xb + bend} ${yb}, ${xb} ${yb}` }));
    }
  }

  let pending = false;
  function draw() {
    pending = false;
    const top = scroller.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
    const last = Math.min(rows.length - 1, Math.ceil((top + scroller.clientHeight) / ROW_H) + OVERSCAN);
    clear(rowLayer);
    const frag = document.createDocumentFragment();
    for (let i = first; i <= last; i++) frag.appendChild(rowView(rows[i], i));
    rowLayer.appendChild(frag);
    drawArcs(first, last);
  }
  function schedule() { if (!pending) { pending = true; requestAnimationFrame(draw); } }
  scroller.addEventListener("scroll", schedule);
  window.addEventListener("resize", schedule);
  rowLayer.addEventListener("click", (ev) => {
    const t = ev.target.closest("[data-toggle]");
    if (t) {
      const id = t.dataset.toggle;
      if (collapsed.has(id)) collapsed.delete(id); else collapsed.add(id);
      layoutRows();
      draw();
      return;
    }
    const row = ev.target.closest("[data-step]");
    if (row) selectStep(row.dataset.step, { reveal: false });
  });
  scroller.addEventListener("keydown", (ev) => {
    if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp") return;
    ev.preventDefault();
    const i = STATE.step && rowOf.has(STATE.step) ? rowOf.get(STATE.step) : -1;
    const j = Math.max(0, Math.min(rows.length - 1, i + (ev.key === "ArrowDown" ? 1 : -1)));
    selectStep(rows[j]);
  });

  function reveal(id) {
    let changed = false;
    for (let p = parentOf(id), hops = 0; p !== null && hops < 10000; p = parentOf(p), hops++) {
      if (collapsed.delete(p)) changed = true;
    }
    if (changed) layoutRows();
    const i = rowOf.get(id);
    if (i === undefined) return;
    const top = i * ROW_H, view = scroller.clientHeight;
    if (top < scroller.scrollTop || top + ROW_H > scroller.scrollTop + view) scroller.scrollTop = Math.max(0, top - view / 2);
  }
  onChange((ev) => {
    if (ev.type === "step" && ev.reveal && STATE.step) reveal(STATE.step);
    draw();
  });
  layoutRows();
  draw();
  return { reveal, rows: () => rows };
}
