"""Export runs as OTLP/JSON, so recorded runs open in any OpenTelemetry backend.

Each run becomes one trace (one ``resourceSpans`` entry), each step one span:

- ids: a step id that is already 16 hex digits is the span id; any other id
  (``m0003``, a tau-bench run id) is hashed to one, and the original is kept
  in ``trajdebug.step.id`` / ``trajdebug.run.id``;
- OpenInference attributes (``openinference.span.kind``, ``input.value``,
  ``output.value``, ``agent.name``, ``llm.model_name``, ``tool.id``) so LLM
  backends (Phoenix, Langfuse) render the steps, and what they show of a run
  and its calls: ``llm.token_count.prompt`` / ``.completion`` / ``.total`` and
  ``llm.cost.total`` on each LLM call (the cost `trajdebug.usage` states or
  prices), ``session.id`` and ``user.id`` on every span, ``tag.tags`` and the
  run's ``metadata`` (a JSON object) on its top spans, as OpenInference's
  instrumentations write them;
- dependencies as span links, carrying kind, origin and confidence;
- errors as OTel ``exception`` events and status ERROR; each lifecycle stage
  as a ``trajdebug.error.<stage>`` event on the step where it happened.

`trajdebug.sources.formats.otlp` reads all of it back to the same run.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from trajdebug.core.model import ErrorEvent, Run, StageChange, Step
from trajdebug.sources.formats import otlp_json as o


_HEX16 = re.compile(r"^[0-9a-f]{16}$")
_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_OPENINFERENCE_KIND = {
    "llm": "LLM",
    "tool": "TOOL",
    "retrieval": "RETRIEVER",
    "agent": "AGENT",
    "condition": "GUARDRAIL",
}
_SPAN_KIND_INTERNAL, _SPAN_KIND_CLIENT = 1, 3


def trace_id_for(run_id: str) -> str:
    """The OTLP trace id of a run: its id when that is 32 hex digits, else a hash of it."""
    if _HEX32.match(run_id):
        return run_id
    return hashlib.sha256(run_id.encode()).hexdigest()[:32]


def span_id_for(run_id: str, step_id: str) -> str:
    """The OTLP span id of a step: its id when that is 16 hex digits, else a hash of (run, step)."""
    if _HEX16.match(step_id):
        return step_id
    return hashlib.sha256(f"{run_id}\0{step_id}".encode()).hexdigest()[:16]


def any_value_of(v: Any) -> dict[str, Any]:
    """Encode a JSON value as an OTLP ``AnyValue`` (``{}`` for None)."""
    if v is None:
        return {}
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, Mapping):
        return {"kvlistValue": {"values": [{"key": str(k), "value": any_value_of(x)} for k, x in v.items()]}}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [any_value_of(x) for x in v]}}
    return {"stringValue": str(v)}


def _attrs(pairs: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value_of(v)} for k, v in pairs.items() if v is not None]


def _io(value: Any, which: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        return {f"{which}.value": value, f"{which}.mime_type": "text/plain"}
    from trajdebug.core.codec import dumps_str

    return {f"{which}.value": dumps_str(value), f"{which}.mime_type": "application/json"}


@functools.cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trajdebug")
    except PackageNotFoundError:
        return "0"


def export_otlp(runs: Iterable[Run]) -> dict[str, Any]:
    """One OTLP/JSON envelope holding every run, one trace each."""
    scope = {"name": "trajdebug", "version": _version()}
    return {"resourceSpans": [_resource_spans(run, scope) for run in runs]}


def _resource_spans(run: Run, scope: Mapping[str, Any]) -> dict[str, Any]:
    trace = trace_id_for(run.run_id)
    stage_events = _stage_events(run)
    for sid, events in _answer_events(run).items():
        stage_events.setdefault(sid, []).extend(events)
    for sid, events in _score_events(run).items():
        stage_events.setdefault(sid, []).extend(events)
    spans = [_span(run, trace, s, stage_events.get(s.step_id, [])) for s in run.steps]
    return {
        "resource": {"attributes": resource_attributes(run)},
        "scopeSpans": [{"scope": dict(scope), "spans": spans}],
    }


def _stage_events(run: Run) -> dict[str, list[dict[str, Any]]]:
    """Lifecycle stages as span events, on the step where each stage happened."""
    out: dict[str, list[dict[str, Any]]] = {}
    for e in run.errors:
        for c in e.stages:
            at = c.step_id if c.step_id is not None else e.step_id
            out.setdefault(at, []).append(stage_event(e, c))
    return out


def _answer_events(run: Run) -> dict[str, list[dict[str, Any]]]:
    """The answers stored with the run as ``trajdebug.answer`` events on their steps' spans (read back
    by `trajdebug.sources.formats.otlp`); an answer about a step of an earlier turn goes nowhere."""
    out: dict[str, list[dict[str, Any]]] = {}
    for a in run.answers:
        if a.run_id not in (None, run.run_id):
            continue
        word = "unknown" if a.correct is None else "correct" if a.correct else "wrong"
        attrs: dict[str, Any] = {o.ANSWER + "correct": word, o.ANSWER + "by": a.by, o.ANSWER + "reason": a.reason}
        if a.correct is False and a.admissible is not None:
            attrs[o.ANSWER + "admissible"] = a.admissible
        out.setdefault(a.step_id, []).append(
            {"timeUnixNano": str(a.at_ns), "name": o.ANSWER_EVENT, "attributes": _attrs(attrs)}
        )
    return out


def _score_events(run: Run) -> dict[str, list[dict[str, Any]]]:
    """The run's scores as ``trajdebug.score`` events (read back by `trajdebug.sources.formats.otlp`): a step's on
    its span, the run's on its first top-level span (target ``run``), where a backend shows a trace's root."""
    out: dict[str, list[dict[str, Any]]] = {}
    top = next((s.step_id for s in run.steps if s.parent_id is None), run.steps[0].step_id if run.steps else None)
    ids = {s.step_id for s in run.steps}
    for sc in run.scores:
        at = sc.step_id if sc.step_id in ids else top if sc.step_id is None else None
        if at is None:
            continue
        attrs = {
            o.SCORE + "name": sc.name,
            o.SCORE + "value": sc.value,
            o.SCORE + "source": sc.source,
            o.SCORE + "by": sc.by,
            o.SCORE + "comment": sc.comment,
            o.SCORE + "target": "step" if sc.step_id else "run",
        }
        out.setdefault(at, []).append({"timeUnixNano": str(sc.at_ns), "name": o.SCORE_EVENT, "attributes": _attrs(attrs)})
    return out


def stage_event(e: ErrorEvent, c: StageChange) -> dict[str, Any]:
    """One lifecycle stage of an error as an OTLP span event (``trajdebug.error.<stage>``); it belongs on the
    span of ``c.step_id``, or of the error's step when the stage names none (the live exporter uses this too)."""
    attrs = {
        o.ERROR + "id": e.error_id,
        o.ERROR + "step_id": e.step_id,
        o.ERROR + "type": e.type,
        o.ERROR + "message": e.message,
        o.ERROR + "parent_id": e.parent_error_id,
        o.ERROR + "attempt": e.attempt if e.attempt != 1 else None,
        o.ERROR + "reason": c.reason,
        o.ERROR + "stage_step_id": c.step_id,
        o.ERROR + "attributes": dict(e.attributes) if e.attributes else None,
    }
    return {"timeUnixNano": str(c.time_ns), "name": o.ERROR_STAGE_EVENT + c.stage, "attributes": _attrs(attrs)}


