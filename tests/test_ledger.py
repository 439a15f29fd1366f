"""The ledger beside a recorded file: a SIGKILL in a tight loop loses no finished step uncounted, a dead
process's ledger is read as lost steps, a live one's is not, and a clean exit leaves no ledger behind."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import trajdebug
from trajdebug.core import ledger
from trajdebug.core.jsonl import read_jsonl
from trajdebug.core.schema import lost_records
from trajdebug.store import Store


ROOT = Path(__file__).resolve().parents[1]

TIGHT_CHILD = textwrap.dedent(
    """
    import sys, trajdebug
    target = sys.argv[1]
    sink = {"path": target} if target.endswith(".jsonl") else {"store": target}
    with trajdebug.run("killed", **sink):
        for i in range(100_000_000):
            with trajdebug.step("work", kind="tool", input={"i": i}) as s:
                s.output = {"i": i, "text": "x" * int(sys.argv[2])}
            print(i + 1, flush=True)  # finished steps so far
    """
)


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("TRAJDEBUG", None)
    return env


def _read(target: Path) -> list[trajdebug.Run]:
    if target.suffix == ".jsonl":
        return read_jsonl(target).runs
    with Store(target, readonly=True) as st:
        return st.read().runs


def _has_run(target: Path) -> bool:
    if not target.exists():
        return False
    try:
        return bool(_read(target))
    except Exception:  # noqa: BLE001 - a store still being created reads as not yet there
        return False


def _kill_in_tight_loop(target: Path, after: float, text: int = 100) -> int:
    """Run the child (outputs of ``text`` characters) until its file exists and ``after`` seconds more, SIGKILL
    it; the steps it had finished (its last printed count: one more may have finished unprinted)."""
    argv = [sys.executable, "-c", TIGHT_CHILD, str(target), str(text)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=_env()) as proc:
        assert proc.stdout is not None
        finished = 0
        deadline = time.monotonic() + 30
        # Until the run's first record is readable (not only the file made): a kill before it leaves no run
        # to read, a case this test is not about (seen in CI on a machine at load 11).
        while not _has_run(target) and time.monotonic() < deadline:
            finished = int(proc.stdout.readline())
        end = time.monotonic() + after
        while time.monotonic() < end:
            finished = int(proc.stdout.readline())
        proc.send_signal(signal.SIGKILL)
        for line in proc.stdout.read().splitlines():
            if line.strip().isdigit():
                finished = int(line)
        proc.wait()
    return finished


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".jsonl", ".db"])
def test_a_sigkill_in_a_tight_loop_loses_no_finished_step_uncounted(tmp_path: Path, suffix: str) -> None:
    """Killed at three moments in a tight loop (the writer far behind, the queue cut, drops counted in
    memory), the run read back holds every finished step: on disk, or counted as lost in its account."""
    for k, after in enumerate((0.05, 0.3, 0.7)):
        target = tmp_path / f"k{k}{suffix}"
        finished = _kill_in_tight_loop(target, after)
        (run,) = _read(target)
        on_disk = sum(1 for s in run.steps if s.name == "work")
        counted = lost_records(run)
        # Nothing finished is lost uncounted (the goal). The other side is looser: one step may have
        # finished after the last count it printed, and a kill between a batch's write and the ledger's
        # settle can count the steps of that batch twice (on disk and lost; seen in CI: 11 of 27,672, and
        # 355 of 11,823 at load 11), at most one batch. docs/format.md states it; an over-count never hides a loss.
        bound = finished + 1 + trajdebug.record.CONFIG.max_batch
        assert finished <= on_disk + counted <= bound, (finished, on_disk, run.metadata.get("recorder"))
        assert glob.glob(ledger.ledger_glob(target)), "the killed process's ledger stays beside the file"


@pytest.mark.slow
def test_a_store_lists_the_steps_a_killed_process_lost(tmp_path: Path) -> None:
    """`Store.list_runs` (what `trajdebug runs` prints) counts the ledger's lost steps like the run read whole."""
    # 20 KB outputs keep the writer behind the agent, so the kill finds steps queued; on a fast machine a
    # kill can still land when the queue is empty (seen once in CI: 0 lost), so a few kills are tried and
    # every one must agree, and at least one must have lost steps for the test to have tested anything.
    losses = []
    for k in range(4):
        target = tmp_path / f"k{k}.db"
        _kill_in_tight_loop(target, 0.2 + 0.1 * k, text=20_000)
        with Store(target, readonly=True) as st:
            (summary,) = st.list_runs()
            run = st.load_run(summary.run_id)
        assert summary.lost == lost_records(run)
        losses.append(summary.lost)
        if summary.lost:
            break
    assert any(losses), losses


def test_a_clean_exit_leaves_no_ledger(tmp_path: Path) -> None:
    """A process that records runs and exits normally removes its ledgers (its losses are in its end records)."""
    code = textwrap.dedent(
        """
        import sys, trajdebug
        for target in sys.argv[1:]:
            sink = {"path": target} if target.endswith(".jsonl") else {"store": target}
            with trajdebug.run("clean", **sink):
                for i in range(100):
                    with trajdebug.step("work") as s:
                        s.output = i
        """
    )
    targets = [tmp_path / "a.jsonl", tmp_path / "b.db"]
    subprocess.run([sys.executable, "-c", code, *map(str, targets)], check=True, env=_env(), timeout=60)
    for t in targets:
        assert t.exists()
        assert not glob.glob(ledger.ledger_glob(t))
        (run,) = _read(t)
        assert len(run.steps) == 100 and lost_records(run) == 0


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _fake_ledger(target: Path, run_id: str, handed: int, settled: int, written: int, pid: int) -> Path:
    led = ledger.Ledger(target)
    counter = led.claim(run_id)
    assert counter is not None
    led.map[counter : counter + 8] = handed.to_bytes(8, "little")
    led.settle(counter, settled, written)
    ledger._HEADER.pack_into(led.map, 0, ledger.MAGIC, pid, ledger.process_start(pid), 0, ledger.host())
    led.map.flush()
    path = led.path
    led.close(remove=False)
    return path


def test_a_dead_process_ledger_counts_its_unsettled_steps_and_a_live_one_does_not(tmp_path: Path) -> None:
    """Steps handed and never settled count as ``killed`` once the ledger's process is gone; while it runs
    (this very process) they are in flight and count nothing; steps found on disk beyond what the ledger
    says was written (a batch the kill cut) are not counted twice."""
    target = tmp_path / "runs.jsonl"
    with trajdebug.run("r", path=target) as r:
        for i in range(3):
            with trajdebug.step("s") as s:
                s.output = i
    trajdebug.record.flush()
    _fake_ledger(target, r.run_id, handed=50, settled=3, written=3, pid=_dead_pid())
    (run,) = read_jsonl(target).runs
    assert run.metadata["recorder"]["lost"] == {"killed": 47}
    cut = _fake_ledger(target, r.run_id, handed=10, settled=1, written=1, pid=os.getpid())
    (run,) = read_jsonl(target).runs
    assert run.metadata["recorder"]["lost"] == {"killed": 47}, "a live process's ledger counts nothing"
    cut.unlink()
    for p in glob.glob(ledger.ledger_glob(target)):
        os.unlink(p)
    _fake_ledger(target, r.run_id, handed=50, settled=1, written=1, pid=_dead_pid())
    (run,) = read_jsonl(target).runs
    # 3 steps on disk, the ledger says 1 written: 2 came from the cut batch; 49 - 2 lost.
    assert run.metadata["recorder"]["lost"] == {"killed": 47}
