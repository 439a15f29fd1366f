"""Runs as JSON data (for ``--json`` and the JSON report)."""

from __future__ import annotations

from typing import Any

from trajdebug.format import dep_to_dict, error_info_to_dict
from trajdebug.model import ErrorEvent, Run, Step


def step_to_dict(s: Step) -> dict[str, Any]:
    """A step as JSON data (every field, defaults included)."""
    return {
        "step_id": s.step_id,
        "name": s.name,
        "kind": s.kind,
        "parent_id": s.parent_id,
        "agent": s.agent,
        "status": s.status,
        "start_ns": s.start_ns,
        "end_ns": s.end_ns,
        "duration_ns": s.duration_ns,
        "attempt": s.attempt,
        "retry_of": s.retry_of,
        "source_index": s.source_index,
        "input": s.input,
        "output": s.output,
        "error": error_info_to_dict(s.error) if s.error else None,
        "deps": [dep_to_dict(d) for d in s.deps],
        "attributes": dict(s.attributes),
    }


def error_to_dict(e: ErrorEvent) -> dict[str, Any]:
    """An error event as JSON data."""
    return {
        "error_id": e.error_id,
        "step_id": e.step_id,
        "type": e.type,
        "message": e.message,
        "parent_error_id": e.parent_error_id,
        "attempt": e.attempt,
        "stage": e.stage,
        "stages": [
            {"stage": c.stage, "step_id": c.step_id, "time_ns": c.time_ns, "reason": c.reason}
            for c in e.stages
        ],
        "attributes": dict(e.attributes),
    }


def run_to_dict(run: Run, *, steps: bool = True) -> dict[str, Any]:
    """A run as JSON data."""
    out: dict[str, Any] = {
        "run_id": run.run_id,
        "name": run.name,
        "outcome": run.outcome,
        "failure_reason": run.failure_reason,
        "start_ns": run.start_ns,
        "end_ns": run.end_ns,
        "continues": run.continues,
        "metadata": dict(run.metadata),
        "step_count": len(run.steps),
        "error_count": len(run.errors),
    }
    if steps:
        out["steps"] = [step_to_dict(s) for s in run.steps]
        out["errors"] = [error_to_dict(e) for e in run.errors]
    return out
