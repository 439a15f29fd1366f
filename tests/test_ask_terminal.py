"""``trajdebug analyze SOURCE --ask`` driven for real through a pseudo-terminal (pexpect), keys and all."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from trajdebug.core.model import ASKED_GROUP, Run
from trajdebug.demo import run_demo
from trajdebug.sources.load import load_runs


pexpect = pytest.importorskip("pexpect")

SRC = Path(__file__).resolve().parent.parent / "src"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
HEADER = re.compile(r"question \d+: \S+ .*?#(\w{6})\s+\(step")
PROMPT = r"\[q\] quit"


def descendants(run: Run, root: str) -> set[str]:
    """The root and every step that consumed, directly or not, what it produced."""
    out = {root}
    changed = True
    while changed:
        changed = False
        for s in run.steps:
            if s.step_id not in out and any(d.step_id in out for d in s.deps):
                out.add(s.step_id)
                changed = True
    return out


@pytest.fixture
def demo(tmp_path: Path) -> tuple[Path, Run]:
    path = tmp_path / "demo.jsonl"
    run = run_demo(path=path, workdir=tmp_path)
    return path, run


def spawn(path: Path) -> object:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "220", "NO_COLOR": "1", "TERM": "xterm"}
    return pexpect.spawn(
        sys.executable,
        ["-m", "trajdebug", "analyze", str(path), "--ask"],
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 220),
    )


def press(child: object, key: str | None) -> None:
    """Send one key (``None``: Ctrl-C) once the program reads keys, its terminal raw (echo off).

    A key sent before that sits in the terminal's line buffer, and entering raw mode flushes it
    (``tty.setraw`` uses TCSAFLUSH): on a loaded machine the prompt can be out well before.
    """
    assert child.waitnoecho(timeout=60)  # type: ignore[attr-defined]
    if key is None:
        child.sendintr()  # type: ignore[attr-defined]
    else:
        child.send(key)  # type: ignore[attr-defined]


def question(child: object) -> str:
    """Wait for the next prompt and return the short id of the step asked about."""
    child.expect(PROMPT)  # type: ignore[attr-defined]
    text = ANSI.sub("", child.before)  # type: ignore[attr-defined]
    found = HEADER.findall(text)
    assert found, text[-2000:]
    return found[-1]


def truthful_key(run: Run, short_id: str, wrong: set[str]) -> str:
    [sid] = [s.step_id for s in run.steps if s.step_id.endswith(short_id)]
    return "n" if sid in wrong else "y"


def test_a_person_finds_the_planted_root_and_resumes_after_ctrl_c(demo: tuple[Path, Run]) -> None:
    """Ctrl-C after one answer keeps it; a second --ask does not ask that step again, numbers its first
    question 2 and, answered truthfully, ends at the demo's planted root, certain, with the proof and the path."""
    path, run = demo
    root = run.metadata["fault"]["step_id"]
    wrong = descendants(run, root)

    child = spawn(path)
    first = question(child)
    press(child, truthful_key(run, first, wrong))
    question(child)
    press(child, None)
    child.expect(r"stopped: 1 answer\(s\) given and stored")  # type: ignore[attr-defined]
    child.expect(pexpect.EOF)  # type: ignore[attr-defined]
    [stored] = load_runs(path, run_id=run.run_id)
    assert [(a.step_id[-6:], a.by) for a in stored.answers] == [(first, "person")]

    child = spawn(path)
    child.expect(r"1 stored answer")  # type: ignore[attr-defined]
    asked = []
    for _ in range(len(run.steps)):
        i = child.expect([PROMPT, r"root: "])  # type: ignore[attr-defined]
        if i == 1:
            break
        text = ANSI.sub("", child.before)  # type: ignore[attr-defined]
        if not asked:
            assert "question 2: " in text  # numbered on from the answer stored in the first session
        short_id = HEADER.findall(text)[-1]
        asked.append(short_id)
        press(child, truthful_key(run, short_id, wrong))
    child.expect(pexpect.EOF)  # type: ignore[attr-defined]
    end = ANSI.sub("", child.before)  # type: ignore[attr-defined]
    assert first not in asked
    assert end.lstrip().startswith(f"{run.step(root).name} #{root[-6:]}") and "certain" in end
    assert "the answers that prove it" in end and "path to the failure" in end
    [after] = load_runs(path, run_id=run.run_id)
    assert len(after.answers) == 1 + len(asked)


def test_e_expands_a_folded_value_and_q_stops_keeping_nothing_unanswered(tmp_path: Path) -> None:
    """A long output is folded with a count of what is hidden; e prints it whole; q ends without storing."""
    import trajdebug

    path = tmp_path / "long.jsonl"
    tail = "END-OF-THE-LONG-VALUE"

    @trajdebug.step(kind="tool")
    def fetch() -> str:
        return "x" * 5000 + tail

    @trajdebug.step(kind="output")
    def report(text: str) -> str:
        raise ValueError("report cannot use it")

    with pytest.raises(ValueError), trajdebug.run("long", path=path):
        report(fetch())
    child = spawn(path)
    child.expect(r"more characters \(e expands\)")  # type: ignore[attr-defined]
    child.expect(PROMPT)  # type: ignore[attr-defined]
    assert tail not in child.before  # type: ignore[attr-defined]
    press(child, "e")
    child.expect(tail)  # type: ignore[attr-defined]
    child.expect(PROMPT)  # type: ignore[attr-defined]
    press(child, "q")
    child.expect(r"stopped: 0 answer\(s\)")  # type: ignore[attr-defined]
    child.expect(pexpect.EOF)  # type: ignore[attr-defined]
    assert load_runs(path)[0].answers == ()


def test_ask_with_json_answers_from_a_pipe_and_prints_only_json_on_stdout(demo: tuple[Path, Run]) -> None:
    """On a pipe each line's first character is the key; with --json the questions go to stderr and
    stdout is the guided document, ending at the planted root."""
    import json
    import subprocess

    from trajdebug.analysis import GuidedSearch, analyze

    path, run = demo
    wrong = descendants(run, run.metadata["fault"]["step_id"])
    search = GuidedSearch(analyze(load_runs(path)[0]))
    keys = []
    while (sid := search.next_question()) is not None:
        keys.append("n" if sid in wrong else "y")
        from trajdebug.core.model import Answer

        search.answer(Answer(sid, sid not in wrong, "person"))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    res = subprocess.run(
        [sys.executable, "-m", "trajdebug", "analyze", str(path), "--ask", "--json"],
        input="\n".join(keys) + "\n", capture_output=True, text=True, env=env, timeout=120,
    )
    assert res.returncode == 0, res.stderr
    [entry] = json.loads(res.stdout)["runs"]
    assert (entry["guided"]["root"], entry["guided"]["certain"], entry["given"]) == (
        run.metadata["fault"]["step_id"], True, len(keys)
    )
    assert "question 1:" in res.stderr


