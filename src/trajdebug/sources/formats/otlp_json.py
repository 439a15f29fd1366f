"""OTLP/JSON decoding: envelopes to flat spans, ids, ``AnyValue`` attributes, enums.

The OTLP/JSON layout as exporters and the collector's file exporter write it:
``resourceSpans[].scopeSpans[].spans[]``, ids in hex (the OTLP/JSON spec) or
base64 (protobuf JSON), attribute values in any ``AnyValue`` form, enums as
integers or names, camelCase or snake_case keys.  Also the names of the
``trajdebug.*`` attributes and events that `trajdebug.sources.formats.export` writes
and `trajdebug.sources.formats.otlp` restores.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajdebug.core.jsonl import FormatError


# Attribute and event names trajdebug's own export writes (and this importer restores).
RUN_ID = "trajdebug.run.id"
RUN_NAME = "trajdebug.run.name"
RUN_OUTCOME = "trajdebug.run.outcome"
RUN_FAILURE = "trajdebug.run.failure_reason"
RUN_METADATA = "trajdebug.run.metadata"
RUN_CONTINUES = "trajdebug.run.continues"
RUN_START = "trajdebug.run.start_ns"
RUN_END = "trajdebug.run.end_ns"
STEP_ID = "trajdebug.step.id"
STEP_KIND = "trajdebug.step.kind"
STEP_AGENT = "trajdebug.step.agent"
STEP_ATTEMPT = "trajdebug.step.attempt"
STEP_RETRY_OF = "trajdebug.step.retry_of"
STEP_SOURCE_INDEX = "trajdebug.step.source_index"
STEP_UNFINISHED = "trajdebug.step.unfinished"
STEP_ATTR = "trajdebug.attr."
DEP = "trajdebug.dep."
ERROR = "trajdebug.error."
ERROR_STAGE_EVENT = "trajdebug.error."  # + stage name
ANSWER_EVENT = "trajdebug.answer"
"""A span event: an answer stored with the run about this span's step (``trajdebug.answer.*`` attributes)."""
ANSWER = "trajdebug.answer."
SCORE_EVENT = "trajdebug.score"
"""A span event: a score put on this span's step, or (``trajdebug.score.target`` ``run``) on the run, carried by its
first top-level span (``trajdebug.score.*`` attributes: name, value, source, by, comment)."""
SCORE = "trajdebug.score."

_STATUS_CODES = {
    "STATUS_CODE_UNSET": 0,
    "STATUS_CODE_OK": 1,
    "STATUS_CODE_ERROR": 2,
    "UNSET": 0,
    "OK": 1,
    "ERROR": 2,
}
SPAN_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_KINDS = {n: i for i, name in enumerate(SPAN_KINDS) for n in (name, "SPAN_KIND_" + name)}
"""Span kinds by the names exporters write (`_enum` reads any other spelling)."""
EXCEPTION_EVENTS = ("exception", "gen_ai.client.operation.exception")


@dataclass(slots=True)
class Span:
    """One decoded OTLP span (internal working form)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: int
    start_ns: int
    end_ns: int | None
    attrs: dict[str, Any]
    events: list[tuple[str, int, dict[str, Any]]]
    links: list[tuple[str, str, dict[str, Any]]]
    status_code: int
    status_message: str
    resource: dict[str, Any]
    scope: str
    index: int
    children: list[Span] = field(default_factory=list)


# -- decoding -------------------------------------------------------------------


_VALUE_KEYS = {
    k: k.replace("_", "").lower()
    for k in (
        *("stringValue", "boolValue", "intValue", "doubleValue", "bytesValue", "arrayValue", "kvlistValue"),
        *("string_value", "bool_value", "int_value", "double_value", "bytes_value", "array_value", "kvlist_value"),
    )
}
"""The keys of an ``AnyValue`` as the spec and protobuf's JSON write them, folded (others are folded as read)."""


Bad = list[str]
"""What could not be decoded, each naming its field (``attributes[3].value.intValue: 'abc' is not an integer``)."""


