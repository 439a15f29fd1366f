"""Terminal fixes that go with the report: step selection, the latest original run, replays hidden."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.builders import cancelled_sibling_run

import trajdebug
from trajdebug.cli import cli
from trajdebug.core.jsonl import write_jsonl
from trajdebug.report.text import CUT_SHORT


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


def test_runs_takes_a_source_like_every_other_command(tmp_path: Path) -> None:
    """`trajdebug runs meeting.db` lists that store, `runs file.jsonl` that file; --store still works."""
    db, jsonl = tmp_path / "meeting.db", tmp_path / "runs.jsonl"
    for target in (db, jsonl):
        for name, ok in (("sched", True), ("sched", False)):
            with trajdebug.run(name, **({"store": target} if target == db else {"path": target})) as r:
                with trajdebug.step("book", kind="tool") as s:
                    s.output = "BK-1"
                if not ok:
                    r.fail("booked the wrong day")
    from_db = json.loads(invoke("runs", str(db), "--json"))["runs"]
    assert [r["outcome"] for r in from_db] == ["failure", "success"]
    assert json.loads(invoke("runs", "--store", str(db), "--json"))["runs"] == from_db
    from_file = json.loads(invoke("runs", str(jsonl), "--outcome", "failure", "--json"))["runs"]
    assert [(r["name"], r["steps"], r["outcome"]) for r in from_file] == [("sched", 1, "failure")]
    assert "sched" in invoke("runs", str(jsonl))


@pytest.fixture
def twins(tmp_path: Path) -> Path:
    """A store of four runs, three of whose ids share the prefix ``0a1b2c3d`` (one failed)."""
    src = tmp_path / "rec.jsonl"
    for i in range(4):
        with trajdebug.run("sched", path=src) as r:
            with trajdebug.step("book", kind="tool") as s:
                s.output = f"BK-{i}"
            if i == 2:
                r.fail("booked the wrong day")
    ids = []
    for line in src.read_text().splitlines():
        rid = json.loads(line)["run_id"]
        if rid not in ids:
            ids.append(rid)
    text = src.read_text()
    for i, rid in enumerate(ids):
        text = text.replace(rid, f"0a1b2c3d{i:04x}{rid[12:]}" if i < 3 else f"ff{rid[2:]}")
    src.write_text(text)
    db = tmp_path / "twins.db"
    invoke("import", str(src), "-o", str(db))
    return db


@pytest.mark.parametrize(
    "command",
    [
        ["analyze", "{db}"],
        ["show", "{db}"],
        ["errors", "{db}"],
        ["report", "{db}", "-o", "{tmp}/r.html"],
        ["export", "{db}", "-o", "{tmp}/s.json"],
        ["mark", "{db}", "--failed", "wrong"],
    ],
    ids=lambda c: c[0],
)
def test_an_ambiguous_run_prefix_is_a_one_line_error_listing_matches(
    command: list[str], twins: Path, tmp_path: Path
) -> None:
    """`--run PREFIX` that several runs share is a one-line error naming how many and a few of them, each whole
    (a cut one could match no run: newuser65)."""
    args = [a.format(db=twins, tmp=tmp_path) for a in command]
    out = invoke(*args, "--run", "0a1b2c3d", code=1)
    assert len(out.strip().splitlines()) == 1, out
    assert "'0a1b2c3d' is ambiguous: 3 runs match" in out
    listed = out.split("match (", 1)[1].split(")", 1)[0].split(", ")
    assert sorted(len(i) for i in listed) == [32, 32, 32] and all(i.startswith("0a1b2c3d000") for i in listed)
    invoke(*args, "--run", "0a1b2c3d0002")


def test_diff_with_an_ambiguous_run_prefix_is_a_one_line_error(twins: Path) -> None:
    """`diff PREFIX OTHER` names the ambiguous prefix instead of picking one of its runs."""
    out = invoke("diff", "--store", str(twins), "0a1b2c3d", "ff", code=1)
    assert len(out.strip().splitlines()) == 1 and "is ambiguous: 3 runs match" in out


def test_analyze_source_refuses_an_ambiguous_prefix(twins: Path) -> None:
    """The library answers as the command line: an ambiguous prefix is a SourceError, not every match."""
    with pytest.raises(trajdebug.SourceError, match="ambiguous: 3 runs match"):
        trajdebug.analyze_source(twins, "0a1b2c3d")


def test_show_separates_a_long_kind_from_the_step_name(tmp_path: Path) -> None:
    """A nine-letter kind (`condition`, `retrieval`) is followed by a space before the step's name."""
    path = tmp_path / "r.jsonl"
    with trajdebug.run("t", path=path):
        with trajdebug.step("route_ticket", kind="condition") as s:
            s.output = "priority"
        with trajdebug.step("find_docs", kind="retrieval") as d:
            d.output = ["doc"]
    out = invoke("show", str(path))
    assert "condition route_ticket#" in out and "retrieval find_docs#" in out


