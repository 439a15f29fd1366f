"""The embedded run store: one SQLite file in WAL mode.

The store keeps the same records as the JSONL format (see `trajdebug.core.jsonl`):
each batch the recorder writes is one row of the ``chunks`` table holding its
records as JSON lines, exactly the bytes a JSONL file would hold, under the
run's integer key; a ``runs`` table keeps one row per run for listing and
filtering (name, times, outcome, counts, records lost).  Loading a run replays
its records through the same `RunBuilder` the JSONL reader uses, so a run reads
the same from either.

Why chunks (schema version 2, measured in ``benchmarks/recording.py``): a row
per record cost about 4.5 µs of SQLite work per step (the row, its index
entries, a 32-hex run id repeated in each), as much as everything else the
recorder does; a row per batch costs the bytes alone.  The records are encoded
once, on the recorder's writer thread, and those bytes go straight into the
row; the ``runs`` row is updated once per batch, not once per record.  Stores
of schema version 1 (a row per record in ``records``) are read as they are and,
when opened for writing, upgraded in place: the ``runs`` table gets its keys,
the old rows stay where they are and are read before a run's chunks.

Why blobs (schema version 3, measured in ``benchmarks/agentcost.py``): an agent
resends its conversation with each model call, the same or grown by a turn, and
SQLite writes every byte twice (the log, then the database); 6 KB of chat per
step cost the store 15-20 µs more than a JSONL file.  A long step line is kept
in its chunk as its head and a reference to a blob holding the rest, and a blob
is stored as what it shares with the run's previous blob and what follows
(`Store._share`, in ``writer.py``), so a conversation costs its new turns, not its whole text per
call; reading rebuilds each line byte for byte (``lines._unshared``).  Version-2 stores
are read as they are and gain the table when opened for writing.

Several processes may write one store at once: each batch is one short
``BEGIN IMMEDIATE`` transaction, WAL mode lets readers run beside the writer,
and a busy timeout makes writers queue instead of failing.  The write-ahead log
is checkpointed by SQLite as it grows and truncated back to
`WAL_SIZE_LIMIT` after each checkpoint, so it never stays as large as the data.

Reading is read-only (``Store(path, readonly=True)``, what every reporting
command uses), so a store on a read-only mount can be read; a store found
without ``-wal`` and ``-shm`` files is left without them (`files.tidy_log_files`),
and tolerant: a
record that cannot be decoded, a corrupt page, a run listed without records are
each a one-line problem naming the store, the run and the record, and every
other run still loads (`Store.read`).  Writing a whole run (`Store.save_run`:
``import``, integrations, merges between stores) replaces the run's earlier
copy, so importing a file twice does not duplicate it, and redacts secrets per
the process policy, like every write path.

The package, from the ground up: ``schema`` (the tables, versions and upgrades, `RunSummary`, the
errors), ``lines`` (a batch grouped by run, renamed, shared into blobs and read back, the ``runs`` row
kept up to date), ``files`` (the default path, creating the file, connections, the spill file),
``reader`` (`StoreReader`: listing, reading, loading, resolving) and ``writer`` (`Store`: opening,
appending, replacing, spilling).
"""

from __future__ import annotations

from trajdebug.store.files import DEFAULT_STORE, append_spill, default_store_path, is_store, spill_path
from trajdebug.store.lines import run_note
from trajdebug.store.reader import StoreReader, ambiguous_prefix
from trajdebug.store.schema import (
    PAGE_SIZE,
    SCHEMA_VERSION,
    WAL_SIZE_LIMIT,
    RunSummary,
    StoreBusyError,
    StoreError,
)
from trajdebug.store.writer import CHUNK_BYTES, SHARED_KEEP, SHARED_MIN, Store


__all__ = [
    "CHUNK_BYTES",
    "DEFAULT_STORE",
    "PAGE_SIZE",
    "SCHEMA_VERSION",
    "SHARED_KEEP",
    "SHARED_MIN",
    "WAL_SIZE_LIMIT",
    "RunSummary",
    "Store",
    "StoreBusyError",
    "StoreError",
    "StoreReader",
    "append_spill",
    "ambiguous_prefix",
    "default_store_path",
    "is_store",
    "run_note",
    "spill_path",
]
