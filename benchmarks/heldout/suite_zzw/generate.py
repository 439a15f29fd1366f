"""Generate the suite_zzw held-out cases.

    /work/main/.venv/bin/python benchmarks/heldout/suite_zzw/generate.py OUT [agent-module ...]
"""

import importlib
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import engine  # noqa: E402
import kit  # noqa: E402

AGENTS = ["dog_rounds", "key_kiosk", "cycle_fleet", "storage_lettings",
          "solar_surveys", "shearing_bookings", "organ_restorations", "marsh_birds"]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
IDS = re.compile(r'"(traceId|spanId|parentSpanId)": "[^"]*"')
FORBIDDEN = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.I)


def record(agent, server, input_id, case_id, path, otlp):
    kit.set_active(case_id)
    request = dict(agent.INPUTS[input_id])
    try:
        if agent.ROUTE == "sdk":
            return engine.record_sdk(agent, server, request, path)
        if agent.ROUTE == "langgraph":
            return engine.record_langgraph(agent, server, request, path)
        if agent.ROUTE == "openai_agents":
            return engine.record_agents(agent, server, request, path)
        return engine.record_otlp(agent, server, request, path, otlp)
    finally:
        kit.set_active(None)


def load(path):
    import trajdebug

    return trajdebug.load_runs(path)


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index or 0))


def find(steps, name, occ):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occ, (name, occ, [s.name for s in steps])
    return hits[occ - 1]


def join(agent, paths, out):
    if EXT[agent.ROUTE] == "json":
        spans = []
        for p in paths:
            with open(p) as f:
                spans.extend(json.load(f)["resourceSpans"])
        with open(out, "w") as f:
            json.dump({"resourceSpans": spans}, f)
    else:
        with open(out, "w") as f:
            for p in paths:
                with open(p) as g:
                    f.write(g.read())


def main(argv):
    from trajdebug.testing import FakeModelServer

    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    cases = []
    t0 = time.time()
    with FakeModelServer([]) as server:
        for mod_name in names:
            agent = importlib.import_module(mod_name)
            ext = EXT[agent.ROUTE]
            otlp = engine.OtlpRecorder() if agent.ROUTE == "otlp" else None
            try:
                refdir = os.path.join(out, "_refs", agent.NAME)
                os.makedirs(refdir, exist_ok=True)
                ref_paths = []
                for i, ref in enumerate(agent.REFS):
                    p = os.path.join(refdir, f"ref{i + 1}.{ext}")
                    if os.path.exists(p):
                        os.remove(p)
                    record(agent, server, ref, None, p, otlp)
                    [r] = load(p)
                    assert r.outcome == "success", (agent.NAME, ref, r.outcome)
                    ref_paths.append(p)
                for case in agent.CASES:
                    cdir = os.path.join(out, case["id"])
                    os.makedirs(cdir, exist_ok=True)
                    failed, control = os.path.join(cdir, f"failed.{ext}"), os.path.join(cdir, f"control.{ext}")
                    for p in (failed, control):
                        if os.path.exists(p):
                            os.remove(p)
                    ctx = record(agent, server, case["input"], case["id"], failed, otlp)
                    record(agent, server, case["input"], None, control, otlp)
                    [fr] = load(failed)
                    [cr] = load(control)
                    assert fr.outcome == "failure", (case["id"], fr.outcome)
                    assert cr.outcome == "success", (case["id"], cr.outcome)
                    assert ctx.root is not None and ctx.failure is not None, (case["id"], ctx.root, ctx.failure)
                    steps = ordered(fr)
                    ri = find(steps, *ctx.root)
                    fi = find(steps, *ctx.failure)
                    assert steps[ri].status == "ok", (case["id"], steps[ri].status)
                    assert steps[fi].status == "error", (case["id"], steps[fi].status)
                    assert fi > ri and steps[fi].start_ns >= steps[ri].start_ns, (case["id"], ri, fi)
                    wr = os.path.join(cdir, f"with_refs.{ext}")
                    join(agent, [failed] + ref_paths, wr)
                    runs = load(wr)
                    assert len(runs) == 5 and sum(r.outcome == "failure" for r in runs) == 1, case["id"]
                    truth = {
                        "case": case["id"], "agent": agent.NAME, "route": agent.ROUTE, "fault_kind": case["kind"],
                        "root": {"name": ctx.root[0], "occurrence": ctx.root[1], "kind": steps[ri].kind},
                        "failure": {"name": ctx.failure[0], "occurrence": ctx.failure[1]},
                        "hops": fi - ri, "description": case["desc"],
                    }
                    with open(os.path.join(cdir, "truth.json"), "w") as f:
                        json.dump(truth, f, indent=2, sort_keys=True)
                    cases.append(case["id"])
                    print(f"{case['id']:14} {case['kind']:22} root={ctx.root} fail={ctx.failure} hops={fi - ri} "
                          f"steps={len(steps)}", flush=True)
            finally:
                if otlp is not None:
                    otlp.close()
    import shutil

    shutil.rmtree(os.path.join(out, "_refs"), ignore_errors=True)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": cases}, f, indent=2)
    for dirpath, _dirs, files in os.walk(out):
        for fn in files:
            with open(os.path.join(dirpath, fn), errors="replace") as f:
                text = f.read()
            if fn != "truth.json":
                text = IDS.sub("", text)
                m = FORBIDDEN.search(text)
                assert m is None, (dirpath, fn, text[max(0, m.start() - 80):m.end() + 80])
            else:
                t = json.loads(text)
                for field in ("description",):
                    m = FORBIDDEN.search(t[field])
                    assert m is None, (dirpath, t[field])
    print(f"{len(cases)} cases in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
