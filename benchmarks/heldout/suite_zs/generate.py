"""Generate suite_zs: `python benchmarks/heldout/suite_zs/generate.py OUT [agent ...]`."""

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
    __package__ = "benchmarks.heldout.suite_zs"

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
os.environ.setdefault("OPENAI_API_KEY", "not-needed")

from .common import check_case  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = ["cinema", "locum", "roofing", "fertiliser", "glamping", "fishing", "bridge", "housing"]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}


def _merge(parts: list[Path], dest: Path, ext: str) -> None:
    if ext == "jsonl":
        dest.write_text("".join(p.read_text() for p in parts))
    else:
        docs = [json.loads(p.read_text()) for p in parts]
        dest.write_text(json.dumps({"resourceSpans": [rs for d in docs for rs in d["resourceSpans"]]}))


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    from trajdebug.testing import FakeModelServer

    index = []
    index_path = out / "index.json"
    if argv[1:] and index_path.exists():
        index = [t for t in json.loads(index_path.read_text()) if t["agent"] not in names]
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        for name in names:
            mod = importlib.import_module(f"{__package__}.{name}")
            ext = EXT[mod.ROUTE]
            server.use(mod.policy)
            refs = Path(tmp) / f"{name}-refs.{ext}"
            for inp in mod.REFS:
                mod.record(inp, refs, server)
            for case in mod.CASES:
                folder = out / case.case
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir(parents=True)
                with planted(case.fault_id):
                    mod.record(mod.INPUTS[case.inp], folder / f"failed.{ext}", server)
                mod.record(mod.INPUTS[case.inp], folder / f"control.{ext}", server)
                _merge([folder / f"failed.{ext}", refs], folder / f"with_refs.{ext}", ext)
                hops = check_case(case, mod, folder, ext)
                truth = {
                    "case": case.case,
                    "agent": mod.AGENT,
                    "route": mod.ROUTE,
                    "fault_kind": case.fault_kind,
                    "root": {"name": case.root, "occurrence": case.root_occ, "kind": case.root_kind},
                    "failure": {"name": case.failure, "occurrence": case.failure_occ},
                    "hops": hops,
                    "description": case.description,
                }
                (folder / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                index.append(truth)
                print(f"{case.case}: ok (hops {hops})", flush=True)
    order = {n: i for i, n in enumerate(AGENTS)}
    index.sort(key=lambda t: (order.get(t["case"].split("_")[1], 99), t["case"]))
    index_path.write_text(json.dumps(index, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
