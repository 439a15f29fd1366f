"""Truth records, the model-server plumbing and the generator's checks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)

BASE_URL = {"url": ""}


def base_url() -> str:
    return BASE_URL["url"]


@dataclass(frozen=True)
class Case:
    case: str
    switch: str
    fault_kind: str
    main_input: str
    root: tuple[str, int]
    failure: tuple[str, int]
    description: str


def messages_of(request: Any) -> list[dict]:
    body = request.body or {}
    if "messages" in body:
        return list(body["messages"])
    msgs = []
    if body.get("instructions"):
        msgs.append({"role": "system", "content": body["instructions"]})
    inp = body.get("input")
    if isinstance(inp, str):
        msgs.append({"role": "user", "content": inp})
    elif isinstance(inp, list):
        msgs.extend(inp)
    return msgs


def text_of(msg: dict) -> str:
    c = msg.get("content")
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return c or ""


def load(path: Path, route: str) -> list[Any]:
    if route == "otlp":
        from trajdebug.sources.formats import import_path

        res = import_path(path, "otlp")
        return list(res.runs)
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index or 0))


def find(run: Any, name: str, occurrence: int) -> tuple[int, Any]:
    steps = ordered(run)
    seen = 0
    for i, s in enumerate(steps):
        if s.name == name:
            seen += 1
            if seen == occurrence:
                return i, s
    raise AssertionError(f"step {name!r} #{occurrence} not in run {run.name} ({[s.name for s in steps]})")


def check_case(case: Case, agent: str, route: str, failed: Path, control: Path, with_refs: Path) -> dict:
    fr = load(failed, route)
    assert len(fr) == 1 and fr[0].outcome == "failure", (case.case, [r.outcome for r in fr])
    cr = load(control, route)
    assert len(cr) == 1 and cr[0].outcome == "success", (case.case, [(r.outcome, r.failure_reason) for r in cr])
    wr = load(with_refs, route)
    outcomes = sorted(r.outcome for r in wr)
    assert outcomes == ["failure"] + ["success"] * 4, (case.case, outcomes)
    run = fr[0]
    ri, root = find(run, *case.root)
    fi, fail = find(run, *case.failure)
    assert fi > ri and fail.start_ns >= root.start_ns, (case.case, ri, fi)
    for p in (failed, control, with_refs):
        m = FORBIDDEN.search(p.read_text())
        assert m is None, (case.case, p.name, p.read_text()[max(0, m.start() - 80) : m.end() + 80])
    return {
        "case": case.case,
        "agent": agent,
        "route": route,
        "fault_kind": case.fault_kind,
        "root": {"name": case.root[0], "occurrence": case.root[1], "kind": root.kind},
        "failure": {"name": case.failure[0], "occurrence": case.failure[1]},
        "hops": fi - ri,
        "description": case.description,
    }


def dump(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")


_CLIENT: dict[str, Any] = {}


def client() -> Any:
    from openai import OpenAI

    url = base_url()
    if _CLIENT.get("url") != url:
        _CLIENT["url"] = url
        _CLIENT["c"] = OpenAI(base_url=url, api_key="sk-test-local", max_retries=0)
    return _CLIENT["c"]


def chat(model: str, system: str, user: Any) -> str:
    """One chat completion against the local model server; returns the assistant text."""
    reply = client().chat.completions.create(
        model=model,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": json.dumps(user, sort_keys=True)}],
        temperature=0,
    )
    return reply.choices[0].message.content or ""


def role_and_payload(request: Any) -> tuple[str, Any]:
    msgs = messages_of(request)
    system = next((text_of(m) for m in msgs if m.get("role") in ("system", "developer")), "")
    role = system.split("\n", 1)[0].replace("ROLE:", "").strip()
    users = [text_of(m) for m in msgs if m.get("role") == "user"]
    try:
        payload = json.loads(users[-1]) if users else None
    except ValueError:
        payload = users[-1]
    return role, payload
