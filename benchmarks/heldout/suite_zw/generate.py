"""Write the suite: python benchmarks/heldout/suite_zw/generate.py OUT [agent ...]."""

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
    __package__ = "benchmarks.heldout.suite_zw"

os.environ.setdefault("OPENAI_API_KEY", "test")
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "0"

from trajdebug.testing import FakeModelServer  # noqa: E402

from .common import check_case  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = ["trail_crew", "exam_centre", "charter", "flatpack", "cartridge", "porter", "streetlight", "treefarm"]


def _merge(ext: str, parts: list[Path], out: Path) -> None:
    if ext == "jsonl":
        out.write_text("".join(p.read_text() for p in parts))
    else:
        spans = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    wanted = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    index = []
    t0 = time.time()
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        for name in wanted:
            mod = importlib.import_module(f".{name}", __package__)
            ext = mod.EXT
            refs = tmpdir / f"{name}-refs.{ext}"
            ref_parts = []
            for i, inp in enumerate(mod.REFS):
                part = tmpdir / f"{name}-ref{i}.{ext}"
                mod.record(inp, str(part), server)
                ref_parts.append(part)
            _merge(ext, ref_parts, refs)
            for case in mod.CASES:
                cdir = out / case.case
                if cdir.exists():
                    shutil.rmtree(cdir)
                cdir.mkdir(parents=True)
                failed, control, with_refs = (cdir / f"failed.{ext}", cdir / f"control.{ext}", cdir / f"with_refs.{ext}")
                with planted(case.case):
                    mod.record(case.input, str(failed), server)
                mod.record(case.input, str(control), server)
                _merge(ext, [failed, refs], with_refs)
                hops = check_case(case, mod.NAME, failed, control, with_refs)
                truth = {
                    "case": case.case,
                    "agent": mod.NAME,
                    "route": mod.ROUTE,
                    "fault_kind": case.fault_kind,
                    "root": {"name": case.root, "occurrence": case.root_occurrence, "kind": case.root_kind},
                    "failure": {"name": case.failure, "occurrence": case.failure_occurrence},
                    "hops": hops,
                    "description": case.description,
                }
                (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                index.append(truth)
                print(f"{case.case:28s} {mod.ROUTE:14s} {case.fault_kind:22s} hops={hops}", flush=True)
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    print(f"{len(index)} cases in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
