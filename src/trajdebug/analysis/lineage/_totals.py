"""Totals computed between two recorded steps: a number handed to a tool that sums its siblings' outputs.

A graph node (or any function) that calls several recorded computations, one per
item, then adds their results up in its own code and hands the total to a tool,
records no step that produced the total: the value has no origin and links by
no value edge (`Lineage.value_edges`), so the computations that made it are off
the failing tool's dependency path.  `total_edges` finds such a total as the
sum, over the earlier siblings under the same enclosing step, of one to three
of their numeric fields (``duty_usd + excise_usd`` of every lot), matched at the
precision the total was written with.  Matching a sum of several items at full
precision is specific evidence, unlike one small number, which recurs by chance.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from trajdebug.analysis.lexicon import ENGLISH
from trajdebug.analysis.lineage._records import record_lists
from trajdebug.core.model import CONTAINER_KINDS, Dependency, Run, Step
from trajdebug.core.values import Atom, atoms


TOTAL_KEY = "total:"
"""Prefix of the ``key`` of a total edge; the argument's name follows."""

_MAX_FIELDS = 8
"""Numeric fields of the siblings tried (the most common ones); three of eight is 92 sums."""
_MAX_SIBLINGS = 64
_MAX_GROUPS = 256
"""(text field, value) groups of the siblings tried: a bound, so a step costs at most this many small sums."""
_MIN_ITEMS = 2
"""A total of one item is a copy, which value edges find."""
_MIN_GROUP = 3
"""Members a group total needs: a sum of two of a loop's results recurs by chance among many groups."""
_CHANCE = 0.05
"""Odds of a chance hit above which a group total links nothing."""
_MIN_LISTED = 3
"""Items a list must hold for a total short by one of them to say an item was skipped (of two, the total
is one item's copy)."""


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _tolerance(v: float) -> float:
    """Half a unit of the last digit the number was written with (``21103.64``: 0.005)."""
    text = repr(v)
    decimals = len(text.split(".", 1)[1]) if "." in text and "e" not in text else 0
    if text.endswith(".0"):
        decimals = 0
    return 0.5 * 10.0**-decimals + 1e-9 * abs(v)


def _numbers(s: Step) -> list[tuple[str, float]]:
    """A step's numeric output fields, in order."""
    if not isinstance(s.output, Mapping):
        return []
    return [(str(k), n) for k, v in s.output.items() if (n := _number(v)) is not None]


def _fields(
    siblings: list[Step], numbers: dict[int, list[tuple[str, float]]] | None = None
) -> dict[str, list[tuple[Step, float]]]:
    """The siblings' most common numeric fields (``numbers``: each step's `_numbers`, read once per run)."""
    by_field: dict[str, list[tuple[Step, float]]] = {}
    for s in siblings:
        own = numbers.get(id(s)) if numbers is not None else None
        if own is None:
            own = _numbers(s)
            if numbers is not None:
                numbers[id(s)] = own
        for k, n in own:
            by_field.setdefault(k, []).append((s, n))
    common = sorted(by_field, key=lambda k: -len(by_field[k]))[:_MAX_FIELDS]
    return {k: by_field[k] for k in common if len(by_field[k]) >= _MIN_ITEMS}


def _total_of(value: float, fields: dict[str, list[tuple[Step, float]]]) -> tuple[str, ...] | None:
    """The fewest fields whose sum over the siblings is ``value`` at its written precision (one answer
    only: two different ways to make it say nothing)."""
    tol = _tolerance(value)
    names = list(fields)
    sums = {k: math.fsum(n for _, n in fields[k]) for k in names}
    for size in (1, 2, 3):
        hits = [c for c in itertools.combinations(names, size) if abs(math.fsum(sums[k] for k in c) - value) <= tol]
        if len(hits) == 1:
            return hits[0]
        if hits:
            return None
    return None


def _labels(s: Step) -> list[tuple[str, str, str]]:
    """A step's short text output fields as (step name, field, value), in order: the keys of the groups it may
    join (`_groups`)."""
    if not isinstance(s.output, Mapping):
        return []
    return [(s.name, str(k), v) for k, v in s.output.items() if isinstance(v, str) and 0 < len(v) <= 40]


