"""The ledger: what a recording process handed to its writer, in a file that outlives a SIGKILL.

A process recording into a JSONL file or a store keeps one small memory-mapped
file beside it, ``<file>-ledger-<pid>.<token>`` (``trajdebug.db`` ->
``trajdebug.db-ledger-4242.1f9a03``).  Per open run it holds two counters:

* ``handed``: finished steps the agent's threads handed to the writer (queued,
  or dropped because the queue was full), bumped on the agent's thread;
* ``settled``: of those, the steps whose fate is on disk: written as records,
  or counted as dropped in a record that was written (bumped by the writer
  after each write that went through).

The counters live in a shared file mapping, so their pages belong to the OS
page cache, not to the process: a SIGKILL loses the process's memory (its
queue, its in-memory drop counts) but not what was stored in the mapping, and
the kernel writes it back like any other dirty page.  Only a crash of the
machine itself loses it.

A reader (`trajdebug.core.jsonl.read_jsonl`, `trajdebug.store.Store`) looks
for ledgers beside the file (`unsettled`); one whose process is gone and whose
``handed`` exceeds ``settled`` makes the run say how many finished steps were
lost with the process (``recorder.lost.killed`` in its account, counted like
every other loss: `trajdebug runs`, ``analyze`` and the report show it).  A run
that ended cleanly frees its slot; a process that exits cleanly removes its
ledger.  The ledger of a killed process stays beside the file (16 KiB) for
every later reader; deleting it forgets the count.

Layout (little-endian 64-bit integers): a 64-byte header (magic, pid, the
process's start time in clock ticks, a heartbeat in ns since the epoch, the
host name) and `SLOTS` slots of 64 bytes (state, handed, settled, written: the
steps among settled that were written, run id).
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import struct
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from trajdebug.core.model import Run
from trajdebug.core.schema import RECORDER_KEY


MAGIC = b"TDLEDG1\n"
SLOTS = 255
"""Open runs one ledger keeps at once (a run beyond that records without one)."""
SIZE = 64 * (SLOTS + 1)
KILLED = "killed"
"""The lost kind a ledger adds: finished steps that never reached disk because the process died."""
_HEADER = struct.Struct("<8sqqq32s")
_SLOT = struct.Struct("<qqqq32s")
_LIVE_HEARTBEAT_NS = 10_000_000_000
"""A ledger of another host is taken as live while its writer wrote a heartbeat this recently."""

SUPPORTED = sys.byteorder == "little" and hasattr(mmap, "MAP_SHARED")
"""The counters are written as native integers (the layout above holds on little-endian machines only)
into a shared file mapping (POSIX ``mmap``)."""


def ledger_glob(path: str | Path) -> str:
    """The glob pattern of the ledgers beside ``path``."""
    p = Path(path)
    import glob  # the recorder's start-up does not need it

    return str(p.with_name(glob.escape(p.name) + "-ledger-*"))


def ledger_path(path: str | Path, token: str) -> Path:
    """A new ledger's path beside ``path`` for this process (``token``: a few random hex digits)."""
    p = Path(path)
    return p.with_name(f"{p.name}-ledger-{os.getpid()}.{token}")


def process_start(pid: int) -> int:
    """When process ``pid`` started, in clock ticks since boot (0 when it cannot be read: not Linux)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        # The command name (field 2) may hold spaces and parentheses: count from its end.
        return int(stat[stat.rindex(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return 0


def host() -> bytes:
    """This machine's name as stored in a ledger."""
    import socket  # on first use only: importing it costs start-up

    return socket.gethostname().encode("utf-8", "replace")[:32]


def _alive(pid: int, start: int, heartbeat: int, where: bytes) -> bool:
    """Whether the ledger's process may still be running (then its counts are in flight, not lost)."""
    if where.rstrip(b"\0") != host():
        # Another machine (a shared file system): only its heartbeat says.
        return time.time_ns() - heartbeat < _LIVE_HEARTBEAT_NS
    if start:
        now = process_start(pid)
        if now or Path("/proc/self/stat").exists():
            return now == start  # gone, or the pid was reused by another process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists (another user's)
    return True


def read_ledger(data: bytes) -> tuple[bool, dict[str, tuple[int, int]]] | None:
    """A ledger's contents: whether its process may still run, and per open run with steps handed and
    not settled, how many, and how many steps the writer had written (None: not a ledger)."""
    if len(data) < 64 or data[:8] != MAGIC:
        return None
    _, pid, start, heartbeat, where = _HEADER.unpack_from(data, 0)
    out: dict[str, tuple[int, int]] = {}
    for off in range(64, len(data) - 63, 64):
        state, handed, settled, written, rid = _SLOT.unpack_from(data, off)
        if state == 1 and handed > settled:
            out[rid.rstrip(b"\0").decode("ascii", "replace")] = (handed - settled, written)
    return _alive(pid, start, heartbeat, where), out


