"""Import multi-agent transcripts: agents speaking in turn, one step per message.

A transcript is a list of ``{role, name?, content}`` messages (AutoGen group
chats, Magentic-One logs, the Who&When failure-attribution set), alone or under
``history``, ``messages``, ``transcript``, ``chat_history`` or ``conversation``
in an object whose other fields become run metadata.  The speaker (``name``,
else ``role``) is the step's ``agent``.

Dependencies, from the conversation's own structure:

- addressing: a message that names another agent ("WebSurfer, please ...",
  "@Coder", "Next speaker: Coder") is an instruction to it, so that agent's
  next message depends on it (declared, control);
- quoting: a ``> quoted`` line copied from an earlier message (declared, data);
- code -> execution result: an execution result ("exitcode: 0 ...") depends
  on the latest earlier message holding a fenced code block (declared, data);
- turn order: each message on the one before it (inferred, context, 0.5).

Nothing is inferred from content here; the analysis does that when it reads
the run.  An agent's turn is an LLM step whose output is its message in the
convention of `trajdebug.core.chat` (``{"role": "assistant", "content": ...,
"name": speaker}``); its input is left empty, since a transcript does not say
which earlier messages a speaker was shown.  An execution result that failed
(non-zero exit code, a traceback) is an error reported as data, recovered when
the next agent turn read it.
"""

from __future__ import annotations

import re
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
    messages_of,
    read_message_lists,
    read_records,
    recover_errors,
)
from trajdebug.sources.formats.convert import add_deps, declared, error_event, inferred, text_of


TRANSCRIPT_KEYS = ("history", "messages", "transcript", "chat_history", "conversation")
"""Keys under which a run object holds its transcript, in the order tried."""

TURN_CONFIDENCE = 0.5
"""Confidence of turn-order edges: in a group chat the previous speaker is read, but not necessarily used."""

_GENERIC = frozenset({"user", "assistant", "system", "human", "ai", "tool", "agent", "admin"})
_OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_CODE_BLOCK = re.compile(r"```[\w+-]*\n.*?```", re.DOTALL)
_EXEC_RESULT = re.compile(
    r"^\s*(?:exitcode:\s*-?\d+|Code output:|\[?execution (?:succeeded|failed))", re.IGNORECASE
)
_EXIT_CODE = re.compile(r"exitcode:\s*(-?\d+)", re.IGNORECASE)
_EXECUTOR_NAME = re.compile(r"terminal|executor|execut|interpreter|code_?runner|computer", re.IGNORECASE)
_TRACEBACK_ERROR = re.compile(r"^(\w+(?:Error|Exception|Exit|Interrupt))(?::\s*(.*))?$", re.MULTILINE)
_QUOTE_MIN = 20
"""Shortest quoted text (characters) taken as a quote of an earlier message rather than a coincidence."""


def read_transcript(path: str | Path) -> ReadResult:
    """Import every transcript in a file.

    Raises:
        FormatError: the file is unreadable, not JSON, or holds no transcript at all.
    """
    return read_message_lists(path, TRANSCRIPT_KEYS, transcript_to_run, "transcript")


def looks_like_transcript(path: str | Path) -> bool:
    """Whether a file of ``{role, content}`` messages is a multi-agent transcript rather than an OpenAI log.

    It is when no message carries OpenAI tool-call fields and either two or
    more named speakers take turns, or speakers use roles OpenAI has not.
    """
    try:
        records, _ = read_records(path)
    except FormatError:
        return False
    msgs: list[Any] = []
    for r in records:
        v = r.value
        items = v if isinstance(v, list) else [v]
        for item in items:
            if (
                isinstance(item, Mapping)
                and "role" not in item
                and (found := messages_of(item, (*TRANSCRIPT_KEYS, "traj")))
            ):
                msgs += found[1] if isinstance(found[1], list) else []
            else:
                msgs.append(item)
    msgs = [m for m in msgs if isinstance(m, Mapping)]
    if not msgs or any("tool_calls" in m or "tool_call_id" in m or "function_call" in m for m in msgs):
        return False
    names = {str(m["name"]) for m in msgs if m.get("name") and m.get("role") not in ("tool", "function")}
    roles = {str(m.get("role")) for m in msgs}
    return len(names) >= 2 or bool(roles - _OPENAI_ROLES)


def _is_execution_result(speaker: str, text: str) -> bool:
    return bool(_EXEC_RESULT.match(text)) or (
        bool(_EXECUTOR_NAME.search(speaker)) and not _CODE_BLOCK.search(text)
    )


def _execution_error(text: str) -> tuple[str, str] | None:
    """(type, message) of a failed execution result, or None when it succeeded."""
    m = _EXIT_CODE.search(text)
    failed = (m is not None and m.group(1) != "0") or "Traceback (most recent call last)" in text
    if not failed:
        return None
    errs = _TRACEBACK_ERROR.findall(text)
    if errs:
        etype, msg = errs[-1]
        return etype, (msg or etype).strip()
    first = text.strip().splitlines()[0] if text.strip() else "execution failed"
    return "ExecutionError", first


_USER_ROLES = frozenset({"user", "human"})


