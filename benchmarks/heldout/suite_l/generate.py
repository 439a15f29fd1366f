"""Generate suite L: ``python benchmarks/heldout/suite_l/generate.py OUT`` (or ``-m benchmarks.heldout.suite_l.generate``).

Per case: ``failed.<ext>`` (the failed run), ``control.<ext>`` (same input, fault off), ``with_refs.<ext>``
(the failed run and four passing runs of the agent on other inputs), ``truth.json``; and ``OUT/index.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path


_ROOT = Path(__file__).resolve().parents[3]
for _p in (str(_ROOT / "src"), str(_ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import importlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import multiprocessing  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from typing import Any  # noqa: E402


AGENTS = ("ferry", "coldchain", "library", "windfarm", "theatre", "pharmacy", "satellite", "wildfire")
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}


def _merge(paths: list[Path], out: Path, ext: str) -> None:
    if ext == "jsonl":
        out.write_text("".join(p.read_text(encoding="utf-8") for p in paths), encoding="utf-8")
        return
    spans: list[Any] = []
    for p in paths:
        spans.extend(json.loads(p.read_text(encoding="utf-8"))["resourceSpans"])
    out.write_text(json.dumps({"resourceSpans": spans}), encoding="utf-8")


def _one(path: Path) -> Any:
    from trajdebug.sources.load import load_runs

    runs = load_runs(path)
    assert len(runs) == 1, (path, len(runs))
    return runs[0]


def _agent_cases(name: str, server: Any, out: Path, tmp: Path) -> list[dict[str, Any]]:
    from benchmarks.heldout.suite_l.kit import check_words, planted, truth

    mod = importlib.import_module(f"benchmarks.heldout.suite_l.{name}")
    ext = EXT[mod.ROUTE]
    refs = []
    for i, inp in enumerate(mod.REFS):
        ref = tmp / f"{name}_ref{i}.{ext}"
        mod.record(server, ref, inp)
        assert _one(ref).outcome == "success", (name, "ref", i, _one(ref).failure_reason)
        refs.append(ref)
    rows = []
    for case in mod.CASES:
        folder = out / case.case
        folder.mkdir(parents=True, exist_ok=True)
        failed, control = folder / f"failed.{ext}", folder / f"control.{ext}"
        for p in (failed, control):
            p.unlink(missing_ok=True)
        with planted(case.fault):
            mod.record(server, failed, case.inp)
        mod.record(server, control, case.inp)
        answer = truth(case, mod.AGENT, mod.ROUTE, _one(failed), _one(control))
        _merge([failed, *refs], folder / f"with_refs.{ext}", ext)
        from trajdebug.sources.load import load_runs

        outcomes = sorted(r.outcome for r in load_runs(folder / f"with_refs.{ext}"))
        assert outcomes == ["failure"] + ["success"] * 4, (case.case, outcomes)
        for p in (failed, control, folder / f"with_refs.{ext}"):
            check_words(p)
        (folder / "truth.json").write_text(json.dumps(answer, indent=2) + "\n", encoding="utf-8")
        rows.append({k: answer[k] for k in ("case", "agent", "route", "fault_kind", "hops")})
    return rows


def _worker(name: str, out: str) -> list[dict[str, Any]]:
    """One agent's cases, in a process of its own (its own fake model server on a free port)."""
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    from trajdebug.testing import FakeModelServer

    tmp = Path(tempfile.mkdtemp(prefix=f"suite_l_{name}_"))
    try:
        with FakeModelServer(model="gpt-4o-mini") as server:
            return _agent_cases(name, server, Path(out), tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# The slowest agents first, so two workers finish together.
_BY_COST = ("theatre", "pharmacy", "windfarm", "wildfire", "satellite", "library", "ferry", "coldchain")


def generate(out: Path, only: tuple[str, ...] = AGENTS, workers: int = 2) -> list[dict[str, Any]]:
    """Write every case of the suite under ``out``; returns the index rows (in the order of `AGENTS`)."""
    out.mkdir(parents=True, exist_ok=True)
    names = sorted(only, key=_BY_COST.index)
    if workers <= 1:
        done = {name: _worker(name, str(out)) for name in names}
    else:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {name: pool.submit(_worker, name, str(out)) for name in names}
            done = {name: f.result() for name, f in futures.items()}
        # A worker ends with os._exit, so the recorder's crash ledgers beside the JSONL files stay behind;
        # every run in them was written whole (the outcomes were read back and checked), so they go.
        for ledger in out.glob("*/*-ledger-*"):
            ledger.unlink()
    rows = [row for name in AGENTS if name in done for row in done[name]]
    (out / "index.json").write_text(
        json.dumps({"suite": "suite_l", "cases": rows}, indent=2) + "\n", encoding="utf-8"
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: generate.py OUT [AGENT ...]", file=sys.stderr)
        return 2
    started = time.perf_counter()
    rows = generate(Path(args[0]), tuple(args[1:]) or AGENTS)
    print(f"suite_l: {len(rows)} cases in {time.perf_counter() - started:.1f} s -> {args[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
