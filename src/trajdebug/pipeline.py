"""One call from a source to its analyses: what ``trajdebug analyze`` answers, in Python.

`analyze_source` reads a source (a store, a JSONL file, a foreign trace),
chooses the runs to analyze, gives each the context the command line gives
it, and analyzes it (`trajdebug.analysis.analyze`):

- the **earlier turns** of a conversation (``continues``), so the search can
  follow ``context`` edges into them;
- the **references**: the passing runs of the same agent in the same source
  (`trajdebug.analysis.references`), whose likely invariants turn the
  failing run's deviations into evidence;
- optionally, a **model on top** (`trajdebug.judge`): verdicts on the
  shortlisted candidates re-rank them, evidence kept (off unless asked for);
- optionally, **verification** of the top candidates by counterfactual replay
  (`trajdebug.replay.verify`), given the agent's entry point.

The command line only translates its arguments into this call (as
sqlite-utils' CLI does over ``Database``), so both give the same answer.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajdebug.analysis import Analysis, analyze, is_original, previous_turns, references
from trajdebug.model import Outcome, Run
from trajdebug.source import load_runs


@dataclass(frozen=True, slots=True)
class SourceAnalysis:
    """The analyses of a source, and what the command line prints after them."""

    analyses: tuple[Analysis, ...]
    """One analysis per run analyzed, in the source's order."""
    hints: tuple[str, ...] = ()
    """Next commands worth running (``trajdebug diff GOOD BAD`` when a passing run exists)."""
    verifications: tuple[Any, ...] = ()
    """One `trajdebug.replay.Verification` (or None) per analysis, when verification ran."""
    judgments: tuple[Any, ...] = ()
    """One `trajdebug.judge.Judgment` (or None: nothing judged) per analysis, when a judge was given."""


def targets(runs: Sequence[Run], run_id: str | None = None) -> list[Run]:
    """The runs a command analyzes: the one asked for, else the runs that did not succeed, else all."""
    if run_id is not None:
        from trajdebug.source import SourceError, select_run

        try:
            return select_run("source", runs, run_id)
        except SourceError:
            return []
    originals = [r for r in runs if is_original(r)] or list(runs)
    failed = [r for r in originals if r.outcome != "success"]
    return failed or originals


def analyze_source(
    source: str | Path,
    run_id: str | None = None,
    *,
    fmt: str | None = None,
    top: int = 5,
    outcome: Outcome | None = None,
    use_references: bool = True,
    sql_db: str | Path | None = None,
    weights: dict[str, float] | None = None,
    verify: Callable[..., Any] | str | None = None,
    fixer: Callable[..., Any] | str | None = None,
    samples: int = 3,
    runs: Sequence[Run] | None = None,
    judge: Any = None,
    session: bool = False,
    progress: Callable[[int, int | None], None] | None = None,
) -> SourceAnalysis:
    """Analyze the runs of a source the way ``trajdebug analyze`` does.

    Args:
        source: A store, a trajdebug JSONL file or a foreign trace.
        run_id: Analyze only this run (a unique prefix is enough: an ambiguous one is a
            `trajdebug.SourceError` listing a few matches); otherwise the
            runs that did not succeed (all runs when every one succeeded).
        fmt: Force the source's format (``otlp``, ``openai``, ``transcript``...).
        top: How many root-cause candidates per run.
        outcome: The outcome of runs whose source did not record one.
        use_references: Compare with the passing runs of the same agent in the source.
        sql_db: The SQLite file the runs' SQL targets (opened read-only).
        weights: Ranking weight overrides (`trajdebug.analysis` ``DEFAULT_WEIGHTS``).
        verify: The agent's entry point (a callable or ``"module:function"``):
            verify the top candidates of each failed run by replay.
        fixer: A fixer for verification (a callable or ``"module:function"``).
        samples: Replays per patch with live calls (verification).
        runs: The source's runs when already loaded (skips reading ``source``).
        judge: A model on top of the analysis (`trajdebug.judge.Judge.of`): True
            (the endpoint from the environment), a `trajdebug.judge.JudgeConfig`,
            a `trajdebug.judge.Judge` or a `trajdebug.judge.ChatModel`.  None
            (the default): nothing is sent, the analysis is the deterministic one.
        session: Also search the earlier runs of the run's session (`trajdebug.sessions`,
            the last `SESSION_TURNS`) for the root, as earlier conversation turns.
        progress: Called as ``progress(runs_analyzed, runs)`` after each run.

    Raises:
        trajdebug.SourceError: the source cannot be read, or has no run ``run_id``.
        trajdebug.judge.JudgeConfigError: ``judge=True`` and no model endpoint is configured.
    """
    pool = list(runs) if runs is not None else _load(source, fmt)
    if run_id is not None:
        from trajdebug.source import select_run

        chosen = select_run(source, pool, run_id)  # no run, or an ambiguous prefix: SourceError
    else:
        chosen = targets(pool)
    analyses = []
    hints: list[str] = []
    for run in chosen:
        earlier = _earlier(run, pool, session)
        refs = references(run, pool) if use_references else ()
        analyses.append(
            analyze(
                run,
                top=top,
                outcome=outcome,
                previous=earlier,
                references=refs,
                sql_db=sql_db,
                weights=weights,
            )
        )
        if refs and run.outcome != "success":
            hints.append(f"trajdebug diff {source}@{refs[0].run_id[:12]} {source}@{run.run_id[:12]}")
        if progress is not None:
            progress(len(analyses), len(chosen))
    judgments: tuple[Any, ...] = ()
    if judge is not None and judge is not False:
        from trajdebug.judge import Judge

        model = Judge.of(judge)
        judged = [model.judge(a) for a in analyses]
        analyses = [a for a, _ in judged]
        judgments = tuple(j for _, j in judged)
    verifications: tuple[Any, ...] = ()
    if verify is not None:
        from trajdebug.replay import verify_analyses
        from trajdebug.store import is_store

        where = Path(source)
        store = str(where) if runs is None and where.is_file() and is_store(where) else None
        verifications = tuple(
            verify_analyses(
                analyses, pool, entry=verify, fixer=fixer, samples=samples, top=min(top, 3), store=store
            )
        )
    return SourceAnalysis(tuple(analyses), tuple(hints), verifications, judgments)


SESSION_TURNS = 5
"""Earlier runs of a session that ``session=True`` joins to a run (the most recent ones)."""


def _earlier(run: Run, pool: Sequence[Run], session: bool) -> tuple[Run, ...]:
    """The turns before ``run``: its ``continues`` chain and, when asked, the earlier runs of its session."""
    earlier = previous_turns(run, pool) if run.continues else ()
    if not session:
        return earlier
    from trajdebug.sessions import earlier_in_session

    have = {r.run_id for r in earlier}
    more = [r for r in earlier_in_session(run, pool) if is_original(r) and r.run_id not in have]
    return tuple(sorted([*earlier, *more[-SESSION_TURNS:]], key=lambda r: (r.start_ns, r.run_id)))


def _load(source: str | Path, fmt: str | None) -> list[Run]:
    """`load_runs` with the cyclic collector paused: the loaded runs are millions of small objects that
    all stay alive, which every collection during the load would traverse again (as in the analysis)."""
    if not gc.isenabled():
        return load_runs(source, fmt=fmt)
    gc.disable()
    try:
        return load_runs(source, fmt=fmt)
    finally:
        gc.enable()


__all__ = ["SESSION_TURNS", "SourceAnalysis", "analyze_source", "targets"]
