"""What an OpenAI Agents SDK trace's agent runs ended with: each agent's final output, and each error's stages.

The SDK records an agent span's result nowhere: its final output is read off its steps (its last model message
without tool calls, or the tool output that ended its run), and the trace's top step carries the run's.  Its
span errors are error events whose stages the SDK implies: ``(non-fatal)`` marks a tool failure that went back
to the model (recovered at the agent's turn), an exception escaping is recorded again on the agent span,
re-wrapped (the same error propagating, counted once), and one that reaches a top-level agent span is the one
``Runner.run`` raised (it failed the run).  `convert_trace` (`openai_agents.py`) calls both once its steps are
built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trajdebug.core import chat
from trajdebug.core.model import ErrorEvent, StageChange, Step, replace
from trajdebug.sources.formats.convert import add_deps, declared, maybe_json


NON_FATAL = "(non-fatal)"
"""Marker the SDK puts in a span error's message when the run went on (the error text went to the model)."""


def final_outputs(ordered: list[tuple[str, dict[str, Any]]], steps: dict[str, Step], owner: Mapping[str, str | None]) -> None:
    """Each agent span's final output, and the run's on its top step (the SDK's spans carry neither).

    An agent's final output is its last model message when that message calls
    no tool (text, or JSON for a structured ``output_type``), or the output of
    its last tool when a tool ended the run (``tool_use_behavior``); an agent
    whose run raised has none.  The run's final output is that of its last
    top-level agent (each ``Runner.run`` in a trace has its own top step): a
    sub-agent run inside a tool (``Agent.as_tool``) answers the tool, never
    the run, and when the last top-level agent failed the run has no final
    output.
    """
    last_work: dict[str, str] = {}  # agent span -> its last finished model or tool step
    for sid, _ in sorted(ordered, key=lambda kv: steps[kv[0]].end_ns or 0):
        agent = owner.get(sid)
        if agent is not None and steps[sid].kind in ("llm", "tool"):
            last_work[agent] = sid
    final: dict[str, Any] = {}
    for agent, sid in last_work.items():
        s = steps[sid]
        if _raised(steps, agent, sid):
            continue
        if s.kind == "tool":
            final[agent] = s.output
        elif (
            isinstance(s.output, Mapping)
            and not chat.tool_calls(s.output)
            and s.output.get("content") is not None
        ):
            final[agent] = maybe_json(s.output["content"])
    for agent, value in final.items():
        if steps[agent].output is None:
            steps[agent] = replace(steps[agent], output=value)
        _tool_returns(steps, agent, last_work[agent], value)
    last_top: dict[str, str] = {}  # top step (one per Runner.run: its task span) -> its last top-level agent
    for sid, _ in ordered:
        if owner.get(sid) != sid or _in_tool(steps, sid):
            continue
        root = _root_of(steps, sid)
        # A handoff passes control to an agent that starts after its caller: the last to end holds the answer.
        if root not in last_top or (steps[sid].end_ns or 0, steps[sid].start_ns) >= (
            steps[last_top[root]].end_ns or 0,
            steps[last_top[root]].start_ns,
        ):
            last_top[root] = sid
    for root, agent in last_top.items():
        if agent in final and root != agent and steps[root].output is None and steps[root].kind == "agent":
            steps[root] = replace(steps[root], output=final[agent])


def _root_of(steps: Mapping[str, Step], sid: str) -> str:
    """The top step (no parent in the trace) enclosing a step."""
    for _ in range(1000):
        up = steps[sid].parent_id
        if up is None or up not in steps:
            return sid
        sid = up
    return sid


def _raised(steps: Mapping[str, Step], agent: str, made_by: str) -> bool:
    """Whether the agent's run raised after its last work: an error on the agent span, on that work, or on a
    span between them (the SDK records a rejected answer, e.g. invalid structured output, on the turn only)."""
    sid: str | None = made_by
    for _ in range(1000):
        if sid is None or sid not in steps:
            return False
        if steps[sid].status == "error":
            return True
        if sid == agent:
            return False
        sid = steps[sid].parent_id
    return False


def _in_tool(steps: Mapping[str, Step], sid: str) -> bool:
    """Whether a step runs inside a tool's span (an agent run as a tool answers the tool, not the run)."""
    up = steps[sid].parent_id
    for _ in range(1000):
        if up is None or up not in steps:
            return False
        if steps[up].kind == "tool":
            return True
        up = steps[up].parent_id
    return False


