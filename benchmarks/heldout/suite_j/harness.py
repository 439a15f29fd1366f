"""What every agent of suite J shares: the fault switch, the fake model's request helpers, case specs."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


_ACTIVE: set[str] = set()


@contextmanager
def planted(fault_id: str | None) -> Iterator[None]:
    """Turn one fault on for the block (None: a clean run)."""
    if fault_id is None:
        yield
        return
    _ACTIVE.add(fault_id)
    try:
        yield
    finally:
        _ACTIVE.discard(fault_id)


def active(fault_id: str) -> bool:
    """Whether this fault is on; read at exactly one place per fault."""
    return fault_id in _ACTIVE


@dataclass(frozen=True, slots=True)
class Fault:
    """One planted fault: the switch, its kind, the input it runs on, and where its wrong value shows."""

    fault_id: str
    kind: str
    input_index: int
    root: str
    marker: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One agent: its run name, route, domain, inputs, faults and the function that runs it once."""

    name: str
    route: str
    domain: str
    inputs: list[dict[str, Any]]
    ref_inputs: list[dict[str, Any]]
    faults: list[Fault]
    run: Callable[..., None] = field(repr=False)
    """run(server, item, out_path): record one run of the agent on ``item`` into ``out_path``."""


# -- reading the fake model's requests ---------------------------------------------------------


def messages(request: Any) -> list[dict[str, Any]]:
    """The chat messages of a Chat Completions request (empty for anything else)."""
    body = request.body or {}
    return list(body.get("messages") or [])


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def system_text(request: Any) -> str:
    msgs = messages(request)
    return text_of(msgs[0]) if msgs and msgs[0].get("role") in ("system", "developer") else ""


def last_user(request: Any) -> str:
    for m in reversed(messages(request)):
        if m.get("role") == "user":
            return text_of(m)
    return ""


def tool_results(request: Any) -> list[tuple[str, str]]:
    """(tool name, content) of every tool result in the request, in order (names via call ids)."""
    names: dict[str, str] = {}
    out: list[tuple[str, str]] = []
    for m in messages(request):
        for call in m.get("tool_calls") or ():
            names[call.get("id", "")] = call.get("function", {}).get("name", "")
        if m.get("role") == "tool":
            out.append((names.get(m.get("tool_call_id", ""), ""), text_of(m)))
    return out


def tools_called(request: Any) -> list[str]:
    return [name for name, _ in tool_results(request)]


def last_tool_json(request: Any, name: str) -> Any:
    for tool, content in reversed(tool_results(request)):
        if tool == name:
            try:
                return json.loads(content)
            except ValueError:
                return content
    return None


def extract_json(text: str) -> Any:
    """The first JSON object in a prompt (the agents put their data as JSON after a colon)."""
    start = text.find("{")
    end = text.rfind("}")
    return json.loads(text[start : end + 1])
