"""One trace's spans assembled into a run: steps, errors and their lifecycles, answers, tool-call edges.

The mapping is the one `trajdebug.sources.formats.otlp` describes (span ids as step ids, exceptions
recorded again by an enclosing span as one error propagated, links as declared dependencies, tool-call
ids linking LLM -> tool -> LLM); `otlp.py` reads the files and groups the spans by trace.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

from trajdebug.core import chat
from trajdebug.core.codec import loads
from trajdebug.core.model import STEP_KINDS, Answer, Dependency, ErrorEvent, Run, Score, StageChange, Step
from trajdebug.core.schema import latest_answers, make_score
from trajdebug.sources.formats import _semconv as sc
from trajdebug.sources.formats._otlp_errors import (
    AGENTS_SDK_SCOPES,
    agents_sdk_errors,
    error_info,
    raised_reason,
    trace_errors,
)
from trajdebug.sources.formats.convert import add_deps, declared, maybe_json
from trajdebug.sources.formats.otlp_json import (
    ANSWER,
    ANSWER_EVENT,
    DEP,
    ERROR,
    ERROR_STAGE_EVENT,
    RUN_CONTINUES,
    RUN_END,
    RUN_FAILURE,
    RUN_ID,
    RUN_METADATA,
    RUN_NAME,
    RUN_OUTCOME,
    RUN_START,
    SCORE,
    SCORE_EVENT,
    SPAN_KINDS,
    STEP_AGENT,
    STEP_ATTEMPT,
    STEP_ATTR,
    STEP_ID,
    STEP_KIND,
    STEP_RETRY_OF,
    STEP_SOURCE_INDEX,
    STEP_UNFINISHED,
    Span,
)


def trace_to_run(trace_id: str, by_id: dict[str, Span], run_ids: Mapping[str, str]) -> Run:
    """The run of one trace: its spans by id, every trace's run id (links name other traces' runs)."""
    spans = sorted(by_id.values(), key=_START)
    for s in spans:
        if s.parent_id in by_id:
            by_id[s.parent_id].children.append(s)
    own = any(RUN_ID in s.resource or RUN_ID in s.attrs for s in spans)
    ids = {s.span_id: str(s.attrs.get(STEP_ID, s.span_id)) for s in spans}
    agents = _agents(spans, by_id)
    # Each step's fields first: the tool-call edges complete them before the (frozen) step is made.
    fields = {s.span_id: _step(s, ids, agents, by_id, trace_id, run_ids) for s in spans}
    if not own:
        _tool_call_edges(spans, fields)
    steps = {sid: Step(**f) for sid, f in fields.items()}
    roots = [s for s in spans if s.parent_id not in by_id]
    agents_sdk_trace = not own and bool(roots) and all(r.scope in AGENTS_SDK_SCOPES for r in roots)
    if own:
        errors = _own_errors(spans)
    elif agents_sdk_trace:
        errors = agents_sdk_errors(spans, ids, steps)
    else:
        errors = trace_errors(spans, by_id, ids, steps)
    res = spans[0].resource
    meta: dict[str, Any] = {} if own else {k: v for k, v in res.items() if not k.startswith("trajdebug.")}
    extra = maybe_json(res.get(RUN_METADATA))
    if isinstance(extra, dict):
        meta.update(extra)
    if not own:
        meta.setdefault("source_format", "otlp")
        meta.setdefault("trace_id", trace_id)
        session = _session(spans, res)
        if session is not None:
            meta.setdefault("session", session)
        _top_span_metadata(meta, roots, spans, res)
    if RUN_OUTCOME in res:
        outcome, reason = str(res[RUN_OUTCOME]), res.get(RUN_FAILURE)
    elif any(s.end_ns is None for s in spans):
        outcome, reason = "incomplete", None
    else:
        failed = [steps[r.span_id] for r in roots if steps[r.span_id].status == "error"]
        # An Agents SDK trace's top span ends OK whatever the run did: an error it failed tells instead.
        raised = [e for e in errors if e.stage == "failed"] if agents_sdk_trace else []
        outcome = "failure" if failed or raised else "success"
        if failed:
            reason = failed[0].error.message if failed[0].error else "the root span failed"
        else:
            reason = raised_reason(raised[0], steps, ids) if raised else None
    ends = [s.end_ns for s in spans if s.end_ns is not None]
    run = Run(
        run_id=run_ids[trace_id],
        name=str(res[RUN_NAME])
        if RUN_NAME in res
        else str(roots[0].name if roots else res.get("service.name", trace_id)),
        start_ns=int(_number(res.get(RUN_START), spans[0].start_ns)),
        end_ns=res.get(RUN_END) if own else (max(ends) if ends and outcome != "incomplete" else None),
        outcome=outcome if outcome in ("success", "failure", "incomplete") else "incomplete",  # type: ignore[arg-type]
        failure_reason=reason,
        metadata=meta,
        steps=tuple(steps[s.span_id] for s in spans),
        errors=tuple(errors),
        continues=res.get(RUN_CONTINUES),
        answers=_own_answers(spans, ids) if own else (),
        scores=_scores(spans, ids),
    )
    return run


_START = operator.attrgetter("start_ns", "index")
"""A span's place in its run: by start, then by place in the file."""


