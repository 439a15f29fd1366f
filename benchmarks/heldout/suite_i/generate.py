"""Record suite I: per case a failed run, its control and the failed run among four passing references.

    python -m benchmarks.heldout.suite_i.generate OUT [--only CASE ...]
    python benchmarks/heldout/suite_i/generate.py OUT [--only CASE ...]

writes OUT/<case>/{failed,control,with_refs}.<ext> and truth.json, and OUT/index.json.  Every model
answer comes from one `FakeModelServer` on 127.0.0.1 (a free port), a scripted policy per agent.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from trajdebug.sources.load import load_runs
from trajdebug.testing import FakeModelServer


if __package__ in (None, ""):  # run as a script: the agents import each other as benchmarks.heldout.suite_i
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from benchmarks.heldout.suite_i._kit import Case, assert_unsaid, planted, truth


AGENTS = ("vetdose", "berths", "grants", "wineimport", "solarquote", "hotelrates", "bikeshare", "bloodbank")


def _module(name: str) -> Any:
    return importlib.import_module(f"benchmarks.heldout.suite_i.{name}")


def _ext(agent: Any) -> str:
    return "json" if agent.ROUTE == "otlp" else "jsonl"


def _load(agent: Any, path: Path) -> list[Any]:
    return load_runs(path, fmt="otlp" if agent.ROUTE == "otlp" else None)


def _record(agent: Any, server: FakeModelServer, input_id: str, path: Path) -> Any:
    """Record one run alone in ``path`` and read it back."""
    if path.exists():
        path.unlink()
    agent.record(server, input_id, path)
    [run] = _load(agent, path)
    assert run.name == agent.NAME, (run.name, agent.NAME)
    return run


def _join(agent: Any, parts: list[Path], out: Path) -> None:
    if agent.ROUTE == "otlp":
        spans: list[Any] = []
        for part in parts:
            spans.extend(json.loads(part.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_bytes(b"".join(p.read_bytes() for p in parts))


def _agent_cases(agent: Any, server: FakeModelServer, out: Path, only: set[str], scratch: Path) -> list[str]:
    cases: list[Case] = [c for c in agent.CASES if not only or c.case in only]
    if not cases:
        return []
    server.use(agent.policy)
    ext = _ext(agent)
    refs = []
    for input_id in agent.REFS:
        ref = scratch / f"{agent.NAME}-{input_id}.{ext}"
        assert _record(agent, server, input_id, ref).outcome == "success", f"{agent.NAME}: reference {input_id}"
        refs.append(ref)
    done = []
    for case in cases:
        folder = out / case.case
        folder.mkdir(parents=True, exist_ok=True)
        assert case.input_id not in agent.REFS
        control = _record(agent, server, case.input_id, folder / f"control.{ext}")
        assert control.outcome == "success", f"{case.case}: control {control.outcome} {control.failure_reason}"
        with planted(case.fault_id):
            failed = _record(agent, server, case.input_id, folder / f"failed.{ext}")
        assert failed.outcome == "failure", f"{case.case}: the failed run ended {failed.outcome}"
        _join(agent, [folder / f"failed.{ext}", *refs], folder / f"with_refs.{ext}")
        together = _load(agent, folder / f"with_refs.{ext}")
        assert sorted(r.outcome for r in together) == ["failure"] + ["success"] * len(refs)
        assert {r.name for r in together} == {agent.NAME}
        for name in ("failed", "control", "with_refs"):
            assert_unsaid(folder / f"{name}.{ext}")
        found = truth(case, agent, failed, control)
        (folder / "truth.json").write_text(json.dumps(found, indent=2) + "\n")
        done.append(case.case)
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", nargs="*", default=[], help="record only these cases")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    only = set(args.only)
    index: list[dict[str, Any]] = []
    scratch = Path(tempfile.mkdtemp(prefix="suite_i-"))
    try:
        with FakeModelServer() as server:
            for name in AGENTS:
                agent = _module(name)
                for case in _agent_cases(agent, server, args.out, only, scratch):
                    found = json.loads((args.out / case / "truth.json").read_text())
                    index.append({k: found[k] for k in ("case", "agent", "route", "fault_kind", "hops")})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    unknown = only - {c["case"] for c in index}
    if unknown:
        print(f"no such case: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    (args.out / "index.json").write_text(json.dumps({"suite": "suite_i", "cases": index}, indent=2) + "\n")
    print(f"{len(index)} cases in {time.perf_counter() - started:.1f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
