// panels.js: the header, the root-cause panel, the step inspector and the error-chain table.

// Who and what a run was for, where its recorder or importer stated them (`trajdebug.run(session=, tags=,
// task=, version=)`, an OpenTelemetry trace's user.id): [label, text] pairs, the others left out (nu64b: they
// were only in the embedded JSON).
function runFacts(M) {
  M = M || {};
  const text = (v) => {
    if (v === undefined || v === null || v === "" || typeof v === "boolean") return "";
    if (Array.isArray(v)) return v.filter((t) => typeof t !== "object").join(", ");
    if (typeof v === "object") return Object.entries(v).map(([k, x]) => (typeof x === "object" ? k : k + "=" + x)).join(", ");
    return String(v);
  };
  const user = M.user !== undefined ? M.user : M.user_id;
  return [["session", M.session], ["user", user], ["tags", M.tags], ["task", M.task], ["version", M.version]]
    .map(([k, v]) => [k, oneLine(text(v), 200)]).filter(([, v]) => v !== "");
}

function buildHeader(host) {
  const dur = RUN.end_ns ? fmtDur(RUN.end_ns - RUN.start_ns) : "unfinished";
  const top = el("div", { class: "h-line" },
    el("span", { class: "brand" }, "trajdebug"),
    el("h1", { class: "run-name", title: RUN.name }, RUN.name || "(unnamed run)"),
    el("span", { class: "outcome o-" + RUN.outcome }, RUN.outcome),
    el("span", { class: "meta" }, "run " + RUN.run_id + " · " + plural(RUN.steps.length, "step") + " · " + plural(RUN.errors.length, "error") + " · " + dur));
  const U = D.usage && D.usage.run;
  if (U && U.calls) top.appendChild(el("span", { class: "meta usage", title: "model, tokens and cost of the run's LLM calls" }, (U.model ? U.model + " · " : "") + fmtUsage(U)));
  host.appendChild(top);
  const facts = runFacts(RUN.metadata);
  if (facts.length) {
    const line = el("div", { class: "h-facts meta" });
    facts.forEach(([k, v], i) => {
      if (i) line.appendChild(document.createTextNode(" · "));
      line.appendChild(document.createTextNode(k + " "));
      line.appendChild(el("span", { class: "fact" }, v));
    });
    host.appendChild(line);
  }
  if (RUN.failure_reason) host.appendChild(el("div", { class: "h-reason" }, "reason: ", el("span", { class: "reason" }, RUN.failure_reason)));
  // One exception re-reported by each step it left is one failure, with the path it propagated along.
  const fails = ANALYSIS.failure_groups || ANALYSIS.failures || [];
  if (fails.length) {
    const list = el("div", { class: "h-failures" }, "failures: ");
    fails.slice(0, 6).forEach((f, i) => {
      if (i) list.appendChild(document.createTextNode(" · "));
      list.appendChild(el("button", { type: "button", class: "linkish", "data-step": f.step_id }, (f.name || "?") + "#" + shortId(f.step_id)));
      list.appendChild(el("span", { class: "f-msg" }, " [" + f.detector + "] " + oneLine(f.message, 120)));
      if (f.propagated && f.propagated.length) list.appendChild(el("span", { class: "note" }, " propagated through " + f.propagated.map((p) => (p.name || "?") + "#" + shortId(p.step_id)).join(" → ")));
    });
    if (fails.length > 6) list.appendChild(el("span", { class: "note" }, " and " + (fails.length - 6) + " more"));
    host.appendChild(list);
    list.addEventListener("click", (ev) => {
      const b = ev.target.closest("[data-step]");
      if (b) selectStep(b.dataset.step);
    });
  }
  const V = D.verification;
  if (V) {
    // The verified candidate's own replays, as its card counts them; the verification's total
    // (every candidate tried) only when it differs.
    const vc = V.verified ? verdictOf(V.verified) : null;
    const own = vc && vc.trial ? vc.trial.replays : V.replays;
    const count = plural(own, "replay") + (V.replays !== own ? " of " + V.replays + " in all" : "");
    const txt = V.verified ? "verified by replay: " + label(V.verified) + " (" + count + ")" : "replay verified no candidate" + (V.problem ? ": " + V.problem : "");
    host.appendChild(el("div", { class: "h-verify " + (V.verified ? "ok" : "no") }, txt));
  }
  if (D.source) host.appendChild(el("div", { class: "h-source" }, "source: " + D.source + " · " + (D.generator || "")));
}

