"""Truth records, the shared fake model server and the generator's checks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from trajdebug.testing import FakeModelServer, Reply

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)

_POLICIES: dict[str, Callable[[dict], Any]] = {}
_SERVER: FakeModelServer | None = None


def register_policy(tag: str, fn: Callable[[dict], Any]) -> None:
    """An agent's scripted model: the system message starts with ``[tag]``."""
    _POLICIES[tag] = fn


def _dispatch(request) -> Any:
    body = request.body or {}
    msgs = body.get("messages")
    if msgs is None:  # Responses API
        text = body.get("instructions") or ""
    else:
        text = next((m.get("content") or "" for m in msgs if m.get("role") == "system"), "")
    if isinstance(text, list):
        text = " ".join(p.get("text", "") for p in text if isinstance(p, dict))
    m = re.match(r"\[([a-z_]+)\]", text)
    if not m or m.group(1) not in _POLICIES:
        return Reply(status=400, error="no policy for this system prompt")
    return _POLICIES[m.group(1)](body)


def server() -> FakeModelServer:
    global _SERVER
    if _SERVER is None:
        _SERVER = FakeModelServer(_dispatch).start()
    return _SERVER


def messages(body: dict) -> list[dict]:
    return list(body.get("messages") or [])


def last_user(body: dict) -> str:
    for m in reversed(messages(body)):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def tool_results(body: dict) -> list[str]:
    return [m.get("content") or "" for m in messages(body) if m.get("role") == "tool"]


@dataclass(frozen=True)
class Case:
    case: str
    fault_id: str
    fault_kind: str
    input_key: str
    root_name: str
    root_occurrence: int
    root_kind: str
    failure_name: str
    failure_occurrence: int
    description: str


def load(path: Path):
    """The runs of a file this suite wrote (listing only)."""
    if path.suffix == ".json":
        from trajdebug.sources.formats import import_path

        return list(import_path(path, "otlp").runs)
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def nth(steps: list, name: str, occ: int):
    same = [s for s in steps if s.name == name]
    assert len(same) >= occ, f"step {name!r} #{occ} not in run ({len(same)} found)"
    return same[occ - 1]


def check_case(case: Case, agent: str, route: str, folder: Path, ext: str) -> dict:
    failed = load(folder / f"failed.{ext}")
    control = load(folder / f"control.{ext}")
    refs = load(folder / f"with_refs.{ext}")
    assert len(failed) == 1 and failed[0].outcome == "failure", (case.case, [r.outcome for r in failed])
    assert len(control) == 1 and control[0].outcome == "success", (case.case, [r.outcome for r in control], control[0].failure_reason)
    outcomes = sorted(r.outcome for r in refs)
    assert len(refs) == 5 and outcomes == ["failure"] + ["success"] * 4, (case.case, outcomes)
    run = failed[0]
    steps = ordered(run)
    root = nth(steps, case.root_name, case.root_occurrence)
    fail = nth(steps, case.failure_name, case.failure_occurrence)
    assert root.kind == case.root_kind, (case.case, root.kind, case.root_kind)
    assert fail.start_ns > root.start_ns, (case.case, "failure step does not start after the root")
    hops = steps.index(fail) - steps.index(root)
    for name in ("failed", "control", "with_refs"):
        text = (folder / f"{name}.{ext}").read_text()
        hit = FORBIDDEN.search(text)
        assert not hit, (case.case, name, text[max(0, hit.start() - 60): hit.end() + 60])
    truth = {
        "case": case.case,
        "agent": agent,
        "route": route,
        "fault_kind": case.fault_kind,
        "root": {"name": case.root_name, "occurrence": case.root_occurrence, "kind": case.root_kind},
        "failure": {"name": case.failure_name, "occurrence": case.failure_occurrence},
        "hops": hops,
        "description": case.description,
    }
    (folder / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    return truth
