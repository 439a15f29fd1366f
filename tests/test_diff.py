"""Run alignment and the ``trajdebug diff`` command (and the ``--verify`` hook for analyze)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from trajdebug.cli import cli
from trajdebug.demo import run_demo
from trajdebug.record.sinks import MemorySink
from trajdebug.replay import align
from trajdebug.store import Store


def _pair(run_good: str | None, run_bad: str | None) -> tuple[object, object]:
    return run_demo(run_good, sinks=[MemorySink()]), run_demo(run_bad, sinks=[MemorySink()])


class TestAlign:
    """Step-by-step alignment of a passing and a failing run."""

    def test_first_divergence_is_the_injected_step(self) -> None:
        """Against a clean run, the first divergence of a bad-sql-filter run is write_sql's output."""
        good = run_demo(None, sinks=[MemorySink()])
        bad = run_demo("bad-sql-filter", sinks=[MemorySink()])
        al = align(good, bad)
        first = al.first_divergence
        assert first is not None and first.bad is not None
        assert first.bad.step_id == bad.metadata["fault"]["step_id"]
        assert first.status == "output"
        impact = {bad.step(s).name for s in al.impact(first)}
        assert {"run_sql", "parse_rows", "compute_growth"} <= impact
        only_good = {p.name for p in al.pairs if p.status == "only-good"}
        assert only_good == {"write_report", "final_answer"}

    def test_the_header_counts_the_steps_the_runs_share_and_those_one_run_has_alone(self) -> None:
        """The header counts the steps both runs have (paired), how many of those differ, and the steps one run
        has alone, so the counts add up to each run's steps (nu24, F8: "32 aligned steps" for runs of 29 and 25)."""
        from trajdebug.replay.diffview import header

        good = run_demo(None, sinks=[MemorySink()])
        bad = run_demo("bad-sql-filter", sinks=[MemorySink()])
        al = align(good, bad)
        paired = sum(1 for p in al.pairs if p.good is not None and p.bad is not None)
        assert paired + 2 == len(good.steps) and paired == len(bad.steps)
        text = " ".join(seg for seg, _ in header(al)[0])
        assert f"{paired} steps paired" in text and "2 only in the passing run" in text
        assert f"{len(al.pairs)} aligned" not in text

    def test_identical_runs_do_not_differ(self) -> None:
        """Two clean runs align with no differences and no divergence."""
        a = run_demo(None, sinks=[MemorySink()])
        b = run_demo(None, sinks=[MemorySink()])
        al = align(a, b)
        assert al.differences == [] and al.first_divergence is None
        assert len(al.pairs) == len(a.steps)

    def test_extra_retry_shows_as_only_in_the_failing_run(self) -> None:
        """A retry attempt the passing run did not need (the failed attempt that was tried again) is aligned as
        only-bad, and the last attempt pairs with the passing run's call; the rest stays matched."""
        good = run_demo(None, sinks=[MemorySink()])
        bad = run_demo("wrong-column", sinks=[MemorySink()])
        al = align(good, bad)
        extra = [p for p in al.pairs if p.status == "only-bad"]
        assert [p.name for p in extra] == ["run_sql"] and extra[0].ordinal == 0 and extra[0].bad.status == "error"
        assert [p.status for p in al.pairs if p.name == "run_sql" and p.good is not None] == ["input"]
        matched = [p for p in al.pairs if p.good is not None and p.bad is not None]
        assert all(p.good.name == p.bad.name for p in matched if p.good and p.bad)


class TestDiffCommand:
    """``trajdebug diff GOOD BAD``."""

    def test_diff_in_a_subprocess_reports_the_divergence_as_json(self, tmp_path: Path) -> None:
        """The real command, picking good and bad runs from one store, names the first divergence."""
        store = Store(tmp_path / "s.db")
        run_demo(None, store=store)
        bad = run_demo("bad-sql-filter", store=store)
        exe = Path(sys.executable).with_name("trajdebug")
        out = subprocess.run(
            [str(exe), "diff", str(tmp_path / "s.db"), str(tmp_path / "s.db"), "--json"],
            capture_output=True,
            text=True,
            check=True,
        )
        data = json.loads(out.stdout)
        assert data["bad"] == bad.run_id
        assert data["first_divergence"]["bad"] == bad.metadata["fault"]["step_id"]
        assert data["impact"]

    def test_a_state_step_shows_the_state_it_wrote(self, tmp_path: Path) -> None:
        """When a state step returns the same value in both runs, diff shows the differing state writes."""
        store = Store(tmp_path / "s.db")
        good = run_demo(None, store=store)
        bad = run_demo("stale-state", store=store)
        res = CliRunner().invoke(
            cli,
            ["diff", f"{tmp_path / 's.db'}@{good.run_id[:10]}", f"{tmp_path / 's.db'}@{bad.run_id[:10]}"],
            env={"COLUMNS": "200"},
        )
        assert 0 == res.exit_code, res.output
        first = res.output.split("first divergence:", 1)[1]
        assert "save_totals" in first.splitlines()[0]
        assert '"state written"' in first

    def test_diff_text_with_isolation(self, tmp_path: Path) -> None:
        """With --isolate, the text names the failure-inducing difference found by replay."""
        store = Store(tmp_path / "s.db")
        good = run_demo(None, store=store)
        bad = run_demo("parse-drops-items", store=store)
        res = CliRunner().invoke(
            cli,
            [
                "diff",
                f"{tmp_path / 's.db'}@{good.run_id[:10]}",
                bad.run_id[:10],
                "--store",
                str(tmp_path / "s.db"),
                "--isolate",
                "trajdebug.demo:demo_agent",
            ],
        )
        assert res.exit_code == 0, res.output
        assert "first divergence: parse_rows#" in res.output
        injected = bad.metadata["fault"]["step_id"][-6:]
        assert "failure-inducing difference (dd" in res.output and f"parse_rows#{injected}" in res.output

    def test_same_run_twice_and_unknown_run_are_errors(self, tmp_path: Path) -> None:
        """Diffing a run with itself, or naming a run the store lacks, fails with a clear message."""
        store = Store(tmp_path / "s.db")
        run = run_demo(None, store=store)
        path = str(tmp_path / "s.db")
        same = CliRunner().invoke(cli, ["diff", f"{path}@{run.run_id}", f"{path}@{run.run_id}"])
        assert same.exit_code != 0 and "same run" in same.output
        missing = CliRunner().invoke(cli, ["diff", "feedbeef", "deadbeef", "--store", path])
        assert missing.exit_code != 0 and "no run 'deadbeef'" in missing.output  # BAD is read first: GOOD is its twin


class TestVerifyOption:
    """The ``--verify`` support that ``trajdebug analyze`` plugs in."""

    def test_verify_option_verifies_the_top_candidate(self, tmp_path: Path) -> None:
        """`analyze --verify` and `analyze_source(verify=...)` verify a stored failing run's top candidate by
        replay, with corrections from a passing run of its own input (not from the clean run of another)."""
        from trajdebug.analysis import analyze
        from trajdebug.api import analyze_source
        from trajdebug.demo import verify_demo

        path = tmp_path / "s.db"
        store = Store(path)
        run_demo(None, store=store)  # passes, with other entry arguments (its own database, no fault)
        bad = run_demo("truncated-rows", store=store)
        db = bad.metadata["sqlite_db"]
        res = analyze_source(path, bad.run_id, sql_db=db, verify="trajdebug.demo:demo_agent", samples=1)
        [v] = res.verifications
        assert v is not None and v.verified is None and v.passing_run is None
        assert "could not verify: no passing run of the same input" in v.summary()
        verify_demo(bad, analyze(bad), store=store)  # records the fault-free run of bad's own input
        res = analyze_source(path, bad.run_id, sql_db=db, verify="trajdebug.demo:demo_agent", samples=1)
        [v] = res.verifications
        assert v is not None and v.summary().startswith(
            f"verified by replay: patching run_sql#{bad.metadata['fault']['step_id'][-6:]}"
        )
        out = CliRunner().invoke(
            cli,
            [
                "analyze",
                str(path),
                "--run",
                bad.run_id,
                "--sql-db",
                db,
                "--verify",
                "trajdebug.demo:demo_agent",
                "--samples",
                "1",
                "--json",
            ],
        )
        assert out.exit_code == 0, out.output
        assert json.loads(out.stdout)["runs"][0]["verification"]["candidates"][0]["status"] == "verified"
        bad_spec = CliRunner().invoke(cli, ["analyze", str(path), "--verify", "no_such_module_xyz:main"])
        assert bad_spec.exit_code != 0 and "cannot import module" in bad_spec.output


