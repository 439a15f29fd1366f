"""The combination rule: the deterministic ranking and the model's verdicts, into one ranking.

**Constraints, enforced after the model answers** (the prompt states them too;
a model that ignores them is overruled, and the override is shown):

1. *An error retried away is not a root.*  A step whose error a later attempt
   (or the run) recovered from is ``sound`` for this failure, whatever the
   model said.
2. *Decisive only if correcting it would plausibly remove the failure.*  A
   ``decisive`` verdict whose ``fix_removes_failure`` is false counts as
   ``sound`` (the step may have erred, but not decisively).
3. *Prefer the earlier cause when a later step only passes a value on.*  When
   two steps are decisive and the later lies on the earlier one's path to the
   failure and introduced no value of its own (every number, date and
   identifier of its output is in its inputs or in the earlier step's
   output), the later one ``propagates``.

**Combination.**  Per step, with ``d`` its deterministic standing (its score
divided by the top candidate's, and never above the standing of the candidate
ranked before it, since the deterministic order puts structural roots first;
0 for a path step the search did not keep as a candidate) and ``p`` the
model's belief that it is the decisive error (``0.5 + c/2`` for a decisive
verdict of confidence ``c``, ``(1 - c)/2`` for propagates or sound):

    combined = top * ((1 - w) * d + w * p)        (w = JudgeConfig.weight, 0.5 by default)

where ``top`` is the top candidate's deterministic score, so the combined
score reads in the deterministic score's units.

Blame passes upstream first, as in the deterministic search: a decisive step
takes ``d = max(d, d_later)`` from each later step on its path that
propagates its error.  A step without a verdict (the model failed, ran out of
budget, or was not asked) is ranked by ``top * d`` and keeps its own score, so
a failing model leaves the deterministic order and scores exactly as they were.  Ties keep the deterministic
order.  Every deterministic candidate stays, with all its evidence; a path
step joins the candidates only when judged decisive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from trajdebug.analysis import Analysis, Candidate
from trajdebug.core.model import Run, Step
from trajdebug.core.values import atoms
from trajdebug.judge.expectation import SIGNAL
from trajdebug.judge.prompts import VERDICTS, clean
from trajdebug.judge.shortlist import Entry, Shortlist


@dataclass(frozen=True, slots=True)
class Verdict:
    """The model's judgment of one shortlisted step, after the constraints."""

    label: str
    """The step's label in the prompt (``S3``)."""
    step_id: str
    """The step."""
    run_id: str | None
    """The earlier turn holding the step (None: the analyzed run)."""
    verdict: str
    """``decisive``, ``propagates`` or ``sound``: the verdict that counts (after the constraints)."""
    said: str
    """The verdict the model gave."""
    confidence: float
    """The model's confidence in its verdict, in [0, 1]."""
    reason: str
    """The model's reason (one line, cleaned)."""
    fix_removes_failure: bool
    """The model's counterfactual: correcting this step would remove the failure."""
    departs: bool | None = None
    """Whether its output departs from the expected outline (None: not asked, or not covered)."""
    override: str | None = None
    """Why the verdict that counts differs from the model's, when it does."""

    @property
    def belief(self) -> float:
        """The model's belief that the step is the decisive error, in [0, 1]."""
        c = self.confidence
        return 0.5 + c / 2 if self.verdict == "decisive" else (1 - c) / 2

    def to_dict(self) -> dict[str, Any]:
        """The verdict as JSON data."""
        return {
            "label": self.label,
            "step_id": self.step_id,
            "run_id": self.run_id,
            "verdict": self.verdict,
            "model_verdict": self.said,
            "confidence": round(self.confidence, 4),
            "fix_removes_failure": self.fix_removes_failure,
            "departs": self.departs,
            "reason": self.reason,
            "override": self.override,
        }