def _groups(
    done: list[Step],
    numbers: dict[int, list[tuple[str, float]]],
    labels: dict[int, list[tuple[str, str, str]]] | None = None,
) -> list[tuple[list[Step], list[float]]]:
    """The groups of the siblings a filter in the code between the steps could have kept, each with its numeric
    fields' sums: the calls of one step (some of them, at least `_MIN_GROUP`: a loop's results filtered, not a
    mix of steps sharing a value) whose output holds one text field with one value (``vessel == "V2"``), and
    whose values of the summed field are not all equal (a sum of n equal values is n times a round number,
    which a setting holds by chance: three pages of 10 rows and a page size of 30).  Built once per consumer,
    whatever its arguments (``labels``: each step's `_labels`, read once per run: a step is a sibling of up to
    `_MAX_SIBLINGS` consumers)."""
    keyed: dict[tuple[str, str, str], list[Step]] = {}
    calls: dict[str, int] = {}
    for t in done:
        calls[t.name] = calls.get(t.name, 0) + 1
        own = labels.get(id(t)) if labels is not None else None
        if own is None:
            own = _labels(t)
            if labels is not None:
                labels[id(t)] = own
        for key in own:
            if len(keyed) >= _MAX_GROUPS:
                break
            keyed.setdefault(key, []).append(t)
    out: list[tuple[list[Step], list[float]]] = []
    for (name, _, _), members in keyed.items():
        if not _MIN_GROUP <= len(members) < calls[name]:
            continue
        by_field: dict[str, list[float]] = {}
        for t in members:
            for k, n in numbers.get(id(t)) or _numbers(t):
                by_field.setdefault(k, []).append(n)
        sums = [math.fsum(ns) for ns in by_field.values() if len(ns) == len(members) and len(set(ns)) > 1]
        if sums:
            out.append((members, sums))
    return out


def _group_total(value: float, groups: list[tuple[list[Step], list[float]]], asked: int) -> list[Step] | None:
    """The group (of `_groups`) one of whose numeric fields adds up to ``value``; None unless exactly one
    group and field do (two ways to make it say nothing), and None when a hit is likely by chance: each of
    the ``asked`` numbers the consumer was given, tried against every group's sums, lands within the
    value's written precision of one of them with odds about (sums x width / value) (a long loop's many
    groups sum to nearly any whole number)."""
    tol, found = _tolerance(value), None
    if asked * sum(len(sums) for _, sums in groups) * 2 * tol > _CHANCE * abs(value):
        return None
    for members, sums in groups:
        for total in sums:
            if abs(total - value) <= tol:
                if found is not None:
                    return None
                found = members
    return found


def total_edges(run: Run, *, confidence: float = 0.6, minimum: float = 10.0) -> dict[str, list[Dependency]]:
    """Inferred data edges from the earlier siblings whose numeric fields add up to a step's argument.

    Any step but a model call or an enclosing step (a tool a node hands its total to, or the
    check a program runs on it), only numbers of magnitude ``minimum`` or more (small sums recur
    by chance), and only siblings that ended before the step started.  When no sum over all the
    siblings gives the number, the sum over the siblings of one group does (those that answered
    the same value under one text field: the code kept one bridge's tickets, one day's rows).
    """
    kids: dict[str | None, list[Step]] = {}
    out: dict[str, list[Dependency]] = {}
    numbers: dict[int, list[tuple[str, float]]] = {}
    labels: dict[int, list[tuple[str, str, str]]] = {}
    for s in run.steps:
        siblings = kids.setdefault(s.parent_id, [])
        if (
            s.kind not in ("llm", *CONTAINER_KINDS)
            and isinstance(s.input, Mapping)
            and len(siblings) >= _MIN_ITEMS
            and any((n := _number(v)) is not None and abs(n) >= minimum for v in s.input.values())
        ):
            # (Only a call given a number large enough to be a total reads its siblings' fields.)
            done = [t for t in siblings[-_MAX_SIBLINGS:] if t.end_ns is not None and (not s.start_ns or t.end_ns <= s.start_ns)]
            fields = _fields(done, numbers)
            deps: dict[str, Dependency] = {}
            groups: list[tuple[list[Step], list[float]]] | None = None
            asked = sum(1 for v in s.input.values() if (n := _number(v)) is not None and abs(n) >= minimum)
            for arg, v in s.input.items() if fields else ():
                n = _number(v)
                if n is None or abs(n) < minimum:
                    continue
                found = _total_of(n, fields)
                for k in found or ():
                    for t, _ in fields[k]:
                        deps.setdefault(t.step_id, Dependency(t.step_id, "data", "inferred", confidence, TOTAL_KEY + str(arg)))
                if found is None and groups is None:
                    groups = _groups(done, numbers, labels)
                for t in _group_total(n, groups, asked) or () if found is None and groups else ():
                    deps.setdefault(t.step_id, Dependency(t.step_id, "data", "inferred", confidence, TOTAL_KEY + str(arg)))
            if deps:
                out[s.step_id] = list(deps.values())
        if s.kind != "agent":
            siblings.append(s)
    return out


