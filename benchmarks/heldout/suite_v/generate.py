"""Generate held-out suite V: python benchmarks/heldout/suite_v/generate.py OUT [agent ...]."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
for p in (str(ROOT / "src"), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)
os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "0"
warnings.filterwarnings("ignore")

from benchmarks.heldout.suite_v import kit  # noqa: E402
from trajdebug.sources.load import load_runs  # noqa: E402

AGENTS = ["sugarhouse", "dyehouse", "scaffold", "tidegauge", "wedding", "lockers", "yacht", "weighbridge"]
BANNED = re.compile(r"(?<![A-Za-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)
OTLP_IDS = re.compile(r'"(traceId|spanId|parentSpanId|trace_id|span_id|parent_span_id)"\s*:\s*"[^"]*"')


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def ordered(run):
    return [s for _, s in sorted(enumerate(run.steps), key=lambda t: (t[1].start_ns, t[0]))]


def out_text(step) -> str:
    return json.dumps(step.output, ensure_ascii=False, sort_keys=False)


def load_one(path: Path, route: str):
    runs = load_runs(str(path), fmt="otlp" if route == "otlp" else None)
    assert len(runs) == 1, (path, len(runs))
    return runs[0]


def truth_for(case: str, mod, spec: dict, failed, control) -> dict:
    steps = ordered(failed)
    marker = spec["marker"]
    roots = [s for s in steps if s.name == spec["root"] and marker in out_text(s)]
    assert roots, (case, "no root step holds the marker", spec["root"], marker)
    root = roots[0]
    same = [s for s in steps if s.name == root.name]
    occurrence = same.index(root) + 1
    llm_index = None
    if root.kind == "llm":
        llm_index = sum(1 for s in steps if s.kind == "llm" and steps.index(s) < steps.index(root)) + 1
    for s in ordered(control):
        assert not (s.name == root.name and marker in out_text(s)), (case, "control holds the marker")
    failing = [e for e in failed.errors if any(st.stage == "failed" for st in e.stages)]
    assert failing, (case, "no failed error event")
    fstep_id = failing[0].step_id
    fstep = next(s for s in steps if s.step_id == fstep_id)
    fsame = [s for s in steps if s.name == fstep.name]
    parents = {s.parent_id for s in steps if s.parent_id}
    i_root, i_fail = steps.index(root), steps.index(fstep)
    assert i_fail > i_root and fstep.start_ns >= root.start_ns, (case, "failure step does not start after the root")
    hops = sum(
        1 for s in steps[i_root + 1 : i_fail + 1] if s.step_id not in parents and s.kind != "agent"
    )
    return {
        "case": case,
        "agent": mod.NAME,
        "route": mod.ROUTE,
        "fault_kind": spec["kind"],
        "root": {"name": root.name, "occurrence": occurrence, "kind": root.kind, "llm_index": llm_index},
        "failure_step": {"name": fstep.name, "occurrence": fsame.index(fstep) + 1},
        "hops": hops,
    }


def check_words(path: Path, route: str) -> None:
    text = path.read_text()
    if route == "otlp":
        text = OTLP_IDS.sub("", text)
    m = BANNED.search(text)
    assert not m, (str(path), text[max(0, m.start() - 80) : m.end() + 80])


def generate_agent(name: str, out: Path) -> list[dict]:
    mod = importlib.import_module(f"benchmarks.heldout.suite_v.v_agents.{name}")
    ext = ext_of(mod.ROUTE)
    tmp = out / f"_refs_{name}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    entries = []
    with mod.Harness() as h:
        ref_paths = []
        for i, inp in enumerate(mod.REFS):
            p = tmp / f"ref{i}.{ext}"
            h.record(inp, p)
            r = load_one(p, mod.ROUTE)
            assert r.outcome == "success", (name, "reference", i, r.failure_reason)
            ref_paths.append(p)
        for spec in mod.CASES:
            case = f"{name}_{spec['kind']}"
            cdir = out / case
            cdir.mkdir(parents=True, exist_ok=True)
            failed_p, control_p, refs_p = (cdir / f"{n}.{ext}" for n in ("failed", "control", "with_refs"))
            for p in (failed_p, control_p, refs_p):
                if p.exists():
                    p.unlink()
            with kit.planted(spec["fault"]):
                h.record(spec["input"], failed_p)
            h.record(spec["input"], control_p)
            failed = load_one(failed_p, mod.ROUTE)
            control = load_one(control_p, mod.ROUTE)
            assert failed.outcome == "failure", (case, failed.outcome)
            assert control.outcome == "success", (case, control.outcome, control.failure_reason)
            if mod.ROUTE == "otlp":
                envs = [json.loads(failed_p.read_text())] + [json.loads(p.read_text()) for p in ref_paths]
                refs_p.write_text(json.dumps({"resourceSpans": [rs for e in envs for rs in e["resourceSpans"]]}))
            else:
                refs_p.write_text(failed_p.read_text() + "".join(p.read_text() for p in ref_paths))
            both = load_runs(str(refs_p), fmt="otlp" if mod.ROUTE == "otlp" else None)
            assert len(both) == 5, (case, len(both))
            assert sorted(r.outcome for r in both) == ["failure"] + ["success"] * 4, case
            truth = truth_for(case, mod, spec, failed, control)
            for p in (failed_p, control_p, refs_p):
                check_words(p, mod.ROUTE)
            (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
            entries.append(
                {"case": case, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": spec["kind"], "hops": truth["hops"]}
            )
    shutil.rmtree(tmp)
    return entries


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    cases = []
    for name in names:
        cases += generate_agent(name, out)
    (out / "index.json").write_text(json.dumps({"suite": "suite_v", "cases": cases}, indent=2) + "\n")
    print(f"{len(cases)} cases in {time.monotonic() - t0:.1f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
