"""Case records, truth read back from a recorded run, and the generator's own checks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from trajdebug.sources.load import load_runs

BANNED = re.compile(r"(?<![A-Za-z0-9])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)
OTLP_IDS = re.compile(r'"(traceId|spanId|parentSpanId|trace_id|span_id|parent_span_id)"\s*:\s*"[^"]*"')


@dataclass(frozen=True)
class Fault:
    case: str
    fault_id: str
    kind: str
    root: str  # name of the step that produces the value
    marker: str  # text found in that step's output JSON when the fault is on
    inp: dict[str, Any] = field(default_factory=dict)


def text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def ordered(run) -> list:
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns, p[0]))]


def failure_step_id(run) -> str | None:
    for ev in run.errors:
        for st in ev.stages:
            if st.stage == "failed":
                return ev.step_id
    return None


def truth_for(path: str, control_path: str, fault: Fault, agent: str, route: str) -> dict[str, Any]:
    [run] = load_runs(path)
    [ctl] = load_runs(control_path)
    assert run.outcome == "failure", (fault.case, run.outcome, run.failure_reason)
    assert ctl.outcome == "success", (fault.case, "control", ctl.outcome, ctl.failure_reason)
    steps = ordered(run)
    roots = [i for i, s in enumerate(steps) if s.name == fault.root and fault.marker in text_of(s.output)]
    assert roots, (fault.case, "no step holds the marker", fault.root, fault.marker)
    ri = roots[0]
    root = steps[ri]
    for s in ctl.steps:
        assert not (s.name == fault.root and fault.marker in text_of(s.output)), (fault.case, "control holds marker")
    fid = failure_step_id(run)
    assert fid is not None, (fault.case, "no failed stage")
    fi = next(i for i, s in enumerate(steps) if s.step_id == fid)
    fstep = steps[fi]
    assert fi > ri and fstep.start_ns >= root.start_ns, (fault.case, "failure before root", ri, fi)
    parents = {s.parent_id for s in steps if s.parent_id}
    hops = sum(1 for s in steps[ri + 1 : fi + 1] if s.step_id not in parents and s.kind != "agent")
    occ = sum(1 for s in steps[: ri + 1] if s.name == root.name)
    focc = sum(1 for s in steps[: fi + 1] if s.name == fstep.name)
    llm_index = (sum(1 for s in steps[:ri] if s.kind == "llm") + 1) if root.kind == "llm" else None
    return {
        "case": fault.case,
        "agent": agent,
        "route": route,
        "fault_kind": fault.kind,
        "root": {"name": root.name, "occurrence": occ, "kind": root.kind, "llm_index": llm_index},
        "failure_step": {"name": fstep.name, "occurrence": focc},
        "hops": hops,
    }


def check_clean(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = OTLP_IDS.sub("", text).replace("\\n", " ").replace("\\t", " ")
    m = BANNED.search(text)
    assert m is None, (path, text[max(0, m.start() - 80) : m.end() + 80])


def outcomes(path: str) -> list[str]:
    return [r.outcome for r in load_runs(path)]
