"""Tests of content inference of dependencies (trajdebug.analysis.inference._fingerprint and .infer)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from trajdebug.analysis.inference._fingerprint import (
    canonical_number,
    fingerprint_output,
    normalize,
    number_weight,
    token_id,
    tokenize,
    value_key,
    value_weight,
    winnow,
)
from trajdebug.analysis.inference._infer import ContentIndex, infer_dependencies, previous_turns
from trajdebug.analysis.inference._probe import probe_input
from trajdebug.core.model import REPR_KEY, TRUNCATED_KEY, Dependency, Run, Step, replace


# Real-looking content: a tau-bench retail tool result and a policy-like paragraph.
USER_DETAILS = json.dumps(
    {
        "name": {"first_name": "Yusuf", "last_name": "Rossi"},
        "address": {
            "address1": "763 Broadway",
            "address2": "Suite 135",
            "city": "Philadelphia",
            "zip": "19122",
        },
        "email": "yusuf.rossi7301@example.com",
        "payment_methods": {"credit_card_9513926": {"source": "credit_card", "brand": "mastercard"}},
        "orders": ["#W6247578", "#W9711842", "#W4776164", "#W6679257", "#W2378156"],
    }
)
PARAGRAPH = (
    "Before taking consequential actions that update the database (cancel, modify, return, exchange), "
    "you must list the action detail and obtain explicit user confirmation (yes) to proceed. "
    "You should not make up any information or knowledge or procedures not provided from the user or the tools."
)
UNRELATED = (
    "The orchard ripens slowly in late autumn when frost settles over the valley and the pickers "
    "gather at dawn with baskets woven from willow; their songs carry across the terraces until noon "
    "while millers wait by the river for the carts to arrive with the harvest."
)

WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=9)


def sentence(words: list[str]) -> str:
    return " ".join(words)


def step(step_id: str, **kw: object) -> Step:
    return Step(step_id=step_id, name=step_id, **kw)  # type: ignore[arg-type]


class TestFingerprint:
    def test_serialization_does_not_change_tokens(self) -> None:
        """json.dumps (escapes, ensure_ascii) and indentation leave the token stream unchanged."""
        value = {"note": 'Café "Rossi"\nline two\tÉclair', "n": [1, 2]}
        raw = tokenize(normalize(str(value["note"])))
        dumped = tokenize(normalize(json.dumps(value)))
        indented = tokenize(normalize(json.dumps(json.dumps(value, indent=2))))
        assert raw == ["café", "rossi", "line", "two", "éclair"]
        assert dumped == ["note", *raw, "n", "1", "2"]
        assert indented == dumped

    def test_canonical_numbers_agree_between_text_and_values(self) -> None:
        """A number written with separators or trailing zeros has the canonical form of the value."""
        assert canonical_number("1,234.50") == canonical_number(1234.5) == "1234.5"
        assert canonical_number("0042") == canonical_number(42.0) == "42"
        assert canonical_number(float("nan")) is None

    def test_number_weight_grows_with_significant_digits(self) -> None:
        """Small and round integers weigh nothing; long ids and prices with cents weigh a lot."""
        assert number_weight("42") == number_weight("1000000") == 0.0
        assert number_weight("19122") < number_weight("9523456873")
        assert number_weight("50.88") < number_weight("1234.56")
        assert number_weight("9523456873") >= 0.9

    def test_value_weight_favours_identifiers_over_words(self) -> None:
        """An identifier outweighs a dictionary word of the same length; short words weigh nothing."""
        assert value_weight(["yusuf_rossi_9620"]) == 1.0
        assert value_weight(["philadelphia"]) <= 0.3
        assert value_weight(["ok"]) == 0.0
        assert value_weight(["763", "broadway"]) > value_weight(["crew", "neck"])

    def test_winnowing_keeps_a_fingerprint_in_every_window(self) -> None:
        """Every window of hashes contains one of the selected fingerprints (Schleimer et al. 2003)."""
        hashes = [(i * 2654435761) % 1000 for i in range(200)]
        chosen = winnow(hashes, 6)
        assert all(chosen.intersection(hashes[i : i + 6]) for i in range(len(hashes) - 5))
        assert len(chosen) < len(hashes) / 2

    def test_ids_are_stable_across_processes(self) -> None:
        """Token ids and shingle hashes are the same under another hash seed (no salted str hash)."""
        code = textwrap.dedent(
            """
            from trajdebug.analysis.inference._fingerprint import fingerprint_output, token_id
            fp = fingerprint_output("the quick brown fox jumps over the lazy dog again and again " * 3)
            print(token_id("yusuf_rossi_9620"), sorted(fp.shingles)[:3])
            """
        )
        outs = {
            subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                text=True,
                check=True,
                env={"PYTHONHASHSEED": seed, "PATH": ""},
            ).stdout
            for seed in ("1", "2")
        }
        assert len(outs) == 1
        assert str(token_id("yusuf_rossi_9620")) in outs.pop()

    def test_output_atoms_include_json_leaves_inside_strings(self) -> None:
        """A JSON string output contributes its leaves (ids, numbers) as value atoms."""
        fp = fingerprint_output(USER_DETAILS)
        probe = probe_input({"order_id": "#W2378156"})
        assert any(key in probe.value_keys(1) for key in fp.values)

    def test_probe_records_leaf_paths(self) -> None:
        """An input probe knows which argument each token came from."""
        probe = probe_input({"messages": [{"role": "user", "content": "hello there"}], "k": 3})
        pos = probe.tokens.index("hello")
        assert probe.path_at(pos) == ("messages", 0, "content")

    def test_odd_values_do_not_break_fingerprinting(self) -> None:
        """Deep nesting, NaN, bytes-like leaves and over-deep JSON strings are handled as data."""
        deep: object = "yusuf_rossi_9620"
        for _ in range(5000):
            deep = [deep]
        index = ContentIndex()
        index.add_output("deep", deep)
        index.add_output("odd", {"x": float("nan"), "y": {1, 2}, "z": "[" * 3000 + "]" * 3000})
        [m] = index.match({"user": "yusuf_rossi_9620"})
        assert m.step_id == "deep"
        assert m.key == "user"


class TestContentIndex:
    def test_whole_output_pasted_into_prompt_is_found(self) -> None:
        """A tool result pasted whole into an LLM prompt matches with near-certain confidence."""
        index = ContentIndex()
        index.add_output("tool", USER_DETAILS)
        index.add_output("other", UNRELATED)
        [m] = index.match(f"Tool result:\n{USER_DETAILS}\n\nAnswer the user.", min_confidence=0.35)
        assert m.step_id == "tool"
        assert m.confidence > 0.95

    def test_slice_of_a_long_output_inside_a_longer_prompt_is_found(self) -> None:
        """Twenty words cut from the middle of an output, inside a longer prompt, are found."""
        index = ContentIndex()
        index.add_output("doc", PARAGRAPH)
        piece = " ".join(PARAGRAPH.split()[12:32])
        [m] = index.match(f"{UNRELATED} Remember: {piece}. {UNRELATED}", min_confidence=0.35)
        assert m.step_id == "doc"
        assert "shingle" in m.evidence

    def test_number_parsed_out_of_text_is_found(self) -> None:
        """A number parsed out of a text output ('total: 1,234.56') matches the parsed value."""
        index = ContentIndex()
        index.add_output("llm", "The order total: 1,234.56 USD, shipping included.")
        [m] = index.match({"amount": 1234.56}, min_confidence=0.35)
        assert (m.step_id, m.key) == ("llm", "amount")

    def test_identifier_from_a_json_tool_result_is_found(self) -> None:
        """An order id read out of a JSON tool result and passed as an argument matches, keyed by it."""
        index = ContentIndex()
        index.add_output("get_user_details", USER_DETAILS)
        [m] = index.match({"order_id": "#W2378156"}, min_confidence=0.35)
        assert (m.step_id, m.key) == ("get_user_details", "order_id")
        assert "w2378156" in m.evidence

    def test_structured_output_serialized_into_a_prompt_is_found(self) -> None:
        """A dict output rendered with json.dumps(indent=2) inside a message matches by its tokens."""
        index = ContentIndex()
        output = {
            "items": [{"sku": f"SKU-{i:05d}", "qty": i, "title": f"Widget number {i}"} for i in range(8)]
        }
        index.add_output("search", output)
        messages = {
            "messages": [
                {"role": "user", "content": "find widgets"},
                {"role": "tool", "content": json.dumps(output, indent=2)},
            ]
        }
        [m] = index.match(messages, min_confidence=0.35)
        assert m.step_id == "search"
        assert m.key == "messages[1].content"

    def test_marker_dicts_count_as_their_text(self) -> None:
        """The head of a truncated value and the repr of an unserializable one are content."""
        index = ContentIndex()
        index.add_output("big", {TRUNCATED_KEY: 99999, "head": PARAGRAPH})
        index.add_output("obj", {REPR_KEY: "Order(id='ord_8f3k29x7q', total=None)", "type": "Order"})
        assert index.match(PARAGRAPH, min_confidence=0.35)[0].step_id == "big"
        assert index.match({"order": "ord_8f3k29x7q"}, min_confidence=0.35)[0].step_id == "obj"

    def test_short_words_small_numbers_and_booleans_do_not_match(self) -> None:
        """Outputs like 'ok', 3, True and 'yes' never make an edge."""
        index = ContentIndex()
        for i, value in enumerate(["ok", 3, True, "yes", None, "done"]):
            index.add_output(f"s{i}", value)
        assert (
            index.match(
                {"status": "ok", "count": 3, "flag": True, "answer": "yes, done"}, min_confidence=0.01
            )
            == []
        )

    def test_a_value_held_by_many_outputs_is_ignored(self) -> None:
        """An atom held by more outputs than max_postings is a stop word and matches nothing."""
        index = ContentIndex(max_postings=4)
        for i in range(6):
            index.add_output(f"s{i}", {"tenant": "acme_corp_4471", "seq": i})
        assert index.match({"tenant": "acme_corp_4471"}, min_confidence=0.01) == []

    def test_a_value_shared_by_several_outputs_splits_its_evidence(self) -> None:
        """The same id in two outputs gives each less confidence than a single holder gets."""
        alone, shared = ContentIndex(), ContentIndex()
        alone.add_output("a", {"user": "yusuf_rossi_9620", "n": 1})
        for sid in ("a", "b"):
            shared.add_output(sid, {"user": "yusuf_rossi_9620", "n": 1})
        one = alone.match({"user_id": "yusuf_rossi_9620"})[0].confidence
        two = shared.match({"user_id": "yusuf_rossi_9620"})
        assert {m.step_id for m in two} == {"a", "b"}
        assert all(m.confidence < one for m in two)

    def test_echoed_content_is_credited_to_its_origin(self) -> None:
        """A tool that echoes its argument does not take the credit from the step that produced it."""
        index = ContentIndex()
        index.add_output("find_user", "yusuf_rossi_9620")
        index.add_output(
            "get_user",
            {"user_id": "yusuf_rossi_9620", "city": "Philadelphia"},
            consumed={"user_id": "yusuf_rossi_9620"},
        )
        assert [m.step_id for m in index.match({"user": "yusuf_rossi_9620"}, min_confidence=0.35)] == [
            "find_user"
        ]
        # Without the origin as a candidate, the relay is the best source there is.
        [m] = index.match({"user": "yusuf_rossi_9620"}, exclude={"find_user"}, min_confidence=0.35)
        assert m.step_id == "get_user"

    def test_excluded_steps_are_not_matched(self) -> None:
        """Excluded step ids are not candidates."""
        index = ContentIndex()
        index.add_output("a", PARAGRAPH)
        assert index.match(PARAGRAPH, exclude=["a"]) == []

    def test_index_is_incremental(self) -> None:
        """Outputs added after a match are found by the next match."""
        index = ContentIndex()
        assert index.match(PARAGRAPH) == []
        index.add_output("late", PARAGRAPH)
        assert len(index) == 1
        assert [m.step_id for m in index.match(PARAGRAPH)] == ["late"]

    def test_matches_are_ordered_and_limited(self) -> None:
        """Matches come most confident first, cut at min_confidence and limit."""
        index = ContentIndex()
        index.add_output("weak", "order #W2378156 shipped")
        index.add_output("strong", PARAGRAPH)
        prompt = f"{PARAGRAPH} Also order W2378156."
        ms = index.match(prompt)
        assert [m.step_id for m in ms] == ["strong", "weak"]
        assert ms[0].confidence >= ms[1].confidence
        assert [m.step_id for m in index.match(prompt, limit=1)] == ["strong"]


class TestMatcherProperties:
    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        output=st.lists(WORDS, min_size=25, max_size=120),
        data=st.data(),
        before=st.lists(WORDS, max_size=40),
        after=st.lists(WORDS, max_size=40),
    )
    def test_pasted_output_whole_or_in_part_is_found(
        self, output: list[str], data: st.DataObject, before: list[str], after: list[str]
    ) -> None:
        """An earlier output pasted, whole or a run of at least 16 words, into a later input is found."""
        start = data.draw(st.integers(0, len(output) - 16))
        end = data.draw(st.integers(start + 16, len(output)))
        piece = output[start:end]
        # A run that repeats itself ("aaa aaa aaa ...") carries one shingle of content, not 12.
        assume(len(set(zip(*(piece[i:] for i in range(5)), strict=False))) == len(piece) - 4)
        index = ContentIndex()
        index.add_output("producer", sentence(output))
        pasted = sentence([*before, "context:", *output[start:end], "end.", *after])
        wrapper = data.draw(st.sampled_from(["text", "json", "message"]))
        value: object = pasted
        if wrapper == "json":
            value = json.dumps({"prompt": pasted})
        elif wrapper == "message":
            value = {"messages": [{"role": "user", "content": pasted}]}
        assert "producer" in [m.step_id for m in index.match(value, min_confidence=0.35)]

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(output=st.lists(WORDS, min_size=25, max_size=120), data=st.data())
    def test_unrelated_text_of_the_same_size_is_not_found(
        self, output: list[str], data: st.DataObject
    ) -> None:
        """Independent text of the same size, drawn the same way, matches no output."""
        other = data.draw(st.lists(WORDS, min_size=len(output), max_size=len(output)))
        index = ContentIndex()
        index.add_output("producer", sentence(output))
        shared = set(zip(*(output[i:] for i in range(5)), strict=False)) & set(
            zip(*(other[i:] for i in range(5)), strict=False)
        )
        if shared:  # a 5-word run in common is not unrelated text
            return
        assert index.match(sentence(other), min_confidence=0.35) == []

    @settings(max_examples=60, deadline=None)
    @given(
        ident=st.from_regex(r"[a-z]{3,6}_[0-9]{4,8}", fullmatch=True),
        noise=st.lists(WORDS, min_size=5, max_size=30),
    )
    def test_identifier_leaf_is_found_in_any_argument(self, ident: str, noise: list[str]) -> None:
        """An identifier leaf of a structured output is found wherever a later input mentions it."""
        index = ContentIndex()
        index.add_output("lookup", {"id": ident, "label": sentence(noise)})
        found = index.match({"query": f"details for {ident} please"}, min_confidence=0.35)
        assert [m.step_id for m in found] == ["lookup"]
        assert found[0].key == "query"


def chain_run() -> Run:
    # agent(root) > [fetch, summarize, act]; fetch's output feeds summarize's prompt.
    steps = (
        step("root", kind="agent", input={"task": PARAGRAPH}, output="done", start_ns=1, end_ns=100),
        step(
            "fetch",
            kind="tool",
            parent_id="root",
            input={"q": "policy"},
            output=USER_DETAILS,
            start_ns=10,
            end_ns=20,
        ),
        step(
            "summarize",
            kind="llm",
            parent_id="root",
            input={"prompt": f"Summarize: {USER_DETAILS}"},
            output="ok",
            start_ns=30,
            end_ns=40,
        ),
        step(
            "act",
            kind="tool",
            parent_id="root",
            input={"order_id": "#W2378156"},
            output="cancelled",
            start_ns=50,
            end_ns=60,
        ),
    )
    return Run(run_id="run1", name="chain", steps=steps)


class TestInferDependencies:
    def test_sibling_outputs_become_inferred_data_edges(self) -> None:
        """An earlier sibling's output found in a step's input becomes an inferred data edge with its key."""
        out = infer_dependencies(chain_run())
        [dep] = out.step("summarize").deps
        assert (dep.step_id, dep.kind, dep.origin, dep.key) == ("fetch", "data", "inferred", "prompt")
        assert 0.35 <= dep.confidence <= 1.0
        assert [d.step_id for d in out.step("act").deps] == ["fetch"]

    @pytest.mark.parametrize("timed", [True, False])
    def test_no_edge_to_an_ancestor_or_from_a_later_step(self, timed: bool) -> None:
        """An enclosing agent's output is no source for its descendants, and no edge points forward."""

        def t(start: int, end: int) -> dict[str, int]:
            return {"start_ns": start, "end_ns": end} if timed else {}

        steps = (
            step("root", kind="agent", input=None, output=PARAGRAPH, **t(1, 100)),
            step("mid", kind="agent", parent_id="root", input=None, output=None, **t(5, 90)),
            step("leaf", parent_id="mid", input={"p": PARAGRAPH}, output=None, **t(10, 20)),
            step("first", parent_id="mid", input={"q": UNRELATED}, output=None, **t(30, 40)),
            step("second", parent_id="mid", input=None, output=UNRELATED, **t(50, 60)),
        )
        out = infer_dependencies(Run(run_id="r", name="r", steps=steps))
        assert all(not s.deps for s in out.steps)

    def test_a_code_block_that_recorded_no_input_is_linked_by_its_output(self) -> None:
        """A code step that recorded no input (a block storing the program's variables) gets an edge from the
        earlier output its own output repeats; a tool that recorded no input (the world answering) gets none."""
        steps = (
            step("parse", kind="parse", input={"msg": "order"}, output=PARAGRAPH),
            step("write", kind="state", input=None, output={"ticket": PARAGRAPH}),
            step("fetch", kind="tool", input=None, output={"record": PARAGRAPH}),
        )
        out = infer_dependencies(Run(run_id="r", name="r", steps=steps))
        assert [d.step_id for d in out.step("write").deps] == ["parse"]
        assert out.step("fetch").deps == ()

    def test_a_producer_still_running_is_not_a_source(self) -> None:
        """With timing known, a step that ended after the consumer started is no source."""
        steps = (
            step("slow", input=None, output=PARAGRAPH, start_ns=1, end_ns=50),
            step("fast", input={"p": PARAGRAPH}, output=None, start_ns=10, end_ns=20),
            step("after", input={"p": PARAGRAPH}, output=None, start_ns=60, end_ns=70),
        )
        out = infer_dependencies(Run(run_id="r", name="r", steps=steps))
        assert out.step("fast").deps == ()
        assert [d.step_id for d in out.step("after").deps] == ["slow"]

    def test_list_order_is_used_without_timing(self) -> None:
        """Without timestamps, earlier steps in the list are sources and later ones are not."""
        steps = (
            step("a", input=None, output=PARAGRAPH),
            step("b", input={"p": PARAGRAPH}, output=PARAGRAPH),
            step("c", input={"p": PARAGRAPH}, output=None),
        )
        out = infer_dependencies(Run(run_id="r", name="r", steps=steps))
        assert [d.step_id for d in out.step("b").deps] == ["a"]
        assert "b" not in [d.step_id for d in out.step("a").deps]
        assert {d.step_id for d in out.step("c").deps} <= {"a", "b"}
        assert out.step("c").deps

    def test_existing_edges_are_not_duplicated(self) -> None:
        """A tracked or declared edge to the same upstream step suppresses the inferred one."""
        run = chain_run()
        tracked = Dependency(step_id="fetch", origin="tracked")
        steps = tuple(replace(s, deps=(tracked,)) if s.step_id == "summarize" else s for s in run.steps)
        out = infer_dependencies(replace(run, steps=steps))
        assert out.step("summarize").deps == (tracked,)

    def test_edges_per_step_are_capped_most_confident_first(self) -> None:
        """At most max_edges_per_step edges are added, the most confident ones."""
        texts = [f"{PARAGRAPH} part {i} of the manual with code zq{i:03d}x7" for i in range(5)]
        steps = [step(f"p{i}", input=None, output=t) for i, t in enumerate(texts)]
        steps.append(step("consumer", input={"docs": texts}, output=None))
        out = infer_dependencies(Run(run_id="r", name="r", steps=tuple(steps)), max_edges_per_step=2)
        deps = out.step("consumer").deps
        assert len(deps) == 2
        assert deps[0].confidence >= deps[1].confidence

    def test_the_latest_producer_is_kept_past_the_cap(self) -> None:
        """A step handed a whole history keeps an edge to the step it was handed last, though earlier producers
        match better and fill the cap (every later message repeats them)."""
        texts = [f"{PARAGRAPH} part {i} of the manual with code zq{i:03d}x7" for i in range(5)]
        extra = {f"field_{k}": f"unrelated detail number {k} about gauge rq{k:03d}w" for k in range(12)}
        steps = [step(f"p{i}", input=None, output=t) for i, t in enumerate(texts[:4])]
        steps.append(step("p4", input=None, output={"text": texts[4], **extra}))
        steps.append(step("consumer", input={"history": texts}, output=None))
        out = infer_dependencies(Run(run_id="r", name="r", steps=tuple(steps)), max_edges_per_step=2)
        deps = [d.step_id for d in out.step("consumer").deps]
        assert "p4" in deps and len(deps) == 3
        conf = {d.step_id: d.confidence for d in out.step("consumer").deps}
        assert conf["p4"] < min(c for k, c in conf.items() if k != "p4")

    def test_outputs_of_previous_turns_become_context_edges(self) -> None:
        """A fact produced in turn one and reused in turn three is a context edge naming turn one's run."""
        turn1 = Run(
            run_id="t1",
            name="turn",
            steps=(
                step("lookup", kind="tool", input={"q": "user"}, output=USER_DETAILS, start_ns=1, end_ns=2),
            ),
        )
        turn2 = Run(
            run_id="t2",
            name="turn",
            continues="t1",
            steps=(step("chat", input="hi", output="hello", start_ns=3, end_ns=4),),
        )
        turn3 = Run(
            run_id="t3",
            name="turn",
            continues="t2",
            steps=(
                step(
                    "refund", kind="tool", input={"order_id": "#W6679257"}, output="ok", start_ns=5, end_ns=6
                ),
            ),
        )
        previous = previous_turns(turn3, [turn1, turn2, turn3])
        assert [r.run_id for r in previous] == ["t1", "t2"]
        looped = replace(turn1, continues="t3")
        assert [r.run_id for r in previous_turns(turn3, [looped, turn2, turn3])] == ["t1", "t2"]
        [dep] = infer_dependencies(turn3, previous=previous).step("refund").deps
        assert (dep.step_id, dep.kind, dep.run_id, dep.origin) == ("lookup", "context", "t1", "inferred")

    def test_unrelated_steps_get_no_edges_and_the_run_is_kept(self) -> None:
        """A run whose inputs hold nothing from earlier outputs comes back unchanged."""
        steps = (step("a", input=None, output=PARAGRAPH), step("b", input={"text": UNRELATED}, output="x"))
        run = Run(run_id="r", name="r", steps=steps)
        assert infer_dependencies(run) == run

    def test_real_message_log_shape(self) -> None:
        """In a tau-bench-shaped run, the user id from one tool feeds the next call and the order id the one after."""
        steps = (
            step(
                "find",
                kind="tool",
                input={"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"},
                output="yusuf_rossi_9620",
            ),
            step(
                "llm1",
                kind="llm",
                input={"messages": [{"role": "tool", "content": "yusuf_rossi_9620"}]},
                output=None,
            ),
            step("details", kind="tool", input={"user_id": "yusuf_rossi_9620"}, output=USER_DETAILS),
            step(
                "order",
                kind="tool",
                input={"order_id": "#W6247578"},
                output=json.dumps({"order_id": "#W6247578", "status": "delivered", "total": 413.17}),
            ),
            step("refund", kind="tool", input={"order_id": "#W6247578", "amount": 413.17}, output="ok"),
        )
        out = infer_dependencies(Run(run_id="r", name="r", steps=steps))
        assert [d.step_id for d in out.step("details").deps] == ["find"]
        assert [d.step_id for d in out.step("order").deps] == ["details"]
        # The order id was echoed by `order`: its origin is `details`; the total is new in `order`.
        keys = {d.step_id: d.key for d in out.step("refund").deps}
        assert keys == {"details": "order_id", "order": "amount"}

    @pytest.mark.parametrize("min_confidence", [0.0, 0.35, 0.9])
    def test_min_confidence_is_respected(self, min_confidence: float) -> None:
        """No inferred edge has a confidence below min_confidence."""
        out = infer_dependencies(chain_run(), min_confidence=min_confidence)
        assert all(d.confidence >= min_confidence for s in out.steps for d in s.deps)


