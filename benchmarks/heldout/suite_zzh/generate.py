"""Generate suite_zzh: 8 agents x 5 cases of silent faults, each recorded failed, as control and with references.

Usage (from /work/main):

    .venv/bin/python benchmarks/heldout/suite_zzh/generate.py OUT [agent-module ...]

Writes ``OUT/<case>/{failed,control,with_refs}.<ext>``, ``OUT/<case>/truth.json`` and ``OUT/index.json``.
No network: one `trajdebug.testing.FakeModelServer` on 127.0.0.1, answering from each agent's policy.
"""

from __future__ import annotations

import importlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import common  # noqa: E402
import kit  # noqa: E402


AGENTS = [
    "hearing_fitting",
    "laundry_dispatch",
    "spice_landed_cost",
    "foodbank_allocation",
    "bikeshare_rebalance",
    "plant_loans",
    "aligner_staging",
    "pigging_review",
]
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}


def load(path: Path) -> list[Any]:
    """The runs a written file holds, read as trajdebug reads it (OTLP/JSON through the OTLP importer)."""
    if path.suffix == ".json":
        from trajdebug.sources.formats import import_path

        result = import_path(path, fmt="otlp")
        assert not result.problems, (path, result.problems)
        return list(result.runs)
    import trajdebug

    return list(trajdebug.load_runs(path))


def in_start_order(run: Any) -> list[Any]:
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns, p[0]))]


def find(steps: list[Any], name: str, occurrence: int) -> tuple[int, Any]:
    hits = [(i, s) for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, f"step {name!r} occurs {len(hits)} times, not {occurrence}"
    return hits[occurrence - 1]


def record_one(agent: Any, server: Any, inp: Any, path: Path, switch: str | None) -> None:
    if path.exists():
        path.unlink()
    kit.arm(switch)
    try:
        server.use(agent.brain)
        agent.record(inp, path, server)
    finally:
        kit.clear()
    assert path.exists(), f"{agent.NAME}: nothing written to {path}"


def join(paths: list[Path], out: Path) -> None:
    if out.suffix == ".jsonl":
        out.write_text("".join(p.read_text() for p in paths))
        return
    spans: list[Any] = []
    for p in paths:
        spans.extend(json.loads(p.read_text()).get("resourceSpans", []))
    out.write_text(json.dumps({"resourceSpans": spans}))


def word_check(*paths: Path) -> None:
    for p in paths:
        hits = common.check_file_words(p)
        assert not hits, f"forbidden words in {p}: {hits[:5]}"


def generate_agent(agent: Any, out: Path, server: Any, scratch: Path) -> list[str]:
    ext = agent.EXT
    refs: list[Path] = []
    for n, inp in enumerate(agent.REFS, 1):
        p = scratch / f"{agent.NAME}-ref{n}.{ext}"
        record_one(agent, server, inp, p, None)
        [r] = load(p)
        assert r.outcome == "success", (agent.NAME, inp, r.outcome, r.failure_reason)
        refs.append(p)
    assert len(refs) == 4
    ids = []
    for case in agent.CASES:
        cid = case["case"]
        assert case["fault_kind"] in KINDS, case
        assert case["input"] not in agent.REFS, case
        d = out / cid
        d.mkdir(parents=True, exist_ok=True)
        failed, control, with_refs = d / f"failed.{ext}", d / f"control.{ext}", d / f"with_refs.{ext}"
        record_one(agent, server, case["input"], failed, case["switch"])
        record_one(agent, server, case["input"], control, None)
        join([failed, *refs], with_refs)

        [frun] = load(failed)
        [crun] = load(control)
        assert frun.outcome == "failure", (cid, frun.outcome)
        assert crun.outcome == "success", (cid, crun.outcome, crun.failure_reason)
        both = load(with_refs)
        assert len(both) == 5, (cid, len(both))
        assert [r.outcome for r in both].count("failure") == 1, (cid, [r.outcome for r in both])
        assert {r.run_id for r in both if r.outcome == "failure"} == {frun.run_id}, cid
        assert all(r.name == frun.name for r in both), (cid, {r.name for r in both})

        steps = in_start_order(frun)
        ri, root = find(steps, *case["root"])
        fi, fail = find(steps, *case["failure"])
        assert root.status == "ok", (cid, root.name, root.status)
        assert fail.status == "error", (cid, fail.name, fail.status)
        assert fi > ri and fail.start_ns >= root.start_ns, (cid, ri, fi)
        word_check(failed, control, with_refs)
        truth = {
            "case": cid,
            "agent": agent.NAME,
            "route": agent.ROUTE,
            "fault_kind": case["fault_kind"],
            "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
            "failure": {"name": fail.name, "occurrence": case["failure"][1]},
            "hops": fi - ri,
            "description": case["description"],
        }
        assert not common.forbidden_hits(truth["description"]), (cid, truth["description"])
        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        ids.append(cid)
    return ids


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    from trajdebug.testing import FakeModelServer

    started = time.perf_counter()
    ids: list[str] = []
    with FakeModelServer() as server, tempfile.TemporaryDirectory(prefix="zzh-refs-") as tmp:
        for name in names:
            t0 = time.perf_counter()
            agent = importlib.import_module(name)
            ids += generate_agent(agent, out, server, Path(tmp))
            print(f"{agent.NAME:22s} {agent.ROUTE:14s} {len(agent.CASES)} cases  {time.perf_counter() - t0:5.1f} s",
                  flush=True)
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    print(f"{len(ids)} cases in {time.perf_counter() - started:.1f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
