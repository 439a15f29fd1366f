"""Oracles of the guided search: a passing run, expectations in the agent, a function, the model; CLI and API."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import trajdebug
from trajdebug.analysis import ExpectationOracle, ReferenceOracle
from trajdebug.api import analyze_source
from trajdebug.core.model import Run, Step
from trajdebug.demo import run_demo
from trajdebug.judge import JudgeConfig, JudgeOracle
from trajdebug.record.expectations import forget
from trajdebug.testing import FakeModelServer, Reply


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean demo run and one whose parse step silently drops rows, same task, one file."""
    wd = tmp_path_factory.mktemp("demo")
    path = wd / "runs.jsonl"
    run_demo(None, path=path, workdir=wd)
    run_demo("parse-drops-items", path=path, workdir=wd)
    return path


@pytest.fixture
def no_checks() -> Iterator[None]:
    forget()
    yield
    forget()


def _name(result: Any, sid: str | None) -> str | None:
    a = result.analyses[0]
    return None if sid is None else a.run.step(sid).name


def test_a_passing_run_of_the_same_input_finds_the_silent_bug_with_certainty(demo: Path) -> None:
    result = analyze_source(demo, guided=True)
    g = result.analyses[0].guided
    assert g is not None and g.certain
    assert _name(result, g.root) == "parse_rows"
    assert g.asked <= 3
    assert all(a.by.startswith("reference:") for a in g.questions)


def test_without_an_oracle_or_a_request_no_guided_search_runs(demo: Path, no_checks: None) -> None:
    result = analyze_source(demo)
    assert result.analyses[0].guided is None
    assert result.analyses[0].to_dict()["guided"] is None


def test_the_reference_oracle_aligns_steps_by_name_and_occurrence() -> None:
    good = Run("g", "a", steps=(Step("1", "x", output=1), Step("2", "x", output=2), Step("3", "y", output={"a": 1})))
    bad = Run("b", "a", steps=(Step("4", "x", output=1), Step("5", "x", output=3), Step("6", "z", output=0)))
    oracle = ReferenceOracle(good)
    assert [oracle(s, bad) for s in bad.steps] == [True, False, None]


def test_the_reference_oracle_reads_a_model_answer_without_the_ids_minted_for_it() -> None:
    """A model call that asked for the same tool with the same arguments as in the passing run answered alike,
    though the provider minted another tool-call id and response id; other arguments are a different answer."""

    def answer(call_id: str, response_id: str, port: str) -> dict:
        call = {"id": call_id, "type": "function", "function": {"name": "moor_boat", "arguments": json.dumps({"berth": port})}}
        return {"id": response_id, "role": "assistant", "content": None, "tool_calls": [call]}

    good = Run("g", "harbour", steps=(Step("1", "pick_berth", kind="llm", output=answer("call_8_0", "resp-a1", "B7")),))
    alike = Run("b", "harbour", steps=(Step("2", "pick_berth", kind="llm", output=answer("call_31_0", "resp-z9", "B7")),))
    other = Run("c", "harbour", steps=(Step("3", "pick_berth", kind="llm", output=answer("call_31_0", "resp-z9", "C2")),))
    oracle = ReferenceOracle(good)
    assert (oracle(alike.steps[0], alike), oracle(other.steps[0], other)) == (True, False)


def test_the_reference_oracle_judges_a_model_record_whose_type_or_id_differs_wrong() -> None:
    """A model that answered with a record is judged on every field of it: a ``type`` or ``id`` other than the
    passing run's (the kind of case it picked, the item it named) is a wrong answer, not an envelope."""

    def run(rid: str, kind: str, item: str) -> Run:
        asked = {"messages": [{"role": "user", "content": "the lamp flickers, send a new one"}]}
        out = {"type": kind, "id": item, "priority": "low"}
        return Run(rid, "lamp-desk", steps=(Step(rid + "1", "sort_ticket", kind="llm", input=asked, output=out),))

    oracle = ReferenceOracle(run("g", "replace", "LM-12"))
    assert [oracle(r.steps[0], r) for r in (run("a", "replace", "LM-12"), run("b", "repair", "LM-12"), run("c", "replace", "LM-99"))] == [
        True,
        False,
        False,
    ]