def test_a_terminal_oracle_answers_analyze_source_and_stores_each_answer(demo: tuple[Path, Run]) -> None:
    """analyze_source(ask=TerminalOracle(source)) shows each question, reads its key, stores the
    answer with the run and ends at the planted root; q leaves the rest don't-know, shown no more."""
    import io

    from rich.console import Console

    from trajdebug.api import analyze_source
    from trajdebug.ask import TerminalOracle

    path, run = demo
    root = run.metadata["fault"]["step_id"]
    wrong = descendants(run, root)
    shown = io.StringIO()
    keys: list[str] = []

    def key() -> str:
        text = ANSI.sub("", shown.getvalue())
        short_id = HEADER.findall(text)[-1]
        keys.append(truthful_key(run, short_id, wrong))
        return keys[-1]

    quitter = TerminalOracle(None, console=Console(file=io.StringIO()), read_key=lambda: "q")
    other = analyze_source(path, run.run_id, ask=quitter).analyses[0].guided
    assert quitter.stopped and quitter.given == 0 and other is not None and not other.certain

    oracle = TerminalOracle(path, console=Console(file=shown, width=220), read_key=key)
    guided = analyze_source(path, run.run_id, ask=oracle).analyses[0].guided
    assert guided is not None and (guided.root, guided.certain) == (root, True)
    assert len(load_runs(path, run_id=run.run_id)[0].answers) == len(keys) == oracle.given



def test_a_proved_root_becomes_the_runs_label_and_a_later_analyze_shows_it_from_the_stored_answers(
    demo: tuple[Path, Run],
) -> None:
    """Once the answers prove the root, it is stored as the run's label (what `eval` and `fit` read), and
    a plain `analyze` afterwards, with no one to ask, reports the same certain root from the answers."""
    import json
    import subprocess

    from trajdebug.analysis import GuidedSearch, analyze
    from trajdebug.core.model import Answer
    from trajdebug.labels import labels

    path, run = demo
    planted = run.metadata["fault"]["step_id"]
    wrong = descendants(run, planted)
    search = GuidedSearch(analyze(load_runs(path)[0]))
    keys = []
    while (sid := search.next_question()) is not None:
        keys.append("n" if sid in wrong else "y")
        search.answer(Answer(sid, sid not in wrong, "person"))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    asked = subprocess.run(
        [sys.executable, "-m", "trajdebug", "analyze", str(path), "--ask", "--json"],
        input="\n".join(keys) + "\n", capture_output=True, text=True, env=env, timeout=120,
    )
    assert asked.returncode == 0, asked.stderr
    assert labels(path) == {run.run_id: planted}
    later = subprocess.run(
        [sys.executable, "-m", "trajdebug", "analyze", str(path), "--json"],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    )
    [entry] = json.loads(later.stdout)["runs"]
    assert (entry["guided"]["root"], entry["guided"]["certain"]) == (planted, True)


def test_enter_answers_nothing_and_an_unknown_key_is_named_and_asked_again(tmp_path: Path) -> None:
    """Enter waits for a key without printing the prompt again; an unknown key is named with the keys to press and
    the prompt is printed again (a script waiting for it would wait forever otherwise: nu32)."""
    import io

    from rich.console import Console

    from trajdebug.ask import PROMPT, _one_answer
    from trajdebug.report.question import question_for

    run = run_demo("bad-sql-filter", path=tmp_path / "d.jsonl", workdir=tmp_path)
    keys = iter(["\n", "\n", "x", "n"])
    out = io.StringIO()
    got = _one_answer(question_for(run, run.steps[1].step_id, 1), Console(file=out, width=200), lambda: next(keys))
    text = out.getvalue()
    assert got == (False, None)
    assert text.count(PROMPT.split("?")[0]) == 2
    assert "'x' is no answer: press y, o, i, n, ?, e or q" in text


def test_a_value_a_few_characters_past_the_fold_is_shown_whole_and_producers_preview_their_content() -> None:
    """Folding that would hide a handful of characters shows them instead; a producer's pretty-printed list
    is previewed by its items, not by the lone bracket of its first line."""
    import io

    from rich.console import Console

    from trajdebug.core.model import Dependency, Step
    from trajdebug.report.question import FOLD, fold, question_for, render_question

    assert fold("x" * (FOLD + 2)) == ("x" * (FOLD + 2), 0)
    text, cut = fold("x" * (FOLD + 500))
    assert cut == 500 and len(text) == FOLD
    items = [{"date": "2026-03-02", "category": "meal", "amount": 41.5}, {"date": "2026-03-02", "category": "taxi"}]
    steps = (
        Step("p", "parse_items", "parse", output=items, start_ns=1, end_ns=2),
        Step("d", "dedupe_items", "other", input=items, output=items[:1], deps=(Dependency("p"),), start_ns=3, end_ns=4),
    )
    run = Run("r1", "expenses", 0, 9, "failure", steps=steps)
    out = io.StringIO()
    render_question(question_for(run, "d", 1), Console(file=out, width=200))
    [row] = [line for line in out.getvalue().splitlines() if "← parse" in line]
    assert "2026-03-02" in row and "meal" in row


def test_a_reader_of_run_state_is_shown_the_value_it_read_not_what_the_writer_returned() -> None:
    """A producer reached through a state edge is previewed by the value it wrote under that key, not its return."""
    from trajdebug.core.model import Dependency, Step
    from trajdebug.report.question import question_for

    table = {"station": "Sandbar Pass", "rows": [{"time": "10:00", "height_m": 1.55}]}
    steps = (
        Step("w", "store_tides", "state", input={"parsed": table}, output=1, start_ns=1, end_ns=2,
             attributes={"state_writes": ["tides"], "state_values": {"tides": table}}),
        Step("d", "fetch_chart", "tool", output={"depth_m": -0.6}, start_ns=3, end_ns=4),
        Step("r", "plan_leg", "condition", input={"leg": 4}, output={"start": "10:00"}, start_ns=5, end_ns=6,
             deps=(Dependency("w", kind="state", key="tides"), Dependency("d"))),
    )
    run = Run("r1", "planner", 0, 9, "failure", steps=steps)
    shown = {p.name: p.output for p in question_for(run, "r", 1).producers}
    assert shown == {"store_tides": {"tides": table}, "fetch_chart": {"depth_m": -0.6}}


