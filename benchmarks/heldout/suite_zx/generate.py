"""Write the suite: python benchmarks/heldout/suite_zx/generate.py OUT [agent ...]."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zx"

os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from trajdebug.testing import FakeModelServer  # noqa: E402

from . import common, kit  # noqa: E402

AGENTS = ["fossil_lab", "plant_returns", "ski_jumping", "cathedral_tours", "rodeo_schedule", "wheelchair_repair",
          "noise_monitor", "bottle_deposit"]


def _record(mod, key: str, path: Path) -> None:
    if mod.ROUTE == "otlp":
        path.write_text(json.dumps(mod.record(key)))
    else:
        mod.record(key, path)


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    index = []
    with FakeModelServer(common.dispatch) as server:
        common.BASE_URL[:] = [server.base_url]
        for name in names:
            mod = importlib.import_module(f".{name}", __package__)
            common.POLICIES[mod.MODEL] = mod.policy
            ext = "json" if mod.ROUTE == "otlp" else "jsonl"
            refs_dir = out / f".refs_{name}"
            shutil.rmtree(refs_dir, ignore_errors=True)
            refs_dir.mkdir()
            ref_files = []
            for key in mod.REFS:
                p = refs_dir / f"{key}.{ext}"
                _record(mod, key, p)
                ref_files.append(p)
            for c in mod.CASES:
                d = out / c.case
                shutil.rmtree(d, ignore_errors=True)
                d.mkdir()
                with kit.planted(c.fault_id):
                    _record(mod, c.input, d / f"failed.{ext}")
                _record(mod, c.input, d / f"control.{ext}")
                if ext == "json":
                    docs = [json.loads(p.read_text()) for p in ref_files] + [json.loads((d / "failed.json").read_text())]
                    (d / "with_refs.json").write_text(json.dumps(common.merge_otlp(docs)))
                else:
                    text = "".join(p.read_text() for p in ref_files) + (d / "failed.jsonl").read_text()
                    (d / "with_refs.jsonl").write_text(text)
                hops = common.check_case(d, mod.ROUTE, c)
                t = common.truth(mod.AGENT, mod.ROUTE, c, hops)
                (d / "truth.json").write_text(json.dumps(t, indent=2) + "\n")
                index.append(t)
                print(f"{c.case:16} {c.fault_kind:22} hops={hops}", flush=True)
            shutil.rmtree(refs_dir, ignore_errors=True)
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