def test_a_person_is_not_asked_about_an_output_the_passing_run_of_the_same_input_also_produced() -> None:
    """With a person among the oracles, a step whose output equals the passing run's is answered by that
    run; a step whose output differs still goes to the person first."""
    from trajdebug.analysis._oracles import Caller, ask

    class Person:
        by = "person"
        interactive = True

        def __init__(self) -> None:
            self.asked: list[str] = []

        def __call__(self, step: Step, run: Run) -> bool:
            self.asked.append(step.step_id)
            return True

    good = Run("g", "a", steps=(Step("1", "x", output=1), Step("2", "y", output=2)))
    bad = Run("b", "a", steps=(Step("3", "x", output=1), Step("4", "y", output=5)))
    person = Person()
    callers = [Caller(person, None), Caller(ReferenceOracle(good), 5.0)]
    answers = [ask(callers, s, bad, []) for s in bad.steps]
    assert [(a.correct, a.by.split(":")[0]) for a in answers] == [(True, "reference"), (True, "person")]
    assert person.asked == ["4"]


def test_the_reference_oracle_counts_a_state_write_as_part_of_the_output() -> None:
    good = Run("g", "a", steps=(Step("1", "save", output="ok", attributes={"state_values": {"k": 1}}),))
    bad = Run("b", "a", steps=(Step("2", "save", output="ok", attributes={"state_values": {"k": 100}}),))
    assert ReferenceOracle(good)(bad.steps[0], bad) is False
    assert ReferenceOracle(good)(good.steps[0], good) is True


def test_expectations_registered_in_the_agent_answer_with_their_message(no_checks: None) -> None:
    trajdebug.expect("extract", lambda out: out["currency"] == "EUR")

    def positive(out: Any) -> bool:
        assert out > 0, "the total must be positive"
        return True

    trajdebug.expect("total", positive)
    run = Run("r", "a", steps=(Step("1", "extract", output={"currency": "USD"}), Step("2", "total", output=-1)))
    oracle = ExpectationOracle(trajdebug.record.expectations.expectations())
    first, second = (oracle(s, run) for s in run.steps)
    assert first is not None and first.correct is False and first.by == "check:extract"
    assert second is not None and second.correct is False and (second.reason or "").startswith("the total must be positive")


def _agent(path: Path) -> None:
    """A small agent with a silent bug: the extraction reads the wrong currency."""

    @trajdebug.step(kind="tool", expect=lambda out: "price" in out)
    def fetch(query: str) -> dict[str, Any]:
        return {"price": "12.50", "currency": "EUR", "query": query}

    @trajdebug.step(kind="parse", expect=lambda out: out["currency"] == "EUR")
    def extract(doc: dict[str, Any]) -> dict[str, Any]:
        return {"amount": float(doc["price"]), "currency": "USD"}

    @trajdebug.step(expect=lambda out: out["eur"] >= 12.5)
    def convert(price: dict[str, Any]) -> dict[str, Any]:
        rate = 1.0 if price["currency"] == "EUR" else 0.9
        return {"eur": price["amount"] * rate}

    @trajdebug.step(kind="output")
    def answer(total: dict[str, Any]) -> str:
        if total["eur"] < 12.5:
            raise ValueError("the quoted price is below the listed price")
        return f"{total['eur']:.2f} EUR"

    with pytest.raises(ValueError), trajdebug.run("shop", path=path, task="price of item 7"):
        answer(convert(extract(fetch("item 7"))))


def test_expectations_find_the_root_with_no_person_present(tmp_path: Path, no_checks: None) -> None:
    path = tmp_path / "shop.jsonl"
    _agent(path)
    result = analyze_source(path)
    g = result.analyses[0].guided
    assert g is not None, "registered expectations turn the guided search on"
    assert g.certain and _name(result, g.root) == "extract"
    assert any(a.by == "check:extract" and a.correct is False for a in g.questions)