def any_value(v: Any, bad: Bad | None = None, where: str = "value") -> Any:
    """Decode an OTLP ``AnyValue`` (camelCase or snake_case keys; plain values pass through).

    Never raises: a value that does not decode as its key says (``intValue: "abc"``, a
    ``doubleValue`` that is an object, an ``arrayValue`` that is a list) is kept as given, and
    what was wrong is appended to ``bad`` naming the field (``where``).
    """
    if not isinstance(v, (dict, Mapping)):
        return v
    if not v:
        return None
    for key, value in v.items():
        k = _VALUE_KEYS.get(key) or str(key).replace("_", "").lower()
        try:
            if k == "stringvalue":
                return value
            if k == "boolvalue":
                return bool(value)
            if k == "intvalue":
                return int(value) if type(value) is not float else _whole(value)
            if k == "doublevalue":
                return float(value)
            if k == "bytesvalue":
                return value
            if k == "arrayvalue":
                return [any_value(x, bad, f"{where}.arrayValue.values[{i}]") for i, x in enumerate(_values(value))]
            if k == "kvlistvalue":
                return attributes(_values(value), bad, f"{where}.kvlistValue.values")
        except (TypeError, ValueError, OverflowError):
            if bad is not None:
                bad.append(f"{where}.{key}: {_short(value)} is not {_WHAT.get(k, 'valid')}; kept as given")
            return value if isinstance(value, (str, int, float, bool)) or value is None else repr(value)[:200]
    return dict(v)


_WHAT = {
    "intvalue": "an integer",
    "doublevalue": "a number",
    "arrayvalue": "an object holding a list of values",
    "kvlistvalue": "an object holding a list of values",
}


def _whole(value: float) -> int:
    if value != int(value):
        raise ValueError(value)
    return int(value)


def _values(value: Any) -> Any:
    """The ``values`` of an ``arrayValue`` or ``kvlistValue`` (TypeError: not an object holding a list)."""
    if value is None:
        return ()
    if not isinstance(value, Mapping) or not isinstance(value.get("values", ()), (list, tuple)):
        raise TypeError(type(value).__name__)
    return value.get("values") or ()


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_NONE: Any = object()
"""A missing value (None may be a value)."""


def attributes(kvs: Any, bad: Bad | None = None, where: str = "attributes") -> dict[str, Any]:
    """Decode a list of ``{key, value}`` into a dict; what cannot be decoded is kept as given and
    appended to ``bad`` (see `any_value`)."""
    out: dict[str, Any] = {}
    if kvs.__class__ is not list:
        return _attributes(kvs, bad, where)
    for kv in kvs:
        # The common case (a string, whole number, flag or float as its key says) decoded inline: no
        # call, no field name built; a list with anything else is read again by `_attributes`, which
        # says what is wrong.
        if kv.__class__ is dict and (key := kv.get("key")).__class__ is str:
            v = kv.get("value")
            if v.__class__ is dict and len(v) == 1:
                x = v.get("stringValue", _NONE)
                if x is not _NONE:
                    out[key] = x
                    continue
                ((vk, x),) = v.items()
                c = x.__class__
                if (vk == "intValue" and (c is int or (c is str and x.isascii() and x.isdigit()))) or (
                    (vk == "boolValue" and c is bool) or (vk == "doubleValue" and c is float)
                ):
                    out[key] = int(x) if c is str else x
                    continue
                if vk == "arrayValue" and c is dict and (items := _strings(x)) is not None:
                    out[key] = items
                    continue
        return _attributes(kvs, bad, where)
    return out


def _strings(array: dict[str, Any]) -> list[str] | None:
    """The strings of an ``arrayValue`` that holds only strings (finish reasons, tool names, tags), as
    `any_value` reads them; None when it holds anything else (`any_value` reads it and says what is wrong)."""
    values = array.get("values")
    if len(array) != 1 or values.__class__ is not list:
        return None
    out = [e.get("stringValue", _NONE) if e.__class__ is dict and len(e) == 1 else _NONE for e in values]
    return None if _NONE in out else out


