"""A run's export: the writer's side of a run, serviced by the writer apart from the run the agent touches."""

from __future__ import annotations

import trajdebug
from trajdebug.record.account import Account
from trajdebug.record.sinks import MemorySink
from trajdebug.record.writer import WRITER, Flush, Slot


def test_the_writer_services_the_runs_export_until_the_run_is_written() -> None:
    """While a run records, the writer services its export (not the run); once written, no longer."""
    with trajdebug.run("agent", sinks=[MemorySink()]) as run:
        assert run._export in WRITER.serviced()
        assert run not in WRITER.serviced()  # type: ignore[comparison-overlap]
    run._export.finalize()
    assert run._export not in WRITER.serviced()


def test_a_flush_racing_with_the_runs_final_write_never_waits_forever() -> None:
    """A flush marker asked of a run already written, or queued as the writer finalized it, is reached at once:
    `trajdebug.flush()` racing with a run's end (its snapshot of the runs taken just before) does not hang."""
    with trajdebug.run("agent", sinks=[MemorySink()]) as run:
        pass
    export = run._export
    late = Flush()
    run._queue.append(late)  # queued between the writer's last round and its finalize
    export.finalize()
    assert late.wait(1.0)
    assert export.mark().wait(1.0)


def test_every_kind_of_queued_item_reaches_the_sink_in_order() -> None:
    """The run's start, a step, added metadata, a trace message, a flush and the end each become what they stand for."""
    sink = MemorySink()
    carried = {"rows": ["a value carried across a boundary"]}
    with trajdebug.run("agent", sinks=[sink]) as run:
        with trajdebug.step("fetch", kind="tool", input="q") as s:
            s.output = "fetched"
        run.add_metadata(where="after fetch")
        trajdebug.traced(carried, source=s)
        with trajdebug.step("use", kind="tool", input=carried):
            pass
        assert run.flush()
    assert [r["t"] for r in sink.records] == ["run", "step", "meta", "step", "end"]
    assert sink.records[2]["metadata"] == {"where": "after fetch"}
    assert sink.records[3]["deps"] == [{"step_id": s.id, "kind": "data", "origin": "declared"}]


def test_an_unknown_item_in_the_queue_is_skipped_without_failing_the_run() -> None:
    """Something the export has no handler for is passed over; the steps around it are written, no internal error."""
    sink = MemorySink()
    with trajdebug.run("agent", sinks=[sink]) as run:
        run._queue.append(object())  # type: ignore[arg-type]
        with trajdebug.step("after", kind="tool"):
            pass
    assert [r["t"] for r in sink.records] == ["run", "step", "end"]
    assert run.internal_errors == 0


class _Broken:
    def write(self, records: object) -> None:
        raise ValueError("no")

    def close(self) -> None:
        pass


def test_a_slot_reports_a_failed_sink_to_the_runs_account() -> None:
    """A sink that fails for good costs its records, counted in the account the slot was given, with one warning."""
    acct = Account("r-1")
    slot = Slot(_Broken())
    slot.write(acct, [b"{}\n", b"{}\n"])
    slot.write(acct, [b"{}\n"])
    assert slot.dead and acct.sink_failures == 1
    assert acct.lost_by["unwritable"] == 3 and acct.warned
    assert acct.summary() == {"lost": {"unwritable": 3}}


def test_a_batch_is_encoded_line_for_line_as_dumps_line_encodes_each_record() -> None:
    """The writer's batch encoding gives each record's `dumps_line` bytes, also for a batch holding a record
    orjson refuses on its own (a key that is not a string), which is then encoded record by record."""
    from trajdebug.core.codec import dumps_line
    from trajdebug.record.export import _lines

    plain = [{"v": 1, "t": "step", "run_id": "r", "input": "x" * 10}, {"v": 1, "t": "meta", "run_id": "r"}]
    odd = [*plain, {"v": 1, "t": "step", "run_id": "r", "attributes": {1: "one"}}]
    for batch in (plain, odd):
        assert _lines(batch) == [dumps_line(r) for r in batch]  # type: ignore[arg-type]
    assert _lines(odd)[-1].endswith(b"\n") and b'"1":"one"' in _lines(odd)[-1]
