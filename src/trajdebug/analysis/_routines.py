"""Which model calls state new values as their job: the routine that discounts a model's made-up values.

A model call whose siblings (same name, same enclosing step) mostly state values found in none of their inputs
too is doing its job when it does (`trajdebug.analysis._elsewhere.off_the_failure`).  `Routines` finds those
groups once per ranking and keeps them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace

from trajdebug.analysis._elsewhere import Routine
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.diagnosers import DiagnoseContext
from trajdebug.core.graph import DependencyGraph
from trajdebug.core.model import Run


def made_up(e: Evidence) -> bool:
    """A model's finding of values found in none of its inputs (`off_the_failure`)."""
    return e.diagnoser == "llm-output" and not e.sound and bool(e.values)


class Routines:
    """The routine of each group of model calls, worked out once per group (a memo of one ranking)."""

    def __init__(self, run: Run, g: DependencyGraph, ctx: DiagnoseContext) -> None:
        self.run, self.g, self.ctx = run, g, ctx
        self._routine: dict[tuple[str, str | None], tuple[int, Routine]] = {}
        self._wrappers: set[str] | None = None

    def of(self, sid: str) -> Routine | None:
        """The made-up values of a model step's calls when at least two others, and at least half of them, state
        values found in none of their inputs too: stating new values is that step's job (`off_the_failure`);
        None when it is not.  Half, not all: a value a call states may happen to be a word of its input
        (``stilts`` for a workshop on stilt walking).  Calls are grouped by name and enclosing step
        (`_enclosing`): a framework names every model call after its class (``ChatOpenAI``), the node that
        makes it tells them apart."""
        step = self.g.steps[sid]
        if step.kind != "llm":
            return None
        group = (step.name, self._enclosing(step.parent_id))
        if group not in self._routine:
            calls = [
                s.step_id
                for s in self.run.steps
                if s.kind == "llm" and s.name == step.name and self._enclosing(s.parent_id) == group[1]
            ]
            made: dict[str, tuple[str, ...]] = {}
            for c in calls:
                vals = tuple(v for e in self.ctx.verdict(c).evidence if made_up(e) for v in e.values)
                if vals:
                    made[c] = vals
            self._routine[group] = (len(calls), replace(Routine.of(made), upstream=self._recorded_upstream))
        size, routine = self._routine[group]
        theirs = len(routine.calls) - (sid in routine.calls)
        if theirs < 2 or 2 * theirs < size - 1:
            return None
        return routine

    def _recorded_upstream(self, sid: str) -> set[str]:
        """The steps ``sid`` reaches back to by recorded edges (tracked or declared, not inferred from equal
        values): a value from one of them was handed on, not met by chance."""
        seen: set[str] = set()
        todo = deque([sid])
        while todo:
            for d in self.g.parents(todo.popleft()):
                if d.origin != "inferred" and d.step_id not in seen:
                    seen.add(d.step_id)
                    todo.append(d.step_id)
        return seen

    def _enclosing(self, parent: str | None) -> str | None:
        """The name of the nearest step enclosing a call that is no generic wrapper: steps of a wrapper's name
        sit inside steps of two names or more (LCEL's ``RunnableSequence`` around every ``prompt | model``,
        a helper every node calls the model through), so the wrapper tells no calls apart, the step around it
        does."""
        if self._wrappers is None:
            around: dict[str, set[str | None]] = {}
            for s in self.run.steps:
                p = self.g.steps.get(s.parent_id) if s.parent_id else None
                around.setdefault(s.name, set()).add(p.name if p is not None else None)
            self._wrappers = {name for name, outer in around.items() if len(outer) >= 2}
        seen: set[str] = set()
        while parent is not None and parent not in seen:
            seen.add(parent)
            p = self.g.steps.get(parent)
            if p is None:
                return None
            if p.name not in self._wrappers:
                return p.name
            parent = p.parent_id
        return None
