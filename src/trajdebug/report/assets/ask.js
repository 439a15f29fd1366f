// ask.js: the "find the cause" panel: one question at a time (is this step's output right, what the
// run needed there?) until the root.  In a report file the guided search runs here (search.js): the
// answers stay in the page and can be downloaded as JSON lines of answer records (`trajdebug answers
// import SOURCE FILE` stores them with the run).  Under `trajdebug serve` (D.ask.endpoint) the server
// runs the search and stores each answer.  A wrong answer may say whether what the step was given was
// right (Naish's three-valued answers, as the terminal's keys o and i do).

const ASK = D.ask || null;
// -- the panel ---------------------------------------------------------------------------------
// [word (data-answer, the serve API's word), correct, admissible, key, button text, what it means]
const ANSWER_WORDS = [
  ["correct", true, null, "y", "correct", "the output is what the run needed here."],
  ["erroneous", false, true, "o", "wrong, its own fault", "the input above was right and the step got it wrong; its inputs are not asked about."],
  ["inadmissible", false, false, "i", "wrong, given a wrong input", "the input above was already wrong; the cause is upstream, never this step."],
  ["wrong", false, null, "n", "wrong", "not saying which of the two (always safe)."],
  ["don't know", null, null, "?", "don't know", "skip it; the search asks elsewhere."],
];
function answerWord(a) {
  if (a.correct === false && a.admissible === true) return "wrong (its own fault)";
  if (a.correct === false && a.admissible === false) return "wrong (given a wrong input)";
  return a.correct === true ? "correct" : a.correct === false ? "wrong" : "don't know";
}

const POSITION = new Map(RUN.steps.map((s, i) => [s.step_id, i + 1]));
// The question about one step, from the embedded run (what trajdebug.report.question.question_for gives).
function questionFromRun(sid, number) {
  const s = STEPS.get(sid) || {};
  const parts = ["step " + POSITION.get(sid) + " of " + RUN.steps.length];
  if (s.parent_id && STEPS.has(s.parent_id)) parts.push("inside '" + STEPS.get(s.parent_id).name + "'");
  // An agent's own step (the agent step where it starts: told by identity, never by name) is not inside itself.
  const parent = s.parent_id ? STEPS.get(s.parent_id) : undefined;
  const starts = s.kind === "agent" && (!parent || parent.agent !== s.agent);
  if (s.agent && !starts) parts.push("agent '" + s.agent + "'");
  const seen = new Set();
  const producers = [];
  for (const d of s.deps || []) {
    if (!STEPS.has(d.step_id) || (d.run_id && d.run_id !== RUN.run_id) || seen.has(d.step_id)) continue;
    seen.add(d.step_id);
    const p = STEPS.get(d.step_id);
    producers.push({ step_id: p.step_id, name: p.name, kind: p.kind, output: p.output });
  }
  return { step_id: sid, name: s.name, kind: s.kind, where: parts.join(", "), number, input: s.input, output: s.output, wrote: (s.attributes && s.attributes.state_values) || null, error: s.error ? s.error.type + ": " + s.error.message : null, producers };
}

function questionView(q, onAnswer) {
  const box = el("div", { class: "ask-q", id: "ask-question", "data-step": q.step_id });
  box.appendChild(el("h3", {}, "Question " + q.number + ": ", el("span", { class: "ask-kind" }, q.kind + " "),
    el("strong", {}, q.name), " #" + shortId(q.step_id), " ", STEPS.has(q.step_id) ? stepAnchor(q.step_id) : null));
  box.appendChild(el("div", { class: "note" }, q.where));
  for (const node of ioSections(STEPS.get(q.step_id) || { step_id: q.step_id, input: q.input, output: q.output })) box.appendChild(node);
  if (q.wrote != null) box.appendChild(section("Wrote to run.state", valueView(q.wrote)));
  // A step that raised has no output to judge: the person needs to see why.
  if (q.error != null) box.appendChild(section("Error (it raised or reported this)", valueView(q.error)));
  const prods = q.producers.length
    ? el("ul", { class: "ask-producers" }, ...q.producers.map((p) => el("li", {},
        el("button", { type: "button", class: "link", "data-step": p.step_id }, (p.kind || "") + " " + (p.name || "?") + " #" + shortId(p.step_id)),
        ": " + oneLine(typeof p.output === "string" ? p.output : JSON.stringify(p.output), 160))))
    : el("p", { class: "note" }, "Its inputs have no recorded producer.");
  box.appendChild(section("Its inputs came from", prods));
  box.appendChild(el("p", {}, el("strong", {}, "Is this output right, what the run needed here?")));
  const bar = el("div", { class: "ask-buttons" });
  for (const [word, value, admissible, key, text, help] of ANSWER_WORDS) {
    const b = el("button", { type: "button", class: "ask-" + key.replace("?", "unknown"), "data-answer": word, title: help + " (key " + key + ")" }, text);
    b.addEventListener("click", () => onAnswer(q.step_id, value, admissible));
    bar.appendChild(b);
  }
  box.appendChild(bar);
  box.appendChild(el("ul", { class: "note ask-help" }, ...ANSWER_WORDS.map(([, , , key, text, help]) => el("li", {}, key + " " + text + ": " + help))));
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
  const root = STEPS.get(g.root);
  const inputs = new Set(((root && root.deps) || []).map((d) => d.step_id));
  // As render_guided: a likeliest container that handed a child a wrong input is named with it (Guided.misled;
  // never certain: the recording cannot show that nothing else fed the child).
  const misled = g.certain ? [] : (g.misled || []);
  const proof = answers.filter((a) => a.step_id === g.root || inputs.has(a.step_id) || misled.includes(a.step_id));
  // The root's own standing wrong answer says whether its inputs were vouched for.
  const own = proof.filter((a) => a.step_id === g.root && a.correct === false);
  const erroneous = own.length > 0 && own[own.length - 1].admissible === true;
  const why = misled.length ? " (likeliest, not certain: it called " + misled.map(label).join(" and ") + ", which " + (misled.length > 1 ? "were" : "was") + " given a wrong input; the recording cannot show that nothing else fed " + (misled.length > 1 ? "them" : "it") + ")"
    : !g.certain ? " (likeliest so far; not proven by the answers)"
    : erroneous ? " (certain: answered wrong for the inputs it was given, and those were right)"
    : " (certain: its output is wrong and every input it consumed is correct)";
  box.appendChild(el("h3", {}, "Root: ", el("button", { type: "button", class: "link", "data-step": g.root }, label(g.root)), why));
  const vouched = (g.implied || []).filter((v) => inputs.has(v.step) || v.by === g.root);
  const items = [
    ...proof.map((a) => el("li", {}, answerWord(a) + " " + label(a.step_id) + " (by " + a.by + ")")),
    // serve's Guided.to_dict() gives each implied answer's reason; the page names the step that vouched.
    ...vouched.map((v) => el("li", { class: "ask-vouched" }, "correct " + label(v.step) + " (" + (v.reason || "implied: " + label(v.by) + (v.carried ? " carries its whole output and was answered correct" : " was answered wrong for the inputs it was given")) + ")")),
  ];
  if (items.length) box.appendChild(section(g.certain ? "The answers that prove it" : "The answers so far about it and its inputs", el("ul", {}, ...items)));
  if (g.path && g.path.length) box.appendChild(section("Path to the failure", el("p", {}, g.path.map(label).join(" → "))));
  box.addEventListener("click", (ev) => { const b = ev.target.closest("button[data-step]"); if (b) selectStep(b.dataset.step); });
  return box;
}

