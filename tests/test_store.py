"""The SQLite store: schema, listing, filtering, loading, bad files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import trajdebug
from trajdebug.source import SourceError, load_runs
from trajdebug.store import SCHEMA_VERSION, Store, StoreError


def make_runs(db: Path) -> list[str]:
    ids = []
    for name, fail in (("alpha", False), ("beta", True), ("alpha", True)):
        with trajdebug.run(name, store=db) as h:
            with trajdebug.step("s", kind="tool") as s:
                s.output = name
            if fail:
                h.fail("bad")
        ids.append(h.run_id)
    return ids


class TestStore:
    def test_store_is_wal_with_versioned_schema(self, tmp_path: Path) -> None:
        """A new store uses WAL and records its schema version."""
        db = tmp_path / "s.db"
        Store(db)
        conn = sqlite3.connect(db)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION

    def test_list_filter_and_load(self, tmp_path: Path) -> None:
        """Runs are listed newest first and filtered by outcome and name."""
        db = tmp_path / "s.db"
        ids = make_runs(db)
        store = Store(db)
        assert list(reversed(ids)) == [r.run_id for r in store.list_runs()]
        assert {ids[1], ids[2]} == {r.run_id for r in store.list_runs(outcome="failure")}
        assert [ids[2]] == [r.run_id for r in store.list_runs(outcome="failure", name="alph%")]
        run = store.load_run(ids[1][:10])
        assert (run.name, run.outcome, run.failure_reason) == ("beta", "failure", "bad")
        assert store.list_runs(name="beta")[0].steps == 1

    def test_unknown_run_and_ambiguous_prefix(self, tmp_path: Path) -> None:
        """Loading a missing run id raises KeyError naming the store."""
        db = tmp_path / "s.db"
        make_runs(db)
        with pytest.raises(KeyError, match="no run 'zzz'"):
            Store(db).load_run("zzz")

    def test_newer_schema_is_refused(self, tmp_path: Path) -> None:
        """A store written by a newer schema version is a clear error."""
        db = tmp_path / "s.db"
        Store(db)
        sqlite3.connect(db).execute("PRAGMA user_version=99")
        with pytest.raises(StoreError, match="schema version 99 is not supported"):
            Store(db)

    def test_a_text_file_is_not_a_store(self, tmp_path: Path) -> None:
        """Opening a JSONL file as a store explains what it is."""
        f = tmp_path / "x.jsonl"
        f.write_text('{"v": 1}\n')
        with pytest.raises(StoreError, match="not an SQLite file"):
            Store(f)

    def test_save_run_round_trips(self, tmp_path: Path) -> None:
        """A run saved whole (an imported run) loads back equal."""
        db = tmp_path / "s.db"
        ids = make_runs(db)
        run = Store(db).load_run(ids[0])
        other = Store(tmp_path / "t.db")
        other.save_run(run)
        assert run == other.load_run(run.run_id)


class TestSource:
    def test_source_reads_store_and_jsonl_alike(self, tmp_path: Path) -> None:
        """The same run recorded to a store and a JSONL file loads equal from both."""
        db, jl = tmp_path / "s.db", tmp_path / "r.jsonl"
        with trajdebug.run("both", store=db, path=jl), trajdebug.step("s") as s:
            s.output = [1, 2]
        assert load_runs(db) == load_runs(jl)

    def test_missing_source(self, tmp_path: Path) -> None:
        """A source that does not exist is a SourceError naming it."""
        with pytest.raises(SourceError, match=r"nope\.jsonl: no such file"):
            load_runs(tmp_path / "nope.jsonl")

    def test_run_filter(self, tmp_path: Path) -> None:
        """run_id selects one run by prefix; an unknown id is an error."""
        db = tmp_path / "s.db"
        ids = make_runs(db)
        assert [ids[0]] == [r.run_id for r in load_runs(db, run_id=ids[0][:8])]
        with pytest.raises(SourceError, match="no run"):
            load_runs(db, run_id="nothing")
