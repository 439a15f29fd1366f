"""LLM steps as semantic content: messages in, a message out, the envelope as attributes.

Every importer and integration hands an LLM call to `normalize_llm_step`, and
the analysis calls it again at read time on runs recorded before this
convention existed, so the function is idempotent.  The shapes it writes
(``docs/format.md``, "LLM steps"):

- ``step.input = {"messages": [message, ...]}``;
- ``step.output = {"role": "assistant", "content": str | None, "tool_calls":
  [...]}`` (the first choice; ``tool_calls`` always present, empty when the
  model called no tool; ``name`` when the source names the speaker);
- an input message is ``{"role": "system|user|assistant|tool", "content": str
  | None, "tool_calls": [{"id": str | None, "name": str, "arguments": value}],
  "tool_call_id": str, "name": str}``, keys other than ``role`` and
  ``content`` left out when empty; ``arguments`` is the parsed JSON object or
  array, or the raw string when it holds neither;
- everything about the call rather than its content (model, provider, token
  usage, response id, creation time, finish reason, invocation parameters, the
  tools offered, the system fingerprint) becomes ``llm.*`` attributes
  (`ENVELOPE_KEYS`), which content inference and the diagnosers do not read.

Recognised sources: OpenAI Chat Completions (request body, response, streamed
chunks), the OpenAI Responses API (input and output items: ``message``,
``function_call``, ``function_call_output``), Anthropic Messages (content blocks
``text``, ``tool_use``, ``tool_result``), LangChain messages (model dumps and
serialized constructors), OpenInference flattened attributes
(``llm.input_messages.{i}.message.*``), OpenTelemetry GenAI messages with parts
(``gen_ai.input.messages``) and the deprecated indexed names and events
(``gen_ai.prompt.{i}.*``, ``gen_ai.completion.{i}.*``, ``gen_ai.*.message``).
Pydantic objects (the SDKs' types) are read through their ``model_dump``.  A
value in no known shape passes through unchanged; nothing here raises.

Standard library only (orjson decodes JSON when installed): this package (with `_messages`, which reads single
messages, and `_spans`, which reads LLM spans' attributes) sits on the model floor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trajdebug.core.chat._messages import (
    _LC_TYPES,
    _MESSAGE_ITEM_TYPES,
    _ROLE_ALIASES,
    _as_assistant,
    _call,
    _convert,
    _int,
    _is_message,
    _text,
    input_messages,
    normalize_message,
    normalize_messages,
    parse_arguments,
    plain,
    tool_calls,
    tool_names,
)
from trajdebug.core.chat._spans import (
    envelope_of,
    messages_from_attributes,
    messages_of,
    scan,
    span_envelope,
    unflatten,
)


ENVELOPE_KEYS: tuple[str, ...] = (
    "llm.model",
    "llm.provider",
    "llm.usage.prompt_tokens",
    "llm.usage.completion_tokens",
    "llm.usage.total_tokens",
    "llm.usage.cost",
    "llm.response_id",
    "llm.created",
    "llm.finish_reason",
    "llm.invocation_parameters",
    "llm.tools",
    "llm.system_fingerprint",
)
"""The attributes an LLM call's envelope becomes (never read as content)."""

ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")
"""The roles of normalized messages."""

_INVOCATION_KEYS = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "max_completion_tokens",
        "max_output_tokens",
        "stop",
        "stop_sequences",
        "seed",
        "n",
        "presence_penalty",
        "frequency_penalty",
        "logprobs",
        "top_logprobs",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "reasoning",
        "reasoning_effort",
        "stream",
        "service_tier",
        "truncation",
        "text",
    }
)


# -- the entry point ------------------------------------------------------------


