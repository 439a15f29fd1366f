"""The trajdebug record format: versioned JSON records, one per line.

A run is a stream of records, each a JSON object with ``"v"`` (the format
version) and ``"t"`` (the record type):

``run``    the run started (id, name, start time, metadata, the run it continues)
``step``   a step finished (all of its fields; written when it ends)
``open``   a step started (id, name, kind, parent, start): lets a crashed run show what was in flight
``error``  an error occurred (id, step, type, message, cause)
``stage``  an error changed lifecycle stage
``dep``    a dependency found after its step was written
``end``    the run ended (outcome, reason)
``mark``   a person's verdict after the fact (outcome, reason): overrides the recorded outcome

Records are append-only and self-contained, so a file can be read while it is
being written, a crashed writer leaves a readable prefix (the run reads as
``incomplete``), and several runs may interleave in one file.  The same records
are what the SQLite store keeps.  See ``docs/format.md``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from trajdebug.model import (
    DEP_KINDS,
    DEP_ORIGINS,
    STAGES,
    STEP_KINDS,
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


class FormatError(ValueError):
    """A record that cannot be read.  The message names the source and the line."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None) -> None:
        where = ""
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        super().__init__(where + message)
        self.source = source
        self.line = line
        self.reason = message


class UnsupportedVersionError(FormatError):
    """A record written by a format version this trajdebug does not know."""


# -- model -> records ------------------------------------------------------


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


def dep_from_dict(d: Mapping[str, Any]) -> Dependency:
    """Decode a dependency, checking its fields.

    Raises:
        ValueError: a field has the wrong type or value (the message names it).
    """
    return _dep(d, "dependency")


def step_to_record(run_id: str, s: Step) -> dict[str, Any]:
    """Encode a step as a ``step`` record."""
    rec: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "t": "step",
        "run_id": run_id,
        "step_id": s.step_id,
        "name": s.name,
        "kind": s.kind,
        "start_ns": s.start_ns,
        "end_ns": s.end_ns,
        "status": s.status,
    }
    if s.parent_id is not None:
        rec["parent_id"] = s.parent_id
    if s.agent is not None:
        rec["agent"] = s.agent
    if s.input is not None:
        rec["input"] = s.input
    if s.output is not None:
        rec["output"] = s.output
    if s.error is not None:
        rec["error"] = error_info_to_dict(s.error)
    if s.attempt != 1:
        rec["attempt"] = s.attempt
    if s.retry_of is not None:
        rec["retry_of"] = s.retry_of
    if s.deps:
        rec["deps"] = [dep_to_dict(d) for d in s.deps]
    if s.attributes:
        rec["attributes"] = dict(s.attributes)
    if s.source_index is not None:
        rec["source_index"] = s.source_index
    return rec


def error_info_to_dict(e: ErrorInfo) -> dict[str, Any]:
    """Encode a step's error info."""
    out: dict[str, Any] = {"type": e.type, "message": e.message}
    if e.error_id is not None:
        out["error_id"] = e.error_id
    if e.traceback is not None:
        out["traceback"] = e.traceback
    return out


def run_to_records(run: Run) -> list[dict[str, Any]]:
    """Encode a whole run as the records a recorder would have written."""
    recs: list[dict[str, Any]] = [
        {
            "v": FORMAT_VERSION,
            "t": "run",
            "run_id": run.run_id,
            "name": run.name,
            "start_ns": run.start_ns,
            "metadata": dict(run.metadata),
            **({"continues": run.continues} if run.continues else {}),
        }
    ]
    recs.extend(step_to_record(run.run_id, s) for s in run.steps)
    for e in run.errors:
        recs.append(
            {
                "v": FORMAT_VERSION,
                "t": "error",
                "run_id": run.run_id,
                "error_id": e.error_id,
                "step_id": e.step_id,
                "type": e.type,
                "message": e.message,
                "parent_error_id": e.parent_error_id,
                "attempt": e.attempt,
                "attributes": dict(e.attributes),
            }
        )
        recs.extend(
            {
                "v": FORMAT_VERSION,
                "t": "stage",
                "run_id": run.run_id,
                "error_id": e.error_id,
                "stage": c.stage,
                "step_id": c.step_id,
                "time_ns": c.time_ns,
                "reason": c.reason,
            }
            for c in e.stages
        )
    if run.outcome != "incomplete":
        recs.append(
            {
                "v": FORMAT_VERSION,
                "t": "end",
                "run_id": run.run_id,
                "end_ns": run.end_ns,
                "outcome": run.outcome,
                "failure_reason": run.failure_reason,
            }
        )
    return recs


