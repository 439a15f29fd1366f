"""Edges from a step that picked one of the values it was given to the call right after it that used the pick.

Content inference credits a value a step merely repeated from its input to the step it came from (the
value's origin, not its relay), and `Lineage.value_edges` says nothing of a value more than a few steps
hold. Both are right for a relay, and wrong for a *pick*: a model given a list of four ids that answers
one of them, and the tool call right after it under the same enclosing step that is handed that id,
depend on each other through the choice, though the id itself was born at the start of the run. A pick
of the wrong item (a sub-agent asked about the second book that looks up the first) then has no edge
into the failure, and is ranked with the steps that ran before it with none.

`picked_edges` adds that edge: a step handed a value that the step just before it, under the same
enclosing step, answered, where that step was given the value beside other values of the same shape
(the same letters and digits pattern) that its answer left out.  Only the immediately preceding
sibling counts (a loop over the list answers each item in turn, and an answer far back is no choice
of this call); an enclosing step's answer is what its children made, so it picks nothing.

`wrong_pick` is the finding that goes with such a pick: a step asked about one item by name (``isbn``
given once, in a brief that also lists the whole box under another field) that answers, under a field
named for it (``verify_isbn``), another item of that list: the wrong entity, models included.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.analysis.lineage._views import StepView, trivial
from trajdebug.core.model import CONTAINER_KINDS, Dependency, Run, Step
from trajdebug.core.values import Atom


if TYPE_CHECKING:  # (the lineage's own module reads this one's anomalies: no import at run time)
    from trajdebug.analysis.lineage._trace import Lineage


PICKED_KEY = "picked:"
"""The prefix of a pick edge's key (the field the consumer was handed the value under follows)."""

_DIGITS = re.compile(r"\d")
_LETTERS = re.compile(r"[^\W\d_]")


def picked_edges(lin: Lineage, confidence: float = 0.6) -> dict[str, list[Dependency]]:
    """Step id -> an edge from the sibling right before it that picked a value it was handed (see the module)."""
    out: dict[str, list[Dependency]] = {}
    last: dict[Any, int] = {}
    for i, s in enumerate(lin.steps):
        j = last.get(s.parent_id)
        last[s.parent_id] = i
        if j is None:
            continue
        h = lin.steps[j]
        if h.kind in CONTAINER_KINDS or h.output is None:
            continue
        picked = _picked(lin, h.step_id, s.step_id)
        if picked is not None:
            key = PICKED_KEY + (picked.field or picked.raw[:40])
            out[s.step_id] = [Dependency(h.step_id, "data", "inferred", confidence, key)]
    return out


ANSWER_KEY = "answered:"
"""The prefix of an edge from a step that answered one value alone to a later step handed it (`answered_edges`)."""

_MAX_ANSWER = 80


def answered_edges(run: Run, confidence: float = 0.6, lexicon: Lexicon = ENGLISH) -> dict[str, list[Dependency]]:
    """Step id -> an edge from the latest earlier step whose whole answer is one value it was handed.

    A parser that reads a model's choice out of its text (``"Proposed slot: Fri 14:00"`` -> ``"Fri 14:00"``)
    answers one value, born long before in the list the model chose from; content inference credits the
    value to that list, and a picked value handed on past the next call (`picked_edges` sees only the call
    right after it) then has no edge back through the choice.  A step whose whole output is one telling text
    (a digit or a capital letter in it) that it was not handed whole made that value what it is here: a later
    step handed that very text under a field depends on it.  Never an enclosing step (its children answered),
    and never a yes/no or empty answer (``"False"``, ``"None"``: a Python tool's result through ``str()``), which
    any setting may repeat.  Compared as written: a flag ``"false"`` is not the ``"False"`` a check answered.
    """
    latest: dict[str, Step] = {}
    out: dict[str, list[Dependency]] = {}
    for s in run.steps:
        if s.start_ns:
            have = {d.step_id for d in s.deps}
            found: dict[str, Dependency] = {}
            for v in sorted(_field_texts(s.input)):
                p = latest.get(v)
                if p is None or p.step_id in have or p.step_id in found or not p.end_ns or p.end_ns > s.start_ns:
                    continue
                found[p.step_id] = Dependency(p.step_id, "data", "inferred", confidence, ANSWER_KEY + v[:40])
            if found:
                out[s.step_id] = list(found.values())
        answer = _answer(s.output, lexicon)
        if answer is not None and s.kind not in CONTAINER_KINDS and answer not in _field_texts(s.input, whole=True):
            latest[answer] = s
    return out


