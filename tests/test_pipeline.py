"""analyze(): the demo's faults, the JSON document, declared outcomes, inference, the CLI and the report."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.builders import propagated_error_run

import trajdebug
from trajdebug.analysis._detect import detect
from trajdebug.analysis._pipeline import (
    NAMED_KEY,
    Analysis,
    analyses_to_dict,
    analyze,
    named_edges,
    structural_edges,
    thin_inferred,
)
from trajdebug.cli import cli
from trajdebug.core.jsonl import write_jsonl
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step, replace
from trajdebug.demo import FAULTS, run_demo
from trajdebug.report.analysis import CALIBRATED_APART_LINE, ORDER_LINES, analysis_lines, analysis_markdown
from trajdebug.store import Store
from trajdebug.testing import capture_runs, deterministic


QUESTION = "What is the balance of account 88213?"
TOOL_OUT = '{"account": "88213", "balance": 1520.75, "currency": "EUR"}'
ANSWER = "Your balance on account 88213 is 1250.75 EUR."


def imported_run(outcome: str = "incomplete") -> Run:
    """An imported chat trace without edges: the assistant misquotes the balance the tool returned."""
    return Run(
        "imported-1",
        "bank",
        outcome=outcome,  # type: ignore[arg-type]
        steps=(
            Step("u", "user", "input", output=QUESTION, start_ns=1, end_ns=2, source_index=0),
            Step(
                "t",
                "get_balance",
                "tool",
                input={"account": "88213"},
                output=json.loads(TOOL_OUT),
                start_ns=3,
                end_ns=4,
                source_index=1,
            ),
            Step(
                "a",
                "assistant",
                "llm",
                input={"messages": [QUESTION, TOOL_OUT]},
                output=ANSWER,
                start_ns=5,
                end_ns=6,
                source_index=2,
            ),
            Step(
                "o",
                "final",
                "output",
                input={"text": ANSWER},
                output=ANSWER,
                start_ns=7,
                end_ns=8,
                source_index=3,
            ),
        ),
    )


class TestDemoFaults:
    @pytest.mark.parametrize("fault", list(FAULTS))
    def test_top_ranked_cause_is_the_injected_step(self, fault: str, tmp_path: Path) -> None:
        """For every demo fault, the top-ranked root cause is the step where it was injected."""
        run = run_demo(fault, store=Store(tmp_path / "demo.db"), workdir=tmp_path)
        assert run.outcome == "failure"
        analysis = analyze(run, sql_db=run.metadata["sqlite_db"])
        truth = run.metadata["fault"]["step_id"]
        assert truth is not None
        assert analysis.root_causes[0].step_id == truth, [
            (c.step_id, c.reasons) for c in analysis.root_causes
        ]
        assert analysis.root_causes[0].root

    def test_clean_run_has_nothing_to_localize(self, tmp_path: Path) -> None:
        """The demo without a fault succeeds, with no failure and no root cause."""
        run = run_demo(None, store=Store(tmp_path / "demo.db"), workdir=tmp_path)
        analysis = analyze(run)
        assert (run.outcome, analysis.failures, analysis.root_causes) == ("success", (), [])


class TestAnalysis:
    def test_json_document_shape(self) -> None:
        """to_dict gives the documented fields, JSON-serializable, with source indexes from the importer."""
        analysis = analyze(imported_run(), outcome="failure")
        doc = json.loads(json.dumps(analyses_to_dict([analysis])))
        [r] = doc["runs"]
        assert set(r) >= {
            "run_id",
            "outcome",
            "failures",
            "root_causes",
            "ranked",
            "error_chains",
            "references",
            "problems",
            "stats",
        }
        assert set(r["stats"]) == {"steps", "steps_examined", "seconds", "references"}
        top = r["root_causes"][0]
        assert set(top) >= {"step_id", "source_index", "name", "kind", "agent", "score", "reasons", "path", "signals"}
        assert (top["step_id"], top["source_index"], top["kind"]) == ("a", 2, "llm")
        assert top["path"] == ["a", "o"]

    def test_dependencies_are_inferred_for_edgeless_traces(self) -> None:
        """A trace with no data edges gets inferred ones, and the candidate's path says it hangs on one."""
        analysis = analyze(imported_run(), outcome="failure")
        assert analysis.inferred
        top = analysis.root_causes[0]
        assert top.inferred and top.inferred[0][0] == "a" and 0 < top.inferred[0][1] <= 1
        assert any("inferred edge" in r for r in top.reasons)

    def test_outcome_is_declared_only_when_missing(self) -> None:
        """--outcome fills in an incomplete run's outcome and never overrides a recorded one."""
        assert analyze(imported_run(), outcome="failure").outcome == "failure"
        assert analyze(imported_run("success"), outcome="failure").outcome == "success"
        assert analyze(imported_run()).outcome == "incomplete"

    def test_failed_run_with_no_detector_firing_fails_at_the_final_output(self) -> None:
        """When no detector fires in a failed run, the final output step is the failure node."""
        analysis = analyze(imported_run("failure"), detectors=[])
        [f] = analysis.failures
        assert (f.step_id, f.detector, f.where) == ("o", "outcome", "final")
        assert analysis.root_causes[0].step_id == "a"

    def test_successful_run_ignores_intermediate_checkpoints(self) -> None:
        """In a run that succeeded, a recovered-looking tool error is reported but starts no search."""
        run = Run(
            "ok",
            "t",
            outcome="success",
            steps=(
                Step("t", "probe", "tool", output={"status": 404}),
                Step("o", "answer", "output", output="found it elsewhere", deps=(Dependency("t"),)),
            ),
        )
        analysis = analyze(run)
        assert [f.detector for f in analysis.failures] == ["http"]
        assert analysis.root_causes == []