def _graph_run(day: int, off_by_one: bool) -> object:
    """A real LangGraph pipeline (resolve a date, book it, confirm, verify), traced by TrajdebugTracer.

    Nodes pass values through the graph's state, so the trace records which node encloses which
    but no data edge between nodes.
    """
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    from trajdebug.integrations.langchain import TrajdebugTracer

    class S(TypedDict, total=False):
        day: int
        date: str
        booking: str
        message: str

    def resolve(state: S) -> S:
        return {"date": f"2025-04-{state['day'] + (1 if off_by_one else 0):02d}"}

    def book(state: S) -> S:
        return {"booking": f"BK-{state['date']}"}

    def confirm(state: S) -> S:
        return {"message": f"booked {state['booking']}"}

    def verify(state: S) -> S:
        if not state["booking"].endswith(f"-{state['day']:02d}"):
            raise ValueError(f"booked {state['booking']}, asked for day {state['day']}")
        return {}

    g = StateGraph(S)
    order = [("resolve", resolve), ("book", book), ("confirm", confirm), ("verify", verify)]
    for name, fn in order:
        g.add_node(name, fn)
    g.add_edge(START, "resolve")
    for (a, _), (b, _) in itertools.pairwise(order):
        g.add_edge(a, b)
    g.add_edge("verify", END)
    tracer = TrajdebugTracer(name="scheduler")
    try:
        g.compile().invoke({"day": day}, config={"callbacks": [tracer]})
    except ValueError:
        pass
    return tracer.to_run()


def test_downstream_impact_of_a_graph_node_lists_the_nodes_after_it() -> None:
    """In a LangGraph trace, the impact of the first divergence is the nodes that read its value, not the graph."""
    good, bad = _graph_run(1, False), _graph_run(1, True)
    al = align(good, bad)  # type: ignore[arg-type]
    first = al.first_divergence
    assert first is not None and first.name.endswith("resolve")
    names = [bad.step(s).name for s in al.impact(first)]  # type: ignore[attr-defined]
    assert {"book", "confirm", "verify"} <= set(names)
    assert "LangGraph" not in names and "resolve" not in names


def test_diff_caps_the_impact_it_names(tmp_path: Path) -> None:
    """The terminal names at most eight impacted steps and says how many more the JSON lists."""
    import trajdebug
    from trajdebug.replay.diffview import IMPACT_SHOWN

    path = tmp_path / "runs.jsonl"
    for bad in (False, True):
        with trajdebug.run("chain", path=path) as r:
            with trajdebug.step("source", kind="tool") as s:
                s.output = {"value": "x-bad-value-long-enough" if bad else "x-good-value-long-enough"}
            value = s.output
            for i in range(12):
                with trajdebug.step(f"use{i}", kind="other", input=value, deps=[s]) as u:
                    u.output = i
            if bad:
                r.fail("wrong value")
    out = " ".join(CliRunner().invoke(cli, ["diff", str(path), str(path)]).output.split())
    line = out.split("downstream impact: ", 1)[1].split(" more", 1)[0]
    assert line.startswith("12 steps") and line.endswith(f"and {12 - IMPACT_SHOWN}")
    assert line.count("use") == IMPACT_SHOWN
    data = json.loads(CliRunner().invoke(cli, ["diff", str(path), str(path), "--json"]).output)
    assert len(data["impact"]) == 12


def test_a_first_divergence_in_the_request_alone_shows_the_requests(tmp_path: Path) -> None:
    """When the runs first differ in a step's request while its answer is the same (runs of different
    inputs), the first divergence shows the two requests, not two equal outputs."""
    import trajdebug

    path = tmp_path / "runs.jsonl"
    for beds in ("roses,tulips", "roses,lilies"):
        with trajdebug.run("garden", path=path) as r:
            with trajdebug.step("pick_tool", kind="llm", input={"beds": beds}) as s:
                s.output = {"tool": "read_soil"}
            with trajdebug.step("read_soil", kind="tool", input=s.output) as t:
                t.output = {"moisture": 40 if "tulips" in beds else 4}
            if "lilies" in beds:
                r.fail("too dry")
    out = CliRunner().invoke(cli, ["diff", str(path), str(path)]).output
    first = out.split("first divergence:", 1)[1].split("\n\n", 1)[0]
    assert "request differs" in first
    assert 'good request: {"beds":"roses,tulips"}' in first and 'bad request:  {"beds":"roses,lilies"}' in first


def _priced_runs(path: Path) -> tuple[object, object]:
    """Two runs of a greenhouse-heating quote: an agent step that encloses a tariff lookup and works out the
    cost itself; in the failing run its own arithmetic is off (kWh taken as Wh), the lookup answers alike."""
    import trajdebug

    def quote(factor: float) -> object:
        with (
            trajdebug.run("heating-quote", path=str(path)) as run,
            trajdebug.step("price_heating", kind="agent", input={"kwh": 820}) as agent,
        ):
            with trajdebug.step("tariff", kind="tool", input={"zone": "north"}) as t:
                t.output = {"eur_per_kwh": 0.31}
            agent.output = {"cost_eur": round(820 * factor * t.output["eur_per_kwh"], 2)}
        return run.load()

    return quote(1.0), quote(1000.0)


def test_an_enclosing_step_whose_inner_steps_all_matched_is_where_the_runs_diverge(tmp_path: Path) -> None:
    """A step that encloses others, given the same request, whose inner steps all answered alike but whose own
    output differs computed the difference itself: it is the first divergence and an origin."""
    good, bad = _priced_runs(tmp_path / "runs.jsonl")
    al = align(good, bad)  # type: ignore[arg-type]
    first = al.first_divergence
    assert first is not None and first.name == "price_heating" and first.status == "output"
    assert [p.name for p in al.origins] == ["price_heating"]


def test_an_enclosing_step_is_judged_by_its_own_runs_steps_when_step_ids_repeat_across_runs() -> None:
    """Two runs numbering their steps "1", "2", "3" alike: the failing run's extra call inside the enclosing
    step is the first divergence, not the enclosing step (the passing run's matched "2" does not stand for the
    failing run's extra "2")."""
    from trajdebug.core.model import Run, Step

    good = Run("g", "ferry-desk", outcome="success", steps=(
        Step("1", "book_crossing", "agent", input={"car": "KL-4"}, output={"berth": "upper"}, start_ns=1, end_ns=9),
        Step("2", "deck_plan", "tool", parent_id="1", input={"sailing": 12}, output={"free": 3}, start_ns=2, end_ns=3),
    ))
    bad = Run("b", "ferry-desk", outcome="failure", steps=(
        Step("1", "book_crossing", "agent", input={"car": "KL-4"}, output={"berth": "none"}, start_ns=1, end_ns=9),
        Step("2", "cancel_hold", "tool", parent_id="1", input={"sailing": 12}, output={"free": 3}, start_ns=2, end_ns=3),
        Step("3", "deck_plan", "tool", parent_id="1", input={"sailing": 12}, output={"free": 3}, start_ns=4, end_ns=5),
    ))
    al = align(good, bad)
    first = al.first_divergence
    assert first is not None and first.name == "cancel_hold" and first.status == "only-bad"
    assert "book_crossing" not in [p.name for p in al.origins]


def test_align_ends_on_steps_that_are_their_own_ancestors() -> None:
    """A hand-written file whose two steps name each other as parent (loaded with a warning) still aligns:
    the walk inside an enclosing step visits each step once."""
    from trajdebug.core.model import Run, Step

    def kiln(glaze: int, outcome: str) -> Run:
        return Run(outcome, "kiln-log", outcome=outcome, steps=(  # type: ignore[arg-type]
            Step("a", "fire", "agent", parent_id="b", input={"cone": 6}, output={"glaze": glaze}, start_ns=1, end_ns=9),
            Step("b", "vent", "agent", parent_id="a", input={"cone": 6}, output={"glaze": glaze}, start_ns=2, end_ns=8),
        ))

    al = align(kiln(1, "success"), kiln(2, "failure"))
    assert {p.status for p in al.pairs} == {"output"}