# -- records -> model ------------------------------------------------------


class _FieldError(ValueError):
    """A field of a record has the wrong type or value (the message names the field)."""


def _int(r: Mapping[str, Any], key: str, default: int | None = None) -> int | None:
    v = r.get(key, default)
    if v is None or (type(v) is int):
        return v
    raise _FieldError(f"field {key!r} must be an integer, got {v!r}")


def _req_int(r: Mapping[str, Any], key: str, default: int) -> int:
    v = _int(r, key, default)
    return default if v is None else v


def _opt_str(r: Mapping[str, Any], key: str) -> str | None:
    v = r.get(key)
    if v is None or isinstance(v, str):
        return v
    raise _FieldError(f"field {key!r} must be a string, got {v!r}")


def _mapping(r: Mapping[str, Any], key: str) -> dict[str, Any]:
    v = r.get(key)
    if v is None:
        return {}
    if isinstance(v, Mapping):
        return dict(v)
    raise _FieldError(f"field {key!r} must be an object, got {v!r}")


def _choice(r: Mapping[str, Any], key: str, allowed: tuple[str, ...], default: str) -> Any:
    v = r.get(key, default)
    if v in allowed:
        return v
    raise _FieldError(f"field {key!r} must be one of {', '.join(allowed)}, got {v!r}")


def _deps(r: Mapping[str, Any], key: str = "deps") -> list[Dependency]:
    v = r.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise _FieldError(f"field {key!r} must be a list, got {v!r}")
    return [_dep(d, f"{key}[{i}]") for i, d in enumerate(v)]


def _dep(d: Any, where: str) -> Dependency:
    if not isinstance(d, Mapping):
        raise _FieldError(f"{where} must be an object, got {d!r}")
    sid = d.get("step_id")
    if not isinstance(sid, str) or not sid:
        raise _FieldError(f"{where} lacks a string 'step_id'")
    conf = d.get("confidence", 1.0)
    if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0.0 <= conf <= 1.0:
        raise _FieldError(f"{where}.confidence must be a number in [0, 1], got {conf!r}")
    return Dependency(
        step_id=sid,
        kind=_choice(d, "kind", DEP_KINDS, "data"),
        origin=_choice(d, "origin", DEP_ORIGINS, "declared"),
        confidence=float(conf),
        key=_opt_str(d, "key"),
        run_id=_opt_str(d, "run_id"),
    )


def _error_info(r: Mapping[str, Any]) -> ErrorInfo | None:
    err = r.get("error")
    if not err:
        return None
    if not isinstance(err, Mapping):
        raise _FieldError(f"field 'error' must be an object, got {err!r}")
    return ErrorInfo(
        type=str(err.get("type", "Error")),
        message=str(err.get("message", "")),
        error_id=_opt_str(err, "error_id"),
        traceback=_opt_str(err, "traceback"),
    )


def _step(sid: str, r: Mapping[str, Any], *, unfinished: bool = False) -> Step:
    """A step from a ``step`` (or, unfinished, an ``open``) record, every field checked."""
    end_ns = None if unfinished else _int(r, "end_ns")
    return Step(
        step_id=sid,
        name=str(r.get("name", "")),
        kind=_choice(r, "kind", STEP_KINDS, "other"),
        parent_id=_opt_str(r, "parent_id"),
        agent=_opt_str(r, "agent"),
        input=None if unfinished else r.get("input"),
        output=None if unfinished else r.get("output"),
        status="ok" if unfinished else _choice(r, "status", ("ok", "error"), "ok"),
        error=None if unfinished else _error_info(r),
        start_ns=_req_int(r, "start_ns", 0),
        end_ns=end_ns,
        attempt=_req_int(r, "attempt", 1),
        retry_of=_opt_str(r, "retry_of"),
        deps=tuple(_dedupe(_deps(r))),
        attributes={"unfinished": True} if unfinished else _mapping(r, "attributes"),
        source_index=_int(r, "source_index"),
    )


@dataclass
class _RunParts:
    run_id: str
    name: str = ""
    start_ns: int | None = None
    end_ns: int | None = None
    outcome: str = "incomplete"
    failure_reason: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    continues: str | None = None
    steps: dict[str, Step] = field(default_factory=dict)
    opened: dict[str, Step] = field(default_factory=dict)
    late_deps: dict[str, list[Dependency]] = field(default_factory=dict)
    errors: dict[str, ErrorEvent] = field(default_factory=dict)
    stages: dict[str, list[StageChange]] = field(default_factory=dict)
    mark: dict[str, Any] | None = None


