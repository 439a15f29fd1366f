"""The error forest: each error as the hindsight analysis works on it, and the chains and lifecycles it becomes.

`analyze_errors` (`analyze.py`) links a run's errors into a forest (each error at most one parent, always an
earlier one), gives the errors the runtime left open their final stage, and measures their reach; it works on
one mutable record per error (`_Err`: its parent and children, its stage and the stages the analysis added,
the steps its effect begins at, its blast radius).  When the passes are done, the forest is read out here:
its root-to-leaf paths, scored by the severity rules, are the chains (critical ones first), and each error's
record becomes the `ErrorLifecycle` the report holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain

from trajdebug.core.lifecycle.machine import TERMINAL, advance
from trajdebug.core.lifecycle.report import ErrorChain, ErrorLifecycle
from trajdebug.core.lifecycle.severity import ErrorFacts, LinkKind, RuleHit, grade, score_chain
from trajdebug.core.model import ErrorEvent, Stage, StageChange, Step


ANALYSIS_PREFIX = "analysis: "
"""Prefix of the reason of every stage the analysis (not the recorder) added."""


@dataclass(slots=True, eq=False)
class _Err:
    """Mutable per-error state while the analysis runs."""

    ev: ErrorEvent
    time: int
    path: list[str]
    runtime_stage: Stage
    ended: list[str]
    index: int = 0
    parent: _Err | None = None
    link: LinkKind | None = None
    children: list[_Err] = field(default_factory=list)
    stage: Stage = "occurred"
    added: list[StageChange] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)
    """Later attempts among ``ended`` that answered the operation themselves: their value is not the error's."""
    mute: list[str] = field(default_factory=list)
    """When a later attempt answered it, the steps of ``path`` whose implicit edge into their enclosing step
    does not carry it (`_mute`); and ``handed``, the later steps its message was handed to (`_answered`)."""
    handed: list[str] = field(default_factory=list)
    silent: bool = False
    blast: list[str] = field(default_factory=list)
    state_keys: list[str] = field(default_factory=list)
    touched: bool = False
    truncated: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def open(self) -> bool:
        return self.stage not in TERMINAL

    @property
    def effect(self) -> list[str]:
        """Where its effect begins: the steps it left, a fallback's value and the steps told its message, not a
        later attempt's own answer."""
        return [*self.path, *(sid for sid in self.ended if sid not in self.answered), *self.handed]

    def end(self, stage: Stage, step_id: str | None, time_ns: int, reason: str) -> None:
        self.stage = advance(self.stage, stage)
        self.added.append(StageChange(stage, step_id, time_ns, ANALYSIS_PREFIX + reason))
        self.notes.append(reason)


def _facts(w: _Err) -> ErrorFacts:
    propagated = any(c.stage == "propagated" for c in w.ev.stages)
    return ErrorFacts(w.ev.error_id, w.ev.step_id, w.stage, propagated, w.touched, w.silent)


def _paths(work: Sequence[_Err]) -> list[list[_Err]]:
    out: list[list[_Err]] = []
    for root in work:
        if root.parent is not None:
            continue
        stack: list[list[_Err]] = [[root]]
        while stack:
            p = stack.pop()
            kids = p[-1].children
            if not kids:
                out.append(p)
            else:
                stack.extend([*p, k] for k in reversed(kids))
    return out


def _summary(cid: str, p: Sequence[_Err], hits: Sequence[RuleHit], steps: dict[str, Step]) -> str:
    parts: list[str] = []
    for w in p:
        s = steps.get(w.ev.step_id)
        where = f"{s.name}#{s.step_id[-6:]}" if s is not None else f"#{w.ev.step_id[-6:]}"
        link = f"({w.link}) " if w.link is not None and parts else ""
        parts.append(f"{link}{w.ev.type} at {where}")
    head = f"{cid} {'Critical Failure' if p[-1].stage == 'failed' else 'chain'}: "
    rules = f" [{', '.join(h.rule for h in hits)}]" if hits else ""
    return head + " → ".join(parts) + f" → {p[-1].stage}" + rules


