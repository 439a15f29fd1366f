"""Sampling: which runs are kept, decided by the run's id (so every process of a run decides alike).

**Tail sampling** (``sample_rate`` < 1) decides at the run's end: every failed,
lossy (the recorder lost records or failed inside) or incomplete (still open
at the interpreter's exit) run is kept, and a successful one is kept when the
fraction of its id (`fraction`) is below the rate.  Until then the writer
thread holds the run's encoded (already redacted) records in a `Hold`: in
memory up to ``sample_buffer_bytes``, then in a temporary file (mode 0600,
deleted when the run is decided), so memory stays bounded however long the
run.  The held records are the very lines the writer encoded once
(`trajdebug.core.codec.dumps_line`): a kept run's lines reach its sinks as they
were held, never decoded and encoded again.  A part of a run joined from another process (`trajdebug.extract`) does
not know the run's outcome: it is kept when it had an error or when its id is
chosen, so a distributed run's successful parts are kept or dropped together.

**Head sampling** (``head_rate`` < 1) decides at the start, for very hot agents:
a run not chosen records into a queue that keeps nothing (its steps still
cost the hot path's few operations), failures included.

A kept run says how it was chosen, for statistics that re-weight
(``metadata["sampling"]``): ``decision``, ``why`` (``failure``, ``lossy``,
``errors``, ``incomplete`` or ``sampled``), ``sample_rate``, ``head_rate`` and
``weight``, how many runs it stands for (1 / head_rate, times 1 / sample_rate
for a sampled success).  The two decisions use independent hashes of the id.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from typing import Any

from trajdebug.core.schema import meta_record
from trajdebug.record.config import CONFIG


log = logging.getLogger("trajdebug")

SAMPLING_KEY = "sampling"
"""Metadata key of a kept run's sampling decision."""

_SCALE = float(1 << 64)


def fraction(run_id: str, salt: str = "tail") -> float:
    """A run id's place in [0, 1): the same for every process, independent between salts.

    BLAKE2b of the id (personalized by ``salt``), its first 8 bytes read as a
    fraction of 2**64: uniform for any ids, random or not.
    """
    import hashlib  # (here: OpenSSL's load is not paid by `import trajdebug`)

    digest = hashlib.blake2b(run_id.encode("utf-8", "replace"), digest_size=8, person=salt.encode()[:16]).digest()
    return int.from_bytes(digest, "big") / _SCALE


def head_keeps(run_id: str, head_rate: float) -> bool:
    """Head sampling: whether a run is recorded at all."""
    return head_rate >= 1.0 or fraction(run_id, "head") < head_rate


def tail_decision(
    run_id: str, outcome: str | None, account: Mapping[str, Any], rate: float, *, joined: bool = False, errors: int = 0
) -> tuple[bool, str]:
    """Tail sampling: whether a finished run is kept, and why.

    Args:
        run_id: The run.
        outcome: ``failure``, ``success``, or None for a joined part of a run (outcome unknown there).
        account: The recorder's account of the run (`trajdebug.record.runs.RunHandle.account`).
        rate: The share of successful runs kept.
        joined: A part of a run joined from elsewhere.
        errors: Errors recorded in the run (or the part).
    """
    if outcome == "failure":
        return True, "failure"
    lost = account.get("lost")
    if (isinstance(lost, Mapping) and any(lost.values())) or account.get("internal_errors"):
        return True, "lossy"
    if joined and errors:
        return True, "errors"
    if rate >= 1.0 or fraction(run_id) < rate:
        return True, "sampled"
    return False, "sampled"


def weight(why: str, rate: float, head_rate: float) -> float:
    """How many runs a kept run stands for."""
    w = 1.0 / head_rate if head_rate > 0 else 1.0
    if why == "sampled" and 0 < rate < 1.0:
        w /= rate
    return w


class Hold:
    """A tail-sampled run's records, held by the writer thread until the run is decided.

    Records are held as their encoded lines (so memory is their byte size); past ``budget``
    bytes they go to a temporary file.  Only the writer thread calls it.
    """

    __slots__ = ("budget", "bytes", "decided", "file", "head_rate", "held", "keep", "rate", "run_id", "spilled")

    def __init__(self, run_id: str, rate: float, head_rate: float = 1.0, budget: int | None = None) -> None:
        self.run_id = run_id
        self.rate = rate
        self.head_rate = head_rate
        self.budget = CONFIG.sample_buffer_bytes if budget is None else budget
        self.held: list[bytes] = []
        self.bytes = 0
        self.file: Any = None
        self.spilled = 0
        self.decided = False
        self.keep = False

    def take(self, lines: list[bytes]) -> Iterator[list[bytes]]:
        """The batches of lines to write now: nothing while the run is open, everything held once it is kept."""
        if not self.decided:
            self._hold(lines)
            return iter(())
        if not self.keep:
            return iter(())
        if self.held or self.file is not None:
            return self._release(lines)
        return iter((lines,))

    def _hold(self, lines: list[bytes]) -> None:
        self.held += lines
        self.bytes += sum(map(len, lines))
        if self.bytes > self.budget:
            self._spill()

    def _spill(self) -> None:
        if self.file is None:
            import tempfile  # (here: only a spill needs it)

            fd, path = tempfile.mkstemp(prefix="trajdebug-hold-", suffix=".jsonl")
            os.unlink(path)  # nothing left behind, whatever happens to the process
            self.file = os.fdopen(fd, "w+b")
        self.file.write(b"".join(self.held))  # each line ends with its newline
        self.spilled += len(self.held)
        self.held = []
        self.bytes = 0

    def decide(self, outcome: str | None, account: Mapping[str, Any], *, joined: bool = False, errors: int = 0) -> dict[str, Any]:
        """Decide the run at its end; returns the ``meta`` record that says so (written only if kept)."""
        keep, why = tail_decision(self.run_id, outcome, account, self.rate, joined=joined, errors=errors)
        return self._decided(keep, why)

    def decide_incomplete(self) -> dict[str, Any]:
        """The interpreter exits with the run still open: it is kept, as incomplete."""
        return self._decided(True, "incomplete")

    def _decided(self, keep: bool, why: str) -> dict[str, Any]:
        self.decided = True
        self.keep = keep
        info = {
            "decision": "kept" if keep else "dropped",
            "why": why,
            "sample_rate": self.rate,
            "head_rate": self.head_rate,
            "weight": weight(why, self.rate, self.head_rate),
        }
        if not keep:
            self.discard()
        return meta_record(self.run_id, {SAMPLING_KEY: info})

    def _release(self, tail: list[bytes]) -> Iterator[list[bytes]]:
        limit = max(CONFIG.max_batch, 1)
        if self.file is not None:
            f = self.file
            f.seek(0)
            batch: list[bytes] = []
            for line in f:
                batch.append(line)
                if len(batch) >= limit:
                    yield batch
                    batch = []
            if batch:
                yield batch
            f.close()
            self.file = None
        held, self.held, self.bytes = self.held, [], 0
        for i in range(0, len(held), limit):
            yield held[i : i + limit]
        if tail:
            yield tail

    def discard(self) -> None:
        """Forget everything held (a dropped run)."""
        self.held = []
        self.bytes = 0
        if self.file is not None:
            try:
                self.file.close()
            except OSError:  # pragma: no cover
                pass
            self.file = None


__all__ = [
    "SAMPLING_KEY",
    "Hold",
    "fraction",
    "head_keeps",
    "tail_decision",
    "weight",
]
