"""trajdebug lint: every planted instrumentation defect of a test agent is found, with its step and a fix;
the demo's runs (every fault) have none."""

from __future__ import annotations

import contextvars
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import trajdebug
from trajdebug.core.model import ErrorEvent, Run, StageChange, Step
from trajdebug.demo import FAULTS, run_demo
from trajdebug.lint import CODES, lint


REPORT = (
    "The quarterly revenue for the northern region reached 1,234,567 EUR in 2025-Q3, driven by the "
    "Oslo and Bergen stores, while the southern region stayed flat at 987,654 EUR."
)


@trajdebug.step(kind="tool", timeout=5.0)
def read_report(quarter: str) -> str:
    return REPORT


@trajdebug.step(kind="tool")
def send_mail(to: str) -> str:  # planted: a tool without a timeout
    time.sleep(0.002)  # waiting on a mail server (a call ended within 1 ms is a lookup, never reported)
    return "sent"


@trajdebug.step(kind="tool", timeout=5.0)
def flaky(x: int) -> int:
    raise ValueError("upstream returned garbage")


def _leave_open() -> None:
    dangling = trajdebug.step("never_closed", kind="other")
    dangling.__enter__()
    with trajdebug.step("child"):
        pass


def _buggy_agent(store: Path) -> None:
    """A test agent with one planted defect of each kind."""
    with trajdebug.run("buggy", store=store) as run:
        report = read_report("2025-Q3")
        # missing-dependency: the report is passed on as a new string, not the object the tool returned.
        with trajdebug.step("summarize", kind="llm", input={"prompt": f"Summarize this: {report}"}) as s:
            s.output = "Revenue up in the north."
        # swallowed-exception: caught, no fallback().
        with trajdebug.step("answer", kind="agent"):
            try:
                flaky(1)
            except ValueError:
                pass
        send_mail("cfo@example.com")
        # body-state: a note kept in run.state from the run's body, then read inside a step.
        run.state["region"] = "north"
        with trajdebug.step("pick_store", kind="other") as pick:
            pick.output = run.state["region"]
        # outside-run: a plain thread pool loses the run's context.
        with ThreadPoolExecutor(1) as pool:
            pool.submit(lambda: trajdebug.step("background", kind="other").__enter__().__exit__(None, None, None)).result()
        # open-stage: a step entered and never left (its child finished, so it was announced).
        contextvars.copy_context().run(_leave_open)
        # lost-context (a): a sub-agent joined with a parent step nobody recorded.
        with trajdebug.extract({"traceparent": f"00-{run.run_id}-00000000deadbeef-01"}), trajdebug.step("sub_step"):
            pass
        # lost-context (b): a sub-agent recorded as a run of its own inside a step with no sub-steps.
        with trajdebug.step("delegate", kind="agent"), trajdebug.run("sub-agent", store=store), trajdebug.step("sub_work"):
            pass
        # broken-chain: an integration merged an error whose cause was never recorded.
        lost = Run(
            "x", "x",
            steps=(Step("m1", "merged_tool", "other", status="error", start_ns=1, end_ns=2, attributes={"timeout": 1}),),
            errors=(ErrorEvent("em1", "m1", "KeyError", "k", parent_error_id="e-missing", stages=(StageChange("occurred", "m1", 1), StageChange("ignored", "m1", 2))),),
        )
        run.merge(lost)


@pytest.fixture
def buggy(tmp_path: Path) -> Path:
    """A store with the buggy agent's runs."""
    store = tmp_path / "buggy.db"
    _buggy_agent(store)
    trajdebug.flush(5)
    return store


