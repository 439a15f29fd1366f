"""How an OpenAI Agents SDK trace's errors went and whether ``Runner.run`` raised, read off its spans alone.

The SDK records a span error as a message and its own text (``data.error``) and nothing of where it went:
``(non-fatal)`` marks a tool failure that went back to the model (recovered at the agent's turn), an
exception escaping is recorded again on the agent span, re-wrapped (the same error propagating, counted
once), and the trace's top span ends the same whether ``Runner.run`` raised or not.  Two routes read such
traces and share these rules: the recorder's trace processor (`trajdebug.integrations.openai_agents`, on
the SDK's own spans) and the OTLP importer (`_otlp_run`, on OpenInference's instrumentation of the SDK,
whose top span ends with status OK even when the run raised).

Each takes the steps already built (``steps`` by step id, ``order`` their ids by start) and ``owner``: each
step's enclosing agent span (itself for an agent span, None outside any agent).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from trajdebug.core.model import ErrorEvent, StageChange, Step, replace


NON_FATAL = "(non-fatal)"
"""Marker the SDK puts in a span error's message when the run went on (the error text went to the model)."""

REASON_CAP = 2000
"""Characters of an error's text a run's failure reason keeps (an exception's text can be any length)."""


def non_fatal(sdk_message: str) -> bool:
    """Whether the SDK marked a span error non-fatal: in its own message only (``SpanError.message``), never in
    the error's data, whose text is the exception's and may say anything (``"db down (non-fatal)"``)."""
    return NON_FATAL in sdk_message


def capped(reason: str) -> str:
    """A failure reason cut to `REASON_CAP` characters, an ellipsis marking the cut."""
    return reason if len(reason) <= REASON_CAP else reason[:REASON_CAP] + "..."


def span_errors(
    order: Sequence[str], steps: dict[str, Step], details: Mapping[str, str], sdk_messages: Mapping[str, str]
) -> dict[str, ErrorEvent]:
    """One event per error: an enclosing span reporting a descendant's error (its text within its own) is that
    error propagating.  ``details``: a span's error's own text (the SDK's ``data.error``) where it differs from
    its message; ``sdk_messages``: a span error's message as the SDK wrote it (``SpanError.message``, without
    its data), the only text the `NON_FATAL` marker is read in.  Sets each errored step's ``error_id``."""
    events: dict[str, ErrorEvent] = {}
    parents = {sid: steps[sid].parent_id for sid in order}
    depth: dict[str, int] = {}
    for sid in order:
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
                if non_fatal(sdk_messages.get(sid, "")):
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


def last_agents(order: Sequence[str], steps: Mapping[str, Step], owner: Mapping[str, str | None]) -> dict[str, str]:
    """Each top step's (one per ``Runner.run``) last top-level agent span: the one that ended the run.

    An agent run as a tool (``Agent.as_tool``) answers the tool, never the run; a handoff passes control to an
    agent that starts after its caller, so the last to end is the one that ended the run."""
    last_top: dict[str, str] = {}
    for sid in order:
        if owner.get(sid) != sid or in_tool(steps, sid):
            continue
        root = root_of(steps, sid)
        if root not in last_top or (steps[sid].end_ns or 0, steps[sid].start_ns) >= (
            steps[last_top[root]].end_ns or 0,
            steps[last_top[root]].start_ns,
        ):
            last_top[root] = sid
    return last_top


def raised_at_the_end(
    order: Sequence[str],
    steps: Mapping[str, Step],
    owner: Mapping[str, str | None],
    events: dict[str, ErrorEvent],
) -> None:
    """Fail the run on an error that ended it though no span the run's end reads says so.

    The SDK leaves an error some child span reports off the agent span (a tool called with arguments
    its schema rejects, ``ModelBehaviorError``, is recorded on the tool's span only) and ``Runner.run``
    raises it; OpenInference's instrumentation ends the trace's top span with status OK whatever the run
    did.  The trace still tells: the error is unrecovered (not the SDK's non-fatal error fed back to the
    model), it is in the agent that ended the run, and no model call of that agent started after it (a
    run that went on after an error calls the model again, as after a model call the SDK retried).  When
    another unrecovered error reached the agent span itself (parallel tool calls that both raised), that one
    is what ``Runner.run`` raised, and the error that stayed below it does not fail the run.
    """
    last_agent = last_agents(order, steps, owner)
    llm_starts: dict[str, list[int]] = {}  # agent span -> its model steps' starts
    for sid in order:
        if steps[sid].kind == "llm" and owner.get(sid) is not None:
            llm_starts.setdefault(str(owner[sid]), []).append(steps[sid].start_ns)
    # Agent spans an unrecovered error reached (re-reported there): what Runner.run raised is that error.
    reached = {c.step_id for e in events.values() if e.stage != "recovered" for c in e.stages[1:]}
    for eid, e in list(events.items()):
        if e.stage in ("recovered", "failed"):
            continue
        at = e.stages[-1].step_id
        if at is None or at not in steps:
            continue
        root = root_of(steps, at)
        agent = last_agent.get(root)
        if agent is None or owner.get(at) != agent or root == at:
            continue
        if agent in reached and at != agent:
            continue  # another error (a parallel call's) reached the agent span: that one is what left the run
        ended = steps[e.step_id].end_ns or steps[e.step_id].start_ns
        if any(start >= ended for start in llm_starts.get(agent, ())):
            continue
        why = "Runner.run raised it: nothing ran after the error in the agent that ended the run"
        events[eid] = replace(
            e, stages=(*e.stages, StageChange("failed", root, steps[root].end_ns or e.stages[-1].time_ns, why))
        )


def root_of(steps: Mapping[str, Step], sid: str) -> str:
    """The top step (no parent in the trace) enclosing a step."""
    for _ in range(1000):
        up = steps[sid].parent_id
        if up is None or up not in steps:
            return sid
        sid = up
    return sid


def in_tool(steps: Mapping[str, Step], sid: str) -> bool:
    """Whether a step runs inside a tool's span (an agent run as a tool answers the tool, not the run)."""
    up = steps[sid].parent_id
    for _ in range(1000):
        if up is None or up not in steps:
            return False
        if steps[up].kind == "tool":
            return True
        up = steps[up].parent_id
    return False


def _runner_raised(steps: Mapping[str, Step], sid: str) -> bool:
    """Whether an error on this span is one the top-level ``Runner.run`` raised: it reached a top-level agent span,
    or its last turn (the SDK records a rejected answer, e.g. invalid structured output or an unknown tool, on the
    turn only, then raises).  Inside a tool (``Agent.as_tool``) it is the sub-run's, the tool's caller may go on.
    Told by the SDK's span type (``agents.span_type``), which only the recorder's steps carry: on the OTLP route
    `raised_at_the_end` tells the same."""
    s = steps[sid]
    typ = s.attributes.get("agents.span_type")
    if typ not in ("agent", "turn") or in_tool(steps, sid):
        return False
    return typ == "agent" or not any(
        o.parent_id == s.parent_id and o.attributes.get("agents.span_type") == "turn" and o.start_ns > s.start_ns
        for o in steps.values()
    )


def _same_error(inner: str, outer: str) -> bool:
    """Whether an enclosing span's error text re-reports an inner error's (the SDK re-wraps, never shortens)."""
    return bool(inner) and inner in outer


__all__ = ["NON_FATAL", "REASON_CAP", "capped", "in_tool", "last_agents", "non_fatal", "raised_at_the_end", "root_of", "span_errors"]
