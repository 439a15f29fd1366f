"""Shared machinery of suite F: the fault switch, case specs, run files and ground truth.

A fault is switched on for one run at a time (`faults.on`); the agents' code and the fake
model's scripted brains ask `active(fault_id)` at the one place where the fault is planted.
Nothing in a recorded run names the fault.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


_ACTIVE: set[str] = set()


def active(fault_id: str) -> bool:
    """Whether the fault `fault_id` is planted in the run being recorded now."""
    return fault_id in _ACTIVE


@contextlib.contextmanager
def planted(fault_id: str | None) -> Iterator[None]:
    _ACTIVE.clear()
    if fault_id:
        _ACTIVE.add(fault_id)
    try:
        yield
    finally:
        _ACTIVE.clear()


@dataclass(frozen=True)
class Case:
    """One faulty input of an agent, with what the ground truth is made of."""

    case: str
    agent: str
    input: dict[str, Any]
    fault_kind: str
    fault_id: str
    root_name: str  # the step's name as recorded
    root_kind: str
    marker: str  # text of the wrong value, found in the root step's output (absent from control)
    fault: str  # one sentence: what goes wrong and where
    failure_name: str | None = None  # the check step, when the run is failed without raising


@dataclass
class Agent:
    """One agent: its name, route, inputs that pass, and how to record one run of it."""

    name: str
    route: str  # langgraph | openai_agents | otlp | sdk
    domain: str
    ext: str  # jsonl | json
    ref_inputs: list[dict[str, Any]]
    cases: list[Case]
    record: Callable[[dict[str, Any], Path], None]  # record one run of this agent on an input into a file
    setup: Callable[[], Any] | None = None
    teardown: Callable[[], Any] | None = None
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


# -- files -----------------------------------------------------------------------------


def merge_files(sources: list[Path], dest: Path, ext: str) -> None:
    """One file holding every run of `sources` (JSONL concatenated; OTLP envelopes merged)."""
    if ext == "jsonl":
        with dest.open("w") as out:
            for src in sources:
                text = src.read_text()
                out.write(text if text.endswith("\n") or not text else text + "\n")
    else:
        spans: list[Any] = []
        for src in sources:
            spans.extend(json.loads(src.read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}))


def load_single(path: Path) -> Any:
    """The one run a file holds, through trajdebug's own importer."""
    import trajdebug
    from trajdebug.sources.formats import import_path

    result = trajdebug.read_jsonl(path) if path.suffix == ".jsonl" else import_path(path, "otlp")
    runs = list(result.runs)
    assert len(runs) == 1, f"{path}: expected one run, found {len(runs)} ({result.problems})"
    return runs[0]


def ordered(run: Any) -> list[Any]:
    """Steps in start order (ties keep the file's order), as `trajdebug show --json` lists them."""
    steps = list(run.steps)
    return sorted(steps, key=lambda s: (s.start_ns if s.start_ns is not None else 0))


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    elif value is not None:
        yield str(value)


def _text(value: Any) -> str:
    """A step's output as searchable text: its JSON and its leaf values (strings unescaped)."""
    return json.dumps(value, default=str) + "\n" + "".join(leaf + "\n" for leaf in _leaves(value))


