"""Generate suite_zzzzo: 8 agents x 5 cases of failing runs, with controls, references and truth.

    python generate.py OUT [agent ...]

Runs every agent of `ops/` against one `trajdebug.testing.FakeModelServer` (each agent's `brain` as its
policy), records each agent's five inputs with the switch off and each case's input with its switch on,
and writes per case `failed.<ext>`, `control.<ext>`, `with_refs.<ext>` and `truth.json`, then
`OUT/index.json`. Every case is checked as it is written (see `check_case`).
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
from typing import Any

HERE = Path(__file__).resolve().parent
WORKTREE = HERE.parents[2]
sys.path.insert(0, str(WORKTREE / "src"))
sys.path.insert(0, str(HERE))

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = [
    "endoscope",
    "radiopharmacy",
    "transfusion",
    "mortuary",
    "aseptic",
    "dialysis",
    "medgas",
    "neonatal",
]
ROUTES = ("sdk", "langgraph", "openai_agents", "otlp")
KINDS = (
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
)
FORBIDDEN = re.compile(
    r"\b(faults?|faulty|bugs?|buggy|wrong(ly)?|stale|inject(s|ed|ion)?|corrupt(s|ed|ion)?|"
    r"planted)\b",
    re.IGNORECASE,
)


class Ctx:
    """What an agent's `record` gets: the model server, a ready client, and a scratch folder."""

    def __init__(self, server: FakeModelServer, tmp: Path) -> None:
        from openai import OpenAI

        self.server = server
        self.model = server.model
        self.base_url = server.base_url
        self.client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        self.tmp = tmp


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def merge(paths: list[Path], out: Path, route: str) -> None:
    """One file holding the runs of several: JSON Lines concatenated, OTLP envelopes' resourceSpans joined."""
    if route == "otlp":
        spans: list[Any] = []
        for p in paths:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(p.read_text() for p in paths))


def in_start_order(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: s.start_ns or 0)  # stable: ties keep the file's order


def _matches(step: Any, match: dict | None) -> bool:
    if not match:
        return True
    text = json.dumps(step.input, sort_keys=True, default=str)
    return all(f'"{k}": {json.dumps(v)}' in text for k, v in match.items())


def locate(steps: list[Any], spec: tuple) -> tuple[int, int]:
    """(index in start order, occurrence among same-named steps) of the step a spec names.

    A spec is (name, occurrence) or (name, None, match): the first step of that name whose input holds
    every key/value of `match` (for steps run in parallel, whose start order is not fixed)."""
    name, occurrence, *rest = spec
    match = rest[0] if rest else None
    seen = 0
    for i, s in enumerate(steps):
        if s.name != name:
            continue
        seen += 1
        if (occurrence is not None and seen == occurrence) or (occurrence is None and _matches(s, match)):
            return i, seen
    raise AssertionError(f"no step {spec!r} (steps: {[s.name for s in steps]})")


def scan(path: Path) -> None:
    found = FORBIDDEN.search(path.read_text())
    if found:
        text = path.read_text()
        raise AssertionError(
            f"{path}: recorded data holds {found.group(0)!r}: "
            f"...{text[max(0, found.start() - 120) : found.end() + 60]}..."
        )


def check_case(case_dir: Path, case: dict, mod: Any, ext: str, task: str) -> dict:
    """Assert the case and build its truth."""
    failed = trajdebug.load_runs(str(case_dir / f"failed.{ext}"))
    control = trajdebug.load_runs(str(case_dir / f"control.{ext}"))
    refs = trajdebug.load_runs(str(case_dir / f"with_refs.{ext}"))
    assert len(failed) == 1 and failed[0].outcome == "failure", (case["case"], [r.outcome for r in failed])
    assert len(control) == 1 and control[0].outcome == "success", (case["case"], control[0].failure_reason)
    assert len(refs) == 5, (case["case"], len(refs))
    assert [r.outcome for r in refs].count("failure") == 1 and [r.outcome for r in refs].count("success") == 4
    assert {r.run_id for r in refs if r.outcome == "failure"} == {failed[0].run_id}
    run = failed[0]
    assert run.name == mod.NAME and control[0].name == mod.NAME and all(r.name == mod.NAME for r in refs)
    assert run.metadata.get("task") == control[0].metadata.get("task") == task, (case["case"], "task differs")
    steps = in_start_order(run)
    ri, rocc = locate(steps, case["root"])
    fi, focc = locate(steps, case["failure"])
    root, fail = steps[ri], steps[fi]
    assert root.status == "ok", (case["case"], root.name, root.status)
    assert fail.status == "error", (case["case"], fail.name, fail.status)
    assert ri < fi, (case["case"], ri, fi)
    for r in (*failed, *control, *refs):
        assert 10 <= len(r.steps) <= 60, (case["case"], r.outcome, len(r.steps))
    # the switch changed what the root step answered (compared with the same step of the control run)
    csteps = [s for s in in_start_order(control[0]) if s.name == root.name]
    if len(csteps) >= rocc and not case.get("same_output_ok"):
        assert json.dumps(csteps[rocc - 1].output, sort_keys=True, default=str) != json.dumps(
            root.output, sort_keys=True, default=str
        ), (case["case"], "root output equals the control's")
    # the failing step is where the error occurred (no child of it failed)
    children_failed = [s for s in steps if s.parent_id == fail.step_id and s.status == "error"]
    assert not children_failed, (case["case"], [s.name for s in children_failed])
    return {
        "case": case["case"],
        "agent": mod.NAME,
        "route": mod.ROUTE,
        "fault_kind": case["fault_kind"],
        "root": {"name": root.name, "occurrence": rocc, "kind": root.kind},
        "failure": {"name": fail.name, "occurrence": focc},
        "hops": fi - ri,
        "description": case["description"],
        "steps": len(steps),
        "failure_reason": run.failure_reason,
    }