def _passing_after_failing(tmp_path: Path) -> tuple[Path, str, str]:
    """A JSONL file with a failed run and, after it, a passing one: their ids."""
    src = tmp_path / "two.jsonl"
    with trajdebug.run("pick", path=src) as bad:
        with trajdebug.step("merge", kind="other", input={"n": 3}) as s:
            s.output = {"n": 2}
        bad.fail("total mismatch")
    with trajdebug.run("pick", path=src) as good, trajdebug.step("merge", kind="other", input={"n": 4}) as s:
        s.output = {"n": 4}
    trajdebug.flush(5)
    return src, bad.run_id, good.run_id


def test_report_without_run_writes_the_newest_failed_run_and_says_so(tmp_path: Path) -> None:
    """`report SOURCE` without --run writes the newest failed run, not a newer passing one, and its output
    line says which run it chose; with no failed run, the newest run."""
    src, bad, good = _passing_after_failing(tmp_path)
    data = json.loads(invoke("report", str(src), "-o", "r.html", "--json"))
    assert (data["run_id"], data["outcome"]) == (bad, "failure")
    out = invoke("report", str(src), "-o", "r.html")
    assert f"run {bad[:12]}, failure" in out and "the newest failed run" in out
    passing = tmp_path / "pass.jsonl"
    passing.write_text("".join(line for line in src.read_text().splitlines(keepends=True) if bad not in line))
    data = json.loads(invoke("report", str(passing), "-o", "r.html", "--json"))
    assert data["run_id"] == good
    assert "newest failed" in invoke("report", "--help")


def test_show_step_takes_a_step_as_listings_print_it(tmp_path: Path) -> None:
    """`--step search#000002`, the name and id suffix `analyze` and `show` print, selects that one call of the step."""
    path = tmp_path / "r.jsonl"
    with trajdebug.run("t", path=path):
        for city in ("Lyon", "Nice"):
            with trajdebug.step("search", kind="tool") as s:
                s.output = f"hotels in {city}"
    tree = invoke("show", str(path))
    printed = "search#" + tree.split("search#")[2][:6]
    out = invoke("show", str(path), "--step", printed)
    assert "hotels in Nice" in out and "hotels in Lyon" not in out
    invoke("show", str(path), "--step", "other#" + printed.split("#")[1], code=1)


def test_show_lists_a_sources_runs_newest_first_as_runs_does(tmp_path: Path) -> None:
    """`show SOURCE` prints every run newest first (the order of `runs`), and its help says so."""
    src, bad, good = _passing_after_failing(tmp_path)
    shown = json.loads(invoke("show", str(src), "--json"))
    assert [r["run_id"] for r in shown["runs"]] == [good, bad]
    listed = json.loads(invoke("runs", str(src), "--json"))
    assert [r["run_id"] for r in listed["runs"]] == [good, bad]
    assert "newest first" in " ".join(invoke("show", "--help").split())


def test_show_step_without_run_names_the_run_of_each_step(tmp_path: Path) -> None:
    """`show --step NAME` over several runs heads each printed step with its run's id and outcome."""
    src, bad, good = _passing_after_failing(tmp_path)
    out = invoke("show", str(src), "--step", "merge")
    assert out.index(f"run {good[:12]}") < out.index(f"run {bad[:12]}")
    assert f"run {bad[:12]}  pick  failure" in out


