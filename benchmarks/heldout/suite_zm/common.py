"""Truth records, the fake model policy registry and the generator's checks."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from trajdebug.testing import Reply

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.I)

POLICIES: dict[str, Callable[[list[dict]], Any]] = {}


def policy(tag: str):
    def deco(fn):
        POLICIES[tag] = fn
        return fn
    return deco


def dispatch(request) -> Any:
    body = request.body or {}
    msgs = body.get("messages") or []
    system = " ".join(str(m.get("content")) for m in msgs if m.get("role") == "system")
    m = re.search(r"\[desk:([a-z_]+)\]", system)
    if not m:
        return Reply(text="{}")
    return POLICIES[m.group(1)](msgs)


def last_user_json(msgs: list[dict]) -> Any:
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            return json.loads(c)
    return {}


def tool_results(msgs: list[dict]) -> list[tuple[str, Any]]:
    """(tool name, parsed content) for each tool result in the conversation, oldest first."""
    names = {}
    out = []
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            try:
                val = json.loads(m.get("content"))
            except Exception:
                val = m.get("content")
            out.append((names.get(m.get("tool_call_id"), "?"), val))
    return out


@dataclass
class Case:
    case: str
    fault_kind: str
    input_key: str
    root: tuple[str, int, str]
    failure: tuple[str, int]
    description: str
    fault_id: str = ""
    extra: dict = field(default_factory=dict)


def truth_dict(c: Case, agent: str, route: str, hops: int) -> dict:
    return {
        "case": c.case,
        "agent": agent,
        "route": route,
        "fault_kind": c.fault_kind,
        "root": {"name": c.root[0], "occurrence": c.root[1], "kind": c.root[2]},
        "failure": {"name": c.failure[0], "occurrence": c.failure[1]},
        "hops": hops,
        "description": c.description,
    }


def check_forbidden(text: str, where: str) -> None:
    m = FORBIDDEN.search(text)
    assert not m, f"{where}: forbidden word at {text[max(0, m.start()-60):m.end()+60]!r}"


def locate(steps: list[tuple[str, str, bool]], name: str, occ: int) -> int:
    """Index (in start order) of the occ-th step named name; steps = (name, kind, errored)."""
    n = 0
    for i, (nm, _k, _e) in enumerate(steps):
        if nm == name:
            n += 1
            if n == occ:
                return i
    raise AssertionError(f"step {name!r} #{occ} not found in {[s[0] for s in steps]}")