def _tool_returns(steps: dict[str, Step], agent: str, made_by: str, value: Any) -> None:
    """A tool that ran an agent (``Agent.as_tool``) returns that agent's final output: the tool's step takes it
    from the model turn (or tool) that produced it, a declared edge the SDK's spans leave unsaid."""
    up = steps[agent].parent_id
    for _ in range(8):  # the SDK nests the sub-agent's own trace span or two between them
        if up is None or up not in steps:
            return
        s = steps[up]
        if s.attributes.get("agents.span_type") == "function":
            if s.output == value or (isinstance(s.output, str) and maybe_json(s.output) == value):
                steps[up] = replace(s, deps=add_deps(s.deps, [declared(made_by)], up))
            return
        up = s.parent_id


def span_errors(
    ordered: list[tuple[str, dict[str, Any]]], steps: dict[str, Step], details: Mapping[str, str]
) -> dict[str, ErrorEvent]:
    """One event per error: an enclosing span reporting a descendant's error (its text within its own) is that error propagating."""
    events: dict[str, ErrorEvent] = {}
    parents = {sid: steps[sid].parent_id for sid, _ in ordered}
    depth: dict[str, int] = {}
    for sid, _ in ordered:
        p, d = parents[sid], 0
        while p is not None and d < 1000:
            p, d = parents.get(p), d + 1
        depth[sid] = d
    open_below: dict[str, list[str]] = {}  # span -> unrecovered error ids raised in its subtree
    for sid in sorted(parents, key=lambda x: -depth[x]):
        s = steps[sid]
        below = [eid for eid in open_below.get(sid, ()) if events[eid].stage != "recovered"]
        if s.error is not None:
            t = s.end_ns or s.start_ns
            text = details.get(sid, s.error.message)
            same = [
                eid
                for eid in below
                if _same_error(details.get(events[eid].step_id, events[eid].message), text)
            ]
            if same:
                eid = same[0]
                events[eid] = replace(
                    events[eid], stages=(*events[eid].stages, StageChange("propagated", sid, t))
                )
            else:
                eid = f"{sid}.0"
                stages = [StageChange("occurred", sid, t)]
                if NON_FATAL in s.error.message:
                    # The SDK sent the error text to the model as the tool's result and the run went on.
                    stages.append(
                        StageChange(
                            "recovered",
                            s.parent_id or sid,
                            t,
                            "the tool's error was returned to the model (non-fatal)",
                        )
                    )
                events[eid] = ErrorEvent(eid, sid, s.error.type, s.error.message, None, tuple(stages))
                below.append(eid)
            steps[sid] = replace(s, error=replace(s.error, error_id=eid))
        if parents[sid] is not None:
            open_below.setdefault(parents[sid], []).extend(below)  # type: ignore[arg-type]
        else:
            for eid in below:
                e = events[eid]
                reached_agent = any(_runner_raised(steps, c.step_id) for c in e.stages if c.step_id)
                if e.stage == "recovered" or not (reached_agent or e.stages[-1].step_id == sid):
                    continue
                why = (
                    "Runner.run raised it: the error left the agent run"
                    if reached_agent
                    else "the error reached the top-level span"
                )
                events[eid] = replace(
                    e,
                    stages=(
                        *e.stages,
                        StageChange("failed", sid, steps[sid].end_ns or e.stages[-1].time_ns, why),
                    ),
                )
    return events


def _runner_raised(steps: Mapping[str, Step], sid: str) -> bool:
    """Whether an error on this span is one the top-level ``Runner.run`` raised: it reached a top-level agent span,
    or its last turn (the SDK records a rejected answer, e.g. invalid structured output or an unknown tool, on the
    turn only, then raises).  Inside a tool (``Agent.as_tool``) it is the sub-run's, the tool's caller may go on."""
    s = steps[sid]
    typ = s.attributes.get("agents.span_type")
    if typ not in ("agent", "turn") or _in_tool(steps, sid):
        return False
    return typ == "agent" or not any(
        o.parent_id == s.parent_id and o.attributes.get("agents.span_type") == "turn" and o.start_ns > s.start_ns
        for o in steps.values()
    )


def _same_error(inner: str, outer: str) -> bool:
    """Whether an enclosing span's error text re-reports an inner error's (the SDK re-wraps, never shortens)."""
    return bool(inner) and inner in outer


__all__ = ["NON_FATAL", "final_outputs", "span_errors"]
