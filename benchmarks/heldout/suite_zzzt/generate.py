"""Generate suite_zzzt: 8 agents x 5 cases of failing agent runs with their truth.

Usage: python benchmarks/heldout/suite_zzzt/generate.py OUT [agent-module ...]
"""
import asyncio
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
AGENTS = ["furrier", "glovemaker", "quill_ink", "wax_seal", "swordsmith", "chandelier", "cellarmaster", "incense"]
FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|inject|corrupt|planted)\w*", re.IGNORECASE)
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}

warnings.filterwarnings("ignore")


def load_agent(name):
    name = os.path.splitext(os.path.basename(name))[0]
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.MODULE = name
    return mod


_OTEL = {}


def otel():
    if not _OTEL:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _OTEL.update(exporter=exporter, provider=provider)
    return _OTEL


def record(agent, inp, server, path):
    """Run one input of one agent; write its run to `path`."""
    server.use(agent.policy)
    if agent.ROUTE == "sdk":
        try:
            agent.run(inp, server, path)
        except Exception:
            pass
    elif agent.ROUTE == "langgraph":
        from trajdebug.integrations.langchain import TrajdebugTracer

        tracer = TrajdebugTracer(path=path, name=agent.NAME, task=agent.task(inp))
        try:
            agent.run(inp, server, tracer)
        except Exception:
            pass
    elif agent.ROUTE == "openai_agents":
        from agents.tracing import set_trace_processors

        from trajdebug.integrations.openai_agents import TrajdebugProcessor

        processor = TrajdebugProcessor(path=path, name=agent.NAME, task=agent.task(inp))
        set_trace_processors([processor])
        try:
            asyncio.run(agent.run(inp, server))
        except Exception:
            pass
        finally:
            set_trace_processors([])
    elif agent.ROUTE == "otlp":
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        o = otel()
        o["exporter"].clear()
        tracer = o["provider"].get_tracer(agent.NAME)
        try:
            agent.run(inp, server, tracer)
        except Exception:
            pass
        doc = MessageToDict(encode_spans(o["exporter"].get_finished_spans()))
        with open(path, "w") as f:
            json.dump(doc, f)
    else:
        raise ValueError(agent.ROUTE)
    import trajdebug

    trajdebug.flush()


def join(paths, out, route):
    if route == "otlp":
        doc = {"resourceSpans": []}
        for p in paths:
            with open(p) as f:
                doc["resourceSpans"].extend(json.load(f)["resourceSpans"])
        with open(out, "w") as f:
            json.dump(doc, f)
    else:
        with open(out, "w") as f:
            for p in paths:
                with open(p) as g:
                    f.write(g.read())


def one(path):
    import trajdebug

    runs = trajdebug.load_runs(path)
    assert len(runs) == 1, (path, len(runs))
    return runs[0]


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "src"))
    import trajdebug
    from trajdebug.testing import FakeModelServer

    os.makedirs(out, exist_ok=True)
    case_ids = []
    scratch = tempfile.mkdtemp(prefix="runs-")
    try:
        with FakeModelServer() as server:
            for name in names:
                agent = load_agent(name)
                ext = EXT[agent.ROUTE]
                agent.MODE = None
                controls = []
                for i, inp in enumerate(agent.INPUTS):
                    p = os.path.join(scratch, f"{agent.MODULE}-p{i}.{ext}")
                    record(agent, inp, server, p)
                    r = one(p)
                    assert r.outcome == "success", (agent.MODULE, i, r.outcome, r.failure_reason)
                    controls.append(p)
                for n, case in enumerate(agent.CASES, 1):
                    cid = f"zzzt_{agent.MODULE}_{n:02d}"
                    d = os.path.join(out, cid)
                    os.makedirs(d, exist_ok=True)
                    tmp = os.path.join(scratch, f"{agent.MODULE}-f{n}.{ext}")
                    agent.MODE = case["mode"]
                    try:
                        record(agent, agent.INPUTS[case["input"]], server, tmp)
                    finally:
                        agent.MODE = None
                    failed = os.path.join(d, f"failed.{ext}")
                    shutil.copy(tmp, failed)
                    shutil.copy(controls[case["input"]], os.path.join(d, f"control.{ext}"))
                    refs = [tmp] + [c for j, c in enumerate(controls) if j != case["input"]]
                    join(refs, os.path.join(d, f"with_refs.{ext}"), agent.ROUTE)
                    truth = check_case(cid, agent, case, d, ext)
                    with open(os.path.join(d, "truth.json"), "w") as f:
                        json.dump(truth, f, indent=2)
                    case_ids.append(cid)
                    print(f"{cid}: {truth['fault_kind']} root {truth['root']['name']}#{truth['root']['occurrence']} "
                          f"-> {truth['failure']['name']}#{truth['failure']['occurrence']} hops {truth['hops']}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": case_ids}, f, indent=2)
    print(f"{len(case_ids)} cases written to {out}")
    return 0


def check_case(cid, agent, case, d, ext):
    import trajdebug

    run = one(os.path.join(d, f"failed.{ext}"))
    control = one(os.path.join(d, f"control.{ext}"))
    assert run.outcome == "failure", (cid, run.outcome)
    assert control.outcome == "success", (cid, control.outcome)
    refs = trajdebug.load_runs(os.path.join(d, f"with_refs.{ext}"))
    assert len(refs) == 5, (cid, len(refs))
    assert [r.outcome for r in refs].count("failure") == 1, (cid, [r.outcome for r in refs])
    steps = sorted(run.steps, key=lambda s: (s.start_ns, run.steps.index(s)))
    rname, rocc = case["root"]
    same = [s for s in steps if s.name == rname]
    if isinstance(rocc, dict):  # the occurrence whose input holds these values
        hits = [n for n, s in enumerate(same, 1) if all(
            f'"{k}": {json.dumps(v)}' in json.dumps(s.input, default=str) or f"'{k}': {v!r}" in json.dumps(s.input, default=str)
            for k, v in rocc.items())]
        if len(hits) > 1:  # a retried call: the attempt that returned
            hits = [n for n in hits if same[n - 1].status == "ok"]
        assert len(hits) == 1, (cid, rname, rocc, hits)
        rocc = hits[0]
    assert len(same) >= rocc, (cid, rname, len(same), [s.name for s in steps])
    root = same[rocc - 1]
    assert root.status == "ok", (cid, rname, root.status)
    errs = [s for s in steps if s.status == "error"]
    assert errs, cid
    fail = errs[-1]
    if "failure" in case:
        fname, focc = case["failure"]
        fail = [s for s in steps if s.name == fname][focc - 1]
        assert fail.status == "error", (cid, fname)
    ri, fi = steps.index(root), steps.index(fail)
    assert fi > ri, (cid, ri, fi, [(s.name, s.status) for s in steps])
    focc = [s for s in steps if s.name == fail.name].index(fail) + 1
    truth = {
        "case": cid, "agent": agent.NAME, "route": agent.ROUTE, "fault_kind": case["kind"],
        "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
        "failure": {"name": fail.name, "occurrence": focc},
        "hops": fi - ri, "description": case["description"],
    }
    assert not FORBIDDEN.search(case["description"]), (cid, case["description"])
    for fn in os.listdir(d):
        if fn == "truth.json":
            continue
        with open(os.path.join(d, fn)) as f:
            text = f.read()
        m = FORBIDDEN.search(text)
        assert not m, (cid, fn, text[max(0, m.start() - 80): m.end() + 80])
        assert cid not in text, (cid, fn)
    return truth


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
