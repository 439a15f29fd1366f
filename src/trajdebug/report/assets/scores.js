// scores.js: the run's scores (a table under the header), a step's scores in the inspector and, on a page
// `trajdebug serve` serves (D.score_endpoint), a small form to add one, to the run or to the step shown.
// Kept in its own file and functions (the header and the inspector call one function each), so the
// inspector's other sections change without touching these.  Everything shown goes through el() (textContent).

const SCORES = (D.scores || []).slice();
const SCORE_VIEWS = [];

function scoreText(v) {
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(4)));
  return String(v);
}

function scoreTable(list, withTarget) {
  if (!list.length) return el("p", { class: "note score-none" }, "no scores yet");
  const cols = ["name", "value"].concat(withTarget ? ["on"] : [], ["source", "by", "comment"]);
  const rows = list.map((s) => el("tr", { class: "score-row" },
    el("td", { class: "score-name" }, s.name),
    el("td", { class: "score-value" }, scoreText(s.value)),
    withTarget ? el("td", {}, s.step_id && STEPS.has(s.step_id)
      ? el("button", { type: "button", class: "linkish", "data-step": s.step_id }, label(s.step_id)) : "the run") : null,
    el("td", {}, s.source || ""),
    el("td", {}, s.by || ""),
    el("td", { class: "score-comment" }, s.comment || "")));
  return el("table", { class: "scores" }, el("thead", {}, el("tr", {}, ...cols.map((c) => el("th", {}, c)))), el("tbody", {}, ...rows));
}

function scoreInput(what, hint) {
  const n = el("input", { type: "text", class: "score-" + what, "aria-label": "score " + what });
  n.placeholder = hint;
  return n;
}

// The form posts JSON to serve (the same check as `trajdebug score`); the page shows the score once stored,
// or the server's one-line reason.
function scoreForm(stepId) {
  if (!D.score_endpoint) return null;
  const name = scoreInput("name", "name, e.g. helpfulness");
  const value = scoreInput("value", "0.3, rude or true");
  const comment = scoreInput("comment", "comment (optional)");
  const by = scoreInput("by", "by (optional)");
  const source = el("select", { class: "score-source", "aria-label": "score source" },
    ...["human", "code", "llm"].map((s) => el("option", { value: s }, s)));
  const msg = el("p", { class: "note score-msg", role: "status" });
  const button = el("button", { type: "submit", class: "score-add" }, stepId ? "score this step" : "score the run");
  const form = el("form", { class: "score-form", "data-step-id": stepId || "" }, name, value, source, by, comment, button, msg);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    button.disabled = true;
    msg.textContent = "";
    const body = { name: name.value, value: value.value, comment: comment.value, by: by.value, source: source.value, step_id: stepId || null };
    fetch(D.score_endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
      .then((r) => r.json().then((j) => ({ ok: r.ok, j })))
      .then(({ ok, j }) => {
        button.disabled = false;
        if (!ok || !j.score) { msg.textContent = (j && j.error) || "not stored"; msg.classList.add("score-error"); return; }
        SCORES.push(j.score);
        value.value = "";
        comment.value = "";
        msg.textContent = "stored: " + j.score.name + " = " + scoreText(j.score.value);
        msg.classList.remove("score-error");
        // A view that returns false is gone (an inspector section of a step no longer shown): dropped.
        const live = SCORE_VIEWS.filter((redraw) => redraw() !== false);
        SCORE_VIEWS.splice(0, SCORE_VIEWS.length, ...live);
      })
      .catch((e) => { button.disabled = false; msg.textContent = "not stored: " + e; msg.classList.add("score-error"); });
  });
  return form;
}

// The run's scores, every one (a step's naming its step), under the header; on a served page, the form.
// A new score redraws the title and the table only: the form stays as it was, open, for the next one.
function buildScores(host) {
  const box = el("section", { id: "run-scores", class: "h-scores", "aria-label": "Scores" });
  const title = el("h2", { class: "scores-title" });
  const table = el("div", { class: "scores-table" });
  const form = scoreForm(null);
  box.append(title, table);
  if (form) box.appendChild(el("details", { class: "score-new" }, el("summary", {}, "add a score"), form));
  function render() {
    box.hidden = !SCORES.length && !form;
    title.textContent = "Scores (" + SCORES.length + ")";
    clear(table).appendChild(scoreTable(SCORES, true));
  }
  box.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-step]");
    if (b) selectStep(b.dataset.step);
  });
  SCORE_VIEWS.push(render);
  render();
  host.appendChild(box);
}

// The inspector's score section for one step: its scores and, on a served page, the form for it.
function stepScoresSection(stepId) {
  const title = el("h3", {});
  const table = el("div", { class: "scores-table" });
  const sec = el("section", { class: "i-sec i-scores" }, title, table, scoreForm(stepId));
  function render() {
    if (!sec.isConnected && sec.dataset.drawn) return false;
    sec.dataset.drawn = "1";
    const mine = SCORES.filter((s) => s.step_id === stepId);
    title.textContent = "Scores (" + mine.length + ")";
    clear(table).appendChild(scoreTable(mine, false));
    return true;
  }
  SCORE_VIEWS.push(render);
  render();
  return sec;
}
