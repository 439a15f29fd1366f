"""The result of the error lifecycle analysis: each error's lifecycle, the error chains, the report.

Produced by `trajdebug.core.lifecycle.analyze_errors`; rendered by
`trajdebug.report.errors` and logged by `trajdebug.record.errorlog`.  Plain
frozen dataclasses; ``to_dict`` gives their JSON form.  Also how a chain's
summary says where its last error was caught (`said_caught`), the wording
the renderers look for (`CAUGHT`).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from trajdebug.core.lifecycle.severity import LinkKind, RuleHit
from trajdebug.core.model import Outcome, Run, Severity, Stage, StageChange, Step


@dataclass(frozen=True, slots=True)
class ErrorLifecycle:
    """One error with its complete lifecycle, influence and severity."""

    error_id: str
    """The error's id."""
    step_id: str
    """The step where it occurred."""
    step_name: str
    """That step's name ("" when the step is not in the run)."""
    type: str
    """The exception class name or reported error kind."""
    message: str
    """The error message."""
    parent_error_id: str | None
    """The error that led to this one (recorded cause, or found by the analysis: see `link`)."""
    link: LinkKind | None
    """How the parent was found: ``cause``, ``retry``, ``nested`` or ``data``."""
    stage: Stage
    """The final stage."""
    stages: tuple[StageChange, ...]
    """The full history, oldest first (analysis-added entries have reasons starting ``analysis:``)."""
    severity: Severity
    """``WARN``, ``ERROR`` or ``CRITICAL``."""
    silently_propagated: bool
    """Left open in a failed run while its step's output was consumed downstream."""
    blast_radius: tuple[str, ...]
    """Steps downstream of its effect steps in the dependency graph (its own step excluded), in run
    order.  Its effect steps: its path, a fallback that stood in for it and, when a later attempt answered
    it, the steps its message was handed to (`handed_to`), never the answering attempt.  When a later
    attempt answered, the walk does not cross from a step of its path that raised and recorded no output
    into the step enclosing it (docs/errors.md, "An error's effect")."""
    blast_truncated: bool
    """Whether the blast radius was cut at `trajdebug.core.lifecycle.MAX_BLAST` steps (the nearest are kept)."""
    touched_state: bool
    """Whether its effect steps or its (whole) blast radius include a step that wrote shared state."""
    state_keys: tuple[str, ...]
    """The shared-state keys (or declared resources) written in the listed steps."""
    reasons: tuple[str, ...]
    """Why it has its severity and final stage."""
    path: tuple[str, ...]
    """Its propagation path: the step where it occurred, then each enclosing step it left."""
    attempt: int = 1
    """The attempt number of the step it occurred in."""
    agent: str | None = None
    """The agent of the step it occurred in."""
    retry_reason: str | None = None
    """Why its operation was retried (policy or model decision), when it was."""
    time_ns: int = 0
    """When it occurred."""
    reported: bool = False
    """Reported without raising (``s.error``, a tool's error payload)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "error_id": self.error_id,
            "step_id": self.step_id,
            "step_name": self.step_name,
            "type": self.type,
            "message": self.message,
            "parent_error_id": self.parent_error_id,
            "link": self.link,
            "stage": self.stage,
            "stages": [
                {"stage": c.stage, "step_id": c.step_id, "time_ns": c.time_ns, "reason": c.reason}
                for c in self.stages
            ],
            "severity": self.severity,
            "silently_propagated": self.silently_propagated,
            "blast_radius": list(self.blast_radius),
            "blast_truncated": self.blast_truncated,
            "touched_state": self.touched_state,
            "state_keys": list(self.state_keys),
            "reasons": list(self.reasons),
            "path": list(self.path),
            "attempt": self.attempt,
            "agent": self.agent,
            "retry_reason": self.retry_reason,
            "time_ns": self.time_ns,
            "reported": self.reported,
        }


@dataclass(frozen=True, slots=True)
class ErrorChain:
    """A chain of linked errors, origin first."""

    chain_id: str
    """``c1``, ``c2``, ... in report order (critical chains first)."""
    error_ids: tuple[str, ...]
    """The errors, from the origin to the last."""
    links: tuple[LinkKind, ...]
    """``links[i]`` is how ``error_ids[i + 1]`` is linked to ``error_ids[i]``."""
    critical: bool
    """Whether the chain ends in the run's failure (a Critical Failure)."""
    score: int
    """The sum of the weights of the rules that fired."""
    reasons: tuple[RuleHit, ...]
    """Every rule that fired, with its evidence."""
    origin_step: str
    """The step where the chain began."""
    final_step: str
    """The step where its last error occurred."""
    step_ids: tuple[str, ...] = ()
    """The steps where its errors occurred, in chain order (repeats removed)."""
    summary: str = ""
    """One line for humans: the errors, their steps and links, the final stage, the rules."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "chain_id": self.chain_id,
            "summary": self.summary,
            "step_ids": list(self.step_ids),
            "error_ids": list(self.error_ids),
            "links": list(self.links),
            "critical": self.critical,
            "score": self.score,
            "reasons": [r.to_dict() for r in self.reasons],
            "origin_step": self.origin_step,
            "final_step": self.final_step,
        }


@dataclass(frozen=True, slots=True)
class ErrorReport:
    """The lifecycle analysis of one run."""

    run_id: str
    """The run."""
    outcome: Outcome
    """The run's outcome."""
    errors: tuple[ErrorLifecycle, ...]
    """Every error, in order of occurrence."""
    chains: tuple[ErrorChain, ...]
    """Every chain: critical ones first, then by score."""
    failure_steps: tuple[str, ...] = ()
    """The steps where the run's failure surfaced (empty unless the run failed)."""

    def critical_chains(self) -> list[ErrorChain]:
        """The chains that end in the run's failure."""
        return [c for c in self.chains if c.critical]

    def error(self, error_id: str) -> ErrorLifecycle:
        """The error with this id.

        Raises:
            KeyError: no such error.
        """
        for e in self.errors:
            if e.error_id == error_id:
                return e
        raise KeyError(f"run {self.run_id} has no error {error_id!r}")

    def lineage(self, error_id: str) -> list[ErrorLifecycle]:
        """The error and its ancestors, origin first."""
        by_id = {e.error_id: e for e in self.errors}
        out: list[ErrorLifecycle] = []
        cur: ErrorLifecycle | None = self.error(error_id)
        while cur is not None and cur not in out:
            out.append(cur)
            cur = by_id.get(cur.parent_error_id) if cur.parent_error_id else None
        return out[::-1]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form: ``{"errors": [...], "chains": [...]}`` plus the run id, outcome and failure steps."""
        return {
            "run_id": self.run_id,
            "outcome": self.outcome,
            "failure_steps": list(self.failure_steps),
            "errors": [e.to_dict() for e in self.errors],
            "chains": [c.to_dict() for c in self.chains],
        }


CAUGHT = "caught where no step records it, and the run went on"  # an exception that nothing recorded took up


def caught_unrecorded(e: ErrorLifecycle, outcome: str) -> bool:
    """Whether an exception left its step and was caught by code no step records (an ``except`` in the run's
    body that set a default): it never propagated, recovered, was ignored or failed, in a run that ended.  The
    recorder cannot see what replaced it, and a later failure may come from that default."""
    return e.stage == "occurred" and not e.reported and outcome in ("success", "failure")


def said_caught(
    c: ErrorChain,
    by_id: Mapping[str, ErrorLifecycle],
    run: Run,
    steps: Mapping[str, Step],
    seen: tuple[list[Step], dict[str, str]],
) -> ErrorChain:
    """The chain's summary saying where its last error was caught when it left its step in a run that ended:
    in a recorded enclosing step that ended without error (named); where no step records it, unless a later
    step's input holds its message (a recorded step took it up: nothing said)."""
    last = by_id.get(c.error_ids[-1]) if c.error_ids else None
    raised = steps.get(last.step_id) if last is not None and caught_unrecorded(last, run.outcome) else None
    where = _enclosing_ok(raised, steps) if raised is not None else None
    if last is None or raised is None or (where is None and _handed_on(last.message, raised, *seen)):
        return c
    said = CAUGHT if where is None else f"caught in {where.name}#{where.step_id[-6:]}, which went on"
    head, stage, rules = c.summary.rpartition(" → occurred")  # the last one is the stage (`_summary`)
    return replace(c, summary=f"{head}{stage}, {said}{rules}")


