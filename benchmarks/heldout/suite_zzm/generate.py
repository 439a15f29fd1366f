"""Generate the suite_zzm held-out cases.

    /work/main/.venv/bin/python benchmarks/heldout/suite_zzm/generate.py OUT [agent-module ...]

Writes OUT/<case>/{failed,control,with_refs}.<ext>, OUT/<case>/truth.json and OUT/index.json.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True  # leave no __pycache__ in the suite's folder
os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import kit  # noqa: E402
import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = [
    "lens_orders",
    "glider_rota",
    "kart_sessions",
    "squash_league",
    "paintball_bookings",
    "caravan_pitches",
    "physio_plans",
    "hostel_beds",
]
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def load(path: Path, route: str) -> list:
    return trajdebug.load_runs(str(path), fmt="otlp" if route == "otlp" else None)


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index if s.source_index is not None else 0))


def dumps(v) -> str:
    return json.dumps(v, sort_keys=True, default=str)


_IDS = {"id", "tool_call_id", "call_id", "response_id"}


def strip_ids(v):
    """A value without the call and response ids a model server numbers per request."""
    if isinstance(v, dict):
        return {k: strip_ids(x) for k, x in v.items() if k not in _IDS}
    if isinstance(v, list):
        return [strip_ids(x) for x in v]
    return v


def locate(steps: list, spec: dict) -> tuple[int, int]:
    """(index in start order, 1-based occurrence among same-named steps) of the step a spec names."""
    same = [i for i, s in enumerate(steps) if s.name == spec["name"]]
    assert same, f"no step named {spec['name']!r}"
    if "match" in spec:
        hits = [i for i in same if spec["match"] in dumps(steps[i].output)]
        assert hits, f"no {spec['name']!r} step outputs {spec['match']!r}"
        i = hits[spec.get("nth", 1) - 1]
    else:
        i = same[spec.get("occurrence", 1) - 1]
    return i, same.index(i) + 1


def join_otlp(paths: list[Path]) -> dict:
    out: dict = {"resourceSpans": []}
    for p in paths:
        out["resourceSpans"].extend(json.loads(p.read_text())["resourceSpans"])
    return out


def check_words(path: Path) -> None:
    m = kit.FORBIDDEN.search(path.read_text())
    assert m is None, f"{path}: holds the word {m.group(0)!r}"


def generate(out: Path, names: list[str]) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="suite_zzm_"))
    case_ids: list[str] = []
    try:
        with FakeModelServer() as server:
            for name in names:
                mod = importlib.import_module(name)
                route, ext = mod.ROUTE, ext_of(mod.ROUTE)
                kit.ACTIVE = None
                refs = []
                for j, inp in enumerate(mod.REFS):
                    p = tmp / f"{name}_ref{j}.{ext}"
                    mod.record(inp, server, p)
                    [r] = load(p, route)
                    assert r.outcome == "success", f"{name} ref {j}: {r.outcome} {r.failure_reason}"
                    refs.append(p)
                for case in mod.CASES:
                    cid = case["case"]
                    assert case["kind"] in KINDS, case["kind"]
                    inp = mod.INPUTS[cid]
                    cdir = out / cid
                    if cdir.exists():
                        shutil.rmtree(cdir)
                    cdir.mkdir(parents=True)
                    failed, control = cdir / f"failed.{ext}", cdir / f"control.{ext}"
                    kit.ACTIVE = cid
                    try:
                        mod.record(inp, server, failed)
                    finally:
                        kit.ACTIVE = None
                    mod.record(inp, server, control)
                    with_refs = cdir / f"with_refs.{ext}"
                    if ext == "jsonl":
                        with_refs.write_text("".join(p.read_text() for p in [failed, *refs]))
                    else:
                        with_refs.write_text(json.dumps(join_otlp([failed, *refs])))
                    [fr] = load(failed, route)
                    [cr] = load(control, route)
                    assert fr.outcome == "failure", f"{cid}: failed run is {fr.outcome}"
                    assert cr.outcome == "success", f"{cid}: control is {cr.outcome} {cr.failure_reason}"
                    wr = load(with_refs, route)
                    assert len(wr) == 5 and sum(r.outcome == "failure" for r in wr) == 1, f"{cid}: with_refs"
                    steps = ordered(fr)
                    ri, rocc = locate(steps, case["root"])
                    fi, focc = locate(steps, case["failure"])
                    root, fail = steps[ri], steps[fi]
                    assert root.status == "ok", f"{cid}: root status {root.status}"
                    assert fail.status == "error", f"{cid}: failure step status {fail.status}"
                    assert (fail.start_ns or 0) > (root.start_ns or 0) and fi > ri, f"{cid}: failure before root"
                    # the root is where the two runs of the same input part: its output differs from control's
                    csteps = ordered(cr)
                    ci, _ = locate(csteps, {"name": root.name, "occurrence": rocc})
                    if not case.get("same_output"):
                        assert dumps(strip_ids(csteps[ci].output)) != dumps(strip_ids(root.output)), f"{cid}: root output as in control"
                    for p in (failed, control, with_refs):
                        check_words(p)
                    truth = {
                        "case": cid,
                        "agent": mod.AGENT,
                        "route": route,
                        "fault_kind": case["kind"],
                        "root": {"name": root.name, "occurrence": rocc, "kind": root.kind},
                        "failure": {"name": fail.name, "occurrence": focc},
                        "hops": fi - ri,
                        "description": case["description"],
                    }
                    (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                    case_ids.append(cid)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"cases": case_ids}, indent=2) + "\n")
    return case_ids


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    logging.getLogger("openai.agents").setLevel(logging.CRITICAL)
    t0 = time.time()
    names = argv[1:] or AGENTS
    ids = generate(Path(argv[0]), names)
    print(f"{len(ids)} cases in {time.time() - t0:.1f} s -> {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
