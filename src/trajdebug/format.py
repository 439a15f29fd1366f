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

Records are append-only and self-contained, so a file can be read while it is
being written, a crashed writer leaves a readable prefix (the run reads as
``incomplete``), and several runs may interleave in one file.  The same records
are what the SQLite store keeps.  See ``docs/format.md``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from trajdebug.model import (
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
    """Decode a dependency."""
    return Dependency(
        step_id=str(d["step_id"]),
        kind=d.get("kind", "data"),
        origin=d.get("origin", "declared"),
        confidence=float(d.get("confidence", 1.0)),
        key=d.get("key"),
        run_id=d.get("run_id"),
    )


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
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    opened: dict[str, dict[str, Any]] = field(default_factory=dict)
    late_deps: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    errors: dict[str, dict[str, Any]] = field(default_factory=dict)
    stages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


class RunBuilder:
    """Assemble runs from records in any order they were appended.

    Feed records with `add`; `runs()` returns the runs seen so far, so it can be
    called on a prefix of a file that is still being written.
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
            FormatError: the record is not a trajdebug record or lacks a field.
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
            p = self._parts(run_id)
            if t == "step":
                p.steps[str(rec["step_id"])] = dict(rec)
            elif t == "open":
                p.opened[str(rec["step_id"])] = dict(rec)
            elif t == "run":
                p.name = str(rec.get("name", ""))
                p.start_ns = int(rec["start_ns"])
                p.metadata.update(rec.get("metadata") or {})
                p.continues = rec.get("continues")
            elif t == "end":
                p.end_ns = rec.get("end_ns")
                p.outcome = str(rec["outcome"])
                p.failure_reason = rec.get("failure_reason")
            elif t == "error":
                p.errors[str(rec["error_id"])] = dict(rec)
            elif t == "stage":
                p.stages.setdefault(str(rec["error_id"]), []).append(dict(rec))
            elif t == "dep":
                p.late_deps.setdefault(str(rec["step_id"]), []).append(dict(rec["dep"]))
            elif t == "meta":
                p.metadata.update(rec.get("metadata") or {})
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
    for sid, r in p.steps.items():
        deps = [dep_from_dict(d) for d in r.get("deps") or ()]
        deps += [dep_from_dict(d) for d in p.late_deps.get(sid, ())]
        err = r.get("error")
        steps.append(
            Step(
                step_id=sid,
                name=str(r.get("name", "")),
                kind=r.get("kind", "other"),
                parent_id=r.get("parent_id"),
                agent=r.get("agent"),
                input=r.get("input"),
                output=r.get("output"),
                status=r.get("status", "ok"),
                error=None
                if not err
                else ErrorInfo(
                    type=str(err.get("type", "Error")),
                    message=str(err.get("message", "")),
                    error_id=err.get("error_id"),
                    traceback=err.get("traceback"),
                ),
                start_ns=int(r.get("start_ns") or 0),
                end_ns=r.get("end_ns"),
                attempt=int(r.get("attempt", 1)),
                retry_of=r.get("retry_of"),
                deps=tuple(_dedupe(deps)),
                attributes=r.get("attributes") or {},
                source_index=r.get("source_index"),
            )
        )
    # Steps that started but never finished (the process died inside them).
    for sid, r in p.opened.items():
        if sid in p.steps:
            continue
        steps.append(
            Step(
                step_id=sid,
                name=str(r.get("name", "")),
                kind=r.get("kind", "other"),
                parent_id=r.get("parent_id"),
                agent=r.get("agent"),
                start_ns=int(r.get("start_ns") or 0),
                end_ns=None,
                attempt=int(r.get("attempt", 1)),
                retry_of=r.get("retry_of"),
                deps=tuple(_dedupe([dep_from_dict(d) for d in r.get("deps") or ()])),
                attributes={"unfinished": True},
            )
        )
    steps.sort(key=lambda s: (s.start_ns, s.step_id))
    errors = []
    for eid, r in p.errors.items():
        stages = [
            StageChange(
                stage=s["stage"],
                step_id=s.get("step_id"),
                time_ns=int(s.get("time_ns") or 0),
                reason=s.get("reason"),
            )
            for s in p.stages.get(eid, ())
        ]
        errors.append(
            ErrorEvent(
                error_id=eid,
                step_id=str(r["step_id"]),
                type=str(r.get("type", "Error")),
                message=str(r.get("message", "")),
                parent_error_id=r.get("parent_error_id"),
                stages=tuple(stages),
                attempt=int(r.get("attempt", 1)),
                attributes=r.get("attributes") or {},
            )
        )
    errors.sort(key=lambda e: e.stages[0].time_ns if e.stages else 0)
    start = p.start_ns
    if start is None:
        start = steps[0].start_ns if steps else 0
    return Run(
        run_id=p.run_id,
        name=p.name,
        start_ns=start,
        end_ns=p.end_ns,
        outcome=p.outcome if p.outcome in ("success", "failure") else "incomplete",  # type: ignore[arg-type]
        failure_reason=p.failure_reason,
        metadata=p.metadata,
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
            rec = json.loads(raw)
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
    "FormatError",
    "ReadResult",
    "RunBuilder",
    "UnsupportedVersionError",
    "dep_from_dict",
    "dep_to_dict",
    "read_jsonl",
    "read_lines",
    "run_to_records",
    "step_to_record",
    "write_jsonl",
]
