"""Shared builders of recorded steps for tests of the analysis."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from trajdebug.core.model import Dependency, ErrorInfo, Run, Step


def step(sid: str, name: str, kind: str, start: int, inp: Any, out: Any, *deps: str, **kw: Any) -> Step:
    """A step that ran for one nanosecond from ``start``, depending on the steps ``deps`` names."""
    return Step(
        sid,
        name,
        kind,  # type: ignore[arg-type]
        input=inp,
        output=out,
        start_ns=start,
        end_ns=start + 1,
        deps=tuple(Dependency(d) for d in deps),
        **kw,
    )


def propagated_error_run(*, ids: bool = True) -> Run:
    """A failed run whose one exception the steps it left each re-report, as the Agents SDK records an
    ``as_tool`` sub-agent: a tool raises inside the sub-agent, whose agent span, the caller's tool span and
    the caller's agent span end with it, an ok turn between each (so the step-error detector sees four).
    ``ids``: the steps carry the error's id (without them, each wrapper repeats the inner message)."""
    inner = "RuntimeError: order database down"

    def err(kind: str, message: str) -> ErrorInfo:
        return ErrorInfo(kind, message, "e1" if ids else None)

    steps = (
        Step("top", "workflow", "agent", start_ns=0, end_ns=100),
        Step("caller", "triage", "agent", parent_id="top", status="error",
             error=err("AgentError", f"Error in agent run: {inner}"), start_ns=1, end_ns=90),
        Step("turn", "turn 1", "agent", parent_id="caller", start_ns=2, end_ns=89),
        Step("ask", "response", "llm", parent_id="turn", input="where is W1?", output={"call": "specialist"},
             start_ns=3, end_ns=10),
        Step("as_tool", "specialist", "tool", parent_id="turn", status="error",
             error=err("ToolError", f"Error running tool: {inner}"), start_ns=11, end_ns=80,
             deps=(Dependency("ask"),)),
        Step("sub_run", "workflow", "agent", parent_id="as_tool", start_ns=12, end_ns=75),
        Step("sub", "specialist", "agent", parent_id="sub_run", status="error",
             error=err("AgentError", f"Error in agent run: {inner}"), start_ns=12, end_ns=70),
        Step("sub_turn", "turn 1", "agent", parent_id="sub", start_ns=13, end_ns=60),
        Step("look", "look", "tool", parent_id="sub_turn", input={"order": "W1"}, status="error",
             error=err("RuntimeError", "order database down"), start_ns=20, end_ns=50),
    )
    return Run("r-prop", "triage", 0, 100, "failure", f"Error in agent run: {inner}", steps=steps)


def cancelled_sibling_run() -> Run:
    """A failed run with two parallel tool calls: ``fetch`` raises at t=50 and fails the run; ``slow``,
    cancelled as the failure unwound, ends at t=60 with no output and no error of its own (as the Agents SDK
    records a cancelled task); ``early`` returned nothing before the error (its own doing)."""
    boom = ErrorInfo("ValueError", "bad page", "e1")
    steps = (
        Step("a", "agent", "agent", status="error", error=boom, start_ns=0, end_ns=100),
        Step("early", "lookup", "tool", parent_id="a", input={"q": 1}, start_ns=5, end_ns=20),
        Step("fetch", "fetch", "tool", parent_id="a", input={"q": 2}, status="error", error=boom,
             start_ns=10, end_ns=50),
        Step("slow", "slow", "tool", parent_id="a", input={"q": 3}, start_ns=10, end_ns=60),
    )
    return Run("r-cancel", "parallel", 0, 100, "failure", "ValueError: bad page", steps=steps)


def reading_state(s: Step, writer: str, key: str) -> Step:
    """``s`` with a read of the ``run.state`` key ``key`` that the step ``writer`` wrote, as the recorder keeps it."""
    return replace(s, deps=(*s.deps, Dependency(writer, "state", key=key)))


