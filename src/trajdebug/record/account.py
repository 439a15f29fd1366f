"""What the recorder lost or got wrong for one run: the account every role writes to.

The run (agent threads), its export (the writer thread) and each sink slot
report here what they could not keep: records dropped because the queue was
full, records a sink could not take, values that could not be encoded, steps
that finished after the run was written, a live exporter's full queue.  It is
its own object so that a sink's slot reports losses through a typed interface
(`Losses`) rather than by calling the run's private methods; what it adds up
goes into the run's ``end`` record (``recorder``, `Account.summary`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from trajdebug.record.sinks import describe


if TYPE_CHECKING:
    from trajdebug.record.writer import Flush


log = logging.getLogger("trajdebug")

LOST_KINDS = ("dropped", "unwritable", "unencodable", "after_end", "export_dropped")
"""Why records were lost: the queue was full; a sink could not take them; a value could not be
encoded at all; the step finished after the run had been written; a live exporter's queue was full
(`trajdebug.integrations.otlp_exporter`)."""


class Losses(Protocol):
    """**Protocol:** where a sink's slot reports what it could not write (`Account` is one)."""

    run_id: str

    def lost(self, why: str, n: int) -> None:
        """Count ``n`` records lost for ``why`` (one of `LOST_KINDS`; anything else counts as unencodable)."""

    def sink_failed(self, sink: object, exc: BaseException | None, lost: int) -> None:
        """A sink failed for good; ``lost`` records it held are gone."""

    def warn_once(self, message: str) -> None:
        """Log ``message`` as a warning unless this run warned already."""


class Account:
    """One run's account of what went wrong inside the recorder (kept apart from the run's hot attributes).

    CPython keeps up to 30 attributes of an instance in its compact layout, which the
    interpreter reads fastest; the step's exit reads the run's queue and limits on
    every step, so the run's rarely used counters live here.
    """

    __slots__ = (
        "context_lost", "drain", "escaped", "internal_errors", "lock", "lost_by", "on_disk", "run_id", "serviced",
        "sink_failures", "waiting", "warned",
    )  # fmt: skip

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.drain = 0.0
        """Records per second the writer drains from this run's queue while it is backlogged (EWMA)."""
        self.serviced = 0.0
        """When the writer last serviced this run (monotonic seconds)."""
        self.on_disk = 0
        """Records counted as dropped in what was last written (a ``meta`` record's account)."""
        self.escaped: BaseException | None = None
        """The exception a joined run's block already failed the host with (not counted twice)."""
        self.lost_by: dict[str, int] = dict.fromkeys(LOST_KINDS, 0)
        self.context_lost = [0, 0]
        """Steps that joined this run without its context: [unambiguous, ambiguous]."""
        self.lock = threading.Lock()
        self.warned = False
        self.sink_failures = 0
        self.internal_errors = 0
        self.waiting: list[Flush] = []
        """Flush markers reached while a sink still held records for a retry."""

    def lost(self, why: str, n: int) -> None:
        """Count ``n`` records lost for ``why`` (any thread)."""
        with self.lock:
            self.lost_by[why if why in self.lost_by else "unencodable"] += n

    def sink_failed(self, sink: object, exc: BaseException | None, lost: int) -> None:
        """A sink failed for good: count it and the records it held, and warn once naming it."""
        self.sink_failures += 1
        if lost:
            self.lost("unwritable", lost)
        reason = f"{type(exc).__name__}: {exc}" if exc is not None else "failed"
        self.warn_once(f"trajdebug: cannot write run {self.run_id} to {describe(sink)} ({reason}); its records there are lost")

    def internal_error(self, where: str) -> None:
        """The recorder itself failed at ``where`` (never raised into the agent): count it, warn once."""
        self.internal_errors += 1
        self.warn_once(f"trajdebug: internal error in {where}; the agent was not affected")
        log.debug("trajdebug internal error in %s", where, exc_info=True)

    def warn_once(self, message: str) -> None:
        """Log ``message`` as a warning unless this run warned already (one warning per run)."""
        if not self.warned:
            self.warned = True
            log.warning(message)

    def adopted(self, ambiguous: bool) -> bool:
        """A step without the run's context joined it; True for the first such step."""
        with self.lock:
            self.context_lost[1 if ambiguous else 0] += 1
            return sum(self.context_lost) == 1

    def summary(self, redacted: Mapping[str, int] | None = None) -> dict[str, object]:
        """The account as the ``end`` record's ``recorder`` field: records lost by cause, steps that
        lost their context, secrets redacted per rule (``redacted``), internal errors."""
        out: dict[str, object] = {}
        lost = {k: v for k, v in self.lost_by.items() if v}
        if lost:
            out["lost"] = lost
        if any(self.context_lost):
            out["context_lost"] = {"steps": self.context_lost[0] + self.context_lost[1], "ambiguous": self.context_lost[1]}
        if redacted:
            out["redacted"] = dict(redacted)
        if self.internal_errors:
            out["internal_errors"] = self.internal_errors
        return out


__all__ = ["LOST_KINDS", "Account", "Losses"]