def test_show_marks_a_step_the_runs_failure_cut_short(tmp_path: Path) -> None:
    """`show` marks a parallel call that ended empty after the failing error as cut short by the failure (text,
    --json as a derived list beside the record, --step), and not one that returned nothing before it."""
    path = tmp_path / "r.jsonl"
    write_jsonl([cancelled_sibling_run()], path)
    lines = invoke("show", str(path)).splitlines()
    slow = next(line for line in lines if "slow#" in line)
    early = next(line for line in lines if "lookup#" in line)
    assert CUT_SHORT in slow and CUT_SHORT not in early
    [run] = json.loads(invoke("show", str(path), "--json"))["runs"]
    assert run["cut_short"] == ["slow"]
    assert all("cut_short" not in s for s in run["steps"])  # the record itself is unchanged
    [step] = json.loads(invoke("show", str(path), "--step", "slow", "--json"))["steps"]
    assert step["cut_short"] is True and step["status"] == "ok"
    assert CUT_SHORT in invoke("show", str(path), "--step", "slow")
    [early_step] = json.loads(invoke("show", str(path), "--step", "lookup", "--json"))["steps"]
    assert early_step["cut_short"] is False


def test_show_marks_a_recorded_cancellation_as_interrupted(tmp_path: Path) -> None:
    """A task the recorder saw cancelled (CancelledError: status error, ``interrupted``) shows as interrupted,
    not as the agent's own error."""
    import asyncio

    path = tmp_path / "r.jsonl"

    async def agent() -> None:
        async def boom() -> None:
            with trajdebug.step("fetch", kind="tool"):
                await asyncio.sleep(0.01)
                raise ValueError("bad page")

        async def slow() -> None:
            with trajdebug.step("slow", kind="tool"):
                await asyncio.sleep(5)

        async with asyncio.TaskGroup() as tg:
            tg.create_task(boom())
            tg.create_task(slow())

    with pytest.raises(ExceptionGroup), trajdebug.run("parallel", path=path):
        asyncio.run(agent())
    slow_line = next(line for line in invoke("show", str(path)).splitlines() if "slow#" in line)
    assert "interrupted (CancelledError)" in slow_line and "✗" not in slow_line


def _tool_loop_run() -> trajdebug.Run:
    """An OpenAI-style tool loop: the tool's result goes back to the model as JSON text in ``messages`` (no
    tracked edge), and the model's answer names a customer the tool never listed."""
    from tests.builders import step

    from trajdebug.core.model import Run

    tickets = '{"tickets": [{"id": "T-1001", "customer": "Okafor"}, {"id": "T-1003", "customer": "Brennan"}]}'
    steps = (
        step("s1", "receive", "agent", 1, {"customer": "Moreau"}, {"customer": "Moreau"}),
        step("s2", "list_tickets", "tool", 2, {"queue": "billing"}, tickets, "s1"),
        step("s3", "call_model", "llm", 3,
             {"messages": [{"role": "user", "content": "close Moreau's ticket"}, {"role": "tool", "content": tickets}]},
             "NOT_FOUND: no open ticket for Moreau", "s1"),
    )
    return Run("r-loop", "closer", 0, 10, "failure", "NOT_FOUND: no open ticket for Moreau", steps=steps)