def _own_answers(spans: list[Span], ids: Mapping[str, str]) -> tuple[Answer, ...]:
    """The answers trajdebug's exporter wrote as ``trajdebug.answer`` events (the latest per step and answerer)."""
    words: dict[Any, bool | None] = {"correct": True, "wrong": False}
    found = []
    for s in spans:
        for name, t, a in s.events:
            by = a.get(ANSWER + "by")
            if name != ANSWER_EVENT or not isinstance(by, str) or not by:
                continue
            reason = a.get(ANSWER + "reason")
            correct = words.get(a.get(ANSWER + "correct"))
            adm = a.get(ANSWER + "admissible")
            admissible = adm if isinstance(adm, bool) and correct is False else None
            found.append(
                Answer(ids[s.span_id], correct, by, t, reason if isinstance(reason, str) else None, admissible=admissible)
            )
    return latest_answers(found)
def _scores(spans: list[Span], ids: Mapping[str, str]) -> tuple[Score, ...]:
    """The scores trajdebug's exporter wrote as ``trajdebug.score`` events, in the order of the spans; an event
    that fails the score check (`make_score`) is left out."""
    found = []
    for s in spans:
        for name, t, a in s.events:
            if name != SCORE_EVENT:
                continue
            on_run = a.get(SCORE + "target") == "run"
            try:
                found.append(
                    make_score(
                        a.get(SCORE + "name"),
                        a.get(SCORE + "value"),
                        source=a.get(SCORE + "source", "human"),
                        by=a.get(SCORE + "by"),
                        comment=a.get(SCORE + "comment"),
                        step_id=None if on_run else ids[s.span_id],
                        at_ns=t if isinstance(t, int) and t > 0 else 0,
                    )
                )
            except ValueError:
                continue
    return tuple(sorted(found, key=lambda x: x.at_ns))


# The attributes that name a conversation or session: OpenInference, OpenTelemetry GenAI.
_SESSION_KEYS = ("session.id", "gen_ai.conversation.id")


def _session(spans: list[Span], resource: Mapping[str, Any]) -> str | None:
    """The session a trace belongs to: the first span (in start order) that names one, else the resource."""
    for attrs in [*(s.attrs for s in spans), resource]:
        for key in _SESSION_KEYS:
            v = attrs.get(key)
            if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v):
                return str(v)
    return None


# OpenInference's attributes that say something of the run when its top span carries them (Phoenix and
# Langfuse show a trace's metadata and tags from its root span): user-defined ``metadata`` (a JSON object),
# ``tag.tags`` (a list of labels), ``user.id``.
SPAN_METADATA = "metadata"
SPAN_TAGS = "tag.tags"
SPAN_USER = "user.id"
SPAN_METADATA_TEXT = "span_metadata"
"""The run metadata key a top span's ``metadata`` is kept under as its text when it is not a JSON object."""