def test_diff_shows_two_long_outputs_where_they_first_differ(tmp_path: Path) -> None:
    """Two long outputs alike for more than a line are shown from shortly before where they differ, not cut at
    a head they share (which reads as no difference)."""
    import trajdebug

    path = tmp_path / "runs.jsonl"
    head = {f"bed_{i}": "tomatoes, drip line, checked" for i in range(8)}
    ids = []
    for last in ("cucumbers", "CUCUMBERS-WILTED"):
        with (
            trajdebug.run("greenhouse-beds", path=str(path)) as run,
            trajdebug.step("survey", kind="tool", input={"house": "east"}) as s,
        ):
            s.output = {**head, "bed_9": last}
        ids.append(run.run_id)
    trajdebug.mark(str(path), ids[1], failed="a bed wilted")
    out = CliRunner().invoke(cli, ["diff", f"{path}@{ids[0]}", f"{path}@{ids[1]}"])
    assert out.exit_code == 0, out.output
    flat = " ".join(out.output.split())
    assert "CUCUMBERS-WILTED" in flat and "cucumbers" in flat


def test_a_step_that_read_a_different_state_value_is_a_consequence_not_an_origin(tmp_path: Path) -> None:
    """A step takes no argument and reads run.state: when the value it read differs, its request differs
    ("input"), and the first divergence is the step that wrote the value, not the reader."""
    import trajdebug

    newest = {"index": -1}  # the planted fault: the failing run reads the oldest level

    @trajdebug.step(kind="parse")
    def read_gauge(raw: dict) -> dict:
        trajdebug.current_run().state["level"] = raw["levels"][newest["index"]]
        return {"level": trajdebug.current_run().state["level"]}

    @trajdebug.step(kind="other")
    def plan_release() -> dict:
        return {"open_gates": 2 if trajdebug.current_run().state["level"] > 5 else 0}

    ids = []
    for index in (-1, 0):
        newest["index"] = index
        with trajdebug.run("dam", store=str(tmp_path / "dam.db")) as run:
            read_gauge({"levels": [1.5, 7.25]})
            plan_release()
        ids.append(run.run_id)
    good, bad = (next(r for r in trajdebug.load_runs(str(tmp_path / "dam.db")) if r.run_id == i) for i in ids)
    al = align(good, bad)
    assert [(p.name, p.status) for p in al.pairs] == [("read_gauge", "output"), ("plan_release", "input")]
    assert al.first_divergence is not None and al.first_divergence.name == "read_gauge"


def test_a_state_writer_with_values_recorded_on_one_side_only_leaves_its_reader_an_origin() -> None:
    """A writer whose state values only one run recorded (an older recording, a foreign import) says nothing
    about what its reader read: a reader with the same arguments whose output differs is still "output"
    (an origin), not "input"."""
    from trajdebug.core.model import Dependency, Run, Step
    from trajdebug.replay.cassette import STATE_VALUES_ATTR

    def dam(rid: str, recorded: bool, plan: str) -> Run:
        attrs = {STATE_VALUES_ATTR: {"level": 7.25}} if recorded else {}
        return Run(rid, "dam", outcome="success" if plan == "hold" else "failure", steps=(
            Step("w", "read_gauge", "parse", input={"raw": "7.25"}, output={"ok": True}, attributes=attrs),
            Step("p", "plan_release", "other", input={}, output=plan, deps=(Dependency("w", kind="state", key="level"),)),
        ))

    al = align(dam("g", True, "hold"), dam("b", False, "open 2 gates"))
    assert [(p.name, p.status) for p in al.pairs] == [("read_gauge", "same"), ("plan_release", "output")]


def test_a_model_call_that_differs_only_in_its_minted_tool_call_id_is_no_divergence() -> None:
    """Two runs whose model asked for the same tool with the same arguments align as the same steps, though the
    provider minted other call ids (in the answer, and in the next call's history): the first divergence is the
    model call that answered otherwise."""
    from trajdebug.core.model import Run, Step

    def run(rid: str, call_id: str, depth: float) -> Run:
        ask = {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "name": "sound_depth", "arguments": {"buoy": "N3"}}]}
        user = {"role": "user", "content": "depth at N3?"}
        said = [user, ask, {"role": "tool", "tool_call_id": call_id, "content": '{"metres": 7.5}'}]
        return Run(
            rid,
            "harbour-pilot",
            steps=(
                Step(rid + "1", "plan", kind="llm", input={"messages": [user]}, output=ask),
                Step(rid + "2", "sound_depth", kind="tool", input={"buoy": "N3"}, output={"metres": 7.5}),
                Step(rid + "3", "answer", kind="llm", input={"messages": said}, output=f"{depth} m at N3"),
            ),
        )

    al = align(run("g", "call_4_0", 7.5), run("b", "call_19_0", 2.5))
    # (the history's tool_call_id is minted too: the second call was asked the same thing)
    assert [p.status for p in al.pairs] == ["same", "same", "output"]
    assert al.first_divergence is not None and al.first_divergence.name == "answer"


def test_a_model_record_whose_type_differs_is_where_the_runs_diverge() -> None:
    """A model call asked the same thing that answered with a record of another ``type`` (a field of its answer,
    not of the envelope) is the first divergence, an origin; the steps given that record differ in their input."""
    from trajdebug.core.model import Run, Step

    def run(rid: str, kind: str) -> Run:
        asked = {"messages": [{"role": "user", "content": "the lamp flickers, send a new one"}]}
        return Run(
            rid,
            "lamp-desk",
            steps=(
                Step(rid + "1", "sort_ticket", kind="llm", input=asked, output={"type": kind, "id": "LM-12"}),
                Step(rid + "2", "open_ticket", kind="tool", input={"type": kind, "id": "LM-12"}, output={"ticket": "T-4"}),
            ),
        )

    al = align(run("g", "replace"), run("b", "repair"))
    assert [(p.name, p.status) for p in al.pairs] == [("sort_ticket", "output"), ("open_ticket", "input")]
    assert al.first_divergence is not None and al.first_divergence.name == "sort_ticket"


def test_a_model_call_asked_of_another_model_or_with_another_late_tool_result_differs_in_its_input() -> None:
    """A request naming another model, or whose long history holds another tool result far down, was asked
    something else: the call differs in its input (a consequence), not in its answer alone."""
    from trajdebug.core.model import Run, Step

    def run(rid: str, model: str, reading: str, answer: str) -> Run:
        history: list[dict[str, object]] = [{"role": "user", "content": f"sensor line {i}"} for i in range(240)]
        history.append({"role": "tool", "tool_call_id": f"call_{rid}", "content": reading})
        asked = {"model": model, "temperature": 0, "messages": history}
        return Run(rid, "kiln-watch", steps=(Step(rid + "1", "summarize", kind="llm", input=asked, output=answer),))

    good = run("g", "model-large", "kiln at 900 C", "all normal")
    assert [p.status for p in align(good, run("b", "model-small", "kiln at 900 C", "kiln cold")).pairs] == ["input"]
    assert [p.status for p in align(good, run("b", "model-large", "kiln at 1400 C", "kiln hot")).pairs] == ["input"]
    assert [p.status for p in align(good, run("b", "model-large", "kiln at 1400 C", "all normal")).pairs] == ["input"]
    assert [p.status for p in align(good, run("b", "model-large", "kiln at 900 C", "all normal")).pairs] == ["same"]


def _kiln_runs(path: Path, ports: tuple[int, int]) -> None:
    """Two runs of a kiln-firing scheduler that reads a local stub service on a fresh port each time; the
    failing run's schedule step is handed a default the run's body set where the stub's error was caught."""
    import trajdebug

    for port, peak in zip(ports, (1222, 1300), strict=True):
        with trajdebug.run("kiln-firing", path=path) as r:
            with trajdebug.step("read_cone", kind="tool", input={"url": f"http://127.0.0.1:{port}/cone/6"}) as t:
                t.output = {"cone": 6, "status": "ok"}
            with trajdebug.step("schedule", kind="other", input={"cone": t.output, "peak_c": peak}) as s:
                s.output = {"peak_c": peak, "hold_min": 10}
            if peak > 1250:
                r.fail(f"peak {peak} C above cone 6")


def test_a_loopback_port_is_no_difference_between_two_runs(tmp_path: Path) -> None:
    """A request naming a server on this machine differs only by the free port it took in each run: the step
    is the same in both runs, and the first divergence is the step whose request really changed."""
    path = tmp_path / "runs.jsonl"
    _kiln_runs(path, (38211, 40977))
    out = CliRunner().invoke(cli, ["diff", str(path), str(path)]).output
    assert "first divergence: schedule#" in out


def test_a_first_divergence_in_the_request_says_it_changed_outside_the_steps(tmp_path: Path) -> None:
    """When the first step that differs differs in its request, no recorded step made the change, and diff
    says so (the run's input, or code between steps such as a caught error's default)."""
    path = tmp_path / "runs.jsonl"
    _kiln_runs(path, (38211, 38211))
    out = CliRunner().invoke(cli, ["diff", str(path), str(path)]).output
    assert "no recorded step before it differs" in " ".join(out.split())


