#!/usr/bin/env python3
"""Held-out suite zzzze: record 8 agents x 5 failing cases (plus their passing runs) and the truth of each.

    python benchmarks/heldout/suite_zzzze/generate.py OUT [agent ...]

`agent` is a run name (`ringing-station`) or a module name (`ringing`); none means all eight. For every case
it writes OUT/<case>/failed.<ext>, control.<ext>, with_refs.<ext> and truth.json, and OUT/index.json.
Every case is checked as it is written (see `check_case`). Runs from any working directory.
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKTREE = HERE.parents[2]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(WORKTREE / "src"))

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

from zzzze_agents import MODULES, common  # noqa: E402

EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
TIME_BUDGET_S = 60.0


def case_id(mod, n: int) -> str:
    return f"zze_{mod.__name__.rsplit('.', 1)[-1]}_{n}"


# ---------------------------------------------------------------- reading runs back


def ordered(run) -> list:
    """A run's steps in start order (ties kept in recorded order)."""
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns or 0, p[0]))]


def failing_step(run):
    """The step where the error that failed the run occurred."""
    by_id = {s.step_id: s for s in run.steps}
    for err in run.errors:
        if any(st.stage == "failed" for st in err.stages):
            occurred = [st.step_id for st in err.stages if st.stage == "occurred"]
            sid = occurred[0] if occurred else err.step_id
            if sid in by_id:
                return by_id[sid]
    # otherwise: the latest error step none of whose children failed
    errs = [s for s in ordered(run) if s.status == "error"]
    parents = {s.parent_id for s in errs}
    leaves = [s for s in errs if s.step_id not in parents]
    return leaves[-1] if leaves else None


def locate(steps: list, name: str, match) -> tuple[object, int]:
    """(step, 1-based occurrence among steps of that name) for an occurrence number or a predicate."""
    named = [s for s in steps if s.name == name]
    if isinstance(match, int):
        if len(named) < match:
            raise AssertionError(f"only {len(named)} steps named {name!r}, wanted #{match}")
        return named[match - 1], match
    for i, s in enumerate(named, 1):
        if match(s):
            return s, i
    raise AssertionError(f"no step named {name!r} matched")


def load_one(path: Path, count: int = 1) -> list:
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == count, f"{path}: {len(runs)} runs, expected {count}"
    return runs


# ---------------------------------------------------------------- writing files


def combine(route: str, paths: list[Path], dest: Path) -> None:
    if route == "otlp":
        spans: list = []
        for p in paths:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}))
    else:
        with open(dest, "wb") as out:
            for p in paths:
                data = p.read_bytes()
                out.write(data if data.endswith(b"\n") else data + b"\n")


def scan_words(texts: dict[str, str]) -> None:
    for where, text in texts.items():
        m = common.FORBIDDEN.search(text)
        if m:
            a = max(0, m.start() - 60)
            raise AssertionError(f"{where}: recorded data holds {m.group(0)!r}: ...{text[a:m.end() + 60]}...")


def check_switch_reads(mod) -> None:
    src = Path(mod.__file__).read_text()
    for case in mod.CASES:
        cid = case_id(mod, case["n"])
        n = src.count(f'SWITCH == "{cid}"') + src.count(f'SWITCH != "{cid}"')
        assert n == 1, f"{mod.NAME}: switch of case {case['n']} is read {n} times"
    reads = src.count("SWITCH") - 1  # the definition
    assert reads == len(mod.CASES), f"{mod.NAME}: SWITCH appears {reads} times beyond its definition"


# ---------------------------------------------------------------- one agent


def record_agent(mod, server, scratch: Path, out: Path) -> list[str]:
    route, ext = mod.ROUTE, EXT[mod.ROUTE]
    assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5, mod.NAME
    check_switch_reads(mod)
    server.use(mod.brain)
    work = scratch / mod.__name__.rsplit(".", 1)[-1]
    work.mkdir()
    if hasattr(mod, "setup"):
        mod.setup()
    try:
        passing: dict[str, Path] = {}
        for key in mod.INPUTS:
            mod.SWITCH = None
            p = work / f"pass-{key}.{ext}"
            mod.execute(key, str(p))
            [r] = load_one(p)
            assert r.outcome == "success", f"{mod.NAME} {key}: passing run ended {r.outcome}: {r.failure_reason}"
            assert r.name == mod.NAME, (r.name, mod.NAME)
            assert 10 <= len(r.steps) <= 60, f"{mod.NAME} {key}: {len(r.steps)} steps"
            passing[key] = p
        failed: dict[int, Path] = {}
        for case in mod.CASES:
            mod.SWITCH = case_id(mod, case["n"])
            p = work / f"fail-{case['n']}.{ext}"
            try:
                mod.execute(case["input"], str(p))
            finally:
                mod.SWITCH = None
            failed[case["n"]] = p
    finally:
        if hasattr(mod, "teardown"):
            mod.teardown()

    ids = []
    for case in mod.CASES:
        cid = case_id(mod, case["n"])
        d = out / cid
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        shutil.copyfile(failed[case["n"]], d / f"failed.{ext}")
        shutil.copyfile(passing[case["input"]], d / f"control.{ext}")
        others = [passing[k] for k in mod.INPUTS if k != case["input"]]
        combine(route, [failed[case["n"]], *others], d / f"with_refs.{ext}")
        truth = check_case(mod, case, cid, d, ext)
        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        ids.append(cid)
    return ids


