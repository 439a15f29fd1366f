"""Record OpenAI Agents SDK runs as trajdebug runs, through a tracing processor.

Usage::

    from agents.tracing import add_trace_processor
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    processor = TrajdebugProcessor(path="runs.jsonl")   # or store=..., or neither
    add_trace_processor(processor)
    Runner.run_sync(agent, "question")
    run = processor.to_run()

Each SDK trace becomes a run and each span a step (step id: the span id
without its ``span_`` prefix).  Span kinds map as OpenInference maps them
(agent -> agent, function -> tool, generation/response -> llm, guardrail ->
condition; the SDK's task and turn spans enclose steps like agents); the
step's agent is its enclosing agent span.  A span error is an
error event; ``"Error running tool (non-fatal)"`` is the SDK telling that the
tool's failure went back to the model as its result, so that error is
*recovered* at the enclosing step (the agent's turn).  Edges: a tool depends on the model response
that called it (declared when the call's name and arguments match, else on
the agent's latest model step, inferred), a model step on the tool results its
input holds (by call id), a handoff's target agent on the handoff (control);
content matching (`trajdebug.analysis.inference._infer`) adds the rest.

Processor callbacks run on the SDK's threads: they are lock-protected, never
block on I/O beyond an optional append at trace end, and swallow their own
errors (the SDK's contract), logging them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents.tracing import Span, Trace, TracingProcessor

from trajdebug.formats._common import add_deps, declared, finish_run, inferred, maybe_json, time_ns
from trajdebug.model import Dependency, ErrorEvent, ErrorInfo, Run, StageChange, Step, replace


log = logging.getLogger("trajdebug")

NON_FATAL = "(non-fatal)"
"""Marker the SDK puts in a span error's message when the run went on (the error text went to the model)."""

_KIND = {
    "agent": "agent",
    "function": "tool",
    "mcp_tools": "tool",
    "generation": "llm",
    "response": "llm",
    "transcription": "llm",
    "speech": "llm",
    "guardrail": "condition",
    "task": "agent",
    "turn": "agent",
}
TOOL_FALLBACK_CONFIDENCE = 0.8
"""Confidence of a tool's edge to its agent's latest model step when no call in that step matches it."""


def _strip(prefix: str, value: Any) -> str | None:
    return None if value is None else str(value).removeprefix(prefix)