def _turns() -> tuple[Run, Run]:
    """Two conversation turns: the first misremembers the customer's tier, the second answers from it."""
    profile = {"id": "C-4821", "tier": "gold", "region": "EU"}
    facts = '{"customer": "C-4821", "tier": "silver", "region": "EU"}'
    policy = "Shipping: silver members pay 4.99 USD per order; gold members pay 2.99 USD per order."
    answer = "Silver members pay 4.99 USD for shipping."
    first = Run(
        "turn-1",
        "support",
        outcome="success",
        steps=(
            Step("p", "load_profile", "tool", output=profile, start_ns=1, end_ns=2),
            Step(
                "m",
                "remember",
                "llm",
                input={"profile": profile},
                output=facts,
                deps=(Dependency("p"),),
                start_ns=3,
                end_ns=4,
            ),
        ),
    )
    second = Run(
        "turn-2",
        "support",
        outcome="failure",
        continues="turn-1",
        steps=(
            Step(
                "k",
                "retrieve",
                "retrieval",
                input={"query": "shipping"},
                output=policy,
                start_ns=10,
                end_ns=11,
            ),
            Step(
                "q",
                "ask",
                "llm",
                input={"memory": facts, "policy": policy},
                output=answer,
                deps=(Dependency("k"),),
                start_ns=12,
                end_ns=13,
            ),
            Step(
                "c",
                "check",
                "output",
                input={"answer": answer},
                status="error",
                error=ErrorInfo(
                    "CheckFailed", "answer check failed: said '4.99 USD', the policy says '2.99 USD'"
                ),
                deps=(Dependency("q"),),
                start_ns=14,
                end_ns=15,
            ),
        ),
    )
    return first, second


class TestConversationTurns:
    def test_fault_in_an_earlier_turn_is_found_with_its_run(self) -> None:
        """Given the earlier turn, the search follows context edges into it and names that run."""
        first, second = _turns()
        analysis = analyze(second, previous=[first])
        top = analysis.root_causes[0]
        assert (top.step_id, top.run_id) == ("m", "turn-1")
        doc = analysis.to_dict()["root_causes"][0]
        assert (doc["run_id"], doc["name"]) == ("turn-1", "remember")
        assert all(c.run_id is None for c in analyze(second).root_causes)

    def test_cli_passes_earlier_turns_from_the_same_source(self, tmp_path: Path) -> None:
        """trajdebug analyze finds the turn a run continues in the same file."""
        first, second = _turns()
        path = tmp_path / "turns.jsonl"
        write_jsonl([first, second], path)
        out = CliRunner().invoke(cli, ["analyze", str(path), "--run", "turn-2", "--json"])
        assert out.exit_code == 0, out.output
        [r] = json.loads(out.output)["runs"]
        assert r["root_causes"][0]["run_id"] == "turn-1"


class TestSessionTurns:
    def test_analyze_session_searches_the_earlier_runs_of_the_session(self, tmp_path: Path) -> None:
        """Without `continues`, --session joins the earlier runs of the run's session and finds the root there."""
        from dataclasses import replace

        first, second = _turns()
        first = replace(first, metadata={"session": "s-7"}, start_ns=1)
        second = replace(second, continues=None, metadata={"session": "s-7"}, start_ns=10)
        path = tmp_path / "session.jsonl"
        write_jsonl([first, second], path)
        plain = CliRunner().invoke(cli, ["analyze", str(path), "--run", "turn-2", "--json"])
        assert plain.exit_code == 0, plain.output
        causes = json.loads(plain.output)["runs"][0]["root_causes"]
        assert all((c["run_id"], c["earlier_turn"]) == ("turn-2", False) for c in causes)
        out = CliRunner().invoke(cli, ["analyze", str(path), "--run", "turn-2", "--session", "--json"])
        assert out.exit_code == 0, out.output
        top = json.loads(out.output)["runs"][0]["root_causes"][0]
        assert (top["run_id"], top["earlier_turn"]) == ("turn-1", True)


class TestEdges:
    def test_failure_linked_to_the_step_that_produced_a_quoted_value(self) -> None:
        """A failure quoting a short value gets an edge to the latest step whose output is that value."""
        run = Run(
            "r",
            "t",
            outcome="failure",
            steps=(
                Step(
                    "d",
                    "decide",
                    "condition",
                    input={"cause": "deploy"},
                    output="restart",
                    start_ns=1,
                    end_ns=2,
                ),
                Step("v", "verify", "tool", output={"status": "degraded"}, start_ns=3, end_ns=4),
                Step(
                    "c",
                    "close",
                    "output",
                    status="error",
                    error=ErrorInfo("CheckFailed", "still degraded after 'restart'"),
                    deps=(Dependency("v"),),
                    start_ns=5,
                    end_ns=6,
                ),
            ),
        )
        linked = named_edges(run, detect(run))
        assert [d.step_id for d in linked.step("c").deps if d.key == NAMED_KEY] == ["d"]

    def test_structurally_equal_argument_links_its_producer(self) -> None:
        """A dict parsed from a model's JSON reply and passed on links the consumer to that model step."""
        reply = '{"cause": "deploy", "age_min": 39, "evidence": "NullPointerException"}'
        run = Run(
            "r",
            "t",
            steps=(
                Step("m", "diagnose", "llm", output=reply, start_ns=1, end_ns=2),
                Step(
                    "d",
                    "decide",
                    "condition",
                    input={"diagnosis": json.loads(reply)},
                    output="rollback",
                    start_ns=3,
                    end_ns=4,
                ),
            ),
        )
        [edge] = structural_edges(run).step("d").deps
        assert (edge.step_id, edge.origin, edge.key) == ("m", "inferred", "diagnosis")

    def test_a_list_copied_from_inside_an_earlier_output_links_to_it(self) -> None:
        """A compatibility lookup's `row.donor_types` handed on whole as the inventory search's `types` (items
        too short for content inference one by one) links the search to the lookup, more weakly than a whole
        output does."""
        types = ["A+", "A-", "O+", "O-"]
        run = Run(
            "r",
            "t",
            steps=(
                Step("look", "lookup_compatibility", "retrieval", input={"recipient": "A-"},
                     output={"query": "A-", "row": {"recipient": "A+", "donor_types": types}}, start_ns=1, end_ns=2),
                Step("find", "find_units", "tool", input={"request": "R-32", "types": types, "n": 2},
                     output={"units": ["U-3112"]}, start_ns=3, end_ns=4),
            ),
        )
        [edge] = structural_edges(run).step("find").deps
        assert (edge.step_id, edge.key, edge.confidence) == ("look", "types", 0.7)

    def test_inferred_edge_skipping_a_relay_is_dropped(self) -> None:
        """An inferred edge to a step already reachable through another input is redundant and removed."""
        run = Run(
            "r",
            "t",
            steps=(
                Step("a", "plan", "llm", output="x", start_ns=1, end_ns=2),
                Step("b", "parse", "parse", deps=(Dependency("a"),), start_ns=3, end_ns=4),
                Step(
                    "c",
                    "use",
                    "other",
                    deps=(Dependency("b"), Dependency("a", origin="inferred", confidence=0.9)),
                    start_ns=5,
                    end_ns=6,
                ),
                Step(
                    "e",
                    "other",
                    "other",
                    deps=(Dependency("a", origin="inferred", confidence=0.9),),
                    start_ns=7,
                    end_ns=8,
                ),
            ),
        )
        thin = thin_inferred(run)
        assert [d.step_id for d in thin.step("c").deps] == ["b"]
        assert [d.step_id for d in thin.step("e").deps] == ["a"]


