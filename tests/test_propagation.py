"""Carrying a run across threads and processes: inject/extract, and error chains across the boundary."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

import trajdebug
from trajdebug.core.jsonl import read_jsonl
from trajdebug.core.lifecycle.analyze import analyze_errors
from trajdebug.core.model import Run
from trajdebug.record.propagation import SINK_HEADER, TRACEPARENT
from trajdebug.store import Store


SUB_AGENT = textwrap.dedent(
    """
    import os, sys
    import trajdebug

    @trajdebug.step(kind="tool")
    def lookup(customer):
        raise LookupError(f"no customer {customer}")

    @trajdebug.step(kind="agent", agent="billing")
    def billing_agent(customer):
        return lookup(customer)

    with trajdebug.extract(os.environ, name="billing"):
        billing_agent(sys.argv[1])
    """
)


@trajdebug.step(kind="agent")
def delegate(script: Path, customer: str) -> str:
    """Run the sub-agent in a real child process, joined to this run through the environment."""
    env = {**os.environ, **trajdebug.inject(env=True)}
    proc = subprocess.run(
        [sys.executable, str(script), customer], env=env, capture_output=True, text=True, timeout=60
    )
    if proc.returncode != 0:
        raise RuntimeError(f"sub-agent failed: {proc.stderr.strip().splitlines()[-1]}")
    return proc.stdout


def run_parent(tmp_path: Path, **sink: Any) -> Run:
    script = tmp_path / "sub_agent.py"
    script.write_text(SUB_AGENT)
    handle = trajdebug.run("support", **sink)
    with pytest.raises(RuntimeError, match="sub-agent failed"), handle:
        delegate(script, "c-42")
    loaded: Run = handle.load()
    return loaded


class TestSubprocess:
    def test_sub_agent_error_in_a_subprocess_causes_the_parents_failure(self, tmp_path: Path) -> None:
        """A sub-agent's error in a child process joins the run and heads the chain that failed the parent."""
        run = run_parent(tmp_path, path=tmp_path / "runs.jsonl")
        steps = {s.name: s for s in run.steps}
        assert set(steps) == {"delegate", "billing_agent", "lookup"}
        assert steps["billing_agent"].parent_id == steps["delegate"].step_id
        assert steps["billing_agent"].agent == "billing"
        sub_err, parent_err = run.errors
        assert sub_err.step_id == steps["lookup"].step_id
        left = sub_err.stages[-1]
        assert (left.stage, left.step_id, left.reason) == (
            "propagated",
            steps["delegate"].step_id,
            "left the sub-agent",
        )
        assert parent_err.step_id == steps["delegate"].step_id
        assert parent_err.parent_error_id is None  # no Python cause crosses a process boundary

        report = analyze_errors(run)
        (chain,) = report.critical_chains()
        assert chain.error_ids == (sub_err.error_id, parent_err.error_id)
        assert chain.links == ("nested",)
        assert chain.origin_step == steps["lookup"].step_id
        assert report.error(sub_err.error_id).severity == "CRITICAL"
        assert report.error(sub_err.error_id).stage == "failed"
        assert report.error(parent_err.error_id).parent_error_id == sub_err.error_id

    def test_sub_agent_writes_into_the_parents_sqlite_store(self, tmp_path: Path) -> None:
        """With a store as the parent's sink, the child process writes its steps into the same run there."""
        db = tmp_path / "runs.db"
        run = run_parent(tmp_path, store=db)
        with Store(db) as st:
            assert st.run_ids() == [run.run_id]
        assert {s.name for s in run.steps} == {"delegate", "billing_agent", "lookup"}
        assert len(run.errors) == 2
        assert analyze_errors(run).chains[0].critical

    def test_a_joined_sub_agent_writes_no_run_record_of_its_own(self, tmp_path: Path) -> None:
        """Only the parent writes the run's start and end; the child adds steps and errors."""
        path = tmp_path / "runs.jsonl"
        run_parent(tmp_path, path=path)
        result = read_jsonl(path)
        assert not result.problems
        assert len(result.runs) == 1
        text = path.read_text()
        assert text.count('"t":"run"') == 1 and text.count('"t":"end"') == 1


