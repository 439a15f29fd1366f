"""Marking a recorded run failed (or successful) after the fact.

A run can finish without an exception and still give a wrong answer; nothing in
the recording says so, so the analysis sees a success.  `mark` records a
person's verdict: it appends a ``mark`` record (``docs/format.md``) to the
store or the trajdebug JSONL file the run lives in.  Every reader applies the
latest mark when it loads the run: ``outcome`` and ``failure_reason`` become the
verdict's, and ``metadata["marked"]`` keeps the verdict with the outcome the run
had recorded (``recorded_outcome``, ``recorded_failure_reason``), so nothing is
lost and ``--success`` undoes a wrong mark.

Example:
    ```python
    import trajdebug

    run = trajdebug.mark("trajdebug.db", "4f2a", failed="quoted the price in USD, not EUR")
    assert run.outcome == "failure"
    trajdebug.analyze(run)   # now searches for the root cause of that failure
    ```
"""

from __future__ import annotations

import time
from pathlib import Path

from trajdebug.core.jsonl import FormatError, mark_record, read_jsonl
from trajdebug.core.model import Run
from trajdebug.sources.load import SourceError, _is_trajdebug_jsonl
from trajdebug.store import Store, StoreError, is_store


def mark(source: str | Path, run_id: str, *, failed: str | None = None, success: bool = False) -> Run:
    """Record a verdict on one run of a store or trajdebug JSONL file, and return the run as it now reads.

    Args:
        source: A store (SQLite file) or a trajdebug JSONL file.  Foreign traces
            are read-only: import them first (``trajdebug import``).
        run_id: The run (a unique prefix of its id is enough).
        failed: Mark the run failed, for this reason.
        success: Mark the run successful (also undoes an earlier failure mark).

    Raises:
        ValueError: neither or both of ``failed`` and ``success``, or an empty reason.
        SourceError: the source is missing, not writable, not a store or trajdebug
            JSONL file, or holds no such run (the message names the file and the run).
    """
    if (failed is None) == (not success):
        raise ValueError("pass exactly one of failed='reason' or success=True")
    if failed is not None and not failed.strip():
        raise ValueError("a failure mark needs a reason (what was wrong with the run's result)")
    outcome, reason = ("failure", failed.strip()) if failed is not None else ("success", None)
    path = Path(source)
    if not path.exists():
        raise SourceError(f"{path}: no such file")
    if is_store(path):
        return _mark_store(path, run_id, outcome, reason)
    if _is_trajdebug_jsonl(path):
        return _mark_jsonl(path, run_id, outcome, reason)
    raise SourceError(
        f"{path}: only a store or a trajdebug JSONL file can be marked; import it first (trajdebug import {path})"
    )


def _mark_store(path: Path, run_id: str, outcome: str, reason: str | None) -> Run:
    try:
        with Store(path) as store:
            rid = store.mark_run(run_id, outcome, reason)
            return store.load_run(rid)
    except KeyError as exc:
        raise SourceError(str(exc.args[0])) from None
    except (StoreError, OSError) as exc:
        raise SourceError(f"{path}: cannot mark the run ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - sqlite3 errors (read-only file, locked) as one line
        raise SourceError(f"{path}: cannot mark the run ({type(exc).__name__}: {exc})") from None


def _mark_jsonl(path: Path, run_id: str, outcome: str, reason: str | None) -> Run:
    from trajdebug.core.codec import dumps_str

    try:
        runs = read_jsonl(path).runs
    except (OSError, FormatError) as exc:
        raise SourceError(f"{path}: {exc}") from None
    rid = _resolve(path, [r.run_id for r in runs], run_id)
    try:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(dumps_str(mark_record(rid, outcome, reason, time.time_ns())) + "\n")
    except OSError as exc:
        raise SourceError(f"{path}: cannot append the mark ({exc.strerror or exc})") from None
    return next(r for r in read_jsonl(path).runs if r.run_id == rid)


def _resolve(path: Path, ids: list[str], run_id: str) -> str:
    if run_id in ids:
        return run_id
    found = [i for i in ids if i.startswith(run_id)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise SourceError(f"{path}: no run {run_id!r}")
    from trajdebug.store import ambiguous_prefix

    raise SourceError(ambiguous_prefix(path, run_id, found))


__all__ = ["mark"]
