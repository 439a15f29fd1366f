"""Generate held-out suite Y: python benchmarks/heldout/suite_y/generate.py OUT [agent ...]"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
for p in (str(ROOT / "src"), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)
os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OTEL_SDK_DISABLED", "false")

from benchmarks.heldout.suite_y import common, kit  # noqa: E402

AGENTS = ["newsprint", "planetarium", "typefaces", "wellpermits", "solarclean", "orchardfrost", "voicecasting", "chandlery"]


def _merge(files: list[str], out: str, ext: str) -> None:
    if ext == "jsonl":
        with open(out, "w", encoding="utf-8") as w:
            for f in files:
                with open(f, encoding="utf-8") as r:
                    w.write(r.read())
    else:
        spans = []
        for f in files:
            with open(f, encoding="utf-8") as r:
                spans.extend(json.load(r)["resourceSpans"])
        with open(out, "w", encoding="utf-8") as w:
            json.dump({"resourceSpans": spans}, w)


def generate(out: Path, names: list[str]) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="suite_y_refs_"))
    cases = []
    try:
        for name in names:
            mod = importlib.import_module(f"benchmarks.heldout.suite_y.{name}")
            session = getattr(mod, "session", None)
            with (session() if session else contextlib.nullcontext()):
                refs = []
                for i, inp in enumerate(mod.REFS):
                    ref = str(tmp / f"{name}_ref{i}.{mod.EXT}")
                    with kit.planted(None):
                        mod.run_once(inp, ref)
                    assert common.outcomes(ref) == ["success"], (name, "ref", i, common.outcomes(ref))
                    common.check_clean(ref)
                    refs.append(ref)
                for fault in mod.FAULTS:
                    d = out / fault.case
                    if d.exists():
                        shutil.rmtree(d)
                    d.mkdir(parents=True)
                    failed, control, with_refs = (str(d / f"{k}.{mod.EXT}") for k in ("failed", "control", "with_refs"))
                    with kit.planted(fault.fault_id):
                        mod.run_once(fault.inp, failed)
                    with kit.planted(None):
                        mod.run_once(fault.inp, control)
                    _merge([failed, *refs], with_refs, mod.EXT)
                    truth = common.truth_for(failed, control, fault, mod.AGENT, mod.ROUTE)
                    assert sorted(common.outcomes(with_refs)) == ["failure"] + ["success"] * len(refs), fault.case
                    for f in (failed, control, with_refs):
                        common.check_clean(f)
                    (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                    cases.append({"case": fault.case, "agent": mod.AGENT, "route": mod.ROUTE,
                                  "fault_kind": fault.kind, "hops": truth["hops"]})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    index = {"suite": "suite_y", "cases": cases}
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return index


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    t0 = time.time()
    names = argv[1:] or AGENTS
    index = generate(Path(argv[0]), names)
    print(f"{len(index['cases'])} cases in {time.time() - t0:.1f}s -> {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
