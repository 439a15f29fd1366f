"""Generate the suite's cases: `python benchmarks/heldout/suite_zzj/generate.py OUT [agent-module ...]`.

For each agent module and each of its cases, records with one `FakeModelServer` on 127.0.0.1:
- failed.<ext>: the case's input with its switch on (a failed run),
- control.<ext>: the same input, all switches off (a passing run),
- with_refs.<ext>: the failed run followed by four passing runs of the agent on other inputs,
and writes truth.json per case and index.json for the suite.  No network; deterministic truth files.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
os.environ.setdefault("OPENAI_API_KEY", "not-needed")

import kit  # noqa: E402

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402


AGENTS = [
    "kombucha_batches",
    "pig_shipments",
    "marquee_quotes",
    "embroidery_orders",
    "bouncy_bookings",
    "shoe_dispatch",
    "location_scout",
    "neon_estimates",
]
KINDS = {
    "wrong_retrieval",
    "unit_error",
    "truncated_result",
    "swallowed_error",
    "stale_data",
    "off_by_one",
    "lossy_parsing",
    "context_pollution",
    "wrong_tool_args",
    "wrong_routing",
    "tool_ignores_argument",
    "subagent_wrong_entity",
    "plan_error",
    "hallucinated_value",
    "format_drift",
    "bad_memory_write",
}
FORBIDDEN = re.compile(r"(?<![A-Za-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


def check_words(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    text = text.replace("\\n", " ").replace("\\t", " ").replace('\\"', " ")
    hit = FORBIDDEN.search(text)
    assert hit is None, (
        f"{path}: recorded text holds {hit.group(0)!r} near {text[max(0, hit.start() - 60) : hit.end() + 60]!r}"
    )


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def join(route: str, texts: list[str]) -> str:
    if route == "otlp":
        spans: list = []
        for t in texts:
            spans.extend(json.loads(t).get("resourceSpans", []))
        return json.dumps({"resourceSpans": spans})
    return "".join(t if t.endswith("\n") else t + "\n" for t in texts)


def load_one(path: Path) -> trajdebug.Run:
    runs = trajdebug.load_runs(path)
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def ordered(run: trajdebug.Run) -> list:
    return sorted(run.steps, key=lambda s: s.start_ns if s.start_ns is not None else 0)


def record(mod, server, inp, tmp: Path, label: str) -> str:
    path = tmp / f"{mod.__name__}-{label}.{ext_of(mod.ROUTE)}"
    if path.exists():
        path.unlink()
    mod.record(server, inp, str(path))
    trajdebug.flush()
    return path.read_text(encoding="utf-8")


def generate(out: Path, names: list[str]) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="suite_zzj_"))
    case_ids: list[str] = []
    try:
        with FakeModelServer() as server:
            for name in names:
                mod = importlib.import_module(name)
                case_ids.extend(generate_agent(mod, server, out, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return case_ids


def generate_agent(mod, server, out: Path, tmp: Path) -> list[str]:
    route, ext = mod.ROUTE, ext_of(mod.ROUTE)
    case_inputs = {c["input"] for c in mod.CASES}
    assert len(mod.REFS) == 4 and not case_inputs & set(mod.REFS), mod.__name__
    kit.activate(None)
    refs = []
    for key in mod.REFS:
        text = record(mod, server, mod.INPUTS[key], tmp, f"ref-{key}")
        p = tmp / f"check.{ext}"
        p.write_text(text, encoding="utf-8")
        run = load_one(p)
        assert run.outcome == "success", f"{mod.__name__} reference {key}: {run.outcome} {run.failure_reason}"
        refs.append(text)
    ids = []
    for case in mod.CASES:
        cid = case["id"]
        assert case["kind"] in KINDS, cid
        kit.activate(cid)
        failed = record(mod, server, mod.INPUTS[case["input"]], tmp, f"{cid}-failed")
        kit.activate(None)
        control = record(mod, server, mod.INPUTS[case["input"]], tmp, f"{cid}-control")
        folder = out / cid
        folder.mkdir(parents=True, exist_ok=True)
        files = {
            f"failed.{ext}": failed,
            f"control.{ext}": control,
            f"with_refs.{ext}": join(route, [failed, *refs]),
        }
        for fname, text in files.items():
            (folder / fname).write_text(text, encoding="utf-8")
            check_words(folder / fname)
        frun = load_one(folder / f"failed.{ext}")
        crun = load_one(folder / f"control.{ext}")
        assert frun.outcome == "failure", f"{cid}: failed run is {frun.outcome}"
        assert crun.outcome == "success", f"{cid}: control run is {crun.outcome} ({crun.failure_reason})"
        both = trajdebug.load_runs(folder / f"with_refs.{ext}")
        assert len(both) == 5 and sum(r.outcome == "failure" for r in both) == 1, f"{cid}: with_refs"
        assert all(r.outcome == "success" for r in both if r.run_id != frun.run_id), cid
        steps = ordered(frun)
        rname, rocc = case["root"]
        same = [s for s in steps if s.name == rname]
        assert len(same) >= rocc, f"{cid}: root {rname}#{rocc} not in the failed run ({len(same)} such steps)"
        root = same[rocc - 1]
        assert root.status == "ok", f"{cid}: root {rname}#{rocc} has status {root.status}"
        fname = case["failure"]
        named = [s for s in steps if s.name == fname]
        erred = [s for s in named if s.status == "error"]
        assert erred, f"{cid}: no failing step {fname}"
        fail = erred[0]
        focc = named.index(fail) + 1
        ri, fi = steps.index(root), steps.index(fail)
        assert fi > ri and (fail.start_ns or 0) >= (root.start_ns or 0), f"{cid}: failure before root"
        truth = {
            "case": cid,
            "agent": mod.NAME,
            "route": route,
            "fault_kind": case["kind"],
            "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
            "failure": {"name": fname, "occurrence": focc},
            "hops": fi - ri,
            "description": case["description"],
        }
        (folder / "truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
        ids.append(cid)
    return ids


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    names = argv[1:] or AGENTS
    t0 = time.perf_counter()
    ids = generate(out, names)
    index = out / "index.json"
    known = json.loads(index.read_text())["cases"] if index.exists() and argv[1:] else []
    merged = [c for c in known if c not in ids] + ids
    index.write_text(json.dumps({"cases": merged}, indent=2) + "\n", encoding="utf-8")
    print(f"{len(ids)} cases from {len(names)} agents in {time.perf_counter() - t0:.1f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