def step_span(run: Run, s: Step, stage_events: list[dict[str, Any]]) -> dict[str, Any]:
    """One step as an OTLP/JSON span: dependencies as links, its error as an ``exception`` event, the given
    stage events (`stage_event`) after it (the live exporter builds its spans with this)."""
    return _span(run, trace_id_for(run.run_id), s, stage_events)


def resource_attributes(run: Run) -> list[dict[str, Any]]:
    """A run's identity, outcome and metadata as OTLP resource attributes."""
    from trajdebug.core.codec import dumps_str

    return _attrs(
        {
            "service.name": str(run.metadata.get("service.name", "trajdebug")),
            o.RUN_ID: run.run_id,
            o.RUN_NAME: run.name,
            o.RUN_OUTCOME: run.outcome,
            o.RUN_FAILURE: run.failure_reason,
            o.RUN_METADATA: dumps_str(dict(run.metadata)) if run.metadata else None,
            o.RUN_CONTINUES: run.continues,
            o.RUN_START: run.start_ns,
            o.RUN_END: run.end_ns,
        }
    )


def _run_context(run: Run, *, top: bool) -> dict[str, Any]:
    """The OpenInference attributes that say whose a span is: ``session.id`` and ``user.id`` on every span (a
    backend groups sessions and users by any span), ``tag.tags`` and ``metadata`` on the top spans (Phoenix and
    Langfuse show a trace's tags and metadata from its root).  trajdebug's own import reads the run from its
    ``trajdebug.*`` attributes and leaves these aside, so a round trip is unchanged."""
    from trajdebug.core.codec import dumps_str
    from trajdebug.sessions import listed_tags, session_in, user_in

    md = run.metadata
    out: dict[str, Any] = {"session.id": session_in(md), "user.id": user_in(md)}
    if top:
        tags = listed_tags(md)
        out["tag.tags"] = tags or None
        out["metadata"] = dumps_str(dict(md)) if md else None
    return out


