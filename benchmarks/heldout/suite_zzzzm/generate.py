"""Generate suite_zzzzm: 8 construction-trade agents x 5 failing cases, recorded through four routes.

Usage:
    python benchmarks/heldout/suite_zzzzm/generate.py OUT [agent ...]

For every case it writes ``OUT/<case>/failed.<ext>``, ``control.<ext>``, ``with_refs.<ext>`` and
``truth.json``, and ``OUT/index.json``.  ``ext`` is ``jsonl`` (sdk, langgraph, openai_agents) or
``json`` (otlp: one ``{"resourceSpans": [...]}`` document).  Every case is checked as it is written.
"""

from __future__ import annotations

import asyncio
import importlib
import io
import json
import re
import shutil
import sys
import tempfile
import time
import tokenize
from pathlib import Path


HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2] / "src"
for p in (str(HERE), str(SRC)):
    if p not in sys.path:
        sys.path.insert(0, p)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

from suite_agents import MODULES  # noqa: E402


ROUTES = ("sdk", "langgraph", "openai_agents", "otlp")
KINDS = (
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
)
FORBIDDEN = re.compile(r"\b(fault\w*|bugs?|buggy|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.I)


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def combine(route: str, parts: list[Path], dest: Path) -> None:
    """Several recorded files as one: JSONL lines appended; OTLP documents' resourceSpans joined."""
    if route == "otlp":
        spans = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}))
    else:
        dest.write_text("".join(p.read_text() for p in parts))


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns or 0))


def find(steps: list, name: str, occurrence: int):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, f"step {name!r} #{occurrence} not found ({len(hits)} of that name)"
    return hits[occurrence - 1]


def check_words(where: str, text: str) -> None:
    m = FORBIDDEN.search(text)
    assert m is None, f"{where}: recorded data holds the word {m.group(0)!r}: ...{text[max(0, m.start() - 80):m.end() + 80]}..."


def record_one(mod, inp: dict, dest: Path, env: dict) -> None:
    if dest.exists():
        dest.unlink()
    mod.record(inp, dest, env)
    trajdebug.flush()


def generate(out: Path, names: list[str]) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="suite_zzzzm64_gen_", dir="/tmp"))
    loop = asyncio.new_event_loop()
    cases: list[str] = []
    try:
        with FakeModelServer(lambda request: "no agent is answering") as server:
            env = {"server": server, "loop": loop, "tmp": tmp}
            for modname in names:
                t0 = time.monotonic()
                mod = importlib.import_module(f"suite_agents.{modname}")
                t1 = time.monotonic()
                cases.extend(generate_agent(mod, out, tmp, env))
                print(f"  {modname}: import {t1 - t0:.1f} s, 10 runs and checks {time.monotonic() - t1:.1f} s", flush=True)
    finally:
        loop.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return cases


def check_switches(mod) -> None:
    """SWITCH is read in one place (``switched``), and each case's switch is tested at one place in the code."""
    src = Path(mod.__file__).read_text()
    names = [t for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.NAME and t.string == "SWITCH"]
    assert len(names) == 2 and "return SWITCH == name" in src, (mod.NAME, "SWITCH: declared once, read once in switched()")
    for case in mod.CASES:
        n = src.count(f'switched("{case["switch"]}")')
        assert n == 1, (case["case"], case["switch"], n)


