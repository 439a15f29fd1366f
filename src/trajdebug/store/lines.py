"""A batch of record lines as the store keeps them: grouped by run, renamed, shared, summarized.

A batch is grouped by run (`_group`) reading each line the recorder wrote by its head alone; a run
that clashes with one the store holds gets a new id (`_renamed_group`); a long step line is kept as
its head and a blob, rebuilt on reading (`_unshared`, `_blob`); and a run's ``runs`` row follows its
run, meta, mark and end records (`_summarize`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

from trajdebug.core.codec import dumps_line, loads
from trajdebug.core.schema import RECORDER_KEY, lost_in, meta_record


# The head of a record line as the recorder and `write_records` encode it (``v``, ``t``,
# ``run_id`` first): read without decoding the line; any other line is decoded.
_HEAD = b'{"v":1,"t":"'
_RUN_ID = b',"run_id":"'
_STEP_HEAD = b'{"v":1,"t":"step","run_id":"'
_SUMMARY_TYPES = frozenset({"run", "meta", "mark", "end"})


def run_note(metadata: Mapping[str, Any]) -> str | None:
    """A short note on what a run is, from its metadata (shown by ``trajdebug runs``)."""
    if metadata.get("replay_of"):
        return f"replay of {str(metadata['replay_of'])[:8]}"
    if metadata.get("reference_for"):
        return f"reference for {str(metadata['reference_for'])[:8]}"
    fault = metadata.get("fault")
    if isinstance(fault, Mapping) and fault.get("name"):
        return f"fault: {fault['name']}"
    return None


class _Group:
    """The lines of one run in a batch, with what its ``runs`` row needs to know of them."""

    __slots__ = ("errors", "lines", "starts", "steps", "summary")

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.steps = 0
        self.errors = 0
        self.starts = False
        """The batch holds the run's ``run`` record (its start)."""
        self.summary: list[Mapping[str, Any]] = []
        """The run, meta, mark and end records, decoded, in order."""


def _started(conn: sqlite3.Connection, run_id: str) -> bool:
    """The store holds a run start (a ``run`` record) under this id already."""
    row = conn.execute("SELECT start_ns, name FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return row is not None and (row[0] is not None or bool(row[1]))


def _fresh_id(conn: sqlite3.Connection) -> str:
    """A run id from the OS's random source that the store does not hold."""
    while True:
        rid = f"{int.from_bytes(os.urandom(16), 'big') | 1:032x}"
        if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (rid,)).fetchone() is None:
            return rid


def _renamed_line(line: bytes, renamed: Mapping[str, str]) -> bytes:
    """A record line under the new id of its run, when its run was given one."""
    try:
        rec = loads(line)
    except (ValueError, TypeError):
        return line
    if isinstance(rec, Mapping) and rec.get("run_id") in renamed:
        return dumps_line({**rec, "run_id": renamed[rec["run_id"]]})
    return line


def _renamed_group(group: _Group, old: str, new: str, clash: str | None = None) -> _Group:
    """The group's lines under run id ``new``; ``clash``: the id was taken by another run (the run's
    recorder account says so, in a ``meta`` record now and in its ``end`` record)."""
    out = _Group()
    out.steps, out.errors, out.starts = group.steps, group.errors, group.starts
    needle = b'"run_id":"' + old.encode() + b'"'
    into = b'"run_id":"' + new.encode() + b'"'
    note = {"renamed_from": old, "warnings": [f"run id {old} was taken by another run in this store; stored as {new}"]}
    for line in group.lines:
        if line.startswith(_HEAD) and needle in line[:80] and b'"t":"end"' not in line[:20]:
            out.lines.append(line.replace(needle, into, 1))
            continue
        try:
            rec = dict(loads(line))
        except (ValueError, TypeError):
            continue
        rec["run_id"] = new
        if rec.get("t") == "end":
            account = rec.get(RECORDER_KEY)
            rec[RECORDER_KEY] = {**(account if isinstance(account, Mapping) else {}), **note}
        out.lines.append(dumps_line(rec))
        if rec.get("t") == "run" and clash is not None:
            out.lines.append(dumps_line(meta_record(new, {RECORDER_KEY: note})))
    out.summary = [{**r, "run_id": new} for r in group.summary]
    return out


def _common(a: bytes, ao: int, b: bytes, bo: int) -> int:
    """The length of the common prefix of ``a[ao:]`` and ``b[bo:]`` (halving: a dozen compares in C)."""
    view = memoryview(b)
    lo, hi = 0, min(len(a) - ao, len(b) - bo)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a.startswith(view[bo + lo : bo + mid], ao + lo):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _unshared(conn: sqlite3.Connection, line: bytes, cache: dict[int, bytes]) -> bytes:
    """A line as `Store._share` stored it (``\\x1e<blob>\\x1e<head>\\n``) made whole again: its head and its
    blob.  A blob that cannot be found leaves the line as it is (then read as a record that is not JSON)."""
    sep = line.find(b"\x1e", 1)
    try:
        body = _blob(conn, int(line[1:sep]), cache)
    except ValueError:
        return line
    return line if body is None else line[sep + 1 : -1] + body


