"""Generate suite_zc: python benchmarks/heldout/suite_zc/generate.py OUT [agent ...]"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zc"

from trajdebug.testing import FakeModelServer

from .common import truth_for
from .kit import planted

MODULES = ["bakery", "prosthetics", "beach_huts", "choir", "icecream_vans", "circus_tour", "seed_potato", "core_samples"]


def merge(parts: list[Path], out: Path, ext: str) -> None:
    if ext == "jsonl":
        out.write_text("".join(p.read_text(encoding="utf-8") for p in parts), encoding="utf-8")
    else:
        spans = []
        for p in parts:
            spans.extend(json.loads(p.read_text(encoding="utf-8"))["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}), encoding="utf-8")


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    wanted = argv[1:] or MODULES
    out.mkdir(parents=True, exist_ok=True)
    index = []
    t0 = time.time()
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        for modname in wanted:
            mod = importlib.import_module(f"{__package__}.{modname}")
            server.use(mod.policy)
            ext = mod.EXT
            refs = []
            for i, inp in enumerate(mod.REFS):
                p = tmpdir / f"{modname}-ref{i}.{ext}"
                mod.record(inp, str(p), server)
                refs.append(p)
            for case in mod.CASES:
                cdir = out / case.case
                if cdir.exists():
                    shutil.rmtree(cdir)
                cdir.mkdir(parents=True)
                failed, control, with_refs = (cdir / f"{n}.{ext}" for n in ("failed", "control", "with_refs"))
                with planted(case.fault_id):
                    mod.record(mod.INPUTS[case.input_key], str(failed), server)
                mod.record(mod.INPUTS[case.input_key], str(control), server)
                merge([failed, *refs], with_refs, ext)
                truth = truth_for(case, mod.AGENT, mod.ROUTE, failed, control, with_refs)
                (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
                index.append(truth)
                print(f"{case.case} {mod.ROUTE:13} {case.fault_kind:22} root={truth['root']} hops={truth['hops']}")
    index.sort(key=lambda t: t["case"])
    if not argv[1:]:
        (out / "index.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    print(f"{len(index)} cases in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
