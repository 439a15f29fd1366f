"""``--refs FILE``: runs to compare with from other files than SOURCE (``analyze``, ``report``, `analyze_source`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import trajdebug
from trajdebug.api import analyze_source
from trajdebug.cli import cli


ORDERS = {
    "T-1": {"kg": 4, "eur_per_kg": 20.0},
    "T-2": {"kg": 7, "eur_per_kg": 18.5},
    "T-3": {"kg": 2, "eur_per_kg": 31.0},
    "T-4": {"kg": 5, "eur_per_kg": 22.0},
}


def _record(path: Path, ticket: str, *, planted: bool) -> str:
    """One run of a small tea-shop invoicing agent; ``planted``: its conversion step applies the rate twice."""

    @trajdebug.step(kind="tool")
    def lookup_order(ticket: str) -> dict[str, Any]:
        return {"ticket": ticket, **ORDERS[ticket]}

    @trajdebug.step(kind="tool")
    def fx_rate(currency: str) -> dict[str, Any]:
        return {"currency": currency, "rate": 0.85}

    @trajdebug.step(kind="other")
    def convert(order: dict[str, Any], fx: dict[str, Any]) -> dict[str, Any]:
        amount = order["kg"] * order["eur_per_kg"] * fx["rate"]
        return {"ticket": order["ticket"], "gbp": round(amount * (fx["rate"] if planted else 1.0), 2)}

    @trajdebug.step(kind="other")
    def invoice(line: dict[str, Any]) -> str:
        return f"invoice {line['ticket']}: {line['gbp']:.2f} GBP"

    with trajdebug.run("tea-invoicing", path=str(path), task=f"invoice {ticket}") as run:
        text = invoice(convert(lookup_order(ticket), fx_rate("GBP")))
        want = ORDERS[ticket]["kg"] * ORDERS[ticket]["eur_per_kg"] * 0.85
        if f"{want:.2f}" not in text:
            run.fail(f"{ticket}: invoiced {text}, ordered {want:.2f} GBP")
    return run.run_id


@pytest.fixture
def recorded(tmp_path: Path) -> dict[str, Path]:
    """``fail.jsonl`` (the failed run of T-4), ``refs.jsonl`` (passing runs of T-1..T-3 and of T-4) and
    ``cat.jsonl`` (the two files concatenated: what a user had to write before --refs)."""
    fail, refs = tmp_path / "fail.jsonl", tmp_path / "refs.jsonl"
    for ticket in ("T-1", "T-2", "T-3", "T-4"):
        _record(refs, ticket, planted=False)
    _record(fail, "T-4", planted=True)
    cat = tmp_path / "cat.jsonl"
    cat.write_bytes(fail.read_bytes() + refs.read_bytes())
    return {"fail": fail, "refs": refs, "cat": cat}


def _runs_doc(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The analyses of an ``analyze --json`` document without their elapsed time."""
    for entry in doc["runs"]:
        entry["stats"].pop("seconds", None)
    return list(doc["runs"])


def test_refs_give_the_analysis_of_the_concatenated_file(recorded: dict[str, Path]) -> None:
    """Passing runs read from a --refs file join the references exactly as if they were in SOURCE: the
    analysis equals the concatenated file's; only SOURCE's run is analyzed; the diff hint names the file
    that holds the same-input run."""
    alone = analyze_source(recorded["fail"])
    joined = analyze_source(recorded["fail"], refs=[recorded["refs"]])
    together = analyze_source(recorded["cat"])
    assert [a.run.run_id for a in joined.analyses] == [a.run.run_id for a in alone.analyses]
    assert not alone.analyses[0].references and len(joined.analyses[0].references) == 4
    assert _runs_doc({"runs": [a.to_dict() for a in joined.analyses]}) == _runs_doc(
        {"runs": [a.to_dict() for a in together.analyses]}
    )
    assert joined.analyses[0].root_causes[0].step_id == together.analyses[0].root_causes[0].step_id
    (hint,) = joined.hints
    assert hint.startswith(f"trajdebug diff {recorded['refs']}@") and f" {recorded['fail']}@" in hint
    assert joined.twins[0] is not None and joined.twins[0].outcome == "success"


def test_the_diff_hint_stays_on_one_line_when_piped(recorded: dict[str, Path]) -> None:
    """Piped (not a terminal, 80 columns), the closing ``trajdebug diff A@x B@y`` hint is one line, whole, so it
    can be pasted back as a command however long the paths are."""
    got = CliRunner().invoke(cli, ["analyze", str(recorded["fail"]), "--refs", str(recorded["refs"])], terminal_width=80)
    assert got.exit_code == 0, got.output
    [line] = [ln for ln in got.output.splitlines() if "trajdebug diff" in ln]
    hint = line.split("compare with a passing run: ", 1)[1]
    assert len(line) > 80 and hint.startswith(f"trajdebug diff {recorded['refs']}@") and hint.count("@") == 2