def _blob(conn: sqlite3.Connection, bid: int, cache: dict[int, bytes]) -> bytes | None:
    """A blob's bytes: its base's first ``keep`` bytes and its body, down the chain of bases (each
    older than the blob that names it); ``cache``: blobs made already (a run's lines refer to the last
    few)."""
    chain: list[tuple[int, int, bytes]] = []
    data = b""
    while True:
        if bid in cache:
            data = cache[bid]
            break
        row = conn.execute("SELECT base, keep, body FROM blobs WHERE id = ?", (bid,)).fetchone()
        if row is None:
            return None
        chain.append((bid, int(row[1]), bytes(row[2])))
        base = row[0]
        if base is None:
            break
        if not 0 < base < bid:
            return None  # damaged: a chain only ever points back
        bid = int(base)
    if len(cache) > 64:
        cache.clear()
    for cid, keep, body in reversed(chain):
        data = data[:keep] + body
        cache[cid] = data
    return data


def _group(lines: Sequence[bytes]) -> tuple[dict[str, _Group], int]:
    """Lines grouped by run, and how many were skipped (not a record with a run id and a type).

    A line as the recorder writes it (``{"v":1,"t":"step","run_id":"...",``) is read by its head
    alone: a step or error line only counts; the rest are decoded.
    """
    groups: dict[str, _Group] = {}
    skipped = 0
    first = lines[0] if lines else b""
    if first.startswith(_STEP_HEAD):
        # The common batch: step lines of one run only, tested in C (no Python step per line).
        q = first.find(b'"', len(_STEP_HEAD))
        head = first[: q + 1]
        raw = first[len(_STEP_HEAD) : q]
        try:
            alike = q > 0 and b"\\" not in raw and all(map(bytes.startswith, lines, repeat(head)))
        except TypeError:  # a line that is not bytes (a bytearray): the loop below reads it
            alike = False
        if alike:
            group = groups[raw.decode("utf-8", "replace")] = _Group()
            group.lines = list(lines)
            group.steps = len(lines)
            return groups, 0
    # The head of a step line of the last run a step was seen of: most lines of a batch match it.
    step_head = b"\x00"
    step_group = _Group()
    for line in lines:
        if line.startswith(step_head):
            step_group.lines.append(line)
            step_group.steps += 1
            continue
        t: str | None = None
        rid = ""  # set with t below (read only once t is)
        rec: Any = None
        if line.startswith(_HEAD):
            end = line.find(b'"', 12)
            if line.startswith(_RUN_ID, end + 1):
                q = line.find(b'"', end + 12)
                raw = line[end + 12 : q]
                if q > 0 and b"\\" not in raw:
                    t, rid = line[12:end].decode("utf-8", "replace"), raw.decode("utf-8", "replace")
        if t is None or t in _SUMMARY_TYPES:
            try:
                rec = loads(line)
                t, rid = rec["t"], rec["run_id"]
            except (ValueError, TypeError, KeyError):
                skipped += 1
                continue
            if t is None or rid is None or not isinstance(rec, Mapping):
                skipped += 1
                continue
            t, rid = str(t), str(rid)
        group = groups.get(rid) or groups.setdefault(rid, _Group())
        group.lines.append(line)
        if t == "step":
            group.steps += 1
            step_head, step_group = b'{"v":1,"t":"step","run_id":"' + rid.encode() + b'"', group
        elif t == "error":
            group.errors += 1
        elif t in _SUMMARY_TYPES and rec is not None:
            group.summary.append(rec)
            group.starts = group.starts or t == "run"
    return groups, skipped


def _summarize(conn: sqlite3.Connection, key: int, r: Mapping[str, Any]) -> None:
    """Bring a run's row up to date with one of its run, meta, mark or end records."""
    t = r.get("t")
    metadata = r.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    if t == "run":
        name = r.get("name")
        start = r.get("start_ns")
        conn.execute(
            "UPDATE runs SET name = ?, start_ns = ?, note = coalesce(?, note) WHERE key = ?",
            (name if isinstance(name, str) else "", start if type(start) is int else None, run_note(metadata), key),
        )
    elif t == "meta":
        note = run_note(metadata)
        if note:
            conn.execute("UPDATE runs SET note = ? WHERE key = ?", (note, key))
        if RECORDER_KEY in metadata:
            # The recorder's running account (records dropped under load so far).
            conn.execute("UPDATE runs SET lost = ? WHERE key = ?", (lost_in(metadata[RECORDER_KEY]), key))
    elif t == "mark":
        marked = r.get("outcome")
        reason = r.get("failure_reason")
        conn.execute(
            "UPDATE runs SET outcome = ?, failure_reason = ? WHERE key = ?",
            (marked if marked in ("success", "failure") else "failure", reason if isinstance(reason, str) else None, key),
        )
    elif t == "end":
        end = r.get("end_ns")
        outcome = r.get("outcome")
        reason = r.get("failure_reason")
        conn.execute(
            "UPDATE runs SET end_ns = ?, outcome = ?, failure_reason = ?, lost = ? WHERE key = ?",
            (
                end if type(end) is int else None,
                outcome if outcome in ("success", "failure", "incomplete") else "incomplete",
                reason if isinstance(reason, str) else None,
                lost_in(r.get(RECORDER_KEY)),
                key,
            ),
        )