const CAUSE_KNOWN = new Set(["step_id", "run_id", "source_index", "name", "label", "kind", "agent", "score", "reasons", "path", "structural", "inferred", "signals", "confidence", "share", "standing"]);
// The step names more than one step of the run carries (a path names such a step with its id).
const SHARED_NAMES = (() => {
  const seen = new Set(), shared = new Set();
  for (const s of RUN.steps) (seen.has(s.name) ? shared : seen).add(s.name);
  return shared;
})();
// A signal's family in words (docs/analysis.md, "Signals", lists each name).
const SIGNAL_FAMILIES = {
  "lineage": "traced from the failure's values",
  "reference": "compared with passing runs",
  "judge": "the model on top's verdict",
  "unfilled-handle": "a placeholder left unfilled",
};
function signalWords(name) {
  const fam = name.split(":")[0];
  const words = SIGNAL_FAMILIES[fam] || "a rule about this step's own input and output";
  const what = name.includes(":") ? name.slice(fam.length + 1).replace(/[-_]/g, " ") : name.replace(/[-_]/g, " ");
  return what + " (" + words + ")";
}

// A candidate the answers placed (analysis `standing`): its tag in place of the ranking's and of its confidence,
// as `trajdebug analyze` prints it (nu25 F10: a proved root read "structural root, confidence 1%").
const STANDING_TAGS = { "proved": "proved root", "singled out": "singled out by the answers, not a person's: no proof", "set aside": "set aside by the answers, not a person's: no proof" };

function verdictOf(stepId) {
  const V = D.verification;
  if (!V || !V.candidates) return null;
  return V.candidates.find((c) => c.step_id === stepId) || null;
}

