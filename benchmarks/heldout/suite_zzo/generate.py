"""Generate the suite_zzo held-out cases: generate.py OUT [agent-module ...]"""
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
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

import _rt  # noqa: E402
import kit  # noqa: E402

AGENTS = ["flight_rota", "saffron", "darts", "bagels", "limo", "ebike", "hovercraft", "demolition"]
FORBIDDEN = re.compile(r"\b(?:fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}


def _ext(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def _load(path: str):
    runs = trajdebug.load_runs(path)
    return runs


def _ordered(run):
    return sorted(run.steps, key=lambda s: s.start_ns)


def _find(steps, name: str, occ: int):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occ, f"step {name}#{occ} not found (have {len(hits)})"
    return hits[occ - 1]


def _ok(step) -> bool:
    return step.error is None and step.status == "ok"


def _join(paths: list[str], route: str, out: str) -> None:
    if route == "otlp":
        rs = []
        for p in paths:
            with open(p) as f:
                rs.extend(json.load(f).get("resourceSpans", []))
        with open(out, "w") as f:
            json.dump({"resourceSpans": rs}, f)
    else:
        with open(out, "w") as f:
            for p in paths:
                with open(p) as g:
                    f.write(g.read())


def _check_words(path: str) -> None:
    with open(path) as f:
        m = FORBIDDEN.search(f.read())
    assert not m, f"{path}: recorded text holds a forbidden word near {m.group(0)!r}"


def generate(out: str, names: list[str]) -> list[str]:
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="suite_zzo_")
    ids: list[str] = []
    try:
        with FakeModelServer(lambda r: "OK") as server:
            _rt.SERVER = server
            for name in names:
                mod = importlib.import_module(name)
                ext = _ext(mod.ROUTE)
                clean = []
                for i, inp in enumerate(mod.INPUTS):
                    kit.set_case(None)
                    p = os.path.join(tmp, f"{name}_clean{i}.{ext}")
                    mod.record(inp, p)
                    [r] = _load(p)
                    assert r.outcome == "success", f"{name} input {i}: clean run is {r.outcome}: {r.failure_reason}"
                    clean.append(p)
                for case in mod.CASES:
                    cid = case["id"]
                    assert case["fault_kind"] in KINDS
                    kit.set_case(cid)
                    fp = os.path.join(tmp, f"{cid}_failed.{ext}")
                    try:
                        mod.record(mod.INPUTS[case["input"]], fp)
                    finally:
                        kit.set_case(None)
                    [run] = _load(fp)
                    assert run.outcome == "failure", f"{cid}: failed run is {run.outcome}"
                    steps = _ordered(run)
                    assert 15 <= len(steps) <= 60, f"{cid}: {len(steps)} steps"
                    if os.environ.get("ZZO_SHOW"):
                        print(cid, len(steps), run.failure_reason)
                        print("   root:", str(steps[_find(steps, case["root"], case["occ"])].output)[:230])
                    ri = _find(steps, case["root"], case["occ"])
                    fi = _find(steps, case["failure"], case.get("failure_occ", 1))
                    assert _ok(steps[ri]), f"{cid}: root {case['root']} did not end ok"
                    assert steps[fi].start_ns > steps[ri].start_ns and fi > ri, f"{cid}: failure does not follow root"
                    assert steps[fi].error is not None, f"{cid}: failure step {case['failure']} holds no error"
                    cdir = os.path.join(out, cid)
                    os.makedirs(cdir, exist_ok=True)
                    shutil.copy(fp, os.path.join(cdir, f"failed.{ext}"))
                    shutil.copy(clean[case["input"]], os.path.join(cdir, f"control.{ext}"))
                    refs = [p for j, p in enumerate(clean) if j != case["input"]]
                    _join([fp] + refs, mod.ROUTE, os.path.join(cdir, f"with_refs.{ext}"))
                    both = _load(os.path.join(cdir, f"with_refs.{ext}"))
                    assert len(both) == 5 and sum(r.outcome == "failure" for r in both) == 1, f"{cid}: with_refs"
                    [ctrl] = _load(os.path.join(cdir, f"control.{ext}"))
                    assert ctrl.outcome == "success"
                    truth = {"case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["fault_kind"],
                             "root": {"name": case["root"], "occurrence": case["occ"], "kind": steps[ri].kind},
                             "failure": {"name": case["failure"], "occurrence": case.get("failure_occ", 1)},
                             "hops": fi - ri, "description": case["description"]}
                    with open(os.path.join(cdir, "truth.json"), "w") as f:
                        json.dump(truth, f, indent=2, sort_keys=True)
                    for fn in ("failed", "control", "with_refs"):
                        _check_words(os.path.join(cdir, f"{fn}.{ext}"))
                    ids.append(cid)
        with open(os.path.join(out, "index.json"), "w") as f:
            json.dump({"cases": ids}, f, indent=2)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ids


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    t0 = time.time()
    ids = generate(argv[0], argv[1:] or AGENTS)
    print(f"{len(ids)} cases in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
