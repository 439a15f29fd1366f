// core.js: the embedded run, DOM helpers, indexes and the shared selection state.
//
// Everything from the run is data: it reaches the page only through textContent,
// title/data-* attributes and SVG coordinates, never innerHTML, never a URL.

const D = JSON.parse(document.getElementById("trajdebug-data").textContent);
const RUN = D.run;
// Another run's id as `analyze` shows it (`report.html.short_ids`: unique in the source); whole when not listed.
const SHORT_IDS = D.short_ids || {};
function shortRun(rid) { return SHORT_IDS[rid] || String(rid); }
const ANALYSIS = D.analysis || {};
const LIFE = D.lifecycle || { errors: [], chains: [] };
const SVGNS = "http://www.w3.org/2000/svg";

const KIND_COLOR = {
  llm: "#8e5cd9", tool: "#1f9bb0", parse: "#c98a12", condition: "#3d6fd6", retrieval: "#2f9e5b",
  state: "#5b5fc7", agent: "#7a8394", input: "#6b7280", output: "#4b5563", other: "#94a3b8",
};
const EDGE_COLOR = { data: "#3b82f6", state: "#8b5cf6", control: "#f59e0b", env: "#10b981", context: "#ec4899" };
const STAGE_CLASS = { failed: "b-failed", recovered: "b-recovered", ignored: "b-ignored", propagated: "b-propagated", occurred: "b-occurred" };

// el("div", {class: "x", title: t}, child, "text", ...): children that are strings become text nodes.
function el(tag, attrs, ...kids) {
  const n = document.createElement(tag);
  if (attrs) setAttrs(n, attrs);
  for (const k of kids) add(n, k);
  return n;
}
function sv(tag, attrs, ...kids) {
  const n = document.createElementNS(SVGNS, tag);
  if (attrs) setAttrs(n, attrs);
  for (const k of kids) add(n, k);
  return n;
}
const SAFE_ATTR = /^(class|id|title|role|tabindex|type|hidden|colspan|readonly|rows|value|for|x|y|x1|x2|y1|y2|cx|cy|r|rx|ry|width|height|d|points|transform|viewBox|fill|stroke|stroke-width|stroke-dasharray|stroke-opacity|opacity|marker-end|markerWidth|markerHeight|refX|refY|orient|text-anchor|dominant-baseline|preserveAspectRatio|spellcheck|open|disabled)$|^(aria|data)-[a-z-]+$/;
function setAttrs(n, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (!SAFE_ATTR.test(k)) throw new Error("attribute not allowed: " + k);
    n.setAttribute(k, v === true ? "" : String(v));
  }
}
function add(n, k) {
  if (k === null || k === undefined || k === false) return;
  if (Array.isArray(k)) { for (const x of k) add(n, x); return; }
  n.appendChild(typeof k === "object" && k.nodeType ? k : document.createTextNode(String(k)));
}
function clear(n) { while (n.firstChild) n.removeChild(n.firstChild); return n; }

function fmtDur(ns) {
  if (ns === null || ns === undefined) return "unfinished";
  if (ns < 1e3) return ns + "ns";
  if (ns < 1e6) return (ns / 1e3).toFixed(1) + "µs";
  if (ns < 1e9) return (ns / 1e6).toFixed(1) + "ms";
  return (ns / 1e9).toFixed(2) + "s";
}
// "1 error", "3 errors": a count with its noun, singular for one.
function plural(n, one, many) { return n + " " + (n === 1 ? one : (many || one + "s")); }
function fmtCost(c) {
  if (c === null || c === undefined) return "";
  if (c === 0) return "$0";
  if (c >= 1) return "$" + c.toFixed(2);
  if (c >= 0.0001) return "$" + c.toFixed(4);
  // Fixed notation, two significant digits, as trajdebug.usage.format_cost (never "$5e-05" or "$1.0e-7").
  const places = Math.min(1 - Math.floor(Math.log10(c)), 20);
  return "$" + c.toFixed(places).replace(/0+$/, "").replace(/\.$/, "");
}
function fmtUsage(u) {
  if (!u) return "";
  const parts = [];
  if (u.calls > 1) parts.push(plural(u.calls, "LLM call"));
  if (u.total_tokens !== null && u.total_tokens !== undefined) parts.push(u.total_tokens.toLocaleString("en-US") + " tokens");
  if (u.cost !== null && u.cost !== undefined) parts.push(fmtCost(u.cost));
  return parts.join(" · ");
}
function shortId(id) { return id ? String(id).slice(-6) : "-"; }
function oneLine(s, limit) {
  const t = String(s === null || s === undefined ? "" : s).replace(/\s+/g, " ").trim();
  return t.length > limit ? t.slice(0, limit - 1) + "…" : t;
}

