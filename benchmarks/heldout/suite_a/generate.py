"""Generate the held-out suite A: ``python benchmarks/heldout/suite_a/generate.py OUTDIR``.

Writes, for each case, ``OUTDIR/<case_id>/failed.<ext>``, ``with_refs.<ext>`` and
``truth.json``, and ``OUTDIR/index.json``.  Every faulty run is checked to fail
and its clean twin (same input, fault off) to pass.  Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# no real endpoint, no telemetry leaving the machine
os.environ["OPENAI_API_KEY"] = "sk-fake-local"
os.environ.pop("OPENAI_BASE_URL", None)
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "0"
os.environ["LANGCHAIN_TRACING_V2"] = "false"
os.environ["LANGSMITH_TRACING"] = "false"
os.environ["OTEL_SDK_DISABLED"] = "false"


ROUTES = ("langgraph", "openai_agents", "otlp", "sdk")


def load_agents(routes: list[str], server) -> list:
    specs = []
    for r in routes:
        if r == "sdk":
            import route_sdk

            specs += route_sdk.agents()
        elif r == "langgraph":
            import route_langgraph

            specs += route_langgraph.agents(server)
        elif r == "openai_agents":
            import route_agents

            specs += route_agents.agents(server)
        elif r == "otlp":
            import route_otlp

            specs += route_otlp.agents(server)
    return specs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--route", action="append", choices=ROUTES, help="only these routes (repeatable)")
    ap.add_argument("--agent", action="append", help="only these agents (repeatable)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    t0 = time.perf_counter()
    from fakellm import FakeModelServer
    from harness import generate_agent

    out: Path = args.outdir
    out.mkdir(parents=True, exist_ok=True)
    server = FakeModelServer()
    scratch = Path(tempfile.mkdtemp(prefix="suite_a_"))
    index = []
    try:
        for agent in load_agents(args.route or list(ROUTES), server):
            if args.agent and agent.name not in args.agent:
                continue
            print(f"{agent.name} ({agent.route}, {agent.domain})", flush=True)
            index += generate_agent(agent, out, scratch, lambda m: print(m, flush=True))
    finally:
        server.close()
        shutil.rmtree(scratch, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"suite": "heldout/suite_a", "cases": index}, indent=2) + "\n")
    print(f"{len(index)} cases in {time.perf_counter() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