def _order_note(lines: list[str]) -> str:
    """The line under the root causes' heading, unwrapped (the text is wrapped to 80 columns)."""
    at = lines.index("Root causes") + 1
    end = next(i for i in range(at, len(lines)) if lines[i].startswith("  1. "))
    return " ".join(" ".join(lines[at:end]).split())


class TestReport:
    def test_one_line_says_how_the_causes_are_ordered_and_no_tag_contradicts_it(self) -> None:
        """Under the causes' heading one line says the hand ranking's order (structural roots first, score within
        each), and a structural root scored below the suspect it precedes is tagged as such, not "root" alone."""
        analysis = analyze(propagated_error_run(), model=None)
        first, second = analysis.root_causes[:2]
        # The confusing case a new user met: a 0.30 structural root above a 0.55 suspect.
        loc = analysis.localization
        loc = replace(loc, candidates=[replace(first, root=True, score=0.3), replace(second, root=False, score=0.55)])
        analysis = replace(analysis, localization=loc)
        lines = analysis_lines(analysis)
        at = lines.index("Root causes")
        assert lines[at + 1].strip() == ORDER_LINES["roots-first"] and analysis.order == "roots-first"
        tags = [line for line in lines if line.startswith(("  1. ", "  2. "))]
        assert tags[0].endswith("score 0.300 [structural root]") and tags[1].endswith("score 0.550 [suspect]")
        assert analysis.to_dict()["order"] == "roots-first"
        assert "order: structural roots first" in analysis_markdown(analysis)
        from trajdebug.analysis import load_model

        learned = analyze(propagated_error_run(), model=load_model())
        lines = analysis_lines(learned)
        assert learned.to_dict()["order"] == "share"
        # Which line is right for this run follows from its confidences: any rising down the list, the ranking's.
        confs = [c.confidence for c in learned.root_causes]
        rises = any(b > a for a, b in pairwise(confs) if a is not None and b is not None)
        want = CALIBRATED_APART_LINE if rises else ORDER_LINES["share"]
        assert _order_note(lines) == want

    def test_an_order_that_puts_a_suspect_before_a_root_is_not_called_roots_first(self) -> None:
        """A list where a suspect stands before a structural root (re-ranked) is never described as roots first."""
        from types import SimpleNamespace

        from trajdebug.report.analysis import _order_line

        def analysis(*roots: bool, order: str = "roots-first") -> SimpleNamespace:
            causes = [SimpleNamespace(root=r, share=0.5) for r in roots]
            return SimpleNamespace(order=order, root_causes=causes, failures=["f"])

        assert _order_line(analysis(True, False, False)) == ORDER_LINES["roots-first"]
        assert "roots first" not in str(_order_line(analysis(False, True, False)))
        assert _order_line(analysis()) is None
        # A learned model's or the answers' order may put a suspect first: the line says which order it is.
        assert _order_line(analysis(False, True, order="share")) == ORDER_LINES["share"]
        assert _order_line(analysis(False, True, order="answers")) == ORDER_LINES["answers"]

    def test_a_learned_order_whose_confidences_rise_down_the_list_is_not_called_ordered_by_confidence(self) -> None:
        """The learned model orders by its probability and calibrates each confidence apart: when a later candidate
        shows a higher confidence (22 % under 21 %), the line says the list is the model's ranking, not ordered by
        confidence; a list whose confidences fall keeps the plain line."""
        from types import SimpleNamespace

        from trajdebug.report.analysis import _order_line

        def analysis(*confidences: float | None) -> SimpleNamespace:
            causes = [SimpleNamespace(root=False, confidence=c, share=0.5) for c in confidences]
            return SimpleNamespace(order="share", root_causes=causes, failures=["f"])

        assert _order_line(analysis(0.21, 0.22, 0.04)) == CALIBRATED_APART_LINE
        assert "calibrated confidence" not in str(_order_line(analysis(0.21, 0.22)))
        assert _order_line(analysis(0.81, 0.05, 0.05)) == ORDER_LINES["share"]
        # Neighbours only: a candidate without a confidence between two says nothing of their order.
        assert _order_line(analysis(0.21, None, 0.22)) == ORDER_LINES["share"]

    def test_the_learned_order_shows_the_number_it_sorts_by(self) -> None:
        """With the learned model, each candidate shows its share of the blame (the number the list is sorted by,
        falling down the list), not the hand-weighted score, which may rise down it (0.489 under 0.353); the line
        under the heading says so plainly, in text, Markdown and JSON."""
        from trajdebug.analysis import load_model

        learned = analyze(propagated_error_run(), model=load_model(), top=10)
        causes = learned.root_causes
        assert len(causes) >= 2 and learned.order == "share"
        # Scores that suggest another order than the list's: rising down it.
        loc = replace(learned.localization, candidates=[replace(c, score=0.3 + 0.05 * i) for i, c in enumerate(causes)])
        learned = replace(learned, localization=loc)
        lines = analysis_lines(learned)
        numbered = [line for line in lines if re.match(r"  \d+\. ", line)]
        shares = [float(line.split(" share ", 1)[1].split()[0]) for line in numbered]
        assert len(shares) == len(causes) and shares == sorted(shares, reverse=True)
        assert not any(" score " in line for line in numbered)
        assert _order_note(lines).startswith("order: by the learned model's share of the blame (the share shown)")
        assert "share" in analysis_markdown(learned) and "score 0." not in analysis_markdown(learned)
        assert [c["share"] for c in learned.to_dict()["root_causes"]] == [c.share for c in causes]
        # The shares of every ranked step sum to 1 (those shown, the top ones, to at most 1).
        ranked = analyze(propagated_error_run(), model=load_model(), top=learned.to_dict()["ranked"])
        assert abs(sum(c.share or 0.0 for c in ranked.root_causes) - 1.0) < 1e-6
        assert 0.0 < sum(c["share"] for c in learned.to_dict()["root_causes"]) <= 1.0 + 1e-9
        hand = analyze(propagated_error_run(), model=None)
        assert all(c.share is None for c in hand.root_causes) and "share" not in " ".join(analysis_lines(hand))

    def test_a_list_the_judge_reordered_says_score_orders_it(self) -> None:
        """A model on top (--judge) re-ranks by the combined score: the line says so and the score is shown.  The
        JSON's ``order`` keeps the value it had before (``share`` under the learned model, ``roots-first``
        under the hand ranking: existing readers); the added key ``judged`` says the model re-ranked it."""
        from trajdebug.analysis import load_model

        for model, order in ((load_model(), "share"), (None, "roots-first")):
            plain = analyze(propagated_error_run(), model=model)
            method = plain.localization.method + "+judge"
            judged = replace(plain, localization=replace(plain.localization, method=method))
            lines = analysis_lines(judged)
            assert judged.order == order == plain.order and judged.judged and not plain.judged
            assert judged.to_dict()["order"] == order and judged.to_dict()["judged"] is True
            assert "judged" not in plain.to_dict()
            assert _order_note(lines) == ORDER_LINES["judge"]
            assert any(" score " in line for line in lines if line.startswith("  1. "))

    def test_a_step_is_never_shown_inside_itself(self) -> None:
        """An agent's own step (an Agents SDK agent span: name ``counter``, agent ``counter``) is labelled by its
        kind alone, never ``(agent, agent counter)``; a tool inside it keeps ``agent counter``; the question's
        place (``--ask``) leaves it out too."""
        from trajdebug.report.analysis import agent_of
        from trajdebug.report.question import question_for, where

        run = Run(
            "r1",
            "drycleaner-counter",
            outcome="failure",
            failure_reason="quoted 42.00 EUR, the till rings up 51.00 EUR",
            steps=(
                Step("t", "drycleaner-counter", "agent", output="42.00 EUR", start_ns=1, end_ns=20),
                Step("c", "counter", "agent", parent_id="t", agent="counter", output="42.00 EUR", start_ns=2, end_ns=19),
                Step("g", "get_surcharge", "tool", parent_id="c", agent="counter", input={"stain": "wine"},
                     output={"surcharge": 0.0}, start_ns=3, end_ns=4),
                Step("x", "compute_total", "tool", parent_id="c", agent="counter", input={"base": 42.0, "surcharge": 0.0},
                     output={"total": "42.00 EUR"}, start_ns=5, end_ns=6),
            ),
        )
        a = analyze(run, model=None, top=10)
        text = " ".join(" ".join(analysis_lines(a)).split())
        assert "counter#c (agent)" in text and "(agent, agent counter)" not in text
        assert "compute_total#x (tool, agent counter)" in text
        assert agent_of(run.step("c"), run.step("t")) is None and agent_of(run.step("x"), run.step("c")) == "counter"
        assert "agent 'counter'" not in where(question_for(run, "c"))
        assert "agent 'counter'" in where(question_for(run, "x"))

    def test_a_tool_named_like_its_agent_keeps_its_agent_label(self) -> None:
        """The agent's own step is told by identity, never by name: agent ``weather`` calling a tool also named
        ``weather`` labels the tool ``(tool, agent weather)`` and the agent's step ``(agent)``, in the text and
        in the question's place (``--ask``)."""
        from trajdebug.report.question import question_for, where

        run = Run(
            "r2",
            "forecaster",
            outcome="failure",
            failure_reason="implausible temperature: Oslo: -999 C",
            steps=(
                Step("a", "weather", "agent", agent="weather", output="Oslo: -999 C", start_ns=1, end_ns=20),
                Step("w", "weather", "tool", parent_id="a", agent="weather", input={"city": "Oslo"},
                     output={"city": "Oslo", "temp_c": -999}, start_ns=2, end_ns=3),
                Step("s", "summarize", "llm", parent_id="a", agent="weather", input={"w": {"temp_c": -999}},
                     output="Oslo: -999 C", start_ns=4, end_ns=5, deps=(Dependency("w"),)),
            ),
        )
        text = " ".join(" ".join(analysis_lines(analyze(run, model=None, top=10))).split())
        assert "weather#w (tool, agent weather)" in text and "weather#a (agent)" in text
        assert "agent 'weather'" in where(question_for(run, "w"))
        assert "agent 'weather'" not in where(question_for(run, "a"))

    def test_one_exception_propagated_through_four_steps_is_one_failure_with_its_path(self) -> None:
        """A tool's exception re-reported by its sub-agent, the tool that ran it and the caller is listed once,
        where it occurred, with the path it propagated along (text, Markdown, JSON); ``failures`` keeps all four."""
        for ids in (True, False):
            analysis = analyze(propagated_error_run(ids=ids))
            text = "\n".join(analysis_lines(analysis))
            assert "Failures (1)" in text and "✗ look#look" in text
            assert "propagated through specialist#sub → specialist#s_tool → triage#caller" in " ".join(text.split())
            assert "propagated through" in analysis_markdown(analysis)
            doc = analysis.to_dict()
            [group] = doc["failure_groups"]
            assert group["step_id"] == "look" and [p["step_id"] for p in group["propagated"]] == ["sub", "as_tool", "caller"]
            assert len(doc["failures"]) == 4

    def test_distinct_errors_stay_distinct_failures(self) -> None:
        """Two errors with different ids (or, without ids, a wrapper whose message does not repeat the inner one)
        are two failures."""
        run = propagated_error_run()
        steps = tuple(
            replace(s, error=ErrorInfo("KeyError", "other", "e2")) if s.step_id == "caller" else s for s in run.steps
        )
        doc = analyze(replace(run, steps=steps)).to_dict()
        assert [len(g["propagated"]) for g in doc["failure_groups"]] == [0, 2]
        loose = propagated_error_run(ids=False)
        steps = tuple(replace(s, error=ErrorInfo("KeyError", "other")) if s.step_id == "caller" else s for s in loose.steps)
        assert len(analyze(replace(loose, steps=steps)).to_dict()["failure_groups"]) == 2

    def test_text_fits_eighty_columns_and_names_the_cause(self) -> None:
        """The plain-text report wraps at 80 columns and shows failures, causes with reasons, and stats."""
        analysis = analyze(imported_run(), outcome="failure")
        lines = analysis_lines(analysis)
        assert all(len(line) <= 80 for line in lines)
        text = "\n".join(lines)
        assert (
            "Root causes" in text
            and "assistant#" in text
            and "1250.75" in text
            and "examined 4 of 4 steps" in text
        )

    def test_markdown_escapes_untrusted_text(self) -> None:
        """Markdown output escapes markup characters from step names and reasons."""
        run = imported_run()
        steps = list(run.steps)
        steps[2] = Step(
            "a", "assistant_*bold*", "llm", input=steps[2].input, output=ANSWER, start_ns=5, end_ns=6
        )
        md = analysis_markdown(analyze(Run(run.run_id, run.name, steps=tuple(steps)), outcome="failure"))
        assert "assistant\\_\\*bold\\*" in md and md.startswith("## Analysis")