COUNT_KEY = "count:"
"""Prefix of the ``key`` of a count edge (`count_edges`); the number counted follows."""
_NAMED_COUNT = re.compile(r"(?<![\w.:/-])(\d{1,4})(?![\w:/-]|\.\d)")
"""A whole number as a failure's message writes it, no part of a date, a time, a code or a decimal."""
_SPECIFIC_COUNT = 10
"""A count this large is rare among a run's list lengths: two lists that long may both be linked."""


def _lengths(out: Any) -> list[int]:
    """The lengths of the non-empty lists an output is or holds at its top level."""
    found = [out] if isinstance(out, list) else list(out.values()) if isinstance(out, Mapping) else []
    return [len(v) for v in found if isinstance(v, list) and v]


def _whole_numbers(value: Any, depth: int = 0, text: bool = False) -> set[int]:
    """The whole numbers of a value, three levels deep; with ``text``, those its strings write too."""
    if isinstance(value, bool) or depth > 3:
        return set()
    if isinstance(value, int):
        return {value}
    if isinstance(value, float):
        return {int(value)} if value.is_integer() else set()
    if isinstance(value, str):
        return {int(m) for m in _NAMED_COUNT.findall(value)} if text else set()
    items = list(value.values()) if isinstance(value, Mapping) else value[:64] if isinstance(value, list) else []
    return {n for v in items for n in _whole_numbers(v, depth + 1, text)}


def _keyed_numbers(value: Any, depth: int = 0) -> set[tuple[str, int]]:
    """(word of the key, number) for each whole number a value holds under a key, three levels deep."""
    out: set[tuple[str, int]] = set()
    if depth > 3:
        return out
    items = value.items() if isinstance(value, Mapping) else enumerate(value[:64]) if isinstance(value, list) else ()
    for k, v in items:
        if isinstance(v, (Mapping, list)):
            out |= _keyed_numbers(v, depth + 1)
        elif isinstance(k, str) and not isinstance(v, bool) and isinstance(v, (int, float)) and float(v).is_integer():
            out |= {(ENGLISH.singular(w), int(v)) for w in re.findall(r"[a-z]+", k.lower())}
    return out


def _counted(n: int, earlier: Sequence[Step]) -> list[list[Step]]:
    """The ways ``n`` counts earlier lists: a step's list of ``n`` items, or the lists of all the calls of one step
    (two or more, one list each) that hold ``n`` items together (a loop's pages)."""
    ways: list[list[Step]] = [[t] for t in earlier if n in _lengths(t.output)]
    calls: dict[str, list[Step]] = {}
    for t in earlier:
        calls.setdefault(t.name, []).append(t)
    for group in calls.values():
        lens = [_lengths(t.output) for t in group]
        if len(group) >= 2 and all(len(x) == 1 for x in lens) and sum(x[0] for x in lens) == n:
            ways.append(group)
    return ways


