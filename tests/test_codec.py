"""trajdebug.core.codec: the encoder every recorded value goes through."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from trajdebug.core.codec import _OPTS, _default, dumps


@dataclasses.dataclass
class Crate:
    label: str
    weight: float


_keys = st.one_of(st.text(max_size=6), st.integers(-5, 5), st.none(), st.booleans())
_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.text(max_size=20),
    st.builds(lambda n: {n, n + 1}, st.integers(0, 9)),
    st.just(datetime.date(2031, 4, 5)), st.builds(Crate, st.text(max_size=5), st.floats(0, 9)),
)
_values = st.recursive(
    _leaves, lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(_keys, kids, max_size=4)), max_leaves=12
)


def _former(obj: Any) -> bytes:
    """What `dumps` returned before it tried plain JSON first (its first attempt, then the same fallbacks)."""
    try:
        data: bytes = orjson.dumps(obj, default=_default, option=_OPTS)
        return data
    except Exception:  # noqa: BLE001
        return dumps(obj)  # both fall back the same way past the first attempt


@settings(max_examples=300, deadline=None)
@given(_values)
def test_dumps_gives_the_bytes_of_the_encoder_that_allows_any_key(value: Any) -> None:
    """A value is encoded to the same bytes whether or not its keys are all strings: plain data first
    without the option for other keys, and anything refused again with it."""
    assert dumps(value) == _former(value)


def test_dumps_encodes_keys_that_are_not_strings_as_before() -> None:
    """A dict keyed by numbers or None, or holding a set or a dataclass, still comes out as it did."""
    value = {1: "one", None: [Crate("lid", 2.5)], "tags": {"b", "a"}, 2.5: {True: 0}}
    assert dumps(value) == orjson.dumps(value, default=_default, option=_OPTS)
    assert dumps(value) == b'{"1":"one","null":[{"label":"lid","weight":2.5}],"tags":["a","b"],"2.5":{"true":0}}'


def _orchard_run(target: dict[str, Any]) -> None:
    """A run of structured values: conversations resent and grown, a model answer with tool calls, keys that
    are not strings, sets, a dataclass, secrets under key names and in texts, a value past the size cap, a
    tool result that flags an error, a `with` step's dict."""
    import trajdebug

    convo: list[dict[str, Any]] = [
        {"role": "system", "content": "You plan harvests for an orchard co-op. " * 20},
        {"role": "user", "content": "Which rows of pears are ready? My token is Bearer abcdefghijklmnopqrstuvwxyz123456"},
    ]

    @trajdebug.step(kind="llm")
    def plan(messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "choices": [{"message": {"role": "assistant", "tool_calls": [{"id": f"c{len(messages)}", "arguments": '{"row": 4}'}]}}],
            "usage": {"prompt_tokens": 40 * len(messages), "completion_tokens": 9},
        }

    @trajdebug.step(kind="tool")
    def ripeness(rows: dict[Any, Any]) -> Any:
        return {"error": "row 9 has no sensor"} if 9 in rows else {r: {"brix": 11.5 + (r or 0)} for r in rows}

    @trajdebug.step(kind="tool")
    def crates(tags: set[str], crate: Crate, api_key: str) -> list[Any]:
        return [crate, sorted(tags), {"password": "pear-tree-77", "note": "x" * 3000}]

    with trajdebug.run("orchard", **target):
        for i in range(4):
            answer = plan(convo)
            convo = [*convo, answer["choices"][0]["message"], {"role": "tool", "content": f"rows {i}, {i + 1} ready"}]
            ripeness({i: "north", i + 1: "south", None: "unknown"} if i != 2 else {9: "east"})
            crates({"bosc", f"anjou-{i}"}, Crate(f"lid {i}", 2.5 + i), "sk-live-0123456789abcdef0123")
            with trajdebug.step("tally", kind="parse", input={"rows": [i, i + 1], "by": {1.5: "half"}}) as s:
                s.output = {"ready": True, "count": i, "when": datetime.date(2031, 9, 1 + i)}


def test_a_structured_run_is_recorded_byte_for_byte_as_with_the_former_encoder(tmp_path: Any, monkeypatch: Any) -> None:
    """A run of structured values (non-string keys, sets, dataclasses, secrets) is recorded to the same bytes,
    in a file and in a store, as when every value went through the encoder that allows any key."""
    import re
    import sqlite3

    import trajdebug
    from trajdebug.record import encoding, snapshot, summary
    from trajdebug.testing import deterministic

    def recorded(name: str, sink: str) -> bytes:
        path = tmp_path / (f"{name}.jsonl" if sink == "jsonl" else f"{name}.db")
        with deterministic():
            _orchard_run({"path": path} if sink == "jsonl" else {"store": path})
        trajdebug.flush()
        if sink == "jsonl":
            data = path.read_bytes()
        else:
            with sqlite3.connect(path) as conn:
                data = b"".join(bytes(r[0]) for r in conn.execute("SELECT body FROM chunks ORDER BY id"))
        data = re.sub(rb'"run_id":"[0-9a-f]{32}"', b'"run_id":"R"', data)
        seen: dict[bytes, bytes] = {}  # error ids come from a process-wide counter: by their order in the run
        data = re.sub(rb'"e[0-9a-f]{15}"', lambda m: seen.setdefault(m.group(0), b'"E%d"' % len(seen)), data)
        return re.sub(rb'"(host|pid|time_ns|started_at)":[^,}]+', b'"\\1":0', data)

    trajdebug.configure(max_value_bytes=2000)
    for sink in ("jsonl", "store"):
        now = recorded(f"now-{sink}", sink)
        with monkeypatch.context() as m:
            for module in (encoding, snapshot, summary):
                m.setattr(module, "dumps", _former)
            before = recorded(f"before-{sink}", sink)
        assert now == before
        assert b'"redacted":{"bearer":4,"key_name":8}' in now and b'"1":{"brix":12.5}' in now
