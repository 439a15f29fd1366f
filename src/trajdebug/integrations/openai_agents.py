"""Record OpenAI Agents SDK runs as trajdebug runs, through a tracing processor.

Usage::

    from agents.tracing import add_trace_processor
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    processor = TrajdebugProcessor(path="runs.jsonl", name="support-bot")   # or store="trajdebug.db"
    add_trace_processor(processor)
    Runner.run_sync(agent, "question")
    run = processor.to_run()

Each SDK trace becomes a run and each span a step (step id: the span id
without its ``span_`` prefix).  Span kinds map as OpenInference maps them
(agent -> agent, function -> tool, generation/response -> llm, guardrail ->
condition; the SDK's task and turn spans enclose steps like agents); the
step's agent is its enclosing agent span.  Model steps follow `trajdebug.core.chat`:
messages in (the agent's instructions as the system message), the assistant's
message out, the envelope (model, usage, response id, parameters, tools) as
``llm.*`` attributes.  Each agent span's output is the agent's final output
(its last model message without tool calls, or the tool output that ended it),
and the trace's top step carries the final output of the run.

Errors: a span error is an error event; ``"Error running tool (non-fatal)"`` is
the SDK telling that the tool's failure went back to the model as its result,
so that error is *recovered* at the enclosing step (the agent's turn).  When an
exception escapes, the SDK records it again on the agent span, re-wrapped
("Error in agent run: ..."); that is the same error *propagating*, counted
once.  An error that reaches a top-level agent span, or its last turn (where
the SDK records a rejected answer), is one ``Runner.run`` raised: it *failed*
the run (the SDK's task span records no error of its own).  Inside a tool
(``Agent.as_tool``) it is the sub-run's, which the caller may recover.  Some
errors the SDK leaves off the agent span, recorded on the child span that
reports them only (``ModelBehaviorError``: a tool called with arguments its
schema rejects); one such error, unrecovered, in the agent that ended the run,
with no model call of that agent after it, is also one ``Runner.run`` raised.
A run cut short from outside (a timeout, a cancellation) leaves no error in
the trace: `TrajdebugProcessor.fail_on_raise` says it in one line.

Edges: a tool depends on the model response that called it (declared when the
call's name and arguments match, else on its agent's latest model step,
inferred), a model step on the tool results its input holds (by call id), a
handoff's target agent on the handoff (control), and a sub-agent's first model
step on the model step that gave it its input (inferred: the call of an agent run
as a tool, whose arguments it reads as its user message; the hand-off's caller).  Model steps and calls are
keyed by the agent *span*, so two agents with the same name are never confused.
Nothing is inferred from content here; the analysis does that when it reads
the run.

Processor callbacks run on the SDK's threads: they are lock-protected, never
block on I/O beyond an optional append at trace end, and swallow their own
errors (the SDK's contract), logging them.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agents.tracing import Span, Trace, TracingProcessor, get_current_span

from trajdebug.core import chat
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step, replace
from trajdebug.integrations._openai_agents_outcomes import final_outputs
from trajdebug.record.state import add_state_hook, remove_state_hook
from trajdebug.sources.formats.agents_sdk import NON_FATAL, capped, raised_at_the_end, span_errors
from trajdebug.sources.formats.convert import add_deps, declared, inferred, maybe_json, time_ns


log = logging.getLogger("trajdebug")


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
"""Confidence of a tool's edge to its agent's latest model step when no call in that step matches it, and of a
sub-agent's first model step's edge to the model step that called it (assumed from the SDK, not observed)."""


def _strip(prefix: str, value: Any) -> str | None:
    return None if value is None else str(value).removeprefix(prefix)


class TrajdebugProcessor(TracingProcessor):
    """An Agents SDK tracing processor building one trajdebug `Run` per trace.

    Where each run goes: ``store`` and ``path`` may be given together.  With
    neither, a trace that ends inside ``with trajdebug.run(...)`` joins that
    run; otherwise it is kept in memory only (`runs`, `to_run`).

    Args:
        store: A `trajdebug.Store`, or the path of a store file (SQLite, created when
            missing): each run is saved into it.
        path: A JSONL file (created when missing) each run's records are appended to.
        name: The runs' name (default: the trace's workflow name, set per run with
            ``RunConfig(workflow_name=...)`` or ``trace("name")``; the SDK's default is
            ``"Agent workflow"``).  Runs with the same name are runs of the same agent.
        task: The task, recorded as the run's ``task`` metadata when the trace's own
            metadata has no ``task`` (``trace("name", metadata={"task": ...})`` sets it per run).
        metadata: Metadata added to every run.
    """

    def __init__(
        self,
        *,
        store: Any = None,
        path: str | Path | None = None,
        name: str | None = None,
        task: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.runs: list[Run] = []
        self._store = store
        self._path = Path(path) if path is not None else None
        self._run_name = name
        self._task = task
        self._metadata = dict(metadata or {})
        self._lock = threading.Lock()
        self._traces: dict[str, dict[str, Any]] = {}
        self._spans: dict[str, list[dict[str, Any]]] = {}
        self._declared: dict[str, list[tuple[str, str, str]]] = {}
        """Per trace, the `trajdebug.writes`/`reads` its tools made, in order: (span id, verb, resource)."""
        add_state_hook(_StateHook(weakref.ref(self)))

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
                extra["input"] = chat.plain(getattr(sd, "input", None))
                extra["response"] = chat.plain(getattr(sd, "response", None))
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

    @contextlib.contextmanager
    def fail_on_raise(self) -> Iterator[None]:
        """Fail the runs whose traces end inside the block when an exception leaves it.

        The trace tells almost every way ``Runner.run`` raises (module docstring); one it cannot is a
        run cut short from outside, a timeout or a cancellation (``asyncio.wait_for``), whose spans the
        SDK ends with no error.  ``with processor.fail_on_raise(): await Runner.run(agent, question)``
        fails the block's runs (in `runs`, and by a ``mark`` record in the store and file they went to)
        with the exception as the reason, and re-raises it.  A run its trace already failed keeps its
        own reason.  Runs of other tasks whose traces end inside the block are failed too: keep one
        ``Runner.run`` per block when several run concurrently.
        """
        with self._lock:
            start = len(self.runs)
        try:
            yield
        except BaseException as exc:
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            with self._lock:
                todo = [(i, r) for i, r in enumerate(self.runs) if i >= start and r.outcome != "failure"]
                for i, r in todo:
                    self.runs[i] = replace(r, outcome="failure", failure_reason=reason)
            for _, r in todo:
                self._mark_failed(r.run_id, reason)
            raise

    def _mark_failed(self, run_id: str, reason: str) -> None:
        """Write the failure mark where the run was delivered (a run joined to an active trajdebug run fails with it)."""
        from trajdebug.marks import mark

        try:
            if self._store is not None:
                if isinstance(self._store, (str, Path)):
                    mark(self._store, run_id, failed=reason)
                else:
                    self._store.mark_run(run_id, "failure", reason)
            if self._path is not None:
                with self._lock:
                    mark(self._path, run_id, failed=reason)
        except Exception:
            log.warning("trajdebug: could not mark run %s failed", run_id, exc_info=True)

    # -- results ------------------------------------------------------------------------

    def to_run(self) -> Run:
        """The run of the most recently finished trace.

        Raises:
            LookupError: no trace has finished yet.
        """
        if not self.runs:
            raise LookupError("no Agents SDK trace has finished under this processor yet")
        return self.runs[-1]

    def _declare(self, verb: str, resource: str) -> bool:
        """Take a `trajdebug.writes`/`reads` made in a span of a trace this processor records (the tool running)."""
        span = get_current_span()
        if span is None:
            return False
        with self._lock:
            if span.trace_id not in self._traces:
                return False
            self._declared.setdefault(span.trace_id, []).append((str(_strip("span_", span.span_id)), verb, resource))
        return True

    def _finish(self, trace_id: str, *, ended: bool) -> None:
        with self._lock:
            meta = self._traces.pop(trace_id, {})
            spans = self._spans.pop(trace_id, [])
            declared = self._declared.pop(trace_id, [])
        run = with_declared_state(convert_trace(trace_id, meta, spans, ended=ended), declared)
        extra = dict(self._metadata)
        if self._task is not None and run.metadata.get("task") is None:
            extra["task"] = self._task
        if extra or self._run_name:
            run = replace(run, name=self._run_name or run.name, metadata={**run.metadata, **extra})
        with self._lock:
            self.runs.append(run)
        from trajdebug.integrations._deliver import deliver

        deliver(run, store=self._store, path=self._path, lock=self._lock)


class _StateHook:
    """The processor's `trajdebug.record.state` hook, holding it weakly: a processor dropped stops taking
    declarations, and its hook unregisters itself at the next one."""

    __slots__ = ("ref",)

    def __init__(self, ref: weakref.ref[TrajdebugProcessor]) -> None:
        self.ref = ref

    def __call__(self, verb: str, resource: str) -> bool:
        processor = self.ref()
        if processor is None:
            remove_state_hook(self)
            return False
        return processor._declare(verb, resource)


def with_declared_state(run: Run, declared: list[tuple[str, str, str]]) -> Run:
    """The run with its tools' `trajdebug.writes`/`reads` on their steps, as the recorder keeps them: the
    ``state_writes``/``state_reads`` attributes, and a declared ``state`` edge from a resource's last writer
    (at the time of the read) to its reader."""
    if not declared:
        return run
    steps = {s.step_id: s for s in run.steps}
    lists: dict[tuple[str, str], list[str]] = {}
    new_deps: dict[str, list[Dependency]] = {}
    writer: dict[str, str] = {}
    for sid, verb, resource in declared:
        if sid not in steps:
            continue
        lists.setdefault((sid, "state_" + verb), []).append(resource)
        if verb == "writes":
            writer[resource] = sid
        elif resource in writer:
            new_deps.setdefault(sid, []).append(
                Dependency(step_id=writer[resource], kind="state", origin="declared", key=resource)
            )
    for (sid, attr), found in lists.items():
        s = steps[sid]
        steps[sid] = replace(s, attributes={**s.attributes, attr: [*(s.attributes.get(attr) or []), *found]})
    for sid, deps in new_deps.items():
        steps[sid] = replace(steps[sid], deps=add_deps(steps[sid].deps, deps, sid))
    out: Run = replace(run, steps=tuple(steps[s.step_id] for s in run.steps))
    return out


# -- conversion -------------------------------------------------------------------------


def convert_trace(trace_id: str, meta: Mapping[str, Any], spans: list[dict[str, Any]], *, ended: bool = True) -> Run:
    """Build a run from an exported trace (``Trace.export()``) and its exported spans (``Span.export()``)."""
    by_id = {str(_strip("span_", s.get("id"))): s for s in spans}
    ordered = sorted(by_id.items(), key=lambda kv: time_ns(kv[1].get("started_at")) or 0)
    agents: dict[str, str | None] = {}
    owner: dict[str, str | None] = {}  # span -> its enclosing agent span (itself for an agent span)
    steps: dict[str, Step] = {}
    details: dict[str, str] = {}  # span -> its error's own text (the SDK's ``data.error``)
    sdk_messages: dict[str, str] = {}  # span -> its error's message as the SDK wrote it (without its data)
    for sid, s in ordered:
        sd = s.get("span_data") or {}
        parent = _strip("span_", s.get("parent_id"))
        parent = parent if parent in by_id else None
        typ = _span_type(sd)
        owner[sid] = sid if typ == "agent" else owner.get(parent or "")
        if typ == "agent":
            agents[sid] = str(sd.get("name"))
        elif typ == "turn" and (sd.get("data") or {}).get("agent_name"):
            agents[sid] = str(sd["data"]["agent_name"])
        else:
            agents[sid] = agents.get(parent or "")
        steps[sid], detail = _step(sid, parent, s, agents[sid])
        if detail:
            details[sid] = detail
        if isinstance(err := s.get("error"), Mapping):
            sdk_messages[sid] = str(err.get("message") or "")
    _edges(ordered, steps, owner)
    for sid, _ in ordered:  # the tools offered: the SDK names them on the agent span only
        step, agent = steps[sid], owner.get(sid)
        offered = steps[agent].attributes.get("tools") if agent else None
        if step.kind == "llm" and "llm.tools" not in step.attributes and offered:
            steps[sid] = replace(step, attributes={**step.attributes, "llm.tools": list(offered)})
    order = [sid for sid, _ in ordered]
    errors = span_errors(order, steps, details, sdk_messages)
    raised_at_the_end(order, steps, owner, errors)
    roots = [sid for sid, s in ordered if steps[sid].parent_id is None]
    final_outputs(ordered, steps, owner)
    failed = [e for e in errors.values() if e.stage == "failed"]
    ends = [s.end_ns for s in steps.values() if s.end_ns is not None]
    starts = [s.start_ns for s in steps.values()]
    unfinished = not ended or any(s.end_ns is None for s in steps.values())
    reason = None
    if failed and not unfinished:
        last = failed[0].stages[-2] if len(failed[0].stages) > 1 else failed[0].stages[0]
        reason = capped(details.get(last.step_id or "") or failed[0].message)
    return Run(
        run_id=str(_strip("trace_", trace_id)),
        name=str(meta.get("workflow_name") or (steps[roots[0]].name if roots else "agents-trace")),
        start_ns=min(starts) if starts else 0,
        end_ns=None if unfinished or not ends else max(ends),
        outcome="incomplete" if unfinished else ("failure" if failed else "success"),
        failure_reason=reason,
        metadata={
            "source_format": "openai-agents",
            # The trace's group (a conversation thread) is its session (`trajdebug.sessions`).
            **({"group_id": meta["group_id"], "session": str(meta["group_id"])} if meta.get("group_id") else {}),
            **dict(meta.get("metadata") or {}),
        },
        steps=tuple(sorted(steps.values(), key=lambda s: s.start_ns)),
        errors=tuple(sorted(errors.values(), key=lambda e: e.stages[0].time_ns)),
    )


def _span_type(sd: Mapping[str, Any]) -> str:
    """The span's type; task and turn spans export as ``custom`` with the real type in their data."""
    typ = str(sd.get("type", "custom"))
    data = sd.get("data")
    if typ == "custom" and isinstance(data, Mapping) and data.get("sdk_span_type"):
        return str(data["sdk_span_type"])
    return typ


