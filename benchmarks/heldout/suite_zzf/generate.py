"""python benchmarks/heldout/suite_zzf/generate.py OUT [agent ...]"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zzf"

os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from trajdebug.testing import FakeModelServer  # noqa: E402

from . import kit  # noqa: E402
from .common import build_truth, check_text, merge_refs  # noqa: E402

AGENT_MODULES = ["knife", "invigilation", "bridal", "pothole", "stewards", "eggfarm", "saltmine", "dredging"]


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENT_MODULES
    out.mkdir(parents=True, exist_ok=True)
    index = []
    import importlib

    with FakeModelServer(lambda r: "ok") as server, tempfile.TemporaryDirectory() as tmp:
        for name in names:
            mod = importlib.import_module(f"{__package__}.{name}")
            ext = "json" if mod.ROUTE == "otlp" else "jsonl"
            refs = Path(tmp) / f"{name}-refs.{ext}"
            for key in ("R1", "R2", "R3", "R4"):
                mod.record(mod.INPUTS[key], refs, server)
            check_text(refs)
            for case in mod.CASES:
                d = out / case["id"]
                d.mkdir(parents=True, exist_ok=True)
                failed, control, with_refs = d / f"failed.{ext}", d / f"control.{ext}", d / f"with_refs.{ext}"
                for p in (failed, control, with_refs):
                    if p.exists():
                        p.unlink()
                with kit.planted(case["id"]):
                    mod.record(mod.INPUTS[case["input"]], failed, server)
                mod.record(mod.INPUTS[case["input"]], control, server)
                merge_refs(failed, refs, with_refs)
                truth = build_truth(case, mod, failed, control, refs, with_refs)
                (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                index.append(truth)
                print(case["id"], truth["fault_kind"], truth["root"], truth["hops"], flush=True)
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