def test_a_state_writer_is_shown_what_it_wrote_beside_what_it_returned() -> None:
    """A step that wrote run.state and returned nothing is asked about with the values it left in the state."""
    from rich.console import Console

    from trajdebug.core.model import Step
    from trajdebug.report.question import question_for, question_to_dict, render_question

    reading = {"tank": "T3", "volume_l": 567.8}
    steps = (
        Step("w", "store_reading", "state", input={"reading": reading}, output=None, start_ns=1, end_ns=2,
             attributes={"state_writes": ["readings"], "state_values": {"readings": {"T3": reading}}}),
        Step("p", "plain", "other", input={"x": 1}, output=2, start_ns=3, end_ns=4),
    )
    run = Run("r1", "dosing", 0, 9, "failure", steps=steps)
    q = question_for(run, "w", 1)
    console = Console(record=True, width=100)
    render_question(q, console)
    text = console.export_text()
    assert "wrote to run.state" in text and "567.8" in text
    assert question_to_dict(q)["wrote"] is not None
    assert question_for(run, "p", 2).wrote is None


def test_a_passing_run_of_the_same_input_answers_for_the_outputs_it_also_produced(tmp_path: Path) -> None:
    """With a passing run of the same input beside the failed one, the person is asked only about the
    steps whose output differs from it: the steps it produced alike are answered correct by it."""
    import io

    from rich.console import Console

    import trajdebug
    from trajdebug.api import analyze_source, same_input
    from trajdebug.ask import ask_in_terminal

    path = tmp_path / "runs.jsonl"

    def agent(bug: bool) -> None:
        try:
            with trajdebug.run("sieve", path=path, task="grade the sample"):
                with trajdebug.step("weigh", kind="tool") as w:
                    w.output = {"grams": [412, 388, 97]}
                with trajdebug.step("sort", kind="tool", deps=[w]) as s:
                    s.output = {"coarse": 412, "fine": 388}
                share = 0.0 if bug else 0.43
                with trajdebug.step("share", kind="parse", deps=[w, s]) as p:
                    p.output = {"fine_share": share}
                with trajdebug.step("check", kind="condition", deps=[p]) as c:
                    c.output = share > 0.1
                    if share <= 0.1:
                        raise ValueError("fine share 0.0 is below the 0.1 floor")
        except ValueError:
            pass

    agent(False)
    agent(True)
    result = analyze_source(path)
    analyses = [a for a in result.analyses if a.run.outcome == "failure"]
    pool = load_runs(path)
    twins = {a.run.run_id: same_input(a.run, pool) for a in analyses}
    # What `analyze --ask` hands the session: the twin analyze_source found beside each analysis.
    assert twins == {a.run.run_id: t for a, t in zip(result.analyses, result.twins) if a.run.outcome == "failure"}
    asked: list[str] = []
    keys = iter("n" * 10)

    def key() -> str:
        asked.append("?")
        return next(keys)

    [done] = ask_in_terminal(path, analyses, Console(file=io.StringIO(), width=200), read_key=key, twins=twins)
    root = next(s.step_id for s in analyses[0].run.steps if s.name == "share")
    assert (done.guided.root, done.guided.certain) == (root, True)
    assert len(asked) == done.given == 1  # without the passing run: share, then sort and weigh


def test_the_keys_o_and_i_say_whether_what_the_step_was_given_was_right() -> None:
    """``o`` is wrong for the inputs it was given (its own fault), ``i`` wrong because it was given a wrong value,
    ``n`` wrong without saying which; the terminal oracle stores what the key said."""
    import io

    from rich.console import Console

    from trajdebug.ask import TerminalOracle, _one_answer
    from trajdebug.demo import run_demo as demo_run
    from trajdebug.report.question import question_for

    run = demo_run("bad-sql-filter", path=None)
    q = question_for(run, run.steps[1].step_id, 1)
    got = [_one_answer(q, Console(file=io.StringIO(), width=200), lambda k=k: k) for k in ("o", "i", "n", "y")]
    assert got == [(False, True), (False, False), (False, None), (True, None)]
    keys = iter(["i"])
    oracle = TerminalOracle(console=Console(file=io.StringIO(), width=200), read_key=lambda: next(keys))
    answer = oracle(run.steps[1], run)
    assert answer is not None and (answer.correct, answer.admissible) == (False, False)


def test_a_step_that_raised_is_asked_about_with_its_error_beside_its_empty_output() -> None:
    """A tool that raised has no output to judge: its question shows the error it ended with (terminal, and the
    data the report and serve draw), and a step without one shows none."""
    from rich.console import Console

    from trajdebug.core.model import ErrorInfo, Step
    from trajdebug.report.question import question_for, question_to_dict, render_question

    steps = (
        Step("t", "tide_gauge", "tool", input={"harbour": "Penmarch"}, output=None, start_ns=1, end_ns=2,
             status="error", error=ErrorInfo("HTTPError", "HTTP Error 502: Bad Gateway")),
        Step("p", "plan_launch", "other", input={"slot": "06:40"}, output="06:40", start_ns=3, end_ns=4),
    )
    run = Run("r1", "lifeboat-drill", 0, 9, "failure", steps=steps)
    q = question_for(run, "t", 1)
    console = Console(record=True, width=100)
    render_question(q, console)
    assert "HTTPError: HTTP Error 502: Bad Gateway" in console.export_text()
    assert question_to_dict(q)["error"] == "HTTPError: HTTP Error 502: Bad Gateway"
    assert question_for(run, "p", 2).error is None


def _record_invoice(path: Path) -> None:
    """A failed invoicing run: the third line converted twice (its EUR rate applied again), the amounts handed to
    the totals as text (so only inferred edges reach it, and a proof of it is audited), a customer lookup
    that feeds only the email (a step no recorded edge joins to the totals: what an audit asks about)."""
    import trajdebug

    @trajdebug.step(kind="input")
    def order_email() -> str:
        return "Please invoice CAFE-7: ETH 5 kg, HOUSE 10 kg, DECAF 2 kg, ship 17 kg."

    @trajdebug.step(kind="llm")
    def extract_order(text: str) -> dict:
        lines = [{"sku": "ETH", "kg": 5}, {"sku": "HOUSE", "kg": 10}, {"sku": "DECAF", "kg": 2}]
        return {"customer": "CAFE-7", "lines": lines, "ship_kg": 17}

    @trajdebug.step(kind="tool")
    def price_list(skus: list) -> dict:
        return {"ETH": 31.0, "HOUSE": 21.5, "DECAF": 23.0}

    @trajdebug.step(kind="tool")
    def fx_rate(base: str, quote: str) -> dict:
        return {"base": base, "quote": quote, "rate": 0.85}

    @trajdebug.step(kind="tool")
    def lookup_customer(customer: str) -> dict:
        return {"customer": customer, "name": "Cafe Seven", "terms_days": 14}

    @trajdebug.step(kind="other")
    def convert_line(line: dict, prices: dict, fx: dict) -> dict:
        rate = fx["rate"] * (fx["rate"] if line["sku"] == "DECAF" else 1)
        return {"sku": line["sku"], "amount": round(prices[line["sku"]] * line["kg"] * rate, 2)}

    @trajdebug.step(kind="tool")
    def shipping_quote(kg: int) -> dict:
        return {"amount": round(0.9 * kg, 2)}

    @trajdebug.step(kind="other")
    def compute_totals(lines: str, shipping: float) -> dict:
        sub = round(sum(float(part.split()[1]) for part in lines.split("; ")), 2)
        return {"subtotal": sub, "shipping": shipping, "total": round(sub + shipping, 2)}

    @trajdebug.step(kind="tool")
    def save_draft(totals: dict) -> dict:
        return {"draft": "INV-88", "total": totals["total"]}

    @trajdebug.step(kind="llm")
    def write_email(totals: dict, draft: dict, who: dict) -> str:
        return f"Invoice {draft['draft']} for {who['name']}: total due {totals['total']} GBP."

    @trajdebug.step(kind="tool")
    def send_invoice(email: str) -> dict:
        return {"sent": True}

    with trajdebug.run("invoicing", path=path, task="invoice CAFE-7") as run:
        order = extract_order(order_email())
        prices = price_list([line["sku"] for line in order["lines"]])
        fx = fx_rate("EUR", "GBP")
        who = lookup_customer(order["customer"])
        lines = [convert_line(line, prices, fx) for line in order["lines"]]
        text = "; ".join(f"{line['sku']} {line['amount']}" for line in lines)
        totals = compute_totals(text, float(str(shipping_quote(order["ship_kg"])["amount"])))
        send_invoice(write_email(totals, save_draft(totals), who))
        run.fail("the invoice total disagrees with the ledger")


