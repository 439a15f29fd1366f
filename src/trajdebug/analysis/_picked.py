"""The step that picked, from a list it was given, the items a failure names: the choice the failure is about.

A code step that selects valves to close, a slot among slots, a record among
records introduces no value (every item it returns was given to it), so the
thin slice, which follows values to the step that introduced them, passes it
by for the step that listed the items.  Yet the failure is about its choice:
it joins the failure's thin slice as an origin does.  And of the steps that state
a label the failure uses (one triage per alert), the one given the failure's item
is the decision it speaks of (`before`).

A step given the bound a failure states that returned the very record the
failure says breaks it (a finder asked for 3 seats that answered a boat of 2)
was told the requirement and answered beside it (`limit_ignored`).  A small
integer is given to some step of almost any run, so such a bound must come
under a field the failure's words name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from trajdebug.analysis import _content as content
from trajdebug.analysis import _numerals as numerals
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis._selection import passed_over, selections
from trajdebug.analysis._sources import Found, Slice, _field_words, _terms, _thin, _trivial_number
from trajdebug.analysis.lineage._anomalies import PROTOCOL_FIELDS
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
    out += _picked_holding(sl, named, pos, within, where)
    if not keys:
        return out
    text = " ".join(a.raw for a in named)
    for sid in sorted(within, key=sl.g.position):
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


def replaced_named(sl: Slice, named: Sequence[Atom], pos: int, within: set[str], where: str) -> list[Found]:
    """Steps that answered, under a field they were given one value under, another value, where the failure names
    both (a log entry handed a booking of 10 pieces that wrote 4 pieces, and the failure says "the log lists 4
    pieces, the booking holds 10"): the failure is about the replacement, whoever first held either value.  Numbers
    count too (a field's number changes legitimately, a converted amount, but not to one the failure sets against
    the number it was given).  A model's answer is the llm-output diagnoser's to judge."""
    keys = {a.key for a in named if a.kind in ("number", "date", "id")}
    if len(keys) < 2:
        return []
    out: list[Found] = []
    for sid in sorted(within, key=sl.g.position):
        step = sl.g.steps[sid]
        if sl.g.position(sid) >= pos or step.kind in CONTAINER_KINDS or step.kind == "llm":
            continue
        view = sl.lin.view(sid)
        given: dict[str, set[str]] = {}
        raw: dict[str, str] = {}
        for a in view.inputs:
            if a.field and a.field not in PROTOCOL_FIELDS:
                given.setdefault(a.field, set()).add(a.key)
                raw.setdefault(a.field, a.raw)
        for o in view.outputs:
            was = given.get(o.field or "", set())
            if len(was) != 1 or o.key not in keys or o.key in was:
                continue
            old = next(iter(was))
            if old in keys and old not in view.out_keys and not _an_update(sl, sid, o, old, given):
                out += _thin(
                    sid,
                    sl.w["origin"],
                    f"was given {o.field}={raw[o.field or '']} and answered {o.field}={o.raw} in its place, the two "
                    f"values the failure at {where} sets against each other",
                )
                break
    return out


def _an_update(sl: Slice, sid: str, o: Atom, old: str, given: dict[str, set[str]]) -> bool:
    """Whether a step's new value under a field is an update it was asked to make, not a replacement: computed
    from the value it replaced and its other inputs (a balance of 500 and a refund of 120 answered as 620; not a
    number some other pair of its inputs happens to make, 76 = 80 - 4 for a core of 152), or handed to it under
    the field's name with a word of change added (``new_date`` for ``date``, `Lexicon.change_words`; a
    ``suggested_`` value is no order to change it).  A later copy that disagrees with such an update is stale;
    the update is no cause of that."""
    if any(x.key == old for x in sl.lin.operands(sid, o)):
        return True
    words = _name_words(o.field or "")
    for g, ks in given.items():
        extra = _name_words(g) - words
        if o.key in ks and extra and extra <= sl.lexicon.change_words and words <= _name_words(g):
            return True
    return False


def _name_words(name: str) -> set[str]:
    """The words of a field name, lower case, split at non-alphanumerics and case changes (``newDate``: new, date)."""
    return {w.lower() for w in re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", name) if w}


def _numbers(record: object) -> set[float]:
    """The numbers a record holds (JSON text read)."""
    return {float(v) for _, v in content.decoded_leaves(record) if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _picked_holding(sl: Slice, named: Sequence[Atom], pos: int, within: set[str], where: str) -> list[Found]:
    """The first model that picked, from a list a step showed it, the record holding a number the failure names
    that no record it passed over holds (a kayak whose 4.1 m hull a roof rack refused): the failure is about that
    pick even when it names the record's value, not its id.  Later models restating the pick carry it on."""
    wanted = {a.number for a in named if a.kind == "number" and a.number is not None and not _trivial_number(a)}
    if not wanted:
        return []
    best: tuple[int, str, list[str]] | None = None
    for sid in sorted(within, key=sl.g.position):
        step = sl.g.steps[sid]
        at = sl.g.position(sid)
        if step.kind != "llm" or at >= pos or (best is not None and at >= best[0]):
            continue
        hit: list[str] = []
        for sel in selections(step.input, step.output):
            if sel.field in PROTOCOL_FIELDS or (isinstance(sel.records[0], dict) and "role" in sel.records[0]):
                continue  # the conversation's messages: a model answering as the assistant picked no record
            held = {str(r.get(sel.field, "")).strip().lower(): _numbers(r) for r in sel.records}
            left = set().union(*(v for k, v in held.items() if k not in sel.picked))
            hit += [k for k in sel.picked if held.get(k, set()) & wanted - left]
        if hit:
            best = (at, sid, sorted(set(hit)))
    if best is None:
        return []
    raw = ", ".join(k.upper() for k in best[2][:3])
    return _thin(best[1], sl.w["origin"], f"picked {raw} from a list it was given, whose record holds a number the failure at {where} names")


