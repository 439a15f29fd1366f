"""A session as a conversation: its runs (turns) in order, each with what the user said and what the agent answered.

``trajdebug serve``'s session page (``/sessions/ID``) shows each turn's user
message and final answer, its outcome, tokens, cost and a link to the run;
a run page links to its session and to the turns before and after it
(`session_nav`).  Replays and reference runs that verification recorded are
not turns.

What a turn's user said (`user_text`): the first ``input`` step's input, else
the run's ``task`` (``trajdebug.run(task=...)``), else the input of its one
top-level step (an agent function), else the last user message the first LLM
call read, else the first step's input.  What the agent answered
(`answer_text`): the last ``output`` step's output, else its one top-level
step's output, else the answer of an LLM call the run ended with (its text,
as `trajdebug.core.chat` normalises every shape; not a call followed by other
work, which answered the agent, not the user), else none.
Each is text, cut at `TEXT_LIMIT` characters; the page escapes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from trajdebug.core.chat import input_messages, normalize_llm_step
from trajdebug.core.model import Run, Step
from trajdebug.serve.catalog import Catalog, Query, RunEntry
from trajdebug.sessions import session_of


TEXT_LIMIT = 2_000
"""Characters of a user message or an answer the page shows (the run page has the rest)."""

TEXT_KEYS = ("text", "content", "message", "question", "query", "input", "prompt", "answer", "output", "result")
"""The keys a mapping's text is read from, first found wins (a request ``{"text": ..., "user": ...}``)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One run of a session as the conversation view shows it."""

    number: int
    """Its place in the session, from 1 (oldest first)."""
    entry: RunEntry
    """The run as the run list has it (outcome, tokens, cost, start)."""
    user_text: str | None
    """What the user said (`user_text`), None when the run states nothing."""
    answer_text: str | None
    """What the agent answered (`answer_text`), None when it answered nothing."""


def text_of(value: Any) -> str | None:
    """A value as the text a person reads: a string as it is, a message's content, a mapping's text field
    (`TEXT_KEYS`) or its one string, else compact JSON; None for nothing."""
    if value is None or value == "" or value == {} or value == []:
        return None
    if isinstance(value, str):
        return _cut(value)
    if isinstance(value, Mapping):
        msgs = input_messages(value)
        users = [m for m in msgs if m.get("role") == "user"]
        if users:
            return text_of(users[-1].get("content"))
        for key in TEXT_KEYS:
            if isinstance(value.get(key), str) and value[key].strip():
                return _cut(value[key])
        strings = [v for v in value.values() if isinstance(v, str) and v.strip()]
        if len(strings) == 1:
            return _cut(strings[0])
    try:
        return _cut(json.dumps(value, ensure_ascii=False, default=repr))
    except (TypeError, ValueError):
        return _cut(repr(value))


def _cut(text: str) -> str:
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"


def _normalized(step: Step) -> tuple[Any, Any]:
    try:
        new_in, new_out, _ = normalize_llm_step(step.input, step.output, step.attributes)
    except Exception:  # noqa: BLE001 - a shape the normalisation trips on is read as it is
        return step.input, step.output
    return new_in, new_out


def user_text(run: Run) -> str | None:
    """What the user said in this run (the module's doc says where it is read from)."""
    first_input = next((s for s in run.steps if s.kind == "input"), None)
    if first_input is not None and text_of(first_input.input or first_input.output):
        return text_of(first_input.input or first_input.output)
    task = run.metadata.get("task")
    if isinstance(task, str) and task.strip():
        return _cut(task)
    root = _one_root(run)
    if root is not None and text_of(root.input):
        return text_of(root.input)
    llm = next((s for s in run.steps if s.kind == "llm"), None)
    if llm is not None:
        users = [m for m in input_messages(_normalized(llm)[0]) if m.get("role") == "user"]
        if users and text_of(users[-1].get("content")):
            return text_of(users[-1].get("content"))
    return text_of(run.steps[0].input) if run.steps else None


def answer_text(run: Run) -> str | None:
    """What the agent answered in this run (the module's doc says where it is read from)."""
    outputs = [s for s in run.steps if s.kind == "output"]
    if outputs:
        said = outputs[-1]
        found = text_of(said.output if said.output is not None else said.input)
        if found:
            return found
    root = _one_root(run)
    if root is not None and root.kind != "llm" and text_of(root.output):
        return text_of(root.output)
    last = _last_leaf(run)
    if last is None or last.kind != "llm":
        return None
    out = _normalized(last)[1]
    if isinstance(out, Mapping) and out.get("role") == "assistant" and not out.get("tool_calls"):
        return text_of(out.get("content"))
    return None


def _one_root(run: Run) -> Step | None:
    """The run's one top-level step, when it has one and other steps (an agent function around the rest)."""
    roots = [s for s in run.steps if s.parent_id is None]
    return roots[0] if len(roots) == 1 and len(run.steps) > 1 else None


def _last_leaf(run: Run) -> Step | None:
    """The step with no step inside it that ended last: what the run ended with."""
    parents = {s.parent_id for s in run.steps}
    leaves = [s for s in run.steps if s.step_id not in parents]
    return max(leaves, key=lambda s: (s.end_ns or s.start_ns, s.start_ns), default=None)


def _short(sid: str, limit: int = 40) -> str:
    return sid if len(sid) <= limit else sid[: limit - 1] + "…"


def turns(catalog: Catalog, session_id: str) -> list[Turn]:
    """The original runs of a session, oldest first, as turns (empty when no run names the session)."""
    entries = catalog.query(Query(session=session_id, sort="started", descending=False, derived=False))
    out = []
    for i, e in enumerate(entries, 1):
        try:
            run = catalog.run(e.run_id)
        except KeyError:  # deleted since the query
            continue
        out.append(Turn(i, e, user_text(run), answer_text(run)))
    return out


def session_nav(catalog: Catalog, run: Run) -> list[tuple[str, str]]:
    """A run page's links to its session and the turns before and after it: ``(label, href)`` pairs (none
    for a run of no session, or a replay)."""
    sid = session_of(run)
    if sid is None:
        return []
    entries: Sequence[RunEntry] = catalog.query(Query(session=sid, sort="started", descending=False))
    ids = [e.run_id for e in entries]
    href = "/sessions/" + quote(sid, safe="")
    if run.run_id not in ids:
        return [(f"session {_short(sid)}", href)]
    i = ids.index(run.run_id)
    nav = [(f"session {_short(sid)} (turn {i + 1} of {len(ids)})", href + "#turn-" + str(i + 1))]
    if i > 0:
        nav.append((f"← turn {i}", "/runs/" + quote(ids[i - 1], safe="")))
    if i + 1 < len(ids):
        nav.append((f"turn {i + 2} →", "/runs/" + quote(ids[i + 1], safe="")))
    return nav


__all__ = ["TEXT_KEYS", "TEXT_LIMIT", "Turn", "answer_text", "session_nav", "text_of", "turns", "user_text"]