def normalize_llm_step(
    input: Any,
    output: Any,
    attributes: Mapping[str, Any] | None = None,
    *,
    events: Sequence[tuple[str, int, Mapping[str, Any]]] = (),
) -> tuple[Any, Any, dict[str, Any]]:
    """Bring one LLM call to the convention: ``(input, output, attributes to set)``.

    Args:
        input: What the call read: a request body, a message list, a prompt
            string, an already normalized ``{"messages": [...]}``.
        output: What it answered: a response, a message, a list of output items
            or chunks, a string.
        attributes: The step's attributes; OpenInference and GenAI message
            attributes in them are read as the messages (they win over
            ``input`` and ``output``), and their envelope keys become ``llm.*``.
        events: Span events carrying messages (deprecated GenAI events).

    Returns:
        The normalized input and output (each unchanged when in no known shape)
        and the ``llm.*`` attributes whose value differs from ``attributes``;
        a second call on the result returns the same input and output and no
        attributes.
    """
    attrs = attributes or {}
    env: dict[str, Any] = {}
    found = scan(attrs)  # one pass over the names for the messages and the envelope
    span_in, span_out = messages_of(attrs, events, found)
    # A span's own messages (an importer's LLM span) come with no input or output to read: none is read.
    msgs, env_in = _input(input) if input is not None else (None, {})
    message, env_out = _output(output) if output is not None else (None, {})
    if env_in:
        env.update(env_in)
    env.update(envelope_of(attrs, found))
    if env_out:
        env.update(env_out)
    new_input: Any = input
    if span_in is not None:
        new_input = {"messages": span_in}
    elif msgs is not None:
        new_input = {"messages": msgs}
    new_output: Any = output
    if span_out is not None:
        # `messages_of` made it an output message already (then it holds ``tool_calls``) unless it was text.
        new_output = span_out if "tool_calls" in span_out else _as_assistant(span_out)
    elif message is not None:
        new_output = _as_assistant(message)
    changed = {k: v for k, v in env.items() if v is not None and attrs.get(k) != v}
    return new_input, new_output, changed


def is_normalized(input: Any, output: Any) -> bool:
    """Whether an LLM step already follows the convention (its input a message list, its output a message)."""
    ok_in = input is None or (
        isinstance(input, Mapping) and set(input) == {"messages"} and isinstance(input["messages"], list)
    )
    ok_out = output is None or (isinstance(output, Mapping) and output.get("role") == "assistant")
    return ok_in and ok_out


# -- messages ---------------------------------------------------------------------


# -- requests ---------------------------------------------------------------------


def _input(value: Any) -> tuple[list[dict[str, Any]] | None, dict[str, Any]]:
    """(messages, envelope) of what an LLM call read."""
    value = plain(value)
    env: dict[str, Any] = {}
    if isinstance(value, str):
        return [{"role": "user", "content": value}], env
    if isinstance(value, list):
        return normalize_messages(value), env
    if not isinstance(value, Mapping):
        return None, env
    msgs: list[dict[str, Any]] | None = None
    if isinstance(value.get("messages"), list):
        msgs = normalize_messages(value["messages"]) if value["messages"] else []
    elif "input" in value and (
        "model" in value or "instructions" in value or isinstance(value["input"], list)
    ):
        inp = value["input"]
        msgs = [{"role": "user", "content": inp}] if isinstance(inp, str) else normalize_messages(inp)
    elif isinstance(value.get("prompt"), str):  # legacy completions
        msgs = [{"role": "user", "content": value["prompt"]}]
    if msgs is None:
        return None, env
    system = value.get("system", value.get("instructions"))
    if system is not None and not (msgs and msgs[0].get("role") == "system"):
        text = _text(system)
        if text:
            msgs.insert(0, {"role": "system", "content": text})
    if isinstance(value.get("model"), str):
        env["llm.model"] = value["model"]
    params = {k: plain(v) for k, v in value.items() if k in _INVOCATION_KEYS and v is not None}
    if params:
        env["llm.invocation_parameters"] = params
    names = tool_names(value.get("tools"))
    if names:
        env["llm.tools"] = names
    return msgs, env


# -- responses --------------------------------------------------------------------


