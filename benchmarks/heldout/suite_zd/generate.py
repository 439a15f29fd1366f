"""Generate suite_zd: python benchmarks/heldout/suite_zd/generate.py OUT [agent ...]"""
from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zd"

os.environ.setdefault("OPENAI_API_KEY", "sk-local-test")
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "0"

from . import common  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = ["lavender", "textbooks", "tennis", "climbing", "phone_repair", "florist", "crossword", "houseboat"]


def ext(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def combine(route: str, parts: list[Path], dest: Path) -> None:
    if route == "otlp":
        spans = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}))
    else:
        dest.write_text("".join(p.read_text() for p in parts))


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    from trajdebug.testing import FakeModelServer

    index = []
    tmp = Path(tempfile.mkdtemp(prefix="suite_zd_"))
    try:
        with FakeModelServer() as server:
            for name in names:
                agent = importlib.import_module(f".{name}", __package__)
                server.use(agent.policy)
                e = ext(agent.ROUTE)
                refs = []
                for i, key in enumerate(agent.REFS):
                    p = tmp / f"{name}_ref{i}.{e}"
                    agent.record(agent.INPUTS[key], p, server.base_url)
                    refs.append(p)
                for case in agent.CASES:
                    cdir = out / case["id"]
                    if cdir.exists():
                        shutil.rmtree(cdir)
                    cdir.mkdir(parents=True)
                    failed, control = cdir / f"failed.{e}", cdir / f"control.{e}"
                    with planted(case["id"]):
                        agent.record(agent.INPUTS[case["input"]], failed, server.base_url)
                    agent.record(agent.INPUTS[case["input"]], control, server.base_url)
                    combine(agent.ROUTE, [failed, *refs], cdir / f"with_refs.{e}")
                    fr = common.load(failed, agent.ROUTE)
                    cr = common.load(control, agent.ROUTE)
                    wr = common.load(cdir / f"with_refs.{e}", agent.ROUTE)
                    assert len(fr) == 1 and fr[0].outcome == "failure", (case["id"], [r.outcome for r in fr])
                    assert len(cr) == 1 and cr[0].outcome == "success", (case["id"], [r.outcome for r in cr])
                    assert len(wr) == 5 and sorted(r.outcome for r in wr) == ["failure"] + ["success"] * 4, (
                        case["id"], [r.outcome for r in wr])
                    for p in (failed, control, cdir / f"with_refs.{e}"):
                        common.check_text(p)
                    truth = common.build_truth(case, agent, fr[0])
                    (cdir / "truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
                    index.append(truth)
                    print(f"{case['id']:28s} {agent.ROUTE:14s} {case['kind']:22s} "
                          f"{truth['root']['name']}#{truth['root']['occurrence']} ({truth['root']['kind']}) -> "
                          f"{truth['failure']['name']} hops={truth['hops']}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
