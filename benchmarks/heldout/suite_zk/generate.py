"""Write the suite: python benchmarks/heldout/suite_zk/generate.py OUT [agent ...]"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zk"

os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from trajdebug.testing import FakeModelServer  # noqa: E402

import importlib  # noqa: E402

from .common import KINDS, check_case, ext, merge  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = ("trampoline", "wigs", "truffle", "hackathon", "blacksmith", "salvage", "cornmaze", "pinball")


def one(mod, server, inp: str, out: Path, case_id: str | None = None) -> None:
    if out.exists():
        out.unlink()
    server.use(mod.policy)
    try:
        if case_id is None:
            mod.record(server, inp, out)
        else:
            with planted(case_id):
                mod.record(server, inp, out)
    except Exception as exc:  # the failing action raises; the recorded run says so
        if case_id is None:
            raise
        assert "HTTP" in str(exc) or "rejected" in str(exc) or exc, exc


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    names = argv[1:] or list(AGENTS)
    out.mkdir(parents=True, exist_ok=True)
    truths = []
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        for name in names:
            mod = importlib.import_module(f"{__package__}.{name}")
            e = ext(mod.ROUTE)
            refs = Path(tmp) / f"{name}_refs.{e}"
            parts = []
            for i, inp in enumerate(mod.REFS):
                p = Path(tmp) / f"{name}_ref{i}.{e}"
                one(mod, server, inp, p)
                parts.append(p)
            if e == "json":
                spans = []
                for p in parts:
                    spans += json.loads(p.read_text())["resourceSpans"]
                refs.write_text(json.dumps({"resourceSpans": spans}))
            else:
                refs.write_text("".join(p.read_text() for p in parts))
            for case in mod.CASES:
                d = out / case.id
                if d.exists():
                    shutil.rmtree(d)
                d.mkdir(parents=True)
                one(mod, server, case.input, d / f"control.{e}")
                one(mod, server, case.input, d / f"failed.{e}", case.id)
                merge(d / f"failed.{e}", refs, d / f"with_refs.{e}", mod.ROUTE)
                truth = check_case(case, mod.AGENT, mod.ROUTE, d)
                (d / "truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
                truths.append(truth)
                print(f"{case.id:14s} {case.kind:22s} root={case.root[0]}#{case.root[1]} ({truth['root']['kind']}) "
                      f"-> {case.failure[0]} hops={truth['hops']}", flush=True)
    (out / "index.json").write_text(json.dumps(truths, indent=2, sort_keys=True) + "\n")
    if len(names) == len(AGENTS):
        counts = {k: sum(t["fault_kind"] == k for t in truths) for k in KINDS}
        assert len(truths) == 40 and min(counts.values()) >= 2, counts
        assert sum(t["hops"] >= 5 for t in truths) >= 12, "too few far roots"
        assert sum(t["hops"] == 1 for t in truths) >= 8, "too few adjacent roots"
        for name in AGENTS:
            mod = importlib.import_module(f"{__package__}.{name}")
            assert len({c.input for c in mod.CASES}) >= 2, name
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
