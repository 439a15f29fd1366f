"""Record LangChain / LangGraph runs as trajdebug runs, through a callback tracer.

Usage::

    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path="runs.jsonl", name="my-agent", task="...")   # or store="trajdebug.db"
    chain.invoke(inputs, config={"callbacks": [tracer]})
    run = tracer.to_run()                         # the trajdebug Run of the last top-level call

Each LangChain run (chain, LLM or chat model, tool, retriever, parser) becomes
one step; the top-level run becomes the trajdebug run.  What the tracer adds to
LangChain's own tree (it subclasses ``BaseTracer``):

- errors counted once: an exception fires ``on_*_error`` at every enclosing
  level (products.md 4.1, gotcha 2), so the innermost is where it *occurred*
  and the others are where it *propagated*, by exception identity;
- tool errors handled by the tool (``handle_tool_error``; LangGraph's
  ``ToolNode``) arrive through ``on_tool_end`` as a ``ToolMessage`` with
  ``status="error"`` (gotcha 1): an error, *recovered* since its text went back
  to the model;
- LangGraph control flow (the ``GraphBubbleUp`` family: interrupts, parent
  commands) is not an error;
- retries: ``on_retry`` events (tenacity inside an LLM call) are failed attempts
  recovered by the next; ``RunnableRetry`` attempts (``retry:attempt:N`` tags)
  are steps with ``attempt`` and ``retry_of``;
- LangGraph's ``ToolNode(handle_tool_errors=True)`` catches a tool's exception
  and sends its text to the model as the tool result: the exception is an error
  *recovered* at the model call that read that result;
- LLM and chat-model steps follow `trajdebug.core.chat`: messages in, the
  assistant's message out, the envelope (model, usage, ids, finish reason,
  parameters, tools offered) as ``llm.*`` attributes;
- edges: a ``RunnableSequence`` pipes each child's output into the next, and a
  tool call id links LLM -> tool -> LLM (declared data edges).  Nothing is
  inferred from content here; the analysis does that when it reads the run.

The tracer is a converter with no dependency on the recorder: runs are kept in
``.runs`` and optionally saved to a store or appended to a JSONL file.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.schemas import Run as LCRun

from trajdebug.core import chat
from trajdebug.core.model import ErrorEvent, ErrorInfo, Run, StageChange, Step
from trajdebug.integrations._langchain_links import (
    calls_of,
    enclosed_edges,
    retry_links,
    sequence_edges,
    state_writer,
    tool_call_edges,
)
from trajdebug.integrations._langchain_read import (
    _KIND,
    CONTROL_FLOW_EXCEPTIONS,
    _add_stage,
    _chain_kind,
    _is_graph_node,
    _node_input,
    _ns,
    _replace,
    _session,
    _with_deps,
    is_control_flow,
    keys_read,
    message_dict,
    plain,
    state_index,
)
from trajdebug.sources.formats.convert import declared


class TrajdebugTracer(BaseTracer):
    """A LangChain tracer that turns each top-level LangChain run into a trajdebug `Run`.

    Where each run goes: ``store`` and ``path`` may be given together.  With
    neither, a run started inside ``with trajdebug.run(...)`` joins that run
    (under the current step); otherwise it is kept in memory only
    (`runs`, `to_run`).

    Example:
        ```python
        tracer = TrajdebugTracer(store="meeting.db", name="meeting-scheduler", task=request)
        graph.invoke(inputs, config={"callbacks": [tracer]})
        ```

    Args:
        store: A `trajdebug.Store`, or the path of a store file (SQLite, created when
            missing; ``"trajdebug.db"``, ``os.environ["TRAJDEBUG_STORE"]``): each run is saved into it.
        path: A JSONL file (created when missing) each run's records are appended to.
        name: The runs' name (default: the name of LangChain's top-level run, ``"LangGraph"``
            for a compiled graph, set per call with ``config={"run_name": ...}``).  Runs with
            the same name are runs of the same agent: they are each other's references.
        task: The task, recorded as the run's ``task`` metadata (default: the ``task`` key
            of the call's ``config={"metadata": {...}}``, if any).
        metadata: Metadata added to every run.
    """

    name: str = "trajdebug"

    def __init__(
        self,
        *,
        store: Any = None,
        path: str | Path | None = None,
        name: str | None = None,
        task: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(_schema_format="original+chat")
        self.runs: list[Run] = []
        self._store = store
        self._path = Path(path) if path is not None else None
        self._run_name = name
        self._metadata = dict(metadata or {})
        if task is not None:
            self._metadata["task"] = task
        self._lock = threading.Lock()
        self._exceptions: dict[str, BaseException] = {}
        self._chat_inputs: dict[str, Any] = {}
        self._llm_outputs: dict[str, Any] = {}
        self._tool_outputs: dict[str, Any] = {}
        self._node_states: dict[str, dict[str, Any]] = {}  # LangGraph node id -> the whole state it was handed
        self.state_edge_failures = 0
        """Nodes whose state could not be read for state edges, over every run (each run's own count is in
        its metadata as ``state_edge_failures``)."""

    # -- capture what BaseTracer flattens to strings ---------------------------------

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[Any]], *, run_id: UUID, **kwargs: Any
    ) -> Any:
        """Keep the chat messages (the first prompt's), then let BaseTracer record the run."""
        self._chat_inputs[str(run_id)] = chat.normalize_messages(messages[0] if messages else []) or []
        return super().on_chat_model_start(serialized, messages, run_id=run_id, **kwargs)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> Any:
        """Keep the response: its first generation and its envelope (``llm_output``)."""
        self._llm_outputs[str(run_id)] = chat.plain(response)
        return super().on_llm_end(response, run_id=run_id, **kwargs)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> Any:
        """Keep the tool's output object (a ``ToolMessage`` carries an error status)."""
        self._tool_outputs[str(run_id)] = output
        return super().on_tool_end(output, run_id=run_id, **kwargs)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> Any:
        """Keep the exception object (for its type, traceback and identity)."""
        self._exceptions[str(run_id)] = error
        return super().on_chain_error(error, run_id=run_id, **kwargs)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> Any:
        """Keep the exception object."""
        self._exceptions[str(run_id)] = error
        return super().on_llm_error(error, run_id=run_id, **kwargs)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> Any:
        """Keep the exception object."""
        self._exceptions[str(run_id)] = error
        return super().on_tool_error(error, run_id=run_id, **kwargs)

    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> Any:
        """Keep the exception object."""
        self._exceptions[str(run_id)] = error
        return super().on_retriever_error(error, run_id=run_id, **kwargs)

    # -- conversion -------------------------------------------------------------------

    def _persist_run(self, run: LCRun) -> None:
        converted = self._convert(run)
        with self._lock:
            self.runs.append(converted)
        self._save(converted)

    def to_run(self) -> Run:
        """The trajdebug run of the most recent top-level LangChain call.

        Raises:
            LookupError: no top-level call has finished yet.
        """
        if not self.runs:
            raise LookupError("no LangChain run has finished under this tracer yet")
        return self.runs[-1]

    def _save(self, run: Run) -> None:
        from trajdebug.integrations._deliver import deliver

        deliver(run, store=self._store, path=self._path, lock=self._lock)

    def _convert(self, root: LCRun) -> Run:
        order: list[LCRun] = []
        stack = [root]
        while stack:  # pre-order: parents before children
            r = stack.pop()
            order.append(r)
            stack.extend(
                sorted(r.child_runs, key=lambda c: (c.start_time, c.dotted_order or ""), reverse=True)
            )
        steps: dict[str, Step] = {}
        for r in order:
            steps[str(r.id)] = self._step(r)
        sequence_edges(order, steps)
        enclosed_edges(order, steps)
        tool_call_edges(order, steps)
        unread = self._state_edges(order, steps)
        errors = self._errors(order, steps)
        retry_links(order, steps, errors)
        root_step = steps[str(root.id)]
        failed = root_step.status == "error" and not root_step.attributes.get("handled_error")
        for key in [str(r.id) for r in order]:
            self._exceptions.pop(key, None)
            self._chat_inputs.pop(key, None)
            self._llm_outputs.pop(key, None)
            self._tool_outputs.pop(key, None)
            self._node_states.pop(key, None)
        ordered = sorted(steps.values(), key=lambda s: s.start_ns)
        call_md = (root.extra or {}).get("metadata") or {}
        run = Run(
            # LangChain's run ids are time-ordered (UUID v7): runs recorded in one session would
            # share long prefixes, and `--run PREFIX` would name several.  The run's own id is
            # random; LangChain's id stays in the metadata (to find the run in LangSmith).
            run_id=uuid4().hex,
            name=self._run_name or root.name,
            start_ns=root_step.start_ns,
            end_ns=root_step.end_ns,
            outcome="failure" if failed else ("success" if root_step.end_ns is not None else "incomplete"),
            failure_reason=root_step.error.message if failed and root_step.error else None,
            metadata={
                "source_format": "langchain",
                "langchain_run_id": str(root.id),
                **({"tags": list(root.tags)} if root.tags else {}),
                **({"task": call_md["task"]} if isinstance(call_md, Mapping) and call_md.get("task") is not None else {}),
                **_session(call_md),
                **({"state_edge_failures": unread} if unread else {}),
                **self._metadata,
            },
            steps=tuple(ordered),
            errors=tuple(sorted(errors.values(), key=lambda e: e.stages[0].time_ns)),
        )
        return run

    def _step(self, r: LCRun) -> Step:
        key = str(r.id)
        kind = _KIND.get(r.run_type, "other")
        if r.run_type == "chain":
            kind = _chain_kind(r)
        inp: Any = self._chat_inputs.get(key)
        if inp is None:
            inp = plain(r.inputs)
            if isinstance(inp, dict) and len(inp) == 1 and r.run_type in ("llm", "chain") and "input" in inp:
                inp = inp["input"]
            if r.run_type == "llm" and isinstance(inp, dict) and isinstance(inp.get("prompts"), list):
                inp = inp["prompts"][0] if inp["prompts"] else None  # a completion model's prompt
        out: Any = None
        attrs: dict[str, Any] = {"langchain.run_type": r.run_type}
        if r.tags:
            attrs["tags"] = list(r.tags)
        if (r.extra or {}).get("tool_call_id"):
            attrs["tool_call_id"] = r.extra["tool_call_id"]
        if kind == "llm":
            inp, out, attrs = self._llm_content(r, inp, attrs)
        status, err = "ok", None
        exc = self._exceptions.get(key)
        if r.run_type == "tool" and key in self._tool_outputs:
            tool_out = self._tool_outputs[key]
            out = plain(getattr(tool_out, "content", tool_out))
            if getattr(tool_out, "status", None) == "error":
                status = "error"
                err = ErrorInfo(type="ToolError", message=str(out))
                attrs["handled_error"] = True
        elif out is None and r.outputs is not None:
            out = plain(r.outputs)
            if isinstance(out, dict) and len(out) == 1 and next(iter(out)) in ("output", "documents"):
                out = next(iter(out.values()))
        if kind == "llm" and chat.tool_calls(out):
            attrs["tool_call_ids"] = [c["id"] for c in chat.tool_calls(out) if c.get("id")]
        if _is_graph_node(r) and isinstance(inp, dict):
            self._node_states[key] = inp
            inp = _node_input(r, inp, attrs, lambda c: self._chat_inputs.get(str(c.id)) or plain(c.inputs))
        if exc is not None and is_control_flow(exc):
            attrs["control_flow"] = type(exc).__name__
        elif exc is not None or r.error:
            status = "error"
            err = ErrorInfo(
                type=type(exc).__name__ if exc is not None else "Error",
                message=str(exc) if exc is not None else str(r.error).strip().splitlines()[0],
                traceback="".join(traceback.format_exception(exc))
                if exc is not None and exc.__traceback__
                else r.error,
            )
        retries = [e for e in r.events if e.get("name") == "retry"]
        if retries:
            attrs["retries"] = len(retries)
        attempt = next((int(t.rsplit(":", 1)[1]) for t in r.tags or () if t.startswith("retry:attempt:")), 1)
        start = _ns(r.start_time) or 0
        return Step(
            step_id=key,
            name=r.name,
            kind=kind,  # type: ignore[arg-type]
            parent_id=str(r.parent_run_id) if r.parent_run_id else None,
            input=inp,
            output=out,
            status=status,  # type: ignore[arg-type]
            error=err,
            start_ns=start,
            end_ns=_ns(r.end_time),
            attempt=attempt,
            attributes=attrs,
        )

    def _llm_content(self, r: LCRun, inp: Any, attrs: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
        """An LLM run's messages and envelope (`trajdebug.core.chat`): the request is the messages plus the
        invocation parameters LangChain passed, the response the ``LLMResult``."""
        extra = r.extra or {}
        params = extra.get("invocation_params") or {}
        meta = extra.get("metadata") or {}
        request: Any = inp
        if isinstance(inp, list):
            request = {"messages": inp, **{k: v for k, v in params.items() if k != "messages"}}
            if "model" not in request and (params.get("model_name") or meta.get("ls_model_name")):
                request["model"] = params.get("model_name") or meta.get("ls_model_name")
        new_in, new_out, env = chat.normalize_llm_step(request, self._llm_outputs.get(str(r.id)), attrs)
        if new_in is request and request is not inp:
            new_in = inp  # not recognised after all: keep what LangChain passed
        if isinstance(meta.get("ls_provider"), str) and "llm.provider" not in env:
            env["llm.provider"] = meta["ls_provider"]
        return new_in, new_out, {**attrs, **env}

    def _state_edges(self, order: Sequence[LCRun], steps: dict[str, Step]) -> int:
        """Declared ``state`` edges (keyed by the state key) from each model or tool call inside a LangGraph node,
        and from the node, to the step that wrote a key the call was handed.

        A node gets its values from the graph's state, not from the node before it: the channel from the
        writer is the graph's own, not a guess from content.  What a call was handed is read by unambiguous
        parts only (`keys_read`); the node's recorded input stays as it was (the edges carry the reads).  The
        writer is the latest earlier node of the same graph whose update holds the value read, or the call
        inside that node whose answer the node wrote (a node relaying or parsing its model's answer: the
        value was made by the model, not by the node's code).
        """
        writes: dict[str, list[LCRun]] = {}
        unread = 0
        for r in sorted((r for r in order if _is_graph_node(r)), key=lambda x: x.start_time):
            earlier = writes.setdefault(str(r.parent_run_id), [])
            state = self._node_states.get(str(r.id)) or {}
            node = steps[str(r.id)]
            try:
                reads = self._reads(r, state)
                keys = [k for k in state if k in node.attributes.get("state_reads", ()) or any(k in ks for ks in reads.values())]
                writer = {k: w for k in keys if (w := state_writer(earlier, r, k, state[k], steps)) is not None}
            except Exception:  # noqa: BLE001 -- an odd state costs this node its state edges, never the run
                unread += 1
                reads, writer = {}, {}
            if writer:
                steps[node.step_id] = _with_deps(node, [declared(w, "state", k) for k, w in writer.items()])
            for sub, ks in reads.items():
                new = [declared(writer[k], "state", k) for k in ks if k in writer]
                if new and sub in steps:
                    steps[sub] = _with_deps(steps[sub], new)
            if isinstance(node.output, Mapping) and node.status == "ok":
                earlier.append(r)
        self.state_edge_failures += unread
        return unread

    def _reads(self, r: LCRun, state: Mapping[str, Any]) -> dict[str, list[str]]:
        """The state keys each model or tool call inside node ``r`` was handed (the state indexed once)."""
        index = state_index(state)
        return {
            str(c.id): keys_read(state, self._chat_inputs.get(str(c.id)) or plain(c.inputs), index)
            for c in calls_of(r)
        }

    def _errors(self, order: Sequence[LCRun], steps: dict[str, Step]) -> dict[str, ErrorEvent]:
        """One error event per exception object: occurred at the innermost step, propagated outwards."""
        events: dict[str, ErrorEvent] = {}
        by_exc: dict[int, str] = {}
        depth = {str(r.id): 0 for r in order}
        for r in order:
            for c in r.child_runs:
                depth[str(c.id)] = depth[str(r.id)] + 1
        for r in sorted(order, key=lambda x: -depth[str(x.id)]):
            key = str(r.id)
            s = steps[key]
            if s.error is None:
                continue
            t = s.end_ns or s.start_ns
            exc = self._exceptions.get(key)
            eid = by_exc.get(id(exc)) if exc is not None else None
            if eid is not None:
                e = events[eid]
                events[eid] = _add_stage(e, StageChange("propagated", key, t))
            else:
                eid = f"{key}.0"
                stages = [StageChange("occurred", key, t)]
                if s.attributes.get("handled_error"):
                    stages.append(
                        StageChange(
                            "recovered", key, t, "handled by the tool: the error text went back to the model"
                        )
                    )
                cause = exc.__cause__ or exc.__context__ if exc is not None else None
                parent_error = by_exc.get(id(cause)) if cause is not None else None
                events[eid] = ErrorEvent(
                    eid, key, s.error.type, s.error.message, parent_error, tuple(stages), s.attempt
                )
                if exc is not None:
                    by_exc[id(exc)] = eid
            steps[key] = _replace(s, error=_replace(s.error, error_id=eid))
            if r.parent_run_id is None and events[eid].stage != "recovered":
                events[eid] = _add_stage(
                    events[eid], StageChange("failed", key, t, "the error reached the top-level run")
                )
        self._handled_by_tool_node(events, steps)
        for r in order:  # failed attempts inside one LLM call (tenacity, on_retry)
            for n, ev in enumerate(e for e in r.events if e.get("name") == "retry"):
                kw = ev.get("kwargs") or {}
                if kw.get("outcome") != "failed":
                    continue
                key = str(r.id)
                t = _ns(ev.get("time")) or steps[key].start_ns
                eid = f"{key}.retry{n + 1}"
                attempt = int(kw.get("attempt", n + 1))
                events[eid] = ErrorEvent(
                    eid,
                    key,
                    str(kw.get("exception_type", "Error")),
                    str(kw.get("exception", "")),
                    None,
                    (
                        StageChange("occurred", key, t),
                        StageChange("recovered", key, t, f"retried (attempt {attempt + 1})"),
                    ),
                    attempt,
                    {"retry": True},
                )
        return events

    @staticmethod
    def _handled_by_tool_node(events: dict[str, ErrorEvent], steps: Mapping[str, Step]) -> None:
        """A tool's exception that a tool node caught and sent to the model as the tool result: recovered.

        LangGraph's ``ToolNode(handle_tool_errors=True)`` reports the exception
        through ``on_tool_error`` and then returns a ``ToolMessage`` with the
        error text under the same tool call id; the model call that reads that
        message is where the agent took the error in and went on.
        """
        readers: dict[str, Step] = {}  # tool call id -> the first LLM step whose input holds its result
        for s in sorted(steps.values(), key=lambda x: x.start_ns):
            if s.kind != "llm":
                continue
            for m in chat.input_messages(s.input):
                if m.get("role") == "tool" and m.get("tool_call_id") is not None:
                    readers.setdefault(str(m["tool_call_id"]), s)
        for eid, e in list(events.items()):
            tool = steps.get(e.step_id)
            if e.stage != "occurred" or tool is None or tool.kind != "tool":
                continue
            reader = readers.get(str(tool.attributes.get("tool_call_id")))
            if reader is not None and reader.start_ns >= (tool.end_ns or tool.start_ns):
                reason = "caught by the tool node: the error text went back to the model as the tool result"
                events[eid] = _add_stage(e, StageChange("recovered", reader.step_id, reader.start_ns, reason))


__all__ = ["CONTROL_FLOW_EXCEPTIONS", "TrajdebugTracer", "is_control_flow", "message_dict", "plain"]
