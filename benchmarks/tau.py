"""Real data: AgentRx's annotated tau-bench failures through the message-log importer.

Each of the 29 failed runs is imported with `trajdebug.sources.formats.import_path`
and analysed; the prediction is compared with the people's annotation.  The
annotation's ``step_number`` is 1-based over the run's message list
(``traj``); the importer keeps each step's 0-based ``source_index``, so
annotated step s is the imported step whose ``source_index`` is s - 1.
Several imported steps can come from one message (an assistant message with
two tool calls): a ranking is read as a ranking of messages, keeping each
message's best position.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.metrics import mrr, rank_of, top_k


def _data_dir() -> Path:
    root = Path(__file__).resolve().parent.parent
    # ../shared/data beside the repository (or beside the folder of its worktrees).
    for base in (root.parent, root.parent.parent):
        if (base / "shared" / "data" / "agentrx-tau").exists():
            return base / "shared" / "data" / "agentrx-tau"
    return root.parent / "shared" / "data" / "agentrx-tau"


DATA = _data_dir()
"""Where the data set lives (``../shared/data/agentrx-tau`` from the repository; README.md there describes it)."""


@dataclass(slots=True)
class TauCase:
    """One annotated run and each method's ranking of its messages."""

    task_id: Any
    """The run's tau-bench task id (= the annotation's ``trajectory_id``)."""
    messages: int
    """Messages in the run."""
    root: int
    """The annotated root cause: a 1-based message number."""
    failures: tuple[int, ...]
    """Every annotated failure's message number."""
    user: str = ""
    """The tau-bench user the task simulates (tasks of one user share phrasings: split by user, not by task)."""
    rankings: dict[str, list[int]] = field(default_factory=dict)
    """Each method's ranking of message numbers, best first."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Each method's wall time."""


@dataclass(slots=True)
class TauResult:
    """The whole evaluation."""

    cases: list[TauCase]
    """One per annotated run found."""
    unmatched: list[Any]
    """Annotations whose run was not found among the imported runs."""
    import_seconds: float
    """Time to import the data set."""
    steps: int
    """Steps imported."""

    def rows(self, half: str | None = None) -> list[dict[str, Any]]:
        """Per-method metrics (``half``: only the runs of one half of the users, see `user_half`)."""
        cases = [c for c in self.cases if half is None or user_half(c.user) == half]
        methods = list(cases[0].rankings) if cases else []
        out = []
        for m in methods:
            ranks = [rank_of(c.rankings[m], c.root) for c in cases]
            any1 = sum(1 for c in cases if c.rankings[m][:1] and c.rankings[m][0] in c.failures)
            any3 = sum(1 for c in cases if any(x in c.failures for x in c.rankings[m][:3]))
            n = len(cases)
            out.append(
                {
                    "method": m,
                    "runs": n,
                    "top1": top_k(ranks, 1),
                    "top3": top_k(ranks, 3),
                    "mrr": mrr(ranks),
                    "any_failure_top1": any1 / n if n else float("nan"),
                    "any_failure_top3": any3 / n if n else float("nan"),
                    "ms": 1000 * sum(c.seconds[m] for c in cases) / n if n else float("nan"),
                }
            )
        return out


def _user(metadata: Any) -> str:
    """The simulated user's id from a tau-bench run's ``info`` (a Python-literal string or a mapping)."""
    import ast

    info = metadata.get("info") if isinstance(metadata, dict) else None
    if isinstance(info, str):
        try:
            info = ast.literal_eval(info)
        except (ValueError, SyntaxError):
            return ""
    task = info.get("task") if isinstance(info, dict) else None
    user = task.get("user_id") if isinstance(task, dict) else None
    return str(user or "")


def user_half(user: str) -> str:
    """Which half of the users a run belongs to (``A`` or ``B``), by a hash of the user id: no user on both sides."""
    import hashlib

    return "A" if int(hashlib.sha256(user.encode()).hexdigest(), 16) % 2 == 0 else "B"


def _messages(candidates: Sequence[Any], index: dict[str, int | None]) -> list[int]:
    """Candidate steps as 1-based message numbers, each message once, best position kept."""
    out: list[int] = []
    for c in candidates:
        si = index.get(c.step_id)
        if si is not None and si + 1 not in out:
            out.append(si + 1)
    return out


def run_tau(data: Path = DATA, top: int = 10) -> TauResult:
    """Import the data set, analyse every annotated run with trajdebug and the baselines.

    Raises:
        FileNotFoundError: the data set is missing.
    """
    from benchmarks.baselines import BASELINES
    from trajdebug.sources.formats import import_path

    try:
        from trajdebug.analysis._pipeline import analyze
    except ImportError:  # pragma: no cover - the pipeline is part of the analysis package
        analyze = None  # type: ignore[assignment]
    gt = json.loads((data / "tau_ground_truth.json").read_text())
    t0 = time.perf_counter()
    res = import_path(data / "tau_dataset_failed.json")
    t_import = time.perf_counter() - t0
    by_task = {r.metadata.get("task_id"): r for r in res.runs}
    cases: list[TauCase] = []
    unmatched: list[Any] = []
    for entry in gt:
        run = by_task.get(entry["trajectory_id"])
        if run is None:
            unmatched.append(entry["trajectory_id"])
            continue
        steps = {f["failure_id"]: int(f["step_number"]) for f in entry["failures"]}
        case = TauCase(
            entry["trajectory_id"],
            1 + max((s.source_index or 0) for s in run.steps),
            steps[entry["root_cause"]["failure_id"]],
            tuple(sorted(set(steps.values()))),
            _user(run.metadata),
        )
        index = {s.step_id: s.source_index for s in run.steps}
        s0 = time.perf_counter()
        if analyze is not None:
            # The hand ranking: the learned model (the default since round 42) is trained on these cases.
            a = analyze(run, top=top, model=None)
            prepared, failures, loc = a.run, list(a.failures), a.localization
        else:  # pragma: no cover
            from trajdebug.analysis._detect import detect
            from trajdebug.analysis._localize import localize

            prepared, failures = run, list(detect(run))
            loc = localize(run, failures=failures, top=top)
        case.seconds["trajdebug"] = time.perf_counter() - s0
        case.rankings["trajdebug"] = _messages(loc.candidates, index)
        methods: dict[str, Callable[..., Any]] = dict(BASELINES)
        for name, fn in methods.items():
            s0 = time.perf_counter()
            bl = fn(prepared, failures, top=top)
            case.seconds[name] = time.perf_counter() - s0
            case.rankings[name] = _messages(bl.candidates, index)
        cases.append(case)
    return TauResult(cases, unmatched, t_import, sum(len(r.steps) for r in res.runs))


__all__ = ["DATA", "TauCase", "TauResult", "run_tau"]
