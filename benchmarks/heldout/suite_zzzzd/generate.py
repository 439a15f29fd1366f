"""Generate held-out suite zzzzd: 8 agents x 5 failing cases, recorded through four routes.

    python benchmarks/heldout/suite_zzzzd/generate.py OUT [agent ...]

``agent`` is a module name (``radiocarbon_lab``) or a run name (``radiocarbon-lab``); without one, all eight.
Writes ``OUT/<case>/{failed,control,with_refs}.<ext>`` and ``truth.json`` for every case, and
``OUT/index.json``.  Every case is checked as it is written (see ``check_case``).
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORKTREE = HERE.parents[2]
for p in (str(HERE), str(WORKTREE / "src")):
    if p not in sys.path:
        sys.path.insert(0, p)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

from suite_agents import MODULES  # noqa: E402
from suite_agents.common import screened_words  # noqa: E402

ROUTES = ("sdk", "langgraph", "openai_agents", "otlp")
KINDS = (
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
)


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def combine(files: list[Path], out: Path, route: str) -> None:
    """Several recorded files as one: JSON Lines concatenated, OTLP envelopes' resourceSpans joined."""
    if route == "otlp":
        spans: list[Any] = []
        for f in files:
            spans.extend(json.loads(f.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(f.read_text() for f in files))


def ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: s.start_ns or 0)


def find(steps: list[Any], name: str, occurrence: int) -> int:
    hits = [i for i, s in enumerate(steps) if s.name == name]
    if len(hits) < occurrence:
        raise AssertionError(f"step {name!r} #{occurrence} not found (the run has {len(hits)})")
    return hits[occurrence - 1]


def check_case(mod: Any, case: Any, folder: Path, ext: str) -> dict[str, Any]:
    """Assert the case as written and return its truth."""
    [failed] = trajdebug.load_runs(str(folder / f"failed.{ext}"))
    [control] = trajdebug.load_runs(str(folder / f"control.{ext}"))
    refs = trajdebug.load_runs(str(folder / f"with_refs.{ext}"))
    assert failed.name == control.name == mod.RUN_NAME, (failed.name, control.name, mod.RUN_NAME)
    assert failed.outcome == "failure", (case.case, failed.outcome)
    assert control.outcome == "success", (case.case, control.outcome, control.failure_reason)
    assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, (case.case, [r.outcome for r in refs])
    assert all(r.name == mod.RUN_NAME for r in refs)
    assert [r.run_id for r in refs if r.outcome == "failure"] == [failed.run_id]
    for r in (failed, control, *refs):
        assert 10 <= len(r.steps) <= 60, (case.case, r.run_id, len(r.steps))
    steps = ordered(failed)
    ri = find(steps, *case.root)
    fi = find(steps, *case.failure)
    root, fail = steps[ri], steps[fi]
    assert root.status == "ok", (case.case, "root status", root.status)
    assert fail.status == "error", (case.case, "failure status", fail.status)
    assert ri < fi, (case.case, ri, fi)
    # the failing step is where the run's error occurred: an error step with no failing child, the last such one
    children_err = {s.parent_id for s in steps if s.status == "error"}
    innermost = [i for i, s in enumerate(steps) if s.status == "error" and s.step_id not in children_err]
    assert innermost and innermost[-1] == fi, (case.case, [steps[i].name for i in innermost], case.failure)
    # the control run went through the root's step too
    csteps = ordered(control)
    find(csteps, *case.root)
    assert case.fault_kind in KINDS
    for f in ("failed", "control", "with_refs"):
        words = screened_words((folder / f"{f}.{ext}").read_text())
        assert not words, (case.case, f, words)
    assert not screened_words(case.description), (case.case, "description")
    return {
        "case": case.case,
        "agent": mod.RUN_NAME,
        "route": mod.ROUTE,
        "fault_kind": case.fault_kind,
        "root": {"name": root.name, "occurrence": case.root[1], "kind": root.kind},
        "failure": {"name": fail.name, "occurrence": case.failure[1]},
        "hops": fi - ri,
        "description": case.description,
    }


def generate(out: Path, wanted: list[str]) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="suite_zzzzd_"))
    names = [m for m in MODULES if m in wanted] if wanted and set(wanted) <= set(MODULES) else list(MODULES)
    mods = [importlib.import_module(f"suite_agents.{m}") for m in names]
    if wanted:
        mods = [m for m in mods if m.__name__.rsplit(".", 1)[1] in wanted or m.RUN_NAME in wanted]
        if not mods:
            raise SystemExit(f"no agent named {wanted}")
    case_ids: list[str] = []
    try:
        with FakeModelServer() as server:
            for mod in mods:
                assert mod.ROUTE in ROUTES
                ext = ext_of(mod.ROUTE)
                assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5
                server.use(mod.brain)
                mod.setup(server)
                try:
                    passing: list[Path] = []
                    for i, inp in enumerate(mod.INPUTS):
                        mod.SWITCH = None
                        f = work / f"{mod.RUN_NAME}-pass-{i}.{ext}"
                        mod.run_once(inp, f)
                        passing.append(f)
                    failing: dict[str, Path] = {}
                    for case in mod.CASES:
                        mod.SWITCH = case.switch
                        try:
                            f = work / f"{mod.RUN_NAME}-{case.case}-failed.{ext}"
                            mod.run_once(mod.INPUTS[case.input], f)
                        finally:
                            mod.SWITCH = None
                        failing[case.case] = f
                finally:
                    mod.teardown()
                for case in mod.CASES:
                    folder = out / case.case
                    if folder.exists():
                        shutil.rmtree(folder)
                    folder.mkdir(parents=True)
                    combine([failing[case.case]], folder / f"failed.{ext}", mod.ROUTE)
                    combine([passing[case.input]], folder / f"control.{ext}", mod.ROUTE)
                    refs = [failing[case.case]] + [p for i, p in enumerate(passing) if i != case.input]
                    combine(refs, folder / f"with_refs.{ext}", mod.ROUTE)
                    truth = check_case(mod, case, folder, ext)
                    (folder / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                    case_ids.append(case.case)
    finally:
        trajdebug.flush()
        shutil.rmtree(work, ignore_errors=True)
    if not wanted:  # the whole suite: every kind 2 to 4 times, two agents per route
        cases = [c for m in mods for c in m.CASES]
        counts = {k: sum(c.fault_kind == k for c in cases) for k in KINDS}
        assert len(cases) == 40 and all(2 <= n <= 4 for n in counts.values()), counts
        assert sorted(m.ROUTE for m in mods) == sorted(ROUTES * 2)
        assert len({c.case for c in cases}) == 40 and len({m.RUN_NAME for m in mods}) == 8
    (out / "index.json").write_text(json.dumps({"cases": case_ids}, indent=2) + "\n")
    return case_ids


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    t0 = time.perf_counter()
    cases = generate(Path(argv[0]).resolve(), argv[1:])
    print(f"{len(cases)} cases written to {argv[0]} in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
