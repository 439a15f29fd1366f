// ask.js: the "find the cause" panel: one question at a time (is this step's output correct, given
// its input?) until the root.  In a report file the guided search runs here (a compact port of
// trajdebug.analysis._guided, strategy "prior"): the answers stay in the page and can be downloaded
// as JSON lines of answer records (`trajdebug answers import SOURCE FILE` stores them with the run).
// Under `trajdebug serve` (D.ask.endpoint) the server runs the search and stores each answer.

const ASK = D.ask || null;
const LEAD = 0.5;  // trajdebug.analysis._guided._LEAD: the mass share that makes a candidate the leader

// -- the search (Shapiro's algorithmic debugging over the failure's slice) ---------------------
function guidedEngine(A) {
  const n = A.ids.length;
  const F = A.ids.indexOf(A.failure);
  const verdict = A.verdict.slice();
  const answered = A.answered.slice();
  const log = (A.answers || []).map((a) => ({ step_id: a.step_id, correct: a.correct, by: a.by }));
  const given = [];
  const children = A.ids.map(() => []);
  A.parents.forEach((ps, i) => { for (const p of ps) children[p].push(i); });
  const mass = (set) => { let t = 0; for (const i of set) t += A.prior[i]; return t; };
  const inter = (a, b) => { const o = new Set(); for (const x of a) if (b.has(x)) o.add(x); return o; };
  // Each step's backward reach avoiding correct-marked steps (ids are in topological order).
  function reaches() {
    const r = new Array(n);
    for (let i = 0; i < n; i++) {
      if (i !== F && verdict[i] === true) { r[i] = new Set(); continue; }
      const s = new Set([i]);
      for (const p of A.parents[i]) for (const x of r[p]) s.add(x);
      r[i] = s;
    }
    return r;
  }
  // The candidates: every wrong step's reach intersected, deepest first; a disjoint one is a conflict.
  function compute() {
    const r = reaches();
    let cand = r[F], focus = F, conflict = null;
    const wrong = [];
    for (let i = 0; i < n; i++) if ((i === F || verdict[i] === false) && r[F].has(i)) wrong.push(i);
    wrong.sort((a, b) => r[a].size - r[b].size || b - a);
    for (const i of wrong) {
      const both = inter(cand, r[i]);
      if (!both.size) { conflict = [focus, i]; break; }
      cand = both;
      if (r[i].size <= r[focus].size) focus = i;
    }
    return { r, cand, focus, conflict };
  }
  const entropy = (p) => (p <= 0 || p >= 1 ? 0 : -(p * Math.log2(p) + (1 - p) * Math.log2(1 - p)));
  function next() {
    if (F < 0) return null;
    const { r, cand, focus, conflict } = compute();
    if (conflict) return null;
    if (cand.size === 1 && cand.has(focus)) return null;
    const open = [...cand].filter((i) => i !== F && !answered[i]).sort((a, b) => a - b);
    if (!open.length) return null;
    const total = mass(cand) || 1;
    const lead = leader(cand, total, new Set(open), r);
    if (lead !== null) return A.ids[lead];
    let best = open[open.length - 1], key = [-1, 0, 0];
    for (const i of open) {
      const h = Math.round(entropy(Math.min(1, mass(inter(r[i], cand)) / total)) * 1e9) / 1e9;
      const k = [h, A.prior[i], i];
      if (k[0] > key[0] || (k[0] === key[0] && (k[1] > key[1] || (k[1] === key[1] && k[2] > key[2])))) { best = i; key = k; }
    }
    return A.ids[best];
  }
  // Hat-Delta's shortcut: one candidate holding most of the mass is proven or refuted directly
  // (itself, then its open inputs, the likeliest wrong first).
  function leader(cand, total, open, r) {
    let best = null;
    for (const i of cand) if (best === null || A.prior[i] > A.prior[best] || (A.prior[i] === A.prior[best] && i > best)) best = i;
    if (best === null || A.prior[best] < LEAD * total) return null;
    if (open.has(best)) return best;
    let pick = null, pickKey = null;
    for (const p of A.parents[best]) {
      if (!open.has(p)) continue;
      const k = mass(inter(r[p], cand));
      if (pick === null || k > pickKey || (k === pickKey && p > pick)) { pick = p; pickKey = k; }
    }
    return pick;
  }
  function ranked(cand) {
    const w = new Map();
    for (const i of cand) {
      let x = A.prior[i];
      if (A.parents[i].every((p) => verdict[p] === true)) x *= 4;
      if (verdict[i] === false) x *= 2;
      w.set(i, x);
    }
    const total = [...w.values()].reduce((a, b) => a + b, 0) || 1;
    return [...w.keys()].sort((a, b) => w.get(b) - w.get(a) || b - a).map((i) => [A.ids[i], w.get(i) / total]);
  }
  function path(root) {
    const from = new Map([[root, null]]);
    const q = [root];
    while (q.length && !from.has(F)) {
      const i = q.shift();
      for (const c of children[i]) if (!from.has(c)) { from.set(c, i); q.push(c); }
    }
    if (!from.has(F)) return [];
    const out = [];
    for (let i = F; i !== null; i = from.get(i)) out.unshift(A.ids[i]);
    return out;
  }
  function result() {
    const { cand, focus, conflict } = compute();
    if (conflict) return { root: null, certain: false, conflict: conflict.map((i) => A.ids[i]), path: [], candidates: [] };
    const certain = cand.size === 1 && cand.has(focus) && verdict[focus] === false;
    const cands = ranked(cand);
    const root = certain ? A.ids[focus] : (cands.length ? cands[0][0] : null);
    return { root, certain, conflict: [], path: root ? path(A.ids.indexOf(root)) : [], candidates: cands };
  }
  function answer(stepId, correct) {
    const i = A.ids.indexOf(stepId);
    if (i < 0) return;
    verdict[i] = i === F ? false : correct;  // a person's answer stands over any stored one
    answered[i] = true;
    const a = { step_id: stepId, correct, by: "person", at_ns: Date.now() * 1e6 };
    given.push(a);
    log.push(a);
  }
  return { next, result, answer, given, log };
}

