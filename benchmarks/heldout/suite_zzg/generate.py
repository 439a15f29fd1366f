"""Generate suite_zzg: python benchmarks/heldout/suite_zzg/generate.py OUT [agent ...]"""
from __future__ import annotations

import importlib
import json
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zzg"

from .common import generate_agent  # noqa: E402

AGENTS = ["school_lunch", "ev_charger", "whale_tours", "hazwaste", "wifi_hotspots", "charity_shop", "bathroom_quotes", "tow_dispatch"]


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    wanted = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    truths = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in wanted:
            agent = importlib.import_module(f".{name}", __package__)
            truths.extend(generate_agent(agent, out, Path(tmp)))
            print(f"{name}: {len(agent.CASES)} cases", flush=True)
    (out / "index.json").write_text(json.dumps(truths, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