class TestCommand:
    def _file(self, tmp_path: Path, *runs: Run) -> Path:
        path = tmp_path / "runs.jsonl"
        write_jsonl(list(runs), path)
        return path

    def test_json_output(self, tmp_path: Path) -> None:
        """``analyze --json --outcome failure --top 1`` prints one run with one ranked cause."""
        path = self._file(tmp_path, imported_run())
        res = CliRunner().invoke(cli, ["analyze", str(path), "--json", "--outcome", "failure", "--top", "1"])
        assert res.exit_code == 0, res.output
        doc = json.loads(res.output)
        [r] = doc["runs"]
        assert r["outcome"] == "failure"
        assert [c["step_id"] for c in r["root_causes"]] == ["a"]

    def test_text_and_markdown_output(self, tmp_path: Path) -> None:
        """The text and Markdown forms both show the ranked cause."""
        path = self._file(tmp_path, imported_run("failure"))
        text = CliRunner().invoke(cli, ["analyze", str(path)])
        md = CliRunner().invoke(cli, ["analyze", str(path), "--markdown"])
        assert text.exit_code == 0 and "Root causes" in text.output and "assistant" in text.output
        assert md.exit_code == 0 and md.output.startswith("## Analysis")

    def test_cycle_is_cut_and_named(self, tmp_path: Path) -> None:
        """A run whose dependencies form a cycle is analyzed with the cycle cut, and a warning names its steps."""
        run = Run(
            "cyc",
            "t",
            outcome="failure",
            steps=(
                Step("a", "alpha", deps=(Dependency("b"),)),
                Step("b", "beta", deps=(Dependency("a"),)),
            ),
        )
        res = CliRunner().invoke(cli, ["analyze", str(self._file(tmp_path, run)), "--json"])
        assert res.exit_code == 0, res.output
        assert "cycle" in res.stderr and "alpha" in res.stderr and "beta" in res.stderr
        [r] = json.loads(res.stdout)["runs"]
        assert any("cycle" in p for p in r["problems"])

    def test_missing_source_is_a_clear_error(self, tmp_path: Path) -> None:
        """A source that does not exist is reported by name."""
        res = CliRunner().invoke(cli, ["analyze", str(tmp_path / "nope.jsonl")])
        assert res.exit_code != 0 and "nope.jsonl" in res.output


