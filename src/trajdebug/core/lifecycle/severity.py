"""Scoring error chains and grading errors: stated rules, every fired rule a reason.

An error chain is a path in the error forest, from an origin error (no parent)
to a last one, linked by cause (``raise ... from``, raised while handling),
retry (a later attempt of the same operation failed too), nesting (a sub-agent
or child step's unhandled error followed by an error in the enclosing step)
or data (a value of a recovered or ignored error's step, of the fallback that
stood in for it or of a step told its message, or the output of an open one,
flowed into the step of a later error; a later attempt's own answer is not the
error's value).  The lifecycle
analysis (`trajdebug.core.lifecycle.analyze`) builds the forest; this module
judges it.

A chain whose last error ended ``failed`` is a **Critical Failure** (the
terminology of AgentRx's "critical failure step", here decided by rules rather
than a judge).  Its score is the sum of the weights of the rules in `RULES`
that fire; each fired rule is kept as a `RuleHit` with the evidence, so a
ranking can always be explained.

Severities (item 5 of the lifecycle design):

* ``CRITICAL``: the origin of a critical chain.
* ``ERROR``: ended ``failed``, propagated across steps, silently propagated,
  or recovered/ignored while a later error downstream of it failed.
* ``WARN``: everything else (recovered or ignored, nothing downstream harmed;
  handled in a run that succeeded).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from trajdebug.core.model import Severity, Stage


LinkKind = Literal["cause", "retry", "nested", "data"]
"""How an error is linked to its parent error (see the module docstring)."""

LINK_KINDS: tuple[str, ...] = ("cause", "retry", "nested", "data")


@dataclass(frozen=True, slots=True)
class Rule:
    """One chain-scoring rule."""

    name: str
    """Short kebab-case name, shown in tables and JSON."""
    weight: int
    """Points added to a chain's score when the rule fires."""
    description: str
    """When it fires, in words."""


RULES: tuple[Rule, ...] = (
    Rule("terminal-failed", 4, "the chain's last error reached the run's failure"),
    Rule("retries-exhausted", 2, "a retried operation in the chain failed on every attempt"),
    Rule("polluted-state", 2, "an error of the chain reached a step that wrote shared state"),
    Rule(
        "propagated-across-steps",
        1,
        "an error of the chain left its step, or the chain links errors of different steps",
    ),
    Rule(
        "origin-differs-from-final",
        1,
        "the chain began in another step than the one its last error occurred in",
    ),
    Rule(
        "degraded-value-flowed",
        1,
        "a recovered or ignored error's effect (its step, the fallback that stood in for it, a step told its "
        "message) fed a later error's step",
    ),
    Rule(
        "silently-propagated", 1, "an error of the chain was left open while its step's output was consumed"
    ),
)
"""The rules, strongest first.  Weights are ordinal: terminal failure dominates."""

RULE_BY_NAME: dict[str, Rule] = {r.name: r for r in RULES}


