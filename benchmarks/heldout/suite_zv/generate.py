"""Generate the suite_zv held-out cases: python benchmarks/heldout/suite_zv/generate.py OUT [agent ...]."""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zv"

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from trajdebug.testing import FakeModelServer  # noqa: E402

import importlib  # noqa: E402
from .common import check_case, merge_files  # noqa: E402
from .kit import planted  # noqa: E402

MODULES = ["court_steno", "lost_property", "jigsaw", "tram_timetable", "hot_tub", "riding_stables", "lottery", "passport_booth"]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    wanted = set(argv[1:])
    out.mkdir(parents=True, exist_ok=True)
    index = []
    with FakeModelServer(model="gpt-4o-mini") as server, tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        for modname in MODULES:
            if wanted and modname not in wanted:
                continue
            mod = importlib.import_module(f"{__package__}.{modname}")
            ext = "json" if mod.ROUTE == "otlp" else "jsonl"
            refs = tmpd / f"{mod.AGENT}-refs.{ext}"
            ref_parts = []
            for i, inp in enumerate(mod.REF_INPUTS):
                part = tmpd / f"{mod.AGENT}-ref{i}.{ext}"
                mod.record(inp, part, server)
                ref_parts.append(part)
            merge_files(mod.ROUTE, ref_parts, refs)
            for case in mod.CASES:
                cdir = out / case.case
                if cdir.exists():
                    shutil.rmtree(cdir)
                cdir.mkdir(parents=True)
                with planted(case.case):
                    mod.record(case.main_input, cdir / f"failed.{ext}", server)
                mod.record(case.main_input, cdir / f"control.{ext}", server)
                merge_files(mod.ROUTE, [cdir / f"failed.{ext}", *ref_parts], cdir / f"with_refs.{ext}")
                truth = check_case(case, mod.AGENT, mod.ROUTE, cdir, ext)
                (cdir / "truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
                index.append(truth)
                print(f"{case.case}: ok  hops={truth['hops']}  root={truth['root']['kind']}", flush=True)
    (out / "index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    print(f"{len(index)} cases written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
