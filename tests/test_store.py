"""The SQLite store: schema, listing, filtering, loading, bad files."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trajdebug
from trajdebug.core.codec import dumps_line
from trajdebug.core.model import Run, Step
from trajdebug.core.schema import run_to_records
from trajdebug.sources.load import SourceError, load_runs
from trajdebug.store import SCHEMA_VERSION, WAL_SIZE_LIMIT, Store, StoreError


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

    def test_the_connection_reads_the_tables_with_sql_of_ones_own(self, tmp_path: Path) -> None:
        """`Store.connection()` is this thread's connection (the same one each call): SQL over ``runs`` reads
        the runs the store lists, and on a store opened read-only a write through it fails."""
        db = tmp_path / "s.db"
        ids = make_runs(db)
        with Store(db, readonly=True) as ro:
            conn = ro.connection()
            assert conn is ro.connection()
            assert sorted(str(r) for (r,) in conn.execute("SELECT run_id FROM runs")) == sorted(ids)
            with pytest.raises(sqlite3.OperationalError):
                conn.execute("DELETE FROM runs")
        assert len(Store(db).list_runs()) == 3

    def test_a_run_given_a_new_id_is_named_in_renamed_ids(self, tmp_path: Path) -> None:
        """A second run start under an id the store holds is stored under a new id, and `Store.renamed_ids`
        maps the incoming id to it (the sink's spill file writes the run under it)."""
        run = Run("same", "a", 1, 2, "success", steps=(Step("s1", "x", "tool", start_ns=1, end_ns=2),))
        db = tmp_path / "s.db"
        Store(db).write_records(run_to_records(run))
        other = Store(db)
        assert dict(other.renamed_ids) == {}
        other.write_records(run_to_records(dataclasses.replace(run, name="b")))
        new = other.renamed_ids["same"]
        assert new != "same"
        assert (other.load_run(new).name, other.load_run("same").name) == ("b", "a")

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


# The schema of version 1, as trajdebug created it before chunks: one row per record.
_V1_SCHEMA = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', start_ns INTEGER, end_ns INTEGER,
    outcome TEXT NOT NULL DEFAULT 'incomplete', failure_reason TEXT, steps INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0, note TEXT);
CREATE TABLE records (seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL);
CREATE INDEX records_run ON records (run_id, seq);
CREATE INDEX runs_start ON runs (start_ns);
"""


def _v1_store(db: Path, runs: list[Run]) -> None:
    """A store of schema version 1 holding ``runs``, written the way version 1 wrote them."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(_V1_SCHEMA)
    conn.execute("PRAGMA user_version=1")
    for run in runs:
        for r in run_to_records(run, redact=False):
            conn.execute("INSERT INTO records (run_id, type, body) VALUES (?, ?, ?)", (run.run_id, r["t"], json.dumps(r, separators=(",", ":"))))
        conn.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)",
            (run.run_id, run.name, run.start_ns, run.end_ns, run.outcome, run.failure_reason, len(run.steps), 0),
        )
    conn.close()


def _old_runs() -> list[Run]:
    steps = tuple(Step(f"s{i}", "fetch", "tool", input={"i": i}, output=f"row {i}", start_ns=10 + i, end_ns=11 + i) for i in range(3))
    lossy = {"recorder": {"lost": {"dropped": 7}}}
    return [
        Run("old-one", "agent", 10, 20, "success", steps=steps, metadata=lossy),
        Run("old-two", "agent", 30, 40, "failure", failure_reason="bad", steps=steps[:1]),
    ]


