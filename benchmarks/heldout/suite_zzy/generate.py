"""Generate the suite: `python benchmarks/heldout/suite_zzy/generate.py OUT [agent-module ...]`.

Runs every agent against one FakeModelServer (127.0.0.1, ephemeral port, scripted per run) and writes
OUT/<case>/{failed,control,with_refs}.<ext>, OUT/<case>/truth.json and OUT/index.json.
"""
from __future__ import annotations

import importlib
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the suite's modules import each other by plain name

import kit  # noqa: E402
import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = ["record_shop", "blood_bank", "gritting", "maltings", "framer", "midwifery", "coastguard", "typesetter"]
ROUTE_MODULES = {"sdk": "route_sdk", "langgraph": "route_langgraph", "openai_agents": "route_agents",
                 "otlp": "route_otlp"}
FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


def load(path: Path):
    runs = trajdebug.load_runs(str(path))
    assert runs, f"no runs in {path}"
    return runs


def ordered(run):
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns or 0, p[0]))]


def locate(steps, name, occurrence):
    n = 0
    for i, s in enumerate(steps):
        if s.name == name:
            n += 1
            if n == occurrence:
                return i, s
    raise AssertionError(f"no step {name!r} #{occurrence}")


def check_words(path: Path, skip_key: str | None = None):
    text = path.read_text()
    if skip_key:
        doc = json.loads(text)
        doc.pop(skip_key, None)
        text = json.dumps(doc)
    m = FORBIDDEN.search(text)
    assert not m, f"{path}: recorded text holds {m.group(0)!r}"


def join(paths, out: Path, ext: str):
    if ext == "jsonl":
        out.write_text("".join(p.read_text() for p in paths))
    else:
        docs = [json.loads(p.read_text()) for p in paths]
        out.write_text(json.dumps({"resourceSpans": [rs for d in docs for rs in d.get("resourceSpans", [])]}))


def main(argv):
    out = Path(argv[0])
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    cases = []
    tmp = Path(tempfile.mkdtemp(prefix="suite_zzy_"))
    with FakeModelServer() as server:
        for mod_name in names:
            A = importlib.import_module(mod_name).AGENT
            route = importlib.import_module(ROUTE_MODULES[A.route])
            ext = "json" if A.route == "otlp" else "jsonl"
            inputs = A.inputs()
            kit.ACTIVE = None
            refs = []
            for k, inp in enumerate(inputs[5:]):
                p = tmp / f"{mod_name}_ref{k}.{ext}"
                route.record(A, inp, p, server)
                [r] = load(p)
                assert r.outcome == "success", (mod_name, "reference", k, r.failure_reason)
                refs.append(p)
            for i, case in enumerate(A.cases):
                cid = case["id"]
                d = out / cid
                if d.exists():
                    shutil.rmtree(d)
                d.mkdir()
                kit.ACTIVE = cid
                route.record(A, inputs[i], d / f"failed.{ext}", server)
                kit.ACTIVE = None
                route.record(A, inputs[i], d / f"control.{ext}", server)
                [failed] = load(d / f"failed.{ext}")
                [control] = load(d / f"control.{ext}")
                assert failed.outcome == "failure", (cid, failed.outcome)
                assert control.outcome == "success", (cid, control.failure_reason)
                join([d / f"failed.{ext}", *refs], d / f"with_refs.{ext}", ext)
                both = load(d / f"with_refs.{ext}")
                assert len(both) == 5 and sum(r.outcome == "failure" for r in both) == 1, cid
                steps = ordered(failed)
                rname, rocc = (route.root_of(A, case, steps) if A.route == "openai_agents"
                               else route.root_of(A, case))
                ri, root = locate(steps, rname, rocc)
                fname, focc = route.failure_of(A, case)
                fi, fail = locate(steps, fname, focc)
                assert root.status == "ok", (cid, root.name, root.status)
                assert fail.status == "error", (cid, fail.name, fail.status)
                assert fi > ri and (fail.start_ns or 0) >= (root.start_ns or 0), (cid, ri, fi)
                truth = {"case": cid, "agent": A.name, "route": A.route, "fault_kind": case["kind"],
                         "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
                         "failure": {"name": fname, "occurrence": focc}, "hops": fi - ri,
                         "description": case["description"]}
                (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                for f in (f"failed.{ext}", f"control.{ext}", f"with_refs.{ext}"):
                    check_words(d / f)
                check_words(d / "truth.json", skip_key="fault_kind")
                cases.append(cid)
                print(f"{cid:28s} {A.route:14s} {case['kind']:22s} steps={len(steps):3d} hops={fi - ri:3d} "
                      f"root={rname}#{rocc}", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"cases": cases}, indent=2) + "\n")
    print(f"{len(cases)} cases in {time.time() - started:.1f}s")


if __name__ == "__main__":
    main(sys.argv[1:])
