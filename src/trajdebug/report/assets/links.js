// links.js: a link to every step that opens the run with that step selected, ``#step=ID`` (or ``?step=ID``), and
// the page's address following the selection, so "look at this step" is one copied link (nu64b "Missing
// features" 8).  A link is built here from a step id only, escaped, always starting with "#": never from a run's
// text, never another scheme.

const STEP_PARAM = "step";

function stepHash(id) { return "#" + STEP_PARAM + "=" + encodeURIComponent(id); }

// The whole address of the page with the step selected: what "copy link" copies.
function stepUrl(id) { return String(location.href).split("#")[0] + stepHash(id); }

// <a href="#step=ID">: following it selects the step (`followLinks` listens to the address).
function stepAnchor(id, text) {
  const a = el("a", { class: "step-link", title: "a link to this step: opens the run with it selected" }, text || "link");
  a.setAttribute("href", stepHash(id));
  return a;
}

// The step the address names: an exact id, else the one step whose id ends with it (the short id `show` prints).
function linkedStep() {
  const wanted = [new URLSearchParams(String(location.hash).slice(1)).get(STEP_PARAM), new URLSearchParams(location.search).get(STEP_PARAM)];
  for (const want of wanted) {
    if (!want) continue;
    if (STEPS.has(want)) return want;
    const ends = RUN.steps.filter((s) => s.step_id.endsWith(want.replace(/^#/, "")));
    if (ends.length === 1) return ends[0].step_id;
  }
  return null;
}

function copyText(text, field, done) {
  const fallback = () => { field.select(); if (document.execCommand("copy")) done(); };
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, fallback);
  else fallback();
}

// The inspector's link line: "copy link" and the address itself, selectable.
function stepLinkBox(id) {
  const url = stepUrl(id);
  const field = el("input", { class: "link-url", readonly: true, value: url, spellcheck: "false", "aria-label": "link to this step" });
  const copy = el("button", { type: "button", class: "copy-link", title: "copy a link that opens this run with this step selected" }, "copy link");
  copy.addEventListener("click", () => copyText(url, field, () => { copy.textContent = "copied"; }));
  return el("div", { class: "i-link" }, copy, field);
}

// Select the step the address names (on load, and when a followed link changes it); then keep the address on
// the selected step.  Called once the panels are built and the first candidate is selected.
function followLinks() {
  const open = () => {
    const id = linkedStep();
    if (!id) return;
    if (typeof showTab === "function" && document.getElementById("waterfall").hidden) showTab("waterfall");
    selectStep(id);
  };
  open();
  window.addEventListener("hashchange", open);
  onChange((ev) => {
    if (ev.type !== "step" || !STATE.step || linkedStep() === STATE.step) return;
    try { history.replaceState(null, "", stepHash(STATE.step)); } catch (e) { /* a page that may not change its address keeps it */ }
  });
}
