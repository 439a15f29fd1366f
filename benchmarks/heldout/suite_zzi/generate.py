"""Generate held-out suite zzi: 8 agents, 5 silent-fault cases each.

    /work/main/.venv/bin/python benchmarks/heldout/suite_zzi/generate.py OUT [agent-module ...]

For each case, writes OUT/<case>/failed.<ext> (the case's input with its switch on: a failed run),
OUT/<case>/control.<ext> (same input, every switch off: a passing run), OUT/<case>/with_refs.<ext>
(the failed run and four passing runs of the same agent on other inputs, in one file) and
OUT/<case>/truth.json; then OUT/index.json.  Everything runs against one FakeModelServer on
127.0.0.1; nothing leaves the machine.
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
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import kit  # noqa: E402

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402


AGENT_MODULES = [
    "tree_surgeons",
    "mattress_recycling",
    "ice_rink",
    "snow_plough",
    "sandblasting",
    "surfboard_shaping",
    "seaweed_harvest",
    "escalator_maintenance",
]
FAULT_KINDS = {
    "wrong_retrieval",
    "unit_error",
    "truncated_result",
    "swallowed_error",
    "stale_data",
    "off_by_one",
    "lossy_parsing",
    "context_pollution",
    "wrong_tool_args",
    "wrong_routing",
    "tool_ignores_argument",
    "subagent_wrong_entity",
    "plan_error",
    "hallucinated_value",
    "format_drift",
    "bad_memory_write",
}
ROUTES = {"sdk", "langgraph", "openai_agents", "otlp"}
# Words no recorded file may hold (at a word's start, so "default" and "trajdebug" pass).
FORBIDDEN = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


def _load(path: Path) -> list:
    return list(trajdebug.load_runs(str(path)))


def _ordered(run) -> list:
    return sorted(run.steps, key=lambda s: s.start_ns or 0)


def _find(steps: list, name: str, occurrence: int):
    same = [s for s in steps if s.name == name]
    assert len(same) >= occurrence, f"no occurrence {occurrence} of step {name!r} (found {len(same)})"
    return same[occurrence - 1]


def _join(paths: list[Path], ext: str, out: Path) -> None:
    if ext == "jsonl":
        out.write_bytes(b"".join(p.read_bytes() for p in paths))
    else:
        spans: list = []
        for p in paths:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}) + "\n")


def _check_words(path: Path) -> None:
    hit = FORBIDDEN.search(path.read_text())
    assert hit is None, (
        f"{path}: recorded text holds {hit.group(0)!r}: {path.read_text()[max(0, hit.start() - 80) : hit.end() + 80]!r}"
    )


def _record(mod, key: str, switch: str | None, out: Path, server) -> None:
    if out.exists():
        out.unlink()
    with kit.active(switch):
        mod.record(key, out, server)


def generate_agent(mod, out_dir: Path, scratch: Path, server) -> list[str]:
    assert mod.ROUTE in ROUTES, mod.ROUTE
    ext = mod.EXT
    work = scratch / mod.__name__
    work.mkdir(parents=True, exist_ok=True)
    case_inputs = {c.input for c in mod.CASES}
    assert not case_inputs & set(mod.REFERENCE_INPUTS), "references must run other inputs"
    assert len(mod.REFERENCE_INPUTS) == 4

    refs = []
    for i, key in enumerate(mod.REFERENCE_INPUTS):
        ref = work / f"ref{i}.{ext}"
        _record(mod, key, None, ref, server)
        [run] = _load(ref)
        assert run.outcome == "success", f"{mod.__name__}: reference {key} did not pass: {run.failure_reason}"
        refs.append(ref)

    ids = []
    for case in mod.CASES:
        assert case.fault_kind in FAULT_KINDS, case.fault_kind
        cdir = out_dir / case.id
        cdir.mkdir(parents=True, exist_ok=True)
        failed_tmp, control_tmp = work / f"{case.id}.failed.{ext}", work / f"{case.id}.control.{ext}"
        _record(mod, case.input, case.switch, failed_tmp, server)
        _record(mod, case.input, None, control_tmp, server)

        [failed] = _load(failed_tmp)
        [control] = _load(control_tmp)
        assert failed.outcome == "failure", f"{case.id}: the failed run passed"
        assert control.outcome == "success", f"{case.id}: the control run failed: {control.failure_reason}"
        steps = _ordered(failed)
        assert 15 <= len(steps) <= 60, f"{case.id}: {len(steps)} recorded steps"
        rname, rocc, rkind = case.root
        root = _find(steps, rname, rocc)
        assert root.status == "ok", f"{case.id}: root {rname}#{rocc} has status {root.status}"
        assert root.kind == rkind, f"{case.id}: root {rname}#{rocc} is kind {root.kind}, not {rkind}"
        fname, focc = case.failure
        failure = _find(steps, fname, focc)
        assert failure.status == "error", f"{case.id}: failure step {fname}#{focc} did not raise"
        ri, fi = steps.index(root), steps.index(failure)
        assert fi > ri and (failure.start_ns or 0) >= (root.start_ns or 0), f"{case.id}: failure before root"
        cfail = _find(_ordered(control), fname, focc)
        assert cfail.status == "ok", f"{case.id}: the control run's {fname} did not pass"

        shutil.copyfile(failed_tmp, cdir / f"failed.{ext}")
        shutil.copyfile(control_tmp, cdir / f"control.{ext}")
        _join([failed_tmp, *refs], ext, cdir / f"with_refs.{ext}")
        joined = _load(cdir / f"with_refs.{ext}")
        assert len(joined) == 5, f"{case.id}: with_refs holds {len(joined)} runs"
        assert sorted(r.outcome for r in joined) == ["failure"] + ["success"] * 4, (
            f"{case.id}: with_refs outcomes"
        )
        for name in (f"failed.{ext}", f"control.{ext}", f"with_refs.{ext}"):
            _check_words(cdir / name)

        truth = {
            "case": case.id,
            "agent": mod.AGENT,
            "route": mod.ROUTE,
            "fault_kind": case.fault_kind,
            "root": {"name": rname, "occurrence": rocc, "kind": rkind},
            "failure": {"name": fname, "occurrence": focc},
            "hops": fi - ri,
            "description": case.description,
        }
        (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        print(
            f"{case.id:18} {mod.ROUTE:13} {case.fault_kind:22} {rname}#{rocc} -> {fname}#{focc} "
            f"hops={fi - ri} steps={len(steps)}",
            file=sys.stderr,
        )
        ids.append(case.id)
    return ids


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = Path(argv[0])
    names = argv[1:] or AGENT_MODULES
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    ids: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="suite_zzi_") as tmp,
        FakeModelServer(model="gpt-4o-mini") as server,
    ):
        for name in names:
            mod = importlib.import_module(name)
            ids.extend(generate_agent(mod, out_dir, Path(tmp), server))
    (out_dir / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    print(f"{len(ids)} cases in {time.perf_counter() - started:.1f} s -> {out_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