def test_analysis_is_exported() -> None:
    """The pipeline's entry point and result type are importable from the package."""
    assert callable(analyze) and Analysis.__name__ == "Analysis"


def _trip_run(*, cache_by_date_only: bool, discount_bug: bool = False) -> Run:
    """A trip quoter (nu27's a3): each leg's nightly rate comes from a rate gateway through a retrying step
    that, when the gateway times out, answers with a cached rate through ``s.fallback``; each leg is priced,
    then booked, and the hotel refuses a quote off its current rate.

    ``cache_by_date_only``: the cache is keyed by the check-in date alone, so the Porto leg is served
    Lisbon's rate (the fallback's degraded value is what the failure rejects).  ``discount_bug``: pricing
    takes 10% off the Porto rate (the failure's cause is elsewhere; the Madrid leg's fallback, keyed right,
    serves a correct cached rate that feeds only Madrid's booking)."""

    live = {"Lisbon": 95.0, "Porto": 140.0, "Madrid": 120.0}
    legs = [("Lisbon", "2027-05-02", 3), ("Porto", "2027-05-02", 2), ("Madrid", "2027-05-05", 2), ("Madrid", "2027-05-05", 1)]
    # Which call of the gateway times out, per city and date: Porto's first, or Madrid's second.
    flaky = {("Porto", "2027-05-02"): 1} if cache_by_date_only else {("Madrid", "2027-05-05"): 2}
    calls: dict[tuple[str, str], int] = {}
    cache: dict[Any, dict[str, Any]] = {}

    @trajdebug.step(kind="input")
    def read_request() -> list[dict[str, Any]]:
        return [{"city": c, "checkin": d, "nights": n} for c, d, n in legs]

    @trajdebug.step(kind="tool")
    def rate_gateway(city: str, checkin: str) -> dict[str, Any]:
        n = calls[(city, checkin)] = calls.get((city, checkin), 0) + 1
        if flaky.get((city, checkin)) == n:
            raise TimeoutError(f"rate gateway timed out for {city}")
        return {"checkin": checkin, "eur_per_night": live[city]}

    @trajdebug.step(kind="other")
    def fetch_rate_with_retry(city: str, checkin: str) -> dict[str, Any]:
        key: Any = checkin if cache_by_date_only else (city, checkin)
        try:
            rate = rate_gateway(city, checkin)
        except TimeoutError:
            if key in cache:
                s = trajdebug.current_step()
                assert s is not None
                return s.fallback(dict(cache[key], source="cache"), "served the cached rate")
            rate = rate_gateway(city, checkin)
        cache[key] = rate
        return dict(rate, source="live")

    @trajdebug.step(kind="other")
    def price_leg(leg: dict[str, Any], rate: dict[str, Any]) -> dict[str, Any]:
        per_night = rate["eur_per_night"] * (0.9 if discount_bug and leg["city"] == "Porto" else 1.0)
        return {"city": leg["city"], "nights": leg["nights"], "eur_per_night": per_night, "eur": per_night * leg["nights"]}

    @trajdebug.step(kind="tool")
    def book(leg: dict[str, Any]) -> dict[str, Any]:
        current = live[leg["city"]]
        if abs(current - leg["eur_per_night"]) > 0.01:
            raise RuntimeError(
                f"hotel in {leg['city']} refused booking: quoted {leg['eur_per_night']:.2f} EUR/night, "
                f"current rate {current:.2f} EUR/night"
            )
        return {"city": leg["city"], "confirmation": f"CNF-{leg['city'][:3].upper()}-{leg['nights']}"}

    with deterministic(), capture_runs() as runs:
        try:
            with trajdebug.run("trip-quoter", task="quote and book the trip"):
                priced = [price_leg(leg, fetch_rate_with_retry(leg["city"], leg["checkin"])) for leg in read_request()]
                for leg in priced:
                    book(leg)
        except RuntimeError:
            pass
    (run,) = runs
    assert run.outcome == "failure"
    return run


