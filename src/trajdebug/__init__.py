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

# What the decorator needs is imported now: the step handle and the decorator (`trajdebug.record.recorder`,
# which imports only the context, the settings and the decorator's wrappers).  Every other public name,
# ``run`` included, is imported on first use (PEP 562 ``__getattr__``): the first ``trajdebug.run(...)``
# loads the run handle, the writer, the sinks and the codec, so ``import trajdebug`` in an agent (and
# decorating its functions) costs little (docs/benchmarks.md, "Report, start-up"; tests/test_init.py
# lists what it must not load).
from trajdebug.record.recorder import StepHandle, StopRun, current_run, current_step, step


TYPE_CHECKING = False  # `typing` is for the type checker only (it costs start-up)
if TYPE_CHECKING:
    from typing import Any

    from trajdebug.answers import save_answer
    from trajdebug.core.jsonl import FormatError, ReadResult, read_jsonl, write_jsonl
    from trajdebug.core.model import Answer, Dependency, ErrorEvent, ErrorInfo, Run, Score, StageChange, Step
    from trajdebug.marks import mark
    from trajdebug.record import (
        ContextThreadPoolExecutor,
        CriticalError,
        ToolTimeout,
        branch,
        configure,
        expect,
        extract,
        flush,
        inject,
        on_critical,
        reads,
        retry,
        retry_call,
        traced,
        uses_env,
        wrap,
        writes,
    )
    from trajdebug.record.runs import RunHandle, run
    from trajdebug.scores import score
    from trajdebug.sources.load import SourceError, load_runs
    from trajdebug.store import Store
    from trajdebug.usage import Usage, load_prices, run_usage, step_usage


_LAZY: dict[str, tuple[str, str]] = {
    **{n: ("trajdebug.core.jsonl", n) for n in ("FormatError", "ReadResult", "read_jsonl", "write_jsonl")},
    "mark": ("trajdebug.marks", "mark"),
    "score": ("trajdebug.scores", "score"),
    **{
        n: ("trajdebug.core.model", n)
        for n in ("Answer", "Dependency", "ErrorEvent", "ErrorInfo", "Run", "Score", "StageChange", "Step")
    },
    "SourceError": ("trajdebug.sources.load", "SourceError"),
    "load_runs": ("trajdebug.sources.load", "load_runs"),
    "Store": ("trajdebug.store", "Store"),
    **{n: ("trajdebug.record.contracts", n) for n in ("check", "contract", "ContractError")},
    "analyze": ("trajdebug.analysis", "analyze"),
    "analyze_source": ("trajdebug.api", "analyze_source"),
    "replay_run": ("trajdebug.replay", "replay"),
    "save_answer": ("trajdebug.answers", "save_answer"),
    **{n: ("trajdebug.usage", n) for n in ("Usage", "load_prices", "run_usage", "step_usage")},
}
"""Public names imported on first use: name -> (module, attribute).  A public name not listed here is
the recorder's (`trajdebug.record` lists it once, in its ``__all__``, and imports it on first use)."""


def __getattr__(name: str) -> Any:
    if name == "__version__":
        # Resolved lazily so the version lives only in package metadata.
        from importlib.metadata import version

        return version("trajdebug")
    where = _LAZY.get(name)
    if where is None and name in __all__:
        where = ("trajdebug.record", name)
    if where is None:
        raise AttributeError(f"module 'trajdebug' has no attribute {name!r}")
    import sys

    __import__(where[0])  # not `importlib.import_module`: importing `importlib` costs start-up
    value = getattr(sys.modules[where[0]], where[1])
    globals()[name] = value  # later look-ups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
    "Score",
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
    "score",
    "run_usage",
    "step",
    "step_usage",
    "traced",
    "uses_env",
    "wrap",
    "write_jsonl",
    "writes",
]