def _attributes(kvs: Any, bad: Bad | None, where: str) -> dict[str, Any]:
    """`attributes` of a list not all of whose values are in the common form."""
    out: dict[str, Any] = {}
    if kvs is None:
        return out
    if not isinstance(kvs, (list, tuple)):
        if bad is not None:
            bad.append(f"{where}: expected a list, got {type(kvs).__name__}; ignored")
        return out
    for i, kv in enumerate(kvs):
        if kv.__class__ is dict and (key := kv.get("key")).__class__ is str:
            # The common case (a string, whole number, flag or float as its key says) decoded inline:
            # no call, no field name built; anything else takes `any_value`, which says what is wrong.
            v = kv.get("value")
            if v.__class__ is dict and len(v) == 1:
                x = v.get("stringValue", _NONE)
                if x is not _NONE:
                    out[key] = x
                    continue
                ((vk, x),) = v.items()
                if (vk == "boolValue" and x.__class__ is bool) or (
                    vk in ("doubleValue", "intValue") and x.__class__ is (float if vk[0] == "d" else int)
                ):
                    out[key] = x
                    continue
                if vk == "intValue" and x.__class__ is str and x.isascii() and x.isdigit():
                    out[key] = int(x)
                    continue
            out[key] = any_value(v, bad, f"{where}[{i}].value")
        elif isinstance(kv, (dict, Mapping)) and "key" in kv:
            out[str(kv["key"])] = any_value(kv.get("value"), bad, f"{where}[{i}].value")
        elif bad is not None:
            bad.append(f"{where}[{i}]: expected an object with a key, got {type(kv).__name__}; ignored")
    return out


def hex_id(value: Any, nbytes: int) -> str | None:
    """Decode a trace id (16 bytes) or span id (8 bytes) given in hex or base64, to lowercase hex.

    Returns None for an empty or all-zero id (no parent).  Lengths tell the
    encodings apart: ``2 * nbytes`` hex digits against ``4 * ceil(nbytes / 3)``
    base64 characters.

    Raises:
        ValueError: the value is neither encoding of an id of that size.
    """
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"id {value!r} is not a string")
    seen = _TRACE_IDS if nbytes == 16 else _SPAN_IDS if nbytes == 8 else None
    if seen is None:
        return _hex_id(value, nbytes)
    out = seen.get(value, _NONE)
    if out is not _NONE:
        return out  # type: ignore[no-any-return]
    if len(seen) >= _HEX_IDS_MAX:
        seen.clear()
    out = seen[value] = _hex_id(value, nbytes)
    return out


_TRACE_IDS: dict[str, str | None] = {}
"""Trace ids decoded before (a trace's id comes with each of its spans), as given -> lowercase hex."""
_SPAN_IDS: dict[str, str | None] = {}
"""Span ids decoded before (a parent's comes with each child)."""
_HEX_IDS_MAX = 1 << 16


def _hex_id(value: str, nbytes: int) -> str | None:
    """`hex_id` of a non-empty string, not memoized."""
    out: str | None = None
    if len(value) == 2 * nbytes:
        try:
            bytes.fromhex(value)
            out = value.lower()
        except ValueError:
            out = None
    if out is None:
        try:
            raw = base64.b64decode(
                value + "=" * (-len(value) % 4),
                altchars=b"-_" if "-" in value or "_" in value else None,
                validate=True,
            )
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != nbytes:
            raise ValueError(f"id {value!r} is neither {2 * nbytes} hex digits nor base64 of {nbytes} bytes")
        out = raw.hex()
    return None if int(out, 16) == 0 else out


def _enum(value: Any, names: Mapping[str, int] | Sequence[str], prefix: str = "") -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if value.isdigit():
            return int(value)
        if isinstance(names, Mapping):
            return names.get(value.upper(), 0)
        name = value.upper().removeprefix(prefix)
        return names.index(name) if name in names else 0
    return 0


def _ns(value: Any) -> int | None:
    if value is None or value == "":
        return None
    n = int(value)
    return n or None


def _time(raw: Mapping[str, Any], camel: str) -> int | None:
    """`_ns` of a span's time field, its digits read at once when written as the spec says."""
    v = raw.get(camel, _NONE)
    if v.__class__ is str and v.isascii() and v.isdigit():
        return int(v) or None
    return _ns(_get(raw, camel) if v is _NONE else v)


def _get(obj: Mapping[str, Any], camel: str) -> Any:
    """A field by its camelCase name, or its snake_case name (protobuf JSON accepts both)."""
    if camel in obj:
        return obj[camel]
    snake = _SNAKE.get(camel)
    if snake is None:
        snake = _SNAKE[camel] = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return obj.get(snake)


_SNAKE: dict[str, str] = {}
"""camelCase field names -> snake_case (a root span asks for its absent ``parentSpanId`` each time)."""


