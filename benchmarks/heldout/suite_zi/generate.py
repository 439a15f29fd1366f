"""Generate suite_zi: python benchmarks/heldout/suite_zi/generate.py OUT [agent ...]"""
from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zi"

from trajdebug.testing import FakeModelServer  # noqa: E402

from .common import check_case, merge_otlp  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = ["archery", "coins", "tailoring", "septic", "rugs", "mural", "velodrome", "pens"]


def _record(mod, server, inp, path, fault):
    server.use(mod.policy)
    with planted(fault):
        mod.record(server, inp, path)


def _combine(mod, failed, refs, out):
    if mod.EXT == "json":
        merge_otlp([failed, *refs], out)
    else:
        out.write_text("".join(Path(p).read_text() for p in (failed, *refs)))


def main(argv):
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    index = []
    tmp = Path(tempfile.mkdtemp(prefix="suite_zi_"))
    try:
        with FakeModelServer(model="fake-model") as server:
            for name in names:
                mod = importlib.import_module(f"{__package__}.{name}")
                refs = []
                for i, inp in enumerate(mod.REFS):
                    p = tmp / f"{name}_ref{i}.{mod.EXT}"
                    _record(mod, server, inp, p, None)
                    refs.append(p)
                for c in mod.CASES:
                    d = out / c.case
                    if d.exists():
                        shutil.rmtree(d)
                    d.mkdir(parents=True)
                    inp = mod.INPUTS[c.main]
                    _record(mod, server, inp, d / f"failed.{mod.EXT}", c.case)
                    _record(mod, server, inp, d / f"control.{mod.EXT}", None)
                    _combine(mod, d / f"failed.{mod.EXT}", refs, d / f"with_refs.{mod.EXT}")
                    truth = check_case(c, mod.AGENT, mod.ROUTE, d, mod.EXT)
                    (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                    index.append(truth)
                    print(f"{c.case}: ok (hops {truth['hops']})", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