def _top_span_metadata(
    meta: dict[str, Any], roots: list[Span], spans: list[Span], resource: Mapping[str, Any]
) -> None:
    """Fill a foreign run's metadata from its top spans' OpenInference attributes, in place, never over a key
    already said (the resource's, trajdebug's own run metadata, the source format, the session): their
    ``tag.tags`` as ``tags`` (sorted, without duplicates, as the recorder keeps them), the first ``user.id``
    (any span's, else the resource's) as ``user``, then the items of each top span's ``metadata`` (the
    earliest top span first; a value that is not a JSON object, or is not JSON, is kept as its text under
    `SPAN_METADATA_TEXT`).  Only the top spans' metadata and tags are the run's (an instrumentation writes its
    own on the spans below: LangChain's ``seq:step:1``): the spans without a parent, else (a trace continued
    from another service's span, not in the file) those whose parent is not in the trace."""
    tops = [r for r in roots if r.parent_id is None] or roots
    tags: set[str] = set()
    for r in tops:
        given = r.attrs.get(SPAN_TAGS)
        if isinstance(given, str):
            decoded_tags = _json_list(given)
            given = [given] if decoded_tags is None else decoded_tags
        if isinstance(given, (list, tuple)):
            tags.update(str(t) for t in given if isinstance(t, (str, int, float)) and str(t).strip())
    if tags:
        meta.setdefault("tags", sorted(tags))
    for attrs in [*(s.attrs for s in spans), resource]:
        v = attrs.get(SPAN_USER)
        if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v).strip():
            meta.setdefault("user", str(v))
            break
    for r in tops:
        value = r.attrs.get(SPAN_METADATA)
        if value is None:
            continue
        decoded = _json_object(value)
        if decoded is None:
            text = value if isinstance(value, str) else str(value)
            if text.strip():
                meta.setdefault(SPAN_METADATA_TEXT, text)
            continue
        for k, v in decoded.items():
            if not str(k).startswith("trajdebug."):
                meta.setdefault(str(k), v)


def _json_object(value: Any) -> Mapping[str, Any] | None:
    """A ``metadata`` attribute's object: a mapping as it is (an OTLP ``kvlistValue``), else the JSON object its
    text holds; None for anything else (other JSON, text that is not JSON, a value nested too deeply)."""
    if isinstance(value, Mapping):
        return value
    if not isinstance(value, str) or not value.lstrip().startswith("{"):
        return None
    try:
        decoded = loads(value)
    except ValueError:
        return None
    return decoded if isinstance(decoded, dict) else None


def _json_list(value: str) -> list[Any] | None:
    """The JSON array a ``tag.tags`` text holds (an exporter that writes lists as JSON text), else None."""
    if not value.lstrip().startswith("["):
        return None
    try:
        decoded = loads(value)
    except ValueError:
        return None
    return decoded if isinstance(decoded, list) else None


def _agents(spans: list[Span], by_id: Mapping[str, Span]) -> dict[str, str | None]:
    """Each span's agent: its own agent name, else the nearest enclosing span's."""
    out: dict[str, str | None] = {}
    for s in spans:  # parents start before children, so they are resolved first
        if STEP_ID in s.attrs:  # trajdebug's own export says exactly
            out[s.span_id] = s.attrs.get(STEP_AGENT)
            continue
        own = sc.agent_name(s.attrs)
        if own is None and s.parent_id is not None:
            own = out.get(s.parent_id)
        out[s.span_id] = own
    return out


