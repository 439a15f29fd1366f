"""What a step received: the parts of its arguments as it starts, so that its output's parts found among them
are no output of its own (`trajdebug.record.registry.Registry._unheld`).

Split from `trajdebug.record.steps`, whose hot path calls `_parts` when a step starts and `_received` when
it ends; only steps whose input holds a container pay for it, at most `_WALK` ids.
"""

from __future__ import annotations

import gc
from itertools import islice


TYPE_CHECKING = False  # `typing` for the type checker only: `import trajdebug` loads this module (see steps.py)
if TYPE_CHECKING:
    from typing import Any


_OPEN = (dict, list, tuple, set, frozenset)
"""The containers `_received` opens (`trajdebug.record.registry._OPEN`)."""
_MIN_STR = 24
"""Shorter texts are not identity-tracked (`trajdebug.record.registry.MIN_TRACKED_STR`, a test holds them equal)."""


_WALK = 512
"""At most this many ids are taken by `_parts` (`trajdebug.record.registry._MAX_WALK`, a test holds them equal)."""


def _sig(o: Any) -> int:
    """What a container holds, by identity (a change made in place changes it); 0 for anything else."""
    if type(o) not in _OPEN:
        return 0
    if len(o) <= 128:
        return hash(tuple(map(id, gc.get_referents(o))))
    return hash((len(o), *map(id, islice(o.values() if type(o) is dict else o, 128))))  # bounded, as the walk


def _parts(inp: Any, spec: Any, kw: Any) -> tuple[dict[int, tuple[Any, int]], set[int], list[Any]] | None:
    """The parts of a step's input as it starts (what it was given): id -> (the container holding it there,
    what it held), the ids of the whole arguments, and the levels walked (kept so that no id is reused
    while the step runs); None when the input holds no container.

    Taken at the step's start, not its end: an object the step itself made and stored into a container it
    was given (a memo cache, a state dict), or a part it changed in place, is the step's output, not
    something it received.  The walk is `_find`'s reach (three levels below a non-dict input, two below a
    call's arguments, each container's first 128 items), bounded as `_find` is, by `_WALK` parts."""
    if spec is not None:
        args = list(inp[1:] if spec[2] else inp)
        if kw:
            args += kw.values()
        levels = 2
    elif type(inp) is dict:
        args, levels = list(islice(inp.values(), 128)), 2
    else:
        args, levels = [inp], 3
    if not any(type(a) in _OPEN for a in args):
        return None
    given = {id(a) for a in args}
    parts: dict[int, tuple[Any, int]] = {}
    kept: list[Any] = [args]
    level = args
    budget = _WALK  # ids taken, the parts' and what each container part holds (its `_sig`)
    for _ in range(levels):
        nxt: list[Any] = []
        for o in level:
            if type(o) in _OPEN:
                kids = gc.get_referents(o) if len(o) <= 128 else list(islice(o.values() if type(o) is dict else o, 128))
                nxt += kids
                budget -= len(kids)
                for k in kids:
                    t = type(k)
                    if t in _OPEN:
                        size = min(len(k), 128)
                        if budget < size:
                            budget = 0  # what it held is unknown: not taken as received (the step stays its producer)
                            break
                        budget -= size
                        parts.setdefault(id(k), (o, _sig(k)))
                    elif t is str and len(k) >= _MIN_STR:
                        # Immutable.  Any other object may have been changed in place, unseen: it is not taken
                        # as received (the step that returns it stays its producer).
                        parts.setdefault(id(k), (o, 0))
                if budget <= 0:
                    break
        kept.append(nxt)
        if not nxt or budget <= 0:
            break
        level = nxt
    return (parts, given, kept) if parts else None


def _received(out: Any, start: tuple[dict[int, tuple[Any, int]], set[int], list[Any]]) -> dict[int, Any] | None:
    """Of ``out`` and its first items, those the step was given inside one of its arguments (a part of an
    argument as the step started, not an argument itself, and not changed since), each id with the
    container that held it there; None when none.

    The producer of an object is the first step that output it without having received it: a lookup
    returning ``notes[hive]`` from the ``notes`` it was given did not make it, and as its producer it
    would give every later step handed ``notes`` a false data edge.  The writer keeps the holder, so that
    the object found again in that same container keeps its earlier producer, while the object handed on
    by itself or in a new container still comes from the lookup (`Registry._unheld`).  What the step made
    and stored into its argument, or changed in place, is not in `_parts` as it was (`_parts`).  A whole
    argument returned stays a relay (`RETURNED_ARGUMENT`).
    """
    parts, given, _ = start
    mine = [out]
    if type(out) in (list, tuple, dict):
        mine.extend(islice(out.values() if type(out) is dict else out, 64))
    got: dict[int, Any] = {}
    for o in mine:
        was = parts.get(id(o))
        if was is not None and id(o) not in given and _sig(o) == was[1]:
            got[id(o)] = was[0]
    return got or None
