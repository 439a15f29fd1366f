"""Full-text search in step inputs, outputs and errors: the function, `runs --search` and serve's `q=`."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from click.testing import CliRunner
from tests.builders import recorded_shop_store

import trajdebug
from trajdebug.cli import cli
from trajdebug.search import search_run
from trajdebug.serve import Catalog, Query, Server
from trajdebug.store import Store


def _runs(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["runs", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_search_run_names_each_step_holding_a_word_and_where(tmp_path: Path) -> None:
    """A word of a step's output is found there, with the step, the place and the text around it."""
    dan, _, _ = recorded_shop_store(tmp_path / "s.db")
    run = Store(tmp_path / "s.db").load_run(dan)
    found = search_run(run, "1.299,00")
    assert found is not None
    assert [(m.name, m.where) for m in found] == [("lookup_order", "output"), ("parse_amount", "input")]
    assert "1.299,00" in found[0].excerpt


def test_search_run_needs_every_word_in_the_run() -> None:
    """A run holding one word of two does not match; any case matches."""
    from trajdebug.core.model import Run, Step

    r = Run("r", "t", steps=(Step("s1", "a", "tool", input={"q": "Laptop"}, output="ok"),))
    assert search_run(r, "laptop") is not None
    assert search_run(r, "laptop refund") is None


def test_runs_search_lists_only_runs_holding_the_text_and_says_which_step(tmp_path: Path) -> None:
    """`runs --search laptop` lists dan's run alone, naming the steps whose input held the word."""
    store = tmp_path / "s.db"
    dan, _, _ = recorded_shop_store(store)
    data = _runs(str(store), "--search", "laptop")
    assert [r["run_id"] for r in data["runs"]] == [dan]
    assert {m["name"] for m in data["runs"][0]["matched"]} == {"user_message", "answer"}
    assert all(m["where"] == "input" for m in data["runs"][0]["matched"])
    text = CliRunner().invoke(cli, ["runs", str(store), "--search", "laptop"]).output
    assert "user_message#" in text and "(input)" in text


def test_runs_search_reads_a_jsonl_file_as_it_reads_a_store(tmp_path: Path) -> None:
    """The same search over the runs written to a JSONL file finds the same run."""
    store = tmp_path / "s.db"
    dan, _, _ = recorded_shop_store(store)
    path = tmp_path / "s.jsonl"
    from trajdebug.core.jsonl import write_jsonl

    write_jsonl(Store(store).load_runs(), path)
    assert [r["run_id"] for r in _runs(str(path), "--search", "A103 laptop")["runs"]] == [dan]


def test_a_redacted_secret_is_never_found_by_its_value(tmp_path: Path) -> None:
    """A password the recorder redacted cannot be searched for; the run is found by its other words."""
    store = tmp_path / "s.db"
    with trajdebug.run("login", store=str(store)) as h, trajdebug.step(
        "login", kind="tool", input={"user": "dan", "password": "hunter2hunter2"}
    ) as s:
        s.output = "ok"
    assert _runs(str(store), "--search", "hunter2hunter2")["runs"] == []
    assert [r["run_id"] for r in _runs(str(store), "--search", "dan")["runs"]] == [h.run_id]
    assert Catalog(store).query(Query(text="hunter2hunter2")) == []


def test_serve_search_finds_a_word_of_a_step_input_and_names_the_step(tmp_path: Path) -> None:
    """serve's `q=A103` (only in inputs and outputs) lists dan's run, and /api/runs says which steps matched."""
    store = tmp_path / "s.db"
    dan, _, _ = recorded_shop_store(store)
    with Server(store, port=0) as srv:
        base = srv.url.rstrip("/")
        with urllib.request.urlopen(base + "/api/runs?q=A103", timeout=10) as res:
            rows = json.loads(res.read())["runs"]
        with urllib.request.urlopen(base + "/?q=A103", timeout=10) as res:
            page = res.read().decode()
    assert [r["run_id"] for r in rows] == [dan]
    assert [(m["name"], m["where"]) for m in rows[0]["matched"]][:2] == [("user_message", "input"), ("answer", "input")]
    assert 'class="matched"' in page and "lookup_order (input)" in page
