"""Generate suite_zze: python benchmarks/heldout/suite_zze/generate.py OUT [agent ...]."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zze"

os.environ.setdefault("OPENAI_API_KEY", "test")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from . import kit  # noqa: E402
from .common import ext, merge, truth_for  # noqa: E402


def all_agents() -> list:
    from . import ambulance_swaps, candle_workshop, concession_stock, crypto_tax, millinery, patent_office
    from . import tofu_plant, weather_calibration

    return [
        ambulance_swaps.AGENT,
        patent_office.AGENT,
        candle_workshop.AGENT,
        tofu_plant.AGENT,
        crypto_tax.AGENT,
        concession_stock.AGENT,
        millinery.AGENT,
        weather_calibration.AGENT,
    ]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    wanted = set(argv[1:])
    out.mkdir(parents=True, exist_ok=True)
    from trajdebug.testing import FakeModelServer

    t0 = time.time()
    index = []
    with FakeModelServer(lambda req: "ok") as server:
        for agent in all_agents():
            if wanted and agent.name not in wanted:
                continue
            server.use(agent.policy)
            e = ext(agent.route)
            tmp = out / "_refs" / agent.name
            if tmp.exists():
                shutil.rmtree(tmp)
            tmp.mkdir(parents=True)
            refs = []
            with kit.planted(None):
                for i, key in enumerate(agent.refs):
                    f = tmp / f"ref{i}.{e}"
                    agent.record(agent.inputs[key], f, server.base_url)
                    refs.append(f)
            for case in agent.cases:
                d = out / case.case
                if d.exists():
                    shutil.rmtree(d)
                d.mkdir(parents=True)
                failed, control, with_refs = d / f"failed.{e}", d / f"control.{e}", d / f"with_refs.{e}"
                with kit.planted(case.fault_id):
                    agent.record(agent.inputs[case.input_key], failed, server.base_url)
                with kit.planted(None):
                    agent.record(agent.inputs[case.input_key], control, server.base_url)
                merge(agent.route, [failed, *refs], with_refs)
                truth = truth_for(agent, case, failed, control, with_refs)
                (d / "truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
                index.append(truth)
            shutil.rmtree(tmp)
            print(f"{agent.name}: {len(agent.cases)} cases ({time.time() - t0:.1f}s)", flush=True)
    shutil.rmtree(out / "_refs", ignore_errors=True)
    if not wanted:
        (out / "index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    print(f"{len(index)} cases in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
