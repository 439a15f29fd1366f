"""What `TrajdebugTracer` reads from LangChain's runs: kinds, times, values as plain data, sessions,
LangGraph's nodes and the state keys they read, its control-flow exceptions; new steps and errors built
from old ones.

Kept apart from the tracer (`trajdebug.integrations.langchain`), which turns LangChain's callbacks into
steps, errors and edges.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from trajdebug.core import chat
from trajdebug.core.model import Dependency, ErrorEvent, StageChange, Step
from trajdebug.sources.formats.convert import add_deps


if TYPE_CHECKING:
    from langchain_core.tracers.schemas import Run as LCRun


CONTROL_FLOW_EXCEPTIONS = frozenset({"GraphBubbleUp", "GraphInterrupt", "NodeInterrupt", "ParentCommand"})
"""LangGraph exceptions that steer the graph rather than report a failure (matched on the class and its bases)."""

_KIND = {
    "llm": "llm",
    "chat_model": "llm",
    "tool": "tool",
    "retriever": "retrieval",
    "parser": "parse",
    "prompt": "other",
}


def is_control_flow(exc: BaseException | None) -> bool:
    """Whether an exception is LangGraph control flow (an interrupt, a command to the parent graph)."""
    return exc is not None and any(c.__name__ in CONTROL_FLOW_EXCEPTIONS for c in type(exc).__mro__)


def _ns(t: datetime | None) -> int | None:
    if t is None:
        return None
    return int(t.timestamp()) * 1_000_000_000 + t.microsecond * 1000


def plain(value: Any, depth: int = 0) -> Any:
    """A LangChain value as plain JSON data: messages as OpenAI-style dicts, documents as dicts."""
    from langchain_core.documents import Document
    from langchain_core.messages import BaseMessage

    from trajdebug.core.codec import to_jsonable

    if depth > 20:
        return to_jsonable(value)
    if isinstance(value, BaseMessage):
        return message_dict(value)
    if isinstance(value, Document):
        return {"page_content": value.page_content, "metadata": plain(value.metadata, depth + 1)}
    if isinstance(value, Mapping):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    return to_jsonable(value)


def message_dict(msg: Any) -> dict[str, Any]:
    """A LangChain message as a message of `trajdebug.core.chat`: role, content, tool calls, tool call id, name."""
    found = chat.normalize_message(msg)
    if found is None:  # not a message after all: keep its text
        return {"role": str(getattr(msg, "type", "user")), "content": str(getattr(msg, "content", msg))}
    return found


# The call metadata keys that name a conversation: LangGraph's ``thread_id`` (LangChain copies
# ``config["configurable"]`` scalars into the metadata), LangSmith's ``session_id`` and ``conversation_id``.
_THREAD_KEYS = ("thread_id", "session_id", "conversation_id")


def _session(call_md: Any) -> dict[str, str]:
    """``{"session": ...}`` from a call's metadata when it names a thread, else empty."""
    if not isinstance(call_md, Mapping):
        return {}
    for key in _THREAD_KEYS:
        v = call_md.get(key)
        if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v):
            return {"session": str(v)}
    return {}


def _is_graph_node(r: LCRun) -> bool:
    """Whether a chain run is a LangGraph node (its metadata names it as the node that ran)."""
    meta = (r.extra or {}).get("metadata") or {}
    return r.run_type == "chain" and isinstance(meta, Mapping) and meta.get("langgraph_node") == r.name


def _chain_kind(r: LCRun) -> str:
    """A chain run's kind: `parse` for an output parser, `agent` when it did work inside (a traced child other
    than its own conditional edge), else `other`."""
    if r.name.endswith("Parser"):
        return "parse"
    return "agent" if any(not _is_branch(r, c) for c in r.child_runs) else "other"


def _is_branch(parent: LCRun, child: LCRun) -> bool:
    """Whether ``child`` is a routing function LangGraph ran after the node ``parent`` (a conditional edge).

    A node runs as a sequence: its own function first (``seq:step:1``: what that function calls inherits the
    tag), then its state writers and its branches.  A traced child tagged with a later step of that sequence is
    the routing decision taken on the node's output, not work the node did: it makes no container of the node."""
    if not _is_graph_node(parent):
        return False
    for tag in child.tags or ():
        head, _, num = tag.rpartition(":")
        if head == "seq:step" and num.isdigit() and int(num) >= 2:
            return True
    return False


