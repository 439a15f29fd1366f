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


def _former_freeze(value: Any) -> bytes:
    """The walk-first freeze, the reference any faster path of `freeze` must match byte for byte."""
    items, text = limits()
    if fits(value, items, text):
        return dumps(value)
    return dumps(bounded(value, items, text)[0])


class Hue(str):
    """A string of a subclass, which orjson is told to refuse on the one-pass path."""


_marks = st.sampled_from(['[', ']', '{', '}', '"', "\\", 'a"b', "[[", "x"])
_snap_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
    st.text(max_size=30), st.lists(_marks, max_size=4).map("".join), st.builds(lambda n: "w" * n, st.integers(0, 400)),
    st.builds(lambda n: {n, n + 1}, st.integers(0, 9)), st.just(datetime.date(2031, 4, 5)),
    st.builds(Point, st.integers(0, 9), st.lists(st.text(max_size=3), max_size=2)), st.builds(Hue, st.text(max_size=4)),
)
_snap_values = st.recursive(
    _snap_leaves,
    lambda kids: st.one_of(
        st.lists(kids, max_size=5), st.tuples(kids, kids),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers(0, 3)), kids, max_size=5),
    ),
    max_leaves=20,
)


def _nest(n: int, leaf: Any) -> Any:
    for i in range(n):
        leaf = [leaf] if i % 2 else {"k": leaf, "s": "]}"[: i % 3]}
    return leaf


@settings(max_examples=100, deadline=None)
@given(_snap_values, st.sampled_from([120, 400, 2000]), st.integers(0, 70))
def test_freezing_gives_the_bytes_the_walk_first_freeze_gave(value: Any, cap: int, depth: int) -> None:
    """Whatever the value (brackets and quotes in strings, subclasses, sets, dataclasses, nesting around
    `DEPTH`) and wherever it falls against the size cap, the frozen bytes are those of walking it first."""
    trajdebug.configure(max_value_bytes=cap)
    for v in (value, _nest(depth, value)):
        assert freeze(v) == _former_freeze(v)


@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_a_value_just_under_at_or_over_the_cap_freezes_as_before(delta: int) -> None:
    """A value whose encoding is one byte under, exactly at or one byte over ``max_value_bytes`` (its
    strings near the string limit too) is frozen to the bytes the walk-first freeze gave."""
    cap = 3000
    trajdebug.configure(max_value_bytes=cap)
    base = {"hive": "h" * 100, "frames": [1, 2, 3]}
    pad = cap - len(dumps(base)) - len(',"pad":""') + delta
    value = {**base, "pad": "p" * pad}
    assert len(dumps(value)) == cap + delta
    assert freeze(value) == _former_freeze(value)
    for shape in ([value] * 2, {"one": "q" * (limits()[1] + delta)}, ["r"] * (limits()[0] + delta)):
        assert freeze(shape) == _former_freeze(shape)


@pytest.mark.parametrize("levels", [DEPTH - 1, DEPTH, DEPTH + 1, 150, 300])
def test_nesting_around_the_depth_limit_is_cut_where_it_was(levels: int) -> None:
    """A value nested just within, at or past `DEPTH` levels, with many brackets beside it and some inside
    its strings, is frozen as the walk-first freeze froze it: whole, or cut to a marker at the limit."""
    wide = [{"id": i, "tags": ["a", "b"]} for i in range(40)]
    for leaf in ("plain", "a ]] text", 'a \\" quote'):
        value = {"wide": wide, "deep": _deep(levels - 2), "note": leaf}
        assert freeze(value) == _former_freeze(value)