def test_show_step_lists_the_inferred_edges_analyze_uses_and_no_infer_hides_them(tmp_path: Path) -> None:
    """`show --step` lists the dependencies `analyze` infers from content (a tool result sent back as JSON text),
    marked inferred with their confidence, as its help says; --no-infer shows only the recorded ones, and --json
    lists them only when --infer asks (nu32 finding 7)."""
    path = tmp_path / "loop.jsonl"
    run = _tool_loop_run()
    write_jsonl([run], path)
    analyzed = trajdebug.analyze(run, model=None).run.step_map()["s3"]
    inferred = [d for d in analyzed.deps if d.origin == "inferred"]
    assert any(d.step_id == "s2" for d in inferred)
    out = invoke("show", str(path), "--step", "call_model")
    assert "← list_tickets#s2 (data, inferred" in out and "← receive#s1" in out
    assert "list_tickets" not in invoke("show", str(path), "--step", "call_model", "--no-infer").split("depends on")[1]
    [plain] = json.loads(invoke("show", str(path), "--step", "call_model", "--json"))["steps"]
    assert [d["step_id"] for d in plain["deps"]] == ["s1"]
    [full] = json.loads(invoke("show", str(path), "--step", "call_model", "--json", "--infer"))["steps"]
    assert "s2" in [d["step_id"] for d in full["deps"]]


def test_show_step_shows_the_recorded_step_when_the_analysis_cannot_read_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the analysis that adds the inferred edges raises, `show --step` still prints the step as recorded and says on
    stderr, in one line, that the inferred edges are not shown."""
    import trajdebug.analysis as analysis_pkg

    path = tmp_path / "loop.jsonl"
    write_jsonl([_tool_loop_run()], path)

    def broken(*_args: object, **_kwargs: object) -> object:
        raise RuntimeError("cannot read this run")

    monkeypatch.setattr(analysis_pkg, "analyzed_run", broken)  # what `show --step` reads the edges with
    result = CliRunner().invoke(cli, ["show", str(path), "--step", "call_model"])
    assert result.exit_code == 0, result.output
    assert "← receive#s1" in result.stdout and "list_tickets#s2 (data, inferred" not in result.stdout
    assert "inferred edges not shown (RuntimeError: cannot read this run)" in result.stderr


LONG_NOTE = "N" * 70 + " and the end of a long note"
"""A value longer than 80 columns, the width rich gives a console that is not a terminal."""


def _long_value_run(path: Path) -> None:
    """A failed run whose first step returns a value longer than 80 columns, which the next step was given."""
    with trajdebug.run("notes", path=path) as run:
        with trajdebug.step("fetch", kind="tool", input={"q": "a"}) as f:
            f.output = {"note": LONG_NOTE}
        with trajdebug.step("summarize", kind="llm", input={"note": LONG_NOTE}) as s:
            s.output = "short"
        run.fail("the summary 'short' lost the note")


def test_show_step_piped_prints_a_value_longer_than_the_width_whole(tmp_path: Path) -> None:
    """`show --step` piped prints a value longer than 80 columns on one line, whole (nu63: it was cut at 80
    columns with no marker)."""
    path = tmp_path / "r.jsonl"
    _long_value_run(path)
    out = invoke("show", str(path), "--step", "fetch")
    assert any(line.strip() == f'"note": "{LONG_NOTE}"' for line in out.splitlines()), out


def test_show_step_names_the_field_a_relayed_edge_came_through_with_one_via() -> None:
    """A dependency the lineage relays through a state field (its key ``via FIELD``) reads "via FIELD" once."""
    from trajdebug.core.model import Dependency, Step
    from trajdebug.report.text import describe_dep

    steps = {"p": Step("p", "parse_request", "other")}
    said = describe_dep(Dependency("p", "data", "inferred", 0.72, "via shipment"), steps)
    assert said.endswith("(data, inferred 0.72 via shipment)")
    assert describe_dep(Dependency("p", "data", "inferred", 0.5, "messages[0].content"), steps).endswith(
        "via messages[0].content)"
    )


@pytest.mark.parametrize("command", [["analyze", "{db}"], ["report", "{db}", "-o", "{tmp}/r.html"], ["show", "{db}"]])
def test_a_run_id_no_run_has_is_an_error_listing_a_few_runs_and_the_command_listing_all(
    command: list[str], twins: Path, tmp_path: Path
) -> None:
    """`--run ID` that no run has is a one-line error naming a few of the source's run ids, newest first, and
    `trajdebug runs SOURCE` (nu63: "no run 'zzz'" alone)."""
    args = [a.format(db=twins, tmp=tmp_path) for a in command]
    out = invoke(*args, "--run", "zzz", code=1)
    assert len(out.strip().splitlines()) == 1, out
    assert "no run 'zzz'; its runs, newest first: " in out and " more (`trajdebug runs " in out
    assert out.count("0a1b2c3d") + out.count("ff") >= 3


def _shop(tmp_path: Path) -> tuple[Path, list[str]]:
    from tests.builders import recorded_shop_store

    store = tmp_path / "shop.db"
    return store, recorded_shop_store(store)


def _listed(*args: str) -> list[str]:
    return [r["run_id"] for r in json.loads(invoke("runs", *args, "--json"))["runs"]]


def test_runs_filters_by_tag_as_serve_does(tmp_path: Path) -> None:
    """--tag takes an item of the tags list, a metadata key or key=value, as serve's tag box."""
    store, (dan, eve1, eve2) = _shop(tmp_path)
    assert _listed(str(store), "--tag", "refund") == [dan]
    assert _listed(str(store), "--tag", "status") == [eve2, eve1]
    assert _listed(str(store), "--tag", "channel=chat") == [eve2, eve1, dan]
    assert _listed(str(store), "--tag", "staging") == [eve2]