def _step(
    s: Span,
    ids: Mapping[str, str],
    agents: Mapping[str, str | None],
    by_id: Mapping[str, Span],
    trace_id: str,
    run_ids: Mapping[str, str],
) -> dict[str, Any]:
    """The fields of a span's step (`Step`'s keywords)."""
    a = s.attrs
    own = STEP_ID in a
    # Spans repeat the same few sets of attribute names: each set is planned once (`_plan`).
    plan = _PLANS.get(names := tuple(a))
    if plan is None:
        plan = _plan(names, own)
    carries_messages, kept, reads = plan
    attrs: dict[str, Any] = a.copy() if kept is None else dict(zip(kept[1], map(a.__getitem__, kept[0])))
    kind = a.get(STEP_KIND) or sc.step_kind(a) or ("agent" if s.children else "other")
    inp = sc.io_value(a, "input") if reads & _READS_INPUT else None
    out = sc.io_value(a, "output") if reads & _READS_OUTPUT else None
    if out is None and not own and reads & _READS_DOCUMENTS:
        # A retriever's or reranker's documents are its output (OpenInference lists them as attributes).
        out = sc.documents(a)
    if not own and kind != "llm" and (carries_messages or s.events):
        # A non-LLM span may still carry messages (an agent span's conversation).
        msgs = sc.messages(a, s.events)
        if inp is None and msgs.inputs is not None:
            inp = {"messages": msgs.inputs}
        if out is None and msgs.output is not None:
            out = msgs.output
    if not own:
        if s.kind:
            attrs["otel.span_kind"] = SPAN_KINDS[s.kind] if s.kind < len(SPAN_KINDS) else s.kind
        if s.scope:
            attrs["otel.scope"] = s.scope
        if kind == "llm":
            inp, out, extra = chat.normalize_llm_step(inp, out, s.attrs, events=s.events)
            attrs.update(extra)
            issued = [str(c["id"]) for c in _calls(out) if c.get("id")]
            if issued:
                attrs["tool_call_ids"] = issued
        if reads & _READS_CALL_ID and (call := sc.tool_call_id(s.attrs)) is not None:
            attrs["tool_call_id"] = call
        if s.parent_id is not None and s.parent_id not in by_id:
            attrs["missing_parent"] = s.parent_id
    deps = _link_deps(s, ids, trace_id, run_ids)
    # Most spans end without an error: told without a call (`error_info` tells the same first).
    err = error_info(s) if s.events or s.status_code == 2 or "error.type" in s.attrs else None
    retry_of = s.attrs.get(STEP_RETRY_OF)
    return {
        "step_id": ids[s.span_id],
        "name": s.name,
        "kind": kind if kind in STEP_KINDS else "other",
        "parent_id": ids[s.parent_id] if s.parent_id is not None and s.parent_id in by_id else None,
        "agent": agents.get(s.span_id),
        "input": inp,
        "output": out,
        "status": "error" if err is not None else "ok",
        "error": err,
        "start_ns": s.start_ns,
        "end_ns": (None if s.attrs.get(STEP_UNFINISHED) else s.end_ns or 0) if own else s.end_ns,
        "attempt": int(_number(a[STEP_ATTEMPT], 1)) if STEP_ATTEMPT in a else 1,
        "retry_of": None if retry_of is None else str(retry_of),
        "deps": add_deps((), deps, ids[s.span_id]) if deps else (),
        "attributes": attrs,
        # trajdebug's own export keeps the position in the *original* source (or none).
        "source_index": _source_index(s.attrs.get(STEP_SOURCE_INDEX)) if own else s.index,
    }


def _link_deps(s: Span, ids: Mapping[str, str], trace_id: str, run_ids: Mapping[str, str]) -> list[Dependency]:
    """A span's links as dependencies: a link within the trace names a step of this run, one to another trace a
    step of the run that trace holds."""
    deps: list[Dependency] = []
    for lt, ls, la in s.links:
        same = lt == trace_id
        deps.append(
            Dependency(
                step_id=str(la.get(DEP + "step_id", ids.get(ls, ls) if same else ls)),
                kind=str(la.get(DEP + "kind", "data")),  # type: ignore[arg-type]
                origin=str(la.get(DEP + "origin", "declared")),  # type: ignore[arg-type]
                confidence=_number(la.get(DEP + "confidence"), 1.0),
                key=la.get(DEP + "key"),
                run_id=None if same else str(la.get(DEP + "run_id", run_ids.get(lt, lt))),
            )
        )
    return deps


_KEY_CLASS: dict[str, int] = {}
"""Attribute names seen -> 1: a step attribute trajdebug exported; 2: trajdebug's own or content (not
kept as an attribute); 0: a foreign attribute kept as it is; plus 4 when the name may hold messages
(`_semconv.messages` reads none from a span without such a name or an event), plus 8 when it may list
retrieved documents (`_semconv.documents`)."""


_Plan = tuple[bool, "tuple[tuple[str, ...], tuple[str, ...]] | None", int]
_PLANS: dict[tuple[str, ...], _Plan] = {}
"""A span's attribute names, in order -> whether any may hold messages, the step attributes kept of them as
their names and their names in the step (None: every one, as it is), and which of the readings `_READS` names
may find something (`_semconv.io_value` and `tool_call_id` find nothing without one of their names)."""

