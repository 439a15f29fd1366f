"""What a step read that its recorded input does not show as given: shared state, and a partial recording's reads.

A step's view (`_views.py`) holds the values it was given.  Two kinds of input hide where they came from.  A
shared state merged from earlier steps' updates (a graph's nodes, a loop keeping ``state["reading"]``) is
handed whole to each step: its keys that hold what an earlier step returned under the same key are that
step's, not the input's (`state_keys`, over the run's updates indexed once: `update_index`).  And a span of
an imported format whose instrumentation records only some arguments (`PARTIAL_FORMATS`) returns values it
read without being given them: those an earlier step returned under the same field name (`named_reads`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from trajdebug.analysis.lineage._views import StepView
from trajdebug.core.model import Step
from trajdebug.core.values import Atom, is_mapping


# -- shared state: the parts of a step's input earlier steps' updates wrote ---------------------------


def state_keys(step: Step, earlier: Mapping[tuple[str, str], int], position: int) -> frozenset[str]:
    """Top-level keys of a step's input that hold what an earlier step returned under the same key: a
    shared state merged from the updates of the steps before (a graph's nodes, a loop keeping
    ``state["reading"]``), handed whole to a step that returns its own update.

    The last item's ``dome=DM-3`` a node overwrites with this item's ``DM-5``, or a record another node
    appended, is no value the step was asked to keep.  A single such part counts only when the step writes
    it back (one object handed down a pipeline is a value to keep, not a state).  ``earlier``: (key, canonical JSON) of each
    container an output held under a top-level key -> the first position that returned it
    (`update_index`); ``position``: the step's.
    """
    if not is_mapping(step.input) or not is_mapping(step.output):
        return frozenset()
    whole, appended = set(), set()
    for k, v in step.input.items():
        if isinstance(v, (dict, list)) and v:
            c = _canonical(v)
            if c is not None and earlier.get((str(k), c), position) < position:
                whole.add(str(k))
            elif isinstance(v, list) and len(v) <= 200:
                # A list the state builds by appending each update's items (a graph's message list).
                items = [_canonical(x) for x in v]
                if all(x is not None and earlier.get((str(k), _ITEM + x), position) < position for x in items):
                    appended.add(str(k))
    if len(whole) + len(appended) < 2:
        # One value handed on whole under its own name is a pipeline passing it (a planner's order to the
        # refund tool), whose conflicts count; a graph's state merges several parts, or is written back.
        whole &= set(map(str, step.output))
    return frozenset(whole | appended)


def update_index(steps: Iterable[Step]) -> dict[tuple[str, str], int]:
    """(key, canonical JSON) of every non-empty container a step's mapping output held under a top-level
    key -> the position of the first step that returned it (see `state_keys`); input steps (the run's
    request, a user's answers) left out."""
    out: dict[tuple[str, str], int] = {}
    for i, s in enumerate(steps):
        # The run's request (an input step's answers) is what the steps are asked to honour, not state.
        if is_mapping(s.output) and s.kind != "input":
            for k, v in s.output.items():
                if isinstance(v, (dict, list)) and v:
                    c = _canonical(v)
                    if c is not None:
                        out.setdefault((str(k), c), i)
                    for x in v[:200] if isinstance(v, list) else ():
                        cx = _canonical(x)
                        if cx is not None:
                            out.setdefault((str(k), _ITEM + cx), i)
    return out


# -- partial recordings: what a local span read that its recorded input leaves out ---------------------


PARTIAL_FORMATS = frozenset({"otlp"})
"""Imported formats whose spans carry what their instrumentation chose to record: a hand-made span's
``input.value`` often holds one or two of the function's arguments (an id, a name), while trajdebug's own
recorder, the LangChain callbacks and the Agents SDK's function spans record every argument."""


_LOCAL_KINDS = frozenset({"other"})
"""Kinds of step that compute in the agent's own code (no model, tool, retrieval, agent or input step:
those bring values in from outside, so what they return unasked they introduced)."""


def named_reads(steps: Sequence[Step], views: Mapping[str, StepView], source_format: object) -> dict[str, list[Atom]]:
    """For a run whose recording may be partial (``source_format`` in `PARTIAL_FORMATS`): the output values
    of each local step, under a field its recorded input does not name, that an earlier step's output held
    under the same field name (``press=PR-3`` in a job ticket whose span recorded only the job and order ids, after an
    order's parser returned ``press=PR-3``), by step id.

    A function that returns a value under the very name an earlier step returned it under read it there;
    counted as introduced, such a value makes the span the origin of every value it copied.  Earlier means
    ended before the step started (an enclosing step's output, which holds its children's, comes later).
    An earlier call of the same function is no such holder: a loop's calls each return their own constant
    (a rate, a unit, a basis written by the code), and reading it as copied from the call before makes the
    first call the only one that computed it, odd among its siblings.
    """
    if source_format not in PARTIAL_FORMATS:
        return {}
    out: dict[str, list[Atom]] = {}
    # (field, value) -> step name -> when the first step of that name that returned it ended
    first: dict[tuple[str, str], dict[str, int]] = {}
    for s in steps:
        v = views[s.step_id]
        # (A span given its arguments by name: one given a text, a parser's, was given what it reads.)
        if s.kind in _LOCAL_KINDS and is_mapping(s.input) and v.outputs and not v.given_by_parents:
            # Only fields its recorded input lacks: one it was given under that name with another value is
            # a value it changed (a log line that names the previous lot's tool), not one it was not shown.
            named = {a.field for a in v.inputs}
            got = [
                a
                for a in v.outputs
                if a.field
                and a.field not in named
                and _held_before(first.get((a.field, a.key)), s)
                and not v.given(a)
            ]
            if got:
                out[s.step_id] = got
        if s.end_ns is not None and s.kind != "agent":
            for a in v.outputs:
                if a.field:
                    ends = first.setdefault((a.field, a.key), {})
                    ends[s.name] = min(ends.get(s.name, s.end_ns), s.end_ns)
    return out


def _held_before(ends: Mapping[str, int] | None, step: Step) -> bool:
    """Whether a step of another name returned the value before ``step`` started (`named_reads`)."""
    return ends is not None and any(name != step.name and end <= step.start_ns for name, end in ends.items())


_ITEM = "item:"
"""Marks an `update_index` entry for one item of a list an output held (a state's appended items)."""


def _canonical(value: Any, limit: int = 20_000) -> str | None:
    """A container's canonical JSON, None when it cannot be written or is too large to compare cheaply."""
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return None
    return text if len(text) <= limit else None


__all__ = [
    "state_keys",
    "update_index",
    "PARTIAL_FORMATS",
    "named_reads",
]
