"""Messages in any known shape as the messages of `trajdebug.core.chat` (the private half of that module).

Each source message (an OpenAI chat message, a Responses API item, an
Anthropic message with content blocks, a LangChain message or its dump, an
OpenInference or GenAI message) becomes zero or more normalized messages;
`trajdebug.core.chat` uses these to read requests, responses and span attributes.
Standard library only (orjson, when installed, decodes the JSON held in strings).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeGuard


_orjson: Any
try:  # optional: decodes what the standard library does, several times faster; the library decides the rest
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None


_MAPPING_TYPES: dict[type, bool] = {dict: True, str: False, list: False, int: False, float: False, bool: False}
_MAPPING_TYPES[type(None)] = False


def _mapping(v: Any) -> TypeGuard[Mapping[Any, Any]]:
    """``isinstance(v, Mapping)``, told at once for the built-in types decoded JSON is made of (the ABC's
    check is a call into Python per value)."""
    known = _MAPPING_TYPES.get(v.__class__)
    return isinstance(v, Mapping) if known is None else known


_ROLE_ALIASES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "humanmessagechunk": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "aimessagechunk": "assistant",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
    "toolmessagechunk": "tool",
    "systemmessagechunk": "system",
}
_LC_CLASS_ROLE = {
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "tool",
    "ChatMessage": None,
}
_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text", "refusal", "summary_text"})
_MESSAGE_ITEM_TYPES = frozenset({"message", "function_call", "function_call_output"})
_LC_TYPES = frozenset(
    {"human", "ai", "system", "tool", "function", "AIMessageChunk", "HumanMessageChunk", "ToolMessageChunk"}
)


def normalize_messages(value: Any) -> list[dict[str, Any]] | None:
    """A list of messages in any known shape as normalized messages, or None when it is not one."""
    return normalize_plain_messages(plain(value))


def normalize_plain_messages(value: Any) -> list[dict[str, Any]] | None:
    """`normalize_messages` of a value that is plain data already (`plain`: decoded JSON), not copied."""
    # The first element decides the common cases (a message: no batch, a message found) without a generator.
    if isinstance(value, list) and value and isinstance(value[0], list) and all(isinstance(b, list) for b in value):
        value = value[0]  # LangChain batches: one message list per prompt; the first is the call
    if not isinstance(value, list) or not value:
        return None
    if not _is_message(value[0]) and not any(_is_message(v) for v in value):
        return None
    out: list[dict[str, Any]] = []
    for v in value:
        for m in _convert_plain(v):  # ``value`` is plain data already: not copied again
            _add(out, m)
    return out


def _add(out: list[dict[str, Any]], m: dict[str, Any]) -> None:
    """Append a converted message, consecutive Responses ``function_call`` items being one assistant turn."""
    if (
        out
        and m.get("role") == "assistant"
        and m.get("content") is None
        and m.get("tool_calls")
        and out[-1].get("role") == "assistant"
        and out[-1].get("tool_calls")
    ):
        out[-1]["tool_calls"] = [*out[-1]["tool_calls"], *m["tool_calls"]]
    else:
        out.append(m)


_CALL_FIELDS = {"id": "id", "function.name": "name", "function.arguments": "arguments"}


def _index(part: str) -> int | None:
    """A list index as OpenInference writes it (``0``, ``12``), else None (``01``, ``x``: not read here)."""
    if part.isdecimal() and part.isascii() and (part == "0" or part[0] != "0"):
        return int(part)
    return None


def flat_messages(attrs: Mapping[str, Any], prefix: str, role: str) -> list[dict[str, Any]] | None:
    """The messages OpenInference flattened under ``prefix`` when they are in its common form, exactly as
    `normalize_messages` makes them of the unflattened value (``role`` when a message has none); None when
    something else is there (the caller takes the general way), or nothing.

    The common form is ``<i>.message.role`` and ``.content`` (strings), and ``<i>.message.tool_calls.<j>.
    tool_call.id``, ``.function.name`` and ``.function.arguments`` (strings).  Read straight from the names,
    without building the nested value, listing it and converting it as a message of any shape.
    """
    if prefix in attrs:
        return None
    dotted = prefix + "."
    plen = len(dotted)
    msgs: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(dotted):
            continue
        pos = flat_key(key[plen:])
        if pos is None or value.__class__ is not str:
            return None
        flat_put(msgs, pos, value)
    return flat_build(msgs, role)


FlatKey = tuple[int, int, str]
"""Where a flattened name puts its value: (message index, tool-call index or -1, field)."""


def flat_key(rest: str) -> FlatKey | None:
    """Where the name of a flattened message attribute (``rest``: the name after ``<prefix>.``) puts its
    value in the common form (`flat_messages`), or None when it is not the common form."""
    parts = rest.split(".", 3)
    i = _index(parts[0])
    if i is None or len(parts) < 3 or parts[1] != "message":
        return None
    if len(parts) == 3 and parts[2] in ("role", "content"):
        return (i, -1, parts[2])
    if parts[2] != "tool_calls" or len(parts) < 4:
        return None
    call = parts[3].split(".", 2)
    j = _index(call[0])
    field = _CALL_FIELDS.get(".".join(call[2:])) if len(call) == 3 and call[1] == "tool_call" else None
    if j is None or field is None:
        return None
    return (i, j, field)


def flat_put(msgs: dict[int, dict[str, Any]], pos: FlatKey, value: str) -> None:
    """Put one flattened value where `flat_key` says (the messages being collected by index)."""
    i, j, field = pos
    m = msgs.get(i)
    if m is None:
        m = msgs[i] = {}
    if j < 0:
        m[field] = value
    else:
        m.setdefault("calls", {}).setdefault(j, {})[field] = value


def flat_build(msgs: dict[int, dict[str, Any]], role: str) -> list[dict[str, Any]] | None:
    """The normalized messages of those collected by `flat_put` (None: none)."""
    if not msgs:
        return None
    out: list[dict[str, Any]] = []
    for i in sorted(msgs):
        m = msgs[i]
        r = m.get("role", role)
        msg: dict[str, Any] = {"role": _ROLE_ALIASES.get(r.lower(), r), "content": m.get("content") or None}
        calls = m.get("calls")
        if calls:
            msg["tool_calls"] = [
                _call(c.get("id"), c.get("name"), c.get("arguments")) for c in (calls[j] for j in sorted(calls))
            ]
        _add(out, msg)
    return out


FlatTemplate = tuple[tuple[str | None, str | None, tuple[tuple[str | None, str | None, str | None], ...]], ...]
"""Where each flattened message's fields are, by attribute name: per message in index order (its role's name,
its content's, and per tool call in index order the names of its id, function name and arguments; None:
absent).  Spans of one instrumentation repeat the same names, so this is made once per set of names."""


def flat_template(names: list[tuple[str, FlatKey]]) -> FlatTemplate:
    """The template of the flattened names (each with its `flat_key`): what `flat_put` of their values
    would collect, by name instead of value."""
    by_index: dict[int, dict[str, Any]] = {}
    for name, pos in names:
        flat_put(by_index, pos, name)
    out = []
    for i in sorted(by_index):
        m = by_index[i]
        calls = m.get("calls") or {}
        out.append(
            (
                m.get("role"),
                m.get("content"),
                tuple((c.get("id"), c.get("name"), c.get("arguments")) for c in (calls[j] for j in sorted(calls))),
            )
        )
    return tuple(out)


def flat_fill(attrs: Mapping[str, Any], template: FlatTemplate, role: str) -> list[dict[str, Any]] | None:
    """`flat_build` of the attributes a `flat_template` names (their values all strings): the same messages."""
    if not template:
        return None
    out: list[dict[str, Any]] = []
    aliases = _ROLE_ALIASES
    for role_name, content_name, calls in template:
        r = role if role_name is None else attrs[role_name]
        msg: dict[str, Any] = {
            "role": aliases.get(r.lower(), r),
            "content": None if content_name is None else attrs[content_name] or None,
        }
        if not calls:
            out.append(msg)  # `_add` appends a message without tool calls
            continue
        msg["tool_calls"] = [
            _call(
                None if i is None else attrs[i],
                None if n is None else attrs[n],
                None if a is None else attrs[a],
            )
            for i, n, a in calls
        ]
        _add(out, msg)
    return out


def normalize_message(value: Any) -> dict[str, Any] | None:
    """One message in any known shape as a normalized message, or None when it is not one.

    A source message that carries several (an Anthropic user turn holding tool
    results) gives its first; use `normalize_messages` for lists.
    """
    value = plain(value)
    if not _is_message(value):
        return None
    found = _convert(value)
    return found[0] if found else None


def _is_message(v: Any) -> bool:
    if not _mapping(v):
        return False
    if isinstance(v.get("role"), str):
        return True
    if _mapping(v.get("message")) and isinstance(v["message"].get("role"), str):
        return True  # OpenInference unflattened
    t = v.get("type")
    if t in _MESSAGE_ITEM_TYPES:
        return True
    if t in _LC_TYPES and "content" in v:
        return True
    return v.get("lc") == 1 and v.get("type") == "constructor" and _mapping(v.get("kwargs"))


def _convert(item: Any) -> list[dict[str, Any]]:
    """One source message or item as zero or more normalized messages."""
    return _convert_plain(plain(item))


def _convert_plain(item: Any) -> list[dict[str, Any]]:
    """`_convert` of a value that is plain data (`plain`)."""
    if item.__class__ is dict and len(item) == 2:
        text = _text_parts(item)
        if text is not None:
            # A GenAI message of text parts only (the common form), read as below but at once.
            r = item["role"]
            return [{"role": _ROLE_ALIASES.get(r.lower(), r), "content": "\n".join(text) or None}]
    if isinstance(item, str):
        return [{"role": "user", "content": item}]
    if not _mapping(item):
        return []
    if _mapping(item.get("message")) and "role" not in item:
        item = item["message"]
    role: Any = item.get("role")
    if item.get("lc") == 1 and _mapping(item.get("kwargs")):
        ids = item.get("id") or []
        role = _LC_CLASS_ROLE.get(str(ids[-1]) if ids else "") or item["kwargs"].get("role")
        item = item["kwargs"]
    t = item.get("type")
    if t == "function_call":
        return [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [_call(item.get("call_id"), item.get("name"), item.get("arguments"))],
            }
        ]
    if t == "function_call_output":
        out = {"role": "tool", "content": _text(item.get("output"))}
        if item.get("call_id") is not None:
            out["tool_call_id"] = str(item["call_id"])
        return [out]
    if role is None and isinstance(t, str):
        role = "assistant" if t == "message" else t
    role = _ROLE_ALIASES.get(str(role).lower(), str(role)) if role is not None else "user"
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    content = item.get("content")
    parts = content if isinstance(content, list) else item.get("parts", item.get("contents"))
    if isinstance(content, str):
        texts.append(content)
    elif content is not None and not isinstance(content, list):
        texts.append(_text(content) or "")
    if isinstance(parts, list):
        _read_parts(parts, texts, calls, results)
    _read_calls(item, calls)
    msg: dict[str, Any] = {"role": role, "content": "\n".join(texts) or None}
    if calls:
        msg["tool_calls"] = calls
    tcid = item.get("tool_call_id", item.get("tool_use_id"))
    if tcid is None and role == "tool" and item.get("id") is not None and not calls:
        tcid = item.get("id")  # OpenLLMetry tool results carry the call id as ``id``
    if tcid is not None:
        msg["tool_call_id"] = str(tcid)
    if isinstance(item.get("name"), str) and item["name"]:
        msg["name"] = item["name"]
    if results:
        # Tool results a user turn carried (Anthropic) or a message of parts (GenAI): each its own message.
        return [*results, msg] if msg["content"] is not None or calls else results
    return [msg]


def _text_parts(item: dict[str, Any]) -> list[str] | None:
    """The texts of a message that is exactly ``{"role": <text>, "parts": [{"type": "text", "content":
    <text>}, ...]}`` (the GenAI form of a text message), else None: `_convert_plain` reads nothing else of it."""
    parts = item.get("parts")
    if parts.__class__ is not list or item.get("role").__class__ is not str:
        return None
    texts = []
    for p in parts:
        if p.__class__ is not dict or len(p) != 2 or p.get("type") != "text":
            return None
        text = p.get("content")
        if text.__class__ is not str:
            return None
        texts.append(text)
    return texts


def _read_parts(
    parts: list[Any], texts: list[str], calls: list[dict[str, Any]], results: list[dict[str, Any]]
) -> None:
    for p in parts:
        p = plain(p)
        if isinstance(p, str):
            texts.append(p)
            continue
        if not _mapping(p):
            continue
        if _mapping(p.get("message_content")):  # OpenInference ``contents``
            p = p["message_content"]
        t = p.get("type")
        if t in _TEXT_PART_TYPES or (t is None and isinstance(p.get("text"), str)):
            text = p.get("text", p.get("refusal", p.get("content")))
            if isinstance(text, str):
                texts.append(text)
        elif t == "tool_use":  # Anthropic
            calls.append(_call(p.get("id"), p.get("name"), p.get("input")))
        elif t == "tool_call":  # GenAI parts
            calls.append(_call(p.get("id"), p.get("name"), p.get("arguments")))
        elif t == "function_call":
            calls.append(_call(p.get("call_id", p.get("id")), p.get("name"), p.get("arguments")))
        elif t == "tool_result":  # Anthropic
            r: dict[str, Any] = {"role": "tool", "content": _text(p.get("content"))}
            if p.get("tool_use_id") is not None:
                r["tool_call_id"] = str(p["tool_use_id"])
            results.append(r)
        elif t in ("tool_call_response", "function_call_output"):  # GenAI parts, Responses
            r = {"role": "tool", "content": _text(p.get("response", p.get("output", p.get("result"))))}
            cid = p.get("id", p.get("call_id"))
            if cid is not None:
                r["tool_call_id"] = str(cid)
            results.append(r)


def _read_calls(item: Mapping[str, Any], calls: list[dict[str, Any]]) -> None:
    raw = item.get("tool_calls")
    if isinstance(raw, str):
        raw = _json_or_none(raw)
    for c in raw if isinstance(raw, list) else ():
        c = plain(c)
        if not _mapping(c):
            continue
        if _mapping(c.get("tool_call")):  # OpenInference
            c = c["tool_call"]
        fn = c.get("function") if _mapping(c.get("function")) else c
        args = fn.get("arguments", fn.get("args", c.get("args")))
        calls.append(_call(c.get("id"), fn.get("name"), args))
    fc = item.get("function_call")
    if _mapping(fc):  # OpenAI legacy function calling
        calls.append(_call(None, fc.get("name"), fc.get("arguments")))
    if item.get("function_call_name") is not None:  # OpenInference legacy function call
        calls.append(_call(None, item["function_call_name"], item.get("function_call_arguments_json")))


def _call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {
        "id": None if call_id is None else str(call_id),
        "name": "" if name is None else str(name),
        "arguments": parse_arguments(arguments),
    }


def parse_arguments(value: Any) -> Any:
    """Tool-call arguments as data: a JSON object or array held in a string is decoded, anything else kept.

    Only objects and arrays are decoded, so a decoded value is never decoded
    again (``"5"`` stays the string it was).
    """
    value = plain(value)
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("{", "[") and s[-1:] in ("}", "]"):
            parsed = _json_or_none(s)
            if parsed is not None:
                return parsed
    return value


def _json_or_none(s: str) -> Any:
    if _orjson is not None:
        try:
            return _orjson.loads(s)
        except ValueError:
            pass  # not JSON, or JSON orjson declines (NaN, huge integers, lone surrogates): as the library says
    try:
        return json.loads(s)
    except (ValueError, RecursionError):
        return None


def _text(value: Any) -> str | None:
    """Message content as one string: text parts joined; other values as JSON."""
    value = plain(value)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        texts: list[str] = []
        _read_parts(value, texts, [], [])
        if texts:
            return "\n".join(texts)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def tool_calls(message: Any) -> list[dict[str, Any]]:
    """The tool calls of a normalized message (empty when it has none or is not one)."""
    calls = message.get("tool_calls") if _mapping(message) else None
    return [dict(c) for c in calls if _mapping(c)] if isinstance(calls, list) else []


def input_messages(input: Any) -> list[dict[str, Any]]:
    """The messages of a normalized LLM input (empty when it is not one)."""
    msgs = input.get("messages") if _mapping(input) else None
    return [dict(m) for m in msgs if _mapping(m)] if isinstance(msgs, list) else []


def tool_names(tools: Any) -> list[str]:
    """The names of the tools offered to a model (Chat Completions, Responses, Anthropic, LangChain shapes)."""
    out: list[str] = []
    tools = plain(tools)
    for raw in tools if isinstance(tools, list) else ():
        t: Any = raw
        if isinstance(raw, str):
            t = _json_or_none(raw) if raw.strip().startswith("{") else {"name": raw}
        if not _mapping(t):
            continue
        fn: Mapping[str, Any] = t["function"] if _mapping(t.get("function")) else t
        name = fn.get("name", t.get("name"))
        if isinstance(name, str) and name:
            out.append(name)
    return out


def _as_assistant(msg: Mapping[str, Any]) -> dict[str, Any]:
    """An output message: always ``role``, ``content`` and ``tool_calls`` (empty when none), then ``name``."""
    out = {
        "role": "assistant",
        "content": msg.get("content"),
        "tool_calls": list(msg.get("tool_calls") or []),
    }
    if msg.get("name"):
        out["name"] = msg["name"]
    return out


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.isdigit():
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def _maybe_json(v: Any) -> Any:
    if isinstance(v, str) and v.strip()[:1] in ("{", "["):
        parsed = _json_or_none(v)
        return v if parsed is None else parsed
    return v


def plain(value: Any, depth: int = 0) -> Any:
    """A value as plain data: pydantic objects through ``model_dump``, tuples as lists; never raises."""
    t = type(value)
    if t is str or value is None or t is int or t is float or t is bool or depth > 30:
        return value
    # Decoded JSON (the common case) is exact dicts and lists, which have no ``model_dump``.
    if t is dict:
        return {k if type(k) is str else str(k): plain(v, depth + 1) for k, v in value.items()}
    if t is list:
        return [plain(v, depth + 1) for v in value]
    if isinstance(value, (str, int, float, bool)):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        try:
            # serialize_as_any: a field declared as a base class (LangChain's ``Generation``)
            # still dumps the subclass's fields (``ChatGeneration.message``).
            return plain(dump(mode="json", exclude_none=True, serialize_as_any=True), depth + 1)
        except TypeError:  # pydantic before 2.7, or a model_dump that takes no such options
            try:
                return plain(dump(), depth + 1)
            except Exception:  # noqa: BLE001 - a third-party object failing to dump stays as it is
                return value
        except Exception:  # noqa: BLE001 - a third-party object failing to dump stays as it is
            return value
    if _mapping(value):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    return value


__all__ = [
    "flat_messages",
    "input_messages",
    "normalize_message",
    "normalize_messages",
    "normalize_plain_messages",
    "parse_arguments",
    "plain",
    "tool_calls",
    "tool_names",
]
