"""Tests of the Parquet export (`trajdebug export --to parquet`) and the DuckDB queries over it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
from click.testing import CliRunner

import trajdebug
from trajdebug.cli import cli
from trajdebug.fleet import run_fleet
from trajdebug.fleet.parquet import COLUMNS, failure_rates, group_counts, iter_dataset, parts, write_dataset
from trajdebug.store import Store


def test_parquet_dataset_round_trips_every_run(tmp_path: Path, fleet_store: Path) -> None:
    """Runs written as Parquet parts read back equal to the store's, steps, errors and dependencies included."""
    with Store(fleet_store) as st:
        runs = [st.load_run(r) for r in st.run_ids()]
    counts = write_dataset(runs, tmp_path / "ds", part_size=100)
    assert parts(tmp_path / "ds") == ["part-00000", "part-00001", "part-00002"]
    assert counts["runs"] == len(runs) and counts["steps"] == sum(len(r.steps) for r in runs)
    assert counts["dependencies"] == sum(len(s.deps) for r in runs for s in r.steps) > 0
    assert list(iter_dataset(tmp_path / "ds")) == runs


def test_parquet_files_follow_the_documented_schema(tmp_path: Path, fleet_store: Path) -> None:
    """Every table's columns and types are the ones `COLUMNS` (and docs/format.md) list."""
    r = CliRunner().invoke(
        cli, ["export", str(fleet_store), "--to", "parquet", "-o", str(tmp_path / "ds"), "--analyze"]
    )
    assert r.exit_code == 0, r.output
    manifest = json.loads((tmp_path / "ds" / "_trajdebug.json").read_text())
    assert manifest["format"] == "trajdebug-parquet" and "analyses" in manifest["tables"]
    doc = (
        (Path(__file__).resolve().parent.parent / "docs" / "format.md")
        .read_text()
        .split("## Parquet dataset")[1]
    )
    for table, cols in COLUMNS.items():
        schema = pq.read_schema(tmp_path / "ds" / table / "part-00000.parquet")
        # A map's type names its field once read back ("map<string, string ('metadata')>").
        assert [(f.name, str(f.type).replace(f" ('{f.name}')", "")) for f in schema] == [
            (
                c,
                {
                    "string": "string",
                    "int64": "int64",
                    "int32": "int32",
                    "float64": "double",
                    "bool": "bool",
                    "timestamp": "timestamp[ns, tz=UTC]",
                    "map": "map<string, string>",
                    "list": "list<element: string>",
                }[t],
            )
            for c, t in cols
        ]
        for c, _ in cols:
            assert f"`{c}`" in doc, f"docs/format.md does not document {table}.{c}"


def test_duckdb_queries_agree_with_the_python_fleet(tmp_path: Path, fleet_store: Path) -> None:
    """Failure rates and group counts computed by DuckDB over the dataset equal the fleet job's."""
    CliRunner().invoke(
        cli, ["export", str(fleet_store), "--to", "parquet", "-o", str(tmp_path / "ds"), "--analyze"]
    )
    report = run_fleet([fleet_store], workers=1, keep_findings=True)
    by_sql = {g["group_id"]: g["count"] for g in group_counts(tmp_path / "ds")}
    assert by_sql == report.groups.counts()
    rates = {r["name"]: r for r in failure_rates(tmp_path / "ds")}
    names = Counter(f.name for f in report.findings or [])
    assert {k: v["failed"] for k, v in rates.items() if v["failed"]} == dict(names)
    assert sum(v["runs"] for v in rates.values()) == report.runs


def test_export_to_parquet_needs_a_folder(fleet_store: Path) -> None:
    """Parquet is a dataset folder: writing it to stdout is refused with a one-line error."""
    r = CliRunner().invoke(cli, ["export", str(fleet_store), "--to", "parquet"])
    assert r.exit_code != 0 and "-o DIR" in r.output


