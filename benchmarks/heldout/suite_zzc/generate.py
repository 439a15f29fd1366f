"""Generate the suite: python benchmarks/heldout/suite_zzc/generate.py OUT [agent ...]"""

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
    __package__ = "benchmarks.heldout.suite_zzc"

os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "0"

from trajdebug.testing import FakeModelServer  # noqa: E402

from .common import check_case, policy, truth  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = [
    "dam_inspection",
    "guide_dogs",
    "container_depot",
    "beet_haulage",
    "print_bureau",
    "derby_league",
    "mast_permits",
    "offset_registry",
]


def merge(parts: list[Path], out: Path, ext: str) -> None:
    if ext == "jsonl":
        out.write_text("".join(p.read_text() for p in parts))
    else:
        env = {"resourceSpans": []}
        for p in parts:
            env["resourceSpans"].extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps(env))


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    chosen = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    index = []
    tmp = Path(tempfile.mkdtemp(prefix="suite_zzc_"))
    with FakeModelServer(policy) as server:
        for name in chosen:
            agent = importlib.import_module(f".{name}", __package__)
            ext = "json" if agent.ROUTE == "otlp" else "jsonl"
            ref_parts = []
            for i, key in enumerate(agent.REFS):
                p = tmp / f"{name}_ref{i}.{ext}"
                agent.record(agent.INPUTS[key], p, server)
                ref_parts.append(p)
            for c in agent.CASES:
                d = out / c.case
                if d.exists():
                    shutil.rmtree(d)
                d.mkdir(parents=True)
                agent.record(agent.INPUTS[c.input], d / f"control.{ext}", server)
                with planted(c.fault):
                    agent.record(agent.INPUTS[c.input], d / f"failed.{ext}", server)
                merge(ref_parts[:2] + [d / f"failed.{ext}"] + ref_parts[2:], d / f"with_refs.{ext}", ext)
                hops = check_case(c, d / f"failed.{ext}", d / f"control.{ext}", d / f"with_refs.{ext}")
                t = truth(c, agent, hops)
                (d / "truth.json").write_text(json.dumps(t, indent=2) + "\n")
                index.append(t)
                print(f"{c.case}: ok (hops {hops})", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
