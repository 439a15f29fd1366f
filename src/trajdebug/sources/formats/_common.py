"""What the file importers share: reading JSON documents and message-list files.

Every importer reads a file that is either one JSON document or JSON lines,
turns each record into `trajdebug.core.model` objects, and reports a malformed record
as a `FormatError` naming the file and the record while the others still load.
The helpers that build model objects (edges, error events, times) are public in
`trajdebug.sources.formats.convert`, shared with the framework integrations.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypedDict, Unpack

from trajdebug.core.jsonl import FormatError, ReadResult
from trajdebug.core.model import ErrorEvent, Outcome, Run, Step
from trajdebug.sources.formats.convert import error_event, time_ns


@dataclass(frozen=True, slots=True)
class Record:
    """One JSON value read from a file, with where it came from."""

    value: Any
    """The decoded JSON value."""
    line: int | None
    """The 1-based line it was read from; None when the file is a single JSON document."""


def read_records(path: str | Path) -> tuple[list[Record], list[FormatError]]:
    """Read a file holding one JSON document or one JSON value per line.

    A line that is not valid JSON becomes a problem naming the file and line;
    the other lines still load.

    Raises:
        FormatError: the file cannot be read, is empty, or holds no valid JSON at all.
    """
    from trajdebug.core.codec import loads

    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read file: {exc.strerror or exc}", source=str(p)) from None
    if not data.strip():
        raise FormatError("file is empty", source=str(p))
    try:
        return [Record(loads(data), None)], []
    except ValueError as whole_error:
        first_error = whole_error
    records: list[Record] = []
    problems: list[FormatError] = []
    for n, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            records.append(Record(loads(raw), n))
        except ValueError as exc:
            problems.append(FormatError(f"not valid JSON ({exc})", source=str(p), line=n))
    if not records:
        salvaged = _salvage(data)
        if salvaged is None:
            raise FormatError(f"not valid JSON ({first_error})", source=str(p))
        value, kept = salvaged
        return [Record(value, None)], [
            FormatError(
                f"truncated or damaged JSON ({first_error}); read the first {kept:,} of {len(data):,} bytes,"
                " whose last item may be incomplete",
                source=str(p),
            )
        ]
    return records, problems


_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|"|[\[\]{},]')
_CLOSE = {ord("["): b"]", ord("{"): b"}"}


def _salvage(data: bytes, tries: int = 8) -> tuple[Any, int] | None:
    """The readable prefix of a JSON document cut short (a writer killed mid-write, a truncated
    copy): cut after the last complete item (at a comma) and close what is open.  Tries the last
    ``tries`` commas; None when none gives JSON.  The scan skips strings with one regular
    expression, so it costs one pass over the bytes."""
    from trajdebug.core.codec import loads

    stack: list[int] = []
    cuts: list[tuple[int, bytes]] = []
    for m in _TOKENS.finditer(data):
        tok = m.group()
        c = tok[0]
        if tok == b'"':
            break  # an unterminated string: the cut is inside it
        if c == ord('"'):
            continue
        if c in _CLOSE:
            stack.append(c)
        elif c in (ord("]"), ord("}")):
            if not stack:
                return None
            stack.pop()
        elif stack:  # a comma: everything before it is complete
            cuts.append((m.start(), b"".join(_CLOSE[o] for o in reversed(stack))))
            if len(cuts) > tries:
                del cuts[0]
    for pos, closers in reversed(cuts):
        try:
            return loads(data[:pos] + closers), pos
        except ValueError:
            continue
    return None


def sniff_head(path: Path, size: int = 64 * 1024) -> str:
    """The first ``size`` bytes of a file as text ('' when unreadable)."""
    try:
        with path.open("rb") as fh:
            return fh.read(size).decode("utf-8", "replace")
    except OSError:
        return ""


def unique_ids(ids: Iterable[str]) -> Iterator[str]:
    """Yield the ids, suffixing repeats with ``-2``, ``-3``... so each is unique."""
    seen: dict[str, int] = {}
    for i in ids:
        n = seen.get(i, 0) + 1
        seen[i] = n
        yield i if n == 1 else f"{i}-{n}"


# -- message-list documents -------------------------------------------------------


class RunHead(TypedDict, total=False):
    """What a run built from one message list is called, how it ended and where it was read.

    The keywords every `BuildRun` takes beside the messages and the run id.
    """

    name: str | None
    """The run's name (default: its id)."""
    metadata: Mapping[str, Any] | None
    """The run's metadata."""
    outcome: Outcome
    """How the run ended (default ``incomplete``)."""
    failure_reason: str | None
    """Why it failed."""
    source: str | None
    """The file it was read from (named in problems)."""
    record: int | None
    """Its record in that file (named in problems)."""


class BuildRun(Protocol):
    """Builds one run from a message list (`messages.messages_to_run`, `transcript.transcript_to_run`)."""

    def __call__(
        self, messages: Sequence[Any], *, run_id: str, **head: Unpack[RunHead]
    ) -> tuple[Run, list[FormatError]]: ...


