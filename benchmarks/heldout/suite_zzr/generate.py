"""Generate the suite_zzr held-out cases.

Usage (from /work/main):  .venv/bin/python benchmarks/heldout/suite_zzr/generate.py OUT [agent-module ...]
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

import kit  # noqa: E402

AGENTS = ["peal_bookings", "coin_valuations", "boxing_gym", "piano_tuning",
          "pet_cremation", "yoga_retreat", "tapestry_commissions", "chess_tournaments"]
FAULT_KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
               "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
               "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}
FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


def ext_of(mod) -> str:
    return "json" if mod.ROUTE == "otlp" else "jsonl"


def record_one(mod, server, inp, case_id, path):
    kit.set_case(case_id)
    try:
        if os.path.exists(path):
            os.remove(path)
        mod.record(server, inp, path)
        trajdebug.flush()
    finally:
        kit.set_case(None)
    runs = trajdebug.load_runs(path)
    assert len(runs) == 1, (path, len(runs))
    return runs[0]


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def find(steps, name, occ):
    same = [i for i, s in enumerate(steps) if s.name == name]
    assert len(same) >= occ, f"step {name} #{occ} not found ({len(same)} of that name)"
    return same[occ - 1]


def join(mod, paths, out):
    if mod.ROUTE == "otlp":
        spans = []
        for p in paths:
            with open(p) as f:
                for line in f:
                    if line.strip():
                        spans.extend(json.loads(line)["resourceSpans"])
        with open(out, "w") as f:
            json.dump({"resourceSpans": spans}, f)
    else:
        with open(out, "w") as f:
            for p in paths:
                with open(p) as g:
                    f.write(g.read())


def copy_otlp(src, dst):
    spans = []
    with open(src) as f:
        for line in f:
            if line.strip():
                spans.extend(json.loads(line)["resourceSpans"])
    with open(dst, "w") as f:
        json.dump({"resourceSpans": spans}, f)


def check_words(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = FORBIDDEN.search(text)
    assert not m, f"{path}: recorded text holds the word {m.group(0)!r} near {text[max(0, m.start() - 60):m.end() + 60]!r}"


def generate_agent(mod, server, out, tmp):
    ext = ext_of(mod)
    case_ids = []
    for case in mod.CASES:
        cid = case["id"]
        assert case["fault_kind"] in FAULT_KINDS, case
        for w in FORBIDDEN.findall(cid):
            raise AssertionError(f"case id {cid} holds {w}")
        cdir = os.path.join(out, cid)
        os.makedirs(cdir, exist_ok=True)
        inp = mod.INPUTS[case["input"]]
        failed_tmp = os.path.join(tmp, f"{cid}-failed.{ext}")
        control_tmp = os.path.join(tmp, f"{cid}-control.{ext}")
        failed = record_one(mod, server, inp, cid, failed_tmp)
        control = record_one(mod, server, inp, None, control_tmp)
        assert failed.outcome == "failure", (cid, "failed run did not fail", failed.outcome)
        assert control.outcome == "success", (cid, "control did not succeed", control.failure_reason)
        ref_paths = []
        others = [i for i in range(len(mod.INPUTS)) if i != case["input"]][:4]
        for k, i in enumerate(others):
            rp = os.path.join(tmp, f"{cid}-ref{k}.{ext}")
            ref = record_one(mod, server, mod.INPUTS[i], None, rp)
            assert ref.outcome == "success", (cid, "reference did not succeed", i, ref.failure_reason)
            ref_paths.append(rp)
        steps = ordered(failed)
        root_spec = case["root"]
        if len(root_spec) == 3 and root_spec[1] == "before":  # the nearest step of that name before an anchor step
            ai = find(steps, *root_spec[2])
            prior = [i for i in range(ai) if steps[i].name == root_spec[0]]
            ri = prior[-1]
            root_spec = (root_spec[0], sum(1 for i in range(ri + 1) if steps[i].name == root_spec[0]))
        else:
            ri = find(steps, *root_spec)
        fi = find(steps, *case["failure"])
        root, fail = steps[ri], steps[fi]
        assert root.status == "ok", (cid, "root status", root.status)
        assert fail.status != "ok", (cid, "failure step status", fail.status)
        assert fail.start_ns > root.start_ns and fi > ri, (cid, "failure does not start after the root")
        fname = f"failed.{ext}"
        if ext == "json":
            copy_otlp(failed_tmp, os.path.join(cdir, "failed.json"))
            copy_otlp(control_tmp, os.path.join(cdir, "control.json"))
        else:
            shutil.copy(failed_tmp, os.path.join(cdir, fname))
            shutil.copy(control_tmp, os.path.join(cdir, f"control.{ext}"))
        wr = os.path.join(cdir, f"with_refs.{ext}")
        join(mod, [failed_tmp] + ref_paths, wr)
        runs = trajdebug.load_runs(wr)
        assert len(runs) == 5, (cid, len(runs))
        assert sum(r.outcome == "failure" for r in runs) == 1 and sum(r.outcome == "success" for r in runs) == 4, cid
        truth = {"case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["fault_kind"],
                 "root": {"name": root_spec[0], "occurrence": root_spec[1], "kind": root.kind},
                 "failure": {"name": case["failure"][0], "occurrence": case["failure"][1]},
                 "hops": fi - ri, "description": case["description"]}
        with open(os.path.join(cdir, "truth.json"), "w") as f:
            json.dump(truth, f, indent=2, sort_keys=True)
            f.write("\n")
        for name in os.listdir(cdir):
            if name != "truth.json":  # the truth file names the fault kind; it is not recorded text
                check_words(os.path.join(cdir, name))
        assert not FORBIDDEN.search(case["description"]), (cid, "description")
        case_ids.append(cid)
    return case_ids


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    cases = []
    with tempfile.TemporaryDirectory(prefix="suite_zzr_") as tmp, FakeModelServer([]) as server:
        for name in names:
            mod = importlib.import_module(name)
            cases.extend(generate_agent(mod, server, out, tmp))
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": cases}, f, indent=2)
        f.write("\n")
    check_words(os.path.join(out, "index.json"))
    print(f"{len(cases)} cases in {time.time() - t0:.1f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
