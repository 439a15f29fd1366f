"""The trajdebug JSONL format: runs as versioned JSON records, one per line.

The records themselves (types, fields, how each is built and decoded) are
defined in `trajdebug.core.schema`; this module assembles runs from records
(`RunBuilder`), reads and writes JSON Lines files, and names what could not be
read (`FormatError`: the source, the line and the field).

Records are append-only and self-contained, so a file can be read while it is
being written, a crashed writer leaves a readable prefix (the run reads as
``incomplete``), and several runs may interleave in one file.  The same
records are what the SQLite store keeps.  See ``docs/format.md``.

Reading never gives up on a file for one record: a line that is not JSON, a
record that is not a trajdebug record, or a record of a newer format version
is skipped with a one-line problem naming the file and line; a field of the
wrong type is read as its default, also with a problem; duplicate step or
error ids keep the first record and are reported; dependencies on steps that
are not in the run and parent cycles are reported (the analysis ignores
them).  Every other record still loads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from trajdebug.core import ledger
from trajdebug.core.codec import loads
from trajdebug.core.model import Answer, Dependency, ErrorEvent, Run, Score, StageChange, Step
from trajdebug.core.schema import (
    FORMAT_VERSION,
    MARK_KEY,
    RECORDER_KEY,
    SUPPORTED_VERSIONS,
    Problems,
    choice_field,
    decode_answer,
    decode_dep,
    decode_error,
    decode_outcome,
    decode_score,
    decode_stage,
    decode_step,
    dedupe,
    dep_from_dict,
    dep_to_dict,
    error_info_to_dict,
    int_field,
    latest_answers,
    mapping_field,
    mark_record,
    run_to_records,
    step_to_record,
    str_field,
    text_field,
    version_of,
)


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
    """A record written by a format version this trajdebug does not know (the record is skipped)."""


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
    step_lines: dict[str, int | None] = field(default_factory=dict)
    opened: dict[str, Step] = field(default_factory=dict)
    late_deps: dict[str, list[Dependency]] = field(default_factory=dict)
    errors: dict[str, ErrorEvent] = field(default_factory=dict)
    stages: dict[str, list[StageChange]] = field(default_factory=dict)
    mark: dict[str, Any] | None = None
    answers: list[Answer] = field(default_factory=list)
    scores: list[Score] = field(default_factory=list)


class RunBuilder:
    """Assemble runs from records in any order they were appended.

    Feed records with `add`; `runs()` returns the runs seen so far, so it can be
    called on a prefix of a file that is still being written.  Each record is
    checked field by field when it is added; what is wrong is collected in
    `problems` (each naming the source, the line and the field) and the rest of
    the record, and every other record, still loads.
    """

    def __init__(self, source: str | None = None, *, split: bool = True) -> None:
        """``split``: a second ``run`` record of a run id starts a separate run (see `_route`); False
        keeps one run per id (the store, which gives a clashing run a new id when it is written) and
        only reports the clash."""
        self.source = source
        self.problems: list[FormatError] = []
        """What could not be read, in the order it was found."""
        self._runs: dict[str, _RunParts] = {}
        self._newer = 0
        self._reported: set[str] = set()
        self._split = split
        self._started: set[str] = set()
        self._instances: dict[str, list[str]] = {}
        """Run id -> the ids of the runs that started under it (only ids that started twice)."""
        self._prefixes: dict[str, set[str]] = {}
        """Id of a split run -> the id prefixes (the writing process's) of its steps and errors."""

    def _parts(self, run_id: str) -> _RunParts:
        parts = self._runs.get(run_id)
        if parts is None:
            parts = self._runs[run_id] = _RunParts(run_id)
        return parts

    def _problem(self, message: str, line: int | None, cls: type[FormatError] = FormatError) -> None:
        self.problems.append(cls(message, source=self.source, line=line))

    def add(self, rec: Any, line: int | None = None) -> bool:
        """Add one record; returns whether it was used.

        A record that cannot be used (not an object, no ``v``, a newer format
        version, an unknown type, no run or step id) is skipped with a problem;
        a field of the wrong type is read as its default with a problem.
        """
        if not isinstance(rec, Mapping):
            self._problem("record is not a JSON object", line)
            return False
        raw_v = rec.get("v")
        v = version_of(raw_v)
        if v not in SUPPORTED_VERSIONS:
            if raw_v is None:
                self._problem('record has no "v" (format version) field', line)
            elif v is not None and v > max(SUPPORTED_VERSIONS):
                self._newer += 1
                if self._newer == 1:
                    self._problem(
                        f"format version {v} is newer than this trajdebug reads ({sorted(SUPPORTED_VERSIONS)});"
                        " the record is skipped (upgrade trajdebug to read it)",
                        line,
                        UnsupportedVersionError,
                    )
            else:
                self._problem(f"format version {raw_v!r} is not a trajdebug format version", line)
            return False
        t = rec.get("t")
        run_id = rec.get("run_id")
        if not isinstance(run_id, (str, int)) or isinstance(run_id, bool) or run_id == "":
            self._problem(f"{t or 'record'} record lacks field 'run_id'", line)
            return False
        run_id = str(run_id)
        if t == "run" or run_id in self._instances:
            run_id = self._route(t, run_id, rec, line)
        problems = Problems()
        try:
            used = self._add(t, run_id, rec, line, problems)
        except RecursionError:  # pragma: no cover - values are never decoded recursively here
            self._problem(f"{t} record is nested too deeply", line)
            return False
        for p in problems:
            self._problem(f"{t} record: {p}", line)
        return used

    def _route(self, t: Any, run_id: str, rec: Mapping[str, Any], line: int | None) -> str:
        """The run a record of ``run_id`` belongs to when several runs started under that id.

        Two runs that started under one id (ids drawn from a generator the agent seeded, writers
        appending to one file) are never merged: each later ``run`` record starts a new run, whose
        id is derived from the clashing id and the line (the same on every read), with a problem.
        A step, error or stage goes to the run whose steps share its id prefix (the writing
        process's, `trajdebug.record.config.id_prefix`), else to the latest; an end record to the
        first of them that has not ended.
        """
        if t == "run":
            if run_id not in self._started:
                self._started.add(run_id)
                return run_id
            if not self._split:
                self._problem(f"run {run_id} starts again here (another run with the same id); read as one run", line)
                return run_id
            import hashlib

            new = hashlib.blake2b(f"{run_id}:{line}:{len(self._instances.get(run_id, ()))}".encode(), digest_size=16).hexdigest()
            ids = self._instances.setdefault(run_id, [run_id])
            if len(ids) == 1:
                first = self._runs.get(run_id)
                self._prefixes[run_id] = {_id_prefix(k) for k in (first.steps if first else ())}
            ids.append(new)
            self._prefixes[new] = set()
            self._problem(
                f"run {run_id} starts again here (another run with the same id); read as a separate run {new}", line
            )
            return new
        ids = self._instances[run_id]
        if t == "end":
            return next((i for i in ids if i not in self._runs or self._runs[i].end_ns is None), ids[-1])
        key = rec.get("step_id") if t in ("step", "open", "dep") else rec.get("error_id")
        if not isinstance(key, str):
            return ids[-1]
        prefix = _id_prefix(key[1:] if t in ("error", "stage") else key)
        for i in reversed(ids):
            if prefix in self._prefixes[i]:
                return i
        self._prefixes[ids[-1]].add(prefix)
        return ids[-1]

    def _need(self, rec: Mapping[str, Any], key: str, t: Any, line: int | None) -> str | None:
        value = rec.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "":
            return str(value)
        self._problem(f"{t} record lacks field {key!r}", line)
        return None

    def _add_step(self, t: str, run_id: str, rec: Mapping[str, Any], line: int | None, problems: Problems) -> bool:
        """A ``step`` record (a finished step) or an ``open`` one (a step that had begun), as `_add` takes them."""
        sid = self._need(rec, "step_id", t, line)
        if sid is None:
            return False
        step = decode_step(sid, rec, problems, unfinished=t == "open")
        p = self._parts(run_id)
        if t == "open":
            p.opened.setdefault(sid, step)
            return True
        if sid in p.steps:
            first = p.step_lines.get(sid)
            at = f" (first at line {first})" if first is not None else ""
            problems.append(f"duplicate step id {sid!r}{at}; this record is ignored")
            return False
        p.steps[sid] = step
        p.step_lines[sid] = line
        return True

    def _add(self, t: Any, run_id: str, rec: Mapping[str, Any], line: int | None, problems: Problems) -> bool:
        if t == "step" or t == "open":
            return self._add_step(t, run_id, rec, line, problems)
        if t == "run":
            p = self._parts(run_id)
            p.name = text_field(rec, "name")
            p.start_ns = int_field(rec, "start_ns", 0, problems)
            p.metadata.update(mapping_field(rec, "metadata", problems))
            p.continues = str_field(rec, "continues", problems)
        elif t == "end":
            p = self._parts(run_id)
            p.end_ns = int_field(rec, "end_ns", None, problems)
            p.outcome = decode_outcome(rec, problems)
            p.failure_reason = str_field(rec, "failure_reason", problems)
            account = rec.get(RECORDER_KEY)
            if isinstance(account, Mapping):
                p.metadata[RECORDER_KEY] = dict(account)
        elif t == "error":
            eid = self._need(rec, "error_id", t, line)
            if eid is None:
                return False
            p = self._parts(run_id)
            if eid in p.errors:
                problems.append(f"duplicate error id {eid!r}; this record is ignored")
                return False
            p.errors[eid] = decode_error(eid, rec, problems)
        elif t == "stage":
            eid = self._need(rec, "error_id", t, line)
            if eid is None:
                return False
            self._parts(run_id).stages.setdefault(eid, []).append(decode_stage(rec, problems))
        elif t == "dep":
            sid = self._need(rec, "step_id", t, line)
            if sid is None:
                return False
            dep = decode_dep(rec.get("dep"), "dep", problems)
            if dep is None:
                return False
            self._parts(run_id).late_deps.setdefault(sid, []).append(dep)
        elif t == "meta":
            self._parts(run_id).metadata.update(mapping_field(rec, "metadata", problems))
        elif t == "mark":
            outcome = choice_field(rec, "outcome", ("success", "failure"), "failure", problems)
            reason = str_field(rec, "failure_reason", problems)
            if outcome == "failure" and not reason:
                problems.append("a failure mark needs a 'failure_reason'; ignored")
                return False
            # The last mark wins, wherever it sits relative to the run's end record.
            self._parts(run_id).mark = {
                "outcome": outcome,
                "failure_reason": reason if outcome == "failure" else None,
                "time_ns": int_field(rec, "time_ns", None, problems),
            }
        elif t == "answer":
            answer = decode_answer(rec, problems)
            if answer is None:
                return False
            self._parts(run_id).answers.append(answer)
        elif t == "score":
            score = decode_score(rec, problems)
            if score is None:
                return False
            self._parts(run_id).scores.append(score)
        else:
            problems.append(f"unknown record type {t!r}; skipped")
            return False
        return True

    def runs(self) -> list[Run]:
        """The runs assembled so far, in the order they were first seen.

        Dependencies on steps that are not in the run, and parent cycles, are
        added to `problems` (once per run; the runs keep them as recorded).
        """
        out = []
        for p in self._runs.values():
            run = _build(p)
            for message in _integrity(run):
                if message not in self._reported:
                    self._reported.add(message)
                    self._problem(message, None)
            out.append(run)
        return out


def _id_prefix(key: str) -> str:
    """The writing process's part of a step id (`trajdebug.record.config.id_prefix`, 8 hex digits)."""
    return key[:8]


def _build(p: _RunParts) -> Run:
    steps: list[Step] = []
    for sid, st in p.steps.items():
        late = p.late_deps.get(sid)
        steps.append(st if not late else replace(st, deps=tuple(dedupe([*st.deps, *late]))))
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
        answers=latest_answers(p.answers),
        scores=tuple(p.scores),
    )


