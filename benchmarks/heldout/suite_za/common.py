"""Truth records and the generator's checks."""
from __future__ import annotations

import json
import re
from pathlib import Path

FORBIDDEN = re.compile(r"(?<![A-Za-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


def load(path: Path):
    if path.suffix == ".json":
        from trajdebug.sources.formats import import_path
        res = import_path(path, "otlp")
        return list(res.runs)
    import trajdebug
    return list(trajdebug.load_runs(str(path)))


def nth(run, name, occ):
    same = [s for s in sorted(run.steps, key=lambda s: s.start_ns) if s.name == name]
    return same[occ - 1] if len(same) >= occ else None


def truth(case, agent, route, spec, failed_run):
    root = nth(failed_run, *spec["root"])
    return {"case": case, "agent": agent, "route": route, "fault_kind": spec["kind"],
            "root": {"name": spec["root"][0], "occurrence": spec["root"][1], "kind": root.kind if root else None},
            "failure": {"name": spec["failure"][0], "occurrence": spec["failure"][1]},
            "hops": spec["hops"], "description": spec["description"]}


def check_case(case_dir: Path, ext: str, spec) -> None:
    failed = load(case_dir / f"failed.{ext}")
    control = load(case_dir / f"control.{ext}")
    refs = load(case_dir / f"with_refs.{ext}")
    assert len(failed) == 1 and failed[0].outcome == "failure", (case_dir, [r.outcome for r in failed])
    assert len(control) == 1 and control[0].outcome == "success", (case_dir, [r.outcome for r in control])
    outs = sorted(r.outcome for r in refs)
    assert len(refs) == 5 and outs.count("failure") == 1 and outs.count("success") == 4, (case_dir, outs)
    run = failed[0]
    root = nth(run, *spec["root"])
    assert root is not None, (case_dir, spec["root"], sorted({s.name for s in run.steps}))
    assert root.status == "ok", (case_dir, "root raised", root.error)
    fail = nth(run, *spec["failure"])
    assert fail is not None, (case_dir, spec["failure"])
    assert fail.start_ns > root.start_ns, (case_dir, "failure before root")
    assert not (root.kind == "agent"), (case_dir, "root is a container")
    for f in ("failed", "control", "with_refs"):
        text = (case_dir / f"{f}.{ext}").read_text()
        m = FORBIDDEN.search(text)
        assert not m, (case_dir, f, text[max(0, m.start() - 60): m.end() + 60])


def dump(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")
