"""Generate suite Q: `python benchmarks/heldout/suite_q/generate.py OUT [agent ...]`."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
for p in (str(ROOT / "src"), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)


from benchmarks.heldout.suite_q import kit  # noqa: E402


def _agents(wanted):
    import importlib

    mods = ["a_lighthouse", "a_marsh", "a_mushroom", "a_walling", "a_cobbler", "a_ropeway", "a_arborist", "a_causeway"]
    out = []
    for m in mods:
        if wanted and m[2:] not in wanted and not any(w in m for w in wanted):
            continue
        out.append(importlib.import_module(f"benchmarks.heldout.suite_q.{m}").AGENT)
    return out


def _combine(ext: str, parts: list[Path], dest: Path) -> None:
    if ext == "jsonl":
        dest.write_text("".join(p.read_text() for p in parts))
    else:
        spans: list = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}))


def main(argv: list[str]) -> int:
    from trajdebug.sources.load import load_runs

    out = Path(argv[0]).resolve()
    wanted = set(argv[1:])
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    index = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        for agent in _agents(wanted):
            ext = agent.ext
            ref_files = []
            for k, inp in enumerate(agent.refs):
                rf = tmp_dir / f"{agent.name}-ref{k}.{ext}"
                agent.record(inp, rf)
                [r] = load_runs(rf)
                assert r.outcome == "success", f"{agent.name} reference {k}: {r.outcome} {r.failure_reason}"
                ref_files.append(rf)
            for case in agent.cases:
                d = out / case.case
                if d.exists():
                    shutil.rmtree(d)
                d.mkdir(parents=True)
                failed_f, control_f = d / f"failed.{ext}", d / f"control.{ext}"
                with kit.planted(case.fault_id):
                    agent.record(case.inp, failed_f)
                agent.record(case.inp, control_f)
                _combine(ext, [failed_f, *ref_files], d / f"with_refs.{ext}")
                [failed] = load_runs(failed_f)
                [control] = load_runs(control_f)
                assert failed.outcome == "failure", f"{case.case}: failed run is {failed.outcome}"
                assert control.outcome == "success", f"{case.case}: control is {control.outcome} {control.failure_reason}"
                refs = load_runs(d / f"with_refs.{ext}")
                assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, case.case
                assert sum(r.outcome == "success" for r in refs) == 4, case.case
                truth = kit.truth_for(case, failed, control)
                for f in (failed_f, control_f, d / f"with_refs.{ext}"):
                    kit.check_words(f)
                (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                index.append({k: truth[k] for k in ("case", "agent", "route", "fault_kind", "hops")})
                print(f"{case.case:28s} {case.route:14s} {case.fault_kind:22s} root={truth['root']['name']}"
                      f"#{truth['root']['occurrence']} fail={truth['failure_step']['name']} hops={truth['hops']}")
    (out / "index.json").write_text(json.dumps({"suite": "suite_q", "cases": index}, indent=2) + "\n")
    print(f"{len(index)} cases in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
