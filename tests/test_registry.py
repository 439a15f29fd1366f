"""The writer's registry of produced values: what it reaches under a step's arguments (`_ids_under`)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from trajdebug.record.registry import _ids_under


SRC = Path(__file__).resolve().parent.parent / "src"


class _Shelf:
    """An object whose attributes an agent passes on as its ``vars``."""

    def __init__(self, jars: list[str]) -> None:
        self.jars = jars
        self.label = "pantry shelf"


def test_what_an_objects_attribute_dict_holds_is_reached() -> None:
    """The items under an object's attribute dict (``vars(obj)``, stored inline on CPython 3.13) are reached
    two levels down, as the walk that finds data edges reaches them."""
    jars = ["apricot jam from the second batch"]
    args: list[Any] = [vars(_Shelf(jars))]
    assert id(jars) in _ids_under(args, 2)
    assert id(jars) in _ids_under(vars(_Shelf(jars)), 1)


def test_only_the_first_items_of_a_large_container_are_reached() -> None:
    """A container of more than 128 items is reached through its first 128 (values of a dict, items of a
    list), next to a small one read whole, as the walk that finds data edges reaches them."""
    big = {f"jar {i}": [i] for i in range(300)}
    row = [[i] for i in range(200)]
    small = {"lid": ["tin"]}
    ids = set(_ids_under([big, row, small], 2))
    assert id(big["jar 0"]) in ids and id(big["jar 127"]) in ids and id(big["jar 128"]) not in ids
    assert id(row[127]) in ids and id(row[128]) not in ids and id(small["lid"]) in ids
    top = set(_ids_under(row, 1))
    assert id(row[127]) in top and id(row[128]) not in top


def test_each_level_is_reached_and_no_deeper() -> None:
    """The value, then its items, then theirs, as many levels as asked and no more, through lists, tuples,
    sets and dicts' values (not their keys, which the walk never opens), and nothing under a text."""
    leaf = ["a label for the bottom jar"]
    middle = ({"bottom": leaf}, frozenset({("pear",)}))
    key = ("a key the walk never opens",)
    value = [middle, {key: "x"}, "plain text"]
    assert _ids_under(value, 0) == [id(value)]
    two = set(_ids_under(value, 2))
    assert {id(middle), id(middle[0]), id(middle[1])} <= two and id(leaf) not in two
    three = set(_ids_under(value, 3))
    assert id(leaf) in three and id(key) not in three
    text = "plain text of a jar, never opened"
    assert _ids_under(text, 3) == [id(text)]


def test_recording_steps_raises_no_audit_event_with_the_agents_values(tmp_path: Path) -> None:
    """Recording steps whose arguments hold earlier outputs raises no ``gc`` audit event (whose arguments
    would be the agent's objects, seen by every audit hook of the process), and the edges are recorded."""
    script = textwrap.dedent(
        f"""
        import json, sys
        events = []
        sys.addaudithook(lambda name, args: events.append(name) if name.startswith("gc.") else None)
        import trajdebug

        class Batch:
            def __init__(self, jars):
                self.jars = jars
                self.note = "from the cellar"

        @trajdebug.step(kind="tool")
        def fetch(n):
            return {{"jars": [f"jar {{i}} of plum preserve" for i in range(n)]}}

        @trajdebug.step(kind="llm")
        def label(messages):
            return "labels printed for the whole shelf"

        path = {str(tmp_path / "p.jsonl")!r}
        with trajdebug.run("pantry", path=path):
            shelf = [fetch(3), fetch(200)]
            for _ in range(5):
                label([{{"role": "user", "content": "label these"}}, shelf, {{"n": list(range(150))}}])
            label([vars(Batch(fetch(2)))])
        trajdebug.flush()
        records = [json.loads(line) for line in open(path)]
        edged = sum(1 for r in records if any(d.get("kind") == "data" for d in r.get("deps") or []))
        print(len(events), edged)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}  # this tree's code, whatever the working directory
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True, env=env)
    events, edged = out.stdout.split()
    assert events == "0" and int(edged) >= 6


def test_a_container_resized_while_it_is_read_makes_the_prefilter_answer_maybe(monkeypatch: Any) -> None:
    """When another thread resizes a shared dict mid-read (possible on free-threaded builds), the prefilter
    answers "may reach" instead of raising, so the step is still walked and recorded whole."""
    import trajdebug.record.registry as registry_mod
    from trajdebug.record.registry import Registry

    def resized(value: Any, levels: int) -> list[int]:
        raise RuntimeError("dictionary changed size during iteration")

    reg = Registry()
    produced = {"hive": "north meadow", "frames": [1, 2, 3]}
    reg.registry[id(produced)] = ("s1", produced, 0, "tracked", 64)
    monkeypatch.setattr(registry_mod, "_ids_under", resized)
    assert reg._reaches([[{"unrelated": 1}]]) is True


def _answer() -> dict[str, Any]:
    """A chat model's answer dumped to a dict (``message.model_dump()`` of the openai client)."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "parse_dates", "arguments": '{"d": "03/04/2025"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "get_rate", "arguments": '{"car": "compact"}'}},
        ],
    }


def test_a_with_step_given_a_tool_call_inside_a_models_answer_depends_on_that_model_call(tmp_path: Path) -> None:
    """A `with` step whose input is ``answer["tool_calls"][i]`` or its ``["function"]`` (two and three levels
    inside the model step's output) gets a tracked data edge from the model step."""
    import trajdebug

    with trajdebug.run("rental", path=tmp_path / "r.jsonl") as run:
        with trajdebug.step("model", kind="llm") as m:
            m.output = _answer()
        with trajdebug.step("parse_dates", kind="tool", input=m.output["tool_calls"][0]) as t:
            t.output = 1
        with trajdebug.step("get_rate", kind="tool", input=m.output["tool_calls"][1]["function"]) as t:
            t.output = 2
    model, parse, rate = run.load().steps
    assert [(d.step_id, d.origin) for d in parse.deps] == [(model.step_id, "tracked")]
    assert [(d.step_id, d.origin) for d in rate.deps] == [(model.step_id, "tracked")]


def test_a_returned_value_is_registered_three_levels_down_and_64_objects_at_most() -> None:
    """What a step returned is registered three levels down and no deeper, and at most 64 objects below it,
    nearest levels first; an object another step returned first stays that step's."""
    from trajdebug.record.account import Account
    from trajdebug.record.tracking import Tracker

    deep = {"a": {"b": {"c": {"d": "four levels down, never registered"}}}}
    tracker = Tracker("run", Account("run"))
    tracker._register("s1", 1, deep, 64)
    assert id(deep["a"]["b"]["c"]) in tracker.registry
    assert id(deep["a"]["b"]["c"]["d"]) not in tracker.registry

    earlier = ["a list an earlier step returned"]
    tracker._register("s0", 1, earlier, 64)
    wide = {"rows": [[f"row {i} of the table, long enough"] for i in range(100)], "kept": earlier}
    tracker._register("s2", 2, wide, 64)
    below = [o for o in tracker.registry.values() if o[0] == "s2" and o[1] is not wide]
    assert len(below) == 64
    assert tracker.registry[id(wide["rows"])][0] == "s2"  # the first level first
    assert tracker.registry[id(earlier)][0] == "s0"
