"""Terminal fixes that go with the report: step selection, the latest original run, replays hidden."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import trajdebug
from trajdebug.cli import cli


def invoke(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def test_runs_hides_replays_and_reference_runs_unless_all() -> None:
    """After a verified demo, `runs` lists the demo run alone and says how many it hid; --all lists them."""
    demo = json.loads(invoke("demo", "--json", "--no-report"))
    shown = json.loads(invoke("runs", "--json"))
    assert [r["run_id"] for r in shown["runs"]] == [demo["run"]["run_id"]]
    assert shown["hidden"] > 0
    everything = json.loads(invoke("runs", "--all", "--json"))
    assert len(everything["runs"]) == 1 + shown["hidden"]
    assert "hidden: replays and reference runs" in invoke("runs")


def test_show_and_errors_default_to_the_latest_original_run() -> None:
    """Plain `show` and `errors` after a verified demo show the demo run, not its last replay."""
    demo = json.loads(invoke("demo", "--json", "--no-report"))
    shown = json.loads(invoke("show", "--json"))
    assert [r["run_id"] for r in shown["runs"]] == [demo["run"]["run_id"]]
    errors = json.loads(invoke("errors", "--json"))
    assert [r["run_id"] for r in errors["runs"]] == [demo["run"]["run_id"]]


def test_show_step_prints_what_a_step_received_and_returned() -> None:
    """`show --step write_sql` prints its prompt inputs, the SQL it wrote and where that went."""
    invoke("demo", "--no-verify", "--no-report")
    out = invoke("show", "--step", "write_sql")
    assert "CREATE TABLE orders" in out  # input: the schema
    assert "SELECT region, quarter" in out  # output: the SQL
    assert "used by" in out and "run_sql#" in out
    data = json.loads(invoke("show", "--step", "write_sql", "--json"))
    (step,) = data["steps"]
    assert step["output"].startswith("SELECT") and step["used_by"][0]["kind"] == "data"


def test_show_step_by_the_digits_shown_after_the_hash(tmp_path: Path) -> None:
    """The id suffix `show` prints (#000002) selects that step; an unknown selector is a one-line error."""
    path = tmp_path / "r.jsonl"
    with trajdebug.run("t", path=path):
        with trajdebug.step("a", kind="tool") as a:
            a.output = "alpha"
        with trajdebug.step("b", kind="tool") as b:
            b.output = "beta"
    tree = invoke("show", str(path))
    suffix = tree.split("b#", 1)[1][:6]
    assert "beta" in invoke("show", str(path), "--step", suffix)
    out = invoke("show", str(path), "--step", "nope", code=1)
    assert "no step 'nope'" in out and len(out.strip().splitlines()) == 1


def test_show_io_prints_every_input_and_output_with_controls_escaped(tmp_path: Path) -> None:
    """`show --io` prints each step's input and output; a terminal escape in a value is shown, not sent."""
    path = tmp_path / "r.jsonl"
    with trajdebug.run("t", path=path), trajdebug.step("fetch", kind="tool", input={"url": "u"}) as s:
        s.output = "page \x1b[31mred\x1b[0m"
    out = invoke("show", str(path), "--io")
    assert '"url": "u"' in out
    assert "page \\x1b[31mred" in out and "\x1b[31m" not in out
