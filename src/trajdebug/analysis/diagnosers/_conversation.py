"""Tool-calling conversations: a user, an assistant, its tool calls and their results.

The rules in `trajdebug.analysis.diagnosers._chat_rules` see a run as a `Conversation`:
the steps of an imported message log (`trajdebug.sources.formats.messages`) or any
run whose steps carry a chat ``role`` attribute.  A run without user turns is
not a conversation and the rules stay silent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers._context import DiagnoseContext
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.model import Run, Step


Role = Literal["user", "assistant", "tool", "system"]
"""Who speaks in a conversation turn."""

_USER_ROLES = frozenset({"user", "human"})
_ASSISTANT_ROLES = frozenset({"assistant", "ai", "model"})
_TOOL_ROLES = frozenset({"tool", "function", "ipython"})
SYSTEM_ROLES = frozenset({"system", "developer"})


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call an assistant turn made, with its result."""

    name: str
    """The tool's name."""
    arguments: Mapping[str, Any]
    """Its arguments (empty when they were not a JSON object)."""
    result_id: str | None
    """The step holding its result, if any."""
    error: str | None
    """The error its result reported, if any."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation."""

    step_id: str
    """The step that holds it."""
    role: Role
    """Who speaks."""
    text: str
    """What was said (for a tool result: the result as text)."""
    calls: tuple[Call, ...] = ()
    """The tool calls of an assistant turn."""
    result: Any = None
    """The parsed output of a tool result."""


class Conversation:
    """A run read as a conversation: its turns in order, and indexes over them."""

    def __init__(self, run: Run) -> None:
        self.turns: list[Turn] = []
        self.position: dict[str, int] = {}
        results: dict[str, Step] = {}
        owner: dict[str, str] = {}  # tool-call step -> the assistant turn that issued it
        for s in run.steps:
            if _role(s) == "tool":
                results[s.step_id] = s
                for d in s.deps:
                    if d.origin == "declared":
                        owner.setdefault(s.step_id, d.step_id)
        by_owner: dict[str, list[Step]] = {}
        for rid, oid in owner.items():
            by_owner.setdefault(oid, []).append(results[rid])
        for s in run.steps:
            role = _role(s)
            if role is None:
                continue
            calls: tuple[Call, ...] = ()
            if role == "assistant":
                calls = _calls(s, by_owner.get(s.step_id, []))
            text = _message_text(s) if role != "tool" else content.text_of(s.output)
            self.position[s.step_id] = len(self.turns)
            self.turns.append(Turn(s.step_id, role, text, calls, s.output if role == "tool" else None))

    @property
    def is_chat(self) -> bool:
        """Whether the run has both a user and an assistant speaking."""
        roles = {t.role for t in self.turns}
        return "user" in roles and "assistant" in roles

    def turn(self, step_id: str) -> Turn | None:
        """The turn held by a step, if it is one."""
        i = self.position.get(step_id)
        return None if i is None else self.turns[i]

    def before(self, step_id: str) -> list[Turn]:
        """The turns before a step's turn, oldest first."""
        return self.turns[: self.position.get(step_id, 0)]

    def after(self, step_id: str) -> list[Turn]:
        """The turns after a step's turn, oldest first."""
        i = self.position.get(step_id)
        return [] if i is None else self.turns[i + 1 :]

    def last_user(self, step_id: str) -> Turn | None:
        """The last user message before a step's turn."""
        return next((t for t in reversed(self.before(step_id)) if t.role == "user"), None)

    def results_since_user(self, step_id: str) -> list[Turn]:
        """The tool results the assistant read since the user last spoke, newest first."""
        out = []
        for t in reversed(self.before(step_id)):
            if t.role == "user":
                break
            if t.role == "tool":
                out.append(t)
        return out


def _role(step: Step) -> Role | None:
    r = str(step.attributes.get("role", "")).lower()
    if r in _USER_ROLES:
        return "user"
    if r in _ASSISTANT_ROLES:
        return "assistant"
    if r in _TOOL_ROLES:
        return "tool"
    if r in SYSTEM_ROLES:
        return "system"
    return None


def _message_text(step: Step) -> str:
    out = step.output
    if isinstance(out, Mapping) and "tool_calls" in out:
        out = out.get("content")
    return content.text_of(out)


def _calls(step: Step, results: Sequence[Step]) -> tuple[Call, ...]:
    out = step.output
    raw = out.get("tool_calls") if isinstance(out, Mapping) else None
    if not isinstance(raw, list):
        return ()
    by_id = {str(r.attributes["tool_call_id"]): r for r in results if "tool_call_id" in r.attributes}
    by_name: dict[str, list[Step]] = {}
    for r in results:
        by_name.setdefault(r.name, []).append(r)
    calls = []
    for c in raw:
        if not isinstance(c, Mapping):
            continue
        name = str(c.get("name") or "")
        args = c.get("arguments")
        # Match the result by call id; by name, in order, when the log has no ids.
        hit = by_id.get(str(c.get("id")))
        if hit is None and not by_id:
            same = by_name.get(name, [])
            hit = same.pop(0) if same else None
        err = None
        if hit is not None:
            err = hit.error.message if hit.error is not None else content.error_text(hit.output)
        calls.append(Call(name, args if isinstance(args, Mapping) else {}, hit.step_id if hit else None, err))
    return tuple(calls)


_CACHE: dict[int, tuple[Run, Conversation]] = {}


def conversation(run: Run) -> Conversation:
    """The conversation view of a run (cached for the few runs analyzed last)."""
    hit = _CACHE.get(id(run))
    if hit is not None and hit[0] is run:
        return hit[1]
    conv = Conversation(run)
    if len(_CACHE) >= 8:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[id(run)] = (run, conv)
    return conv


def chat_turn(step: Step, ctx: DiagnoseContext, role: str | None = None) -> tuple[Conversation, Turn] | None:
    """The step's turn of the run's chat and the chat; None when it is none (or not a turn of ``role``)."""
    conv = conversation(ctx.run)
    t = conv.turn(step.step_id)
    if t is None or not conv.is_chat or (role is not None and t.role != role):
        return None
    return conv, t


# -- tool kinds --------------------------------------------------------------------


def is_write(name: str, run: Run | None = None, *, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a tool changes the world (a consequential call) rather than reads it.

    The run's metadata may say so (``tools``: a list of ``{"name", "read_only"}``
    or MCP-style ``{"name", "annotations": {"readOnlyHint"}}``); otherwise the
    name decides: read verbs (get, find, list, ...) read, write verbs write.
    """
    if run is not None:
        for t in run.metadata.get("tools", ()) if isinstance(run.metadata.get("tools"), list) else ():
            if isinstance(t, Mapping) and t.get("name") == name:
                ro = t.get("read_only", (t.get("annotations") or {}).get("readOnlyHint"))
                if isinstance(ro, bool):
                    return not ro
    if lexicon.read_tool.match(name):
        return False
    return bool(lexicon.write_tool.search(name))


__all__ = [
    "Call",
    "Conversation",
    "Role",
    "SYSTEM_ROLES",
    "Turn",
    "chat_turn",
    "conversation",
    "is_write",
]