def read_message_lists(
    path: str | Path, keys: Sequence[str], build: BuildRun, format_name: str
) -> ReadResult:
    """Import a file of message lists: one list, an object holding one under ``keys``, a list of such objects, or JSON lines of either.

    Raises:
        FormatError: the file is unreadable, not JSON, or holds no run at all.
    """
    records, problems = read_records(path)
    result = runs_from_message_lists(records, keys, build, format_name, source=str(path))
    result.problems[:0] = problems
    if not result.runs:
        if result.problems:
            first = result.problems[0]
            raise FormatError(
                f"no run could be read; first problem: {first.reason}", source=str(path), line=first.line
            )
        raise FormatError("no run could be read: the file holds no messages", source=str(path))
    return result


def runs_from_message_lists(
    records: Sequence[Record],
    keys: Sequence[str],
    build: BuildRun,
    format_name: str,
    *,
    source: str | None = None,
) -> ReadResult:
    """Turn decoded JSON values into runs, one per message list (see `read_message_lists`)."""
    stem = Path(source).stem if source else "messages"
    units: list[tuple[Any, int | None]]  # (run object or message list, record number)
    named: dict[int, str] = {}
    if len(records) == 1 and records[0].line is None:
        doc = records[0].value
        units = (
            [(item, n) for n, item in enumerate(doc, start=1)] if is_run_list(doc, keys) else [(doc, None)]
        )
        if isinstance(doc, list) and not is_run_list(doc, keys) and any(
            isinstance(x, Mapping) and messages_of(x, keys) is not None for x in doc
        ):
            # Run objects mixed with other values: each item its own unit, the bad ones reported.
            units = [(item, n) for n, item in enumerate(doc, start=1)]
        elif _looks_like_message(doc, keys):
            units = [([doc], None)]  # one message alone: a run of one step
        elif isinstance(doc, Mapping) and messages_of(doc, keys) is None and _is_run_map(doc, keys):
            # Runs keyed by their id ({"run-1": [...messages], "run-2": {"messages": [...]}}).
            units = [(v, n) for n, v in enumerate(doc.values(), start=1)]
            named = {n: str(k) for n, k in enumerate(doc, start=1)}
    elif records and all(_looks_like_message(r.value, keys) for r in records):
        units = [([r.value for r in records], None)]  # JSON lines of messages: one run
    else:
        units = [(r.value, r.line) for r in records]
    runs: list[Run] = []
    problems: list[FormatError] = []
    ids = list(unique_ids(named.get(n or 0) or _run_id(u, n, stem, len(units)) for u, n in units))
    for (unit, n), rid in zip(units, ids, strict=True):
        where = f"run {n}: " if n is not None else ""
        found = messages_of(unit, keys) if isinstance(unit, Mapping) else None
        if found is not None and _message_map(found[1]):
            # Messages keyed by their position ({"0": {...}, "1": {...}}): their values, in order.
            found = (found[0], list(found[1].values()))
        if isinstance(unit, list):
            run, bad = build(unit, run_id=rid, name=stem, source=source, record=n)
        elif not isinstance(unit, Mapping):
            problems.append(
                FormatError(
                    f"{where}expected a message list or an object holding one, got {type(unit).__name__}",
                    source=source,
                    line=n,
                )
            )
            continue
        elif found is None:
            problems.append(
                FormatError(f"{where}object has none of the keys {', '.join(keys)}", source=source, line=n)
            )
            continue
        elif not isinstance(found[1], list):
            problems.append(
                FormatError(f"{where}{found[0]!r} is not a list of messages", source=source, line=n)
            )
            continue
        else:
            outcome, reason = outcome_of(unit)
            meta = {k: v for k, v in unit.items() if k != found[0]}
            meta["source_format"] = format_name
            name = str(unit.get("name") or (f"task {unit['task_id']}" if "task_id" in unit else stem))
            run, bad = build(
                found[1], run_id=rid, name=name, metadata=meta, outcome=outcome,
                failure_reason=reason, source=source, record=n,
            )  # fmt: skip
        runs.append(run)
        problems.extend(bad)
    return ReadResult(runs, problems)


# -- one message list into one run (the skeleton `BuildRun`s share) ------------------------


def checked_messages(
    messages: Sequence[Any], check: Callable[[Any], str | None], head: RunHead
) -> tuple[list[tuple[int, Mapping[str, Any]]], list[FormatError]]:
    """The messages ``check`` finds sound, with their positions; a problem for each other one (it is skipped)."""
    source, record = head.get("source"), head.get("record")
    where = f"run {record}: " if record is not None else ""
    valid: list[tuple[int, Mapping[str, Any]]] = []
    problems: list[FormatError] = []
    for i, msg in enumerate(messages):
        bad = check(msg)
        if bad:
            problems.append(FormatError(f"{where}message {i + 1}: {bad}", source=source, line=record or i + 1))
        else:
            valid.append((i, msg))
    return valid, problems


