"""The links between the steps of a converted LangChain run: declared edges, state writers and retries.

LangChain's tree says which run ran inside which; `TrajdebugTracer` (`langchain.py`) turns each run into a step,
and these add what the tree implies without reading content: a ``RunnableSequence`` pipes each child's output
into the next (`sequence_edges`), a chain that ran a sibling inside its own span returned what it got from it
(`enclosed_edges`), a tool call id links a model to the tool it called and the tool to the model that read its
result (`tool_call_edges`), a LangGraph node read a state key some earlier node (or a call inside it) wrote
(`state_writer`), and a ``RunnableRetry`` attempt retries the one before it, whose error it recovers
(`retry_links`).  All are declared edges: the recording states them, the analysis infers nothing here.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.tracers.schemas import Run as LCRun

from trajdebug.core import chat
from trajdebug.core.model import Dependency, ErrorEvent, StageChange, Step
from trajdebug.integrations._langchain_read import (
    _add_stage,
    _contains,
    _is_graph_node,
    _replace,
    _with_deps,
    answers,
    plain,
)
from trajdebug.sources.formats.convert import declared


def _leaves(runs: Sequence[LCRun]) -> list[LCRun]:
    """The model, tool and retriever calls among these runs and their descendants."""
    out: list[LCRun] = []
    for r in runs:
        out.extend([r] if r.run_type in ("llm", "chat_model", "tool", "retriever") else _leaves(r.child_runs))
    return out


def calls_of(node: LCRun) -> list[LCRun]:
    """The model, tool and retriever calls a LangGraph node ran itself (not those of a nested graph's nodes)."""
    out: list[LCRun] = []
    stack = list(node.child_runs)
    while stack:
        r = stack.pop()
        if r.run_type in ("llm", "chat_model", "tool", "retriever"):
            out.append(r)
        elif not _is_graph_node(r):
            stack.extend(r.child_runs)
    return sorted(out, key=lambda c: (c.start_time, c.dotted_order or ""))


def _wrote(update: Mapping[str, Any], key: str, value: Any) -> bool:
    """Whether a node's update wrote the value a later node read under ``key``: the same value, or items of an
    accumulated list (a channel with a reducer)."""
    if key not in update:
        return False
    wrote = plain(update[key])
    return wrote == value or (isinstance(value, list) and isinstance(wrote, list) and bool(wrote) and _contains(value, wrote))


def sequence_edges(order: Sequence[LCRun], steps: dict[str, Step]) -> None:
    """A RunnableSequence feeds each child's output to the next child (declared data edges)."""
    for r in order:
        ser_id = (r.serialized or {}).get("id") or []
        if r.name != "RunnableSequence" and ser_id[-1:] != ["RunnableSequence"]:
            continue
        kids = sorted(r.child_runs, key=lambda c: (c.start_time, c.dotted_order or ""))
        for a, b in itertools.pairwise(kids):
            s = steps[str(b.id)]
            steps[str(b.id)] = _with_deps(s, [declared(str(a.id))])


def enclosed_edges(order: Sequence[LCRun], steps: dict[str, Step]) -> None:
    """A chain that ran a sibling inside its own span returned what it got from it (declared data edges).

    LangGraph's node function (``call_model``) invokes the model with the node's config, so the model's
    runs are reported as the function's siblings, not its children: without an edge the function's
    answer looks like it was made from nothing, and the model call that made it is not its producer.
    """
    for r in order:
        if r.run_type != "chain":
            continue
        for sib in r.child_runs:
            inner = [
                c
                for c in r.child_runs
                if c is not sib and c.start_time > sib.start_time and c.end_time is not None
                and sib.end_time is not None and c.end_time <= sib.end_time
            ]
            if sib.run_type != "chain" or not inner:
                continue
            # The model or tool calls inside (a prompt | model sequence is a container, not a producer).
            made = [str(c.id) for c in _leaves(inner) or inner]
            s = steps[str(sib.id)]
            steps[str(sib.id)] = _with_deps(s, [declared(sid) for sid in made])


def tool_call_edges(order: Sequence[LCRun], steps: dict[str, Step]) -> None:
    """LLM -> tool -> LLM by tool-call id (declared data edges)."""
    issued: dict[str, str] = {}
    ran: dict[str, str] = {}
    for r in order:
        s = steps[str(r.id)]
        for c in s.attributes.get("tool_call_ids", ()):
            issued[c] = s.step_id
        if s.kind == "tool" and s.attributes.get("tool_call_id"):
            ran[str(s.attributes["tool_call_id"])] = s.step_id
    for sid, s in list(steps.items()):
        new: list[Dependency] = []
        if s.kind == "tool" and s.attributes.get("tool_call_id") in issued:
            new.append(declared(issued[s.attributes["tool_call_id"]]))
        if s.kind == "llm":
            for m in chat.input_messages(s.input):
                if m.get("tool_call_id") in ran:
                    new.append(declared(ran[m["tool_call_id"]]))
        if new:
            steps[sid] = _with_deps(s, new)


def state_writer(earlier: Sequence[LCRun], reader: LCRun, key: str, value: Any, steps: Mapping[str, Step]) -> str | None:
    """The step that wrote the value ``reader`` read under ``key``: the latest earlier node whose update
    wrote it, or that node's last model or tool call whose answer holds what the node wrote; None when no
    recorded update holds it (the graph's input)."""
    if value in (None, "", [], {}):
        return None
    for w in reversed(earlier):
        update = steps[str(w.id)].output
        if w.end_time is None or w.end_time > reader.start_time or not _wrote(update, key, value):
            continue
        wrote = plain(update[key])
        made = [c for c in calls_of(w) if str(c.id) in steps and answers(steps[str(c.id)].output, wrote)]
        return str(made[-1].id) if made else str(w.id)
    return None


def retry_links(order: Sequence[LCRun], steps: dict[str, Step], errors: dict[str, ErrorEvent]) -> None:
    """RunnableRetry attempts: each retries the previous sibling attempt, whose error it recovers."""
    for r in order:
        attempts = sorted(
            (
                c
                for c in r.child_runs
                if steps[str(c.id)].attempt > 1 or any(t.startswith("retry:") for t in c.tags or ())
            ),
            key=lambda c: steps[str(c.id)].attempt,
        )
        if not attempts:
            continue
        first = [c for c in r.child_runs if c not in attempts and c.name == attempts[0].name]
        chain = sorted(first, key=lambda c: c.start_time)[-1:] + attempts
        for prev, cur in itertools.pairwise(chain):
            p, c = steps[str(prev.id)], steps[str(cur.id)]
            steps[str(cur.id)] = _replace(c, retry_of=p.step_id)
            if p.error is not None and p.error.error_id in errors:
                e = errors[p.error.error_id]
                if e.stage == "occurred":
                    errors[e.error_id] = _add_stage(
                        e,
                        StageChange("recovered", c.step_id, c.start_ns, f"retried (attempt {c.attempt})"),
                    )


__all__ = ["calls_of", "enclosed_edges", "retry_links", "sequence_edges", "state_writer", "tool_call_edges"]