class TestLayout:
    def test_a_batch_is_one_row_holding_the_same_lines_a_jsonl_file_holds(self, tmp_path: Path) -> None:
        """A run recorded to a store and a JSONL file at once: the store holds far fewer rows than records,
        its rows hold the very lines of the file (encoded once), and the run's row counts its steps."""
        db, jl = tmp_path / "s.db", tmp_path / "r.jsonl"
        # A busy machine's writer falls behind a tight loop and, by default, drops (counted): this test is
        # about where the lines go, so the loop waits for the writer instead.
        trajdebug.configure(backpressure="block", block_timeout=30.0)
        with trajdebug.run("both", store=db, path=jl) as h:
            for i in range(3000):
                with trajdebug.step("s", kind="tool", input=f"question {i}") as s:
                    s.output = {"answer": i}
        conn = sqlite3.connect(db)
        rows = conn.execute("SELECT n, body FROM chunks ORDER BY id").fetchall()
        assert len(rows) < 100
        assert jl.read_bytes() == b"".join(bytes(body) for _, body in rows)
        assert 3002 == sum(n for n, _ in rows)
        assert [(h.run_id, 3000)] == conn.execute("SELECT run_id, steps FROM runs").fetchall()
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'records'").fetchone() is None

    def test_records_of_several_runs_in_one_write_go_to_their_runs(self, tmp_path: Path) -> None:
        """`write_records` with records of two runs (one id holding quotes and a backslash) stores each
        under its own run, counted, and both load back."""
        odd = 'run "7" \\ x'
        a = Run("plain", "a", 1, 2, "success", steps=(Step("s1", "x", "tool", start_ns=1, end_ns=2),))
        b = Run(odd, "b", 3, 4, "failure", failure_reason="no", steps=(Step("t1", "y", "llm", start_ns=3, end_ns=4),))
        recs = [r for pair in zip(run_to_records(a), run_to_records(b)) for r in pair]
        store = Store(tmp_path / "m.db")
        assert 0 == store.write_records(recs)
        assert {("plain", 1, "success"), (odd, 1, "failure")} == {(r.run_id, r.steps, r.outcome) for r in store.list_runs()}
        assert a == store.load_run("plain")
        assert b == store.load_run(odd)

    def test_the_write_ahead_log_stays_bounded(self, tmp_path: Path) -> None:
        """Writing three times the log's size limit in bounded batches leaves a log no larger than the limit
        (checkpoints run between batches and the log is cut back after them)."""
        store = Store(tmp_path / "w.db")
        line = b'{"v":1,"t":"step","run_id":"r","step_id":"%d","name":"x","kind":"tool","start_ns":1,"end_ns":2,"status":"ok","output":"' + b"z" * 16_000 + b'"}\n'
        for batch in range(3 * WAL_SIZE_LIMIT // (64 * len(line)) + 1):
            store.write_lines([line.replace(b"%d", str(batch * 64 + i).encode()) for i in range(64)])
        assert (tmp_path / "w.db-wal").stat().st_size <= WAL_SIZE_LIMIT
        assert store.list_runs()[0].steps >= 3 * WAL_SIZE_LIMIT // len(line)


def _chat_lines(turns: int, *, grow: bool, rid: str = "chat") -> list[bytes]:
    """A run's lines whose model steps take a conversation of about 5 KB, resent as it is (``grow=False``)
    or grown by a turn each call, and return an answer that differs each time."""
    msgs = [{"role": "system", "content": "Follow the refund policy and cite the article. " * 60}]
    lines = [dumps_line({"v": 1, "t": "run", "run_id": rid, "name": "chat", "start_ns": 1, "metadata": {}})]
    for i in range(turns):
        if grow or i == 0:
            msgs = [*msgs, {"role": "user", "content": f"Ticket {i}: order O-{1000 + i} " + "details " * 40}]
        rec = {"v": 1, "t": "step", "run_id": rid, "step_id": f"{i:016x}", "name": "call", "kind": "llm",
               "start_ns": 10 + i, "end_ns": 11 + i, "status": "ok", "input": {"messages": msgs},
               "output": {"id": f"chatcmpl-{i}", "content": f"Looked up order {i}."}}
        lines.append(dumps_line(rec))
    return lines


def _stored_bytes(db: Path) -> int:
    conn = sqlite3.connect(db)
    return sum(conn.execute(f"SELECT coalesce(sum(length(body)), 0) FROM {t}").fetchone()[0] for t in ("chunks", "blobs"))


class TestShared:
    @pytest.mark.parametrize("grow", [False, True])
    def test_a_resent_conversation_is_stored_about_once_and_reads_back_byte_for_byte(self, tmp_path: Path, grow: bool) -> None:
        """Model steps resending their conversation (as it is, or grown by a turn each call), written in
        batches of a few steps: the run reads back as the very lines written, and the store holds a small
        part of their bytes (each call's new turns and answer, not the whole conversation again)."""
        lines = _chat_lines(120, grow=grow)
        store = Store(tmp_path / "c.db")
        for i in range(0, len(lines), 3):
            store.write_lines(lines[i : i + 3])
        store.close()
        with Store(tmp_path / "c.db", readonly=True) as ro:
            assert lines == [line for _, line in ro._lines(ro._conn(), "chat")]
            assert 120 == len(ro.load_run("chat").steps)
        assert _stored_bytes(tmp_path / "c.db") < sum(map(len, lines)) / 10

    def test_a_recorded_chat_run_reads_the_same_from_a_store_and_a_jsonl_file(self, tmp_path: Path) -> None:
        """A decorated model call recorded to a store and a JSONL file at once, its growing conversation
        resent each call: both load equal, and the store holds less than a fifth of the file's bytes."""
        db, jl = tmp_path / "s.db", tmp_path / "r.jsonl"

        @trajdebug.step(kind="llm")
        def call(messages: list[dict[str, str]]) -> dict[str, str]:
            return {"role": "assistant", "content": f"answer {len(messages)}"}

        msgs = [{"role": "system", "content": "Be careful. " * 300}]
        with trajdebug.run("chat", store=db, path=jl):
            for i in range(40):
                msgs = [*msgs, {"role": "user", "content": f"question {i} " * 20}]
                call(msgs)
        assert load_runs(db) == load_runs(jl)
        assert _stored_bytes(db) < jl.stat().st_size / 5

    @settings(max_examples=40, deadline=None)
    @given(
        st.lists(
            st.tuples(st.integers(0, 3), st.integers(0, 3000), st.binary(max_size=40), st.integers(1, 4)),
            min_size=1,
            max_size=30,
        )
    )
    def test_any_sequence_of_lines_reads_back_as_written(self, tmp_path_factory: pytest.TempPathFactory, plan: list[tuple[int, int, bytes, int]]) -> None:
        """Step lines sharing any part of their text with the one before (cut anywhere, even inside a
        string or a multi-byte character), short and long, of two runs, in batches of any size: each run
        reads back as exactly its lines."""
        db = tmp_path_factory.mktemp("h") / "h.db"
        store = Store(db)
        text = ("Hé said: {\"input\": [1, 2]} " * 200)
        written: dict[str, list[bytes]] = {"a": [], "b": []}
        batch: list[bytes] = []
        for i, (rid_pick, cut, extra, size) in enumerate(plan):
            rid = "ab"[rid_pick % 2]
            value = text[: cut] + extra.decode("latin-1") + text[cut // 2 :] if rid_pick < 2 else "short"
            line = dumps_line({"v": 1, "t": "step", "run_id": rid, "step_id": str(i), "name": "n", "kind": "llm",
                               "start_ns": i, "end_ns": i, "status": "ok", "input": value, "output": extra.hex()})
            written[rid].append(line)
            batch.append(line)
            if len(batch) >= size:
                store.write_lines(batch)
                batch = []
        store.write_lines(batch)
        for rid, lines in written.items():
            assert lines == [line for _, line in store._lines(store._conn(), rid)]
        store.close()

    def test_a_replaced_run_leaves_no_blob_and_a_writer_never_refers_to_a_blob_gone(self, tmp_path: Path) -> None:
        """`save_run` replacing a run removes its blobs; a writer that stored the run's last blob before
        the replacement stores its next steps whole again, and the run reads back complete."""
        db = tmp_path / "r.db"
        lines = _chat_lines(10, grow=True)
        writer = Store(db)
        writer.write_lines(lines[:6])
        other = Store(db)
        replaced = Run("chat", "chat", 1, None, "incomplete", steps=(Step("s", "x", "tool", start_ns=1, end_ns=2),))
        assert "replaced" == other.save_run(replaced)
        assert 0 == sqlite3.connect(db).execute("SELECT count(*) FROM blobs").fetchone()[0]
        writer.write_lines(lines[6:])
        read = other.read(["chat"])
        assert not read.problems
        assert 1 + 5 == len(read.runs[0].steps)

    def test_a_missing_blob_is_a_problem_of_its_record_only(self, tmp_path: Path) -> None:
        """A blob lost from a damaged store: the records that need it are each a problem naming their line,
        and the run's other records still load."""
        db = tmp_path / "d.db"
        Store(db).write_lines(_chat_lines(5, grow=True))
        conn = sqlite3.connect(db)
        conn.execute("DELETE FROM blobs WHERE id = (SELECT max(id) FROM blobs)")
        conn.commit()
        read = Store(db, readonly=True).read()
        assert 4 == len(read.runs[0].steps)
        assert [6] == [p.line for p in read.problems]


class TestVersion2:
    def test_a_version_2_store_reads_as_it_is_and_is_upgraded_when_written(self, tmp_path: Path) -> None:
        """A store of schema version 2 (no blobs): read-only it loads and stays version 2; opened for
        writing it gains the blobs table, its old runs load the same, and new chat steps share blobs."""
        db = tmp_path / "v2.db"
        old = _chat_lines(6, grow=True, rid="old")
        Store(db).write_lines(old[:1])  # a run start only: no blob yet
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("DROP TABLE blobs")
        conn.execute("INSERT INTO chunks (run, n, body) VALUES (1, ?, ?)", (len(old) - 1, b"".join(old[1:])))
        conn.execute("PRAGMA user_version=2")
        conn.close()
        with Store(db, readonly=True) as ro:
            assert old == [line for _, line in ro._lines(ro._conn(), "old")]
        assert 2 == sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0]
        store = Store(db)
        assert SCHEMA_VERSION == 3 == sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0]
        new = _chat_lines(6, grow=True, rid="new")
        store.write_lines(new)
        assert old == [line for _, line in store._lines(store._conn(), "old")]
        assert new == [line for _, line in store._lines(store._conn(), "new")]
        assert 6 == sqlite3.connect(db).execute("SELECT count(*) FROM blobs WHERE run = 2").fetchone()[0]


