"""Generate suite_zzb: `python benchmarks/heldout/suite_zzb/generate.py OUT [agent ...]`."""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zzb"

from .common import truth_for  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = ["fuel", "rescue", "rides", "snails", "referees", "taxi", "froyo", "fx"]


def _ext(mod) -> str:
    return "json" if mod.ROUTE == "otlp" else "jsonl"


def _combine(ext: str, parts: list[Path], dest: Path) -> None:
    if ext == "jsonl":
        dest.write_text("".join(p.read_text() for p in parts))
        return
    spans = []
    for p in parts:
        spans.extend(json.loads(p.read_text())["resourceSpans"])
    dest.write_text(json.dumps({"resourceSpans": spans}))


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    index = []
    tmp = Path(tempfile.mkdtemp(prefix="zzb-refs-"))
    try:
        for name in names:
            mod = importlib.import_module(f"{__package__}.{name}")
            ext = _ext(mod)
            refs = []
            for key in mod.REFS:
                p = tmp / f"{name}-{key}.{ext}"
                mod.record(key, str(p))
                refs.append(p)
            for case in mod.CASES:
                d = out / case.case
                if d.exists():
                    shutil.rmtree(d)
                d.mkdir(parents=True)
                failed, control = d / f"failed.{ext}", d / f"control.{ext}"
                with planted(case.fault_id):
                    mod.record(case.input_key, str(failed))
                mod.record(case.input_key, str(control))
                _combine(ext, [failed, *refs], d / f"with_refs.{ext}")
                truth = truth_for(case, failed, control, d / f"with_refs.{ext}")
                (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                index.append(truth)
                print(f"{case.case}: root {truth['root']['name']}#{truth['root']['occurrence']} "
                      f"-> {truth['failure']['name']}#{truth['failure']['occurrence']} hops {truth['hops']}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if names == AGENTS:
        (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
