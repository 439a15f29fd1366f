"""Import OpenAI-style message logs: one step per message.

Accepted shapes (a JSON document, or JSON lines):

- a list of messages (``role``, ``content``, ``tool_calls``, ``tool_call_id``, ``name``);
- an object holding one under ``messages``, ``traj`` or ``history`` (other
  fields become run metadata; ``reward``/``success``/``outcome`` set the outcome);
- a list of such objects, one run each (tau-bench's ``tau_dataset_failed.json``);
- JSON lines of messages (one run) or of run objects (one run per line).

Dependencies, all from the log's own structure:

- a tool result depends on the assistant turn that issued its ``tool_call_id``
  (declared, data);
- an assistant turn depends on what it newly read since its previous turn:
  the user messages and tool results in between (declared, data);
- turn order: an assistant turn on the previous assistant turn, a user message
  on the assistant message it answers (inferred, context, confidence 0.6).

Nothing is inferred from content here; the analysis does that when it reads
the run.  An assistant turn is an LLM step whose output is the assistant's
message in the convention of `trajdebug.core.chat`; its input is left empty,
because the messages it read are steps of their own that it depends on
(declared edges above): a log of n messages is stored once, not n times, and
no message is matched against itself.  A tool result that reads as an error ("Error: user
not found") is an error reported as data: it occurred at the tool step and was
recovered when the next assistant turn read it, since the text went back to the
model and the run went on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Unpack

from trajdebug.core import chat
from trajdebug.core.jsonl import FormatError, ReadResult
from trajdebug.core.model import Dependency, ErrorEvent, ErrorInfo, Run, Step
from trajdebug.sources.formats._common import (
    RunHead,
    checked_messages,
    message_run,
    message_step_ids,
    message_time,
    read_message_lists,
    recover_errors,
)
from trajdebug.sources.formats.convert import (
    add_deps,
    declared,
    error_event,
    error_text,
    error_type_of,
    inferred,
    llm_content,
    maybe_json,
)


MESSAGE_KEYS = ("messages", "traj", "history")
"""Keys under which a run object holds its message list, in the order tried."""

_ROLE_KIND = {
    "system": "input",
    "developer": "input",
    "user": "input",
    "human": "input",
    "assistant": "llm",
    "ai": "llm",
    "model": "llm",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}
_ASSISTANT = frozenset({"assistant", "ai", "model"})
_TOOL = frozenset({"tool", "function", "ipython"})
_USER = frozenset({"user", "human"})
_KNOWN_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name", "function_call", "index"})
TURN_CONFIDENCE = 0.6
"""Confidence of turn-order edges: the earlier turn is in context, but not necessarily used."""


def read_messages(path: str | Path) -> ReadResult:
    """Import every run of an OpenAI-style message log file.

    Raises:
        FormatError: the file is unreadable, not JSON, or holds no run at all.
    """
    return read_message_lists(path, MESSAGE_KEYS, messages_to_run, "openai-messages")


def messages_to_run(
    messages: Sequence[Any], *, run_id: str, **head: Unpack[RunHead]
) -> tuple[Run, list[FormatError]]:
    """Build one run from a message list; malformed messages become problems and are skipped.

    ``head`` names the run, its metadata and outcome, and where it was read (`RunHead`).
    """
    valid, problems = checked_messages(messages, _check_message, head)
    step_id = message_step_ids(len(messages))
    thread = _Thread(run_id)
    for i, msg in valid:
        thread.add(i, msg, step_id(i))
    run = message_run(thread.steps, thread.errors, messages, run_id, head)
    return run, problems


class _Thread:
    """The steps of one message list as they are read: who issued which tool call, what the next
    assistant turn reads, which reported errors wait for the turn that recovers them."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.steps: list[Step] = []
        self.errors: list[ErrorEvent] = []
        self.call_owner: dict[str, str] = {}  # tool_call_id -> step id of the assistant turn that issued it
        self.call_args: dict[str, Any] = {}
        self.call_names: dict[str, Any] = {}
        self.pending_fn: dict[str, str] = {}  # legacy function_call name -> issuing step
        self.since_assistant: list[str] = []  # steps read by the next assistant turn
        self.last_assistant: str | None = None
        self.open_errors: list[int] = []  # indexes into errors awaiting the next assistant turn

    def add(self, i: int, msg: Any, sid: str) -> None:
        role = str(msg["role"]).lower()
        start = message_time(msg, i)
        attrs: dict[str, Any] = {"role": role}
        if "index" in msg:
            attrs["index"] = msg["index"]
        attrs.update({k: v for k, v in msg.items() if k not in _KNOWN_KEYS and v not in (None, [], {})})
        deps: list[Dependency] = []
        inp: Any = None
        out: Any = msg.get("content")
        step_name = str(msg.get("name") or role)
        agent = None
        err: ErrorInfo | None = None
        if role in _ASSISTANT:
            agent = msg.get("name")
            step_name = "assistant" if agent is None else str(agent)
            out, attrs = self._assistant(msg, sid, start, attrs, deps)
        elif role in _TOOL:
            inp, out, step_name, err = self._tool(msg, sid, start, attrs, deps, step_name)
        else:
            if role in _USER and self.last_assistant is not None:
                deps.append(inferred(self.last_assistant, "context", TURN_CONFIDENCE))
            self.since_assistant.append(sid)
        self.steps.append(
            Step(
                step_id=sid,
                name=step_name,
                kind=_ROLE_KIND.get(role, "other"),  # type: ignore[arg-type]
                agent=None if agent is None else str(agent),
                input=inp,
                output=out,
                status="ok" if err is None else "error",
                error=err,
                start_ns=start,
                end_ns=start,
                deps=add_deps((), deps, sid),
                attributes=attrs,
                source_index=i,
            )
        )

    def _assistant(
        self, msg: Any, sid: str, start: int, attrs: dict[str, Any], deps: list[Dependency]
    ) -> tuple[Any, dict[str, Any]]:
        _, out, attrs = llm_content(None, {**msg, "role": "assistant"}, attrs)
        calls = chat.tool_calls(out)
        if calls:
            attrs["tool_call_ids"] = [c["id"] for c in calls if c.get("id")]
            for c in calls:
                if c.get("id"):
                    self.call_owner[str(c["id"])] = sid
                    self.call_args[str(c["id"])] = c.get("arguments")
                    self.call_names[str(c["id"])] = c.get("name")
                elif c.get("name"):
                    self.pending_fn[str(c["name"])] = sid
        deps += [declared(s) for s in self.since_assistant]
        if self.last_assistant is not None:
            deps.append(inferred(self.last_assistant, "context", TURN_CONFIDENCE))
        reason = "the error text went back to the model as the tool result and the run continued"
        recover_errors(self.errors, self.open_errors, sid, start, reason)
        self.since_assistant.clear()
        self.last_assistant = sid
        return out, attrs

    def _tool(
        self, msg: Any, sid: str, start: int, attrs: dict[str, Any], deps: list[Dependency], step_name: str
    ) -> tuple[Any, Any, str, ErrorInfo | None]:
        call_id = msg.get("tool_call_id")
        owner = None
        inp: Any = None
        if call_id is not None:
            attrs["tool_call_id"] = str(call_id)
            owner = self.call_owner.get(str(call_id))
            inp = self.call_args.get(str(call_id))
            if owner is None:
                attrs["unmatched_tool_call_id"] = True
        elif msg.get("name") is not None:
            owner = self.pending_fn.pop(str(msg["name"]), None)
        if owner is not None:
            deps.append(declared(owner))
            if msg.get("name") is None:
                step_name = str(self.call_names.get(str(call_id)) or step_name)
        out = maybe_json(msg.get("content"))
        text = error_text(out)
        err = None
        if text is not None:
            eid = f"{self.run_id}/{sid}"
            err = ErrorInfo(type=error_type_of(text), message=text, error_id=eid)
            self.errors.append(error_event(eid, sid, err.type, text, start, attributes={"reported": True}))
            self.open_errors.append(len(self.errors) - 1)
        self.since_assistant.append(sid)
        return inp, out, step_name, err


# -- messages ------------------------------------------------------------------


def _check_message(msg: Any) -> str | None:
    if not isinstance(msg, Mapping):
        return f"expected an object, got {type(msg).__name__}"
    role = msg.get("role")
    if not isinstance(role, str) or not role:
        return "lacks a string field 'role'"
    content = msg.get("content")
    if content is not None and not isinstance(content, (str, list, Mapping)):
        return f"field 'content' must be a string, a list of parts or null, got {type(content).__name__}"
    calls = msg.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            return "field 'tool_calls' is not a list"
        for k, c in enumerate(calls):
            if not isinstance(c, Mapping):
                return f"tool_calls[{k}] is not an object"
    return None


__all__ = ["MESSAGE_KEYS", "messages_to_run", "read_messages"]
