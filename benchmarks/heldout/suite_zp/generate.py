"""Generate the suite: `python benchmarks/heldout/suite_zp/generate.py OUT [agent ...]`."""

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
    __package__ = "benchmarks.heldout.suite_zp"

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from .common import check_case  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = ("vintage_car", "studio_sessions", "hedge_laying", "veg_box", "canoe_portage", "carriage_hire",
          "origami_workshops", "bike_fitting")


def ext_of(agent) -> str:
    return "json" if agent.ROUTE == "otlp" else "jsonl"


def merge(paths: list[Path], dest: Path, ext: str) -> None:
    if ext == "jsonl":
        dest.write_text("".join(p.read_text() for p in paths))
    else:
        envs = []
        for p in paths:
            envs.extend(json.loads(p.read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": envs}, indent=1))


def main(argv: list[str]) -> int:
    from trajdebug.testing import FakeModelServer

    out = Path(argv[0]).resolve()
    names = argv[1:] or list(AGENTS)
    out.mkdir(parents=True, exist_ok=True)
    truths = []
    t0 = time.time()
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # anything a library drops in the working directory stays out of OUT
        for name in names:
            agent = importlib.import_module(f"{__package__}.{name}")
            server.use(agent.policy)
            ext = ext_of(agent)
            refs = Path(tmp) / f"{name}-refs.{ext}"
            ref_parts = []
            for i, inp in enumerate(agent.REFS):
                part = Path(tmp) / f"{name}-ref{i}.{ext}"
                agent.record(inp, part, server.base_url)
                ref_parts.append(part)
            merge(ref_parts, refs, ext)
            for case in agent.CASES:
                folder = out / case.case
                if folder.exists():
                    shutil.rmtree(folder)
                folder.mkdir(parents=True)
                with planted(case.case):
                    agent.record(case.main_input, folder / f"failed.{ext}", server.base_url)
                agent.record(case.main_input, folder / f"control.{ext}", server.base_url)
                merge([folder / f"failed.{ext}", refs], folder / f"with_refs.{ext}", ext)
                truth = check_case(case, agent, folder, ext)
                (folder / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                truths.append(truth)
                print(f"{case.case:8} {truth['fault_kind']:22} root={truth['root']['name']}#{truth['root']['occurrence']}"
                      f"({truth['root']['kind']}) fail={truth['failure']['name']} hops={truth['hops']}", flush=True)
    if len(names) == len(AGENTS):
        (out / "index.json").write_text(json.dumps(truths, indent=2) + "\n")
    print(f"{len(truths)} cases in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