function buildCauses(host) {
  host.appendChild(el("h2", {}, "Root causes"));
  const causes = ANALYSIS.root_causes || [];
  if (!causes.length) {
    host.appendChild(el("p", { class: "note" }, RUN.outcome === "failure" ? "No candidate: nothing in the run explains the failure." : "The run did not fail; nothing to explain."));
    return;
  }
  const ORDER = {
    "answers": "Ordered as the answers leave them: the root they prove (or single out), then suspects left, then steps they cleared. The evidence score beside each is the ranking's, from before the answers.",
    "share": "Ordered by the learned model's share of the blame (the share shown), highest first.",
    "judge": "Ordered by score, the evidence's combined with the model's verdicts (--judge), highest first.",
    "roots-first": "Ordered with structural roots first, then suspects; score orders within each.",
  };
  // The learned order is its trees' probability (the share, shown instead of the hand score, which would suggest
  // another order); the confidence is calibrated separately and may rise down the list.  Neighbours only: a
  // candidate without a confidence between two says nothing of their order.
  // A model on top (--judge) re-ranks by score and says so beside the order, which keeps its earlier value.
  // ``confidence`` is what analyses before round 59 called the learned model's order (by share).
  const given = ANALYSIS.order === "confidence" ? "share" : ANALYSIS.order;
  const orderedBy = given !== "answers" && ANALYSIS.judged === true ? "judge" : given;
  const byShare = orderedBy === "share" && causes.every((c) => typeof c.share === "number");
  const confs = causes.map((c) => c.confidence);
  const unordered = confs.some((c, i) => i > 0 && typeof c === "number" && typeof confs[i - 1] === "number" && c > confs[i - 1]);
  const order = orderedBy === "share" && !byShare
    ? "Ordered by the learned model's ranking."
    : orderedBy === "share" && unordered
    ? "Ordered by the learned model's share of the blame (the share shown), highest first; the confidence beside it is calibrated separately and can be higher further down."
    : ORDER[orderedBy];
  host.appendChild(el("p", { class: "note" }, (order || "Ranked by the backward search.") + " Click one to see its path."));
  // The run's verdict and what it was compared with, as `trajdebug analyze` words them (text nodes: escaped).
  const S = D.summary || {};
  if (S.verdict) host.appendChild(el("p", { class: "verdict-line v-" + (ANALYSIS.verdict || "none"), id: "run-verdict" }, S.verdict));
  if (S.compared) host.appendChild(el("p", { class: "note", id: "run-compared" }, S.compared));
  const same = sameInputLine(D.same_input);
  if (same) host.appendChild(same);
  const list = el("ol", { class: "causes" });
  causes.forEach((c, i) => {
    const item = el("li", { class: "cause", tabindex: "0", role: "button", "data-cause": i, "aria-pressed": "false" });
    const head = el("div", { class: "c-head" },
      el("span", { class: "rank" }, String(i + 1)),
      el("span", { class: "c-name" }, c.name || "?"),
      el("span", { class: "sid" }, "#" + shortId(c.step_id)),
      el("span", { class: "c-kind" }, c.kind || ""),
      !c.run_id && STEPS.has(c.step_id) ? stepAnchor(c.step_id) : null,
      c.standing
        ? el("span", { class: "badge " + (c.standing === "proved" || c.standing === "singled out" ? "b-root" : "b-suspect"), title: "where the answers placed it" }, STANDING_TAGS[c.standing] || c.standing)
        : el("span", { class: "badge " + (c.structural ? "b-root" : "b-suspect") }, c.structural ? "structural root" : "suspect"),
      // The learned model's calibrated confidence, a probability: a percentage as the CLI prints it
      // ("confidence 81%"), not the raw float; a hand ranking has none (null) and shows nothing, and the answers
      // that placed a candidate replace it, except a step answers no person's alone set aside: no proof moved it, so
      // the ranking's confidence is shown, named as the ranking's (as the terminal does).
      typeof c.confidence === "number" && (!c.standing || c.standing === "set aside")
        ? el("span", { class: "c-conf", title: "calibrated confidence" }, (c.standing ? "the ranking's confidence " : "confidence ") + Math.round(c.confidence * 100) + "%")
        : null,
      byShare
        ? el("span", { class: "score", title: "the learned model's share of the blame: the list's order" }, "share " + c.share.toFixed(3))
        : el("span", { class: "score", title: orderedBy === "answers" ? "the evidence's score, from before the answers (the answers order the list)" : "score" }, typeof c.score === "number" ? (orderedBy === "answers" ? "evidence " : "") + c.score.toFixed(3) : ""));
    item.appendChild(head);
    if (c.run_id) item.appendChild(el("div", { class: "note" }, "in an earlier turn: run " + c.run_id));
    const v = verdictOf(c.step_id);
    if (v) item.appendChild(el("div", { class: "verdict v-" + v.status }, v.status + (v.reason ? ": " + oneLine(v.reason, 240) : "")));
    if (c.reasons && c.reasons.length) item.appendChild(el("ul", { class: "reasons" }, ...c.reasons.map((r) => el("li", {}, r))));
    // A step whose name another step shares is named with its id, so a path through one of two like calls says
    // which (nu32 finding 8).
    if (c.path && c.path.length > 1) item.appendChild(el("div", { class: "c-path" }, "path: " + c.path.map((p) => STEPS.has(p) && SHARED_NAMES.has(STEPS.get(p).name) ? label(p) : (STEPS.get(p) || { name: "?" }).name).join(" → ")));
    if (c.inferred && c.inferred.length) item.appendChild(el("div", { class: "note" }, "follows inferred edges, found by content and not recorded; a confidence grades the match, 1.00 a value found whole: " + c.inferred.map((x) => label(x.step_id) + (typeof x.confidence === "number" ? " (confidence " + x.confidence.toFixed(2) + ")" : "")).join(", ")));
    // Signals are the kinds of evidence behind it, by the names docs/analysis.md ("Signals") lists: said in words
    // by their family, the name kept beside it.
    if (c.signals && c.signals.length) item.appendChild(el("div", { class: "note c-signals" }, "kinds of evidence (docs/analysis.md, \"Signals\"): " + c.signals.map((x) => signalWords(String(x))).join("; ")));
    // Fields the analysis gains later, shown generically; an empty one (null, []) says nothing, and a
    // list of plain values reads as one line ("signals: lineage:dropped, rare") rather than a tree.
    const extra = Object.keys(c).filter((k) => !CAUSE_KNOWN.has(k) && c[k] !== null && c[k] !== undefined && !(Array.isArray(c[k]) && !c[k].length));
    if (extra.length) {
      const more = el("div", { class: "c-extra" });
      for (const k of extra) {
        const v = c[k];
        const flat = Array.isArray(v) && v.every((x) => x === null || typeof x !== "object");
        more.appendChild(el("div", { class: "j-row" }, el("span", { class: "j-key" }, k + ": "), flat ? el("span", { class: "c-list" }, v.map(String).join(", ")) : valueView(v, 1)));
      }
      item.appendChild(more);
    }
    list.appendChild(item);
  });
  host.appendChild(list);
  const pick = (ev) => {
    const item = ev.target.closest("[data-cause]");
    if (item && !ev.target.closest("details, button")) selectCause(Number(item.dataset.cause));
  };
  list.addEventListener("click", pick);
  list.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); pick(ev); } });
  onChange((ev) => {
    if (ev.type !== "cause") return;
    for (const item of list.children) {
      const on = Number(item.dataset.cause) === STATE.cause;
      item.classList.toggle("active", on);
      item.setAttribute("aria-pressed", String(on));
    }
  });
}

