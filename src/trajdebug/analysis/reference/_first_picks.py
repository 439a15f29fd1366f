"""First picks: the tool a model's first tool call in a run picked among the tools it was offered.

A first call's history can name no tool, so the tool it picks is given by the tools it was offered, not made
up; a later call's history names the tools called before, and a call there picking an offered tool that no
message names is the wrong pick the grounded check is for.  The invariants (`_invariants.py`) ask
`picked_first` before they call an output value ungrounded.  Which call is first is read once per run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trajdebug.analysis.reference._profile import _tools_of
from trajdebug.core.chat import input_messages, normalize_llm_step, tool_calls, tool_names
from trajdebug.core.model import Step


def picked_first(step: Step, steps: Mapping[str, Step] | None, field: str, value: str) -> bool:
    """Whether ``value`` of the output field ``field`` is the tool name a first tool call picked (`first_picks`)."""
    return field == "name" and value.casefold() in first_picks(step, steps)


def first_picks(step: Step, steps: Mapping[str, Step] | None) -> frozenset[str]:
    """The tool names (case-folded) a model's first tool call in the run picked among the tools it was offered.

    A first call's history can name no tool, so the name it picks is given by the tools offered; a later call's
    history holds the tools called before, and a call there picking an offered tool no message names is the
    wrong pick the grounded check is for.  "First" is read in run order and on the normalized request: no
    earlier model call of the same agent in ``steps`` made a tool call (a stateless planner's every prompt is
    fresh), and its messages hold no tool call or result (Anthropic ``tool_use`` blocks, Responses items).
    Empty without the run's steps (nothing tells it is first).  Read where a violation is judged only: counted
    as given in passing runs, it would make "always given" an invariant their first calls never showed."""
    if step.kind != "llm" or steps is None:
        return frozenset()
    given, said, _ = normalize_llm_step(step.input, step.output, step.attributes)
    if any(m.get("tool_calls") or m.get("role") == "tool" for m in input_messages(given)) or _raw_called(step.input):
        return frozenset()
    if _called_before(step, steps):
        return frozenset()
    picked = {str(c.get("name") or (c.get("function") or {}).get("name") or "").casefold() for c in tool_calls(said)}
    offered = frozenset(n.casefold() for n in tool_names(_tools_of(step)))
    # A request that names an offered tool ("call read_gauge") asks for it: the pick is checked (review rev45n2).
    asked = " ".join(str(m.get("content") or "") for m in input_messages(given)).casefold()
    return frozenset() if any(n and n in asked for n in offered) else offered & picked


def _called_before(step: Step, steps: Mapping[str, Step]) -> bool:
    """Whether a model call of the step's agent before it in ``steps`` (all of them, when it is not there)
    made a tool call: `_first_calls` of the mapping, read once per run."""
    pos, first = _first_calls(steps)
    at, end = first.get(step.agent), pos.get(step.step_id, len(steps))
    return at is not None and at < end


def _first_calls(steps: Mapping[str, Step]) -> tuple[dict[str, int], dict[str | None, int]]:
    """Each step's position in ``steps`` and each agent's first model call that made a tool call, in one pass.

    Asked of many steps of one run: walking the run's earlier calls for each of them was quadratic on a long
    run of text-only turns (review rev45n2, N3).  Built once per steps map (one slot, as `inside_of`): the map
    must not change while it is in use (a graph's steps map never does; review rev46p L1)."""
    last = _FIRSTS[-1] if _FIRSTS else None
    if last is not None and last[0] is steps and last[1] == len(steps):
        return last[2]
    pos: dict[str, int] = {}
    first: dict[str | None, int] = {}
    for i, t in enumerate(steps.values()):
        pos.setdefault(t.step_id, i)
        if t.kind == "llm" and t.agent not in first and tool_calls(normalize_llm_step(t.input, t.output, t.attributes)[1]):
            first[t.agent] = i
    # One slot, replaced whole (threads see an old or a new entry, never half of one).
    _FIRSTS[:] = [(steps, len(steps), (pos, first))]
    return pos, first


_FIRSTS: list[tuple[Mapping[str, Step], int, tuple[dict[str, int], dict[str | None, int]]]] = []


def _raw_called(given: Any) -> bool:
    """Whether a raw request holds a tool call or result in a shape the normalization may leave (Chat
    Completions ``tool_calls``/``role: tool``, Responses ``function_call*`` items, Anthropic blocks)."""
    msgs = given.get("messages", given.get("input")) if isinstance(given, Mapping) else given
    kinds = ("function_call", "function_call_output", "tool_use", "tool_result")
    return isinstance(msgs, list) and any(
        isinstance(m, Mapping)
        and (
            bool(m.get("tool_calls"))
            or m.get("role") == "tool"
            or m.get("type") in kinds
            or (isinstance(m.get("content"), list) and any(isinstance(b, Mapping) and b.get("type") in kinds for b in m["content"]))
        )
        for m in msgs
    )


__all__ = [
    "picked_first",
    "first_picks",
]