def test_parquet_carries_session_tokens_and_cost(tmp_path: Path) -> None:
    """Runs have their session and summed tokens and cost; LLM steps their own model, tokens and cost."""
    import trajdebug
    from trajdebug.fleet.parquet import connect
    from trajdebug.usage import run_usage

    path = tmp_path / "u.db"
    with trajdebug.run("agent", store=path, session="s-9"):
        for p in (100, 300):
            with trajdebug.step("ask", kind="llm") as s:
                s.usage(model="gpt-4o-mini", prompt_tokens=p, completion_tokens=7)
        with trajdebug.step("tool", kind="tool"):
            pass
    trajdebug.flush()
    [run] = Store(path).load_runs()
    write_dataset([run], tmp_path / "ds")
    con = connect(tmp_path / "ds")
    assert con.execute("SELECT session, total_tokens, cost FROM runs").fetchone() == (
        "s-9",
        414,
        run_usage(run).cost,
    )
    steps = con.execute("SELECT kind, prompt_tokens, model FROM steps ORDER BY seq").fetchall()
    assert steps == [("llm", 100, "gpt-4o-mini"), ("llm", 300, "gpt-4o-mini"), ("tool", None, None)]


def test_times_are_timestamps_metadata_a_map_and_key_value_tags_kept_whole(tmp_path: Path) -> None:
    """Runs and steps carry timestamp columns, metadata is a string map and tags={"k": "v"} survive whole."""
    import trajdebug
    from trajdebug.fleet.parquet import connect

    path = tmp_path / "t.db"
    with trajdebug.run("agent", store=path, tags={"team": "search", "tier": 2}, task="find it"), trajdebug.step("s"):
        pass
    trajdebug.flush()
    [run] = Store(path).load_runs()
    assert run.metadata["tags"] == {"team": "search", "tier": 2}
    write_dataset([run], tmp_path / "ds")
    schema = pq.read_schema(tmp_path / "ds" / "runs" / "part-00000.parquet")
    assert str(schema.field("start_time").type) == "timestamp[ns, tz=UTC]"
    con = connect(tmp_path / "ds")
    got = con.execute(
        "SELECT epoch_ns(start_time), metadata['task'], tags FROM runs"
    ).fetchone()
    assert got[0] == run.start_ns and got[1] in ("find it", ["find it"]) and sorted(got[2]) == ["team=search", "tier=2"]
    assert con.execute("SELECT epoch_ns(end_time) FROM steps").fetchone()[0] == run.steps[0].end_ns
    assert list(iter_dataset(tmp_path / "ds")) == [run]


@trajdebug.step(kind="tool")
def parse_amount(text: str) -> float:
    return float(text.replace(",", "."))


def test_parquet_carries_scores_and_reads_them_back_with_comments_redacted(tmp_path: Path) -> None:
    """`export --to parquet` writes a scores table (the run's and a step's, as `runs --json` gives them) that
    pyarrow reads back and `read_part` rebuilds the run's scores from; a key in a comment stays redacted."""
    secret = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"
    db = tmp_path / "runs.db"
    with trajdebug.run("refund", store=db) as h:
        parse_amount("1,00")
    trajdebug.score("helpfulness", 0.3, store=db, run=h.run_id, by="dan", comment=f"vague {secret}")
    trajdebug.score("correct", False, store=db, run=h.run_id, step="parse_amount", source="code")
    r = CliRunner().invoke(cli, ["export", str(db), "--to", "parquet", "-o", str(tmp_path / "ds")])
    assert r.exit_code == 0, r.output
    listed = json.loads(CliRunner().invoke(cli, ["runs", str(db), "--json"]).output)["runs"][0]["scores"]
    rows = pq.read_table(tmp_path / "ds" / "scores" / "part-00000.parquet").to_pylist()
    assert [(x["name"], json.loads(x["value_json"]), x["value_number"], x["source"], x["by"], x["comment"], x["step_id"], x["at_ns"]) for x in rows] == [
        (s["name"], s["value"], s["value"] if s["name"] == "helpfulness" else None, s["source"], s["by"], s["comment"], s["step_id"], s["at_ns"])
        for s in listed
    ]  # fmt: skip
    assert rows[1]["step_id"] is not None and "vague" in (rows[0]["comment"] or "")
    [back] = list(iter_dataset(tmp_path / "ds"))
    assert back.scores == Store(db).load_run(h.run_id).scores and len(back.scores) == 2
    assert all(secret.encode() not in f.read_bytes() for f in (tmp_path / "ds").rglob("*.parquet"))