def _enclosing_ok(s: Step, steps: Mapping[str, Step]) -> Step | None:
    """The nearest recorded step enclosing ``s`` that ended without error (its body caught the exception)."""
    p = steps.get(s.parent_id or "")
    for _ in range(64):  # parent ids from an imported source may loop (a parent done before it raised: no catcher)
        if p is None or (p.status != "error" and p.error is None and (p.end_ns or 0) >= (s.end_ns or s.start_ns)):
            return p
        p = steps.get(p.parent_id or "")
    return None


def _handed_on(message: str, raised: Step, later: list[Step], texts: dict[str, str]) -> bool:
    """Whether a recorded step took up the error's message (`handed_to` names one)."""
    return next(handed_to(message, raised, later, texts), None) is not None


def _start(t: Step) -> int:
    return t.start_ns


def handed_to(message: str, raised: Step, later: list[Step], texts: dict[str, str]) -> Iterator[str]:
    """The steps whose input holds the error's message, among those that started after ``raised`` ended, up
    to the first model call (told the tool failed, a model keeps it in every later turn, so reading further
    finds nothing new and costs the run's whole history per error); ``later`` is the run's steps by start,
    and inputs are serialized once per run (``texts``).  Lazy: a caller that needs one reads one."""
    text = json.dumps(message, ensure_ascii=False)[1:-1].strip()
    after = raised.end_ns if raised.end_ns is not None else raised.start_ns
    # The first step that started after it, found by bisection: scanning the run's earlier steps for it cost
    # the run's length per error (a tool loop with a failure every few tickets: quadratic in the run).
    start = bisect.bisect_left(later, after, key=_start) if len(text) >= 4 else len(later)
    for i in range(start, len(later)):  # (`itertools.islice` would step through the skipped steps one by one)
        t = later[i]
        if t.step_id == raised.step_id:
            continue
        if t.step_id not in texts:
            texts[t.step_id] = json.dumps(t.input, ensure_ascii=False, default=str)
        if text in texts[t.step_id]:
            yield t.step_id
        if t.kind == "llm":
            break


__all__ = [
    "CAUGHT",
    "ErrorChain",
    "ErrorLifecycle",
    "ErrorReport",
    "caught_unrecorded",
    "handed_to",
    "said_caught",
]
