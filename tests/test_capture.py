"""Automatic dependency capture at record time: value identity, provenance, state, control, environment."""

from __future__ import annotations

import gc
from typing import Any

import trajdebug
from trajdebug.core.model import Run
from trajdebug.record import MemorySink


def record(fn: Any, **kwargs: Any) -> Run:
    with trajdebug.run("t", sinks=[MemorySink()], **kwargs) as h:
        fn(h)
    return h.load()


def edges(run: Run, name: str) -> set[tuple[str, str, str]]:
    """(producer name, kind, origin) of the edges into the step called ``name``."""
    by_id = run.step_map()
    step = next(s for s in run.steps if s.name == name)
    return {(by_id[d.step_id].name if d.step_id in by_id else d.step_id, d.kind, d.origin) for d in step.deps}


@trajdebug.step(kind="tool")
def search(query: str) -> list[dict[str, str]]:
    return [{"title": f"result for {query}", "body": "lorem ipsum dolor sit amet " * 3}]


@trajdebug.step(kind="parse")
def pick(results: list[dict[str, str]]) -> dict[str, str]:
    return results[0]


@trajdebug.step(kind="llm")
def summarize(doc: dict[str, str], style: str) -> str:
    return f"summary of {doc['title']} in a {style} style, long enough to track"


@trajdebug.step(kind="tool")
def count(n: int) -> int:
    return n + 1


class TestValueTracking:
    def test_returned_object_reaching_a_later_step_is_a_tracked_edge(self) -> None:
        """A step's return value passed to a later step gives a tracked data edge keyed by argument."""
        run = record(lambda h: summarize(pick(search("revenue q3")), "short"))
        assert {("search", "data", "tracked")} == edges(run, "pick")
        assert {("pick", "data", "tracked")} == edges(run, "summarize")
        dep = next(s for s in run.steps if s.name == "summarize").deps[0]
        assert dep.key == "doc"

    def test_item_of_a_returned_container_is_tracked(self) -> None:
        """An element taken out of a returned list still links back to the producer."""

        def body(h: Any) -> None:
            results = search("x" * 30)
            summarize(results[0], "plain")

        assert {("search", "data", "tracked")} == edges(record(body), "summarize")

    def test_container_holding_an_output_is_tracked(self) -> None:
        """An output wrapped in a new container by the caller is found inside it."""

        @trajdebug.step
        def judge(payload: dict[str, Any]) -> bool:
            return True

        def body(h: Any) -> None:
            doc = pick(search("a long query string for the search"))
            judge({"candidates": [doc], "n": 1})

        assert {("pick", "data", "tracked")} == edges(record(body), "judge")

    def test_small_ints_and_short_strings_give_no_identity_edges(self) -> None:
        """Shared immutables (small ints, short strings) never produce tracked edges."""

        @trajdebug.step
        def label() -> str:
            return "ok"

        def body(h: Any) -> None:
            n = count(1)  # returns 2, a cached small int
            label()
            count(2)  # the literal 2, not the output above
            summarize({"title": "ok"}, "ok")
            del n

        run = record(body)
        assert set() == edges(run, "summarize")
        assert all(not s.deps for s in run.steps)

    def test_ids_of_dead_objects_are_never_confused(self) -> None:
        """Outputs are kept alive for the run, so a new object cannot reuse a registered id."""

        @trajdebug.step
        def make() -> dict[str, int]:
            return {"v": 1}

        @trajdebug.step
        def use(x: dict[str, int]) -> int:
            return x["v"]

        def body(h: Any) -> None:
            for _ in range(50):
                make()
            h.flush()
            gc.collect()
            fresh = [{"v": i} for i in range(200)]
            for f in fresh:
                use(f)

        run = record(body)
        assert all(not s.deps for s in run.steps if s.name == "use")

    def test_a_consumer_never_depends_on_a_step_that_ended_after_it_started(self) -> None:
        """Edges only point to producers that finished before the consumer started."""

        @trajdebug.step(kind="agent")
        def outer(results: list[dict[str, str]]) -> list[dict[str, str]]:
            results.append(pick(results))
            return results

        run = record(lambda h: outer(search("a query long enough to be tracked")))
        assert {("search", "data", "tracked")} == edges(run, "outer")


class TestDeclared:
    def test_traced_value_crossing_a_boundary(self) -> None:
        """trajdebug.traced links a value that crossed an invisible boundary to its source."""

        def body(h: Any) -> None:
            with trajdebug.step("producer", kind="tool") as p:
                p.output = "queued job 17"
            received = trajdebug.traced({"job": 17, "status": "done"}, source=p)
            summarize({"title": str(received)}, "x")
            pick([received])

        run = record(body)
        assert {("producer", "data", "declared")} == edges(run, "pick")


