"""Generate suite_zzzzb: 8 office/service agents x 5 cases, recorded through four routes.

Usage: python generate.py OUT [module ...]   (module = a file name in desk/, without .py)
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
SRC = HERE.parents[2] / "src"
for p in (str(SRC), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

MODULES = ["court_filing", "prior_auth", "outage_dispatch", "interlibrary_loan",
           "pension_transfer", "trial_screening", "deposit_disputes", "scholarship_disbursement"]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
KINDS = ["wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"]
BANNED = re.compile(r"\b(faults?|bugs?|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.IGNORECASE)


def check_words(text: str, where: str) -> None:
    m = BANNED.search(text)
    assert m is None, f"{where}: recorded data holds the word {m.group(0)!r}"


def ordered(run):
    steps = list(run.steps)
    return sorted(steps, key=lambda s: (s.start_ns, steps.index(s)))


def find(steps, name, occ):
    hits = [s for s in steps if s.name == name]
    assert len(hits) >= occ, f"step {name} #{occ} not found (have {len(hits)}); names: {[s.name for s in steps]}"
    return hits[occ - 1]


def combine(paths, out, ext):
    if ext == "jsonl":
        with open(out, "w", encoding="utf-8") as f:
            for p in paths:
                f.write(Path(p).read_text(encoding="utf-8"))
    else:
        spans = []
        for p in paths:
            spans.extend(json.loads(Path(p).read_text(encoding="utf-8"))["resourceSpans"])
        Path(out).write_text(json.dumps({"resourceSpans": spans}), encoding="utf-8")


def run_once(mod, server, inp, path, switch):
    Path(path).unlink(missing_ok=True)
    mod.SWITCH = switch
    try:
        mod.record(server, inp, str(path))
    except Exception:  # the failing run raises out of the agent: recorded as its failure
        if switch is None:
            raise
    finally:
        mod.SWITCH = None


def generate_agent(mod, server, out: Path, tmp: Path) -> list[str]:
    ext = EXT[mod.ROUTE]
    server.use(mod.brain)
    passing = []
    for i, inp in enumerate(mod.INPUTS):
        p = tmp / f"{mod.__name__.split('.')[-1]}_pass{i}.{ext}"
        run_once(mod, server, inp, p, None)
        [r] = trajdebug.load_runs(str(p))
        assert r.outcome == "success", f"{mod.RUN_NAME} input {i} does not pass: {r.failure_reason}"
        assert 10 <= len(r.steps) <= 60, f"{mod.RUN_NAME} input {i}: {len(r.steps)} steps"
        check_words(p.read_text(encoding="utf-8"), f"{mod.RUN_NAME} input {i}")
        passing.append(p)
    ids = []
    for case in mod.CASES:
        cdir = out / case["id"]
        cdir.mkdir(parents=True, exist_ok=True)
        failed = cdir / f"failed.{ext}"
        run_once(mod, server, mod.INPUTS[case["input"]], failed, case["switch"])
        shutil.copyfile(passing[case["input"]], cdir / f"control.{ext}")
        combine([failed] + [p for j, p in enumerate(passing) if j != case["input"]], cdir / f"with_refs.{ext}", ext)
        truth = check_case(mod, case, cdir, ext)
        (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
        ids.append(case["id"])
    return ids


def check_case(mod, case, cdir: Path, ext: str) -> dict:
    where = f"{case['id']}"
    text = (cdir / f"failed.{ext}").read_text(encoding="utf-8")
    check_words(text, where)
    check_words(case["description"], where + " description")
    assert case["fault_kind"] in KINDS, where
    [run] = trajdebug.load_runs(str(cdir / f"failed.{ext}"))
    assert run.outcome == "failure", f"{where}: failed run ended {run.outcome}"
    assert run.name == mod.RUN_NAME, (where, run.name)
    [ctrl] = trajdebug.load_runs(str(cdir / f"control.{ext}"))
    assert ctrl.outcome == "success", where
    refs = trajdebug.load_runs(str(cdir / f"with_refs.{ext}"))
    assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, f"{where}: with_refs {[r.outcome for r in refs]}"
    assert all(r.name == mod.RUN_NAME for r in refs), where
    steps = ordered(run)
    assert 10 <= len(steps) <= 60, f"{where}: {len(steps)} steps"
    root = find(steps, *case["root"])
    fail = find(steps, *case["failure"])
    assert root.status == "ok", f"{where}: root {root.name} status {root.status}"
    assert fail.status == "error", f"{where}: failure {fail.name} status {fail.status}"
    ri, fi = steps.index(root), steps.index(fail)
    assert ri < fi, f"{where}: root at {ri}, failure at {fi}"
    return {"case": case["id"], "agent": mod.RUN_NAME, "route": mod.ROUTE, "fault_kind": case["fault_kind"],
            "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
            "failure": {"name": fail.name, "occurrence": case["failure"][1]},
            "hops": fi - ri, "description": case["description"]}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    wanted = argv[1:]
    started = time.monotonic()
    names = [m for m in MODULES if not wanted or m in wanted]
    mods = [importlib.import_module(f"desk.{m}") for m in names]
    out.mkdir(parents=True, exist_ok=True)
    ids: list[str] = []
    from desk import common
    common.setup_otlp()
    try:
        with FakeModelServer(lambda request: "ready") as server, tempfile.TemporaryDirectory() as tmpdir:
            for mod in mods:
                t = time.monotonic()
                ids += generate_agent(mod, server, out, Path(tmpdir))
                print(f"{mod.RUN_NAME:28s} {mod.ROUTE:14s} 5 cases  {time.monotonic() - t:5.1f}s", flush=True)
    finally:
        common.teardown_otlp()
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n", encoding="utf-8")
    if not wanted:
        assert len(ids) == 40, len(ids)
        truths = [json.loads((out / c / "truth.json").read_text()) for c in ids]
        counts = {k: sum(t["fault_kind"] == k for t in truths) for k in KINDS}
        assert all(2 <= n <= 4 for n in counts.values()), counts
        assert {t["route"] for t in truths} == set(EXT)
    print(f"{len(ids)} cases in {time.monotonic() - started:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
