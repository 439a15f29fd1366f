"""A whole run as records or encoded lines (redacted on the way), and the full forms of a run and a step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trajdebug.core.model import (
    REDACTED,
    ErrorEvent,
    Run,
    Step,
)
from trajdebug.core.schema._records import (
    RECORDER_KEY,
    answer_record,
    answer_to_dict,
    dep_to_dict,
    end_record,
    error_info_to_dict,
    error_record,
    meta_record,
    run_record,
    stage_record,
    step_to_record,
)
from trajdebug.core.schema._scores import score_record, score_to_dict


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
    recs.extend(score_record(run.run_id, s) for s in run.scores)
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


ID_FIELDS = frozenset(
    {"v", "t", "run_id", "step_id", "error_id", "parent_id", "parent_error_id", "retry_of", "stage", "kind",
     "status", "outcome", "continues", "start_ns", "end_ns", "time_ns", "attempt", "source_index", "at_ns",
     "step_run_id", "correct", "withdrawn", "admissible", "origin", "confidence"}
)
"""A record's structural fields: ids, times, enumerations.  A number there is kept; an id of plain digits too,
since a 16-digit step id that passes the Luhn check reads as a card number to the redactor (a redacted id
merged every such step into one, or cut a step from its error).  Any other text there is redacted as
content: an imported run id or a recorded kind is whatever the source wrote, a secret included."""


def _kept(k: str, v: Any) -> bool:
    return k in ID_FIELDS and (v is None or type(v) in (int, float, bool) or (type(v) is str and v.isdigit()))


def redact_record(redactor: Any, rec: Mapping[str, Any]) -> dict[str, Any]:
    """A record with its content redacted (`Redactor.__call__`), its numbers and plain-digit ids under
    `ID_FIELDS` (and those inside its dependencies and error) as they are."""
    out: dict[str, Any] = {}
    for k, v in rec.items():
        if _kept(k, v):
            out[k] = v
        elif k == "deps" and isinstance(v, list):
            out[k] = [redact_record(redactor, d) if isinstance(d, Mapping) else redactor(d, 1) for d in v]
        elif k == "error" and isinstance(v, Mapping):
            out[k] = redact_record(redactor, v)
        elif redactor.secret_key(k) and v is not None and not isinstance(v, bool):
            redactor.counts["key_name"] += 1
            out[k] = REDACTED
        else:
            out[k] = redactor(v, 1)
    return out


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
        recs = [redact_record(redactor, r) for r in recs]
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
                recs[i], lines[i] = redact_record(redactor, recs[i]), None
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
    if run.scores:
        out["scores"] = [score_to_dict(s) for s in run.scores]
    if steps:
        out["steps"] = [step_to_dict(s) for s in run.steps]
        out["errors"] = [error_to_dict(e) for e in run.errors]
    return out


# -- records -> model (tolerant) --------------------------------------------------------


