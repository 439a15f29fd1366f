"""Generate the suite_zzn held-out cases: generate.py OUT [agent-module ...]."""
from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import kit  # noqa: E402
import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = ["chiropody", "bungee", "cablecar", "driving", "snooker", "ramen", "watchrepair", "borehole"]
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}
# banned as the start of any word (camelCase and snake_case split); "trajdebug", "default" are fine
BANNED = ("fault", "bug", "wrong", "stale", "planted", "inject", "corrupt")
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def banned_words(text: str) -> set[str]:
    return {w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w.startswith(BANNED)}


def load(path: Path, route: str):
    if route == "otlp":
        from trajdebug.sources.formats import import_path
        res = import_path(path, "otlp")
        return list(res.runs)
    return list(trajdebug.load_runs(str(path)))


def ext(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def record(mod, inp, path: Path, server, case_id):
    kit.set_case(case_id)
    try:
        mod.record(inp, path, server)
    except Exception:
        if os.environ.get("ZZN_VERBOSE"):
            import traceback
            traceback.print_exc()
    finally:
        kit.set_case(None)
    runs = load(path, mod.ROUTE)
    assert len(runs) == 1, (path, len(runs))
    return runs[0]


def join(paths: list[Path], out: Path, route: str) -> None:
    if route == "otlp":
        spans = []
        for p in paths:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(p.read_text() for p in paths))


def find(run, name, occ):
    steps = sorted(run.steps, key=lambda s: (s.start_ns, s.source_index or 0))
    same = [s for s in steps if s.name == name]
    assert len(same) >= occ, (run.name, name, occ, [s.name for s in steps])
    return steps, same[occ - 1]


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    index = []
    with FakeModelServer([]) as server:
        for name in names:
            mod = importlib.import_module(name)
            route, e = mod.ROUTE, ext(mod.ROUTE)
            tmp = out / f"_refs_{name}"
            tmp.mkdir(exist_ok=True)
            refs = []
            for i, inp in enumerate(mod.REFS):
                p = tmp / f"ref{i}.{e}"
                p.unlink(missing_ok=True)
                r = record(mod, inp, p, server, None)
                assert r.outcome == "success", (name, "ref", i, r.outcome)
                refs.append(p)
            assert len(mod.CASES) == 5
            for case in mod.CASES:
                cid = case["id"]
                assert case["kind"] in KINDS, case["kind"]
                d = out / cid
                if d.exists():
                    shutil.rmtree(d)
                d.mkdir()
                failed = record(mod, case["input"], d / f"failed.{e}", server, cid)
                assert failed.outcome == "failure", (cid, failed.outcome)
                control = record(mod, case["input"], d / f"control.{e}", server, None)
                assert control.outcome == "success", (cid, "control", control.outcome)
                join([d / f"failed.{e}", *refs], d / f"with_refs.{e}", route)
                both = load(d / f"with_refs.{e}", route)
                assert len(both) == 5 and sum(r.outcome == "failure" for r in both) == 1, cid
                steps, root = find(failed, *case["root"])
                _, fail = find(failed, *case["failure"])
                assert root.status == "ok", (cid, root.name, root.status)
                assert fail.status == "error", (cid, fail.name, fail.status)
                assert fail.start_ns > root.start_ns, cid
                if case.get("root_kind"):
                    assert root.kind == case["root_kind"], (cid, root.kind)
                hops = steps.index(fail) - steps.index(root)
                truth = {"case": cid, "agent": mod.NAME, "route": route, "fault_kind": case["kind"],
                         "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
                         "failure": {"name": fail.name, "occurrence": case["failure"][1]},
                         "hops": hops, "description": case["desc"]}
                (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                for f in (d / f"failed.{e}", d / f"control.{e}", d / f"with_refs.{e}"):
                    bad = banned_words(f.read_text())
                    assert not bad, (str(f), bad)
                assert not banned_words(case["desc"]), (cid, banned_words(case["desc"]))
                index.append(cid)
                print(f"{cid:14s} {case['kind']:22s} steps={len(steps):3d} hops={hops:3d} root={root.name}#{case['root'][1]}({root.kind}) fail={fail.name}", flush=True)
            shutil.rmtree(tmp)
    (out / "index.json").write_text(json.dumps({"cases": index}, indent=2) + "\n")
    print(f"{len(index)} cases in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
