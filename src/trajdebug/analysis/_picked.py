"""The step that picked, from a list it was given, the items a failure names: the choice the failure is about.

A code step that selects valves to close, a slot among slots, a record among
records introduces no value (every item it returns was given to it), so the
thin slice, which follows values to the step that introduced them, passes it
by for the step that listed the items.  Yet the failure is about its choice:
it joins the failure's thin slice as an origin does.  And of the steps that state
a label the failure uses (one triage per alert), the one given the failure's item
is the decision it speaks of (`before`).
"""

from __future__ import annotations

from collections.abc import Sequence

from trajdebug.analysis._selection import passed_over, selections
from trajdebug.analysis._sources import Found, Slice, _thin
from trajdebug.core.model import CONTAINER_KINDS
from trajdebug.core.values import Atom


def picked_named(sl: Slice, named: Sequence[Atom], pos: int, within: set[str], where: str) -> list[Found]:
    """Steps that picked from a list they were given the items the failure names (valves to close, a
    slot among slots): they introduced nothing, yet the failure is about their choice.  A model is
    read so too (one that names, in its answer or a tool call's arguments, one record of a list a
    tool showed it chose that record; the tool that listed every record chose nothing), when the
    failure names a value of a record it passed over (the part that would have fit)."""
    out: list[Found] = []
    raws = {a.raw.strip().lower(): a.raw for a in named if a.kind == "id"}
    keys = set(raws)
    if not keys:
        return out
    text = " ".join(a.raw for a in named)
    for sid in within:
        step = sl.g.steps[sid]
        if sl.g.position(sid) >= pos or step.kind in CONTAINER_KINDS:
            continue
        sels = selections(step.input, step.output)
        if step.kind == "llm":
            # A model picking faithfully from a wrong list (a stale roster) made no wrong choice: its pick is
            # the failure's only when the failure names what a record it passed over holds.
            sels = [sel for sel in sels if passed_over(sel, text)]
        hit = sorted(k for sel in sels for k in sel.picked & keys)
        if hit:
            out += _thin(
                sid,
                sl.w["origin"],
                f"picked {', '.join(raws[k] for k in hit[:3])} from a list it was given, which the failure at {where} names",
            )
    return out


def before(
    sl: Slice, here: tuple[int, str], best: tuple[int, str, Atom] | None, about: Sequence[Atom]
) -> bool:
    """Whether a step stating a label comes before the best one so far: the first given an item the failure
    names (the triage of the alert it is about, among one per alert), else the first."""
    if best is None:
        return True
    mine, theirs = (any(sl.lin.view(sid).given(a) for a in about) for sid in (here[1], best[1]))
    return (mine and not theirs) or (mine == theirs and here[0] < best[0])


__all__ = ["before", "picked_named"]
