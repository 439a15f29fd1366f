"""Scores on runs and steps: a named number, category or boolean, from a person, a program or a model.

What Langfuse calls scores, LangSmith feedback and Phoenix annotations: a judgement that is more than a
verdict (`trajdebug.mark`: failed or not) or a root-cause label (`trajdebug.labels`).  A `Score` names what
is judged (``helpfulness``), holds the value (``0.3``, ``"off-topic"``, ``true``), where it came from
(``human``, ``code``, ``llm``), who gave it (``by``), why (``comment``), when, and its target: the run, or
one of its steps.  Each is a ``score`` record (``docs/format.md``) appended the way a mark or an answer is:

- while recording, into the run being recorded (`score` with no ``store``), through the recorder's writer;
- after the fact, to a store (SQLite file) or a trajdebug JSONL file, among the run's records;
- beside a foreign trace, never rewritten, in its side file ``SOURCE.answers.jsonl`` (`trajdebug.sidefile`).

Every score is kept (a run holds any number, several of one name): nothing is merged or replaced.  Every
way in (the API, ``trajdebug score``, serve's form) checks the fields with
`trajdebug.core.schema.make_score`, and the comment is redacted with the process policy before it is written,
like every free text.  The analysis does not read scores.

Example:
    ```python
    import trajdebug

    with trajdebug.run("support") as run:
        with trajdebug.step("answer", kind="llm") as s:
            ...
            trajdebug.score("grounded", True, source="code", by="check:citations")   # on the step
    trajdebug.score("helpfulness", 0.3, store="trajdebug.db", run=run.run_id, comment="vague", by="dan")
    ```
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajdebug.core.model import Run, Score, ScoreValue
from trajdebug.core.schema import make_score, numeric, score_record
from trajdebug.sources.load import SourceError


CURRENT: Any = ...
"""`score`'s ``step`` default: the step being recorded when there is one, else the run."""


def _redacted(s: Score) -> Score:
    from trajdebug.core import redaction

    red = redaction.redactor()
    if red is None or not s.comment:
        return s
    return dataclasses.replace(s, comment=red.text(s.comment))


def score(
    name: str,
    value: Any,
    *,
    comment: str | None = None,
    by: str | None = None,
    source: str = "human",
    run: Any = None,
    step: Any = CURRENT,
    store: str | Path | None = None,
) -> Score:
    """Put a score on a run or one of its steps, and return it as stored.

    Args:
        name: What is judged (``helpfulness``).
        value: A number, a category (a string) or a boolean.
        comment: Why, in words (redacted before it is written).
        by: Who gave it: a person, a check, a model.
        source: ``human``, ``code`` or ``llm``.
        run: The run: its id (a unique prefix is enough) with ``store``; None while recording: the current run.
        step: The step: a step handle, a step id, a unique step name or short id (``#000007``) with ``store``;
            None: the run itself; left out: while recording the current step (the run outside any step),
            after the fact the run.
        store: Where the run lives (a store, a trajdebug JSONL file, a foreign trace); None: the run being
            recorded in this context.

    Raises:
        ValueError: a field is wrong (the message names it), or no run is being recorded and no store given.
        SourceError: the store, the run or the step is not there, or the file cannot be written.
    """
    checked = make_score(name, value, source=source, by=by, comment=comment, at_ns=time.time_ns())
    if store is None:
        return _score_live(checked, run, step)
    if run is None:
        raise ValueError("score field 'run': give the run's id with store=")
    sid = None if step is None or step is CURRENT else _step_ref(step)
    return save_score(store, str(run), checked, step=sid)


def _step_ref(step: Any) -> str:
    sid = getattr(step, "id", step)
    if not isinstance(sid, str) or not sid:
        raise ValueError(f"score field 'step_id': give a step handle or a step id, got {step!r}")
    return sid


def _score_live(checked: Score, run: Any, step: Any) -> Score:
    """A score on the run being recorded (or its step), written by the recorder's writer with its records."""
    from trajdebug.record.config import CONFIG
    from trajdebug.record.recorder import current_run, current_step

    if not CONFIG.enabled:
        # The off switch makes every recording call a no-op (docs/recording.md): the agent's call still checks
        # its fields, and writes nothing.
        return checked
    handle = current_run() if run is None else run
    if handle is None or not hasattr(handle, "_emit"):
        raise ValueError(
            "score field 'run': no run is being recorded here; give store= and run= to score a stored run"
        )
    if step is CURRENT:
        cur = current_step()
        sid = cur.id if cur is not None and cur.id else None
    else:
        sid = None if step is None else _step_ref(step)
    stored = _redacted(dataclasses.replace(checked, step_id=sid))
    handle._emit(score_record(handle.run_id, stored))
    return stored