_QUESTION = re.compile(r"question \d+: (?:Are all \d+ of these right\? )?\S+ (\S+) #(\w{6})")
"""A question's step name and (first) short id; a group of like steps says its count first."""
_GROUP = re.compile(r"question \d+: Are all \d+ of these right\? \S+ \S+ ((?:#\w{6}(?:, )?)+)")
"""A group question's short ids, every one (a truthful answerer says "all right" only if each is right)."""
_DOWNSTREAM = ("save_draft", "write_email", "send_invoice")


@pytest.mark.parametrize(
    "truth",
    [
        pytest.param({"compute_totals": "n", "convert_line#3": "n"}, id="two-valued"),
        pytest.param({"compute_totals": "i", "convert_line#3": "o", **dict.fromkeys(_DOWNSTREAM, "i")}, id="three-valued"),
        # The proof of compute_totals is audited (inputs only inferred); the audit's wrong answer ties the
        # customer lookup to it: state the session kept in memory, worked out again from the stored answers.
        pytest.param({"compute_totals": "n", "lookup_customer": "n", **dict.fromkeys(_DOWNSTREAM, "n")}, id="audit"),
        # Answers that admit no root: re-asking a step would read back as asked once, and be asked again on
        # every resume; no step is asked twice, and the conflict is reported.
        pytest.param({"*": "i"}, id="conflict"),
    ],
)
def test_a_resumed_session_asks_what_the_session_that_gave_the_answers_would_have_asked(
    tmp_path: Path, truth: dict[str, str]
) -> None:
    """Answered at one sitting (`ask_in_terminal`) or one answer per `analyze --ask` (each a new search over the
    answers stored by the calls before), the questions are the same, in the same order, to the same end."""
    import io
    import shutil

    from click.testing import CliRunner
    from rich.console import Console

    from trajdebug.api import analyze_source
    from trajdebug.ask import ask_in_terminal
    from trajdebug.cli import cli

    base = tmp_path / "base.jsonl"
    _record_invoice(base)
    seen: dict[str, int] = {}
    nth = {}  # a step's short id -> its name and occurrence, as the truth names it
    for s in load_runs(base)[0].steps:
        seen[s.name] = seen.get(s.name, 0) + 1
        nth[s.step_id[-6:]] = f"{s.name}#{seen[s.name]}"

    def key(name: str, short_id: str) -> str:
        return truth.get(nth[short_id], truth.get(name, truth.get("*", "y")))

    at_once, resumed = tmp_path / "at_once.jsonl", tmp_path / "resumed.jsonl"
    shutil.copy(base, at_once)
    shutil.copy(base, resumed)
    shown = io.StringIO()
    session: list[tuple[str, str]] = []

    def read_key() -> str:
        name, short_id = _QUESTION.findall(shown.getvalue())[-1]
        session.append((name, short_id))
        return key(name, short_id)

    ask_in_terminal(at_once, analyze_source(at_once).analyses, Console(file=shown, width=200), read_key=read_key)
    assert 1 < len(session) < 15
    calls: list[tuple[str, str]] = []
    for name, short_id in [*session, ("", "")]:
        # One answer per call, then q: the next call is a new search over the answers stored so far.
        said = key(name, short_id) if name else "q"
        out = CliRunner().invoke(cli, ["analyze", str(resumed), "--ask"], input=f"{said}\nq\n").output
        found = _QUESTION.search(out)
        calls.append((found.group(1), found.group(2)) if found else ("", ""))
    assert calls == [*session, ("", "")]  # the last call, after every answer, asks nothing
    stored = [[(a.step_id, a.correct, a.admissible) for a in load_runs(p)[0].answers] for p in (at_once, resumed)]
    # A question about a group of like steps answered "all right" stores one answer per step of the group.
    assert stored[0] == stored[1] and len(stored[0]) >= len(session)
    assert {sid[-6:] for sid, _, _ in stored[0]} >= {short_id for _, short_id in session}


