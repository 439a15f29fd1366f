"""Import OpenTelemetry traces in OTLP/JSON: one run per trace, one step per span.

Reads the ``resourceSpans`` layout that OTel exporters and the collector's
file exporter write (and the Python SDK's console exporter output, each span
turned into such an envelope by `trajdebug.sources.formats.otel_console`): one envelope per file or one per line, a trace spread
over several envelopes or files (pass a directory), ids in hex (the OTLP/JSON
spec) or base64 (protobuf JSON), attribute values in any ``AnyValue`` form,
enums as integers or names.  Attribute conventions (OpenInference, GenAI,
Traceloop) are read by `trajdebug.sources.formats._semconv`.

Mapping:

- step_id: the span id in lowercase hex; parent_id: the parent span's;
- errors: status ERROR, ``exception`` events, ``error.type``; the same
  exception recorded again by an enclosing span (OTel records it at every
  level it escapes) is one error *propagated*, not a new one (dedupe, as
  products.md 4.1 "gotcha 2" asks); a ``(non-fatal)`` status is *recovered*;
- span links become declared dependencies;
- LLM spans follow the convention of `trajdebug.core.chat`: messages in, the
  assistant's message out, the envelope (model, usage, ids, finish reason,
  parameters, tools) as ``llm.*`` attributes;
- tool-call ids link LLM -> tool -> LLM (declared data edges); a tool span
  without a call id is matched to the latest earlier call of the same tool
  name and arguments.

Nothing is inferred from content here: the analysis does that when it reads
the run.  Spans written by `trajdebug.sources.formats.export` carry ``trajdebug.*``
attributes and events; they restore the original run exactly (ids, kinds,
edges, lifecycles).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from trajdebug.core.collector import collector_paused
from trajdebug.core.jsonl import FormatError, ReadResult
from trajdebug.core.model import Run
from trajdebug.sources.formats._common import Record, sniff_head
from trajdebug.sources.formats._otlp_run import trace_to_run
from trajdebug.sources.formats._stream import SpanSpill, records
from trajdebug.sources.formats.otel_console import console_records, looks_like_console
from trajdebug.sources.formats.otlp_json import (
    RUN_ID,
    Span,
    any_value,
    attributes,
    hex_id,
    spans_from_envelope,
)


# -- reading --------------------------------------------------------------------

STREAM_FROM = 8 << 20
"""Files at least this large (bytes) are streamed: JSON lines are read one at a time, and spans past
`SPILL_SPANS` wait on disk for their trace's turn instead of in memory.  A file read whole holds its
bytes, its lines and every decoded span at once (about 9 MiB per MB of OTel SDK output)."""

SPILL_SPANS = 10_000
"""Spans held in memory at most while a large file is read; the rest are spilled to a temporary file.
10,000 spans of agent traces (about 1.4 KB each on the wire) keep the import's peak near 70-80 MiB at
50 and 500 MB; spilling costs less than decoding (the spans are marshalled)."""


def read_otlp(path: str | Path) -> ReadResult:
    """Import every trace in an OTLP/JSON file, or in all ``*.json``/``*.jsonl`` files of a directory.

    Raises:
        FormatError: nothing at all could be read.
    """
    problems: list[FormatError] = []
    runs = list(iter_otlp(path, problems))
    return ReadResult(runs, problems)


def iter_otlp(path: str | Path, problems: list[FormatError]) -> Iterator[Run]:
    """The runs of an OTLP/JSON file (or directory), one trace at a time, in order of first appearance.

    Memory stays bounded on files of any size: a file of `STREAM_FROM` bytes or
    more that holds one envelope per line (as the collector's file exporter
    writes) is read a line at a time, and past `SPILL_SPANS` spans the decoded
    spans wait in a temporary file until every span of their trace has
    been read (a trace may be spread over the whole file).  A large file that is
    one JSON document is read whole.  Malformed records and spans are appended
    to ``problems`` (file and line named) and the rest is read.

    Raises:
        FormatError: nothing at all could be read (raised before any run is yielded).
    """
    p = Path(path)
    files = (
        sorted(f for f in p.iterdir() if f.is_file() and f.suffix in (".json", ".jsonl"))
        if p.is_dir()
        else [p]
    )
    if not files:
        raise FormatError("directory holds no .json or .jsonl files", source=str(p))
    # Decoding allocates millions of small containers that stay alive until the runs are built.
    with collector_paused(), SpanSpill() as traces:
        for f in files:
            bad_json: list[FormatError] = []
            bad_spans: list[FormatError] = []
            try:
                read = (
                    console_records(f, bad_json)
                    if looks_like_console(sniff_head(f, 4096))
                    else records(f, bad_json, stream_from=STREAM_FROM)
                )
                for spans in _envelope_spans(read, str(f), bad_spans, traces.count):
                    traces.add(spans, SPILL_SPANS)
            except FormatError as exc:
                problems.append(exc)
                continue
            problems += bad_json + bad_spans
        if not traces.count:
            first = problems[0].reason if problems else "no spans"
            raise FormatError(
                f"no span could be read ({first})", source=str(p), line=problems[0].line if problems else None
            )
        yield from _runs(traces, problems, str(p))


def _runs(traces: SpanSpill, problems: list[FormatError] | None = None, source: str | None = None) -> Iterator[Run]:
    """One run per trace, in order of first appearance (`runs_from_spans`)."""
    traces.finish()
    if traces.spilled:
        # A span's links name other traces' runs: every trace's run id first, one trace at a time
        # (read back only for a trace with a span that carries a run id: the rest are their trace id).
        run_ids = {
            t: _run_id_of(list(_dedupe(traces.spans(t, keep=True)).values())) if t in traces.named else t for t in traces.order
        }
    else:
        run_ids = {
            t: _run_id_of(list(_dedupe(ss).values())) if t in traces.named else t for t, ss in traces.memory.items()
        }
    for t in list(traces.order):
        try:
            yield trace_to_run(t, _dedupe(traces.spans(t)), run_ids)
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
            # A trace whose spans decode but do not assemble: that trace is lost, never the file.
            if problems is not None:
                problems.append(FormatError(f"trace {t}: cannot be assembled ({exc}); skipped", source=source))


def _envelope_spans(
    records: Iterable[Record], source: str, problems: list[FormatError], first_index: int = 0
) -> Iterator[list[Span]]:
    """The spans of each OTLP envelope in the records (a record holds one envelope or a list of them),
    numbered on from ``first_index``; what is malformed goes to ``problems``, the rest is read."""
    n = first_index
    for rec in records:
        for env in rec.value if isinstance(rec.value, list) else [rec.value]:
            spans, bad = spans_from_envelope(env, source=source, line=rec.line, first_index=n)
            n += len(spans)
            problems += bad
            yield spans


def runs_from_otlp(envelopes: Iterable[Mapping[str, Any]], *, source: str | None = None) -> ReadResult:
    """Import decoded OTLP/JSON envelopes (already parsed JSON objects)."""
    records = [Record(e, n) for n, e in enumerate(envelopes, start=1)]
    problems: list[FormatError] = []
    spans = [s for batch in _envelope_spans(records, source or "<otlp>", problems) for s in batch]
    result = runs_from_spans(spans)
    result.problems[:0] = problems
    return result


def runs_from_spans(spans: Iterable[Span]) -> ReadResult:
    """Group spans by trace and build one run per trace, in order of first appearance."""
    grouped: dict[str, list[Span]] = {}
    for s in spans:
        grouped.setdefault(s.trace_id, []).append(s)
    traces = {t: _dedupe(ss) for t, ss in grouped.items()}
    run_ids = {t: _run_id_of(list(by_id.values())) for t, by_id in traces.items()}
    return ReadResult([trace_to_run(t, by_id, run_ids) for t, by_id in traces.items()], [])


def _dedupe(spans: Iterable[Span]) -> dict[str, Span]:
    """A trace's spans by span id; a span exported twice (a retrying exporter, overlapping files) keeps
    its finished copy."""
    by_id: dict[str, Span] = {}
    for s in spans:
        old = by_id.get(s.span_id)
        if old is None or (old.end_ns is None and s.end_ns is not None):
            by_id[s.span_id] = s
    return by_id


def _run_id_of(spans: list[Span]) -> str:
    for s in spans:
        rid = s.resource.get(RUN_ID, s.attrs.get(RUN_ID))
        if rid is not None:
            return str(rid)
    return spans[0].trace_id


__all__ = [
    "SPILL_SPANS",
    "STREAM_FROM",
    "Span",
    "any_value",
    "attributes",
    "hex_id",
    "iter_otlp",
    "read_otlp",
    "runs_from_otlp",
    "runs_from_spans",
    "spans_from_envelope",
]