class TestVersion1:
    def test_a_version_1_store_reads_as_it_is_when_opened_read_only(self, tmp_path: Path) -> None:
        """A store written by schema version 1 lists (with the records its runs lost) and loads read-only,
        and is left at version 1."""
        db = tmp_path / "old.db"
        runs = _old_runs()
        _v1_store(db, runs)
        with Store(db, readonly=True) as st:
            listed = {r.run_id: (r.steps, r.outcome, r.lost) for r in st.list_runs()}
            assert {"old-one": (3, "success", 7), "old-two": (1, "failure", 0)} == listed
            assert runs == st.read().runs
        assert 1 == sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0]

    def test_a_version_1_store_is_upgraded_when_written_and_keeps_its_runs(self, tmp_path: Path, cli_run: object) -> None:
        """Opened for writing, a version-1 store becomes version 2: its runs keep their records (read before
        new ones), a mark and a new run land in chunks, importing an old run again changes nothing, importing
        another version of it replaces it, and `show` reads it."""
        db = tmp_path / "old.db"
        runs = _old_runs()
        _v1_store(db, runs)
        store = Store(db)
        assert SCHEMA_VERSION == sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0]
        assert "unchanged" == store.save_run(runs[0])
        store.mark_run("old-one", "failure", "wrong total")
        with trajdebug.run("new", store=db) as h, trajdebug.step("s"):
            pass
        marked = store.load_run("old-one")
        assert (marked.outcome, marked.failure_reason, marked.steps) == ("failure", "wrong total", runs[0].steps)
        listed = {r.run_id: (r.outcome, r.lost) for r in store.list_runs()}
        assert {"old-one": ("failure", 7), "old-two": ("failure", 0), h.run_id: ("success", 0)} == listed
        changed = dataclasses.replace(runs[1], failure_reason="worse")
        assert "replaced" == store.save_run(changed)
        assert changed == store.load_run("old-two")
        shown = json.loads(cli_run("show", str(db), "--json", check=True).stdout)
        assert {"old-one", "old-two", h.run_id} == {r["run_id"] for r in shown["runs"]}


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