def test_quitting_says_when_the_question_was_not_about_the_likeliest_root() -> None:
    """Quit before answering: the likeliest root named (``c``, 45 % of the prior) is not what question 1 asked
    (``b``, whose answer splits the candidates best), and one line says why; where they agree, nothing is said."""
    import io

    from rich.console import Console

    from trajdebug.analysis import Analysis
    from trajdebug.analysis._detect import Failure
    from trajdebug.analysis._localize import Candidate, Localization, SearchStats
    from trajdebug.ask import ask_in_terminal
    from trajdebug.core.model import Answer, Dependency, Step

    ids = ["a", "b", "c", "d"]
    steps = tuple(
        Step(s, f"step_{s}", "other", output=i, deps=(Dependency(ids[i - 1]),) if i else (), start_ns=2 * i, end_ns=2 * i + 1)
        for i, s in enumerate(ids)
    )
    run = Run("r1", "chain", 0, 9, "failure", "wrong", steps=steps)

    def stop(prior: dict[str, float], answers: tuple[Answer, ...] = ()) -> str:
        run_ = dataclasses.replace(run, answers=answers)
        cands = [Candidate(s, p, (), tuple(ids[ids.index(s):]), confidence=p) for s, p in prior.items()]
        loc = Localization(cands, SearchStats(4, 4, 0.0), failures=(Failure("d", "outcome", "wrong", "x", "final"),),
                           ranking=tuple(prior))
        shown = io.StringIO()
        # Nothing is stored (q before any answer): the source is never opened.
        [asked] = ask_in_terminal("unused.jsonl", [Analysis(run_, loc.failures, loc)], Console(file=shown, width=300),
                                  read_key=lambda: "q")
        assert asked.stopped and asked.given == 0
        return shown.getvalue()

    text = stop({"c": 0.45, "b": 0.3, "a": 0.25})
    assert "question 1: other step_b" in text and "root: step_c #c" in text
    assert "question 1 (step_b #b) is not about the likeliest root below: the search asks the step whose answer is " \
           "expected to narrow the candidates most (information gain)" in text
    text = stop({"c": 0.7, "b": 0.2, "a": 0.1})  # most of the mass on c: it is proved or refuted first
    assert "question 1: other step_c" in text and "root: step_c #c" in text and "not about the likeliest" not in text
    # c answered wrong beforehand: its input is asked to prove it, which is no information gain.
    text = stop({"c": 0.7, "b": 0.2, "a": 0.1}, (Answer("c", False, "person"),))
    assert "question 2: other step_b" in text and "root: step_c #c" in text
    assert "question 2 (step_b #b) is not about the likeliest root below: the likeliest step holds most of the " \
           "candidates' probability, so the search proves or refutes it by its inputs" in text


def _session(path: Path, truth: dict[str, str], strategy: str = "prior", **extra: object) -> tuple[list[str], Any, str]:
    """One ``ask_in_terminal`` sitting answered by ``truth`` (a step's name and occurrence, its name, or ``*`` ->
    a key): the short ids asked, the result, the text shown."""
    import io

    from rich.console import Console

    from trajdebug.api import analyze_source
    from trajdebug.ask import ask_in_terminal

    seen: dict[str, int] = {}
    nth = {}
    for s in load_runs(path)[0].steps:
        seen[s.name] = seen.get(s.name, 0) + 1
        nth[s.step_id[-6:]] = f"{s.name}#{seen[s.name]}"
    shown = io.StringIO()
    asked: list[str] = []

    def key(name: str, short_id: str) -> str:
        return truth.get(nth[short_id], truth.get(name, truth.get("*", "y")))

    def read_key() -> str:
        name, short_id = _QUESTION.findall(shown.getvalue())[-1]
        asked.append(short_id)
        last = shown.getvalue().rsplit("question ", 1)[-1]
        group = _GROUP.match("question " + last)
        if group:  # "all right?" of a group: yes only if every step it lists is right (not the first one's answer)
            ids = re.findall(r"#(\w{6})", group.group(1))
            return "y" if all(key(name, i) == "y" for i in ids) else "n"
        return key(name, short_id)

    res = analyze_source(path, strategy=strategy, **extra)  # type: ignore[arg-type]
    out = ask_in_terminal(path, res.analyses, Console(file=shown, width=400), read_key=read_key, strategy=strategy)
    return asked, out[0].guided, shown.getvalue()


@pytest.mark.parametrize("strategy", ["prior", "top-down"])
def test_taking_back_any_answer_lets_the_resumed_search_end_where_the_session_ended(tmp_path: Path, strategy: str) -> None:
    """An audit's wrong answer ties the customer lookup to the proved totals; take back any answer given before it
    (`forget_answers`) and the audit still reads as an audit (`Answer.asked`, stored with it), not as a wrong answer
    of its own that clashes with the totals: the resumed search asks what it needs again and proves the same root."""
    import shutil

    from trajdebug.answers import forget_answers

    truth = {"compute_totals": "n", "lookup_customer": "n", **dict.fromkeys(_DOWNSTREAM, "n")}
    base = tmp_path / "base.jsonl"
    _record_invoice(base)
    _, guided, _ = _session(base, truth, strategy)
    run = load_runs(base)[0]
    assert guided.certain and run.step(guided.root).name == "lookup_customer"
    assert guided.audited  # the lookup was asked in an audit of the totals' proof
    for k, a in enumerate(run.answers):
        path = tmp_path / f"forget{k}.jsonl"
        shutil.copy(base, path)
        forget_answers(path, run.run_id, steps=[a.step_id])
        asked, again, _ = _session(path, truth, strategy)
        assert (again.root, again.certain, again.conflict) == (guided.root, True, ()), a
        assert set(asked) <= {a.step_id[-6:]}  # only the step taken back may be asked again


def test_a_tie_between_answerers_of_equal_trust_is_reported_with_how_to_take_one_back(tmp_path: Path) -> None:
    """``person:alice`` calls the proved root right where the person called it wrong: nothing settles a tie when no
    step is asked twice, so it is reported (`Guided.clashing`), not left for a resume to re-ask, and no other
    question is asked meanwhile; the advice names the step; a resume asks nothing either."""
    import trajdebug
    from trajdebug.core.model import Answer

    path = tmp_path / "inv.jsonl"
    _record_invoice(path)
    truth = {"compute_totals": "n", "convert_line#3": "n", **dict.fromkeys(_DOWNSTREAM, "n")}
    _, guided, _ = _session(path, truth)
    assert guided.certain
    run = load_runs(path)[0]
    trajdebug.save_answer(path, run.run_id, Answer(guided.root, True, "person:alice"))
    for _ in range(2):
        asked, tied, text = _session(path, truth)
        assert asked == [] and tied.clashing == (guided.root,) and not tied.certain
        assert f"the answers about convert_line #{guided.root[-6:]} disagree" in text
        assert f"trajdebug answers forget {path} --run {run.run_id[:12]} --step {guided.root}`" in text


def test_a_conflict_names_the_steps_whose_answers_clash_and_advises_taking_back_only_those(tmp_path: Path) -> None:
    """Every step answered "given a wrong input" (``i``): the order text and the extraction from it admit no root.
    The conflict names those two answered steps, and the advice names no step that holds no answer."""
    path = tmp_path / "inv.jsonl"
    _record_invoice(path)
    _, guided, text = _session(path, {"*": "i"})
    run = load_runs(path)[0]
    answered = {a.step_id for a in run.answers}
    names = {s.step_id: s.name for s in run.steps}
    assert guided.conflict and sorted(names[s] for s in guided.clashing) == ["extract_order", "order_email"]
    assert set(guided.clashing) <= answered
    advised = re.findall(r"--step (\S+?)`", text)
    assert advised and set(advised) == set(guided.clashing)
    assert "the answers about order_email #" in text and "admit no single root" in text


