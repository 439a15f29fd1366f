"""The record types' constants and builders: one function per record type, each a plain dict (see the package's docstring)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from trajdebug.core.model import (
    ASKED_GROUP,
    STEP_KINDS,
    Answer,
    Dependency,
    ErrorInfo,
    Step,
)


FORMAT_VERSION = 1
"""The version written into every record."""

SUPPORTED_VERSIONS = frozenset({1})
"""Versions this trajdebug reads."""

RECORD_TYPES: tuple[str, ...] = ("run", "step", "open", "error", "stage", "dep", "meta", "end", "mark", "answer", "score")
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
    true, false or null for don't know), who gave it (``by``), when, and why; of a wrong answer, ``admissible``
    when said (true: wrong for the inputs it was given; false: it was given a wrong input); ``asked``, what the
    guided search asked it as, when it did (`Answer.asked`)."""
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
        # Written only when said, so a two-valued answer's record is what it always was.
        **({"admissible": a.admissible} if a.admissible is not None and a.correct is False else {}),
        # A withdrawal names what it withdraws: a group's question keeps its ``asked`` (`latest_answers` keeps
        # it apart from the answer about its step).
        **({"asked": a.asked} if a.asked is not None and (not a.withdrawn or a.asked == ASKED_GROUP) else {}),
    }


def answer_to_dict(a: Answer) -> dict[str, Any]:
    """An answer as JSON data for reports (the record's fields, without the record's framing)."""
    out = {"step_id": a.step_id, "correct": a.correct, "by": a.by, "at_ns": a.at_ns, "reason": a.reason}
    if a.run_id is not None:
        out["step_run_id"] = a.run_id
    if a.admissible is not None and a.correct is False:
        out["admissible"] = a.admissible
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