class TestState:
    def test_state_read_depends_on_last_writer(self) -> None:
        """Reading run.state[key] adds a state edge from the step that last wrote that key."""

        def body(h: Any) -> None:
            with trajdebug.step("write1", kind="state"):
                h.state["plan"] = "v1"
            with trajdebug.step("write2", kind="state"):
                h.state["plan"] = "v2"
            with trajdebug.step("other", kind="state"):
                h.state["unrelated"] = 1
            with trajdebug.step("read", kind="llm") as s:
                s.output = h.state["plan"]

        run = record(body)
        assert {("write2", "state", "tracked")} == edges(run, "read")
        read = next(s for s in run.steps if s.name == "read")
        assert read.deps[0].key == "plan"
        assert read.attributes["state_reads"] == ["plan"]

    def test_a_value_read_in_the_run_body_depends_on_its_writer_where_it_is_used(self) -> None:
        """run.state read outside any step, then passed to a step: that step depends on the key's writer."""

        def body(h: Any) -> None:
            with trajdebug.step("plan", kind="llm"):
                h.state["plan"] = {"steps": ["search the archive", "summarize the findings"]}
            with trajdebug.step("unrelated", kind="tool") as u:
                u.output = "x" * 40
            plan = h.state["plan"]  # in the run's body: no step reads it here
            with trajdebug.step("execute", kind="tool", input=plan):
                pass

        assert {("plan", "data", "declared")} == edges(record(body), "execute")

    def test_state_written_in_the_run_body_has_no_writer_step(self) -> None:
        """A write outside every step starts no edge: the body is not a step (docs/recording.md)."""

        def body(h: Any) -> None:
            h.state["queue"] = {"T-1": "priority"}
            with trajdebug.step("audit", kind="tool") as s:
                s.output = h.state["queue"]

        run = record(body)
        audit = next(s for s in run.steps if s.name == "audit")
        assert audit.deps == () and audit.attributes["state_reads"] == ["queue"]

    def test_a_step_reading_a_key_last_written_in_the_body_is_marked(self) -> None:
        """A step that reads a run.state key last written outside every step lists it in ``state_body_reads``;
        once a step writes the key again, its readers are not marked."""

        def body(h: Any) -> None:
            h.state["tide"] = {"harbour": "Q-3", "metres": 2.4}
            with trajdebug.step("plan_launch", kind="llm") as s:
                s.output = h.state["tide"]["metres"]
            with trajdebug.step("update_tide", kind="state"):
                h.state["tide"] = {"harbour": "Q-3", "metres": 2.9}
            with trajdebug.step("launch", kind="tool") as s:
                s.output = h.state["tide"]["metres"]

        plan, _, launch = record(body).steps
        assert plan.attributes["state_body_reads"] == ["tide"]
        assert "state_body_reads" not in launch.attributes

    def test_an_empty_start_written_in_the_body_marks_no_step_that_fills_it(self) -> None:
        """An accumulator the body starts empty (``[]``, ``0``) and steps fill is no value read from the body."""

        def body(h: Any) -> None:
            h.state["sightings"] = []
            h.state["tally"] = 0
            with trajdebug.step("count_geese", kind="tool"):
                h.state["sightings"].append("greylag")
                h.state["tally"] = h.state["tally"] + 1

        (count,) = record(body).steps
        assert "state_body_reads" not in count.attributes

    def test_a_value_the_body_overwrote_has_no_edge_to_the_step_that_wrote_it_before(self) -> None:
        """A body write replaces a step's value: the next reader neither depends on that step nor reads silently."""

        def body(h: Any) -> None:
            with trajdebug.step("draft_route", kind="llm"):
                h.state["route"] = {"via": "north gate"}
            h.state["route"] = {"via": "south gate"}
            with trajdebug.step("dispatch_van", kind="tool") as s:
                s.output = h.state["route"]["via"]

        run = record(body)
        dispatch = next(s for s in run.steps if s.name == "dispatch_van")
        assert not [d for d in dispatch.deps if d.kind == "state"]
        assert dispatch.attributes["state_body_reads"] == ["route"]

    def test_external_state_declared_reads_and_writes(self) -> None:
        """writes()/reads() of an external resource give a declared state edge."""

        def body(h: Any) -> None:
            with trajdebug.step("insert_row", kind="tool"):
                trajdebug.writes("db:orders/42")
            with trajdebug.step("unrelated", kind="tool"):
                trajdebug.writes("db:orders/43")
            with trajdebug.step("read_row", kind="tool"):
                trajdebug.reads("db:orders/42")

        assert {("insert_row", "state", "declared")} == edges(record(body), "read_row")

    def test_a_declaration_outside_every_step_is_counted_and_said_once(self, caplog: Any) -> None:
        """trajdebug.writes/reads with no recorded step and no processor's span to take them are counted as
        unrecorded, with one warning for the process (they used to do nothing, silently)."""
        from trajdebug.record import state

        saved = state._unrecorded[0]
        state._unrecorded[0] = 0
        try:
            with caplog.at_level("WARNING", logger="trajdebug"):
                trajdebug.writes("db:orders/42")
                trajdebug.reads("db:orders/42")
            assert state.unrecorded_declarations() == 2
            [warning] = [r.getMessage() for r in caplog.records if "outside every recorded step" in r.getMessage()]
            assert "trajdebug.writes('db:orders/42')" in warning
        finally:
            state._unrecorded[0] = saved


