"""Run ids on screen: the shortest prefix of at least 12 characters unique in the source (git's rule), never an
ambiguous one, and whole where an error lists the candidates (newuser65: ``support-lena-march`` and
``support-lena-march-ok`` both read ``support-lena``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from trajdebug.cli import cli
from trajdebug.core.shortids import short_id, unique_prefixes


MARCH, MARCH_OK = "support-lena-march", "support-lena-march-ok"


def test_prefixes_are_at_least_12_characters_and_unique() -> None:
    """Each id is cut to 12 characters when no other id shares them, else one past what it shares with its
    nearest id; an id another id starts with is shown whole."""
    got = unique_prefixes([MARCH, MARCH_OK, "0123456789abcdef00", "0123456789abcdef11", "abc", "f" * 32])
    assert got[MARCH] == MARCH and got[MARCH_OK] == "support-lena-march-"
    assert got["0123456789abcdef00"] == "0123456789abcdef0" and got["f" * 32] == "f" * 12 and got["abc"] == "abc"
    assert short_id(MARCH_OK, [MARCH]) == "support-lena-march-"
    for rid, prefix in got.items():
        assert [o for o in got if o.startswith(prefix) and o != rid] == [] or prefix == rid


def _log(path: Path, rid: str, outcome: str, month: str) -> None:
    messages = [
        {"role": "user", "content": f"I was charged twice for my {month} bill."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_invoice", "arguments": f'{{"month": "{month}"}}'}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": f'{{"month": "{month}", "payments": 1}}'},
        {"role": "assistant", "content": "You paid only once."},
    ]  # fmt: skip
    doc = {"name": "billing-support", "id": rid, "task": "duplicate charge", "outcome": outcome, "messages": messages}
    path.write_text(json.dumps(doc), encoding="utf-8")


@pytest.fixture
def lena(tmp_path: Path) -> Path:
    """A SQLite store holding two imported runs whose ids share 18 characters."""
    db = tmp_path / "imported.db"
    for rid, outcome in ((MARCH, "failure"), (MARCH_OK, "success")):
        _log(tmp_path / f"{rid}.json", rid, outcome, "March")
        res = CliRunner().invoke(cli, ["import", str(tmp_path / f"{rid}.json"), "-o", str(db)])
        assert res.exit_code == 0, res.output
    return db


def test_runs_lists_ids_that_tell_the_runs_apart(lena: Path) -> None:
    """`runs` shows each id by its unique prefix, never both as `support-lena`."""
    out = CliRunner().invoke(cli, ["runs", str(lena)]).output
    rows = [line.split()[0] for line in out.splitlines()[1:] if line.strip()]
    assert sorted(rows) == [MARCH, "support-lena-march-"], out


def test_an_ambiguous_prefix_error_lists_whole_ids(lena: Path) -> None:
    """The error for an ambiguous prefix lists each matching id whole, so a listed id can be copied back."""
    res = CliRunner().invoke(cli, ["analyze", str(lena), "--run", "support-lena"])
    assert res.exit_code != 0
    assert f"({MARCH_OK}, {MARCH})" in res.output or f"({MARCH}, {MARCH_OK})" in res.output, res.output
    assert "support-lena-march-o," not in res.output


def test_diff_and_analyze_show_unique_prefixes(lena: Path) -> None:
    """`diff`'s header and `analyze`'s compared-with line name the two runs by prefixes that each match one run,
    and the prefix shown works as --run."""
    runner = CliRunner()
    diff = runner.invoke(cli, ["diff", f"{lena}@{MARCH_OK}", f"{lena}@{MARCH}"]).output
    assert f"good support-lena-march- (success) vs bad {MARCH} (failure)" in diff, diff
    text = " ".join(runner.invoke(cli, ["analyze", str(lena), "--run", MARCH]).output.split())
    assert "compared with 1 passing run of this agent: support-lena-march-" in text, text
    again = runner.invoke(cli, ["show", str(lena), "--run", "support-lena-march-"])
    assert again.exit_code == 0 and again.output.startswith(f"run {MARCH_OK}  billing-support  success"), again.output


def test_the_ask_end_line_suggests_a_command_that_works(lena: Path) -> None:
    """The run id the --ask session shows and puts in its `answers forget` commands is the source's unique prefix,
    which `--run` accepts (it suggested `--run support-lena`, which failed as ambiguous)."""
    import trajdebug
    from trajdebug.ask import shown_run

    result = trajdebug.analyze_source(str(lena), run_id=MARCH, model=None, guided=False)
    rid = shown_run(result.analyses[0])
    assert rid == MARCH
    assert [r.run_id for r in trajdebug.load_runs(str(lena), run_id=rid)] == [MARCH]


def test_errors_names_each_run_by_its_unique_prefix(lena: Path) -> None:
    """`errors` over the whole source heads each run by its prefix unique among the source's ids, not both as
    `support-lena`."""
    out = CliRunner().invoke(cli, ["errors", str(lena)]).output
    heads = [line.split()[3] for line in out.splitlines() if line.startswith("errors of run")]
    assert sorted(heads) == [MARCH, "support-lena-march-"], out


def test_report_written_line_and_page_name_runs_by_unique_prefixes(lena: Path, tmp_path: Path) -> None:
    """The "wrote" line names the run by its unique prefix, and the page's passing run of the same input is listed
    by the prefix `analyze` shows, never cut to 12 characters."""
    html = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["report", str(lena), "--run", MARCH, "-o", str(html)])
    assert res.exit_code == 0, res.output
    assert f"run {MARCH}, failure" in res.output, res.output
    data = html.read_text(encoding="utf-8")
    assert f'"{MARCH_OK}":"support-lena-march-"' in data
    assert "slice(0, 12)" not in data and "slice(0, 8)" not in data


def test_eval_lists_labelled_runs_by_unique_prefixes(lena: Path) -> None:
    """`eval` lists a labelled run by its prefix unique among the source's ids; `label` names the run whole."""
    runner = CliRunner()
    said = runner.invoke(cli, ["label", str(lena), "--run", MARCH, "--root", "get_invoice"])
    assert said.exit_code == 0 and said.output.startswith(f"run {MARCH}: root"), said.output
    out = runner.invoke(cli, ["eval", str(lena), "--model", "none"]).output
    assert f"run {MARCH}  root" in out, out


def test_serve_pages_name_runs_by_unique_prefixes(page: Any, lena: Path) -> None:
    """The run list and the compare page show each run by its unique prefix, so the two runs never read alike."""
    from trajdebug.serve import Server

    with Server(lena, port=0) as srv:
        page.goto(srv.url)
        shown = page.locator("#runs tbody td.mono a").all_text_contents()
        assert sorted(shown) == [MARCH, "support-lena-march-"], shown
        page.goto(srv.url.replace("/?", "/compare?") if "/?" in srv.url else srv.url + "compare")
        options = " ".join(page.locator("option").all_text_contents())
        assert "support-lena-march- " in options and f"{MARCH} " in options, options
        assert page.errors == []
