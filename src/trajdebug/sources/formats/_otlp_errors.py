"""The errors of one trace's spans as error events: one per error, its propagation through enclosing spans folded
in, and the OpenAI Agents SDK's span errors read by the rules its own trace processor uses.

Split from `_otlp_run` (which assembles the run and calls these): an error's lifecycle is read from the span tree
deepest first, so a parent that records a child's exception again is that error propagating, not a new one.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from trajdebug.core.model import ErrorEvent, ErrorInfo, StageChange, Step
from trajdebug.sources.formats import _semconv as sc
from trajdebug.sources.formats import agents_sdk
from trajdebug.sources.formats.otlp_json import ERROR, EXCEPTION_EVENTS, Span


def _exceptions(s: Span) -> list[tuple[str, int, dict[str, Any]]]:
    return [e for e in s.events if e[0] in EXCEPTION_EVENTS]


def error_info(s: Span) -> ErrorInfo | None:
    """The error a span ended with: its last exception event, else its status, else ``error.type``."""
    if not s.events and s.status_code != 2 and "error.type" not in s.attrs:
        return None  # most spans: told without a list built or a lookup made twice
    exc = _exceptions(s)
    if exc:
        _, _, a = exc[-1]
        return ErrorInfo(
            type=str(a.get("exception.type") or s.attrs.get("error.type") or "Exception"),
            message=str(a.get("exception.message") or s.status_message or ""),
            error_id=a.get(ERROR + "id"),
            traceback=a.get("exception.stacktrace"),
        )
    if s.status_code == 2 or s.attrs.get("error.type"):
        return ErrorInfo(
            type=str(s.attrs.get("error.type") or "Error"),
            message=s.status_message,
            error_id=s.attrs.get(ERROR + "id"),
        )
    return None


def trace_errors(
    spans: list[Span], by_id: Mapping[str, Span], ids: Mapping[str, str], steps: dict[str, Step]
) -> list[ErrorEvent]:
    """Error events of a foreign trace, one per error, with propagation folded in.

    Children are visited before parents (deepest first), so when an enclosing
    span records the same exception type and message as a child's error, it is
    that error propagating; it then fails the run if it reaches a root span.
    """
    events: dict[str, ErrorEvent] = {}
    by_span: dict[str, list[str]] = {}
    # Only the spans with an error are visited (most have none): their depths alone are needed.
    failed = [s for s in spans if steps[s.span_id].error is not None]
    depth = {s.span_id: _depth(s, by_id) for s in failed}
    for s in sorted(failed, key=lambda x: (-depth[x.span_id], x.start_ns)):
        info = steps[s.span_id].error
        assert info is not None
        sid = ids[s.span_id]
        child_errors = [eid for c in s.children for eid in by_span.get(c.span_id, ())]
        same = [
            eid
            for eid in child_errors
            if (events[eid].type, events[eid].message) == (info.type, info.message)
        ]
        t = s.end_ns or s.start_ns
        if same:
            eid = same[0]
            e = events[eid]
            events[eid] = ErrorEvent(
                e.error_id, e.step_id, e.type, e.message, e.parent_error_id,
                (*e.stages, StageChange("propagated", sid, t)), e.attempt, e.attributes,
            )  # fmt: skip
        else:
            eid = f"{s.span_id}.0"
            exc = _exceptions(s)
            occurred = exc[-1][1] if exc and exc[-1][1] else t
            stages = [StageChange("occurred", sid, occurred)]
            cause = child_errors[0] if child_errors else None
            # Only an explicit signal counts as recovery here ("Error running tool
            # (non-fatal)", OpenAI Agents via OpenInference, in the SDK's own message, not in
            # the exception's text its data carries); whether a caught error
            # was recovered or ignored is the lifecycle analysis' call.
            # ``exception.escaped`` is not used: the Python SDK writes "False" even
            # for exceptions that escaped.
            if agents_sdk.non_fatal(_sdk_message(s.status_message)):
                parent = ids.get(s.parent_id or "", sid)
                stages.append(StageChange("recovered", parent, t, s.status_message or info.message))
            events[eid] = ErrorEvent(eid, sid, info.type, info.message, cause, tuple(stages))
        by_span.setdefault(s.span_id, []).append(eid)
        steps[s.span_id] = _with_error_id(steps[s.span_id], eid)
        if s.parent_id not in by_id and events[eid].stage != "recovered":
            e = events[eid]
            events[eid] = ErrorEvent(
                e.error_id, e.step_id, e.type, e.message, e.parent_error_id,
                (*e.stages, StageChange("failed", sid, t, "the error reached the root span")), e.attempt, e.attributes,
            )  # fmt: skip
    return sorted(events.values(), key=lambda e: e.stages[0].time_ns)


AGENTS_SDK_SCOPES = ("openinference.instrumentation.openai_agents",)
"""Instrumentation scopes that write an OpenAI Agents SDK trace as spans: OpenInference's (a root span per
trace, the SDK's spans below it with their span errors as status messages, ``message: data``)."""


