"""What every agent of suite L shares: the fault switch, the case table, the truth read from a recorded run."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


_ON: set[str] = set()


@contextmanager
def planted(fault_id: str) -> Iterator[None]:
    """Switch one fault on for the block (the run recorded inside it)."""
    _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id)


def active(fault_id: str) -> bool:
    """Whether the fault is switched on: each fault reads this at exactly one place."""
    return fault_id in _ON


_CLIENTS: dict[tuple[str, str], Any] = {}


def openai_client(server: Any, kind: str = "sync") -> Any:
    """One `openai` client per fake server and kind, reused by every run (building one loads the CA store)."""
    key = (server.base_url, kind)
    if key not in _CLIENTS:
        from openai import AsyncOpenAI, OpenAI

        cls = AsyncOpenAI if kind == "async" else OpenAI
        _CLIENTS[key] = cls(base_url=server.base_url, api_key="sk-not-needed", max_retries=0)
    return _CLIENTS[key]


@dataclass(frozen=True, slots=True)
class Case:
    """One planted fault: its switch, its kind, the step it makes wrong and a marker of the wrong value."""

    case: str
    fault: str
    kind: str
    root: str
    marker: str
    inp: dict[str, Any] = field(default_factory=dict)


# Words that would give the answer away; \b-like on the left only, so "default" and "trajdebug" pass.
_GIVEAWAY = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)
_ID_KEYS = re.compile(r'"(traceId|spanId|parentSpanId)"\s*:\s*"[^"]*"')


def check_words(path: Path) -> None:
    """Fail when a recorded file says what was planted (OTLP ids are random base64: left out)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        text = _ID_KEYS.sub("", text)
    hit = _GIVEAWAY.search(text)
    if hit:
        start = max(0, hit.start() - 80)
        raise AssertionError(
            f"{path}: give-away word {hit.group(0)!r} in ...{text[start : hit.end() + 80]}..."
        )


def _ordered(run: Any) -> list[Any]:
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns or 0, p[0]))]


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _failure_step(run: Any) -> Any:
    by_id = {s.step_id: s for s in run.steps}
    failed = [e for e in run.errors if any(c.stage == "failed" for c in e.stages)]
    event = failed[-1] if failed else run.errors[-1]
    return by_id[event.step_id]


def truth(case: Case, agent: str, route: str, failed_run: Any, control_run: Any) -> dict[str, Any]:
    """The answer key, read from the recorded failed run (and checked against the control run)."""
    assert failed_run.outcome == "failure", (case.case, failed_run.outcome)
    assert control_run.outcome == "success", (case.case, control_run.outcome, control_run.failure_reason)
    steps = _ordered(failed_run)
    holders = [s for s in steps if s.name == case.root and case.marker in _text(s.output)]
    assert holders, f"{case.case}: no step {case.root!r} holds {case.marker!r}"
    root = holders[0]
    same = [s for s in control_run.steps if s.name == case.root]
    assert same, f"{case.case}: the control run has no step {case.root!r}"
    assert not any(case.marker in _text(s.output) for s in same), (
        f"{case.case}: control holds {case.marker!r}"
    )
    fail = _failure_step(failed_run)
    pos = {s.step_id: i for i, s in enumerate(steps)}
    parents = {s.parent_id for s in steps if s.parent_id}
    containers = {s.step_id for s in steps if s.step_id in parents or s.kind == "agent"}
    assert fail.step_id not in containers or not any(
        s.parent_id == fail.step_id and s.status == "error" for s in steps
    ), f"{case.case}: failure step is not innermost"
    r, f = pos[root.step_id], pos[fail.step_id]
    assert f > r, f"{case.case}: failure step {fail.name} starts before the root {root.name}"
    # the failure step counts itself even when it encloses others (a graph node that raised)
    hops = 1 + sum(1 for s in steps[r + 1 : f] if s.step_id not in containers)
    llm_before = sum(1 for s in steps[:r] if s.kind == "llm")
    return {
        "case": case.case,
        "agent": agent,
        "route": route,
        "fault_kind": case.kind,
        "root": {
            "name": root.name,
            "occurrence": sum(1 for s in steps[: r + 1] if s.name == root.name),
            "kind": root.kind,
            "llm_index": llm_before + 1 if root.kind == "llm" else None,
        },
        "failure_step": {
            "name": fail.name,
            "occurrence": sum(1 for s in steps[: f + 1] if s.name == fail.name),
        },
        "hops": hops,
    }