class TestControlAndEnv:
    def test_steps_under_a_branch_get_a_control_edge(self) -> None:
        """Steps started inside trajdebug.branch(decision) depend on the decision by control."""

        def body(h: Any) -> None:
            with trajdebug.step("route", kind="condition") as d:
                d.output = "escalate"
            with trajdebug.branch(d):
                count(5)
            count(6)

        run = record(body)
        under, after = [s for s in run.steps if s.name == "count"]
        route = next(s for s in run.steps if s.name == "route")
        assert [(route.step_id, "control", "declared")] == [(d.step_id, d.kind, d.origin) for d in under.deps]
        assert after.deps == ()

    def test_env_reads_link_to_the_environment_step(self) -> None:
        """A step declaring a clock read gets an env edge to the run's environment step."""

        def body(h: Any) -> None:
            with trajdebug.step("schedule", kind="tool"):
                trajdebug.uses_env("clock", value="2025-07-01T00:00:00Z")

        run = record(body, metadata={"model": "gpt-x", "seed": 3})
        env = next(s for s in run.steps if s.name == "environment")
        assert env.kind == "input"
        assert {"gpt-x", 3} == {env.output["model"], env.output["seed"]}
        sched = next(s for s in run.steps if s.name == "schedule")
        assert [(d.kind, d.key) for d in sched.deps if d.step_id == env.step_id] == [("env", "clock")]
        assert sched.attributes["env_reads"] == {"clock": "2025-07-01T00:00:00Z"}

    def test_a_run_names_the_run_it_continues(self) -> None:
        """continues= links a conversation turn to the previous one."""
        first = record(lambda h: None)
        second = record(lambda h: None, continues=first.run_id)
        assert first.run_id == second.continues


class TestDemoGraph:
    def test_demo_graph_is_connected_without_declared_deps(self) -> None:
        """Every step of the demo after the question is reachable from it by captured edges alone."""
        from trajdebug.demo import run_demo

        run = run_demo("bad-sql-filter", sinks=[MemorySink()])
        assert all(d.origin != "declared" for s in run.steps for d in s.deps)
        names = {s.step_id: s.name for s in run.steps}
        deps = {names[s.step_id]: {names.get(d.step_id) for d in s.deps} for s in run.steps}
        assert {"receive_question"} == deps["plan"]
        assert {"plan", "get_schema"} == deps["write_sql"]
        assert {"write_sql"} == deps["run_sql"]
        assert {"run_sql"} == deps["parse_rows"]
        assert {"parse_rows"} == deps["save_totals"]
        assert {"save_totals"} == deps["compute_growth"]


_NOTES = {
    "north": {"text": "the north hive swarmed twice in May and needs a super"},
    "south": {"text": "the south hive is queenless since the cold snap in April"},
}


@trajdebug.step(kind="llm")
def summarise(shelf: Any) -> str:
    return "a summary of every volume on the shelf, long enough to track"


class TestWhatAStepMadeOrChanged:
    """What a step made and stored into a container it was given, or changed in place there, is its output
    (the parts it received are taken as the step starts)."""

    def test_a_record_made_and_stored_into_the_given_container_comes_from_its_maker(self) -> None:
        """A step that builds a record, stores it into the dict it was given and returns it is the
        record's producer for a later step handed that dict."""

        @trajdebug.step(kind="tool")
        def catalogue(shelf: dict[str, Any]) -> dict[str, str]:
            rec = {"title": "a herbal of the northern fens, second printing"}
            shelf["new"] = rec
            return rec

        def body(h: Any) -> None:
            shelf: dict[str, Any] = {}
            catalogue(shelf)
            summarise(shelf)

        assert edges(record(body), "summarise") == {("catalogue", "data", "tracked")}

    def test_a_part_changed_in_place_comes_from_the_step_that_changed_it(self) -> None:
        """A step that changes a record of its input in place (a nested one too) and returns it is that
        record's producer for a later step handed the container."""

        @trajdebug.step(kind="tool")
        def mark_lent(shelf: dict[str, Any], code: str) -> dict[str, str]:
            rec = shelf[code]
            rec["state"] = "lent to the reading room until the end of term"
            return rec

        @trajdebug.step(kind="tool")
        def rate_first(state: dict[str, Any]) -> dict[str, Any]:
            row = state["rows"][0]
            row["stars"] = 4
            return row

        def body(h: Any) -> None:
            shelf = {"v1": {"state": "in"}, "v2": {"state": "in"}}
            mark_lent(shelf, "v1")
            summarise(shelf)
            state = {"rows": [{"title": "fens"}, {"title": "moors"}]}
            rate_first(state)
            summarise(state)

        run = record(body)
        by_id = run.step_map()
        got = [{by_id[d.step_id].name for d in s.deps} for s in run.steps if s.name == "summarise"]
        assert got == [{"mark_lent"}, {"rate_first"}]

