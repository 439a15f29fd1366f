"""Generate suite_zg: `python benchmarks/heldout/suite_zg/generate.py OUT [agent ...]`."""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zg"

from trajdebug.testing import FakeModelServer  # noqa: E402

from .common import Case, check_case  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = ["surf", "dumpster", "rigging", "drywall", "carwash", "shelter", "music", "waterpolo"]


def _merge(parts: list[Path], dest: Path, ext: str) -> None:
    if ext == "jsonl":
        dest.write_text("".join(p.read_text() for p in parts))
    else:
        spans = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}))


def _record(mod, server, key: str, out: Path, fault: str | None) -> None:
    server.use(mod.policy)
    if out.exists():
        out.unlink()
    with planted(fault):
        try:
            mod.record(server, mod.INPUTS[key], out)
        except Exception as exc:  # the failing run raises out of its final action; the record has it
            if fault is None:
                raise
            del exc


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    index = []
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        for name in names:
            mod = importlib.import_module(f"{__package__}.{name}")
            ext = mod.EXT
            refs = []
            for key in mod.REFS:
                p = Path(tmp) / f"{name}-{key}.{ext}"
                _record(mod, server, key, p, None)
                refs.append(p)
            for spec in mod.CASES_SPEC:
                case = Case(*spec)
                cdir = out / case.case
                if cdir.exists():
                    shutil.rmtree(cdir)
                cdir.mkdir(parents=True)
                _record(mod, server, case.inp, cdir / f"failed.{ext}", case.case)
                _record(mod, server, case.inp, cdir / f"control.{ext}", None)
                _merge([cdir / f"failed.{ext}", *refs], cdir / f"with_refs.{ext}", ext)
                truth = check_case(case, mod, cdir, ext)
                index.append(truth)
                print(f"{case.case:12s} {case.fault_kind:22s} {truth['root']['kind']:9s} hops={truth['hops']}")
    (out / "index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
