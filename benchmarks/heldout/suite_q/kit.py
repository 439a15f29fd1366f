"""Shared plumbing of suite Q: the fault switches, truth extraction and the file checks."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any


_ACTIVE: set[str] = set()


@contextmanager
def planted(fault_id: str):
    """Turn one switch on for the block (one run)."""
    _ACTIVE.add(fault_id)
    try:
        yield
    finally:
        _ACTIVE.discard(fault_id)


def active(fault_id: str) -> bool:
    return fault_id in _ACTIVE


@dataclass(frozen=True)
class Case:
    case: str
    agent: str
    route: str
    fault_kind: str
    fault_id: str
    inp: Any  # the input of the failed run and its control
    root_name: str | None  # None: the first llm step holding the marker
    marker: str


@dataclass
class Agent:
    name: str
    route: str
    ext: str
    record: Callable[[Any, Path], None]  # record one run of the input into the file (appended)
    cases: list[Case]
    refs: list[Any]  # four passing inputs


BANNED = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)
_IDS = re.compile(r'"(traceId|spanId|parentSpanId)"\s*:\s*"[^"]*"')


def check_words(path: Path) -> None:
    text = path.read_text()
    if path.suffix == ".json":
        text = _IDS.sub("", text)
    m = BANNED.search(text)
    if m:
        raise AssertionError(f"{path}: banned word {text[max(0, m.start() - 60): m.end() + 60]!r}")


def _jtext(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def ordered_steps(run) -> list:
    idx = {s.step_id: i for i, s in enumerate(run.steps)}
    return sorted(run.steps, key=lambda s: (s.start_ns, idx[s.step_id]))


def holds(step, marker: str) -> bool:
    out = step.output
    texts = [_jtext(out)]
    if isinstance(out, str):
        texts.append(out)
    return any(marker in t for t in texts)


def truth_for(case: Case, failed, control) -> dict:
    steps = ordered_steps(failed)
    root_i = None
    for i, s in enumerate(steps):
        if (s.name == case.root_name if case.root_name else s.kind == "llm") and holds(s, case.marker):
            root_i = i
            break
    assert root_i is not None, f"{case.case}: no root step holding {case.marker!r}"
    root = steps[root_i]
    same = [s for s in steps if s.name == root.name]
    occurrence = next(k for k, s in enumerate(same, 1) if s.step_id == root.step_id)
    llm_index = None
    if root.kind == "llm":
        llm_index = sum(1 for s in steps[:root_i] if s.kind == "llm") + 1
    for s in control.steps:
        assert not (s.name == root.name and holds(s, case.marker)), f"{case.case}: control holds marker"
    failed_ids = [e.step_id for e in failed.errors for st in e.stages if st.stage == "failed"]
    assert failed_ids, f"{case.case}: no failed stage"
    fid = failed_ids[0]
    fail_i = next(i for i, s in enumerate(steps) if s.step_id == fid)
    fstep = steps[fail_i]
    assert fail_i > root_i, f"{case.case}: failure step {fstep.name} does not start after root {root.name}"
    parents = {s.parent_id for s in steps if s.parent_id}
    hops = sum(
        1 for s in steps[root_i + 1: fail_i + 1] if s.kind != "agent" and s.step_id not in parents
    )
    f_occ = next(k for k, s in enumerate([x for x in steps if x.name == fstep.name], 1) if s.step_id == fid)
    return {
        "case": case.case,
        "agent": case.agent,
        "route": case.route,
        "fault_kind": case.fault_kind,
        "root": {"name": root.name, "occurrence": occurrence, "kind": root.kind, "llm_index": llm_index},
        "failure_step": {"name": fstep.name, "occurrence": f_occ},
        "hops": hops,
    }
