"""Generate the suite: python benchmarks/heldout/suite_zy/generate.py OUT [agent ...]."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zy"

os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from trajdebug.testing import FakeModelServer  # noqa: E402

from .common import check_case, dump  # noqa: E402
from .kit import planted  # noqa: E402

MODULES = ["seaplane", "toilet_rota", "ice_hut", "massage", "meteorite", "rc_racing", "fete_raffle", "eclipse"]


def write_run(mod, key: str, path: Path, base_url: str, fault: str | None) -> None:
    with planted(fault):
        mod.record(mod.INPUTS[key], path, base_url)


def merge(paths: list[Path], out: Path, route: str) -> None:
    if route == "otlp":
        spans = []
        for p in paths:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(p.read_text() for p in paths))


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    wanted = argv[1:] or MODULES
    out.mkdir(parents=True, exist_ok=True)
    index = []
    t0 = time.time()
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        for name in wanted:
            mod = importlib.import_module(f".{name}", __package__)
            server.use(mod.policy)
            ext = "json" if mod.ROUTE == "otlp" else "jsonl"
            refs = []
            for i, key in enumerate(mod.REFS):
                p = Path(tmp) / f"{name}-ref{i}.{ext}"
                write_run(mod, key, p, server.base_url, None)
                refs.append(p)
            for case in mod.CASES:
                d = out / case.case
                if d.exists():
                    shutil.rmtree(d)
                d.mkdir(parents=True)
                failed, control, with_refs = d / f"failed.{ext}", d / f"control.{ext}", d / f"with_refs.{ext}"
                write_run(mod, case.input_key, failed, server.base_url, case.case)
                write_run(mod, case.input_key, control, server.base_url, None)
                merge([failed, *refs], with_refs, mod.ROUTE)
                truth = check_case(case, mod.AGENT, mod.ROUTE, failed, control, with_refs)
                dump(truth, d / "truth.json")
                index.append(truth)
                print(f"{case.case:14s} {truth['root']['name']}#{case.root_occ} ({truth['root']['kind']}) -> "
                      f"{case.failure}#{case.failure_occ} hops={truth['hops']}", flush=True)
    dump(index, out / "index.json")
    print(f"{len(index)} cases in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
