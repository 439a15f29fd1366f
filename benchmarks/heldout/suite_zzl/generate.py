"""Generate the suite: python benchmarks/heldout/suite_zzl/generate.py OUT [agent-module ...]

Writes OUT/<case>/{failed,control,with_refs}.<ext>, OUT/<case>/truth.json and OUT/index.json.
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
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import kit  # noqa: E402

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402


AGENTS = ["funeral", "falafel", "snowplow", "fishfarm", "heli", "cattery", "interpreting", "piercing"]
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}
# words no recorded text may hold (spelled backwards here so this file never trips its own check)
_WORDS = [w[::-1] for w in ("tluaf", "gub", "gnorw", "elats", "detnalp", "tcejni", "tpurroc")]
FORBIDDEN = re.compile(r"\b(" + "|".join(_WORDS) + r")", re.IGNORECASE)
N_REFS = 4


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def load(path: Path):
    runs = trajdebug.load_runs(str(path))
    return list(runs)


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index or 0))


def find(steps: list, name: str, occurrence: int) -> int:
    seen = 0
    for i, s in enumerate(steps):
        if s.name == name:
            seen += 1
            if seen == occurrence:
                return i
    raise AssertionError(f"no step {name!r} #{occurrence} (have {[s.name for s in steps]})")


def join(route: str, texts: list[str]) -> str:
    if route != "otlp":
        return "".join(t if t.endswith("\n") else t + "\n" for t in texts)
    spans: list = []
    for t in texts:
        spans.extend(json.loads(t)["resourceSpans"])
    return json.dumps({"resourceSpans": spans}) + "\n"


def check_words(path: Path) -> None:
    m = FORBIDDEN.search(path.read_text())
    assert m is None, f"{path}: recorded text holds the word {m.group(0)!r}"


def generate_agent(mod, server, out: Path, tmp: Path) -> list[str]:
    route = mod.ROUTE
    ext = ext_of(route)
    counter = {"n": 0}
    extra = ()
    if route == "otlp":
        from harness import Otlp

        extra = (Otlp(mod.NAME),)
    try:
        return _generate(mod, server, out, tmp, route, ext, counter, extra)
    finally:
        for e in extra:
            e.close()


def _generate(mod, server, out: Path, tmp: Path, route: str, ext: str, counter: dict, extra: tuple) -> list[str]:

    def rec(idx: int, case_id: str | None) -> str:
        counter["n"] += 1
        path = tmp / f"{mod.__name__}-{counter['n']}.{ext}"
        kit.use(case_id)
        try:
            mod.record(server, mod.INPUTS[idx], path, *extra)
        finally:
            kit.use(None)
        return path.read_text()

    clean: dict[int, str] = {}

    def clean_run(idx: int) -> str:
        if idx not in clean:
            clean[idx] = rec(idx, None)
        return clean[idx]

    ids = []
    n = len(mod.INPUTS)
    for case in mod.CASES:
        cid = case["id"]
        assert case["kind"] in KINDS, case["kind"]
        d = out / cid
        d.mkdir(parents=True, exist_ok=True)
        idx = case["input"]
        failed_text = rec(idx, cid)
        control_text = clean_run(idx)
        refs = [(idx + k) % n for k in range(1, N_REFS + 1)]
        ref_texts = [clean_run(j) for j in refs]
        (d / f"failed.{ext}").write_text(failed_text)
        (d / f"control.{ext}").write_text(control_text)
        (d / f"with_refs.{ext}").write_text(join(route, [failed_text, *ref_texts]))

        [failed] = load(d / f"failed.{ext}")
        assert failed.outcome == "failure", (cid, failed.outcome)
        [control] = load(d / f"control.{ext}")
        assert control.outcome == "success", (cid, control.outcome)
        for j, t in zip(refs, ref_texts):
            p = tmp / f"ref-check.{ext}"
            p.write_text(t)
            [r] = load(p)
            assert r.outcome == "success", (cid, "ref", j, r.outcome)
        both = load(d / f"with_refs.{ext}")
        assert len(both) == 1 + N_REFS, (cid, len(both))
        assert sum(r.outcome == "failure" for r in both) == 1, cid
        assert sum(r.outcome == "success" for r in both) == N_REFS, cid

        steps = ordered(failed)
        rname, rocc = case["root"]
        fname, focc = case["failure"]
        ri = find(steps, rname, rocc)
        fi = find(steps, fname, focc)
        root, fail = steps[ri], steps[fi]
        assert root.status == "ok", (cid, root.name, root.status)
        assert fail.status == "error", (cid, fail.name, fail.status)
        assert fi > ri, (cid, ri, fi)
        assert (root.start_ns or 0) <= (fail.start_ns or 0), cid
        for f in ("failed", "control", "with_refs"):
            check_words(d / f"{f}.{ext}")
        truth = {"case": cid, "agent": mod.NAME, "route": route, "fault_kind": case["kind"],
                 "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
                 "failure": {"name": fname, "occurrence": focc}, "hops": fi - ri,
                 "description": case["description"]}
        (d / "truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
        ids.append(cid)
    return ids


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="suite_zzl_"))
    t0 = time.time()
    ids: list[str] = []
    try:
        with FakeModelServer() as server:
            for name in names:
                mod = importlib.import_module(name)
                t1 = time.time()
                got = generate_agent(mod, server, out, tmp)
                ids += got
                print(f"{name:14s} {mod.ROUTE:14s} {len(got)} cases  {time.time() - t1:5.1f}s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    print(f"{len(ids)} cases in {time.time() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
