"""Generate suite_zb: python benchmarks/heldout/suite_zb/generate.py OUT [agent ...]"""
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
    __package__ = "benchmarks.heldout.suite_zb"

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from . import common, routes  # noqa: E402
from .kit import planted  # noqa: E402

AGENT_MODULES = ["hop_harvest", "print_shop", "radio_schedule", "allotment", "taxidermy", "interpreter",
                 "cricket_pitch", "chess_pairings"]


def _record(agent, inp: str, path: Path, base_url: str) -> None:
    if agent.ROUTE == "sdk":
        routes.record_sdk(agent, inp, path, base_url)
    elif agent.ROUTE == "langgraph":
        routes.record_langgraph(agent, inp, path, base_url)
    elif agent.ROUTE == "openai_agents":
        routes.record_agents(agent, inp, path, base_url)
    elif agent.ROUTE == "otlp":
        rs = routes.record_otlp(agent, inp, base_url)
        path.write_text(json.dumps({"resourceSpans": rs}))
    else:
        raise ValueError(agent.ROUTE)


def _merge(paths: list[Path], out: Path, ext: str) -> None:
    if ext == "json":
        rs: list = []
        for p in paths:
            rs += json.loads(p.read_text())["resourceSpans"]
        out.write_text(json.dumps({"resourceSpans": rs}))
    else:
        out.write_text("".join(p.read_text() for p in paths))


def main(argv: list[str]) -> int:
    from trajdebug.testing import FakeModelServer

    out = Path(argv[0]).resolve()
    wanted = argv[1:] or AGENT_MODULES
    out.mkdir(parents=True, exist_ok=True)
    index_path = out / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() and argv[1:] else []
    tmp = Path(tempfile.mkdtemp(prefix="suite_zb_"))
    t0 = time.time()
    try:
        with FakeModelServer(model="scripted-planner") as server:
            for modname in wanted:
                agent = importlib.import_module(f".{modname}", __package__)
                server.use(agent.policy)
                ext = "json" if agent.ROUTE == "otlp" else "jsonl"
                refs = []
                for i, inp in enumerate(agent.REFS):
                    p = tmp / f"{modname}_ref{i}.{ext}"
                    _record(agent, inp, p, server.base_url)
                    refs.append(p)
                index = [t for t in index if t["agent"] != agent.NAME]
                for case in agent.CASES:
                    d = out / case["id"]
                    if d.exists():
                        shutil.rmtree(d)
                    d.mkdir(parents=True)
                    with planted(case["fault"]):
                        _record(agent, case["input"], d / f"failed.{ext}", server.base_url)
                    _record(agent, case["input"], d / f"control.{ext}", server.base_url)
                    _merge([d / f"failed.{ext}", *refs], d / f"with_refs.{ext}", ext)
                    common.check_case(case, d / f"failed.{ext}", d / f"control.{ext}", d / f"with_refs.{ext}")
                    diff = common.first_difference(d / f"failed.{ext}", d / f"control.{ext}")
                    if os.environ.get("SUITE_ZB_DEBUG") and diff != tuple(case["root"]):
                        print(f"  note {case['id']}: first differing step {diff}, root {case['root']}")
                    t = common.truth(case, agent, d / f"failed.{ext}")
                    common.dump(d / "truth.json", t)
                    index.append(t)
                print(f"{modname}: {len(agent.CASES)} cases ok ({time.time() - t0:.1f}s)", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    order = {m: i for i, m in enumerate(AGENT_MODULES)}
    index.sort(key=lambda t: t["case"])
    common.dump(index_path, index)
    print(f"{len(index)} cases in {out} ({time.time() - t0:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
