"""Generate the suite: `python benchmarks/heldout/suite_zn/generate.py OUT [agent ...]`.

Per case: OUT/<case>/failed.<ext>, control.<ext>, with_refs.<ext>, truth.json; and OUT/index.json."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zn"

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
os.environ.setdefault("OPENAI_API_KEY", "sk-local-test")

from . import common, kit  # noqa: E402

AGENTS = ("kayak", "soap", "thatch", "upholstery", "birding", "rocketry", "mosaic", "claypigeon")


def _ext(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def _record(mod, path: Path, inp: dict, fault: str | None) -> None:
    with kit.planted(fault):
        try:
            mod.record(path, inp)
        except Exception:  # noqa: BLE001 - a failed run raises out of the agent; the file says how it ended
            pass


def _merge(route: str, parts: list[Path], out: Path) -> None:
    if route == "otlp":
        spans: list = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(p.read_text() for p in parts))


def generate_agent(name: str, out: Path, work: Path) -> list[dict]:
    mod = importlib.import_module(f".{name}", __package__)
    route, ext = mod.ROUTE, _ext(mod.ROUTE)
    assert len(mod.CASES) == 5 and len(mod.INPUTS) >= 6
    assert len({c.input for c in mod.CASES}) >= 2, f"{name}: one main input only"
    ref_parts = []
    for i, inp in enumerate(mod.INPUTS[2:6]):
        part = work / f"{name}_ref{i}.{ext}"
        _record(mod, part, inp, None)
        ref_parts.append(part)
    refs = work / f"{name}_refs.{ext}"
    _merge(route, ref_parts, refs)
    ref_runs = common.load(refs, route)
    assert len(ref_runs) == 4 and all(r.outcome == "success" for r in ref_runs), [
        (r.name, r.outcome, r.failure_reason) for r in ref_runs
    ]
    truths = []
    for case in mod.CASES:
        d = out / case.case
        d.mkdir(parents=True, exist_ok=True)
        failed, control, with_refs = d / f"failed.{ext}", d / f"control.{ext}", d / f"with_refs.{ext}"
        for p in (failed, control, with_refs):
            p.unlink(missing_ok=True)
        _record(mod, failed, mod.INPUTS[case.input], case.case)
        _record(mod, control, mod.INPUTS[case.input], None)
        _merge(route, [failed, refs], with_refs)
        f_runs, c_runs, w_runs = (common.load(p, route) for p in (failed, control, with_refs))
        assert len(f_runs) == 1 and f_runs[0].outcome == "failure", (case.case, [r.outcome for r in f_runs])
        assert len(c_runs) == 1 and c_runs[0].outcome == "success", (
            case.case, c_runs[0].outcome, c_runs[0].failure_reason)
        assert len(w_runs) == 5 and sum(r.outcome == "failure" for r in w_runs) == 1, case.case
        assert sum(r.outcome == "success" for r in w_runs) == 4, case.case
        assert len({r.name for r in w_runs}) == 1, (case.case, {r.name for r in w_runs})
        for p in (failed, control, with_refs):
            common.check_words(p)
        truth = common.truth_for(case, name, route, f_runs[0])
        assert truth["fault_kind"] in common.FAULT_KINDS
        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        truths.append(truth)
    return truths


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or list(AGENTS)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="suite_zn_"))
    try:
        truths = []
        for name in names:
            truths.extend(generate_agent(name, out, work))
            print(f"{name}: 5 cases", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        common.stop_server()
    if names == list(AGENTS):
        kinds = [t["fault_kind"] for t in truths]
        assert len(truths) == 40 and all(kinds.count(k) >= 2 for k in common.FAULT_KINDS), kinds
        assert sum(t["hops"] >= 5 for t in truths) >= 12, [t["hops"] for t in truths]
        assert sum(t["hops"] == 1 for t in truths) >= 8, [t["hops"] for t in truths]
        (out / "index.json").write_text(json.dumps(truths, indent=2) + "\n")
    print(f"{len(truths)} cases written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
