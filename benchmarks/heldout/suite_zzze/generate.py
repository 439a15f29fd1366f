"""Generate the held-out suite ZZZE: python benchmarks/heldout/suite_zzze/generate.py OUT [agent-module ...]."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile


HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

try:
    import trajdebug
except ImportError:  # run from a checkout without PYTHONPATH=src
    sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..", "..", "..", "src")))
    import trajdebug
from trajdebug.testing import FakeModelServer  # noqa: E402


AGENTS = [
    "accordion_workshop",
    "steeldrum_gigs",
    "lens_prescriptions",
    "juggling_classes",
    "busking_permits",
    "airship_tours",
    "caving_trips",
    "felting_courses",
]
FORBIDDEN = re.compile(r"fault|(?<!trajde)bug|wrong|stale|inject|corrupt|planted", re.I)
KINDS = {
    "wrong_retrieval",
    "unit_error",
    "truncated_result",
    "swallowed_error",
    "stale_data",
    "off_by_one",
    "lossy_parsing",
    "context_pollution",
    "wrong_tool_args",
    "wrong_routing",
    "tool_ignores_argument",
    "subagent_wrong_entity",
    "plan_error",
    "hallucinated_value",
    "format_drift",
    "bad_memory_write",
}


def ext_of(mod) -> str:
    return "json" if mod.ROUTE == "otlp" else "jsonl"


def record_one(mod, server, inp, dest, switch=None) -> None:
    for k in mod.SW:
        mod.SW[k] = False
    if switch:
        mod.SW[switch] = True
    server.use(mod.policy)
    try:
        mod.record(inp, server, dest)
    finally:
        for k in mod.SW:
            mod.SW[k] = False


def join(mod, paths, dest) -> None:
    if mod.ROUTE == "otlp":
        spans = []
        for p in paths:
            with open(p) as f:
                spans.extend(json.load(f)["resourceSpans"])
        with open(dest, "w") as f:
            json.dump({"resourceSpans": spans}, f)
    else:
        with open(dest, "w") as out:
            for p in paths:
                with open(p) as f:
                    out.write(f.read())


def steps_in_order(run):
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index or 0))


def _norm(text: str) -> str:
    return re.sub(
        r"(chatcmpl|call|resp|msg|run|trace|span)[-_][A-Za-z0-9]+|\"(id|created|created_at|system_fingerprint)\": ?[^,}]+",
        "",
        text,
    )


def check_case(mod, case, case_dir, ext) -> dict:
    failed = trajdebug.load_runs(os.path.join(case_dir, f"failed.{ext}"))
    control = trajdebug.load_runs(os.path.join(case_dir, f"control.{ext}"))
    refs = trajdebug.load_runs(os.path.join(case_dir, f"with_refs.{ext}"))
    assert len(failed) == 1 and failed[0].outcome == "failure", (case["id"], [r.outcome for r in failed])
    assert len(control) == 1 and control[0].outcome == "success", (case["id"], "control")
    assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, (
        case["id"],
        [r.outcome for r in refs],
    )
    run = failed[0]
    order = steps_in_order(run)
    rname, rocc, rkind = case["root"]
    fname, focc = case["failure"]
    roots = [s for s in order if s.name == rname]
    fails = [s for s in order if s.name == fname]
    assert len(roots) >= rocc, (case["id"], "root missing", [s.name for s in order])
    assert len(fails) >= focc, (case["id"], "failure missing", [s.name for s in order])
    root, fail = roots[rocc - 1], fails[focc - 1]
    assert root.status == "ok", (case["id"], "root status", root.status)
    assert root.kind == rkind, (case["id"], "root kind", root.kind)
    assert fail.status == "error", (case["id"], "failure status", fail.status)
    ri, fi = order.index(root), order.index(fail)
    same = [s for s in steps_in_order(control[0]) if s.name == rname]
    if len(same) >= rocc:
        a, b = (
            json.dumps(root.output, sort_keys=True, default=str),
            json.dumps(same[rocc - 1].output, sort_keys=True, default=str),
        )
        assert _norm(a) != _norm(b), (case["id"], "root output same as control", a[:200])
    assert fi > ri, (case["id"], "failure before root")
    for fn in (f"failed.{ext}", f"control.{ext}", f"with_refs.{ext}"):
        with open(os.path.join(case_dir, fn), encoding="utf-8") as f:
            text = f.read()
        m = FORBIDDEN.search(text)
        assert not m, (case["id"], fn, text[max(0, m.start() - 80) : m.end() + 80])
    assert case["fault_kind"] in KINDS
    assert not FORBIDDEN.search(case["description"]), case["id"]
    return {
        "case": case["id"],
        "agent": run.name,
        "route": mod.ROUTE,
        "fault_kind": case["fault_kind"],
        "root": {"name": rname, "occurrence": rocc, "kind": rkind},
        "failure": {"name": fname, "occurrence": focc},
        "hops": fi - ri,
        "description": case["description"],
    }


def main(argv) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    ids = []
    tmp = tempfile.mkdtemp(prefix="suite_zzze_")
    try:
        with FakeModelServer(lambda r: "") as server:
            for name in names:
                mod = importlib.import_module(name)
                ext = ext_of(mod)
                passing = []
                for i, inp in enumerate(mod.INPUTS):
                    p = os.path.join(tmp, f"{name}_pass{i}.{ext}")
                    record_one(mod, server, inp, p)
                    passing.append(p)
                for case in mod.CASES:
                    case_dir = os.path.join(out, case["id"])
                    if os.path.exists(case_dir):
                        shutil.rmtree(case_dir)
                    os.makedirs(case_dir)
                    fp = os.path.join(case_dir, f"failed.{ext}")
                    record_one(mod, server, mod.INPUTS[case["input"]], fp, case["switch"])
                    shutil.copy(passing[case["input"]], os.path.join(case_dir, f"control.{ext}"))
                    others = [p for i, p in enumerate(passing) if i != case["input"]]
                    join(mod, [fp, *others], os.path.join(case_dir, f"with_refs.{ext}"))
                    truth = check_case(mod, case, case_dir, ext)
                    with open(os.path.join(case_dir, "truth.json"), "w") as f:
                        json.dump(truth, f, indent=2)
                    ids.append(case["id"])
                    print(f"{case['id']:28s} {mod.ROUTE:14s} {case['fault_kind']:22s} hops={truth['hops']}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": ids}, f, indent=2)
    print(f"{len(ids)} cases written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
