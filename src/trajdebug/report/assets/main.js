// main.js: wire the panels together; the graph and the chain table are built when first shown.

buildHeader(document.getElementById("head"));
buildScores(document.getElementById("head"));
buildCauses(document.getElementById("causes"));
buildInspector(document.getElementById("inspector"));
const WATERFALL = buildWaterfall(document.getElementById("waterfall"));
const BUILT = { waterfall: true };
const BUILDERS = { graph: buildGraph, errors: buildErrors, ask: buildAsk };

function showTab(name) {
  for (const b of document.querySelectorAll("#tabs [data-tab]")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
  for (const t of document.querySelectorAll(".tab")) t.hidden = t.id !== name;
  if (!BUILT[name] && BUILDERS[name]) {
    BUILT[name] = BUILDERS[name](document.getElementById(name)) || true;
  }
}
document.getElementById("tabs").addEventListener("click", (ev) => {
  const b = ev.target.closest("[data-tab]");
  if (b) showTab(b.dataset.tab);
});
if ((ANALYSIS.root_causes || []).length) selectCause(0);
// A link to a step (#step=ID) opens the run with it selected (links.js).
followLinks();
window.__readyAt = performance.now();
document.body.dataset.ready = "1";
