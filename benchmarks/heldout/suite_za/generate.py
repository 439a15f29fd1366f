"""Generate suite_za: python -m benchmarks.heldout.suite_za.generate OUT [agent ...]"""
from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OPENAI_API_KEY", "sk-local-test")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from . import common, fakellm  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = ["snow", "clock", "chip", "canal", "truck", "sauna", "oyster", "rowing"]


def _merge(ext, sources, dest):
    if ext == "jsonl":
        dest.write_text("".join(p.read_text() for p in sources))
    else:
        import json
        env = {"resourceSpans": []}
        for p in sources:
            env["resourceSpans"].extend(json.loads(p.read_text())["resourceSpans"])
        dest.write_text(json.dumps(env))


def main(argv):
    out = Path(argv[0])
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    index = []
    tmp = Path(tempfile.mkdtemp(prefix="sza-"))
    with fakellm.Server() as server:
        for name in names:
            mod = importlib.import_module(f".{name}", __package__)
            ext = "json" if mod.ROUTE == "otlp" else "jsonl"
            fakellm.set_policy(mod.policy)

            def record(fid, inp_key, dest):
                if dest.exists():
                    dest.unlink()
                with planted(fid):
                    mod.record(server.base_url, mod.INPUTS[inp_key], str(dest))

            refs = []
            for key in ("ref1", "ref2", "ref3", "ref4"):
                p = tmp / f"{name}-{key}.{ext}"
                record(None, key, p)
                refs.append(p)
            for i, (fid, spec) in enumerate(mod.FAULTS.items(), start=1):
                case = f"za_{name}_{i}"
                d = out / case
                d.mkdir(parents=True, exist_ok=True)
                record(fid, "main", d / f"failed.{ext}")
                record(None, "main", d / f"control.{ext}")
                _merge(ext, [d / f"failed.{ext}", *refs], d / f"with_refs.{ext}")
                common.check_case(d, ext, spec)
                failed = common.load(d / f"failed.{ext}")[0]
                t = common.truth(case, mod.AGENT, mod.ROUTE, spec, failed)
                common.dump(d / "truth.json", t)
                index.append(t)
                print(case, spec["kind"], "ok", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    if argv[1:]:
        return
    common.dump(out / "index.json", index)


if __name__ == "__main__":
    main(sys.argv[1:])