def check_case(mod, case: dict, cid: str, d: Path, ext: str) -> dict:
    [failed] = load_one(d / f"failed.{ext}")
    [control] = load_one(d / f"control.{ext}")
    refs = load_one(d / f"with_refs.{ext}", 5)
    assert failed.outcome == "failure", f"{cid}: failed run ended {failed.outcome}"
    assert failed.name == mod.NAME and control.name == mod.NAME, cid
    assert control.outcome == "success", f"{cid}: control ended {control.outcome}"
    assert failed.metadata.get("task") == control.metadata.get("task") == mod.INPUTS[case["input"]]["task"], cid
    assert [r.outcome for r in refs].count("failure") == 1, f"{cid}: with_refs outcomes {[r.outcome for r in refs]}"
    assert {r.name for r in refs} == {mod.NAME}, cid
    assert [r.run_id for r in refs if r.outcome == "failure"] == [failed.run_id], cid
    assert 10 <= len(failed.steps) <= 60, f"{cid}: {len(failed.steps)} steps"

    steps = ordered(failed)
    root, root_occ = locate(steps, *case["root"])
    fail = failing_step(failed)
    assert fail is not None, f"{cid}: no failing step"
    fname, fmatch = case["failure"]
    want_fail, fail_occ = locate(steps, fname, fmatch)
    assert fail.step_id == want_fail.step_id, f"{cid}: run failed at {fail.name}, expected {fname} #{fmatch}"
    assert root.status == "ok", f"{cid}: root {root.name} has status {root.status}"
    assert fail.status == "error", f"{cid}: failing step {fail.name} has status {fail.status}"
    ri, fi = steps.index(root), steps.index(fail)
    hops = fi - ri
    assert hops >= 1, f"{cid}: root at {ri}, failure at {fi}"
    assert case["kind"] in KINDS, case["kind"]

    scan_words({str(d / f"{n}.{ext}"): (d / f"{n}.{ext}").read_text() for n in ("failed", "control", "with_refs")})
    scan_words({f"{cid} description": case["description"]})
    return {
        "case": cid,
        "agent": mod.NAME,
        "route": mod.ROUTE,
        "fault_kind": case["kind"],
        "root": {"name": root.name, "occurrence": root_occ, "kind": root.kind},
        "failure": {"name": fail.name, "occurrence": fail_occ},
        "hops": hops,
        "description": case["description"],
    }


KINDS = (
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    started = time.monotonic()
    trajdebug.configure(flush_interval=0.01)  # write each run promptly: the suite records 80 of them
    out = Path(argv[1]).resolve()
    wanted = set(argv[2:])
    names = [m for m in MODULES if m in wanted] if wanted and wanted <= set(MODULES) else MODULES
    mods = [importlib.import_module(f"zzzze_agents.{m}") for m in names]
    unknown = wanted - {m.NAME for m in mods} - set(MODULES)
    if unknown:
        print(f"unknown agents: {sorted(unknown)}", file=sys.stderr)
        return 2
    if wanted:
        mods = [m for m in mods if m.NAME in wanted or m.__name__.rsplit(".", 1)[-1] in wanted]
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="suite_zzzze_"))
    ids: list[str] = []
    try:
        with FakeModelServer(lambda request: "idle") as server:
            common.RT.server = server
            for mod in mods:
                t0 = time.monotonic()
                got = record_agent(mod, server, scratch, out)
                ids.extend(got)
                print(f"{mod.NAME:22s} {mod.ROUTE:14s} {len(got)} cases  {time.monotonic() - t0:5.1f} s", flush=True)
    finally:
        trajdebug.flush()
        shutil.rmtree(scratch, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    elapsed = time.monotonic() - started
    print(f"{len(ids)} cases in {elapsed:.1f} s -> {out}")
    if not wanted:
        assert len(ids) == 40, len(ids)
        truths = [json.loads((out / c / "truth.json").read_text()) for c in ids]
        counts = {k: sum(t["fault_kind"] == k for t in truths) for k in KINDS}
        assert all(2 <= n <= 4 for n in counts.values()), counts
        routes = {r: sum(t["route"] == r for t in truths) for r in EXT}
        assert all(n == 10 for n in routes.values()), routes
        assert elapsed < TIME_BUDGET_S, f"took {elapsed:.1f} s, over {TIME_BUDGET_S} s"
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