MARK_KEY = "marked"
"""Metadata key of a run marked after the fact: the verdict, and the outcome the run had recorded."""


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


class RunBuilder:
    """Assemble runs from records in any order they were appended.

    Feed records with `add`; `runs()` returns the runs seen so far, so it can be
    called on a prefix of a file that is still being written.  Each record is
    checked field by field when it is added, so a bad record is reported with
    its line and the rest still load.
    """

    def __init__(self, source: str | None = None) -> None:
        self.source = source
        self._runs: dict[str, _RunParts] = {}

    def _parts(self, run_id: str) -> _RunParts:
        parts = self._runs.get(run_id)
        if parts is None:
            parts = self._runs[run_id] = _RunParts(run_id)
        return parts

    def add(self, rec: Mapping[str, Any], line: int | None = None) -> None:
        """Add one record.

        Raises:
            UnsupportedVersionError: the record's ``v`` is not a known version.
            FormatError: the record is not a trajdebug record, lacks a field, or has
                a field of the wrong type (the message names it).
        """
        if not isinstance(rec, Mapping):
            raise FormatError("record is not a JSON object", source=self.source, line=line)
        v = rec.get("v")
        if v not in SUPPORTED_VERSIONS:
            if v is None:
                raise FormatError('record has no "v" (format version) field', source=self.source, line=line)
            raise UnsupportedVersionError(
                f"format version {v!r} is not supported (this trajdebug reads {sorted(SUPPORTED_VERSIONS)});"
                " upgrade trajdebug to read this file",
                source=self.source,
                line=line,
            )
        t = rec.get("t")
        try:
            run_id = str(rec["run_id"])
            if t == "step":
                sid = str(rec["step_id"])
                self._parts(run_id).steps[sid] = _step(sid, rec)
            elif t == "open":
                sid = str(rec["step_id"])
                self._parts(run_id).opened[sid] = _step(sid, rec, unfinished=True)
            elif t == "run":
                start = _req_int(rec, "start_ns", 0)
                metadata = _mapping(rec, "metadata")
                p = self._parts(run_id)
                p.name = str(rec.get("name", ""))
                p.start_ns = start
                p.metadata.update(metadata)
                p.continues = _opt_str(rec, "continues")
            elif t == "end":
                end = _int(rec, "end_ns")
                outcome = _choice(rec, "outcome", ("success", "failure", "incomplete"), "incomplete")
                p = self._parts(run_id)
                p.end_ns, p.outcome, p.failure_reason = end, outcome, _opt_str(rec, "failure_reason")
            elif t == "error":
                eid = str(rec["error_id"])
                self._parts(run_id).errors[eid] = ErrorEvent(
                    error_id=eid,
                    step_id=str(rec["step_id"]),
                    type=str(rec.get("type", "Error")),
                    message=str(rec.get("message", "")),
                    parent_error_id=_opt_str(rec, "parent_error_id"),
                    attempt=_req_int(rec, "attempt", 1),
                    attributes=_mapping(rec, "attributes"),
                )
            elif t == "stage":
                change = StageChange(
                    stage=_choice(rec, "stage", STAGES, "occurred"),
                    step_id=_opt_str(rec, "step_id"),
                    time_ns=_req_int(rec, "time_ns", 0),
                    reason=_opt_str(rec, "reason"),
                )
                self._parts(run_id).stages.setdefault(str(rec["error_id"]), []).append(change)
            elif t == "dep":
                dep = _dep(rec["dep"], "dep")
                self._parts(run_id).late_deps.setdefault(str(rec["step_id"]), []).append(dep)
            elif t == "meta":
                self._parts(run_id).metadata.update(_mapping(rec, "metadata"))
            elif t == "mark":
                outcome = _choice(rec, "outcome", ("success", "failure"), "failure")
                reason = _opt_str(rec, "failure_reason")
                if outcome == "failure" and not reason:
                    raise _FieldError("a failure mark needs a 'failure_reason'")
                # The last mark wins, wherever it sits relative to the run's end record.
                self._parts(run_id).mark = {
                    "outcome": outcome,
                    "failure_reason": reason if outcome == "failure" else None,
                    "time_ns": _int(rec, "time_ns"),
                }
            else:
                raise FormatError(f"unknown record type {t!r}", source=self.source, line=line)
        except KeyError as exc:
            raise FormatError(
                f"{t or 'record'} record lacks field {exc.args[0]!r}", source=self.source, line=line
            ) from None
        except (TypeError, ValueError) as exc:
            if isinstance(exc, FormatError):
                raise
            raise FormatError(f"bad {t} record: {exc}", source=self.source, line=line) from None

    def runs(self) -> list[Run]:
        """The runs assembled so far, in the order they were first seen."""
        return [_build(p) for p in self._runs.values()]


