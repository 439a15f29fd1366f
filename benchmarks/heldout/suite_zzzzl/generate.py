"""Generate suite_zzzzl: 8 field-crew agents x 5 cases of failing runs, with controls and references.

    python generate.py OUT [agent ...]

For every agent it records the five inputs once with every switch off (the passing runs), then each
case's input once with the case's switch on (the failed run), and writes per case:

    OUT/<case>/failed.<ext>     the failed run alone
    OUT/<case>/control.<ext>    the same input with the switch off (passes)
    OUT/<case>/with_refs.<ext>  the failed run and the agent's four other inputs' passing runs
    OUT/<case>/truth.json       where the failure starts (root) and where it shows (failure)

and OUT/index.json. `ext` is jsonl for the sdk, langgraph and openai_agents routes and json (one OTLP
`{"resourceSpans": [...]}` document) for the otlp route. Every case is checked as it is written.
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
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(HERE))

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

from crews import AGENT_MODULES  # noqa: E402
from crews._common import Env  # noqa: E402

KINDS = ("wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write")
ROUTES = ("sdk", "langgraph", "openai_agents", "otlp")
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
BANNED = re.compile(r"\b(fault\w*|bugs?|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.I)


def ordered(run):
    """A run's steps in start order (ties kept in recorded order)."""
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns or 0, p[0]))]


def find(steps, name, occurrence):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, f"step {name!r} #{occurrence} not found ({len(hits)} of that name)"
    return hits[occurrence - 1]


def _norm(value):
    """A value without what changes from call to call (ids the model server or the SDK make new)."""
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items() if k not in ("id", "tool_call_id", "call_id", "response_id")}
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"call_[0-9a-z_]+|resp_[0-9a-f]+|msg_[0-9a-f]+", "<id>", value)
    return value


def check_words(path: Path) -> None:
    text = path.read_text()
    m = BANNED.search(text)
    assert m is None, f"{path}: recorded data holds the word {m.group(0)!r}: ...{text[max(0, m.start() - 80):m.end() + 80]}..."


def merge(paths: list[Path], out: Path, ext: str) -> None:
    if ext == "jsonl":
        out.write_text("".join(p.read_text() for p in paths))
    else:
        spans = []
        for p in paths:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))


def check_case(mod, case, case_dir: Path, ext: str) -> dict:
    failed_runs = trajdebug.load_runs(str(case_dir / f"failed.{ext}"))
    control_runs = trajdebug.load_runs(str(case_dir / f"control.{ext}"))
    refs = trajdebug.load_runs(str(case_dir / f"with_refs.{ext}"))
    assert len(failed_runs) == 1 and len(control_runs) == 1, (len(failed_runs), len(control_runs))
    failed, control = failed_runs[0], control_runs[0]
    assert failed.outcome == "failure", f"{case['id']}: failed run is {failed.outcome}"
    assert control.outcome == "success", f"{case['id']}: control is {control.outcome}: {control.failure_reason}"
    assert failed.name == control.name == mod.NAME, (failed.name, control.name, mod.NAME)
    assert len(refs) == 5, f"{case['id']}: with_refs holds {len(refs)} runs"
    assert [r.outcome for r in refs].count("failure") == 1, [r.outcome for r in refs]
    assert all(r.name == mod.NAME for r in refs)
    for r in (*refs, control):
        assert 10 <= len(r.steps) <= 60, f"{case['id']}: a run of {len(r.steps)} steps"
    assert failed.metadata.get("task") == control.metadata.get("task"), "control is not the same input"
    assert len({r.metadata.get("task") for r in refs}) == 5, "references repeat an input"

    steps = ordered(failed)
    ri = find(steps, *case["root"])
    fi = find(steps, *case["failure"])
    root, fail = steps[ri], steps[fi]
    assert root.status == "ok", f"{case['id']}: root {root.name} has status {root.status}"
    assert fail.status == "error", f"{case['id']}: failing step {fail.name} has status {fail.status}"
    assert ri < fi, f"{case['id']}: root at {ri} is not before the failing step at {fi}"
    parents = {s.step_id: s.parent_id for s in steps}

    def ancestors(step):
        up, found = step.parent_id, set()
        while up:
            found.add(up)
            up = parents.get(up)
        return found

    anc, fail_anc = ancestors(root), ancestors(fail)
    assert fail.step_id not in anc, "the failing step encloses the root"
    # The switch acts at the root: every step started before it (but those enclosing it) has its like in
    # the control run (same name, same output; parallel branches may start in another order), the root's
    # output differs from the control's step of that name and occurrence.
    csteps = ordered(control)
    pool = [(s.name, json.dumps(_norm(s.output), sort_keys=True, default=str)) for s in csteps]
    for i in range(ri):
        if steps[i].step_id in anc:
            continue
        key = (steps[i].name, json.dumps(_norm(steps[i].output), sort_keys=True, default=str))
        assert key in pool, f"{case['id']}: step {i} {steps[i].name} already differs from the control run before the root"
        pool.remove(key)
    ci = find(csteps, *case["root"])
    assert _norm(csteps[ci].output) != _norm(root.output), f"{case['id']}: the root's output equals the control's"
    errs = [s for s in steps[:fi] if s.status == "error" and s.step_id not in anc | fail_anc]
    return {
        "case": case["id"],
        "agent": failed.name,
        "route": mod.ROUTE,
        "fault_kind": case["fault_kind"],
        "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
        "failure": {"name": fail.name, "occurrence": case["failure"][1]},
        "hops": fi - ri,
        "description": case["description"],
        "_steps": len(steps),
        "_earlier_errors": len(errs),
        "_failure_reason": failed.failure_reason,
    }