def spans_from_envelope(
    env: Any, *, source: str | None, line: int | None, first_index: int
) -> tuple[list[Span], list[FormatError]]:
    """Decode every span of one ``resourceSpans`` envelope; bad spans become problems."""
    if not isinstance(env, Mapping) or _get(env, "resourceSpans") is None:
        kind = type(env).__name__ if not isinstance(env, Mapping) else "object without resourceSpans"
        return [], [FormatError(f"not an OTLP envelope ({kind})", source=source, line=line)]
    spans: list[Span] = []
    problems: list[FormatError] = []

    def bad(where: str, what: str, got: Any) -> None:
        problems.append(
            FormatError(f"{where}: expected {what}, got {type(got).__name__}", source=source, line=line)
        )

    resource_spans = _get(env, "resourceSpans")
    if not isinstance(resource_spans, list):
        bad("resourceSpans", "a list", resource_spans)
        return spans, problems
    for i, rs in enumerate(resource_spans):
        if not isinstance(rs, Mapping):
            bad(f"resourceSpans[{i}]", "an object", rs)
            continue
        res = rs.get("resource") or {}
        found: Bad = []
        resource = attributes(res.get("attributes") if isinstance(res, Mapping) else None, found, f"resourceSpans[{i}].resource.attributes")
        problems.extend(FormatError(f, source=source, line=line) for f in found)
        scope_spans = _get(rs, "scopeSpans") or _get(rs, "instrumentationLibrarySpans") or []
        if not isinstance(scope_spans, list):
            bad(f"resourceSpans[{i}].scopeSpans", "a list", scope_spans)
            continue
        for j, ss in enumerate(scope_spans):
            if not isinstance(ss, Mapping):
                bad(f"resourceSpans[{i}].scopeSpans[{j}]", "an object", ss)
                continue
            sc = ss.get("scope") or ss.get("instrumentationLibrary") or {}
            scope = str(sc.get("name", "")) if isinstance(sc, Mapping) else ""
            raw_spans = ss.get("spans") or []
            if not isinstance(raw_spans, list):
                bad(f"resourceSpans[{i}].scopeSpans[{j}].spans", "a list", raw_spans)
                continue
            found = []
            for k, raw in enumerate(raw_spans):
                if raw.__class__ is not dict and not isinstance(raw, Mapping):
                    bad(_where(i, j, k), "an object", raw)
                    continue
                try:
                    spans.append(_span(raw, resource, scope, first_index + len(spans), found))
                except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
                    msg = f"missing field {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
                    problems.append(FormatError(f"{_where(i, j, k)}: {msg}; span skipped", source=source, line=line))
                if found:
                    # The span is kept; each field that could not be read is one problem naming it.
                    problems.extend(FormatError(f"{_where(i, j, k)}.{f}", source=source, line=line) for f in found)
                    found = []
    return spans, problems


def _where(i: int, j: int, k: int) -> str:
    """A span's place in its envelope, as a problem names it (made only for a problem)."""
    return f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"


def _span(raw: Mapping[str, Any], resource: dict[str, Any], scope: str, index: int, bad: Bad) -> Span:
    """One span; only its ids are required (ValueError/KeyError), every other field that cannot be
    read is left at its default with a problem appended to ``bad``."""
    # Ids seen before (a trace's, a parent's) are looked up at once; the rest are decoded (`hex_id`).
    t = raw["traceId" if "traceId" in raw else "trace_id"]
    if (trace_id := _TRACE_IDS.get(t, _NONE) if t.__class__ is str else _NONE) is _NONE:
        trace_id = hex_id(t, 16)
    t = raw["spanId" if "spanId" in raw else "span_id"]
    # A span's id was often seen before, as its children's parent (children end, and are exported, first).
    if (span_id := _SPAN_IDS.get(t, _NONE) if t.__class__ is str else _NONE) is _NONE:
        span_id = hex_id(t, 8)
    if trace_id is None or span_id is None:
        raise ValueError("traceId and spanId must not be empty or zero")
    status = raw.get("status") or {}
    if status.__class__ is not dict and not isinstance(status, Mapping):
        bad.append(f"status: expected an object, got {type(status).__name__}; ignored")
        status = {}
    try:
        # Every field as it should be (the common case): read directly, with no closure per field.
        p = raw.get("parentSpanId", _NONE)
        if p is _NONE or (parent := _SPAN_IDS.get(p, _NONE) if p.__class__ is str else _NONE) is _NONE:
            parent = hex_id(_get(raw, "parentSpanId"), 8)
        # Times as the spec writes them (strings of digits) and a code as a number are read at once.
        start = raw.get("startTimeUnixNano", _NONE)
        end = raw.get("endTimeUnixNano", _NONE)
        code = status.get("code", 0)
        fields = (
            parent,
            _KINDS[kind] if (kind := raw.get("kind", 0)).__class__ is str and kind in _KINDS
            else _enum(kind, SPAN_KINDS, "SPAN_KIND_"),
            (int(start) if start.__class__ is str and start.isascii() and start.isdigit()
             else _time(raw, "startTimeUnixNano")) or 0,
            (int(end) or None) if end.__class__ is str and end.isascii() and end.isdigit()
            else _time(raw, "endTimeUnixNano"),
            code if code.__class__ is int else _enum(code, _STATUS_CODES),
        )
    except (TypeError, ValueError, OverflowError, AttributeError):
        return _checked_span(raw, resource, scope, index, bad, trace_id, span_id, status)
    return Span(
        trace_id,
        span_id,
        fields[0],
        str(raw.get("name", "")),
        fields[1],
        fields[2],
        fields[3],
        attributes(raw.get("attributes"), bad),
        _events(raw.get("events"), bad),
        _links(raw.get("links"), bad),
        fields[4],
        str(status.get("message") or ""),
        resource,
        str(scope),
        index,
    )


