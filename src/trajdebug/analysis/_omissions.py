"""What is not an omission: values a step did not pass on that were not lost there (`lineage:dropped`).

A step given a value the failure expects that passed it on to no one is suspect of having dropped it
(`trajdebug.analysis._value_sources`).  Three kinds of such a step lost nothing, or did something else:

* the next turn of its conversation, or an agent handed the same request, was given the very message that
  held the value (`given_again`): the value was still in hand there;
* it handed the failing step a receipt for a record a write made with the value (`by_reference`): the
  value was passed on inside the record;
* it put another value of the failure's in its place (`replaced`): a substitution, not an omission, and the
  steps after it carry the substitute.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis._sources import Slice, _shape, passed_instead
from trajdebug.core.model import CONTAINER_KINDS, Step
from trajdebug.core.values import Atom


def lost_here(
    sl: Slice, lost: list[str], a: Atom, named: Sequence[Atom], pos: int, within: set[str]
) -> tuple[list[str], int]:
    """The steps that did lose ``a`` (of ``lost``, those given it that passed it on to no one), and the
    position of the first that put another value of the failure's in its place (``pos`` when none did).

    An omission a later step made good, or a value passed on inside a record, is no loss; a value put in
    its place still is, and past that step the steps carry the substitute: not carrying the original as
    well is no new loss.
    """
    swaps = [sid for sid in lost if replaced(sl, sid, a, named)]
    first = min((sl.g.position(sid) for sid in swaps), default=pos)
    kept = [
        sid
        for sid in lost
        if sid in swaps
        or (
            sl.g.position(sid) < first
            and given_again(sl, sid, a, pos, within) is None
            and by_reference(sl, sid, a, pos) is None
        )
    ]
    return kept, first


def choice_share(sl: Slice, sid: str, a: Atom, chose: Atom, first: int) -> float:
    """What a step's omission of ``a`` weighs when it passed on ``chose``, also given, in its place: a choice
    between given values says little (a quarter), but the first step to put a given value of the same shape
    there (unit ``HT-1`` for ``HT-2``, both named by the failure) made the failure's own contrast, the entity
    swapped: twice that (the steps after it carry the swap)."""
    entity = sl.g.position(sid) == first and chose.kind == a.kind and _shape(chose.raw) == _shape(a.raw)
    if (entity or (sl.g.position(sid) == first and a.kind == chose.kind == "number")) and misfiled(sl, sid, a, chose):
        return 1.0
    return 0.5 if entity else 0.25


def misfiled(sl: Slice, sid: str, a: Atom, chose: Atom) -> bool:
    """Whether the step put ``chose`` under a field it was given ``a`` under, and never ``chose``: a value
    taken from another field (a record's creation date passed as its move date, a check-out day as the
    check-in): no choice between two candidates for one slot, but the wrong slot read.  Not numbers: a
    count, a price or a share is written under many fields (a quantity and a limit, an ask and a last sale)
    by the agent's own arithmetic, not read from one of them."""
    view = sl.lin.view(sid)
    put = {o.field for o in view.outputs if o.key == chose.key and o.field}
    had_a = {i.field for i in view.inputs if i.key == a.key and i.field}
    had_chose = {i.field for i in view.inputs if i.key == chose.key and i.field}
    if a.kind == "number" or chose.kind == "number":
        # A number is misfiled only when it was given under one other field and put under the very field the
        # failure's number was given under, which held no other value (``gutter_m=6`` from ``downpipes: 6``
        # beside ``gutter_m: 52``): arithmetic makes a number anew, it does not name the field it came from.
        put &= had_a
        return len(had_chose) == 1 and bool(put) and not put & had_chose and all(
            i.key == a.key for i in view.inputs if i.field in put
        )
    if a.kind == "id":
        # An id is filed under its record's name as often as under its own (``booking: BK-1139`` beside a
        # given ``booking: {id: BK-1152}``): the record the given id named is the slot the other id took.
        had_a |= _records_of(sl.g.steps[sid].input, a.raw)
    return bool(put & had_a) and bool(had_chose) and not put & had_chose


def _records_of(given: Any, raw: str) -> set[str]:
    """The names of the records a value holds an id in (``booking`` for ``booking.id``), lower case."""
    found: set[str] = set()
    for path, v in content.leaves(given):
        parts = path.lower().split(".")
        if isinstance(v, str) and v.strip() == raw and len(parts) >= 2 and "[" not in parts[-2]:
            found.add(parts[-2])
    return found


