"""Generate held-out suite W: ``python benchmarks/heldout/suite_w/generate.py OUT [agent ...]``.

Per case, ``OUT/<case>/`` gets ``failed.<ext>``, ``control.<ext>``, ``with_refs.<ext>`` and ``truth.json``;
``OUT/index.json`` lists the cases.  See README.md for the conventions.
"""

from __future__ import annotations

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
REPO = HERE.parents[2]
for p in (str(HERE), str(REPO / "src")):
    if p not in sys.path:
        sys.path.insert(0, p)

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
os.environ.setdefault("OPENAI_API_KEY", "not-needed")

import kit  # noqa: E402

AGENTS = ["avalanche", "greenkeeping", "kennel", "darkroom", "escape_rooms", "jazz_club", "genealogy", "cidery"]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
BANNED = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)
OTLP_IDS = re.compile(r'"(traceId|spanId|parentSpanId)"\s*:\s*"[^"]*"')


def _load(path: Path):
    from trajdebug.sources.load import load_runs

    return load_runs(str(path))


def _text(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def _ordered(run):
    return [s for _, s in sorted(enumerate(run.steps), key=lambda t: (t[1].start_ns or 0, t[0]))]


def _occurrence(steps, step) -> int:
    return [s.step_id for s in steps if s.name == step.name].index(step.step_id) + 1


def _check_words(path: Path) -> None:
    text = path.read_text()
    if path.suffix == ".json":
        text = OTLP_IDS.sub('"id": ""', text)
    m = BANNED.search(text)
    assert m is None, f"{path}: recorded text holds {m.group(0)!r}: {text[max(0, m.start() - 80):m.end() + 80]}"


def _merge(route: str, parts: list[Path], dest: Path) -> None:
    if route == "otlp":
        spans = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}))
    else:
        dest.write_text("".join(p.read_text() for p in parts))


def truth_for(case: dict, mod, failed: Path, control: Path) -> dict:
    [run] = _load(failed)
    [ctrl] = _load(control)
    assert run.outcome == "failure", (case["case"], run.outcome, run.failure_reason)
    assert ctrl.outcome == "success", (case["case"], ctrl.outcome, ctrl.failure_reason)
    steps = _ordered(run)
    marker = case["marker"]
    roots = [s for s in steps if s.name == case["root"] and marker in _text(s.output)]
    assert roots, f"{case['case']}: no {case['root']} step holds {marker!r}"
    root = roots[0]
    assert not [s for s in ctrl.steps if s.name == case["root"] and marker in _text(s.output)], case["case"]
    failed_events = [e for e in run.errors if any(st.stage == "failed" for st in e.stages)]
    assert len(failed_events) == 1, (case["case"], len(failed_events))
    by_id = {s.step_id: s for s in steps}
    fail = by_id[failed_events[0].step_id]
    order = [s.step_id for s in steps]
    ri, fi = order.index(root.step_id), order.index(fail.step_id)
    assert fi > ri, f"{case['case']}: failure step does not start after the root"
    parents = {s.parent_id for s in steps if s.parent_id}
    hops = sum(1 for s in steps[ri + 1 : fi + 1] if s.step_id not in parents and s.kind != "agent")
    llm_index = None
    if root.kind == "llm":
        llm_index = sum(1 for s in steps[:ri] if s.kind == "llm") + 1
    return {
        "case": case["case"],
        "agent": mod.AGENT,
        "route": mod.ROUTE,
        "fault_kind": case["kind"],
        "root": {"name": root.name, "occurrence": _occurrence(steps, root), "kind": root.kind, "llm_index": llm_index},
        "failure_step": {"name": fail.name, "occurrence": _occurrence(steps, fail)},
        "hops": hops,
    }


def generate(out: Path, names: list[str]) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    index = {"suite": "suite_w", "cases": []}
    for name in names:
        mod = importlib.import_module(f"w_agents.{name}")
        ext = EXT[mod.ROUTE]
        tmp = Path(tempfile.mkdtemp(prefix=f"suite_w_{name}_"))
        try:
            with mod.session() as env:
                refs = []
                for i, inp in enumerate(mod.REFS):
                    p = tmp / f"ref{i}.{ext}"
                    mod.record(env, inp, p)
                    [r] = _load(p)
                    assert r.outcome == "success", (name, i, r.failure_reason)
                    refs.append(p)
                for case in mod.CASES:
                    d = out / case["case"]
                    if d.exists():
                        shutil.rmtree(d)
                    d.mkdir(parents=True)
                    failed, control, with_refs = d / f"failed.{ext}", d / f"control.{ext}", d / f"with_refs.{ext}"
                    with kit.planted(case["fault"]):
                        mod.record(env, case["input"], failed)
                    mod.record(env, case["input"], control)
                    _merge(mod.ROUTE, [failed, *refs], with_refs)
                    truth = truth_for(case, mod, failed, control)
                    both = _load(with_refs)
                    assert len(both) == 5 and sum(r.outcome == "failure" for r in both) == 1, case["case"]
                    assert all(r.outcome == "success" for r in both if r.run_id != _load(failed)[0].run_id)
                    for p in (failed, control, with_refs):
                        _check_words(p)
                    (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                    index["cases"].append(
                        {k: truth[k] for k in ("case", "agent", "route", "fault_kind", "hops")}
                    )
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return index


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    names = argv[1:] or [a for a in AGENTS if (HERE / "w_agents" / f"{a}.py").exists()]
    t0 = time.monotonic()
    index = generate(out, names)
    print(f"suite_w: {len(index['cases'])} cases in {time.monotonic() - t0:.1f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
