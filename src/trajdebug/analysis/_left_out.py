"""Items a step left out of a list it was given, where they make up the gap the failure states.

A failure that states two totals or counts ("reimbursed 304.40 but the
statement says 368.40", "5 expected, 4 found") differs by what went
missing on the way.  A step whose output list is its input list with some
items taken out (a dedupe, a filter, a page) where those items add up to
exactly that gap, in one numeric field of theirs or in their count, is
where the missing part was lost: without passing runs to say how many
items it usually keeps, the arithmetic says it.  A filter that leaves out
items whose sum is no gap the failure states gets nothing from here.

A code step that hands on, under a field the failure speaks of, a shorter copy of a list an earlier step
returned (`shortened_lists`) cut it when the run shows a left-out item was wanted: the failure names it, or a
later step was given it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import pairwise
from typing import Any

from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis._sources import Found, Slice, _field_words, _short, _terms
from trajdebug.analysis._unfilled import parse_record
from trajdebug.core.model import CONTAINER_KINDS
from trajdebug.core.values import Atom, atoms, is_mapping, mentions


_MAX_ITEMS = 500
"""Longer lists are not compared item by item (a table, not a list of claims)."""

_NAME_LIST_DEPTH = 6
"""How deep `_name_lists` looks: a model's messages (list, message, content as JSON, record, field, list) hold
a list of names five or six levels down; the depth `content.leaves` walks too."""


def left_out_items(sl: Slice, message: str, pos: int, within: set[str], where: str) -> list[Found]:
    """Steps that dropped items of a list they were given whose sum (or count) is the gap the failure states."""
    nums = mentions(message, words=False)
    gaps = [
        (abs(a.value - b.value), _tolerance(a.raw, b.raw), a.raw.strip(), b.raw.strip())
        for i, a in enumerate(nums)
        for b in nums[i + 1 :]
        if a.value != b.value and a.value * b.value > 0
    ]
    if not gaps:
        return []
    out: list[Found] = []
    for sid in sorted(within, key=sl.g.position):
        step = sl.g.steps[sid]
        if sl.g.position(sid) >= pos or step.kind in CONTAINER_KINDS:
            continue
        part = _part_left_out(step.input, step.output, gaps)
        if part is not None:
            kept, lost, a, b = part
            out.append(
                Evidence(
                    sid,
                    sl.w["dropped"],
                    f"passed on {kept} and left out the {lost} written beside it in the text it was given, "
                    f"the gap between {a} and {b} the failure at {where} states",
                    "lineage:dropped",
                )
            )
            continue
        for given, dropped in _shrunk(step.input, step.output):
            said = _gap_made_up(dropped, gaps)
            if said is None:
                continue
            what, a, b = said
            out.append(
                Evidence(
                    sid,
                    sl.w["dropped"],
                    f"returned {given - len(dropped)} of the {given} items it was given; the {len(dropped)} it left out "
                    f"make up {what}, the gap between {a} and {b} the failure at {where} states",
                    "lineage:dropped",
                )
            )
            break
    return out


def left_out_names(sl: Slice, names: Sequence[Atom], pos: int, within: set[str], where: str) -> list[Found]:
    """Steps given a list holding a name the failure says is missing ("no pickup at Cobalt Hill") that passed
    on the list's other items and not that one: a plan, a filter or a copy that lost one item on the way.
    A step that passed on none of the list made no such choice (it did something else with it)."""
    out: list[Found] = []
    for a in names:
        for sid in sorted(within, key=sl.g.position):
            step = sl.g.steps[sid]
            view = sl.lin.view(sid)
            if sl.g.position(sid) >= pos or step.kind in CONTAINER_KINDS or view.holds(a):
                continue
            for items in _name_lists(step.input):
                others = [x for x in items if x != a.raw]
                if a.raw in items and others and all(x.casefold() in view.out_text for x in others):
                    reason = (
                        f"passed on {len(others)} of the {len(items)} items of a list it was given, leaving out "
                        f"{a.raw!r}, which the failure at {where} says is missing"
                    )
                    out.append(Evidence(sid, sl.w["dropped"], reason, "lineage:dropped"))
                    break
    return out


def _name_lists(value: Any, depth: int = 0) -> Iterator[list[str]]:
    """The lists of texts in a value (JSON written as a string read too: a model's messages), a few levels
    down."""
    if depth > _NAME_LIST_DEPTH:
        return
    if isinstance(value, str) and value[:1] in "[{":
        # (None for text too deeply nested to parse: no list read.)  A record a program printed is read too: a
        # tool's result in an Agents SDK conversation is its ``str``, and the list a plan was given sits in it.
        value = parse_record(value)
    if isinstance(value, list):
        # Two items at least: a list of one is a value, not a choice of which items to pass on.
        if 2 <= len(value) <= _MAX_ITEMS and all(isinstance(x, str) for x in value):
            yield value
            return
        for x in value[:_MAX_ITEMS]:
            yield from _name_lists(x, depth + 1)
    elif is_mapping(value):
        for v in value.values():
            yield from _name_lists(v, depth + 1)


def _gap_made_up(dropped: list[Mapping[str, Any]], gaps: list[tuple[float, float, str, str]]) -> tuple[str, str, str] | None:
    """What of the left-out items equals a gap (a field's sum, or their count when the numbers are counts)."""
    sums: dict[str, float] = {}
    for item in dropped:
        for k, v in item.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                sums[str(k)] = sums.get(str(k), 0.0) + float(v)
    for gap, tol, a, b in gaps:
        for k, total in sums.items():
            if total != 0 and abs(total - gap) <= tol:
                return f"{k}={_short(total)}", a, b
        if gap == len(dropped) and "." not in a + b:
            return f"{len(dropped)}", a, b
    return None


def _part_left_out(given: Any, got: Any, gaps: list[tuple[float, float, str, str]]) -> tuple[str, str, str, str] | None:
    """A number read out of a text the step was given that is one of the failure's two numbers, where the
    next number of that text, which the step's answer does not hold, is exactly their gap: an amount
    written as parts (``pallets 1,240 + crates 35``) read as its first part.  (Kept, left out, the two numbers.)

    Only a text given whole and an answer that is no text (a parse into fields): a step handing text on
    keeps every number or rewrites them all."""
    if isinstance(got, str) or not isinstance(given, (str, Mapping)):
        return None
    texts = [given] if isinstance(given, str) else [v for v in given.values() if isinstance(v, str)]
    out_values: set[float] | None = None
    for text in texts:
        nums = mentions(text, words=False)
        if len(nums) < 2:
            continue  # no number written beside another: nothing to compare with the answer's (most steps)
        if out_values is None:
            out_values = {m.value for m in mentions(json.dumps(got, default=str), words=False)}
        for first, then in pairwise(nums):
            if first.value not in out_values or then.value in out_values or then.value <= 0:
                continue
            for gap, tol, a, b in gaps:
                stated = {m.value for m in mentions(f"{a} {b}", words=False)}
                if abs(then.value - gap) <= tol and first.value in stated:
                    return first.raw, then.raw, a, b
    return None


def _shrunk(given: Any, got: Any) -> Iterator[tuple[int, list[Mapping[str, Any]]]]:
    """Lists of records in ``given`` that ``got`` holds with some records taken out: (their length, the records left out).

    Every record kept must be one given, unchanged (a step that rewrites its
    items is not taking some out); at least one is kept, and one left out.
    """
    outs = list(_record_lists(got))
    if not outs:
        return
    for rows in _record_lists(given):
        have = Counter(_key(r) for r in rows)
        for kept in outs:
            if not 0 < len(kept) < len(rows):
                continue
            left = have.copy()
            left.subtract(_key(r) for r in kept)
            if any(n < 0 for n in left.values()):
                continue  # a record it did not take from this list
            gone = [r for r in rows if left[_key(r)] > 0]
            dropped: list[Mapping[str, Any]] = []
            for r in gone:
                if left[_key(r)] > 0:
                    left[_key(r)] -= 1
                    dropped.append(r)
            yield len(rows), dropped
            return


def _record_lists(value: Any, depth: int = 0) -> Iterator[list[Mapping[str, Any]]]:
    """The lists of records (mappings) in a value: itself, or one of its fields (two levels down)."""
    if isinstance(value, list):
        if 1 <= len(value) <= _MAX_ITEMS and all(is_mapping(r) for r in value):
            yield value
        return
    if is_mapping(value) and depth < 2:
        for v in value.values():
            yield from _record_lists(v, depth + 1)


def _key(record: Mapping[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, default=str)


def _tolerance(a: str, b: str) -> float:
    """One unit of the finer of two written numbers (each was rounded by half of one)."""
    decimals = max(len(x.strip().rstrip("%").rsplit(".", 1)[1]) if "." in x else 0 for x in (a, b))
    return 10.0**-decimals + 1e-9


_CUT_KINDS = frozenset({"other", "state", "parse"})
"""Kinds of step that run in the agent's own code, which hands on what it read as it chooses."""


def _lists_named(value: Any, field: str, depth: int = 0) -> Iterator[list[Any]]:
    """The lists a value holds under ``field``, in its records and in the records of its lists (two levels)."""
    if depth > 2:
        return
    if isinstance(value, Mapping):
        if isinstance(value.get(field), list):
            yield value[field]
        for v in value.values():
            if isinstance(v, (Mapping, list)):
                yield from _lists_named(v, field, depth + 1)
    elif isinstance(value, list):
        for v in value[:32]:
            if isinstance(v, Mapping):
                yield from _lists_named(v, field, depth + 1)


def _in_order(short: list[Any], long: list[Any]) -> bool:
    """Whether every item of ``short`` is in ``long``, in the same order."""
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


def shortened_lists(sl: Slice, ids: Iterable[str]) -> list[Found]:
    """Code steps that cut a list they handed on (`_shortened`), of the steps ``ids``."""
    said = set().union(*(_terms(f.message or "", sl.lexicon) for f in sl.failures))
    if not said:
        return []
    asked: list[set[str]] = []  # (built on first need: the input atoms of each step)
    return [e for sid in ids for e in _shortened(sl, sid, said, asked)]


def _wanted(sl: Slice, left: list[Any], kept: list[Any], field: str, pos: int, said: set[str], asked: list[set[str]]) -> bool:
    """Whether an item left out was missed: the failure names it (its value, or a word of it that no kept item
    and not the field's name holds: the ``ramp`` of ``Ramp Berth``), or a later step was given it.  Filtering
    is what code steps are for; a cut is a loss only when the run shows the item was wanted."""
    own = {sl.lexicon.singular(w) for w in _field_words(field, sl.lexicon)}
    common = set().union(own, *(_terms(str(x), sl.lexicon) for x in kept))
    messages = " ".join(f.message or "" for f in sl.failures).casefold()
    if any(len(str(x)) >= 2 and str(x).casefold() in messages for x in left if isinstance(x, str)):
        return True
    if any((_terms(str(x), sl.lexicon) - common) & said for x in left):
        return True
    if not asked:
        asked.extend({a.key for a in sl.lin.view(t.step_id).inputs} for t in sl.run.steps)
    keys = {a.key for x in left for a in atoms(x) if not (a.kind == "number" and isinstance(x, str))}
    return any(keys & asked[i] for i in range(pos + 1, len(sl.run.steps)))


def _shortened(sl: Slice, sid: str, said: set[str], asked: list[set[str]]) -> list[Found]:
    """A code step that returned, under a field the failure speaks of, the items of a longer list an earlier
    step returned under the same field, in their order, with some left out that the run wanted (`_wanted`): it
    cut the list it handed on (the layout's three exits saved as two).  A list of plain values (words,
    numbers) only."""
    step = sl.g.steps[sid]
    if step.kind not in _CUT_KINDS or not isinstance(step.output, Mapping):
        return []
    pos = sl.g.position(sid)
    for f, v in step.output.items():
        if not isinstance(v, list) or not v or not all(isinstance(x, (str, int, float)) for x in v):
            continue
        if not any(sl.lexicon.singular(w) in said for w in _field_words(str(f), sl.lexicon)):
            continue
        for t in reversed(sl.run.steps[:pos]):
            longer = next((x for x in _lists_named(t.output, str(f)) if len(x) > len(v) and _in_order(v, x)), None)
            if longer is not None:
                left = [x for x in longer if x not in v]
                if not _wanted(sl, left, v, str(f), pos, said, asked):
                    return []
                shown = ", ".join(repr(x) for x in left)[:60]
                return [
                    Evidence(
                        sid,
                        0.4,
                        f"returned {len(v)} of the {len(longer)} {f} {t.name} returned (left out {shown})",
                        "lineage:dropped",
                    )
                ]
            if any(True for _ in _lists_named(t.output, str(f))):
                break  # the latest list of that name is the one it read
    return []


__all__ = ["left_out_items", "left_out_names", "shortened_lists"]
