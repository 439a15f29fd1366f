"""What the agents share: a chat call to the (fake) model server, a case record, the word screen."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# Words that must not appear in anything a run records (names, inputs, outputs, errors) nor in a
# case's description: the runs read as an ordinary agent's runs.
SCREENED = re.compile(r"\b(fault\w*|bugs?|buggy|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.IGNORECASE)


def screened_words(text: str) -> list[str]:
    return sorted({m.group(0) for m in SCREENED.finditer(text)})


@dataclass(frozen=True)
class Case:
    """One failing case of an agent: which input, which switch tag, and what the truth is."""

    case: str
    input: int  # index into the agent's INPUTS
    switch: str  # the value the module's SWITCH takes for this case
    fault_kind: str
    root: tuple[str, int]  # step name, occurrence (1-based, start order)
    failure: tuple[str, int]
    description: str


def last_user(messages: list[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def system_of(messages: list[dict[str, Any]]) -> str:
    for m in messages:
        if m.get("role") == "system":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def first_json(text: str) -> Any:
    """The first JSON object or array in a text (prompts carry their data as JSON blocks)."""
    dec = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                value, _ = dec.raw_decode(text[i:])
                return value
            except ValueError:
                continue
    raise ValueError("no JSON in text")


def tool_results(messages: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Chat-completions tool results as (tool name, decoded content), in order."""
    names: dict[str, str] = {}
    out: list[tuple[str, Any]] = []
    for m in messages:
        for tc in m.get("tool_calls") or []:
            names[tc.get("id")] = tc.get("function", {}).get("name")
        if m.get("role") == "tool":
            content = m.get("content")
            try:
                value = json.loads(content)
            except (TypeError, ValueError):
                value = content
            out.append((names.get(m.get("tool_call_id"), "?"), value))
    return out