// The passing run of the same input (`report.html.same_input_doc`): which run, how it was matched (as `trajdebug
// analyze` pairs them for its diff hint) and the first step where the runs part, a link to it in the waterfall
// (nu33 finding 11); nothing when there is none.  Every value is a text node.
const MATCHED_KEY = { task: "task", task_id: "task_id", input: "input", args: "args" };
function sameInputLine(S) {
  if (!S || !S.run_id) return null;
  const p = el("p", { class: "note same-input", id: "run-same-input" });
  // Whether the ranking compared it: `analyze` pairs the newest passing run of the same input in the source, which
  // the newest 50 references may leave out (or a run recorded to verify another, never a reference).
  const which = !S.compared ? " (not among the runs compared)" : S.references === 1 ? " (the run compared)" : " (one of the " + S.references + " runs compared)";
  p.append("same input: passing run ", el("span", { class: "mono", title: S.run_id }, shortRun(S.run_id)), which);
  if (S.matched_by) {
    const key = MATCHED_KEY[S.matched_by];
    const what = key ? key + (S.matched_value ? ": " + S.matched_value : "") : (S.first_step || "");
    p.append(", matched by its " + S.matched_words + (S.first_input_too ? " and first step's input" : "") + (what ? " (" + what + ")" : ""));
  }
  p.append(". ");
  const F = S.first_divergence;
  if (F === undefined) {
    p.append("trajdebug diff shows where the runs part.");
  } else if (F === null) {
    p.append("No step differs between the two runs" + (S.counts ? " (" + S.counts + ")" : "") + ".");
  } else {
    p.append("The runs part first at ");
    if (F.step_id && STEPS.has(F.step_id)) p.append(el("button", { type: "button", class: "linkish", "data-step": F.step_id, id: "same-input-part", title: "show it in the waterfall" }, F.label));
    else p.append(el("span", { class: "mono" }, F.label));
    p.append(": " + F.words + (S.counts ? " (" + S.counts + ")" : "") + ".");
  }
  p.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-step]");
    if (!b) return;
    showTab("waterfall");
    selectStep(b.dataset.step);
    // In the one-column layout (a narrow page) the waterfall is below this panel: brought into view.
    document.getElementById("center").scrollIntoView({ block: "nearest" });
  });
  return p;
}

function section(title, ...body) {
  return el("section", { class: "i-sec" }, el("h3", {}, title), ...body);
}

