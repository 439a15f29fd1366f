"""Shared plumbing of suite C: fault switches, case declarations, agent registry.

An agent module declares an `AgentSpec`: its name, route, domain, at least five passing
inputs, at least three `Case`s (an input plus one fault switched on), and an ``execute``
function that runs the agent once on an input and records the run to a file.

Faults are switched on through `FAULT`, a process-wide plan that the agents' tools and
scripted models consult (``if FAULT.on("stale_rate_card"): ...``).  When a fault actually
changes a value it calls `FAULT.fire_tool` or `FAULT.fire_llm`, so that the generator
knows which recorded step produced the wrong value (the step's name and its occurrence,
or the index of the model call) and can check it against what ``trajdebug show`` lists.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class FaultPlan:
    """Which fault is switched on for the current run, and where it fired."""

    def __init__(self) -> None:
        self.active: str | None = None
        self.fired: list[dict[str, Any]] = []
        self.calls: Counter[str] = Counter()
        self.llm_calls = 0

    def arm(self, name: str | None) -> None:
        self.active = name
        self.fired = []
        self.calls = Counter()
        self.llm_calls = 0

    def on(self, name: str) -> bool:
        return self.active == name

    def tick(self, step_name: str) -> int:
        """Count one call of a recorded tool/parser step; returns its 1-based occurrence."""
        self.calls[step_name] += 1
        return self.calls[step_name]

    def llm_tick(self) -> int:
        """Count one model call; returns its 1-based index among the run's model calls."""
        self.llm_calls += 1
        return self.llm_calls

    def fire_tool(self, step_name: str, marker: Any = None, kind: str = "tool") -> None:
        """The fault just changed the output of the current call of ``step_name``."""
        self.fired.append(
            {"kind": kind, "name": step_name, "occurrence": self.calls[step_name], "marker": marker}
        )

    def fire_llm(self, marker: Any = None) -> None:
        """The fault just changed the answer of the current model call."""
        self.fired.append({"kind": "llm", "llm_index": self.llm_calls, "marker": marker})


FAULT = FaultPlan()


@dataclass
class Case:
    """One failing case: an input, the fault switched on, and what the generator must find."""

    slug: str
    input: dict[str, Any]
    fault: str
    fault_kind: str
    description: str
    failure: str
    """The name of the step that raises (as recorded)."""
    path: list[str]
    """The steps the wrong value passes through after the root, the raising step last (len = hops)."""
    failure_occurrence: int | None = None
    """Which occurrence of ``failure`` raises (default: the only one with an error of its own)."""


@dataclass
class AgentSpec:
    name: str
    route: str
    domain: str
    summary: str
    execute: Callable[[dict[str, Any], Path, str], str]
    """Run once on an input, record to the given file, return the run id; raises when the run fails."""
    passing: list[dict[str, Any]] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    ext: str = "jsonl"


ROUTES = ("langgraph", "openai_agents", "otlp", "sdk")

FAULT_KINDS = {
    "wrong_tool_args": "wrong tool arguments produced by the LLM",
    "tool_ignores_argument": "a tool that ignores or mis-applies an argument",
    "stale_data": "stale or cached data returned by a tool or memory",
    "unit_error": "a unit, scale or rate error",
    "lossy_parsing": "lossy parsing",
    "wrong_routing": "wrong routing / handoff / plan chosen by the LLM",
    "bad_memory_write": "a bad write to memory or state read later",
    "subagent_wrong_entity": "a sub-agent returning a result about the wrong entity",
    "context_pollution": "context pollution (an earlier, irrelevant item carried into a later prompt)",
}


def stable_hex(text: str, n: int = 32) -> str:
    """A deterministic hex id derived from a string."""
    return hashlib.sha256(text.encode()).hexdigest()[:n]
