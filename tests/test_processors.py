"""Processors: one class per concern, applied in order between encoding and the sinks, reading a frozen view of the run."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

import trajdebug
from trajdebug.record import rollout
from trajdebug.record.processors import Processor, Processors, Record, RunView, SummaryProcessor, TailSampler
from trajdebug.record.sampling import Hold
from trajdebug.record.sinks import MemorySink


class _Tag(Processor):
    """Appends its name to a record's ``seen`` list (to show the order the records pass)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def on_record(self, record: Record) -> Record:
        record.setdefault("seen", []).append(self.name)
        return record


class _Split(Processor):
    """Hands every line on as a batch of its own."""

    def on_lines(self, lines: list[bytes]) -> Iterator[list[bytes]]:
        return iter([[line] for line in lines])


class _Swallow(Processor):
    """Holds every line back (until the end, which never releases them here)."""

    def __init__(self) -> None:
        self.held: list[bytes] = []

    def on_lines(self, lines: list[bytes]) -> Iterable[list[bytes]]:
        self.held += lines
        return ()

    @property
    def pending(self) -> bool:
        return True


def _view(outcome: str | None = "success", **changes: Any) -> RunView:
    base = RunView(run_id="r-1", name="agent", outcome=outcome, joined=False, account={}, errors=0)
    return dataclasses.replace(base, **changes)


def test_records_pass_the_processors_in_the_order_given() -> None:
    """Each processor that rewrites records sees the record after the ones before it."""
    chain = Processors([_Tag("first"), _Split(), _Tag("second")])
    assert chain.on_record({"t": "step"})["seen"] == ["first", "second"]


def test_a_processor_that_keeps_the_default_is_not_called_per_record() -> None:
    """Only the processors that override ``on_record`` are in the per-record path."""
    chain = Processors([_Split(), _Tag("only")])
    assert [type(p) for p in chain.rewriting] == [_Tag]


def test_lines_a_processor_releases_go_on_to_the_next() -> None:
    """A batch split by one processor reaches the next as its pieces; a processor holding lines ends the flow."""
    assert list(Processors([_Split()]).on_lines([b"a\n", b"b\n"])) == [[b"a\n"], [b"b\n"]]
    swallow = _Swallow()
    assert list(Processors([_Split(), swallow]).on_lines([b"a\n", b"b\n"])) == []
    assert swallow.held == [b"a\n", b"b\n"]


def test_no_processors_hand_the_batch_on_unchanged() -> None:
    """An empty chain is false and passes a batch through as it is."""
    chain = Processors(())
    assert not chain
    assert list(chain.on_lines([b"x\n"])) == [[b"x\n"]]
    assert chain.on_end(_view()) == [] and chain.on_exit() == [] and not chain.pending


def test_the_view_a_processor_gets_is_read_only() -> None:
    """A processor cannot change the run through its view."""
    view = _view()
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.outcome = "failure"  # type: ignore[misc]


def test_tail_sampler_decides_once_and_adds_its_decision_only_when_kept() -> None:
    """A failed run is kept (its sampling decision added once); a dropped run adds nothing and releases nothing."""
    kept = TailSampler(Hold("r-1", 0.0))
    assert kept.pending
    assert list(kept.on_lines([b"a\n"])) == []
    meta = kept.on_end(_view("failure"))
    assert meta is not None and meta["metadata"]["sampling"]["why"] == "failure"
    assert kept.on_end(_view("failure")) is None and not kept.pending
    assert list(kept.on_lines([b"b\n"])) == [[b"a\n"], [b"b\n"]]
    dropped = TailSampler(Hold("r-2", 0.0))
    dropped.on_lines([b"a\n"])
    assert dropped.on_end(_view("success")) is None
    assert list(dropped.on_lines([b"b\n"])) == []


def test_the_rollout_chooses_summary_then_tail_sampling() -> None:
    """A run with summary rules and a sample rate gets a summary processor, then a tail sampler, in that order."""
    trajdebug.configure(summary=("*",), sample_rate=0.5)
    setup = rollout.setup("agent", "r-1")
    assert setup is not None and not setup.void
    assert [type(p) for p in setup.processors] == [SummaryProcessor, TailSampler]
    assert setup.metadata["recording"]["mode"] == "summary"


def test_plain_recording_has_no_processors() -> None:
    """Without summary rules or sampling a run has no processors (nothing on the writer's path per record)."""
    sink = MemorySink()
    with trajdebug.run("plain", sinks=[sink]) as run, trajdebug.step("a", kind="tool", input="x") as s:
        s.output = "y"
    assert not run._export.processors
    assert [r["t"] for r in sink.records] == ["run", "step", "end"]


def test_summary_mode_rewrites_every_record_of_a_run_through_its_processor() -> None:
    """With summary rules, the step's input reaches the sink as a summary, and the run names its mode."""
    trajdebug.configure(summary=("*",))
    sink = MemorySink()
    with trajdebug.run("summarized", sinks=[sink]), trajdebug.step("a", kind="tool", input="the secret plan") as s:
        s.output = "done"
    step = next(r for r in sink.records if r["t"] == "step")
    assert step["input"]["bytes"] == len("the secret plan") and "the secret plan" not in str(sink.records)
    assert sink.records[0]["metadata"]["recording"]["mode"] == "summary"