class TestHeaders:
    def test_inject_writes_a_w3c_traceparent_and_no_path(self, tmp_path: Path) -> None:
        """Inside a step, the header names the run and the step and carries no local path; the environment
        form (for a child process the agent starts) also names the sink."""
        path = tmp_path / "r.jsonl"
        with trajdebug.run("x", path=path) as h, trajdebug.step("call") as s:
            headers = trajdebug.inject()
            env = trajdebug.inject(env=True)
        assert {TRACEPARENT: f"00-{h.run_id}-{s.id}-01"} == dict(headers)
        assert str(tmp_path) not in "".join(headers.values())
        assert env["TRACEPARENT"] == headers[TRACEPARENT]
        assert env["TRAJDEBUG_SINK"] == f"jsonl:{path.resolve()}"

    def test_inject_outside_a_step_sends_a_valid_non_zero_parent(self, tmp_path: Path) -> None:
        """With no current step the parent id is the run's root id (W3C forbids zeros), read back as no parent."""
        with trajdebug.run("x", path=tmp_path / "r.jsonl") as h:
            tp = trajdebug.inject()[TRACEPARENT]
        version, trace, parent, flags = tp.split("-")
        assert (version, trace, flags) == ("00", h.run_id, "01")
        assert parent != "0" * 16 and len(parent) == 16
        with trajdebug.run("parent", path=tmp_path / "p.jsonl") as p:
            headers = dict(trajdebug.inject())
            with trajdebug.extract(headers) as joined, trajdebug.step("child") as c:
                c.output = 1
        assert joined._remote_parent is None
        assert [None] == [s.parent_id for s in p.load().steps if s.name == "child"]

    def test_a_sink_header_is_ignored_unless_allowed(self, tmp_path: Path) -> None:
        """A `trajdebug-sink` header from a caller writes nothing where it points, unless `allow_sinks` names it."""
        evil = tmp_path / "evil.jsonl"
        allowed = tmp_path / "ok" / "runs.jsonl"
        tp = f"00-{'ab' * 16}-{'cd' * 8}-01"
        with trajdebug.extract({TRACEPARENT: tp, SINK_HEADER: f"jsonl:{evil}"}), trajdebug.step("s"):
            pass
        assert not evil.exists()
        with (
            trajdebug.extract({TRACEPARENT: tp, SINK_HEADER: f"jsonl:{allowed}"}, allow_sinks=[str(tmp_path / "ok" / "*")]),
            trajdebug.step("s"),
        ):
            pass
        trajdebug.record.flush()
        assert ["s"] == [s.name for s in read_jsonl(allowed).runs[0].steps]

    def test_inject_outside_a_run_leaves_headers_alone(self) -> None:
        """No run, no headers added."""
        assert trajdebug.inject({"x": "1"}) == {"x": "1"}

    def test_extract_without_headers_runs_unrecorded(self, tmp_path: Path) -> None:
        """Without a traceparent the block runs and nothing is written."""
        with trajdebug.extract({}) as h, trajdebug.step("alone") as s:
            s.output = 1
        assert h.run_id == ""
        assert not (tmp_path / "trajdebug.db").exists()

    @pytest.mark.parametrize(
        "header",
        ["nonsense", f"00-{'0' * 32}-{'cd' * 8}-01", f"00-{'ab' * 16}-{'0' * 16}-01", f"ff-{'ab' * 16}-{'cd' * 8}-01"],
    )
    def test_an_invalid_traceparent_is_a_warning_and_the_block_runs_unrecorded(
        self, header: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A traceparent that is not valid W3C Trace Context (shape, zero ids, version ff) never raises into
        the callee: one warning quoting it, and nothing is recorded."""
        with trajdebug.extract({"traceparent": header}) as h, trajdebug.step("s"):
            pass
        assert "" == h.run_id
        assert any("malformed traceparent" in r.message and header[:20] in r.message for r in caplog.records)
        assert not (tmp_path / "trajdebug.db").exists()


class TestThreads:
    def test_thread_sub_agent_joined_by_headers_lands_under_the_calling_step(self, tmp_path: Path) -> None:
        """A sub-agent in a plain thread joined through headers records under the calling step."""
        path = tmp_path / "r.jsonl"

        def worker(headers: dict[str, str]) -> None:
            with trajdebug.extract(headers), trajdebug.step("in_thread") as s:
                s.output = "done"

        with trajdebug.run("x", path=path) as h, trajdebug.step("call") as call:
            t = threading.Thread(target=worker, args=(dict(trajdebug.inject()),))
            t.start()
            t.join()
        run = h.load()
        (child,) = [s for s in run.steps if s.name == "in_thread"]
        assert child.parent_id == call.id

    def test_exception_crossing_a_context_executor_is_one_error(self) -> None:
        """An error raised in a pool thread and re-raised by ``future.result()`` propagates; it is not a second error."""
        from trajdebug.testing import capture_runs

        @trajdebug.step(kind="tool")
        def work() -> None:
            raise TimeoutError("slow")

        with capture_runs() as runs:
            try:
                with (
                    trajdebug.run("pool"),
                    trajdebug.step("fan_out", kind="agent"),
                    trajdebug.ContextThreadPoolExecutor(2) as pool,
                ):
                    pool.submit(work).result()
            except TimeoutError:
                pass
        (err,) = runs[0].errors
        assert [c.stage for c in err.stages] == ["occurred", "propagated", "failed"]
