"""Keeping the runs' ledgers: the recorder's side of `trajdebug.core.ledger`.

A run recorded into a JSONL file or a store takes a slot in this process's
ledger beside that file when it starts (`attach`).  From then on:

* the agent's thread bumps the slot's ``handed`` counter for every finished
  step before queuing it (`StepHandle`'s exit: one increment of a 64-bit integer
  in the mapped file through a memoryview, about 70 ns);
* the writer thread, after each round whose records went through to that file,
  sets ``settled``: the steps it wrote plus the steps whose drop is counted in
  a record it wrote (`settle`);
* the run's slot is freed once the run is written to the end (`release`), and
  a process that exits cleanly removes its ledgers (`at_exit`): what it could
  not write is then said in its end records and warnings.

So a SIGKILL at any moment leaves ``handed - settled`` = the finished steps
that were in memory only, and a reader counts them as lost
(``recorder.lost.killed``).  The run's first file target gets the ledger (a run
written to several files has its ledger beside the first); tail-sampled runs
(held in memory until their end decides) and forked children record without one.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from pathlib import Path
from typing import Any

from trajdebug.core.ledger import SUPPORTED, Ledger
from trajdebug.record.recorder import StepHandle


log = logging.getLogger("trajdebug")

_LEDGERS: dict[str, Ledger | None] = {}
"""This process's ledger per target file (None: the directory could not take one)."""
_LOCK = threading.Lock()
_ATTACHED: weakref.WeakSet[Any] = weakref.WeakSet()


class Entry:
    """One run's slot in a ledger, as the writer thread keeps it."""

    __slots__ = ("counter", "dropped", "drops", "ledger", "settled", "slot", "steps")

    def __init__(self, ledger: Ledger, counter: int, slot: Any) -> None:
        self.ledger = ledger
        self.counter = counter
        """Byte offset of the slot's ``handed`` counter (``settled`` follows it)."""
        self.slot = slot
        """The writer's `trajdebug.record.writer.Slot` of the target the ledger sits beside."""
        self.steps = 0
        """Finished steps the writer has taken from the queue (written once their batch goes through)."""
        self.dropped = 0
        """Finished steps the agent's thread dropped (queue full); settled once a later record carries the count."""
        self.drops = 0
        """Of those, the ones counted in the last record handed to the sinks."""
        self.settled = 0


def _ledger(path: Path) -> Ledger | None:
    key = os.path.abspath(path)  # no symlink resolution: no file system call per run start
    with _LOCK:
        if key not in _LEDGERS:
            try:
                _LEDGERS[key] = Ledger(key)
            except OSError as exc:
                # No ledger beside this file: its runs record as before, without the kill-proof count.
                log.debug("trajdebug: no ledger beside %s (%s)", key, exc)
                _LEDGERS[key] = None
        return _LEDGERS[key]


def attach(run: Any) -> None:
    """At the run's start (agent's thread): take a slot beside its first file target and point the run's
    ``_led`` counter at it.  Never raises (a run without a ledger records as before)."""
    if not SUPPORTED or run._hold is not None or run._void:
        return
    try:
        for slot in run._slots:
            path = getattr(slot.sink, "path", None)
            if not isinstance(path, Path) or not getattr(slot.sink, "takes_lines", False):
                continue
            led = _ledger(path)
            if led is None:
                return
            with _LOCK:
                counter = led.claim(run.run_id)
            if counter is None:
                return
            run._ledger = Entry(led, counter, slot)
            # A one-integer view of the counter: ``led[0] += 1`` is the cheapest write into the mapping
            # from Python (about 70 ns; struct.pack_into or ctypes cost more).
            run._led = memoryview(led.map)[counter : counter + 8].cast("q")
            _ATTACHED.add(run)
            return
    except Exception:
        log.debug("trajdebug: ledger not attached", exc_info=True)


def dropped(run: Any, item: Any) -> None:
    """The agent's thread dropped ``item`` (the queue was full): a finished step is settled once a written
    record counts the drop."""
    entry = run._ledger
    if entry is not None and item.__class__ is StepHandle:
        entry.dropped += 1


def drops(run: Any) -> int:
    """Writer thread, before it reads the run's drop count for its next record: the step drops that
    count will include."""
    entry = run._ledger
    return 0 if entry is None or run._joined else entry.dropped


def settle(run: Any, steps: int, drops_counted: int, wrote: bool) -> None:
    """Writer thread, after a round: ``steps`` more steps were taken from the queue, and ``wrote``: the
    round handed records to the sinks, the last of them carrying the drop count that includes
    ``drops_counted`` step drops.  Once the ledger's target holds nothing for a retry, everything taken
    so far is on disk, and so is that count: ``settled`` moves up to both."""
    entry = run._ledger
    if entry is None:
        return
    entry.steps += steps
    if wrote:
        entry.drops = drops_counted
    slot = entry.slot
    if not slot.pending and not slot.dead:
        settled = entry.steps + entry.drops
        if settled != entry.settled:
            entry.settled = settled
            entry.ledger.settle(entry.counter, settled, entry.steps)
    entry.ledger.beat()


def release(run: Any) -> None:
    """The run is written to its end: free its slot."""
    entry = run._ledger
    if entry is None:
        return
    run._led = None
    run._ledger = None
    with _LOCK:
        try:
            entry.ledger.release(entry.counter)
        except (ValueError, OSError):  # pragma: no cover - unmapped at exit
            pass


def at_exit() -> None:
    """The interpreter exits cleanly (after the writer's last flush): remove this process's ledgers.

    What a clean exit could not write is said elsewhere (end records, the store's spill file, a
    warning); the ledger speaks only for a process that could not speak."""
    for run in list(_ATTACHED):
        run._led = None
        run._ledger = None  # the views into the mapping go, so it can be unmapped
    with _LOCK:
        ledgers = [led for led in _LEDGERS.values() if led is not None]
        _LEDGERS.clear()
    for led in ledgers:
        try:
            led.close(remove=True)
        except OSError:  # pragma: no cover
            pass


def _after_fork() -> None:
    # The child shares the parent's mapping: its own steps must not count in the parent's ledger.
    for run in list(_ATTACHED):
        run._led = None
        run._ledger = None
    _ATTACHED.clear()
    _LEDGERS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


__all__ = ["Entry", "at_exit", "attach", "dropped", "drops", "release", "settle"]