def test_analyze_refs_on_the_command_line_equals_the_concatenated_file(recorded: dict[str, Path]) -> None:
    """``trajdebug analyze FAIL --refs REFS --json`` prints the analyses of ``analyze CAT --json``."""
    runner = CliRunner()
    got = runner.invoke(cli, ["analyze", str(recorded["fail"]), "--refs", str(recorded["refs"]), "--json"])
    want = runner.invoke(cli, ["analyze", str(recorded["cat"]), "--json"])
    assert got.exit_code == 0, got.output
    assert _runs_doc(json.loads(got.output)) == _runs_doc(json.loads(want.output))
    text = runner.invoke(cli, ["analyze", str(recorded["fail"]), "--refs", str(recorded["refs"])]).output
    assert "compared with 4 passing runs" in text


def test_refs_are_read_in_any_format_and_repeatable(recorded: dict[str, Path], tmp_path: Path) -> None:
    """A --refs file is read as SOURCE is, its format detected (here OTLP JSON exported from the JSONL), and
    --refs repeats: two files' runs all join the references."""
    runner = CliRunner()
    otlp = tmp_path / "refs-otlp.json"
    out = runner.invoke(cli, ["export", str(recorded["refs"]), "--to", "otlp", "-o", str(otlp)])
    assert out.exit_code == 0, out.output
    got = analyze_source(recorded["fail"], refs=[otlp]).analyses[0]
    want = analyze_source(recorded["cat"]).analyses[0]
    assert len(got.references) == len(want.references) == 4
    assert got.root_causes[0].step_id == want.root_causes[0].step_id
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    lines = recorded["refs"].read_text().splitlines(keepends=True)
    run_ids = [json.loads(line)["run_id"] for line in lines]
    split = run_ids.index(run_ids[-1])  # the last run's records start here: T-4 in a file of its own
    first.write_text("".join(lines[:split]))
    second.write_text("".join(lines[split:]))
    doc = runner.invoke(
        cli, ["analyze", str(recorded["fail"]), "--refs", str(first), "--refs", str(second), "--json"]
    )
    assert len(json.loads(doc.output)["runs"][0]["references"]) == 4


def test_report_takes_refs_the_way_analyze_does(recorded: dict[str, Path], tmp_path: Path) -> None:
    """``trajdebug report FAIL --refs REFS`` ranks as ``analyze`` does with them: the report's analysis
    names the reference runs."""
    out = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["report", str(recorded["fail"]), "--refs", str(recorded["refs"]), "-o", str(out)])
    assert res.exit_code == 0, res.output
    refs = analyze_source(recorded["fail"], refs=[recorded["refs"]]).analyses[0].references
    html = out.read_text()
    assert all(r in html for r in refs)


def test_refs_help_and_an_unreadable_refs_file(recorded: dict[str, Path], tmp_path: Path) -> None:
    """Both commands' help say what --refs does (behaviour on other inputs, values on the same input); a
    --refs file that is no trace is a one-line error naming it, which does not advise ``--from`` (it applies
    to SOURCE only) but says what to do instead."""
    for command in ("analyze", "report"):
        text = " ".join(CliRunner().invoke(cli, [command, "--help"]).output.split())
        assert "--refs FILE" in text and "behaviour" in text and "value for value" in text
    bad = tmp_path / "notes.txt"
    bad.write_text("not a trace\n")
    for command in ("analyze", "report"):
        res = CliRunner().invoke(cli, [command, str(recorded["fail"]), "--refs", str(bad)])
        assert res.exit_code != 0 and "notes.txt" in res.output and "Traceback" not in res.output
        text = " ".join(res.output.split())
        assert "pass --from" not in text and "to force one" not in text and "trajdebug import FILE" in text


