"""Processors: what happens to a run's records between encoding and its sinks, one class per concern.

The recorder has three roles, as the OpenTelemetry SDK has span, span processor
and span exporter:

1. the run and its steps (`trajdebug.record.runs`, `trajdebug.record.recorder`):
   what the agent's thread touches, a queue and a few counters;
2. processors (this module), applied in order on the writer thread: summary
   mode (`SummaryProcessor`) rewrites records, tail sampling (`TailSampler`)
   holds a run's encoded lines until its end decides; the rollout
   (`trajdebug.record.rollout`) chooses the processors of each run at its start;
3. sinks (`trajdebug.record.sinks`: SQLite store, JSONL, a live OTLP exporter),
   each behind `trajdebug.record.sinks.Sink`, fed by `trajdebug.record.export`.

A processor never sees the mutable run: at the run's end it gets a `RunView`,
a frozen copy of what it may read (the outcome, the recorder's account).

Redaction is not a processor: it runs inside encoding (`trajdebug.record.tracking`),
because a value is redacted before it is cut to ``max_value_bytes`` (a secret
past the cut is scrubbed, never half-kept), and a step's input and output pass
one prefilter together; a pass over the finished records would walk every
record a second time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol


if TYPE_CHECKING:
    # (summary mode imports the value helpers, which ``import trajdebug`` does not load)
    from trajdebug.record.sampling import Hold
    from trajdebug.record.summary import Policy


Record = dict[str, Any]
"""One record of the trajdebug JSONL format (`trajdebug.core.schema`), as the writer builds it."""


@dataclass(frozen=True, slots=True)
class RunView:
    """What a processor may read of a run at its end (a frozen copy, never the run itself)."""

    run_id: str
    name: str
    outcome: str | None
    """``success`` or ``failure``; None for a part of a run joined from another process (its outcome is not known there)."""
    joined: bool
    """A part of a run joined from elsewhere (`trajdebug.extract`)."""
    account: Mapping[str, object]
    """The recorder's account of the run (`trajdebug.record.account.Account.summary`)."""
    errors: int
    """Errors recorded in the run (or the part)."""


class Processor(Protocol):
    """**Protocol:** one step of the writer's processing of a run's records.

    Each hook has a default that passes everything through; a processor
    overrides the ones it needs.  Only the writer thread calls them.
    """

    def on_record(self, record: Record) -> Record:
        """A record after encoding and redaction, before it becomes a line (may change it in place)."""
        return record

    def on_lines(self, lines: list[bytes]) -> Iterable[list[bytes]]:
        """The batches to hand the sinks for a batch of encoded lines (none while holding them back)."""
        return (lines,)

    def on_end(self, run: RunView) -> Record | None:
        """The run ended: a record to add (written after this processor's ``on_record``), or None."""
        return None

    def on_exit(self) -> Record | None:
        """The interpreter exits with the run still open: a record to add, or None."""
        return None

    @property
    def pending(self) -> bool:
        """Whether it holds something that only the run's end releases (`on_exit` must be called)."""
        return False


class SummaryProcessor(Processor):
    """Summary mode: the chosen fields of each record replaced by their summaries (`trajdebug.record.summary`)."""

    __slots__ = ("policy",)

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def on_record(self, record: Record) -> Record:
        """The record with its chosen fields summarized (in place)."""
        return self.policy.apply(record)


class TailSampler(Processor):
    """Tail sampling: the run's lines are held (`trajdebug.record.sampling.Hold`) until its end decides."""

    __slots__ = ("hold",)

    def __init__(self, hold: Hold) -> None:
        self.hold = hold

    def on_lines(self, lines: list[bytes]) -> Iterator[list[bytes]]:
        """Nothing while the run is open; everything held, in bounded batches, once it is kept."""
        return self.hold.take(lines)

    def on_end(self, run: RunView) -> Record | None:
        """Decide the run; the ``meta`` record that says so when it is kept."""
        if self.hold.decided:
            return None
        meta = self.hold.decide(None if run.joined else (run.outcome or "success"), run.account, joined=run.joined, errors=run.errors)
        return meta if self.hold.keep else None

    def on_exit(self) -> Record | None:
        """Keep the run, as incomplete."""
        return None if self.hold.decided else self.hold.decide_incomplete()

    @property
    def pending(self) -> bool:
        """Whether the run is still undecided."""
        return not self.hold.decided


class Processors:
    """Processors applied in order: records through each `Processor.on_record`, lines through each
    `Processor.on_lines` (a batch one releases goes on to the next)."""

    __slots__ = ("items", "rewriting")

    def __init__(self, items: Sequence[Processor]) -> None:
        self.items: tuple[Processor, ...] = tuple(items)
        self.rewriting: tuple[Processor, ...] = tuple(
            p for p in self.items if type(p).on_record is not Processor.on_record
        )
        """The processors that rewrite records (the others are not called per record)."""

    def __bool__(self) -> bool:
        return bool(self.items)

    def on_record(self, record: Record) -> Record:
        """The record through every processor that rewrites records, in order."""
        for p in self.rewriting:
            record = p.on_record(record)
        return record

    def on_lines(self, lines: list[bytes]) -> Iterator[list[bytes]]:
        """The batches the last processor releases for ``lines`` (lazily: a held run is read back in batches)."""
        batches: Iterator[list[bytes]] = iter((lines,))
        for p in self.items:
            batches = _through(p, batches)
        return batches

    def on_end(self, run: RunView) -> list[Record]:
        """The records the processors add at the run's end."""
        return [r for r in (p.on_end(run) for p in self.items) if r is not None]

    def on_exit(self) -> list[Record]:
        """The records the processors add when the interpreter exits with the run open."""
        return [r for r in (p.on_exit() for p in self.items) if r is not None]

    @property
    def pending(self) -> bool:
        """Whether some processor holds what only the run's end releases."""
        return any(p.pending for p in self.items)

    def find(self, kind: type[Processor]) -> Processor | None:
        """The first processor of a class (None when there is none)."""
        return next((p for p in self.items if isinstance(p, kind)), None)


def _through(p: Processor, batches: Iterator[list[bytes]]) -> Iterator[list[bytes]]:
    for batch in batches:
        yield from p.on_lines(batch)


__all__ = ["Processor", "Processors", "Record", "RunView", "SummaryProcessor", "TailSampler"]
