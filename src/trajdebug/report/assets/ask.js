// ask.js: the "find the cause" panel: one question at a time (is this step's output right, what the
// run needed there?) until the root.  In a report file the guided search runs here (a compact port of
// trajdebug.analysis._guided, strategy "prior"): the answers stay in the page and can be downloaded
// as JSON lines of answer records (`trajdebug answers import SOURCE FILE` stores them with the run).
// Under `trajdebug serve` (D.ask.endpoint) the server runs the search and stores each answer.

const ASK = D.ask || null;
const LEAD = 0.5;  // trajdebug.analysis._guided._LEAD: the mass share that makes a candidate the leader
const POOL = 200;  // trajdebug.analysis._guided._POOL: questions scored per turn at most on large slices

// -- the search (Shapiro's algorithmic debugging over the failure's slice) ---------------------
// Sets of slice steps are bit sets (Uint32Array words), as the Python search uses integers: a
// 10,000-step slice costs 1.25 MB per 1,000 reaches, not a Set per step.
function bitset(n) { return new Uint32Array((n + 31) >>> 5); }
function hasBit(b, i) { return (b[i >>> 5] >>> (i & 31)) & 1; }
function setBit(b, i) { b[i >>> 5] |= 1 << (i & 31); }
function bitsOf(b) {
  const out = [];
  for (let w = 0; w < b.length; w++) {
    let x = b[w];
    while (x) { const t = x & -x; out.push((w << 5) + 31 - Math.clz32(t)); x ^= t; }
  }
  return out;
}
function andOf(a, b) { const o = new Uint32Array(a.length); let any = false; for (let w = 0; w < a.length; w++) { o[w] = a[w] & b[w]; if (o[w]) any = true; } return any ? o : null; }
function popcount(b) { let c = 0; for (let w = 0; w < b.length; w++) { let x = b[w] - ((b[w] >>> 1) & 0x55555555); x = (x & 0x33333333) + ((x >>> 2) & 0x33333333); c += (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24; } return c; }

function guidedEngine(A) {
  const n = A.ids.length;
  const F = A.ids.indexOf(A.failure);
  const verdict = A.verdict.slice();
  const answered = A.answered.slice();
  const log = (A.answers || []).map((a) => ({ step_id: a.step_id, correct: a.correct, by: a.by }));
  const given = [];
  const children = A.ids.map(() => []);
  const parents = A.parents.map((ps) => ps.slice());  // an audit adds inputs the recording missed
  parents.forEach((ps, i) => { for (const p of ps) children[p].push(i); });
  const auditedFor = new Map();  // step asked in an audit -> the proved step it was asked for
  const mass = (b) => { let t = 0; if (b) for (const i of bitsOf(b)) t += A.prior[i]; return t; };
  // Each step's backward reach avoiding correct-marked steps (ids are in topological order).
  function reaches() {
    const r = new Array(n);
    for (let i = 0; i < n; i++) {
      const b = bitset(n);
      r[i] = b;
      if (i !== F && verdict[i] === true) continue;
      setBit(b, i);
      for (const p of parents[i]) { const q = r[p]; for (let w = 0; w < b.length; w++) b[w] |= q[w]; }
    }
    return r;
  }
  // The candidates: every wrong step's reach intersected, deepest first; a disjoint one is a conflict.
  function compute() {
    const r = reaches();
    const size = r.map(popcount);
    let cand = r[F], focus = F, conflict = null;
    const wrong = [];
    for (let i = 0; i < n; i++) if ((i === F || verdict[i] === false) && hasBit(r[F], i)) wrong.push(i);
    wrong.sort((a, b) => size[a] - size[b] || b - a);
    for (const i of wrong) {
      const both = andOf(cand, r[i]);
      if (!both) { conflict = [focus, i]; break; }
      cand = both;
      if (size[i] <= size[focus]) focus = i;
    }
    return { r, cand, focus, conflict };
  }
  const entropy = (p) => (p <= 0 || p >= 1 ? 0 : -(p * Math.log2(p) + (1 - p) * Math.log2(1 - p)));
  const better = (k, key) => k[0] > key[0] || (k[0] === key[0] && (k[1] > key[1] || (k[1] === key[1] && k[2] > key[2])));
  function next() {
    if (F < 0) return null;
    const { r, cand, focus, conflict } = compute();
    if (conflict) return null;  // the page does not re-ask: it names both sides
    const members = bitsOf(cand);
    if (members.length === 1 && members[0] === focus) return audit(focus);
    let open = members.filter((i) => i !== F && !answered[i]);
    if (!open.length) return null;
    const total = mass(cand) || 1;
    const openSet = new Set(open);
    const lead = leader(members, cand, total, openSet, r);
    if (lead !== null) return A.ids[lead];
    if (open.length > POOL) {
      const inputs = parents[focus].filter((p) => openSet.has(p));
      const likely = open.slice().sort((a, b) => A.prior[b] - A.prior[a]).slice(0, POOL);
      open = [...new Set([...likely, ...inputs])].sort((a, b) => a - b);
    }
    let best = open[open.length - 1], key = [-1, 0, 0];
    for (const i of open) {
      const h = Math.round(entropy(Math.min(1, mass(andOf(r[i], cand)) / total)) * 1e9) / 1e9;
      const k = [h, A.prior[i], i];
      if (better(k, key)) { best = i; key = k; }
    }
    return A.ids[best];
  }
  // The audit: a proof whose root's inputs were only inferred is tested against the likeliest earlier
  // leaf steps no recorded path joins to it (GuidedSearch._audit).
  function audit(focus) {
    if (auditedFor.size >= (A.audit || 0) || !(A.weak && A.weak[focus])) return null;
    const anc = new Set([focus]);
    const todo = [focus];
    while (todo.length) for (const p of parents[todo.pop()]) if (!anc.has(p)) { anc.add(p); todo.push(p); }
    let pick = null;
    for (let i = 0; i < focus; i++) {
      if (anc.has(i) || answered[i] || !A.auditable[i] || A.start[i] > A.start[focus]) continue;
      if (pick === null || A.prior[i] > A.prior[pick] || (A.prior[i] === A.prior[pick] && i > pick)) pick = i;
    }
    if (pick === null) return null;
    auditedFor.set(pick, focus);
    return A.ids[pick];
  }
  // Hat-Delta's shortcut: one candidate holding most of the mass is proven or refuted directly
  // (itself, then its open inputs, the likeliest wrong first).
  function leader(members, cand, total, open, r) {
    let best = null;
    for (const i of members) if (best === null || A.prior[i] > A.prior[best] || (A.prior[i] === A.prior[best] && i > best)) best = i;
    if (best === null || A.prior[best] < LEAD * total) return null;
    if (open.has(best)) return best;
    let pick = null, pickKey = null;
    for (const p of parents[best]) {
      if (!open.has(p)) continue;
      const k = mass(andOf(r[p], cand));
      if (pick === null || k > pickKey || (k === pickKey && p > pick)) { pick = p; pickKey = k; }
    }
    return pick;
  }
  function ranked(members) {
    const w = new Map();
    for (const i of members) {
      let x = A.prior[i];
      if (parents[i].every((p) => verdict[p] === true)) x *= 4;
      if (verdict[i] === false) x *= 2;
      w.set(i, x);
    }
    const total = [...w.values()].reduce((a, b) => a + b, 0) || 1;
    return [...w.keys()].sort((a, b) => w.get(b) - w.get(a) || b - a).map((i) => [A.ids[i], w.get(i) / total]);
  }
  // Breadth-first from the root to the failure, through wrong-marked steps first (as _path does).
  function path(root) {
    const from = new Map([[root, null]]);
    let frontier = [root];
    while (frontier.length && !from.has(F)) {
      const nextFrontier = [];
      for (const i of frontier) {
        const kids = children[i].filter((c) => !from.has(c));
        kids.sort((a, b) => (verdict[a] !== false) - (verdict[b] !== false) || a - b);
        for (const c of kids) if (!from.has(c)) { from.set(c, i); nextFrontier.push(c); }
      }
      frontier = nextFrontier;
    }
    if (!from.has(F)) return [A.ids[root]];
    const out = [];
    for (let i = F; i !== null; i = from.get(i)) out.unshift(A.ids[i]);
    return out;
  }
  function result() {
    const { cand, focus, conflict } = compute();
    if (conflict) return { root: null, certain: false, conflict: conflict.map((i) => A.ids[i]), path: [], candidates: [] };
    const members = bitsOf(cand);
    const certain = members.length === 1 && members[0] === focus && verdict[focus] === false;
    const cands = ranked(members);
    const root = certain ? A.ids[focus] : (cands.length ? cands[0][0] : null);
    return { root, certain, conflict: [], path: root ? path(A.ids.indexOf(root)) : [], candidates: cands };
  }
  function answer(stepId, correct) {
    const i = A.ids.indexOf(stepId);
    if (i < 0) return;
    verdict[i] = i === F ? false : correct;  // a person's answer stands over any stored one
    answered[i] = true;
    const proved = auditedFor.get(i);
    if (proved !== undefined && correct === false && !parents[proved].includes(i)) {
      parents[proved].push(i);
      parents[proved].sort((a, b) => a - b);
      children[i].push(proved);
    }
    const a = { step_id: stepId, correct, by: "person", at_ns: Date.now() * 1e6 };
    given.push(a);
    log.push(a);
  }
  return { next, result, answer, given, log };
}

// -- the panel ---------------------------------------------------------------------------------
const ANSWER_WORDS = [["correct", true, "y"], ["wrong", false, "n"], ["don't know", null, "?"]];
function answerWord(c) { return c === true ? "correct" : c === false ? "wrong" : "don't know"; }

const POSITION = new Map(RUN.steps.map((s, i) => [s.step_id, i + 1]));
// The question about one step, from the embedded run (what trajdebug.report.question.question_for gives).
function questionFromRun(sid, number) {
  const s = STEPS.get(sid) || {};
  const parts = ["step " + POSITION.get(sid) + " of " + RUN.steps.length];
  if (s.parent_id && STEPS.has(s.parent_id)) parts.push("inside '" + STEPS.get(s.parent_id).name + "'");
  if (s.agent) parts.push("agent '" + s.agent + "'");
  const seen = new Set();
  const producers = [];
  for (const d of s.deps || []) {
    if (!STEPS.has(d.step_id) || (d.run_id && d.run_id !== RUN.run_id) || seen.has(d.step_id)) continue;
    seen.add(d.step_id);
    const p = STEPS.get(d.step_id);
    producers.push({ step_id: p.step_id, name: p.name, kind: p.kind, output: p.output });
  }
  return { step_id: sid, name: s.name, kind: s.kind, where: parts.join(", "), number, input: s.input, output: s.output, wrote: (s.attributes && s.attributes.state_values) || null, producers };
}

function questionView(q, onAnswer) {
  const box = el("div", { class: "ask-q", id: "ask-question", "data-step": q.step_id });
  box.appendChild(el("h3", {}, "Question " + q.number + ": ", el("span", { class: "ask-kind" }, q.kind + " "),
    el("strong", {}, q.name), " #" + shortId(q.step_id)));
  box.appendChild(el("div", { class: "note" }, q.where));
  box.appendChild(section("Input", valueView(q.input)));
  box.appendChild(section("Output", valueView(q.output)));
  if (q.wrote != null) box.appendChild(section("Wrote to run.state", valueView(q.wrote)));
  const prods = q.producers.length
    ? el("ul", { class: "ask-producers" }, ...q.producers.map((p) => el("li", {},
        el("button", { type: "button", class: "link", "data-step": p.step_id }, (p.kind || "") + " " + (p.name || "?") + " #" + shortId(p.step_id)),
        ": " + oneLine(typeof p.output === "string" ? p.output : JSON.stringify(p.output), 160))))
    : el("p", { class: "note" }, "Its inputs have no recorded producer.");
  box.appendChild(section("Its inputs came from", prods));
  box.appendChild(el("p", {}, el("strong", {}, "Is this output right, what the run needed here?")));
  const bar = el("div", { class: "ask-buttons" });
  for (const [word, value, key] of ANSWER_WORDS) {
    const b = el("button", { type: "button", class: "ask-" + key.replace("?", "unknown"), "data-answer": word, title: "key " + key }, word);
    b.addEventListener("click", () => onAnswer(q.step_id, value));
    bar.appendChild(b);
  }
  box.appendChild(bar);
  box.addEventListener("click", (ev) => { const b = ev.target.closest("button[data-step]"); if (b) selectStep(b.dataset.step); });
  return box;
}

function resultView(g, answers) {
  const box = el("div", { class: "ask-result", id: "ask-result", "data-root": g.root || "", "data-certain": String(!!g.certain) });
  if (g.conflict && g.conflict.length) {
    box.appendChild(el("p", {}, "The answers admit no single root: " + g.conflict.map(label).join(" or ")));
    return box;
  }
  if (!g.root) { box.appendChild(el("p", {}, "No root found.")); return box; }
  box.appendChild(el("h3", {}, "Root: ", el("button", { type: "button", class: "link", "data-step": g.root }, label(g.root)),
    g.certain ? " (certain: its output is wrong and every input it consumed is correct)" : " (likeliest so far; not proven by the answers)"));
  const root = STEPS.get(g.root);
  const inputs = new Set(((root && root.deps) || []).map((d) => d.step_id));
  const proof = answers.filter((a) => a.step_id === g.root || inputs.has(a.step_id));
  if (proof.length) box.appendChild(section("The answers that prove it", el("ul", {}, ...proof.map((a) => el("li", {}, answerWord(a.correct) + " " + label(a.step_id) + " (by " + a.by + ")")))));
  if (g.path && g.path.length) box.appendChild(section("Path to the failure", el("p", {}, g.path.map(label).join(" → "))));
  box.addEventListener("click", (ev) => { const b = ev.target.closest("button[data-step]"); if (b) selectStep(b.dataset.step); });
  return box;
}

function answersView(answers) {
  if (!answers.length) return null;
  return section("Answers (" + answers.length + ")", el("ol", { class: "ask-answers" },
    ...answers.map((a) => el("li", {}, answerWord(a.correct) + " " + label(a.step_id) + " (by " + a.by + ")"))));
}

function downloadLink(given) {
  const lines = given.map((a) => JSON.stringify({ v: 1, t: "answer", run_id: RUN.run_id, step_id: a.step_id, correct: a.correct, by: a.by, at_ns: a.at_ns, reason: null })).join("\n") + "\n";
  const a = el("a", { id: "ask-download", class: "button" }, "Download the " + given.length + " answer(s) (JSON lines)");
  a.href = "data:application/x-ndjson;charset=utf-8," + encodeURIComponent(lines);
  a.download = "answers-" + shortId(RUN.run_id) + ".jsonl";
  return el("p", {}, a, el("span", { class: "note" }, " store them with the run: trajdebug answers import SOURCE FILE"));
}

// The terminal's keys work in the page too while the panel is shown: y correct, n wrong, ? don't know.
document.addEventListener("keydown", (ev) => {
  const panel = document.getElementById("ask");
  if (!panel || panel.hidden || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.target && /^(INPUT|TEXTAREA|SELECT)$/.test(ev.target.tagName)) return;
  const word = { y: "correct", n: "wrong", "?": "don't know" }[ev.key];
  const b = word && panel.querySelector('#ask-question .ask-buttons button[data-answer="' + word + '"]');
  if (b && !b.disabled) { ev.preventDefault(); b.click(); }
});

function buildAsk(host) {
  clear(host);
  host.appendChild(el("h2", {}, "Find the cause"));
  if (!ASK || !ASK.failure) { host.appendChild(el("p", { class: "note" }, "No failing step: nothing to ask.")); return true; }
  host.appendChild(el("p", { class: "note" }, "One step at a time: is its output right, what the run needed there? Answer no also when the step only passed on a wrong value it was given. The answers narrow the failure's dependencies down to the step where it went wrong."));
  const body = el("div", { id: "ask-body" });
  host.appendChild(body);
  if (ASK.endpoint) { serveAsk(body); return true; }
  const eng = guidedEngine(ASK);
  function draw() {
    clear(body);
    const sid = eng.next();
    if (sid) body.appendChild(questionView(questionFromRun(sid, eng.given.length + 1), (s, c) => { eng.answer(s, c); draw(); }));
    else body.appendChild(resultView(eng.result(), eng.log));
    add(body, answersView(eng.log));
    if (eng.given.length) body.appendChild(downloadLink(eng.given));
  }
  draw();
  return true;
}

function serveAsk(body) {
  function draw(state) {
    clear(body);
    if (state.error) { body.appendChild(el("p", { class: "ask-error", role: "alert" }, state.error)); return; }
    const answers = state.answers || [];
    if (state.question) {
      const q = state.question;
      body.appendChild(questionView(q, send));
    } else {
      body.appendChild(resultView(state.guided, answers));
    }
    add(body, answersView(answers));
  }
  function call(init) {
    return fetch(ASK.endpoint, Object.assign({ credentials: "same-origin", headers: { Accept: "application/json" } }, init || {}))
      .then((r) => r.json())
      .then(draw, (e) => draw({ error: "the server did not answer: " + e }));
  }
  function send(stepId, correct) {
    for (const b of body.querySelectorAll(".ask-buttons button")) b.disabled = true;
    const word = correct === true ? "correct" : correct === false ? "wrong" : "unknown";
    return call({ method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify({ step_id: stepId, answer: word }) });
  }
  call();
}
