"""The record schema: every record type and its fields, built and read in one place.

A run is stored as a stream of records (see ``docs/format.md``), each a JSON
object with ``"v"`` (the format version) and ``"t"`` (the record type):

``run``    the run started (id, name, start time, metadata, the run it continues)
``step``   a step finished (all of its fields; written when it ends)
``open``   a step started (id, name, kind, parent, start): lets a crashed run show what was in flight
``error``  an error occurred (id, step, type, message, cause)
``stage``  an error changed lifecycle stage
``dep``    a dependency found after its step was written
``meta``   metadata known only during the run
``end``    the run ended (outcome, reason, and what the recorder lost or redacted)
``mark``   a person's verdict after the fact (outcome, reason): overrides the recorded outcome
``answer`` a judgement of one step's output (correct, wrong, don't know), who gave it, when, why

Everything that writes records builds them here (the recorder's writer
thread, `run_to_records` for the store, the JSONL writer, imports and
integrations); everything that reads them decodes them here (the JSONL reader
and the store, through `trajdebug.core.jsonl.RunBuilder`); the JSON reporter's
full form of a step (`step_to_dict`) and the OTLP exporter start from the
same fields.

Reading is tolerant field by field: a field of the wrong type or an unknown
value is replaced by its documented default and reported as a problem (a
one-line message naming the field), so a step or a run is never dropped for
one field.  A step kind outside the built-ins (``embedding``, ``chain``,
``reranker``) reads as ``other``, with the kind as recorded kept in the
``recorded_kind`` attribute; a built-in kind in another case (``LLM``) reads
as the built-in.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.core.model import (
    DEP_KINDS,
    DEP_ORIGINS,
    OUTCOMES,
    STAGES,
    STEP_KINDS,
    Answer,
    Dependency,
    ErrorEvent,
    ErrorInfo,
    Run,
    StageChange,
    Step,
)


FORMAT_VERSION = 1
"""The version written into every record."""

SUPPORTED_VERSIONS = frozenset({1})
"""Versions this trajdebug reads."""

RECORD_TYPES: tuple[str, ...] = ("run", "step", "open", "error", "stage", "dep", "meta", "end", "mark", "answer")
"""Every record type, in the order a run usually writes them."""

KIND_ATTRIBUTE = "recorded_kind"
"""Attribute keeping a step kind as recorded, when it reads as another (``embedding`` -> ``other``)."""

STATUS_ATTRIBUTE = "recorded_status"
"""Attribute keeping a step status as recorded, when it is neither ``ok`` nor ``error``."""

MARK_KEY = "marked"
"""Metadata key of a run marked after the fact: the verdict, and the outcome the run had recorded."""

RECORDER_KEY = "recorder"
"""Key of the recorder's account of a run (what it lost, what it redacted): a field of the
``end`` record, and of ``Run.metadata`` once read."""

_KINDS = frozenset(STEP_KINDS)


class KindWarning(UserWarning):
    """A step kind that is probably a typo of a built-in one (``tools`` for ``tool``)."""


# -- kinds ------------------------------------------------------------------------


def close_kinds(kind: str) -> list[str]:
    """Built-in kinds close to ``kind`` (difflib's ratio of at least 0.75), best first."""
    import difflib  # only when a kind is misspelled: not at start-up

    return difflib.get_close_matches(kind.lower(), STEP_KINDS, n=3, cutoff=0.75)


_checked: set[str] = set()


def check_kind(kind: Any) -> str:
    """Validate a step kind where a step is declared (decoration time), cheaply; return it as stored.

    Any string is accepted and stored as given.  A kind that is not built-in
    but close to one (``tools``, ``parser``) warns once per process with a
    `KindWarning` naming the close matches, since it will read as ``other``;
    a kind that is a built-in in another case (``LLM``) or far from every
    built-in (``embedding``) is accepted silently.  A kind that is not a string
    warns and is stored as ``other``.
    """
    if kind.__class__ is str:
        if kind in _KINDS or kind in _checked:
            return kind
        _checked.add(kind)
        if kind.lower() not in _KINDS:
            near = [k for k in close_kinds(kind) if k != kind]
            if near:
                warnings.warn(
                    f"trajdebug: step kind {kind!r} is not a built-in kind; did you mean "
                    f"{' or '.join(repr(k) for k in near)}? (stored as given; reads as 'other')",
                    KindWarning,
                    stacklevel=3,
                )
        return kind
    warnings.warn(
        f"trajdebug: step kind must be a string, not {type(kind).__name__}; recorded as 'other'",
        KindWarning,
        stacklevel=3,
    )
    return "other"


def read_kind(value: Any) -> tuple[Any, str | None]:
    """The model kind of a recorded kind, and the recorded one when it differs (else None)."""
    if value in _KINDS:
        return value, None
    if isinstance(value, str):
        low = value.lower()
        return (low if low in _KINDS else "other"), value
    return "other", None if value is None else str(value)


# -- building records ----------------------------------------------------------------


def run_record(
    run_id: str, name: str, start_ns: int, metadata: Mapping[str, Any], continues: str | None = None
) -> dict[str, Any]:
    """A ``run`` record."""
    rec: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "t": "run",
        "run_id": run_id,
        "name": name,
        "start_ns": start_ns,
        "metadata": metadata,
    }
    if continues:
        rec["continues"] = continues
    return rec