def read_verdicts(answer: Mapping[str, Any], shortlist: Shortlist) -> tuple[dict[str, Verdict], list[str]]:
    """The verdicts of a validated answer by label, and what in it was ignored (unknown or repeated steps)."""
    out: dict[str, Verdict] = {}
    ignored: list[str] = []
    for item in answer.get("verdicts", ()):
        label = str(item.get("step", "")).strip().upper()
        where = shortlist.where(label)
        if where is None:
            ignored.append(f"a verdict on {clean(label, 20)!r}, which is no shortlisted step")
            continue
        if label in out:
            ignored.append(f"a second verdict on {label}")
            continue
        said = str(item["verdict"])
        departs = item.get("departs")
        out[label] = Verdict(
            label,
            where[1],
            where[0],
            said if said in VERDICTS else "sound",
            said,
            float(item["confidence"]),
            clean(item.get("reason", ""), 400),
            bool(item["fix_removes_failure"]),
            departs if isinstance(departs, bool) else None,
        )
    return out, ignored


def retried_away(step: Step, run: Run) -> bool:
    """Whether the step's error was retried away: a later attempt of it, or the run, recovered from it."""
    if step.status != "error" and step.error is None:
        return False
    if any(s.retry_of == step.step_id for s in run.steps):
        return True
    return any(e.step_id == step.step_id and e.stage == "recovered" for e in run.errors)


def _values(value: Any) -> set[str]:
    return {a.key for a in atoms(value) if a.kind != "text"}


def passes_on(later: Step, earlier: Step) -> bool:
    """Whether ``later`` introduced no value of its own: its output's values are all in its inputs or ``earlier``'s output."""
    return _values(later.output) <= _values(later.input) | _values(earlier.output)


def enforce(verdicts: Mapping[str, Verdict], shortlist: Shortlist) -> dict[str, Verdict]:
    """The verdicts after the three constraints (see the module's docstring)."""
    out = dict(verdicts)
    by = shortlist.by_label()
    for label, v in list(out.items()):
        if v.verdict != "decisive":
            continue
        e = by[label]
        if retried_away(e.step, e.run):
            out[label] = replace(v, verdict="sound", override="its error was retried away: not a root")
        elif not v.fix_removes_failure:
            out[label] = replace(
                v, verdict="sound", override="correcting it would not remove the failure: not decisive"
            )
    for e in shortlist:
        ev = out.get(e.label)
        if ev is None or ev.verdict != "decisive":
            continue
        for later in shortlist.downstream(e):
            lv = out.get(later.label)
            if lv is not None and lv.verdict == "decisive" and passes_on(later.step, e.step):
                out[later.label] = replace(
                    lv,
                    verdict="propagates",
                    override=f"only passes on the value of the earlier decisive step {e.label}",
                )
    return out


@dataclass(frozen=True, slots=True)
class Judged:
    """One cause of the final ranking, with where each part of it came from."""

    candidate: Candidate
    """The candidate as ranked: deterministic evidence kept, the model's lines and signals added, the combined score."""
    deterministic_rank: int | None
    """Its rank among the deterministic candidates (None: a path step the model found decisive)."""
    deterministic_score: float | None
    """Its deterministic score (None for a path step)."""
    combined: float
    """The combined score it is ranked by (in the deterministic score's units: its own when not judged)."""
    verdict: Verdict | None = None
    """The model's verdict (None: not judged)."""
    departs_first: bool = False
    """True for the first shortlisted step whose output departs from the expected outline."""

    def to_dict(self) -> dict[str, Any]:
        """The ``judge`` field of a root cause in ``analyze --json``."""
        v = self.verdict
        return {
            **(v.to_dict() if v is not None else {"verdict": None}),
            "deterministic_rank": self.deterministic_rank,
            "deterministic_score": self.deterministic_score,
            "combined_score": round(self.combined, 6),
            "expectation": self.departs_first,
        }


def _line(v: Verdict) -> str:
    said = f"model: {v.said} (confidence {v.confidence:.2f})"
    if v.override:
        said += f", counted as {v.verdict}: {v.override}"
    return said + (f": {v.reason}" if v.reason else "")


