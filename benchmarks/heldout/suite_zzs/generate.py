"""Generate suite_zzs: python benchmarks/heldout/suite_zzs/generate.py OUT [agent-module ...]"""
import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("OPENAI_API_KEY", "not-needed")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

import kit  # noqa: E402

AGENTS = ["rail_orders", "maple_batches", "cricket_fixtures", "lido_sessions",
          "punting_trips", "icecream_round", "rugby_catering", "market_pitches"]
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}
WORDS = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


def ext(route):
    return "json" if route == "otlp" else "jsonl"


def record(mod, server, inp, path):
    if os.path.exists(path):
        os.remove(path)
    try:
        mod.record(server, inp, path)
    except Exception:  # the validator's raise: the run is recorded as failed
        pass
    assert os.path.exists(path), path


def load(path):
    return trajdebug.load_runs(path)


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


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index or 0))


def find(steps, name, occ):
    same = [i for i, s in enumerate(steps) if s.name == name]
    assert len(same) >= occ, f"{name} #{occ} not recorded ({len(same)} found)"
    return same[occ - 1]


def check_words(path):
    with open(path) as f:
        text = f.read()
    m = WORDS.search(text)
    assert m is None, f"{path}: recorded text holds {m.group(0)!r} near {text[max(0, m.start()-80):m.end()+80]!r}"


def main(argv):
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="suite_zzs_")
    cases = []
    t0 = time.time()
    with FakeModelServer([]) as server:
        for name in names:
            mod = importlib.import_module(name)
            e = ext(mod.ROUTE)
            kit.select(None)
            refs = []
            for i, key in enumerate(mod.REFS):
                p = os.path.join(tmp, f"{name}_ref{i}.{e}")
                record(mod, server, mod.INPUTS[key], p)
                [r] = load(p)
                assert r.outcome == "success", (name, key, r.failure_reason)
                refs.append(p)
            for case in mod.CASES:
                cid = case["id"]
                assert case["kind"] in KINDS and case["input"] not in mod.REFS
                d = os.path.join(out, cid)
                os.makedirs(d, exist_ok=True)
                failed, control, both = (os.path.join(d, f"{n}.{e}") for n in ("failed", "control", "with_refs"))
                kit.select(cid)
                record(mod, server, mod.INPUTS[case["input"]], failed)
                kit.select(None)
                record(mod, server, mod.INPUTS[case["input"]], control)
                join([failed] + refs, both, mod.ROUTE)
                [fr] = load(failed)
                [cr] = load(control)
                assert fr.outcome == "failure", (cid, "failed run did not fail")
                assert cr.outcome == "success", (cid, "control failed", cr.failure_reason)
                runs = load(both)
                assert len(runs) == 5 and sum(r.outcome == "failure" for r in runs) == 1, cid
                steps = ordered(fr)
                rn, ro = case["root"]
                fn, fo = case["failure"]
                ri, fi = find(steps, rn, ro), find(steps, fn, fo)
                assert steps[ri].status == "ok", (cid, "root status", steps[ri].status)
                assert steps[fi].status == "error", (cid, "failure step status", steps[fi].status)
                assert steps[fi].start_ns > steps[ri].start_ns and fi > ri, cid
                csteps = ordered(cr)
                same = [s for s in csteps if s.name == rn]
                if len(same) >= ro:  # the root answers otherwise than in the control run of the same input
                    twin = same[ro - 1]
                    assert (twin.input, twin.output) != (steps[ri].input, steps[ri].output), (cid, "root same as control")
                for p in (failed, control, both):
                    check_words(p)
                truth = {"case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["kind"],
                         "root": {"name": rn, "occurrence": ro, "kind": steps[ri].kind},
                         "failure": {"name": fn, "occurrence": fo}, "hops": fi - ri,
                         "description": case["description"]}
                with open(os.path.join(d, "truth.json"), "w") as f:
                    json.dump(truth, f, indent=2, sort_keys=True)
                cases.append(cid)
                print(f"{cid:28s} {case['kind']:22s} steps={len(steps):3d} hops={fi - ri:3d} root={rn}#{ro}")
    kit.select(None)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": cases}, f, indent=2)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(cases)} cases in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main(sys.argv[1:])
