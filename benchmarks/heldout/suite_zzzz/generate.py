"""Generate held-out suite ZZZZ: 8 agents x 5 cases of failing runs, with controls, references and truth.

Usage: python generate.py OUT [agent ...]   (agents by module name: bakery, bikeshop, ...)
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2] / "src"
for p in (str(SRC), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

from openai import OpenAI  # noqa: E402
from zzzz_agents import MODULES  # noqa: E402
from zzzz_agents import _common as common  # noqa: E402
from zzzz_agents._common import Ctx  # noqa: E402

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402


KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}
ROUTES = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
BANNED = re.compile(r"fault|bug|wrong|stale|inject|corrupt|planted", re.I)


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: s.start_ns or 0)


def locate(steps: list, name: str, occurrence: int) -> int:
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, f"step {name!r} #{occurrence} not found ({len(hits)} of that name)"
    return hits[occurrence - 1]


def scan_words(run, where: str) -> None:
    """The recorded data (names, inputs, outputs, errors, descriptions) holds none of the banned words."""
    for s in run.steps:
        err = s.error
        blob = json.dumps([s.name, s.input, s.output, err and [err.type, err.message], s.attributes], default=str)
        hit = BANNED.search(blob)
        assert not hit, f"{where}: step {s.name!r} records {hit.group(0)!r}: ...{blob[max(0, hit.start() - 80):hit.end() + 80]}"
    meta = {k: v for k, v in (run.metadata or {}).items() if k != "env"}
    hit = BANNED.search(json.dumps(meta, default=str) + json.dumps(run.failure_reason or "", default=str))
    assert not hit, f"{where}: run metadata records {hit.group(0)!r}"


def load_one(path: Path):
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def combine(route: str, files: list[Path], out: Path) -> None:
    if route == "otlp":
        spans: list = []
        for f in files:
            spans += json.loads(f.read_text())["resourceSpans"]
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(f.read_text() for f in files))


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or MODULES
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    case_ids: list[str] = []
    seen_kinds: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="zzzz-") as tmpd, FakeModelServer(lambda r: "") as server:
        tmp = Path(tmpd)
        ctx = Ctx(server=server, client=OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0),
                  aclient=None,
                  model=server.model)
        common.CTX = ctx
        for mod_name in names:
            mod = importlib.import_module(f"zzzz_agents.{mod_name}")
            ext = ROUTES[mod.ROUTE]
            assert len(mod.INPUTS) == 5 and (len(mod.CASES) == 5 or argv[1:]), mod_name
            server.use(mod.brain)
            mod.SWITCH = None
            passing: list[Path] = []
            for i, inp in enumerate(mod.INPUTS):
                f = tmp / f"{mod_name}.pass{i}.{ext}"
                mod.record(inp, f, ctx)
                run = load_one(f)
                assert run.outcome == "success", f"{mod_name} input {i}: {run.outcome} {run.failure_reason}"
                assert run.name == mod.NAME, (run.name, mod.NAME)
                assert 10 <= len(run.steps) <= 60, f"{mod_name} input {i}: {len(run.steps)} steps"
                scan_words(run, f"{mod_name} pass {i}")
                passing.append(f)
            for case in mod.CASES:
                cid, i = case["id"], case["input"]
                assert case["kind"] in KINDS, case["kind"]
                seen_kinds[case["kind"]] = seen_kinds.get(case["kind"], 0) + 1
                mod.SWITCH = case["switch"]
                try:
                    f = tmp / f"{cid}.failed.{ext}"
                    mod.record(mod.INPUTS[i], f, ctx)
                finally:
                    mod.SWITCH = None
                cdir = out / cid
                cdir.mkdir(parents=True, exist_ok=True)
                shutil.copy(f, cdir / f"failed.{ext}")
                shutil.copy(passing[i], cdir / f"control.{ext}")
                combine(mod.ROUTE, [f] + [p for j, p in enumerate(passing) if j != i], cdir / f"with_refs.{ext}")
                failed = load_one(cdir / f"failed.{ext}")
                control = load_one(cdir / f"control.{ext}")
                assert failed.outcome == "failure", f"{cid}: failed run is {failed.outcome}"
                assert control.outcome == "success", f"{cid}: control is {control.outcome}"
                refs = trajdebug.load_runs(str(cdir / f"with_refs.{ext}"))
                assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, f"{cid}: with_refs"
                assert all(r.name == mod.NAME for r in refs), f"{cid}: names {[r.name for r in refs]}"
                scan_words(failed, cid)
                steps = ordered(failed)
                ri = locate(steps, *case["root"])
                fi = locate(steps, *case["failure"])
                root, fail = steps[ri], steps[fi]
                assert root.status == "ok", f"{cid}: root {root.name} is {root.status}"
                assert fail.status == "error", f"{cid}: failure {fail.name} is {fail.status}"
                assert ri < fi, f"{cid}: root at {ri} is not before the failure at {fi}"
                assert 10 <= len(steps) <= 60, f"{cid}: {len(steps)} steps"
                truth = {"case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["kind"],
                         "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
                         "failure": {"name": fail.name, "occurrence": case["failure"][1]},
                         "hops": fi - ri, "description": case["description"]}
                (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                case_ids.append(cid)
                print(f"{cid:14s} {case['kind']:22s} root {root.name}#{case['root'][1]} ({root.kind}) "
                      f"-> {fail.name}#{case['failure'][1]} hops {fi - ri} steps {len(steps)}")
    (out / "index.json").write_text(json.dumps({"cases": case_ids}, indent=2) + "\n")
    if not argv[1:]:
        assert len(case_ids) == 40, len(case_ids)
        assert set(seen_kinds) == KINDS and all(2 <= n <= 4 for n in seen_kinds.values()), seen_kinds
    dt = time.time() - t0
    print(f"{len(case_ids)} cases in {dt:.1f} s -> {out}")
    assert dt < 60 or argv[1:], f"took {dt:.1f} s"
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
