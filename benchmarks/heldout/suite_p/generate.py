"""Generate held-out suite P: `python benchmarks/heldout/suite_p/generate.py OUT [agent ...]`.

Writes OUT/<case>/{failed,control,with_refs}.<ext>, OUT/<case>/truth.json and OUT/index.json.
"""

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
_SRC = HERE.parents[2] / "src"
if _SRC.is_dir():
    sys.path.insert(0, str(_SRC))
os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import kit  # noqa: E402


AGENT_MODULES_ALL = [
    "a_kiln", "a_bindery",
    "a_balloon", "a_shearing",
    "a_piano", "a_translation",
    "a_dogsled", "a_perfumery",
]

AGENT_MODULES = [m for m in AGENT_MODULES_ALL if (HERE / f"{m}.py").exists()]

BANNED = re.compile(r"(?<![A-Za-z0-9])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)
OTLP_IDS = re.compile(r'"(traceId|spanId|parentSpanId)"\s*:\s*"[^"]*"')


def _ext(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def _combine(route: str, parts: list[Path], dest: Path) -> None:
    if route == "otlp":
        spans: list = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}))
    else:
        dest.write_text("".join(p.read_text() for p in parts))


def _load(path: Path, route: str):
    from trajdebug.sources.load import load_runs

    return load_runs(str(path), fmt="otlp" if route == "otlp" else None)


def _texts(value) -> tuple[str, str]:
    return (json.dumps(value, ensure_ascii=False), json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _holds(step, marker: str) -> bool:
    return any(marker in t for t in _texts(step.output))


def _ordered(run):
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns, p[0]))]


def truth_of(run, case: kit.Case) -> dict:
    steps = _ordered(run)
    parents = {s.parent_id for s in steps if s.parent_id}
    roots = [i for i, s in enumerate(steps) if s.name == case.root and _holds(s, case.marker)]
    assert roots, f"{case.fid}: no {case.root} step holds {case.marker!r}"
    ri = roots[0]
    root = steps[ri]
    occ = sum(1 for s in steps[: ri + 1] if s.name == root.name)
    llm_index = sum(1 for s in steps[:ri] if s.kind == "llm") + 1 if root.kind == "llm" else None
    failed = [e for e in run.errors if any(st.stage == "failed" for st in e.stages)]
    assert len(failed) == 1, f"{case.fid}: {len(failed)} failed errors"
    fi = next(i for i, s in enumerate(steps) if s.step_id == failed[0].step_id)
    fstep = steps[fi]
    assert fi > ri and fstep.start_ns >= root.start_ns, f"{case.fid}: failure step does not start after the root"
    focc = sum(1 for s in steps[: fi + 1] if s.name == fstep.name)
    hops = sum(1 for s in steps[ri + 1 : fi + 1] if s.step_id not in parents and s.kind != "agent")
    return {
        "root": {"name": root.name, "occurrence": occ, "kind": root.kind, "llm_index": llm_index},
        "failure_step": {"name": fstep.name, "occurrence": focc},
        "hops": hops,
    }


def _check_words(path: Path, route: str) -> None:
    text = path.read_text()
    if route == "otlp":
        text = OTLP_IDS.sub("", text)
    m = BANNED.search(text)
    assert m is None, f"{path}: holds {text[max(0, m.start() - 60): m.end() + 60]!r}"


def generate(out: Path, only: list[str]) -> list[dict]:
    from trajdebug.testing import FakeModelServer

    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "_work"
    shutil.rmtree(tmp, ignore_errors=True)
    index: list[dict] = []
    with FakeModelServer(lambda request: "ok") as server:
        for modname in AGENT_MODULES:
            mod = importlib.import_module(modname)
            if only and not {mod.AGENT, modname, modname.removeprefix("a_")} & set(only):
                continue
            ext = _ext(mod.ROUTE)
            work = tmp / mod.AGENT
            work.mkdir(parents=True)
            refs = []
            for k, inp in enumerate(mod.REFS):
                p = work / f"ref{k}.{ext}"
                mod.record(inp, p, server)
                [r] = _load(p, mod.ROUTE)
                assert r.outcome == "success", f"{mod.AGENT} ref {inp}: {r.outcome} {r.failure_reason}"
                refs.append(p)
            for case in mod.CASES:
                name = f"{mod.AGENT}_{case.kind}"
                cdir = out / name
                shutil.rmtree(cdir, ignore_errors=True)
                cdir.mkdir()
                fpath, cpath = work / f"{case.fid}_failed.{ext}", work / f"{case.fid}_control.{ext}"
                with kit.planted(case.fid):
                    mod.record(case.input, fpath, server)
                mod.record(case.input, cpath, server)
                [frun] = _load(fpath, mod.ROUTE)
                [crun] = _load(cpath, mod.ROUTE)
                assert frun.outcome == "failure", f"{name}: failed run is {frun.outcome}"
                assert crun.outcome == "success", f"{name}: control is {crun.outcome}: {crun.failure_reason}"
                assert not any(s.name == case.root and _holds(s, case.marker) for s in crun.steps), (
                    f"{name}: control's {case.root} holds the marker"
                )
                truth = truth_of(frun, case)
                _combine(mod.ROUTE, [fpath], cdir / f"failed.{ext}")
                _combine(mod.ROUTE, [cpath], cdir / f"control.{ext}")
                _combine(mod.ROUTE, [fpath, *refs], cdir / f"with_refs.{ext}")
                both = _load(cdir / f"with_refs.{ext}", mod.ROUTE)
                assert len(both) == 5 and sum(r.outcome == "failure" for r in both) == 1, name
                assert sum(r.outcome == "success" for r in both) == 4, name
                for f in ("failed", "control", "with_refs"):
                    _check_words(cdir / f"{f}.{ext}", mod.ROUTE)
                row = {"case": name, "agent": mod.AGENT, "route": mod.ROUTE, "fault_kind": case.kind}
                (cdir / "truth.json").write_text(json.dumps({**row, **truth}, indent=1) + "\n")
                index.append({**row, "hops": truth["hops"]})
    shutil.rmtree(tmp, ignore_errors=True)
    return index


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out, only = Path(argv[0]), argv[1:]
    t0 = time.monotonic()
    index = generate(out, only)
    (out / "index.json").write_text(json.dumps({"suite": "suite_p", "cases": index}, indent=1) + "\n")
    print(f"{len(index)} cases in {time.monotonic() - t0:.1f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
