"""Generate held-out suite ZZZG: 8 agents x 5 cases of failing agent runs.

    python benchmarks/heldout/suite_zzzg/generate.py OUT [agent-module ...]

Each agent module (a file beside this one) defines NAME, ROUTE, DOMAIN, SHAPE, INPUTS (5), CASES (5),
a module-level SWITCH (None: every input passes), policy(request) for the fake model server and
record(inp, path, server), which runs the agent once and writes its run to `path`.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", "..", "..", "src"))
for p in (HERE, SRC):
    if p not in sys.path:
        sys.path.insert(0, p)

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
os.environ.setdefault("OPENAI_API_KEY", "not-needed")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

MODULES = [
    "kaleidoscope",
    "ventriloquist",
    "acrobat",
    "street_organ",
    "sitar",
    "submarine",
    "geode",
    "orrery",
]
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}
FORBIDDEN = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|inject|corrupt|planted)", re.IGNORECASE)


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def join(paths: list[str], dest: str, route: str) -> None:
    if route == "otlp":
        spans: list = []
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


def one_run(path: str):
    runs = trajdebug.load_runs(path)
    assert len(runs) == 1, (path, len(runs))
    return runs[0]


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index or 0))


def find(steps: list, name: str, occurrence: int):
    same = [s for s in steps if s.name == name]
    assert len(same) >= occurrence, f"{name}#{occurrence}: only {len(same)} recorded ({[s.name for s in steps]})"
    return same[occurrence - 1]


def record_once(mod, inp: dict, path: str, server) -> None:
    try:
        mod.record(inp, path, server)
    except Exception:  # noqa: BLE001 - a failing run raises out of the agent; the recording holds it
        pass
    assert os.path.exists(path), f"{mod.NAME}: nothing recorded at {path}"


def build(out: str, modules: list[str]) -> list[str]:
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="suite_zzzg_")
    case_ids: list[str] = []
    try:
        with FakeModelServer(lambda request: "") as server:
            for modname in modules:
                t_mod = time.time()
                mod = importlib.import_module(modname)
                ext = ext_of(mod.ROUTE)
                assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5, modname
                server.use(mod.policy)
                passing = []
                mod.SWITCH = None
                for i, inp in enumerate(mod.INPUTS):
                    path = os.path.join(tmp, f"{modname}_{i}_pass.{ext}")
                    record_once(mod, inp, path, server)
                    run = one_run(path)
                    assert run.outcome == "success", (modname, i, run.outcome)
                    passing.append(path)
                for case in mod.CASES:
                    cid = case["id"]
                    assert case["kind"] in KINDS, case
                    path = os.path.join(tmp, f"{modname}_{cid}_fail.{ext}")
                    mod.SWITCH = case["switch"]
                    try:
                        record_once(mod, mod.INPUTS[case["input"]], path, server)
                    finally:
                        mod.SWITCH = None
                    case_ids.append(cid)
                    write_case(out, mod, case, path, passing, ext)
                print(f"  {mod.NAME} ({mod.ROUTE}): 5 cases in {time.time() - t_mod:.1f}s", file=sys.stderr)
        with open(os.path.join(out, "index.json"), "w") as f:
            json.dump({"cases": case_ids}, f, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return case_ids


def write_case(out: str, mod, case: dict, failed_path: str, passing: list[str], ext: str) -> None:
    cid, i = case["id"], case["input"]
    d = os.path.join(out, cid)
    os.makedirs(d, exist_ok=True)
    failed = os.path.join(d, f"failed.{ext}")
    control = os.path.join(d, f"control.{ext}")
    refs = os.path.join(d, f"with_refs.{ext}")
    shutil.copyfile(failed_path, failed)
    shutil.copyfile(passing[i], control)
    join([failed_path if k == i else p for k, p in enumerate(passing)], refs, mod.ROUTE)

    run = one_run(failed)
    assert run.outcome == "failure", (cid, run.outcome)
    assert one_run(control).outcome == "success", cid
    all_runs = trajdebug.load_runs(refs)
    assert len(all_runs) == 5, (cid, len(all_runs))
    assert sorted(r.outcome for r in all_runs) == ["failure"] + ["success"] * 4, (cid, [r.outcome for r in all_runs])
    assert len({r.name for r in all_runs}) == 1, (cid, {r.name for r in all_runs})

    steps = ordered(run)
    rname, rocc = case["root"]
    fname, focc = case["failure"]
    root = find(steps, rname, rocc)
    fail = find(steps, fname, focc)
    assert root.status == "ok", (cid, rname, root.status)
    assert fail.status == "error", (cid, fname, fail.status)
    ri, fi = steps.index(root), steps.index(fail)
    assert fi > ri, (cid, ri, fi)
    assert not FORBIDDEN.search(case["description"]), case["description"]
    truth = {
        "case": cid,
        "agent": run.name,
        "route": mod.ROUTE,
        "fault_kind": case["kind"],
        "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
        "failure": {"name": fname, "occurrence": focc},
        "hops": fi - ri,
        "description": case["description"],
    }
    if "root_kind" in case:
        assert root.kind == case["root_kind"], (cid, root.kind)
    for p in (failed, control, refs):
        with open(p) as f:
            text = f.read()
        hit = FORBIDDEN.search(text)
        assert not hit, (cid, p, text[max(0, hit.start() - 80): hit.end() + 80])
        for other in (cid,):
            assert other not in text, (cid, p, "case id in recorded data")
    with open(os.path.join(d, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out, modules = argv[0], (argv[1:] or MODULES)
    t0 = time.time()
    ids = build(out, modules)
    print(f"{len(ids)} cases written to {out} in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
