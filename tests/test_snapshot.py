"""Freezing a step's value on the agent's thread: plain values encode as they are, hostile ones cost a
bounded number of item visits whatever they hold, and what was cut is said where it was cut."""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trajdebug
from trajdebug.core.codec import dumps, loads
from trajdebug.core.jsonl import read_jsonl
from trajdebug.core.model import TRUNCATED_KEY
from trajdebug.record.snapshot import DEPTH, bounded, fits, freeze, limits


@dataclasses.dataclass
class Point:
    x: int
    tags: list[str]


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1, "b": [1, 2.5, None, True], "c": {"d": "text"}},
        [1, "two", (3, 4)],
        {3, 1, 2},
        Point(1, ["a"]),
        {"when": datetime.date(2024, 5, 1)},
        {1: "int key", None: "none key"},
    ],
)
def test_a_value_that_fits_is_encoded_exactly_as_the_encoder_writes_it(value: Any) -> None:
    """Ordinary values (plain data, sets, dataclasses, dates, non-string keys) freeze to the same JSON the
    encoder writes for them whole."""
    assert loads(freeze(value)) == loads(dumps(value))


def _deep(n: int) -> list[Any]:
    v: list[Any] = [0]
    for _ in range(n):
        v = [v]
    return v


BIG = list(range(2_000_000))

HOSTILE = {
    "nested 2M-item list": lambda: {"rows": BIG},
    "nested twice": lambda: {"a": {"b": [BIG, BIG]}},
    "2M-item list": lambda: BIG,
    "1M-key dict": lambda: {str(i): i for i in range(1_000_000)},
    "1,000 lists of 1,000": lambda: [list(range(1000)) for _ in range(1000)],
    "1,000 strings of 60 KB": lambda: ["y" * 60_000] * 1000,
    "10,000 levels deep": lambda: _deep(10_000),
    "1M-item set": lambda: set(range(1_000_000)),
    "dataclass holding 2M items": lambda: Point(1, BIG),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_value_costs_a_bounded_number_of_item_visits(name: str) -> None:
    """However large or deep the value, freezing it visits at most a few times the item budget (work,
    not wall time), and the frozen JSON stays within a few times what a stored value keeps."""
    value = HOSTILE[name]()
    items, text = limits()
    assert not fits(value, items, text)
    copy, visited = bounded(value, items, text)
    assert visited <= 4 * items, visited
    assert len(dumps(copy)) <= 4 * text


def test_what_was_cut_is_counted_where_it_was_cut() -> None:
    """A huge list nested in a small dict keeps its head and says how many items followed; a long string
    keeps its head and its original length; nesting past the depth limit becomes a marker."""
    out = loads(freeze({"rows": BIG}))
    rows = out["rows"]
    kept = len(rows) - 1
    assert rows[-1]["__trajdebug_repr__"] == f"<{len(BIG) - kept:,} more items>"
    assert rows[:3] == [0, 1, 2]
    note = loads(freeze({"note": "n" * 500_000}))["note"]
    assert note[TRUNCATED_KEY] == 500_000 and note["head"].startswith("nnn")
    d = loads(freeze(_deep(200)))
    assert "deeper than" in json.dumps(d)
    levels = 0
    while isinstance(d, list):
        d, levels = d[0], levels + 1
    assert levels <= DEPTH


class CountingDict(dict[str, int]):
    """A dict of a million entries that counts every entry it is asked for through Python."""

    asked = 0

    def items(self) -> Any:
        for kv in super().items():
            CountingDict.asked += 1
            yield kv

    def __iter__(self) -> Iterator[str]:
        for k in super().__iter__():
            CountingDict.asked += 1
            yield k

    def values(self) -> Any:
        for v in super().values():
            CountingDict.asked += 1
            yield v


def test_a_step_returning_a_huge_value_visits_a_bounded_number_of_its_items(tmp_path: Path) -> None:
    """A step whose output nests a million-entry mapping returns after looking at a bounded number of its
    entries (counted by the mapping itself), and the stored output says it was cut."""
    huge = CountingDict((str(i), i) for i in range(1_000_000))
    CountingDict.asked = 0
    items, _ = limits()
    with trajdebug.run("r", path=tmp_path / "r.jsonl"):
        with trajdebug.step("s") as s:
            s.output = {"rows": huge}
        assert CountingDict.asked <= 3 * items, CountingDict.asked
    trajdebug.record.flush()
    (run,) = read_jsonl(tmp_path / "r.jsonl").runs
    # Cut to what a stored value keeps: by the freeze (a marker of the entries left out) or by the writer.
    out = run.steps[0].output
    assert TRUNCATED_KEY in out or "more items" in json.dumps(out)


def _measure_reference(value: Any, items: int, text: int, depth: int) -> tuple[bool, int]:
    """What `_measure` answered before its one-pass form (characters tested after every string): whether
    the value fits, and the items counted."""
    from trajdebug.record.snapshot import _LEAVES

    left, chars = items, text
    stack: list[tuple[Any, int]] = [(value, depth)]
    while stack:
        c, depth = stack.pop()
        t = type(c)
        if t is not dict and t is not list and t is not tuple:
            return False, items - left
        if left < len(c) or depth >= DEPTH:
            return False, items - left
        left -= len(c)
        for v in c.values() if t is dict else c:
            tv = type(v)
            if tv is str:
                chars -= len(v)
                if chars < 0:
                    return False, items - left
            elif tv is dict or tv is list or tv is tuple:
                stack.append((v, depth + 1))
            elif tv not in _LEAVES:
                return False, items - left
        if t is dict:
            for k in c:
                if type(k) is str:
                    chars -= len(k)
            if chars < 0:
                return False, items - left
    return True, items - left


_KEYS = st.one_of(st.text(max_size=6), st.integers(0, 3), st.tuples(st.integers(0, 2)))
_DATA = st.recursive(
    st.one_of(st.text(max_size=12), st.integers(), st.none(), st.booleans(), st.floats(), st.sets(st.integers(), max_size=2)),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.tuples(inner, inner), st.dictionaries(_KEYS, inner, max_size=5)),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(_DATA, st.integers(0, 40), st.integers(0, 60), st.integers(DEPTH - 3, DEPTH))
def test_the_one_pass_measure_answers_as_the_test_after_every_string(value: Any, items: int, text: int, depth: int) -> None:
    """Whatever the value (non-text keys, sets, numbers, nesting near `DEPTH`) and the budgets, `_measure`
    says whether it fits, counts the items it looked at, and (when it fits) the characters, exactly as
    testing the characters after every string did."""
    from trajdebug.record.snapshot import _measure

    ok, seen, chars = _measure(value, items, text, depth)
    assert (ok, seen) == _measure_reference(value, items, text, depth)
    if ok:
        assert _measure(value, 10**6, 10**6, depth)[2] == chars
