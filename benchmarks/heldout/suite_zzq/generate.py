"""Generate suite_zzq: per case a failed run, a control run and the failed run with four references.

Usage (from /work/main):
    .venv/bin/python benchmarks/heldout/suite_zzq/generate.py OUT [agent-module ...]
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

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OTEL_SDK_DISABLED", "false")

import kit  # noqa: E402

AGENTS = ["vegbox", "mason", "signwriter", "bustour", "jukebox", "carousel", "rugclean", "foraging"]
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}
FORBIDDEN = re.compile(r"(?<![a-zA-Z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


def load(path: str):
    import trajdebug

    return trajdebug.load_runs(path)


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index or 0))


def find(steps: list, name: str, occurrence: int):
    same = [i for i, s in enumerate(steps) if s.name == name]
    assert len(same) >= occurrence, "no step %s #%d (found %d)" % (name, occurrence, len(same))
    return same[occurrence - 1]


def join(paths: list, out: str, ext: str) -> None:
    if ext == "json":
        spans = []
        for p in paths:
            with open(p) as f:
                spans.extend(json.load(f).get("resourceSpans", []))
        with open(out, "w") as f:
            json.dump({"resourceSpans": spans}, f)
    else:
        with open(out, "w") as f:
            for p in paths:
                with open(p) as g:
                    f.write(g.read())


IDS = re.compile(r'"(traceId|spanId|parentSpanId|trace_id|span_id|parent_id|run_id|step_id|error_id)": ?"[^"]*"')


def check_words(path: str) -> None:
    """No recorded text may hold a telling word (ids, random base64 or hex, are left out of the check)."""
    with open(path) as f:
        text = IDS.sub('""', f.read())
    m = FORBIDDEN.search(text)
    assert m is None, "%s holds the word %r near %r" % (path, m.group(0), text[max(0, m.start() - 60):m.end() + 60])


def one_run(path: str, want: str):
    runs = load(path)
    assert len(runs) == 1, "%s holds %d runs" % (path, len(runs))
    assert runs[0].outcome == want, "%s: outcome %s, expected %s" % (path, runs[0].outcome, want)
    return runs[0]


def generate_agent(mod, server, out: str, scratch: str) -> list:
    ext = mod.EXT
    controls = {}
    for i, inp in enumerate(mod.INPUTS):
        kit.ACTIVE = None
        p = os.path.join(scratch, "%s_input%d.%s" % (mod.__name__, i, ext))
        mod.record(server, inp, p)
        one_run(p, "success")
        controls[i] = p
    ids = []
    for case in mod.CASES:
        cid = case["id"]
        assert case["kind"] in KINDS, case["kind"]
        d = os.path.join(out, cid)
        os.makedirs(d, exist_ok=True)
        failed = os.path.join(d, "failed.%s" % ext)
        kit.ACTIVE = cid
        try:
            mod.record(server, mod.INPUTS[case["input"]], failed)
        finally:
            kit.ACTIVE = None
        run = one_run(failed, "failure")
        control = os.path.join(d, "control.%s" % ext)
        shutil.copyfile(controls[case["input"]], control)
        one_run(control, "success")
        refs = [controls[j] for j in sorted(controls) if j != case["input"]]
        assert len(refs) == 4
        with_refs = os.path.join(d, "with_refs.%s" % ext)
        join([failed] + refs, with_refs, ext)
        runs = load(with_refs)
        assert len(runs) == 5, "with_refs holds %d runs" % len(runs)
        assert sorted(r.outcome for r in runs) == ["failure"] + ["success"] * 4, [r.outcome for r in runs]

        steps = ordered(run)
        rname, rocc, rkind = case["root"]
        fname, focc = case["failure"]
        ri = find(steps, rname, rocc)
        fi = find(steps, fname, focc)
        root = steps[ri]
        assert root.status == "ok", "%s: root %s status %s" % (cid, rname, root.status)
        assert root.kind == rkind, "%s: root %s kind %s, not %s" % (cid, rname, root.kind, rkind)
        assert steps[fi].status == "error", "%s: failure step %s status %s" % (cid, fname, steps[fi].status)
        assert fi > ri and steps[fi].start_ns >= root.start_ns, "%s: failure does not start after the root" % cid
        assert 15 <= len(steps) <= 60, "%s: %d steps" % (cid, len(steps))
        for p in (failed, control, with_refs):
            check_words(p)
        truth = {
            "case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["kind"],
            "root": {"name": rname, "occurrence": rocc, "kind": rkind},
            "failure": {"name": fname, "occurrence": focc},
            "hops": fi - ri, "description": case["description"],
        }
        with open(os.path.join(d, "truth.json"), "w") as f:
            json.dump(truth, f, indent=2, sort_keys=True)
            f.write("\n")
        ids.append(cid)
        print("  %-14s %-22s %-24s hops=%-3d steps=%d" % (cid, case["kind"], "%s#%d" % (rname, rocc), fi - ri,
                                                           len(steps)), flush=True)
    return ids


def main(argv: list) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    from trajdebug.testing import FakeModelServer

    t0 = time.time()
    ids = []
    scratch = tempfile.mkdtemp(prefix="suite_zzq_")
    try:
        with FakeModelServer() as server:
            for name in names:
                mod = importlib.import_module(name)
                print("%s (%s)" % (mod.NAME, mod.ROUTE), flush=True)
                ids += generate_agent(mod, server, out, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": ids}, f, indent=2)
        f.write("\n")
    print("%d cases in %.1f s" % (len(ids), time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