def _integrity(run: Run) -> list[str]:
    """Dangling dependencies and parent cycles of a run, summarized in at most two messages."""
    ids = {s.step_id for s in run.steps}
    dangling = [
        (s.step_id, d.step_id) for s in run.steps for d in s.deps if d.run_id is None and d.step_id not in ids
    ]
    out = []
    if dangling:
        sid, missing = dangling[0]
        more = f" (and {len(dangling) - 1} more)" if len(dangling) > 1 else ""
        out.append(
            f"run {run.run_id}: step {sid!r} depends on step {missing!r}, which is not in the run{more};"
            " kept as recorded, ignored by the analysis"
        )
    parent = {s.step_id: s.parent_id for s in run.steps}
    cyclic: list[str] = []
    state: dict[str, int] = {}
    for start in parent:
        path: list[str] = []
        cur: str | None = start
        while cur is not None and cur in parent and state.get(cur, 0) == 0:
            state[cur] = 1
            path.append(cur)
            cur = parent[cur]
        if cur is not None and state.get(cur) == 1:
            cyclic.append(cur)
        for sid in path:
            state[sid] = 2
    if cyclic:
        out.append(
            f"run {run.run_id}: steps {', '.join(repr(c) for c in cyclic[:3])} are their own ancestors"
            " (a parent cycle); shown at the top level"
        )
    return out