def test_serve_stores_what_each_answer_was_asked_as_so_its_next_search_takes_the_audit_as_one(tmp_path: Path) -> None:
    """Each request of ``serve``'s panel is a new search over the stored answers: the audit's wrong answer is stored
    as an audit (`store_answer`), so the next search ties the lookup to the totals and proves it, as one sitting does."""
    from trajdebug.api import analyze_source
    from trajdebug.core.model import Answer
    from trajdebug.serve.ask import ask_state, store_answer, stored_answers

    path = tmp_path / "inv.jsonl"
    _record_invoice(path)
    analysis = analyze_source(path).analyses[0]
    wrong = {"compute_totals", "lookup_customer", *_DOWNSTREAM}
    names = {s.step_id: s.name for s in analysis.run.steps}
    for _ in range(15):
        state = ask_state(analysis, stored_answers(path, analysis.run.run_id))
        if state["question"] is None:
            break
        sid = state["question"]["step_id"]
        answer = Answer(sid, names[sid] not in wrong, "person")
        store_answer(path, analysis, answer, stored_answers(path, analysis.run.run_id))
    guided = state["guided"]
    assert guided["certain"] and guided["root_name"] == "lookup_customer" and guided["audited"]
    kinds = {names[a.step_id]: a.asked for a in load_runs(path)[0].answers}
    assert kinds["lookup_customer"].startswith("audit:") and kinds["compute_totals"] == "question"


def test_an_automatic_oracles_dont_know_leaves_the_question_to_the_person(tmp_path: Path) -> None:
    """A function oracle (``--oracle``) that knows nothing answers "don't know" everywhere: neither stored nor
    taken as an answer, so the person is asked as with no oracle at all, and proves the root."""
    path = tmp_path / "inv.jsonl"
    _record_invoice(path)
    truth = {"compute_totals": "n", "convert_line#3": "n", **dict.fromkeys(_DOWNSTREAM, "n")}

    def knows_nothing(step: object, run: object) -> None:
        return None

    asked, guided, _ = _session(path, truth, oracle=knows_nothing)
    assert asked and guided.certain and load_runs(path)[0].step(guided.root).name == "convert_line"
    assert {a.by for a in load_runs(path)[0].answers} == {"person"}


# -- since ask49: no certainty nobody gave, labels that follow the answers, like steps asked at once ----------------


PICKED: list[str] = []


def _record_flats(path: Path, budget: str = "1.250", *, bug: bool = True, fail: bool = True) -> None:
    """A flat finder shaped like a new user's LangGraph agent (nu22 a3): a model reads the budget, a plain step
    normalizes it (``float("1.250")`` is 1.25, not 1250, with ``bug``), seven lookups fetch listings, a filter
    keeps those under the budget, and the booking tool, handed a list built anew (no recorded producer),
    fails on an empty one."""
    import trajdebug

    @trajdebug.step(kind="llm")
    def parse_request(text: str) -> dict:
        return {"max_rent": budget, "city": "Graz"}

    @trajdebug.step(kind="other")
    def normalize_budget(req: dict) -> dict:
        raw = req["max_rent"]
        return {"max_rent": float(raw) if bug else float(raw.replace(".", "")), "city": req["city"]}

    @trajdebug.step(kind="tool")
    def search_listings(city: str) -> list:
        return [f"L{k}" for k in range(7)]

    @trajdebug.step(kind="tool")
    def get_details(listing: str) -> dict:
        return {"id": listing, "rent": 900 + 50 * int(listing[1:]), "rooms": 2}

    @trajdebug.step(kind="other")
    def filter_budget(listings: list, max_rent: float) -> list:
        return [d for d in listings if d["rent"] <= max_rent]

    @trajdebug.step(kind="tool")
    def book_viewing() -> dict:
        return {"booked": PICKED[0]}  # state the recorder never saw: no recorded input

    with trajdebug.run("flat-finder", path=path, task=f"flats in Graz under {budget}") as run:
        req = normalize_budget(parse_request(f"two rooms in Graz, at most {budget} a month"))
        details = [get_details(x) for x in search_listings(req["city"])]
        shortlist = filter_budget(list(details), float(str(req["max_rent"])))
        PICKED[:] = [d["id"] for d in shortlist]
        try:
            book_viewing()
        except IndexError:
            if fail:
                run.fail("no viewing booked")


def _ask_cli(src: Path, keys: str, *extra: str) -> str:
    from click.testing import CliRunner

    from trajdebug.cli import cli

    return CliRunner().invoke(cli, ["analyze", str(src), "--ask", *extra], input=keys).output


def test_quitting_at_the_first_question_proves_no_root_and_writes_no_label(tmp_path: Path) -> None:
    """F1 (nu22): the failing step has no recorded producer; quitting at the first question (an audit of it)
    leaves it the likeliest root, never certain, and writes no label, though no answer was given."""
    from trajdebug.labels import labels

    src = tmp_path / "flats.jsonl"
    _record_flats(src)
    out = _ask_cli(src, "q\n")
    assert "question 1:" in out and "certain:" not in out.replace("not certain", "")
    assert "root: book_viewing" in out and "not proven by the" in out
    assert "labelled run" not in out and labels(src) == {}


def test_passing_runs_of_other_inputs_never_make_a_step_wrong_or_a_root_certain(tmp_path: Path) -> None:
    """F1 (nu22, --refs others): with passing runs of other inputs as references, quitting before any answer
    proves nothing: the search starts from the failing step, not from a step ranked on a deviation, and no
    label is written."""
    from trajdebug.labels import labels

    src, others = tmp_path / "flats.jsonl", tmp_path / "others.jsonl"
    _record_flats(src)
    for budget in ("1500", "1300", "1400", "1200"):
        _record_flats(others, budget)
    out = _ask_cli(src, "q\n", "--refs", str(others))
    assert "certain:" not in out.replace("not certain", "") and "labelled run" not in out
    assert labels(src) == {}


def test_answered_from_the_bug_off_run_the_search_proves_the_bug_labels_it_and_asks_nothing_more(tmp_path: Path) -> None:
    """F1 (nu22): answered from the bug-off run (a group of like steps "all right" only when each is), the
    search proves normalize_budget on the person's answers, the label names it, and a resumed search asks
    nothing more."""
    import io

    from rich.console import Console

    from trajdebug.analysis._oracles import occurrences, same_output
    from trajdebug.api import analyze_source
    from trajdebug.ask import ask_in_terminal
    from trajdebug.labels import labels

    src, good = tmp_path / "flats.jsonl", tmp_path / "good.jsonl"
    _record_flats(src)
    _record_flats(good, bug=False, fail=False)
    run, ref = load_runs(src)[0], load_runs(good)[0]
    twin = {k: ref.step(s) for s, k in occurrences(ref).items()}
    keys = occurrences(run)

    def truth(sid: str) -> str:
        step, other = run.step(sid), twin.get(keys[sid])
        if other is not None and same_output(step.output, other.output):
            return "y"
        return "o" if step.name == "normalize_budget" else "i"

    shown = io.StringIO()
    asked: list[str] = []

    def read_key() -> str:
        text = shown.getvalue()
        last = text[text.rindex("question "):]
        ids = re.findall(r"^  #(\w{6}) \(step", last, re.M) or re.findall(r"question \d+: \S+ \S+ #(\w{6})", last)
        sids = [next(s.step_id for s in run.steps if s.step_id.endswith(x)) for x in ids]
        asked.append("+".join(run.step(s).name for s in sids))
        return "y" if all(truth(s) == "y" for s in sids) else truth(sids[0])

    [done] = ask_in_terminal(src, analyze_source(src).analyses, Console(file=shown, width=200), read_key=read_key)
    assert done.guided.certain and run.step(done.guided.root).name == "normalize_budget"
    assert len(asked) <= 6, asked
    from trajdebug.cli._analyze import _label_proved

    _label_proved(str(src), [done])
    assert labels(src) == {run.run_id: done.guided.root}
    assert "question" not in _ask_cli(src, "q\n").split("stored answer(s)")[1]