// -- the panel ---------------------------------------------------------------------------------
const ANSWER_WORDS = [["correct", true, "y"], ["wrong", false, "n"], ["don't know", null, "?"]];
function answerWord(c) { return c === true ? "correct" : c === false ? "wrong" : "don't know"; }

function questionFromRun(sid, number) {
  const s = STEPS.get(sid) || {};
  const meta = (ASK.questions || {})[sid] || { where: "", producers: [] };
  return {
    step_id: sid, name: s.name, kind: s.kind, where: meta.where, number,
    input: s.input, output: s.output,
    producers: meta.producers.map((p) => { const ps = STEPS.get(p) || {}; return { step_id: p, name: ps.name, kind: ps.kind, output: ps.output }; }),
  };
}

function questionView(q, onAnswer) {
  const box = el("div", { class: "ask-q", id: "ask-question", "data-step": q.step_id });
  box.appendChild(el("h3", {}, "Question " + q.number + ": ", el("span", { class: "ask-kind" }, q.kind + " "),
    el("strong", {}, q.name), " #" + shortId(q.step_id)));
  box.appendChild(el("div", { class: "note" }, q.where));
  box.appendChild(section("Input", valueView(q.input)));
  box.appendChild(section("Output", valueView(q.output)));
  const prods = q.producers.length
    ? el("ul", { class: "ask-producers" }, ...q.producers.map((p) => el("li", {},
        el("button", { type: "button", class: "link", "data-step": p.step_id }, (p.kind || "") + " " + (p.name || "?") + " #" + shortId(p.step_id)),
        ": " + oneLine(typeof p.output === "string" ? p.output : JSON.stringify(p.output), 160))))
    : el("p", { class: "note" }, "Its inputs have no recorded producer.");
  box.appendChild(section("Its inputs came from", prods));
  box.appendChild(el("p", {}, el("strong", {}, "Is this output correct, given its input?")));
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

function buildAsk(host) {
  clear(host);
  host.appendChild(el("h2", {}, "Find the cause"));
  if (!ASK || !ASK.failure) { host.appendChild(el("p", { class: "note" }, "No failing step: nothing to ask.")); return true; }
  host.appendChild(el("p", { class: "note" }, "One step at a time: is its output correct, given its input? The answers narrow the failure's dependencies down to the step where it went wrong."));
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
      body.appendChild(questionView({ ...q, input: q.input, output: q.output }, send));
    } else {
      body.appendChild(resultView({ ...state.guided, root: state.guided.root }, answers));
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