def test_a_batch_of_one_runs_steps_is_grouped_as_any_batch_is() -> None:
    """A batch of step lines of one run (read in one pass in C) groups, counts and skips as a batch with
    another record in front does, line for line; a line given as a bytearray is still read."""
    from trajdebug.store.lines import _group

    rid = "a" * 32
    steps = [dumps_line({"v": 1, "t": "step", "run_id": rid, "step_id": f"{i:016x}", "name": "s"}) for i in range(50)]
    other = dumps_line({"v": 1, "t": "error", "run_id": rid, "error_id": "e"})
    groups, skipped = _group(steps)
    mixed, _ = _group([other, *steps])
    assert skipped == 0 and list(groups) == [rid]
    assert groups[rid].lines == steps and groups[rid].steps == 50 == mixed[rid].steps
    assert mixed[rid].lines[1:] == steps
    # Another run's step in the batch: two groups, as before.
    two, _ = _group([*steps, steps[0].replace(rid.encode(), b"b" * 32)])
    assert [len(g.lines) for g in two.values()] == [50, 1]
    odd, _ = _group([bytearray(steps[0]), *steps[1:]])  # type: ignore[list-item]
    assert odd[rid].steps == 50


def _two_runs(store: Path) -> None:
    """A passing and a failing run of one small agent, recorded by the recorder and imported into ``store``
    (``trajdebug import`` closes the store when done; the recorder keeps its store open until the process
    exits)."""
    from click.testing import CliRunner

    from trajdebug.cli import cli

    recorded = store.with_name("recorded.jsonl")
    for qty in ("1200", "1"):
        with trajdebug.run("customs", path=recorded, task="INV-7741") as run:
            with trajdebug.step("parse_line", kind="parse", input={"line": "Probes; 1,200"}) as s:
                s.output = {"quantity": int(qty)}
            if qty == "1":
                run.fail("line values do not sum to the invoice total")
    trajdebug.flush()
    out = CliRunner().invoke(cli, ["import", str(recorded), "-o", str(store)])
    assert out.exit_code == 0, out.output