def _plain(value: Any) -> Any:
    from trajdebug._encode import to_jsonable

    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return to_jsonable(dump(exclude_none=True))
        except Exception:  # noqa: BLE001 - a value must not break conversion
            return to_jsonable(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return to_jsonable(value)


class TrajdebugProcessor(TracingProcessor):
    """An Agents SDK tracing processor building one trajdebug `Run` per trace.

    Args:
        store: A `trajdebug.store.Store`, or a path to one, to save each run into.
        path: A JSONL file to append each run's records to.
        infer: Add content-matched dependencies (`trajdebug.analysis.inference._infer`) to each run.
    """

    def __init__(self, *, store: Any = None, path: str | Path | None = None, infer: bool = True) -> None:
        self.runs: list[Run] = []
        self._store = store
        self._path = Path(path) if path is not None else None
        self._infer = infer
        self._lock = threading.Lock()
        self._traces: dict[str, dict[str, Any]] = {}
        self._spans: dict[str, list[dict[str, Any]]] = {}

    # -- TracingProcessor -------------------------------------------------------------

    def on_trace_start(self, trace: Trace) -> None:
        """Remember the trace's name and metadata."""
        try:
            with self._lock:
                self._traces[trace.trace_id] = dict(trace.export() or {})
                self._spans.setdefault(trace.trace_id, [])
        except Exception:
            log.warning("trajdebug: could not record trace start", exc_info=True)

    def on_trace_end(self, trace: Trace) -> None:
        """Build, keep and save the trace's run."""
        try:
            self._finish(trace.trace_id, ended=True)
        except Exception:
            log.warning("trajdebug: could not convert trace %s", trace.trace_id, exc_info=True)

    def on_span_start(self, span: Span[Any]) -> None:
        """Nothing to do: spans are converted when they end."""

    def on_span_end(self, span: Span[Any]) -> None:
        """Keep the finished span's data (and the live objects the export leaves out)."""
        try:
            data = dict(span.export() or {})
            sd = span.span_data
            extra: dict[str, Any] = {}
            if getattr(sd, "type", None) == "response":
                extra["input"] = _plain(getattr(sd, "input", None))
                response = getattr(sd, "response", None)
                extra["output"] = _plain(getattr(response, "output", None)) if response is not None else None
                extra["model"] = getattr(response, "model", None) if response is not None else None
            data["_extra"] = extra
            with self._lock:
                self._spans.setdefault(span.trace_id, []).append(data)
        except Exception:
            log.warning("trajdebug: could not record span", exc_info=True)

    def shutdown(self) -> None:
        """Convert traces still open (their runs are incomplete)."""
        for trace_id in list(self._traces):
            try:
                self._finish(trace_id, ended=False)
            except Exception:
                log.warning("trajdebug: could not convert trace %s", trace_id, exc_info=True)

    def force_flush(self) -> None:
        """Nothing buffered beyond open traces."""

    # -- results ------------------------------------------------------------------------

    def to_run(self) -> Run:
        """The run of the most recently finished trace.

        Raises:
            LookupError: no trace has finished yet.
        """
        if not self.runs:
            raise LookupError("no Agents SDK trace has finished under this processor yet")
        return self.runs[-1]

    def _finish(self, trace_id: str, *, ended: bool) -> None:
        with self._lock:
            meta = self._traces.pop(trace_id, {})
            spans = self._spans.pop(trace_id, [])
        run = convert_trace(trace_id, meta, spans, ended=ended, infer=self._infer)
        with self._lock:
            self.runs.append(run)
        from trajdebug.integrations._deliver import deliver

        deliver(run, store=self._store, path=self._path, lock=self._lock)


# -- conversion -------------------------------------------------------------------------


def convert_trace(
    trace_id: str,
    meta: Mapping[str, Any],
    spans: list[dict[str, Any]],
    *,
    ended: bool = True,
    infer: bool = True,
) -> Run:
    """Build a run from an exported trace (``Trace.export()``) and its exported spans (``Span.export()``)."""
    by_id = {str(_strip("span_", s.get("id"))): s for s in spans}
    ordered = sorted(by_id.items(), key=lambda kv: time_ns(kv[1].get("started_at")) or 0)
    agents: dict[str, str | None] = {}
    steps: dict[str, Step] = {}
    for sid, s in ordered:
        sd = s.get("span_data") or {}
        parent = _strip("span_", s.get("parent_id"))
        typ = _span_type(sd)
        if typ == "agent":
            agents[sid] = str(sd.get("name"))
        elif typ == "turn" and (sd.get("data") or {}).get("agent_name"):
            agents[sid] = str(sd["data"]["agent_name"])
        else:
            agents[sid] = agents.get(parent or "")
        steps[sid] = _step(sid, parent if parent in by_id else None, s, agents[sid])
    _edges(ordered, steps)
    errors = _errors(ordered, steps, by_id)
    roots = [steps[sid] for sid, s in ordered if _strip("span_", s.get("parent_id")) not in by_id]
    failed = [e for e in errors.values() if e.stage == "failed"]
    ends = [s.end_ns for s in steps.values() if s.end_ns is not None]
    starts = [s.start_ns for s in steps.values()]
    unfinished = not ended or any(s.end_ns is None for s in steps.values())
    run = Run(
        run_id=str(_strip("trace_", trace_id)),
        name=str(meta.get("workflow_name") or (roots[0].name if roots else "agents-trace")),
        start_ns=min(starts) if starts else 0,
        end_ns=None if unfinished or not ends else max(ends),
        outcome="incomplete" if unfinished else ("failure" if failed else "success"),
        failure_reason=f"{failed[0].message}" if failed and not unfinished else None,
        metadata={
            "source_format": "openai-agents",
            **({"group_id": meta["group_id"]} if meta.get("group_id") else {}),
            **dict(meta.get("metadata") or {}),
        },
        steps=tuple(sorted(steps.values(), key=lambda s: s.start_ns)),
        errors=tuple(sorted(errors.values(), key=lambda e: e.stages[0].time_ns)),
    )
    return finish_run(run, infer=infer)


def _span_type(sd: Mapping[str, Any]) -> str:
    """The span's type; task and turn spans export as ``custom`` with the real type in their data."""
    typ = str(sd.get("type", "custom"))
    data = sd.get("data")
    if typ == "custom" and isinstance(data, Mapping) and data.get("sdk_span_type"):
        return str(data["sdk_span_type"])
    return typ


def _step(sid: str, parent: str | None, s: Mapping[str, Any], agent: str | None) -> Step:
    sd = dict(s.get("span_data") or {})
    extra = s.get("_extra") or {}
    typ = _span_type(sd)
    name = str(sd.get("name") or "")
    inp: Any = None
    out: Any = None
    attrs: dict[str, Any] = {"agents.span_type": typ}
    if typ == "function":
        inp, out = maybe_json(sd.get("input")), maybe_json(sd.get("output"))
    elif typ == "generation":
        inp, out = sd.get("input"), sd.get("output")
        name = name or f"generation {sd.get('model') or ''}".strip()
        if sd.get("model"):
            attrs["model"] = sd["model"]
    elif typ == "response":
        inp, out = extra.get("input"), extra.get("output")
        name = name or "response"
        if extra.get("model"):
            attrs["model"] = extra["model"]
        if sd.get("response_id"):
            attrs["response_id"] = sd["response_id"]
    elif typ == "handoff":
        name = f"handoff {sd.get('from_agent')} -> {sd.get('to_agent')}"
        out = {"from_agent": sd.get("from_agent"), "to_agent": sd.get("to_agent")}
    elif typ == "task":
        name = str((sd.get("data") or {}).get("name") or "task")
    elif typ == "turn":
        name = f"turn {(sd.get('data') or {}).get('turn')}"
    elif typ == "custom":
        out = sd.get("data")
    elif typ == "guardrail":
        out = {"triggered": sd.get("triggered")}
    elif typ == "agent":
        attrs.update({k: sd[k] for k in ("tools", "handoffs", "output_type") if sd.get(k)})
    calls = _calls(out)
    if calls:
        attrs["tool_call_ids"] = [c[0] for c in calls if c[0]]
    if sd.get("usage"):
        attrs["usage"] = sd["usage"]
    err = s.get("error")
    info = None
    if err:
        data = err.get("data") or {}
        detail = data.get("error") if isinstance(data, Mapping) else None
        message = f"{err.get('message')}: {detail}" if detail else str(err.get("message") or "")
        info = ErrorInfo(type="ToolError" if typ == "function" else "AgentsSDKError", message=message)
    start = time_ns(s.get("started_at")) or 0
    return Step(
        step_id=sid,
        name=name or typ,
        kind=_KIND.get(typ, "other"),  # type: ignore[arg-type]
        parent_id=parent,
        agent=agent,
        input=inp,
        output=out,
        status="error" if info else "ok",
        error=info,
        start_ns=start,
        end_ns=time_ns(s.get("ended_at")),
        attributes=attrs,
    )


def _calls(output: Any) -> list[tuple[str | None, str | None, Any]]:
    """(call id, tool name, arguments) of the tool calls in a model output (Chat Completions or Responses items)."""
    found: list[tuple[str | None, str | None, Any]] = []
    for item in output if isinstance(output, list) else ():
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "function_call":
            found.append((item.get("call_id"), item.get("name"), maybe_json(item.get("arguments"))))
        for c in item.get("tool_calls") or ():
            fn = c.get("function") or {}
            found.append((c.get("id"), fn.get("name"), maybe_json(fn.get("arguments"))))
    return found


def _answered(inp: Any) -> list[str]:
    """Call ids of the tool results a model input holds."""
    out = []
    for item in inp if isinstance(inp, list) else ():
        if isinstance(item, Mapping):
            if item.get("type") == "function_call_output" and item.get("call_id"):
                out.append(str(item["call_id"]))
            elif item.get("role") == "tool" and item.get("tool_call_id"):
                out.append(str(item["tool_call_id"]))
    return out


def _edges(ordered: list[tuple[str, dict[str, Any]]], steps: dict[str, Step]) -> None:
    last_llm: dict[str | None, str] = {}  # agent -> its latest model step
    pending: dict[str, list[tuple[str | None, str | None, Any]]] = {}  # model step -> unclaimed calls
    call_step: dict[str, str] = {}  # call id -> tool step that ran it
    handoff_to: dict[str, str] = {}  # agent name -> handoff step
    for sid, _ in ordered:
        s = steps[sid]
        new: list[Dependency] = []
        typ = s.attributes.get("agents.span_type")
        if s.kind == "llm":
            new += [declared(call_step[c]) for c in _answered(s.input) if c in call_step]
            last_llm[s.agent] = sid
            pending[sid] = _calls(s.output)
        elif typ == "function":
            src = last_llm.get(s.agent)
            match = None
            if src is not None:
                for i, (_cid, name, args) in enumerate(pending.get(src, ())):
                    if name == s.name and (args == s.input or args is None):
                        match = pending[src].pop(i)
                        break
            if src is not None and match is not None:
                new.append(declared(src))
                if match[0]:
                    call_step[str(match[0])] = sid
            elif src is not None:
                new.append(inferred(src, "data", TOOL_FALLBACK_CONFIDENCE))
        elif typ == "handoff" and isinstance(s.output, Mapping) and s.output.get("to_agent"):
            handoff_to[str(s.output["to_agent"])] = sid
        elif typ == "agent" and s.name in handoff_to:
            new.append(declared(handoff_to.pop(s.name), "control"))
        if new:
            steps[sid] = replace(s, deps=add_deps(s.deps, new, sid))


def _errors(
    ordered: list[tuple[str, dict[str, Any]]], steps: dict[str, Step], by_id: Mapping[str, Any]
) -> dict[str, ErrorEvent]:
    """One event per error; an enclosing span reporting the same message is that error propagating."""
    events: dict[str, ErrorEvent] = {}
    owner: dict[str, str] = {}  # step -> error id
    parents = {sid: steps[sid].parent_id for sid, _ in ordered}
    depth = {}
    for sid, _ in ordered:
        p, d = parents[sid], 0
        while p is not None and d < 1000:
            p, d = parents.get(p), d + 1
        depth[sid] = d
    for sid in sorted(parents, key=lambda x: -depth[x]):
        s = steps[sid]
        if s.error is None:
            continue
        t = s.end_ns or s.start_ns
        same = [
            owner[c]
            for c, p in parents.items()
            if p == sid and c in owner and events[owner[c]].message == s.error.message
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
        owner[sid] = eid
        steps[sid] = replace(s, error=replace(s.error, error_id=eid))
        if parents[sid] is None and events[eid].stage != "recovered":
            events[eid] = replace(
                events[eid],
                stages=(
                    *events[eid].stages,
                    StageChange("failed", sid, t, "the error reached the top-level span"),
                ),
            )
    return events


__all__ = ["NON_FATAL", "TrajdebugProcessor", "convert_trace"]