def test_the_model_answers_with_its_reason_through_the_fake_server(tmp_path: Path, no_checks: None) -> None:
    path = tmp_path / "shop.jsonl"
    _agent(path)
    forget()  # the model alone

    def script(req: Any) -> Reply | str:
        text = json.dumps(req.body)
        wrong = "named <data>extract" in text or "named <data>convert" in text or "named <data>answer" in text
        return json.dumps({"correct": not wrong, "reason": "the currency is USD, the page says EUR" if wrong else "ok"})

    with FakeModelServer(script) as server:
        cfg = JudgeConfig(base_url=server.base_url, model="judge-m", cache=None, backoff=0.001)
        oracle = JudgeOracle.of(cfg)
        result = analyze_source(path, oracle=oracle)
        sent = [json.dumps(r.body) for r in server.requests]
    g = result.analyses[0].guided
    assert g is not None and g.certain and _name(result, g.root) == "extract"
    assert all(a.by == "model:judge-m" for a in g.questions)
    assert any(a.reason and "USD" in a.reason for a in g.questions)
    assert len(sent) == g.asked
    assert oracle.tokens > 0


def test_cli_oracle_and_max_questions_give_guided_json(demo: Path, tmp_path: Path) -> None:
    (tmp_path / "myoracle.py").write_text(
        "def never_sure(step, run):\n    return None\n"
        "def boom(step, run):\n    raise RuntimeError('broken oracle')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}

    def cli(*args: str) -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, "-m", "trajdebug", "analyze", str(demo), *args, "--json"],
            capture_output=True, text=True, env=env, timeout=120, check=True,
        )
        return json.loads(out.stdout)

    capped = cli("--oracle", "myoracle:never_sure", "--max-questions", "0", "--no-references")
    g = capped["runs"][0]["guided"]
    assert g["asked"] == 0 and g["certain"] is False and g["candidates"]
    broken = cli("--oracle", "myoracle:boom", "--no-references")
    g = broken["runs"][0]["guided"]
    assert any("broken oracle" in p for p in g["problems"])
    assert g["certain"] is True, "the passing run of the same input still answers"
    bad = subprocess.run(
        [sys.executable, "-m", "trajdebug", "analyze", str(demo), "--oracle", "nosuchmodule:fn"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert bad.returncode != 0 and "--oracle" in bad.stderr and "Traceback" not in bad.stderr


def test_the_text_view_ends_with_the_root_its_answers_and_the_path(demo: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "trajdebug", "analyze", str(demo), "--oracle", "os.path:exists"],
        capture_output=True, text=True, timeout=120, check=True, env={**os.environ, "COLUMNS": "200"},
    ).stdout
    tail = out[out.index("Guided search") :]
    assert "root: parse_rows" in tail
    assert re.search(r"parse_rows#[0-9a-f]+ -> wrong", tail), tail  # the listing names each step by its short id
    assert re.search(r"path to the failure: parse_rows#[0-9a-f]+ ->", tail), tail


def test_a_check_that_takes_two_arguments_gets_the_steps_input_too() -> None:
    """expect(name, lambda out, given: ...) is called with the recorded output and input; one argument, the output."""
    pages = Step("p1", "plan_pages", "other", input={"total": 23, "per_page": 10}, output=[1, 2])
    both = ExpectationOracle({"plan_pages": lambda out, given: len(out) * given["per_page"] >= given["total"]})
    alone = ExpectationOracle({"plan_pages": lambda out: len(out) == 2})
    run = Run("r", "inventory", steps=(pages,))
    answer = both(pages, run)
    assert answer is not None and answer.correct is False
    answer = alone(pages, run)
    assert answer is not None and answer.correct is True


def test_a_failing_relative_check_answers_plain_wrong_like_an_output_check() -> None:
    """A check given the step's input that fails answers wrong without saying the input was right (``admissible``
    None): the input may itself be wrong; a check of the output alone and a passing check say nothing of inputs."""
    pages = Step("p1", "plan_pages", "other", input={"total": 23, "per_page": 10}, output=[1, 2])
    run = Run("r", "inventory", steps=(pages,))
    relative = ExpectationOracle({"plan_pages": lambda out, given: len(out) * given["per_page"] >= given["total"]})
    absolute = ExpectationOracle({"plan_pages": lambda out: len(out) == 3})
    passing = ExpectationOracle({"plan_pages": lambda out, given: len(out) <= given["per_page"]})

    def raising(out: Any, given: Any) -> None:
        raise AssertionError("too few pages")

    asserting = ExpectationOracle({"plan_pages": raising})
    said = [o(pages, run) for o in (relative, absolute, passing, asserting)]
    assert [(a.correct, a.admissible) for a in said if a is not None] == [
        (False, None), (False, None), (True, None), (False, None)
    ]


def test_the_caller_keeps_a_wrong_answers_admissible_and_drops_it_from_any_other() -> None:
    """An oracle's `Answer` passes through the safe caller with ``admissible`` on a wrong answer only."""
    from trajdebug.analysis._oracles import Caller
    from trajdebug.core.model import Answer

    step = Step("s", "x", "other", output=1)
    run = Run("r", "x", steps=(step,))
    problems: list[str] = []
    wrong = Caller(lambda s, r: Answer(s.step_id, False, "person", admissible=False), None)(step, run, problems)
    right = Caller(lambda s, r: Answer(s.step_id, True, "person", admissible=True), None)(step, run, problems)
    odd = Caller(lambda s, r: Answer(s.step_id, False, "person", admissible="yes"), None)(step, run, problems)  # type: ignore[arg-type]
    assert (wrong.admissible, right.admissible, odd.admissible) == (False, None, None)
    assert len(problems) == 1 and "admissible" in problems[0]


def test_the_steps_enclosing_a_step_are_found_in_one_walk_up_through_parents_that_are_not_steps() -> None:
    """`Carrier.enclosing` lists the steps around one, nearest first, through a parent left out of the steps (a
    turn with no output of its own), and stops at a cycle of parents; `encloses` agrees with it."""
    from trajdebug.analysis._oracles import Carrier

    steps = [Step("season", "plan_season", "agent"), Step("match", "score_match", "tool"), Step("inning", "log_inning", "tool")]
    parent_of = {"season": "league", "league": "season", "turn": "season", "match": "turn", "inning": "match"}
    c = Carrier(steps, parent_of)
    assert c.enclosing(2) == [1, 0] and c.enclosing(1) == [0] and c.enclosing(0) == []
    assert [j for j in range(3) if c.encloses(j, 2)] == [0, 1]


def test_encloses_is_enclosing_on_a_loop_of_parents_through_the_step_and_on_a_deep_chain() -> None:
    """`encloses` is `enclosing` read one way: on a loop of parents through a step the other looping steps enclose
    it and it never encloses itself, and a chain 20,000 deep is walked without recursion."""
    from trajdebug.analysis._oracles import Carrier

    steps = [Step("reel", "wind_reel", "agent"), Step("line", "cast_line", "tool"), Step("hook", "bait_hook", "tool")]
    c = Carrier(steps, {"reel": "line", "line": "hook", "hook": "reel"})
    for p in range(3):
        assert sorted(c.enclosing(p)) == sorted({0, 1, 2} - {p})
        assert [j for j in range(3) if c.encloses(j, p)] == sorted(c.enclosing(p))
    n = 20_000
    deep = Carrier([Step(f"k{i}", "knot", "tool") for i in range(n)], {f"k{i}": f"k{i - 1}" if i else None for i in range(n)})
    assert deep.enclosing(n - 1) == list(range(n - 2, -1, -1)) and deep.encloses(0, n - 1) and not deep.encloses(n - 1, 0)
