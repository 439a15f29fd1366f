"""Generate suite_zzzs: python benchmarks/heldout/suite_zzzs/generate.py OUT [agent-module ...]"""
from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "..", "src"))
if os.path.isdir(SRC) and SRC not in sys.path:
    sys.path.insert(0, SRC)
os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

# The agents run from a neutral copy of their modules, so tracebacks name a plain folder, not this suite's.
_COPY = tempfile.mkdtemp(prefix="shop-")
_AGENT_DIR = os.path.join(_COPY, "workshop_agents")
os.makedirs(_AGENT_DIR)
for _f in os.listdir(HERE):
    if _f.endswith(".py") and _f != "generate.py":
        shutil.copyfile(os.path.join(HERE, _f), os.path.join(_AGENT_DIR, _f))
sys.path.remove(HERE)
sys.path.insert(0, _AGENT_DIR)

from suite_common import WORDS  # noqa: E402

AGENTS = [
    "ring_commissions",
    "gem_cutting",
    "soap_batches",
    "candle_wholesale",
    "chocolate_boxes",
    "seasonal_runs",
    "catering_orders",
    "touring_shows",
]
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index or 0))


def find(steps, name, occurrence):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    if occurrence == "last":
        return hits[-1]
    assert len(hits) >= occurrence, f"{name} #{occurrence}: only {len(hits)} in {[s.name for s in steps]}"
    return hits[occurrence - 1]


def occ(steps, index):
    return sum(1 for s in steps[: index + 1] if s.name == steps[index].name)


def load_one(path):
    runs = trajdebug.load_runs(path)
    assert len(runs) == 1, (path, len(runs))
    return runs[0]


def check_words(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = WORDS.search(text)
    assert not m, f"{path}: recorded text holds {m.group(0)!r} near {text[max(0, m.start() - 80):m.end() + 80]!r}"


def concat(paths, ext, dest):
    if ext == "jsonl":
        with open(dest, "w") as out:
            for p in paths:
                with open(p) as f:
                    data = f.read()
                out.write(data if data.endswith("\n") else data + "\n")
    else:
        spans = []
        for p in paths:
            with open(p) as f:
                spans.extend(json.load(f)["resourceSpans"])
        with open(dest, "w") as out:
            json.dump({"resourceSpans": spans}, out)


def reset(mod):
    for name in mod.SWITCHES:
        setattr(mod, name, False)


def generate_agent(mod, out, server, tmp):
    ext = "json" if mod.ROUTE == "otlp" else "jsonl"
    passing = []
    reset(mod)
    for i, inp in enumerate(mod.INPUTS):
        p = os.path.join(tmp, f"{mod.RUN_NAME}-{i}.{ext}")
        if os.path.exists(p):
            os.remove(p)
        mod.record(inp, p, server)
        run = load_one(p)
        assert run.outcome == "success", (mod.RUN_NAME, i, run.outcome, [(s.name, s.status, s.error) for s in run.steps if s.status == "error"])
        assert run.name == mod.RUN_NAME, (run.name, mod.RUN_NAME)
        passing.append(p)
    ids = []
    assert len(mod.CASES) == 5
    for case in mod.CASES:
        cid = case["id"]
        assert case["fault_kind"] in KINDS, case
        cdir = os.path.join(out, cid)
        os.makedirs(cdir, exist_ok=True)
        failed = os.path.join(cdir, f"failed.{ext}")
        if os.path.exists(failed):
            os.remove(failed)
        reset(mod)
        setattr(mod, case["switch"], True)
        try:
            mod.record(mod.INPUTS[case["input"]], failed, server)
        finally:
            reset(mod)
        run = load_one(failed)
        assert run.outcome == "failure", (cid, run.outcome)
        steps = ordered(run)
        ri = find(steps, case["root"]["name"], case["root"]["occurrence"])
        fi = find(steps, case["failure"]["name"], case["failure"]["occurrence"])
        root, fail = steps[ri], steps[fi]
        assert root.status == "ok", (cid, root.name, root.status, root.error)
        assert fail.status == "error", (cid, fail.name, fail.status)
        assert fi > ri and fail.start_ns >= root.start_ns, (cid, ri, fi)
        if case["root"].get("kind"):
            assert root.kind == case["root"]["kind"], (cid, root.kind, case["root"]["kind"])
        shutil.copyfile(passing[case["input"]], os.path.join(cdir, f"control.{ext}"))
        others = [p for j, p in enumerate(passing) if j != case["input"]]
        concat([failed] + others, ext, os.path.join(cdir, f"with_refs.{ext}"))
        refs = trajdebug.load_runs(os.path.join(cdir, f"with_refs.{ext}"))
        assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, (cid, [r.outcome for r in refs])
        assert all(r.outcome in ("success", "failure") for r in refs)
        assert load_one(os.path.join(cdir, f"control.{ext}")).outcome == "success"
        truth = {
            "case": cid,
            "agent": mod.RUN_NAME,
            "route": mod.ROUTE,
            "fault_kind": case["fault_kind"],
            "root": {"name": root.name, "occurrence": occ(steps, ri), "kind": root.kind},
            "failure": {"name": fail.name, "occurrence": occ(steps, fi)},
            "hops": fi - ri,
            "description": case["description"],
        }
        assert not WORDS.search(case["description"]), cid
        with open(os.path.join(cdir, "truth.json"), "w") as f:
            json.dump(truth, f, indent=2)
        for name in ("failed", "control", "with_refs"):
            check_words(os.path.join(cdir, f"{name}.{ext}"))
        ids.append(cid)
    return ids


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    ids = []
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer(lambda r: "ok") as server:
        for name in names:
            mod = importlib.import_module(name)
            got = generate_agent(mod, out, server, tmp)
            print(f"{mod.RUN_NAME}: {len(got)} cases", flush=True)
            ids.extend(got)
    shutil.rmtree(_COPY, ignore_errors=True)
    index_path = os.path.join(out, "index.json")
    with open(index_path, "w") as f:
        json.dump({"cases": ids}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