_LIVE = {"Porto": 140.0, "Lisbon": 95.0}
"""The hotel's live rates (`TestDeclaredFallback`)."""


class TestDeclaredFallback:
    """A step that declared a fallback (``s.fallback``: a degraded value in place of the one an error cost it)
    is blamed when that value feeds the failure, never when it feeds none (nu27 finding 1)."""

    def test_a_fallback_whose_cached_value_fails_a_later_step_is_the_first_cause(self) -> None:
        """A retrying step that served a cached rate for another city, the booking refused on it: the step that
        declared the fallback ranks first, alone (no passing run), on that evidence."""
        run = _trip_run(cache_by_date_only=True)
        [ignored] = [e for e in run.errors if e.stage == "ignored"]
        fell_back = ignored.stages[-1].step_id
        analysis = analyze(run)
        top = analysis.root_causes[0]
        assert top.step_id == fell_back, [(c.name, c.step_id, c.reasons) for c in analysis.root_causes]
        assert any("declared a fallback after the TimeoutError" in r for r in top.reasons), top.reasons
        assert "swallowed-error" in top.signals

    def test_a_fallback_whose_value_feeds_no_failure_is_not_blamed(self) -> None:
        """The Madrid leg's fallback served Madrid's own cached rate, which only Madrid's booking read; the Porto
        booking failed on a price the pricing step discounted: the fallback carries no evidence and is not
        first."""
        run = _trip_run(cache_by_date_only=False, discount_bug=True)
        [ignored] = [e for e in run.errors if e.stage == "ignored"]
        fell_back = ignored.stages[-1].step_id
        analysis = analyze(run, top=60)
        ranked = {c.step_id: c for c in analysis.root_causes}
        assert analysis.root_causes[0].step_id != fell_back
        assert fell_back not in ranked or not any("declared a fallback" in r for r in ranked[fell_back].reasons)

    def test_a_warning_a_step_reported_on_itself_and_ignored_is_no_fallback(self) -> None:
        """``s.error(...)`` then ``s.fallback(s.output, ...)``: a harmless warning the step went on from with its
        own answer (the benchmarks' warning distractor), though its answer fed the failure: no fallback is
        declared against it (the failure's cause is the pricing step's discount)."""

        def body() -> None:
            with trajdebug.step("fetch_rate", kind="tool") as fetch:
                fetch.output = {"eur_per_night": 140.0}
                fetch.error("rate table is a day old", type="Warning")
                fetch.fallback(fetch.output, "harmless warning, ignored")
            with trajdebug.step("price", kind="other", deps=[fetch]) as price:
                price.output = {"eur_per_night": fetch.output["eur_per_night"] * 0.9}
            with trajdebug.step("book", kind="tool", deps=[price]):
                raise RuntimeError("hotel refused booking: quoted 126.00 EUR/night, current rate 140.00 EUR/night")

        with deterministic(), capture_runs() as runs:
            try:
                with trajdebug.run("warned-quoter"):
                    body()
            except RuntimeError:
                pass
        (run,) = runs
        [warned] = [e for e in run.errors if e.stage == "ignored"]
        analysis = analyze(run, top=60)
        ranked = {c.step_id: c for c in analysis.root_causes}
        assert warned.step_id in ranked
        assert not any("declared a fallback" in r for r in ranked[warned.step_id].reasons)

    @staticmethod
    def _hotel(fetch_rate: Any, price: Any) -> Run:
        """A run that prices the rate ``fetch_rate`` answers for Porto and books it: the hotel refuses a
        quote other than the live rate (140.00)."""

        @trajdebug.step(kind="tool")
        def book(q: dict[str, Any]) -> dict[str, bool]:
            if abs(q["eur_per_night"] - _LIVE[q["city"]]) > 0.01:
                live = _LIVE[q["city"]]
                raise RuntimeError(f"hotel refused booking: quoted {q['eur_per_night']:.2f}, current {live:.2f}")
            return {"ok": True}

        with deterministic(), capture_runs() as runs:
            try:
                with trajdebug.run("hotel", task="quote and book"):
                    book(price(fetch_rate("Porto")))
            except RuntimeError:
                pass
        (run,) = runs
        return run

    @staticmethod
    def _price_as_given() -> Any:
        @trajdebug.step(kind="other")
        def price(rate: dict[str, Any]) -> dict[str, Any]:
            return {"city": rate["city"], "eur_per_night": rate["eur_per_night"]}

        return price

    @staticmethod
    def _ranked(run: Run, analysis: Any) -> list[tuple[str, tuple[str, ...]]]:
        """The ranked steps' names and reasons, best first."""
        names = {s.step_id: s.name for s in run.steps}
        return [(names[c.step_id], tuple(c.reasons)) for c in analysis.root_causes]

    def _declared(self, run: Run, analysis: Any, name: str) -> list[str]:
        """The reasons that say the step named ``name`` declared a fallback that fed the failure."""
        return [r for n, rs in self._ranked(run, analysis) if n == name for r in rs if "declared a fallback" in r]

    def test_an_innocent_fallback_beside_the_step_that_changed_its_value_is_not_blamed(self) -> None:
        """The fallback served the right cached rate; the pricing step discounted it (its own bug, with its own
        lineage evidence: given 140.00, which the failure names, not passed on): the fallback's value never
        reached the booking, so it gets no evidence and the pricing step ranks first (rev54a finding 1)."""

        @trajdebug.step(kind="tool")
        def rate_gateway(city: str) -> dict[str, Any]:
            raise TimeoutError(f"rate gateway timed out for {city}")

        @trajdebug.step(kind="other")
        def fetch_rate(city: str) -> dict[str, Any]:
            try:
                return rate_gateway(city)
            except TimeoutError:
                s = trajdebug.current_step()
                assert s is not None
                return s.fallback({"city": city, "eur_per_night": _LIVE[city]}, "served cached rate")

        @trajdebug.step(kind="other")
        def price(rate: dict[str, Any]) -> dict[str, Any]:
            return {"city": rate["city"], "eur_per_night": round(rate["eur_per_night"] * 0.9, 2)}

        run = self._hotel(fetch_rate, price)
        analysis = analyze(run, top=60)
        ranked = self._ranked(run, analysis)
        assert ranked[0][0] == "price", ranked
        assert not self._declared(run, analysis, "fetch_rate")

    def test_an_error_payload_reported_then_a_stand_in_declared_is_a_fallback(self) -> None:
        """The documented pattern: ``s.error("the API returned an error payload")`` then ``s.fallback(cached,
        ...)`` with a stale rate that the booking refuses: the stand-in is a declared fallback (it replaced the
        step's output), first though an innocent step beside it swallowed a harmless payload (rev54a finding 2);
        the evidence names the run's failure, not the intermediate error."""

        @trajdebug.step(kind="tool")
        def rate_api(city: str) -> dict[str, Any]:
            return {"ok": False, "error": "rate API returned an error payload"}

        @trajdebug.step(kind="other")
        def fetch_rate(city: str) -> dict[str, Any]:
            s = trajdebug.current_step()
            assert s is not None
            r = rate_api(city)
            s.error(r["error"])
            return s.fallback({"city": city, "eur_per_night": _LIVE["Lisbon"]}, "used the cached price")

        @trajdebug.step(kind="tool")
        def tax_service(city: str) -> dict[str, Any]:
            return {"ok": False, "error": "tax table missing"}

        @trajdebug.step(kind="other")
        def price(rate: dict[str, Any]) -> dict[str, Any]:
            tax_service(rate["city"])
            return {"city": rate["city"], "eur_per_night": rate["eur_per_night"]}

        run = self._hotel(fetch_rate, price)
        analysis = analyze(run, top=60)
        ranked = self._ranked(run, analysis)
        assert ranked[0][0] == "fetch_rate", ranked
        said = self._declared(run, analysis, "fetch_rate")
        assert said and all(r.endswith("fed the failure at book") for r in said), said

    def test_a_fallback_in_an_attempt_a_later_attempt_answered_is_not_blamed(self) -> None:
        """A retry loop's first attempt fell back to None, the second got the live rate: the degraded value was
        thrown away, so the first attempt carries no evidence of a fallback that fed the failure (rev54a
        finding 3)."""
        calls = {"n": 0}

        @trajdebug.step(kind="tool")
        def rate_gateway(city: str) -> dict[str, Any]:
            calls["n"] += 1
            if calls["n"] == 1:
                raise TimeoutError("rate gateway timed out")
            return {"city": city, "eur_per_night": _LIVE[city]}

        @trajdebug.step(kind="other")
        def attempt(city: str) -> dict[str, Any] | None:
            try:
                return rate_gateway(city)
            except TimeoutError:
                s = trajdebug.current_step()
                assert s is not None
                return s.fallback(None, "no rate yet, will retry")

        @trajdebug.step(kind="other")
        def fetch_rate(city: str) -> dict[str, Any] | None:
            for _ in range(3):
                r = attempt(city)
                if r is not None:
                    return r
            return None

        @trajdebug.step(kind="other")
        def price(rate: dict[str, Any]) -> dict[str, Any]:
            return {"city": rate["city"], "eur_per_night": rate["eur_per_night"] * 0.9}

        run = self._hotel(fetch_rate, price)
        analysis = analyze(run, top=60)
        ranked = self._ranked(run, analysis)
        assert ranked[0][0] == "price", ranked
        assert not self._declared(run, analysis, "attempt")

    def test_a_wrong_stand_in_relayed_by_a_sub_agent_is_the_first_cause(self) -> None:
        """The fallback's stale rate (Lisbon's) passes unchanged through a sub-agent and the pricing step to the
        booking that refuses it: the step that declared the fallback ranks first."""

        @trajdebug.step(kind="tool")
        def rate_gateway(city: str) -> dict[str, Any]:
            raise TimeoutError(f"rate gateway timed out for {city}")

        @trajdebug.step(kind="other")
        def lookup(city: str) -> dict[str, Any]:
            try:
                return rate_gateway(city)
            except TimeoutError:
                s = trajdebug.current_step()
                assert s is not None
                return s.fallback({"city": city, "eur_per_night": _LIVE["Lisbon"]}, "served cached rate")

        @trajdebug.step(kind="agent")
        def rate_agent(city: str) -> dict[str, Any]:
            r = lookup(city)
            return {"city": r["city"], "eur_per_night": r["eur_per_night"]}

        run = self._hotel(rate_agent, self._price_as_given())
        analysis = analyze(run, top=60)
        ranked = self._ranked(run, analysis)
        assert ranked[0][0] == "lookup", ranked
        assert self._declared(run, analysis, "lookup")