def save_score(source: str | Path, run_id: str, s: Score, *, step: str | None = None) -> Score:
    """Append one checked score to a run of a source (to the step ``step`` names: an id, a unique name or
    short id), its comment redacted and its time now when it has none; returns it as stored.

    Raises:
        SourceError: no such source, run or step, or the file cannot be written (the message names it).
    """
    from trajdebug.answers import AnswerLog
    from trajdebug.sources.load import load_runs

    log = AnswerLog(source, run_id)
    sid = s.step_id
    if step is not None:
        found = [r for r in load_runs(source, run_id=log.run_id) if r.run_id == log.run_id]
        if not found:
            raise SourceError(f"{source}: no run {run_id!r}")
        sid = step_of(found[0], step)
    stored = _redacted(dataclasses.replace(s, step_id=sid, at_ns=s.at_ns or time.time_ns()))
    _append(log, score_record(log.run_id, stored))
    return stored


def step_of(run: Any, given: str) -> str:
    """The step ``given`` names in ``run``: its id, a unique id prefix, a unique name, or the short id every
    command prints (``#000007``, ``parse_amount#000007``: the id's last 4 or more characters).

    Raises:
        SourceError: it names no step, or several (the message says which to give).
    """
    ids: list[str] = [s.step_id for s in run.steps]
    if given in ids:
        return given
    name, _, short = given.rpartition("#") if "#" in given else ("", "", given)
    hits = dict.fromkeys(
        [i for i in ids if i.startswith(given)]
        + [s.step_id for s in run.steps if s.name == given]
        + [s.step_id for s in run.steps if len(short) >= 4 and s.step_id.endswith(short) and name in ("", s.name)]
    )
    if len(hits) == 1:
        return str(next(iter(hits)))
    what = "matches several steps" if hits else "matches no step"
    raise SourceError(
        f"run {run.run_id}: step {given!r} {what} (give a step id, the short id shown as #000007, or a unique name)"
    )


def _append(log: Any, record: dict[str, Any]) -> None:
    """Append one record where `AnswerLog` appends answers (the store, the JSONL file, the side file)."""
    from trajdebug.store import Store, StoreError

    try:
        if log.kind == "store":
            with Store(log.source) as st:
                st.write_records([record], redacted=True)
        else:
            from trajdebug.core.codec import dumps_str

            with log.path.open("a", encoding="utf-8") as fh:
                fh.write(dumps_str(record) + "\n")
    except OSError as exc:
        raise SourceError(f"{log.path}: cannot append the score ({exc.strerror or exc})") from None
    except StoreError as exc:
        raise SourceError(f"{log.path}: cannot append the score ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - sqlite3 errors (read-only file, locked) as one line
        raise SourceError(f"{log.path}: cannot append the score ({type(exc).__name__}: {exc})") from None


# -- reading scores: `runs --score`, serve's score filter, their scores column --------------------------------

_OPS = ("<=", ">=", "!=", "<", ">", "=")


@dataclass(frozen=True, slots=True)
class ScoreFilter:
    """``runs --score``: a run has a score of this name (on itself or a step), and, with a bound, one that meets it."""

    name: str
    op: str | None = None
    """``<``, ``<=``, ``>``, ``>=`` (numbers), ``=`` or ``!=`` (any value); None: any value."""
    value: ScoreValue | None = None

    def keeps(self, scores: Iterable[Score]) -> bool:
        """Whether one of the scores meets the filter."""
        return any(s.name == self.name and self._meets(s.value) for s in scores)

    def _meets(self, v: ScoreValue) -> bool:
        if self.op is None:
            return True
        if self.op in ("=", "!="):
            same = type(v) is type(self.value) or (numeric(v) and numeric(self.value))
            return (same and v == self.value) == (self.op == "=")
        if not (numeric(v) and numeric(self.value)):
            return False
        a, b = float(v), float(self.value)  # type: ignore[arg-type]
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[self.op]


def parse_score_filter(text: str) -> ScoreFilter:
    """``NAME``, or ``NAME`` then ``<``, ``<=``, ``>``, ``>=``, ``=`` or ``!=`` and a value (``helpfulness<0.5``).

    Raises:
        ValueError: no name, or a comparison of order with something that is not a number (the message says
            which; `runs --score` and serve's score filter show it).
    """
    from trajdebug.core.schema import parse_value

    for op in _OPS:
        name, found, value = text.partition(op)
        if found:
            if not name.strip() or not value.strip():
                raise ValueError(f"{text!r}: give NAME, or NAME<0.5, NAME>=3, NAME=rude")
            parsed = parse_value(value)
            if op not in ("=", "!=") and not numeric(parsed):
                raise ValueError(f"{text!r}: {op} compares numbers, got {value.strip()!r}")
            return ScoreFilter(name.strip(), op, parsed)
    if not text.strip():
        raise ValueError("give a score name")
    return ScoreFilter(text.strip())


def score_cells(run: Run) -> str:
    """A run's scores in one cell: ``name=value`` for the run's, ``step:name=value`` for a step's, in order."""
    from trajdebug.core.schema import score_text

    names = {s.step_id: s.name for s in run.steps}
    return " ".join(
        (f"{names.get(s.step_id, s.step_id)}:" if s.step_id else "") + f"{s.name}={score_text(s.value)}"
        for s in run.scores
    )


__all__ = ["CURRENT", "ScoreFilter", "parse_score_filter", "save_score", "score", "score_cells", "step_of"]