def test_every_planted_defect_is_found_at_its_step(buggy: Path) -> None:
    """Each code is found, at the step where the defect was planted, with a one-line fix."""
    runs = trajdebug.load_runs(buggy)
    found = {(f.code, f.step_name) for f in lint(runs)}
    expected = {
        ("missing-dependency", "summarize"),
        ("swallowed-exception", "flaky"),
        ("no-timeout", "send_mail"),
        ("outside-run", "background"),
        ("open-stage", "never_closed"),
        ("lost-context", "sub_step"),
        ("lost-context", "delegate"),
        ("broken-chain", "merged_tool"),
        ("body-state", "pick_store"),
    }
    assert expected <= found
    assert set(CODES) == {code for code, _ in found}
    assert all("\n" not in f.fix and f.fix for f in lint(runs))


def test_state_written_inside_a_step_and_read_in_another_is_no_finding(tmp_path: Path) -> None:
    """A run.state key written inside a step and read inside a later one has its edge: lint says nothing of it."""
    store = tmp_path / "kiln.db"
    with trajdebug.run("kiln", store=store) as run:
        with trajdebug.step("set_kiln", kind="state"):
            run.state["kiln"] = {"temp_c": 1220}
        with trajdebug.step("fire_pots", kind="other") as s:
            s.output = run.state["kiln"]["temp_c"]
    trajdebug.flush(5)
    assert [] == [f for f in lint(trajdebug.load_runs(store)) if f.code == "body-state"]


def test_the_demo_has_no_findings(tmp_path: Path) -> None:
    """The bundled demo's run, clean and with each fault, is well instrumented."""
    store = tmp_path / "demo.db"
    for fault in [None, *FAULTS]:
        run_demo(fault, store=store, workdir=tmp_path)
    runs = trajdebug.load_runs(store)
    assert 1 + len(FAULTS) <= len(runs)
    assert [] == lint(runs)


def test_the_command_exits_one_on_findings_and_prints_json(buggy: Path, cli_run: Any) -> None:
    """`trajdebug lint --json` lists the findings with their fixes and exits 1; --exit-zero exits 0; --ignore drops a code."""
    out = cli_run("lint", str(buggy), "--json")
    assert 1 == out.returncode
    doc = json.loads(out.stdout)
    assert {"code", "run_id", "step_id", "step", "message", "fix", "severity"} == set(doc["findings"][0])
    assert cli_run("lint", str(buggy), "--exit-zero").returncode == 0
    ignored = json.loads(cli_run("lint", str(buggy), "--json", "--ignore", "no-timeout").stdout)
    assert "no-timeout" not in {f["code"] for f in ignored["findings"]}


def test_the_command_exits_zero_on_the_demo(tmp_path: Path, cli_run: Any) -> None:
    """`trajdebug demo` then `trajdebug lint` finds nothing and exits 0."""
    assert 0 == cli_run("demo", "--no-verify").returncode
    out = cli_run("lint")
    assert 0 == out.returncode, out.stdout
    assert b"no findings" in out.stdout


def test_an_unknown_code_is_a_usage_error(buggy: Path, cli_run: Any) -> None:
    """--ignore with a code that does not exist is refused with the known codes."""
    out = cli_run("lint", str(buggy), "--ignore", "no-such")
    assert 2 == out.returncode and b"no-timeout" in out.stderr


def test_the_same_problem_in_many_runs_is_one_line_with_its_run_count(tmp_path: Path, cli_run: Any) -> None:
    """Five runs with the same tool lacking a timeout print one no-timeout line counting 5 runs."""
    store = tmp_path / "many.db"
    for _ in range(5):
        with trajdebug.run("mailer", store=store):
            send_mail("a@example.com")
    trajdebug.flush(5)
    out = cli_run("lint", str(store))
    text = out.stdout.decode()
    assert text.count("no-timeout") == 2  # the group line and the summary
    assert "step send_mail  5 runs" in text
    doc = json.loads(cli_run("lint", str(store), "--json").stdout)
    assert [(g["code"], g["step"], g["runs"]) for g in doc["groups"]] == [("no-timeout", "send_mail", 5)]


