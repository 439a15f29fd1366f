"""Write the suite: python benchmarks/heldout/suite_zo/generate.py OUT [agent ...]."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zo"

from . import agility, gramophone, lacrosse, minigolf, organ, puppet, quilting, sushi  # noqa: E402
from .common import check_case, merge_otlp  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = {"organ": organ, "quilting": quilting, "lacrosse": lacrosse, "minigolf": minigolf, "sushi": sushi, "agility": agility, "gramophone": gramophone, "puppet": puppet}


def _record(mod, key: str, path: Path) -> None:
    if path.exists():
        path.unlink()
    mod.record(key, path)


def _combine(mod, failed: Path, refs: Path, out: Path) -> None:
    if mod.EXT == "json":
        docs = [json.loads(failed.read_text()), json.loads(refs.read_text())]
        out.write_text(json.dumps(merge_otlp(docs), sort_keys=True))
    else:
        out.write_text(failed.read_text() + refs.read_text())


def generate_agent(mod, out: Path, scratch: Path) -> list[dict]:
    from trajdebug.testing import FakeModelServer

    truths = []
    with FakeModelServer(mod.policy) as server:
        mod.BASE_URL = server.base_url
        if hasattr(mod, "setup"):
            mod.setup(server.base_url)
        refs = scratch / f"{mod.__name__.rsplit('.', 1)[-1]}-refs.{mod.EXT}"
        if refs.exists():
            refs.unlink()
        if mod.EXT == "json":
            mod.record_many(mod.REFS, refs)
        else:
            for key in mod.REFS:
                mod.record(key, refs)
        for case in mod.CASES:
            d = out / case.case
            d.mkdir(parents=True, exist_ok=True)
            with planted(case.fault_id):
                _record(mod, case.input_key, d / f"failed.{mod.EXT}")
            _record(mod, case.input_key, d / f"control.{mod.EXT}")
            _combine(mod, d / f"failed.{mod.EXT}", refs, d / f"with_refs.{mod.EXT}")
            truth = check_case(case, d, mod.EXT)
            (d / "truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
            truths.append(truth)
    return truths


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or list(AGENTS)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OPENAI_API_KEY", "local-test")
    t0 = time.time()
    truths: list[dict] = []
    scratch = Path(tempfile.mkdtemp(prefix="suite_zo_"))
    try:
        for name in names:
            truths += generate_agent(AGENTS[name], out, scratch)
            print(f"{name}: {len([t for t in truths if t['agent'] == AGENTS[name].AGENT])} cases", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    kinds = {t["fault_kind"] for t in truths}
    if not argv[1:]:
        assert len(truths) == 40 and len(kinds) == 16, (len(truths), len(kinds))
    (out / "index.json").write_text(json.dumps(truths, indent=2, sort_keys=True) + "\n")
    print(f"{len(truths)} cases in {time.time() - t0:.1f}s -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
