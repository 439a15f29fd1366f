"""One call from a source to its analyses: what ``trajdebug analyze`` answers, in Python.

`analyze_source` reads a source (a store, a JSONL file, a foreign trace),
chooses the runs to analyze, gives each the context the command line gives
it, and analyzes it (`trajdebug.analysis.analyze`):

- the **earlier turns** of a conversation (``continues``), so the search can
  follow ``context`` edges into them;
- the **references**: the passing runs of the same agent in the same source, and in
  the files given as ``refs`` (`trajdebug.analysis.references`), whose likely invariants
  turn the failing run's deviations into evidence;
- optionally, a **model on top** (`trajdebug.judge`): verdicts on the
  shortlisted candidates re-rank them, evidence kept (off unless asked for);
- optionally, **verification** of the top candidates by counterfactual replay
  (`trajdebug.replay.verify`), given the agent's entry point;
- optionally, the **guided search** (`trajdebug.analysis.guided_search`):
  oracles answer whether a step's output is correct, and Shapiro's search
  converges on the root (a function oracle, a person through ``ask``, the
  expectations registered in this process, a passing run of the same input,
  the model); the answers stored with the run are never asked again.

The command line only translates its arguments into this call (as
sqlite-utils' CLI does over ``Database``), so both give the same answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajdebug.analysis import Analysis, analyze, is_original, previous_turns, references
from trajdebug.core.collector import collector_paused
from trajdebug.core.model import Outcome, Run
from trajdebug.sources.load import FORCE_HINT, REFS_HINT, load_runs


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
    twins: tuple[Run | None, ...] = ()
    """One passing run of the same input (`same_input`) or None per analysis: what `--ask` lets answer first."""


def targets(runs: Sequence[Run], run_id: str | None = None) -> list[Run]:
    """The runs a command analyzes: the one asked for, else the runs that did not succeed, else all."""
    if run_id is not None:
        from trajdebug.sources.load import SourceError, select_run

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
    oracle: Any = None,
    max_questions: int | None = None,
    strategy: str = "prior",
    ask: Any = None,
    guided: bool | None = None,
    oracle_timeout: float | None = 10.0,
    model: Any = "default",
    session: bool = False,
    progress: Callable[[int, int | None], None] | None = None,
    refs: str | Path | Sequence[str | Path] = (),
) -> SourceAnalysis:
    """Analyze the runs of a source the way ``trajdebug analyze`` does.

    Args:
        source: A store, a trajdebug JSONL file or a foreign trace.
        run_id: Analyze only this run (a unique prefix is enough: an ambiguous one is a `trajdebug.SourceError`
            listing a few matches); otherwise the runs that did not succeed (all runs when every one succeeded).
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
        judge: A model on top of the analysis (`trajdebug.judge.Judge.of`): True (the endpoint from the
            environment), a `trajdebug.judge.JudgeConfig`, a `trajdebug.judge.Judge` or a `trajdebug.judge.ChatModel`.
            None (the default): nothing is sent, the analysis is the deterministic one.
            With the guided search on, the model also answers its questions (trusted last).
        oracle: A function oracle for the guided search: ``fn(step, run)`` returning True (output correct),
            False (wrong) or None (don't know), a ``"module:function"`` string naming one, or a sequence of them.
        max_questions: Stop the guided search after this many questions (candidates ranked).
        strategy: The guided search's question order: ``prior``, ``top-down`` or ``linear``.
        ask: An interactive oracle (a person at a terminal or a browser): asked first,
            on the calling thread, with no timeout.
        guided: Run the guided search: None (default) when an oracle or ``ask`` is given
            or expectations registered in this process cover a step of the run; True
            with only the checks and the passing runs of the same input; False never.
        oracle_timeout: Seconds an oracle may take per question (then: don't know, reported).
        model: The learned ranker (`trajdebug.analysis.learned`): ``"default"`` (the
            shipped model, the default), None (the hand ranking alone) or a model file's path.
        session: Also search the earlier runs of the run's session (`trajdebug.sessions`,
            the last `SESSION_TURNS`) for the root, as earlier conversation turns.
        progress: Called as ``progress(runs_analyzed, runs)`` after each run.
        refs: More sources of runs to compare with (a path or several), read as if in ``source`` (`_pooled`).

    Raises:
        trajdebug.SourceError: the source cannot be read, or has no run ``run_id``.
        trajdebug.judge.JudgeConfigError: ``judge=True`` and no model endpoint is configured.
    """
    pool = _pooled(source, list(runs) if runs is not None else _load(source, fmt), refs)
    chosen = _chosen(source, pool.own, run_id)
    settings = {"top": top, "outcome": outcome, "sql_db": sql_db, "weights": weights, "model": model}
    analyses, hints, twins = _each(chosen, pool, settings, use_references, session, progress)
    analyses, judgments = _judged(analyses, judge)
    verifications = _verified(analyses, pool.runs, source, runs, verify, fixer, samples, top)
    if guided is not False:
        analyses = [
            _guide(a, pool.same, oracle, ask, judge, guided, max_questions, strategy, oracle_timeout) for a in analyses
        ]
    return SourceAnalysis(tuple(analyses), tuple(hints), verifications, judgments, tuple(twins))


def _chosen(source: str | Path, pool: list[Run], run_id: str | None) -> Sequence[Run]:
    """The runs to analyze: ``run_id`` (no run, or an ambiguous prefix: `SourceError`), else `targets`."""
    if run_id is None:
        return targets(pool)
    from trajdebug.sources.load import select_run

    return select_run(source, pool, run_id)


@dataclass(frozen=True, slots=True)
class _Pool:
    """The runs an analysis of a source compares with (`_pooled`)."""

    own: list[Run]
    """The source's runs, as given: the only ones analyzed (`_chosen`)."""
    runs: list[Run]
    """The source's runs, then each ``refs`` source's."""
    origin: dict[str, tuple[str, str]]
    """Where each run of ``runs`` was read: its file and its id there (what a ``diff`` hint names)."""
    refs: tuple[str, ...]
    """The ``refs`` sources, as given."""
    same: SameInput
    """The passing runs of ``runs`` by input (`SameInput`), indexed once."""


def _pooled(source: str | Path, own: list[Run], refs: str | Path | Sequence[str | Path]) -> _Pool:
    """The source's runs (``own``) and each ``refs`` source's after them (``refs``: one path or several).

    The runs of ``refs`` join the source's exactly as if they were in it (the analysis of the concatenated
    file): passing runs of the same agent are references, a passing run of the same input is compared value
    for value and answers the guided search; on another input a reference compares behaviour (what the
    agent's steps always did), not values.  A run whose id an earlier one has (message logs name runs by their
    ``task_id``: ``task-5`` in both files) is renamed as the loader renames a repeat in one file (``task-5-2``,
    `trajdebug.sources.formats._common.unique_ids`), never left out."""
    from dataclasses import replace

    paths = (str(refs),) if isinstance(refs, (str, Path)) else tuple(str(r) for r in refs)
    pool = list(own)
    origin = {r.run_id: (str(source), r.run_id) for r in own}
    for ref in paths:
        for r in _load(ref, None, refs=True):
            rid = r.run_id
            n = 1
            while rid in origin:
                n += 1
                rid = f"{r.run_id}-{n}"
            origin[rid] = (ref, r.run_id)
            pool.append(r if rid == r.run_id else replace(r, run_id=rid))
    return _Pool(own, pool, origin, paths, SameInput(pool))


def _each(
    chosen: Sequence[Run],
    pool: _Pool,
    settings: dict[str, Any],
    use_references: bool,
    session: bool,
    progress: Callable[[int, int | None], None] | None,
) -> tuple[list[Any], list[str], list[Run | None]]:
    """Each chosen run analyzed against its pool, with the ``diff`` hint and twin of a failed one; with ``refs``,
    each analysis names them (`Analysis.refs`: the reports say where no passing run was found)."""
    from dataclasses import replace

    analyses: list[Any] = []
    hints: list[str] = []
    twins: list[Run | None] = []
    ids = tuple(r.run_id for r in pool.runs)
    for run in chosen:
        earlier = _earlier(run, pool.runs, session)
        refs = references(run, pool.runs) if use_references else ()
        analysis = analyze(run, previous=earlier, references=refs, **settings)
        shown = replace(analysis, source_ids=ids)
        analyses.append(replace(shown, refs=pool.refs, other_agents=_other_agents(run, pool)) if pool.refs else shown)
        twin = pool.same.of(run) if run.outcome != "success" else None
        twins.append(twin)
        if twin is not None and twin.run_id in analysis.same_input[1:]:
            # The verdict's advice names the run `--ask` answers from (`report.analysis.verdict_note` names the first).
            rest = tuple(s for s in analysis.same_input if s != twin.run_id)
            analyses[-1] = replace(analyses[-1], same_input=(twin.run_id, *rest))
        if twin is not None:
            # Only a passing run of the same input is worth a diff: on another input every value differs.
            hints.append(f"trajdebug diff {_where(pool.origin, twin)} {_where(pool.origin, run)}")
        if progress is not None:
            progress(len(analyses), len(chosen))
    return analyses, hints, twins


def _other_agents(run: Run, pool: _Pool) -> tuple[tuple[str, int], ...]:
    """The passing runs of the ``refs`` files that are another agent's than ``run``'s: (name, count), most first."""
    from collections import Counter

    from trajdebug.analysis import same_agent

    own = {r.run_id for r in pool.own}
    names = Counter(
        r.name for r in pool.runs if r.run_id not in own and r.outcome == "success" and not same_agent(r, run)
    )
    return tuple(names.most_common())


def _where(origin: dict[str, tuple[str, str]], run: Run) -> str:
    """``FILE@ID`` for a run of the pool: the file it was read from and its id there (a renamed repeat's own)."""
    from trajdebug.core.shortids import short_id

    path, rid = origin.get(run.run_id, ("", run.run_id))
    # The id is cut as short as still names one run of that file: a hint that fails as ambiguous is no hint.
    return f"{path}@{short_id(rid, (i for p, i in origin.values() if p == path))}"


def _judged(analyses: list[Any], judge: Any) -> tuple[list[Any], tuple[Any, ...]]:
    """The analyses as a model judged them (``judge``: see `analyze_source`), with its judgments."""
    if judge is None or judge is False:
        return analyses, ()
    from trajdebug.judge import Judge

    judging = Judge.of(judge)
    judged = [judging.judge(a) for a in analyses]
    return [a for a, _ in judged], tuple(j for _, j in judged)


def _verified(
    analyses: list[Any],
    pool: list[Run],
    source: str | Path,
    runs: Sequence[Run] | None,
    verify: Callable[..., Any] | str | None,
    fixer: Callable[..., Any] | str | None,
    samples: int,
    top: int,
) -> tuple[Any, ...]:
    """The top candidates verified by replay when ``verify`` names the agent's entry point."""
    if verify is None:
        return ()
    from trajdebug.replay import verify_analyses
    from trajdebug.store import is_store

    where = Path(source)
    # Replays are written beside the recorded runs only when the source is a store read from disk.
    store = str(where) if runs is None and where.is_file() and is_store(where) else None
    return tuple(
        verify_analyses(analyses, pool, entry=verify, fixer=fixer, samples=samples, top=min(top, 3), store=store)
    )


def _guide(
    analysis: Analysis,
    same: SameInput,
    oracle: Any,
    ask: Any,
    judge: Any,
    guided: bool | None,
    max_questions: int | None,
    strategy: str,
    timeout: float | None,
) -> Analysis:
    """The analysis with its guided search's result, when there is a failure to search from and an oracle."""
    from dataclasses import replace

    from trajdebug.analysis import ExpectationOracle, ReferenceOracle, guided_search, settled
    from trajdebug.record.expectations import expectations

    run = analysis.run
    if run.outcome == "success" or not analysis.failures:
        return analysis
    oracles: list[Any] = []
    if ask is not None:
        oracles.append(ask)
    oracles.extend(_oracles(oracle))
    checks = ExpectationOracle(expectations())
    if checks.covers(run):
        oracles.append(checks)
    if not oracles and not guided:
        return _stored_answers(analysis, strategy, max_questions)
    twin = same.of(run)
    if twin is not None:
        oracles.append(ReferenceOracle(twin))
    if judge is not None and judge is not False:
        from trajdebug.judge import JudgeOracle

        oracles.append(JudgeOracle.of(judge))
    if not oracles:
        # Guided search asked for, but nothing found to answer it: the stored answers count all the same,
        # as they do without it (asking for more must not lose what a person already said).
        return _stored_answers(analysis, strategy, max_questions)
    result = guided_search(
        analysis, oracles, answers=run.answers, strategy=strategy, max_questions=max_questions, timeout=timeout
    )
    return settled(replace(analysis, guided=result))


def _stored_answers(analysis: Analysis, strategy: str, max_questions: int | None) -> Analysis:
    """With no one to ask now, the answers stored earlier (--ask, the report, serve) still settle what they
    can: the guided search's state over them, with nothing asked.  The analysis as it is when there are none."""
    from dataclasses import replace

    from trajdebug.analysis import GuidedSearch, settled

    if not analysis.run.answers:
        return analysis
    search = GuidedSearch(analysis, analysis.run.answers, strategy=strategy, max_questions=max_questions)
    return settled(replace(analysis, guided=search.result()))


def _oracles(oracle: Any) -> list[Any]:
    """Function oracles as given: callables, or ``"module:function"`` names resolved (`pkgutil.resolve_name`)."""
    import pkgutil

    if oracle is None:
        return []
    items = [oracle] if isinstance(oracle, str) or callable(oracle) else list(oracle)
    out = []
    for o in items:
        if isinstance(o, str):
            fn = pkgutil.resolve_name(o)
            if not callable(fn):
                raise TypeError(f"oracle {o!r} is not callable")
            out.append(fn)
        else:
            out.append(o)
    return out


def same_input(run: Run, pool: Sequence[Run]) -> Run | None:
    """The latest passing run of the same agent given the same input (task, entry arguments), if any.

    The same input is the same ``task`` (or ``input``) in the runs' metadata and, where both runs' first steps
    state one, the same first input (a request id or time aside); when neither metadata says, the same input
    of the first step (`trajdebug.analysis.reference.same_request`).  To ask it of many
    runs of one pool, index the pool once (`SameInput`).
    """
    return SameInput(pool).of(run)


class SameInput:
    """A pool's passing runs indexed by agent and input (`trajdebug.analysis.reference.input_key`), built once:
    each run's passing run of the same input (`same_input`) is then a look-up, not a scan of the pool that
    writes every input again (200 failing runs against 5,000 references were a million comparisons)."""

    __slots__ = ("_by",)

    def __init__(self, pool: Sequence[Run]) -> None:
        from trajdebug.analysis.reference import first_input_key, input_key

        # Each run's first input is written once here (with a ``task``, `same_request` compares it too): a
        # look-up then compares the stored keys, never writing a candidate's input again per failing run.
        self._by: dict[tuple[str, str, str], list[tuple[Run, str | None]]] = {}
        for r in pool:
            key = input_key(r) if r.outcome == "success" else None
            if key is not None:
                first = first_input_key(r) if key[0] != "first" else None
                self._by.setdefault((r.name, *key), []).append((r, first))

    def of(self, run: Run) -> Run | None:
        """The latest passing run of the same agent given the same input as ``run`` (the later in the pool among
        equal starts), other than itself; None when there is none (`same_request`'s rule, on stored keys)."""
        from trajdebug.analysis.reference import first_input_key, first_inputs_agree, input_key, same_agent

        key = input_key(run)
        if key is None:
            return None
        mine = first_input_key(run) if key[0] != "first" else None
        best = None
        for r, first in self._by.get((run.name, *key), ()):
            if (
                r.run_id != run.run_id
                and same_agent(r, run)
                and (best is None or r.start_ns >= best.start_ns)
                and first_inputs_agree(mine, first)
            ):
                best = r
        return best


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


def _load(source: str | Path, fmt: str | None, *, refs: bool = False) -> list[Run]:
    """`load_runs` with the cyclic collector paused: the loaded runs are millions of small objects that
    all stay alive, which every collection during the load would traverse again (as in the analysis).
    ``refs``: a ``--refs`` file, whose format is always detected (an error says what to do, not ``--from``)."""
    with collector_paused():
        return load_runs(source, fmt=fmt, hint=REFS_HINT if refs else FORCE_HINT)


__all__ = ["SESSION_TURNS", "SameInput", "SourceAnalysis", "analyze_source", "same_input", "targets"]