# -- files -------------------------------------------------------------------


@dataclass
class ReadResult:
    """Runs read from a source, and the records that could not be read."""

    runs: list[Run]
    problems: list[FormatError]


def read_lines(lines: Iterable[str | bytes], source: str | None = None) -> ReadResult:
    """Read records from lines of JSON.

    A line that is not valid JSON, not UTF-8, nested too deeply, or not a valid
    record becomes a problem naming the source and line; every other record
    still loads.  A truncated last line (a writer killed mid-write) is reported
    the same way.  A UTF-8 byte order mark at the start is ignored.
    """
    builder = RunBuilder(source)
    for n, raw in enumerate(lines, start=1):
        if n == 1:
            raw = raw.removeprefix(b"\xef\xbb\xbf") if isinstance(raw, bytes) else raw.removeprefix("\ufeff")
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as exc:
            builder.problems.append(
                FormatError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", source=source, line=n)
            )
            continue
        try:
            rec = loads(text)
        except ValueError as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            builder.problems.append(FormatError(f"not valid JSON ({reason})", source=source, line=n))
            continue
        builder.add(rec, line=n)
    runs = builder.runs()
    return ReadResult(runs, builder.problems)


def read_jsonl(path: str | Path) -> ReadResult:
    """Read every run in a JSONL file (see `read_lines`)."""
    p = Path(path)
    with p.open("rb") as fh:
        result = read_lines(fh, source=str(p))
    # Finished steps a process killed while appending here never wrote, from its ledger beside the file.
    return ReadResult(ledger.apply(result.runs, p), result.problems)


