"""Generate held-out suite M: eight agents, five planted silent faults each (40 cases).

    python benchmarks/heldout/suite_m/generate.py OUT [agent ...]

Per case, OUT/<case>/: failed.<ext>, control.<ext>, with_refs.<ext>, truth.json; and OUT/index.json.
<ext> is jsonl for the sdk, langgraph and openai_agents routes, json (OTLP/JSON) for otlp.
"""

from __future__ import annotations

import importlib
import json
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
for p in (str(REPO / "src"), str(HERE.parent)):
    if p not in sys.path:
        sys.path.insert(0, p)

os.environ.setdefault("OPENAI_API_KEY", "not-needed")
warnings.filterwarnings("ignore")

from suite_m import kit  # noqa: E402
from suite_m.routes import Env, record  # noqa: E402


AGENT_MODULES = ["vineyard", "railyard", "mortgage", "aquarium", "customs", "vetclinic", "brewery", "payroll"]
AGENT_NAMES = {
    "vineyard": "vineyard-harvest", "railyard": "train-builder", "mortgage": "mortgage-underwriter",
    "aquarium": "aquarium-lss-round", "customs": "customs-broker", "vetclinic": "vet-clinic-desk",
    "brewery": "brewhouse-scheduler", "payroll": "payroll-run",
}
# The slowest agents first, so the worker pool finishes together.
COST_ORDER = ["customs", "aquarium", "vetclinic", "mortgage", "payroll", "brewery", "railyard", "vineyard"]
BANNED = re.compile(r"(?<![A-Za-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)
ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


def _ext(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def _load(path: Path, fmt: str | None = None):
    from trajdebug.sources.load import load_runs

    return load_runs(path)


def _scan_text(path: Path, route: str) -> str:
    text = path.read_text()
    if route != "otlp":
        return text

    def strip(v):
        if isinstance(v, dict):
            return {k: ("" if k in ID_KEYS else strip(x)) for k, x in v.items()}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return json.dumps(strip(json.loads(text)))


def _merge(paths: list[Path], out: Path, route: str) -> None:
    if route == "otlp":
        spans: list = []
        for p in paths:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(p.read_text() for p in paths))


def _order(run):
    idx = {id(s): i for i, s in enumerate(run.steps)}
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, idx[id(s)]))


def _out_text(step) -> str:
    return json.dumps(step.output, ensure_ascii=False, sort_keys=True)


def truth_for(case: dict, agent: str, route: str, failed: Path, control: Path) -> dict:
    [run] = _load(failed)
    [ctl] = _load(control)
    assert run.outcome == "failure", (case["case"], run.outcome, run.failure_reason)
    assert ctl.outcome == "success", (case["case"], ctl.outcome, ctl.failure_reason)
    steps = _order(run)
    parents = {s.parent_id for s in steps if s.parent_id}
    containers = {s.step_id for s in steps if s.step_id in parents or s.kind == "agent"}
    marker = case["marker"]
    name = case["root"]
    same = [s for s in steps if s.name == name]
    hits = [i for i, s in enumerate(same) if marker in _out_text(s)]
    assert hits, (case["case"], f"no {name!r} step holds {marker!r}", [s.name for s in steps])
    root = same[hits[0]]
    assert not any(marker in _out_text(s) for s in _order(ctl) if s.name == name), (
        case["case"],
        "control holds the marker",
    )
    failed_events = [e for e in run.errors if any(st.stage == "failed" for st in e.stages)]
    assert len(failed_events) == 1, (case["case"], [(e.type, e.message) for e in run.errors])
    fstep = next(s for s in steps if s.step_id == failed_events[0].step_id)
    pos = {s.step_id: i for i, s in enumerate(steps)}
    r, f = pos[root.step_id], pos[fstep.step_id]
    assert f > r, (case["case"], "failure before root", root.name, fstep.name)
    if case.get("failure"):
        assert fstep.name == case["failure"], (case["case"], fstep.name, failed_events[0].message)
    assert fstep.step_id not in containers, (case["case"], "failure step is a container", fstep.name)
    hops = sum(1 for s in steps[r + 1 : f + 1] if s.step_id not in containers)
    llm_index = None
    if root.kind == "llm":
        llm_index = sum(1 for s in steps[:r] if s.kind == "llm") + 1
    f_occ = [s.step_id for s in steps if s.name == fstep.name].index(fstep.step_id) + 1
    return {
        "case": case["case"],
        "agent": agent,
        "route": route,
        "fault_kind": case["kind"],
        "root": {"name": root.name, "occurrence": hits[0] + 1, "kind": root.kind, "llm_index": llm_index},
        "failure_step": {"name": fstep.name, "occurrence": f_occ},
        "hops": hops,
    }


