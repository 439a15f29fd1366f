"""Generate the suite: `python benchmarks/heldout/suite_zq/generate.py OUT [agent ...]`."""

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
    __package__ = "benchmarks.heldout.suite_zq"

os.environ.setdefault("OPENAI_API_KEY", "sk-test-local")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from . import common  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = ["cobble", "lapidary", "bookshop", "orchestra", "lasertag", "zipline", "ferriswheel", "sandfest"]


def _record(mod, key: str, path: Path) -> None:
    """Record one run of the agent on input `key` into `path` (a failing run is expected to raise)."""
    if mod.EXT == "json":
        try:
            mod.record(key)
        except Exception:
            pass
        common.write_otlp(common.take_spans(), path)
        return
    try:
        mod.record(key, path)
    except Exception:
        if not path.exists():
            raise


def _combine(mod, failed: Path, refs: Path, dest: Path) -> None:
    if mod.EXT == "json":
        a = json.loads(failed.read_text())
        b = json.loads(refs.read_text())
        dest.write_text(json.dumps({"resourceSpans": a["resourceSpans"] + b["resourceSpans"]}))
    else:
        dest.write_text(failed.read_text() + refs.read_text())


def _refs_otlp(mod, path: Path) -> None:
    spans = []
    for key in mod.REFS:
        try:
            mod.record(key)
        except Exception:
            pass
        spans.extend(common.take_spans())
    common.write_otlp(spans, path)


def generate_agent(name: str, out: Path, tmp: Path) -> list[dict]:
    mod = importlib.import_module(f".{name}", __package__)
    mod.setup()
    ext = mod.EXT
    refs = tmp / f"{name}_refs.{ext}"
    if ext == "json":
        _refs_otlp(mod, refs)
    else:
        for key in mod.REFS:
            _record(mod, key, refs)
    controls: dict[str, Path] = {}
    truths = []
    for case in mod.CASES:
        cdir = out / case.case
        if cdir.exists():
            shutil.rmtree(cdir)
        cdir.mkdir(parents=True)
        with planted(case.switch):
            _record(mod, case.input_key, cdir / f"failed.{ext}")
        if case.input_key not in controls:
            controls[case.input_key] = tmp / f"{name}_control_{case.input_key}.{ext}"
            _record(mod, case.input_key, controls[case.input_key])
        shutil.copyfile(controls[case.input_key], cdir / f"control.{ext}")
        _combine(mod, cdir / f"failed.{ext}", refs, cdir / f"with_refs.{ext}")
        truth = common.check_case(case, mod.AGENT, mod.ROUTE, cdir, ext)
        (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        truths.append(truth)
    return truths


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    names = argv[1:] or AGENTS
    truths: list[dict] = []
    with tempfile.TemporaryDirectory() as tmpdir:
        for name in names:
            got = generate_agent(name, out, Path(tmpdir))
            truths.extend(got)
            for t in got:
                print(f"{t['case']:<22} {t['route']:<14} {t['fault_kind']:<22} root={t['root']['name']}#"
                      f"{t['root']['occurrence']} ({t['root']['kind']}) failure={t['failure']['name']}#"
                      f"{t['failure']['occurrence']} hops={t['hops']}")
    (out / "index.json").write_text(json.dumps(truths, indent=2) + "\n")
    if common._SERVER is not None:
        common._SERVER.stop()
    print(f"{len(truths)} cases written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
