"""Shared pieces of suite D: the case description, the fault switch, chat helpers for the fake models.

Nothing here knows how trajdebug analyses a run: a case says which step is faulty and which step
raises, by the names the recording gives them, and the generator checks both against the recording.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any


FAULT_KINDS = (
    "wrong_tool_args",  # the LLM produced wrong tool arguments (misread number, wrong id, wrong date)
    "tool_ignores_argument",  # a tool ignores or mis-applies an argument (filter, scope)
    "stale_data",  # stale or cached data returned by a tool or memory
    "unit_error",  # a unit, scale or rate error
    "lossy_parsing",  # a parser drops a sign, a field, stops at a separator, repairs JSON lossily
    "wrong_routing",  # the LLM chose the wrong route, handoff, plan or sub-task
    "bad_memory_write",  # a bad write to memory or state, read later
    "subagent_wrong_entity",  # a sub-agent returned a result about the wrong entity
    "context_pollution",  # an irrelevant or wrong earlier item carried into a later prompt
)

ROUTES = ("langgraph", "openai_agents", "otlp", "sdk")
EXT = {"langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json", "sdk": "jsonl"}


class FaultSwitch:
    """Which fault is on for the run being recorded (None: every fault off)."""

    def __init__(self) -> None:
        self.active: str | None = None

    def on(self, name: str) -> bool:
        return self.active == name


FAULT = FaultSwitch()


@dataclass(frozen=True)
class Loc:
    """A step as the recording names it: its name and its 1-based occurrence among steps of that name
    in start order.  ``expect`` is a text the step's input, output or error must hold (a check that the
    locator points at the step meant)."""

    name: str
    occurrence: int = 1
    expect: str | None = None


@dataclass
class Case:
    case_id: str
    input: Any
    fault: str
    fault_kind: str
    description: str
    flow: list[Loc]
    """The value's path: the faulty step first, the step that raises last."""

    def __post_init__(self) -> None:
        assert self.fault_kind in FAULT_KINDS, self.fault_kind
        assert len(self.flow) >= 3, f"{self.case_id}: the failure must come 2 or more steps after the root"


Recorder = Callable[[Any, str], "BaseException | None"]
"""Record one run of the agent on an input into a file; return the exception that escaped, if any."""


@dataclass
class Agent:
    name: str
    route: str
    domain: str
    summary: str
    passing: list[Any]
    cases: list[Case]
    session: Callable[[], AbstractContextManager[Recorder]]
    features: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        assert self.route in ROUTES
        assert len(self.passing) >= 5 and len(self.cases) >= 3


# -- chat helpers for the fake model servers ----------------------------------------------


def messages_of(request: Any) -> list[dict[str, Any]]:
    """The request's conversation as Chat Completions messages (Responses API items converted)."""
    body = request.body
    if "messages" in body:
        return list(body["messages"])
    out: list[dict[str, Any]] = []
    if body.get("instructions"):
        out.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        return [*out, {"role": "user", "content": items}]
    for it in items or []:
        typ = it.get("type")
        if typ == "function_call":
            out.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": it["call_id"], "function": {"name": it["name"], "arguments": it["arguments"]}}
                    ],
                }
            )
        elif typ == "function_call_output":
            out.append({"role": "tool", "tool_call_id": it["call_id"], "content": it["output"]})
        else:
            content = it.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            out.append({"role": it.get("role", "user"), "content": content})
    return out


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def system_text(msgs: list[dict[str, Any]]) -> str:
    return "\n".join(text_of(m) for m in msgs if m.get("role") in ("system", "developer"))


def user_texts(msgs: list[dict[str, Any]]) -> list[str]:
    return [text_of(m) for m in msgs if m.get("role") == "user"]


def called_tools(msgs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str | None]]:
    """Every tool call the assistant made so far, with its result text: (name, arguments, result)."""
    results = {m.get("tool_call_id"): text_of(m) for m in msgs if m.get("role") == "tool"}
    out = []
    for m in msgs:
        for c in m.get("tool_calls") or []:
            fn = c.get("function") or c
            args = fn.get("arguments")
            if isinstance(args, str):
                try:
                    args = json.loads(args) if args else {}
                except ValueError:
                    args = {"_raw": args}
            out.append((fn.get("name"), args or {}, results.get(c.get("id"))))
    return out


def last_result(msgs: list[dict[str, Any]], tool: str) -> Any:
    """The parsed result of the latest call of ``tool`` (JSON when it is JSON), or None."""
    found = None
    for name, _args, result in called_tools(msgs):
        if name == tool and result is not None:
            found = result
    if found is None:
        return None
    try:
        return json.loads(found)
    except ValueError:
        return found


def results_of(msgs: list[dict[str, Any]], tool: str) -> list[Any]:
    out = []
    for name, _args, result in called_tools(msgs):
        if name == tool and result is not None:
            try:
                out.append(json.loads(result))
            except ValueError:
                out.append(result)
    return out


def iter_cases(agents: list[Agent]) -> Iterator[tuple[Agent, Case]]:
    for a in agents:
        for c in a.cases:
            yield a, c