def run_agent(mod: Any, ctx: Ctx, out: Path) -> list[dict]:
    ext = ext_of(mod.ROUTE)
    tmp = ctx.tmp / mod.__name__.rsplit(".", 1)[-1]
    tmp.mkdir()
    ctx.server.use(mod.brain)
    passing: dict[str, Path] = {}
    mod.SWITCH = None
    for inp in mod.INPUTS:
        p = tmp / f"pass_{inp['id']}.{ext}"
        mod.record(inp, str(p), ctx)
        passing[inp["id"]] = p
    truths = []
    for case in mod.CASES:
        p = tmp / f"fail_{case['case']}.{ext}"
        inp = next(i for i in mod.INPUTS if i["id"] == case["input"])
        mod.SWITCH = case["switch"]
        try:
            mod.record(inp, str(p), ctx)
        finally:
            mod.SWITCH = None
        case_dir = out / case["case"]
        if case_dir.exists():
            shutil.rmtree(case_dir)
        case_dir.mkdir(parents=True)
        shutil.copyfile(p, case_dir / f"failed.{ext}")
        shutil.copyfile(passing[case["input"]], case_dir / f"control.{ext}")
        merge(
            [p] + [q for k, q in passing.items() if k != case["input"]],
            case_dir / f"with_refs.{ext}",
            mod.ROUTE,
        )
        for f in ("failed", "control", "with_refs"):
            scan(case_dir / f"{f}.{ext}")
        truth = check_case(case_dir, case, mod, ext, inp["task"])
        public = {k: v for k, v in truth.items() if k not in ("steps", "failure_reason")}
        (case_dir / "truth.json").write_text(json.dumps(public, indent=2) + "\n")
        truths.append(truth)
    return truths


def check_module(mod: Any) -> None:
    """Five inputs, five cases on distinct inputs; the switch is read in `_case` only, each key at one site."""
    assert mod.ROUTE in ROUTES
    assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5
    assert len({c["input"] for c in mod.CASES}) == 5
    assert all(c["fault_kind"] in KINDS for c in mod.CASES)
    assert len({c["switch"] for c in mod.CASES}) == 5
    source = Path(mod.__file__).read_text()
    assert source.count("SWITCH ==") == 1 and len(re.findall(r"\bSWITCH\b", source)) == 2, mod.__name__
    for c in mod.CASES:
        assert not FORBIDDEN.search(c["switch"].replace("_", " ")), c["switch"]
        assert source.count(f'_case("{c["switch"]}")') == 1, (mod.__name__, c["switch"])


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    mods = [importlib.import_module(f"ops.{n}") for n in names]
    for m in mods:
        check_module(m)
    tmp = Path(tempfile.mkdtemp(prefix="suite_zzzzo64_", dir="/tmp"))
    truths: list[dict] = []
    try:
        with FakeModelServer() as server:
            ctx = Ctx(server, tmp)
            for m in mods:
                t0 = time.perf_counter()
                got = run_agent(m, ctx, out)
                truths.extend(got)
                print(
                    f"{m.NAME:32s} {m.ROUTE:14s} {len(got)} cases  {time.perf_counter() - t0:5.1f} s",
                    flush=True,
                )
    finally:
        trajdebug.flush()
        shutil.rmtree(tmp, ignore_errors=True)
    ids = [t["case"] for t in truths]
    assert len(set(ids)) == len(ids)
    if names == AGENTS:
        kinds = [t["fault_kind"] for t in truths]
        assert len(truths) == 40
        assert all(2 <= kinds.count(k) <= 4 for k in KINDS), {k: kinds.count(k) for k in KINDS}
        routes = [t["route"] for t in truths]
        assert all(routes.count(r) == 10 for r in ROUTES), routes
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    for t in truths:
        print(
            f"  {t['case']:28s} {t['fault_kind']:22s} root {t['root']['name']}#{t['root']['occurrence']} "
            f"({t['root']['kind']}) -> {t['failure']['name']}#{t['failure']['occurrence']} hops {t['hops']:2d} "
            f"steps {t['steps']:2d} | {t['failure_reason'][:90] if t['failure_reason'] else ''}"
        )
    elapsed = time.perf_counter() - started
    print(f"{len(truths)} cases in {elapsed:.1f} s -> {out}")
    assert elapsed < 60 or names != AGENTS, f"took {elapsed:.1f} s (limit 60 s)"
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
