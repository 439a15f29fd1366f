"""trajdebug: a debugger for LLM-agent runs.

Record every step of an agent run with its dependencies, track each error
from occurrence to recovery or failure, localize the root cause of a failure,
and verify it by counterfactual replay.

Example:
    ```python
    import trajdebug

    @trajdebug.step(kind="tool")
    def search(query: str) -> list[str]: ...

    with trajdebug.run("research", task="find the revenue") as run:
        hits = search("revenue 2025")
    ```
"""

from __future__ import annotations

from typing import Any

from trajdebug.answers import save_answer
from trajdebug.format import FormatError, ReadResult, read_jsonl, write_jsonl
from trajdebug.marks import mark
from trajdebug.model import (
    Answer,
    Dependency,
    ErrorEvent,
    ErrorInfo,
    Run,
    StageChange,
    Step,
)
from trajdebug.record import (
    ContextThreadPoolExecutor,
    CriticalError,
    RunHandle,
    StepHandle,
    StopRun,
    ToolTimeout,
    branch,
    configure,
    current_run,
    current_step,
    expect,
    extract,
    flush,
    inject,
    on_critical,
    reads,
    retry,
    retry_call,
    run,
    step,
    traced,
    uses_env,
    wrap,
    writes,
)
from trajdebug.source import SourceError, load_runs
from trajdebug.store import Store


def __getattr__(name: str) -> Any:
    # Resolved lazily so the version lives only in package metadata, and the
    # analysis and replay layers load only when used.
    if name == "__version__":
        from importlib.metadata import version

        return version("trajdebug")
    if name in ("check", "contract", "ContractError"):
        from trajdebug.record import contracts

        return getattr(contracts, name)
    if name == "analyze":
        from trajdebug.analysis import analyze

        return analyze
    if name == "analyze_source":
        from trajdebug.pipeline import analyze_source

        return analyze_source
    if name in ("Usage", "run_usage", "step_usage", "load_prices"):
        from trajdebug import usage

        return getattr(usage, name)
    if name == "replay_run":
        from trajdebug.replay import replay

        return replay
    raise AttributeError(f"module 'trajdebug' has no attribute {name!r}")


__all__ = [
    "Answer",
    "ContextThreadPoolExecutor",
    "ContractError",
    "CriticalError",
    "Dependency",
    "ErrorEvent",
    "ErrorInfo",
    "FormatError",
    "ReadResult",
    "Run",
    "RunHandle",
    "SourceError",
    "StageChange",
    "Step",
    "StepHandle",
    "StopRun",
    "Store",
    "ToolTimeout",
    "Usage",
    "analyze",
    "analyze_source",
    "branch",
    "check",
    "configure",
    "contract",
    "current_run",
    "current_step",
    "expect",
    "extract",
    "flush",
    "inject",
    "load_prices",
    "load_runs",
    "mark",
    "on_critical",
    "read_jsonl",
    "reads",
    "replay_run",
    "retry",
    "retry_call",
    "run",
    "save_answer",
    "run_usage",
    "step",
    "step_usage",
    "traced",
    "uses_env",
    "wrap",
    "write_jsonl",
    "writes",
]
