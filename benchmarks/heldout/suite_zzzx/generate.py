"""Generate suite_zzzx: 8 agents x 5 cases of failing runs with their controls and references.

python benchmarks/heldout/suite_zzzx/generate.py OUT [agent-module ...]
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "..", "src"))
if SRC not in sys.path:
    sys.path.insert(0, SRC)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENT_FILES = [
    "chairmaker.py", "sign_painter.py", "mapmaker.py", "music_box.py",
    "rocking_horse.py", "hand_fan.py", "fresco.py", "umbrella.py",
]
FORBIDDEN = re.compile(r"\b(fault\w*|bug|bugs|bugg\w*|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.I)
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}


def load_agent(name: str):
    path = name if os.path.exists(name) else os.path.join(HERE, "agents", name if name.endswith(".py") else name + ".py")
    mod_name = "suite_zzzx_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    spec.loader.exec_module(mod)
    return mod


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def locate(steps, name, occurrence):
    n = 0
    for i, s in enumerate(steps):
        if s.name == name:
            n += 1
            if n == occurrence:
                return i, s
    raise AssertionError(f"no step {name!r} #{occurrence}")


def record(mod, server, inp, path, switch):
    mod.SWITCH = switch
    try:
        server.use(mod.brain)
        mod.record(inp, path, server)
    except Exception as exc:  # the failing run raises out of its agent; the record is what counts
        if switch is None:
            raise
        return exc
    finally:
        mod.SWITCH = None


def combine(ext, paths, dest):
    if ext == "jsonl":
        with open(dest, "w") as out:
            for p in paths:
                with open(p) as f:
                    out.write(f.read())
    else:
        spans = []
        for p in paths:
            with open(p) as f:
                spans.extend(json.load(f)["resourceSpans"])
        with open(dest, "w") as out:
            json.dump({"resourceSpans": spans}, out)


def check_words(path):
    with open(path) as f:
        text = f.read()
    m = FORBIDDEN.search(text)
    assert m is None, f"{path}: holds {m.group(0)!r} near {text[max(0, m.start() - 80):m.end() + 80]!r}"


def main(argv):
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENT_FILES
    os.makedirs(out, exist_ok=True)
    index = []
    tmp = tempfile.mkdtemp(prefix="zzzx-")
    try:
        with FakeModelServer() as server:
            for name in names:
                mod = load_agent(name)
                ext = "json" if mod.ROUTE == "otlp" else "jsonl"
                passing = []
                for i, inp in enumerate(mod.INPUTS):
                    p = os.path.join(tmp, f"{mod.NAME}-pass-{i}.{ext}")
                    record(mod, server, inp, p, None)
                    [r] = trajdebug.load_runs(p)
                    assert r.outcome == "success", (mod.NAME, i, r.failure_reason)
                    assert r.name == mod.NAME, (r.name, mod.NAME)
                    passing.append(p)
                assert len(mod.CASES) == 5
                for case in mod.CASES:
                    cid = case["id"]
                    i = case["input"]
                    d = os.path.join(out, cid)
                    shutil.rmtree(d, ignore_errors=True)
                    os.makedirs(d)
                    failed = os.path.join(d, f"failed.{ext}")
                    recorded = os.path.join(tmp, f"{cid}-failed.{ext}")
                    record(mod, server, mod.INPUTS[i], recorded, case["switch"])
                    shutil.copyfile(recorded, failed)
                    shutil.copyfile(passing[i], os.path.join(d, f"control.{ext}"))
                    combine(ext, [failed] + [p for j, p in enumerate(passing) if j != i], os.path.join(d, f"with_refs.{ext}"))
                    [run] = trajdebug.load_runs(failed)
                    assert run.outcome == "failure", (cid, run.outcome)
                    assert run.name == mod.NAME
                    [ctl] = trajdebug.load_runs(os.path.join(d, f"control.{ext}"))
                    assert ctl.outcome == "success"
                    refs = trajdebug.load_runs(os.path.join(d, f"with_refs.{ext}"))
                    assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, cid
                    steps = ordered(run)
                    rname, rocc = case["root"]
                    ri, rs = locate(steps, rname, rocc)
                    assert rs.status == "ok", (cid, rname, rs.status)
                    if case.get("root_holds"):  # pins the occurrence: the root step's input or output says this
                        seen = json.dumps([rs.input, rs.output], default=str)
                        assert case["root_holds"] in seen, (cid, case["root_holds"], seen[:300])
                    fname, focc = case["failure"]
                    fi, fs = locate(steps, fname, focc)
                    assert fs.status == "error", (cid, fname, fs.status)
                    assert fi > ri and fs.start_ns >= rs.start_ns, (cid, ri, fi)
                    assert case["kind"] in KINDS
                    truth = {
                        "case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["kind"],
                        "root": {"name": rname, "occurrence": rocc, "kind": rs.kind},
                        "failure": {"name": fname, "occurrence": focc},
                        "hops": fi - ri, "description": case["description"],
                    }
                    assert not FORBIDDEN.search(case["description"]), cid
                    with open(os.path.join(d, "truth.json"), "w") as f:
                        json.dump(truth, f, indent=2)
                    for fn in ("failed", "control", "with_refs"):
                        check_words(os.path.join(d, f"{fn}.{ext}"))
                    extra = sorted(set(os.listdir(d)) - {f"failed.{ext}", f"control.{ext}", f"with_refs.{ext}", "truth.json"})
                    assert not extra, (cid, extra)
                    index.append(cid)
                    print(f"{cid:28s} {case['kind']:22s} root={rname}#{rocc}({rs.kind}) fail={fname}#{focc} hops={fi - ri}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": index}, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1:])