def message_step_ids(count: int) -> Callable[[int], str]:
    """Step ids from message positions (``m0000``, ``m0001``...; wider for longer lists, so they sort)."""
    width = max(4, len(str(count)))
    return lambda i: f"m{i:0{width}d}"


def message_time(msg: Mapping[str, Any], position: int) -> int:
    """A message's own time, else a synthetic one: 1 µs per position."""
    return time_ns(msg.get("timestamp", msg.get("created_at"))) or position * 1000


def recover_errors(errors: list[ErrorEvent], waiting: list[int], step_id: str, time: int, reason: str) -> None:
    """Mark the errors at ``waiting`` (indexes into ``errors``) recovered at ``step_id``, and stop waiting."""
    for k in waiting:
        e = errors[k]
        errors[k] = error_event(
            e.error_id, e.step_id, e.type, e.message, e.stages[0].time_ns,
            recovered_at=(step_id, time, reason), attributes=e.attributes,
        )  # fmt: skip
    waiting.clear()


def message_run(
    steps: Sequence[Step], errors: Sequence[ErrorEvent], timed: Iterable[Any], run_id: str, head: RunHead
) -> Run:
    """The run of a message list's steps; ``synthetic_timing`` when none of the ``timed`` messages has a time."""
    meta = dict(head.get("metadata") or {})
    if steps and not any(
        time_ns(m.get("timestamp", m.get("created_at"))) for m in timed if isinstance(m, Mapping)
    ):
        meta["synthetic_timing"] = True  # the log has no times: steps are 1 µs apart in message order
    return Run(
        run_id=run_id,
        name=head.get("name") or run_id,
        start_ns=steps[0].start_ns if steps else 0,
        end_ns=steps[-1].end_ns if steps else 0,
        outcome=head.get("outcome", "incomplete"),
        failure_reason=head.get("failure_reason"),
        metadata=meta,
        steps=tuple(steps),
        errors=tuple(errors),
    )


def _looks_like_message(v: Any, keys: Sequence[str]) -> bool:
    return isinstance(v, Mapping) and "role" in v and not any(k in v for k in keys)


def _message_map(v: Any) -> bool:
    return isinstance(v, Mapping) and bool(v) and all(isinstance(m, Mapping) and "role" in m for m in v.values())


def _is_run_map(doc: Mapping[str, Any], keys: Sequence[str]) -> bool:
    """Whether an object's values are runs: message lists or objects holding one."""
    return bool(doc) and all(
        (isinstance(v, list) and any(isinstance(m, Mapping) and "role" in m for m in v))
        or (isinstance(v, Mapping) and messages_of(v, keys) is not None)
        for v in doc.values()
    )


def is_run_list(doc: Any, keys: Sequence[str]) -> bool:
    """Whether a document is a list of run objects (each holding a message list under one of ``keys``)."""
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(isinstance(x, Mapping) and messages_of(x, keys) is not None for x in doc)
    )


def messages_of(obj: Mapping[str, Any], keys: Sequence[str]) -> tuple[str, Any] | None:
    """The (key, value) of the first of ``keys`` present in a run object."""
    for key in keys:
        if key in obj:
            return key, obj[key]
    return None


def _run_id(unit: Any, n: int | None, stem: str, count: int) -> str:
    if isinstance(unit, Mapping):
        for key in ("run_id", "id", "trajectory_id"):
            v = unit.get(key)
            if isinstance(v, (str, int)) and not isinstance(v, bool):
                return str(v)
        if isinstance(unit.get("task_id"), (str, int)):
            # tau-bench runs hold their messages under "traj"; name them as the
            # benchmark's annotations do ("tau-<task_id>").
            prefix = "tau" if "traj" in unit else "task"
            return f"{prefix}-{unit['task_id']}"
    return stem if count == 1 or n is None else f"{stem}-{n}"


def outcome_of(unit: Mapping[str, Any]) -> tuple[Outcome, str | None]:
    """A run object's outcome from ``outcome``, a success flag, or ``reward``; incomplete when it says nothing."""
    if unit.get("outcome") in ("success", "failure", "incomplete"):
        return unit["outcome"], unit.get("failure_reason")
    for key in ("success", "is_correct", "resolved"):
        if isinstance(unit.get(key), bool):
            return ("success", None) if unit[key] else ("failure", f"{key} is false")
    reward = unit.get("reward")
    if isinstance(reward, (int, float)) and not isinstance(reward, bool):
        # tau-bench rewards are 0 or 1; anything short of full reward failed the task.
        return ("success", None) if reward >= 1 else ("failure", f"reward {reward}")
    return "incomplete", None


__all__ = [
    "BuildRun",
    "Record",
    "RunHead",
    "checked_messages",
    "message_run",
    "message_step_ids",
    "message_time",
    "recover_errors",
    "is_run_list",
    "messages_of",
    "outcome_of",
    "read_message_lists",
    "read_records",
    "runs_from_message_lists",
    "sniff_head",
    "unique_ids",
]
