"""Truth records and the generator's checks (shared by the generator only, not by the agents' flows)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trajdebug

FAULT_KINDS = (
    "lossy_parsing", "unit_error", "bad_memory_write", "hallucinated_value", "stale_data", "wrong_tool_args",
    "tool_ignores_argument", "truncated_result", "format_drift", "wrong_routing", "subagent_wrong_entity",
    "off_by_one", "context_pollution", "plan_error", "wrong_retrieval", "swallowed_error",
)

_FORBIDDEN = re.compile(r"(?<![A-Za-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    case: str
    fault_kind: str
    inp: str            # key of the agent's INPUTS used as the main input
    root: str           # root step name as recorded
    root_match: str     # text that the root occurrence's recorded output holds (picks the occurrence)
    failure: str        # failing step name as recorded
    description: str


def forbidden_words(text: str) -> list[str]:
    return sorted({m.group(0) for m in _FORBIDDEN.finditer(text)})


def load(path: Path) -> list[Any]:
    return list(trajdebug.load_runs(str(path)))


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def locate(run: Any, case: Case) -> dict:
    """Find root and failure steps in the failed run; return the truth fields they give."""
    steps = list(run.steps)
    order = sorted(range(len(steps)), key=lambda i: (steps[i].start_ns, i))
    pos = {i: p for p, i in enumerate(order)}
    roots = [i for i in order if steps[i].name == case.root]
    assert roots, f"{case.case}: no step named {case.root!r}"
    hit = [i for i in roots if case.root_match in _text(steps[i].output)]
    assert hit, f"{case.case}: no {case.root!r} step holds {case.root_match!r}"
    r = hit[0]
    fails = [i for i in order if steps[i].name == case.failure and steps[i].status == "error"]
    assert fails, f"{case.case}: no failing step named {case.failure!r}"
    f = fails[-1]
    assert steps[f].start_ns > steps[r].start_ns, f"{case.case}: failure starts before the root"
    assert steps[r].status != "error", f"{case.case}: root raised"
    same_f = [i for i in order if steps[i].name == case.failure]
    return {
        "root": {"name": case.root, "occurrence": roots.index(r) + 1, "kind": steps[r].kind},
        "failure": {"name": case.failure, "occurrence": same_f.index(f) + 1},
        "hops": pos[f] - pos[r],
    }


def check_case(case: Case, agent: Any, case_dir: Path, ext: str) -> dict:
    failed = load(case_dir / f"failed.{ext}")
    control = load(case_dir / f"control.{ext}")
    refs = load(case_dir / f"with_refs.{ext}")
    assert len(failed) == 1 and failed[0].outcome == "failure", (case.case, [r.outcome for r in failed])
    assert len(control) == 1 and control[0].outcome == "success", (case.case, [r.outcome for r in control])
    assert len(refs) == 5, (case.case, len(refs))
    assert sum(r.outcome == "failure" for r in refs) == 1, (case.case, [r.outcome for r in refs])
    assert sum(r.outcome == "success" for r in refs) == 4, (case.case, [r.outcome for r in refs])
    assert len({r.name for r in refs}) == 1, (case.case, {r.name for r in refs})
    for name in (f"failed.{ext}", f"control.{ext}", f"with_refs.{ext}"):
        bad = forbidden_words((case_dir / name).read_text())
        assert not bad, f"{case.case}/{name}: forbidden words {bad}"
    found = locate(failed[0], case)
    truth = {
        "case": case.case, "agent": agent.AGENT, "route": agent.ROUTE, "fault_kind": case.fault_kind,
        **found, "description": case.description,
    }
    (case_dir / "truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
    return truth
