"""Generate suite_zf: python benchmarks/heldout/suite_zf/generate.py OUT [agent ...]"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zf"

os.environ.setdefault("OPENAI_API_KEY", "not-needed")

from .common import KINDS, check_forbidden, check_outcomes, merge, truth_for  # noqa: E402
from .kit import planted  # noqa: E402

MODULES = ("paragliding", "mapworks", "deskhub", "permits", "fencing", "podcast", "saddlery", "fishmonger")


def main(argv: list[str]) -> int:
    from trajdebug.testing import FakeModelServer

    out = Path(argv[0]).resolve()
    wanted = argv[1:] or list(MODULES)
    out.mkdir(parents=True, exist_ok=True)
    index = []
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        for name in wanted:
            mod = importlib.import_module(f".{name}", __package__)
            ext = mod.EXT
            refs = []
            for i, key in enumerate(mod.REFS):
                p = Path(tmp) / f"{name}-ref{i}.{ext}"
                mod.record(server, key, p)
                check_outcomes(p, ext, ["success"])
                refs.append(p)
            assert len(mod.CASES) == 5
            for case in mod.CASES:
                d = out / case.case_id
                d.mkdir(parents=True, exist_ok=True)
                for f in d.iterdir():
                    f.unlink()
                failed, control, with_refs = d / f"failed.{ext}", d / f"control.{ext}", d / f"with_refs.{ext}"
                with planted(case.case_id):
                    mod.record(server, case.input_key, failed)
                mod.record(server, case.input_key, control)
                merge([failed, *refs], with_refs, ext)
                check_outcomes(failed, ext, ["failure"])
                check_outcomes(control, ext, ["success"])
                check_outcomes(with_refs, ext, ["failure", "success", "success", "success", "success"])
                truth = truth_for(case, mod.AGENT, mod.ROUTE, failed, ext)
                truth_again = truth_for(case, mod.AGENT, mod.ROUTE, with_refs_failed(with_refs, ext, d), ext)
                assert truth == truth_again, (truth, truth_again)
                for f in (failed, control, with_refs):
                    check_forbidden(f)
                (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                index.append(truth)
                print(f"{case.case_id:10s} {mod.ROUTE:14s} {case.fault_kind:22s} {truth['root']['kind']:9s} hops={truth['hops']}")
    if not argv[1:]:
        kinds = [t["fault_kind"] for t in index]
        assert len(index) == 40, len(index)
        for k in KINDS:
            assert kinds.count(k) >= 2, (k, kinds.count(k))
        assert sum(t["hops"] >= 5 for t in index) >= 12, "too few far roots"
        assert sum(t["hops"] == 1 for t in index) >= 8, "too few adjacent roots"
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return 0


def with_refs_failed(with_refs: Path, ext: str, d: Path) -> Path:
    """The one failed run of with_refs, written alone (to check it is the same run as failed)."""
    from .common import load_runs

    failed_runs = [r for r in load_runs(with_refs, ext) if r.outcome == "failure"]
    assert len(failed_runs) == 1, len(failed_runs)
    return d / f"failed.{ext}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