def test_a_store_only_read_is_left_without_log_files(tmp_path: Path) -> None:
    """`show`, `analyze` and `diff` only read a store: it is left as they found it, with no ``-wal`` or ``-shm``
    file beside it (nu25: every store only read kept both)."""
    from click.testing import CliRunner

    from trajdebug.cli import cli

    store = tmp_path / "runs.db"
    _two_runs(store)
    trajdebug.flush()
    logs = [store.with_name("runs.db-wal"), store.with_name("runs.db-shm")]
    assert not any(f.exists() for f in logs)
    for args in (["show", str(store)], ["analyze", str(store)], ["diff", str(store), str(store)]):
        out = CliRunner().invoke(cli, args)
        assert out.exit_code in (0, 1), out.output
        assert not any(f.exists() for f in logs), args


def test_a_reader_leaves_the_log_files_of_a_store_another_connection_holds_open(tmp_path: Path) -> None:
    """Closing a read-only store never takes the log files from under a connection still open on it (a recorder
    writing): they stay, and that connection goes on writing."""
    store = tmp_path / "runs.db"
    _two_runs(store)
    trajdebug.flush()
    with Store(store) as writer:
        writer.connection().execute("SELECT count(*) FROM runs").fetchone()
        with Store(store, readonly=True) as reader:
            assert len(reader.list_runs()) == 2
        assert store.with_name("runs.db-wal").exists()
        writer.save_run(Run("r-3", "customs", outcome="success"))
        assert len(writer.list_runs()) == 3


def test_a_store_renamed_or_removed_while_read_leaves_no_empty_store_in_its_place(tmp_path: Path) -> None:
    """A store renamed (log rotation) or removed while a reader had it open leaves no store file at its old path
    when the reader closes: no empty file that every command would then refuse to read (rev52w M3)."""
    for gone in ("renamed", "removed"):
        (tmp_path / gone).mkdir()
        store = tmp_path / gone / "runs.db"
        _two_runs(store)
        trajdebug.flush()
        reader = Store(store, readonly=True)
        assert len(reader.list_runs()) == 2
        if gone == "renamed":
            store.rename(tmp_path / gone / "archive.db")
        else:
            store.unlink()
        reader.close()
        assert not store.exists(), gone
    with Store(tmp_path / "renamed" / "archive.db", readonly=True) as moved:
        assert len(moved.list_runs()) == 2
