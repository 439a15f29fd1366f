// tree.js: any JSON value as a foldable tree; long strings cut with an expand control.

const STRING_LIMIT = 400;
const CHILD_LIMIT = 200;

function scalarView(v) {
  if (v === null) return el("span", { class: "j-null" }, "null");
  if (typeof v === "boolean") return el("span", { class: "j-bool" }, String(v));
  if (typeof v === "number") return el("span", { class: "j-num" }, String(v));
  return stringView(String(v));
}

function stringView(s) {
  const box = el("span", { class: "j-str" });
  if (s.length <= STRING_LIMIT) {
    box.textContent = s;
    return box;
  }
  const text = el("span", {}, s.slice(0, STRING_LIMIT) + "…");
  const more = el("button", { type: "button", class: "expand" }, "show all " + s.length + " characters");
  more.addEventListener("click", () => {
    const open = more.dataset.open === "1";
    text.textContent = open ? s.slice(0, STRING_LIMIT) + "…" : s;
    more.dataset.open = open ? "0" : "1";
    more.textContent = open ? "show all " + s.length + " characters" : "show less";
  });
  box.append(text, " ", more);
  return box;
}

function isTruncated(v) {
  return v && typeof v === "object" && !Array.isArray(v) && "__trajdebug_truncated__" in v;
}

// valueView(value, depth): objects and arrays as <details>, open to depth 2.
function valueView(v, depth) {
  depth = depth || 0;
  if (v === null || typeof v !== "object") return scalarView(v);
  if (isTruncated(v)) {
    return el("span", { class: "j-trunc" },
      el("span", { class: "note" }, "truncated when recorded (" + v.__trajdebug_truncated__ + " bytes); the start: "),
      stringView(String(v.head === undefined ? "" : v.head)));
  }
  if (v && typeof v === "object" && "__trajdebug_repr__" in v) {
    return el("span", { class: "j-repr" }, el("span", { class: "note" }, (v.type || "object") + " (not JSON): "), stringView(String(v.__trajdebug_repr__)));
  }
  const arr = Array.isArray(v);
  const keys = arr ? v.map((_, i) => i) : Object.keys(v);
  if (!keys.length) return el("span", { class: "j-empty" }, arr ? "[]" : "{}");
  const det = el("details", { class: "j-node" });
  if (depth < 2) det.open = true;
  det.appendChild(el("summary", {}, arr ? "[" + plural(keys.length, "item") + "]" : "{" + plural(keys.length, "key") + "}"));
  const list = el("div", { class: "j-children" });
  const fill = (limit) => {
    clear(list);
    for (const k of keys.slice(0, limit)) {
      list.appendChild(el("div", { class: "j-row" }, el("span", { class: "j-key" }, String(k) + ": "), valueView(v[k], depth + 1)));
    }
    if (keys.length > limit) {
      const more = el("button", { type: "button", class: "expand" }, "show all " + keys.length);
      more.addEventListener("click", () => fill(keys.length));
      list.appendChild(more);
    }
  };
  // Children are built when first opened, so a huge value costs nothing until looked at.
  if (det.open) fill(CHILD_LIMIT);
  else det.addEventListener("toggle", () => { if (det.open && !list.firstChild) fill(CHILD_LIMIT); });
  det.appendChild(list);
  return det;
}
