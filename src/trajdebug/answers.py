"""Answers stored with a run: judgements of one step's output, kept as data.

An `Answer` says whether one step's output was right (what the run needed there), who
said so (``person``, ``check:<name>``, ``model:<m>``, ``reference:<run_id>``,
``oracle:<mod:fn>``), when, and why.  It is an ``answer`` record
(``docs/format.md``), appended the way `trajdebug.mark` appends a verdict:

- to a store (SQLite file) or a trajdebug JSONL file, among the run's records;
- beside a foreign trace (OTLP JSON, a message log, a transcript), which is
  never rewritten, in the side file ``SOURCE.answers.jsonl``
  (`trajdebug.sidefile`), read back whenever the source is read.

Every reader fills ``Run.answers`` with the latest answer per step and
answerer (`trajdebug.core.schema.latest_answers`), so a step is never asked twice
and a later answer corrects an earlier one.  The reason is redacted with the
process policy before it is written, like every other free text.

Example:
    ```python
    import trajdebug
    from trajdebug.core.model import Answer

    trajdebug.save_answer("trajdebug.db", "4f2a", Answer("s3", False, "person", reason="EUR, not USD"))
    run = trajdebug.load_runs("trajdebug.db", run_id="4f2a")[0]
    assert run.answers[-1].correct is False
    ```
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from trajdebug.core.jsonl import FormatError
from trajdebug.core.model import Answer, Run
from trajdebug.core.schema import answer_record
from trajdebug.sidefile import read_answers, side_file
from trajdebug.sources.load import SourceError, _is_trajdebug_jsonl, read_source
from trajdebug.store import Store, StoreError, ambiguous_prefix, is_store


def _redacted(answer: Answer) -> Answer:
    from trajdebug.core import redaction

    red = redaction.redactor()
    if red is None or not answer.reason:
        return answer
    return dataclasses.replace(answer, reason=red.text(answer.reason))


class AnswerLog:
    """Where the answers to one run of a source are appended (resolved once, appended many times).

    Args:
        source: A store, a trajdebug JSONL file, or a foreign trace (answers go to its side file).
        run_id: The run (a unique prefix of its id is enough).
        known: The ids of the source's runs, when the caller has read them already (saves a read).

    Raises:
        SourceError: the source is missing or holds no such run (the message names both).
    """

    def __init__(self, source: str | Path, run_id: str, *, known: Sequence[str] | None = None) -> None:
        self.source = Path(source)
        if not self.source.exists():
            raise SourceError(f"{self.source}: no such file or folder")
        self.kind = "store" if is_store(self.source) else "jsonl" if _is_trajdebug_jsonl(self.source) else "side"
        self.path = side_file(self.source) if self.kind == "side" else self.source
        if self.kind == "store":
            try:
                with Store(self.source, readonly=True) as store:
                    self.run_id = store.resolve(run_id)
            except KeyError as exc:
                raise SourceError(str(exc.args[0])) from None
            except StoreError as exc:
                raise SourceError(str(exc)) from None
        else:
            ids = list(known) if known is not None else [r.run_id for r in read_source(self.source).runs]
            self.run_id = _resolve(self.source, ids, run_id)

    def save(self, answer: Answer) -> Answer:
        """Append one answer (its reason redacted, its time now when it has none) and return it as stored.

        Raises:
            SourceError: the file cannot be written (the message names it and why).
        """
        stored = _redacted(dataclasses.replace(answer, at_ns=answer.at_ns or time.time_ns()))
        record = answer_record(self.run_id, stored)
        try:
            if self.kind == "store":
                with Store(self.source) as store:
                    store.write_records([record], redacted=True)
            else:
                from trajdebug.core.codec import dumps_str

                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(dumps_str(record) + "\n")
        except OSError as exc:
            raise SourceError(f"{self.path}: cannot append the answer ({exc.strerror or exc})") from None
        except StoreError as exc:
            raise SourceError(f"{self.path}: cannot append the answer ({exc})") from None
        except Exception as exc:  # noqa: BLE001 - sqlite3 errors (read-only file, locked) as one line
            raise SourceError(f"{self.path}: cannot append the answer ({type(exc).__name__}: {exc})") from None
        return stored


def save_answer(source: str | Path, run_id: str, answer: Answer) -> Answer:
    """Store one answer with a run of a source, and return it as stored (see `AnswerLog`).

    Raises:
        SourceError: missing source, no such run, or the file cannot be written.
    """
    return AnswerLog(source, run_id).save(answer)


def forget_answers(
    source: str | Path, run_id: str, *, steps: Sequence[str] = (), by: str | None = None
) -> list[Answer]:
    """Take back the answers stored with a run: all of them, those about ``steps``, or those of ``by``.

    The records stay (the files are append-only); a withdrawing record per answer
    makes every reader leave it out, so the guided search may ask the step again: it does when it needs
    that answer (a proof that rested on it, a question left open), and a later answer stored with what it
    was asked as (`Answer.asked`) keeps its meaning without it.
    Returns the answers withdrawn.

    Raises:
        SourceError: missing source, no such run, or the file cannot be written.
    """
    from trajdebug.sources.load import load_runs

    log = AnswerLog(source, run_id)
    run = next((r for r in load_runs(source, run_id=log.run_id) if r.run_id == log.run_id), None)
    if run is None:
        raise SourceError(f"{source}: no run {run_id!r}")
    chosen = _chosen(run, steps)
    gone = [a for a in run.answers if (not steps or a.step_id in chosen) and (by is None or a.by == by)]
    for a in gone:
        log.save(dataclasses.replace(a, correct=None, at_ns=0, reason=None, withdrawn=True))
    return gone


def _chosen(run: Run, steps: Iterable[str]) -> set[str]:
    """The step ids the given ones name: an id, a prefix of one, or the short id every command shows
    (``#2a70cc``: its last characters); one that names several steps is refused, naming them.

    Raises:
        SourceError: a given id names more than one step.
    """
    ids = {s.step_id for s in run.steps} | {a.step_id for a in run.answers}
    out: set[str] = set()
    for given in steps:
        if given in ids:
            out.add(given)
            continue
        matches = sorted(sid for sid in ids if _names(sid, given.lstrip("#")))
        if len(matches) > 1:
            shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
            raise SourceError(f"--step {given!r} names {len(matches)} steps ({shown}): give more of the id")
        out.update(matches)
    return out


def _names(step_id: str, given: str) -> bool:
    """Whether an id given for a step names it: a prefix, or a suffix of 4 characters or more (a short id)."""
    return bool(given) and (step_id.startswith(given) or (len(given) >= 4 and step_id.endswith(given)))


def import_answers(source: str | Path, answers_file: str | Path, *, run_id: str | None = None) -> list[Answer]:
    """Store the answers of a JSONL file of ``answer`` records (the HTML report's download) with the
    runs of a source; returns the answers stored.

    Args:
        source: Where the runs live.
        answers_file: The ``answer`` records.
        run_id: Store them all with this run, whatever run id they carry.

    Raises:
        SourceError: the file cannot be read, or names a run the source does not hold.
    """
    try:
        answers, problems = read_answers(answers_file)
    except (OSError, FormatError) as exc:
        raise SourceError(f"{answers_file}: {exc}") from None
    if not answers and problems:
        raise SourceError(str(problems[0]))
    ids = [r.run_id for r in read_source(source).runs]
    stored: list[Answer] = []
    for rid, given in answers.items():
        log = AnswerLog(source, run_id or rid, known=ids)
        stored.extend(log.save(a) for a in given)
    return stored


def _resolve(path: Path, ids: list[str], run_id: str) -> str:
    if run_id in ids:
        return run_id
    found = sorted({i for i in ids if i.startswith(run_id)})
    if len(found) == 1:
        return found[0]
    if not found:
        raise SourceError(f"{path}: no run {run_id!r}")
    raise SourceError(ambiguous_prefix(path, run_id, found))


__all__ = ["AnswerLog", "forget_answers", "import_answers", "save_answer"]
