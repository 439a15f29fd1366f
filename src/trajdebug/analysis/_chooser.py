"""Routing functions: a step whose whole answer names the step that ran next hands its input on to it.

A state graph's conditional edge (LangGraph's ``tools_condition``, a ``route``
function) is given the whole state and answers one word: the name of the node
to run next.  That node is then handed the state itself.  `lineage:dropped`
reads the router as a step that was given a value the failure expects and did
not pass it on; but passing values on is not what it does: it chose where the
state goes, and the state went there with the value.  When the step it chose
(the first step of that name to start after it ended; `inference.control_edges`
reads the same choice) was given the value too, the router lost nothing.

A model's answer is never read so (a triage model's one-word answer, a hand-off:
their conversations are no state handed on unchanged), and neither is a router
whose chosen step was not given the value (a misroute that left it behind).
"""

from __future__ import annotations

import re
from typing import Any

from trajdebug.analysis._sources import Slice
from trajdebug.core.model import CONTAINER_KINDS, Step
from trajdebug.core.values import Atom


_NAME = re.compile(r"^[A-Za-z_][\w.:-]{0,63}$")
"""A node's name: one identifier-like word, as a routing function answers."""
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def _words(name: str) -> frozenset[str]:
    """The words of a name, lowercased (``review_research`` and ``reviewResearch`` give the same set)."""
    return frozenset(w.lower() for w in _WORDS.findall(name))


def _answered_name(step: Step) -> str | None:
    """The one name a step's whole answer is (a routing function's), if it is one."""
    out: Any = step.output
    if isinstance(out, str) and _NAME.match(out.strip()):
        return out.strip()
    return None


def chosen_step(sl: Slice, sid: str) -> str | None:
    """The step a routing function chose: the first step after it ended whose name is its answer."""
    step = sl.g.steps[sid]
    if step.kind == "llm" or step.kind in CONTAINER_KINDS:
        return None
    name = _answered_name(step)
    if name is None:
        return None
    want = _words(name)
    if not want or want == _words(step.name):
        return None
    start = sl.g.position(sid)
    after = [
        later
        for later in sl.run.steps
        if sl.g.position(later.step_id) > start
        and not (step.end_ns is not None and later.start_ns and later.start_ns < step.end_ns)
    ]
    for later in after:
        if _words(later.name) == want:
            return later.step_id
    if any(_words(s.name) == want for s in sl.run.steps):
        return None
    # An answer naming no step of the run (an end sentinel, ``__end__``) leaves the node that asked:
    # the state goes to the step that runs next outside it.
    return next((later.step_id for later in after if not _inside(sl, later, step.parent_id)), None)


def _inside(sl: Slice, step: Step, container: str | None) -> bool:
    """Whether a step runs inside a container (cycle-safe)."""
    parent, seen = step.parent_id, set()
    while container is not None and parent is not None and parent not in seen:
        if parent == container:
            return True
        seen.add(parent)
        up = sl.g.steps.get(parent)
        parent = up.parent_id if up is not None else None
    return False


def handed_to_choice(sl: Slice, sid: str, a: Atom) -> bool:
    """True when a routing function was given a value that the step it chose was given too (it lost nothing)."""
    chosen = chosen_step(sl, sid)
    return chosen is not None and sl.lin.view(chosen).given(a)


__all__ = ["chosen_step", "handed_to_choice"]