function depList(items, dir) {
  if (!items.length) return el("p", { class: "note" }, dir === "in" ? "depends on no step" : "no step depends on it");
  return el("ul", { class: "deps" }, ...items.map(({ id, d }) => {
    // The format omits a confidence of 1.0, its default: a missing one is full confidence, never NaN.
    const conf = typeof d.confidence === "number" ? d.confidence : 1;
    const how = d.origin === "inferred" ? "inferred " + conf.toFixed(2) : d.origin;
    const other = d.run_id && d.run_id !== RUN.run_id;
    const target = other ? el("span", {}, "run " + shortRun(d.run_id) + " #" + shortId(d.step_id))
      : el("button", { type: "button", class: "linkish", "data-step": id }, label(id));
    return el("li", {}, target, el("span", { class: "dep-kind k-" + d.kind }, " " + d.kind), el("span", { class: "note" }, " " + how + (d.key ? " via " + d.key.replace(/^via /, "") : "")));
  }));
}

function buildInspector(host) {
  function render() {
    clear(host);
    const id = STATE.step;
    const s = id && STEPS.get(id);
    if (!s) {
      host.appendChild(el("h2", {}, "Inspector"));
      host.appendChild(el("p", { class: "note" }, "Click a step in the waterfall or the graph."));
      return;
    }
    const chip = el("span", { class: "chip" });
    chip.style.background = KIND_COLOR[s.kind] || KIND_COLOR.other;
    host.appendChild(el("h2", { class: "i-title" }, chip, el("span", { class: "i-name" }, s.name)));
    const facts = [["id", s.step_id], ["kind", s.kind], ["status", s.status], ["duration", fmtDur(s.duration_ns)]];
    if (s.agent) facts.push(["agent", s.agent]);
    if (s.parent_id) facts.push(["parent", label(s.parent_id)]);
    if (s.attempt !== 1) facts.push(["attempt", String(s.attempt) + (s.retry_of ? " (retries " + label(s.retry_of) + ")" : "")]);
    if (s.source_index !== null && s.source_index !== undefined) facts.push(["source record", String(s.source_index)]);
    const u = D.usage && D.usage.steps && D.usage.steps[id];
    if (u) {
      if (u.model) facts.push(["model", u.model]);
      if (u.prompt_tokens !== null || u.completion_tokens !== null) facts.push(["tokens", (u.prompt_tokens ?? "?") + " in, " + (u.completion_tokens ?? "?") + " out"]);
      if (u.cost !== null) facts.push(["cost", fmtCost(u.cost)]);
    }
    host.appendChild(el("dl", { class: "facts" }, ...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])));
    host.appendChild(stepLinkBox(id));
    if (s.error) {
      host.appendChild(section("Error", el("div", { class: "i-error" }, el("strong", {}, s.error.type + ": "), stringView(String(s.error.message))),
        s.error.traceback ? el("details", {}, el("summary", {}, "traceback"), el("pre", { class: "tb" }, s.error.traceback)) : null));
    }
    for (const e of ERR_BY_STEP.get(id) || []) {
      const hist = (e.stages || []).map((c) => c.stage + " " + (c.step_id ? label(c.step_id) : "(run)")).join(" → ");
      host.appendChild(section("Error lifecycle", el("div", {}, el("span", { class: "badge " + (STAGE_CLASS[e.stage] || "") }, e.stage), " ", e.severity ? el("span", { class: "sev s-" + e.severity }, e.severity) : null, " ", e.type + ": " + oneLine(e.message, 300)),
        el("div", { class: "note" }, hist), ...(e.reasons || []).map((r) => el("div", { class: "note" }, r))));
    }
    for (const node of ioSections(s)) host.appendChild(node);
    const depsIn = (s.deps || []).map((d) => ({ id: d.step_id, d }));
    const depsOut = (CONSUMERS.get(id) || []).map((c) => ({ id: c.step_id, d: c.dep }));
    host.appendChild(section("Depends on (" + depsIn.length + ")", depList(depsIn, "in")));
    host.appendChild(section("Used by (" + depsOut.length + ")", depList(depsOut, "out")));
    if (s.attributes && Object.keys(s.attributes).length) host.appendChild(section("Attributes", valueView(s.attributes)));
    host.appendChild(stepScoresSection(id));
  }
  host.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-step]");
    if (b) selectStep(b.dataset.step);
  });
  onChange((ev) => { if (ev.type === "step") render(); });
  render();
}