def combine(
    analysis: Analysis,
    shortlist: Shortlist,
    verdicts: Mapping[str, Verdict],
    weight: float,
    departure: str | None = None,
) -> list[Judged]:
    """The final ranking: every deterministic candidate, plus path steps judged decisive, by combined score."""
    cands = analysis.root_causes
    unit = cands[0].score if cands and cands[0].score > 0 else 1.0
    by_key = {e.key: e for e in shortlist}
    base: dict[tuple[str | None, str], float] = {}
    level = 1.0
    for c in cands:
        # The deterministic order puts structural roots first, so scores may rise down the list:
        # d follows the order and never rises, and unjudged candidates keep their order.
        level = min(level, max(c.score, 0.0) / unit)
        base[(c.run_id, c.step_id)] = level
    for e in shortlist:
        base.setdefault(e.key, 0.0)
    label_of = {e.key: e.label for e in shortlist}
    verdict_of = {e.key: verdicts[e.label] for e in shortlist if e.label in verdicts}
    # Blame passes upstream: a decisive step takes the deterministic standing of the
    # later steps on its path that only propagated its error.
    d = dict(base)
    for e in shortlist:
        v = verdict_of.get(e.key)
        if v is None or v.verdict != "decisive":
            continue
        for later in shortlist.downstream(e):
            w = verdict_of.get(later.key)
            if w is not None and w.verdict == "propagates":
                d[e.key] = max(d[e.key], base[later.key])
    out: list[Judged] = []
    order: list[tuple[str | None, str]] = [(c.run_id, c.step_id) for c in cands]
    extra = [e.key for e in shortlist if e.key not in order]
    for key in order + extra:
        v = verdict_of.get(key)
        entry: Entry | None = by_key.get(key)
        cand = next((c for c in cands if (c.run_id, c.step_id) == key), None)
        if cand is None and (v is None or v.verdict != "decisive" or entry is None):
            continue
        # In the deterministic score's units (times the top candidate's score).
        combined = unit * (d[key] if v is None else (1 - weight) * d[key] + weight * v.belief)
        score = cand.score if v is None and cand is not None else combined
        first = departure is not None and label_of.get(key) == departure
        lines = ([_line(v)] if v is not None else []) + (
            ["model: the first step whose output departs from the expected solution outline"] if first else []
        )
        signals = ([f"judge:{v.verdict}"] if v is not None else []) + ([SIGNAL] if first else [])
        if cand is not None:
            new = replace(
                cand,
                score=round(score, 6),
                reasons=(*cand.reasons, *lines),
                signals=(*cand.signals, *signals),
            )
        else:
            assert entry is not None
            new = Candidate(
                entry.step.step_id,
                round(score, 6),
                tuple(lines),
                entry.path,
                root=False,
                run_id=entry.run_id,
                signals=tuple(signals),
            )
        rank = order.index(key) + 1 if key in order else None
        out.append(Judged(new, rank, cand.score if cand is not None else None, combined, v, first))
    out.sort(key=lambda j: (-j.combined, j.deterministic_rank or len(order) + 1))
    return out


def rerank(analysis: Analysis, judged: Sequence[Judged]) -> Analysis:
    """The analysis with its candidates in the final order (the rest of the ranking after them).  When the model
    gave a verdict, the method ends in ``+judge``, so the reports say the list is in the combined score's order
    (`Analysis.judged`); with none (a failed model), the deterministic order stands and says so."""
    loc = analysis.localization
    head = [j.candidate.step_id for j in judged]
    ranking = tuple(dict.fromkeys([*head, *loc.ranking]))
    judging = any(j.verdict is not None for j in judged) and not loc.method.endswith("+judge")
    method = loc.method + "+judge" if judging else loc.method
    return replace(
        analysis, localization=replace(loc, candidates=[j.candidate for j in judged], ranking=ranking, method=method)
    )


__all__ = ["Judged", "Verdict", "combine", "enforce", "passes_on", "read_verdicts", "rerank", "retried_away"]