def test_json_labels_match_the_printed_form() -> None:
    """Each root cause and step failure in --json carries the label the terminal prints (name#last six of the id)."""
    run = Run(
        "r-label",
        "labels",
        outcome="failure",
        steps=(
            Step("step-000001", "fetch", "tool", output={"n": 3}, start_ns=1, end_ns=2),
            Step("step-000002", "check", "tool", input={"n": 3}, status="error",
                 error=ErrorInfo("ValueError", "n is 3"), start_ns=3, end_ns=4, deps=(Dependency("step-000001"),)),
        ),
    )
    doc = trajdebug.analyze(run).to_dict()
    assert doc["failures"][0]["label"] == "check#000002"
    assert doc["root_causes"]
    assert {c["label"] for c in doc["root_causes"]} <= {"fetch#000001", "check#000002"}
    assert all(c["label"] == f"{c['name']}#{c['step_id'][-6:]}" for c in doc["root_causes"])


def test_the_json_order_names_the_number_the_learned_list_is_sorted_by() -> None:
    """Under the learned model `analyze --json` says ``"order": "share"``, and the root causes are sorted by their
    share, highest first, whatever their confidences (nu32 finding 9: it said ``confidence`` over a list that was
    not sorted by confidence)."""
    from trajdebug.analysis import load_model

    data = analyze(propagated_error_run(), model=load_model(), top=10).to_dict()
    shares = [c["share"] for c in data["root_causes"]]
    assert data["order"] == "share" and len(shares) >= 2 and shares == sorted(shares, reverse=True)