def end_record(
    run_id: str,
    end_ns: int | None,
    outcome: str,
    failure_reason: str | None,
    recorder: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An ``end`` record; ``recorder`` is the recorder's account (lost records, redactions) when not empty."""
    rec: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "t": "end",
        "run_id": run_id,
        "end_ns": end_ns,
        "outcome": outcome,
        "failure_reason": failure_reason,
    }
    if recorder:
        rec[RECORDER_KEY] = dict(recorder)
    return rec


def open_record(
    run_id: str,
    step_id: str,
    name: str | None,
    kind: str,
    start_ns: int,
    parent_id: str | None = None,
    agent: str | None = None,
) -> dict[str, Any]:
    """An ``open`` record: a step started (written when a child finishes before it)."""
    rec: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "t": "open",
        "run_id": run_id,
        "step_id": step_id,
        "name": name,
        "kind": kind,
        "start_ns": start_ns,
    }
    if parent_id is not None:
        rec["parent_id"] = parent_id
    if agent is not None:
        rec["agent"] = agent
    return rec


def step_record(
    run_id: str,
    step_id: str,
    name: str | None,
    kind: str,
    start_ns: int,
    end_ns: int | None,
    status: str,
    *,
    parent_id: str | None = None,
    agent: str | None = None,
    input: Any = None,
    output: Any = None,
    error: Mapping[str, Any] | None = None,
    attempt: int | None = 1,
    retry_of: str | None = None,
    deps: list[dict[str, Any]] | None = None,
    attributes: Mapping[str, Any] | None = None,
    source_index: int | None = None,
) -> dict[str, Any]:
    """A ``step`` record (optional fields only when set)."""
    # The head is `plain_step_record`'s (the writer's fast path), so the two never drift; input and
    # output are added here, after ``agent``, to keep the fields in one order whichever builds them.
    rec = plain_step_record(run_id, step_id, name, kind, start_ns, end_ns, status, parent_id, None, None)
    if agent is not None:
        rec["agent"] = agent
    if input is not None:
        rec["input"] = input
    if output is not None:
        rec["output"] = output
    if error is not None:
        rec["error"] = error
    if attempt is not None and attempt != 1:
        rec["attempt"] = attempt
    if retry_of is not None:
        rec["retry_of"] = retry_of
    if deps:
        rec["deps"] = deps
    if attributes:
        rec["attributes"] = attributes
    if source_index is not None:
        rec["source_index"] = source_index
    return rec


def plain_step_record(
    run_id: str,
    step_id: str,
    name: str | None,
    kind: str,
    start_ns: int,
    end_ns: int | None,
    status: str,
    parent_id: str | None,
    input: Any,
    output: Any,
) -> dict[str, Any]:
    """A ``step`` record with none of the rarer fields (agent, error, attempt, retry, deps, attributes):
    the same record as `step_record`'s, built without keyword arguments (the recorder's writer builds one
    per step, and a call with ten keywords costs as much as the record itself)."""
    rec: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "t": "step",
        "run_id": run_id,
        "step_id": step_id,
        "name": name,
        "kind": kind,
        "start_ns": start_ns,
        "end_ns": end_ns,
        "status": status,
    }
    if parent_id is not None:
        rec["parent_id"] = parent_id
    if input is not None:
        rec["input"] = input
    if output is not None:
        rec["output"] = output
    return rec


