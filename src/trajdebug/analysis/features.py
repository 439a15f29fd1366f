"""Features of the ranked steps: what a learned ranker reads about each candidate root cause.

`features(analysis)` turns the public result of one analysis (its ranking,
candidates, failures, run and dependency graph) into one ``name -> float``
mapping per ranked step.  Nothing here reads step content or phrases: only
structure (kind, position, speakers, edges), the hand ranker's own verdict
(score, rank, signal families, the structural-root flag), and the error
lifecycle.  Stacking the hand ranker's score as a feature is deliberate: the
model learns when to trust it and when a structural prior (the first step,
the first change of speaker) beats it, as fault-localization learners do
(Xuan & Monperrus 2014, Multric; Zou et al. 2019, CombineFL).

A feature missing from a step's mapping reads as 0.  Names that depend on
the data (``kind:llm``, ``fam:omission``) are open-ended: the model keeps the
ones it was trained with and ignores others.  Every feature is listed, with
what it can and cannot see, in docs/analysis.md ("Features").  When a
`Candidate` carries its own ``features`` mapping (the evidence stages), it is
merged in under its own names.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trajdebug.analysis._content import text_of
from trajdebug.analysis._evidence import family
from trajdebug.analysis._localize import Candidate
from trajdebug.core.graph import DependencyGraph
from trajdebug.core.model import Run, Step


if TYPE_CHECKING:
    from trajdebug.analysis._pipeline import Analysis


Key = tuple[str | None, str]
"""A ranked step: ``(run id when an earlier turn, else None; step id)``."""


def _steps(analysis: Analysis) -> dict[Key, Step]:
    out: dict[Key, Step] = {(r.run_id, s.step_id): s for r in analysis.previous for s in r.steps}
    out.update({(None, s.step_id): s for s in analysis.run.steps})
    return out


def _ranked(analysis: Analysis) -> Sequence[Candidate]:
    """Every ranked step as a candidate (`Localization.ranked_all`), else the candidates kept."""
    loc = analysis.localization
    return loc.ranked_all or loc.candidates


def ranked_keys(analysis: Analysis) -> list[Key]:
    """Every ranked step, best first: the candidates, then the rest of the ranking (in this run)."""
    keys: list[Key] = [(c.run_id, c.step_id) for c in _ranked(analysis)]
    seen = set(keys)
    own = {s.step_id for s in analysis.run.steps}
    for sid in analysis.localization.ranking:
        if (None, sid) not in seen and sid in own:
            keys.append((None, sid))
            seen.add((None, sid))
    return keys


def _speaker(s: Step) -> str:
    return s.agent or ""


@dataclass(frozen=True, slots=True)
class _Facts:
    """Per-run structure, computed once: positions, speakers, first appearances, model calls."""

    pos: dict[str, int]
    """Each step's index in the run."""
    first_change: int
    """Index of the first step whose speaker differs from the first step's (-1: none)."""
    first_of_agent: frozenset[str]
    """Each agent's first step."""
    first_llm: str | None
    """The first model call."""
    agents: int
    """Distinct speakers."""
    turns: dict[str, int]
    """How many steps the step's agent had before it."""
    llm_index: dict[str, int]
    """Each model call's index among model calls."""
    prev_llm_speaker: dict[str, str]
    """Each model call's previous model call's speaker."""


def _run_facts(run: Run) -> _Facts:
    """Per-run structure: positions, speaker changes, first appearances."""
    steps = run.steps
    first_change = next((i for i in range(1, len(steps)) if _speaker(steps[i]) != _speaker(steps[0])), -1)
    first_of_agent: set[str] = set()
    turns: dict[str, int] = {}
    spoken: dict[str, int] = {}
    prev_llm_speaker: dict[str, str] = {}
    last: str | None = None
    for s in steps:
        if _speaker(s) not in spoken:
            first_of_agent.add(s.step_id)
        turns[s.step_id] = spoken.get(_speaker(s), 0)
        spoken[_speaker(s)] = turns[s.step_id] + 1
        if s.kind == "llm":
            if last is not None:
                prev_llm_speaker[s.step_id] = last
            last = _speaker(s)
    return _Facts(
        {s.step_id: i for i, s in enumerate(steps)},
        first_change,
        frozenset(first_of_agent),
        next((s.step_id for s in steps if s.kind == "llm"), None),
        len(spoken),
        turns,
        {s.step_id: j for j, s in enumerate(p for p in steps if p.kind == "llm")},
        prev_llm_speaker,
    )


def _errors(run: Run) -> tuple[set[str], set[str]]:
    """Steps where an error arose, and steps whose error was recovered or ignored."""
    errored = {e.step_id for e in run.errors} | {s.step_id for s in run.steps if s.error is not None}
    recovered = {e.step_id for e in run.errors if e.stage in ("recovered", "ignored")}
    return errored, recovered


