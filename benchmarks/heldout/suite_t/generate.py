"""Generate held-out suite T: python benchmarks/heldout/suite_t/generate.py OUT [agent ...]"""
import importlib
import json
import os
import re
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

from benchmarks.heldout.suite_t import kit  # noqa: E402

from trajdebug.sources.load import load_runs  # noqa: E402


AGENTS = {  # agent -> (module, route)
    "hatchery": ("agent_hatchery", "sdk"),
    "marathon": ("agent_marathon", "langgraph"),
    "quarry": ("agent_quarry", "openai_agents"),
    "costume": ("agent_costume", "otlp"),
    "pool": ("agent_pool", "sdk"),
    "extinguisher": ("agent_extinguisher", "langgraph"),
    "regatta": ("agent_regatta", "openai_agents"),
    "linen": ("agent_linen", "otlp"),
}
BANNED = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.I)
ID_KEYS = re.compile(r'"(traceId|spanId|parentSpanId|trace_id|span_id|parent_span_id)":\s*"[^"]*"')


def ext(route):
    return "json" if route == "otlp" else "jsonl"


def record(mod, route, inp, path):
    if os.path.exists(path):
        os.remove(path)
    mod.run_agent(inp, str(path))


def merge(paths, out, route):
    if route == "otlp":
        env = {"resourceSpans": []}
        for p in paths:
            env["resourceSpans"] += json.loads(Path(p).read_text())["resourceSpans"]
        Path(out).write_text(json.dumps(env))
    else:
        Path(out).write_text("".join(Path(p).read_text() for p in paths))


def ordered(run):
    return [s for _, _, s in sorted((s.start_ns, i, s) for i, s in enumerate(run.steps))]


def text(v):
    return json.dumps(v)


def truth_for(case, agent, route, kind, root_name, marker, failed_path, control_path):
    [run] = load_runs(failed_path)
    [ctrl] = load_runs(control_path)
    assert run.outcome == "failure", (case, run.outcome)
    assert ctrl.outcome == "success", (case, ctrl.outcome, ctrl.failure_reason)
    steps = ordered(run)
    root_i = next(i for i, s in enumerate(steps) if s.name == root_name and marker in text(s.output))
    root = steps[root_i]
    assert not any(s.name == root_name and marker in text(s.output) for s in ctrl.steps), case
    failed_ids = [e.step_id for e in run.errors if any(getattr(st, "stage", None) == "failed" or
                  (isinstance(st, dict) and st.get("stage") == "failed") for st in e.stages)]
    assert failed_ids, case
    fid = failed_ids[0]
    fail_i = next(i for i, s in enumerate(steps) if s.step_id == fid)
    assert fail_i > root_i, (case, root_i, fail_i)
    fail = steps[fail_i]
    parents = {s.parent_id for s in steps if s.parent_id}
    hops = sum(1 for s in steps[root_i + 1:fail_i + 1] if s.step_id not in parents and s.kind != "agent")
    occ = sum(1 for s in steps[:root_i + 1] if s.name == root_name)
    focc = sum(1 for s in steps[:fail_i + 1] if s.name == fail.name)
    llm_index = sum(1 for s in steps[:root_i] if s.kind == "llm") + 1 if root.kind == "llm" else None
    return {"case": case, "agent": agent, "route": route, "fault_kind": kind,
            "root": {"name": root_name, "occurrence": occ, "kind": root.kind, "llm_index": llm_index},
            "failure_step": {"name": fail.name, "occurrence": focc}, "hops": hops}


def check_words(path):
    t = ID_KEYS.sub('""', Path(path).read_text())
    m = BANNED.search(t)
    assert not m, (str(path), t[max(0, m.start() - 80):m.end() + 40])


def main(argv):
    out = Path(argv[0]).resolve()
    names = argv[1:] or list(AGENTS)
    out.mkdir(parents=True, exist_ok=True)
    index = []
    tmp = Path(tempfile.mkdtemp(prefix="suite_t_"))
    try:
        for agent in names:
            modname, route = AGENTS[agent]
            mod = importlib.import_module(f"benchmarks.heldout.suite_t.{modname}")
            e = ext(route)
            refs = []
            for j, inp in enumerate(mod.REFS):
                p = tmp / f"{agent}_ref{j}.{e}"
                record(mod, route, inp, p)
                [r] = load_runs(str(p))
                assert r.outcome == "success", (agent, inp, r.failure_reason)
                check_words(p)
                refs.append(p)
            for kind, fid, inp, root_name, marker in mod.FAULTS:
                case = f"t_{agent}_{kind}"
                d = out / case
                d.mkdir(parents=True, exist_ok=True)
                failed, control, with_refs = d / f"failed.{e}", d / f"control.{e}", d / f"with_refs.{e}"
                with kit.planted(fid):
                    record(mod, route, inp, failed)
                record(mod, route, inp, control)
                merge([failed, *refs], with_refs, route)
                runs = load_runs(str(with_refs))
                assert len(runs) == 5 and sum(r.outcome == "failure" for r in runs) == 1, case
                assert sum(r.outcome == "success" for r in runs) == 4, case
                for p in (failed, control, with_refs):
                    check_words(p)
                truth = truth_for(case, agent, route, kind, root_name, marker, str(failed), str(control))
                (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                index.append({"case": case, "agent": agent, "route": route, "fault_kind": kind, "hops": truth["hops"]})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"suite": "suite_t", "cases": index}, indent=2) + "\n")


if __name__ == "__main__":
    t0 = time.time()
    main(sys.argv[1:])
    print(f"generated in {time.time() - t0:.1f} s", file=sys.stderr)
