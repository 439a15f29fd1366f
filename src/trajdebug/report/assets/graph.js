// graph.js: the layered dependency graph (the menu's views laid out at report time in Python, a
// group's or chunk's view by layout.js the first time it is opened), with views collapsed by parent
// or agent, zoom (wheel, buttons), pan (drag), edges styled by kind and origin, and the selected root
// cause's path highlighted.

const NODE_W = 150, NODE_H = 24;

function buildGraph(host) {
  const G = D.graph || { views: {}, default: null };
  let view = null, viewId = null;
  let scale = 1, tx = 20, ty = 20;

  const select = el("select", { "aria-label": "graph view" });
  const search = el("input", { type: "search", class: "g-search", "aria-label": "find a step by name", title: "find a step by name (Enter selects the first match)" });
  search.setAttribute("placeholder", "find step");
  const crumbs = el("span", { class: "crumbs" });
  const info = el("span", { class: "g-info" });
  const bar = el("div", { class: "g-tools" },
    el("label", {}, "view ", select),
    el("button", { type: "button", "data-act": "up", title: "back to the enclosing view" }, "↑ up"),
    el("button", { type: "button", "data-act": "in", title: "zoom in" }, "+"),
    el("button", { type: "button", "data-act": "out", title: "zoom out" }, "−"),
    el("button", { type: "button", "data-act": "fit", title: "fit to the window" }, "fit"),
    search, crumbs, info);
  const legend = el("div", { class: "g-legend" },
    ...Object.keys(EDGE_COLOR).map((k) => {
      const sw = el("span", { class: "sw-line" });
      sw.style.borderTopColor = EDGE_COLOR[k];
      return el("span", { class: "lg" }, sw, k);
    }),
    el("span", { class: "lg" }, el("span", { class: "sw-line o-tracked" }), "tracked"),
    el("span", { class: "lg" }, el("span", { class: "sw-line o-declared" }), "declared"),
    el("span", { class: "lg" }, el("span", { class: "sw-line o-inferred" }), "inferred (opacity = confidence)"),
    el("span", { class: "lg" }, el("span", { class: "sw-group" }), "group: click to open"));
  const svg = sv("svg", { class: "g-svg", role: "img", "aria-label": "dependency graph" });
  const defs = sv("defs");
  for (const [k, c] of Object.entries(EDGE_COLOR)) {
    defs.appendChild(sv("marker", { id: "arrow-" + k, viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto" },
      sv("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: c })));
  }
  defs.appendChild(sv("marker", { id: "arrow-path", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto" },
    sv("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#dc2626" })));
  svg.appendChild(defs);
  const stage = sv("g", { class: "g-stage" });
  const edgeLayer = sv("g", { class: "g-edges" });
  const nodeLayer = sv("g", { class: "g-nodes" });
  stage.append(edgeLayer, nodeLayer);
  svg.appendChild(stage);
  const frame = el("div", { class: "g-frame" }, svg);
  host.append(bar, legend, frame);

  const order = ["slice", "all", "overview", "agents"];
  for (const id of order) {
    if (G.views[id]) select.appendChild(el("option", { value: id }, G.views[id].title));
  }

  function apply() { stage.setAttribute("transform", `translate(${tx} ${ty}) scale(${scale})`); }
  function fit() {
    if (!view) return;
    const w = frame.clientWidth || 800, h = frame.clientHeight || 500;
    const gw = view.width + NODE_W + 40, gh = view.height + NODE_H + 40;
    scale = Math.max(0.05, Math.min(1.5, w / gw, h / gh));
    tx = (w - (view.width + NODE_W) * scale) / 2 + (NODE_W / 2) * scale;
    ty = Math.max(10, (h - view.height * scale) / 2);
    apply();
  }
  // The node of this view that stands for a step: itself, its collapsed ancestor, its chunk.
  function repOf(stepId) {
    if (!view) return -1;
    if (view.id === "agents") {
      const s = STEPS.get(stepId);
      return view.index.get("a:" + ((s && s.agent) || "(no agent)")) ?? -1;
    }
    for (let cur = stepId, hops = 0; cur !== null && hops < 10000; cur = parentOf(cur), hops++) {
      if (view.index.has(cur)) return view.index.get(cur);
      if (view.chunkOf.has(cur)) return view.chunkOf.get(cur);
      if (view.index.has("x:" + cur)) return view.index.get("x:" + cur);
    }
    const s = STEPS.get(stepId);  // the slice view groups the rest by agent when it has many groups
    return view.index.get("a:" + ((s && s.agent) || "(no agent)")) ?? -1;
  }
  function edgePath(pts) {
    let d = `M ${pts[0][0] + NODE_W / 2} ${pts[0][1]}`;
    for (let i = 1; i < pts.length; i++) {
      const [x0, y0] = i === 1 ? [pts[0][0] + NODE_W / 2, pts[0][1]] : pts[i - 1];
      const last = i === pts.length - 1;
      const x1 = last ? pts[i][0] - NODE_W / 2 : pts[i][0], y1 = pts[i][1];
      const mx = (x0 + x1) / 2;
      d += ` C ${mx} ${y0}, ${mx} ${y1}, ${x1} ${y1}`;
    }
    return d;
  }

  // A view shipped as nodes and edges only is laid out once, rounded as the report rounds.
  function place(v) {
    if (v.width !== undefined) return;
    const r1 = (x) => Math.round(x * 10) / 10;
    const lay = layeredLayout(v.nodes.length, v.edges.map((e) => [e.s, e.t]));
    v.nodes.forEach((n, i) => { n.x = r1(lay.x[i]); n.y = r1(lay.y[i]); });
    v.edges.forEach((e, i) => { e.pts = lay.routes[i].points.map(([x, y]) => [r1(x), r1(y)]); });
    v.width = r1(lay.width);
    v.height = r1(lay.height);
    v.crossings = lay.crossings;
  }

  function show(id, keepZoom) {
    const v = G.views[id];
    if (!v) return;
    place(v);
    viewId = id;
    view = v;
    if (!v.index) {
      v.index = new Map(v.nodes.map((n, i) => [n.id, i]));
      v.chunkOf = new Map();
      v.nodes.forEach((n, i) => { for (const m of n.members || []) v.chunkOf.set(m, i); });
    }
    if ([...select.options].some((o) => o.value === id)) select.value = id;
    clear(crumbs);
    const trail = [];
    for (let cur = v, hops = 0; cur && hops < 100; cur = cur.parent ? G.views[cur.parent] : null, hops++) trail.unshift(cur);
    trail.forEach((c, i) => {
      if (i) crumbs.appendChild(document.createTextNode(" › "));
      const b = el("button", { type: "button", class: "crumb", "data-view": c.id }, c.title);
      crumbs.appendChild(b);
    });
    info.textContent = v.nodes.length + " nodes, " + v.edges.length + " edges";
    clear(edgeLayer);
    clear(nodeLayer);
    v.edges.forEach((e, i) => {
      const kind = e.kinds[0] || "data";
      const p = sv("path", {
        class: "edge o-" + e.origin, d: edgePath(e.pts), stroke: EDGE_COLOR[kind] || "#999",
        "marker-end": "url(#arrow-" + (EDGE_COLOR[kind] ? kind : "data") + ")", "data-edge": i,
      });
      if (e.origin === "inferred") p.setAttribute("stroke-opacity", String(0.25 + 0.75 * e.conf));
      p.appendChild(sv("title", {}, e.kinds.join(", ") + " · " + e.origin + (e.origin === "inferred" ? " " + e.conf : "") + (e.n > 1 ? " · " + e.n + " dependencies" : "")));
      edgeLayer.appendChild(p);
    });
    v.nodes.forEach((n, i) => {
      const s = n.step ? STEPS.get(n.step) : null;
      const kind = s ? s.kind : "agent";
      const g = sv("g", { class: "node t-" + n.type + (s && s.status === "error" ? " is-error" : "") + (s && CRITICAL.has(s.step_id) ? " crit" : ""), transform: `translate(${n.x - NODE_W / 2} ${n.y - NODE_H / 2})`, "data-node": i, tabindex: "0" });
      g.appendChild(sv("rect", { width: NODE_W, height: NODE_H, rx: "5", class: "box" }));
      g.appendChild(sv("rect", { width: "6", height: NODE_H, rx: "2", fill: KIND_COLOR[kind] || KIND_COLOR.other }));
      const count = n.size && n.size > 1 ? " (" + n.size + ")" : "";
      g.appendChild(sv("text", { x: "12", y: String(NODE_H / 2 + 4) }, oneLine(n.label, 19 - count.length) + count));
      g.appendChild(sv("title", {}, (n.type === "step" ? "" : n.type + ": ") + n.label + count + (s ? " #" + shortId(s.step_id) : "")));
      nodeLayer.appendChild(g);
    });
    if (!keepZoom) fit();
    highlight();
    mark();
  }

  // Search by name: the nodes of this view whose label holds the text are marked; Enter
  // selects the first matching step of the run (shown through its node here, whatever the view).
  function matches() {
    const q = search.value.trim().toLowerCase();
    if (!q) return [];
    return RUN.steps.filter((s) => String(s.name).toLowerCase().includes(q));
  }
  function mark() {
    if (!view) return;
    const q = search.value.trim().toLowerCase();
    let n = 0;
    view.nodes.forEach((node, i) => {
      const g = nodeLayer.querySelector(`[data-node="${i}"]`);
      const hit = !!q && String(node.label).toLowerCase().includes(q);
      g.classList.toggle("match", hit);
      n += hit;
    });
    info.textContent = view.nodes.length + " nodes, " + view.edges.length + " edges" + (q ? " · " + plural(matches().length, "step") + " named so, " + n + " here" : "");
  }
  search.addEventListener("input", mark);
  search.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter") return;
    ev.preventDefault();
    const first = matches()[0];
    if (!first) return;
    selectStep(first.step_id);
    const r = repOf(first.step_id);
    if (r >= 0) {
      const n = view.nodes[r];
      const w = frame.clientWidth || 800, h = frame.clientHeight || 500;
      tx = w / 2 - n.x * scale;
      ty = h / 2 - n.y * scale;
      apply();
    }
  });

  function highlight() {
    if (!view) return;
    for (const g of nodeLayer.querySelectorAll(".node")) g.classList.remove("onpath", "sel");
    for (const p of edgeLayer.querySelectorAll(".edge")) { p.classList.remove("onpath"); p.removeAttribute("data-onpath"); }
    const reps = STATE.pathList.map(repOf).filter((i) => i >= 0);
    const onNodes = new Set(reps);
    for (const i of onNodes) nodeLayer.querySelector(`[data-node="${i}"]`).classList.add("onpath");
    const pairs = new Set();
    for (let i = 1; i < reps.length; i++) if (reps[i - 1] !== reps[i]) pairs.add(reps[i - 1] + ">" + reps[i]);
    view.edges.forEach((e, i) => {
      if (pairs.has(e.s + ">" + e.t)) {
        const p = edgeLayer.querySelector(`[data-edge="${i}"]`);
        p.classList.add("onpath");
        p.setAttribute("data-onpath", "1");
        edgeLayer.appendChild(p); // on top
      }
    });
    if (STATE.step) {
      const r = repOf(STATE.step);
      if (r >= 0) nodeLayer.querySelector(`[data-node="${r}"]`).classList.add("sel");
    }
  }

  select.addEventListener("change", () => show(select.value));
  bar.addEventListener("click", (ev) => {
    const b = ev.target.closest("button");
    if (!b) return;
    if (b.dataset.view) { show(b.dataset.view); return; }
    const act = b.dataset.act;
    if (act === "fit") fit();
    else if (act === "up" && view && view.parent) show(view.parent);
    else if (act === "in" || act === "out") zoomAt(frame.clientWidth / 2, frame.clientHeight / 2, act === "in" ? 1.5 : 1 / 1.5);
  });
  function zoomAt(px, py, f) {
    const ns = Math.max(0.03, Math.min(4, scale * f));
    tx = px - ((px - tx) * ns) / scale;
    ty = py - ((py - ty) * ns) / scale;
    scale = ns;
    apply();
  }
  frame.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = frame.getBoundingClientRect();
    zoomAt(ev.clientX - r.left, ev.clientY - r.top, ev.deltaY < 0 ? 1.15 : 1 / 1.15);
  }, { passive: false });
  let drag = null;
  frame.addEventListener("pointerdown", (ev) => {
    if (ev.target.closest(".node")) return;
    drag = { x: ev.clientX, y: ev.clientY, tx, ty };
    frame.setPointerCapture(ev.pointerId);
    frame.classList.add("dragging");
  });
  frame.addEventListener("pointermove", (ev) => {
    if (!drag) return;
    tx = drag.tx + ev.clientX - drag.x;
    ty = drag.ty + ev.clientY - drag.y;
    apply();
  });
  const stop = () => { drag = null; frame.classList.remove("dragging"); };
  frame.addEventListener("pointerup", stop);
  frame.addEventListener("pointercancel", stop);
  function activate(g) {
    const n = view.nodes[Number(g.dataset.node)];
    if (n.type === "group" || n.type === "chunk") {
      const target = "g:" + n.id;
      if (G.views[target]) { if (n.step) selectStep(n.step); show(target); return; }
    }
    if (n.step) selectStep(n.step);
  }
  nodeLayer.addEventListener("click", (ev) => {
    const g = ev.target.closest(".node");
    if (g) activate(g);
  });
  nodeLayer.addEventListener("keydown", (ev) => {
    const g = ev.target.closest(".node");
    if (g && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); activate(g); }
  });
  onChange(() => highlight());
  show(G.default || order.find((id) => G.views[id]));
  return { show, fit, current: () => viewId };
}
