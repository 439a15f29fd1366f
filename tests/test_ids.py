"""Run, step and error ids: drawn from the OS, never merged when they clash anyway.

An agent that seeds ``random`` (common in evaluations) must not get the same ids
in every process; and whatever produced a clash (a seeded generator, a run id
passed twice), a second run start under a taken id is never merged into the
first: the store gives it a new id and says so in its recorder account, and the
JSONL reader reads it as a separate run with a problem.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import trajdebug
from trajdebug.core.jsonl import read_jsonl, read_lines
from trajdebug.core.schema import RECORDER_KEY, end_record, run_record, step_record
from trajdebug.record.runs import RunHandle
from trajdebug.store import Store


SRC = Path(trajdebug.__file__).resolve().parents[1]

SEEDED = textwrap.dedent(
    """
    import random, sys
    random.seed(0)
    import trajdebug
    random.seed(0)
    sink = {"store": sys.argv[1]} if sys.argv[1].endswith(".db") else {"path": sys.argv[1]}
    with trajdebug.run("seeded", **sink):
        for i in range(3):
            with trajdebug.step("s", kind="tool") as s:
                s.output = i
        try:
            with trajdebug.step("fails"):
                raise ValueError("boom")
        except ValueError:
            pass
    """
)


def _seeded(target: Path, n: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    procs = [subprocess.Popen([sys.executable, "-c", SEEDED, str(target)], env=env) for _ in range(n)]
    assert all(p.wait(60) == 0 for p in procs)


def test_seeded_processes_never_merge_runs_in_a_store(tmp_path: Path) -> None:
    """Processes that all call random.seed(0) write as many runs to one store as there are processes."""
    db = tmp_path / "s.db"
    _seeded(db, 4)
    with Store(db, readonly=True) as st:
        runs = st.read().runs
    assert len(runs) == 4
    assert [len(r.steps) for r in runs] == [4] * 4
    assert [len(r.errors) for r in runs] == [1] * 4
    assert len({s.step_id for r in runs for s in r.steps}) == 16
    assert len({e.error_id for r in runs for e in r.errors}) == 4


def test_seeded_processes_never_merge_runs_in_a_jsonl_file(tmp_path: Path) -> None:
    """Processes that all call random.seed(0) append as many runs to one JSONL file as there are processes."""
    jl = tmp_path / "r.jsonl"
    _seeded(jl, 4)
    runs = read_jsonl(jl).runs
    assert len(runs) == 4
    assert sorted(len(r.steps) for r in runs) == [4] * 4
    assert all(r.outcome == "success" for r in runs)


def test_ids_do_not_follow_the_random_module() -> None:
    """Seeding random does not repeat a run id, a step id prefix or an error id prefix."""
    import random

    from trajdebug.record import config

    random.seed(0)
    first = config.new_run_id()
    random.seed(0)
    assert config.new_run_id() != first
    assert len(first) == 32 and int(first, 16) & 1


def test_forked_child_draws_its_own_prefix() -> None:
    """A forked child's step ids do not share its parent's prefix."""
    from trajdebug.record import config

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(w, config.id_prefix().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(r, 8).decode() != config.id_prefix()


def _step(rid: str, sid: str, t: int) -> dict[str, object]:
    return step_record(rid, sid, "s", "tool", t, t, "ok")


def test_store_gives_a_second_run_start_under_a_taken_id_a_new_id(tmp_path: Path) -> None:
    """Two runs recorded with one run id are two runs in the store; the second says it was renamed."""
    db = tmp_path / "s.db"
    for i in range(2):
        with RunHandle("twice", store=db, run_id="a" * 32):
            for _ in range(2 + i):
                with trajdebug.step("s"):
                    pass
    with Store(db, readonly=True) as st:
        runs = st.read().runs
    assert sorted(len(r.steps) for r in runs) == [2, 3]
    second = next(r for r in runs if r.run_id != "a" * 32)
    assert len(second.steps) == 3 and second.outcome == "success"
    assert second.metadata[RECORDER_KEY]["renamed_from"] == "a" * 32
    with Store(db, readonly=True) as st:
        listed = {r.run_id: r.steps for r in st.list_runs()}
    assert listed == {r.run_id: len(r.steps) for r in runs}


def test_jsonl_reader_splits_a_second_run_record_of_one_id(tmp_path: Path) -> None:
    """A second run record of one id starts a separate run (a problem names the line); its steps follow it."""
    rid = "b" * 32
    recs = [
        run_record(rid, "one", 1, {}),
        _step(rid, "11111111" + "0" * 8, 2),
        end_record(rid, 3, "success", None),
        run_record(rid, "two", 4, {}),
        _step(rid, "22222222" + "0" * 8, 5),
        _step(rid, "22222222" + "0" * 7 + "1", 6),
        end_record(rid, 7, "failure", "bad"),
    ]
    import json

    got = read_lines([json.dumps(r) for r in recs], source="f.jsonl")
    assert [(r.name, len(r.steps), r.outcome) for r in got.runs] == [("one", 1, "success"), ("two", 2, "failure")]
    assert len({r.run_id for r in got.runs}) == 2
    assert any("f.jsonl:4:" in str(p) and "starts again" in str(p) for p in got.problems)