def test_runs_filters_by_user_and_serve_does_too(tmp_path: Path) -> None:
    """--user eve lists eve's runs (metadata user_id); serve's `?user=eve` is no longer ignored."""
    import urllib.request

    from trajdebug.serve import Server

    store, (_, eve1, eve2) = _shop(tmp_path)
    assert _listed(str(store), "--user", "eve") == [eve2, eve1]
    with Server(store, port=0) as srv, urllib.request.urlopen(srv.url.rstrip("/") + "/api/runs?user=eve") as res:
        assert [r["run_id"] for r in json.loads(res.read())["runs"]] == [eve2, eve1]


def test_runs_session_lists_its_turns_oldest_first(tmp_path: Path) -> None:
    """--session s-eve-1 lists that session's two turns in the order they were taken."""
    store, (_, eve1, eve2) = _shop(tmp_path)
    assert _listed(str(store), "--session", "s-eve-1") == [eve1, eve2]


def test_runs_name_is_a_substring_as_in_serve(tmp_path: Path) -> None:
    """--name desk lists support-desk's runs (a substring, any case), where SQL LIKE listed none."""
    store, ids = _shop(tmp_path)
    assert sorted(_listed(str(store), "--name", "DESK")) == sorted(ids)
    assert "contains" in invoke("runs", "--help")


def test_runs_json_has_start_session_user_tokens_cost_and_reason(tmp_path: Path) -> None:
    """Each run in --json has its start time, session, user, tags, tokens, cost and failure reason."""
    store, (dan, _, _) = _shop(tmp_path)
    (row,) = [r for r in json.loads(invoke("runs", str(store), "--json"))["runs"] if r["run_id"] == dan]
    assert row["session"] == "s-dan-1" and row["user"] == "dan" and row["tags"] == ["prod", "refund"]
    assert row["tokens"] == 150 and row["cost"] > 0 and row["started"][:2] == "20"
    assert row["failure_reason"].startswith("ValueError: cannot read the amount")


def test_runs_table_shows_the_failure_reason_and_the_totals(tmp_path: Path) -> None:
    """The list shows why a run failed, its user and tokens; --totals ends with runs, failed, tokens and cost."""
    store, _ = _shop(tmp_path)
    out = invoke("runs", str(store), "--totals", "--limit", "1")
    assert "ValueError: cannot read the amount" not in out.splitlines()[1]  # the newest run (eve's) passed
    assert "total: 3 runs, 1 failed, 450 tokens, $" in out
    out = invoke("runs", str(store), "--user", "dan")
    assert "ValueError: cannot read the amount '1.299,00'" in out and " dan " in out and "150" in out
    data = json.loads(invoke("runs", str(store), "--totals", "--json"))
    assert data["totals"]["runs"] == 3 and data["totals"]["failed"] == 1 and data["totals"]["tokens"] == 450