def source_switch_sites(mod) -> None:
    """Each case's switch is read at exactly one place in its module."""
    text = Path(mod.__file__).read_text()
    assert text.count("SWITCH ==") == 1 and text.count("SWITCH") == 2, "SWITCH is read at one place only"
    for case in mod.CASES:
        n = text.count(f'_on("{case["switch"]}")')
        assert n == 1, f"{mod.NAME}: switch {case['switch']!r} is read at {n} places"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    wanted = set(argv[1:])
    names = [m for m in AGENT_MODULES if not wanted or m in {w.replace("-", "_") for w in wanted}]
    assert names, f"no agent named {sorted(wanted)}"
    mods = [importlib.import_module(f"crews.{m}") for m in names]
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="suite_zzzzl64_", dir="/tmp"))
    t0 = time.time()
    truths = []
    try:
        with FakeModelServer(lambda request: "") as server:
            env = Env(server.base_url, server.model)
            for mod in mods:
                t1 = time.time()
                assert mod.ROUTE in ROUTES and len(mod.INPUTS) == 5 and len(mod.CASES) == 5
                source_switch_sites(mod)
                ext = EXT[mod.ROUTE]
                server.use(mod.brain)
                work = tmp / mod.NAME
                work.mkdir()
                passing = []
                for i, inp in enumerate(mod.INPUTS):
                    mod.SWITCH = None
                    p = work / f"pass_{i}.{ext}"
                    mod.run(inp, str(p), env)
                    passing.append(p)
                for case in mod.CASES:
                    assert case["fault_kind"] in KINDS, case["fault_kind"]
                    p = work / f"failed_{case['id']}.{ext}"
                    mod.SWITCH = case["switch"]
                    try:
                        mod.run(mod.INPUTS[case["input"]], str(p), env)
                    except Exception:  # noqa: BLE001 - the failure the case is about, recorded in the run
                        pass
                    finally:
                        mod.SWITCH = None
                    case_dir = out / case["id"]
                    if case_dir.exists():
                        shutil.rmtree(case_dir)
                    case_dir.mkdir()
                    shutil.copyfile(p, case_dir / f"failed.{ext}")
                    shutil.copyfile(passing[case["input"]], case_dir / f"control.{ext}")
                    others = [q for j, q in enumerate(passing) if j != case["input"]]
                    merge([p, *others], case_dir / f"with_refs.{ext}", ext)
                    for f in case_dir.iterdir():
                        check_words(f)
                    truth = check_case(mod, case, case_dir, ext)
                    public = {k: v for k, v in truth.items() if not k.startswith("_")}
                    for value in (public["description"], public["root"]["name"], public["failure"]["name"]):
                        assert not BANNED.search(value), value
                    (case_dir / "truth.json").write_text(json.dumps(public, indent=2) + "\n")
                    truths.append(truth)
                print(f"{mod.NAME:24s} {mod.ROUTE:14s} {time.time() - t1:5.1f} s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ids = [t["case"] for t in truths]
    assert len(set(ids)) == len(ids)
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    if not wanted:
        assert len(ids) == 40, len(ids)
        counts = {k: sum(t["fault_kind"] == k for t in truths) for k in KINDS}
        assert all(2 <= n <= 4 for n in counts.values()), counts
        routes = {r: len({t["agent"] for t in truths if t["route"] == r}) for r in ROUTES}
        assert all(n == 2 for n in routes.values()), routes
    for t in truths:
        print(f"  {t['case']:32s} {t['fault_kind']:22s} {t['root']['name']}#{t['root']['occurrence']} "
              f"({t['root']['kind']}) -> {t['failure']['name']}#{t['failure']['occurrence']} "
              f"hops {t['hops']} of {t['_steps']} steps"
              + (f", {t['_earlier_errors']} earlier error steps" if t["_earlier_errors"] else ""))
    print(f"{len(ids)} cases in {time.time() - t0:.1f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