def _generate_agent(modname: str, out: str) -> list[dict]:
    """Record one agent's references and cases into ``out`` (runs in its own process)."""
    t0 = time.perf_counter()
    out_path = Path(out)
    index = []
    work = Path(tempfile.mkdtemp(prefix=f"suite_m_{modname}_"))
    try:
        with Env() as env:
            mod = importlib.import_module(f"suite_m.{modname}")
            assert mod.AGENT == AGENT_NAMES[modname], modname
            ext = _ext(mod.ROUTE)
            refs = []
            for k, inp in enumerate(mod.REFERENCES):
                p = work / f"ref{k}.{ext}"
                record(mod, inp, p, env)
                [r] = _load(p)
                assert r.outcome == "success", (modname, "reference", k, r.failure_reason)
                refs.append(p)
            for case in mod.CASES:
                cdir = out_path / case["case"]
                if cdir.exists():
                    shutil.rmtree(cdir)
                cdir.mkdir(parents=True)
                inp = mod.INPUTS[case["input"]]
                failed, control = cdir / f"failed.{ext}", cdir / f"control.{ext}"
                with kit.planted(case["fid"]):
                    record(mod, inp, failed, env)
                record(mod, inp, control, env)
                truth = truth_for(case, mod.AGENT, mod.ROUTE, failed, control)
                with_refs = cdir / f"with_refs.{ext}"
                _merge([failed, *refs], with_refs, mod.ROUTE)
                runs = _load(with_refs)
                outcomes = [r.outcome for r in runs]
                assert len(runs) == 5, (case["case"], len(runs))
                assert outcomes.count("failure") == 1 and outcomes.count("success") == 4, (case["case"], outcomes)
                assert {r.name for r in runs} == {mod.AGENT}, (case["case"], {r.name for r in runs})
                for p in (failed, control, with_refs):
                    text = _scan_text(p, mod.ROUTE)
                    m = BANNED.search(text)
                    assert m is None, (case["case"], p.name, text[max(0, m.start() - 80) : m.end() + 80] if m else "")
                (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                index.append({"case": case["case"], "agent": mod.AGENT, "route": mod.ROUTE,
                              "fault_kind": case["kind"], "hops": truth["hops"]})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if os.environ.get("SUITE_M_TIMING"):
        print(f"  {modname}: {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return index


def generate(out: Path, only: list[str] | None = None, jobs: int | None = None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    mods = [m for m in AGENT_MODULES if not only or m in only or AGENT_NAMES[m] in only]
    jobs = jobs or int(os.environ.get("SUITE_M_JOBS", "0")) or min(len(mods), max(2, (os.cpu_count() or 1) + 1))
    results: dict[str, list[dict]] = {}
    if jobs <= 1:
        for m in mods:
            results[m] = _generate_agent(m, str(out))
    else:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            order = sorted(mods, key=lambda m: COST_ORDER.index(m) if m in COST_ORDER else -1)
            futures = {m: pool.submit(_generate_agent, m, str(out)) for m in order}
            for m, f in futures.items():
                results[m] = f.result()
    index = [row for m in mods for row in results[m]]
    doc = {"suite": "suite_m", "cases": index}
    (out / "index.json").write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--modules":
        AGENT_MODULES[:] = argv[1].split(",")
        argv = argv[2:]
    if not argv:
        print(__doc__)
        return 2
    t0 = time.perf_counter()
    doc = generate(Path(argv[0]), argv[1:] or None)
    print(f"suite_m: {len(doc['cases'])} cases in {time.perf_counter() - t0:.1f}s -> {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