def _conversation(total: int) -> list[dict[str, Any]]:
    """A tau-bench style attempt at one task: the user asks, the model looks the order up and answers."""
    call = {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"id": 5}'}}
    return [
        {"role": "user", "content": "What is the total for order 5?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"items": [10, 20, 12]}'},
        {"role": "assistant", "content": f"The total is {total}."},
    ]


@pytest.fixture
def message_logs(tmp_path: Path) -> dict[str, Path]:
    """Message logs keyed by ``task_id`` (the reader names both runs ``task-5``): the failed attempt in
    ``fail.json``, a passing attempt of the same task in ``refs.json``, and the two in one file, ``cat.json``."""
    fail, ok = {"task_id": 5, "success": False, "messages": _conversation(30)}, {
        "task_id": 5,
        "success": True,
        "messages": _conversation(42),
    }
    paths = {"fail": tmp_path / "fail.json", "refs": tmp_path / "refs.json", "cat": tmp_path / "cat.json"}
    for key, doc in (("fail", [fail]), ("refs", [ok]), ("cat", [fail, ok])):
        paths[key].write_text(json.dumps(doc))
    return paths


def test_a_refs_run_whose_id_the_source_has_is_renamed_as_in_the_concatenated_file(
    message_logs: dict[str, Path],
) -> None:
    """A passing run in --refs whose id a SOURCE run has (``task-5`` in both) is renamed as the loader renames
    the second ``task-5`` of the concatenated file (``task-5-2``), never dropped: the analysis is the concatenated
    file's, the passing run of the same input is found, and the diff hint names each run by its file and its id
    there, which ``trajdebug diff`` takes (two files' ``task-5`` are two runs, not one)."""
    joined = analyze_source(message_logs["fail"], refs=[message_logs["refs"]])
    together = analyze_source(message_logs["cat"])
    assert [a.run.run_id for a in together.analyses] == ["task-5"]
    assert joined.analyses[0].references == together.analyses[0].references == ("task-5-2",)
    assert _runs_doc({"runs": [a.to_dict() for a in joined.analyses]}) == _runs_doc(
        {"runs": [a.to_dict() for a in together.analyses]}
    )
    assert joined.twins[0] is not None and joined.twins[0].outcome == "success"
    assert joined.hints == (f"trajdebug diff {message_logs['refs']}@task-5 {message_logs['fail']}@task-5",)
    runner = CliRunner()
    good, bad = joined.hints[0].split()[2:]
    out = runner.invoke(cli, ["diff", good, bad])
    assert out.exit_code == 0, out.output
    assert "same run" not in out.output and "The total is 42." in out.output and "The total is 30." in out.output
    same = runner.invoke(cli, ["diff", bad, bad])
    assert same.exit_code != 0 and "GOOD and BAD are the same run" in same.output


def test_refs_may_be_one_path(recorded: dict[str, Path]) -> None:
    """``refs`` given as one path (a str or a Path) is that file, not its characters."""
    want = analyze_source(recorded["fail"], refs=[recorded["refs"]]).analyses[0].references
    assert len(want) == 4
    assert analyze_source(recorded["fail"], refs=str(recorded["refs"])).analyses[0].references == want
    assert analyze_source(recorded["fail"], refs=recorded["refs"]).analyses[0].references == want


def test_with_refs_no_passing_run_says_where_it_was_looked_for(recorded: dict[str, Path], tmp_path: Path) -> None:
    """With --refs and no passing run of the agent in either, the line says none was found in the source or
    --refs; without --refs, in the source."""
    other = tmp_path / "other.jsonl"
    _record(other, "T-1", planted=True)
    runner = CliRunner()
    text = " ".join(runner.invoke(cli, ["analyze", str(recorded["fail"]), "--refs", str(other)]).output.split())
    assert "compared with: no passing run of this agent in the source or --refs" in text
    alone = " ".join(runner.invoke(cli, ["analyze", str(recorded["fail"])]).output.split())
    assert "no passing run of this agent in the source (evidence" in alone


def test_passing_refs_runs_of_another_agent_are_said_to_be_skipped(recorded: dict[str, Path], tmp_path: Path) -> None:
    """Passing runs of another agent given to --refs are named as skipped, with their agent's name and count, in
    the line that says what the run was compared with (newuser64 F13: "no passing run of this agent" alone)."""
    other = tmp_path / "other.jsonl"
    for ticket in ("T-1", "T-2"):
        with trajdebug.run("restock-planner", path=str(other), task=f"restock {ticket}"):
            trajdebug.step("get_stock", kind="tool")(lambda sku: {"sku": sku, "qty": 12})("CUP-12OZ")
    runner = CliRunner()
    text = " ".join(runner.invoke(cli, ["analyze", str(recorded["fail"]), "--refs", str(other)]).output.split())
    assert (
        "compared with: no passing run of this agent in the source or --refs (evidence from this run alone);"
        " --refs held 2 passing runs of another agent, skipped (2 of restock-planner; this run is tea-invoicing:"
        " only runs of the same name are compared; to compare them, record them under one name"
        " (trajdebug.run(NAME, ...)))"
    ) in text
    both = " ".join(
        runner.invoke(cli, ["analyze", str(recorded["fail"]), "--refs", str(recorded["refs"]), "--refs", str(other)])
        .output.split()
    )
    assert "compared with 4 passing runs of this agent:" in both and "skipped (2 of restock-planner;" in both
    mine = " ".join(runner.invoke(cli, ["analyze", str(recorded["fail"]), "--refs", str(recorded["refs"])]).output.split())
    assert "another agent" not in mine


def test_the_same_input_run_of_many_failing_runs_is_found_by_one_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each failing run's passing run of the same input is looked up in the pool indexed once: the inputs are
    written out once per run (linear), not once per pair of a failing run and a reference (200 failing runs
    against 5,000 references were a million comparisons); the runs found are those of the same input."""
    from trajdebug.analysis.reference import _select
    from trajdebug.core.model import Outcome, Run, Step

    def run(rid: str, task: str, outcome: Outcome, start: int) -> Run:
        step = Step(f"{rid}.1", "lookup", "tool", input={"task": task}, output={"n": 1}, start_ns=start, end_ns=start + 1)
        return Run(rid, "shop", outcome=outcome, metadata={"task": task}, steps=(step,), start_ns=start)

    failing = [run(f"f{i}", f"task {i % 7}", "failure", 10_000 + i) for i in range(20)]
    passing = [run(f"p{i}", f"task {i % 11}", "success", i) for i in range(200)]
    written = []
    dumps = _select.json.dumps

    class Counting:
        @staticmethod
        def dumps(*args: Any, **kwargs: Any) -> str:
            written.append(1)
            return dumps(*args, **kwargs)

    monkeypatch.setattr(_select, "json", Counting)
    result = analyze_source("pool", runs=[*failing, *passing], use_references=False, model=None, guided=False)
    assert len(written) <= 2 * (len(failing) + len(passing))
    for analysis, twin in zip(result.analyses, result.twins):
        task = analysis.run.metadata["task"]
        same = [p for p in passing if p.metadata["task"] == task]
        assert twin is not None and twin.run_id == max(same, key=lambda r: r.start_ns).run_id


def test_the_unsure_verdict_names_the_same_input_run_that_ask_answers_from() -> None:
    """rev49a: of two passing runs of the same input that started together, ``--ask`` answers from the later in
    the source (`SameInput.of`); the analysis names that one first among its same-input references, so the
    unsure verdict's advice (`verdict_note`, which names the first) names the run ``--ask`` uses."""
    import dataclasses

    from trajdebug.core.model import Outcome, Run, Step
    from trajdebug.report.analysis import verdict_note

    def run(rid: str, outcome: Outcome, start: int) -> Run:
        step = Step(f"{rid}.1", "lookup", "tool", input={"task": "t"}, output={"n": 1}, start_ns=start, end_ns=start + 1)
        return Run(rid, "shop", outcome=outcome, metadata={"task": "t"}, steps=(step,), start_ns=start)

    result = analyze_source("pool", runs=[run("f1", "failure", 100), run("p1", "success", 5), run("p2", "success", 5)],
                            model=None, guided=False)
    [analysis], [twin] = result.analyses, result.twins
    assert twin is not None and twin.run_id == "p2" and set(analysis.same_input) == {"p1", "p2"}
    assert analysis.same_input[0] == "p2"
    assert "p2" in (verdict_note(dataclasses.replace(analysis, verdict="unsure")) or "")


def _support_log(path: Path, outcome: str, month: str, *, name: str | None = None) -> Path:
    """An OpenAI-style message log of one billing-support run, as a new user writes one per file."""
    doc: dict[str, object] = {
        "outcome": outcome,
        "messages": [
            {"role": "user", "content": f"I was charged twice for my {month} bill."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_invoice", "arguments": f'{{"month": "{month}"}}'}},
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": f'{{"month": "{month}", "payments": 2}}'},
            {"role": "assistant", "content": f"Refunded the duplicate {month} payment."},
        ],
    }  # fmt: skip
    if name is not None:
        doc["name"] = name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_skipped_refs_of_imported_logs_say_how_to_name_them(tmp_path: Path) -> None:
    """When the passing logs given to --refs are skipped because each imported log is named after its file, the
    note says to give the logs one top-level "name"; with that name given, they are compared (newuser65)."""
    fail = _support_log(tmp_path / "support_fail.json", "failure", "March")
    ok = _support_log(tmp_path / "support_pass.json", "success", "April")
    runner = CliRunner()
    text = " ".join(runner.invoke(cli, ["analyze", str(fail), "--refs", str(ok)]).output.split())
    assert "skipped (1 of support_pass; this run is support_fail: only runs of the same name are compared;" in text
    assert 'give each log the same top-level "name" (else its file\'s stem names its runs)' in text
    named_fail = _support_log(tmp_path / "named_fail.json", "failure", "March", name="billing-support")
    named_ok = _support_log(tmp_path / "named_pass.json", "success", "April", name="billing-support")
    named = " ".join(runner.invoke(cli, ["analyze", str(named_fail), "--refs", str(named_ok)]).output.split())
    assert "compared with 1 passing run of this agent:" in named and "skipped" not in named
