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
