"""Truth records and the generator's checks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import trajdebug

FORBIDDEN = re.compile(r"(?<![A-Za-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    case: str
    fault_id: str
    fault_kind: str
    input_key: str
    root: tuple[str, int]
    failure: tuple[str, int]
    description: str


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index if s.source_index is not None else 0))


def find(steps: list, name: str, occurrence: int):
    same = [s for s in steps if s.name == name]
    assert len(same) >= occurrence, f"step {name!r} #{occurrence} not found (have {len(same)})"
    return same[occurrence - 1]


def load(path: Path) -> list:
    return list(trajdebug.load_runs(str(path)))


def check_text(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    m = FORBIDDEN.search(text)
    assert m is None, f"{path}: forbidden word at {text[max(0, m.start() - 60): m.end() + 60]!r}"


def truth_for(case: Case, agent: str, route: str, failed_path: Path, control_path: Path, refs_path: Path) -> dict:
    for p in (failed_path, control_path, refs_path):
        check_text(p)
    [failed] = load(failed_path)
    [control] = load(control_path)
    assert failed.outcome == "failure", f"{case.case}: failed run outcome {failed.outcome}"
    assert control.outcome == "success", f"{case.case}: control outcome {control.outcome} {control.failure_reason}"
    refs = load(refs_path)
    assert len(refs) == 5, f"{case.case}: with_refs has {len(refs)} runs"
    assert sum(r.outcome == "failure" for r in refs) == 1, f"{case.case}: with_refs failures"
    assert sum(r.outcome == "success" for r in refs) == 4, f"{case.case}: with_refs successes"
    assert len({r.name for r in refs}) == 1, f"{case.case}: run names differ in with_refs"
    steps = ordered(failed)
    root = find(steps, *case.root)
    fail = find(steps, *case.failure)
    assert fail.status == "error" or failed.failure_reason, f"{case.case}: failure step has no error"
    assert fail.start_ns > root.start_ns, f"{case.case}: failure step does not start after the root"
    ri, fi = steps.index(root), steps.index(fail)
    assert fi > ri
    return {
        "case": case.case,
        "agent": agent,
        "route": route,
        "fault_kind": case.fault_kind,
        "root": {"name": case.root[0], "occurrence": case.root[1], "kind": root.kind},
        "failure": {"name": case.failure[0], "occurrence": case.failure[1]},
        "hops": fi - ri,
        "description": case.description,
    }
