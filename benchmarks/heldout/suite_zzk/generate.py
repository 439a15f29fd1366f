"""Generate the held-out suite suite_zzk: 8 agents, 5 cases each, four recording routes.

Usage (from the repository root)::

    .venv/bin/python benchmarks/heldout/suite_zzk/generate.py OUT [agent-module ...]

Writes ``OUT/<case>/{failed,control,with_refs}.<ext>``, ``OUT/<case>/truth.json`` and
``OUT/index.json``.  Everything runs on this machine: one fake model server on 127.0.0.1
(an ephemeral port) answers every model call, its script swapped per run.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ left in the suite's folder
sys.path.insert(0, str(HERE))  # the agents import `kit` and `common` as top-level modules

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
os.environ.setdefault("OPENAI_API_KEY", "not-needed")

import kit  # noqa: E402


AGENTS = ["glass", "skips", "windmill", "billboards", "trophies", "pilates", "tuktuk", "reptiles"]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
KINDS = {
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
# Words no recorded text may hold (a word starting with one of them, in any case).
TELLS = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


def load(path: Path, route: str) -> list[Any]:
    if route == "otlp":
        from trajdebug.sources.formats import import_path

        result = import_path(path, "otlp")
        assert not result.problems, f"{path}: {result.problems}"
        return list(result.runs)
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: s.start_ns)


def find(steps: list[Any], name: str, occurrence: int) -> tuple[int, Any]:
    hits = [(i, s) for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, f"no occurrence {occurrence} of step {name!r} (found {len(hits)})"
    return hits[occurrence - 1]


def _norm(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return re.sub(r"(call_\d+_\d+|chatcmpl-fake\d+|resp_\w+|msg_\w+|fc_\w+|\b[0-9a-f]{16,32}\b)", "ID", text)


def join(paths: list[Path], route: str, out: Path) -> None:
    if route == "otlp":
        spans: list[Any] = []
        for p in paths:
            for line in p.read_text().splitlines():
                if line.strip():
                    spans.extend(json.loads(line)["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}) + "\n")
    else:
        out.write_text("".join(p.read_text() for p in paths))


def check_words(path: Path) -> None:
    hit = TELLS.search(path.read_text())
    assert hit is None, f"{path}: recorded text holds {hit.group(0)!r} at {hit.start()}"


def generate_agent(mod: Any, server: Any, out: Path, work: Path) -> list[dict[str, Any]]:
    route, ext = mod.ROUTE, EXT[mod.ROUTE]
    assert len(mod.CASES) == 5 and len(mod.REFS) == 4
    kit.switch(None)
    refs = []
    for key in mod.REFS:
        path = work / f"{mod.NAME}-ref-{key}.{ext}"
        mod.record(server, key, path)
        [ref] = load(path, route)
        assert ref.outcome == "success", f"{mod.NAME} reference {key}: {ref.outcome} {ref.failure_reason}"
        assert ref.name == mod.NAME, ref.name
        refs.append(path)
    truths = []
    for case in mod.CASES:
        assert case["kind"] in KINDS and case["input"] not in mod.REFS
        folder = out / case["id"]
        folder.mkdir(parents=True, exist_ok=True)
        failed_path, control_path = folder / f"failed.{ext}", folder / f"control.{ext}"
        for p in (failed_path, control_path):
            p.unlink(missing_ok=True)
        kit.switch(case["id"])
        try:
            mod.record(server, case["input"], failed_path)
        finally:
            kit.switch(None)
        mod.record(server, case["input"], control_path)
        [failed] = load(failed_path, route)
        [control] = load(control_path, route)
        assert failed.outcome == "failure", f"{case['id']}: failed run ended {failed.outcome}"
        assert control.outcome == "success", (
            f"{case['id']}: control ended {control.outcome} {control.failure_reason}"
        )
        assert failed.name == control.name == mod.NAME
        join([failed_path, *refs], route, folder / f"with_refs.{ext}")
        together = load(folder / f"with_refs.{ext}", route)
        assert len(together) == 5 and sum(r.outcome == "failure" for r in together) == 1
        assert sum(r.outcome == "success" for r in together) == 4
        steps = ordered(failed)
        root_i, root = find(steps, *case["root"])
        fail_i, fail = find(steps, *case["failure"])
        assert root.status == "ok", f"{case['id']}: root {root.name} is {root.status}"
        assert fail.status == "error", f"{case['id']}: failure step {fail.name} is {fail.status}"
        assert fail_i > root_i and fail.start_ns > root.start_ns, f"{case['id']}: failure before root"
        assert 15 <= len(steps) <= 60, f"{case['id']}: {len(steps)} steps"
        # The root is where the failed run first parts from the control: same step, another output.
        c_steps = ordered(control)
        _, c_root = find(c_steps, *case["root"])
        assert _norm(root.output) != _norm(c_root.output), f"{case['id']}: root output equals the control's"
        # ...and no step before it parts (the steps enclosing it excepted: their output holds the root's).
        by_id = {s.step_id: s for s in steps}
        enclosing, up = set(), root.parent_id
        while up in by_id:
            enclosing.add(up)
            up = by_id[up].parent_id
        for a, b in zip(steps[:root_i], c_steps[:root_i], strict=True):
            assert (a.name, a.kind) == (b.name, b.kind), (
                f"{case['id']}: {a.name} runs where the control ran {b.name}"
            )
            if a.step_id not in enclosing and a.kind != "agent":
                assert _norm(a.output) == _norm(b.output), f"{case['id']}: {a.name} parts before the root"
        truth = {
            "case": case["id"],
            "agent": mod.NAME,
            "route": route,
            "fault_kind": case["kind"],
            "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
            "failure": {"name": fail.name, "occurrence": case["failure"][1]},
            "hops": fail_i - root_i,
            "description": case["description"],
        }
        (folder / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        for p in (failed_path, control_path, folder / f"with_refs.{ext}"):
            check_words(p)
        truths.append({**truth, "steps": len(steps), "reason": failed.failure_reason})
    return truths


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    from trajdebug.testing import FakeModelServer

    started = time.monotonic()
    cases: list[dict[str, Any]] = []
    with FakeModelServer() as server, tempfile.TemporaryDirectory(prefix="suite_zzk-") as tmp:
        for name in names:
            t0 = time.monotonic()
            mod = importlib.import_module(name)
            got = generate_agent(mod, server, out, Path(tmp))
            cases.extend(got)
            print(f"{mod.NAME:34s} {mod.ROUTE:14s} {len(got)} cases  {time.monotonic() - t0:5.1f} s")
            for t in got:
                print(
                    f"   {t['case']:24s} {t['fault_kind']:22s} root {t['root']['name']}#{t['root']['occurrence']} "
                    f"({t['root']['kind']}) -> {t['failure']['name']}  hops {t['hops']}  steps {t['steps']}"
                )
    index = out / "index.json"
    known = json.loads(index.read_text())["cases"] if index.exists() and argv[1:] else []
    ids = [*known, *(c["case"] for c in cases if c["case"] not in known)]
    index.write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    far = sum(c["hops"] >= 5 for c in cases)
    print(
        f"{len(cases)} cases, {far} with the root 5 or more steps before the failure, "
        f"{time.monotonic() - started:.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