def _checked_span(
    raw: Mapping[str, Any],
    resource: dict[str, Any],
    scope: str,
    index: int,
    bad: Bad,
    trace_id: str,
    span_id: str,
    status: Mapping[str, Any],
) -> Span:
    """`_span` of a span with a field that cannot be read: each such field is left at its default
    and named in ``bad``."""
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=_field(bad, "parentSpanId", lambda: hex_id(_get(raw, "parentSpanId"), 8), None),
        name=str(raw.get("name", "")),
        kind=_field(bad, "kind", lambda: _enum(raw.get("kind", 0), SPAN_KINDS, "SPAN_KIND_"), 0),
        start_ns=_field(bad, "startTimeUnixNano", lambda: _ns(_get(raw, "startTimeUnixNano")) or 0, 0),
        end_ns=_field(bad, "endTimeUnixNano", lambda: _ns(_get(raw, "endTimeUnixNano")), None),
        attrs=attributes(raw.get("attributes"), bad),
        events=_events(raw.get("events"), bad),
        links=_links(raw.get("links"), bad),
        status_code=_field(bad, "status.code", lambda: _enum(status.get("code", 0), _STATUS_CODES), 0),
        status_message=str(status.get("message") or ""),
        resource=resource,
        scope=str(scope),
        index=index,
    )


def _field(bad: Bad, name: str, read: Any, default: Any) -> Any:
    try:
        return read()
    except (TypeError, ValueError, OverflowError, AttributeError) as exc:
        bad.append(f"{name}: {exc}; read as {default!r}")
        return default


def _events(raw: Any, bad: Bad) -> list[tuple[str, int, dict[str, Any]]]:
    """A span's events; an event that is not an object is skipped with a problem, the others kept."""
    if not raw:
        return []
    if not isinstance(raw, (list, tuple)):
        bad.append(f"events: expected a list, got {type(raw).__name__}; ignored")
        return []
    out = []
    for i, e in enumerate(raw):
        if not isinstance(e, Mapping):
            bad.append(f"events[{i}]: expected an object, got {type(e).__name__}; skipped")
            continue
        t = _field(bad, f"events[{i}].timeUnixNano", lambda e=e: _ns(_get(e, "timeUnixNano")) or 0, 0)
        out.append((str(e.get("name", "")), t, attributes(e.get("attributes"), bad, f"events[{i}].attributes")))
    return out


def _links(raw: Any, bad: Bad) -> list[tuple[str, str, dict[str, Any]]]:
    """A span's links; a link that cannot be read is skipped with a problem, the others kept."""
    if not raw:
        return []
    if not isinstance(raw, (list, tuple)):
        bad.append(f"links: expected a list, got {type(raw).__name__}; ignored")
        return []
    out = []
    for i, ln in enumerate(raw):
        try:
            lt, ls = hex_id(_get(ln, "traceId"), 16), hex_id(_get(ln, "spanId"), 8)
        except (TypeError, ValueError, AttributeError) as exc:
            bad.append(f"links[{i}]: {exc}; skipped")
            continue
        if lt and ls:
            out.append((lt, ls, attributes(ln.get("attributes"), bad, f"links[{i}].attributes")))
    return out
