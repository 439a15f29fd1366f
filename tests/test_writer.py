"""The background writer: what is on disk after SIGKILL, losses counted under load, no stall on a locked
store, back-pressure, steps after a run's end, sinks that fail."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import trajdebug
from trajdebug.core.jsonl import read_jsonl
from trajdebug.record import CONFIG, MemorySink
from trajdebug.record.sinks import JsonlSink, PartialWrite
from trajdebug.store import Store


ROOT = Path(__file__).resolve().parents[1]

PRINTING_CHILD = textwrap.dedent(
    """
    import sys, time, trajdebug
    target = sys.argv[1]
    sink = {"path": target} if target.endswith(".jsonl") else {"store": target}
    with trajdebug.run("killed", **sink):
        for i in range(100_000):
            with trajdebug.step("work", kind="tool", input={"i": i}) as s:
                s.output = {"i": i, "text": "x" * 100}
                time.sleep(0.002)
            print(s.id, time.monotonic(), flush=True)
    """
)


def _on_disk(target: Path) -> set[str]:
    if target.suffix == ".jsonl":
        runs = read_jsonl(target).runs
    else:
        with Store(target, readonly=True) as st:
            runs = st.read().runs
    return {s.step_id for r in runs for s in r.steps if s.name == "work"}


@pytest.mark.slow
class TestSigkill:
    @pytest.mark.parametrize("suffix", [".jsonl", ".db"])
    def test_every_step_finished_a_flush_interval_before_the_kill_is_on_disk(self, tmp_path: Path, suffix: str) -> None:
        """A child prints each step id once the step has finished; after SIGKILL at a random moment, every
        step printed more than the flush interval before the kill is on disk (three kills per sink)."""
        rng = random.Random(12)
        for trial in range(3):
            target = tmp_path / f"run{trial}{suffix}"
            env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
            with subprocess.Popen(
                [sys.executable, "-c", PRINTING_CHILD, str(target)], stdout=subprocess.PIPE, text=True, env=env
            ) as proc:
                assert proc.stdout is not None
                printed: list[tuple[str, float]] = []
                first = proc.stdout.readline().split()
                printed.append((first[0], float(first[1])))
                deadline = time.monotonic() + rng.uniform(0.3, 0.8)
                while time.monotonic() < deadline:
                    sid, t = proc.stdout.readline().split()
                    printed.append((sid, float(t)))
                killed_at = time.monotonic()
                proc.send_signal(signal.SIGKILL)
                rest = proc.stdout.read()  # lines printed before the kill landed
                proc.wait()
            printed += [(line.split()[0], float(line.split()[1])) for line in rest.splitlines() if len(line.split()) == 2]
            on_disk = _on_disk(target)
            due = [sid for sid, t in printed if t < killed_at - CONFIG.flush_interval]
            assert len(due) > 50
            assert [] == [sid for sid in due if sid not in on_disk]


class TestLoad:
    def test_a_tight_loop_counts_every_drop_in_the_stored_run(self, tmp_path: Path, cli_run: Any) -> None:
        """50,000 steps as fast as possible through a 1,000-record buffer: written + dropped = produced, the
        drop count is in the run's end record, and `runs`/`show` do not call the run plain success."""
        db = tmp_path / "load.db"
        trajdebug.configure(max_buffer=1000)
        with trajdebug.run("tight", store=db) as h:
            for i in range(50_000):
                with trajdebug.step("s", kind="tool") as s:
                    s.output = i
        run = h.load()
        dropped = run.metadata["recorder"]["lost"]["dropped"]
        assert 50_000 == len(run.steps) + dropped
        assert dropped == h.stats["dropped"] > 0
        runs = json.loads(cli_run("runs", "--store", str(db), "--json", check=True).stdout)["runs"]
        assert [dropped] == [r["lost"] for r in runs]
        shown = cli_run("show", str(db), check=True).stdout.decode()
        assert f"success, {dropped:,} records lost" in shown
        listed = cli_run("runs", "--store", str(db), check=True).stdout.decode()
        assert f"{dropped:,} lost" in listed

    def test_block_backpressure_loses_nothing(self) -> None:
        """With backpressure="block" the agent waits for room instead of dropping: every step arrives."""
        trajdebug.configure(max_buffer=200, backpressure="block", block_timeout=30.0)
        sink = MemorySink()
        with trajdebug.run("blocked", sinks=[sink]) as h:
            for i in range(20_000):
                with trajdebug.step("s") as s:
                    s.output = i
        assert 0 == h.losses["lost"]
        assert 20_000 == len(h.load().steps)

    def test_snapshot_bytes_waiting_for_the_writer_are_bounded(self) -> None:
        """Past max_buffer_bytes of queued snapshots new steps are dropped and counted, not kept in memory."""
        trajdebug.configure(max_buffer_bytes=200_000, flush_interval=60.0)
        sink = MemorySink()
        big = {"blob": "z" * 10_000}
        # Holding the writer's condition keeps it from running: everything queues.
        with trajdebug.run("bytes", sinks=[sink]) as h, trajdebug.record.writer.WRITER._cond:
            for _ in range(100):
                with trajdebug.step("s") as s:
                    s.output = big
            queued = len(h._queue)
        assert queued < 30
        assert h.stats["dropped"] > 0
        assert 100 == len(h.load().steps) + h.stats["dropped"]