def test_a_fixed_loopback_port_that_changed_is_a_difference(tmp_path: Path) -> None:
    """A fixed port below the range an operating system hands out for port 0 is chosen by the agent's
    configuration: a run that reads the stub on 8081 instead of 8080 diverges at that step."""
    path = tmp_path / "runs.jsonl"
    _kiln_runs(path, (8080, 8081))
    out = CliRunner().invoke(cli, ["diff", str(path), str(path)]).output
    assert "first divergence: read_cone#" in out


def _quote_runs(path: Path, jobs: tuple[tuple[str, tuple[str, ...], bool], ...]) -> list[str]:
    """Runs of a bike-shop quote agent, one per ``(ticket, parts, planted)``: an input step (the ticket), a
    parts parser (``planted``: it drops the last part), one price lookup per part, a labour-rate lookup that
    depends on the parse (declared) but is asked and answers the same whatever the parts, and the total; a run
    whose total is wrong fails."""
    import trajdebug
    from trajdebug.testing import deterministic

    ids = []
    for n, (ticket, parts, planted) in enumerate(jobs):
        # Each run numbers its steps from 1, as runs recorded by separate processes do.
        with deterministic(prefix=f"{n + 1:08x}"), trajdebug.run("bike-quote", path=str(path), task=f"quote ticket {ticket}") as r:
            with trajdebug.step("receive_ticket", kind="input") as t:
                t.output = {"ticket": ticket, "parts": ",".join(parts)}
            with trajdebug.step("parse_parts", kind="parse", input=t.output) as p:
                p.output = list(parts[:-1] if planted else parts)
            prices = []
            for part in p.output:
                with trajdebug.step("lookup_price", kind="tool", input={"part": part}) as lp:
                    lp.output = {"part": part, "eur": 10.0 + len(part)}
                prices.append(lp.output["eur"])
            with trajdebug.step("labour_rate", kind="tool", input={"service": "full"}, deps=[p]) as lr:
                lr.output = {"eur_per_hour": 45.0}
            with trajdebug.step("total", kind="other", input={"prices": prices, "rate": lr.output}) as tot:
                tot.output = {"eur": sum(prices) + 45.0}
            if planted:
                r.fail(f"quote for {ticket} leaves out {parts[-1]}")
        ids.append(r.run_id)
    return ids


def test_a_diff_of_runs_given_different_inputs_says_so_and_never_calls_their_requests_the_same(tmp_path: Path) -> None:
    """Two runs given different tasks: the header says so in one line (this compares behaviour, not values);
    the first divergence, the input step, is the run's input that differs, not "same request, different
    output"; the JSON says it too.  Two runs of the same input have no such line."""
    path = tmp_path / "quotes.jsonl"
    good, same, bad = _quote_runs(
        path, (("T-9", ("chain", "tape"), False), ("T-12", ("chain", "cable", "pads"), False), ("T-12", ("chain", "cable", "pads"), True))
    )
    out = CliRunner().invoke(cli, ["diff", f"{path}@{good}", f"{path}@{bad}"], env={"COLUMNS": "200"}).output
    lines = out.splitlines()
    assert lines[1] == "inputs differ: task 'quote ticket T-9' vs 'quote ticket T-12'; this compares behaviour, not values"
    first = lines[2]
    assert first.startswith("first divergence: receive_ticket#") and first.endswith("the run's input differs")
    assert "same request" not in out.split("\n\n", 1)[0]
    assert 'good input: {"parts":"chain,tape","ticket":"T-9"}' in out
    doc = json.loads(CliRunner().invoke(cli, ["diff", f"{path}@{good}", f"{path}@{bad}", "--json"]).output)
    assert doc["inputs_differ"] == {"what": "task", "good": "quote ticket T-9", "bad": "quote ticket T-12"}
    assert doc["first_divergence"]["status"] == "input"
    alike = CliRunner().invoke(cli, ["diff", f"{path}@{same}", f"{path}@{bad}"], env={"COLUMNS": "200"}).output
    assert "inputs differ" not in alike and "first divergence: parse_parts#" in alike
    assert json.loads(CliRunner().invoke(cli, ["diff", f"{path}@{same}", f"{path}@{bad}", "--json"]).output)[
        "inputs_differ"
    ] is None


def test_downstream_impact_lists_only_steps_that_changed(tmp_path: Path) -> None:
    """A step downstream of the first divergence that came out the same in both runs (the labour rate, which
    depends on the parse but was asked and answered alike) is marked ``=`` and is not in the downstream impact,
    in the text or the JSON."""
    path = tmp_path / "quotes.jsonl"
    good, bad = _quote_runs(path, (("T-12", ("chain", "cable", "pads"), False), ("T-12", ("chain", "cable", "pads"), True)))
    al = align(*(r for i in (good, bad) for r in trajdebug_runs(path) if r.run_id == i))
    first = al.first_divergence
    assert first is not None and first.name == "parse_parts"
    same = {p.bad.step_id for p in al.pairs if p.status == "same" and p.bad is not None}
    impact = al.impact(first)
    assert [al.bad.step(s).name for s in impact] == ["total"] and not same & set(impact)
    out = " ".join(CliRunner().invoke(cli, ["diff", f"{path}@{good}", f"{path}@{bad}"], env={"COLUMNS": "200"}).output.split())
    assert "downstream impact: 1 step: total#" in out
    assert "= tool labour_rate#" in out
    doc = json.loads(CliRunner().invoke(cli, ["diff", f"{path}@{good}", f"{path}@{bad}", "--json"]).output)
    assert doc["impact"] == impact


def test_a_step_only_one_run_has_is_named_with_its_runs_id(tmp_path: Path) -> None:
    """Ids are per run: the passing run's extra lookup has the id the failing run gave its labour-rate step.
    The one-sided row names its run (``good#ID``), the paired row has the failing run's id, and a line says
    whose ids the table shows."""
    path = tmp_path / "quotes.jsonl"
    good, bad = _quote_runs(path, (("T-12", ("chain", "cable", "pads"), False), ("T-12", ("chain", "cable", "pads"), True)))
    out = CliRunner().invoke(cli, ["diff", f"{path}@{good}", f"{path}@{bad}"], env={"COLUMNS": "200"}).output
    rows = [line.split() for line in out.splitlines() if line.startswith("  ") and line.split()[0] in "=≠~-+"]
    extra = next(r for r in rows if r[0] == "-")
    rate = next(r for r in rows if r[2].startswith("labour_rate#"))
    assert extra[2] == "lookup_price" and extra[3].startswith("good#")
    assert extra[3].removeprefix("good#") == rate[2].split("#")[1]  # the same six digits, two runs' steps
    assert "step ids are the failing run's; good#ID is the passing run's" in out


def test_a_row_whose_request_differs_shows_the_requests(tmp_path: Path) -> None:
    """A row labelled "request differs" shows the two requests (what the total was given), not its outputs;
    a row whose output alone differs shows the outputs."""
    path = tmp_path / "quotes.jsonl"
    good, bad = _quote_runs(path, (("T-12", ("chain", "cable", "pads"), False), ("T-12", ("chain", "cable", "pads"), True)))
    out = CliRunner().invoke(cli, ["diff", f"{path}@{good}", f"{path}@{bad}"], env={"COLUMNS": "250"}).output
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "total#" in line and "request differs" in line)
    assert lines[at + 1].split() == ["good", "request:", '{"prices":[15.0,15.0,14.0],"rate":{"eur_per_hour":45.0}}']
    assert lines[at + 2].split() == ["bad", "request:", '{"prices":[15.0,15.0],"rate":{"eur_per_hour":45.0}}']
    parsed = next(i for i, line in enumerate(lines) if "parse_parts#" in line and line.startswith("  ≠"))
    assert lines[parsed + 1].split() == ["good:", '["chain","cable","pads"]']


def trajdebug_runs(path: Path) -> list[object]:
    """The runs of a JSONL file."""
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def _quoter_runs(path: Path, messages: tuple[tuple[str, bool], ...], *, task: bool, envelope: bool) -> list[str]:
    """Runs of a small quoting agent, one per ``(message, planted)``: an input step (the user's message, read by
    the step itself: no arguments), a price lookup on it and the answer (``planted``: one too many).  ``task``:
    the run states the message as its task; ``envelope``: the input step also records what every request gets
    anew (a request id, the time it came in)."""
    import uuid

    import trajdebug

    ids = []
    for message, planted in messages:
        with trajdebug.run("quoter", path=str(path), task=message if task else None) as r:
            with trajdebug.step("read_message", kind="input") as m:
                m.output = {"text": message, "request_id": uuid.uuid4().hex[:8]} if envelope else message
            text = m.output["text"] if envelope else m.output
            with trajdebug.step("lookup", kind="tool", input={"q": text}) as lk:
                lk.output = {"price": 10 if "T-1" in text else 20}
            with trajdebug.step("answer", kind="llm", input={"p": lk.output}) as a:
                a.output = f"price {lk.output['price'] + (1 if planted else 0)}"
            if planted:
                r.fail("wrong: " + a.output)
        ids.append(r.run_id)
    return ids


