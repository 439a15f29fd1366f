"""The reading side of the store: listing, reading, loading and resolving runs.

`StoreReader` is what `trajdebug.store.Store` extends with writing; a store opened read-only
(``Store(path, readonly=True)``) uses this side alone.  Reading is tolerant: what cannot be read of a
run is a problem naming the store, the run and the record, and every other run still loads.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from trajdebug.core import ledger
from trajdebug.core.codec import loads
from trajdebug.core.jsonl import FormatError, ReadResult, RunBuilder
from trajdebug.core.model import Run
from trajdebug.core.schema import RECORDER_KEY, lost_in
from trajdebug.store.files import connect, connect_readonly, log_files, spill_path, tidy_log_files
from trajdebug.store.lines import _group, _unshared, run_note
from trajdebug.store.schema import _RUN_COLUMNS, RunSummary, StoreError, _reason


log = logging.getLogger("trajdebug")


def ambiguous_prefix(where: Any, prefix: str, ids: Sequence[str], shown: int = 4) -> str:
    """The one-line error for a run id prefix that several runs share, listing a few of them.

    Each listed id is whole, so the user can copy one back: a cut one (``support-lena-march-o``, newuser65)
    could match no run at all.
    """
    listed = list(dict.fromkeys(ids))[:shown]
    more = f", and {len(set(ids)) - len(listed)} more" if len(set(ids)) > len(listed) else ""
    return (
        f"{where}: run id prefix {prefix!r} is ambiguous: {len(set(ids))} runs match "
        f"({', '.join(listed)}{more}); give more of the id"
    )


class StoreReader:
    """The reading side of a store: `trajdebug.store.Store` opens the file and adds writing."""

    path: Path
    """The store file."""
    readonly: bool
    """Opened for reading only (nothing is created or changed)."""
    _timeout: float
    _local: threading.local
    """Per thread: its connection (``conn``) and the busy timeout set on it (``busy``)."""
    _version: int
    """The store's schema version (`SCHEMA_VERSION`, or 1 or 2 read as they are)."""
    _legacy: bool
    """The store holds a version-1 ``records`` table (read before a run's chunks)."""

    # Each thread gets its own connection: sqlite3 connections must not be
    # shared across threads without a lock, and a connection per thread keeps
    # the recorder's writer thread independent of readers.
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None and self.readonly:
            # Whether this connection will be the one to create the log files, so that closing it removes them.
            self._local.tidy = not any(f.exists() for f in log_files(self.path))
            conn = connect_readonly(self.path, self._timeout)
            self._local.conn = conn
        if conn is None:
            conn = connect(self.path, self._timeout)
            self._local.conn = conn
            self._local.busy = int(self._timeout * 1000)
        return conn

    def connection(self) -> sqlite3.Connection:
        """This thread's connection to the store, for reading its tables with SQL of one's own (``runs``:
        a row per run; ``chunks``, ``blobs``: the records).  Read only through it: every write goes
        through the store's methods, which keep the rows of a run consistent."""
        return self._conn()

    def set_busy_timeout(self, seconds: float | None) -> None:
        """How long this thread's connection waits for another writer's lock (None: the store's timeout)."""
        ms = int((self._timeout if seconds is None else seconds) * 1000)
        conn = self._conn()
        # Set only when it changes: the recorder's writer asks before every batch.
        if getattr(self._local, "busy", None) != ms:
            conn.execute(f"PRAGMA busy_timeout={ms}")
            self._local.busy = ms

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
            self._local.busy = None
            if self.readonly and getattr(self._local, "tidy", False):
                # A store only read is left as it was found (`tidy_log_files`).
                self._local.tidy = False
                tidy_log_files(self.path)

    def _spilled(self) -> dict[str, list[bytes]]:
        """The spill file's lines by run id (read-only readers read them with the store)."""
        try:
            data = spill_path(self.path).read_bytes()
        except OSError:
            return {}
        groups, _ = _group([line for line in data.splitlines(keepends=True) if line.strip()])
        return {rid: g.lines for rid, g in groups.items()}

    @staticmethod
    def _where(
        outcome: str | None, name: str | None, since_ns: int | None, until_ns: int | None, derived: bool
    ) -> tuple[str, list[str | int]]:
        where: list[str] = []
        args: list[str | int] = []
        if not derived:
            where.append("(note IS NULL OR (note NOT LIKE 'replay of %' AND note NOT LIKE 'reference for %'))")
        if outcome is not None:
            where.append("outcome = ?")
            args.append(outcome)
        if name is not None:
            where.append("name LIKE ?")
            args.append(name)
        if since_ns is not None:
            where.append("start_ns >= ?")
            args.append(since_ns)
        if until_ns is not None:
            where.append("start_ns <= ?")
            args.append(until_ns)
        return (" WHERE " + " AND ".join(where)) if where else "", args

    def count_runs(self, *, outcome: str | None = None, name: str | None = None, derived: bool = True) -> int:
        """How many runs `list_runs` would list with these filters and no limit."""
        where, args = self._where(outcome, name, None, None, derived)
        try:
            return int(self._conn().execute("SELECT count(*) FROM runs" + where, args).fetchone()[0])
        except sqlite3.DatabaseError:
            return len(self.list_runs(outcome=outcome, name=name, derived=derived))

    def list_runs(
        self,
        *,
        outcome: str | None = None,
        name: str | None = None,
        since_ns: int | None = None,
        until_ns: int | None = None,
        limit: int | None = None,
        derived: bool = True,
    ) -> list[RunSummary]:
        """List runs, newest first, filtered by outcome, name (SQL LIKE pattern) and start time.

        With ``derived=False``, replays and reference runs (the runs verification
        records for another run, see `run_note`) are left out.  Each summary says
        how many records the recorder lost for the run (read from its end record).
        """
        where, args = self._where(outcome, name, since_ns, until_ns, derived)
        lost = ", lost" if self._version >= 2 else ""
        sql = f"SELECT {_RUN_COLUMNS}{lost} FROM runs" + where
        sql += " ORDER BY start_ns DESC, rowid DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        conn = self._conn()
        try:
            rows = conn.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            log.warning("%s: the run list cannot be read (%s); listing from the records instead", self.path, _reason(exc))
            return self._list_from_records(outcome, name, since_ns, until_ns, limit, derived)
        out = []
        killed = ledger.unsettled(self.path)
        for row in rows:
            rid, name_, start, end, outcome_, reason, steps, errors, note = row[:9]
            n_lost = (row[9] if lost else self._lost(conn, str(rid))) + ledger.count(killed, str(rid), steps)
            out.append(RunSummary(rid, name_, start, end, outcome_, reason, steps, errors, note, n_lost))
        return out

    def _list_from_records(
        self,
        outcome: str | None,
        name: str | None,
        since_ns: int | None,
        until_ns: int | None,
        limit: int | None,
        derived: bool = True,
    ) -> list[RunSummary]:
        """`list_runs` for a store whose ``runs`` table is damaged: summaries of the runs that can be read."""
        import re

        result = self.read()
        for p in result.problems:
            log.warning("%s", p)
        pattern = None
        if name is not None:
            pattern = re.compile("".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in name), re.IGNORECASE | re.DOTALL)
        out = []
        for r in sorted(result.runs, key=lambda r: r.start_ns, reverse=True):
            if outcome is not None and r.outcome != outcome:
                continue
            if pattern is not None and not pattern.fullmatch(r.name):
                continue
            if (since_ns is not None and r.start_ns < since_ns) or (until_ns is not None and r.start_ns > until_ns):
                continue
            note = run_note(r.metadata)
            if not derived and note is not None and note.startswith(("replay of", "reference for")):
                continue
            out.append(
                RunSummary(
                    r.run_id, r.name, r.start_ns, r.end_ns, r.outcome, r.failure_reason, len(r.steps), len(r.errors),
                    note, lost_in(r.metadata.get(RECORDER_KEY)),
                )
            )
        return out[:limit] if limit is not None else out

    @staticmethod
    def _lost(conn: sqlite3.Connection, run_id: str) -> int:
        """Records lost, from the run's last end record (a version-1 store keeps no count in ``runs``)."""
        try:
            row = conn.execute(
                "SELECT body FROM records WHERE run_id = ? AND type = 'end' ORDER BY seq DESC LIMIT 1", (run_id,)
            ).fetchone()
        except sqlite3.DatabaseError:
            return 0  # the account cannot be read; the run's own reading will say why
        if row is None or RECORDER_KEY not in row[0]:
            return 0
        try:
            return lost_in(loads(row[0]).get(RECORDER_KEY))
        except (ValueError, AttributeError):
            return 0

    def run_ids(self) -> list[str]:
        """All run ids, oldest first (from the runs table, or from the records when that cannot be read)."""
        conn = self._conn()
        try:
            ids = [str(r[0]) for r in conn.execute("SELECT run_id FROM runs ORDER BY start_ns, rowid")]
            known = set(ids)
            return ids + [rid for rid in self._spilled() if rid not in known]
        except sqlite3.DatabaseError:
            seen: dict[str, None] = {}
            try:
                if self._legacy:
                    for (rid,) in conn.execute("SELECT run_id FROM records ORDER BY seq"):
                        seen.setdefault(str(rid), None)
                if self._version >= 2:
                    for rid in self._scan_keys():
                        seen.setdefault(rid, None)
            except sqlite3.DatabaseError:
                pass  # as many as could be read
            return list(seen)

    def _scan_keys(self) -> dict[str, int]:
        """Run ids and keys read from the chunks themselves (each line names its run): for a store whose
        ``runs`` table cannot be read."""
        found: dict[str, int] = {}
        conn = self._conn()
        for key, body in conn.execute("SELECT run, body FROM chunks WHERE id IN (SELECT min(id) FROM chunks GROUP BY run)"):
            head = bytes(body[: body.find(b"\n")])
            if head[:1] == b"\x1e":
                head = _unshared(conn, head + b"\n", {})
            try:
                rid = loads(head).get("run_id")
            except (ValueError, AttributeError):
                continue
            if isinstance(rid, str):
                found.setdefault(rid, int(key))
        return found

    def read(self, run_ids: Iterable[str] | None = None) -> ReadResult:
        """Read runs (all of them by default, oldest first) with what could not be read.

        A row that is not JSON or not a valid record, a corrupt page, or a run
        listed without records is a problem naming the store, the run and the
        row; the rest of that run (what could be read of it) and every other run
        still load.

        Raises:
            StoreError: not even the list of runs can be read.
        """
        problems: list[FormatError] = []
        try:
            ids = list(run_ids) if run_ids is not None else self.run_ids()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot list runs: {_reason(exc)}") from None
        spilled = self._spilled()
        if spilled:
            n = sum(len(v) for v in spilled.values())
            problems.append(
                FormatError(
                    f"{n} records of {len(spilled)} run(s) wait in {spill_path(self.path)} (a process exited while"
                    " the store was locked); read with the store, merged into it when it is next written",
                    source=str(self.path),
                )
            )
        runs = []
        killed = ledger.unsettled(self.path)
        for rid in ids:
            run, found = self._read_run(rid, spilled.get(rid, ()), killed)
            problems.extend(found)
            if run is not None:
                runs.append(run)
        return ReadResult(runs, problems)

    def _lines(self, conn: sqlite3.Connection, rid: str) -> Iterator[tuple[int, bytes]]:
        """A run's records as JSON lines, numbered from 1 in the order they were written: the rows of a
        version-1 store first, then the chunks.

        Raises:
            sqlite3.DatabaseError: a page cannot be read (what came before it was yielded).
        """
        n = 0
        if self._legacy:
            for (body,) in conn.execute("SELECT body FROM records WHERE run_id = ? ORDER BY seq", (rid,)):
                n += 1
                yield n, (body.encode("utf-8", "surrogatepass") if isinstance(body, str) else bytes(body)) + b"\n"
        if self._version < 2:
            return
        try:
            row = conn.execute("SELECT key FROM runs WHERE run_id = ?", (rid,)).fetchone()
            key = None if row is None else row[0]
        except sqlite3.DatabaseError:
            key = self._scan_keys().get(rid)
        if key is None:
            return
        cache: dict[int, bytes] = {}
        for (body,) in conn.execute("SELECT body FROM chunks WHERE run = ? ORDER BY id", (key,)):
            data = bytes(body) if not isinstance(body, bytes) else body
            start = 0
            while start < len(data):
                end = data.find(b"\n", start)
                end = len(data) if end < 0 else end + 1
                n += 1
                yield n, (_unshared(conn, data[start:end], cache) if data[start] == 0x1E else data[start:end])
                start = end

    def _read_run(
        self, rid: str, spilled: Sequence[bytes] | None = None, killed: Mapping[str, tuple[int, int]] | None = None
    ) -> tuple[Run | None, list[FormatError]]:
        source = f"{self.path} (run {rid})"
        builder = RunBuilder(source, split=False)
        if spilled is None:
            spilled = self._spilled().get(rid, ()) if spill_path(self.path).exists() else ()
        try:
            n = 0
            for n, line in self._lines(self._conn(), rid):
                self._add_line(builder, source, n, line)
        except sqlite3.DatabaseError as exc:
            builder.problems.append(FormatError(f"cannot read the rest of this run: {_reason(exc)}", source=source))
        for i, line in enumerate(spilled, start=n + 1):
            self._add_line(builder, source, i, line)
        runs = builder.runs()
        if not runs:
            builder.problems.append(FormatError("listed, but no record of it could be read", source=source))
            return None, builder.problems
        # Finished steps a process killed while recording here never wrote (its ledger beside the store).
        if killed is None:
            killed = ledger.unsettled(self.path)
        return ledger.killed(runs[0], killed), builder.problems

    @staticmethod
    def _add_line(builder: RunBuilder, source: str, n: int, line: bytes) -> None:
        try:
            rec = loads(line)
        except (ValueError, TypeError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            builder.problems.append(FormatError(f"record is not valid JSON ({reason})", source=source, line=n))
            return
        builder.add(rec, line=n)

    def load_run(self, run_id: str) -> Run:
        """Load one run (what could not be read of it is logged as a warning).

        Raises:
            KeyError: no such run (a unique prefix of a run id is accepted), or
                none of its records could be read.
        """
        rid = self.resolve(run_id)
        run, problems = self._read_run(rid)
        for p in problems:
            log.warning("%s", p)
        if run is None:
            raise KeyError(f"{self.path}: run {rid!r} has no readable record")
        return run

    def load_runs(self, run_ids: Iterable[str] | None = None) -> list[Run]:
        """Load several runs (all of them by default), oldest first; problems are logged as warnings."""
        result = self.read(run_ids)
        for p in result.problems:
            log.warning("%s", p)
        return result.runs

    def resolve(self, run_id: str) -> str:
        """Return the full run id for an id or a unique prefix of one.

        Raises:
            KeyError: no run, or several, match.
        """
        conn = self._conn()
        if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
            return run_id
        like = run_id.replace("%", r"\%").replace("_", r"\_") + "%"
        rows = conn.execute(
            r"SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\' ORDER BY start_ns DESC", (like,)
        ).fetchall()
        if len(rows) == 1:
            return str(rows[0][0])
        if not rows:
            spilled = [rid for rid in self._spilled() if rid.startswith(run_id)] if spill_path(self.path).exists() else []
            if len(spilled) == 1:
                return spilled[0]
            raise KeyError(f"{self.path}: no run {run_id!r}")
        raise KeyError(ambiguous_prefix(self.path, run_id, [str(r[0]) for r in rows]))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
