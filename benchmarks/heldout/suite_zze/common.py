"""Truth records and the generator's checks for suite_zze."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORBIDDEN = re.compile(r"(?<![A-Za-z0-9])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)
ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id", "run_id", "step_id"}


@dataclass(frozen=True)
class Case:
    case: str
    fault_id: str
    fault_kind: str
    input_key: str
    root: tuple[str, int, str]  # name as recorded, occurrence (1-based), kind
    failure: tuple[str, int]  # name, occurrence
    description: str


@dataclass(frozen=True)
class Agent:
    name: str
    module: str
    route: str
    domain: str
    shape: str
    inputs: dict[str, Any]
    refs: tuple[str, ...]
    cases: tuple[Case, ...]
    record: Callable[[Any, str, Path], None]  # (input, input_key, out_file) -> records one run
    policy: Callable[[Any], Any] | None = None


def ext(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def load(path: Path, route: str) -> list[Any]:
    if route == "otlp":
        from trajdebug.sources.formats import import_path

        res = import_path(path, "otlp")
        return list(res.runs)
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def find(run: Any, name: str, occurrence: int) -> Any:
    same = [s for s in ordered(run) if s.name == name]
    if len(same) < occurrence:
        raise AssertionError(f"step {name!r} #{occurrence} not in run ({len(same)} found): "
                             f"{[s.name for s in ordered(run)]}")
    return same[occurrence - 1]


def _strings(value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ID_KEYS:
                continue
            yield str(k)
            yield from _strings(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, key)
    elif isinstance(value, str):
        yield value


def check_words(path: Path) -> None:
    text = path.read_text()
    docs = [json.loads(text)] if path.suffix == ".json" else [json.loads(x) for x in text.splitlines() if x.strip()]
    for doc in docs:
        for s in _strings(doc):
            m = FORBIDDEN.search(s)
            if m:
                raise AssertionError(f"{path}: forbidden word {s[max(0, m.start() - 30):m.end() + 30]!r}")


def merge(route: str, parts: list[Path], out: Path) -> None:
    if route == "otlp":
        env: dict[str, Any] = {"resourceSpans": []}
        for p in parts:
            env["resourceSpans"].extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps(env))
    else:
        out.write_text("".join(p.read_text() for p in parts))


def truth_for(agent: Agent, case: Case, failed: Path, control: Path, with_refs: Path) -> dict[str, Any]:
    runs = load(failed, agent.route)
    assert len(runs) == 1, (case.case, len(runs))
    run = runs[0]
    assert run.outcome == "failure", (case.case, run.outcome)
    ctl = load(control, agent.route)
    assert len(ctl) == 1 and ctl[0].outcome == "success", (case.case, [r.outcome for r in ctl],
                                                           [r.failure_reason for r in ctl])
    refs = load(with_refs, agent.route)
    outcomes = sorted(r.outcome for r in refs)
    assert outcomes == ["failure"] + ["success"] * 4, (case.case, outcomes)
    steps = ordered(run)
    root = find(run, case.root[0], case.root[1])
    fail = find(run, case.failure[0], case.failure[1])
    assert fail.status == "error", (case.case, fail.name, fail.status)
    assert root.status == "ok", (case.case, root.name)
    assert fail.start_ns > root.start_ns, (case.case, "failure does not start after root")
    hops = steps.index(fail) - steps.index(root)
    assert hops >= 1
    for p in (failed, control, with_refs):
        check_words(p)
    return {
        "case": case.case,
        "agent": agent.name,
        "route": agent.route,
        "fault_kind": case.fault_kind,
        "root": {"name": case.root[0], "occurrence": case.root[1], "kind": case.root[2]},
        "failure": {"name": case.failure[0], "occurrence": case.failure[1]},
        "hops": hops,
        "description": case.description,
    }


def last_user_json(body: Any) -> dict[str, Any]:
    """The JSON payload of the last user message of a chat request (policies read it)."""
    msgs = body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                c = "".join(p.get("text", "") for p in c if isinstance(p, dict))
            try:
                return json.loads(c)
            except (TypeError, ValueError):
                return {"text": c}
    return {}


class ChatClient:
    """A thin chat call to the model server (sdk and otlp routes)."""

    def __init__(self, base_url: str) -> None:
        from openai import OpenAI

        self.client = OpenAI(base_url=base_url, api_key="test", max_retries=0)

    def ask(self, system: str, payload: dict[str, Any]) -> str:
        r = self.client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}],
            temperature=0,
        )
        return r.choices[0].message.content or ""