def test_a_label_the_answers_no_longer_prove_is_withdrawn_and_a_new_proof_replaces_it(tmp_path: Path) -> None:
    """F1 (nu22): a label an earlier version wrote for an unproven root (``by="answers"``) is withdrawn by the
    next --ask that proves nothing, and a root proven later is the run's only answers label in the file."""
    import json

    from trajdebug.labels import label, labels, sidecar

    src = tmp_path / "flats.jsonl"
    _record_flats(src)
    run = load_runs(src)[0]
    failing = next(s.step_id for s in run.steps if s.name == "book_viewing")
    label(src, run.run_id, failing, by="answers")
    out = _ask_cli(src, "q\n")
    assert "withdrew the label" in out and labels(src) == {}
    bug = next(s.step_id for s in run.steps if s.name == "normalize_budget")
    from trajdebug.labels import prove

    assert prove(src, run.run_id, bug) == "labelled" and prove(src, run.run_id, bug) is None
    lines = [json.loads(x) for x in sidecar(src).read_text().splitlines()]
    assert [x["step_id"] for x in lines if x["by"] == "answers"] == [bug] and labels(src) == {run.run_id: bug}


# -- since fix49a: a "don't know" proves nothing; a group's "not all" is stored; the tally counts each answer --------


def test_audits_answered_dont_know_leave_the_root_unproven_unlabelled_and_say_what_would_prove_it(tmp_path: Path) -> None:
    """HIGH 1 (rev49a): "don't know" to every question (the failing booking's audit) proves no root: no label is
    written, and the end says why it is not proven and how to answer again."""
    from trajdebug.labels import labels

    src = tmp_path / "flats.jsonl"
    _record_flats(src)
    out = _ask_cli(src, "?\n" * 30)
    assert "root: book_viewing" in out and "not proven by the" in out and "certain:" not in out
    flat = " ".join(out.split())
    assert "not proven: no input of it was recorded" in flat and 'proven by "correct" about one of those' in flat
    assert "to answer again: `trajdebug answers forget" in flat
    assert "labelled run" not in out and labels(src) == {}


def test_a_root_with_no_recorded_input_proven_by_its_audit_says_so(tmp_path: Path) -> None:
    """LOW 4 (rev49a): the booking, with no recorded input, proven by its audit's answers (correct), says that no
    input of it was recorded and the earlier steps that may have fed it were answered correct, never that every
    input it consumed was; the audited steps are listed as its audit."""
    src = tmp_path / "flats.jsonl"
    _record_flats(src)
    flat = " ".join(_ask_cli(src, "y\n" * 10).split())
    assert "root: book_viewing" in flat and "every input it consumed" not in flat
    assert "certain: the run failed at this step, and no input of it was recorded" in flat
    assert flat.count("(an earlier step that may have fed it unrecorded: its audit)") == 2


def test_a_resumed_session_after_a_groups_not_all_asks_and_numbers_as_the_live_one(tmp_path: Path) -> None:
    """LOW 3 (rev49a): the group of seven lookups answered "not all", then quitting at its first lookup asked on
    its own: the resumed session asks that lookup on its own, with the same number, not the group again."""
    src = tmp_path / "flats.jsonl"
    _record_flats(src)
    live = _ask_cli(src, "n\ny\nn\nq\n")
    assert re.search(r"question 3: Are all 7 of these right\? tool get_details #\w+(, #\w+){6} #", " ".join(live.split()))
    single = re.search(r"question 4: tool get_details #\w+  \(step", live)
    assert single is not None
    resumed = _ask_cli(src, "q\n")
    asked = re.findall(r"^question \d+: .*$", resumed, re.M)
    assert asked and asked[0].startswith(single.group(0)) and "Are all" not in resumed


def test_the_tally_counts_each_answer_a_group_stored_and_the_open_group_is_named_whole(tmp_path: Path) -> None:
    """LOW 5 (rev49a): the group's "all right" stores its seven answers (in one question) and the tally counts
    answers and questions apart; quitting at a group's question, the line on why it is not about the likeliest
    root names the whole group.  (Since round 62 the search reads every ranked step's prior, not the --top
    head: normalize_budget is asked before the group, and the group's "all right" ends the session.)"""
    src = tmp_path / "flats.jsonl"
    _record_flats(src)
    _ask_cli(src, "i\n?\n?\ny\nq\n")
    [run] = load_runs(src)
    lookups = {s.step_id for s in run.steps if s.name == "get_details"}
    stored = [a for a in run.answers if a.step_id in lookups]
    assert len(lookups) == 7 and {a.step_id for a in stored} == lookups and all(a.correct is True for a in stored)
    again = tmp_path / "again.jsonl"
    _record_flats(again)
    flat = " ".join(_ask_cli(again, "i\n?\n?\n?\ny\nq\n").split())
    assert "stopped: 4 answer(s) given and stored in 5 question(s)" in flat
    other = tmp_path / "other.jsonl"
    _record_flats(other)
    flat = " ".join(_ask_cli(other, "n\ny\nq\n").split())
    assert re.search(r"question 3 \(all 7 get_details steps, #\w+(, #\w+){6}\) is not about", flat)