_READS = (
    (1, sc.IO_NAMES["input"]),
    (2, sc.IO_NAMES["output"]),
    (4, sc.TOOL_ID_KEYS),
)
"""Bits of a plan's readings, each with the names it finds its value under (`io_value`'s, `tool_call_id`'s)."""
_READS_INPUT, _READS_OUTPUT, _READS_CALL_ID = (bit for bit, _ in _READS)
_READS_DOCUMENTS = 8
"""A plan's reading of listed documents (`_semconv.documents`), set when a name may hold them (`_key_class`)."""


def _plan(names: tuple[str, ...], own: bool) -> _Plan:
    """What `_step` keeps of a span's attributes, told by their names alone (`_key_class` of each name)."""
    carries_messages = lists_documents = False
    kept: list[tuple[str, str]] = []
    for k in names:
        c = _KEY_CLASS.get(k)
        if c is None:
            c = _key_class(k)
        if c & 4:
            carries_messages = True
        if c & 8:
            lists_documents = True
        c &= 3
        if c == 1:
            kept.append((k, k[len(STEP_ATTR) :]))
        elif c == 0 and not own:
            kept.append((k, k))
    # A later name equal to an earlier one once renamed (``trajdebug.attr.x`` and ``x``) is never "as it is".
    same = len(kept) == len(names) and all(k == new for k, new in kept)
    present = set(names)
    reads = sum(bit for bit, keys in _READS if not present.isdisjoint(keys))
    if lists_documents:
        reads |= _READS_DOCUMENTS
    plan = (carries_messages, None if same else (tuple(k for k, _ in kept), tuple(new for _, new in kept)), reads)
    if len(_PLANS) >= 1 << 12:  # names are the producer's: a file may coin new sets without end
        _PLANS.clear()
    _PLANS[names] = plan
    return plan


def _key_class(k: str) -> int:
    c = 1 if k.startswith(STEP_ATTR) else 2 if k.startswith("trajdebug.") or sc.is_content_key(k) else 0
    if sc.may_hold_messages(k):
        c |= 4
    if sc.may_hold_documents(k):
        c |= 8
    if len(_KEY_CLASS) >= 1 << 16:  # names are the producer's: a file may coin a new one per span
        _KEY_CLASS.clear()
    _KEY_CLASS[k] = c
    return c


def _source_index(value: Any) -> int | None:
    return None if value is None else int(_number(value, 0))


def _number(value: Any, default: float) -> Any:
    """A number from an attribute written as one (or as its text); ``default`` when it is not one
    (a foreign or damaged file: the span is still read)."""
    if value is None or isinstance(value, bool):
        return default
    if type(value) is int:
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)  # exact: a time in nanoseconds does not fit a float
    try:
        n = float(value)
    except (TypeError, ValueError, OverflowError):
        return default
    if n != n or n in (float("inf"), float("-inf")):
        return default
    return int(n) if n == int(n) and type(default) is int else n


def _own_errors(spans: list[Span]) -> list[ErrorEvent]:
    """Error events restored from trajdebug's own lifecycle events (``trajdebug.error.<stage>``)."""
    found: dict[str, dict[str, Any]] = {}
    for s in spans:
        for name, t, a in s.events:
            if not name.startswith(ERROR_STAGE_EVENT) or ERROR + "id" not in a:
                continue
            eid = str(a[ERROR + "id"])
            e = found.setdefault(eid, {"attrs": a, "stages": []})
            if name.endswith(".occurred"):
                e["attrs"] = a
            stage: Any = name[len(ERROR_STAGE_EVENT) :]
            e["stages"].append(StageChange(stage, a.get(ERROR + "stage_step_id"), t, a.get(ERROR + "reason")))
    out = []
    for eid, e in found.items():
        a = e["attrs"]
        out.append(
            ErrorEvent(
                error_id=eid,
                step_id=str(a.get(ERROR + "step_id")),
                type=str(a.get(ERROR + "type", "Error")),
                message=str(a.get(ERROR + "message", "")),
                parent_error_id=a.get(ERROR + "parent_id"),
                stages=tuple(sorted(e["stages"], key=lambda c: (c.time_ns, _STAGE_ORDER.get(c.stage, 9)))),
                attempt=int(_number(a.get(ERROR + "attempt"), 1)),
                attributes=a.get(ERROR + "attributes") or {},
            )
        )
    return sorted(out, key=lambda e: e.stages[0].time_ns if e.stages else 0)


