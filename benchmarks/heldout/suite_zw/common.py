"""Truth records, the model-call helpers and the generator's checks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    case: str
    fault_kind: str
    input: str
    root: str
    root_occurrence: int
    root_kind: str
    failure: str
    failure_occurrence: int
    description: str


def last_user_json(body: Any) -> dict:
    """The JSON payload of the last user message of a chat request (the agents send JSON)."""
    msgs = body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            try:
                return json.loads(content)
            except (TypeError, ValueError):
                return {"text": content}
    return {}


def tool_results(body: Any) -> list[dict]:
    """Tool messages of a chat request, parsed as JSON where possible, oldest first."""
    out = []
    for m in body.get("messages") or []:
        if m.get("role") == "tool":
            c = m.get("content")
            if isinstance(c, list):
                c = "".join(p.get("text", "") for p in c if isinstance(p, dict))
            try:
                out.append(json.loads(c))
            except (TypeError, ValueError):
                out.append({"text": c})
    return out


def system_text(body: Any) -> str:
    for m in body.get("messages") or []:
        if m.get("role") in ("system", "developer"):
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def load(path: Path):
    """The runs of a file this suite wrote, in file order."""
    if path.suffix == ".json":
        from trajdebug.sources.formats import import_path

        res = import_path(path, "otlp")
        return list(res.runs)
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index if s.source_index is not None else 0))


def nth(steps: list, name: str, occ: int):
    same = [s for s in steps if s.name == name]
    if len(same) < occ:
        return None
    return same[occ - 1]


def check_case(case: Case, agent_name: str, failed: Path, control: Path, with_refs: Path) -> int:
    """Assert the case's invariants; returns hops (failure index minus root index in start order)."""
    fr = load(failed)
    assert len(fr) == 1, (case.case, "failed file holds", len(fr))
    run = fr[0]
    assert run.outcome == "failure", (case.case, "failed run outcome", run.outcome)
    cr = load(control)
    assert len(cr) == 1 and cr[0].outcome == "success", (case.case, "control", [r.outcome for r in cr])
    wr = load(with_refs)
    outs = sorted(r.outcome for r in wr)
    assert len(wr) == 5 and outs == ["failure", "success", "success", "success", "success"], (case.case, outs)
    steps = ordered(run)
    root = nth(steps, case.root, case.root_occurrence)
    assert root is not None, (case.case, "no root", case.root, case.root_occurrence, sorted({s.name for s in steps}))
    assert root.status != "error", (case.case, "root raised")
    assert root.kind == case.root_kind, (case.case, "root kind", root.kind, case.root_kind)
    fail = nth(steps, case.failure, case.failure_occurrence)
    assert fail is not None, (case.case, "no failure step", case.failure)
    ri, fi = steps.index(root), steps.index(fail)
    assert fi > ri and (fail.start_ns or 0) >= (root.start_ns or 0), (case.case, "failure before root", ri, fi)
    for p in (failed, control, with_refs):
        m = FORBIDDEN.search(p.read_text())
        assert m is None, (case.case, p.name, "forbidden word", p.read_text()[max(0, m.start() - 80) : m.end() + 40])
    return fi - ri