def test_piped_each_message_and_fix_stays_on_one_line(tmp_path: Path, cli_run: Any) -> None:
    """Piped, lint's text is never wrapped or cut (as analyze --help promises of the piped text): a fix longer than
    80 columns is one line a grep finds whole (newuser64 F6: lint wrapped at 80 columns)."""

    @trajdebug.step(kind="tool")
    def submit_purchase_order_to_the_warehouse_receiving_service(po: str) -> str:
        time.sleep(0.002)
        return po

    path = tmp_path / "po.jsonl"
    with trajdebug.run("restock", path=str(path)):
        submit_purchase_order_to_the_warehouse_receiving_service("PO-1")
    lines = cli_run("lint", str(path), env={"COLUMNS": "80"}).stdout.decode().splitlines()
    fix = 'fix: declare one: @trajdebug.step(kind="tool", timeout=SECONDS) on submit_purchase_order_to_the_warehouse_receiving_service'
    assert any(line.strip() == fix for line in lines)


@trajdebug.step(kind="parse")
def validate(report: str) -> str:
    return report  # a pass-through: returns its own argument


def test_a_step_returning_its_own_argument_gets_the_advice_to_declare_the_dependency(tmp_path: Path) -> None:
    """When the upstream step returned its own argument, the fix says so and asks to declare the dependency
    (passing the returned object, which the agent already does, would change nothing)."""
    from trajdebug.testing import capture_runs

    with capture_runs() as cap, trajdebug.run("checker"):
        checked = validate(read_report("2025-Q3"))
        with trajdebug.step("summarize", kind="llm", input={"prompt": f"Summarize this: {checked}"}) as s:
            s.output = "ok"
    [run] = cap
    [found] = [f for f in lint([run]) if f.code == "missing-dependency" and f.step_name == "summarize"]
    assert "validate returns its own argument" in found.fix and "declare the dependency on validate" in found.fix
    plain = [f for f in lint(trajdebug.load_runs(_planted(tmp_path))) if f.code == "missing-dependency"]
    assert plain and all("returned object itself" in f.fix for f in plain)


def _planted(tmp_path: Path) -> Path:
    store = tmp_path / "b.db"
    _buggy_agent(store)
    trajdebug.flush(5)
    return store


def test_a_missing_dependency_names_the_producing_step_not_only_its_id(buggy: Path) -> None:
    """The finding says which step's output the input holds, by name, so a reader knows where to look."""
    runs = trajdebug.load_runs(buggy)
    [found] = [f for f in lint(runs) if f.code == "missing-dependency" and f.step_name == "summarize"][:1]
    producers = {s.name for r in runs for s in r.steps if s.step_id[-6:] in found.message}
    assert producers and all(name in found.message for name in producers)


@trajdebug.step(kind="parse")
def parse_items(answer: str) -> list[dict[str, Any]]:
    return [{"sku": p.split("x")[1], "qty": int(p.split("x")[0])} for p in answer.split(", ")]