_STAGE_ORDER = {"occurred": 0, "propagated": 1, "recovered": 2, "ignored": 2, "failed": 3}


def _tool_call_edges(spans: list[Span], steps: dict[str, dict[str, Any]]) -> None:
    """LLM -> tool -> LLM by tool-call id (products.md 3.10, dependency rule 1).

    A tool span that names no call id (OpenInference writes ``tool.id`` only
    when the instrumentation knows it) is matched to a call the model issued:
    the latest earlier LLM step with an unclaimed call of the same tool name and
    the same parsed arguments.  The match is the source's own statement (the
    model asked for exactly this call), so the edge is declared and the tool
    step takes the call's id, which then links the tool to the LLM step that
    reads its result.  ``steps`` are the steps' fields (by span id), completed in place.
    """
    issued: dict[str, str] = {}  # call id -> span id of the LLM that issued it
    executed: dict[str, str] = {}  # call id -> span id of the tool span that ran it
    open_calls: list[tuple[str, Mapping[str, Any]]] = []  # (LLM span id, call) not yet claimed, in order
    matched: dict[str, str] = {}  # tool span id -> LLM span id, for calls that carry no id
    for s in spans:
        step = steps[s.span_id]
        if step["kind"] == "llm":
            for c in _calls(step["output"]):
                if c.get("id"):
                    issued.setdefault(str(c["id"]), s.span_id)
                open_calls.append((s.span_id, c))
        if step["kind"] != "tool":
            continue
        call = step["attributes"].get("tool_call_id")
        if call is None:
            name = sc.tool_name(s.attrs) or step["name"]
            args = chat.parse_arguments(step["input"])
            for k in range(len(open_calls) - 1, -1, -1):
                llm, c = open_calls[k]
                if (
                    c.get("name") == name
                    and c.get("arguments") == args
                    and steps[llm]["start_ns"] <= step["start_ns"]
                ):
                    del open_calls[k]
                    matched[s.span_id] = llm
                    if c.get("id"):
                        call = str(c["id"])
                        step["attributes"] = {**step["attributes"], "tool_call_id": call}
                    break
        else:
            open_calls = [(llm, c) for llm, c in open_calls if str(c.get("id")) != str(call)]
        if call is not None:
            executed.setdefault(str(call), s.span_id)
    for s in spans:
        step = steps[s.span_id]
        new: list[Dependency] = []
        kind = step["kind"]
        if kind == "tool":  # only tool spans are matched to a call
            call = step["attributes"].get("tool_call_id")
            if call is not None and str(call) in issued:
                new.append(declared(steps[issued[str(call)]]["step_id"]))
            elif s.span_id in matched:
                new.append(declared(steps[matched[s.span_id]]["step_id"]))
        elif kind == "llm" and executed:
            for call_id in _read_call_ids(step["input"]):
                src = executed.get(call_id)
                if src is not None and steps[src]["start_ns"] <= step["start_ns"]:
                    new.append(declared(steps[src]["step_id"]))
        if new:
            step["deps"] = add_deps(step["deps"], new, step["step_id"])


def _calls(message: Any) -> list[Mapping[str, Any]]:
    """`chat.tool_calls` of a normalized message read in place, not copied (only read here)."""
    calls = message.get("tool_calls") if message.__class__ is dict or isinstance(message, Mapping) else None
    if calls.__class__ is not list and not isinstance(calls, list):
        return []
    return [c for c in calls if c.__class__ is dict or isinstance(c, Mapping)]


def _read_call_ids(input: Any) -> list[str]:
    """The ``tool_call_id`` of each message of a normalized LLM input, as text (``"None"`` for a message
    without one), as `chat.input_messages` lists the messages but read in place, not copied."""
    msgs = input.get("messages") if input.__class__ is dict or isinstance(input, Mapping) else None
    if msgs.__class__ is not list and not isinstance(msgs, list):
        return []
    return [str(m.get("tool_call_id")) for m in msgs if m.__class__ is dict or isinstance(m, Mapping)]


__all__ = ["trace_to_run"]