def test_diff_and_analyze_agree_on_what_the_same_input_is(tmp_path: Path) -> None:
    """Two runs stating the same task whose input step also records a request id: ``analyze`` pairs them as runs
    of the same input (its ``diff`` hint), and ``diff`` does not say their inputs differ (one definition of the
    same input, `trajdebug.analysis.reference.same_request`); on another task both say they differ."""
    from trajdebug.api import analyze_source

    path = tmp_path / "runs.jsonl"
    good, bad = _quoter_runs(path, (("price of T-2", False), ("price of T-2", True)), task=True, envelope=True)
    result = analyze_source(path)
    assert result.twins[0] is not None and result.twins[0].run_id == good
    out = CliRunner().invoke(cli, ["diff", f"{path}@{good}", f"{path}@{bad}"], env={"COLUMNS": "200"}).output
    assert "inputs differ" not in out and "the run's input differs" not in out
    doc = json.loads(CliRunner().invoke(cli, ["diff", f"{path}@{good}", f"{path}@{bad}", "--json"]).output)
    assert doc["inputs_differ"] is None
    other = tmp_path / "other.jsonl"
    good2, bad2 = _quoter_runs(other, (("price of T-1", False), ("price of T-2", True)), task=True, envelope=True)
    assert analyze_source(other).twins == (None,)
    doc = json.loads(CliRunner().invoke(cli, ["diff", f"{other}@{good2}", f"{other}@{bad2}", "--json"]).output)
    assert doc["inputs_differ"] == {"what": "task", "good": "price of T-1", "bad": "price of T-2"}


def test_an_input_step_of_runs_of_the_same_input_is_an_origin_and_rows_show_requests_and_outputs(
    tmp_path: Path,
) -> None:
    """Runs that state no input (no task, a first step given nothing: never the same input for the analysis) whose input step
    read another message: that step, same request and another output, is an origin with status ``output`` as
    before (the JSON's ``origins`` and ``first_divergence``: what ``--isolate`` starts from); a row whose request
    differs (``~``) shows the two requests and, since they differ too, the two outputs."""
    path = tmp_path / "runs.jsonl"
    good, bad = _quoter_runs(path, (("price of T-1", False), ("price of T-2", True)), task=False, envelope=False)
    doc = json.loads(CliRunner().invoke(cli, ["diff", f"{path}@{good}", f"{path}@{bad}", "--json"]).output)
    first = doc["first_divergence"]
    assert first["name"] == "read_message" and first["status"] == "output" and doc["origins"] == [first["bad"]]
    assert doc["inputs_differ"] is None
    out = CliRunner().invoke(cli, ["diff", f"{path}@{good}", f"{path}@{bad}"], env={"COLUMNS": "200"}).output
    lines = out.splitlines()
    assert lines[1].startswith("first divergence: read_message#") and "different output" in lines[1]
    assert "input differs" not in lines[1]
    at = next(i for i, line in enumerate(lines) if line.startswith("  ~") and "lookup#" in line)
    assert [line.split() for line in lines[at + 1 : at + 5]] == [
        ["good", "request:", '{"q":"price', "of", 'T-1"}'],
        ["bad", "request:", '{"q":"price', "of", 'T-2"}'],
        ["good:", '{"price":10}'],
        ["bad:", '{"price":20}'],
    ]


def test_the_table_reads_each_runs_steps_by_id_once(tmp_path: Path, monkeypatch: Any) -> None:
    """Rows whose request differs by the state they read look the writer up in each run's steps by id, built
    once for the whole table, not once per row."""
    from trajdebug.core.model import Dependency, Outcome, Run, Step
    from trajdebug.replay.cassette import STATE_VALUES_ATTR
    from trajdebug.replay.diffview import diff_lines

    def run(rid: str, outcome: Outcome, off: int) -> Run:
        steps = [
            Step(f"s{i}", f"step{i}", "other", input={"i": i}, output={"ok": True},
                 attributes={STATE_VALUES_ATTR: {"x": i + off}},
                 deps=(Dependency(f"s{i - 1}", "state", key="x"),) if i else (), start_ns=i + 1, end_ns=i + 2)
            for i in range(60)
        ]
        return Run(rid, "agent", outcome=outcome, steps=tuple(steps))

    al = align(run("g", "success", 0), run("b", "failure", 1))
    assert sum(p.status == "input" for p in al.pairs) == 59
    built = []
    step_map = Run.step_map

    def counted(self: Run) -> dict[str, Step]:
        built.append(self.run_id)
        return step_map(self)

    monkeypatch.setattr(Run, "step_map", counted)
    lines = diff_lines(al)
    assert sum("state read" in "".join(t for t, _ in line) for line in lines) >= 2 * 59
    assert len(built) <= 6


def test_a_step_that_raised_reads_alike_whatever_its_route_recorded_as_its_output() -> None:
    """A check that raised shows "nothing: it raised" in the diff, and ``null`` in the JSON, whether its route
    recorded None (trajdebug's recorder) or an empty update (the LangChain tracer's ``{}`` for a LangGraph
    node), never ``{}`` that reads as a value it returned (issue 23, nu23)."""
    from tests.builders import step

    from trajdebug.core.model import ErrorInfo, Run
    from trajdebug.replay.diffview import RAISED, values

    def runs(placeholder: object) -> tuple[Run, Run]:
        def one(total: float, raised: bool) -> Run:
            err = ErrorInfo("ValueError", "quote exceeds the estimate") if raised else None
            return Run(
                "r-bad" if raised else "r-good",
                "dispatch",
                steps=(
                    step("est", "compute_estimate", "other", 1, {"job": "J-1"}, {"total": total}),
                    step("chk", "verify_quote", "condition", 2, {"total": total}, placeholder if raised else {}, "est", error=err),
                ),
                outcome="failure" if raised else "success",
            )

        return one(465.5, False), one(315.5, True)

    for placeholder in (None, {}):
        good, bad = runs(placeholder)
        al = align(good, bad)
        [pair] = [p for p in al.pairs if p.name == "verify_quote"]
        rows = dict(values(al, pair, 160))
        assert rows["bad:"] == f"{RAISED} ValueError" and rows["good:"] == "{}"
        assert pair.to_dict()["bad_output"] is None


def test_a_step_whose_error_was_recorded_without_raising_shows_what_it_returned() -> None:
    """A ``with`` block that overran its timeout is recorded with a timeout error but did not raise: the diff
    shows the empty list it returned, in the JSON too, and says the error was recorded, not raised (round 50
    review: it read "nothing: it raised")."""
    from tests.builders import step

    from trajdebug.core.model import ErrorEvent, ErrorInfo, Run
    from trajdebug.replay.diffview import RAISED, first_divergence, values

    def one(bad: bool) -> Run:
        err = ErrorInfo("ToolTimeout", "search_hotels ran 0.12 s, past its timeout of 0.05 s", "e-1") if bad else None
        events = (ErrorEvent("e-1", "srch", "ToolTimeout", "overran", attributes={"reported": True}),) if bad else ()
        return Run(
            "r-bad" if bad else "r-good",
            "hotels",
            steps=(
                step("req", "load_request", "input", 1, {"city": "Ghent"}, {"city": "Ghent"}),
                step("srch", "search_hotels", "tool", 2, {"city": "Ghent"}, [], "req", error=err),
            ),
            errors=events,
            outcome="failure" if bad else "success",
        )

    al = align(one(False), one(True))
    [pair] = [p for p in al.pairs if p.name == "search_hotels"]
    assert dict(values(al, pair, 160))["bad:"] == "[]"
    assert al.to_dict()["first_divergence"]["bad_output"] == []
    text = " ".join("".join(t for t, _ in line) for line in first_divergence(al))
    assert "(recorded, did not raise)" in text and RAISED not in text