def _output(value: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(message, envelope) of what an LLM call answered."""
    value = plain(value)
    env: dict[str, Any] = {}
    if isinstance(value, str):
        return {"role": "assistant", "content": value}, env
    if isinstance(value, list):
        if value and all(
            isinstance(c, Mapping) and c.get("object") == "chat.completion.chunk" for c in value
        ):
            return _chunks(value, env), env
        if value and all(
            isinstance(v, Mapping) and v.get("type") in _MESSAGE_ITEM_TYPES | {"reasoning"} for v in value
        ):
            return _items(value), env
        msgs = normalize_messages(value)
        if msgs:
            first = next((m for m in msgs if m["role"] == "assistant"), msgs[0])
            return _as_assistant(first), env
        return None, env
    if not isinstance(value, Mapping):
        return None, env
    if isinstance(value.get("choices"), list):
        _envelope(value, env)
        first = value["choices"][0] if value["choices"] else {}
        first = plain(first)
        if isinstance(first, Mapping):
            if first.get("finish_reason") is not None:
                env["llm.finish_reason"] = first["finish_reason"]
            msg = first.get("message", first.get("delta"))
            if isinstance(msg, Mapping):
                return _as_assistant(_convert(msg)[0]), env
            if isinstance(first.get("text"), str):
                return {"role": "assistant", "content": first["text"]}, env
        return {"role": "assistant", "content": None}, env
    if isinstance(value.get("output"), list) and (value.get("object") == "response" or "model" in value):
        _envelope(value, env)
        if value.get("status") and value["status"] != "completed":
            env["llm.finish_reason"] = value["status"]
        return _items(value["output"]), env
    if isinstance(value.get("generations"), list):  # LangChain LLMResult / ChatResult
        llm_output = value.get("llm_output") or {}
        if isinstance(llm_output, Mapping):
            _envelope(llm_output, env)
        gens = value["generations"]
        gen = gens[0][0] if gens and isinstance(gens[0], list) and gens[0] else (gens[0] if gens else None)
        if isinstance(gen, Mapping):
            if gen.get("message") is not None:
                message, inner = _output(gen["message"])
                env.update(inner)
                return message, env
            if isinstance(gen.get("text"), str):
                return {"role": "assistant", "content": gen["text"]}, env
        return None, env
    if _is_message(value):
        if value.get("type") == "message" and value.get("role") == "assistant" and "model" in value:
            _envelope(value, env)  # Anthropic Messages response
            if value.get("stop_reason") is not None:
                env["llm.finish_reason"] = value["stop_reason"]
        if value.get("type") in ("ai", "AIMessageChunk") or value.get("lc") == 1:
            _langchain_envelope(value.get("kwargs", value), env)
        found = _convert(value)
        return (_as_assistant(found[0]) if found else None), env
    return None, env


def _items(items: list[Any]) -> dict[str, Any]:
    """Responses API output items as one assistant message (text joined, function calls as tool calls)."""
    msgs = (
        normalize_messages([i for i in items if isinstance(i, Mapping) and i.get("type") != "reasoning"])
        or []
    )
    texts = [m["content"] for m in msgs if m.get("content")]
    calls = [c for m in msgs for c in m.get("tool_calls", ())]
    out: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) if texts else None}
    if calls:
        out["tool_calls"] = calls
    return out


def _chunks(chunks: list[Any], env: dict[str, Any]) -> dict[str, Any]:
    """Streamed Chat Completions chunks joined into one message (first choice)."""
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for c in chunks:
        _envelope(c, env)
        for ch in c.get("choices") or ():
            if not isinstance(ch, Mapping) or ch.get("index", 0) != 0:
                continue
            if ch.get("finish_reason") is not None:
                env["llm.finish_reason"] = ch["finish_reason"]
            delta = ch.get("delta") or {}
            if isinstance(delta.get("content"), str):
                text.append(delta["content"])
            for tc in delta.get("tool_calls") or ():
                slot = calls.setdefault(int(tc.get("index", 0)), {"id": None, "name": "", "arguments": ""})
                fn = tc.get("function") or {}
                slot["id"] = tc.get("id") or slot["id"]
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
    out: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        out["tool_calls"] = [_call(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())]
    return out


def _envelope(resp: Mapping[str, Any], env: dict[str, Any]) -> None:
    """The envelope of a response (Chat Completions, Responses, Anthropic, LangChain ``llm_output``)."""
    model = resp.get("model", resp.get("model_name"))
    if isinstance(model, str) and model:
        env["llm.model"] = model
    rid = resp.get("id")
    if isinstance(rid, str) and rid:
        env["llm.response_id"] = rid
    created = resp.get("created", resp.get("created_at"))
    if isinstance(created, (int, float)) and not isinstance(created, bool):
        env["llm.created"] = int(created) if float(created).is_integer() else created
    if isinstance(resp.get("system_fingerprint"), str):
        env["llm.system_fingerprint"] = resp["system_fingerprint"]
    if isinstance(resp.get("model_provider"), str):
        env["llm.provider"] = resp["model_provider"]
    usage = resp.get("usage", resp.get("token_usage", resp.get("usage_metadata")))
    if isinstance(usage, Mapping):
        _usage(usage, env)


def _usage(usage: Mapping[str, Any], env: dict[str, Any]) -> None:
    prompt = _int(usage.get("prompt_tokens", usage.get("input_tokens")))
    completion = _int(usage.get("completion_tokens", usage.get("output_tokens")))
    total = _int(usage.get("total_tokens"))
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    for key, v in (("prompt_tokens", prompt), ("completion_tokens", completion), ("total_tokens", total)):
        if v is not None:
            env[f"llm.usage.{key}"] = v


def _langchain_envelope(msg: Mapping[str, Any], env: dict[str, Any]) -> None:
    meta = msg.get("response_metadata")
    if isinstance(meta, Mapping):
        _envelope(meta, env)
        if meta.get("finish_reason") is not None:
            env["llm.finish_reason"] = meta["finish_reason"]
        if meta.get("stop_reason") is not None:
            env["llm.finish_reason"] = meta["stop_reason"]
    if isinstance(msg.get("usage_metadata"), Mapping):
        _usage(msg["usage_metadata"], env)
    mid = msg.get("id")
    if (
        isinstance(mid, str)
        and mid
        and not mid.startswith(("run-", "lc_run-"))
        and "llm.response_id" not in env
    ):
        env["llm.response_id"] = mid


# -- what a provider mints per call ------------------------------------------------


_MINTED = frozenset({"id", "call_id", "tool_call_id", "tool_use_id"})
"""Ids a provider mints for every call: a response's, a message's, a tool call's and the one a tool result
answers (its call's)."""
_ANSWERING = _MINTED - {"id"}
"""The minted ids whose names say so anywhere in a message's content blocks (``id`` says it only in a tool use)."""
_PER_CALL = _MINTED | {"created", "created_at", "usage", "usage_metadata", "token_usage", "system_fingerprint"}
"""What a response's envelope changes in every call besides its ids: when it was made, its token counts, the
build of the backend that answered."""
_DEEP = 32
"""Lists nested deeper than this (never a request's or an answer's structure) are compared as they are."""


def unminted(value: Any, depth: int = 0) -> Any:
    """An LLM call's request or answer without what its provider mints per call, so that two calls asked and
    answered alike compare equal: the response's id, creation time, token usage and system fingerprint (the
    top-level envelope), the ids of its messages, of the tool calls they hold and the ``tool_call_id`` a tool
    result in the history answers.  Only those, and only where they sit (a response envelope, a message, a
    tool call or a content block of one): what was asked (the model, the parameters, the tools offered), the
    messages' text, a tool call's name and arguments, and parsed content (a record the model answered with,
    whose ``id`` or ``type`` is what it said) stay whole, and no list is cut."""
    if depth > _DEEP:
        return value
    if isinstance(value, list):
        return [unminted(v, depth + 1) for v in value]
    if not isinstance(value, Mapping):
        return value
    if isinstance(value.get("choices"), list) or (isinstance(value.get("output"), list) and "object" in value):
        return _unminted_response(value, depth)
    if _message_shaped(value):
        return _unminted_message(value, depth)
    if any(isinstance(value.get(k), list) for k in ("messages", "input")):
        # A request: its history's ids go, the rest (model, parameters, tools) is what was asked.
        return {k: unminted(v, depth + 1) if k in ("messages", "input") else v for k, v in value.items()}
    if _tool_call_shaped(value):
        # A tool call the step returned by itself (its name, its arguments and the id the API gave it, which
        # the agent keeps to send the result back): the id is new on every call (nu63: `diff` named such a
        # step the first divergence of two runs that planned alike).
        return _without(value, _MINTED)
    return value


def _message_shaped(v: Mapping[str, Any]) -> bool:
    """A message in a known shape (a role it names and its content or tool calls; a typed item or LangChain
    message), not a record that happens to have a ``role`` field."""
    role = v.get("role")
    if isinstance(role, str):
        return role.lower() in _ROLE_ALIASES and ("content" in v or "tool_calls" in v)
    t = v.get("type")
    if t in _MESSAGE_ITEM_TYPES or (t in _LC_TYPES and "content" in v):
        return True
    return v.get("lc") == 1 and t == "constructor" and isinstance(v.get("kwargs"), Mapping)


def _unminted_response(resp: Mapping[str, Any], depth: int) -> dict[str, Any]:
    """A Chat Completions response or chunk, or a Responses API response, without its per-call envelope."""
    out: dict[str, Any] = {}
    for k, v in resp.items():
        if k in _PER_CALL:
            continue
        if k == "choices" and isinstance(v, list):
            v = [
                {ck: unminted(cv, depth + 2) if ck in ("message", "delta") else cv for ck, cv in c.items()}
                if isinstance(c, Mapping)
                else c
                for c in v
            ]
        elif k == "output" and isinstance(v, list):  # output items: messages, function calls, reasoning
            v = [_unminted_message(i, depth + 1) if isinstance(i, Mapping) else i for i in v]
        out[k] = v
    return out


def _unminted_message(msg: Mapping[str, Any], depth: int) -> dict[str, Any]:
    """One message or output item without its minted ids (and an Anthropic or LangChain message's usage)."""
    if msg.get("lc") == 1 and isinstance(msg.get("kwargs"), Mapping):
        return {**msg, "kwargs": _unminted_message(msg["kwargs"], depth + 1)}  # its ``id`` is a class path
    out: dict[str, Any] = {}
    for k, v in msg.items():
        if k in _PER_CALL:
            continue
        if k == "tool_calls" and isinstance(v, list):
            v = [_without(c, _MINTED) for c in v]
        elif k == "content" and isinstance(v, list):
            # Content blocks: a tool use's id, a tool result's ``tool_use_id``; other blocks' fields are content.
            v = [_without(c, _MINTED if _tool_call_shaped(c) else _ANSWERING) for c in v]
        elif k in ("additional_kwargs", "response_metadata") and isinstance(v, Mapping):
            v = _unminted_message(v, depth + 1)  # LangChain: tool calls in the provider's shape; the envelope
        out[k] = v
    return out


_TOOL_NAMED = ("name", "tool")
"""The fields a tool call names its tool in: ``name`` (OpenAI's function and Responses API calls, Anthropic's
tool use, LangChain's ``ToolCall``), ``tool`` (LangChain's ``AgentAction``)."""
_TOOL_ARGUMENTS = ("arguments", "args", "input", "tool_input")
"""The fields a tool call holds its arguments in, in the same schemas (``tool_input``: ``AgentAction``'s)."""


def _tool_call_shaped(c: Any) -> bool:
    """A tool call in a model API's schema: a ``function`` object (Chat Completions), or the tool's name with
    its arguments (`_TOOL_NAMED`, `_TOOL_ARGUMENTS`)."""
    return isinstance(c, Mapping) and (
        isinstance(c.get("function"), Mapping)
        or (any(k in c for k in _TOOL_NAMED) and any(k in c for k in _TOOL_ARGUMENTS))
    )


def _without(c: Any, keys: frozenset[str]) -> Any:
    """A tool call or content block without the given keys (its arguments, input and the rest kept whole)."""
    return {k: v for k, v in c.items() if k not in keys} if isinstance(c, Mapping) else c


# -- values -----------------------------------------------------------------------


__all__ = [
    "ENVELOPE_KEYS",
    "ROLES",
    "input_messages",
    "is_normalized",
    "messages_from_attributes",
    "normalize_llm_step",
    "normalize_message",
    "normalize_messages",
    "parse_arguments",
    "plain",
    "span_envelope",
    "tool_calls",
    "tool_names",
    "unflatten",
    "unminted",
]
