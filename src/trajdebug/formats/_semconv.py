"""Semantic conventions of LLM spans: what a span's attributes say it is, read and wrote.

Three families of attribute names describe LLM-agent spans, and real traces mix
them: OpenInference (``openinference.span.kind``, ``input.value``, flattened
``llm.input_messages.{i}.message.*``), OpenTelemetry GenAI (``gen_ai.*``, current
and deprecated names) and OpenLLMetry (``traceloop.*``, indexed
``gen_ai.prompt.{i}.*``).  This module maps them onto trajdebug's step kind,
input, output, messages and tool-call ids.  The kind is resolved in the priority
order Langfuse's OTel mapper uses (see products.md 3.10).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajdebug.formats._common import maybe_json


_OPENINFERENCE_KIND = {
    "LLM": "llm",
    "EMBEDDING": "llm",
    "CHAIN": "other",
    "RETRIEVER": "retrieval",
    "RERANKER": "retrieval",
    "TOOL": "tool",
    "AGENT": "agent",
    "GUARDRAIL": "condition",
    "EVALUATOR": "condition",
    "PROMPT": "other",
}
_GENAI_OPERATION_KIND = {
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "completion": "llm",
    "generate": "llm",
    "embeddings": "llm",
    "execute_tool": "tool",
    "invoke_agent": "agent",
    "create_agent": "agent",
    "invoke_workflow": "agent",
    "retrieval": "retrieval",
}
_TRACELOOP_KIND = {"workflow": "agent", "agent": "agent", "tool": "tool", "task": "other"}
_AGENTOPS_KIND = {
    "llm": "llm",
    "tool": "tool",
    "agent": "agent",
    "workflow": "agent",
    "task": "other",
    "session": "agent",
}
_LANGFUSE_KIND = {
    "generation": "llm",
    "embedding": "llm",
    "tool": "tool",
    "agent": "agent",
    "retriever": "retrieval",
    "evaluator": "condition",
    "guardrail": "condition",
    "chain": "other",
    "span": "other",
    "event": "other",
}
_MODEL_KEYS = ("llm.model_name", "gen_ai.request.model", "gen_ai.response.model", "llm.request.model_name")
_TOOL_ID_KEYS = ("tool.id", "gen_ai.tool.call.id", "tool_call.id")
_CONTENT_PREFIXES = (
    "llm.input_messages",
    "llm.output_messages",
    "gen_ai.prompt",
    "gen_ai.completion",
    "llm.prompts",
    "llm.choices",
)
_CONTENT_DOTTED = tuple(p + "." for p in _CONTENT_PREFIXES)
_CONTENT_KEYS = frozenset(
    {
        "input.value",
        "input.mime_type",
        "output.value",
        "output.mime_type",
        "traceloop.entity.input",
        "traceloop.entity.output",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
)


def step_kind(attrs: Mapping[str, Any]) -> str | None:
    """The step kind the attributes declare, or None when they say nothing."""
    v = attrs.get("openinference.span.kind")
    if isinstance(v, str) and v.upper() in _OPENINFERENCE_KIND:
        return _OPENINFERENCE_KIND[v.upper()]
    for key, table in (
        ("gen_ai.operation.name", _GENAI_OPERATION_KIND),
        ("traceloop.span.kind", _TRACELOOP_KIND),
        ("agentops.span.kind", _AGENTOPS_KIND),
        ("langfuse.observation.type", _LANGFUSE_KIND),
    ):
        v = attrs.get(key)
        if isinstance(v, str) and v.lower() in table:
            return table[v.lower()]
    if any(k in attrs for k in ("gen_ai.tool.name", "gen_ai.tool.call.id", "tool.name")):
        return "tool"
    if any(k in attrs for k in (*_MODEL_KEYS, "llm.request.type")):
        return "llm"
    return None


def model_name(attrs: Mapping[str, Any]) -> str | None:
    """The model a span called, if it names one."""
    for k in _MODEL_KEYS:
        if isinstance(attrs.get(k), str):
            return str(attrs[k])
    return None


def agent_name(attrs: Mapping[str, Any]) -> str | None:
    """The agent a span belongs to, when it names one itself."""
    for k in ("agent.name", "gen_ai.agent.name"):
        if isinstance(attrs.get(k), str):
            return str(attrs[k])
    if attrs.get("traceloop.span.kind") == "agent" and isinstance(attrs.get("traceloop.entity.name"), str):
        return str(attrs["traceloop.entity.name"])
    return None


def tool_call_id(attrs: Mapping[str, Any]) -> str | None:
    """The tool-call id a tool span executes (``tool.id``, ``gen_ai.tool.call.id``)."""
    for k in _TOOL_ID_KEYS:
        if attrs.get(k) not in (None, ""):
            return str(attrs[k])
    return None


def is_content_key(key: str) -> bool:
    """Whether the attribute holds message or I/O content (moved to the step's input/output)."""
    return key in _CONTENT_KEYS or key in _CONTENT_PREFIXES or key.startswith(_CONTENT_DOTTED)


# -- flattened attributes -------------------------------------------------------


def unflatten(attrs: Mapping[str, Any], prefix: str) -> Any:
    """Rebuild the nested value flattened under ``prefix`` (``a.0.b`` -> ``{"a": [{"b": ...}]}``).

    OpenInference flattens lists as ``<prefix>.<index>.<suffix>`` with zero-based
    indexes; some producers send the nested JSON instead, which is returned
    decoded.  Returns None when nothing is under the prefix.
    """
    if prefix in attrs:
        return maybe_json(attrs[prefix])
    root: dict[str, Any] = {}
    plen = len(prefix) + 1
    found = False
    for key, value in attrs.items():
        if not key.startswith(prefix + "."):
            continue
        found = True
        node = root
        parts = key[plen:].split(".")
        for part in parts[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = node[part] = {}
            node = nxt
        node[parts[-1]] = value
    return _listify(root) if found else None


def _listify(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    out = {k: _listify(v) for k, v in node.items()}
    if out and all(k.isdigit() for k in out):
        return [out[k] for k in sorted(out, key=int)]
    return out


# -- messages -------------------------------------------------------------------


@dataclass(slots=True)
class Messages:
    """A span's conversation content, normalised to OpenAI-style message dicts."""

    inputs: list[dict[str, Any]] | None = None
    """The messages the model read."""
    outputs: list[dict[str, Any]] | None = None
    """The messages the model wrote."""
    issued_calls: list[str] = field(default_factory=list)
    """Tool-call ids in the output (calls the model issued)."""
    answered_calls: list[str] = field(default_factory=list)
    """Tool-call ids of tool results in the input (results the model read)."""


def messages(attrs: Mapping[str, Any], events: Sequence[tuple[str, int, Mapping[str, Any]]] = ()) -> Messages:
    """Read a span's input and output messages from whichever convention it uses."""
    m = Messages()
    m.inputs = _first_messages(
        "user",
        unflatten(attrs, "llm.input_messages"),
        _genai_messages(attrs.get("gen_ai.input.messages")),
        unflatten(attrs, "gen_ai.prompt"),
        _event_messages(events, inputs=True),
    )
    m.outputs = _first_messages(
        "assistant",
        unflatten(attrs, "llm.output_messages"),
        _genai_messages(attrs.get("gen_ai.output.messages")),
        unflatten(attrs, "gen_ai.completion"),
        _event_messages(events, inputs=False),
    )
    for msg in m.outputs or ():
        m.issued_calls += [str(c["id"]) for c in msg.get("tool_calls", ()) if c.get("id")]
    for msg in m.inputs or ():
        if msg.get("tool_call_id"):
            m.answered_calls.append(str(msg["tool_call_id"]))
    return m


def _first_messages(role: str, *candidates: Any) -> list[dict[str, Any]] | None:
    for c in candidates:
        if isinstance(c, str):
            return [{"role": role, "content": c}]
        if isinstance(c, list) and c:
            return [_normalise(x) for x in c if isinstance(x, Mapping)]
    return None


def _normalise(msg: Mapping[str, Any]) -> dict[str, Any]:
    """One message in OpenAI shape, from OpenInference (``message.*``), GenAI parts or OpenLLMetry form."""
    if isinstance(msg.get("message"), Mapping) and "role" not in msg:
        msg = msg["message"]
    out: dict[str, Any] = {}
    if msg.get("role") is not None:
        out["role"] = msg["role"]
    content = msg.get("content")
    calls: list[dict[str, Any]] = []
    parts = msg.get("parts") if isinstance(msg.get("parts"), list) else msg.get("contents")
    if isinstance(parts, list):
        texts = []
        for p in parts:
            if not isinstance(p, Mapping):
                continue
            p = p.get("message_content", p)
            t = p.get("type")
            if t == "tool_call":
                calls.append(
                    {"id": p.get("id"), "name": p.get("name"), "arguments": maybe_json(p.get("arguments"))}
                )
            elif t == "tool_call_response":
                out["tool_call_id"] = p.get("id")
                content = p.get("response")
            elif isinstance(p.get("content", p.get("text")), str):
                texts.append(p.get("content", p.get("text")))
        if content is None and texts:
            content = "\n".join(texts)
    out["content"] = maybe_json(content) if isinstance(content, str) else content
    for key in ("name", "tool_call_id"):
        if msg.get(key) is not None:
            out[key] = msg[key]
    if msg.get("id") is not None and out.get("role") == "tool":
        out.setdefault("tool_call_id", msg["id"])
    raw_calls = maybe_json(msg.get("tool_calls"))
    for c in raw_calls if isinstance(raw_calls, list) else ():
        if not isinstance(c, Mapping):
            continue
        c = c.get("tool_call", c)
        fn = c.get("function") if isinstance(c.get("function"), Mapping) else c
        calls.append(
            {"id": c.get("id"), "name": fn.get("name"), "arguments": maybe_json(fn.get("arguments"))}
        )
    if msg.get("function_call_name") is not None:  # OpenInference legacy function call
        calls.append(
            {
                "id": None,
                "name": msg["function_call_name"],
                "arguments": maybe_json(msg.get("function_call_arguments_json")),
            }
        )
    if calls:
        out["tool_calls"] = calls
    return out


def _genai_messages(value: Any) -> Any:
    v = maybe_json(value)
    return v if isinstance(v, list) else None


_EVENT_ROLE = re.compile(r"^gen_ai\.(system|user|assistant|tool)\.message$")


def _event_messages(
    events: Sequence[tuple[str, int, Mapping[str, Any]]], *, inputs: bool
) -> list[Any] | None:
    """Messages carried by the deprecated GenAI events (``gen_ai.user.message``, ``gen_ai.choice``)."""
    out: list[Any] = []
    for name, _t, attrs in events:
        m = _EVENT_ROLE.match(name)
        if inputs and m:
            msg = dict(attrs)
            msg.setdefault("role", m.group(1))
            out.append(msg)
        elif not inputs and name == "gen_ai.choice":
            msg = maybe_json(attrs.get("message"))
            msg = dict(msg) if isinstance(msg, Mapping) else {"content": attrs.get("content")}
            msg.setdefault("role", "assistant")
            if "tool_calls" in attrs:
                msg.setdefault("tool_calls", attrs["tool_calls"])
            out.append(msg)
    return out or None


# -- input and output -------------------------------------------------------------


def io_value(attrs: Mapping[str, Any], which: str) -> Any:
    """A span's generic input or output value (``which`` is "input" or "output"), or None."""
    if f"{which}.value" in attrs:
        v = attrs[f"{which}.value"]
        mime = attrs.get(f"{which}.mime_type")
        if mime == "text/plain":
            return v
        if mime == "application/json" and isinstance(v, str):
            from trajdebug._encode import loads

            try:
                return loads(v)
            except ValueError:
                return v
        return maybe_json(v)
    v = attrs.get(f"traceloop.entity.{which}")
    if v is not None:
        return maybe_json(v)
    v = attrs.get("gen_ai.tool.call.arguments" if which == "input" else "gen_ai.tool.call.result")
    return maybe_json(v) if v is not None else None


__all__ = [
    "Messages",
    "agent_name",
    "io_value",
    "is_content_key",
    "messages",
    "model_name",
    "step_kind",
    "tool_call_id",
    "unflatten",
]
