"""Generate the suite: python benchmarks/heldout/suite_zh/generate.py OUT [agent ...]."""
from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zh"

os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from trajdebug.testing import FakeModelServer  # noqa: E402

from .common import check_case, merge_jsonl, merge_otlp, reset, truth  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = ["yoga", "notary", "nursery", "boardgame", "gutter", "pest", "band", "hotsauce"]


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    index = []
    with FakeModelServer(model="scripted-policy") as server, tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        for name in names:
            mod = importlib.import_module(f".{name}", __package__)
            server.use(mod.policy)
            ext = mod.EXT
            merge = merge_otlp if ext == "json" else merge_jsonl
            ref_files = []
            for i, key in enumerate(mod.REFS):
                p = tmpd / f"{name}-ref{i}.{ext}"
                reset(p)
                mod.record(key, None, p, server)
                ref_files.append(p)
            for case_id, kind, key, root, failure, desc in mod.CASES:
                d = out / case_id
                d.mkdir(parents=True, exist_ok=True)
                failed, control = d / f"failed.{ext}", d / f"control.{ext}"
                for p in (failed, control, d / f"with_refs.{ext}"):
                    reset(p)
                with planted(case_id):
                    mod.record(key, case_id, failed, server)
                mod.record(key, None, control, server)
                merge([failed, *ref_files], d / f"with_refs.{ext}")
                t = truth(case_id, mod.AGENT, mod.ROUTE, kind,
                          {"name": root[0], "occurrence": root[1], "kind": root[2]},
                          {"name": failure, "occurrence": None}, desc)
                check_case(t, d, ext)
                (d / "truth.json").write_text(json.dumps(t, indent=2, sort_keys=True) + "\n")
                index.append(t)
                print(f"{case_id}: ok hops={t['hops']}", flush=True)
    (out / "index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
