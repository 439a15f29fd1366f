"""Generate held-out suite R: python benchmarks/heldout/suite_r/generate.py OUT [agent ...]."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
for p in (str(ROOT / "src"), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)
os.environ.setdefault("OTEL_SDK_DISABLED", "false")
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "0"

from benchmarks.heldout.suite_r import kit  # noqa: E402


AGENT_MODULES = ["letterpress", "farrier", "luthier", "playout", "interpreters", "allotments", "tallship", "donors"]
FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)
OTLP_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def load(path: Path):
    from trajdebug.sources.load import load_runs

    fmt = "otlp" if path.suffix == ".json" else None
    return load_runs(str(path), fmt=fmt)


def ordered(run):
    return [s for _, s in sorted(enumerate(run.steps), key=lambda t: (t[1].start_ns, t[0]))]


def out_text(step) -> str:
    return json.dumps(step.output, ensure_ascii=False, default=str)


def truth_for(run, fault: dict) -> dict:
    steps = ordered(run)
    parents = {s.parent_id for s in steps if s.parent_id}
    roots = [i for i, s in enumerate(steps) if s.name == fault["root"] and fault["marker"] in out_text(s)]
    assert roots, f"{fault['id']}: no {fault['root']} step holds {fault['marker']!r}"
    ri = roots[0]
    root = steps[ri]
    failed_ids = [e.step_id for e in run.errors if any(sc.stage == "failed" for sc in e.stages)]
    assert len(set(failed_ids)) == 1, f"{fault['id']}: failed error events at {failed_ids}"
    fi = next(i for i, s in enumerate(steps) if s.step_id == failed_ids[0])
    assert fi > ri, f"{fault['id']}: failure step {steps[fi].name} does not start after the root"
    fail = steps[fi]
    hops = sum(1 for s in steps[ri + 1 : fi + 1] if s.step_id not in parents and s.kind != "agent")
    assert hops >= 1
    llm_index = None
    if root.kind == "llm":
        llm_index = sum(1 for s in steps[:ri] if s.kind == "llm") + 1
    return {
        "root": {
            "name": root.name,
            "occurrence": sum(1 for s in steps[:ri] if s.name == root.name) + 1,
            "kind": root.kind,
            "llm_index": llm_index,
        },
        "failure_step": {"name": fail.name, "occurrence": sum(1 for s in steps[:fi] if s.name == fail.name) + 1},
        "hops": hops,
    }


def scrub_check(path: Path) -> None:
    text = path.read_text()
    if path.suffix == ".json":
        doc = json.loads(text)

        def strip(v):
            if isinstance(v, dict):
                return {k: strip(x) for k, x in v.items() if k not in OTLP_ID_KEYS}
            if isinstance(v, list):
                return [strip(x) for x in v]
            return v

        text = json.dumps(strip(doc))
    m = FORBIDDEN.search(text)
    assert m is None, f"{path}: holds {text[max(0, m.start() - 80) : m.end() + 80]!r}"


def merge(ext: str, parts: list[Path], out: Path) -> None:
    if ext == "jsonl":
        with out.open("w") as f:
            for p in parts:
                f.write(p.read_text())
    else:
        spans = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))


def generate_agent(name: str, out: Path, work: Path) -> list[dict]:
    mod = importlib.import_module(f"benchmarks.heldout.suite_r.apps.{name}")
    ext = mod.EXT
    setup = getattr(mod, "setup", None)
    ctx = setup() if setup else None
    try:
        refs = []
        for k, key in enumerate(mod.REFS):
            p = work / f"{name}-ref{k}.{ext}"
            mod.record(key, p)
            [r] = load(p)
            assert r.outcome == "success", f"{name} reference {key}: {r.outcome} {r.failure_reason}"
            refs.append(p)
        cases = []
        for n, fault in enumerate(mod.FAULTS, 1):
            case = f"{mod.AGENT}-{n}"
            d = out / case
            d.mkdir(parents=True, exist_ok=True)
            failed, control = d / f"failed.{ext}", d / f"control.{ext}"
            for p in (failed, control):
                p.unlink(missing_ok=True)
            with kit.planted(fault["id"]):
                mod.record(fault["order"], failed)
            mod.record(fault["order"], control)
            [fr] = load(failed)
            [cr] = load(control)
            assert fr.outcome == "failure", f"{case}: failed run ended {fr.outcome}"
            assert cr.outcome == "success", f"{case}: control ended {cr.outcome} {cr.failure_reason}"
            truth = truth_for(fr, fault)
            for s in cr.steps:
                assert not (s.name == fault["root"] and fault["marker"] in out_text(s)), f"{case}: control holds marker"
            with_refs = d / f"with_refs.{ext}"
            merge(ext, [*refs, failed], with_refs)
            runs = load(with_refs)
            assert len(runs) == 5 and sum(r.outcome == "failure" for r in runs) == 1, f"{case}: with_refs {[r.outcome for r in runs]}"
            for p in (failed, control, with_refs):
                scrub_check(p)
            t = {"case": case, "agent": mod.AGENT, "route": mod.ROUTE, "fault_kind": fault["kind"], **truth}
            (d / "truth.json").write_text(json.dumps(t, indent=2) + "\n")
            cases.append({"case": case, "agent": mod.AGENT, "route": mod.ROUTE, "fault_kind": fault["kind"], "hops": truth["hops"]})
        return cases
    finally:
        teardown = getattr(mod, "teardown", None)
        if teardown:
            teardown(ctx)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENT_MODULES
    out.mkdir(parents=True, exist_ok=True)
    work = out / "_work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    os.environ.setdefault("TRAJDEBUG_STORE", str(work / "default.db"))
    start = time.monotonic()
    cases = []
    for name in names:
        cases.extend(generate_agent(name, out, work))
    shutil.rmtree(work, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"suite": "suite_r", "cases": cases}, indent=2) + "\n")
    print(f"{len(cases)} cases in {time.monotonic() - start:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
