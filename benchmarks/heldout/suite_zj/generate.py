"""Generate the held-out suite: python benchmarks/heldout/suite_zj/generate.py OUT [agent ...]"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zj"

from . import common, kit  # noqa: E402

AGENTS = ["courier", "eyeglass", "luthier", "sailmaker", "golfcart", "karaoke", "goatdairy", "elevator"]


def merge(ext: str, parts: list[Path], out: Path) -> None:
    if ext == "jsonl":
        out.write_text("".join(p.read_text() for p in parts))
    else:
        spans = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))


def record(agent, inp: dict, path: Path, fault: str | None) -> None:
    if path.exists():
        path.unlink()
    with kit.planted(fault):
        try:
            agent.run_once(inp, path)
        except Exception:
            if fault is None:
                raise


def outcome_check(agent, path: Path, want: str, n: int = 1) -> list:
    runs = common.load(path, "otlp" if agent.EXT == "json" else None)
    assert len(runs) == n, f"{path}: {len(runs)} runs, expected {n}"
    if want:
        got = [r.outcome for r in runs]
        assert got == [want] * n, f"{path}: outcomes {got}, expected {want} ({[r.failure_reason for r in runs]})"
    return runs


def generate_agent(name: str, out: Path, scratch: Path) -> list[dict]:
    agent = importlib.import_module(f".{name}", __package__)
    ext = agent.EXT
    refs = []
    for key in agent.REFS:
        p = scratch / f"{name}-ref-{key}.{ext}"
        record(agent, agent.INPUTS[key], p, None)
        outcome_check(agent, p, "success")
        common.check_forbidden(p)
        refs.append(p)
    truths = []
    for case in agent.CASES:
        assert case.main_input not in agent.REFS
        d = out / case.case
        d.mkdir(parents=True, exist_ok=True)
        failed, control = d / f"failed.{ext}", d / f"control.{ext}"
        record(agent, agent.INPUTS[case.main_input], failed, f"{agent.DESK}.{case.fault_kind}")
        (run,) = outcome_check(agent, failed, "failure")
        record(agent, agent.INPUTS[case.main_input], control, None)
        outcome_check(agent, control, "success")
        merge(ext, [failed, *refs], d / f"with_refs.{ext}")
        runs = outcome_check(agent, d / f"with_refs.{ext}", "", 5)
        assert sorted(r.outcome for r in runs) == ["failure"] + ["success"] * 4, f"{case.case}: with_refs outcomes"
        for p in (failed, control, d / f"with_refs.{ext}"):
            common.check_forbidden(p)
        truth = common.truth_for(agent, case, run)
        common.dump(d / "truth.json", truth)
        truths.append(truth)
    return truths


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    truths = []
    scratch = Path(tempfile.mkdtemp(prefix="suite_zj_"))
    try:
        for name in names:
            truths.extend(generate_agent(name, out, scratch))
            print(f"{name}: ok ({time.time() - t0:.1f}s)", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        common.stop_server()
    if not argv[1:]:
        kinds: dict[str, int] = {}
        for t in truths:
            kinds[t["fault_kind"]] = kinds.get(t["fault_kind"], 0) + 1
        assert len(truths) == 40 and len(kinds) == 16 and min(kinds.values()) >= 2, kinds
        far = sum(t["hops"] >= 5 for t in truths)
        adjacent = sum(t["hops"] == 1 for t in truths)
        assert far >= 12 and adjacent >= 8, (far, adjacent)
    common.dump(out / "index.json", truths)
    print(f"{len(truths)} cases in {time.time() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
