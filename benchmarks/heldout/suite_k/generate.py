"""Generate suite K: eight agents, 40 planted silent faults, each with its control and reference runs.

Usage: python benchmarks/heldout/suite_k/generate.py OUT   (or python -m benchmarks.heldout.suite_k.generate OUT)
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any


# Run as a script from any directory: the repository root (and its src/) go on the path first.
_ROOT = Path(__file__).resolve().parents[3]
for _entry in (str(_ROOT), str(_ROOT / "src")):
    if _entry not in sys.path:
        sys.path.insert(0, _entry)
if __package__ in (None, ""):
    __package__ = "benchmarks.heldout.suite_k"

from openai import AsyncOpenAI, OpenAI  # noqa: E402

from trajdebug.testing import FakeModelServer  # noqa: E402

from ._harness import check_words, combine, planted, truth  # noqa: E402
from .cases import AGENTS, CASES  # noqa: E402


def _record(server: FakeModelServer, agent: Any, given: Any, path: Path) -> None:
    clients = {"sync": OpenAI(base_url=server.base_url, api_key="local", max_retries=0),
               "async": AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0),
               "base_url": server.base_url}
    server.use(agent.policy)
    try:
        agent.run(clients, given, path)
    except Exception:  # noqa: BLE001 - a failed run is what a case records; its outcome is asserted after
        pass


def generate(out: Path) -> list[dict[str, object]]:
    out.mkdir(parents=True, exist_ok=True)
    index = []
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        refs_done: dict[str, list[Path]] = {}
        for case in CASES:
            agent = AGENTS[case.agent]
            ext = "json" if agent.route == "otlp" else "jsonl"
            folder = out / case.case
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir()
            failed, control = folder / f"failed.{ext}", folder / f"control.{ext}"
            with planted(case.fault_id):
                _record(server, agent, case.given, failed)
            _record(server, agent, case.given, control)
            if case.agent not in refs_done:
                refs_done[case.agent] = []
                for k, given in enumerate(agent.refs):
                    ref = Path(tmp) / f"{case.agent}-ref{k}.{ext}"
                    _record(server, agent, given, ref)
                    refs_done[case.agent].append(ref)
            combine([failed, *refs_done[case.agent]], folder / f"with_refs.{ext}")
            facts = truth(case, failed, control)
            _check_refs(folder / f"with_refs.{ext}")
            for p in (failed, control, folder / f"with_refs.{ext}"):
                check_words(p)
            (folder / "truth.json").write_text(json.dumps(facts, indent=2) + "\n")
            index.append({k: facts[k] for k in ("case", "agent", "route", "fault_kind", "hops")})
    (out / "index.json").write_text(json.dumps({"suite": "suite_k", "cases": index}, indent=2) + "\n")
    return index


def _check_refs(path: Path) -> None:
    from trajdebug.sources.load import load_runs

    runs = load_runs(path)
    outcomes = sorted(r.outcome for r in runs)
    assert outcomes == ["failure"] + ["success"] * 4, (str(path), outcomes)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    warnings.filterwarnings("ignore")
    start = time.perf_counter()
    index = generate(Path(args[0]))
    print(f"suite_k: {len(index)} cases in {time.perf_counter() - start:.1f} s -> {args[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