def _retry_reason(w: _Err, steps: dict[str, Step], retried_by: dict[str, list[Step]]) -> str | None:
    """Why the operation that failed with ``w`` was retried (the attempt after it), or why its own attempt was."""
    after = (t.attributes.get("retry_reason") for sid in w.path for t in retried_by.get(sid, ()))
    own = (steps[sid].attributes.get("retry_reason") for sid in w.path)
    r = next((r for r in chain(after, own) if r), None)
    return str(r) if r else None


def _chains(
    work: Sequence[_Err], facts: dict[int, ErrorFacts], steps: dict[str, Step]
) -> tuple[list[ErrorChain], dict[int, list[str]], dict[int, str]]:
    """The scored error chains, critical ones first; the critical chains each error begins; the failed
    error below each error of a critical chain."""
    scored: list[tuple[list[_Err], list[RuleHit]]] = []
    for p in _paths(work):
        links: list[LinkKind] = [k.link for k in p[1:] if k.link is not None]
        scored.append((p, score_chain([facts[w.index] for w in p], links)))
    scored.sort(
        key=lambda c: (
            c[0][-1].stage != "failed",
            -sum(h.weight for h in c[1]),
            c[0][0].index,
            c[0][-1].index,
        )
    )
    chains: list[ErrorChain] = []
    origin_of: dict[int, list[str]] = {}
    failed_below: dict[int, str] = {}
    for n, (p, hits) in enumerate(scored, 1):
        cid = f"c{n}"
        critical = p[-1].stage == "failed"
        if critical:
            origin_of.setdefault(p[0].index, []).append(cid)
            for w in p[:-1]:
                failed_below.setdefault(w.index, p[-1].ev.error_id)
        chains.append(
            ErrorChain(
                chain_id=cid,
                error_ids=tuple(w.ev.error_id for w in p),
                links=tuple(w.link for w in p[1:] if w.link is not None),
                critical=critical,
                score=sum(h.weight for h in hits),
                reasons=tuple(hits),
                origin_step=p[0].ev.step_id,
                final_step=p[-1].ev.step_id,
                step_ids=tuple(dict.fromkeys(w.ev.step_id for w in p)),
                summary=_summary(cid, p, hits, steps),
            )
        )
    return chains, origin_of, failed_below


def _lifecycle(
    w: _Err,
    facts: ErrorFacts,
    steps: dict[str, Step],
    retried_by: dict[str, list[Step]],
    origin_of: dict[int, list[str]],
    failed_below: dict[int, str],
) -> ErrorLifecycle:
    """One error's lifecycle as reported: its stages, severity, blast radius and reasons."""
    severity, why = grade(
        facts,
        critical_chains=origin_of.get(w.index, ()),
        failed_downstream=failed_below.get(w.index),
    )
    step = steps.get(w.ev.step_id)
    return ErrorLifecycle(
        error_id=w.ev.error_id,
        step_id=w.ev.step_id,
        step_name=step.name if step is not None else "",
        type=w.ev.type,
        message=w.ev.message,
        parent_error_id=w.parent.ev.error_id if w.parent is not None else None,
        link=w.link,
        stage=w.stage,
        stages=(*w.ev.stages, *w.added),
        severity=severity,
        silently_propagated=w.silent,
        blast_radius=tuple(w.blast),
        blast_truncated=w.truncated,
        touched_state=w.touched,
        state_keys=tuple(w.state_keys),
        reasons=tuple(why + w.notes),
        path=tuple(w.path),
        attempt=w.ev.attempt,
        agent=step.agent if step is not None else None,
        retry_reason=_retry_reason(w, steps, retried_by),
        time_ns=w.time,
        reported=bool(w.ev.attributes.get("reported")),
    )


__all__ = [
    "ANALYSIS_PREFIX",
]
