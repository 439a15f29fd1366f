"""Generate the suite: python benchmarks/heldout/suite_zz/generate.py OUT [agent ...]"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zz"

from .common import ModelHub, check_refs, check_success, check_words, merge, truth_for  # noqa: E402
from .kit import planted  # noqa: E402

MODULES = ["wind_tunnel", "pawn_loans", "meter_routes", "graffiti", "shore_excursions", "booth_alloc",
           "knotweed", "rain_tanks"]


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    only = argv[1:] or MODULES
    out.mkdir(parents=True, exist_ok=True)
    index = []
    with ModelHub() as hub, tempfile.TemporaryDirectory() as tmp:
        for modname in MODULES:
            if modname not in only:
                continue
            mod = importlib.import_module(f"{__package__}.{modname}")
            hub.register(mod.SYSTEM.split("]")[0][1:], mod.policy)
            ext = "json" if mod.ROUTE == "otlp" else "jsonl"
            refs = Path(tmp) / f"{modname}-refs.{ext}"
            for key in mod.REFS:
                mod.record(key, refs, hub.base_url)
            check_success(refs, mod.ROUTE, 4)
            for case in mod.CASES:
                d = out / case.case
                if d.exists():
                    shutil.rmtree(d)
                d.mkdir(parents=True)
                failed, control, with_refs = d / f"failed.{ext}", d / f"control.{ext}", d / f"with_refs.{ext}"
                with planted(case.case):
                    mod.record(case.main_input, failed, hub.base_url)
                mod.record(case.main_input, control, hub.base_url)
                merge(failed, refs, with_refs, mod.ROUTE)
                truth = truth_for(case, mod.ROUTE, failed)
                check_success(control, mod.ROUTE, 1)
                check_refs(with_refs, mod.ROUTE)
                for f in (failed, control, with_refs):
                    check_words(f)
                (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                index.append(truth)
                print(f"{case.case:12s} {mod.ROUTE:14s} {case.fault_kind:22s} root={case.root}#{case.root_occurrence}"
                      f"({truth['root']['kind']}) fail={truth['failure']['name']} hops={truth['hops']}")
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
