"""Truth records and the generator's checks."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trajdebug

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


def load(path: Path) -> list:
    return list(trajdebug.load_runs(str(path)))


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index or 0))


def find(run, name: str, occurrence: int):
    same = [s for s in ordered(run) if s.name == name]
    assert len(same) >= occurrence, f"{name}#{occurrence} not in run ({len(same)} found)"
    return same[occurrence - 1]


def failing_step(run):
    """The step whose error ended the run: the latest-starting step with an error and no erroring child."""
    errs = [s for s in ordered(run) if s.status == "error" or s.error is not None]
    assert errs, "failed run has no erroring step"
    parents = {s.parent_id for s in errs}
    leaves = [s for s in errs if s.step_id not in parents]
    return leaves[-1]


def truth(case: dict, agent, failed_path: Path) -> dict:
    [run] = load(failed_path)
    steps = ordered(run)
    root = find(run, case["root"][0], case["root"][1])
    fail = failing_step(run)
    occ = [s.step_id for s in steps if s.name == fail.name].index(fail.step_id) + 1
    exp = case.get("failure")
    if exp:
        assert (fail.name, occ) == tuple(exp), f"{case['id']}: failure {fail.name}#{occ} != {exp}"
    ids = [s.step_id for s in steps]
    hops = ids.index(fail.step_id) - ids.index(root.step_id)
    assert hops >= 1 and fail.start_ns > root.start_ns, f"{case['id']}: failure does not start after root"
    return {
        "case": case["id"],
        "agent": agent.NAME,
        "route": agent.ROUTE,
        "fault_kind": case["kind"],
        "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
        "failure": {"name": fail.name, "occurrence": occ},
        "hops": hops,
        "description": case["description"],
    }


def first_difference(failed: Path, control: Path):
    """(name, occurrence) of the first step whose recorded output differs between the failed run and its control."""
    [f] = load(failed)
    [c] = load(control)
    seen: dict = {}
    cs: dict = {}
    for s in ordered(c):
        cs.setdefault(s.name, []).append(s)
    parents = {s.parent_id for s in f.steps}
    for s in ordered(f):
        if s.step_id in parents:
            continue
        seen[s.name] = seen.get(s.name, 0) + 1
        other = cs.get(s.name, [])
        o = other[seen[s.name] - 1] if len(other) >= seen[s.name] else None
        norm = lambda v: re.sub(r"call_\d+_\d+|chatcmpl-\w+", "", json.dumps(v, sort_keys=True, default=str))  # noqa: E731
        if o is None or norm(o.output) != norm(s.output):
            return s.name, seen[s.name]
    return None


def check_case(case: dict, failed: Path, control: Path, with_refs: Path) -> None:
    cid = case["id"]
    f = load(failed)
    assert len(f) == 1 and f[0].outcome == "failure", f"{cid}: failed run outcome {[r.outcome for r in f]}"
    c = load(control)
    assert len(c) == 1 and c[0].outcome == "success", f"{cid}: control outcome {[r.outcome for r in c]}"
    w = load(with_refs)
    outs = sorted(r.outcome for r in w)
    assert outs == ["failure"] + ["success"] * 4, f"{cid}: with_refs outcomes {outs}"
    assert len({r.name for r in w}) == 1, f"{cid}: with_refs holds several agents"
    for p in (failed, control, with_refs):
        text = p.read_text()
        m = FORBIDDEN.search(text)
        assert not m, f"{cid}: forbidden word {text[max(0, m.start() - 40): m.end() + 40]!r} in {p.name}"


def dump(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")
