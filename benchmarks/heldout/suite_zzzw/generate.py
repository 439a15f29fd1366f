"""Generate the held-out suite ZZZW: 8 agents x 5 cases.

python benchmarks/heldout/suite_zzzw/generate.py OUT [agent-module ...]
"""
from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = [
    "ale_orders", "yarn_commissions", "cloth_finishing", "resoling",
    "organ_tuning", "harp_strings", "lute_commissions", "taper_subscriptions",
]
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}
FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|inject|corrupt|planted)", re.I)


def record_one(mod, server, inp, switch, tmp: Path) -> Path:
    mod.SWITCH = switch
    try:
        dest = tmp / f"{mod.NAME}-{inp['key']}-{switch or 'off'}.{mod.EXT}"
        if dest.exists():
            dest.unlink()
        mod.record(server, inp, dest)
    finally:
        mod.SWITCH = None
    return dest


def join(paths: list[Path], ext: str, dest: Path) -> None:
    if ext == "json":
        spans: list = []
        for p in paths:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}))
    else:
        dest.write_text("".join(p.read_text() for p in paths))


def load(path: Path):
    return trajdebug.load_runs(str(path))


def find(run, name: str, occurrence: int):
    steps = sorted(run.steps, key=lambda s: (s.start_ns, s.source_index or 0))
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, f"{run.name}: step {name} #{occurrence} not found ({len(hits)} of that name)"
    i = hits[occurrence - 1]
    return i, steps[i]


def check_words(path: Path) -> None:
    m = FORBIDDEN.search(path.read_text())
    assert not m, f"{path}: holds the word {m.group(0)!r} near {path.read_text()[max(0, m.start()-80):m.end()+80]!r}"


def build_agent(mod, server, out: Path, tmp: Path) -> list[str]:
    refs = {}
    for inp in mod.INPUTS:
        p = record_one(mod, server, inp, None, tmp)
        [run] = load(p)
        assert run.outcome == "success", f"{mod.NAME} {inp['key']}: reference failed: {run.outcome}"
        assert run.name == mod.NAME, (run.name, mod.NAME)
        check_words(p)
        refs[inp["key"]] = p
    ids = []
    seen_switches = set()
    for case in mod.CASES:
        assert case["fault_kind"] in KINDS, case
        assert case["switch"] not in seen_switches
        seen_switches.add(case["switch"])
        inp = mod.INPUTS[case["input"]]
        cdir = out / case["id"]
        cdir.mkdir(parents=True)
        failed = record_one(mod, server, inp, case["switch"], tmp)
        shutil.copy(failed, cdir / f"failed.{mod.EXT}")
        shutil.copy(refs[inp["key"]], cdir / f"control.{mod.EXT}")
        others = [refs[i["key"]] for i in mod.INPUTS if i["key"] != inp["key"]]
        join([failed] + others, mod.EXT, cdir / f"with_refs.{mod.EXT}")
        [run] = load(cdir / f"failed.{mod.EXT}")
        assert run.outcome == "failure", f"{case['id']}: failed run is {run.outcome}"
        [ctl] = load(cdir / f"control.{mod.EXT}")
        assert ctl.outcome == "success"
        allr = load(cdir / f"with_refs.{mod.EXT}")
        assert len(allr) == 5 and sum(r.outcome == "failure" for r in allr) == 1, [r.outcome for r in allr]
        assert all(r.name == mod.NAME for r in allr)
        ri, root = find(run, case["root"]["name"], case["root"]["occurrence"])
        fi, fail = find(run, case["failure"]["name"], case["failure"]["occurrence"])
        assert root.status == "ok", f"{case['id']}: root status {root.status}"
        assert fail.status == "error", f"{case['id']}: failure step status {fail.status}"
        assert fi > ri and fail.start_ns >= root.start_ns, f"{case['id']}: failure before root"
        # the same step in the control run answers otherwise (the switch changed something there)
        for f in cdir.iterdir():
            check_words(f)
        assert not FORBIDDEN.search(case["description"]), case["description"]
        truth = {
            "case": case["id"], "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["fault_kind"],
            "root": {"name": root.name, "occurrence": case["root"]["occurrence"], "kind": root.kind},
            "failure": {"name": fail.name, "occurrence": case["failure"]["occurrence"]},
            "hops": fi - ri, "description": case["description"],
        }
        (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        ids.append(case["id"])
    return ids


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit(__doc__)
    out = Path(argv[0])
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    ids: list[str] = []
    with tempfile.TemporaryDirectory() as td, FakeModelServer(lambda r: "ok") as server:
        for name in names:
            mod = importlib.import_module(name)
            ids += build_agent(mod, server, out, Path(td))
            print(f"{mod.NAME}: {len(mod.CASES)} cases", flush=True)
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    print(f"{len(ids)} cases written to {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