def generate_agent(mod, out: Path, tmp: Path, env: dict) -> list[str]:
    check_switches(mod)
    route = mod.ROUTE
    assert route in ROUTES, route
    ext = ext_of(route)
    env["server"].use(mod.brain)
    if hasattr(mod, "setup"):
        mod.setup(env)
    try:
        passing: dict[str, Path] = {}
        mod.SWITCH = None
        for inp in mod.INPUTS:
            dest = tmp / f"{mod.NAME}.pass.{inp['key']}.{ext}"
            record_one(mod, inp, dest, env)
            passing[inp["key"]] = dest
        failing: dict[str, Path] = {}
        for case in mod.CASES:
            inp = next(i for i in mod.INPUTS if i["key"] == case["input"])
            dest = tmp / f"{case['case']}.fail.{ext}"
            mod.SWITCH = case["switch"]
            try:
                record_one(mod, inp, dest, env)
            finally:
                mod.SWITCH = None
            failing[case["case"]] = dest
    finally:
        if hasattr(mod, "teardown"):
            mod.teardown(env)

    written = []
    for case in mod.CASES:
        cdir = out / case["case"]
        if cdir.exists():
            shutil.rmtree(cdir)
        cdir.mkdir(parents=True)
        failed, control, refs = cdir / f"failed.{ext}", cdir / f"control.{ext}", cdir / f"with_refs.{ext}"
        shutil.copyfile(failing[case["case"]], failed)
        shutil.copyfile(passing[case["input"]], control)
        combine(route, [failing[case["case"]]] + [p for k, p in passing.items() if k != case["input"]], refs)
        truth = check_case(mod, case, failed, control, refs)
        (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        written.append(case["case"])
    return written


def check_case(mod, case: dict, failed: Path, control: Path, refs: Path) -> dict:
    cid = case["case"]
    assert case["fault_kind"] in KINDS, (cid, case["fault_kind"])
    for p in (failed, control, refs):
        check_words(f"{cid}/{p.name}", p.read_text())
    check_words(f"{cid}/description", case["description"])
    [run] = trajdebug.load_runs(str(failed))
    assert run.outcome == "failure", (cid, run.outcome)
    assert run.name == mod.NAME, (cid, run.name, mod.NAME)
    [ctrl] = trajdebug.load_runs(str(control))
    assert ctrl.outcome == "success", (cid, "control", ctrl.outcome)
    with_refs = trajdebug.load_runs(str(refs))
    assert len(with_refs) == 5, (cid, len(with_refs))
    for r in with_refs:
        assert 10 <= len(r.steps) <= 60, (cid, r.metadata.get("task"), "steps", len(r.steps))
    assert sorted(r.outcome for r in with_refs) == ["failure"] + ["success"] * 4, (cid, [r.outcome for r in with_refs])
    assert {r.name for r in with_refs} == {mod.NAME}, (cid, {r.name for r in with_refs})
    tasks = [r.metadata.get("task") for r in with_refs]
    assert len(set(tasks)) == 5 and None not in tasks, (cid, tasks)
    assert run.metadata.get("task") == ctrl.metadata.get("task"), (cid, "control task")

    steps = ordered(run)
    r_i = find(steps, case["root"]["name"], case["root"]["occurrence"])
    f_i = find(steps, case["failure"]["name"], case["failure"]["occurrence"])
    root, fail = steps[r_i], steps[f_i]
    assert root.status == "ok", (cid, "root status", root.status)
    assert root.kind == case["root"]["kind"], (cid, "root kind", root.kind, case["root"]["kind"])
    if "root_has" in case:  # which of several same-named steps the switch acts on, by what it was given
        assert case["root_has"] in json.dumps(root.input), (cid, "root input", case["root_has"], root.input)
    assert fail.status == "error", (cid, "failure status", fail.status)
    assert r_i < f_i, (cid, "root after failure", r_i, f_i)
    # the failing step is where the error started: no step inside it is an error of its own
    assert not any(s.parent_id == fail.step_id and s.status == "error" for s in steps), (cid, "failure encloses an error")
    hops = f_i - r_i
    assert 1 <= hops <= 40, (cid, hops)
    assert 10 <= len(steps) <= 60, (cid, "steps", len(steps))
    if "hops" in case:
        assert case["hops"] == hops, (cid, "hops", case["hops"], hops)
    return {
        "case": cid,
        "agent": mod.NAME,
        "route": mod.ROUTE,
        "fault_kind": case["fault_kind"],
        "root": {"name": case["root"]["name"], "occurrence": case["root"]["occurrence"], "kind": case["root"]["kind"]},
        "failure": {"name": case["failure"]["name"], "occurrence": case["failure"]["occurrence"]},
        "hops": hops,
        "description": case["description"],
    }


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or list(MODULES)
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        print(f"unknown agents: {unknown}; known: {list(MODULES)}")
        return 2
    t0 = time.monotonic()
    cases = generate(out, names)
    index = out / "index.json"
    known = []
    if index.exists() and names != list(MODULES):
        known = [c for c in json.loads(index.read_text())["cases"] if c not in cases]
    index.write_text(json.dumps({"cases": sorted(known + cases)}, indent=2) + "\n")
    print(f"{len(cases)} cases from {len(names)} agents in {time.monotonic() - t0:.1f} s -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
