"""How far restricting the analysis's per-step work could bring ``analyze`` toward its load-and-traverse floor.

Each measurement runs in a fresh process (``python -m benchmarks.ceiling --child FILE VARIANT``) on one
recorded run (a JSON Lines file `benchmarks.agentshapes` wrote), timing the plain floor of
`benchmarks.scaling` (``orjson.loads`` of every line and one backward BFS) and then one analysis, in CPU
seconds, stage by stage.  The variants leave out whole kinds of per-step work, so they bound from below what
any restriction of that work could reach (they change the result; only ``source`` is the analysis):

- ``source``: ``analyze_source`` as ``benchmarks.scaling --child analysis`` runs it (the real analysis);
- ``nodiag``: no diagnosers at all (no rule runs on any step);
- ``bare``: no diagnosers and no learned ranker;
- ``bare_noinfer``: no diagnosers, no learned ranker and no inferred edges (value lineage, the local
  evidence of `lineage` and the hand ranking remain).

``python -m benchmarks.ceiling 1000 3000 10000 --rounds 3`` records each shape once per size, runs every
variant interleaved round by round, and prints one JSON line per measurement.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.scaling import ROOT, _env, _floor, _python


VARIANTS = ("source", "nodiag", "bare", "bare_noinfer")
SHAPES = ("state", "tools", "subagents")


def _options(variant: str) -> dict[str, Any]:
    """The keyword arguments of `trajdebug.analysis.analyze` that leave a variant's work out."""
    kw: dict[str, Any] = {}
    if variant != "source":
        kw["diagnosers"] = {}
    if variant in ("bare", "bare_noinfer"):
        kw["model"] = None
    if variant == "bare_noinfer":
        kw["infer"] = False
    return kw


def child(path: Path, variant: str) -> dict[str, Any]:
    """One measurement of one variant on one recorded run (CPU seconds)."""
    from trajdebug.analysis import _pipeline
    from trajdebug.api import _load, analyze_source

    spent: dict[str, float] = {}

    def run_stages(state: Any, stages: Any) -> Any:
        for stage in stages:
            c = time.process_time()
            state = stage(state)
            spent[stage.__name__] = spent.get(stage.__name__, 0.0) + time.process_time() - c
        return state

    floor = _floor(path)[1]
    c = time.process_time()
    runs = _load(path, None)
    load = time.process_time() - c
    kept, _pipeline.run_stages = _pipeline.run_stages, run_stages  # type: ignore[assignment]
    try:
        c = time.process_time()
        if variant == "source":
            top = analyze_source(str(path), runs=runs).analyses[0].root_causes
        else:
            top = _pipeline.analyze(runs[0], **_options(variant)).root_causes
        total = time.process_time() - c
    finally:
        _pipeline.run_stages = kept  # type: ignore[assignment]
    return {
        "variant": variant,
        "steps": len(runs[0].steps),
        "floor": floor,
        "load": load,
        "total": total,
        "stages": spent,
        "top": [r.step_id for r in top[:3]],
    }


def _record(shape: str, n: int, folder: Path) -> Path:
    from benchmarks.agentshapes import record_shape
    from trajdebug.core.jsonl import write_jsonl

    path = folder / f"{shape}_{n}.jsonl"
    write_jsonl([record_shape(shape, n)], path)
    return path


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ceiling", description=__doc__)
    p.add_argument("sizes", nargs="*", type=int, default=[1000, 3000, 10000])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--child", nargs=2, metavar=("FILE", "VARIANT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(Path(args.child[0]), args.child[1])))
        return
    with tempfile.TemporaryDirectory(prefix="trajdebug-ceiling-") as tmp:
        files = {(s, n): _record(s, n, Path(tmp)) for n in args.sizes for s in SHAPES}
        for n in args.sizes:
            for _ in range(args.rounds):
                for s in SHAPES:
                    for v in args.variants.split(","):
                        cmd = [*_python(), "-m", "benchmarks.ceiling", "--child", str(files[(s, n)]), v]
                        out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=_env(), cwd=ROOT).stdout
                        print(json.dumps({"shape": s, "n": n, **json.loads(out)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
