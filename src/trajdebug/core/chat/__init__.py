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

Standard library only: this package (with `_messages`, which reads single
messages) sits on the model floor.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trajdebug.core.chat._messages import (
    _MESSAGE_ITEM_TYPES,
    _as_assistant,
    _call,
    _convert,
    _int,
    _is_message,
    _json_or_none,
    _maybe_json,
    _text,
    flat_messages,
    input_messages,
    normalize_message,
    normalize_messages,
    parse_arguments,
    plain,
    tool_calls,
    tool_names,
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
    span_in, span_out = messages_from_attributes(attrs, events)
    msgs, env_in = _input(input)
    message, env_out = _output(output)
    env.update(env_in)
    env.update(span_envelope(attrs))
    env.update(env_out)
    new_input: Any = input
    if span_in is not None:
        new_input = {"messages": span_in}
    elif msgs is not None:
        new_input = {"messages": msgs}
    new_output: Any = output
    if span_out is not None:
        new_output = _as_assistant(span_out)
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


def _cost(v: Any) -> float | None:
    """A stated cost (OpenInference ``llm.cost.total``, ``gen_ai.usage.cost``): a finite, non-negative number."""
    if isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if 0 <= f < float("inf") else None


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


# -- span attributes (OpenInference, OpenTelemetry GenAI) ---------------------------


_SPAN_KEYS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "llm.model",
        ("gen_ai.response.model", "llm.model_name", "gen_ai.request.model", "llm.request.model_name"),
    ),
    ("llm.provider", ("llm.provider", "gen_ai.provider.name", "llm.system", "gen_ai.system")),
    (
        "llm.usage.prompt_tokens",
        ("llm.token_count.prompt", "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    ),
    (
        "llm.usage.completion_tokens",
        ("llm.token_count.completion", "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    ),
    (
        "llm.usage.total_tokens",
        ("llm.token_count.total", "gen_ai.usage.total_tokens", "llm.usage.total_tokens"),
    ),
    ("llm.usage.cost", ("llm.cost.total", "gen_ai.usage.cost", "llm.usage.cost")),
    ("llm.response_id", ("gen_ai.response.id",)),
    ("llm.finish_reason", ("gen_ai.response.finish_reasons", "llm.finish_reason")),
    (
        "llm.system_fingerprint",
        ("gen_ai.openai.response.system_fingerprint", "openai.response.system_fingerprint"),
    ),
)
_GENAI_PARAM = re.compile(r"^gen_ai\.request\.(?!model$)(\w+)$")


def span_envelope(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The ``llm.*`` attributes an LLM span's OpenInference or GenAI attributes state."""
    env: dict[str, Any] = {}
    for target, sources in _SPAN_KEYS:
        for k in sources:
            v = attrs.get(k)
            if v is None or v == "":
                continue
            if target == "llm.usage.cost":
                v = _cost(v)
                if v is None:
                    continue
            elif target.startswith("llm.usage."):
                v = _int(v)
                if v is None:
                    continue
            if target == "llm.finish_reason":
                v = plain(_json_or_none(v) if isinstance(v, str) and v.startswith("[") else v)
                v = v[0] if isinstance(v, list) and v else v
            env[target] = v
            break
    params = attrs.get("llm.invocation_parameters")
    if isinstance(params, str):
        params = _json_or_none(params)
    p: dict[str, Any] = dict(params) if isinstance(params, Mapping) else {}
    schemas: list[tuple[str, Any]] = []
    for k, v in attrs.items():
        # One pass over the names; the pattern runs only on names that can match it.
        if k.startswith("gen_ai.request."):
            m = _GENAI_PARAM.match(k)
            if m and v is not None:
                p.setdefault(m.group(1), v)
        elif k.startswith("llm.tools.") and k.endswith(".tool.json_schema"):
            schemas.append((k, v))
    p.pop("model", None)
    if p:
        env["llm.invocation_parameters"] = p
    names = tool_names([v for _, v in sorted(schemas)])
    if not names and isinstance(attrs.get("llm.tools"), list):
        names = [str(n) for n in attrs["llm.tools"]]
    defs = attrs.get("gen_ai.tool.definitions")
    if not names and defs is not None:
        names = tool_names(_json_or_none(defs) if isinstance(defs, str) else defs)
    if names:
        env["llm.tools"] = names
    return env


def messages_from_attributes(
    attrs: Mapping[str, Any], events: Sequence[tuple[str, int, Mapping[str, Any]]] = ()
) -> tuple[list[dict[str, Any]] | None, dict[str, Any] | None]:
    """(input messages, output message) a span's attributes or events carry, each None when absent.

    Read in this order: OpenInference ``llm.input_messages`` / ``llm.output_messages``,
    GenAI ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON with parts),
    the deprecated indexed ``gen_ai.prompt.{i}.*`` / ``gen_ai.completion.{i}.*``,
    then the deprecated ``gen_ai.{role}.message`` and ``gen_ai.choice`` events.
    """
    in_msgs = flat_messages(attrs, "llm.input_messages", "user")  # the common form, read directly
    if in_msgs is None:
        in_msgs = _input_messages(attrs, events)
    system = attrs.get("gen_ai.system_instructions")
    if system is not None and in_msgs is not None and not any(m["role"] == "system" for m in in_msgs):
        parsed = _json_or_none(system) if isinstance(system, str) and system.startswith("[") else system
        text = _text(parsed)
        if text:
            in_msgs.insert(0, {"role": "system", "content": text})
    msgs = flat_messages(attrs, "llm.output_messages", "assistant")
    if msgs is None:
        outputs = _first_list(
            lambda: unflatten(attrs, "llm.output_messages"),
            lambda: _json_list(attrs.get("gen_ai.output.messages")),
            lambda: unflatten(attrs, "gen_ai.completion"),
            lambda: _event_messages(events, inputs=False),
        )
        if isinstance(outputs, str):
            return in_msgs, {"role": "assistant", "content": outputs}
        if outputs is not None:
            msgs = normalize_messages([_default_role(o, "assistant") for o in outputs])
    out_msg: dict[str, Any] | None = None
    if msgs:
        out_msg = _as_assistant(next((m for m in msgs if m["role"] == "assistant"), msgs[0]))
    return in_msgs, out_msg


def _input_messages(
    attrs: Mapping[str, Any], events: Sequence[tuple[str, int, Mapping[str, Any]]]
) -> list[dict[str, Any]] | None:
    """The input messages of `messages_from_attributes`, in any of the shapes it reads."""
    inputs = _first_list(
        lambda: unflatten(attrs, "llm.input_messages"),
        lambda: _json_list(attrs.get("gen_ai.input.messages")),
        lambda: unflatten(attrs, "gen_ai.prompt"),
        lambda: _event_messages(events, inputs=True),
    )
    if isinstance(inputs, str):
        return [{"role": "user", "content": inputs}]
    return normalize_messages([_default_role(i, "user") for i in inputs]) if isinstance(inputs, list) else None


def _default_role(v: Any, role: str) -> Any:
    if not isinstance(v, Mapping) or "role" in v:
        return v
    inner = v.get("message")
    if isinstance(inner, Mapping):  # OpenInference ``message.*``
        return v if "role" in inner else {**v, "message": {**inner, "role": role}}
    return {**v, "role": role}


def _first_list(*candidates: Callable[[], Any]) -> Any:
    """The first candidate that is a non-empty string or list (each read only if those before are not)."""
    for read in candidates:
        c = read()
        if isinstance(c, str) and c:
            return c
        if isinstance(c, list) and c:
            return c
    return None


def _json_list(value: Any) -> list[Any] | None:
    v = _json_or_none(value) if isinstance(value, str) else plain(value)
    return v if isinstance(v, list) else None


_EVENT_ROLE = re.compile(r"^gen_ai\.(system|user|assistant|tool)\.message$")


def _event_messages(
    events: Sequence[tuple[str, int, Mapping[str, Any]]], *, inputs: bool
) -> list[Any] | None:
    """Messages the deprecated GenAI events carry (``gen_ai.user.message``, ``gen_ai.choice``)."""
    out: list[Any] = []
    for name, _t, a in events:
        m = _EVENT_ROLE.match(name)
        if inputs and m:
            msg = {k: _maybe_json(v) for k, v in a.items()}
            msg.setdefault("role", m.group(1))
            out.append(msg)
        elif not inputs and name == "gen_ai.choice":
            inner = _maybe_json(a.get("message"))
            msg = dict(inner) if isinstance(inner, Mapping) else {"content": a.get("content")}
            msg.setdefault("role", "assistant")
            if "tool_calls" in a:
                msg.setdefault("tool_calls", _maybe_json(a["tool_calls"]))
            out.append(msg)
    return out or None


def unflatten(attrs: Mapping[str, Any], prefix: str) -> Any:
    """Rebuild the value flattened under ``prefix`` (``a.0.b`` -> ``{"a": [{"b": ...}]}``).

    OpenInference flattens lists as ``<prefix>.<index>.<suffix>`` with
    zero-based indexes; some producers send the nested JSON under ``prefix``
    itself, which is returned decoded.  None when nothing is under the prefix.
    """
    if prefix in attrs:
        return _maybe_json(attrs[prefix])
    root: dict[str, Any] = {}
    dotted = prefix + "."
    plen = len(dotted)
    found = False
    for key, value in attrs.items():
        if not key.startswith(dotted):
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
]
