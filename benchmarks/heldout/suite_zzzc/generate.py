"""Generate the held-out suite suite_zzzc: 8 agents x 5 cases of failing agent runs.

    python benchmarks/heldout/suite_zzzc/generate.py OUT [agent-module ...]

Every model call goes to one trajdebug.testing.FakeModelServer on 127.0.0.1; each agent module gives
its own policy.  See README.md for the output layout.
"""

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
sys.path.insert(0, str(HERE))
_SRC = HERE.parents[2] / "src"
if _SRC.is_dir() and str(_SRC) not in sys.path:
    sys.path.insert(0, str(_SRC))


import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

trajdebug.configure(backlog_seconds=None)  # a loaded machine must not cost a run its records

AGENTS = [
    "agent_setter",      # bouldering gym route setting (sdk)
    "agent_hammam",      # hammam bookings (langgraph)
    "agent_propstore",   # film prop-hire warehouse (openai_agents)
    "agent_foley",       # foley studio sessions (otlp)
    "agent_subtitles",   # subtitling agency jobs (sdk)
    "agent_braille",     # braille transcription (langgraph)
    "agent_arboretum",   # arboretum tree records (openai_agents)
    "agent_drystone",    # dry-stone walling quotes (otlp)
]
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}
FORBIDDEN = re.compile(
    r"(?<![a-z0-9])(fault\w*|bug|bugs|buggy|wrong\w*|stale\w*|inject\w*|corrupt\w*|plant(ed|ing)?)(?![a-z0-9])",
    re.IGNORECASE,
)
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}


def _ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def _find(steps, name, occurrence):
    same = [s for s in steps if s.name == name]
    assert len(same) >= occurrence, f"no step {name!r} #{occurrence}: {len(same)} of that name"
    return same[occurrence - 1]


def _join(route, parts, dest):
    if route == "otlp":
        spans = []
        for p in parts:
            spans.extend(json.loads(Path(p).read_text())["resourceSpans"])
        Path(dest).write_text(json.dumps({"resourceSpans": spans}))
    else:
        with open(dest, "w") as out:
            for p in parts:
                out.write(Path(p).read_text())


def _check_words(path):
    text = Path(path).read_text()
    hit = FORBIDDEN.search(text)
    assert hit is None, f"{path}: forbidden word {hit.group(0)!r} near {text[max(0, hit.start()-80):hit.end()+80]!r}"


def _record(mod, server, inp, path):
    if os.path.exists(path):
        os.remove(path)
    server.use(mod.policy)
    mod.run_once(server, inp, str(path))
    trajdebug.flush()
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    lost = (runs[0].metadata.get("recorder") or {}).get("lost") or {}
    assert not any(lost.values()), f"{path}: the recorder lost records {lost}"
    return runs[0]


def build_agent(mod, server, out: Path, scratch: Path):
    route = mod.ROUTE
    ext = EXT[route]
    assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5
    for sw in {c["switch"] for c in mod.CASES}:
        setattr(mod, sw, False)
    refs = []
    for i, inp in enumerate(mod.INPUTS):
        p = scratch / f"{mod.NAME}-ref{i}.{ext}"
        run = _record(mod, server, inp, p)
        assert run.outcome == "success", f"{mod.NAME} input {i}: {run.outcome} {run.failure_reason}"
        assert run.name == mod.NAME, (run.name, mod.NAME)
        refs.append(p)
    cases = []
    for case in mod.CASES:
        cid = case["id"]
        assert case["fault_kind"] in KINDS, case["fault_kind"]
        d = out / cid
        d.mkdir(parents=True, exist_ok=True)
        setattr(mod, case["switch"], True)
        try:
            failed = _record(mod, server, mod.INPUTS[case["input"]], d / f"failed.{ext}")
        finally:
            setattr(mod, case["switch"], False)
        assert failed.outcome == "failure", f"{cid}: outcome {failed.outcome}"
        shutil.copyfile(refs[case["input"]], d / f"control.{ext}")
        control = trajdebug.load_runs(str(d / f"control.{ext}"))
        assert len(control) == 1 and control[0].outcome == "success", cid
        others = [p for j, p in enumerate(refs) if j != case["input"]]
        _join(route, [d / f"failed.{ext}", *others], d / f"with_refs.{ext}")
        joined = trajdebug.load_runs(str(d / f"with_refs.{ext}"))
        assert len(joined) == 5, f"{cid}: with_refs holds {len(joined)} runs"
        assert sorted(r.outcome for r in joined) == ["failure"] + ["success"] * 4, [r.outcome for r in joined]
        steps = _ordered(failed)
        root = _find(steps, case["root"]["name"], case["root"]["occurrence"])
        fail = _find(steps, case["failure"]["name"], case["failure"]["occurrence"])
        assert root.status == "ok", f"{cid}: root {root.name} status {root.status}"
        assert fail.status == "error", f"{cid}: failure {fail.name} status {fail.status}"
        if "kind" in case["root"]:
            assert root.kind == case["root"]["kind"], f"{cid}: root kind {root.kind} != {case['root']['kind']}"
        hops = steps.index(fail) - steps.index(root)
        assert hops >= 1 and fail.start_ns > root.start_ns, f"{cid}: failure does not start after root ({hops})"
        # the root's answer is not what the same step answered in the control run
        ctl_steps = _ordered(control[0])
        same = [s for s in ctl_steps if s.name == root.name]
        if len(same) >= case["root"]["occurrence"]:
            twin = same[case["root"]["occurrence"] - 1]
            assert json.dumps(twin.output, sort_keys=True, default=str) != json.dumps(root.output, sort_keys=True, default=str), \
                f"{cid}: root {root.name} answered as in the control run"
        truth = {
            "case": cid,
            "agent": mod.NAME,
            "route": route,
            "fault_kind": case["fault_kind"],
            "root": {"name": root.name, "occurrence": case["root"]["occurrence"], "kind": root.kind},
            "failure": {"name": fail.name, "occurrence": case["failure"]["occurrence"]},
            "hops": hops,
            "description": case["description"],
        }
        assert FORBIDDEN.search(truth["description"]) is None, f"{cid}: description"
        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        for name in ("failed", "control", "with_refs"):
            _check_words(d / f"{name}.{ext}")
            assert cid not in (d / f"{name}.{ext}").read_text(), f"{cid}: case id in recorded data"
        cases.append(truth)
    return cases


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    all_cases = []
    with tempfile.TemporaryDirectory(prefix="suite_zzzc_") as tmp, FakeModelServer() as server:
        for name in names:
            mod = importlib.import_module(name)
            t1 = time.time()
            cases = build_agent(mod, server, out, Path(tmp))
            all_cases.extend(cases)
            print(f"{mod.NAME:22s} {mod.ROUTE:14s} {len(cases)} cases  {time.time() - t1:5.1f}s", file=sys.stderr)
    index_path = out / "index.json"
    ids = [c["case"] for c in all_cases]
    if index_path.exists() and argv[1:]:
        ids = sorted(set(json.loads(index_path.read_text())["cases"]) | set(ids))
    index_path.write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    print(f"{len(all_cases)} cases in {time.time() - t0:.1f}s -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