def unsettled(path: str | Path) -> dict[str, tuple[int, int]]:
    """Per run, the finished steps that processes killed while recording into ``path`` never settled,
    and the steps they had written (from their ledgers beside it; live processes are left out: their
    steps are in flight).  A run in several ledgers (several processes) has written ``-1``."""
    out: dict[str, tuple[int, int]] = {}
    if not SUPPORTED:
        return out
    import glob

    for name in glob.glob(ledger_glob(path)):
        try:
            with open(name, "rb") as fh:
                data = fh.read(SIZE)
        except OSError:
            continue
        found = read_ledger(data)
        if found is None or found[0]:
            continue
        for rid, (n, written) in found[1].items():
            had = out.get(rid)
            out[rid] = (n, written) if had is None else (had[0] + n, -1)
    return out


def count(counts: Mapping[str, tuple[int, int]], run_id: str, steps_on_disk: int) -> int:
    """The finished steps of run ``run_id`` (``steps_on_disk`` of it were read) that a killed process never
    wrote, from `unsettled`'s ``counts``.

    A write cut by the kill (a JSONL batch stops part-way; a store's transaction committed just
    before) may have put steps on disk the ledger does not count as written yet: steps on disk beyond
    what it says were written are those, and are not counted again (for a run recorded by one process;
    several processes' steps cannot be told apart, and count as their ledgers say)."""
    found = counts.get(run_id)
    if found is None:
        return 0
    n, written = found
    if written >= 0:
        n -= min(n, max(0, steps_on_disk - written))
    return n


def killed(run: Run, counts: Mapping[str, tuple[int, int]]) -> Run:
    """``run`` with the finished steps a killed process never wrote counted as lost (`count`)."""
    return with_killed(run, count(counts, run.run_id, len(run.steps)))


def with_killed(run: Run, n: int) -> Run:
    """``run`` with ``n`` more finished steps counted as lost with a killed process (``recorder.lost.killed``)."""
    if n <= 0:
        return run
    md = dict(run.metadata)
    account = md.get(RECORDER_KEY)
    account = dict(account) if isinstance(account, Mapping) else {}
    lost = account.get("lost")
    lost = dict(lost) if isinstance(lost, Mapping) else {}
    had = lost.get(KILLED)
    lost[KILLED] = (had if isinstance(had, int) and not isinstance(had, bool) else 0) + n
    account["lost"] = lost
    md[RECORDER_KEY] = account
    return dataclasses.replace(run, metadata=md)


def apply(runs: Iterable[Run], path: str | Path) -> list[Run]:
    """The runs read from ``path``, each with the steps a killed process never wrote counted (`killed`)."""
    counts = unsettled(path)
    runs = list(runs)
    if not counts:
        return runs
    return [killed(r, counts) for r in runs]


class Ledger:
    """This process's ledger beside one file: the mapping, and which slots are taken."""

    def __init__(self, target: str | Path) -> None:
        """Create the ledger file and map it.

        Raises:
            OSError: the directory cannot take it (read-only, full); the runs then record without one.
        """
        import secrets

        self.path = ledger_path(target, secrets.token_hex(3))
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.ftruncate(fd, SIZE)
            self.map: Any = mmap.mmap(fd, SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            self.path.unlink(missing_ok=True)
            raise
        os.close(fd)
        _HEADER.pack_into(self.map, 0, MAGIC, os.getpid(), process_start(os.getpid()), time.time_ns(), host())
        self.free = list(range(SLOTS - 1, -1, -1))
        self.open = 0

    def claim(self, run_id: str) -> int | None:
        """Take a slot for a run (None: all taken); returns the byte offset of its ``handed`` counter."""
        if not self.free:
            return None
        off = 64 + 64 * self.free.pop()
        # The run id and zeroed counters first, then the state: a reader never sees a half-made slot as open.
        _SLOT.pack_into(self.map, off, 0, 0, 0, 0, run_id.encode("ascii", "replace")[:32])
        struct.pack_into("<q", self.map, off, 1)
        self.open += 1
        return off + 8

    def release(self, counter: int) -> None:
        """Free a run's slot (the run ended and its end record was written)."""
        off = counter - 8
        struct.pack_into("<q", self.map, off, 0)
        self.free.append((off - 64) // 64)
        self.open -= 1

    def settle(self, counter: int, settled: int, written: int) -> None:
        """The writer's side of a run's slot: ``written`` first, so ``settled - written`` is never read
        larger than the drops it counts."""
        struct.pack_into("<q", self.map, counter + 16, written)
        struct.pack_into("<q", self.map, counter + 8, settled)

    def beat(self) -> None:
        """Say the process is alive (read only by readers on another host)."""
        struct.pack_into("<q", self.map, 24, time.time_ns())

    def clean(self) -> bool:
        """Whether every step handed so far is settled (then the ledger says nothing a reader needs)."""
        for off in range(64, SIZE, 64):
            state, handed, settled = struct.unpack_from("<qqq", self.map, off)
            if state == 1 and handed > settled:
                return False
        return True

    def close(self, remove: bool) -> None:
        """Unmap the ledger (``remove``: and delete its file)."""
        try:
            self.map.close()
        except (BufferError, ValueError):
            pass  # a counter view is still held: the mapping goes with the process
        if remove:
            self.path.unlink(missing_ok=True)


__all__ = ["KILLED", "Ledger", "SIZE", "SLOTS", "apply", "count", "killed", "ledger_glob", "ledger_path", "read_ledger", "unsettled", "with_killed"]
