"""What a diagnoser reads: the steps and runs it can fire on, declared beside it.

A diagnoser runs on every step the localizer ranks, and most rules look at one kind of step (a tool's answer,
a model's output, a retry) and return at their first line on the others.  Each built-in diagnoser declares
those first-line tests as a `Reads` (``@reading(Reads(kinds=...))``, a plain attribute ``reads`` on the
callable, as pluggy marks a hook implementation), and `DiagnoserIndex` keys the diagnosers by a step's cheap
properties (its kind, its status, whether it retries another, whether it was recorded in summary mode), built
once per run, so a step is shown only to the rules that can fire on it.

A declaration only ever repeats a test the rule makes itself before it yields anything: leaving a rule out is
exact, never a change of what it finds (`tests/test_reads.py` runs every rule on every step of recorded runs
and checks that none fires where its declaration says it cannot).  A callable without ``reads`` (a plugin's)
is shown every step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar


if TYPE_CHECKING:
    from trajdebug.analysis.diagnosers._context import DiagnoseContext, Diagnoser
    from trajdebug.core.model import Step


@dataclass(frozen=True, slots=True)
class Reads:
    """The steps a diagnoser can fire on, and what its run must hold for it to fire at all.

    Args:
        kinds: The step kinds it fires on (None: any kind).
        skips_kinds: Step kinds it never fires on.
        statuses: The step statuses it fires on (None: any status).
        skips_statuses: Step statuses it never fires on.
        retries: Whether it fires only on a retry (a step with ``retry_of``).
        attribute: A step attribute it fires only on steps recording (``env_reads``, a chat ``role``).
        failures: Whether it fires only in a run with failures (it traces what they name).
        errors: Whether it fires only in a run where some step ended with an error.
        state: Whether it fires only in a run whose steps consumed shared state (``state`` edges).
        checks: Whether it fires only in a run where some step recorded contract checks.
    """

    kinds: frozenset[str] | None = None
    skips_kinds: frozenset[str] = frozenset()
    statuses: frozenset[str] | None = None
    skips_statuses: frozenset[str] = frozenset()
    retries: bool = False
    attribute: str | None = None
    failures: bool = False
    errors: bool = False
    state: bool = False
    checks: bool = False

    def fires_on(self, kind: str, status: str, retry: bool) -> bool:
        """Whether it can fire on a step of this kind and status (``retry``: the step retries another)."""
        return (
            (self.kinds is None or kind in self.kinds)
            and kind not in self.skips_kinds
            and (self.statuses is None or status in self.statuses)
            and status not in self.skips_statuses
            and (retry or not self.retries)
        )

    def fires_in(self, ctx: DiagnoseContext) -> bool:
        """Whether it can fire in this context's run at all."""
        return (
            (not self.failures or bool(ctx.failures))
            and (not self.errors or ctx.has_errors())
            and (not self.state or ctx.has_state_edges())
            and (not self.checks or ctx.has_checks())
        )

    def fires(self, step: Step, ctx: DiagnoseContext) -> bool:
        """Whether it can fire on this step of this context's run."""
        return (
            self.fires_on(step.kind, step.status, step.retry_of is not None)
            and (self.attribute is None or self.attribute in step.attributes)
            and self.fires_in(ctx)
        )


ANY = Reads()
"""The declaration of a callable that declares nothing: it is shown every step."""

TOOLS = frozenset({"tool", "retrieval"})
"""The kinds of step that ask the outside world (a tool's or a retrieval's answer)."""

OK = frozenset({"ok"})
"""The status of a step that ended normally."""

ERROR = frozenset({"error"})
"""The status of a step that ended with an error."""

D = TypeVar("D", bound=Callable[..., Any])


def reading(reads: Reads) -> Callable[[D], D]:
    """Declare what a diagnoser reads (sets its ``reads`` attribute; the callable is returned as it was)."""

    def mark(fn: D) -> D:
        fn.reads = reads  # type: ignore[attr-defined]
        return fn

    return mark


def reads_of(fn: object) -> Reads:
    """A diagnoser's declaration (`ANY` when it has none)."""
    found = getattr(fn, "reads", None)
    return found if isinstance(found, Reads) else ANY


Entry = tuple[str, "Diagnoser", str | None]
"""One diagnoser as the index hands it out: its name, the callable, the step attribute it needs (or None)."""


class DiagnoserIndex:
    """The diagnosers that can fire on a step, by the step's kind, status, retry and summary mode.

    Built once per run on the first step diagnosed: the run-wide tests (`Reads.fires_in`) are made then, and
    each distinct key's list the first time a step has that key; the order of the diagnosers is kept (a step's
    evidence is listed in the order its rules ran).
    """

    __slots__ = ("_by_key", "_kept", "_summary_safe")

    def __init__(
        self, diagnosers: Sequence[tuple[str, Diagnoser]], ctx: DiagnoseContext, summary_safe: frozenset[str]
    ) -> None:
        self._kept = [(name, fn, reads_of(fn)) for name, fn in diagnosers if reads_of(fn).fires_in(ctx)]
        self._summary_safe = summary_safe
        self._by_key: dict[tuple[str, str, bool, bool], tuple[Entry, ...]] = {}

    def for_step(self, step: Step, summarized: bool) -> tuple[Entry, ...]:
        """The diagnosers that can fire on this step (``summarized``: recorded in summary mode), in order."""
        key = (step.kind, step.status, step.retry_of is not None, summarized)
        found = self._by_key.get(key)
        if found is None:
            found = self._by_key[key] = tuple(
                (name, fn, r.attribute)
                for name, fn, r in self._kept
                if r.fires_on(key[0], key[1], key[2])
                # A rule that reads content has nothing to read in a step recorded in summary mode.
                and (not summarized or name in self._summary_safe or getattr(fn, "reads_summaries", False))
            )
        return found


__all__ = ["ANY", "ERROR", "OK", "TOOLS", "DiagnoserIndex", "Reads", "reading", "reads_of"]