def swapped(sl: Slice, sid: str, a: Atom, named: Sequence[Atom]) -> Atom | None:
    """Another value the failure names that the step was given and passed on in place of ``a`` (a choice;
    not a part it kept of one value holding both, `passed_instead`)."""
    found = [b for b in named if b.key != a.key and passed_instead(sl, sid, a, b)]
    # One of the same kind and shape (``BK-1139`` for ``BK-1152``) is what it put in the value's place; the
    # other values it passed on too (a guide's id beside it) only kept their own places.
    alike = [b for b in found if b.kind == a.kind and _shape(b.raw) == _shape(a.raw)]
    return next(iter(alike or found), None)


def replaced(sl: Slice, sid: str, a: Atom, named: Sequence[Atom]) -> bool:
    """Whether the step passed on, in place of ``a``, another value of its kind and shape the failure names,
    given or its own (unit ``HT-1`` for ``HT-2``; 40 segments for 64; a day for another): a substitution,
    not an omission."""
    if sl.g.steps[sid].kind in CONTAINER_KINDS:
        return False  # an agent span holds what the steps inside it did: they are the ones to ask
    view = sl.lin.view(sid)
    return any(
        b.key != a.key
        and b.kind == a.kind
        and view.holds(b)
        and (
            (b.field == a.field if a.kind == "text" else _shape(b.raw) == _shape(a.raw))
            or (a.kind == "number" and misfiled(sl, sid, a, b))
        )
        for b in named
    )


def given_again(sl: Slice, sid: str, a: Atom, pos: int, within: set[str]) -> str | None:
    """A later model step on the way to the failure that was given the value in the same message, if any.

    A turn that passed a value on to no one lost it only if no one after it had it: when a later model call
    was given the message that held it again (the next turn of the conversation, a desk handed the request
    after a hand-off), the value was still in hand there, and the omission that mattered, if any, is that later
    step's (the last to hold it and not pass it on).  A failing agent span fails at its end: the steps it
    encloses come before its failure.
    """
    start = sl.g.position(sid)
    failing = sl.run.steps[pos].step_id
    for later in sl.run.steps:
        at = sl.g.position(later.step_id)
        if (
            at > start
            and later.kind == "llm"
            and ((at < pos and later.step_id in within) or _encloses(sl, failing, later.step_id))
            and _same_message(sl.g.steps[sid], later, a)
        ):
            return later.step_id
    return None


def _same_message(step: Step, later: Step, a: Atom) -> bool:
    """Whether a later call was given the very message that gave ``step`` the value (the request, carried into
    the next turn or handed to another agent), not the value from another source."""
    mine, theirs = _chat(step), _chat(later)
    raw = a.raw.casefold()
    return any(m in theirs for m in mine if raw in content.text_of(m).casefold())


def _chat(step: Step) -> list[Any]:
    msgs = step.input.get("messages") if isinstance(step.input, Mapping) else None
    return msgs if isinstance(msgs, list) else []


def by_reference(sl: Slice, sid: str, a: Atom, pos: int) -> Atom | None:
    """An id the step passed on to the failing step that stands for a record made with the value, if any.

    A write answers with a receipt (``assignment=AS-7105-502``), not with what it stored: the step that
    made the record, and any step that handed its receipt on, passed the value on by reference when the
    failing step was given that receipt (it reads the record back).  The receipt's origin must have been
    given the value: a receipt for a record made without it carries nothing.
    """
    failing = sl.lin.view(sl.run.steps[pos].step_id)
    here = sl.g.position(sid)
    for b in sl.lin.view(sid).outputs:
        if b.kind != "id" or b.key == a.key or not failing.given(b):
            continue
        made = sl.lin.origin(b, here + 1).step_id
        if made is not None and sl.lin.view(made).given(a):
            return b
    return None


def _encloses(sl: Slice, outer: str, sid: str) -> bool:
    """Whether step ``outer`` encloses step ``sid`` (an ancestor in the step tree)."""
    parent = sl.g.steps[sid].parent_id
    for _ in range(10_000):
        if parent is None:
            return False
        if parent == outer:
            return True
        step = sl.g.steps.get(parent)
        parent = step.parent_id if step is not None else None
    return False


__all__ = ["by_reference", "choice_share", "given_again", "lost_here", "misfiled", "replaced", "swapped"]