def _contains(haystack: Any, needle: Any, depth: int = 0) -> bool:
    """Whether ``needle`` is ``haystack`` or a value inside it (whole values only: no text matching)."""
    if haystack == needle:
        return True
    if depth > 6:
        return False
    if isinstance(haystack, Mapping):
        return any(_contains(v, needle, depth + 1) for v in haystack.values())
    if isinstance(haystack, (list, tuple)):
        if isinstance(needle, list) and needle and len(haystack) >= len(needle):
            # A message list handed on with more appended (a prompt's system message first) holds it too.
            n = len(needle)
            if any(list(haystack[i : i + n]) == needle for i in range(len(haystack) - n + 1)):
                return True
        return any(_contains(v, needle, depth + 1) for v in haystack)
    return False


def _numbers(value: Any, depth: int = 0) -> Iterator[float]:
    """The numbers of a structured value (not those written inside its text)."""
    if isinstance(value, bool) or depth > 6:
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _numbers(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value[:200]:
            yield from _numbers(v, depth + 1)


def _computed(given: Any, state: Mapping[str, Any]) -> bool:
    """Whether a sub-step was given a number that no state value holds (the node computed it)."""
    held = set(_numbers(list(state.values())))
    return any(n not in held for n in _numbers(given))


def _scalars(value: Any, depth: int = 0) -> Iterator[Any]:
    """The distinctive scalars of a value: strings of three characters or more and numbers that are not small
    counts (10 or more, or a fraction), through mappings, lists and JSON written into text (a payload a node
    serialized into a prompt)."""
    if depth > 6 or isinstance(value, bool) or value is None:
        return
    if isinstance(value, str):
        text = value.strip()
        found = list(_json_in(text)) if depth < 6 else []
        for payload in found:
            yield from _scalars(payload, depth + 1)
        if len(text) >= 3 and not (found and text[:1] in ("{", "[")):
            yield text
    elif isinstance(value, (int, float)):
        if abs(value) >= 10 or value != int(value):
            yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _scalars(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        # The newest items: a conversation grows at its end, and a bound keeps the reading linear.
        for v in value[-200:]:
            yield from _scalars(v, depth + 1)


def _json_in(text: str) -> Iterator[Any]:
    """The JSON objects and arrays written in a text (a whole JSON text, or payloads inside a prompt)."""
    decoder = json.JSONDecoder()
    i, tries = 0, 0
    while tries < 20:
        starts = [j for j in (text.find("{", i), text.find("[", i)) if j >= 0]
        if not starts:
            return
        i, tries = min(starts), tries + 1
        try:
            obj, end = decoder.raw_decode(text, i)
        except (ValueError, RecursionError):  # a model repeating '[' a thousand times is text, not JSON
            i += 1
            continue
        if isinstance(obj, (dict, list)) and obj:
            yield obj
        i = end


StateIndex = tuple[dict[str, Any], dict[str, set[Any]], dict[Any, set[str]]]
"""A node's state read once for every call inside it: the filled keys, each key's scalars, each scalar's keys."""


def state_index(state: Mapping[str, Any]) -> StateIndex:
    """The state's scalars and their owners, built once per node (every call inside it reads the same state)."""
    filled = {k: v for k, v in state.items() if v not in (None, "", [], {})}
    own = {k: set(_scalars(v)) for k, v in filled.items()}
    owners: dict[Any, set[str]] = {}
    for k, xs in own.items():
        for x in xs:
            owners.setdefault(x, set()).add(k)
    return filled, own, owners


def keys_read(state: Mapping[str, Any], given: Any, index: StateIndex | None = None) -> list[str]:
    """The state keys a model or tool call was handed, by unambiguous parts only.

    A key is read when the call was handed its value whole (a value no other key holds), or a distinctive
    scalar of it that no other key's value holds (a field of a record, an item of a list: the node took
    the value apart, or serialized it into a prompt).  A scalar that several keys hold (a date every
    record carries, an id) names none of them: which key the node took it from cannot be seen.
    """
    filled, own, owners = index if index is not None else state_index(state)
    held = set(_scalars(given))
    out = []
    for k, v in filled.items():
        if isinstance(v, (Mapping, list, tuple)):
            whole = _contains(given, v) and not any(w == v for k2, w in filled.items() if k2 != k)
        else:
            whole = False
        if whole or any(owners.get(x) == {k} for x in held & own[k]):
            out.append(k)
    return out


def answers(output: Any, value: Any) -> bool:
    """Whether a call's answer holds a value a node wrote: the answer itself, its text, the JSON it wrote, or
    every distinctive scalar of the value written in it (a list the node cut out of the model's text)."""
    if value in (None, "", [], {}):
        return False
    if isinstance(value, list) and all(isinstance(m, Mapping) and "role" in m for m in value):
        # Messages the node added to a conversation (LangGraph's `messages`): each one the call's answer.
        return all(_message_answers(output, m) for m in value)
    text = _text(output.get("content")) if isinstance(output, Mapping) and "role" in output else None
    if value == output or (text is not None and value == text):
        return True
    body = text if text is not None else output
    if isinstance(body, str):
        if any(obj == value for obj in _json_in(body)):
            return True
        wanted = set(_scalars(value))
        return bool(wanted) and all(str(x) in body for x in wanted)
    wanted = set(_scalars(value))
    return bool(wanted) and wanted <= set(_scalars(body))


def _message_answers(output: Any, msg: Mapping[str, Any]) -> bool:
    """Whether a message a node wrote is a call's answer: the model's message itself (its text and the tool
    calls it asked for), or a tool's answer carried as a tool message's content."""
    if msg == output:
        return True
    text = _text(msg.get("content"))
    if isinstance(output, Mapping) and "role" in output:
        asked = [c.get("id") for c in output.get("tool_calls") or () if isinstance(c, Mapping)]
        wrote = [c.get("id") for c in msg.get("tool_calls") or () if isinstance(c, Mapping)]
        return text == _text(output.get("content")) and asked == wrote and bool(text or asked)
    if isinstance(output, str):
        return bool(text) and text == output
    return bool(text) and any(obj == output for obj in _json_in(text))


def _text(content: Any) -> str:
    """A message's content as text (the text parts of a list of parts)."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content)
    return "" if content is None else str(content)


def _node_input(
    r: LCRun, state: dict[str, Any], attrs: dict[str, Any], given: Callable[[LCRun], Any]
) -> dict[str, Any]:
    """A LangGraph node's input as the state keys it read; the whole state stays in the attributes' key list.

    LangGraph hands every node the whole state, and the node returns an update of the keys it
    wrote.  Recorded as given, every node "was given" every key and "did not pass it on".  A key
    counts as read when one of the node's sub-steps (its model call, its tools) received the key's
    value whole; a node with no sub-step that received any (plain Python), or with a sub-step given
    a number it computed (no state value holds it), keeps the whole state, since what it read
    cannot be seen from outside.  ``given`` is what a sub-step received, in
    the form its step records (a model call's messages in the chat convention).
    """
    attrs["langgraph.node"] = r.name
    attrs["langgraph.state_keys"] = sorted(state)
    inputs: list[Any] = []
    stack = list(r.child_runs)
    while stack:
        child = stack.pop()
        inputs.append(given(child))
        stack.extend(child.child_runs)
    read = [k for k, v in state.items() if v not in (None, "", [], {}) and any(_contains(i, v) for i in inputs)]
    if not read or any(_computed(i, state) for i in inputs):
        # A sub-step given a number the state does not hold got it computed from keys it read in
        # part (a total over two of them): which ones cannot be seen, so the node keeps them all.
        return state
    attrs["state_reads"] = read
    return {k: state[k] for k in read}


def _replace(obj: Any, **changes: Any) -> Any:
    from trajdebug.core.model import replace

    return replace(obj, **changes)


def _with_deps(step: Step, new: list[Dependency]) -> Step:
    out: Step = _replace(step, deps=add_deps(step.deps, new, step.step_id))
    return out


def _add_stage(e: ErrorEvent, change: StageChange) -> ErrorEvent:
    out: ErrorEvent = _replace(e, stages=(*e.stages, change))
    return out


__all__ = ["CONTROL_FLOW_EXCEPTIONS", "is_control_flow", "message_dict", "plain"]
