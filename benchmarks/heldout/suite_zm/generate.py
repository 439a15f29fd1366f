"""Generate suite_zm: python benchmarks/heldout/suite_zm/generate.py OUT [agent ...]"""
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
    __package__ = "benchmarks.heldout.suite_zm"

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from trajdebug.testing import FakeModelServer  # noqa: E402

from .common import check_forbidden, dispatch, locate, truth_dict  # noqa: E402
from .kit import planted  # noqa: E402

AGENTS = ["alpaca_trek", "calligraphy", "ice_sculpture", "skate_park", "fireworks", "typewriter", "boatyard", "croquet"]


def read_runs(path: Path, route: str) -> list[tuple[str, list[tuple[str, str, bool]]]]:
    """(outcome, steps in start order as (name, kind, errored)) per run."""
    if route == "otlp":
        env = json.loads(path.read_text())
        traces: dict[str, list] = {}
        for rs in env["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    traces.setdefault(sp["traceId"], []).append(sp)
        out = []
        for spans in traces.values():
            spans.sort(key=lambda s: (int(s["startTimeUnixNano"]), s["spanId"]))
            steps = []
            for sp in spans:
                kind = next((a["value"]["stringValue"] for a in sp.get("attributes", [])
                             if a["key"] == "openinference.span.kind"), "")
                steps.append((sp["name"], {"chain": "other", "retriever": "retrieval"}.get(kind.lower(), kind.lower()), sp.get("status", {}).get("code") in (2, "STATUS_CODE_ERROR")))
            root = [s for s in spans if not s.get("parentSpanId")][0]
            out.append(("failure" if root.get("status", {}).get("code") in (2, "STATUS_CODE_ERROR") else "success", steps))
        return out
    import trajdebug
    out = []
    for r in trajdebug.load_runs(str(path)):
        steps = sorted(r.steps, key=lambda s: (s.start_ns or 0, s.source_index or 0))
        out.append((r.outcome, [(s.name, s.kind, s.status == "error") for s in steps]))
    return out


def append(route: str, src: Path, dst: Path) -> None:
    if route == "otlp":
        a = json.loads(dst.read_text()) if dst.exists() else {"resourceSpans": []}
        a["resourceSpans"] += json.loads(src.read_text())["resourceSpans"]
        dst.write_text(json.dumps(a))
    else:
        with dst.open("a") as f:
            f.write(src.read_text())


def main(argv: list[str]) -> None:
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    index = []
    tmp = Path(tempfile.mkdtemp(prefix="suite_zm_"))
    with FakeModelServer(dispatch) as server:
        for modname in names:
            mod = importlib.import_module(f".{modname}", __package__)
            ext = "json" if mod.ROUTE == "otlp" else "jsonl"

            def rec(key, fault, dest):
                part = tmp / f"part_{len(list(tmp.iterdir()))}.{ext}"
                with planted(fault):
                    try:
                        mod.record(key, part, server.base_url)
                    except Exception:
                        pass
                append(mod.ROUTE, part, dest)

            refs = tmp / f"{modname}_refs.{ext}"
            for k in mod.REFS:
                rec(k, None, refs)
            ref_runs = read_runs(refs, mod.ROUTE)
            assert len(ref_runs) == 4 and all(o == "success" for o, _ in ref_runs), (modname, [o for o, _ in ref_runs])
            keys = {c.input_key for c in mod.CASES}
            assert len(keys) >= 2
            for c in mod.CASES:
                d = out / c.case
                if d.exists():
                    shutil.rmtree(d)
                d.mkdir()
                rec(c.input_key, c.fault_id, d / f"failed.{ext}")
                rec(c.input_key, None, d / f"control.{ext}")
                (fo, fsteps), = read_runs(d / f"failed.{ext}", mod.ROUTE)
                (co, _), = read_runs(d / f"control.{ext}", mod.ROUTE)
                assert fo == "failure", (c.case, fo, fsteps)
                assert co == "success", (c.case, co)
                append(mod.ROUTE, d / f"failed.{ext}", d / f"with_refs.{ext}")
                append(mod.ROUTE, refs, d / f"with_refs.{ext}")
                wr = read_runs(d / f"with_refs.{ext}", mod.ROUTE)
                assert [o for o, _ in wr].count("failure") == 1 and len(wr) == 5, c.case
                ri = locate(fsteps, c.root[0], c.root[1])
                fi = locate(fsteps, c.failure[0], c.failure[1])
                assert fsteps[ri][1] == c.root[2], (c.case, fsteps[ri])
                assert fi > ri, (c.case, ri, fi)
                assert fsteps[fi][2], (c.case, "failure step did not error", fsteps[fi])
                assert not fsteps[ri][2] or fi == ri, c.case
                for f in d.iterdir():
                    check_forbidden(f.read_text(), str(f))
                t = truth_dict(c, mod.NAME, mod.ROUTE, fi - ri)
                check_forbidden(c.description, c.case)
                (d / "truth.json").write_text(json.dumps(t, indent=2, sort_keys=True) + "\n")
                index.append(t)
    shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    print(f"{len(index)} cases written to {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
