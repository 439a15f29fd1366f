"""Generate held-out suite U: python benchmarks/heldout/suite_u/generate.py OUT [agent ...]"""

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
ROOT = HERE.parents[2]
for p in (str(ROOT / "src"), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)

from trajdebug.sources.load import load_runs  # noqa: E402


AGENTS = ["kelp", "hearing", "locksmith", "chimney", "coffee", "auction", "jewellery", "hydro"]
DONE = [a for a in AGENTS if (HERE / f"agent_{a}.py").exists()]
WORDS = re.compile(r"(?<![A-Za-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)
OTLP_ID_KEYS = re.compile(r'"(traceId|spanId|parentSpanId)"\s*:\s*"[^"]*"')


def _module(agent: str):
    return importlib.import_module(f"benchmarks.heldout.suite_u.agent_{agent}")


def _ext(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def _record(mod, key: str, out: Path) -> None:
    if out.exists():
        out.unlink()
    mod.record(key, str(out))


def _concat(route: str, files: list[Path], out: Path) -> None:
    if route == "otlp":
        spans = []
        for f in files:
            spans.extend(json.loads(f.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(f.read_text() for f in files))


def _one(path: Path):
    runs = load_runs(str(path))
    assert len(runs) == 1, (path, len(runs))
    return runs[0]


def _ordered(run):
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns, p[0]))]


def _text(value) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _holds(step, marker: str) -> bool:
    if step.output is None:
        return False
    return marker in _text(step.output) or marker in json.dumps(step.output, ensure_ascii=False, default=str, separators=(",", ":"))


def _truth(case: str, agent: str, route: str, kind: str, root_name: str, marker: str, failed, control) -> dict:
    steps = _ordered(failed)
    root_i = next(i for i, s in enumerate(steps) if s.name == root_name and _holds(s, marker))
    root = steps[root_i]
    assert not any(s.name == root_name and _holds(s, marker) for s in control.steps), (case, "control holds marker")
    failing = [e for e in failed.errors if any(st.stage == "failed" for st in e.stages)]
    assert failing, (case, "no failed error")
    assert len(failing) == 1, (case, "several failed errors")
    fail_step_id = failing[0].step_id
    fail_i = next(i for i, s in enumerate(steps) if s.step_id == fail_step_id)
    assert fail_i > root_i, (case, "failure before root")
    fail = steps[fail_i]
    parents = {s.parent_id for s in steps if s.parent_id}
    hops = sum(1 for s in steps[root_i + 1 : fail_i + 1] if s.step_id not in parents and s.kind != "agent")
    llm_index = None
    if root.kind == "llm":
        llm_index = sum(1 for s in steps[:root_i] if s.kind == "llm") + 1
    occ = sum(1 for s in steps[: root_i + 1] if s.name == root.name)
    focc = sum(1 for s in steps[: fail_i + 1] if s.name == fail.name)
    return {
        "case": case, "agent": agent, "route": route, "fault_kind": kind,
        "root": {"name": root.name, "occurrence": occ, "kind": root.kind, "llm_index": llm_index},
        "failure_step": {"name": fail.name, "occurrence": focc},
        "hops": hops,
    }


def _clean(path: Path, route: str) -> None:
    text = path.read_text()
    if route == "otlp":
        text = OTLP_ID_KEYS.sub("", text)
    m = WORDS.search(text)
    assert m is None, (str(path), text[max(0, m.start() - 80) : m.end() + 80])


def generate(out: Path, agents: list[str]) -> dict:
    from benchmarks.heldout.suite_u import kit

    out.mkdir(parents=True, exist_ok=True)
    index = {"suite": "suite_u", "cases": []}
    tmp = Path(tempfile.mkdtemp(prefix="suite_u_"))
    try:
        for agent in agents:
            mod = _module(agent)
            ext = _ext(mod.ROUTE)
            refs = []
            for key in mod.REFS:
                f = tmp / f"{agent}_{key}.{ext}"
                _record(mod, key, f)
                r = _one(f)
                assert r.outcome == "success", (agent, key, r.outcome, r.failure_reason)
                refs.append(f)
            for case, (switch, kind, key, root_name) in mod.CASES.items():
                d = out / case
                if d.exists():
                    shutil.rmtree(d)
                d.mkdir(parents=True)
                kit.take_mark()
                with kit.planted(switch):
                    _record(mod, key, d / f"failed.{ext}")
                marker = kit.take_mark()
                assert marker, (case, "switch never read")
                _record(mod, key, d / f"control.{ext}")
                assert kit.take_mark() is None
                failed, control = _one(d / f"failed.{ext}"), _one(d / f"control.{ext}")
                assert failed.outcome == "failure", (case, failed.outcome)
                assert control.outcome == "success", (case, control.outcome, control.failure_reason)
                _concat(mod.ROUTE, [d / f"failed.{ext}", *refs], d / f"with_refs.{ext}")
                all_runs = load_runs(str(d / f"with_refs.{ext}"))
                assert len(all_runs) == 5 and sum(r.outcome == "failure" for r in all_runs) == 1, case
                assert sum(r.outcome == "success" for r in all_runs) == 4, case
                truth = _truth(case, mod.NAME, mod.ROUTE, kind, root_name, marker, failed, control)
                for name in (f"failed.{ext}", f"control.{ext}", f"with_refs.{ext}"):
                    _clean(d / name, mod.ROUTE)
                (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                index["cases"].append({"case": case, "agent": mod.NAME, "route": mod.ROUTE,
                                       "fault_kind": kind, "hops": truth["hops"]})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return index


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    agents = argv[1:] or DONE
    t0 = time.monotonic()
    index = generate(out, agents)
    print(f"{len(index['cases'])} cases in {time.monotonic() - t0:.1f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