def agents_sdk_errors(spans: list[Span], ids: Mapping[str, str], steps: dict[str, Step]) -> list[ErrorEvent]:
    """Error events of an OpenAI Agents SDK trace, by the rules the recorder's trace processor reads the SDK's
    own spans with (`trajdebug.sources.formats.agents_sdk`): an error re-reported by an enclosing span, its text
    within the enclosing one's, is one error propagated (a tool's through its turn to its agent); a
    ``(non-fatal)`` one recovered; and an unrecovered error in the agent that ended the run, with no model call
    of that agent after it, is one ``Runner.run`` raised (it failed the run, though the instrumentation ends
    the trace's top span with status OK whatever the run did).  Each step with an error takes its error id.

    Only a trace whose top spans are all the instrumentation's is read so: under a span of the application's
    own, that span's status says whether the error escaped the code that called ``Runner.run``."""
    by_step: dict[str, Step] = {}
    owner: dict[str, str | None] = {}  # step -> its enclosing agent span (itself for an agent span)
    details: dict[str, str] = {}
    sdk_messages: dict[str, str] = {}
    for s in spans:  # by start: a parent before its children
        sid = ids[s.span_id]
        step = by_step[sid] = steps[s.span_id]
        is_agent = step.kind == "agent" and sc.agent_name(s.attrs) is not None  # not the trace's own top span
        owner[sid] = sid if is_agent else owner.get(step.parent_id or "")
        if step.error is not None:
            sdk_messages[sid] = _sdk_message(s.status_message)
            if (detail := _sdk_detail(step.error.message)) is not None:
                details[sid] = detail
    order = list(by_step)
    events = agents_sdk.span_errors(order, by_step, details, sdk_messages)
    agents_sdk.raised_at_the_end(order, by_step, owner, events)
    for s in spans:
        steps[s.span_id] = by_step[ids[s.span_id]]
    return sorted(events.values(), key=lambda e: e.stages[0].time_ns)


SDK_DETAIL_CAP = 4096
"""Longest status message whose data `_sdk_detail` reads as a Python literal (``ast.literal_eval`` takes about a
second per 100 kB of untrusted text); a longer one is taken as it is."""


def _sdk_message(status: str) -> str:
    """The SDK's own message in OpenInference's status message (``message: data``, the data a dict or None):
    the part the SDK wrote, without the data, whose error text is the exception's."""
    own, sep, _ = status.partition(": {")
    return own if sep else status.removesuffix(": None")


def _sdk_detail(message: str) -> str | None:
    """A span error's own text (the SDK's ``data["error"]``) in OpenInference's status message, which writes the
    SDK's error as ``message: data`` with the data as Python prints a dict; None when it holds none.  A message
    longer than `SDK_DETAIL_CAP` is not evaluated: the text after the data's ``'error'`` key is taken as it is
    (the key is written last by the SDK; quotes and escapes kept)."""
    _, sep, data = message.partition(": {")
    if not sep:
        return None
    if len(message) > SDK_DETAIL_CAP:
        _, key, rest = data.rpartition("'error': ")
        return (rest.removesuffix("}").strip("'\"") or None) if key else None
    try:
        value = ast.literal_eval("{" + data)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return str(value["error"]) if isinstance(value, dict) and value.get("error") else None


def raised_reason(e: ErrorEvent, steps: Mapping[str, Step], ids: Mapping[str, str]) -> str:
    """Why a run failed on an error its top span did not report: the error's own text at the step where it
    was last recorded before the run failed (as the recorder's trace processor says it)."""
    last = e.stages[-2] if len(e.stages) > 1 else e.stages[0]
    by_step = {ids[k]: v for k, v in steps.items()}
    step = by_step.get(last.step_id or "")
    message = step.error.message if step is not None and step.error is not None else e.message
    return agents_sdk.capped(_sdk_detail(message) or message)


def _with_error_id(step: Step, eid: str) -> Step:
    from trajdebug.core.model import replace

    assert step.error is not None
    out: Step = replace(step, error=replace(step.error, error_id=eid))
    return out


def _depth(s: Span, by_id: Mapping[str, Span]) -> int:
    d, seen = 0, set()
    while s.parent_id in by_id and s.span_id not in seen:
        seen.add(s.span_id)
        s = by_id[s.parent_id]  # type: ignore[index]
        d += 1
    return d
