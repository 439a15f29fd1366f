"""The OpenTelemetry Python SDK's console format: what ``ConsoleSpanExporter(out=file)`` writes.

The SDK's console exporter writes each finished span as ``ReadableSpan.to_json()``: a pretty-printed
JSON object per span, one after another (no enclosing list, no envelope), with snake_case fields,
``0x``-prefixed hex ids (``context.trace_id``, ``context.span_id``, ``parent_id``), ISO 8601 times to
the microsecond, the kind as ``SpanKind.INTERNAL``, attribute values as plain JSON and the resource
with every span.  It is the file most users of the SDK have; this module turns each span into the
OTLP/JSON envelope the OTLP importer reads (`trajdebug.sources.formats.otlp`), so both read alike.

What the format leaves out, the import cannot have: the instrumentation scope (an OpenAI Agents SDK
trace written by OpenInference's instrumentation is told by its scope, so through this format it is
read as any trace) and times finer than a microsecond.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from trajdebug.core.jsonl import FormatError
from trajdebug.sources.formats._common import Record


_HEAD = re.compile(r'\A\ufeff?\s*\{\s*"name"\s*:\s*(?:"(?:[^"\\]|\\.)*"|null)\s*,\s*"context"\s*:\s*\{\s*"trace_id"')
"""The opening of ``ReadableSpan.to_json()``: the span's name, then its context's trace id."""
_NEXT = re.compile(r"\n\{")
"""Where the next span starts when one is damaged: the SDK writes each span's opening brace at a line start."""


def looks_like_console(head: str) -> bool:
    """Whether a file's first bytes are a span as the OTel SDK's console exporter writes it."""
    return _HEAD.match(head) is not None


def console_records(path: Path, problems: list[FormatError]) -> Iterator[Record]:
    """Each span of a console-exporter file as a one-span OTLP/JSON envelope, with the line it starts on.

    A span that is not JSON, or lacks the ids, becomes a problem naming the file and the line, and the
    reading goes on at the next span.

    Raises:
        FormatError: the file cannot be read.
    """
    try:
        text = path.read_text(encoding="utf-8-sig", errors="replace")
    except OSError as exc:
        raise FormatError(f"cannot read file: {exc.strerror or exc}", source=str(path)) from None
    decoder = json.JSONDecoder()
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos].isspace():
            pos += 1
        if pos >= n:
            return
        line = text.count("\n", 0, pos) + 1
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError as exc:
            problems.append(FormatError(f"not valid JSON ({exc.args[0]})", source=str(path), line=line))
            found = _NEXT.search(text, pos)
            if found is None:
                return
            pos = found.start() + 1
            continue
        try:
            env = envelope(value)
        except (ValueError, TypeError) as exc:
            problems.append(FormatError(f"not a console-exporter span ({exc})", source=str(path), line=line))
            continue
        yield Record(env, line)


def envelope(span: Any) -> dict[str, Any]:
    """The OTLP/JSON envelope of one span as ``ReadableSpan.to_json()`` wrote it.

    Raises:
        ValueError: not a span object, or it has no trace or span id.
    """
    if not isinstance(span, Mapping):
        raise ValueError(f"expected a JSON object, got {type(span).__name__}")
    ctx = span.get("context")
    if not isinstance(ctx, Mapping) or not ctx.get("trace_id") or not ctx.get("span_id"):
        raise ValueError("no context.trace_id or context.span_id")
    status = _object(span.get("status"))
    out: dict[str, Any] = {
        "traceId": _id(ctx["trace_id"]),
        "spanId": _id(ctx["span_id"]),
        "parentSpanId": _id(span.get("parent_id")),
        "name": str(span.get("name") or ""),
        "kind": "SPAN_KIND_" + str(span.get("kind") or "INTERNAL").rsplit(".", 1)[-1].upper(),
        "startTimeUnixNano": _ns(span.get("start_time")),
        "endTimeUnixNano": _ns(span.get("end_time")),
        "status": {
            "code": "STATUS_CODE_" + str(status.get("status_code") or "UNSET").upper(),
            "message": str(status.get("description") or ""),
        },
        "attributes": _attributes(span.get("attributes")),
        "events": [_event(e) for e in span.get("events") or () if isinstance(e, Mapping)],
        "links": [_link(k) for k in span.get("links") or () if isinstance(k, Mapping)],
    }
    resource = _object(span.get("resource"))
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(resource.get("attributes"))},
                "scopeSpans": [{"scope": {}, "spans": [out]}],
            }
        ]
    }


def _object(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _id(value: Any) -> str:
    return str(value).removeprefix("0x") if value else ""


def _ns(iso: Any) -> str:
    """An ISO 8601 time (the SDK writes UTC with a ``Z``) as Unix nanoseconds, exactly ('' when absent)."""
    if not iso:
        return ""
    t = datetime.fromisoformat(str(iso).replace("Z", "+00:00"))
    whole = int(t.replace(microsecond=0).timestamp())
    return str(whole * 1_000_000_000 + t.microsecond * 1000)


def _any(value: Any) -> dict[str, Any]:
    """A plain JSON attribute value as an OTLP ``AnyValue`` (the SDK keeps bool, int, float, str and lists)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any(v) for v in value]}}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": _attributes(value)}}
    return {"stringValue": "" if value is None else str(value)}


def _attributes(attrs: Any) -> list[dict[str, Any]]:
    if not isinstance(attrs, Mapping):
        return []
    return [{"key": str(k), "value": _any(v)} for k, v in attrs.items()]


def _event(event: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": str(event.get("name") or ""),
        "timeUnixNano": _ns(event.get("timestamp")),
        "attributes": _attributes(event.get("attributes")),
    }


def _link(link: Mapping[str, Any]) -> dict[str, Any]:
    ctx = _object(link.get("context"))
    return {
        "traceId": _id(ctx.get("trace_id")),
        "spanId": _id(ctx.get("span_id")),
        "attributes": _attributes(link.get("attributes")),
    }


__all__ = ["console_records", "envelope", "looks_like_console"]