def _build(p: _RunParts) -> Run:
    steps: list[Step] = []
    for sid, st in p.steps.items():
        late = p.late_deps.get(sid)
        steps.append(st if not late else replace(st, deps=tuple(_dedupe([*st.deps, *late]))))
    # Steps that started but never finished (the process died inside them).
    steps.extend(st for sid, st in p.opened.items() if sid not in p.steps)
    steps.sort(key=lambda s: (s.start_ns, s.step_id))
    errors = [replace(e, stages=tuple(p.stages.get(eid, ()))) for eid, e in p.errors.items()]
    errors.sort(key=lambda e: e.stages[0].time_ns if e.stages else 0)
    start = p.start_ns
    if start is None:
        start = steps[0].start_ns if steps else 0
    outcome = p.outcome if p.outcome in ("success", "failure") else "incomplete"
    reason, metadata = p.failure_reason, p.metadata
    if p.mark is not None:
        metadata = {
            **metadata,
            MARK_KEY: {**p.mark, "recorded_outcome": outcome, "recorded_failure_reason": reason},
        }
        outcome, reason = p.mark["outcome"], p.mark["failure_reason"]
    return Run(
        run_id=p.run_id,
        name=p.name,
        start_ns=start,
        end_ns=p.end_ns,
        outcome=outcome,  # type: ignore[arg-type]
        failure_reason=reason,
        metadata=metadata,
        steps=tuple(steps),
        errors=tuple(errors),
        continues=p.continues,
    )


def _dedupe(deps: list[Dependency]) -> Iterator[Dependency]:
    """Keep one edge per (step, kind, run), preferring the most certain origin."""
    rank = {"tracked": 0, "declared": 1, "inferred": 2}
    best: dict[tuple[str, str, str | None], Dependency] = {}
    for d in deps:
        k = (d.step_id, d.kind, d.run_id)
        cur = best.get(k)
        if cur is None or (rank[d.origin], -d.confidence) < (rank[cur.origin], -cur.confidence):
            best[k] = d
    return iter(best.values())


# -- files -------------------------------------------------------------------


@dataclass
class ReadResult:
    """Runs read from a source, and the records that could not be read."""

    runs: list[Run]
    problems: list[FormatError]


def read_lines(lines: Iterable[str | bytes], source: str | None = None) -> ReadResult:
    """Read records from lines of JSON.

    A line that is not valid JSON or not a valid record becomes a problem naming
    the source and line; every other record still loads.  A truncated last line
    (a writer killed mid-write) is reported the same way.

    Raises:
        UnsupportedVersionError: a record has a format version this trajdebug
            does not know; reading further would misread the file.
    """
    builder = RunBuilder(source)
    problems: list[FormatError] = []
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as exc:
            problems.append(
                FormatError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", source=source, line=n)
            )
            continue
        try:
            rec = json.loads(text)
        except ValueError as exc:
            problems.append(FormatError(f"not valid JSON ({exc})", source=source, line=n))
            continue
        try:
            builder.add(rec, line=n)
        except UnsupportedVersionError:
            raise
        except FormatError as exc:
            problems.append(exc)
    return ReadResult(builder.runs(), problems)


def read_jsonl(path: str | Path) -> ReadResult:
    """Read every run in a JSONL file (see `read_lines`)."""
    p = Path(path)
    with p.open("rb") as fh:
        return read_lines(fh, source=str(p))


def write_jsonl(runs: Iterable[Run], path: str | Path | IO[str]) -> None:
    """Write runs as records to a JSONL file (or an open text stream)."""
    from trajdebug._encode import dumps_str

    def _write(fh: IO[str]) -> None:
        for run in runs:
            for rec in run_to_records(run):
                fh.write(dumps_str(rec))
                fh.write("\n")

    if isinstance(path, (str, Path)):
        with open(path, "w", encoding="utf-8") as fh:
            _write(fh)
    else:
        _write(path)


__all__ = [
    "FORMAT_VERSION",
    "MARK_KEY",
    "FormatError",
    "ReadResult",
    "RunBuilder",
    "UnsupportedVersionError",
    "dep_from_dict",
    "dep_to_dict",
    "mark_record",
    "read_jsonl",
    "read_lines",
    "run_to_records",
    "step_to_record",
    "write_jsonl",
]
