"""Tests of the diagnosers' declarations (`trajdebug.analysis.diagnosers._reads`) and the index built from them."""

from __future__ import annotations

import collections
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from trajdebug.analysis._pipeline import analyze
from trajdebug.analysis.diagnosers import BUILTIN_DIAGNOSERS, DiagnoseContext, Evidence, diagnose
from trajdebug.analysis.diagnosers._reads import ANY, TOOLS, Reads, reading, reads_of
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step


ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

UNDECLARED = frozenset({"starved-consumer"})
"""Built-in rules that declare nothing: `starved-consumer` judges any step a tool returned nothing for."""


def _run(*steps: Step) -> Run:
    return Run(run_id="r", name="r", steps=list(steps), outcome="failure")


def _seen_by(reads: Reads | None) -> tuple[Any, list[str]]:
    seen: list[str] = []

    def rule(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
        seen.append(step.step_id)
        return ()

    return (rule if reads is None else reading(reads)(rule)), seen


@pytest.fixture
def every_rule_everywhere(monkeypatch: pytest.MonkeyPatch) -> tuple[collections.Counter[str], list[Any]]:
    """While it is active, each step diagnosed is also shown to every rule, declared or not: the rules that fire
    are counted, and a finding on a step its rule's declaration excludes is listed."""
    fired: collections.Counter[str] = collections.Counter()
    wrong: list[Any] = []
    real = DiagnoseContext.verdict

    def verdict(self: DiagnoseContext, step_id: str) -> Any:
        if self.known(step_id) is None:
            step = self.graph.steps[step_id]
            for name, fn in self.diagnosers:
                if list(fn(step, self)):
                    fired[name] += 1
                    if not reads_of(fn).fires(step, self):
                        wrong.append((name, step.kind, step.status, step.name))
        return real(self, step_id)

    monkeypatch.setattr(DiagnoseContext, "verdict", verdict)
    return fired, wrong


class TestDeclarations:
    def test_every_built_in_rule_declares_what_it_reads_but_the_listed_ones(self) -> None:
        """Every built-in diagnoser carries a `Reads`, apart from those named as reading any step."""
        bare = {name for name, fn in BUILTIN_DIAGNOSERS.items() if reads_of(fn) is ANY}
        assert bare == UNDECLARED

    def test_a_declaration_admits_only_its_kinds_statuses_and_retries(self) -> None:
        """`Reads.fires_on` admits a step of a listed kind and status, and refuses a skipped one or a non-retry."""
        r = Reads(kinds=TOOLS, skips_statuses=frozenset({"error"}))
        assert r.fires_on("tool", "ok", False) and r.fires_on("retrieval", "cancelled", False)
        assert not r.fires_on("llm", "ok", False) and not r.fires_on("tool", "error", False)
        assert not Reads(retries=True).fires_on("tool", "ok", False)
        assert not Reads(skips_kinds=frozenset({"llm"})).fires_on("llm", "ok", True)

    def test_the_decorator_returns_the_rule_itself(self) -> None:
        """`reading` marks the callable it is given and returns it unchanged."""
        rule, _ = _seen_by(None)
        assert reading(Reads())(rule) is rule and isinstance(rule.reads, Reads)


class TestIndex:
    def test_a_rule_is_shown_only_the_steps_its_declaration_admits(self) -> None:
        """A rule declaring tool steps is called on the tool steps alone; an undeclared rule on every step."""
        tools, seen_tools = _seen_by(Reads(kinds=TOOLS))
        every, seen_all = _seen_by(None)
        run = _run(Step(step_id="a", name="m", kind="llm"), Step(step_id="b", name="t", kind="tool"))
        diagnose(run, diagnosers={"tools": tools, "every": every})
        assert seen_tools == ["b"] and seen_all == ["a", "b"]

    def test_an_attribute_rule_sees_only_steps_recording_it(self) -> None:
        """A rule declaring an attribute is called only on the steps whose attributes hold it."""
        rule, seen = _seen_by(Reads(attribute="role"))
        run = _run(Step(step_id="a", name="m", kind="llm", attributes={"role": "user"}), Step(step_id="b", name="t"))
        diagnose(run, diagnosers={"chat": rule})
        assert seen == ["a"]

    def test_a_rule_needing_errors_skips_a_run_without_any(self) -> None:
        """A rule declaring ``errors`` is not called in a run where no step ended with an error, and is in one that has."""
        rule, seen = _seen_by(Reads(errors=True))
        diagnose(_run(Step(step_id="a", name="t")), diagnosers={"err": rule})
        assert seen == []
        failed = Step(step_id="b", name="t", status="error", error=ErrorInfo(type="ValueError", message="x"))
        diagnose(_run(Step(step_id="a", name="t"), failed), diagnosers={"err": rule})
        assert seen == ["a", "b"]

    def test_a_rule_needing_state_or_failures_skips_a_run_without_them(self) -> None:
        """Rules declaring ``state`` or ``failures`` are not called in a run with no state edge and no failure."""
        state, seen_state = _seen_by(Reads(state=True))
        failures, seen_failures = _seen_by(Reads(failures=True))
        run = _run(Step(step_id="a", name="w"), Step(step_id="b", name="r", deps=[Dependency("a", kind="data")]))
        diagnose(run, diagnosers={"state": state, "failures": failures})
        assert seen_state == [] and seen_failures == []

    def test_a_summarized_step_is_shown_only_the_summary_safe_rules(self) -> None:
        """A step recorded in summary mode is shown a content rule only when it says it reads summaries."""
        content, seen = _seen_by(Reads())
        summaries, seen_summaries = _seen_by(Reads())
        summaries.reads_summaries = True
        from trajdebug.core.values import SUMMARY_KEY

        step = Step(step_id="a", name="t", kind="tool", output={SUMMARY_KEY: "list", "len": 3})
        diagnose(_run(step), diagnosers={"content": content, "summaries": summaries})
        assert seen == [] and seen_summaries == ["a"]


class TestExact:
    """Every rule run on every step of recorded runs: none fires where its declaration says it cannot."""

    def test_fault_injection_runs(self, every_rule_everywhere: tuple[collections.Counter[str], list[Any]]) -> None:
        """On the fault-injection suite (each workflow and fault, one seed) no rule fires on an excluded step,
        and the rules that do fire span most declarations."""
        from benchmarks.faults import Case, distractors_for
        from benchmarks.quality import cases
        from benchmarks.workflows import WORKFLOWS

        fired, wrong = every_rule_everywhere
        for c in cases(1):
            res = WORKFLOWS[c.workflow].run(Case(c.workflow, c.fault, c.seed, distractors_for(c.seed)))
            analyze(res.run, previous=list(res.previous), model=None)
        assert wrong == []
        assert len(fired) >= 15

    def test_agent_shaped_runs(self, every_rule_everywhere: tuple[collections.Counter[str], list[Any]]) -> None:
        """On the three agent shapes (state writes, a tool loop, sub-agents; plain and chat-shaped) no rule fires
        on an excluded step."""
        from benchmarks.agentshapes import SHAPES, record_shape

        fired, wrong = every_rule_everywhere
        for shape in SHAPES:
            for chat in (False, True):
                analyze(record_shape(shape, 100, chat=chat), model=None)
        assert wrong == []
        assert {"state-write", "state-values", "tool-arguments", "llm-output"} <= set(fired)

    def test_tau_bench_conversations(
        self, tau_dir: Path, every_rule_everywhere: tuple[collections.Counter[str], list[Any]]
    ) -> None:
        """On real tool-calling conversations (tau-bench) no rule fires on an excluded step, the chat rules
        among those that fire."""
        from trajdebug.sources.formats import import_path

        fired, wrong = every_rule_everywhere
        for run in import_path(tau_dir / "tau_dataset_failed.json", "openai").runs:
            analyze(run, model=None)
        assert wrong == []
        assert any(name in fired for name in ("failed-calls", "unconfirmed-writes", "completion-claims", "stated-counts"))
