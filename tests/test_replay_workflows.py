"""Counterfactual replay on the benchmark workflows: the injected step is verified, a victim refuted.

Each case is recorded the way the benchmark records it (`benchmarks.workflows`),
and replayed through its recorded entry point (`benchmarks.workflows.replay_case`).
The corrections come from the case's fault-free twin: the same seed, data and
task with the injector disarmed, recorded with `trajdebug.replay.record`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest


ROOT = Path(__file__).resolve().parent.parent
# `pytest` run without `python -m` does not put the repo root, where `benchmarks` lives, on the path.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.faults import Case, distractors_for  # noqa: E402
from benchmarks.workflows import (  # noqa: E402
    WORKFLOWS,
    reference,
    replay_case,
)
from benchmarks.workflows._base import ENTRY_TARGET  # noqa: E402

from trajdebug.analysis._pipeline import analyze  # noqa: E402
from trajdebug.core.model import Run  # noqa: E402
from trajdebug.replay import replay, verify  # noqa: E402
from trajdebug.replay.cassette import canonical  # noqa: E402
from trajdebug.replay.engine import forward_slice  # noqa: E402
from trajdebug.replay.verify import Verifier  # noqa: E402


SAMPLE = [
    ("sql-report", "bad-tool-args"),
    ("sql-report", "truncated-output"),
    ("research-team", "bad-tool-args"),
    ("research-team", "wrong-state-value"),
    ("rag-qa", "bad-tool-args"),
    ("rag-qa", "env-change"),
    ("web-research", "json-repair-drop"),
    ("web-research", "wrong-state-value"),
]
"""Four workflows x two fault types whose injected step has a counterpart in the fault-free twin."""

SEED = 1


def _case(workflow: str, fault: str, seed: int = SEED) -> tuple[Run, str, Run]:
    """The failing run as `trajdebug analyze` prepares it (with inferred edges), its injected step
    and its fault-free twin.

    The recorder tracks values by identity, so a short string or a number the
    planner passed on carries no recorded edge; the inferred edges recover those
    flows, and with them the forward and backward slices replay relies on.
    """
    case = Case(workflow, fault, seed, distractors_for(seed))
    res = WORKFLOWS[workflow].run(case)
    truth = res.fault["step_id"]
    assert isinstance(truth, str)
    return analyze(res.run).run, truth, reference(case)


def _victim(run: Run, truth: str) -> str:
    """The step where the failure surfaced (an error that failed the run), downstream of the root."""
    downstream = forward_slice(run, [truth]) - {truth}
    failed = [e.step_id for e in run.errors if e.stage == "failed" and e.step_id in downstream]
    assert failed, "the failure does not surface downstream of the injected step"
    pos = {s.step_id: i for i, s in enumerate(run.steps)}
    return max(failed, key=pos.__getitem__)


class TestReplayable:
    """Benchmark runs carry their entry point and replay as recorded."""

    @pytest.mark.parametrize("workflow", sorted(WORKFLOWS))
    def test_unpatched_replay_serves_every_call_and_fails_the_same_way(self, workflow: str) -> None:
        """With no patch every boundary call is served and the run fails with its recorded reason."""
        fault = WORKFLOWS[workflow].FAULTS[0]
        res = WORKFLOWS[workflow].run(Case(workflow, fault, SEED, distractors_for(SEED)))
        assert res.run.metadata["entry"]["target"] == ENTRY_TARGET
        r = replay(replay_case, res.run)
        assert not r.passed and r.deterministic and not r.divergences
        assert r.run.failure_reason == res.run.failure_reason

    @pytest.mark.parametrize(("workflow", "fault"), SAMPLE[::2])
    def test_twin_passes_on_the_same_task(self, workflow: str, fault: str) -> None:
        """The fault-free twin succeeds, asks the same task and has the injected step's counterpart."""
        run, truth, twin = _case(workflow, fault)
        assert twin.outcome == "success", twin.failure_reason
        assert twin.metadata.get("task") == run.metadata.get("task")
        assert Verifier(replay_case, run, passing=[twin]).correction_for(truth) is not None