def test_runs_that_state_no_input_are_never_paired_as_runs_of_the_same_input(tmp_path: Path) -> None:
    """Runs with no task whose input step takes no argument (it reads the message itself) state no input:
    ``analyze`` pairs no passing run with the failing one as a run of its input (no ``diff`` hint, no
    ``same_input`` in its JSON, no passing run answering for ``--guided``), and ``diff`` does not say their
    inputs differ, since nothing says what either was given (review rev51u M1: such runs read as the same
    input whatever they were asked)."""
    from trajdebug.api import analyze_source

    path = tmp_path / "runs.jsonl"
    good, bad = _quoter_runs(path, (("price of T-1", False), ("price of T-2", True)), task=False, envelope=False)
    result = analyze_source(path)
    assert result.twins == (None,) and not [h for h in result.hints if "trajdebug diff" in h]
    doc = json.loads(CliRunner().invoke(cli, ["analyze", str(path), "--json"]).output)
    assert doc["runs"][0]["references"] and doc["runs"][0]["same_input"] == []
    doc = json.loads(CliRunner().invoke(cli, ["diff", f"{path}@{good}", f"{path}@{bad}", "--json"]).output)
    assert doc["inputs_differ"] is None


def _rooms_graph(factor_of: dict[str, int]) -> object:
    """A real LangGraph loop traced by TrajdebugTracer: ``room_load`` works out one room's load, and its
    conditional edge ``more_rooms`` (which the tracer nests under the node) reads the node's update to route
    back or on.  ``factor_of`` is the node's lookup table: a key missing in the failing run makes the room 0 W."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    from trajdebug.integrations.langchain import TrajdebugTracer

    class S(TypedDict, total=False):
        rooms: list[dict[str, Any]]
        idx: int
        loads: list[float]
        total: float

    def room_load(state: S) -> S:
        room = state["rooms"][state["idx"]]
        return {"loads": [*state["loads"], room["m2"] * factor_of.get(room["side"], 0)], "idx": state["idx"] + 1}

    def more_rooms(state: dict[str, Any]) -> str:
        return "room_load" if state["idx"] < len(state["rooms"]) else "total"

    def total(state: S) -> S:
        return {"total": sum(state["loads"])}

    g = StateGraph(S)
    g.add_node("room_load", room_load)
    g.add_node("total", total)
    g.add_edge(START, "room_load")
    g.add_conditional_edges("room_load", more_rooms, ["room_load", "total"])
    g.add_edge("total", END)
    tracer = TrajdebugTracer(name="heat-load", task="size house H-7")
    rooms = [{"m2": 20, "side": "south"}, {"m2": 12, "side": "North"}, {"m2": 9, "side": "east"}]
    g.compile().invoke({"rooms": rooms, "idx": 0, "loads": []}, config={"callbacks": [tracer]})
    return tracer.to_run()


def test_a_graph_node_whose_routing_function_is_asked_otherwise_is_the_first_divergence(tmp_path: Path) -> None:
    """A LangGraph node given the same state whose update differs is where two runs of the same input diverge,
    not the routing function the tracer nests under it: the routing function's request is the node's update."""
    table = {"south": 70, "north": 95, "east": 80}
    good, bad = _rooms_graph({**table, "North": 95}), _rooms_graph(table)
    al = align(good, bad)  # type: ignore[arg-type]
    first = al.first_divergence
    assert first is not None and first.name == "room_load" and first.status == "output"
    assert first.bad is not None and first.bad.output["loads"] == [1400, 0]
    assert "more_rooms" not in [p.name for p in al.origins]
    from trajdebug.replay.diffview import first_divergence

    text = " ".join("".join(t for t, _ in line) for line in first_divergence(al))
    assert "outside the recorded steps" not in text


def _booking_runs(path: Path, nights: tuple[int, int]) -> list[Any]:
    """Two recorder runs of one booking request: the ``book_stay`` agent step (same input in both) works out
    the nights itself and asks its ``reserve`` tool for them; the failing run's own arithmetic is off."""
    import trajdebug

    runs = []
    for n in nights:
        with trajdebug.run("stay-desk", path=str(path), task="book R-12") as run:
            with trajdebug.step("book_stay", kind="agent", input={"from": "05-02", "to": "05-05"}) as agent:
                with trajdebug.step("reserve", kind="tool", input={"nights": n}) as t:
                    t.output = {"held": n}
                agent.output = {"booked": n}
            if n != nights[0]:
                run.fail(f"booked {n} nights for a 3-night stay")
        runs.append(run.load())
    return runs


def test_a_nested_step_asked_otherwise_inside_a_step_given_the_same_request_points_at_that_step(tmp_path: Path) -> None:
    """A nested step's request comes from the step enclosing it: when the first step inside to differ was asked
    something else while the enclosing step was given the same request, the enclosing step is the first
    divergence and an origin, and no line says its request changed outside the recorded steps."""
    good, bad = _booking_runs(tmp_path / "runs.jsonl", (3, 4))
    al = align(good, bad)
    first = al.first_divergence
    assert first is not None and first.name == "book_stay" and first.status == "output"
    assert [p.name for p in al.origins] == ["book_stay"]
    out = CliRunner().invoke(cli, ["diff", str(tmp_path / "runs.jsonl"), str(tmp_path / "runs.jsonl")]).output
    assert "first divergence: book_stay#" in out and "outside the recorded steps" not in " ".join(out.split())


def test_an_enclosing_step_with_an_inner_step_whose_own_answer_differs_is_not_an_origin(tmp_path: Path) -> None:
    """An enclosing step given the same request is no origin when, besides an inner call asked something else
    (an audit event carrying a fresh request id), an inner step given the same request answered otherwise:
    that inner step is the origin (rev52w M2: the rule looked at the first differing inner step only)."""
    import uuid

    import trajdebug

    path = tmp_path / "runs.jsonl"
    runs = []
    for answer in ("3 nights", "4 nights"):
        with trajdebug.run("desk", path=str(path), task="book R-12") as run:
            with trajdebug.step("book_stay", kind="agent", input={"from": "05-02", "to": "05-05"}) as agent:
                with trajdebug.step("audit", kind="tool", input={"event": "start", "request_id": str(uuid.uuid4())}) as a:
                    a.output = {"ok": True}
                with trajdebug.step("llm", kind="llm", input={"prompt": "how many nights 05-02..05-05?"}) as m:
                    m.output = {"text": answer}
                with trajdebug.step("reserve", kind="tool", input={"nights": answer}) as t:
                    t.output = {"held": answer}
                agent.output = {"booked": answer}
            if answer != "3 nights":
                run.fail("booked 4 nights for a 3-night stay")
        runs.append(run.load())
    al = align(*runs)
    assert [p.name for p in al.origins] == ["llm"]


def test_a_first_divergence_asked_otherwise_by_an_enclosing_step_asked_otherwise_names_that_step() -> None:
    """A nested step whose request differs under an enclosing step whose own request differs too (code between
    the top-level steps changed it) is said to take its request from that step, not from outside the steps."""
    from trajdebug.core.model import Run, Step
    from trajdebug.replay.diffview import first_divergence

    def run(rid: str, limit: int, outcome: str) -> Run:
        return Run(rid, "ferry-desk", outcome=outcome, metadata={"task": "book KL-4"}, steps=(
            Step("1", "book_crossing", "agent", input={"limit": limit}, output={"ok": limit}, start_ns=1, end_ns=9),
            Step("2", "deck_plan", "tool", parent_id="1", input={"limit": limit}, output={"free": limit},
                 start_ns=2, end_ns=3),
        ))

    al = align(run("g", 3, "success"), run("b", 2, "failure"))
    text = " ".join("".join(t for t, _ in line) for line in first_divergence(al))
    assert "first divergence: deck_plan#" in text
    assert "its request comes from the step enclosing it, book_crossing#" in text and "differs too" in text
    assert "outside the recorded steps" not in text


def test_diff_of_a_file_with_itself_compares_the_failing_run_with_its_same_input_passing_run(tmp_path: Path) -> None:
    """``diff FILE FILE`` takes as GOOD the passing run given the failing run's input when the file holds one,
    before a newer passing run of another input (nu30 finding 4: "inputs differ" though the twin was there)."""
    import trajdebug

    path = tmp_path / "runs.jsonl"
    ids = {}
    for ticket, bike, fail in (("T-12", "gravel", False), ("T-12", "road", True), ("T-9", "road", False)):
        with trajdebug.run("bike-quote", path=str(path), task=f"quote ticket {ticket}") as r:
            with trajdebug.step("lookup", kind="tool", input={"ticket": ticket}) as s:
                s.output = {"bike": bike}
            if fail:
                r.fail("wrong bike")
        ids[(ticket, fail)] = r.run_id
    data = json.loads(CliRunner().invoke(cli, ["diff", str(path), str(path), "--json"]).output)
    assert data["good"] == ids[("T-12", False)] and data["bad"] == ids[("T-12", True)]
    out = " ".join(CliRunner().invoke(cli, ["diff", str(path), str(path)]).output.split())
    assert "inputs differ" not in out and "first divergence: lookup" in out


