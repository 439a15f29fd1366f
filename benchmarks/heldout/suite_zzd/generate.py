"""Generate suite_zzd: `python benchmarks/heldout/suite_zzd/generate.py OUT [agent ...]`."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zzd"

from trajdebug.testing import FakeModelServer

from . import allergy, brass, census, olive, scooter, shelter, slots, volcano
from .common import check_case
from .kit import planted

MODULES = [slots, census, olive, allergy, volcano, brass, shelter, scooter]


def ext_of(mod) -> str:
    return "json" if mod.ROUTE == "otlp" else "jsonl"


def merge(parts: list[Path], dest: Path, ext: str) -> None:
    if ext == "jsonl":
        dest.write_text("".join(p.read_text() for p in parts))
        return
    spans: list = []
    for p in parts:
        spans.extend(json.loads(p.read_text())["resourceSpans"])
    dest.write_text(json.dumps({"resourceSpans": spans}))


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    wanted = set(argv[1:])
    mods = [m for m in MODULES if not wanted or m.AGENT in wanted or m.__name__.rsplit(".", 1)[-1] in wanted]
    out.mkdir(parents=True, exist_ok=True)
    truths: list[dict] = []
    t0 = time.monotonic()
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        for mod in mods:
            ext = ext_of(mod)
            refs = []
            for i, key in enumerate(mod.REFS):
                p = Path(tmp) / f"{mod.AGENT}-ref{i}.{ext}"
                mod.record(server, key, p)
                refs.append(p)
            for case in mod.CASES:
                folder = out / case.id
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir(parents=True)
                failed = folder / f"failed.{ext}"
                with planted(case.fault_id):
                    mod.record(server, case.main_input, failed)
                mod.record(server, case.main_input, folder / f"control.{ext}")
                merge([*refs, failed], folder / f"with_refs.{ext}", ext)
                truth = check_case(case, mod.AGENT, mod.ROUTE, folder, ext)
                (folder / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                truths.append(truth)
            print(f"{mod.AGENT}: {len(mod.CASES)} cases ok ({time.monotonic() - t0:.1f}s)", flush=True)
    (out / "index.json").write_text(json.dumps(truths, indent=2) + "\n")
    print(f"{len(truths)} cases written to {out} in {time.monotonic() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
