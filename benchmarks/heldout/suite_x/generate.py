"""Generate held-out suite X: python benchmarks/heldout/suite_x/generate.py OUT [agent ...]"""
from __future__ import annotations

import importlib
import json
import logging
import os
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
for p in (str(ROOT / "src"), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("TRAJDEBUG_STORE", os.devnull)

from benchmarks.heldout.suite_x import kit  # noqa: E402
from trajdebug.sources.load import load_runs  # noqa: E402

AGENTS = ["dialysis", "lifeguard", "deicing", "equine", "market", "cemetery", "kiteschool", "carshare"]
BANNED = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.I)


def _text(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=False)


def _load(path: Path, ext: str):
    return load_runs(str(path), fmt="otlp" if ext == "json" else None)


def _ordered(run):
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns, p[0]))]


def _check_words(path: Path, ext: str) -> None:
    if ext == "json":
        doc = json.loads(path.read_text())
        def strip(v):
            if isinstance(v, dict):
                return {k: strip(x) for k, x in v.items() if k not in ("traceId", "spanId", "parentSpanId")}
            if isinstance(v, list):
                return [strip(x) for x in v]
            return v
        text = json.dumps(strip(doc))
    else:
        text = path.read_text()
    m = BANNED.search(text)
    assert m is None, f"{path}: banned word {text[max(0, m.start()-60):m.end()+60]!r}"


def truth_for(case: dict, agent: str, route: str, ext: str, failed: Path, control: Path) -> dict:
    [run] = _load(failed, ext)
    [ctl] = _load(control, ext)
    assert run.outcome == "failure", (case["case"], run.outcome)
    assert ctl.outcome == "success", (case["case"], ctl.outcome, ctl.failure_reason)
    steps = _ordered(run)
    marker, rname = case["marker"], case["root"]
    root_i = next((i for i, s in enumerate(steps) if s.name == rname and marker in _text(s.output)), None)
    assert root_i is not None, (case["case"], "no root holds the marker", [s.name for s in steps])
    root = steps[root_i]
    assert not any(s.name == rname and marker in _text(s.output) for s in ctl.steps), (case["case"], "control holds marker")
    failed_ids = [e.step_id for e in run.errors if any(sc.stage == "failed" for sc in e.stages)]
    assert failed_ids, (case["case"], "no failed error event")
    fail_i = next(i for i, s in enumerate(steps) if s.step_id == failed_ids[0])
    fail = steps[fail_i]
    assert fail_i > root_i and fail.start_ns >= root.start_ns, (case["case"], "failure before root")
    parents = {s.parent_id for s in steps if s.parent_id}
    hops = sum(1 for s in steps[root_i + 1: fail_i + 1] if s.kind != "agent" and s.step_id not in parents)
    occ = sum(1 for s in steps[: root_i + 1] if s.name == rname)
    focc = sum(1 for s in steps[: fail_i + 1] if s.name == fail.name)
    llm_index = sum(1 for s in steps[:root_i] if s.kind == "llm") + 1 if root.kind == "llm" else None
    return {
        "case": case["case"], "agent": agent, "route": route, "fault_kind": case["fault_kind"],
        "root": {"name": root.name, "occurrence": occ, "kind": root.kind, "llm_index": llm_index},
        "failure_step": {"name": fail.name, "occurrence": focc},
        "hops": hops,
    }


def merge(ext: str, parts: list[Path], out: Path) -> None:
    if ext == "json":
        spans = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}) + "\n")
    else:
        out.write_text("".join(p.read_text() for p in parts))


def generate(out: Path, names: list[str]) -> list[dict]:
    index = []
    for name in names:
        mod = importlib.import_module(f"benchmarks.heldout.suite_x.agent_{name}")
        ext = "json" if mod.ROUTE == "otlp" else "jsonl"
        tmp = out / f".refs_{name}"
        tmp.mkdir(parents=True, exist_ok=True)
        with mod.session() as sess:
            refs = []
            for k, inp in enumerate(mod.REFS):
                p = tmp / f"ref{k}.{ext}"
                p.unlink(missing_ok=True)
                mod.record(sess, p, inp)
                [r] = _load(p, ext)
                assert r.outcome == "success", (name, k, r.failure_reason)
                refs.append(p)
            for case in mod.CASES:
                d = out / case["case"]
                d.mkdir(parents=True, exist_ok=True)
                failed, control = d / f"failed.{ext}", d / f"control.{ext}"
                for p in (failed, control):
                    p.unlink(missing_ok=True)
                with kit.planted(case["fault_id"]):
                    mod.record(sess, failed, case["input"])
                mod.record(sess, control, case["input"])
                assert all(case["input"] != r for r in mod.REFS)
                merge(ext, [failed, *refs], d / f"with_refs.{ext}")
                runs = _load(d / f"with_refs.{ext}", ext)
                assert len(runs) == 5 and sum(r.outcome == "failure" for r in runs) == 1, case["case"]
                assert sum(r.outcome == "success" for r in runs) == 4, case["case"]
                truth = truth_for(case, name, mod.ROUTE, ext, failed, control)
                for p in (failed, control, d / f"with_refs.{ext}"):
                    _check_words(p, ext)
                (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                index.append({"case": case["case"], "agent": name, "route": mod.ROUTE,
                              "fault_kind": case["fault_kind"], "hops": truth["hops"]})
        for p in tmp.iterdir():
            p.unlink()
        tmp.rmdir()
    return index


def main(argv: list[str]) -> int:
    logging.disable(logging.WARNING)
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    index = generate(out, names)
    (out / "index.json").write_text(json.dumps({"suite": "suite_x", "cases": index}, indent=2) + "\n")
    print(f"{len(index)} cases in {time.time() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