def test_a_first_divergence_between_two_records_names_the_fields_that_differ(tmp_path: Path) -> None:
    """Under a first divergence whose outputs are records, ``differs in:`` names the fields whose values differ
    (two swapped dates: both named), and a piped diff keeps each value on one line (nu30 finding 8)."""
    import trajdebug
    from trajdebug.replay.diffview import differing_paths

    path = tmp_path / "runs.jsonl"
    for issued, due, fail in (("2026-11-01", "2026-12-01", False), ("2026-12-01", "2026-11-01", True)):
        with trajdebug.run("invoices", path=str(path), task="file INV-1187") as r:
            with trajdebug.step("extract_header", kind="parse", input={"doc": "INV-1187"}) as s:
                s.output = {"vendor": "ACME " * 20, "issue_date": issued, "due_date": due, "lines": [1, 2]}
            if fail:
                r.fail("due before issue")
    out = CliRunner().invoke(cli, ["diff", str(path), str(path)]).output
    assert "  differs in: due_date, issue_date" in out.splitlines()
    assert any(line.startswith("  bad:") and '"issue_date":"2026-12-01"' in line for line in out.splitlines())
    assert differing_paths({"a": {"b": [1, 2]}, "c": 1}, {"a": {"b": [1, 3]}, "c": 1, "d": 0}) == ["a.b[1]", "d"]
    assert differing_paths("some text", "other text") == [] and differing_paths({"a": 1}, {"a": 1}) == []


def _refund_desk(path: Path, fixed: bool) -> None:
    """nu33's agent D reduced: ``make_brief`` writes the customer it picked into the session it was given (an
    argument changed in place), and the session is never reset between tickets; the bug prefers its customer."""
    import trajdebug

    owners = {"O-7710": "C-1012", "O-7731": "C-4077"}
    tickets = [{"ticket": "T-501", "customer": "C-1012", "order": "O-7710"},
               {"ticket": "T-502", "customer": "C-4077", "order": "O-7731"}]

    @trajdebug.step(kind="other")
    def make_brief(ticket: dict, session: dict) -> dict:
        customer = ticket["customer"] if fixed else (session.get("customer_id") or ticket["customer"])
        session["customer_id"] = customer
        return {"ticket": ticket["ticket"], "customer_id": customer, "order": ticket["order"]}

    @trajdebug.step(kind="tool")
    def issue_refund(brief: dict) -> dict:
        if owners[brief["order"]] != brief["customer_id"]:
            raise PermissionError(f"order {brief['order']} does not belong to customer {brief['customer_id']}")
        return {"refund": "R-" + brief["order"]}

    try:
        with trajdebug.run("support-desk", task="tickets T-501, T-502", path=str(path)):
            session: dict[str, Any] = {}
            for ticket in tickets:
                issue_refund(make_brief(dict(ticket), session))
    except PermissionError:
        pass


def test_a_step_that_changes_its_argument_in_place_is_compared_as_it_was_called(tmp_path: Path) -> None:
    """A same-input pair whose step writes into its own argument (nu33 finding 1): both runs called ``make_brief``
    for the second ticket with the same session, so that is the first divergence by its output, not a request
    "changed outside the recorded steps" (the recorder froze the argument as the step had left it)."""
    from trajdebug.core.jsonl import read_jsonl

    good, bad = tmp_path / "same.jsonl", tmp_path / "fail.jsonl"
    _refund_desk(good, fixed=True)
    _refund_desk(bad, fixed=False)
    briefs = [s for s in read_jsonl(good).runs[0].steps if s.name == "make_brief"]
    assert briefs[1].input["session"] == {"customer_id": "C-1012"}  # as called, not its own write (C-4077)
    al = align(read_jsonl(good).runs[0], read_jsonl(bad).runs[0])
    first = al.first_divergence
    assert first is not None and first.name == "make_brief" and first.status == "output"
    out = " ".join(CliRunner().invoke(cli, ["diff", str(good), str(bad)]).output.split())
    assert "first divergence: make_brief#" in out and "outside the recorded steps" not in out


def test_diff_of_two_names_that_are_no_files_says_they_were_read_as_run_ids(tmp_path: Path, monkeypatch: Any) -> None:
    """`trajdebug diff a b` in a folder with no store and no file ``a`` says ``a`` was read as a run id, not only
    that the default store is missing (nu62 bug 8)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRAJDEBUG_STORE", raising=False)
    out = CliRunner().invoke(cli, ["diff", "a", "b"])
    assert out.exit_code != 0
    assert "no such file or store, so read as a run id" in out.output and "no store here yet" in out.output


def _zones(path: Path, moisture_b: float, call_ids: tuple[str, str], fail: bool) -> None:
    """A run that plans two zones: each reading parsed, then a model step that returns the tool call it chose
    as the agent keeps it (its tool, its arguments and the id the model API gave the call)."""
    import trajdebug

    with trajdebug.run("irrigation", path=str(path), task="irrigate GH-North") as r:
        for zone, moisture, call_id in (("A", 0.34, call_ids[0]), ("B", moisture_b, call_ids[1])):
            with trajdebug.step("parse_reading", kind="parse", input={"zone": zone}) as p:
                p.output = {"zone": zone, "moisture": moisture}
            with trajdebug.step("plan_zone", kind="llm", input={"messages": [{"role": "user", "content": zone}]}) as m:
                m.output = {"tool": "water_zone", "args": {"zone": zone, "litres": 10.0}, "id": call_id}
        if fail:
            r.fail("the tank is too small")


def test_a_model_step_whose_returned_tool_call_differs_only_in_its_id_is_not_the_first_divergence(tmp_path: Path) -> None:
    """A model step that returns its tool call with the id the API minted for it is the same in two runs that
    asked and were answered alike: the first divergence is the step whose value differs, here and in the
    report's "the runs part first at" (nu63: `diff` named the call whose id alone differed)."""
    from trajdebug.replay.diffview import parting
    from trajdebug.sources.load import load_runs

    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    _zones(good, 0.31, ("call_26_0", "call_27_0"), fail=False)
    _zones(bad, 0.031, ("call_21_0", "call_22_0"), fail=True)
    out = CliRunner().invoke(cli, ["diff", str(good), str(bad)]).output
    assert "first divergence: parse_reading#" in out and "differs in: moisture" in out, out
    assert "first divergence: plan_zone" not in out
    [g], [b] = load_runs(good), load_runs(bad)
    assert parting(g, b)["first_divergence"]["label"].startswith("parse_reading#")


def test_diff_text_names_every_origin_json_lists(tmp_path: Path) -> None:
    """When several steps answered the same request otherwise, the text names them all, as ``--json``'s
    ``origins`` lists them (nu63: the text named only the first)."""
    import trajdebug

    path = tmp_path / "runs.jsonl"
    for ok, fail in (("x", False), ("y", True)):
        with trajdebug.run("two-lookups", path=str(path), task="look up both") as r:
            for name in ("rate", "stock"):
                with trajdebug.step(name, kind="tool", input={"item": "bolt"}) as s:
                    s.output = {"value": ok}
            if fail:
                r.fail("both lookups changed")
    data = json.loads(CliRunner().invoke(cli, ["diff", str(path), str(path), "--json"]).output)
    assert len(data["origins"]) == 2
    out = CliRunner().invoke(cli, ["diff", str(path), str(path)]).output
    [line] = [line for line in out.splitlines() if line.startswith("origins")]
    assert "2 steps" in line and "rate#" in line and "stock#" in line


def test_diff_of_a_bad_file_with_no_failing_run_says_so_and_how_to_name_a_run(tmp_path: Path) -> None:
    """``diff GOOD BAD`` where BAD is a file holding passing runs only is an error saying BAD has no failing
    run and naming PATH@RUN_ID (nu63: it said "GOOD and BAD are the same run"); PATH@RUN_ID still compares
    two passing runs."""
    import trajdebug

    path = tmp_path / "runs.jsonl"
    ids = []
    for price in (3, 4):
        with trajdebug.run("quotes", path=str(path), task=f"quote {price}") as r, trajdebug.step("price", kind="tool") as s:
            s.output = price
        ids.append(r.run_id)
    res = CliRunner().invoke(cli, ["diff", str(path), str(path)])
    assert res.exit_code == 1
    assert "BAD:" in res.output and "holds no failing run (2 passing)" in res.output and "PATH@RUN_ID" in res.output
    named = CliRunner().invoke(cli, ["diff", f"{path}@{ids[0]}", f"{path}@{ids[1]}"])
    assert named.exit_code == 0 and "first divergence" in named.output