def test_analyzed_run_is_the_run_analyze_reads_without_its_search(tmp_path: Path) -> None:
    """`analyzed_run` (what `show --step` lists) gives exactly ``analyze(...).run``: the inferred, thinned and
    named edges, with earlier runs as references and an empty result among the failures, for every demo fault."""
    from tests.builders import quote_runs, step

    from trajdebug.analysis import analyzed_run

    def kb(rid: str, outcome: str) -> Run:
        steps = (step("1", "search", "tool", 1, {"q": "x"}, []), step("2", "answer", "llm", 2, {"hits": []}, "ok", "1"))
        return Run(rid, "kb", outcome=outcome, failure_reason="no answer", steps=steps)  # type: ignore[arg-type]

    store = Store(tmp_path / "demo.db")
    clean = run_demo(None, store=store, workdir=tmp_path)
    good, bad = quote_runs()
    cases = [(bad, [good]), (clean, []), (kb("empty", "failure"), [kb("ok", "success")])]
    cases += [(run_demo(f, store=store, workdir=tmp_path), [clean]) for f in FAULTS]
    assert any(f.detector == "empty" for r, _ in cases for f in detect(r))
    for run, refs in cases:
        assert analyzed_run(run, references=refs) == analyze(run, references=refs, model=None).run, run.run_id