class TestVerifyOnWorkflows:
    """`verify` on benchmark cases: the injected step is the verified root, a victim is refuted."""

    @pytest.mark.parametrize(("workflow", "fault"), SAMPLE)
    def test_injected_step_verified_and_victim_refuted(self, workflow: str, fault: str) -> None:
        """Patching the injected step with the twin's output removes the failure; the victim only passes it on."""
        run, truth, twin = _case(workflow, fault)
        victim = _victim(run, truth)
        v = verify(replay_case, run, [victim, truth], passing=[twin], samples=1)
        by_step = {c.step_id: c for c in v.checks}
        root = by_step[truth]
        assert root.status == "verified", root.reason
        assert root.correction is not None and root.correction.source == "passing-run"
        assert root.trial is not None and root.trial.replays[0].run.outcome == "success"
        assert by_step[victim].status == "refuted", by_step[victim].reason
        # The earliest flipping correction upstream of the victim lies on the failure's
        # path from the injected step: the root itself, a step it passed the fault to, or a
        # step inside one (a sub-agent's search handed the arguments its agent was given:
        # the graph encloses children in their parent, it draws no edge from parent to child).
        parents = {s.step_id: s.parent_id for s in run.steps}

        def chain(sid: str | None) -> list[str]:
            out: list[str] = []
            while sid is not None and sid not in out:
                out.append(sid)
                sid = parents.get(sid)
            return out

        # The steps enclosing the root reach everything inside them: they say nothing here.
        downstream = forward_slice(run, [truth]) - set(chain(truth)[1:])
        up = by_step[victim].upstream
        assert truth in chain(up) or set(chain(up)) & downstream, chain(up)

    @pytest.mark.parametrize(("workflow", "fault"), SAMPLE[:6])
    def test_steps_outside_the_forward_slice_never_run_live(self, workflow: str, fault: str) -> None:
        """In live mode a call runs live only downstream of the patch: in its forward slice, reached
        through an edge the graph missed (its request changed), or new; the rest is served."""
        run, truth, twin = _case(workflow, fault)
        fix = Verifier(replay_case, run, passing=[twin]).correction_for(truth)
        assert fix is not None
        r = replay(replay_case, run, {truth: fix}, mode="live")
        assert r.passed

        def changed(c: Any) -> bool:
            return bool(canonical(r.run.step(c.step_id).input) != canonical(run.step(c.original).input))

        # A call whose request changed off the slice (threads of a concurrent agent scheduled otherwise, on a
        # loaded machine) was reached through an edge the graph missed: the engine takes it, and what its output
        # reaches, as downstream too (the slice grows), so those calls may run live as well.
        missed = [c.original for c in r.calls if c.original is not None and c.mode != "patched" and changed(c)]
        downstream = forward_slice(run, [truth, *missed])
        untouched = 0
        for c in r.calls:
            if c.original is None or c.mode in ("patched", "rerun"):
                continue  # a call the recording never made (another retry attempt) is new: downstream
            if c.original not in downstream and not changed(c):
                assert c.mode == "served", c.name
                untouched += 1
            if c.mode == "live":
                assert c.original in downstream or changed(c), c.name
        assert untouched, "every boundary call is downstream of the patch: nothing to check"

    def test_unpatched_twin_replay_passes_without_live_calls(self) -> None:
        """The twin itself replays deterministically to success through the same entry point."""
        _, _, twin = _case("sql-report", "bad-tool-args")
        r = replay(replay_case, twin)
        assert r.passed and r.deterministic

    @pytest.mark.slow
    @pytest.mark.parametrize("seed", [0, 2, 3])
    def test_more_seeds(self, seed: int) -> None:
        """The injected step is verified on other seeds (with other distractors) too."""
        for workflow, fault in SAMPLE:
            run, truth, twin = _case(workflow, fault, seed)
            v = verify(replay_case, run, [truth], passing=[twin], samples=1)
            assert v.checks[0].status == "verified", (workflow, fault, seed, v.checks[0].reason)