def test_downstream_impact_reaches_the_failing_step_by_the_edges_the_analysis_follows() -> None:
    """The impact of the first divergence holds the step that failed when only a value edge of the analysis
    joins them (an OTel trace: the order a forecast made reaches the failing submit through a PO line's
    numbers, which content inference alone does not link; newuser64 F11)."""
    from trajdebug.sources.formats import import_path

    data = Path(__file__).parent / "data"
    [good] = import_path(data / "restock_same.otlp.json").runs
    [bad] = import_path(data / "restock_fail.otlp.json").runs
    al = align(good, bad)
    first = al.first_divergence
    assert first is not None and first.bad is not None and first.bad.name == "parse_stock"
    impact = [bad.step(s).name for s in al.impact(first)]  # type: ignore[attr-defined]
    assert impact == ["forecast", "write_po_line", "submit_po"]
    assert bad.step(al.impact(first)[-1]).status == "error"  # type: ignore[attr-defined]


def _support_runs() -> tuple[Any, Any]:
    """A passing and a failing run of one agent, given different messages (an ``input`` step each)."""
    from tests.builders import step

    from trajdebug.core.model import Run

    def one(rid: str, text: str, outcome: str) -> Run:
        steps = (
            step("1", "user_message", "input", 1, {"text": text}, {"text": text}),
            step("2", "answer", "llm", 2, {"text": text}, f"re: {text}", "1"),
            *([step("3", "refund", "tool", 3, {"text": text}, {"ok": True}, "2")] if outcome == "success" else []),
        )
        return Run(rid, "support", outcome=outcome, failure_reason=None, steps=steps)  # type: ignore[arg-type]

    return one("passed-run", "Refund A101", "success"), one("failed-run", "Refund A103", "failure")


def test_diff_names_the_runs_by_their_outcomes_and_warns_once_when_good_failed_or_bad_passed() -> None:
    """Given a failed GOOD and a passing BAD, `diff` says which run passed and which failed (never "the passing
    run" of the failed one) and warns in one line; in the usual order it says "passing" and "failing" and warns
    not (nu64b: labels by position)."""
    from trajdebug.replay.diffview import diff_lines

    passed, failed = _support_runs()

    def text(good: Any, bad: Any) -> list[str]:
        return ["".join(t for t, _ in line) for line in diff_lines(align(good, bad))]

    swapped = text(failed, passed)
    assert "1 only in BAD (passed)" in swapped[0] and "passing run" not in "\n".join(swapped)
    assert sum(line.startswith("warning: ") for line in swapped) == 1
    assert "GOOD failed-run failed and BAD passed-run passed" in swapped[1]
    usual = text(passed, failed)
    assert "1 only in the passing run" in usual[0] and not any(line.startswith("warning") for line in usual)


def test_diff_prints_an_input_steps_values_once() -> None:
    """An ``input`` step whose output is its input shows the two runs' values once (``good input:`` and ``bad
    input:``), not again as ``good:`` and ``bad:`` (nu64b)."""
    from trajdebug.replay.diffview import values

    al = align(*_support_runs())
    [first] = [p for p in al.pairs if p.bad is not None and p.bad.kind == "input"]
    assert [k for k, _ in values(al, first, 160)] == ["good input:", "bad input:"]


def _shop_store(path: Path, name: str, outcome: str, steps: tuple[str, ...]) -> Path:
    """A SQLite store of one recorded run of ``name`` whose steps are ``steps`` (tools), failing or passing."""
    import trajdebug

    try:
        with trajdebug.run(name, store=str(path), task="t"):
            for step in steps:
                trajdebug.step(step, kind="tool")(lambda x: {"x": x})(1)
            if outcome == "failure":
                raise ValueError("total is wrong")
    except ValueError:
        pass
    return path


def test_diff_with_good_and_bad_swapped_says_to_swap_them(tmp_path: Path) -> None:
    """`diff FAIL.db PASS.db` (GOOD and BAD swapped) fails saying the arguments look swapped and giving the
    command the other way round (newuser65)."""
    from click.testing import CliRunner

    from trajdebug.cli import cli

    fail = _shop_store(tmp_path / "fail.db", "shop", "failure", ("lookup", "total"))
    ok = _shop_store(tmp_path / "pass.db", "shop", "success", ("lookup", "total"))
    res = CliRunner().invoke(cli, ["diff", str(fail), str(ok)])
    assert res.exit_code != 0
    text = " ".join(res.output.split())
    assert "holds no failing run" in text and "the arguments look swapped" in text, text
    assert f"trajdebug diff {ok} {fail}" in text
    assert CliRunner().invoke(cli, ["diff", str(ok), str(fail)]).exit_code == 0


def test_diff_of_two_different_agents_is_a_one_line_error_unless_forced(tmp_path: Path) -> None:
    """Two runs of different names sharing no step are said in one line to be two agents' runs, with a non-zero
    exit; --force diffs them anyway (newuser65: a support log against a group chat printed a diff of nothing)."""
    from click.testing import CliRunner

    from trajdebug.cli import cli

    ok = _shop_store(tmp_path / "pass.db", "shop", "success", ("lookup", "total"))
    fail = _shop_store(tmp_path / "chat.db", "groupchat", "failure", ("planner", "coder"))
    res = CliRunner().invoke(cli, ["diff", str(ok), str(fail)])
    assert res.exit_code != 0 and len(res.output.strip().splitlines()) == 1, res.output
    assert "GOOD (shop) and BAD (groupchat) are runs of two different agents" in " ".join(res.output.split())
    forced = CliRunner().invoke(cli, ["diff", str(ok), str(fail), "--force"])
    assert forced.exit_code == 0 and "0 steps paired" in forced.output, forced.output


def _paged_store(path: Path, fail_on: int, start: str, outcome: str) -> Path:
    """A SQLite store of one run that fetches pages 0-3 of a window through a flaky API retried on error: the
    first attempt at page ``fail_on`` fails, the retry succeeds."""
    import trajdebug

    tries: dict[int, int] = {}

    @trajdebug.retry(attempts=3, on=(ConnectionError,))
    @trajdebug.step(kind="tool")
    def fetch_page(window: dict[str, str], page: int) -> dict[str, Any]:
        tries[page] = tries.get(page, 0) + 1
        if page == fail_on and tries[page] == 1:
            raise ConnectionError("connection reset by peer")
        return {"page": page, "rows": [f"{window['start']}#{page}"]}

    try:
        with trajdebug.run("vat-return", store=str(path), task="FY Q4"):
            for page in range(4):
                fetch_page({"start": start}, page)
            if outcome == "failure":
                raise ValueError("VAT differs from the ledger")
    except ValueError:
        pass
    return path


def test_diff_pairs_the_attempts_of_a_retried_call_by_what_they_asked(tmp_path: Path) -> None:
    """Attempts of a retried call are paired by request, page with page, though the API failed on another page in
    each run; a failed attempt pairs with nothing, never with the other run's success (newuser65 item 8)."""
    from trajdebug.replay import align

    good = trajdebug_run(_paged_store(tmp_path / "good.db", 0, "2026-11-01", "success"))
    bad = trajdebug_run(_paged_store(tmp_path / "bad.db", 2, "2026-10-01", "failure"))
    al = align(good, bad)
    both = [(p.good.input["page"], p.bad.input["page"]) for p in al.pairs if p.good is not None and p.bad is not None]
    assert both == [(0, 0), (1, 1), (2, 2), (3, 3)], both
    alone = [(p.status, (p.good or p.bad).status) for p in al.pairs if p.good is None or p.bad is None]
    assert sorted(alone) == [("only-bad", "error"), ("only-good", "error")], alone
    out = CliRunner().invoke(cli, ["diff", str(tmp_path / "good.db"), str(tmp_path / "bad.db")]).output
    lines = [line.split(":", 1)[1].strip() for line in out.splitlines() if "request:" in line]
    pages = [json.loads(x)["page"] for x in lines]
    assert pages and all(a == b for a, b in zip(pages[::2], pages[1::2], strict=True)), out


def trajdebug_run(path: Path) -> Any:
    """The one run of a store."""
    import trajdebug

    [run] = trajdebug.load_runs(str(path))
    return run
