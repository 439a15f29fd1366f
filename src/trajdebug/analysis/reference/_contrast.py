"""A rule that fires on passing runs too says nothing about a failure: the diagnosers' findings contrasted.

A diagnoser reads one step and says what looks wrong with it: a choice its input does not name, a
value its inputs do not hold, an error it raised.  Read alone, such a sign is as strong in a step
that always looks like that (a router that picks labels from its own vocabulary, a model that always
rounds, a tool that fails once and is retried in every run) as in the step where the failure began.
Spectrum-based fault localization (Jones and Harrold 2005, Tarantula; Abreu et al. 2007, Ochiai)
counts what passing executions show as well and keeps only what tells failing from passing ones.

`Contrast` does that for the diagnosers: for a step of the failing run with a finding, it runs the
same diagnosers on the step's counterparts (same agent, name and kind: `step_key`; for a model call,
the turns that called the same tools, or none, when passing runs have such turns: `turn`) in the agent's
latest passing runs, at most `MAX_RUNS` runs and `MAX_STEPS` counterparts in each.  A finding of a
rule that also fires on at least half of those counterparts (and on at least `MIN_SEEN` of them)
keeps its sentence, says how often passing runs show it, and weighs nothing.  A finding about values
(a model call stating values none of its inputs holds) is compared by the values' shapes (letters,
digits and the rest, `shape`): it weighs nothing only when passing runs state values of each of its
shapes ungrounded too.  A model that always states a confidence of its own (``0.93``) keeps the finding
when it also states an identifier (``'CLM-2219'``) it was never given.  Nothing is learned
from a finding no counterpart was seen for: without passing runs, the findings stand as they were.

The counterparts are diagnosed in contexts of their own runs (graph, memo), without failures: a rule
that reads the failure's values never fires there, so its findings are never contrasted away.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Diagnoser
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.analysis.reference._profile import StepKey, step_key
from trajdebug.core.chat import tool_calls
from trajdebug.core.model import Run, Step


MAX_RUNS = 3
"""Passing runs consulted (the latest ones): enough to tell "always" from "once", at a bounded cost."""
MAX_STEPS = 4
"""Counterparts of one step diagnosed per passing run (a step in a loop has many; a few say what it does)."""
MIN_SEEN = 2
"""Counterparts that must have been diagnosed before a finding is contrasted away: one could be chance."""


@dataclass(slots=True)
class Contrast:
    """The agent's passing runs, diagnosed step by step on demand, to contrast a failing run's findings.

    Args:
        references: The agent's passing runs (the latest `MAX_RUNS` are used).
        diagnosers: The diagnosers the failing run was diagnosed with, by name.
        lexicon: The words the diagnosers read.
    """

    references: Sequence[Run]
    diagnosers: Sequence[tuple[str, Diagnoser]]
    lexicon: Lexicon = ENGLISH
    _contexts: list[DiagnoseContext] | None = None
    _index: list[dict[StepKey, list[Step]]] = field(default_factory=list)
    _fired: dict[tuple[StepKey, frozenset[str] | None], list[dict[str, frozenset[str]]]] = field(
        default_factory=dict
    )

    def counterparts(self, step: Step, steps: Mapping[str, Step] | None = None) -> list[dict[str, frozenset[str]]]:
        """For each counterpart of ``step`` in the passing runs, the diagnosers that suspect it, each with
        the shapes of the values its findings name (``steps``: its run's steps by id, `step_key`)."""
        key = (step_key(step, steps), turn(step))
        got = self._fired.get(key)
        if got is None:
            got = self._fired[key] = self._diagnose(*key)
        return got

    def _diagnose(self, key: StepKey, role: frozenset[str] | None) -> list[dict[str, frozenset[str]]]:
        if self._contexts is None:
            latest = sorted(self.references, key=lambda r: r.start_ns)[-MAX_RUNS:]
            self._contexts = [
                DiagnoseContext.build(r, diagnosers=dict(self.diagnosers), lexicon=self.lexicon) for r in latest
            ]
            self._index = [_by_key(r) for r in latest]
        found = [index.get(key, []) for index in self._index]
        # A model turn is compared with the turns that played its part (the same tools called, or none):
        # one model name serves every turn of a conversation, and a turn that writes the final answer says
        # nothing about the turn that made up a tool call's arguments.
        same = [[s for s in steps if turn(s) == role] for steps in found]
        if role is not None and any(same):
            found = same
        if role and sum(map(len, found)) < MIN_SEEN:
            # A hand-off sends each run to one of several specialists (a desk per language, a clerk per
            # region): when this one played too few passing runs, the others' turns that called the same
            # tools played the same part.
            found = [
                [s for k, steps in index.items() if k[1:] == key[1:] for s in steps if turn(s) == role]
                for index in self._index
            ]
        out: list[dict[str, frozenset[str]]] = []
        for ctx, steps in zip(self._contexts, found):
            for s in steps[:MAX_STEPS]:
                out.append(_suspecting(s, ctx))
        return out

    def apply(self, step: Step, found: list[Evidence], steps: Mapping[str, Step] | None = None) -> list[Evidence]:
        """``found`` (the diagnosers' findings about ``step``), those that passing runs show as often weighing
        nothing, with a sentence saying so."""
        if not any(e.suspicion > 0 and not e.sound for e in found):
            return found
        seen = self.counterparts(step, steps)
        if len(seen) < MIN_SEEN:
            return found
        out = []
        for e in found:
            if e.suspicion > 0 and not e.sound:
                fired = sum(1 for rules in seen if e.diagnoser in rules)
                shapes = {shape(v) for v in e.values}
                shown = set().union(*(rules.get(e.diagnoser, ()) for rules in seen)) if shapes else set()
                if fired * 2 >= len(seen) and shapes <= shown:
                    e = Evidence(
                        e.step_id,
                        0.0,
                        f"{e.reason} (so do {fired} of {len(seen)} of its counterparts in passing runs: "
                        "it does not tell this run from them)",
                        e.diagnoser,
                        False,
                        e.correction,
                    )
            out.append(e)
        return out


def turn(step: Step) -> frozenset[str] | None:
    """A model call's part in its conversation: the names of the tools its answer calls (none: an answer in
    words); None for any other step."""
    if step.kind != "llm":
        return None
    return frozenset(str(c.get("name")) for c in tool_calls(step.output))


def _by_key(run: Run) -> dict[StepKey, list[Step]]:
    index: dict[StepKey, list[Step]] = {}
    by_id = {s.step_id: s for s in run.steps}
    for s in run.steps:
        index.setdefault(step_key(s, by_id), []).append(s)
    return index


def _suspecting(step: Step, ctx: DiagnoseContext) -> dict[str, frozenset[str]]:
    """The diagnosers that find something wrong with a passing run's step, each with the shapes of the values
    its findings name (a rule that fails on the step: none)."""
    rules: dict[str, set[str]] = {}
    for name, fn in ctx.rules(step):  # (those whose declaration excludes the step find nothing there)
        try:
            for e in fn(step, ctx):
                if e.suspicion > 0 and not e.sound:
                    rules.setdefault(e.diagnoser or name, set()).update(shape(v) for v in e.values)
        except Exception:  # noqa: BLE001 - a rule that cannot read a passing step contrasts nothing
            continue
    return {k: frozenset(v) for k, v in rules.items()}


_RUNS = re.compile(r"[^\W\d_]+|\d+")


def shape(value: str) -> str:
    """A value's shape: each run of letters an ``a``, each run of digits a ``9``, the rest as written
    (``'CLM-2219'`` and ``'INV-7'`` alike, ``0.93`` and ``0.5`` alike, a word and a name alike)."""
    return _RUNS.sub(lambda m: "9" if m.group(0)[0].isdigit() else "a", value)


__all__ = ["MAX_RUNS", "MAX_STEPS", "MIN_SEEN", "Contrast", "shape", "turn"]
