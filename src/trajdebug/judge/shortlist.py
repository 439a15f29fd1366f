"""What the model is asked about: the deterministic ranking's head and the lineage of the failing values.

The deterministic search has already ranked every step of the failure's
backward slice; the model judges only a shortlist of it:

- the **head** of the ranking: the top ``k`` candidates, with their scores,
  reasons and signals;
- the steps on their **dependency paths** to the failure (the lineage of the
  failing values): a relay that corrupted a value, or the step that only
  passed it on, is judged next to the candidate it lies between.

Each step gets a short label (``S1``, ``S2``... in the order the steps ran),
which is what the model names in its answer: labels are short, cannot be
mistyped into another step's id, and keep step ids out of the prompt.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from trajdebug.analysis import Analysis, Candidate
from trajdebug.core.model import Run, Step


@dataclass(frozen=True, slots=True)
class Entry:
    """One shortlisted step."""

    label: str
    """The label the model sees and answers with (``S1``... in run order)."""
    step: Step
    """The step."""
    run: Run
    """The run holding the step (the analyzed run, or an earlier conversation turn)."""
    path: tuple[str, ...]
    """The dependency path from the step to the failure (step ids, the step first)."""
    candidate: Candidate | None = None
    """The deterministic candidate, when the step is one."""
    rank: int | None = None
    """Its rank in the deterministic candidates (1-based), when it is one."""
    via: int | None = None
    """For a step on a candidate's path only: that candidate's rank."""

    run_id: str | None = None
    """The earlier conversation turn holding the step (None: the analyzed run)."""

    @property
    def key(self) -> tuple[str | None, str]:
        """``(run id when an earlier turn, step id)``: the identity of a candidate."""
        return (self.run_id, self.step.step_id)


def task_of(run: Run) -> str:
    """The task the run was given: its metadata's task, else its first input, else its first user message."""
    for key in ("task", "question", "goal", "instruction", "query", "input", "prompt"):
        value = run.metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value
    for s in run.steps:
        if s.kind == "input":
            value = s.output if s.output is not None else s.input
            if value is not None:
                return value if isinstance(value, str) else str(value)
    for s in run.steps:
        if s.kind == "llm" and isinstance(s.input, Mapping):
            for m in s.input.get("messages") or ():
                if isinstance(m, Mapping) and m.get("role") == "user" and isinstance(m.get("content"), str):
                    return str(m["content"])
    return run.name


def failure_of(analysis: Analysis) -> str:
    """How the run failed, in words: the run's reason and what each detector found."""
    names = {s.step_id: s.name for s in analysis.run.steps}
    parts = []
    if analysis.run.failure_reason:
        parts.append(f"the run failed: {analysis.run.failure_reason}")
    for f in analysis.failures[:5]:
        parts.append(f"{names.get(f.step_id, f.step_id)}: {f.message} (found by the {f.detector} detector)")
    return "; ".join(parts) or f"the run ended with outcome {analysis.run.outcome}"


class Shortlist:
    """The shortlisted steps of one analysis, labelled in run order.

    Args:
        analysis: The deterministic analysis.
        k: How many of the ranking's head to take.
        max_steps: At most this many steps in all (the head first, then path steps
            by the rank of the candidate they lie under).
    """

    def __init__(self, analysis: Analysis, k: int, max_steps: int) -> None:
        self.analysis = analysis
        runs: dict[str | None, Run] = {None: analysis.run}
        runs.update({r.run_id: r for r in analysis.previous})
        self._runs = runs
        picked: dict[tuple[str | None, str], tuple[Candidate | None, int | None, int | None, tuple[str, ...]]] = {}
        head = analysis.root_causes[:k]
        for i, c in enumerate(head, 1):
            if self._find(c.run_id, c.step_id) is not None:
                picked[(c.run_id, c.step_id)] = (c, i, None, c.path)
        for i, c in enumerate(head, 1):
            for j, sid in enumerate(c.path):
                where = self._locate(sid)
                if where is None or where in picked or len(picked) >= max_steps:
                    continue
                picked[where] = (None, None, i, c.path[j:])
        order: dict[tuple[str | None, str], int] = {(None, s.step_id): n for n, s in enumerate(analysis.run.steps)}
        for r in analysis.previous:
            # Earlier turns ran first: they sort before the analyzed run's steps.
            order.update({(r.run_id, s.step_id): n - 10**9 for n, s in enumerate(r.steps)})
        keys = sorted(list(picked)[:max_steps], key=lambda key: order.get(key, 0))
        self.entries: list[Entry] = []
        for n, key in enumerate(keys, 1):
            cand, rank, via, path = picked[key]
            step = self._find(*key)
            assert step is not None
            self.entries.append(Entry(f"S{n}", step, self._runs[key[0]], path, cand, rank, via, key[0]))
        self._keys = dict(zip([e.label for e in self.entries], keys))
        self._labels = {key: label for label, key in self._keys.items()}

    def _find(self, run_id: str | None, step_id: str) -> Step | None:
        run = self._runs.get(run_id)
        if run is None:
            return None
        for s in run.steps:
            if s.step_id == step_id:
                return s
        return None

    def _locate(self, step_id: str) -> tuple[str | None, str] | None:
        """Where a path's step id lives: the analyzed run first, then the earlier turns."""
        for run_id in self._runs:
            if self._find(run_id, step_id) is not None:
                return (run_id, step_id)
        return None

    def where(self, label: str) -> tuple[str | None, str] | None:
        """``(run id when an earlier turn, step id)`` of a label, or None when no step has it."""
        return self._keys.get(label)

    def label(self, run_id: str | None, step_id: str) -> str | None:
        """The label of a step, when it is shortlisted."""
        return self._labels.get((run_id, step_id))

    def label_of_id(self, step_id: str) -> str | None:
        """The label of a step id of a path (the analyzed run first, then earlier turns)."""
        where = self._locate(step_id)
        return self._labels.get(where) if where is not None else None

    def by_label(self) -> dict[str, Entry]:
        """The entries by label."""
        return {e.label: e for e in self.entries}

    def downstream(self, entry: Entry) -> list[Entry]:
        """The shortlisted steps on ``entry``'s path to the failure, after it."""
        labels = [self.label_of_id(sid) for sid in entry.path[1:]]
        by = self.by_label()
        return [by[x] for x in labels if x is not None and x in by]

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


__all__ = ["Entry", "Shortlist", "failure_of", "task_of"]
