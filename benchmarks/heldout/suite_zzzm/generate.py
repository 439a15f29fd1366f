"""Generate suite_zzzm: python benchmarks/heldout/suite_zzzm/generate.py OUT [agent-module ...]"""
import importlib, json, os, re, shutil, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

MODULES = ["periscope_yard", "catamaran_charter", "kite_school", "wheelwright",
           "treehouse", "stone_walling", "zookeeper_course", "cordwainer"]
FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|inject|corrupt|planted)\w*", re.I)


def record(m, server, inp, path, switch=None):
    m.ON.clear()
    if switch:
        m.ON.add(switch)
    server.use(m.policy)
    if os.path.exists(path):
        os.remove(path)
    m.run_one(inp, path, server)
    m.ON.clear()
    [run] = trajdebug.load_runs(path)
    return run


def join(paths, dest, ext):
    if ext == "jsonl":
        with open(dest, "w") as f:
            for p in paths:
                f.write(open(p).read())
    else:
        spans = []
        for p in paths:
            spans += json.load(open(p))["resourceSpans"]
        json.dump({"resourceSpans": spans}, open(dest, "w"))


def ordered(run):
    return sorted(run.steps, key=lambda s: s.start_ns or 0)


def nth(steps, name, occ):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occ, (name, occ, [s.name for s in steps])
    return hits[occ - 1]


def main(out, mods):
    os.makedirs(out, exist_ok=True)
    cases = []
    with FakeModelServer(lambda r: "") as server:
        for mod in mods:
            m = importlib.import_module(mod)
            ext = "json" if m.ROUTE == "otlp" else "jsonl"
            scratch = os.path.join(out, "_clean_" + mod)
            os.makedirs(scratch, exist_ok=True)
            clean = []
            for i, inp in enumerate(m.INPUTS):
                p = os.path.join(scratch, f"{i}.{ext}")
                run = record(m, server, inp, p)
                assert run.outcome == "success", (mod, i, run.outcome)
                clean.append(p)
            for c in m.CASES:
                d = os.path.join(out, c["id"])
                os.makedirs(d, exist_ok=True)
                failed = os.path.join(d, f"failed.{ext}")
                run = record(m, server, m.INPUTS[c["input"]], failed, c["switch"])
                assert run.outcome == "failure", (c["id"], run.outcome)
                shutil.copy(clean[c["input"]], os.path.join(d, f"control.{ext}"))
                others = [p for j, p in enumerate(clean) if j != c["input"]]
                join([failed] + others, os.path.join(d, f"with_refs.{ext}"), ext)
                runs = trajdebug.load_runs(os.path.join(d, f"with_refs.{ext}"))
                assert len(runs) == 5 and sum(r.outcome == "failure" for r in runs) == 1, c["id"]
                assert trajdebug.load_runs(os.path.join(d, f"control.{ext}"))[0].outcome == "success"
                steps = ordered(run)
                rname, rocc, rkind = c["root"]
                fname, focc = c["failure"]
                ri, fi = nth(steps, rname, rocc), nth(steps, fname, focc)
                assert steps[ri].status == "ok" and rkind in (None, steps[ri].kind), (c["id"], steps[ri].status, steps[ri].kind)
                rkind = steps[ri].kind
                assert steps[fi].status == "error", (c["id"], fname, steps[fi].status)
                assert fi > ri, (c["id"], ri, fi)
                truth = {"case": c["id"], "agent": m.NAME, "route": m.ROUTE, "fault_kind": c["kind"],
                         "root": {"name": rname, "occurrence": rocc, "kind": rkind},
                         "failure": {"name": fname, "occurrence": focc}, "hops": fi - ri,
                         "description": c["description"]}
                assert not FORBIDDEN.search(c["description"]), c["id"]
                for f in os.listdir(d):
                    text = open(os.path.join(d, f), "rb").read().decode("utf-8", "replace")
                    hit = FORBIDDEN.search(text)
                    assert not hit, (c["id"], f, hit.group(0), text[max(0, hit.start() - 80):hit.end() + 40])
                    assert c["id"] not in text, (c["id"], f)
                json.dump(truth, open(os.path.join(d, "truth.json"), "w"), indent=2)
                cases.append(truth)
            shutil.rmtree(scratch)
    json.dump({"cases": [c["case"] for c in cases]}, open(os.path.join(out, "index.json"), "w"), indent=2)
    return cases


if __name__ == "__main__":
    out = sys.argv[1]
    done = main(out, sys.argv[2:] or MODULES)
    for t in done:
        print(t["case"], t["route"], t["fault_kind"], t["root"]["name"], t["root"]["occurrence"], "->",
              t["failure"]["name"], t["hops"])
