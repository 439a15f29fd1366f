"""Generate held-out suite C: ``python benchmarks/heldout/suite_c/generate.py OUTDIR``.

For every agent: record its passing reference runs; for every case: run the input with the
fault off (must pass) and with the fault on (must fail), write ``failed.<ext>``,
``with_refs.<ext>`` (the failed run plus the agent's passing runs) and ``truth.json``; then
``index.json``.  The root and the raising step are located in what ``trajdebug show --json``
lists for ``failed.<ext>``.  No network except the scripted model server on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

os.environ.setdefault("OPENAI_API_KEY", "sk-suite-c-local")  # never used: every client points at 127.0.0.1
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
    os.environ.pop(proxy, None)
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"

import random  # noqa: E402


random.seed(20260301)  # the recorder's ids come from `random`: same seed, same ids

from harness import FAULT, FAULT_KINDS, ROUTES, AgentSpec, Case  # noqa: E402


AGENT_MODULES = [
    "lg_listing_scout",
    "lg_contract_review",
    "lg_candidate_screener",
    "oa_visa_desk",
    "oa_kyc_onboarding",
    "oa_ticket_desk",
    "ot_refill_bot",
    "ot_crop_planner",
    "ot_promo_pricer",
    "sdk_freight_quoter",
    "sdk_menu_costing",
    "sdk_loan_underwriter",
]


def load_agents(only: list[str] | None = None) -> list[AgentSpec]:
    import importlib

    specs = [importlib.import_module(mod).SPEC for mod in AGENT_MODULES]
    if only:
        unknown = set(only) - {s.name for s in specs}
        if unknown:
            raise SystemExit(f"unknown agent(s): {', '.join(sorted(unknown))}")
        specs = [s for s in specs if s.name in only]
    return specs


class GenerationError(AssertionError):
    pass


def run_once(spec: AgentSpec, inp: dict[str, Any], path: Path, key: str, fault: str | None) -> tuple[str | None, BaseException | None, list[dict[str, Any]]]:
    FAULT.arm(fault)
    random.seed(key)
    run_id: str | None = None
    err: BaseException | None = None
    try:
        run_id = spec.execute(inp, path, key)
    except Exception as exc:  # noqa: BLE001 - the agent's own failure
        err = exc
    fired = list(FAULT.fired)
    FAULT.arm(None)
    return run_id, err, fired


def concat(spec: AgentSpec, parts: list[Path], out: Path) -> None:
    if spec.ext == "json":
        from routes import merge_otlp

        merge_otlp(parts, out)
    else:
        with out.open("wb") as fh:
            for p in parts:
                fh.write(p.read_bytes())


def show_json(path: Path) -> dict[str, Any]:
    exe = Path(sys.executable).with_name("trajdebug")
    found = str(exe) if exe.exists() else shutil.which("trajdebug")
    cmd = [found] if found else [sys.executable, "-c", "import sys; from trajdebug.cli import main; sys.exit(main())"]
    out = subprocess.run([*cmd, "show", str(path), "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def _ordered(run: dict[str, Any]) -> list[dict[str, Any]]:
    steps = list(run["steps"])
    return [s for _, s in sorted(enumerate(steps), key=lambda t: (t[1].get("start_ns") or 0, t[0]))]


def _occurrence(steps: list[dict[str, Any]], step: dict[str, Any]) -> int:
    same = [s for s in steps if s["name"] == step["name"]]
    return next(i for i, s in enumerate(same, 1) if s["step_id"] == step["step_id"])


def _has_marker(step: dict[str, Any], marker: Any) -> bool:
    if marker is None:
        return True
    texts = [json.dumps(step.get("output"), ensure_ascii=False)]

    def strings(v: Any) -> None:
        if isinstance(v, str):
            texts.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                strings(x)
        elif isinstance(v, list):
            for x in v:
                strings(x)

    strings(step.get("output"))
    return any(str(marker) in t or json.dumps(marker) in t for t in texts)


def resolve(case_id: str, case: Case, fired: list[dict[str, Any]], shown: dict[str, Any]) -> dict[str, Any]:
    runs = shown["runs"]
    if len(runs) != 1:
        raise GenerationError(f"{case_id}: failed file holds {len(runs)} runs")
    run = runs[0]
    if run["outcome"] != "failure":
        raise GenerationError(f"{case_id}: recorded outcome is {run['outcome']!r}, expected failure")
    steps = _ordered(run)
    where = fired[0]
    if where["kind"] == "llm":
        llms = [s for s in steps if s["kind"] == "llm"]
        if len(llms) < where["llm_index"]:
            raise GenerationError(f"{case_id}: model call {where['llm_index']} not recorded ({len(llms)} llm steps)")
        root = llms[where["llm_index"] - 1]
    else:
        named = [s for s in steps if s["name"] == where["name"]]
        if len(named) < where["occurrence"]:
            raise GenerationError(f"{case_id}: {where['name']} #{where['occurrence']} not recorded ({len(named)} found)")
        root = named[where["occurrence"] - 1]
    if not _has_marker(root, where.get("marker")):
        raise GenerationError(f"{case_id}: root step {root['name']} does not show the wrong value {where.get('marker')!r}")
    by_parent: dict[str | None, list[dict[str, Any]]] = {}
    for s in steps:
        by_parent.setdefault(s.get("parent_id"), []).append(s)
    raising = [
        s for s in steps
        if s["status"] == "error" and not any(c["status"] == "error" for c in by_parent.get(s["step_id"], []))
    ]
    named_fail = [s for s in raising if s["name"] == case.failure]
    if not named_fail:
        raise GenerationError(f"{case_id}: no raising step named {case.failure!r}; raising: {[s['name'] for s in raising]}")
    fail = named_fail[-1] if case.failure_occurrence is None else [s for s in steps if s["name"] == case.failure][case.failure_occurrence - 1]
    if root["start_ns"] and fail["start_ns"] and root["start_ns"] > fail["start_ns"]:
        raise GenerationError(f"{case_id}: root starts after the failing step")
    after_root = {s["name"] for s in steps if (s.get("end_ns") or 0) >= (root.get("end_ns") or 0) and s is not root}
    missing = [n for n in case.path if n not in after_root]
    if missing or case.path[-1] != case.failure:
        raise GenerationError(f"{case_id}: path names {missing} not among the steps after the root (or path does not end at the failure)")
    root_info: dict[str, Any] = {"name": root["name"], "occurrence": _occurrence(steps, root), "kind": root["kind"], "step_id": root["step_id"]}
    if root["kind"] == "llm":
        llms = [s for s in steps if s["kind"] == "llm"]
        root_info["llm_index"] = next(i for i, s in enumerate(llms, 1) if s["step_id"] == root["step_id"])
    return {
        "failed_run_id": run["run_id"],
        "root": root_info,
        "failure_step": {"name": fail["name"], "occurrence": _occurrence(steps, fail), "kind": fail["kind"], "step_id": fail["step_id"],
                         "error_type": (fail.get("error") or {}).get("type")},
        "failure_reason": run.get("failure_reason"),
        "steps_in_run": len(steps),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--only", nargs="*", help="generate only these agents")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    t0 = time.monotonic()
    out: Path = args.outdir
    out.mkdir(parents=True, exist_ok=True)
    specs = load_agents(args.only)
    work = Path(tempfile.mkdtemp(prefix="suite_c_"))
    pending: list[tuple[str, AgentSpec, Case, list[dict[str, Any]], Path]] = []
    refs_checked: list[tuple[str, Path]] = []
    try:
        for spec in specs:
            assert spec.route in ROUTES, spec.route
            assert len(spec.passing) >= 5 and len(spec.cases) >= 3, spec.name
            ext = spec.ext
            ref_parts = []
            for i, inp in enumerate(spec.passing, 1):
                p = work / f"{spec.name}.ref{i}.{ext}"
                p.unlink(missing_ok=True)
                _, err, fired = run_once(spec, inp, p, f"{spec.name}/ref{i}", None)
                if err is not None:
                    raise GenerationError(f"{spec.name}: passing input {i} failed: {type(err).__name__}: {err}") from err
                ref_parts.append(p)
            refs = work / f"{spec.name}.refs.{ext}"
            concat(spec, ref_parts, refs)
            refs_checked.append((spec.name, refs))
            for case in spec.cases:
                case_id = f"{spec.name}__{case.slug}"
                assert case.fault_kind in FAULT_KINDS, case.fault_kind
                assert len(case.path) >= 2, case_id
                clean = work / f"{case_id}.clean.{ext}"
                clean.unlink(missing_ok=True)
                _, err, fired = run_once(spec, case.input, clean, f"{case_id}/clean", None)
                if err is not None:
                    raise GenerationError(f"{case_id}: the run with the fault off failed: {type(err).__name__}: {err}") from err
                if fired:
                    raise GenerationError(f"{case_id}: a fault fired while switched off")
                cdir = out / case_id
                if cdir.exists():
                    shutil.rmtree(cdir)
                cdir.mkdir(parents=True)
                shutil.copyfile(clean, cdir / f"control.{ext}")  # the fault-free twin (benchmarks/ask.py)
                failed = cdir / f"failed.{ext}"
                _, err, fired = run_once(spec, case.input, failed, f"{case_id}/failed", case.fault)
                if err is None:
                    raise GenerationError(f"{case_id}: the run with fault {case.fault!r} passed")
                if not fired:
                    raise GenerationError(f"{case_id}: the run failed ({type(err).__name__}: {err}) but fault {case.fault!r} never fired")
                concat(spec, [failed, refs], cdir / f"with_refs.{ext}")
                pending.append((case_id, spec, case, fired, failed))
                print(f"  recorded {case_id}: {type(err).__name__}: {str(err)[:110]}", flush=True)
        # Locate root and failure in what `trajdebug show --json` lists (in parallel: one process each).
        with ThreadPoolExecutor(max_workers=8) as pool:
            shown = list(pool.map(show_json, [p[4] for p in pending]))
            ref_shown = list(pool.map(show_json, [p for _, p in refs_checked]))
        for (name, _), sj in zip(refs_checked, ref_shown):
            bad = [r["run_id"] for r in sj["runs"] if r["outcome"] != "success"]
            if bad or len(sj["runs"]) < 5:
                raise GenerationError(f"{name}: reference runs not all recorded as success ({len(sj['runs'])} runs, bad {bad})")
        index = []
        for (case_id, spec, case, fired, failed), sj in zip(pending, shown):
            found = resolve(case_id, case, fired, sj)
            truth = {
                "case_id": case_id,
                "agent": spec.name,
                "route": spec.route,
                "domain": spec.domain,
                "fault_kind": case.fault_kind,
                "fault": case.fault,
                "description": case.description,
                "failed_run_id": found["failed_run_id"],
                "root": found["root"],
                "failure_step": found["failure_step"],
                "failure_reason": found["failure_reason"],
                "hops": len(case.path),
                "path": case.path,
                "files": {"failed": failed.name, "with_refs": f"with_refs.{spec.ext}"},
                "reference_runs": len(spec.passing),
            }
            (out / case_id / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
            index.append({k: truth[k] for k in ("case_id", "agent", "route", "fault_kind", "failed_run_id", "hops")}
                         | {"root": truth["root"]["name"], "failure_step": truth["failure_step"]["name"], "dir": case_id})
        (out / "index.json").write_text(json.dumps({"suite": "heldout-c", "cases": index}, indent=2) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        from routes import stop_server

        stop_server()
    print(f"{len(index)} cases from {len(specs)} agents in {time.monotonic() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
