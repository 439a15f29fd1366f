"""LLM spans' attributes read as messages and an envelope: OpenInference, OpenTelemetry GenAI.

`span_envelope` turns the attributes that state an LLM call's model, usage, ids and parameters into
``llm.*`` attributes; `messages_from_attributes` reads the messages in and out, flattened
(``llm.input_messages.{i}.message.*``), as GenAI messages with parts, as the deprecated indexed names, or
as events; `unflatten` rebuilds a flattened value.  `normalize_llm_step` (the package) calls both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trajdebug.core.chat._messages import (
    _as_assistant,
    _int,
    _json_or_none,
    _maybe_json,
    _text,
    flat_messages,
    normalize_messages,
    plain,
    tool_names,
)


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


def _cost(v: Any) -> float | None:
    """A stated cost (OpenInference ``llm.cost.total``, ``gen_ai.usage.cost``): a finite, non-negative number."""
    if isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if 0 <= f < float("inf") else None


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


__all__ = ["messages_from_attributes", "span_envelope", "unflatten"]