function buildErrors(host) {
  const chains = LIFE.chains || [];
  const byId = new Map((LIFE.errors || []).map((e) => [e.error_id, e]));
  const n = (LIFE.errors || []).length;
  const crit = chains.filter((c) => c.critical).length;
  host.appendChild(el("p", { class: "e-head" }, n + " error" + (n === 1 ? "" : "s") + ", " + chains.length + " chain" + (chains.length === 1 ? "" : "s") + ", " + crit + " critical failure" + (crit === 1 ? "" : "s")));
  if (!n) { host.appendChild(el("p", { class: "note" }, "No errors recorded.")); }
  for (const c of chains) {
    const box = el("div", { class: "chain" + (c.critical ? " critical" : "") });
    box.appendChild(el("h3", {}, c.chain_id + (c.critical ? "  CRITICAL FAILURE" : "") + "  score " + c.score));
    if (c.reasons && c.reasons.length) box.appendChild(el("ul", { class: "rules" }, ...c.reasons.map((h) => el("li", {}, el("code", {}, h.rule), " (+" + h.weight + "): " + h.detail))));
    const table = el("table", { class: "etable" }, el("thead", {}, el("tr", {}, ...["error", "step", "stage", "parent error", "severity", "message"].map((h) => el("th", {}, h)))));
    const body = el("tbody");
    for (const eid of c.error_ids || []) {
      const e = byId.get(eid);
      if (!e) continue;
      body.appendChild(el("tr", { class: "sev-" + e.severity },
        el("td", { class: "mono" }, eid),
        el("td", {}, el("button", { type: "button", class: "linkish", "data-step": e.step_id }, (STEPS.get(e.step_id) || { name: e.step_name || "?" }).name + "#" + shortId(e.step_id)), e.attempt !== 1 ? " a" + e.attempt : ""),
        el("td", {}, el("span", { class: "badge " + (STAGE_CLASS[e.stage] || "") }, e.stage + (e.silently_propagated ? "*" : ""))),
        el("td", { class: "mono" }, e.parent_error_id ? e.parent_error_id + (e.link ? " (" + e.link + ")" : "") : "—"),
        el("td", {}, el("span", { class: "sev s-" + e.severity }, e.severity)),
        el("td", { class: "msg" }, oneLine(e.type + ": " + e.message, 300))));
    }
    table.appendChild(body);
    box.appendChild(table);
    host.appendChild(box);
  }
  const critical = [...new Set(chains.filter((c) => c.critical).flatMap((c) => c.error_ids || []))].map((i) => byId.get(i)).filter(Boolean);
  if (critical.length) {
    host.appendChild(el("h3", {}, "Lifecycle of the errors in critical chains"));
    const ul = el("ul", { class: "history" });
    for (const e of critical) {
      const li = el("li", {}, el("span", { class: "mono" }, e.error_id), ": " + (e.stages || []).map((c) => c.stage + " " + (c.step_id ? label(c.step_id) : "(run)")).join(" → "));
      if (e.retry_reason) li.appendChild(el("div", { class: "note" }, "retried because: " + e.retry_reason));
      for (const r of e.reasons || []) li.appendChild(el("div", { class: "note" }, r));
      ul.appendChild(li);
    }
    host.appendChild(ul);
  }
  if ((LIFE.errors || []).some((e) => e.silently_propagated)) host.appendChild(el("p", { class: "note" }, "* silently propagated: left open while its step's output was consumed"));
  if (D.errors_markdown) {
    const ta = el("textarea", { class: "md", readonly: true, rows: "12", spellcheck: "false", "aria-label": "Markdown for a ticket" });
    ta.value = D.errors_markdown;
    const copy = el("button", { type: "button" }, "copy Markdown");
    copy.addEventListener("click", () => {
      ta.select();
      const done = () => { copy.textContent = "copied"; };
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(ta.value).then(done, () => document.execCommand("copy") && done());
      else if (document.execCommand("copy")) done();
    });
    host.appendChild(el("details", { class: "md-box" }, el("summary", {}, "Markdown for a ticket (the same as trajdebug errors --format markdown)"), copy, ta));
  }
  host.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-step]");
    if (b) selectStep(b.dataset.step);
  });
}
