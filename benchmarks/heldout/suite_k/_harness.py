"""Shared pieces of suite K: the fault switch, the case table, truth read back from recorded runs."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trajdebug.sources.load import load_runs


_ON: set[str] = set()
# Words a recorded run must never hold (the package name "trajdebug" aside): they would give the cause away.
GIVEAWAY = re.compile(r"fault|(?<!de)bug|wrong|stale|planted|inject|corrupt", re.IGNORECASE)
# OTLP ids are random base64 and may spell anything by chance.
_ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


@contextmanager
def planted(fault_id: str) -> Iterator[None]:
    """Switch one fault on for the block."""
    _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id)


def active(fault_id: str) -> bool:
    """Whether a fault is switched on (read at exactly one place per fault)."""
    return fault_id in _ON


@dataclass(frozen=True, slots=True)
class Case:
    """One planted fault: which agent, which input, where its wrong value first shows."""

    case: str
    agent: str
    route: str
    fault_kind: str
    fault_id: str
    root_name: str
    marker: str
    given: Any
    refs: tuple[Any, ...] = field(default=())


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)


def _ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: s.start_ns or 0)


def _failure_step(run: Any, steps: list[Any]) -> Any:
    """The innermost step where the error that failed the run occurred.

    That error is the one recorded as failing the run, else as propagating; a sibling error raised
    in parallel that went nowhere is not it.  Without lifecycle stages, the error whose message is
    in the run's failure reason, else the innermost errored step that started last.
    """
    by_id = {s.step_id: s for s in steps}
    moving = [e for e in run.errors if any(st.stage == "failed" for st in e.stages)]
    if not moving:
        moving = [e for e in run.errors if any(st.stage == "propagated" for st in e.stages)]
    if not moving and run.failure_reason:
        moving = [e for e in run.errors if e.message and e.message in run.failure_reason]
    located = [by_id[e.step_id] for e in moving if e.step_id in by_id]
    if located:
        return max(located, key=lambda s: s.start_ns or 0)
    errored = [s for s in steps if s.status == "error" or s.error]
    parents = {s.parent_id for s in errored}
    inner = [s for s in errored if s.step_id not in parents]
    if not inner:
        raise AssertionError("failed run has no errored step")
    return max(inner, key=lambda s: s.start_ns or 0)


def truth(case: Case, failed: Path, control: Path) -> dict[str, Any]:
    """Read the root and failure step of a case from its recorded runs (asserting outcomes)."""
    [run] = load_runs(failed)
    [ctl] = load_runs(control)
    assert run.outcome == "failure", (case.case, run.outcome)
    assert ctl.outcome == "success", (case.case, ctl.outcome, ctl.failure_reason)
    steps = _ordered(run)
    holds = [s for s in steps if s.name == case.root_name and case.marker in _text(s.output)]
    assert holds, (case.case, "no step holds the marker", case.root_name, case.marker)
    root = holds[0]
    assert not any(s.name == case.root_name and case.marker in _text(s.output) for s in ctl.steps), (
        case.case,
        "control holds the marker",
    )
    same = [s for s in steps if s.name == root.name]
    # 1-based, as the scorer counts (benchmarks.blind.truth_step: the n-th step of that name as loaded).
    occurrence = same.index(root) + 1
    loaded = [s for s in run.steps if s.name == root.name]
    assert loaded[occurrence - 1].step_id == root.step_id, (case.case, "start order differs from the loaded order")
    pos = steps.index(root)
    llm_index = sum(1 for s in steps[:pos] if s.kind == "llm") + 1 if root.kind == "llm" else None
    fail = _failure_step(run, steps)
    fpos = steps.index(fail)
    assert fpos > pos, (case.case, "failure before root")
    fsame = [s for s in steps if s.name == fail.name]
    parents = {s.parent_id for s in steps}
    hops = sum(1 for s in steps[pos + 1 : fpos + 1] if s is fail or (s.kind != "agent" and s.step_id not in parents))
    return {
        "case": case.case,
        "agent": run.name,
        "route": case.route,
        "fault_kind": case.fault_kind,
        "root": {"name": root.name, "occurrence": occurrence, "kind": root.kind, "llm_index": llm_index},
        "failure_step": {"name": fail.name, "occurrence": fsame.index(fail) + 1},
        "hops": hops,
    }


def check_words(path: Path) -> None:
    """Assert no give-away word is recorded anywhere in a file (OTLP ids left out)."""
    text = path.read_text()
    if path.suffix == ".json":
        data = json.loads(text)

        def strip(v: Any) -> Any:
            if isinstance(v, dict):
                return {k: strip(x) for k, x in v.items() if k not in _ID_KEYS}
            if isinstance(v, list):
                return [strip(x) for x in v]
            return v

        text = json.dumps(strip(data))
    hit = GIVEAWAY.search(text)
    assert hit is None, (str(path), text[max(0, hit.start() - 80) : hit.end() + 80] if hit else "")


def combine(parts: list[Path], out: Path) -> None:
    """One file holding several runs: JSON Lines concatenated, OTLP envelopes merged."""
    if out.suffix == ".json":
        spans: list[Any] = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(p.read_text() for p in parts))