// -- indexes over the run ---------------------------------------------------------------
const STEPS = new Map();
const CHILDREN = new Map();
const CONSUMERS = new Map();
for (const s of RUN.steps) STEPS.set(s.step_id, s);
for (const s of RUN.steps) {
  const p = s.parent_id && STEPS.has(s.parent_id) && s.parent_id !== s.step_id ? s.parent_id : null;
  if (!CHILDREN.has(p)) CHILDREN.set(p, []);
  CHILDREN.get(p).push(s.step_id);
  for (const d of s.deps || []) {
    if (!CONSUMERS.has(d.step_id)) CONSUMERS.set(d.step_id, []);
    CONSUMERS.get(d.step_id).push({ step_id: s.step_id, dep: d });
  }
}
function parentOf(id) {
  const s = STEPS.get(id);
  return s && s.parent_id && STEPS.has(s.parent_id) && s.parent_id !== id ? s.parent_id : null;
}
function label(id) {
  const s = STEPS.get(id);
  return (s ? s.name : "?") + "#" + shortId(id);
}
// Errors per step (lifecycle view when present, the raw events otherwise).
const ERR_BY_STEP = new Map();
for (const e of (LIFE.errors && LIFE.errors.length ? LIFE.errors : RUN.errors)) {
  if (!ERR_BY_STEP.has(e.step_id)) ERR_BY_STEP.set(e.step_id, []);
  ERR_BY_STEP.get(e.step_id).push(e);
}
const CRITICAL = new Set();
for (const c of LIFE.chains || []) {
  if (!c.critical) continue;
  for (const sid of c.step_ids || []) CRITICAL.add(sid);
  for (const eid of c.error_ids || []) {
    const e = (LIFE.errors || []).find((x) => x.error_id === eid);
    if (e) for (const sid of e.path || [e.step_id]) CRITICAL.add(sid);
  }
}
// Retries: attempts of one call share the id of their first attempt.
const RETRY_GROUP = new Map();
for (const s of RUN.steps) {
  let first = s.step_id, hops = 0;
  while (STEPS.has(first) && STEPS.get(first).retry_of && STEPS.has(STEPS.get(first).retry_of) && hops++ < 1000) first = STEPS.get(first).retry_of;
  if (first !== s.step_id || s.attempt > 1) {
    if (!RETRY_GROUP.has(first)) RETRY_GROUP.set(first, [first]);
    RETRY_GROUP.get(first).push(s.step_id);
  }
}
const ATTEMPTS_OF = new Map();
for (const ids of RETRY_GROUP.values()) for (const id of ids) ATTEMPTS_OF.set(id, ids);

// -- shared state: the selected step and the selected root cause -----------------------------
const STATE = { step: null, cause: null, path: new Set(), pathList: [] };
const LISTENERS = [];
function onChange(fn) { LISTENERS.push(fn); }
function emit(what) { for (const fn of LISTENERS) fn(what); }
function selectStep(id, opts) {
  if (!STEPS.has(id)) return;
  STATE.step = id;
  emit({ type: "step", reveal: !opts || opts.reveal !== false });
}
function selectCause(i) {
  const c = (ANALYSIS.root_causes || [])[i];
  if (!c) return;
  STATE.cause = i;
  STATE.pathList = (c.path && c.path.length ? c.path : [c.step_id]).filter((x) => STEPS.has(x));
  STATE.path = new Set(STATE.pathList);
  emit({ type: "cause" });
  if (STEPS.has(c.step_id)) selectStep(c.step_id);
}
