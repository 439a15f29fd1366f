"""Generate suite_zu: `python benchmarks/heldout/suite_zu/generate.py OUT [agent ...]`."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zu"

os.environ.setdefault("OPENAI_API_KEY", "test")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from .common import check_case  # noqa: E402
from .kit import planted  # noqa: E402

MODULES = ["gold_panning", "tyre_fitting", "pasta_factory", "snowshoe_hikes",
           "matchmaking", "chocolate_workshop", "coastal_erosion", "rickshaw_tours"]


def _concat(parts: list[Path], out: Path, ext: str) -> None:
    if ext == "jsonl":
        out.write_text("".join(p.read_text() for p in parts))
    else:
        spans: list = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    names = argv[1:] or MODULES
    out.mkdir(parents=True, exist_ok=True)
    index = []
    for name in names:
        mod = importlib.import_module(f".{name}", __package__)
        ext = mod.EXT
        scratch = out / f"_refs_{name}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        refs = []
        for key in mod.REFS:
            p = scratch / f"{key}.{ext}"
            mod.record(key, p)
            refs.append(p)
        for case in mod.CASES:
            folder = out / case.case
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            with planted(case.fault_id):
                mod.record(case.input_key, folder / f"failed.{ext}")
            mod.record(case.input_key, folder / f"control.{ext}")
            _concat(refs + [folder / f"failed.{ext}"], folder / f"with_refs.{ext}", ext)
            index.append(check_case(case, mod.AGENT, mod.ROUTE, folder, ext))
            print(f"ok {case.case} hops={index[-1]['hops']}", flush=True)
        shutil.rmtree(scratch, ignore_errors=True)
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