function answersView(answers) {
  if (!answers.length) return null;
  return section("Answers (" + answers.length + ")", el("ol", { class: "ask-answers" },
    ...answers.map((a) => el("li", {}, answerWord(a) + " " + label(a.step_id) + " (by " + a.by + ")"))));
}

function downloadLink(given) {
  // An answer record (docs/format.md): `admissible` only on a wrong answer that said it, as Python writes it.
  const lines = given.map((a) => JSON.stringify(Object.assign({ v: 1, t: "answer", run_id: RUN.run_id, step_id: a.step_id, correct: a.correct, by: a.by, at_ns: a.at_ns, reason: null },
    a.correct === false && (a.admissible === true || a.admissible === false) ? { admissible: a.admissible } : {}))).join("\n") + "\n";
  const a = el("a", { id: "ask-download", class: "button" }, "Download the " + given.length + " answer(s) (JSON lines)");
  a.href = "data:application/x-ndjson;charset=utf-8," + encodeURIComponent(lines);
  a.download = "answers-" + shortId(RUN.run_id) + ".jsonl";
  return el("p", {}, a, el("span", { class: "note" }, " store them with the run: trajdebug answers import SOURCE FILE"));
}

// The terminal's keys work in the page too while the panel is shown: y correct, o wrong (its own fault),
// i wrong (given a wrong input), n wrong (not saying which), ? don't know.
document.addEventListener("keydown", (ev) => {
  const panel = document.getElementById("ask");
  if (!panel || panel.hidden || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.target && /^(INPUT|TEXTAREA|SELECT)$/.test(ev.target.tagName)) return;
  const word = (ANSWER_WORDS.find((w) => w[3] === ev.key) || [])[0];
  const b = word && panel.querySelector('#ask-question .ask-buttons button[data-answer="' + word + '"]');
  if (b && !b.disabled) { ev.preventDefault(); b.click(); }
});

function buildAsk(host) {
  clear(host);
  host.appendChild(el("h2", {}, "Find the cause"));
  if (!ASK || !ASK.failure) { host.appendChild(el("p", { class: "note" }, "No failing step: nothing to ask.")); return true; }
  host.appendChild(el("p", { class: "note" }, "One step at a time: is its output right, what the run needed there? A wrong output is wrong even when the step only passed on a wrong value it was given: say so with 'wrong, given a wrong input', or 'wrong, its own fault' when its input was right (or plain 'wrong'). The answers narrow the failure's dependencies down to the step where it went wrong."));
  const body = el("div", { id: "ask-body" });
  host.appendChild(body);
  if (ASK.endpoint) { serveAsk(body); return true; }
  const eng = guidedEngine(ASK);
  function draw() {
    clear(body);
    const sid = eng.next();
    if (sid) body.appendChild(questionView(questionFromRun(sid, eng.given.length + 1), (s, c, adm) => { eng.answer(s, c, adm); draw(); }));
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
  function send(stepId, correct, admissible) {
    for (const b of body.querySelectorAll(".ask-buttons button")) b.disabled = true;
    const word = correct === true ? "correct" : correct === null ? "unknown"
      : admissible === true ? "erroneous" : admissible === false ? "inadmissible" : "wrong";
    return call({ method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify({ step_id: stepId, answer: word }) });
  }
  call();
}
