"""OTLP/JSON decoding: envelopes to flat spans, ids, ``AnyValue`` attributes, enums.

The OTLP/JSON layout as exporters and the collector's file exporter write it:
``resourceSpans[].scopeSpans[].spans[]``, ids in hex (the OTLP/JSON spec) or
base64 (protobuf JSON), attribute values in any ``AnyValue`` form, enums as
integers or names, camelCase or snake_case keys.  Also the names of the
``trajdebug.*`` attributes and events that `trajdebug.formats.export` writes
and `trajdebug.formats.otlp` restores.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajdebug.format import FormatError


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

_STATUS_CODES = {
    "STATUS_CODE_UNSET": 0,
    "STATUS_CODE_OK": 1,
    "STATUS_CODE_ERROR": 2,
    "UNSET": 0,
    "OK": 1,
    "ERROR": 2,
}
SPAN_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
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


def any_value(v: Any) -> Any:
    """Decode an OTLP ``AnyValue`` (camelCase or snake_case keys; plain values pass through)."""
    if not isinstance(v, (dict, Mapping)):
        return v
    if not v:
        return None
    for key, value in v.items():
        k = _VALUE_KEYS.get(key) or key.replace("_", "").lower()
        if k == "stringvalue":
            return value
        if k == "boolvalue":
            return bool(value)
        if k == "intvalue":
            return int(value)
        if k == "doublevalue":
            return float(value)
        if k == "bytesvalue":
            return value
        if k == "arrayvalue":
            return [any_value(x) for x in (value or {}).get("values", ())]
        if k == "kvlistvalue":
            return attributes((value or {}).get("values", ()))
    return dict(v)


def attributes(kvs: Any) -> dict[str, Any]:
    """Decode a list of ``{key, value}`` into a dict."""
    out: dict[str, Any] = {}
    for kv in kvs or ():
        if isinstance(kv, (dict, Mapping)) and "key" in kv:
            out[str(kv["key"])] = any_value(kv.get("value"))
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
    key = (value, nbytes)
    if key in _HEX_IDS:
        return _HEX_IDS[key]
    if len(_HEX_IDS) >= _HEX_IDS_MAX:
        _HEX_IDS.clear()
    out = _HEX_IDS[key] = _hex_id(value, nbytes)
    return out


_HEX_IDS: dict[tuple[str, int], str | None] = {}
"""Ids decoded before: a trace's id comes with each of its spans, a parent's with each child."""
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


def _get(obj: Mapping[str, Any], camel: str) -> Any:
    """A field by its camelCase name, or its snake_case name (protobuf JSON accepts both)."""
    if camel in obj:
        return obj[camel]
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return obj.get(snake)


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
        resource = attributes(res.get("attributes") if isinstance(res, Mapping) else None)
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
            for k, raw in enumerate(raw_spans):
                where = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                if not isinstance(raw, Mapping):
                    bad(where, "an object", raw)
                    continue
                try:
                    spans.append(_span(raw, resource, scope, first_index + len(spans)))
                except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
                    msg = f"missing field {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
                    problems.append(FormatError(f"{where}: {msg}", source=source, line=line))
    return spans, problems


def _span(raw: Mapping[str, Any], resource: dict[str, Any], scope: str, index: int) -> Span:
    trace_id = hex_id(raw["traceId" if "traceId" in raw else "trace_id"], 16)
    span_id = hex_id(raw["spanId" if "spanId" in raw else "span_id"], 8)
    if trace_id is None or span_id is None:
        raise ValueError("traceId and spanId must not be empty or zero")
    status = raw.get("status") or {}
    events = [
        (str(e.get("name", "")), _ns(_get(e, "timeUnixNano")) or 0, attributes(e.get("attributes")))
        for e in raw.get("events") or ()
    ]
    links = []
    for ln in raw.get("links") or ():
        lt, ls = hex_id(_get(ln, "traceId"), 16), hex_id(_get(ln, "spanId"), 8)
        if lt and ls:
            links.append((lt, ls, attributes(ln.get("attributes"))))
    start = _ns(_get(raw, "startTimeUnixNano")) or 0
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=hex_id(_get(raw, "parentSpanId"), 8),
        name=str(raw.get("name", "")),
        kind=_enum(raw.get("kind", 0), SPAN_KINDS, "SPAN_KIND_"),
        start_ns=start,
        end_ns=_ns(_get(raw, "endTimeUnixNano")),
        attrs=attributes(raw.get("attributes")),
        events=events,
        links=links,
        status_code=_enum(status.get("code", 0), _STATUS_CODES),
        status_message=str(status.get("message") or ""),
        resource=resource,
        scope=str(scope),
        index=index,
    )
