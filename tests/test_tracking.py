"""Identity tracking on the writer: the shortcut that skips the walk never changes what it finds."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trajdebug.core.model import REDACTED
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
    tracker.batch([None, None])  # inside a writer's batch, with the ids under an argument kept: the same
    assert with_shortcut == tracker._find("me", 20, args) == tracker._find("me", 20, args)
    tracker.batch(None)
    tracker._reaches = lambda v: True  # type: ignore[method-assign]
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


_ANSWER = "the refund is 45.20 EUR for order O-41190"


def test_a_batch_reuses_what_is_under_an_argument_yet_sees_the_registry_as_it_is() -> None:
    """The same conversation passed to two steps of one batch is walked once; an object in it that a step
    in between returned still gives the second step its data edge."""
    tracker = Tracker("run", Account("run"))
    tracker._register("other", 10, ["an object of no argument"], 64)
    msgs = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": _ANSWER}]
    tracker.batch([None] * 3)  # three more items queued behind the one encoded now
    assert tracker._find("a", 20, {"messages": msgs, "n": 1}) == []
    tracker._register("llm-1", 21, _ANSWER, 64)
    tracker.at = 1
    found = tracker._find("b", 30, {"messages": msgs, "n": 1})
    assert [(d.step_id, d.key) for d in found] == [("llm-1", "messages")]
    assert len(tracker._memo) == 1
    tracker.batch(None)
    assert not tracker._memo


def test_a_step_queued_after_the_walk_is_walked_again() -> None:
    """A list changed after it was walked for one step (an earlier output appended) is walked again for a
    step queued after that walk: the appended output gives that step its edge."""
    tracker = Tracker("run", Account("run"))
    tracker._register("llm-1", 10, _ANSWER, 64)
    msgs: list[Any] = [{"role": "user", "content": "hello"}]
    queue: list[Any] = []
    tracker.batch(queue)  # nothing queued yet behind the first item
    assert tracker._find("a", 20, {"messages": msgs, "n": 1}) == []
    msgs.append({"role": "assistant", "content": _ANSWER})
    queue.append(None)
    tracker.at = 1
    assert [d.step_id for d in tracker._find("b", 30, {"messages": msgs, "n": 1})] == ["llm-1"]


def test_large_and_set_containers_are_reached_as_the_walk_reaches_them() -> None:
    """Past 128 items only a container's first 128 are looked at, by the shortcut as by the walk; sets
    and tuples are opened like lists."""
    tracker = Tracker("run", Account("run"))
    early, late = ["an early output"] * 1, ["a late output"] * 1
    tracker._register("p-early", 10, early, 64, depth=0)
    tracker._register("p-late", 10, late, 64, depth=0)
    big = [early, *[[i] for i in range(200)], late]
    found = tracker._find("me", 20, {"rows": big, "n": 1})
    assert [d.step_id for d in found] == ["p-early"]
    inner = ("the tuple's own text, long enough",)
    tracker._register("p-tuple", 10, inner, 64, depth=0)
    found = tracker._find("me", 20, [frozenset({inner}), 1])
    assert [d.step_id for d in found] == ["p-tuple"]


def test_a_new_batch_never_reuses_what_an_earlier_one_kept() -> None:
    """What a batch kept is dropped when the next batch starts, even if the earlier one never ended (its
    positions start again at 0): a list changed in between is walked again."""
    tracker = Tracker("run", Account("run"))
    tracker._register("llm-1", 10, _ANSWER, 64)
    msgs: list[Any] = [{"role": "user", "content": "hello"}]
    tracker.batch([None] * 5)
    assert tracker._find("a", 20, {"messages": msgs, "n": 1}) == []
    msgs.append({"role": "assistant", "content": _ANSWER})
    tracker.batch([None] * 5)  # no `batch(None)` in between
    assert [d.step_id for d in tracker._find("b", 30, {"messages": msgs, "n": 1})] == ["llm-1"]


def test_a_secret_argument_name_is_redacted_at_every_call() -> None:
    """A decorated call's argument named like a secret is replaced at every call, not only the first (the
    tracker decides each name once), and each replacement is counted; other arguments pass as they are."""
    tracker = Tracker("run", Account("run"))
    assert tracker.redactor is not None
    for i in range(3):
        args, out = tracker.arguments({"api_key": f"abc-{i}", "prompt": "hello there", "n": 3}, "fine")
        assert args == {"api_key": REDACTED, "prompt": "hello there", "n": 3}
        assert out == "fine"
    assert tracker.redactor.counts["key_name"] == 3


def test_a_call_with_one_text_argument_is_redacted_and_capped_as_any_call() -> None:
    """A call of one text argument returning a text (the short path) redacts a secret in either text, replaces
    an argument named like a secret, and cuts an output past the size limit, as a call of two arguments does."""
    tracker = Tracker("run", Account("run"))
    red = tracker.redactor
    assert red is not None
    secret = "sk-abcdefghijklmnopqrstuvwx"
    one, out = tracker.arguments({"prompt": f"use {secret} now"}, f"echo {secret}")
    two, out2 = tracker.arguments({"prompt": f"use {secret} now", "n": 1}, f"echo {secret}")
    assert one == {"prompt": two["prompt"]} and out == out2
    assert secret not in str(one) and secret not in out and REDACTED in out
    assert tracker.arguments({"password": "hunter2hunter2"}, "fine") == ({"password": REDACTED}, "fine")
    assert red.counts["key_name"] == 1
    long = "o" * (tracker._max + 10)
    _, cut = tracker.arguments({"q": "plain text"}, long)
    _, cut2 = tracker.arguments({"q": "plain text", "n": 1}, long)
    assert cut == cut2 and cut["head"] == long[: tracker._max]


def test_a_dict_of_scalars_an_earlier_step_returned_is_found_as_a_with_steps_input(tmp_path: Any) -> None:
    """A `with` step given as its ``input=`` a dict of numbers and short texts that an earlier step returned (or
    that sits inside what it returned: the arguments a kiln planner chose) depends on that step; an equal dict
    built anew does not, and a decorated call given the same values as arguments finds nothing."""
    import trajdebug

    @trajdebug.step(kind="llm")
    def plan() -> dict[str, Any]:
        return {"tool": "fire", "args": {"kiln": "K-3", "temp_c": 1240.0}}

    @trajdebug.step(kind="tool")
    def fire(kiln: str, temp_c: float) -> str:
        return "fired"

    with trajdebug.run("kilns", path=str(tmp_path / "runs.jsonl")) as run:
        action = plan()
        for name, given in (("chosen", action["args"]), ("whole", action), ("rebuilt", dict(action["args"]))):
            with trajdebug.step(name, kind="tool", input=given) as s:
                s.output = "ok"
        fire(**action["args"])
    steps = {s.name: s for s in run.load().steps}
    planner = steps["plan"].step_id
    assert [d.step_id for d in steps["chosen"].deps] == [d.step_id for d in steps["whole"].deps] == [planner]
    assert steps["rebuilt"].deps == () and steps["fire"].deps == ()


_KEY = "sk-" + "q7Rw" * 6
"""A secret of a shape the redaction rules know (an API key)."""


class _Greenhouse:
    """A class whose method is recorded (the step's input is its one argument, not ``self``)."""

    @staticmethod
    def _made() -> Any:
        import trajdebug

        class Greenhouse:
            @trajdebug.step(kind="tool")
            def vent(self, bed: str) -> str:
                return f"vented bed {bed} for the afternoon, the louvres half open"

        return Greenhouse()


def _greenhouse_run(target: dict[str, Any]) -> None:
    """A run with every shape of step the common record covers and every way it falls back: texts in and out,
    a decorated call by position, by keyword and as a method, nested steps, a data edge found by identity, a
    relay, secrets (in a text and in an argument's name), a text past the size cap, texts JSON must escape,
    errors, attributes, an agent, short and empty texts."""
    import trajdebug

    @trajdebug.step(kind="llm")
    def forecast(region: str) -> str:
        return f"frost likely in {region} overnight; cover the seedlings before dusk"

    @trajdebug.step(kind="tool")
    def water(bed: str) -> str:
        return bed  # a relay of its argument

    @trajdebug.step(kind="tool")
    def login(password: str) -> str:
        return "logged in to the irrigation controller"

    @trajdebug.step(kind="tool")
    def two(bed: str, litres: int) -> str:
        return f"bed {bed} got {litres} litres"

    @trajdebug.step(kind="tool")
    def broken(bed: str) -> str:
        raise ValueError(f"sensor on bed {bed} is offline")

    house = _Greenhouse._made()
    with trajdebug.run("greenhouse", **target):
        for i in range(3):
            note = forecast(f"north slope {i}")
            forecast(region=f"valley {i}")
            forecast(f"Area B-{i}: the ridge_top, where wind=strong and basic shelter fails at 4 5 6 7 8 9 0 1 2 3 4 5 6")
            with trajdebug.step("plan", kind="llm", input=note) as s:  # the forecast's text: a data edge
                s.output = f"move tray {i} into the cold frame; open vent {i} at noon"
            with trajdebug.step("round", kind="agent"):
                with trajdebug.step("inspect", kind="tool", input=f"bed {i}") as s:
                    s.output = "fine"  # announces its parent
                with trajdebug.step("inspect", kind="tool", input=f"bed {i}") as s:
                    s.output = 'leaves "wilted" at the tip\\tand a \u00e9clat of \u2603\ncontrol \x01 char'
                with trajdebug.step("inspect", kind="tool", input="") as s:
                    s.output = "ok"
                house.vent(f"bed {i} by the east door")
            water("bed seven, the one by the rain barrel")
            login("hunter2-but-longer")
            two("bed five", 3)
            with trajdebug.step("call", kind="llm", input=f"use {_KEY} to ask") as s:
                s.output = "answered without the key in the text"
            with trajdebug.step("echo", kind="llm", input="what key did you get?") as s:
                s.output = f"the key was {_KEY}"
            with trajdebug.step("big", kind="tool", input="the whole log") as s:
                s.output = "x" * 3000
            with trajdebug.step("agent", kind="llm", input="ask the helper", agent="helper") as s:
                s.output = "the helper agrees with the plan"
                s.set("llm.model", "m-1")
            try:
                broken(f"bed {i}")
            except ValueError:
                pass


def _both_ways(
    tmp_path: Any, monkeypatch: Any, sink: str, short_path: str = "plain", run: Any = None
) -> tuple[bytes, bytes, int]:
    """The run (``run``, the greenhouse run by default) recorded with one of the tracker's short paths
    (``short_path``: `Tracker.plain` or `Tracker.snapped`) and without it (those steps through `encode`): the
    file's bytes or the store's rows and blobs, run ids masked; and how many steps took the short path."""
    import re
    import sqlite3

    import trajdebug
    from trajdebug.testing import deterministic

    real = getattr(Tracker, short_path)
    took = []

    def counted(self: Tracker, h: Any) -> Any:
        rec = real(self, h)
        took.append(rec is not None)
        return rec

    def recorded(name: str) -> bytes:
        path = tmp_path / (f"{name}.jsonl" if sink == "jsonl" else f"{name}.db")
        with deterministic():
            (run or _greenhouse_run)({"path": path} if sink == "jsonl" else {"store": path})
        trajdebug.flush()
        if sink == "jsonl":
            data = path.read_bytes()
        else:
            with sqlite3.connect(path) as conn:
                data = b"".join(bytes(r[0]) for r in conn.execute("SELECT body FROM chunks ORDER BY id"))
                data += b"".join(bytes(r[0]) for r in conn.execute("SELECT body FROM blobs ORDER BY id"))
        data = re.sub(rb'"run_id":"[0-9a-f]{32}"', b'"run_id":"R"', data)
        seen: dict[bytes, bytes] = {}  # error ids come from a process-wide counter: by their order in the run
        data = re.sub(rb'"e[0-9a-f]{15}"', lambda m: seen.setdefault(m.group(0), b'"E%d"' % len(seen)), data)
        return re.sub(rb'"(host|pid|time_ns|started_at)":[^,}]+', b'"\\1":0', data)

    trajdebug.configure(max_value_bytes=2000)
    monkeypatch.setattr(Tracker, short_path, counted)
    short = recorded("short")
    monkeypatch.setattr(Tracker, short_path, lambda self, h: None)
    full = recorded("full")
    return short, full, sum(took)


def test_the_common_steps_short_record_is_byte_for_byte_the_full_ones_in_a_file(tmp_path: Any, monkeypatch: Any) -> None:
    """A varied run recorded into a JSONL file reads the same bytes whether its common steps take the short
    path or every step goes through the full encoder (and many did take the short path)."""
    short, full, took = _both_ways(tmp_path, monkeypatch, "jsonl")
    assert took >= 27  # secrets in texts included: redacted on the short path too
    assert short == full


def test_the_common_steps_short_record_is_byte_for_byte_the_full_ones_in_a_store(tmp_path: Any, monkeypatch: Any) -> None:
    """The same varied run recorded into a store leaves the same rows whichever path its common steps take."""
    short, full, took = _both_ways(tmp_path, monkeypatch, "store")
    assert took >= 27  # secrets in texts included: redacted on the short path too
    assert short == full


def test_a_secret_in_a_common_steps_text_is_redacted(tmp_path: Any, monkeypatch: Any) -> None:
    """A step of the common shape (a text in, a text out) holding a secret in either text, as a `with` step or
    a decorated call, takes the short path and reaches the file with the secret replaced."""
    import trajdebug

    real = Tracker.plain
    took: list[bool] = []

    def counted(self: Tracker, h: Any) -> Any:
        rec = real(self, h)
        took.append(rec is not None)
        return rec

    monkeypatch.setattr(Tracker, "plain", counted)

    @trajdebug.step(kind="tool")
    def relay(note: str) -> str:
        return f"forwarded, signed with {_KEY}"

    path = tmp_path / "secrets.jsonl"
    with trajdebug.run("secrets", path=path) as run:
        with trajdebug.step("ask", kind="llm", input=f"the key is {_KEY}") as s:
            s.output = "noted"
        with trajdebug.step("tell", kind="llm", input="which key?") as s:
            s.output = f"it is {_KEY}"
        relay(f"pass {_KEY} along")
        relay("nothing secret here at all")
    data = path.read_bytes()
    assert _KEY.encode() not in data
    assert data.count(REDACTED.encode()) >= 5
    assert len(run.load().steps) == 4
    assert took == [True] * 4


def test_a_common_step_given_an_earlier_steps_text_depends_on_it(tmp_path: Any) -> None:
    """A step of the common shape whose input is the very text an earlier step returned gets its data edge
    (identity tracking is unchanged by the short path); one given an equal text built anew does not."""
    import trajdebug

    @trajdebug.step(kind="llm")
    def draft(topic: str) -> str:
        return f"a draft about {topic}, three paragraphs long"

    @trajdebug.step(kind="tool")
    def polish(text: str) -> str:
        return text.upper()

    with trajdebug.run("drafts", path=tmp_path / "d.jsonl") as run:
        text = draft("tomatoes")
        polish(text)
        polish("".join(list(text)))
    steps = run.load().steps
    assert [d.step_id for d in steps[1].deps] == [steps[0].step_id]
    assert steps[2].deps == ()


def test_a_step_whose_output_is_set_again_after_its_block_keeps_the_snapshot_taken_when_it_ended(tmp_path: Any) -> None:
    """A step that ended with a structured output (or input) and was then given a text after its block is
    recorded as it ended, as the full encoder records it, and the snapshot's bytes go back to the run's budget."""
    import json

    import trajdebug
    from trajdebug.testing import deterministic

    trajdebug.configure(flush_interval=5.0)  # the writer drains at the run's end, after the re-assignment
    try:
        path = tmp_path / "late.jsonl"
        with deterministic(), trajdebug.run("kiosk", path=path) as run:
            with trajdebug.step("read_menu", kind="parse", input="the menu board text") as s:
                s.output = {"dish": "noodles", "price": 7.5}
            s.output = s.output["dish"]
            with trajdebug.step("greet", kind="llm", input=["good", "day"]) as t:
                t.output = "hello"
            t.input = "good day"
        trajdebug.flush()
    finally:
        trajdebug.configure(flush_interval=0.1)
    rows = {r["name"]: r for r in map(json.loads, path.read_text().splitlines()) if r["t"] == "step"}
    assert rows["read_menu"]["output"] == {"dish": "noodles", "price": 7.5}
    assert rows["greet"]["input"] == ["good", "day"]
    from trajdebug.record.config import CONFIG

    assert run._max_bytes - run._bytes == CONFIG.max_buffer_bytes


class _Crate(str):
    """A text subclass an agent may pass (recorded as its text)."""


def _orchard_run(target: dict[str, Any]) -> None:
    """A run of steps whose inputs are snapshotted structures, with every way `Tracker.snapped` falls back: outputs
    as structures, texts and nothing; a data edge found by identity; a relay; a tool result that flags an error;
    a nested step announcing its parent; an agent, attributes, an error; secrets under key names, as a Bearer
    token and in texts; a snapshot past the size cap; non-text keys, tuples nested past the snapshot's depth,
    text subclasses; and a request changed after its step returned."""
    import trajdebug

    @trajdebug.step(kind="llm")
    def pick(messages: Any) -> Any:
        return {"choice": f"row {len(messages)}", "usage": {"tokens": 12 * len(messages)}, "rows": [1, 2, 3]}

    @trajdebug.step(kind="llm")
    def summarize(messages: Any) -> str:
        return f"{len(messages)} messages about the pear harvest, none urgent"

    @trajdebug.step(kind="tool")
    def weigh(crates: Any) -> Any:
        return {"error": "scale offline"} if len(crates) > 2 else {"kg": 12.5 * len(crates)}

    @trajdebug.step(kind="other")
    def nothing(plan: Any) -> None:
        return None

    @trajdebug.step(kind="other")
    def same(plan: Any) -> Any:
        return plan  # a relay of its argument

    deep: Any = "core"
    for _ in range(80):
        deep = (deep, {"k": [deep]})
    with trajdebug.run("orchard", **target):
        msgs: list[Any] = [{"role": "system", "content": "You sort pears by ripeness and never bruise them."}]
        for i in range(3):
            msgs.append({"role": "user", "content": f"how many crates from row {i}?"})
            answer = pick(msgs)
            summarize(msgs)
            pick([answer, {"role": "user", "content": "and the next row?"}])  # an earlier output: a data edge
            weigh([{"row": i}, {"row": i + 1}])
            weigh([{"row": i}, {"row": i + 1}, {"row": i + 2}])  # the tool's result flags an error
            nothing({"rows": [i, i + 1]})
            same({"rows": [i]})
            pick([{"role": "user", "content": f"Authorization: Bearer {_KEY}"}])
            pick([{"api_key": "orchard-gate-77", "content": "open the north gate"}])
            pick([{"content": "x" * 3000}])  # past the size cap
            pick([{1: "one", (2, 3): "two-three", None: "none"}])
            pick([deep])
            pick([_Crate("twelve crates of bosc pears from the far row")])
            with trajdebug.step("round", kind="agent"):
                pick([{"row": i, "note": "inside a round"}])  # announces its parent
            with trajdebug.step("ask", kind="llm", input={"q": f"ripe in row {i}?"}, agent="sorter") as s:
                s.output = {"a": "mostly"}
                s.set("llm.model", "m-2")
            with trajdebug.step("structured", kind="parse", input={"rows": [i, "two"]}) as s:
                s.output = "parsed two rows of the orchard ledger"
            try:
                with trajdebug.step("fails", kind="tool", input={"row": i}):
                    raise ValueError(f"row {i} is flooded")
            except ValueError:
                pass
            msgs.append({"role": "assistant", "content": f"row {i} gave {i + 4} crates"})
            request = [{"role": "user", "content": "count again"}]
            pick(request)
            request.append({"role": "user", "content": "changed after the step returned"})


def test_a_snapshotted_steps_short_record_is_byte_for_byte_the_full_ones_in_a_file(tmp_path: Any, monkeypatch: Any) -> None:
    """A varied run of steps given structures, recorded into a JSONL file, reads the same bytes (secrets
    redacted and counted alike) whether those steps take the short path or all go through the full encoder."""
    short, full, took = _both_ways(tmp_path, monkeypatch, "jsonl", "snapped", _orchard_run)
    assert took >= 20
    assert short == full
    assert _KEY.encode() not in short and b"orchard-gate-77" not in short


def test_a_snapshotted_steps_short_record_is_byte_for_byte_the_full_ones_in_a_store(tmp_path: Any, monkeypatch: Any) -> None:
    """The same run recorded into a store leaves the same rows and blobs whichever path those steps take."""
    short, full, took = _both_ways(tmp_path, monkeypatch, "store", "snapped", _orchard_run)
    assert took >= 20
    assert short == full
    assert _KEY.encode() not in short and b"orchard-gate-77" not in short
