"""Generate held-out suite S: python benchmarks/heldout/suite_s/generate.py OUT [agent ...]"""

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
ROOT = HERE.parents[2]
for p in (str(ROOT / "src"), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
os.environ.setdefault("OPENAI_API_KEY", "not-needed")

from benchmarks.heldout.suite_s import kit  # noqa: E402

from trajdebug.sources.load import load_runs  # noqa: E402


AGENTS = ["dental_lab", "haulout_yard", "glacier_guides", "wastewater_lab", "sawmill_orders", "school_buses", "bikeshare_ops", "dig_finds"]
BANNED = re.compile(r"(?<![A-Za-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)
ID_KEYS = re.compile(r'"(traceId|spanId|parentSpanId|trace_id|span_id|parent_span_id)"\s*:\s*"[^"]*"')


def _ordered(run):
    return [s for _, s in sorted(enumerate(run.steps), key=lambda t: (t[1].start_ns, t[0]))]


def _text(value) -> str:
    return json.dumps(value, default=str)


def truth_for(run, case: dict, mod) -> dict:
    steps = _ordered(run)
    parents = {s.parent_id for s in steps if s.parent_id}
    containers = {s.step_id for s in steps if s.step_id in parents or s.kind == "agent"}
    marker = case["marker"]
    root_i = next(i for i, s in enumerate(steps) if s.name == case["root"] and marker in _text(s.output))
    root = steps[root_i]
    failed = [e for e in run.errors if any(st.stage == "failed" for st in e.stages)]
    assert failed, f"{case['case']}: no failed error event"
    fail_id = failed[0].step_id
    fail_i = next(i for i, s in enumerate(steps) if s.step_id == fail_id)
    fstep = steps[fail_i]
    assert fail_i > root_i, f"{case['case']}: failure step {fstep.name} does not start after the root"
    assert fstep.name == case["fail"], f"{case['case']}: failure at {fstep.name}, expected {case['fail']}"
    hops = sum(1 for s in steps[root_i + 1 : fail_i + 1] if s.step_id not in containers)
    llm_index = None
    if root.kind == "llm":
        llm_index = sum(1 for s in steps[:root_i] if s.kind == "llm") + 1
    return {
        "case": case["case"],
        "agent": mod.AGENT,
        "route": mod.ROUTE,
        "fault_kind": case["kind"],
        "root": {
            "name": root.name,
            "occurrence": sum(1 for s in steps[: root_i + 1] if s.name == root.name),
            "kind": root.kind,
            "llm_index": llm_index,
        },
        "failure_step": {
            "name": fstep.name,
            "occurrence": sum(1 for s in steps[: fail_i + 1] if s.name == fstep.name),
        },
        "hops": hops,
    }


def _check_words(path: Path) -> None:
    text = path.read_text()
    text = ID_KEYS.sub("", text)
    text = re.sub(r"\\[nrtbf\"\\/]", " ", text)
    text = re.sub(r"\\u[0-9a-fA-F]{4}", " ", text)
    m = BANNED.search(text)
    assert m is None, f"{path}: holds {text[max(0, m.start() - 60) : m.end() + 60]!r}"


def _one(path: Path):
    runs = load_runs(str(path))
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def generate_agent(mod, out: Path, server, tmp: Path) -> list[dict]:
    ext = mod.EXT
    refs: list[Path] = []
    for k, inp in enumerate(mod.REFS):
        p = tmp / f"{mod.AGENT}_ref{k}.{ext}"
        mod.record(inp, p, server)
        r = _one(p)
        assert r.outcome == "success", f"{mod.AGENT} ref {k}: {r.outcome} {r.failure_reason}"
        refs.append(p)
    rows = []
    for case in mod.CASES:
        d = out / case["case"]
        d.mkdir(parents=True, exist_ok=True)
        failed, control = d / f"failed.{ext}", d / f"control.{ext}"
        for p in (failed, control):
            if p.exists():
                p.unlink()
        with kit.planted(case["fault"]):
            mod.record(case["input"], failed, server)
        mod.record(case["input"], control, server)
        fr, cr = _one(failed), _one(control)
        assert fr.outcome == "failure", f"{case['case']}: failed run is {fr.outcome}"
        assert cr.outcome == "success", f"{case['case']}: control is {cr.outcome}: {cr.failure_reason}"
        for s in cr.steps:
            if s.name == case["root"]:
                assert case["marker"] not in _text(s.output), f"{case['case']}: control {s.name} holds the marker"
        truth = truth_for(fr, case, mod)
        combine([failed, *refs], d / f"with_refs.{ext}")
        wr = load_runs(str(d / f"with_refs.{ext}"))
        assert len(wr) == 5 and sum(r.outcome == "failure" for r in wr) == 1, f"{case['case']}: with_refs"
        assert sum(r.outcome == "success" for r in wr) == 4
        for p in (failed, control, d / f"with_refs.{ext}"):
            _check_words(p)
        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        rows.append({"case": case["case"], "agent": mod.AGENT, "route": mod.ROUTE,
                     "fault_kind": case["kind"], "hops": truth["hops"]})
    return rows


def combine(paths, dest: Path) -> None:
    if dest.suffix == ".jsonl":
        with open(dest, "w") as f:
            for p in paths:
                f.write(Path(p).read_text())
        return
    spans: list = []
    for p in paths:
        spans += json.loads(Path(p).read_text())["resourceSpans"]
    dest.write_text(json.dumps({"resourceSpans": spans}))


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    from trajdebug.testing import FakeModelServer

    started = time.monotonic()
    rows: list[dict] = []
    tmp = Path(tempfile.mkdtemp(prefix="suite_s_"))
    try:
        with FakeModelServer("") as server:
            for name in names:
                mod = importlib.import_module(f"benchmarks.heldout.suite_s.{name}")
                t0 = time.monotonic()
                rows += generate_agent(mod, out, server, tmp)
                print(f"{name}: {len(mod.CASES)} cases in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    index_path = out / "index.json"
    index = {"suite": "suite_s", "cases": []}
    if index_path.exists() and argv[1:]:
        old = json.loads(index_path.read_text())
        index["cases"] = [c for c in old.get("cases", []) if c["agent"] not in {r["agent"] for r in rows}]
    index["cases"] += rows
    index["cases"].sort(key=lambda c: (c["agent"], c["case"]))
    index_path.write_text(json.dumps(index, indent=2) + "\n")
    print(f"{len(rows)} cases in {time.monotonic() - started:.1f}s -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