def _answer(output: Any, lexicon: Lexicon) -> str | None:
    """A whole output that is one telling text (a digit or a capital letter in it, 3 to 80 characters, no yes/no
    or empty word), as written."""
    if not isinstance(output, str):
        return None
    t = output.strip()
    if not 3 <= len(t) <= _MAX_ANSWER or "\n" in t or not (_DIGITS.search(t) or any(c.isupper() for c in t)):
        return None
    return None if t.casefold() in lexicon.boolean_words else t


def _field_texts(value: Any, depth: int = 0, *, whole: bool = False) -> set[str]:
    """The short texts a value holds under its fields (and the value itself when ``whole``), as written."""
    if isinstance(value, str):
        t = value.strip()
        return {t} if (whole or depth) and 0 < len(t) <= _MAX_ANSWER else set()
    out: set[str] = set()
    if depth > 4:
        return out
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for v in items:
        out |= _field_texts(v, depth + 1)
    return out


def _picked(lin: Lineage, chooser: str, consumer: str) -> Atom | None:
    """A value the consumer was handed that the chooser answered after being given it among others of its shape."""
    hv, cv = lin.view(chooser), lin.view(consumer)
    for a in cv.inputs:
        if a.key not in hv.out_keys or not _telling(a) or not hv.given(a):
            continue
        shape = _shape(a.raw)
        if any(
            b.key != a.key and b.kind == a.kind and b.key not in hv.out_keys and _shape(b.raw) == shape
            for b in hv.inputs
        ):
            return a
    return None


WRONG_PICK = 0.45
"""The weight of `wrong_pick` (as `lineage:conflict`'s: a value the step was told, answered otherwise)."""


Cursor = tuple[tuple[str, ...], str, str]
"""Where a loop keeps its place in a list: the path to the record holding both, the list's key, the counter's key."""


def queue_heads(step: Step, loops: Collection[Cursor] = ()) -> frozenset[str]:
    """The values (lower-case text) a step took off the head of a list it was given, returning the rest of that
    list under the same key (``todo: [W16, M45]`` handed in, ``current: W16, todo: [M45]`` handed back): a
    loop over a work queue moving to its next item, which may rightly replace the ``current`` it was given.
    A loop that walks a list by a counter instead (`_cursor_items`; ``loops``: `counted_loops` of the step's
    calls) moves on the same way."""
    return frozenset(h for h, _ in _popped(step)) | _cursor_items(step, loops)


def _cursors(value: Any) -> Iterator[tuple[Cursor, list[str], int, Mapping[Any, Any]]]:
    """Each list of scalars (two or more) a value holds beside an int of the same record: a place it may keep."""
    return _cursors_in(value, (), 0)


# (The walks below are module functions, not closures: a closure calling itself is a reference cycle, left for
# the cyclic collector, which the analysis pauses; one per step was most of what it had to free at the end.)


def _cursors_in(
    v: Any, path: tuple[str, ...], depth: int
) -> Iterator[tuple[Cursor, list[str], int, Mapping[Any, Any]]]:
    if depth > 3 or not isinstance(v, dict):
        return
    ints = {str(k): x for k, x in v.items() if isinstance(x, int) and not isinstance(x, bool) and x >= 0}
    for k, x in v.items():
        if isinstance(x, list) and len(x) >= 2 and all(isinstance(y, (str, int, float)) for y in x[:200]):
            items = [str(y).strip().lower() for y in x[:200]]
            for c, i in ints.items():
                yield (path, str(k), c), items, i, v
        elif isinstance(x, dict):
            yield from _cursors_in(x, (*path, str(k)), depth + 1)


def counted_loops(calls: Sequence[Step]) -> frozenset[Cursor]:
    """The places (`Cursor`) by which a step's calls in one run walk a list: over its calls (two or more) the int
    beside the list rises, and every call moves on to the item at it.  An int that merely sits beside a list (an
    ``attempt``, a ``page``) proves no loop: it does not rise from call to call with the item answered.  A call
    that answers the item it already holds beside the list did not move on (a retry asked about the first
    item, ``attempt: 0``, answering it): it breaks the proof, or a retry whose next attempt answers the
    neighbour would pass for a loop by coincidence."""
    seen: dict[Cursor, list[int]] = {}
    broken: set[Cursor] = set()
    for s in calls:
        if s.status != "ok":
            continue
        said = _scalars(s.output)
        for cur, items, i, record in _cursors(s.input):
            if i < len(items) and items[i] in said and items[i] not in _held(record, cur[2]):
                seen.setdefault(cur, []).append(i)
            else:
                broken.add(cur)
    return frozenset(
        c for c, v in seen.items() if c not in broken and len(v) >= 2 and all(a < b for a, b in pairwise(v))
    )


