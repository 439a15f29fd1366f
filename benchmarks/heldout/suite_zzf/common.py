"""Truth records and the generator's checks."""
from __future__ import annotations

import json
import re
from pathlib import Path

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


def load(path: Path):
    if str(path).endswith(".json"):
        from trajdebug.sources.formats import import_path

        res = import_path(path, "otlp")
        return list(res.runs)
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index or 0))


def find_step(run, name: str, occurrence: int):
    same = [s for s in ordered(run) if s.name == name]
    assert len(same) >= occurrence, f"{name}#{occurrence} not in run (found {len(same)})"
    return same[occurrence - 1]


def merge_refs(failed: Path, refs: Path, out: Path) -> None:
    if str(failed).endswith(".json"):
        a = json.loads(failed.read_text())
        b = json.loads(refs.read_text())
        out.write_text(json.dumps({"resourceSpans": a["resourceSpans"] + b["resourceSpans"]}))
    else:
        out.write_text(failed.read_text() + refs.read_text())


def check_text(path: Path) -> None:
    text = path.read_text()
    m = FORBIDDEN.search(text)
    assert m is None, f"forbidden word {text[max(0, m.start()-40):m.end()+40]!r} in {path}"


def build_truth(case: dict, agent, failed_path: Path, control_path: Path, refs_path: Path, with_refs: Path) -> dict:
    [run] = load(failed_path)
    assert run.outcome == "failure", (case["id"], run.outcome)
    [ctl] = load(control_path)
    assert ctl.outcome == "success", (case["id"], "control", ctl.outcome, getattr(ctl, "metadata", {}).get("failure"))
    refs = load(refs_path)
    assert len(refs) == 4 and all(r.outcome == "success" for r in refs), [r.outcome for r in refs]
    wr = load(with_refs)
    assert len(wr) == 5 and sum(r.outcome == "failure" for r in wr) == 1
    rname, rocc = case["root"]
    fname, focc = case["failure"]
    root = find_step(run, rname, rocc)
    fail = find_step(run, fname, focc)
    assert root.status == "ok", (case["id"], "root raised")
    assert fail.start_ns > root.start_ns, (case["id"], "failure before root")
    steps = ordered(run)
    hops = steps.index(fail) - steps.index(root)
    for p in (failed_path, control_path, with_refs):
        check_text(p)
    return {
        "case": case["id"],
        "agent": agent.AGENT,
        "route": agent.ROUTE,
        "fault_kind": case["kind"],
        "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
        "failure": {"name": fname, "occurrence": focc},
        "hops": hops,
        "description": case["desc"],
    }
