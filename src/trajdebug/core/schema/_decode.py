"""Reading records back: tolerant field by field, each problem a one-line message naming the field."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.core.model import (
    ASKED_GROUP,
    DEP_KINDS,
    DEP_ORIGINS,
    OUTCOMES,
    STAGES,
    Answer,
    Dependency,
    ErrorEvent,
    ErrorInfo,
    StageChange,
    Step,
)
from trajdebug.core.schema._records import (
    KIND_ATTRIBUTE,
    STATUS_ATTRIBUTE,
    read_kind,
)


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
    are read as the booleans, anything else as don't know, with a problem.  ``admissible`` (Naish's
    three-valued answers) is kept only on a wrong answer; ``asked`` as written.
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
        admissible=_admissible(r, correct, problems),
        asked=_asked(r, problems),
    )


def _asked(r: Mapping[str, Any], problems: Problems) -> str | None:
    """What the guided search asked an answer as (`Answer.asked`): a string, or absent/null for not said."""
    raw = r.get("asked")
    if raw is None or (isinstance(raw, str) and raw):
        return raw
    problems.append(f"field 'asked' must be a string or null, got {_short(raw)}; read as null")
    return None


def _admissible(r: Mapping[str, Any], correct: bool | None, problems: Problems) -> bool | None:
    """A wrong answer's ``admissible`` (true, false, or absent/null for not said); dropped from any other."""
    raw = r.get("admissible")
    if raw is None:
        return None
    if not isinstance(raw, bool):
        problems.append(f"field 'admissible' must be true, false or null, got {_short(raw)}; read as null")
        return None
    return raw if correct is False else None


_ANSWER_WORDS: dict[str, bool | None] = {"true": True, "yes": True, "false": False, "no": False}


def latest_answers(answers: Iterable[Answer]) -> tuple[Answer, ...]:
    """One answer per (step, answerer): the one given last wins (a later record, or on a tie of
    order the later ``at_ns``), oldest first; an answer the latest record withdrew is left out.

    The record of a group's question (`trajdebug.core.model.ASKED_GROUP`) judges no step: it is kept apart
    from the answers about the step that led the group (the person's answer about it, asked next, replaces
    no record of the question before it)."""
    best: dict[tuple[str, str | None, str, bool], tuple[int, Answer]] = {}
    for i, a in enumerate(answers):
        key = (a.step_id, a.run_id, a.by, a.asked == ASKED_GROUP)
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