def test_a_key_typed_with_enter_is_that_key_and_a_group_says_how_it_read_an_unoffered_one(tmp_path: Path) -> None:
    """A key arriving with its Enter in one write (a pasted ``y⏎``, a script's line) is that key, not "no
    answer"; at a group's question a wrong-answer key it does not offer is read as "not all", and says so,
    while an unknown key is asked again, with the prompt (issue 23, nu23; nu32)."""
    import io

    from rich.console import Console

    from trajdebug.ask import _group_answer, _one_answer
    from trajdebug.report.question import question_for

    run = run_demo("bad-sql-filter", path=tmp_path / "d.jsonl", workdir=tmp_path)
    q = question_for(run, run.steps[1].step_id, 1)
    got = [_one_answer(q, Console(file=io.StringIO(), width=200), lambda k=k: k) for k in ("y\n", " o\r\n", "I\n")]
    assert got == [(True, None), (False, True), (False, False)]
    group = [run.steps[1].step_id, run.steps[2].step_id]
    shown = io.StringIO()
    keys = iter(["x\n", "o\n"])
    assert _group_answer(run, group, 1, Console(file=shown, width=200), lambda: next(keys)) == "no"
    text = " ".join(shown.getvalue().split())
    assert "'x' is no answer here: press y, n, ? or q" in text and "'o' read as [n] not all" in text
    assert text.count("[q] quit") == 2
    assert _group_answer(run, group, 1, Console(file=io.StringIO(), width=200), lambda: "y\n") == "yes"


def test_a_group_question_puts_its_count_and_the_question_in_the_header_and_lists_every_id(tmp_path: Path) -> None:
    """A question about a group of like steps opens "question N: Are all K of these right?" with the kind, the
    name and every step's id, and its keys say "yes, all K", so it never reads as a question about its first
    step (nu26 F10: "tool get_details #ab12cd and 6 more ... asked at once" was answered for that step)."""
    src = tmp_path / "flats.jsonl"
    _record_flats(src)
    run = load_runs(src)[0]
    out = _ask_cli(src, "n\ny\nq\n")
    flat = " ".join(out.split())  # the header wraps at the terminal's width
    head = re.search(r"question 3: (Are all 7 of these right\? tool get_details (#\w{6}(, )?)+)", flat)
    assert head is not None
    ids = re.findall(r"#(\w{6})", head.group(1))
    lookups = {s.step_id[-6:] for s in run.steps if s.name == "get_details"}
    assert len(ids) == 7 and set(ids) <= lookups
    assert not re.search(r"^question 3: \S+ \S+ #\w{6}", out, re.M)
    assert "[y] yes, all 7" in flat


def test_a_group_question_lists_its_steps_in_run_order_and_cuts_each_value_where_it_differs(tmp_path: Path) -> None:
    """A group's question lists its steps in the order they ran, and a long input is cut around where it
    differs from the first step's, not at its common head (nu30 finding 9: out of order, cut just before the
    difference)."""
    import io

    from rich.console import Console

    from trajdebug.ask import _group_answer, _one

    src = tmp_path / "flats.jsonl"
    _record_flats(src)
    run = load_runs(src)[0]
    group = [s.step_id for s in run.steps if s.name == "get_details"][::-1]
    buf = io.StringIO()
    _group_answer(run, group, 1, Console(file=buf, width=400), lambda: "y")
    text = buf.getvalue()
    listed = re.findall(r"^  #(\w{6}) \(step (\d+) of", text, re.M)
    assert [int(k) for _, k in listed] == sorted(int(k) for _, k in listed) and len(listed) == len(group)
    long_a = {"summary": "x" * 300 + "diet: vegetarian"}
    long_b = {"summary": "x" * 300 + "diet: none"}
    assert "vegetarian" not in _one(long_a) and "vegetarian" in _one(long_a, long_b)


def test_every_question_takes_dont_know_and_a_group_asks_each_step_after_it(tmp_path: Path) -> None:
    """The three-valued oracle's "don't know" (``?``) is an answer at every question: at a group's question it
    asks each step on its own, as "not all" does, stored as a record that says "don't know", never "not all
    right" (nu32: a script answering ``?`` there waited forever for a prompt that never came back)."""
    import io

    from rich.console import Console

    from trajdebug.ask import GROUP_PROMPT, _group_answer, _one_answer
    from trajdebug.report.question import question_for

    assert "[?] don't know" in GROUP_PROMPT
    run = run_demo("bad-sql-filter", path=tmp_path / "d.jsonl", workdir=tmp_path)
    group = [run.steps[1].step_id, run.steps[2].step_id]
    assert _group_answer(run, group, 1, Console(file=io.StringIO(), width=200), lambda: "?\n") == "unsure"
    q = question_for(run, run.steps[1].step_id, 1)
    assert _one_answer(q, Console(file=io.StringIO(), width=200), lambda: "?") == (None, None)
    src = tmp_path / "flats.jsonl"
    _record_flats(src)
    # Since round 62 the search reads every ranked step's prior: normalize_budget is asked before the group.
    flat = " ".join(_ask_cli(src, "i\n?\n?\n?\nq\n").split())
    assert "is no answer" not in flat and "question 4: Are all 7 of these right?" in flat
    assert re.search(r"question 5: tool get_details #\w+ \(step", flat)
    [record] = [a for a in load_runs(src)[0].answers if a.asked == ASKED_GROUP]
    assert record.correct is None and (record.reason or "").endswith(": don't know")


def test_the_end_of_input_ends_the_session_at_any_question(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The end of input ends the session cleanly, at a step's question or a group's: on a pipe (no line left) and
    on a terminal that closed (a read of nothing), never a loop waiting for a key that cannot come (nu32)."""
    import sys

    from trajdebug import ask

    src = tmp_path / "flats.jsonl"
    _record_flats(src)
    for given in ("", "i\n?\n"):  # ends at the first question; at the group's
        flat = " ".join(_ask_cli(src, given).split())
        assert "stopped:" in flat and "ask again to resume" in flat

    class _Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", _Tty())
    monkeypatch.setattr("click.getchar", lambda: "")
    with pytest.raises(EOFError):
        ask.read_key_default()

    def hung_up() -> str:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr("click.getchar", hung_up)
    with pytest.raises(EOFError):
        ask.read_key_default()


def test_ask_piped_never_wraps_a_line(tmp_path: Path) -> None:
    """`analyze --ask` with its output piped prints each line whole, longer than 80 columns too (nu63: the
    session wrapped "its inputs came from" lines mid-value at 80 columns)."""
    import subprocess

    import trajdebug

    note = "N" * 70 + " and the end of a long note"
    path = tmp_path / "r.jsonl"
    with trajdebug.run("notes", path=path) as run:
        with trajdebug.step("fetch", kind="tool", input={"q": "a"}) as f:
            f.output = {"note": note}
        with trajdebug.step("summarize", kind="llm", input={"note": note}) as s:
            s.output = "short"
        run.fail("the summary 'short' lost the note")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"PYTHONPATH": str(SRC)}
    res = subprocess.run(
        [sys.executable, "-m", "trajdebug", "analyze", str(path), "--ask"],
        input="q\n", capture_output=True, text=True, env=env, timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert "question 1:" in res.stdout
    assert f'"note": "{note}"' in res.stdout
    assert "[q] quit" in next(line for line in res.stdout.splitlines() if line.startswith("Is this output right"))