def locate_truth(case: Case, agent: Agent, failed_path: Path, control_path: Path) -> dict[str, Any]:
    """Ground truth from the recorded runs: the root step found by its marker, checked against control."""
    failed, control = load_single(failed_path), load_single(control_path)
    assert failed.outcome == "failure", f"{case.case}: the faulty run did not fail ({failed.outcome})"
    assert control.outcome == "success", (
        f"{case.case}: the control run did not pass ({control.outcome}: {control.failure_reason})"
    )
    steps = ordered(failed)
    named = [s for s in steps if s.name == case.root_name]
    hits = [s for s in named if case.marker in _text(s.output)]
    assert hits, f"{case.case}: no step {case.root_name!r} holds the marker {case.marker!r}"
    root = hits[0]
    assert root.status == "ok" and root.error is None, f"{case.case}: the root step raised itself"
    assert root.kind == case.root_kind, f"{case.case}: root kind {root.kind} != {case.root_kind}"
    for s in ordered(control):  # the same step of the control run never held the wrong value
        assert s.name != case.root_name or case.marker not in _text(s.output), (
            f"{case.case}: the marker {case.marker!r} is also in control step {s.name!r}"
        )
    occurrence = named.index(root) + 1
    llm_steps = [s for s in steps if s.kind == "llm"]
    llm_index = llm_steps.index(root) + 1 if root.kind == "llm" else None
    # the failure: the innermost (last started) step that raised, else the check step that failed the run
    raised = [s for s in steps if s.status == "error" or s.error is not None]
    if raised:
        fail = raised[-1]
    else:
        assert case.failure_name, f"{case.case}: nothing raised and no check step is named"
        fail = [s for s in steps if s.name == case.failure_name][-1]
    fail_occ = [s for s in steps if s.name == fail.name].index(fail) + 1
    i, j = steps.index(root), steps.index(fail)
    assert j > i, f"{case.case}: the failure step comes before the root"
    hops = sum(1 for s in steps[i + 1 : j + 1] if s.kind != "agent")
    return {
        "case": case.case,
        "agent": agent.name,
        "route": agent.route,
        "fault_kind": case.fault_kind,
        "root": {"name": root.name, "occurrence": occurrence, "kind": root.kind},
        "llm_index": llm_index,
        "failure_step": {"name": fail.name, "occurrence": fail_occ, "kind": fail.kind},
        "hops": hops,
        "failure_reason": failed.failure_reason,
        "fault": case.fault,
    }


def fresh(path: Path) -> Path:
    if path.exists():
        os.remove(path)
    return path


# -- one fake model for every agent ------------------------------------------------------

BRAINS: dict[str, Callable[[Any, list[dict[str, Any]]], Any]] = {}
"""Scripted model answers by role tag: the system prompt (or instructions) starts with ``[tag]``."""


def _messages(request: Any) -> list[dict[str, Any]]:
    body = request.body or {}
    if "messages" in body:
        return list(body["messages"])
    msgs: list[dict[str, Any]] = []
    if body.get("instructions"):
        msgs.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        msgs.append({"role": "user", "content": items})
    else:
        for it in items or []:
            if it.get("type") == "function_call_output":
                msgs.append({"role": "tool", "content": it.get("output"), "call_id": it.get("call_id")})
            elif it.get("type") == "function_call":
                msgs.append({"role": "assistant", "tool_call": it.get("name"), "content": it.get("arguments")})
            else:
                content = it.get("content")
                if isinstance(content, list):
                    content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
                msgs.append({"role": it.get("role", "user"), "content": content})
    return msgs


def text_of(msg: dict[str, Any]) -> str:
    content = msg.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


def brain(request: Any) -> Any:
    msgs = _messages(request)
    system = next((text_of(m) for m in msgs if m.get("role") in ("system", "developer")), "")
    if not system.startswith("["):
        raise RuntimeError(f"untagged prompt: {system[:60]!r}")
    tag = system[1 : system.index("]")]
    return BRAINS[tag](request, msgs)


class Model:
    """The one fake model server of a generation (started by generate.py)."""

    base_url: str = ""
    name: str = "fake-model"
    _client: Any = None

    @classmethod
    def client(cls) -> Any:
        if cls._client is None:
            from openai import OpenAI

            cls._client = OpenAI(base_url=cls.base_url, api_key="not-needed", max_retries=0)
        return cls._client


def complete(tag: str, user: str, system: str = "") -> dict[str, Any]:
    """One chat completion through the official client; the assistant's message as a dict."""
    messages = [{"role": "system", "content": f"[{tag}] {system}".strip()}, {"role": "user", "content": user}]
    reply = Model.client().chat.completions.create(model=Model.name, messages=messages, temperature=0)
    return {"role": "assistant", "content": reply.choices[0].message.content}
