"""Generate suite J: per case the failed run, its control, the failed run with four passing references,
and the truth read back from the recorded failed run.

    python benchmarks/heldout/suite_j/generate.py OUT
    python -m benchmarks.heldout.suite_j.generate OUT
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


if __package__ in (None, ""):
    # Run as a script: put the repository root (and its src/) on the path ourselves, and take this
    # folder off it (its modules are imported through the package, never as top-level names).
    _HERE = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
    _ROOT = _HERE.parents[2]
    if str(_ROOT) not in sys.path:
        sys.path.insert(0, str(_ROOT))
    __package__ = "benchmarks.heldout.suite_j"
# This checkout's trajdebug first (a shared venv may hold another checkout's editable install).
_SRC = str(Path(__file__).resolve().parents[3] / "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
os.environ.setdefault("OTEL_SDK_DISABLED", "false")

from benchmarks.heldout.suite_j.harness import AgentSpec, Fault, planted  # noqa: E402


SUITE = "suite_j"
ROUTES = ("sdk", "langgraph", "openai_agents", "otlp")
# Words a recorded value must never hold: they would give the planted fault away.
FORBIDDEN = ("fault", "bug", "wrong", "stale", "planted", "inject", "corrupt")


def agents() -> list[AgentSpec]:
    from benchmarks.heldout.suite_j.suite_agents import (
        artwork_loans,
        assay_lab,
        court_docket,
        elevator_maint,
        leak_dispatch,
        lot_dispatch,
        seed_bank,
        translation_desk,
    )

    mods = (court_docket, assay_lab, artwork_loans, leak_dispatch, elevator_maint, translation_desk,
            lot_dispatch, seed_bank)
    return [m.SPEC for m in mods]


def ext_for(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def load_one(path: Path) -> Any:
    from trajdebug.sources.load import load_runs

    runs = load_runs(str(path))
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def dumps(value: Any) -> str:
    """A recorded value as text to look for a marker in (JSON held in strings is read unescaped too)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text + "\n" + text.replace('\\"', '"')


_WORDS = re.compile(r"(?<![a-z])(" + "|".join(FORBIDDEN) + ")", re.IGNORECASE)


_IDS = frozenset({"traceId", "spanId", "parentSpanId"})


def _without_ids(value: Any) -> Any:
    """OTLP/JSON ids are random bytes in base64: they spell anything now and then, and say nothing."""
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k not in _IDS}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


def check_clean_words(path: Path) -> None:
    """No recorded word starts with a give-away stem ("default" and "trajdebug" are not words of it)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        text = json.dumps(_without_ids(json.loads(text)), ensure_ascii=False)
    hit = _WORDS.search(text)
    assert hit is None, f"{path}: the recorded run holds {hit and hit.group(0)!r}"


def containers(run: Any) -> set[str]:
    return {s.parent_id for s in run.steps if s.parent_id}


def failure_step_of(run: Any) -> Any:
    """The innermost step where the error that failed the run occurred."""
    by_id = {s.step_id: s for s in run.steps}
    failed = [e for e in run.errors if any(st.stage == "failed" for st in e.stages)]
    assert failed, f"run {run.run_id}: no error failed it"
    # Several errors may end unrecovered; the one that failed the run is the one its reason states.
    stated = [e for e in failed if e.message and e.message in (run.failure_reason or "")]
    err = (stated or failed)[-1]
    return by_id[err.step_id]


def truth_for(spec: AgentSpec, fault: Fault, case: str, failed: Any, control: Any) -> dict[str, Any]:
    steps = list(failed.steps)
    named = [s for s in steps if s.name == fault.root]
    assert named, f"{case}: no step named {fault.root!r}"
    hits = [i for i, s in enumerate(named) if fault.marker in dumps(s.output)]
    assert hits, f"{case}: no {fault.root!r} step holds {fault.marker!r}"
    occurrence = hits[0] + 1
    root = named[hits[0]]
    for s in control.steps:
        if s.name == fault.root:
            assert fault.marker not in dumps(s.output), f"{case}: the control's {s.name} holds the marker"
    pos = steps.index(root)
    llm_index = sum(1 for s in steps[: pos + 1] if s.kind == "llm") if root.kind == "llm" else None
    fail = failure_step_of(failed)
    fpos = steps.index(fail)
    fnamed = [s for s in steps if s.name == fail.name]
    boxes = containers(failed)
    hops = sum(1 for s in steps[pos + 1 : fpos + 1] if s.step_id not in boxes)
    assert fpos > pos and hops >= 1, f"{case}: the failure step comes before the root"
    return {
        "case": case,
        "agent": failed.name,
        "route": spec.route,
        "fault_kind": fault.kind,
        "root": {"name": root.name, "occurrence": occurrence, "kind": root.kind, "llm_index": llm_index},
        "failure_step": {"name": fail.name, "occurrence": fnamed.index(fail) + 1},
        "hops": hops,
    }


def merge_files(route: str, parts: list[Path], out: Path) -> None:
    if route == "otlp":
        spans: list[Any] = []
        for p in parts:
            spans.extend(json.loads(p.read_text(encoding="utf-8"))["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}), encoding="utf-8")
    else:
        out.write_text("".join(p.read_text(encoding="utf-8") for p in parts), encoding="utf-8")


def generate(out: Path) -> list[dict[str, Any]]:
    from trajdebug.testing import FakeModelServer

    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="suite_j_"))
    index: list[dict[str, Any]] = []
    try:
        with FakeModelServer() as server:
            for spec in agents():
                ext = ext_for(spec.route)
                ref_parts = []
                for k, item in enumerate(spec.ref_inputs):
                    p = scratch / f"{spec.name}-ref{k}.{ext}"
                    spec.run(server, item, p)
                    run = load_one(p)
                    assert run.outcome == "success", f"{spec.name} reference {k}: {run.outcome} {run.failure_reason}"
                    check_clean_words(p)
                    ref_parts.append(p)
                for n, fault in enumerate(spec.faults, 1):
                    case = f"{spec.name}-{n}-{fault.kind}"
                    cdir = out / case
                    cdir.mkdir(exist_ok=True)
                    failed_p, control_p = cdir / f"failed.{ext}", cdir / f"control.{ext}"
                    for p in (failed_p, control_p):
                        p.unlink(missing_ok=True)
                    item = spec.inputs[fault.input_index]
                    with planted(fault.fault_id):
                        spec.run(server, item, failed_p)
                    spec.run(server, item, control_p)
                    failed, control = load_one(failed_p), load_one(control_p)
                    assert failed.outcome == "failure", f"{case}: failed run is {failed.outcome}"
                    assert control.outcome == "success", f"{case}: control is {control.outcome} {control.failure_reason}"
                    for p in (failed_p, control_p):
                        check_clean_words(p)
                    truth = truth_for(spec, fault, case, failed, control)
                    merge_files(spec.route, [failed_p, *ref_parts], cdir / f"with_refs.{ext}")
                    (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
                    index.append({k: truth[k] for k in ("case", "agent", "route", "fault_kind", "hops")})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"suite": SUITE, "cases": index}, indent=2) + "\n", encoding="utf-8")
    return index


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: generate.py OUT", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    index = generate(Path(args[0]))
    print(f"{len(index)} cases in {time.perf_counter() - t0:.1f} s -> {args[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