def _task_giver(valid: Sequence[tuple[int, Any, str, str]]) -> str | None:
    """The speaker who gave the task: the one who opened the conversation in the user role (AutoGen's ``Admin``,
    a user proxy), whose messages are the run's input, as an OpenAI log's user messages are (newuser65: the
    person stating the task was an agent's llm turn).  None when an agent opened it: in group chats that record
    agents in the user role (``{"role": "user", "name": "Verification_Expert"}``), those stay agents."""
    if not valid:
        return None
    _, msg, speaker, _ = valid[0]
    return speaker if str(msg["role"]).lower() in _USER_ROLES else None


def _mentions(text: str, name: str) -> bool:
    if f"@{name}" in text:
        return True
    if name.lower() in _GENERIC or len(name) < 3:
        return False  # "assistant" as a word is not an address
    return re.search(rf"(?<![\w@]){re.escape(name)}(?!\w)", text) is not None


def transcript_to_run(
    messages: Sequence[Any], *, run_id: str, **head: Unpack[RunHead]
) -> tuple[Run, list[FormatError]]:
    """Build one run from a transcript; malformed messages become problems and are skipped.

    ``head`` names the run, its metadata and outcome, and where it was read (`RunHead`).
    """
    checked, problems = checked_messages(messages, _check, head)
    # (position, message, speaker, text)
    valid = [(i, msg, str(msg.get("name") or msg["role"]), text_of(msg.get("content"))) for i, msg in checked]
    speakers = {sp for _, _, sp, _ in valid}
    person = _task_giver(valid)
    step_id = message_step_ids(len(messages))
    steps: list[Step] = []
    errors: list[ErrorEvent] = []
    addressed: dict[str, list[str]] = {}  # speaker -> messages addressing them since they last spoke
    last_code: str | None = None
    open_errors: list[int] = []
    prev: str | None = None
    for i, msg, speaker, text in valid:
        sid = step_id(i)
        start = message_time(msg, i)
        role = str(msg["role"]).lower()
        is_result = _is_execution_result(speaker, text)
        deps: list[Dependency] = [declared(a, "control") for a in addressed.pop(speaker, ())]
        if prev is not None:
            deps.append(inferred(prev, "context", TURN_CONFIDENCE))
        deps += [declared(q) for q in _quoted(text, steps)]
        status, err = "ok", None
        if is_result:
            kind = "tool"
            if last_code is not None:
                deps.append(declared(last_code))
            failure = _execution_error(text)
            if failure is not None:
                status = "error"
                eid = f"{run_id}/{sid}"
                err = ErrorInfo(type=failure[0], message=failure[1], error_id=eid)
                errors.append(
                    error_event(eid, sid, failure[0], failure[1], start, attributes={"reported": True})
                )
                open_errors.append(len(errors) - 1)
        else:
            # The task-giver is the run's input, as an OpenAI log's user message is, not an agent's turn.
            kind = "input" if role == "system" or (role in _USER_ROLES and (not msg.get("name") or speaker == person)) else "llm"
            if _CODE_BLOCK.search(text):
                last_code = sid
            reason = "the failed execution result was read by the next agent turn and the conversation continued"
            recover_errors(errors, open_errors, sid, start, reason)
        for other in speakers - {speaker}:
            if _mentions(text, other):
                addressed.setdefault(other, []).append(sid)
        attrs = {
            "role": role,
            **{k: v for k, v in msg.items() if k not in ("role", "name", "content") and v is not None},
        }
        output = _output(msg, kind, text, speaker)
        steps.append(
            Step(
                step_id=sid,
                name=speaker,
                kind=kind,  # type: ignore[arg-type]
                agent=speaker,
                output=output,
                status=status,  # type: ignore[arg-type]
                error=err,
                start_ns=start,
                end_ns=start,
                deps=add_deps((), deps, sid),
                attributes=attrs,
                source_index=i,
            )
        )
        prev = sid
    run = message_run(steps, errors, (m for _, m, _, _ in valid), run_id, head)
    return run, problems


def _output(msg: Mapping[str, Any], kind: str, text: str, speaker: str) -> Any:
    """A message step's output: an agent's turn as a model's answer (`chat.normalize_llm_step`), else the
    message's content as written."""
    if kind == "llm":
        return chat.normalize_llm_step(None, {"role": "assistant", "content": text or None, "name": speaker})[1]
    return msg.get("content")


def _quoted(text: str, earlier: Sequence[Step]) -> list[str]:
    """Earlier messages that ``> quoted`` lines of ``text`` were copied from (the latest one for each quote)."""
    quotes = [ln.lstrip()[1:].strip() for ln in text.splitlines() if ln.lstrip().startswith(">")]
    found: list[str] = []
    for q in quotes:
        if len(q) < _QUOTE_MIN:
            continue
        for s in reversed(earlier):
            if q in text_of(s.output):
                found.append(s.step_id)
                break
    return found


def _check(msg: Any) -> str | None:
    if not isinstance(msg, Mapping):
        return f"expected an object, got {type(msg).__name__}"
    if not isinstance(msg.get("role"), str) or not msg["role"]:
        return "lacks a string field 'role'"
    content = msg.get("content")
    if content is not None and not isinstance(content, (str, list, Mapping)):
        return f"field 'content' must be a string, a list of parts or null, got {type(content).__name__}"
    return None


__all__ = ["TRANSCRIPT_KEYS", "looks_like_transcript", "read_transcript", "transcript_to_run"]
