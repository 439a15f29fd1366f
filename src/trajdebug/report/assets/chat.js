// chat.js: an LLM step as a conversation in the inspector: the messages it read (system, user, assistant, tool;
// an assistant's tool calls as calls with their name and arguments; a tool message tied to its call's id), the
// message it answered, its model, tokens and cost; the raw JSON one click away (nu64b "Missing features" 6).
// The shapes are the ones `trajdebug.core.chat` normalises every source to (`report/chat.py` embeds what it
// changed as D.chat); every text is a text node.

const CHAT = D.chat || {};
const CHAT_ROLES = new Set(["system", "user", "assistant", "tool"]);

// {messages, output, tools} of an LLM step, or null (not an LLM step, or no shape to show as a conversation).
function chatOf(s) {
  const c = s && CHAT[s.step_id];
  if (!c) return null;
  const input = c.same_input ? s.input && s.input.messages : c.messages;
  const output = c.same_output ? s.output : c.output;
  const messages = Array.isArray(input) ? input : null;
  const answer = output && typeof output === "object" && !isTruncated(output) ? output : null;
  if (!messages && !answer) return null;
  return { messages, output: answer, tools: c.tools || [] };
}

function chatText(content) {
  if (content === null || content === undefined || content === "") return null;
  return typeof content === "string" ? stringView(content) : valueView(content, 1);
}

function toolCallView(call) {
  const c = call && typeof call === "object" ? call : { name: String(call) };
  const box = el("div", { class: "tool-call", "data-call": c.id ? String(c.id) : null },
    el("span", { class: "tc-label" }, "tool call "),
    el("strong", { class: "tc-name" }, String(c.name || "?")),
    c.id ? el("span", { class: "tc-id" }, " " + c.id) : null);
  const args = c.arguments;
  if (args !== undefined && args !== null) box.appendChild(el("div", { class: "tc-args" }, typeof args === "string" ? stringView(args) : valueView(args, 1)));
  return box;
}

function messageView(m, calls, extra) {
  const msg = m && typeof m === "object" ? m : { role: "?", content: m };
  const role = String(msg.role || "?");
  const head = el("div", { class: "msg-head" }, el("span", { class: "msg-role" }, role), msg.name ? el("span", { class: "msg-name" }, " " + msg.name) : null);
  if (msg.tool_call_id) {
    const call = calls.get(String(msg.tool_call_id));
    head.append(el("span", { class: "note" }, " result of "),
      el("button", { type: "button", class: "linkish tc-ref", "data-call-ref": String(msg.tool_call_id), title: call ? "show the call" : "the call is not in this step's messages" },
        (call && call.name ? call.name + " " : "") + msg.tool_call_id));
  }
  const box = el("div", { class: "msg role-" + (CHAT_ROLES.has(role) ? role : "other") + (extra ? " " + extra : ""), "data-role": role }, head);
  const text = chatText(msg.content);
  if (text) box.appendChild(el("div", { class: "msg-text" }, text));
  for (const c of Array.isArray(msg.tool_calls) ? msg.tool_calls : []) box.appendChild(toolCallView(c));
  return box;
}

function chatView(s, c) {
  const calls = new Map();
  for (const m of [...(c.messages || []), c.output || {}]) {
    for (const tc of (m && Array.isArray(m.tool_calls) ? m.tool_calls : [])) if (tc && tc.id) calls.set(String(tc.id), tc);
  }
  const box = el("div", { class: "chat" });
  const u = D.usage && D.usage.steps && D.usage.steps[s.step_id];
  if (u) {
    const parts = [u.model, u.prompt_tokens !== null || u.completion_tokens !== null ? (u.prompt_tokens ?? "?") + " in, " + (u.completion_tokens ?? "?") + " out tokens" : null, u.cost !== null ? fmtCost(u.cost) : null];
    box.appendChild(el("div", { class: "chat-usage note" }, parts.filter(Boolean).join(" · ")));
  }
  if (c.tools.length) box.appendChild(el("div", { class: "chat-tools note" }, "tools offered: " + c.tools.join(", ")));
  if (c.messages) {
    box.appendChild(el("div", { class: "chat-part" }, "input: " + plural(c.messages.length, "message")));
    for (const m of c.messages) box.appendChild(messageView(m, calls));
  } else {
    box.appendChild(el("div", { class: "chat-part" }, "input (no messages)"), valueView(s.input));
  }
  box.appendChild(el("div", { class: "chat-part" }, "response"));
  box.appendChild(c.output ? messageView(c.output, calls, "msg-out") : valueView(s.output));
  box.addEventListener("click", (ev) => {
    const b = ev.target.closest("[data-call-ref]");
    if (!b) return;
    const target = [...box.querySelectorAll("[data-call]")].find((n) => n.dataset.call === b.dataset.callRef);
    if (!target) return;
    target.scrollIntoView({ block: "nearest" });
    target.classList.remove("flash");
    void target.offsetWidth;
    target.classList.add("flash");
  });
  return box;
}

// The sections of a step's input and output: a conversation for an LLM step (with the raw JSON folded under
// it), the JSON trees otherwise.
function ioSections(s) {
  const c = chatOf(s);
  const raw = [section("Input", valueView(s.input)), section("Output", valueView(s.output))];
  if (!c) return raw;
  return [section("Conversation", chatView(s, c)), el("details", { class: "i-raw" }, el("summary", {}, "raw JSON (input and output)"), ...raw)];
}
