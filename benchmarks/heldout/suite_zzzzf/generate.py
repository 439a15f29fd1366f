"""Generate suite_zzzzf: 8 agents x 5 cases of failing agent runs, with their controls and references.

    python benchmarks/heldout/suite_zzzzf/generate.py OUT [agent ...]

writes OUT/<case>/failed.<ext>, control.<ext>, with_refs.<ext>, truth.json and OUT/index.json
(ext: jsonl for the sdk, langgraph and openai_agents routes, json (one OTLP document) for otlp).
Every case is checked as it is written (see `check_case`).
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
from typing import Any

HERE = Path(__file__).resolve().parent
WORKTREE = HERE.parents[2]
sys.path.insert(0, str(WORKTREE / "src"))
sys.path.insert(0, str(HERE))

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

from cases import CASES, KINDS  # noqa: E402
from zf_agents import AGENT_MODULES  # noqa: E402
from zf_agents._common import Env, OtelCapture  # noqa: E402

EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
BANNED = re.compile(r"(?i)\b(fault\w*|bugs?|buggy|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b")


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)
    elif value is not None:
        yield str(value)


def scan_run(run: Any, where: str) -> None:
    """The recorded data must not name what the suite is about."""
    texts = [run.name, str(getattr(run, "failure_reason", "") or "")]
    texts.extend(_strings({k: v for k, v in run.metadata.items() if k not in ("env", "recorder")}))
    for s in run.steps:
        texts.append(s.name)
        texts.extend(_strings(s.input))
        texts.extend(_strings(s.output))
        texts.extend(_strings(s.attributes))
        if s.error is not None:
            texts.extend([s.error.type or "", s.error.message or "", getattr(s.error, "traceback", "") or ""])
    for e in getattr(run, "errors", ()) or ():
        texts.append(getattr(e, "message", "") or "")
    for t in texts:
        m = BANNED.search(t or "")
        if m:
            raise AssertionError(f"{where}: recorded data holds {m.group(0)!r}: ...{t[max(0, m.start() - 60):m.end() + 60]}...")


_IDS = re.compile(r"(call|chatcmpl-fake|resp_fake|msg_fake|fc_fake)[_0-9]+")


def _norm(value: Any) -> str:
    return _IDS.sub("<id>", json.dumps(value, sort_keys=True, default=str))


def first_divergence(failed: Any, control: Any) -> tuple[str, int] | None:
    """The first step (start order) whose output differs from the same step (name, occurrence) of the control run,
    not counting a step that encloses a later differing step."""
    cseen: dict[str, list[Any]] = {}
    for s in ordered(control):
        cseen.setdefault(s.name, []).append(s)
    seen: dict[str, int] = {}
    differing: list[tuple[Any, int]] = []
    for s in ordered(failed):
        n = seen[s.name] = seen.get(s.name, 0) + 1
        if s.status != "ok":
            continue
        other = cseen.get(s.name, [])
        if len(other) < n or _norm(other[n - 1].output) != _norm(s.output):
            differing.append((s, n))
    parent = {s.step_id: s.parent_id for s in failed.steps}

    def encloses(a: Any, b: Any) -> bool:
        p = parent.get(b.step_id)
        while p is not None:
            if p == a.step_id:
                return True
            p = parent.get(p)
        return False

    for i, (s, n) in enumerate(differing):
        if not any(encloses(s, later) for later, _ in differing[i + 1:]):
            return s.name, n
    return None


def ordered(run: Any) -> list[Any]:
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns or 0, p[0]))]


def find(steps: list[Any], name: str, occurrence: int) -> tuple[int, Any]:
    hits = [(i, s) for i, s in enumerate(steps) if s.name == name]
    if len(hits) < occurrence:
        raise AssertionError(f"step {name!r} #{occurrence} not found (the run has {len(hits)})")
    return hits[occurrence - 1]


def run_agent(mod: Any, inp: dict, path: Path, env: Env, *, expect_fail: bool) -> None:
    raised: BaseException | None = None
    try:
        doc = mod.run(inp, path, env)
    except Exception as exc:  # the agent's own failure: it is what the run records
        raised = exc
        doc = getattr(exc, "otlp_document", None)
    if mod.ROUTE == "otlp":
        if doc is None:
            doc = env.otel.document()
        path.write_text(json.dumps(doc))
    if expect_fail and raised is None:
        raise AssertionError(f"{mod.NAME} {inp}: expected the run to fail, it returned")
    if not expect_fail and raised is not None:
        raise AssertionError(f"{mod.NAME} {inp}: a passing input raised {raised!r}") from raised


def compose(route: str, parts: list[Path], out: Path) -> None:
    if route == "otlp":
        spans: list[Any] = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(p.read_text() for p in parts))


def load(path: Path) -> list[Any]:
    return list(trajdebug.load_runs(str(path)))


def check_case(case: dict, mod: Any, folder: Path, ext: str) -> dict:
    where = f"{case['id']}"
    [failed] = load(folder / f"failed.{ext}")
    [control] = load(folder / f"control.{ext}")
    refs = load(folder / f"with_refs.{ext}")
    assert failed.name == mod.NAME and control.name == mod.NAME, (where, failed.name, control.name)
    assert failed.outcome == "failure", (where, "failed run outcome", failed.outcome)
    assert control.outcome == "success", (where, "control outcome", control.outcome)
    assert len(refs) == 5, (where, "with_refs runs", len(refs))
    assert {r.name for r in refs} == {mod.NAME}, where
    assert sorted(r.outcome for r in refs) == ["failure"] + ["success"] * 4, (where, [r.outcome for r in refs])
    assert [r.run_id for r in refs if r.outcome == "failure"] == [failed.run_id], where
    assert failed.metadata.get("task") == control.metadata.get("task"), (where, "task differs")
    steps = ordered(failed)
    ri, root = find(steps, *case["root"])
    fi, fail = find(steps, *case["failure"])
    assert root.status == "ok", (where, "root status", root.status)
    assert fail.status == "error", (where, "failure status", fail.status)
    assert ri < fi, (where, "root after failure", ri, fi)
    below = [s for s in failed.steps if s.parent_id == fail.step_id and s.status == "error"]
    assert not below, (where, "the failing step is not where the error occurred", [s.name for s in below])
    # the same step ran and returned in the control run of the same input
    csteps = ordered(control)
    _, croot = find(csteps, *case["root"])
    assert _norm(croot.output) != _norm(root.output), (where, "the root answered as in the control run")
    assert not [s for s in csteps if s.name == case["failure"][0] and s.status == "error"], (where, "control fails the step")
    for r in [failed, control, *refs]:
        scan_run(r, where)
    truth = {
        "case": case["id"],
        "agent": mod.NAME,
        "route": mod.ROUTE,
        "fault_kind": case["kind"],
        "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
        "failure": {"name": fail.name, "occurrence": case["failure"][1]},
        "hops": fi - ri,
        "description": case["description"],
    }
    div = first_divergence(failed, control)
    if div != tuple(case["root"]):
        print(f"  note {where}: first output that differs from the control: {div}")
    m = BANNED.search(case["description"])
    assert not m, (where, "description holds", m.group(0))
    return truth


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    out = Path(argv[1]).resolve()
    wanted = argv[2:] or list(AGENT_MODULES)
    unknown = [a for a in wanted if a not in AGENT_MODULES]
    if unknown:
        raise SystemExit(f"unknown agents: {unknown} (known: {', '.join(AGENT_MODULES)})")
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="zzzzf-"))
    ids: list[str] = []
    kinds: dict[str, int] = {}
    otel = OtelCapture()
    try:
        with FakeModelServer(model="gpt-4o-mini") as server:
            for key in wanted:
                agent_started = time.monotonic()
                mod = importlib.import_module(f"zf_agents.{key}")
                route, ext = mod.ROUTE, EXT[mod.ROUTE]
                server.use(mod.brain)
                env = Env(base_url=server.base_url, model=server.model, otel=otel)
                if route == "otlp":
                    otel.instrument()
                try:
                    mod.SWITCH = None
                    passes = []
                    for i, inp in enumerate(mod.INPUTS):
                        p = tmp / f"{key}_pass{i}.{ext}"
                        run_agent(mod, inp, p, env, expect_fail=False)
                        passes.append(p)
                    for case in [c for c in CASES if c["agent"] == key]:
                        f = tmp / f"{case['id']}_failed.{ext}"
                        mod.SWITCH = case["switch"]
                        try:
                            run_agent(mod, mod.INPUTS[case["input"]], f, env, expect_fail=True)
                        finally:
                            mod.SWITCH = None
                        folder = out / case["id"]
                        if folder.exists():
                            shutil.rmtree(folder)
                        folder.mkdir(parents=True)
                        shutil.copyfile(f, folder / f"failed.{ext}")
                        shutil.copyfile(passes[case["input"]], folder / f"control.{ext}")
                        others = [p for i, p in enumerate(passes) if i != case["input"]]
                        compose(route, [f, *others], folder / f"with_refs.{ext}")
                        truth = check_case(case, mod, folder, ext)
                        (folder / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                        ids.append(case["id"])
                        kinds[case["kind"]] = kinds.get(case["kind"], 0) + 1
                        print(f"{case['id']:<12} {route:<14} {case['kind']:<22} root {truth['root']['name']}#{truth['root']['occurrence']} "
                              f"({truth['root']['kind']}) -> {truth['failure']['name']}#{truth['failure']['occurrence']}  hops {truth['hops']}")
                finally:
                    if route == "otlp":
                        otel.uninstrument()
                print(f"  {mod.NAME}: {time.monotonic() - agent_started:.1f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    if set(wanted) == set(AGENT_MODULES):
        assert len(ids) == 40, len(ids)
        for k in KINDS:
            assert 2 <= kinds.get(k, 0) <= 4, (k, kinds.get(k, 0))
    elapsed = time.monotonic() - started
    print(f"{len(ids)} cases in {elapsed:.1f} s -> {out}")
    if set(wanted) == set(AGENT_MODULES):
        assert elapsed < 60, f"took {elapsed:.1f} s"
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