@dataclass(frozen=True, slots=True)
class RuleHit:
    """A rule that fired for a chain, with the evidence."""

    rule: str
    """The rule's name (a key of `RULE_BY_NAME`)."""
    weight: int
    """Its weight."""
    detail: str
    """The evidence: which errors and steps made it fire."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {"rule": self.rule, "weight": self.weight, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class ErrorFacts:
    """What the rules need to know about one error of a chain."""

    error_id: str
    """The error."""
    step_id: str
    """The step where it occurred."""
    stage: Stage
    """Its final stage."""
    propagated: bool
    """Whether it left its step (a ``propagated`` stage)."""
    touched_state: bool
    """Whether it reached a step that wrote shared state."""
    silently_propagated: bool
    """Whether it was left open in a failed run while its output was consumed."""


def _hit(name: str, detail: str) -> RuleHit:
    return RuleHit(name, RULE_BY_NAME[name].weight, detail)


def _first_link(links: Sequence[LinkKind], test: Callable[[int, LinkKind], bool]) -> int | None:
    """The index of the first link for which ``test(index, kind)`` holds (a rule fires once per chain)."""
    return next((i for i, kind in enumerate(links) if test(i, kind)), None)


def score_chain(members: Sequence[ErrorFacts], links: Sequence[LinkKind]) -> list[RuleHit]:
    """The rules that fire for a chain, in `RULES` order.

    Args:
        members: The chain's errors, origin first.
        links: ``links[i]`` links ``members[i]`` to ``members[i + 1]``.
    """
    hits: list[RuleHit] = []
    if not members:
        return hits
    first, last = members[0], members[-1]
    if last.stage == "failed":
        hits.append(_hit("terminal-failed", f"{last.error_id} ended failed"))
    # The later attempt is members[i + 1]; the operation's attempts were exhausted when none after
    # it recovered it.
    i = _first_link(
        links,
        lambda n, kind: kind == "retry"
        and members[n + 1].stage != "recovered"
        and not (n + 1 < len(links) and links[n + 1] == "retry"),
    )
    if i is not None:
        hits.append(
            _hit("retries-exhausted", f"attempts {members[i].error_id} .. {members[i + 1].error_id} all failed")
        )
    state = [m.error_id for m in members if m.touched_state]
    if state:
        hits.append(_hit("polluted-state", "shared state written downstream of " + ", ".join(state)))
    moved = [m.error_id for m in members if m.propagated]
    crossed = any(k != "retry" and members[i].step_id != members[i + 1].step_id for i, k in enumerate(links))
    if moved or crossed:
        detail = f"{', '.join(moved)} left its step" if moved else "the chain links errors of different steps"
        hits.append(_hit("propagated-across-steps", detail))
    if first.step_id != last.step_id and any(k != "retry" for k in links):
        hits.append(
            _hit("origin-differs-from-final", f"began in step {first.step_id}, ended in step {last.step_id}")
        )
    i = _first_link(links, lambda n, kind: kind == "data" and members[n].stage in ("recovered", "ignored"))
    if i is not None:
        m = members[i]
        detail = (
            f"{m.error_id} was {m.stage}, yet a value of its step, its stand-in or a step told its message fed "
            f"{members[i + 1].error_id}"
        )
        hits.append(_hit("degraded-value-flowed", detail))
    silent = [m.error_id for m in members if m.silently_propagated]
    if silent:
        hits.append(_hit("silently-propagated", ", ".join(silent) + " left open while consumed downstream"))
    return hits


def grade(
    facts: ErrorFacts,
    *,
    critical_chains: Sequence[str] = (),
    failed_downstream: str | None = None,
) -> tuple[Severity, list[str]]:
    """An error's severity and the reasons for it.

    Args:
        facts: The error.
        critical_chains: Ids of the critical chains this error is the origin of.
        failed_downstream: A later error in this error's chains that ended failed, if any.
    """
    if critical_chains:
        return "CRITICAL", [f"origin of critical chain {', '.join(critical_chains)}"]
    why: list[str] = []
    if facts.stage == "failed":
        why.append("reached the run's failure")
    if facts.propagated:
        why.append("propagated across steps")
    if facts.silently_propagated:
        why.append("silently propagated: left open while its step's output was consumed")
    if failed_downstream is not None and facts.stage != "failed":
        why.append(f"{facts.stage}, but {failed_downstream} downstream of it failed")
    if why:
        return "ERROR", why
    if facts.stage == "recovered":
        return "WARN", ["recovered; nothing downstream failed"]
    if facts.stage == "ignored":
        return "WARN", ["ignored (a fallback was used); nothing downstream failed"]
    return "WARN", ["handled; nothing downstream failed"]


__all__ = [
    "LINK_KINDS",
    "RULES",
    "RULE_BY_NAME",
    "ErrorFacts",
    "LinkKind",
    "Rule",
    "RuleHit",
    "grade",
    "score_chain",
]