def error_record(
    run_id: str,
    error_id: str,
    step_id: str,
    type: str,
    message: str,
    parent_error_id: str | None = None,
    attempt: int = 1,
    attributes: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An ``error`` record: one error, counted once."""
    return {
        "v": FORMAT_VERSION,
        "t": "error",
        "run_id": run_id,
        "error_id": error_id,
        "step_id": step_id,
        "type": type,
        "message": message,
        "parent_error_id": parent_error_id,
        "attempt": attempt,
        "attributes": dict(attributes or {}),
    }


def stage_record(
    run_id: str, error_id: str, stage: str, step_id: str | None, time_ns: int, reason: str | None = None
) -> dict[str, Any]:
    """A ``stage`` record: an error entered a lifecycle stage."""
    return {
        "v": FORMAT_VERSION,
        "t": "stage",
        "run_id": run_id,
        "error_id": error_id,
        "stage": stage,
        "step_id": step_id,
        "time_ns": time_ns,
        "reason": reason,
    }


def mark_record(run_id: str, outcome: str, reason: str | None, time_ns: int) -> dict[str, Any]:
    """A ``mark`` record: the run is to be read with this outcome (``failure`` with a reason, or ``success``)."""
    return {
        "v": FORMAT_VERSION,
        "t": "mark",
        "run_id": run_id,
        "outcome": outcome,
        "failure_reason": reason,
        "time_ns": time_ns,
    }


def answer_record(run_id: str, a: Answer) -> dict[str, Any]:
    """An ``answer`` record: a judgement of one step's output (right: what the run needed there) (``correct`` is
    true, false or null for don't know), who gave it (``by``), when, and why."""
    return {
        "v": FORMAT_VERSION,
        "t": "answer",
        "run_id": run_id,
        "step_id": a.step_id,
        "correct": a.correct,
        "by": a.by,
        "at_ns": a.at_ns,
        "reason": a.reason,
        "step_run_id": a.run_id,
        **({"withdrawn": True} if a.withdrawn else {}),
    }


def answer_to_dict(a: Answer) -> dict[str, Any]:
    """An answer as JSON data for reports (the record's fields, without the record's framing)."""
    out = {"step_id": a.step_id, "correct": a.correct, "by": a.by, "at_ns": a.at_ns, "reason": a.reason}
    if a.run_id is not None:
        out["step_run_id"] = a.run_id
    return out


def meta_record(run_id: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A ``meta`` record: metadata known only during the run (readers merge it in)."""
    return {"v": FORMAT_VERSION, "t": "meta", "run_id": run_id, "metadata": dict(metadata)}


# -- model -> records -----------------------------------------------------------------


def dep_to_dict(d: Dependency) -> dict[str, Any]:
    """Encode a dependency compactly (defaults omitted)."""
    out: dict[str, Any] = {"step_id": d.step_id, "kind": d.kind, "origin": d.origin}
    if d.confidence != 1.0:
        out["confidence"] = round(d.confidence, 4)
    if d.key is not None:
        out["key"] = d.key
    if d.run_id is not None:
        out["run_id"] = d.run_id
    return out


def error_info_to_dict(e: ErrorInfo) -> dict[str, Any]:
    """Encode a step's error info."""
    out: dict[str, Any] = {"type": e.type, "message": e.message}
    if e.error_id is not None:
        out["error_id"] = e.error_id
    if e.traceback is not None:
        out["traceback"] = e.traceback
    return out


def _stored_kind(s: Step) -> str:
    """The kind to write for a step: the recorded one when the model kind stands in for it."""
    recorded = s.attributes.get(KIND_ATTRIBUTE) if s.attributes else None
    return recorded if isinstance(recorded, str) and read_kind(recorded)[0] == s.kind else s.kind


def step_to_record(run_id: str, s: Step) -> dict[str, Any]:
    """Encode a step as a ``step`` record (its recorded kind restored)."""
    attrs = dict(s.attributes) if s.attributes else None
    kind = _stored_kind(s)
    if attrs is not None and kind != s.kind:
        attrs.pop(KIND_ATTRIBUTE, None)
    return step_record(
        run_id,
        s.step_id,
        s.name,
        kind,
        s.start_ns,
        s.end_ns,
        s.status,
        parent_id=s.parent_id,
        agent=s.agent,
        input=s.input,
        output=s.output,
        error=error_info_to_dict(s.error) if s.error is not None else None,
        attempt=s.attempt,
        retry_of=s.retry_of,
        deps=[dep_to_dict(d) for d in s.deps],
        attributes=attrs,
        source_index=s.source_index,
    )


def _plain_records(run: Run) -> tuple[list[dict[str, Any]], dict[str, Any], bool]:
    """A run's records before redaction, the recorder's account kept apart, and whether it ended."""
    metadata = dict(run.metadata)
    account = metadata.pop(RECORDER_KEY, None)
    account = dict(account) if isinstance(account, Mapping) else {}
    recs: list[dict[str, Any]] = [run_record(run.run_id, run.name, run.start_ns, metadata, run.continues)]
    recs.extend(step_to_record(run.run_id, s) for s in run.steps)
    for e in run.errors:
        recs.append(
            error_record(
                run.run_id, e.error_id, e.step_id, e.type, e.message, e.parent_error_id, e.attempt, e.attributes
            )
        )
        recs.extend(stage_record(run.run_id, e.error_id, c.stage, c.step_id, c.time_ns, c.reason) for c in e.stages)
    recs.extend(answer_record(run.run_id, a) for a in run.answers)
    # The end record is redacted with the others (its failure reason may quote a secret); the
    # account is added after, so its counts are never taken for secrets.
    ended = run.outcome != "incomplete"
    if ended:
        recs.append(end_record(run.run_id, run.end_ns, run.outcome, run.failure_reason))
    return recs, account, ended


def _redactor_for(redact: bool | None) -> Any:
    """The redactor ``redact`` asks for (None: the process policy's), or None for none."""
    if redact is not None and not redact:
        return None
    from trajdebug.core import redaction

    if redact is None:
        return redaction.redactor()
    return redaction.Redactor(redaction.POLICY.extra_keys, redaction.POLICY.pii)


def _account_records(
    recs: list[dict[str, Any]], run_id: str, account: dict[str, Any], ended: bool, counts: Mapping[str, int]
) -> bool:
    """Add what the redactor scrubbed to the account and the account to the records (on the end record, or
    as a ``meta`` record); whether the last record was changed or added."""
    if counts:
        merged = dict(account.get("redacted") or {}) if isinstance(account.get("redacted"), Mapping) else {}
        for rule, n in counts.items():
            merged[rule] = int(merged.get(rule, 0)) + n
        account["redacted"] = merged
    if ended and account:
        recs[-1] = {**recs[-1], RECORDER_KEY: dict(account)}
    elif account:
        recs.append(meta_record(run_id, {RECORDER_KEY: account}))
    return bool(account)


def run_to_records(run: Run, *, redact: bool | None = None) -> list[dict[str, Any]]:
    """Encode a whole run as the records a recorder would have written, ready to be written.

    Args:
        run: The run.
        redact: Redact secrets (`trajdebug.core.redaction`); None follows the process
            policy.  Every write path that starts from a model run (the store's
            ``save_run``, the JSONL writer, ``import``, integrations) goes through
            here, so secrets are scrubbed on all of them; what was scrubbed is
            counted in the ``end`` record (``recorder.redacted``), never the value.
    """
    recs, account, ended = _plain_records(run)
    redactor = _redactor_for(redact)
    counts: Mapping[str, int] = {}
    if redactor is not None:
        recs = [redactor(r) for r in recs]
        counts = redactor.counts
    _account_records(recs, run.run_id, account, ended, counts)
    return recs


def run_to_lines(run: Run, *, redact: bool | None = None) -> tuple[list[dict[str, Any]], list[bytes]]:
    """`run_to_records` and each record's JSON line (newline included): the same records and the same
    bytes as `trajdebug.core.codec.dumps_line` of each, made faster.

    Redaction walks and copies every value in Python, though nearly every record of an import has nothing
    to redact.  So each record is encoded first, and when the redactor finds every string of that text
    clean (`Redactor.clean_lines`, exact) the record and its line are kept as they are; only the others
    are redacted (`Redactor.__call__`, which counts what it scrubbed) and encoded again.  A record orjson
    cannot encode as plain JSON (a key that is not a string, a value of another type) takes the old way.
    """
    from trajdebug.core.codec import dumps_line, plain_line

    recs, account, ended = _plain_records(run)
    redactor = _redactor_for(redact)
    lines: list[bytes | None] = [plain_line(r) for r in recs]
    if redactor is not None:
        encoded = [line for line in lines if line is not None]
        clean = iter(redactor.clean_lines(encoded) if encoded else ())
        for i, line in enumerate(lines):
            if line is None or not next(clean):
                recs[i], lines[i] = redactor(recs[i]), None
    if _account_records(recs, run.run_id, account, ended, redactor.counts if redactor is not None else {}):
        lines[len(recs) - 1 :] = [None]
    return recs, [line if line is not None else dumps_line(rec) for rec, line in zip(recs, lines)]


def redact_run(run: Run, redactor: Any = None) -> Run:
    """A copy of a run with its secrets redacted (names, values, messages, metadata), for writers
    that start from the model rather than records (the OTLP exporter).

    Args:
        run: The run.
        redactor: A `trajdebug.core.redaction.Redactor`; None: the process policy's (nothing is
            changed when redaction is off).
    """
    import dataclasses

    if redactor is None:
        from trajdebug.core import redaction

        redactor = redaction.redactor()
        if redactor is None:
            return run
    red = redactor
    steps = tuple(
        dataclasses.replace(
            s,
            name=red.text(s.name),
            agent=None if s.agent is None else red.text(s.agent),
            input=red(s.input),
            output=red(s.output),
            error=None
            if s.error is None
            else dataclasses.replace(
                s.error,
                type=red.text(s.error.type),
                message=red.text(s.error.message),
                traceback=None if s.error.traceback is None else red.text(s.error.traceback),
            ),
            attributes=red(dict(s.attributes)),
        )
        for s in run.steps
    )
    errors = tuple(
        dataclasses.replace(
            e,
            type=red.text(e.type),
            message=red.text(e.message),
            attributes=red(dict(e.attributes)),
            stages=tuple(
                dataclasses.replace(c, reason=None if c.reason is None else red.text(c.reason)) for c in e.stages
            ),
        )
        for e in run.errors
    )
    return dataclasses.replace(
        run,
        name=red.text(run.name),
        failure_reason=None if run.failure_reason is None else red.text(run.failure_reason),
        metadata=red(dict(run.metadata)),
        steps=steps,
        errors=errors,
    )


def step_to_dict(s: Step) -> dict[str, Any]:
    """A step as JSON data for reports (every field, defaults included, with its duration)."""
    return {
        "step_id": s.step_id,
        "name": s.name,
        "kind": s.kind,
        "parent_id": s.parent_id,
        "agent": s.agent,
        "status": s.status,
        "start_ns": s.start_ns,
        "end_ns": s.end_ns,
        "duration_ns": s.duration_ns,
        "attempt": s.attempt,
        "retry_of": s.retry_of,
        "source_index": s.source_index,
        "input": s.input,
        "output": s.output,
        "error": error_info_to_dict(s.error) if s.error else None,
        "deps": [dep_to_dict(d) for d in s.deps],
        "attributes": dict(s.attributes),
    }


def error_to_dict(e: ErrorEvent) -> dict[str, Any]:
    """An error event as JSON data for reports (with its current stage)."""
    return {
        "error_id": e.error_id,
        "step_id": e.step_id,
        "type": e.type,
        "message": e.message,
        "parent_error_id": e.parent_error_id,
        "attempt": e.attempt,
        "stage": e.stage,
        "stages": [
            {"stage": c.stage, "step_id": c.step_id, "time_ns": c.time_ns, "reason": c.reason} for c in e.stages
        ],
        "attributes": dict(e.attributes),
    }


def lost_records(run: Run) -> int:
    """How many records the recorder lost for this run (dropped under load, finished after the end, unwritable)."""
    account = run.metadata.get(RECORDER_KEY) if isinstance(run.metadata, Mapping) else None
    return lost_in(account)


def lost_in(account: Any) -> int:
    """The number of lost records in a recorder account (the ``recorder`` field of an ``end`` record)."""
    if not isinstance(account, Mapping):
        return 0
    lost = account.get("lost")
    if not isinstance(lost, Mapping):
        return 0
    return sum(v for v in lost.values() if isinstance(v, int) and not isinstance(v, bool) and v > 0)


def run_to_dict(run: Run, *, steps: bool = True) -> dict[str, Any]:
    """A run as JSON data for reports (``lost``: records the recorder lost; a lossy run is never plain success)."""
    out: dict[str, Any] = {
        "run_id": run.run_id,
        "name": run.name,
        "outcome": run.outcome,
        "failure_reason": run.failure_reason,
        "start_ns": run.start_ns,
        "end_ns": run.end_ns,
        "continues": run.continues,
        "metadata": dict(run.metadata),
        "step_count": len(run.steps),
        "error_count": len(run.errors),
        "lost": lost_records(run),
    }
    if run.answers:
        out["answers"] = [answer_to_dict(a) for a in run.answers]
    if steps:
        out["steps"] = [step_to_dict(s) for s in run.steps]
        out["errors"] = [error_to_dict(e) for e in run.errors]
    return out


# -- records -> model (tolerant) --------------------------------------------------------


class Problems(list[str]):
    """Field problems found while decoding one record (each a short message naming the field)."""


def version_of(v: Any) -> int | None:
    """The format version of a record's ``v`` field: an integer, or an integer written as a string or float."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().isdigit():
        return int(v.strip())
    return None


def int_field(r: Mapping[str, Any], key: str, default: int | None, problems: Problems) -> int | None:
    """An integer field; integral floats and digit strings are accepted, anything else is a problem."""
    v = r.get(key, default)
    if v is None or type(v) is int:
        return v
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v.strip())
    problems.append(f"field {key!r} must be an integer, got {_short(v)}; read as {default!r}")
    return default


def str_field(r: Mapping[str, Any], key: str, problems: Problems) -> str | None:
    """An optional string field; numbers are turned into strings, anything else is a problem."""
    v = r.get(key)
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    problems.append(f"field {key!r} must be a string, got {_short(v)}; ignored")
    return None


def text_field(r: Mapping[str, Any], key: str, default: str = "") -> str:
    """A text field that is never missing (names, messages): whatever is there, as text."""
    v = r.get(key, default)
    if v is None:
        return default
    return v if isinstance(v, str) else str(v)


def mapping_field(r: Mapping[str, Any], key: str, problems: Problems) -> dict[str, Any]:
    """An object field (metadata, attributes)."""
    v = r.get(key)
    if v is None:
        return {}
    if isinstance(v, Mapping):
        return dict(v)
    problems.append(f"field {key!r} must be an object, got {_short(v)}; ignored")
    return {}


def choice_field(
    r: Mapping[str, Any], key: str, allowed: tuple[str, ...], default: str, problems: Problems
) -> Any:
    """A field with a fixed set of values; anything else is a problem and reads as ``default``."""
    v = r.get(key, default)
    if v in allowed:
        return v
    problems.append(f"field {key!r} must be one of {', '.join(allowed)}, got {_short(v)}; read as {default!r}")
    return default


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def dep_from_dict(d: Any, where: str = "dependency") -> Dependency:
    """Decode one dependency.

    Raises:
        ValueError: it is not an object or lacks a string ``step_id`` (the message names it).
    """
    problems = Problems()
    dep = decode_dep(d, where, problems)
    if dep is None or problems:
        raise ValueError(problems[0] if problems else f"{where} is not a dependency")
    return dep


def decode_dep(d: Any, where: str, problems: Problems) -> Dependency | None:
    """Decode one dependency; None (with a problem) when it cannot name a step."""
    if not isinstance(d, Mapping):
        problems.append(f"{where} must be an object, got {_short(d)}; dropped")
        return None
    sid = d.get("step_id")
    if not isinstance(sid, str) or not sid:
        problems.append(f"{where} lacks a string 'step_id'; dropped")
        return None
    conf = d.get("confidence", 1.0)
    if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0.0 <= conf <= 1.0:
        problems.append(f"{where}.confidence must be a number in [0, 1], got {_short(conf)}; read as 1.0")
        conf = 1.0
    return Dependency(
        step_id=sid,
        kind=choice_field(d, "kind", DEP_KINDS, "data", problems),
        origin=choice_field(d, "origin", DEP_ORIGINS, "declared", problems),
        confidence=float(conf),
        key=str_field(d, "key", problems),
        run_id=str_field(d, "run_id", problems),
    )


def decode_deps(r: Mapping[str, Any], problems: Problems, key: str = "deps") -> list[Dependency]:
    """A record's dependency list; bad entries are dropped, each with a problem."""
    v = r.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        problems.append(f"field {key!r} must be a list, got {_short(v)}; ignored")
        return []
    out = []
    for i, d in enumerate(v):
        dep = decode_dep(d, f"{key}[{i}]", problems)
        if dep is not None:
            out.append(dep)
    return out


def decode_error_info(r: Mapping[str, Any], problems: Problems) -> ErrorInfo | None:
    """A step's ``error`` field."""
    err = r.get("error")
    if not err:
        return None
    if isinstance(err, str):
        return ErrorInfo(type="Error", message=err)
    if not isinstance(err, Mapping):
        problems.append(f"field 'error' must be an object, got {_short(err)}; read as a message")
        return ErrorInfo(type="Error", message=str(err))
    return ErrorInfo(
        type=text_field(err, "type", "Error"),
        message=text_field(err, "message"),
        error_id=str_field(err, "error_id", problems),
        traceback=str_field(err, "traceback", problems),
    )


def decode_step(sid: str, r: Mapping[str, Any], problems: Problems, *, unfinished: bool = False) -> Step:
    """A step from a ``step`` (or, unfinished, an ``open``) record; bad fields read as their defaults."""
    attributes = {} if unfinished else mapping_field(r, "attributes", problems)
    kind, recorded = read_kind(r.get("kind", "other"))
    if recorded is not None:
        attributes[KIND_ATTRIBUTE] = recorded
    if unfinished:
        attributes["unfinished"] = True
    error = None if unfinished else decode_error_info(r, problems)
    status: Any = "ok"
    if not unfinished:
        raw = r.get("status", "ok")
        if raw in ("ok", "error"):
            status = raw
        else:
            status = "error" if error is not None else "ok"
            attributes[STATUS_ATTRIBUTE] = raw if isinstance(raw, str) else _short(raw)
    start = int_field(r, "start_ns", 0, problems)
    return Step(
        step_id=sid,
        name=text_field(r, "name"),
        kind=kind,
        parent_id=str_field(r, "parent_id", problems),
        agent=str_field(r, "agent", problems),
        input=None if unfinished else r.get("input"),
        output=None if unfinished else r.get("output"),
        status=status,
        error=error,
        start_ns=0 if start is None else start,
        end_ns=None if unfinished else int_field(r, "end_ns", None, problems),
        attempt=int_field(r, "attempt", 1, problems) or 1,
        retry_of=str_field(r, "retry_of", problems),
        deps=tuple(dedupe(decode_deps(r, problems))),
        attributes=attributes,
        source_index=int_field(r, "source_index", None, problems),
    )


def decode_error(eid: str, r: Mapping[str, Any], problems: Problems) -> ErrorEvent:
    """An error event from an ``error`` record (its stages are added by the reader)."""
    return ErrorEvent(
        error_id=eid,
        step_id=text_field(r, "step_id"),
        type=text_field(r, "type", "Error"),
        message=text_field(r, "message"),
        parent_error_id=str_field(r, "parent_error_id", problems),
        attempt=int_field(r, "attempt", 1, problems) or 1,
        attributes=mapping_field(r, "attributes", problems),
    )


def decode_stage(r: Mapping[str, Any], problems: Problems) -> StageChange:
    """A lifecycle stage from a ``stage`` record."""
    return StageChange(
        stage=choice_field(r, "stage", STAGES, "occurred", problems),
        step_id=str_field(r, "step_id", problems),
        time_ns=int_field(r, "time_ns", 0, problems) or 0,
        reason=str_field(r, "reason", problems),
    )


def decode_answer(r: Mapping[str, Any], problems: Problems) -> Answer | None:
    """An ``answer`` record as an `Answer`, or None when it names no step or no answerer.

    ``correct`` is true, false or null; the strings ``yes``/``no``/``true``/``false`` (any case)
    are read as the booleans, anything else as don't know, with a problem.
    """
    sid = r.get("step_id")
    if not isinstance(sid, (str, int)) or isinstance(sid, bool) or sid == "":
        problems.append("lacks field 'step_id'; ignored")
        return None
    by = r.get("by")
    if not isinstance(by, str) or not by.strip():
        problems.append(f"field 'by' must name who answered, got {_short(by)}; ignored")
        return None
    raw = r.get("correct")
    correct: bool | None
    if raw is None or isinstance(raw, bool):
        correct = raw
    elif isinstance(raw, str) and raw.strip().lower() in _ANSWER_WORDS:
        correct = _ANSWER_WORDS[raw.strip().lower()]
    else:
        problems.append(f"field 'correct' must be true, false or null, got {_short(raw)}; read as null")
        correct = None
    return Answer(
        step_id=str(sid),
        correct=correct,
        by=by.strip(),
        at_ns=int_field(r, "at_ns", 0, problems) or 0,
        reason=str_field(r, "reason", problems),
        run_id=str_field(r, "step_run_id", problems),
        withdrawn=r.get("withdrawn") is True,
    )


_ANSWER_WORDS: dict[str, bool | None] = {"true": True, "yes": True, "false": False, "no": False}


def latest_answers(answers: Iterable[Answer]) -> tuple[Answer, ...]:
    """One answer per (step, answerer): the one given last wins (a later record, or on a tie of
    order the later ``at_ns``), oldest first; an answer the latest record withdrew is left out."""
    best: dict[tuple[str, str | None, str], tuple[int, Answer]] = {}
    for i, a in enumerate(answers):
        key = (a.step_id, a.run_id, a.by)
        cur = best.get(key)
        if cur is None or not (a.at_ns and cur[1].at_ns) or a.at_ns >= cur[1].at_ns:
            best[key] = (i, a)
    kept = (p for p in best.values() if not p[1].withdrawn)
    return tuple(a for _, a in sorted(kept, key=lambda p: (p[1].at_ns, p[0])))


def decode_outcome(r: Mapping[str, Any], problems: Problems) -> str:
    """A run's outcome from an ``end`` record."""
    return str(choice_field(r, "outcome", OUTCOMES, "incomplete", problems))


def dedupe(deps: Iterable[Dependency]) -> list[Dependency]:
    """Keep one edge per (step, kind, run), preferring the most certain origin."""
    rank = {"tracked": 0, "declared": 1, "inferred": 2}
    best: dict[tuple[str, str, str | None], Dependency] = {}
    for d in deps:
        k = (d.step_id, d.kind, d.run_id)
        cur = best.get(k)
        if cur is None or (rank[d.origin], -d.confidence) < (rank[cur.origin], -cur.confidence):
            best[k] = d
    return list(best.values())


__all__ = [
    "FORMAT_VERSION",
    "KIND_ATTRIBUTE",
    "MARK_KEY",
    "RECORDER_KEY",
    "RECORD_TYPES",
    "STATUS_ATTRIBUTE",
    "SUPPORTED_VERSIONS",
    "answer_record",
    "answer_to_dict",
    "decode_answer",
    "latest_answers",
    "KindWarning",
    "Problems",
    "check_kind",
    "close_kinds",
    "decode_dep",
    "decode_deps",
    "decode_error",
    "decode_error_info",
    "decode_outcome",
    "decode_stage",
    "decode_step",
    "dedupe",
    "dep_from_dict",
    "dep_to_dict",
    "end_record",
    "error_info_to_dict",
    "error_record",
    "error_to_dict",
    "int_field",
    "lost_in",
    "lost_records",
    "mark_record",
    "mapping_field",
    "meta_record",
    "open_record",
    "plain_step_record",
    "read_kind",
    "redact_run",
    "run_record",
    "run_to_dict",
    "run_to_records",
    "stage_record",
    "step_record",
    "step_to_dict",
    "step_to_record",
    "str_field",
    "text_field",
    "version_of",
]