def _token_counts(s: Step) -> dict[str, Any]:
    """An LLM step's tokens and cost as OpenInference names them (``llm.token_count.*``, ``llm.cost.total``):
    the counts it states, the cost it states or the price table's (`trajdebug.usage.step_usage`)."""
    from trajdebug.usage import step_usage

    u = step_usage(s)
    if u is None:
        return {}
    return {
        "llm.token_count.prompt": u.prompt_tokens,
        "llm.token_count.completion": u.completion_tokens,
        "llm.token_count.total": u.total_tokens,
        "llm.cost.total": u.cost,
    }


def _span(run: Run, trace: str, s: Step, stage_events: list[dict[str, Any]]) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "openinference.span.kind": _OPENINFERENCE_KIND.get(s.kind, "CHAIN"),
        o.STEP_ID: s.step_id,
        o.STEP_KIND: s.kind,
        o.STEP_AGENT: s.agent,
        "agent.name": s.agent,
        o.STEP_ATTEMPT: s.attempt if s.attempt != 1 else None,
        o.STEP_RETRY_OF: s.retry_of,
        o.STEP_SOURCE_INDEX: s.source_index,
        o.STEP_UNFINISHED: True if s.end_ns is None else None,
        **_io(s.input, "input"),
        **_io(s.output, "output"),
    }
    attrs.update(_run_context(run, top=s.parent_id is None))
    a = s.attributes
    model = a.get("llm.model", a.get("model"))  # the chat convention's key, or a recorder's own
    if s.kind == "llm" and isinstance(model, str):
        attrs["llm.model_name"] = model
    if s.kind == "llm":
        attrs.update(_token_counts(s))
    if s.kind == "tool":
        attrs["tool.name"] = s.name
        if a.get("tool_call_id") is not None:
            attrs["tool.id"] = str(a["tool_call_id"])
    end = s.end_ns if s.end_ns is not None else s.start_ns
    events = list(stage_events)
    status: dict[str, Any] = {}
    if s.error is not None:
        status = {"code": 2, "message": s.error.message}
        exc = {
            "exception.type": s.error.type,
            "exception.message": s.error.message,
            "exception.stacktrace": s.error.traceback,
            o.ERROR + "id": s.error.error_id,
        }
        events.insert(0, {"timeUnixNano": str(end), "name": "exception", "attributes": _attrs(exc)})
    elif s.status == "error":
        status = {"code": 2, "message": ""}
    links = []
    for d in s.deps:
        other = d.run_id if d.run_id is not None else run.run_id
        link_attrs = {
            o.DEP + "step_id": d.step_id,
            o.DEP + "kind": d.kind,
            o.DEP + "origin": d.origin,
            o.DEP + "confidence": float(d.confidence),
            o.DEP + "key": d.key,
            o.DEP + "run_id": d.run_id,
        }
        links.append(
            {
                "traceId": trace_id_for(other),
                "spanId": span_id_for(other, d.step_id),
                "attributes": _attrs(link_attrs),
            }
        )
    span: dict[str, Any] = {
        "traceId": trace,
        "spanId": span_id_for(run.run_id, s.step_id),
        "name": s.name,
        "kind": _SPAN_KIND_CLIENT if s.kind == "llm" else _SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(s.start_ns),
        "endTimeUnixNano": str(end),
        # The step's own attributes keep their None values (an empty AnyValue).
        "attributes": _attrs(attrs)
        + [{"key": o.STEP_ATTR + str(k), "value": any_value_of(v)} for k, v in a.items()],
        "status": status,
    }
    if s.parent_id is not None:
        span["parentSpanId"] = span_id_for(run.run_id, s.parent_id)
    if events:
        span["events"] = events
    if links:
        span["links"] = links
    return span


def write_otlp(runs: Iterable[Run], path: str | Path | IO[str], *, per_line: bool = False) -> None:
    """Write runs as OTLP/JSON: one envelope, or (``per_line``) one envelope per run per line, as the collector's file exporter does."""
    from trajdebug.core.codec import dumps_str
    from trajdebug.core.schema import redact_run

    # A write path like any other: secrets are redacted per the process policy.
    runs = [redact_run(r) for r in runs]
    text = (
        "".join(dumps_str(export_otlp([r])) + "\n" for r in runs)
        if per_line
        else dumps_str(export_otlp(runs)) + "\n"
    )
    if isinstance(path, (str, Path)):
        Path(path).write_text(text, encoding="utf-8")
    else:
        path.write(text)


__all__ = [
    "any_value_of",
    "export_otlp",
    "resource_attributes",
    "span_id_for",
    "stage_event",
    "step_span",
    "trace_id_for",
    "write_otlp",
]