def _held(record: Mapping[Any, Any], counter: str) -> set[str]:
    """The scalars (lower-case text) a loop's record holds beside its list, other than the counter: its current item."""
    return {str(v).strip().lower() for k, v in record.items() if str(k) != counter and isinstance(v, (str, int, float))}


def _writes_back(value: Any, key: str, n: int, depth: int = 0) -> bool:
    """Whether an output writes ``key`` as ``n`` (a loop's step moving its counter on), to a bounded depth.  The
    value's type is tested before any ``==``: a value built in Python whose ``==`` raises or is no yes/no (an
    array) is no counter, and must not abort the analysis."""
    if depth > 3 or not isinstance(value, dict):
        return False
    return any(
        (str(k) == key and type(v) is int and v == n) or _writes_back(v, key, n, depth + 1)
        for k, v in value.items()
    )


def _cursor_items(step: Step, loops: Collection[Cursor] = ()) -> frozenset[str]:
    """The items (lower-case text) a step took at the position a counter of its input names, moving on from the
    item before it: given ``patients: [A, B, C], idx: 1, patient: A``, answering ``B``.  A loop that keeps its
    list whole and counts through it (a graph whose state holds the list, the counter and the current item)
    rightly replaces the current item with the next one.  The int must be proven a counter: its step's calls
    walk the list by it (``loops``, `counted_loops`), or this call writes it back one higher; an ``attempt: 1``
    beside the list proves nothing, and a step that answers the item after the one it was asked about is
    still a wrong pick.  The item before it held beside the list and the answer naming the item at the
    counter are required too, so a step answering some other item of the list is still one."""
    said = _scalars(step.output)
    out: set[str] = set()
    for cur, items, i, record in _cursors(step.input):
        if not 1 <= i < len(items) or items[i] not in said or items[i] == items[i - 1]:
            continue
        if cur not in loops and not _writes_back(step.output, cur[2], i + 1):
            continue
        if items[i - 1] in _held(record, cur[2]):
            out.add(items[i])
    return frozenset(out)


def queue_keys(step: Step) -> frozenset[str]:
    """The keys under which a step handed back the rest of a work queue it took the head of (`queue_heads`):
    an empty list there is a queue run to its end, not a field left out."""
    return frozenset(k for _, k in _popped(step))


def head_fields(step: Step, field: str, heads: Collection[str]) -> frozenset[str]:
    """The values (lower-case text) the records of the queue heads a step took (`queue_heads`) hold under
    ``field``, as its input gives them: a record holding the head (``patches: [{id: P-2, kind: centre}]``) or
    one filed under it (``kinds: {P-2: centre}``, ``P-2: {kind: centre}``).  A loop moving to its next item
    rightly answers that item's own fields; any other new value of a field it was given is no such move."""
    out: set[str] = set()
    _head_fields_in(step.input, "", 0, field, heads, out)
    return frozenset(out)


def _scalar(v: Any) -> bool:
    return isinstance(v, (str, int, float)) and not isinstance(v, bool)


def _head_fields_in(value: Any, name: str, depth: int, field: str, heads: Collection[str], out: set[str]) -> None:
    if depth > 4:
        return
    if isinstance(value, dict):
        if field in value and _scalar(value[field]) and any(_scalar(v) and str(v).strip().lower() in heads for v in value.values()):
            out.add(str(value[field]).strip().lower())
        for k, v in value.items():
            if str(k).strip().lower() in heads:
                if isinstance(v, dict) and _scalar(v.get(field)):
                    out.add(str(v[field]).strip().lower())
                elif _scalar(v) and name.lower().startswith(field.lower()):
                    out.add(str(v).strip().lower())  # a map of that field by item (``kinds: {P-2: centre}``)
            _head_fields_in(v, str(k), depth + 1, field, heads, out)
    elif isinstance(value, list):
        for v in value[:200]:
            _head_fields_in(v, name, depth + 1, field, heads, out)


def _popped(step: Step) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    _popped_in(step.input, step.output, 0, out)
    # A loop moving on hands the item it took on (``current: W16``); a step that returns a list without its
    # first item and never names that item dropped it (a filter emptying a one-room list), it moved nowhere.
    return {(h, k) for h, k in out if h in _scalars(step.output)} if out else out


