"""Generate suite_zr: `python benchmarks/heldout/suite_zr/generate.py OUT [agent ...]`."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zr"

os.environ.setdefault("OPENAI_API_KEY", "test-key")
os.environ["TRAJDEBUG_STORE"] = os.path.join(tempfile.gettempdir(), "suite_zr_unused.db")

from . import common, kit  # noqa: E402

AGENTS = ["tugboat", "crane", "removals", "greenhouse", "scuba", "recitals", "photography", "compost"]


def _merge(ext: str, parts: list[Path], out: Path) -> None:
    if ext == "jsonl":
        out.write_text("".join(p.read_text() for p in parts))
    else:
        spans = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    index = []
    for name in names:
        mod = importlib.import_module(f".{name}", __package__)
        ext = mod.EXT
        work = Path(tempfile.mkdtemp(prefix=f"zr-{name}-"))
        refs = []
        for i, key in enumerate(mod.REFS):
            p = work / f"ref{i}.{ext}"
            mod.record(key, p)
            refs.append(p)
        for c in mod.CASES:
            d = out / c["case"]
            if d.exists():
                shutil.rmtree(d)
            d.mkdir(parents=True)
            with kit.planted(c["fault_id"]):
                mod.record(c["input"], d / f"failed.{ext}")
            mod.record(c["input"], d / f"control.{ext}")
            _merge(ext, [d / f"failed.{ext}", *refs], d / f"with_refs.{ext}")
            t = common.truth(c["case"], mod.AGENT, mod.ROUTE, c["kind"], c["root"], c["failure"], c["description"])
            t = common.check_case(d, t, ext)
            (d / "truth.json").write_text(common.dump(t))
            index.append(t)
            print(f"{c['case']}: {c['kind']} root={t['root']['name']}#{t['root']['occurrence']}({t['root']['kind']}) "
                  f"fail={t['failure']['name']}#{t['failure']['occurrence']} hops={t['hops']}", flush=True)
        shutil.rmtree(work, ignore_errors=True)
    if not argv[1:]:
        (out / "index.json").write_text(common.dump(index))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