def _apiary_run(path: Path) -> None:
    """A run whose values take every path of `freeze`: plain chat-like data under the cap, a value past
    it whose bulk is in sight, one whose bulk is nested deep, nesting past `DEPTH`, brackets and escaped
    quotes in strings, a set and a dataclass, secrets under key names and in texts on each path, and a
    value the agent changes after the step returned."""
    log: list[dict[str, Any]] = [{"role": "system", "content": "You schedule hive inspections. [north] {yard}"}]

    @trajdebug.step(kind="llm")
    def ask(messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {"role": "assistant", "content": 'call {"hive": 4}', "api_key": "hk-9f8e7d6c5b4a39281706"}

    @trajdebug.step(kind="tool")
    def frames(n: int) -> Any:
        rows = [{"frame": i, "note": "capped brood [ok]"} for i in range(n)]
        if n < 200:
            return {"rows": rows, "password": "smoker-44"}
        return {"a": {"b": {"c": rows}}, "secret": "queen-7"} if n < 1000 else {"rows": rows, "secret": "queen-8"}

    with trajdebug.run("apiary", path=path):
        for i in range(3):
            answer = ask(log)
            log.append(answer)  # the next turn changes the list the last step returned with
            frames((5, 400, 3000)[i])
            with trajdebug.step("inspect", kind="parse", input={"deep": _deep(DEPTH + 3), "token": "Bearer abcdefghijklmnop1234567890"}) as s:
                s.output = {"tags": {"calm", f"hive-{i}"}, "at": Point(i, ["x"]), "long": "v" * 5000}


def test_a_varied_run_is_recorded_to_the_same_bytes_as_with_the_walk_first_freeze(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that takes every path of the freeze is recorded byte for byte as when each value was walked
    before it was encoded: the same values, cuts, markers and redactions."""
    import re

    from trajdebug.record import steps
    from trajdebug.testing import deterministic

    def recorded(name: str) -> bytes:
        with deterministic():
            _apiary_run(tmp_path / f"{name}.jsonl")
        trajdebug.flush()
        data = (tmp_path / f"{name}.jsonl").read_bytes()
        data = re.sub(rb'"run_id":"[0-9a-f]{32}"', b'"run_id":"R"', data)
        return re.sub(rb'"(host|pid|time_ns|started_at)":[^,}]+', b'"\\1":0', data)

    trajdebug.configure(max_value_bytes=4000)
    steps._snap(["warm"])  # the step module's own freeze bound, so that the patch below replaces it
    now = recorded("now")
    with monkeypatch.context() as m:
        m.setattr(steps, "_freeze", _former_freeze)
        before = recorded("before")
    assert now == before
    assert b"deeper than" in now and TRUNCATED_KEY.encode() in now


def test_secrets_are_redacted_on_every_path_of_the_freeze(tmp_path: Path) -> None:
    """Secrets under key names and in texts are redacted in values frozen whole in one pass, in values cut
    by the bounded copy, and in values past the cap encoded whole before they are cut."""
    trajdebug.configure(max_value_bytes=4000)
    _apiary_run(tmp_path / "r.jsonl")
    trajdebug.flush()
    data = (tmp_path / "r.jsonl").read_bytes()
    for secret in (b"hk-9f8e7d6c5b4a39281706", b"smoker-44", b"queen-7", b"queen-8", b"abcdefghijklmnop1234567890"):
        assert secret not in data, secret


def test_a_value_changed_after_its_step_returned_is_recorded_as_it_was(tmp_path: Path) -> None:
    """Each step's input is recorded as it was when the step ended, not as the agent changed it later."""
    trajdebug.configure(max_value_bytes=4000)
    _apiary_run(tmp_path / "r.jsonl")
    trajdebug.flush()
    (run,) = read_jsonl(tmp_path / "r.jsonl").runs
    asks = [s for s in run.steps if s.kind == "llm"]
    assert [len(s.input["messages"]) for s in asks] == [1, 2, 3], [s.input for s in asks]



def test_a_chain_of_tuples_nested_past_any_encoders_limit_is_cut_at_the_depth_limit() -> None:
    """A value of tuples nested 100,000 deep (orjson counts no tuple toward its recursion limit, and
    overflows the C stack on such a chain) is frozen with its nesting cut at `DEPTH`, the agent unharmed."""
    v: Any = 0
    for _ in range(100_000):
        v = (v,)
    out = freeze({"chain": v})
    assert b"deeper than" in out and len(out) < 1000
