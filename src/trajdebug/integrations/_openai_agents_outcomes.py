"""What an OpenAI Agents SDK trace's agent runs ended with: each agent's final output.

The SDK records an agent span's result nowhere: its final output is read off its steps (its last model message
without tool calls, or the tool output that ended its run), and the trace's top step carries the run's.  How its
span errors went (propagated, recovered, failed the run) is read by the rules the OTLP importer shares
(`trajdebug.sources.formats.agents_sdk`).  `convert_trace` (`openai_agents.py`) calls `final_outputs` once its
steps and errors are built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trajdebug.core import chat
from trajdebug.core.model import Step, replace
from trajdebug.sources.formats.agents_sdk import last_agents
from trajdebug.sources.formats.convert import add_deps, declared, maybe_json


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
    for root, agent in last_agents([sid for sid, _ in ordered], steps, owner).items():
        if agent in final and root != agent and steps[root].output is None and steps[root].kind == "agent":
            steps[root] = replace(steps[root], output=final[agent])


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


__all__ = ["final_outputs"]
