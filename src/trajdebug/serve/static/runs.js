// runs.js: keep the run list current. Every few seconds it asks /api/runs with the page's
// filters and, when the runs changed, rebuilds the table with DOM calls (textContent only).
"use strict";
(function () {
  const tbody = document.querySelector("#runs tbody");
  if (!tbody) return;
  const params = new URLSearchParams(window.location.search);
  params.delete("token");
  let known = "";
  // The scores column is there when the page was served with a scored run in the list (`runs.html`).
  const scored = !!document.getElementById("scores-col");

  function cell(text, cls) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text;
    return td;
  }
  function link(href, text) {
    const a = document.createElement("a");
    a.setAttribute("href", href);
    a.textContent = text;
    return a;
  }
  function row(r) {
    const tr = document.createElement("tr");
    tr.dataset.run = r.run_id;
    tr.className = "o-" + r.outcome;
    const id = cell("", "mono");
    id.appendChild(link("/runs/" + encodeURIComponent(r.run_id), r.short_id || r.run_id));
    const outcome = cell("");
    const chip = document.createElement("span");
    chip.className = "outcome o-" + r.outcome;
    chip.textContent = r.outcome;
    outcome.appendChild(chip);
    const note = cell("", "note");
    for (const m of (r.matched || []).slice(0, 3)) {
      // Which step the search found, and where: the text around the match.
      const s = document.createElement("span");
      s.className = "matched";
      s.textContent = m.name + " (" + m.where + "): " + m.excerpt.slice(0, 60);
      note.append(s, " · ");
    }
    if (r.derived) {
      const d = document.createElement("span");
      d.className = "derived";
      d.textContent = r.derived;
      note.append(d, " ");
    }
    note.append(r.tags.join(" · ").slice(0, 80));
    const cmp = cell("");
    if (r.outcome === "failure") cmp.appendChild(link("/compare?bad=" + encodeURIComponent(r.run_id), "compare"));
    const session = cell("", "session");
    if (r.session) session.appendChild(link("/sessions/" + encodeURIComponent(r.session), r.session.slice(0, 24)));
    tr.append(id, cell(r.name, "name"), outcome, cell(String(r.steps), "num"), cell(String(r.errors), "num"),
      cell(r.tokens_text, "num tokens"), cell(r.cost_text, "num cost"),
      cell(r.started), cell(r.duration, "num"), session, cell(r.causes[0] || "", "cause"),
      ...(scored ? [cell(r.scores_text || "", "scores")] : []), note, cmp);
    return tr;
  }
  async function poll() {
    try {
      if (window.location.pathname.startsWith("/sessions/")) params.set("session", decodeURIComponent(window.location.pathname.slice(10)));
      if (window.location.pathname.startsWith("/sessions/")) { params.set("sort", "started"); params.set("order", "asc"); params.set("all", "1"); }
      const res = await fetch("/api/runs?" + params.toString(), { credentials: "same-origin", cache: "no-store" });
      if (!res.ok) return;
      const data = await res.json();
      const sig = data.runs.map((r) => [r.run_id, r.outcome, r.steps, r.errors, r.causes[0] || "", r.scores_text || ""].join(":")).join(",");
      if (sig !== known) {
        known = sig;
        while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
        for (const r of data.runs) tbody.appendChild(row(r));
      }
      document.getElementById("empty").hidden = data.runs.length > 0;
      document.getElementById("hidden-note").hidden = !data.hidden;
      document.getElementById("hidden-count").textContent = String(data.hidden);
    } catch (e) {
      // The server may be restarting; try again at the next tick.
    }
  }
  setInterval(poll, 2000);
})();