def _popped_in(given: Any, said: Any, depth: int, out: set[tuple[str, str]]) -> None:
    if depth > 3 or not isinstance(given, dict) or not isinstance(said, dict):
        return
    for k, v in given.items():
        rest = said.get(k)
        if isinstance(v, list) and v and isinstance(rest, list) and rest == v[1:]:
            if isinstance(v[0], (str, int, float)) and not isinstance(v[0], bool):
                out.add((str(v[0]).strip().lower(), str(k)))
        elif isinstance(v, dict):
            _popped_in(v, rest, depth + 1, out)


def _scalars(value: Any, depth: int = 0) -> set[str]:
    """The scalar values (lower-case text) of a JSON value, to a bounded depth and width."""
    if isinstance(value, dict):
        return set().union(*(_scalars(v, depth + 1) for v in list(value.values())[:200])) if depth < 4 else set()
    if isinstance(value, list):
        return set().union(*(_scalars(v, depth + 1) for v in value[:200])) if depth < 4 else set()
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return {str(value).strip().lower()}
    return set()


def wrong_pick(
    step: Step, view: StepView, generic: Collection[str] = (), loops: Collection[Cursor] = ()
) -> Iterator[Evidence]:
    """A step asked about one item of a list (a field given once) that answered another item of it (see the module);
    ``loops``: the places its calls walk a list by (`counted_loops`)."""
    if step.kind in CONTAINER_KINDS or step.status != "ok":
        return
    heads = queue_heads(step, loops)
    lists = _scalar_lists(step.input)
    if not lists:
        return
    held: dict[str, set[str]] = {}
    first: dict[str, Atom] = {}
    for a in view.inputs:
        if a.field:
            held.setdefault(a.field, set()).add(a.key)
            first.setdefault(a.key, a)
    for o in view.outputs:
        if not o.field or not _telling(o) or o.key not in view.in_keys or o.raw.strip().lower() in heads:
            continue
        for f, keys in held.items():
            if len(keys) != 1 or o.key in keys or f in generic or not _names(o.field, f):
                continue
            asked = first[next(iter(keys))]
            if asked.kind != o.kind or _shape(asked.raw) != _shape(o.raw) or asked.key in view.out_keys:
                continue
            # Both are items of one list it was given: the list was the context, the field what it was asked.
            among = [g for g, ks in held.items() if g != f and g in lists and len(ks) >= 2 and {o.key, asked.key} <= ks]
            if among:
                yield Evidence(
                    step.step_id,
                    WRONG_PICK,
                    f"was asked about {f}={asked.raw!r}, one of the {among[0]} it was given, and answered "
                    f"{o.field}={o.raw!r}, another of them",
                    "lineage:wrong-record",
                )
                return


def _scalar_lists(value: Any, depth: int = 0) -> set[str]:
    """The (lower-case) keys of a step's input that hold a list of two or more plain values (a box of ids), at
    any level of its mappings: values read out of text (a conversation's messages) make no such list."""
    out: set[str] = set()
    if depth > 4 or not isinstance(value, dict):
        return out
    for k, v in value.items():
        if isinstance(v, list) and len(v) >= 2 and all(isinstance(x, (str, int, float)) for x in v):
            out.add(str(k).lower())
        elif isinstance(v, dict):
            out |= _scalar_lists(v, depth + 1)
    return out


def _names(out_field: str, in_field: str) -> bool:
    """Whether an output field is named for an input field: the same name, or every word of it (``verify_isbn``
    for ``isbn``)."""
    words = _words(in_field)
    return out_field == in_field or (bool(words) and words <= _words(out_field))


def _words(name: str) -> set[str]:
    """The words of a field name of three letters or more, split at non-alphanumerics and case changes."""
    return {w.lower() for w in re.split(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])", name) if len(w) >= 3}


def _telling(a: Atom) -> bool:
    """A value that names one thing: no trivial value, and a number only with three digits or more."""
    if trivial(a):
        return False
    return a.kind != "number" or len(_DIGITS.findall(a.raw)) >= 3


def _shape(raw: str) -> str:
    """A value's shape: its letters as ``A``, its digits as ``9`` (``CL-303`` -> ``AA-999``)."""
    return _LETTERS.sub("A", _DIGITS.sub("9", raw.strip()))


__all__ = [
    "ANSWER_KEY",
    "PICKED_KEY",
    "WRONG_PICK",
    "Cursor",
    "answered_edges",
    "counted_loops",
    "picked_edges",
    "head_fields",
    "queue_heads",
    "queue_keys",
    "wrong_pick",
]
