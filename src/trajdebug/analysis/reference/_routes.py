"""Routes: a step whose answer is the name of the step that ran next after it chose that step.

A router (a LangGraph conditional edge's function, a dispatcher answering the next node's name) answers a name
of the program, chosen among the routes its code knows, never a value copied from what it was given.  The
grounded check (`_invariants.py`) holds a field to the values the step was given when its other calls or its
passing runs always answered one of them: a loop's router answering ``tools`` while the prompt says "use the
tools" was given that word by chance, and its last call, leaving the loop for ``draft_quote``, is no value made
up.  A route taken is judged by what it led to (`inference.control_edges` links the chosen step to it) and, with
passing runs, by `reference:category` (a route they never took); `chose_next` lets the grounded check of the step's
own calls skip it.  Held to passing runs whose answers of that step were each given to it (a router that always
passed on a given label), a route it was not given is the made-up fallback the check is for (review rev55a).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trajdebug.analysis.inference._control import _ID, _NAME, _words
from trajdebug.analysis.lineage._views import semantic
from trajdebug.core.model import Step


def chose_next(step: Step, steps: Mapping[str, Step] | None, value: str) -> bool:
    """Whether ``value``, a name the step's answer chose (the whole answer as one name, or a one-name text of a
    flat mapping with one text field), names by its words the first step that started after the step ended and is
    not inside it.

    Never a model's answer: a model told of its routes picks among names its prompt gave, and one it was not
    told of is the wrong pick the check is for.  False without the run's steps (nothing tells what ran next), and
    when any of the step's other calls in the run passed on a whole value it was given (`_passed_on`)."""
    if steps is None or step.kind == "llm" or value != _route(step.output):
        return False  # (a model choosing a route is asked what it was told of: its pick is checked)
    if any(_passed_on(s) for s in steps.values() if s.step_id != step.step_id and _same(s, step)):
        return False  # (a dispatcher passing on the label it was given: a route it was not given is made up)
    want = _words(value)
    if not want:
        return False
    nxt = _next_outside(step, steps)
    return nxt is not None and _words(nxt.name) == want


def _route(output: Any) -> str | None:
    """The name the answer chose: the whole answer as one name, or the one text field of a flat mapping
    (a router's ``{"path": "tools"}``) when that text is one name; None for anything else (a list of names is a
    plan, a mapping of several texts a record)."""
    if isinstance(output, Mapping):
        if any(isinstance(v, (Mapping, list, tuple)) for v in output.values()):
            return None  # not flat
        texts = [v for v in output.values() if isinstance(v, str)]
        if len(texts) != 1 or _is_id(texts[0].strip()):
            return None  # (a one-field record holding an id, ``{"account": "C-100"}``, is data, not a route)
        output = texts[0]
    if not isinstance(output, str):
        return None
    name = output.strip()
    return name if _NAME.match(name) else None


def _is_id(text: str) -> bool:
    """Whether a text is shaped as a record's id (letters and digits together, no lower-case letter: ``C-100``,
    ``MRN-1042``), never a route's name (``agent_2``, ``node1``: a program's names are written in lower case)."""
    return _ID.match(text) is not None and not any(c.islower() for c in text)


def _same(a: Step, b: Step) -> bool:
    return a.name == b.name and a.kind == b.kind and a.agent == b.agent


def _passed_on(step: Step) -> bool:
    """Whether the step's route is a whole text value it was given (``{"label": "refund"}`` in, ``refund`` or
    ``{"desk": "refund"}`` out), not a word inside a longer text (a prompt saying "use the tools")."""
    name = _route(step.output)
    if name is None:
        return False
    want = name.casefold()
    stack: list[Any] = [semantic(step, step.input)]
    seen = 0
    while stack and seen < 500:
        v = stack.pop()
        seen += 1
        if isinstance(v, str):
            if v.strip().casefold() == want:
                return True
        elif isinstance(v, Mapping):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return False


def _next_outside(step: Step, steps: Mapping[str, Step]) -> Step | None:
    """The first step after ``step`` in run order that started once it ended and that it does not enclose."""
    seen = False
    inside = {step.step_id}
    for t in steps.values():
        if t.step_id == step.step_id:
            seen = True
            continue
        if not seen:
            continue
        if t.parent_id in inside:
            inside.add(t.step_id)
            continue
        if step.end_ns is not None and t.start_ns and t.start_ns < step.end_ns:
            continue
        return t
    return None


__all__ = ["chose_next"]
