"""Write suite_ze: python benchmarks/heldout/suite_ze/generate.py OUT [agent ...]."""

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
    __package__ = "benchmarks.heldout.suite_ze"

from . import common  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = ["groom", "tutor", "bowling", "carpet", "festival", "skirental", "tea", "drone"]


def combine(route: str, parts: list[Path], out: Path) -> None:
    if route == "otlp":
        spans: list = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(p.read_text() for p in parts))


def main(argv: list[str]) -> int:
    import os

    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
    os.environ["OPENAI_API_KEY"] = "sk-test-local"
    from trajdebug.testing import FakeModelServer

    out = Path(argv[0]).resolve()
    chosen = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    index = []
    t0 = time.time()
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        common.BASE_URL["url"] = server.base_url
        for name in chosen:
            mod = importlib.import_module(f"{__package__}.{name}")
            server.use(mod.policy)
            ext = "json" if mod.ROUTE == "otlp" else "jsonl"
            refs = Path(tmp) / f"{name}-refs.{ext}"
            ref_parts = []
            for i, inp in enumerate(mod.REF_INPUTS):
                part = Path(tmp) / f"{name}-ref{i}.{ext}"
                with planted(None):
                    mod.record(inp, part)
                ref_parts.append(part)
            combine(mod.ROUTE, ref_parts, refs)
            for case in mod.CASES:
                d = out / case.case
                if d.exists():
                    shutil.rmtree(d)
                d.mkdir(parents=True)
                failed, control, with_refs = d / f"failed.{ext}", d / f"control.{ext}", d / f"with_refs.{ext}"
                with planted(case.switch):
                    mod.record(case.main_input, failed)
                mod.record(case.main_input, control)
                combine(mod.ROUTE, [failed, refs], with_refs)
                truth = common.check_case(case, mod.NAME, mod.ROUTE, failed, control, with_refs)
                common.dump(d / "truth.json", truth)
                index.append(truth)
                print(f"{case.case}: ok (hops {truth['hops']}, root kind {truth['root']['kind']})", flush=True)
    common.dump(out / "index.json", index)
    print(f"{len(index)} cases in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
