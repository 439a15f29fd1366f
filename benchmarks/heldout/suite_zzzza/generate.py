"""Generate held-out suite zzzza: 8 agents x 5 failing cases, recorded through four routes.

    python generate.py OUT [agent ...]

Writes OUT/<case>/{failed,control,with_refs}.<ext>, OUT/<case>/truth.json and OUT/index.json.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "..", "src"))
for p in (SRC, HERE):
    if p not in sys.path:
        sys.path.insert(0, p)

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
os.environ.setdefault("OPENAI_API_KEY", "not-needed")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

from crafts import common  # noqa: E402

AGENTS = ["bakery", "bikeshop", "apiary", "florist", "pianotuner", "printshop", "kiln", "locksmith"]
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def combine(route: str, parts: list[str], dest: str) -> None:
    if route == "otlp":
        spans = []
        for p in parts:
            with open(p) as f:
                spans.extend(json.load(f)["resourceSpans"])
        with open(dest, "w") as f:
            json.dump({"resourceSpans": spans}, f)
    else:
        with open(dest, "w") as out:
            for p in parts:
                with open(p) as f:
                    out.write(f.read())


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns or 0))


def find(steps: list, name: str, occurrence: int, has: str | None = None) -> tuple[int, int]:
    """The index of a step in start order and its occurrence among steps of its name.

    With `has`, the step is the first of that name whose recorded input holds the text (parallel calls
    start in no fixed order), and the occurrence is where it actually stands."""
    hits = [i for i, s in enumerate(steps) if s.name == name]
    if has is not None:
        for n, i in enumerate(hits):
            if has in json.dumps(steps[i].input, default=str):
                return i, n + 1
        raise AssertionError(f"no step {name} with {has!r} in its input")
    assert len(hits) >= occurrence, f"step {name} #{occurrence} not found (found {len(hits)}): {[s.name for s in steps]}"
    return hits[occurrence - 1], occurrence


def recorded_texts(run) -> list[str]:
    texts = [run.name, str(run.metadata.get("task", "")), str(run.failure_reason or "")]
    for s in run.steps:
        texts += [s.name, json.dumps(s.input, default=str), json.dumps(s.output, default=str), json.dumps(
            None if s.error is None else {"type": s.error.type, "message": s.error.message}, default=str)]
    return texts


def check_case(mod, case: dict, case_dir: str, ext: str) -> dict:
    [failed] = trajdebug.load_runs(os.path.join(case_dir, f"failed.{ext}"))
    [control] = trajdebug.load_runs(os.path.join(case_dir, f"control.{ext}"))
    refs = trajdebug.load_runs(os.path.join(case_dir, f"with_refs.{ext}"))
    cid = case["id"]
    assert failed.outcome == "failure", f"{cid}: failed run ended {failed.outcome}"
    assert control.outcome == "success", f"{cid}: control ended {control.outcome}: {control.failure_reason}"
    assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, \
        f"{cid}: with_refs {[r.outcome for r in refs]}"
    assert all(r.name == mod.NAME for r in refs) and failed.name == mod.NAME and control.name == mod.NAME
    steps = ordered(failed)
    ri, r_occ = find(steps, *case["root"], case.get("root_has"))
    fi, f_occ = find(steps, *case["failure"], case.get("failure_has"))
    root, fail = steps[ri], steps[fi]
    assert root.status == "ok", f"{cid}: root {root.name} status {root.status}"
    assert fail.status == "error", f"{cid}: failure step {fail.name} status {fail.status}"
    assert ri < fi, f"{cid}: root at {ri} not before failure at {fi}"
    # the failing step is the last step of the run to raise an error of its own (not re-raised from a child)
    leaf_errors = [i for i, s in enumerate(steps) if s.status == "error" and not any(
        c.status == "error" and c.parent_id == s.step_id for c in steps)]
    assert leaf_errors and leaf_errors[-1] == fi, \
        f"{cid}: last own error at {[steps[i].name for i in leaf_errors]}, not {fail.name}"
    for r in (failed, control, *refs):
        common.check_words(recorded_texts(r), cid)
    common.check_words([case["description"]], cid)
    return {
        "case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["fault_kind"],
        "root": {"name": root.name, "occurrence": r_occ, "kind": root.kind},
        "failure": {"name": fail.name, "occurrence": f_occ},
        "hops": fi - ri, "description": case["description"],
    }


def run_agent(mod, out: str, tmp: str, server) -> list[str]:
    server.use(mod.brain)
    ext = ext_of(mod.ROUTE)
    assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5
    mod.SWITCH = None
    passing = {}
    for key in mod.INPUTS:
        passing[key] = os.path.join(tmp, f"{mod.__name__.split('.')[-1]}_pass_{key}.{ext}")
        mod.record(key, passing[key])
        [clean] = trajdebug.load_runs(passing[key])
        assert clean.outcome == "success", f"{mod.NAME} input {key} does not pass: {clean.failure_reason}"
    ids = []
    for case in mod.CASES:
        assert case["fault_kind"] in KINDS, case
        failed_tmp = os.path.join(tmp, f"{case['id']}_failed.{ext}")
        mod.SWITCH = case["switch"]
        try:
            mod.record(case["input"], failed_tmp)
        finally:
            mod.SWITCH = None
        case_dir = os.path.join(out, case["id"])
        os.makedirs(case_dir, exist_ok=True)
        shutil.copyfile(failed_tmp, os.path.join(case_dir, f"failed.{ext}"))
        shutil.copyfile(passing[case["input"]], os.path.join(case_dir, f"control.{ext}"))
        others = [passing[k] for k in mod.INPUTS if k != case["input"]]
        combine(mod.ROUTE, others[:2] + [failed_tmp] + others[2:], os.path.join(case_dir, f"with_refs.{ext}"))
        truth = check_case(mod, case, case_dir, ext)
        with open(os.path.join(case_dir, "truth.json"), "w") as f:
            json.dump(truth, f, indent=2)
        ids.append(case["id"])
    return ids


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = os.path.abspath(argv[0])
    wanted = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    started = time.time()
    ids: list[str] = []
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer(lambda r: "idle") as server:
        common.set_server(server)
        for name in wanted:
            mod = importlib.import_module(f"crafts.{name}")
            t0 = time.time()
            ids += run_agent(mod, out, tmp, server)
            print(f"{name:12s} {mod.ROUTE:14s} 5 cases  {time.time() - t0:5.1f}s", flush=True)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": ids}, f, indent=2)
    print(f"{len(ids)} cases in {time.time() - started:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
