"""Shared builders of recorded steps for tests of the analysis."""

from __future__ import annotations

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
