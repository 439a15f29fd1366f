"""The benchmark workflows: realistic agents written with the recording SDK.

Each module has ``NAME``, ``FAULTS`` (the fault types it can inject) and
``run(case) -> Result``.
"""

from __future__ import annotations

from types import ModuleType

from benchmarks.workflows import coding_loop, ops_runbook, rag_qa, research_team, sql_report, web_research
from benchmarks.workflows._base import CheckFailed, Result


WORKFLOWS: dict[str, ModuleType] = {
    m.NAME: m for m in (sql_report, web_research, ops_runbook, research_team, rag_qa, coding_loop)
}
"""The workflows by name."""


__all__ = ["WORKFLOWS", "CheckFailed", "Result"]