@trajdebug.step()
def merge_items(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged = {line["sku"]: dict(line) for line in lines}  # new dicts, a new list: equal content, not the argument
    return list(merged.values())


def _pick_run(store: Path, answer: str) -> None:
    with trajdebug.run("picklist", store=store):
        merged = merge_items(parse_items(answer))
        # missing-dependency: the SKUs are passed on as new short strings, which identity cannot follow.
        with trajdebug.step("lookup_stock", kind="tool", input={"skus": [m["sku"] for m in merged]}) as s:
            s.output = {m["sku"]: 5 for m in merged}


def test_a_step_returning_an_equal_copy_is_not_said_to_return_its_argument(tmp_path: Path) -> None:
    """A step that builds new dicts and a new list equal to its argument made them: the fix does not claim
    it "returns its own argument" (that needs the very object returned), while a pass-through still gets it."""
    store = tmp_path / "pick.db"
    _pick_run(store, "3xSKU-1001, 12xSKU-2040, 4xSKU-4500")
    trajdebug.flush(5)
    [run] = trajdebug.load_runs(store)
    merge = next(s for s in run.steps if s.name == "merge_items")
    assert merge.output == merge.input["lines"]  # equal content: what the old rule took for identity
    found = [f for f in lint([run]) if f.code == "missing-dependency"]
    assert found and not any("returns its own argument" in f.fix for f in found)


def test_a_missing_dependency_counts_every_run_that_lacks_it(tmp_path: Path, cli_run: Any) -> None:
    """The same step lacking its dependency in each of 5 runs is counted in 5 runs, also in those where
    content inference alone is less sure of the edge than the lint's threshold."""
    store = tmp_path / "pick.db"
    answers = ["3xSKU-1001, 12xSKU-2040", "1xSKU-5010", "2xSKU-3100, 7xSKU-1002, 1xSKU-5010", "9xSKU-4500", "6xSKU-3101"]
    for answer in answers:
        _pick_run(store, answer)
    trajdebug.flush(5)
    runs = trajdebug.load_runs(store)
    found = {f.run_id for f in lint(runs) if f.code == "missing-dependency" and f.step_name == "lookup_stock"}
    assert found == {r.run_id for r in runs}
    doc = json.loads(cli_run("lint", str(store), "--json").stdout)
    assert [g["runs"] for g in doc["groups"] if g["code"] == "missing-dependency"] == [5]


def _agents_sdk_run(tmp_path: Path) -> Run:
    """A drop-off counter agent run through the OpenAI Agents SDK's Runner (a scripted model calling one
    ``@function_tool``), recorded by trajdebug's tracing processor."""
    import asyncio

    from agents import Agent, Runner, function_tool
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.tracing import generation_span, get_trace_provider, set_trace_processors
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    @function_tool
    def compute_total(base: float, surcharge: float) -> str:
        """Add the surcharge."""
        return f"{base + surcharge:.2f}"

    said = ResponseOutputText(text="42.00 EUR", type="output_text", annotations=[])
    turns: list[list[Any]] = [
        [ResponseFunctionToolCall(arguments='{"base": 42, "surcharge": 0}', call_id="c1", name="compute_total", type="function_call", id="f1")],
        [ResponseOutputMessage(id="m1", content=[said], role="assistant", status="completed", type="message")],
    ]

    class Scripted(Model):
        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
            output = turns.pop(0)
            with generation_span(input=[{"role": "user", "content": str(input)}], output=[o.model_dump() for o in output], model="scripted"):
                pass
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    provider: Any = get_trace_provider()
    saved = list(provider._multi_processor._processors)
    processor = TrajdebugProcessor(path=tmp_path / "sdk.jsonl")
    set_trace_processors([processor])
    try:
        agent = Agent(name="counter", instructions="Price it.", model=Scripted(), tools=[compute_total])
        asyncio.run(Runner.run(agent, "Price ticket DC-4410."))
    finally:
        set_trace_processors(saved)
    return processor.to_run()


def _langchain_run() -> Run:
    """A LangChain tool called under trajdebug's LangChain tracer."""
    from langchain_core.tools import tool

    from trajdebug.integrations.langchain import TrajdebugTracer

    @tool
    def compute_total(base: float, surcharge: float) -> str:
        """Add the surcharge."""
        return f"{base + surcharge:.2f}"

    tracer = TrajdebugTracer()
    compute_total.invoke({"base": 42.0, "surcharge": 0.0}, config={"callbacks": [tracer]})
    return tracer.to_run()


def test_a_framework_tool_gets_no_trajdebug_timeout_advice(tmp_path: Path) -> None:
    """A tool recorded through the OpenAI Agents SDK processor (an ``@function_tool``) or the LangChain tracer is
    bounded in its framework, which the trace does not record: lint neither says it has no timeout nor advises
    ``@trajdebug.step(kind="tool", timeout=SECONDS)``, which does not apply to it.  A tool trajdebug recorded
    without a timeout in the same source still gets the finding."""
    pytest.importorskip("agents", reason="openai-agents is not installed")
    pytest.importorskip("langchain_core", reason="langchain-core is not installed")
    sdk, chain = _agents_sdk_run(tmp_path), _langchain_run()
    assert any(s.kind == "tool" and s.name == "compute_total" for s in sdk.steps)
    assert any(s.kind == "tool" and s.name == "compute_total" for s in chain.steps)
    with trajdebug.run("mailer", path=str(tmp_path / "own.jsonl")) as own:
        send_mail("ops@example.com")
    found = lint([sdk, chain, own.load()])
    assert not any("trajdebug.step" in f.fix for f in found if f.run_id in (sdk.run_id, chain.run_id))
    assert not any(f.code == "no-timeout" for f in found if f.run_id in (sdk.run_id, chain.run_id))
    assert [(f.code, f.step_name) for f in found if f.code == "no-timeout"] == [("no-timeout", "send_mail")]


def _imported_tool_run(fmt: str, attributes: dict[str, Any] | None = None) -> Run:
    """A run imported from ``fmt`` whose tool waited 30 ms."""
    steps = (
        Step("r", "restock-planner", "agent", start_ns=0, end_ns=90_000_000),
        Step("t", "submit_po", "tool", parent_id="r", start_ns=1_000, end_ns=30_000_000, attributes=attributes or {}),
    )
    return Run("imp", "restock-planner", 0, 90_000_000, "success", metadata={"source_format": fmt}, steps=steps)


def test_an_imported_tool_is_advised_what_its_route_can_declare() -> None:
    """lint's no-timeout on an imported OTel span advises a span attribute, never ``@trajdebug.step(timeout=...)``,
    and a span that carries ``timeout`` has none; a message log's tool, whose source has no way to say one, gets no
    such finding (newuser64 F5: the decorator advised on an OTel span)."""
    [otel] = [f for f in lint([_imported_tool_run("otlp")]) if f.code == "no-timeout"]
    assert "trajdebug.step" not in otel.fix
    assert otel.fix == "bound the call in your code and say so on its span: the span attribute timeout=SECONDS on submit_po"
    assert not [f for f in lint([_imported_tool_run("otlp", {"timeout": 5})]) if f.code == "no-timeout"]
    assert not [f for f in lint([_imported_tool_run("openai")]) if f.code == "no-timeout"]


BOOKING_REQUEST = "Bella (cockapoo) needs a full groom between 2025-06-10 and 2025-06-13, please."


def _booking_graph() -> Any:
    """A real LangGraph graph of two plain-Python nodes: ``build_window`` reads what ``parse_request`` wrote to the
    state, an edge the tracer cannot see (a node takes no ``deps=``)."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        text: str
        booking: dict[str, Any]
        window: list[str]

    def parse_request(state: State) -> State:
        return {"booking": {"dog": "Bella", "breed": "cockapoo", "earliest": "2025-06-10", "latest": "2025-06-13"}}

    def build_window(state: State) -> State:
        return {"window": [state["booking"]["earliest"], state["booking"]["latest"]]}

    graph = StateGraph(State)
    graph.add_node("parse_request", parse_request)
    graph.add_node("build_window", build_window)
    graph.add_edge(START, "parse_request")
    graph.add_edge("parse_request", "build_window")
    graph.add_edge("build_window", END)
    return graph.compile()


@trajdebug.step(kind="parse")
def parse_booking(text: str) -> dict[str, Any]:
    return {"dog": "Bella", "breed": "cockapoo", "earliest": "2025-06-10", "latest": "2025-06-13"}


def test_a_langgraph_node_gets_no_deps_advice_and_an_sdk_step_in_the_same_shape_does(tmp_path: Path) -> None:
    """A LangGraph node recorded by the LangChain tracer whose input holds an earlier node's output is still a
    ``missing-dependency`` (the trace recorded no edge), but the advice is the route's, never ``deps=[...]``, which a
    node cannot declare.  In a run that mixes the two (the graph run inside ``trajdebug.run``), the SDK step in the
    same shape, a formatted copy of an earlier step's output, still gets the SDK advice, and the nodes do not."""
    pytest.importorskip("langgraph", reason="langgraph is not installed")
    from trajdebug.integrations.langchain import TrajdebugTracer

    graph = _booking_graph()
    tracer = TrajdebugTracer()
    graph.invoke({"text": BOOKING_REQUEST}, config={"callbacks": [tracer]})
    framework = tracer.to_run()
    with trajdebug.run("mixed", path=str(tmp_path / "mixed.jsonl")) as mixed:
        booking = parse_booking(BOOKING_REQUEST)
        window = f"from {booking['earliest']} to {booking['latest']} for {booking['dog']} the {booking['breed']}"
        with trajdebug.step("build_window_sdk", input={"window": window}) as s:
            s.output = [booking["earliest"], booking["latest"]]
        graph.invoke({"text": BOOKING_REQUEST}, config={"callbacks": [TrajdebugTracer()]})
    found = [f for f in lint([framework, mixed.load()]) if f.code == "missing-dependency"]
    nodes = [f for f in found if f.step_name == "build_window"]
    assert {f.run_id for f in nodes} == {framework.run_id, mixed.run_id}
    for f in nodes:
        assert "deps=" not in f.fix and "s.uses" not in f.fix and "returned object" not in f.fix
        assert "infers this edge from content" in f.fix and "LangChain tracer" in f.fix
    [sdk] = [f for f in found if f.step_name == "build_window_sdk"]
    assert sdk.run_id == mixed.run_id and "deps=[...]" in sdk.fix


def test_a_missing_dependency_on_an_imported_span_advises_a_span_link() -> None:
    """A step imported from OTLP/OpenInference takes no ``deps=`` either: its dependencies are span links."""
    report = Step("s1", "read_report", "tool", start_ns=1, end_ns=2, input={"q": "2025-Q3"}, output=REPORT)
    summary = Step("s2", "summarize", "llm", start_ns=3, end_ns=4, input={"prompt": f"Summarize this: {REPORT}"}, output="up")
    run = Run("r-otlp", "imported", steps=(report, summary), metadata={"source_format": "otlp"})
    [found] = [f for f in lint([run]) if f.code == "missing-dependency"]
    assert found.step_name == "summarize" and "deps=" not in found.fix and "span link" in found.fix


def test_a_missing_dependency_on_an_imported_span_is_a_finding_to_fix_and_never_says_nothing_to_declare(
    tmp_path: Path, cli_run: Any
) -> None:
    """A span link can declare an imported span's dependency, so the finding is a warning that fails the exit
    code, and its advice does not open with "nothing to declare" (nu24, F6: it said so and exited 1)."""
    from trajdebug.core.jsonl import write_jsonl

    path = tmp_path / "otlp.jsonl"
    run = _vendor_run({})
    write_jsonl([Run(run.run_id, run.name, steps=run.steps, metadata={"source_format": "otlp"}, outcome="success")], path)
    [found] = [f for f in lint(trajdebug.load_runs(path)) if f.code == "missing-dependency"]
    assert found.severity == "warning" and "nothing to declare" not in found.fix and "span link" in found.fix
    out = cli_run("lint", str(path))
    assert out.returncode == 1 and "nothing to declare" not in " ".join(out.stdout.decode().split())


@trajdebug.step(kind="tool")
def lookup_recipe(dish: str) -> dict:
    return {"dish": dish, "base_servings": 8}


def test_a_tool_whose_every_call_ended_within_a_millisecond_is_not_asked_for_a_timeout(tmp_path: Path) -> None:
    """A tool that only looks something up in the process's memory (every call ended within 1 ms) gets no
    no-timeout finding; a tool that waited on something in one of its calls does."""
    from trajdebug.lint import lint

    with trajdebug.run("catering", path=tmp_path / "r.jsonl") as run:
        for dish in ("lemon tart", "quiche", "salad"):
            lookup_recipe(dish)
        send_mail("chef@example.com")
    found = [(f.code, f.step_name) for f in lint([run.load()]) if f.code == "no-timeout"]
    assert found == [("no-timeout", "send_mail")]


def _vendor_run(route: dict[str, Any]) -> Run:
    """A vendor lookup and an estimate whose input holds the lookup's answer with no recorded dependency, each
    step carrying ``route``'s attributes (a LangGraph node's under the LangChain tracer, or none: the SDK)."""
    from tests.builders import step

    vendors = {"vendors": [{"id": "V-27", "name": "Apex Plumbing", "rate_per_hour": 145.0, "eta_minutes": 95}]}
    return Run(
        "r-vendors",
        "dispatch",
        steps=(
            step("find", "find_vendors", "tool", 1, {"zip": "95926"}, vendors, attributes=dict(route)),
            step("est", "compute_estimate", "other", 2, vendors, {"labor": 435.0}, attributes=dict(route)),
        ),
        outcome="success",
    )


def test_a_missing_dependency_the_route_cannot_record_is_info_and_does_not_fail_the_exit_code(
    tmp_path: Path, cli_run: Any
) -> None:
    """On a framework's step (a LangGraph node: nothing to declare) the finding is ``info``, marked so, and
    `trajdebug lint` exits 0; the same gap on an SDK step, which can declare ``deps=``, is a warning that
    exits 1 (issue 23, nu23: a CI job failed on four findings that each said there was nothing to fix)."""
    from trajdebug.core.jsonl import write_jsonl

    graph, sdk = tmp_path / "graph.jsonl", tmp_path / "sdk.jsonl"
    write_jsonl([_vendor_run({"langchain.run_type": "chain"})], graph)
    write_jsonl([_vendor_run({})], sdk)
    [info] = [f for f in lint(trajdebug.load_runs(graph)) if f.code == "missing-dependency"]
    assert info.severity == "info" and not info.actionable
    out = cli_run("lint", str(graph))
    assert out.returncode == 0 and "info: nothing to fix" in " ".join(out.stdout.decode().split())
    doc = json.loads(cli_run("lint", str(graph), "--json").stdout)
    assert [f["severity"] for f in doc["findings"]] == ["info"] and doc["groups"][0]["severity"] == "info"
    [warning] = [f for f in lint(trajdebug.load_runs(sdk)) if f.code == "missing-dependency"]
    assert warning.severity == "warning"
    assert cli_run("lint", str(sdk)).returncode == 1


def test_a_group_of_findings_is_a_warning_when_any_asks_for_a_fix_and_info_and_warning_are_two_groups() -> None:
    """A group's severity reads all its findings, not the first one's alone; a finding with nothing to fix and
    one to fix, of the same code, step and fix, are two groups (round 50 review)."""
    import dataclasses

    from trajdebug.lint import Finding, FindingGroup, group_findings

    warn = Finding("missing-dependency", "r1", "s1", "est", "no dependency", "declare deps=[...]")
    info = dataclasses.replace(warn, run_id="r2", actionable=False)
    assert FindingGroup("missing-dependency", "est", warn.fix, (info, warn)).severity == "warning"
    assert FindingGroup("missing-dependency", "est", warn.fix, (info,)).to_dict()["severity"] == "info"
    assert sorted(g.severity for g in group_findings([info, warn])) == ["info", "warning"]


@trajdebug.step(kind="parse")
def parse_invoice_line(line: str) -> dict:
    code, name, qty = line.split(";")
    return {"code": code.strip(), "description": name.strip(), "quantity": int(qty)}


@trajdebug.step(kind="llm")
def classify_goods(description: str) -> str:
    return "9030.31" if "probe" in description else "8544.42"


@trajdebug.step(kind="llm")
def classify_line(code: str, description: str, quantity: int) -> str:
    return "9030.31" if "probe" in description else "8544.42"


_INVOICE = ("QX-7781-B; Oscilloscope probes; 12", "ZK-1204-C; Copper test leads; 40", "PW-3310-A; Bench power supply; 3")


def test_an_edge_content_inference_finds_below_the_threshold_is_no_missing_dependency(tmp_path: Path) -> None:
    """Lint reports a missing dependency only for an edge content inference finds at 0.8 or more: one
    19-character field handed on (inferred at about 0.7) is not reported (rev52w M1: at 0.65, 11 of 75 new
    warnings on passing runs named a step that merely echoed the task's value as the producer)."""
    from trajdebug.analysis import infer_dependencies
    from trajdebug.lint import INFERRED_CONFIDENCE

    with trajdebug.run("customs", store=tmp_path / "r.db") as run:
        for line in _INVOICE:
            classify_goods(parse_invoice_line(line)["description"])
    recorded = run.load()
    weak = [d.confidence for s in infer_dependencies(recorded).steps if s.name == "classify_goods" for d in s.deps]
    assert INFERRED_CONFIDENCE == 0.8
    assert len(weak) == 3 and all(0.5 < (c or 0) < INFERRED_CONFIDENCE for c in weak)
    assert [f for f in lint([recorded]) if f.code == "missing-dependency"] == []


def test_a_step_handed_short_fields_of_an_earlier_output_is_told_to_declare_the_dependency(tmp_path: Path) -> None:
    """A step handed several fields of an earlier step's output, each too short for the recorder to track by
    identity (a 9-character code, a description, a number), has a missing dependency whose fix is to declare
    it, since passing the fields on records nothing."""
    with trajdebug.run("customs", store=tmp_path / "r.db") as run:
        for line in _INVOICE:
            p = parse_invoice_line(line)
            classify_line(p["code"], p["description"], p["quantity"])
    found = [f for f in lint([run.load()]) if f.code == "missing-dependency"]
    assert len(found) == 3 and {f.step_name for f in found} == {"classify_line"}
    assert all("parse_invoice_line" in f.message and f.severity == "warning" for f in found)
    assert all("under 24 characters" in f.fix and "deps=[...]" in f.fix for f in found)


@trajdebug.step(kind="tool")
def lookup_customer(customer_id: str) -> dict:
    return {"id": customer_id, "name": "Helix Biotech", "tier": "gold",
            "address": "Av. da Liberdade 190, 1250-147 Lisboa", "seats": 40, "source": "cache"}


@trajdebug.step(kind="other")
def price_renewal(customer: dict) -> dict:
    return {"customer_id": customer["id"], "tier": customer["tier"], "seats": customer["seats"],
            "list_price": 8640.0, "discount": 0.2, "price": 6912.0}


@trajdebug.step(kind="llm")
def write_letter(system: str, user: str) -> str:
    return "Helix Biotech\nDear customer, your renewal comes to 6,912.00 EUR."


def test_a_strong_edge_from_a_farther_producer_is_reported_when_a_nearer_one_matches_weakly(tmp_path: Path) -> None:
    """A step handed a formatted string holding an earlier tool's record (inferred at 0.96) and, weaker, a
    later step's quote (about 0.6) has a missing dependency on the tool: lint reads every edge content
    inference finds, not the analysis's edges thinned to the nearest producer, where the weak one hides the
    strong one (rev52w H1: suite_dev crm-01's letter, lookup_customer 0.95 behind price_renewal 0.51)."""
    with trajdebug.run("renewals", store=tmp_path / "r.db") as run:
        c = lookup_customer("C-2231")
        q = price_renewal(c)
        write_letter("Write a renewal offer letter.", "DATA:" + json.dumps({"name": c["name"], "address": c["address"], **q}))
    [found] = [f for f in lint([run.load()]) if f.code == "missing-dependency"]
    assert found.step_name == "write_letter" and "lookup_customer" in found.message
    assert found.severity == "warning"
