"""Generate held-out suite N: python benchmarks/heldout/suite_n/generate.py OUT [agent ...].

An agent is named by its module suffix (apiary, hut, bell, cheese, harbor, glass, seedbank, telescope) or by its
run name as in index.json (apiary-inspector, ...).
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
import warnings
from pathlib import Path


HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
for p in (str(HERE), str(ROOT / "src"), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)
os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("TRAJDEBUG_STORE", str(Path(tempfile.gettempdir()) / "suite_n_unused.db"))
warnings.filterwarnings("ignore")

import nkit  # noqa: E402


AGENTS = ["apiary", "hut", "bell", "cheese", "harbor", "glass", "seedbank", "telescope"]
FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


def module(agent: str):
    return importlib.import_module(f"n_{agent}")


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def load(path: Path, route: str):
    from trajdebug.sources.load import load_runs

    return load_runs(str(path), fmt="otlp") if route == "otlp" else load_runs(str(path))


def ordered(run):
    return [s for _, s in sorted(enumerate(run.steps), key=lambda t: (t[1].start_ns, t[0]))]


def out_text(step) -> str:
    return json.dumps(step.output, sort_keys=True, ensure_ascii=False)


def truth_for(case: str, mod, fault: dict, failed_path: Path, control_path: Path) -> dict:
    [run] = load(failed_path, mod.ROUTE)
    assert run.outcome == "failure", (case, run.outcome)
    [ctrl] = load(control_path, mod.ROUTE)
    assert ctrl.outcome == "success", (case, ctrl.outcome, ctrl.failure_reason)
    steps = ordered(run)
    marker = fault["marker"]
    idx = next((i for i, s in enumerate(steps) if s.name == fault["root"] and marker in out_text(s)), None)
    assert idx is not None, (case, "no root holding marker", fault["root"], marker)
    root = steps[idx]
    for s in ctrl.steps:
        assert not (s.name == fault["root"] and marker in out_text(s)), (case, "control holds marker")
    parents = {s.parent_id for s in steps if s.parent_id}
    failed_events = [e for e in run.errors if any(st.stage == "failed" for st in e.stages)]
    assert failed_events, (case, "no failed error")
    fail_id = failed_events[0].step_id
    fidx = next(i for i, s in enumerate(steps) if s.step_id == fail_id)
    fstep = steps[fidx]
    assert fidx > idx, (case, "failure before root", fstep.name, root.name)
    hops = sum(1 for s in steps[idx + 1 : fidx + 1] if s.step_id not in parents and s.kind != "agent")
    occ = sum(1 for s in steps[: idx + 1] if s.name == root.name)
    focc = sum(1 for s in steps[: fidx + 1] if s.name == fstep.name)
    llm_index = sum(1 for s in steps[:idx] if s.kind == "llm") + 1 if root.kind == "llm" else None
    return {
        "case": case,
        "agent": mod.NAME,
        "route": mod.ROUTE,
        "fault_kind": fault["kind"],
        "root": {"name": root.name, "occurrence": occ, "kind": root.kind, "llm_index": llm_index},
        "failure_step": {"name": fstep.name, "occurrence": focc},
        "hops": hops,
    }


def scan(path: Path) -> None:
    text = path.read_text()
    if path.suffix == ".json":
        text = re.sub(r'"(traceId|spanId|parentSpanId)":\s*"[^"]*"', "", text)
    m = FORBIDDEN.search(text)
    assert m is None, (str(path), text[max(0, m.start() - 80) : m.end() + 80])


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    by_run_name = {module(a).NAME: a for a in AGENTS}
    chosen = [by_run_name.get(a, a) for a in argv[1:]] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    from trajdebug.testing import FakeModelServer

    t0 = time.time()
    index = []
    with FakeModelServer(lambda r: "idle") as server, tempfile.TemporaryDirectory() as tmpd:
        nkit.SERVER = server
        tmp = Path(tmpd)
        for agent in chosen:
            mod = module(agent)
            ext = ext_of(mod.ROUTE)
            refs = []
            for k, rid in enumerate(mod.REFS):
                p = tmp / f"{agent}_ref{k}.{ext}"
                mod.record(mod.INPUTS[rid], p)
                [r] = load(p, mod.ROUTE)
                assert r.outcome == "success", (agent, rid, r.failure_reason)
                refs.append(p)
            for n, fault in enumerate(mod.FAULTS, 1):
                case = f"n_{agent}_{n}_{fault['kind']}"
                cdir = out / case
                if cdir.exists():
                    shutil.rmtree(cdir)
                cdir.mkdir()
                failed, control = cdir / f"failed.{ext}", cdir / f"control.{ext}"
                assert fault["input"] not in mod.REFS
                with nkit.planted(fault["id"]):
                    mod.record(mod.INPUTS[fault["input"]], failed)
                mod.record(mod.INPUTS[fault["input"]], control)
                with_refs = cdir / f"with_refs.{ext}"
                if mod.ROUTE == "otlp":
                    nkit.merge_otlp([failed, *refs], with_refs)
                else:
                    nkit.cat_files([failed, *refs], with_refs)
                runs = load(with_refs, mod.ROUTE)
                assert len(runs) == 5 and sum(r.outcome == "failure" for r in runs) == 1, case
                assert sum(r.outcome == "success" for r in runs) == 4, case
                truth = truth_for(case, mod, fault, failed, control)
                for f in (failed, control, with_refs):
                    scan(f)
                (cdir / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
                index.append({k: truth[k] for k in ("case", "agent", "route", "fault_kind", "hops")})
                print(f"{case}: root {truth['root']['name']}#{truth['root']['occurrence']} "
                      f"-> {truth['failure_step']['name']}#{truth['failure_step']['occurrence']} hops {truth['hops']}",
                      flush=True)
    if (out / "index.json").exists() and argv[1:]:
        old = json.loads((out / "index.json").read_text())["cases"]
        keep = [c for c in old if c["case"] not in {i["case"] for i in index}]
        index = keep + index
    (out / "index.json").write_text(json.dumps({"suite": "suite_n", "cases": index}, indent=1) + "\n")
    print(f"{len(index)} cases in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
