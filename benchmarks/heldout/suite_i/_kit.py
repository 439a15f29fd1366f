"""What every agent of suite I shares: the switch of a planted fault, the case table, the model brain's
helpers and the ground truth read back from a recorded run."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


# A plain set, not a context variable: the fake model server answers on its own threads and the
# scripted model must see the same switch as the agent.
_ON: set[str] = set()


@contextlib.contextmanager
def planted(fault_id: str) -> Iterator[None]:
    """Turn one fault on for the duration of the block."""
    _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id)


def active(fault_id: str) -> bool:
    """Whether a fault is on (read at exactly one place of an agent)."""
    return fault_id in _ON


@dataclass(frozen=True, slots=True)
class Case:
    """One planted fault of one agent, on one input."""

    case: str
    fault_id: str
    fault_kind: str
    input_id: str
    root: str
    """The name of the step that produces the first value gone astray."""
    marker: str
    """Text the root's recorded output holds when the fault is on (and never when it is off)."""
    fault: str


# -- the scripted model ----------------------------------------------------------------------------


def last_user(request: Any) -> str:
    """The text of the last user message of a Chat Completions request."""
    for message in reversed(request.body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def system_of(request: Any) -> str:
    messages = request.body.get("messages") or []
    if messages and messages[0].get("role") in ("system", "developer"):
        return str(messages[0].get("content") or "")
    return str(request.body.get("instructions") or "")


def tool_results(request: Any) -> list[str]:
    """The tool results the request carries, in order (Chat Completions or the Responses API)."""
    out = []
    for message in request.body.get("messages") or []:
        if message.get("role") == "tool":
            out.append(str(message.get("content") or ""))
    for item in request.body.get("input") or [] if isinstance(request.body.get("input"), list) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            out.append(str(item.get("output") or ""))
    return out


def json_in(text: str) -> Any:
    """The first JSON object in a text (a prompt that embeds its data)."""
    start = text.find("{")
    return json.loads(text[start:]) if start >= 0 else {}


# -- ground truth ----------------------------------------------------------------------------------

_UNSAID = re.compile(r"fault|\bbug|wrong|stale|planted|inject|corrupt", re.IGNORECASE)


def _text(value: Any) -> str:
    """A recorded value as searchable text: its JSON with sorted keys, and a string as it is."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True) + ("\n" + value if isinstance(value, str) else "")


def _failure_step(run: Any) -> Any:
    by_id = {s.step_id: s for s in run.steps}
    failed = [e for e in run.errors if any(st.stage == "failed" for st in e.stages)]
    event = (failed or list(run.errors))[-1]
    while event.parent_error_id is not None:  # the innermost occurrence of the failing error
        parents = [e for e in run.errors if e.error_id == event.parent_error_id]
        if not parents:
            break
        event = parents[0]
    return by_id[event.step_id]


def truth(case: Case, agent: Any, failed: Any, control: Any) -> dict[str, Any]:
    """The ground truth of a case, from its recorded failed and control runs."""
    steps = list(failed.steps)
    containers = {s.parent_id for s in steps if s.parent_id} | {s.step_id for s in steps if s.kind == "agent"}
    named = [s for s in steps if s.name == case.root]
    hits = [s for s in named if case.marker in _text(s.output)]
    assert hits, f"{case.case}: no step {case.root!r} holds {case.marker!r}"
    root = hits[0]
    clean = [s for s in control.steps if s.name == case.root and case.marker in _text(s.output)]
    assert not clean, f"{case.case}: the control run's {case.root!r} holds {case.marker!r} too"
    fail = _failure_step(failed)
    assert fail.step_id not in containers, f"{case.case}: the failure step {fail.name} encloses others"
    i, j = steps.index(root), steps.index(fail)
    hops = sum(1 for s in steps[i + 1 : j + 1] if s.step_id not in containers)
    assert 1 <= hops <= 12, f"{case.case}: {hops} hops from {root.name} to {fail.name}"
    llm = [s for s in steps if s.kind == "llm"]

    def occurrence(step: Any) -> int:
        return [s.step_id for s in steps if s.name == step.name].index(step.step_id) + 1

    return {
        "case": case.case,
        "agent": agent.NAME,
        "route": agent.ROUTE,
        "fault_kind": case.fault_kind,
        "root": {"name": root.name, "occurrence": occurrence(root), "kind": root.kind},
        "llm_index": llm.index(root) + 1 if root.kind == "llm" else None,
        "failure_step": {"name": fail.name, "occurrence": occurrence(fail), "kind": fail.kind},
        "hops": hops,
        "failure_reason": failed.failure_reason,
        "fault": case.fault,
    }


def assert_unsaid(path: Path) -> None:
    """Nothing recorded names the fault or judges a value."""
    found = _UNSAID.search(path.read_text())
    assert found is None, f"{path}: says {found.group(0)!r} near {path.read_text()[max(0, found.start() - 80):found.end() + 40]!r}"


def calls_so_far(request: Any) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls the conversation already holds, in order: (name, arguments)."""
    out = []
    for message in request.body.get("messages") or []:
        for call in message.get("tool_calls") or ():
            args = call["function"]["arguments"]
            out.append((call["function"]["name"], json.loads(args) if args else {}))
    return out


def outputs_so_far(request: Any) -> dict[str, list[Any]]:
    """Each tool's results in the conversation, by tool name (JSON decoded when it is JSON)."""
    names = {}
    for message in request.body.get("messages") or []:
        for call in message.get("tool_calls") or ():
            names[call["id"]] = call["function"]["name"]
    out: dict[str, list[Any]] = {}
    for message in request.body.get("messages") or []:
        if message.get("role") == "tool":
            text = str(message.get("content") or "")
            try:
                value = json.loads(text)
            except ValueError:
                value = text
            out.setdefault(names.get(message.get("tool_call_id"), "?"), []).append(value)
    return out