class TestLockedStore:
    def test_the_agent_finishes_while_the_store_is_locked_and_nothing_is_lost(self, tmp_path: Path) -> None:
        """Another process holds the store's write lock until the agent's run block has exited: the block
        exits anyway (it never waits on the lock), and once the lock is released all 100 steps are written."""
        db = tmp_path / "locked.db"
        Store(db).close()
        released = threading.Event()
        agent_done = threading.Event()
        order: list[str] = []

        def hold() -> None:
            conn = sqlite3.connect(db, isolation_level=None)
            conn.execute("BEGIN EXCLUSIVE")
            locked.set()
            agent_done.wait(20)  # an agent blocked on the lock would hold this up to the timeout
            order.append("released" if agent_done.is_set() else "timed out")
            conn.execute("COMMIT")
            conn.close()
            released.set()

        locked = threading.Event()
        holder = threading.Thread(target=hold)
        holder.start()
        locked.wait(5)
        with trajdebug.run("patient", store=db) as h:
            for i in range(100):
                with trajdebug.step("s", kind="tool") as s:
                    s.output = i
        order.append("agent exited")
        agent_done.set()
        holder.join()
        assert ["agent exited", "released"] == order
        assert trajdebug.record.flush(10)
        with Store(db, readonly=True) as st:
            assert 100 == len(st.load_run(h.run_id).steps)

    def test_a_store_on_a_read_only_file_system_names_the_problem_and_the_agent_goes_on(
        self, tmp_path: Path, readonly: Callable[[Path], list[str]]
    ) -> None:
        """Recording into a store on a read-only mount: the agent's code runs to its end, and one warning
        names the store and the reason (no traceback)."""
        ro = tmp_path / "ro"
        code = "import trajdebug\nwith trajdebug.run('x', store='ro/runs.db'):\n    trajdebug.step('s').__enter__()\nprint('agent done')\n"
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        proc = subprocess.run([*readonly(ro), sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60)
        assert 0 == proc.returncode, proc.stderr
        assert "agent done" in proc.stdout
        assert "ro/runs.db" in proc.stderr and "Traceback" not in proc.stderr


FULL_DISK_CHILD = textwrap.dedent(
    """
    import json, os, sys, time
    import trajdebug
    from trajdebug.core.jsonl import read_jsonl
    from trajdebug.store import Store

    d = sys.argv[1]
    db, jl, filler = f"{d}/s.db", f"{d}/r.jsonl", f"{d}/filler"

    def fill():
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        for size in (1 << 20, 65536, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\\0" * size)
            except OSError:
                pass
        os.close(fd)

    with trajdebug.run("full", store=db, path=jl) as h:
        for i in range(300):
            with trajdebug.step("s", kind="tool") as s:
                s.output = {"i": i, "text": "x" * 300}
            time.sleep(0.002)
            if i == 20:
                trajdebug.record.flush(5)
                fill()  # the disk is full from here on ...
            if i == 200:
                os.unlink(filler)  # ... until now
    flushed = trajdebug.record.flush(30)
    with Store(db, readonly=True) as st:
        run = st.load_run(h.run_id)
    f = read_jsonl(jl).runs[0]
    print(json.dumps({"flushed": flushed, "store": [len(run.steps), run.outcome], "jsonl": [len(f.steps), f.outcome],
                      "lost": h.losses["lost"]}))
    """
)

LOCKED_EXIT_CHILD = textwrap.dedent(
    """
    import sys, trajdebug
    trajdebug.configure(exit_timeout=0.3)
    with trajdebug.run("exits while locked", store=sys.argv[1]) as h:
        for i in range(50):
            with trajdebug.step("s", kind="tool") as s:
                s.output = i
    print(h.run_id)
    """
)


def _tmpfs_works() -> bool:
    import shutil

    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt || exit 1"], capture_output=True)
    return probe.returncode == 0


class TestFullDisk:
    @pytest.mark.skipif(not _tmpfs_works(), reason="needs unshare and a private tmpfs mount")
    def test_a_store_on_a_full_disk_keeps_every_batch_once_space_returns(self, tmp_path: Path) -> None:
        """On a 16 MiB tmpfs filled up after the 21st step and freed after the 201st, the store, like the JSONL
        file, ends with all 300 steps and the run's end record, nothing counted lost."""
        mnt = tmp_path / "mnt"
        mnt.mkdir()
        script = tmp_path / "child.py"
        script.write_text(FULL_DISK_CHILD)
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        proc = subprocess.run(
            ["unshare", "-rm", "sh", "-c", f'mount -t tmpfs -o size=16m tmpfs "{mnt}" && exec "{sys.executable}" "{script}" "{mnt}"'],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        assert got == {"flushed": True, "store": [300, "success"], "jsonl": [300, "success"], "lost": 0}


class TestLockedExit:
    def test_a_process_that_exits_while_the_store_is_locked_leaves_its_records_beside_it(self, tmp_path: Path) -> None:
        """A process whose store stays locked until after it exits leaves its records in the spill file beside
        the store (saying where, on stderr); a reader sees the run whole with a problem naming the file, and the
        next writer merges it into the store."""
        from trajdebug.store import spill_path

        db = tmp_path / "s.db"
        Store(db).close()
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
            proc = subprocess.run([sys.executable, "-c", LOCKED_EXIT_CHILD, str(db)], capture_output=True, text=True, env=env, timeout=60)
            run_id = proc.stdout.strip()
            assert str(spill_path(db)) in proc.stderr
            with Store(db, readonly=True) as st:
                read = st.read()
            assert [(r.run_id, len(r.steps), r.outcome) for r in read.runs] == [(run_id, 50, "success")]
            assert any(str(spill_path(db)) in str(p) for p in read.problems)
        finally:
            holder.execute("COMMIT")
            holder.close()
        with Store(db) as st:
            assert 50 == len(st.load_run(run_id).steps)
        assert not spill_path(db).exists()
        with Store(db, readonly=True) as st:
            assert st.read().problems == []


class TestLateSteps:
    def test_a_step_finishing_just_after_the_run_is_still_written_and_marked(self) -> None:
        """A thread the agent did not join finishes its step right after the run's block: within the grace
        period it is written into the run, marked after_run_end."""
        started = threading.Event()

        def slow(parent: Any) -> None:
            with trajdebug.step("straggler", kind="tool") as s:
                started.set()
                time.sleep(0.2)
                s.output = "late"

        sink = MemorySink()
        with trajdebug.run("r", sinks=[sink]) as h:
            t = threading.Thread(target=trajdebug.wrap(slow), args=(None,))
            t.start()
            started.wait(5)
        t.join()
        trajdebug.record.flush(5)
        (late,) = [s for s in h.load().steps if s.name == "straggler"]
        assert late.attributes["after_run_end"] is True

    def test_a_step_finishing_after_the_run_was_written_is_counted(self, caplog: pytest.LogCaptureFixture) -> None:
        """After the grace period the run's sinks are closed: a later step is counted and warned about."""
        trajdebug.configure(late_grace=0.05)
        release = threading.Event()

        def slow() -> None:
            with trajdebug.step("too-late"):
                release.wait(5)

        sink = MemorySink()
        with trajdebug.run("r", sinks=[sink]) as h:
            t = threading.Thread(target=trajdebug.wrap(slow))
            t.start()
        deadline = time.monotonic() + 5
        while not h._final and time.monotonic() < deadline:
            time.sleep(0.01)
        release.set()
        t.join()
        assert 1 == h.losses["after_end"]
        assert any("finished after the run had been written" in r.message for r in caplog.records)
        assert "too-late" not in [s.name for s in h.load().steps]


class TestSinks:
    @pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt(), BaseException("odd")])
    def test_a_sink_raising_a_base_exception_never_reaches_the_agent(self, exc: BaseException) -> None:
        """A sink raising SystemExit or another BaseException is counted; the agent and the writer go on."""

        class Rude:
            def write(self, records: Any) -> None:
                raise exc

            def close(self) -> None:
                pass

        good = MemorySink()
        with trajdebug.run("a", sinks=[Rude(), good]) as h, trajdebug.step("s") as s:
            s.output = 1
        assert 1 == h.stats["sink_failures"]
        assert 1 == len(h.load().steps)
        with trajdebug.run("b", sinks=[good]) as h2, trajdebug.step("t"):
            pass
        assert ["t"] == [s.name for s in h2.load().steps]

    def test_a_write_cut_by_the_file_size_limit_completes_its_line_later(self, tmp_path: Path) -> None:
        """When the file system stops a batch part-way (here RLIMIT_FSIZE), the cut record's rest is written
        first next time: no record is glued to a half line, and the records after it are retried."""
        code = textwrap.dedent(
            """
            import resource, signal, sys
            from trajdebug.record.sinks import JsonlSink, PartialWrite
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            sink = JsonlSink(sys.argv[1])
            records = [{"v": 1, "t": "meta", "run_id": "r", "metadata": {"n": i, "pad": "p" * 50}} for i in range(40)]
            resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))
            try:
                sink.write(records)
            except PartialWrite as exc:
                done = exc.written
            resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            sink.write(records[done:])
            sink.close()
            print(done)
            """
        )
        path = tmp_path / "cut.jsonl"
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env, check=True)
        assert 0 < int(proc.stdout) < 40
        lines = path.read_text().splitlines()
        assert list(range(40)) == [json.loads(line)["metadata"]["n"] for line in lines]

    def test_partial_write_reports_the_records_that_made_it(self, tmp_path: Path) -> None:
        """A sink's PartialWrite says how many leading records reached it; the writer retries only the rest."""
        calls: list[int] = []

        class Flaky(JsonlSink):
            def write(self, records: Any) -> None:
                calls.append(len(records))
                if len(calls) == 1:
                    super().write(records[:2])
                    raise PartialWrite(OSError(28, "No space left on device"), 2)
                super().write(records)

        sink = Flaky(tmp_path / "f.jsonl")
        with trajdebug.run("f", sinks=[sink]) as h:
            for i in range(5):
                with trajdebug.step("s") as s:
                    s.output = i
        assert h.flush() is True  # leaving the run did not wait for the retry; flush does
        assert 0 == h.losses["lost"]
        assert [0, 1, 2, 3, 4] == [s.output for s in read_jsonl(tmp_path / "f.jsonl").runs[0].steps]

    def test_flush_writes_what_is_queued_and_says_so(self) -> None:
        """`RunHandle.flush()` and `trajdebug.record.flush()` return True once everything queued is written."""
        trajdebug.configure(flush_interval=60.0)
        sink = MemorySink()
        with trajdebug.run("f", sinks=[sink]) as h:
            with trajdebug.step("s"):
                pass
            assert h.flush() is True
            assert 1 == sum(r["t"] == "step" for r in sink.records)
            with trajdebug.step("t"):
                pass
            assert trajdebug.record.flush() is True
            assert 2 == sum(r["t"] == "step" for r in sink.records)


def test_the_writer_warm_up_frees_one_large_block_before_the_first_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer thread's warm-up allocates and frees one block of `_LARGE_FREE` bytes (what makes glibc keep
    a batch's memory between batches)."""
    from trajdebug.record import writer as _writer

    calls: list[int] = []
    monkeypatch.setattr(_writer, "bytes", lambda n: calls.append(n) or b"", raising=False)
    _writer.Writer._warm_up()
    assert calls == [_writer._LARGE_FREE]
