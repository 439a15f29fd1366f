"""Truth records and the generator's checks."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import trajdebug

FORBIDDEN = re.compile(r"(?<![A-Za-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


def truth(case, agent, route, kind, root, failure, description):
    return {"case": case, "agent": agent, "route": route, "fault_kind": kind,
            "root": dict(root), "failure": dict(failure), "hops": None, "description": description}


def load(path: Path):
    runs = list(trajdebug.load_runs(str(path)))
    if not runs:
        raise AssertionError(f"no runs read from {path}")
    return runs


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns or 0))


def check_forbidden(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    m = FORBIDDEN.search(text)
    if m:
        raise AssertionError(f"{path}: forbidden word near {text[max(0, m.start()-60):m.end()+60]!r}")


def merge_otlp(paths, out: Path) -> None:
    spans = []
    for p in paths:
        spans.extend(json.loads(p.read_text())["resourceSpans"])
    out.write_text(json.dumps({"resourceSpans": spans}))


def merge_jsonl(paths, out: Path) -> None:
    with open(out, "w", encoding="utf-8") as f:
        for p in paths:
            f.write(p.read_text(encoding="utf-8"))


def check_case(t: dict, case_dir: Path, ext: str) -> dict:
    failed, control, refs = (case_dir / f"{n}.{ext}" for n in ("failed", "control", "with_refs"))
    for p in (failed, control, refs):
        check_forbidden(p)
    [frun] = load(failed)
    assert frun.outcome == "failure", (t["case"], frun.outcome)
    [crun] = load(control)
    assert crun.outcome == "success", (t["case"], crun.outcome, crun.failure_reason)
    all_runs = load(refs)
    assert len(all_runs) == 5, (t["case"], len(all_runs))
    outcomes = sorted(r.outcome for r in all_runs)
    assert outcomes == ["failure"] + ["success"] * 4, (t["case"], outcomes)
    steps = ordered(frun)
    roots = [s for s in steps if s.name == t["root"]["name"]]
    assert len(roots) >= t["root"]["occurrence"], (t["case"], "root missing", t["root"], [s.name for s in steps])
    root = roots[t["root"]["occurrence"] - 1]
    assert root.kind == t["root"]["kind"], (t["case"], root.kind, t["root"])
    assert root.status == "ok", (t["case"], "root raised")
    fails = [s for s in steps if s.name == t["failure"]["name"]]
    assert fails, (t["case"], "failure step missing", t["failure"], [s.name for s in steps])
    fail = fails[-1]
    t["failure"]["occurrence"] = len(fails)
    assert fail.start_ns > root.start_ns, (t["case"], "failure does not start after root")
    t["hops"] = steps.index(fail) - steps.index(root)
    return t


def reset(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
