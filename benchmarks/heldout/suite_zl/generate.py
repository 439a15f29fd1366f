"""Generate suite_zl: python benchmarks/heldout/suite_zl/generate.py OUT [agent ...]"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zl"

os.environ.setdefault("OPENAI_API_KEY", "test")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from openai import OpenAI  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

from .common import FORBIDDEN, check_words, find, load_steps  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = ["bagpipe", "pickles", "orienteering", "showcave", "stamps", "farrier", "signs", "acoustic"]


def ext(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def merge(route: str, parts: list[Path], out: Path) -> None:
    if route == "otlp":
        env = {"resourceSpans": []}
        for p in parts:
            env["resourceSpans"].extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps(env))
    else:
        out.write_text("".join(p.read_text() for p in parts))


def one_run(route: str, path: Path):
    runs = load_steps(path, route)
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    work = out / "_work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    index = []
    with FakeModelServer() as server:
        ctx = {"base_url": server.base_url, "client": OpenAI(base_url=server.base_url, api_key="test", max_retries=0)}
        for agent in names:
            mod = importlib.import_module(f".{agent}", __package__)
            server.use(mod.policy)
            e = ext(mod.ROUTE)
            refs = work / f"{agent}_refs.{e}"
            ref_parts = []
            for r in mod.REFS:
                p = work / f"{agent}_{r}.{e}"
                mod.run_case(ctx, r, str(p))
                run = one_run(mod.ROUTE, p)
                assert run.outcome == "success", f"{agent} reference {r}: {run.outcome}"
                ref_parts.append(p)
            merge(mod.ROUTE, ref_parts, refs)
            for i, (fid, kind, inp, root, rocc, rkind, fail, focc, desc) in enumerate(mod.CASES, 1):
                cid = f"zl_{agent}_{i}"
                cdir = out / cid
                shutil.rmtree(cdir, ignore_errors=True)
                cdir.mkdir()
                failed, control, with_refs = (cdir / f"{n}.{e}" for n in ("failed", "control", "with_refs"))
                with planted(fid):
                    mod.run_case(ctx, inp, str(failed))
                mod.run_case(ctx, inp, str(control))
                merge(mod.ROUTE, [failed, refs], with_refs)
                frun = one_run(mod.ROUTE, failed)
                crun = one_run(mod.ROUTE, control)
                assert frun.outcome == "failure", f"{cid}: failed run outcome {frun.outcome}"
                assert crun.outcome == "success", f"{cid}: control outcome {crun.outcome}"
                allr = load_steps(with_refs, mod.ROUTE)
                assert len(allr) == 5 and sum(r.outcome == "failure" for r in allr) == 1, f"{cid}: with_refs"
                assert sum(r.outcome == "success" for r in allr) == 4, f"{cid}: with_refs refs"
                ri, rs = find(frun, root, rocc)
                fi, fs = find(frun, fail, focc)
                assert rs.kind == rkind, f"{cid}: root kind {rs.kind} != {rkind}"
                assert fs.start_ns > rs.start_ns and fi > ri, f"{cid}: failure does not start after root"
                assert fs.status == "error", f"{cid}: failure step {fail} has status {fs.status}"
                assert rs.status != "error", f"{cid}: root step {root} raised"
                for p in (failed, control, with_refs):
                    check_words(p)
                truth = {
                    "case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": kind,
                    "root": {"name": root, "occurrence": rocc, "kind": rkind},
                    "failure": {"name": fail, "occurrence": focc},
                    "hops": fi - ri, "description": desc,
                }
                (cdir / "truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
                index.append(truth)
                print(f"{cid:28s} {mod.ROUTE:14s} {kind:22s} {root}#{rocc}({rkind}) -> {fail}#{focc} hops={fi - ri}")
    (out / "index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    for t in index:  # the descriptions too (the mandated key names are not recorded text)
        assert not FORBIDDEN.search(t["description"]), t["case"]
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