def count_edges(run: Run, failures: Mapping[str, str], *, confidence: float = 0.6) -> dict[str, list[Dependency]]:
    """Inferred data edges to a failing step from the step whose list its argument counts.

    A failing step given a whole number (two or more) its failure's message names (``job carries 2``) that no
    earlier step returned under a field of the same word (nor the run's request writes, in its text too) was
    handed the length of a list: the code between the steps counted it (``len(weights)``), so no value edge
    finds where it came from.  The earlier step whose output is or holds a list of that many items (or the calls of one step whose lists hold that many together: a loop's pages) is
    its source, when that is the only one (for a count of `_SPECIFIC_COUNT` or more, one of two); a step that
    kept too few items is then on the failure's path.  ``failures``: the failures' messages by step id.
    """
    out: dict[str, list[Dependency]] = {}
    pos = {s.step_id: i for i, s in enumerate(run.steps)}
    for sid, message in failures.items():
        if sid not in pos or not message:
            continue
        s = run.steps[pos[sid]]
        named = {int(m) for m in _NAMED_COUNT.findall(message)}
        asked = sorted(n for n in _whole_numbers(s.input) if n >= 2 and n in named)
        if not asked:
            continue
        outer = set()
        cur = s.parent_id
        while cur is not None and cur in pos and cur not in outer:
            outer.add(cur)
            cur = run.steps[pos[cur]].parent_id
        earlier = [
            t for t in run.steps[: pos[sid]] if t.kind not in CONTAINER_KINDS and t.step_id not in outer and t.status == "ok"
        ]
        have = {d.step_id for d in s.deps}
        deps: dict[str, Dependency] = {}
        # A number an earlier step returned under the field the failing step was given it under was handed on,
        # not counted: a party of 4 the request parser returned is no length of the 4 allergies another step
        # listed (a `band: 2` beside `parcels: 2` is no source of it).  Any number the request writes is recorded.
        fields = _keyed_numbers(s.input)
        held = {n for t in run.steps[: pos[sid]] if t.step_id not in outer for w, n in _keyed_numbers(t.output) if (w, n) in fields}
        held |= set().union(*(_whole_numbers([t.input, t.output], text=True) for t in run.steps[: pos[sid]] if t.kind == "input"))
        for n in (n for n in asked if n not in held):
            ways = _counted(n, earlier)
            if 0 < len(ways) <= (2 if n >= _SPECIFIC_COUNT else 1):
                for t in (t for way in ways for t in way if t.step_id not in have):
                    deps.setdefault(t.step_id, Dependency(t.step_id, "data", "inferred", confidence, f"{COUNT_KEY}{n}"))
        if deps:
            out[sid] = list(deps.values())
    return out


_MIN_COUNTED = 3
"""Items a collection must hold for a number equal to its size to be read as its count: two lists of two
(or of one) recur by chance in any run."""


_PARSED_TEXT = 100_000
"""Characters of a JSON text read for collections: a longer text is a document, not a list a failure counts,
and parsing it for every named number would cost more than it tells."""

_SHAPE = (re.compile(r"\d+"), re.compile(r"[^\W\d_]+"))


def _keyed(keys: Sequence[Any]) -> bool:
    """Whether a map's keys are of one shape with digits in them (``SP-101``, ``SP-102``; dates): keyed items
    of one collection, not one record's fields (``room``, ``date``, ``guest``), whose count is its width."""
    if not all(isinstance(k, str) and any(c.isdigit() for c in k) for k in keys):
        return False
    return len({_SHAPE[1].sub("a", _SHAPE[0].sub("9", k)) for k in keys}) == 1


def _collections(value: Any, depth: int = 0, name: str = "") -> list[tuple[str, Sequence[Any]]]:
    """The collections a value holds, three levels deep, each with the field it sits under: lists of
    `_MIN_COUNTED` records, ids or texts or more, and maps of as many entries keyed alike (`_keyed`: a price
    list keyed by product code), each as the list of its items.  A list of numbers is a reading (a position, a
    colour), the value itself (a step's arguments) and a record's fields are no collection, and a conversation's
    messages (records that say who speaks in ``role``) are none a failure counts."""
    if depth > 3:
        return []
    if isinstance(value, str) and value[:1] in "[{" and len(value) <= _PARSED_TEXT:
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # a text nested past the parser's depth is no list either
            return []
    found: list[tuple[str, Sequence[Any]]] = []
    if isinstance(value, (list, tuple)):  # a step recorded in Python may hand a tuple where JSON has a list
        head = value[:3]
        plain = all(isinstance(v, (Mapping, str)) for v in head)
        if len(value) >= _MIN_COUNTED and plain and not any(isinstance(v, Mapping) and "role" in v for v in head):
            found.append((name, value))
        inner: Sequence[tuple[str, Any]] = [(name, v) for v in value[:64]]
    elif isinstance(value, Mapping):
        kinds = {type(v) for v in value.values()}
        if depth and len(value) >= _MIN_COUNTED and len(kinds) == 1 and not kinds & {bool, type(None)} and _keyed(list(value)):
            found.append((name, list(value.values())))
        inner = [(str(k), v) for k, v in list(value.items())[:64]]
    else:
        return []
    for key, v in inner:
        found += _collections(v, depth + 1, key)
    return found


