"""Generate suite_z: `python -m benchmarks.heldout.suite_z.generate OUT [agent ...]`."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
from typing import Any

from trajdebug.testing import FakeModelServer

from . import common, kit

AGENTS = ["ice_rink", "tattoo_studio", "bonsai_nursery", "model_railway", "falconry", "artwork_courier",
          "roof_drone", "laundromat"]
LLM_ROLES = {"plan", "select", "resolve", "summarise"}


def _module(key: str) -> Any:
    return importlib.import_module(f"{__package__}.{key}")


def _locate(A: common.Agent, case: common.Case, steps: list[Any]) -> Any:
    role = "fetch" if case.role == "fetch_args" else case.role
    if A.route == "openai_agents":
        return _module(A.key).locate(A, case, steps)
    if A.route == "langgraph" and role in LLM_ROLES:
        found = [s for s in steps if s.kind == "llm" and f"Task: {role}." in common.text_of(s)]
    else:
        found = [s for s in steps if s.name == A.n(role)]
    return found[case.item or 0] if case.item is not None else found[0]


def _failure(A: common.Agent, steps: list[Any]) -> Any:
    names = {A.names.get("submit"), A.names.get("preflight")}
    errs = [s for s in steps if s.status == "error" and s.name in names]
    return errs[0]


def _record(mod: Any, A: common.Agent, server: FakeModelServer, inp: dict[str, Any], path: str) -> str:
    server.use(mod.policy(A))
    return mod.record(A, inp, path, server.base_url)


def _concat(route: str, paths: list[str], out: str) -> None:
    if route == "otlp":
        spans: list[Any] = []
        for p in paths:
            with open(p, encoding="utf-8") as fh:
                spans.extend(json.load(fh).get("resourceSpans", []))
        with open(out, "w", encoding="utf-8") as fh:
            json.dump({"resourceSpans": spans}, fh)
        return
    with open(out, "w", encoding="utf-8") as dst:
        for p in paths:
            with open(p, encoding="utf-8") as fh:
                dst.write(fh.read())


def generate(out: str, keys: list[str]) -> list[dict[str, Any]]:
    os.makedirs(out, exist_ok=True)
    index: list[dict[str, Any]] = []
    tmp = tempfile.mkdtemp(prefix="suite_z_")
    with FakeModelServer() as server:
        for key in keys:
            mod = _module(key)
            A: common.Agent = mod.AGENT
            ext = "json" if A.route == "otlp" else "jsonl"
            refs = []
            for r, inp in enumerate(A.inputs[1:5]):
                p = os.path.join(tmp, f"{key}_ref{r}.{ext}")
                assert _record(mod, A, server, inp, p) == "success", (key, "reference", r)
                refs.append(p)
            for case in A.cases:
                d = os.path.join(out, case.case)
                shutil.rmtree(d, ignore_errors=True)
                os.makedirs(d)
                failed, control = os.path.join(d, f"failed.{ext}"), os.path.join(d, f"control.{ext}")
                with kit.planted(case.case):
                    _record(mod, A, server, A.inputs[0], failed)
                _record(mod, A, server, A.inputs[0], control)
                _concat(A.route, refs + [failed], os.path.join(d, f"with_refs.{ext}"))
                truth = _check(A, case, d, ext)
                with open(os.path.join(d, "truth.json"), "w", encoding="utf-8") as fh:
                    json.dump(truth, fh, indent=2, sort_keys=True)
                index.append(truth)
                print(f"{case.case}: {truth['root']['name']}#{truth['root']['occurrence']} -> "
                      f"{truth['failure']['name']}#{truth['failure']['occurrence']}", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(out, "index.json"), "w", encoding="utf-8") as fh:
        json.dump(index, fh, indent=2, sort_keys=True)
    return index


def _check(A: common.Agent, case: common.Case, d: str, ext: str) -> dict[str, Any]:
    failed = common.load(os.path.join(d, f"failed.{ext}"), A.route)
    control = common.load(os.path.join(d, f"control.{ext}"), A.route)
    both = common.load(os.path.join(d, f"with_refs.{ext}"), A.route)
    assert len(failed) == 1 and failed[0].outcome == "failure", (case.case, [r.outcome for r in failed])
    assert len(control) == 1 and control[0].outcome == "success", (case.case, [r.outcome for r in control])
    assert len(both) == 5 and sorted(r.outcome for r in both) == ["failure"] + ["success"] * 4, (
        case.case, [r.outcome for r in both])
    steps = common.ordered(failed[0])
    root = _locate(A, case, steps)
    fail = _failure(A, steps)
    same = [s for s in steps if s.name == root.name]
    occ = same.index(root) + 1
    fsame = [s for s in steps if s.name == fail.name]
    focc = fsame.index(fail) + 1
    assert root.status != "error", (case.case, "root raised")
    assert fail.start_ns > root.start_ns, (case.case, "failure before root")
    assert A.route == "otlp" or root.kind == case.root_kind, (case.case, root.kind, case.root_kind)
    for name in ("failed", "control", "with_refs"):
        hits = common.forbidden_hits(os.path.join(d, f"{name}.{ext}"))
        assert not hits, (case.case, name, hits)
    assert 15 <= len(steps) <= 60, (case.case, len(steps))
    return {"case": case.case, "agent": A.agent, "route": A.route, "fault_kind": case.kind,
            "root": {"name": root.name, "occurrence": occ, "kind": root.kind},
            "failure": {"name": fail.name, "occurrence": focc}, "hops": case.hops,
            "description": case.description}


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: generate.py OUT [agent ...]")
    generate(sys.argv[1], sys.argv[2:] or AGENTS)