def _structure(step: Step, i: int, steps: Sequence[Step], facts: _Facts) -> dict[str, float]:
    """Kind, position and speaker features of one step of the analyzed run."""
    n = max(len(steps), 1)
    prev = steps[i - 1] if i > 0 else None
    out = {
        f"kind:{step.kind}": 1.0,
        "pos_from_start": i / n,
        "pos_from_end": (n - 1 - i) / n,
        "index_log": math.log1p(i),
        "is_first": float(i == 0),
        "is_last": float(i == n - 1),
        "first_speaker_change": float(i == facts.first_change),
        "first_of_agent": float(step.step_id in facts.first_of_agent),
        "first_llm": float(step.step_id == facts.first_llm),
        "agents_log": math.log1p(facts.agents),
        "steps_log": math.log1p(n),
        "retry": float(step.attempt > 1 or step.retry_of is not None),
        "status_error": float(step.status != "ok"),
        "has_parent": float(step.parent_id is not None),
    }
    nxt = steps[i + 1] if i + 1 < len(steps) else None
    llm_idx, turns = facts.llm_index, facts.turns
    if step.step_id in llm_idx:
        j, n_llm = llm_idx[step.step_id], len(llm_idx)
        out["llm_index_log"] = math.log1p(j)
        out["llm_from_end"] = (n_llm - 1 - j) / n_llm
    out["turns_before_log"] = math.log1p(turns.get(step.step_id, 0))
    out["output_log"] = math.log1p(len(text_of(step.output, 20_000)))
    out["input_log"] = math.log1p(len(text_of(step.input, 20_000)))
    if nxt is not None:
        out["next_error"] = float(nxt.status != "ok" or nxt.error is not None)
        out["next_kind_tool"] = float(nxt.kind == "tool")
        out["next_same_agent"] = float(_speaker(nxt) == _speaker(step))
    if prev is not None:
        out["agent_change"] = float(_speaker(prev) != _speaker(step))
        out["name_change"] = float(prev.name != step.name)
        out["parent_change"] = float(prev.parent_id != step.parent_id)
        out["kind_change"] = float(prev.kind != step.kind)
        # Among LLM steps: the model's speaker changed since the previous LLM step.
        prev_llm = facts.prev_llm_speaker
        if step.step_id in prev_llm:
            out["llm_speaker_change"] = float(prev_llm[step.step_id] != _speaker(step))
    return out


def _hand(c: Candidate, rank: int, top_score: float, total: int) -> dict[str, float]:
    """The hand ranker's verdict on the step: score, rank, root flag, signal families."""
    out = {
        "hand_score": c.score,
        "hand_score_rel": c.score / top_score if top_score > 0 else 0.0,
        "hand_rank_inv": 1.0 / rank,
        "hand_rank_rel": (rank - 1) / max(total - 1, 1),
        "hand_top": float(rank == 1),
        "hand_top3": float(rank <= 3),
        "root": float(c.root),
        "path_len": float(len(c.path)),
        "inferred_path": float(bool(c.inferred)),
        "inferred_conf_min": min((conf for _, conf in c.inferred), default=1.0),
        "reasons": float(len(c.reasons)),
        "signals": float(len(c.signals)),
        "earlier_turn": float(c.run_id is not None),
    }
    for sig in c.signals:
        out[f"fam:{family(sig)}"] = 1.0
        out[f"src:{sig.split(':', 1)[0]}"] = 1.0
    return out


_RANKER_NAMES: dict[str, str] = {}
"""Each hand-ranker feature's name in the learned ranker's namespace, written once (a few hundred names, read
for every ranked step)."""


def _ranker_name(name: str) -> str:
    said = _RANKER_NAMES.get(name)
    if said is None:
        if len(_RANKER_NAMES) >= 1 << 14:  # (names carry diagnoser names only: a bound all the same)
            _RANKER_NAMES.clear()
        said = _RANKER_NAMES[name] = f"ranker:{name}"
    return said


def features(analysis: Analysis, graph: DependencyGraph | None = None) -> dict[Key, dict[str, float]]:
    """The features of every ranked step of an analysis (see the module docstring).

    The analysis should be run with a ``top`` large enough to keep every
    ranked step as a candidate; steps ranked but not among the candidates get
    only structural features and the hand rank.  ``graph``: the analyzed run's dependency graph when the
    caller holds it (the pipeline built it): a graph of another run is not used.
    """
    run = analysis.run
    keys = ranked_keys(analysis)
    if not keys:
        return {}
    steps = _steps(analysis)
    cands = {(c.run_id, c.step_id): c for c in _ranked(analysis)}
    facts = _run_facts(run)
    pos = facts.pos
    # (Building the graph again cost a tenth of the learned ranking on a long run.)
    graph = graph if graph is not None and graph.run is run else DependencyGraph(run)
    errored, recovered = _errors(run)
    failing = [pos[f.step_id] for f in analysis.failures if f.step_id in pos]
    fail_at = max(failing, default=len(run.steps) - 1)
    failed_ids = {f.step_id for f in analysis.failures}
    top_score = max((c.score for c in _ranked(analysis)), default=0.0)
    out: dict[Key, dict[str, float]] = {}
    for rank, key in enumerate(keys, 1):
        run_id, sid = key
        f: dict[str, float] = {"ranked_log": math.log1p(len(keys))}
        step = steps.get(key)
        if run_id is None and sid in pos:
            i = pos[sid]
            assert step is not None
            f.update(_structure(step, i, run.steps, facts))
            f["to_failure"] = (fail_at - i) / max(len(run.steps), 1)
            f["to_failure_log"] = math.log1p(max(fail_at - i, 0))
            f["after_failure"] = float(i > fail_at)
            f["fan_in"] = math.log1p(len(graph.parents(sid))) if sid in graph else 0.0
            f["fan_out"] = math.log1p(len(graph.children(sid))) if sid in graph else 0.0
            f["is_failure"] = float(sid in failed_ids)
            f["errored"] = float(sid in errored)
            f["recovered"] = float(sid in recovered)
        elif step is not None:
            f[f"kind:{step.kind}"] = 1.0
        c = cands.get(key)
        if c is not None:
            f.update(_hand(c, rank, top_score, len(keys)))
            # The hand ranker's own features, in a namespace of their own: same-named structural
            # features here are scaled differently, and a model only reads the names it was trained on.
            f.update({_ranker_name(k): float(v) for k, v in c.features.items()})
        else:
            f["hand_rank_inv"] = 1.0 / rank
            f["hand_rank_rel"] = (rank - 1) / max(len(keys) - 1, 1)
        out[key] = f
    return out


__all__ = ["Key", "features", "ranked_keys"]
