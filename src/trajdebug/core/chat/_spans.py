"""LLM spans' attributes read as messages and an envelope: OpenInference, OpenTelemetry GenAI.

`span_envelope` turns the attributes that state an LLM call's model, usage, ids and parameters into
``llm.*`` attributes; `messages_from_attributes` reads the messages in and out, flattened
(``llm.input_messages.{i}.message.*``), as GenAI messages with parts, as the deprecated indexed names, or
as events; `unflatten` rebuilds a flattened value.  `normalize_llm_step` (the package) calls both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from trajdebug.core.chat._messages import (
    FlatKey,
    FlatTemplate,
    _as_assistant,
    _int,
    _json_or_none,
    _mapping,
    _maybe_json,
    _text,
    flat_fill,
    flat_key,
    flat_template,
    normalize_messages,
    normalize_plain_messages,
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


# -- one pass over a span's attribute names ------------------------------------------

_IN, _OUT, _PROMPT, _COMPLETION, _PARAM, _SCHEMA, _ENV = range(1, 8)
_ENV_SOURCES = {k: (t, p) for t, (_, sources) in enumerate(_SPAN_KEYS) for p, k in enumerate(sources)}
"""The names `envelope_of` reads -> (its target's place in `_SPAN_KEYS`, the name's place among the target's)."""
assert len(_ENV_SOURCES) == sum(len(sources) for _, sources in _SPAN_KEYS), "a name read for two targets"
_KEY_INFO: dict[str, tuple[int, Any]] = {}
"""Attribute names seen -> (what the name is to `scan`, its parsed part): spans of a file repeat the same
few names, so each is classified and parsed once instead of by several tests per span."""


def _key_info(k: str) -> tuple[int, Any]:
    info: tuple[int, Any] = (0, None)
    if k in _ENV_SOURCES:
        info = (_ENV, _ENV_SOURCES[k])
    elif k.startswith("llm.input_messages."):
        info = (_IN, flat_key(k[19:]))
    elif k.startswith("llm.output_messages."):
        info = (_OUT, flat_key(k[20:]))
    elif k.startswith("gen_ai.prompt."):
        info = (_PROMPT, None)
    elif k.startswith("gen_ai.completion."):
        info = (_COMPLETION, None)
    elif k.startswith("gen_ai.request."):
        m = _GENAI_PARAM.match(k)
        if m:
            info = (_PARAM, m.group(1))
    elif k.startswith("llm.tools.") and k.endswith(".tool.json_schema"):
        info = (_SCHEMA, None)
    if len(_KEY_INFO) >= 1 << 16:  # names are the producer's: a file may coin a new one per span
        _KEY_INFO.clear()
    _KEY_INFO[k] = info
    return info


class Scan:
    """What one pass over an LLM span's attributes found (`scan`)."""

    __slots__ = ("envelope", "flat_in", "flat_out", "params", "schemas", "under")

    def __init__(
        self,
        flat_in: FlatTemplate | None,
        flat_out: FlatTemplate | None,
        under: tuple[bool, ...],
        params: list[tuple[str, Any]],
        schemas: list[tuple[str, Any]],
        envelope: tuple[tuple[str, str, int], ...],
    ) -> None:
        self.flat_in = flat_in
        """Where ``llm.input_messages.*`` are in the common form, for `flat_fill` (None: not the common form)."""
        self.flat_out = flat_out
        """The same of ``llm.output_messages.*``."""
        self.under = under
        """Whether any name is under each flattened prefix (indexed by ``_IN`` ... ``_COMPLETION``)."""
        self.params = params
        """``gen_ai.request.<param>`` values (not None), in order."""
        self.schemas = schemas
        """``llm.tools.<i>.tool.json_schema`` names and values, in order."""
        self.envelope = envelope
        """The names `envelope_of` reads (`_ENV_SOURCES`) that the attributes hold, in the order of `_SPAN_KEYS`
        (each target's names in its order), each with its target and how it is read (`_HOW`)."""


_Plan = tuple[
    "tuple[tuple[str, ...], FlatTemplate] | None",
    "tuple[tuple[str, ...], FlatTemplate] | None",
    tuple[bool, ...],
    tuple[tuple[str, Any], ...],
    tuple[str, ...],
    tuple[tuple[str, str, int], ...],
]
_PLANS: dict[tuple[str, ...], _Plan] = {}
"""A span's attribute names, in order -> what `scan` reads of them (`_plan`)."""


def _plan(names: tuple[str, ...]) -> _Plan:
    """What `scan` reads of attributes with these names, told by the names alone: the flattened messages'
    names and template (None: a name under the prefix not in the common form), whether any name is under
    each prefix, and the names of the parameters, tool schemas and envelope, in order."""
    flat: list[list[tuple[str, FlatKey]] | None] = [[], []]
    under = [False] * 5
    params: list[tuple[str, Any]] = []
    schemas: list[str] = []
    envelope: list[tuple[str, tuple[int, int]]] = []
    for k in names:
        info = _KEY_INFO.get(k)
        if info is None:
            info = _key_info(k)
        code = info[0]
        if not code:
            continue
        if code <= _OUT:
            under[code] = True
            side = flat[code - _IN]
            if side is not None:
                if info[1] is None:
                    flat[code - _IN] = None
                else:
                    side.append((k, info[1]))
        elif code <= _COMPLETION:
            under[code] = True
        elif code == _ENV:
            envelope.append((k, info[1]))
        elif code == _PARAM:
            params.append((k, info[1]))
        else:
            schemas.append(k)
    # The envelope's names in the order `envelope_of` reads them (each target's first usable value wins).
    envelope.sort(key=_place)
    plan: _Plan = (
        *(None if side is None else (tuple(k for k, _ in side), flat_template(side)) for side in flat),
        tuple(under),
        tuple(params),
        tuple(schemas),
        tuple((k, _SPAN_KEYS[t][0], _HOW.get(_SPAN_KEYS[t][0], 0)) for k, (t, _) in envelope),
    )  # type: ignore[assignment]
    if len(_PLANS) >= 1 << 12:  # names are the producer's: a file may coin new sets without end
        _PLANS.clear()
    _PLANS[names] = plan
    return plan


_STR_ONLY = {str}


def scan(attrs: Mapping[str, Any]) -> Scan:
    """What `messages_of` and `envelope_of` read by name pattern, planned once per set of names (`_plan`):
    the flattened messages are in the common form when the names are and every value is a string."""
    names = tuple(attrs)
    plan = _PLANS.get(names)
    if plan is None:
        plan = _plan(names)
    flat_in, flat_out, under, params, schemas, envelope = plan
    get = attrs.__getitem__
    return Scan(
        None if flat_in is None or (flat_in[0] and set(map(type, map(get, flat_in[0]))) != _STR_ONLY) else flat_in[1],
        None if flat_out is None or (flat_out[0] and set(map(type, map(get, flat_out[0]))) != _STR_ONLY) else flat_out[1],
        under,
        [(name, v) for k, name in params if (v := get(k)) is not None] if params else [],
        [(k, get(k)) for k in schemas] if schemas else [],
        envelope,
    )


def span_envelope(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The ``llm.*`` attributes an LLM span's OpenInference or GenAI attributes state."""
    return envelope_of(attrs, scan(attrs))


def _place(hit: tuple[str, tuple[int, int]]) -> tuple[int, int]:
    return hit[1]


_HOW = {"llm.usage.cost": 1, "llm.finish_reason": 3} | {
    target: 2 for target, _ in _SPAN_KEYS if target.startswith("llm.usage.") and target != "llm.usage.cost"
}
"""How `envelope_of` reads a target's value: 1 a cost, 2 a count of tokens, 3 finish reasons; 0 as it is."""


def envelope_of(attrs: Mapping[str, Any], found: Scan) -> dict[str, Any]:
    """`span_envelope` of attributes already scanned (`scan`)."""
    env: dict[str, Any] = {}
    # The names present, in the order of `_SPAN_KEYS` (each target's first usable value wins).
    for k, target, how in found.envelope:
        v = attrs[k]
        if v is None or v == "" or target in env:
            continue
        if how == 1:
            v = _cost(v)
            if v is None:
                continue
        elif how == 2 and v.__class__ is not int:  # a count written as a number is taken as it is
            v = _int(v)
            if v is None:
                continue
        elif how == 3:
            v = plain(_json_or_none(v) if isinstance(v, str) and v.startswith("[") else v)
            v = v[0] if isinstance(v, list) and v else v
        env[target] = v
    params = attrs.get("llm.invocation_parameters")
    if isinstance(params, str):
        params = _json_or_none(params)
    p: dict[str, Any] = dict(params) if _mapping(params) else {}
    for name, v in found.params:
        p.setdefault(name, v)
    schemas = found.schemas
    p.pop("model", None)
    if p:
        env["llm.invocation_parameters"] = p
    names = tool_names([v for _, v in sorted(schemas)]) if schemas else []
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
    return messages_of(attrs, events, scan(attrs))


def messages_of(
    attrs: Mapping[str, Any], events: Sequence[tuple[str, int, Mapping[str, Any]]], found: Scan
) -> tuple[list[dict[str, Any]] | None, dict[str, Any] | None]:
    """`messages_from_attributes` of attributes already scanned (`scan`)."""
    in_msgs = None
    if found.flat_in is not None and "llm.input_messages" not in attrs:
        in_msgs = flat_fill(attrs, found.flat_in, "user")  # the common form, read directly
    if in_msgs is None:
        in_msgs = _input_messages(attrs, events, found)
    system = attrs.get("gen_ai.system_instructions")
    if system is not None and in_msgs is not None and not any(m["role"] == "system" for m in in_msgs):
        parsed = _json_or_none(system) if isinstance(system, str) and system.startswith("[") else system
        text = _text(parsed)
        if text:
            in_msgs.insert(0, {"role": "system", "content": text})
    msgs = None
    if found.flat_out is not None and "llm.output_messages" not in attrs:
        msgs = flat_fill(attrs, found.flat_out, "assistant")
    if msgs is None:
        decoded, outputs = _first_of(attrs, events, found, inputs=False)
        if isinstance(outputs, str):
            return in_msgs, {"role": "assistant", "content": outputs}
        if outputs is not None:
            msgs = _normalize([_default_role(o, "assistant") for o in outputs], decoded)
    out_msg: dict[str, Any] | None = None
    if msgs:
        out_msg = _as_assistant(_first_assistant(msgs))
    return in_msgs, out_msg


def _first_assistant(msgs: list[dict[str, Any]]) -> dict[str, Any]:
    """The first assistant message, else the first."""
    for m in msgs:
        if m["role"] == "assistant":
            return m
    return msgs[0]


def _input_messages(
    attrs: Mapping[str, Any], events: Sequence[tuple[str, int, Mapping[str, Any]]], found: Scan
) -> list[dict[str, Any]] | None:
    """The input messages of `messages_from_attributes`, in any of the shapes it reads."""
    decoded, inputs = _first_of(attrs, events, found, inputs=True)
    if isinstance(inputs, str):
        return [{"role": "user", "content": inputs}]
    return _normalize([_default_role(i, "user") for i in inputs], decoded) if isinstance(inputs, list) else None


def _normalize(messages: list[Any], decoded: bool) -> list[dict[str, Any]] | None:
    """`normalize_messages`; not copied first when ``decoded`` (JSON just decoded is plain data)."""
    return normalize_plain_messages(messages) if decoded else normalize_messages(messages)


def _default_role(v: Any, role: str) -> Any:
    if not _mapping(v) or "role" in v:
        return v
    inner = v.get("message")
    if _mapping(inner):  # OpenInference ``message.*``
        return v if "role" in inner else {**v, "message": {**inner, "role": role}}
    return {**v, "role": role}


def _first_of(
    attrs: Mapping[str, Any], events: Sequence[tuple[str, int, Mapping[str, Any]]], found: Scan, *, inputs: bool
) -> tuple[bool, Any]:
    """The first of the messages in (``inputs``) or out that is a non-empty string or list, in the order
    `messages_from_attributes` reads them (each read only if those before are not), and whether it is the
    GenAI JSON (`_json_list`: JSON just decoded, plain data)."""
    flat, genai, indexed = _SOURCES[inputs]
    c = _unflatten_if(attrs, flat, found.under[_IN if inputs else _OUT])
    if _usable(c):
        return False, c
    c = _json_list(attrs.get(genai))
    if _usable(c):
        return True, c
    c = _unflatten_if(attrs, indexed, found.under[_PROMPT if inputs else _COMPLETION])
    if _usable(c):
        return False, c
    c = _event_messages(events, inputs=inputs)
    return (False, c) if _usable(c) else (False, None)


_SOURCES = {
    True: ("llm.input_messages", "gen_ai.input.messages", "gen_ai.prompt"),
    False: ("llm.output_messages", "gen_ai.output.messages", "gen_ai.completion"),
}
"""The attribute names `_first_of` reads the messages in (True) or out under: flattened, GenAI JSON, indexed."""


def _usable(c: Any) -> bool:
    """A non-empty string or list."""
    return isinstance(c, (str, list)) and bool(c)


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
            msg = dict(inner) if _mapping(inner) else {"content": a.get("content")}
            msg.setdefault("role", "assistant")
            if "tool_calls" in a:
                msg.setdefault("tool_calls", _maybe_json(a["tool_calls"]))
            out.append(msg)
    return out or None


def _unflatten_if(attrs: Mapping[str, Any], prefix: str, under: bool) -> Any:
    """`unflatten`, known to find nothing when no name is ``under`` the prefix and the prefix is absent."""
    return unflatten(attrs, prefix) if under or prefix in attrs else None


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


__all__ = ["Scan", "envelope_of", "messages_from_attributes", "messages_of", "scan", "span_envelope", "unflatten"]