def quote_runs(*, fixed_reads_usage: bool = True, task: str | None = "quote C-105") -> tuple[Run, Run]:
    """A passing and a failing run of one quote: ``pick_rate`` takes a two-band tariff's first band as the rate
    in the failing run (0.11), where the passing run, of a fixed version, also reads the ``usage`` key of
    ``run.state`` (``fixed_reads_usage``) and weighs the bands (0.305); every step before it returned the same.
    ``task``: the passing run's input (the failing run's is ``quote C-105``); None: neither run states one (no
    task, and a first step given nothing)."""
    usage = {"kwh": 6800, "profile": {"day": 0.65, "night": 0.35}}
    tariff = {"plan": "Smart TOU", "bands": [{"name": "night", "rate": 0.11}, {"name": "day", "rate": 0.41}]}

    def run(rid: str, rate: float, reads: bool, outcome: str, given: str) -> Run:
        pick = step("4", "pick_rate", "state", 4, {"tariff": tariff}, {"eur_per_kwh": rate}, "3",
                    attributes={"state_values": {"rate": {"eur_per_kwh": rate}}})
        savings = round(4760 * rate + 3744 * 0.06, 2)
        steps = (
            step("1", "receive_request", "input", 1, None if task is None else {"customer_id": "C-105"},
                 {"customer_id": "C-105"}),
            step("2", "remember_usage", "state", 2, {"survey": {"usage_kwh": 6800}}, None, "1",
                 attributes={"state_values": {"usage": usage}}),
            step("3", "lookup_tariff", "tool", 3, {"utility": "MetroEnergy"}, tariff, "1"),
            reading_state(pick, "2", "usage") if reads else pick,
            reading_state(step("5", "compute_savings", "other", 5, {"self_used_kwh": 4760}, {"eur_per_year": savings}),
                          "4", "rate"),
            step("6", "compute_payback", "other", 6, {"total_eur": 10258, "savings": savings},
                 {"years": round(10258 / savings, 1)}, "5"),
        )
        reason = None if outcome == "success" else f"payback {round(10258 / savings, 1)} years is above the 12-year limit"
        return Run(rid, "solar-quote", outcome=outcome, failure_reason=reason,  # type: ignore[arg-type]
                   metadata={} if task is None else {"task": given}, steps=steps)

    good = run("good", 0.305, fixed_reads_usage, "success", task)
    return good, run("bad", 0.11, False, "failure", "quote C-105")


def recorded_boiler_run(path: Any, *, invent: bool = False) -> Run:
    """Record (with trajdebug's own recorder) one failing run of a boiler-service quote that keeps its data in
    ``run.state``: an inspection tool stores each boiler's reading, a parse step handed only the boiler's id
    reads that reading from the state and stores it under its own field names, an estimate reads that, and
    the quote reads every estimate (whole hours: small numbers the lineage traces only by their name) and prices
    the hours at a rate of its own.  ``invent``: the parse step
    stores a flue temperature for B2 that no reading holds (a value it made up)."""
    import trajdebug
    from trajdebug.sources.load import load_runs

    readings = {
        "B1": {"boiler": "B1", "pressure": 1.8, "flue_temp": 142.5, "make": "Ferroli"},
        "B2": {"boiler": "B2", "pressure": 2.6, "flue_temp": 171.5, "make": "Baxi"},
    }

    @trajdebug.step(kind="tool")
    def inspect_boiler(boiler_id: str) -> dict[str, Any]:
        trajdebug.current_run().state[f"reading:{boiler_id}"] = readings[boiler_id]
        return readings[boiler_id]

    @trajdebug.step(kind="parse")
    def normalise_reading(boiler_id: str) -> dict[str, Any]:
        r = trajdebug.current_run().state[f"reading:{boiler_id}"]
        flue = 187.25 if invent and boiler_id == "B2" else r["flue_temp"]
        norm = {"boiler": r["boiler"], "pressure_bar": r["pressure"], "flue_c": flue, "make": r["make"]}
        trajdebug.current_run().state[f"norm:{boiler_id}"] = norm
        return norm

    @trajdebug.step(kind="other")
    def estimate_hours(boiler_id: str) -> float:
        n = trajdebug.current_run().state[f"norm:{boiler_id}"]
        hours = float(round(1.5 + n["pressure_bar"] * 0.75 + (n["flue_c"] - 120) / 40))  # whole hours
        trajdebug.current_run().state[f"hours:{boiler_id}"] = hours
        return hours

    @trajdebug.step(kind="other")
    def price_quote() -> dict[str, Any]:
        state = trajdebug.current_run().state
        hours = {b: state[f"hours:{b}"] for b in ("B1", "B2")}
        quote = {"hours": hours, "labour": round(sum(hours.values()) * 61.0, 1)}
        state["quote"] = quote
        return quote

    with trajdebug.run("boiler-quote", path=path, metadata={"task": "quote service visit V-9"}) as run:
        for b in ("B1", "B2"):
            inspect_boiler(b)
            normalise_reading(b)
            estimate_hours(b)
        quote = price_quote()
        run.fail(f"labour {quote['labour']} is above the visit's cap of 450.0")
    [got] = load_runs(path)
    return got