def _same(c: Sequence[Any]) -> str:
    """A key that is one for the same items handed twice; their repr when JSON cannot sort them (int and str
    keys in one map)."""
    try:
        return json.dumps(c, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        return repr(c)


def counted_collection(value: Any, number: Atom) -> tuple[list[Atom], frozenset[str]]:
    """When a whole number is the size of the one collection of that many items a value holds (``6 entries``
    of a price list of six), a value of each of its first three items (an id or a text first), and the names
    the collection goes by: the field it sits under and its records' fields, in the singular.  Empty when no
    collection, or more than one (two of the same items are one), has that size, or the number is no whole
    number of `_MIN_COUNTED` or more."""
    if number.kind != "number" or number.number is None or not float(number.number).is_integer():
        return [], frozenset()
    n = int(number.number)
    if n < _MIN_COUNTED:
        return [], frozenset()
    sized = [(k, c) for k, c in _collections(value) if len(c) == n]
    # The same items handed twice (a roster, and the waivers signed by its members) are one collection.
    if len({_same(c) for _, c in sized}) != 1:
        return [], frozenset()
    names = {k for k, _ in sized} | {str(f) for _, c in sized for r in c[:3] if isinstance(r, Mapping) for f in r}
    words = {ENGLISH.singular(w) for k in names for w in re.split(r"[\W_]+", k.lower()) if w}
    out: list[Atom] = []
    for item in sized[0][1][:3]:
        found = atoms(item, limit=16)
        pick = next((a for a in found if a.kind in ("id", "text")), found[0] if found else None)
        if pick is not None:
            out.append(pick)
    return out, frozenset(words)


def counted_items(value: Any, number: Atom) -> list[Atom]:
    """The items of `counted_collection`, without their names."""
    return counted_collection(value, number)[0]


def items_totalled(outputs: Sequence[Atom], total: Atom) -> list[Atom]:
    """The numbers of one field a step's output lists (``outputs``) whose sum is another number of it."""
    if total.kind != "number" or total.number is None:
        return []
    raw = total.raw.strip()
    tol = 0.5 * 10.0 ** -(len(raw.rsplit(".", 1)[1]) if "." in raw else 0) + 1e-9
    groups: dict[str, list[Atom]] = {}
    for b in outputs:
        if b.kind == "number" and b.number is not None and b.field and b.key != total.key:
            groups.setdefault(b.field, []).append(b)
    for name, parts in groups.items():
        if len(parts) >= 2 and name != total.field and abs(sum(p.number or 0.0 for p in parts) - total.number) <= tol * len(parts):
            return parts
    return []


__all__ = ["COUNT_KEY", "TOTAL_KEY", "count_edges", "counted_collection", "counted_items", "items_totalled", "total_edges"]


def one_item_short(given: Any, computed: Sequence[Atom], expected: float) -> tuple[Atom, float] | None:
    """The number a step computed (``computed``: its output numbers it was not given) under a field its input's
    records hold (``width_cm`` of every frame), that falls ``expected`` short by exactly one record's value of
    that field, with that value; None when none does.  Only lists of `_MIN_LISTED` records or more count, and
    the difference must match to 1e-6 (an item's exact value, not a rounding)."""
    lists = [recs for recs in record_lists(given) if len(recs) >= _MIN_LISTED]
    for a in computed:
        if a.kind != "number" or a.number is None or not a.field or a.number >= expected:
            continue
        gap = expected - a.number
        for recs in lists:
            vals = [n for r in recs for k, v in r.items() if str(k).lower() == a.field and (n := _number(v)) is not None]
            if len(vals) < _MIN_LISTED:
                continue
            hit = next((v for v in vals if abs(gap - v) <= 1e-6 * max(1.0, abs(expected))), None)
            if hit is not None:
                return a, hit
    return None
