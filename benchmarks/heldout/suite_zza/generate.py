"""Generate suite_zza: `python benchmarks/heldout/suite_zza/generate.py OUT [agent ...]`."""

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
    __package__ = "benchmarks.heldout.suite_zza"

os.environ.setdefault("OPENAI_API_KEY", "sk-local-test")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from trajdebug.testing import FakeModelServer  # noqa: E402

from .common import Case, check_case, write_json  # noqa: E402
from .kit import planted  # noqa: E402

MODULES = ["tannery", "pointe", "insect", "ropeaccess", "silo", "weddingdj", "spectrum", "travelvax"]


def merge(dst: Path, srcs: list[Path], ext: str) -> None:
    if ext == "jsonl":
        dst.write_text("".join(p.read_text() for p in srcs))
    else:
        spans: list = []
        for p in srcs:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        dst.write_text(json.dumps({"resourceSpans": spans}))


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    only = argv[1:] or MODULES
    out.mkdir(parents=True, exist_ok=True)
    truths: list[dict] = []
    t0 = time.time()
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        for modname in MODULES:
            if modname not in only:
                continue
            mod = importlib.import_module(f".{modname}", __package__)
            ext = "json" if mod.ROUTE == "otlp" else "jsonl"
            server.use(mod.policy)
            refs = []
            for key in mod.REFS:
                p = Path(tmp) / f"{modname}-{key}.{ext}"
                mod.record(key, p, server.base_url)
                refs.append(p)
            for spec in mod.CASES:
                c = Case(agent=mod.AGENT, route=mod.ROUTE, **spec)
                folder = out / c.case
                if folder.exists():
                    shutil.rmtree(folder)
                folder.mkdir(parents=True)
                with planted(c.case):
                    mod.record(c.input, folder / f"failed.{ext}", server.base_url)
                mod.record(c.input, folder / f"control.{ext}", server.base_url)
                merge(folder / f"with_refs.{ext}", [folder / f"failed.{ext}", *refs], ext)
                truth = check_case(c, folder, ext)
                write_json(folder / "truth.json", truth)
                truths.append(truth)
            print(f"{modname}: {len(mod.CASES)} cases ok ({time.time() - t0:.1f}s)", flush=True)
    write_json(out / "index.json", truths)
    print(f"{len(truths)} cases in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
