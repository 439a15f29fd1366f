"""Semantic conventions of LLM spans: what a span's attributes say it is, read and wrote.

Three families of attribute names describe LLM-agent spans, and real traces mix
them: OpenInference (``openinference.span.kind``, ``input.value``, flattened
``llm.input_messages.{i}.message.*``), OpenTelemetry GenAI (``gen_ai.*``, current
and deprecated names) and OpenLLMetry (``traceloop.*``, indexed
``gen_ai.prompt.{i}.*``).  This module maps them onto trajdebug's step kind,
input, output and tool-call ids; the messages themselves are read by
`trajdebug.core.chat`.  The kind is resolved in the priority
order Langfuse's OTel mapper uses (see products.md 3.10).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trajdebug.core.chat import messages_from_attributes, unflatten
from trajdebug.core.codec import loads
from trajdebug.sources.formats.convert import maybe_json


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
TOOL_ID_KEYS = ("tool.id", "gen_ai.tool.call.id", "tool_call.id")
"""The names `tool_call_id` reads, in order."""
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
    for k in TOOL_ID_KEYS:
        if attrs.get(k) not in (None, ""):
            return str(attrs[k])
    return None


def is_content_key(key: str) -> bool:
    """Whether the attribute holds message or I/O content (moved to the step's input/output)."""
    return key in _CONTENT_KEYS or key in _CONTENT_PREFIXES or key.startswith(_CONTENT_DOTTED)


# -- messages -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Messages:
    """A span's conversation content in the convention of `trajdebug.core.chat`."""

    inputs: list[dict[str, Any]] | None = None
    """The messages the model read."""
    output: dict[str, Any] | None = None
    """The message the model wrote (the first choice)."""


_MESSAGE_KEYS = (
    "llm.input_messages",
    "llm.output_messages",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.prompt",
    "gen_ai.completion",
)
"""How the names of the attributes `messages_from_attributes` reads messages from begin (the rest of
what it reads is events); keep in step with it."""


def may_hold_messages(key: str) -> bool:
    """Whether `messages` may read messages from an attribute of this name (a span with none of them and
    no event carries none)."""
    return key.startswith(_MESSAGE_KEYS)


def messages(attrs: Mapping[str, Any], events: Sequence[tuple[str, int, Mapping[str, Any]]] = ()) -> Messages:
    """Read a span's input and output messages from whichever convention it uses (`trajdebug.core.chat`)."""
    if not events and not any(k.startswith(_MESSAGE_KEYS) for k in attrs):
        # Most spans of a trace carry no message: told in one pass over their attribute names.
        return Messages(None, None)
    inputs, output = messages_from_attributes(attrs, events)
    return Messages(inputs, output)


def tool_name(attrs: Mapping[str, Any]) -> str | None:
    """The name of the tool a tool span ran, when its attributes say."""
    for k in ("tool.name", "gen_ai.tool.name", "traceloop.entity.name"):
        if isinstance(attrs.get(k), str) and attrs[k]:
            return str(attrs[k])
    return None


# -- retrieved documents ----------------------------------------------------------


DOCUMENT_PREFIXES = ("retrieval.documents.", "reranker.output_documents.")
"""How the names of OpenInference's flattened document lists begin (a retriever's and a reranker's output:
``retrieval.documents.{i}.document.content``, ``.id``, ``.score``, ``.metadata``)."""
_GENAI_DOCUMENTS = "gen_ai.retrieval.documents"
"""OpenTelemetry GenAI's documents a retrieval returned (structured, or one JSON string)."""


def may_hold_documents(key: str) -> bool:
    """Whether `documents` may read documents from an attribute of this name."""
    return key.startswith(DOCUMENT_PREFIXES) or key == _GENAI_DOCUMENTS


def documents(attrs: Mapping[str, Any]) -> list[Any] | None:
    """The documents a retriever or reranker span returned, when its attributes list them (OpenInference records
    them so, not as ``output.value``): each as ``{"id", "content", "score", "metadata"}`` as given, the
    metadata's JSON text decoded; None when the span lists none."""
    for prefix in DOCUMENT_PREFIXES:
        listed = unflatten(attrs, prefix[:-1])
        if isinstance(listed, list) and listed:
            return [_document(d) for d in listed]
    genai = maybe_json(attrs.get(_GENAI_DOCUMENTS))
    return genai if isinstance(genai, list) and genai else None


def _document(item: Any) -> Any:
    """One listed document without OpenInference's ``document`` wrapper, its metadata decoded."""
    doc = item.get("document", item) if isinstance(item, Mapping) else item
    if not isinstance(doc, Mapping):
        return doc
    return {k: maybe_json(v) if k == "metadata" else v for k, v in doc.items()}


# -- input and output -------------------------------------------------------------


_IO_KEYS = {
    which: (f"{which}.value", f"{which}.mime_type", f"traceloop.entity.{which}", genai)
    for which, genai in (("input", "gen_ai.tool.call.arguments"), ("output", "gen_ai.tool.call.result"))
}
IO_NAMES = {which: (value, traceloop, genai) for which, (value, _, traceloop, genai) in _IO_KEYS.items()}
"""The names `io_value` finds a value under (it returns None for attributes with none of them)."""


def io_value(attrs: Mapping[str, Any], which: str) -> Any:
    """A span's generic input or output value (``which`` is "input" or "output"), or None."""
    value_key, mime_key, traceloop_key, genai_key = _IO_KEYS[which]
    if value_key in attrs:
        v = attrs[value_key]
        mime = attrs.get(mime_key)
        if mime == "text/plain":
            return v
        if mime == "application/json" and isinstance(v, str):
            try:
                return loads(v)
            except ValueError:
                return v
        return maybe_json(v)
    v = attrs.get(traceloop_key)
    if v is not None:
        return maybe_json(v)
    v = attrs.get(genai_key)
    return maybe_json(v) if v is not None else None


__all__ = [
    "Messages",
    "agent_name",
    "documents",
    "io_value",
    "is_content_key",
    "may_hold_documents",
    "may_hold_messages",
    "messages",
    "model_name",
    "step_kind",
    "tool_call_id",
    "tool_name",
    "unflatten",
]
