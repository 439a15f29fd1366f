"""Identity tracking on the writer: the shortcut that skips the walk never changes what it finds."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trajdebug.record.account import Account
from trajdebug.record.tracking import Tracker


_LEAF = st.one_of(st.text(min_size=0, max_size=30), st.integers(), st.none(), st.booleans())


def _values() -> st.SearchStrategy[Any]:
    return st.recursive(
        _LEAF,
        lambda inner: st.one_of(
            st.lists(inner, max_size=6),
            st.tuples(inner, inner),
            st.dictionaries(st.text(max_size=5), inner, max_size=6),
        ),
        max_leaves=40,
    )


def _objects(value: Any, depth: int = 0) -> list[Any]:
    """Every object in ``value`` to four levels, containers and strings (what a step may have returned)."""
    out = [value]
    if depth < 4:
        items = value.values() if type(value) is dict else value if type(value) in (list, tuple) else ()
        for v in items:
            out.extend(_objects(v, depth + 1))
    return out


@settings(max_examples=300, deadline=None)
@given(_values(), st.data())
def test_the_shortcut_finds_what_the_walk_finds(value: Any, data: st.DataObject) -> None:
    """Whatever objects earlier steps returned (some of them inside this step's arguments, at any depth),
    `_find` with its one-set-operation shortcut returns exactly what the full walk returns."""
    tracker = Tracker("run", Account("run"))
    candidates = [o for o in _objects(value) if type(o) in (str, list, tuple, dict) and (type(o) is not str or len(o) >= 8)]
    chosen = data.draw(st.lists(st.sampled_from(candidates), max_size=4)) if candidates else []
    for i, obj in enumerate(chosen):
        tracker._register(f"s{i}", 10, obj, 64, depth=0)
    tracker._register("other", 10, ["an object of no argument"], 64)
    args = {"messages": value, "n": 3}
    with_shortcut = tracker._find("me", 20, args)
    tracker._reaches = lambda v, ended: True  # type: ignore[method-assign]
    assert with_shortcut == tracker._find("me", 20, args)


def test_an_argument_holding_an_earlier_output_deep_inside_is_found() -> None:
    """A message list holding, three levels down, the text an earlier step returned gives a data edge to
    that step; the same text rebuilt (equal, not the same object) gives none."""
    tracker = Tracker("run", Account("run"))
    answer = "the refund is 45.20 EUR for order O-41190"
    tracker._register("llm-1", 10, answer, 64)
    found = tracker._find("me", 20, {"messages": [{"role": "assistant", "content": answer}]})
    assert [(d.step_id, d.kind) for d in found] == [("llm-1", "data")]
    rebuilt = "".join([answer[:10], answer[10:]])
    assert tracker._find("me", 20, {"messages": [{"role": "assistant", "content": rebuilt}]}) == []