def redacted(result: ReadResult) -> ReadResult:
    """Runs read from a foreign source with their secrets redacted per the process policy, as the
    recorder does (each run through `run_to_records` and back; what was scrubbed is counted in its
    account); problems too, since they may quote a value.  Unchanged when redaction is off."""
    from trajdebug.core import redaction

    red = redaction.redactor()
    if red is None:
        return result
    runs = [redacted_run(r) for r in result.runs]
    problems = [
        type(p)(red.text(p.reason), source=p.source, line=p.line) if red.may_hold(p.reason) else p
        for p in result.problems
    ]
    return ReadResult(runs, problems)


def redacted_run(run: Run) -> Run:
    """One run with its secrets redacted per the process policy (see `redacted`)."""
    builder = RunBuilder()
    for rec in run_to_records(run):
        builder.add(rec)
    runs = builder.runs()
    return runs[0] if runs else run


def write_jsonl(runs: Iterable[Run], path: str | Path | IO[str], *, redact: bool | None = None) -> None:
    """Write runs as records to a JSONL file (or an open text stream).

    Secrets are redacted per the process policy (see `trajdebug.core.schema.run_to_records`).
    """
    from trajdebug.core.schema import run_to_lines

    def _write(fh: IO[str]) -> None:
        for run in runs:
            fh.write(b"".join(run_to_lines(run, redact=redact)[1]).decode("utf-8"))

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
    "error_info_to_dict",
    "mark_record",
    "read_jsonl",
    "read_lines",
    "redacted",
    "redacted_run",
    "run_to_records",
    "step_to_record",
    "write_jsonl",
]