def _llm(typ: str, sd: Mapping[str, Any], extra: Mapping[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    """A model span's (input, output, attributes) in the convention of `trajdebug.core.chat`."""
    if typ == "response":
        response = extra.get("response") or {}
        request: dict[str, Any] = {"input": extra.get("input") or [], "model": response.get("model")}
        for key in (
            "instructions",
            "tools",
            "temperature",
            "top_p",
            "max_output_tokens",
            "tool_choice",
            "reasoning",
        ):
            if response.get(key) not in (None, [], {}):
                request[key] = response[key]
        inp, out, attrs = chat.normalize_llm_step(request, response or None)
        if sd.get("response_id"):
            attrs.setdefault("llm.response_id", sd["response_id"])
        return inp, out, attrs
    config = {k: v for k, v in (sd.get("model_config") or {}).items() if v is not None}
    request = {"messages": sd.get("input") or [], "model": sd.get("model"), **config}
    inp, out, attrs = chat.normalize_llm_step(request, sd.get("output"))
    usage = sd.get("usage")
    if isinstance(usage, Mapping):
        attrs.update(chat.normalize_llm_step(None, {"choices": [], "usage": usage})[2])
    return inp, out, attrs


def _step(sid: str, parent: str | None, s: Mapping[str, Any], agent: str | None) -> tuple[Step, str | None]:
    """The step of one span, and its error's own text (None when it has no error)."""
    sd = dict(s.get("span_data") or {})
    extra = s.get("_extra") or {}
    typ = _span_type(sd)
    name = str(sd.get("name") or "")
    inp: Any = None
    out: Any = None
    attrs: dict[str, Any] = {"agents.span_type": typ}
    if typ == "function":
        inp, out = maybe_json(sd.get("input")), maybe_json(sd.get("output"))
    elif typ in ("generation", "response"):
        inp, out, llm_attrs = _llm(typ, sd, extra)
        attrs.update(llm_attrs)
        name = name or (f"generation {sd.get('model') or ''}".strip() if typ == "generation" else "response")
        calls = chat.tool_calls(out)
        if calls:
            attrs["tool_call_ids"] = [c["id"] for c in calls if c.get("id")]
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
    err = s.get("error")
    info = None
    detail = None
    if err:
        data = err.get("data") or {}
        d = data.get("error") if isinstance(data, Mapping) else None
        message = f"{err.get('message')}: {d}" if d else str(err.get("message") or "")
        detail = str(d) if d else message
        info = ErrorInfo(type="ToolError" if typ == "function" else "AgentsSDKError", message=message)
    start = time_ns(s.get("started_at")) or 0
    step = Step(
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
    return step, detail


def _edges(ordered: list[tuple[str, dict[str, Any]]], steps: dict[str, Step], owner: Mapping[str, str | None]) -> None:
    last_llm: dict[str | None, str] = {}  # agent span -> its latest model step
    pending: dict[str, list[dict[str, Any]]] = {}  # model step -> unclaimed calls
    call_step: dict[str, str] = {}  # call id -> tool step that ran it
    handoff_to: dict[str, str] = {}  # agent name -> handoff step
    # A sub-agent's first model step reads what its caller's model step gave it (module docstring), inferred.
    given: dict[str, Dependency] = {}  # tool step, or the agent handed off to (by name) -> that edge
    feeds: dict[str, Dependency] = {}  # agent span -> the edge its first model step takes
    for sid, _ in ordered:
        s = steps[sid]
        new: list[Dependency] = []
        typ = s.attributes.get("agents.span_type")
        if s.kind == "llm":
            answered = [str(m["tool_call_id"]) for m in chat.input_messages(s.input) if m.get("tool_call_id")]
            new += [declared(call_step[c]) for c in answered if c in call_step]
            new += [fed] if (fed := feeds.pop(owner.get(sid) or "", None)) else []
            last_llm[owner.get(sid)] = sid
            pending[sid] = chat.tool_calls(s.output)
        elif typ == "function":
            src = last_llm.get(owner.get(sid))
            match = None
            if src is not None:
                for i, c in enumerate(pending.get(src, ())):
                    if c.get("name") == s.name and (c.get("arguments") == s.input or c.get("arguments") is None):
                        match = pending[src].pop(i)
                        break
            if src is not None and match is not None:
                new.append(declared(src))
                if match.get("id"):
                    call_step[str(match["id"])] = sid
            elif src is not None:
                new.append(inferred(src, "data", TOOL_FALLBACK_CONFIDENCE))
            if src is not None:
                given[sid] = inferred(src, "data", TOOL_FALLBACK_CONFIDENCE)
        elif typ == "handoff" and isinstance(s.output, Mapping) and s.output.get("to_agent"):
            handoff_to[str(s.output["to_agent"])] = sid
            if (src := last_llm.get(owner.get(sid))) is not None:
                given[str(s.output["to_agent"])] = inferred(src, "data", TOOL_FALLBACK_CONFIDENCE)
        elif typ == "agent":
            if s.name in handoff_to:
                new.append(declared(handoff_to.pop(s.name), "control"))
            up = s.parent_id  # the tool that runs it, through the task span the SDK opens between them
            while up in steps and up not in given and steps[up].kind == "agent" and up != owner.get(up):
                up = steps[up].parent_id
            if (fed := given.pop(up or "", None) or given.pop(s.name, None)) is not None:
                feeds[sid] = fed
        if new:
            steps[sid] = replace(s, deps=add_deps(s.deps, new, sid))


__all__ = ["NON_FATAL", "TrajdebugProcessor", "convert_trace"]
