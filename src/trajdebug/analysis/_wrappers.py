"""Wrappers that returned what a model call inside them answered (`answered_inside`).

A step that encloses a model call and returns its answer value for value only passed the answer on: a
finding about that answer is about the model that wrote it (`trajdebug.analysis._ranking.Ranking.verdict`
hands such findings down).  "Inside" is either the recorded nesting (a child, a grandchild) or, when a
recorder lost the nesting, a model call that ran within the wrapper's own span and that the wrapper
declares it took its answer from: a framework that invokes a model with its caller's context reports the
call as the caller's sibling (a graph node's function and the model it called), and the recorder links
the two with a declared edge.
"""

from __future__ import annotations

from collections.abc import Mapping

from trajdebug.analysis import _content as content
from trajdebug.analysis._sources import Slice
from trajdebug.core.model import Step


_WRAPPER_KINDS = frozenset({"tool", "agent"})
"""Kinds of an enclosing step that may return what a model call inside it answered (a tool running a sub-agent,
an agent span, a graph node recorded as an agent); `_writer` checks that it did, value for value."""


def _scalars(value: object) -> set[str]:
    return {repr(v) for _, v in content.decoded_leaves(value) if isinstance(v, (str, int, float)) and not isinstance(v, bool)}


def answered_inside(sl: Slice) -> dict[str, Step]:
    """Each wrapper whose answer a model call inside it wrote, and that model call.

    A tool that runs a sub-agent (an Agents SDK ``Agent.as_tool``, a crew's delegation) or an agent span returns
    what the last model call inside it answered, value for value: a finding about that answer (it is off its
    request, unlike the passing runs', lacks a field) is about the model that wrote it, and the wrapper only
    passed it on (`trajdebug.analysis._ranking.Ranking.verdict` hands such findings down).  Findings about what
    the wrapper was given or how its call ended (`ARGUMENT_SIGNALS`) stay with it.
    """
    # One pass builds the enclosure index and each model answer is decoded once, however many wrappers
    # enclose it: a long run of agent spans stays linear (a scan of the run per wrapper was quadratic).
    kids: dict[str | None, list[tuple[int, Step]]] = {}
    for i, s in enumerate(sl.run.steps):
        kids.setdefault(s.parent_id, []).append((i, s))
    answers: dict[str, set[str]] = {}
    out: dict[str, Step] = {}
    by_id = {s.step_id: s for s in sl.run.steps}
    for w in sl.run.steps:
        if w.output is None:
            continue
        inner = None
        if w.step_id in sl.has_children and w.kind in _WRAPPER_KINDS:
            inner = _writer(w, kids, answers)
        if inner is None:
            inner = _beside(w, by_id, answers)
        if inner is not None:
            out[w.step_id] = inner
    return out


def _beside(wrapper: Step, by_id: Mapping[str, Step], answers: dict[str, set[str]]) -> Step | None:
    """The latest model call the wrapper declares it took data from, run within the wrapper's span (started
    after it, ended before it), whose answer holds every value of the wrapper's answer that the wrapper was
    not given itself (a framework stamps the caller's name on the message it relays): a call the recorder
    could not nest under its caller."""
    if wrapper.end_ns is None:
        return None
    calls = []
    for d in wrapper.deps:
        s = by_id.get(d.step_id)
        if d.origin != "declared" or d.kind != "data" or s is None or s.kind != "llm" or s.status != "ok":
            continue
        if s.end_ns is not None and wrapper.start_ns < s.start_ns and s.end_ns <= wrapper.end_ns:
            calls.append(s)
    if not calls:
        return None
    want = _scalars(wrapper.output)
    given: set[str] | None = None
    for s in sorted(calls, key=lambda c: c.start_ns, reverse=True):
        got = answers.get(s.step_id)
        if got is None:
            got = answers[s.step_id] = _scalars(s.output)
        if not want & got:
            continue
        if given is None:
            given = _scalars(wrapper.input)
        if want - got <= given:
            return s
    return None


def _writer(
    wrapper: Step, kids: Mapping[str | None, list[tuple[int, Step]]], answers: dict[str, set[str]]
) -> Step | None:
    """The latest model call enclosed by ``wrapper`` whose answer holds every value of the wrapper's answer.

    Enclosed: a child of the wrapper, or a child recorded after its enclosed parent (run order), as a walk of the
    run that grows the enclosed set step by step finds them.  ``answers`` keeps each model answer's values."""
    want = _scalars(wrapper.output)
    if not want:
        return None
    seen = {wrapper.step_id}
    calls: list[tuple[int, Step]] = []
    stack = list(kids.get(wrapper.step_id, ()))
    while stack:
        i, s = stack.pop()
        if s.step_id in seen:
            continue
        seen.add(s.step_id)
        if s.kind == "llm" and s.status == "ok":
            calls.append((i, s))
        stack.extend(c for c in kids.get(s.step_id, ()) if c[0] > i)
    for _, s in sorted(calls, key=lambda c: c[0], reverse=True):
        got = answers.get(s.step_id)
        if got is None:
            got = answers[s.step_id] = _scalars(s.output)
        if want <= got:
            return s
    return None


__all__ = ["answered_inside"]