def before(
    sl: Slice, here: tuple[int, str], best: tuple[int, str, Atom] | None, about: Sequence[Atom]
) -> bool:
    """Whether a step stating a label comes before the best one so far: the first given an item the failure
    names (the triage of the alert it is about, among one per alert), else the first."""
    if best is None:
        return True
    mine, theirs = (any(sl.lin.view(sid).given(a) for a in about) for sid in (here[1], best[1]))
    return (mine and not theirs) or (mine == theirs and here[0] < best[0])


def limit_ignored(
    sl: Slice, limit: Atom, named: Sequence[Atom], pos: int, within: set[str], where: str, message: str
) -> list[Found]:
    """The step that was given the bound a failure states and returned the record the failure says breaks it
    ("boat K-3 is below the 3 seats required" after a finder asked for 3 seats answered K-3; a search
    given a budget of 200 that returned the hotel over it): it was told the requirement and answered beside
    it.  Only the step that brought the record in (given it, a step only handed it on), and only when its
    answer does not hold the bound itself.

    A small integer (a count, a page, an index: what `numerals.norm_number` skips) is given to some step of
    nearly any run by coincidence: such a bound counts only under a field the failure's words name (``seats``
    of 3 for "below the 3 seats required"; not ``page=5`` for "the 5 item limit")."""
    subjects = [a for a in named if a.kind == "id"]
    if limit.kind != "number" or limit.number is None or not subjects:
        return []
    words = _terms(message, sl.lexicon) if numerals.norm_number(repr(limit.number)) is None else None
    for sid in sorted(within, key=sl.g.position):
        step = sl.g.steps[sid]
        if sl.g.position(sid) >= pos or step.kind in CONTAINER_KINDS:
            continue
        view = sl.lin.view(sid)
        if limit.key not in view.in_keys or view.holds(limit):
            continue
        if words is not None and not _under_named_field(view.inputs, limit, words, sl):
            continue
        made = [a for a in subjects if a.key in view.out_keys and not view.given(a)]
        if made:
            reason = (
                f"was given {limit.raw}, the bound the failure at {where} states, and returned {made[0].raw}, "
                "which the failure says does not meet it"
            )
            return [Evidence(sid, sl.w["dropped"], reason, "lineage:dropped")]
    return []


def _under_named_field(given: Sequence[Atom], limit: Atom, words: set[str], sl: Slice) -> bool:
    """Whether a step was given the bound under a field a word of the failure's message names."""
    return any(
        a.key == limit.key and a.field and any(sl.lexicon.singular(w) in words for w in _field_words(a.field, sl.lexicon))
        for a in given
    )


__all__ = ["before", "limit_ignored", "picked_named", "replaced_named"]