class TestFastPaths:
    """The shortcuts that make inference fast compute the same atoms and edges as the plain paths."""

    def test_identifier_atoms_have_the_weight_of_single_token_values(self) -> None:
        """Identifiers added in bulk (ASCII, underscores, non-ASCII) weigh what value_weight gives them."""
        tokens = ["w2378156", "yusuf_rossi_9620", "café12345", "ab_cd_ef", "zq001x7", "sku12"]
        fp = fingerprint_output("order " + " and ".join(tokens) + " shipped today to the customer")
        for tok in tokens:
            weight, first, n = fp.values[value_key([token_id(tok)])]
            assert (weight, first, n) == (value_weight([tok]), token_id(tok), 1)

    def test_relevant_tokens_leave_out_atoms_but_keep_the_weight(self) -> None:
        """With the inputs' tokens known, value atoms starting elsewhere are left out; the weight is unchanged."""
        full = fingerprint_output(USER_DETAILS)
        relevant = set(tokenize(normalize("refund w2378156 please 19122")))
        part = fingerprint_output(USER_DETAILS, relevant=relevant)
        assert part.shingles == full.shingles
        assert part.weight() == pytest.approx(full.weight())
        assert value_key([token_id("w2378156")]) in part.values
        assert len(part.values) < len(full.values)
        kept = {k: v for k, v in full.values.items() if v[2] == 0 or v[1] in {token_id(t) for t in relevant}}
        assert part.values == kept

    def test_numbers_in_text_skip_glued_digits_and_versions(self) -> None:
        """Only free-standing numbers are number atoms, with or without the digit-token shortcut."""
        probe = probe_input("v2 build 1.2.3 for rossi7301: total 1,234.50 USD and 98,765.4321 more")
        assert sorted(canon for canon, _pos in probe.numbers.values()) == ["1234.5", "98765.4321"]
        assert probe_input("no digits here at all, only words").numbers == {}

    def test_repeated_input_strings_give_equal_independent_probes(self) -> None:
        """An input string seen before (memoized) gives the same probe, and changing one probe changes no other."""
        history = [{"role": "tool", "content": f"{PARAGRAPH} {USER_DETAILS}"}]
        first = probe_input({"messages": history})
        first.tokens.append("tampered")
        again = probe_input({"messages": [*history, {"role": "user", "content": "thanks"}]})
        assert "tampered" not in again.tokens
        fresh = probe_input({"messages": history})
        assert fresh.tokens == first.tokens[:-1]
        assert (fresh.ids, fresh.hashes, fresh.numbers) == (first.ids, first.hashes, first.numbers)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data())
    def test_infer_dependencies_agrees_with_the_incremental_index(self, data: st.DataObject) -> None:
        """Edges of an untimed run equal those found by probing each step as the inference does (its input; an
        input-less code step's output), then adding each output, in order, marked echoed where the probe holds it
        (an input-less step repeating an earlier output relays it: the inference credits the origin)."""
        from trajdebug.analysis.inference._infer import _given

        ident = st.from_regex(r"[a-z]{2,5}_?[0-9]{3,7}", fullmatch=True)
        texts: list[str] = []
        steps: list[Step] = []
        for i in range(data.draw(st.integers(2, 7))):
            words = data.draw(st.lists(st.one_of(WORDS, ident), min_size=3, max_size=40))
            if texts and data.draw(st.booleans()):  # paste part of an earlier output
                src = data.draw(st.sampled_from(texts)).split()
                a = data.draw(st.integers(0, len(src) - 1))
                words = [*words[:5], *src[a : a + data.draw(st.integers(1, 30))], *words[5:]]
            inp = data.draw(st.sampled_from(["text", "args", "none"]))
            value: object = None
            if inp == "text":
                value = sentence(words)
            elif inp == "args":
                value = {"q": words[0], "body": sentence(words[1:])}
            out = sentence(data.draw(st.lists(st.one_of(WORDS, ident), min_size=1, max_size=60)))
            texts.append(out)
            steps.append(step(f"s{i}", input=value, output=out))
        run = Run(run_id="r", name="r", steps=tuple(steps))
        got = infer_dependencies(run, min_confidence=0.2, max_edges_per_step=3)
        index = ContentIndex()
        for s, g in zip(steps, got.steps, strict=True):
            want: list[tuple[str, float, str | None]] = []
            probe = _given(s, ())  # an input-less code step is probed by its output (nothing encloses here)
            if probe is not None:
                found = index.match(probe, min_confidence=0.2, limit=3)
                want = [(m.step_id, m.confidence, m.key) for m in found]
            assert [(d.step_id, d.confidence, d.key) for d in g.deps] == want
            index.add_output(s.step_id, s.output, consumed=probe)

    def test_runs_past_the_probe_budget_get_the_same_edges(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A run whose inputs exceed the look-ahead budget is matched unfiltered, with the same edges."""
        import trajdebug.analysis.inference._infer as infer_module

        run = chain_run()
        expected = infer_dependencies(run)
        monkeypatch.setattr(infer_module, "_PROBE_BUDGET", 3)
        assert infer_dependencies(run) == expected
        assert any(s.deps for s in expected.steps)
