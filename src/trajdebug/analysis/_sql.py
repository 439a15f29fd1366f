"""SQL in recorded values: recognised, checked with ``EXPLAIN`` on the schema alone, re-run read-only.

A statement a run recorded is untrusted (an LLM wrote it): it is only ``EXPLAIN``-ed on an in-memory
SQLite database that holds nothing but the given schema, or re-run, on request, on a database file
opened read-only under an authorizer that allows plain reads.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from trajdebug.analysis._content import strip_fence
from trajdebug.core.values import is_mapping


# Queries and data changes; DDL (CREATE, DROP, ...) describes a schema rather than
# asking it something, and is not checked.
_SQL_VERB = re.compile(r"^\s*(?:select|with|insert|update|delete|replace)\b", re.I)
# A name as SQL writes it: bare, quoted ("a b", `a`, [a]) or qualified (main.t).
_NAME = r"""(?:[\w$]+|"[^"]*"|`[^`]*`|\[[^\]]*\])(?:\.(?:[\w$]+|"[^"]*"|`[^`]*`|\[[^\]]*\]))?"""
# Every verb but SELECT is also a word prose opens with ("Replace 30 l of ...", "With 3 rooms
# free, ...", "Update: set the heater to 27 C", "Insert the card into the reader"), so a bare
# text counts as a statement only when the words right after its verb are the statement's own
# grammar: ``INSERT [OR x] INTO name (``/``VALUES``/``SELECT``/..., ``UPDATE [OR x] name SET``,
# ``DELETE FROM name`` then its end or a clause, ``WITH [RECURSIVE] name [(cols)] AS
# [[NOT] MATERIALIZED] (``.  Prose may hold "into", "set" or "from" further on, never there.
_SQL_STATEMENT = re.compile(
    r"^\s*(?:select\b"
    rf"|with\s+(?:recursive\s+)?{_NAME}\s*(?:\([^()]*\))?\s*as(?:\s+(?:not\s+)?materialized)?\s*\("
    rf"|(?:insert(?:\s+or\s+\w+)?|replace)\s+into\s+{_NAME}\s*(?:\(|$|;|(?:as|values|select|default|with)\b)"
    rf"|update(?:\s+or\s+\w+)?\s+{_NAME}(?:\s+as\s+\w+)?\s+set\b"
    rf"|delete\s+from\s+{_NAME}\s*(?:$|;|(?:as|where|returning|indexed|not|order|limit)\b))",
    re.I,
)
SQL_KEYS = ("sql", "query", "statement", "sql_query")
"""Argument names under which a tool receives SQL, in the order read when a call holds several (a tuple: a
set of strings is read in an order that follows the hash seed)."""


def looks_like_sql(s: str) -> bool:
    """True when a text (possibly fenced) is an SQL query or data change by the words right after its verb.

    For a bare text, which may be prose opening with the same word; a value that a tool receives under an
    SQL key is read by `sql_of` on its verb alone.
    """
    return bool(_SQL_STATEMENT.match(strip_fence(s)))


def sql_of(value: Any) -> str | None:
    """The SQL a value carries: the value itself, or its ``sql``/``query`` field.

    Under one of `SQL_KEYS` the key already says the text is SQL, so its verb is enough: a broken
    statement that lacks the clause its verb needs (``UPDATE t a = 1``, ``DELETE t``) is still SQL
    there, and is checked.  A bare text must read as a statement (`looks_like_sql`).
    """
    if isinstance(value, str):
        return strip_fence(value) if looks_like_sql(value) else None
    if is_mapping(value):
        for k in SQL_KEYS:
            v = value.get(k)
            if isinstance(v, str) and _SQL_VERB.match(strip_fence(v)):
                return strip_fence(v)
    return None


@lru_cache(maxsize=16)
def _schema_db(schema: str) -> sqlite3.Connection:
    con = sqlite3.connect(":memory:", check_same_thread=False)
    con.executescript(schema)
    return con


def schema_from_db(path: str | Path) -> str:
    """The DDL of a SQLite database file, read without modifying it.

    Raises:
        ValueError: the file cannot be opened as a SQLite database.
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{p}: no such SQLite database")
    try:
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        try:
            rows = con.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{p}: not a SQLite database ({exc})") from None
    return ";\n".join(r[0] for r in rows) + (";" if rows else "")


def sql_problem(sql: str, schema: str | None = None) -> tuple[str, str] | None:
    """Check an SQL statement with SQLite's ``EXPLAIN`` (the statement is never run).

    Args:
        sql: The statement.
        schema: DDL of the database it targets.  Without a schema only syntax
            errors count (an unknown table says nothing).

    Returns:
        ``("syntax", message)`` or ``("schema", message)``, or None when it checks out.
    """
    text = sql.strip().rstrip(";").strip()
    if not text:
        return ("syntax", "empty statement")
    try:
        con = _schema_db(schema or "")
    except sqlite3.Error as exc:
        raise ValueError(f"the SQL schema does not load: {exc}") from None
    try:
        con.execute("EXPLAIN " + text).fetchall()
    except sqlite3.ProgrammingError as exc:  # several statements, wrong bindings
        return ("syntax", str(exc))
    except sqlite3.Error as exc:
        msg = str(exc)
        if "syntax error" in msg or "incomplete input" in msg or "unrecognized token" in msg:
            return ("syntax", msg)
        if schema:
            return ("schema", msg)
        return None
    return None


RERUN_ROW_LIMIT = 10_000
RERUN_STEP_LIMIT = 2_000_000
"""Bounds on re-running a recorded query: rows fetched, SQLite VM steps (then it is abandoned)."""


_ALLOWED_ACTIONS = frozenset(
    {
        sqlite3.SQLITE_SELECT,
        sqlite3.SQLITE_READ,
        sqlite3.SQLITE_FUNCTION,
        getattr(sqlite3, "SQLITE_RECURSIVE", 33),
    }
)


def _read_only(action: int, *_: Any) -> int:
    """SQLite authorizer: plain reads only."""
    return sqlite3.SQLITE_OK if action in _ALLOWED_ACTIONS else sqlite3.SQLITE_DENY


def rerun_query(db: str | Path, sql: str) -> list[tuple[Any, ...]] | None:
    """Re-run a read-only query on a SQLite file; None when that is not possible.

    The file is opened read-only (``mode=ro``) under an authorizer that allows
    only reads (no ``ATTACH``, no ``PRAGMA``), only one statement runs, and the
    query is abandoned after `RERUN_STEP_LIMIT` VM steps or `RERUN_ROW_LIMIT` rows.
    """
    p = Path(db)
    if not p.is_file():
        return None
    try:
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    budget = [RERUN_STEP_LIMIT // 1000]

    def tick() -> int:
        budget[0] -= 1
        return 1 if budget[0] < 0 else 0

    con.set_progress_handler(tick, 1000)
    # Defence in depth beside mode=ro: the statement comes from a recorded run, so
    # only reads are authorized (no ATTACH, which can create files even on a
    # read-only connection, no PRAGMA, no writes).
    con.set_authorizer(_read_only)
    try:
        return con.execute(sql.strip().rstrip(";")).fetchmany(RERUN_ROW_LIMIT)
    except (sqlite3.Error, ValueError):
        return None
    finally:
        con.close()


def schema_from_metadata(meta: Mapping[str, Any], *, open_files: bool = False) -> str | None:
    """The SQL schema a run's metadata states (``sql_schema``), if any.

    A ``sqlite_db`` path in the metadata is read only with ``open_files=True``:
    a trace names whatever path its author chose, and analysis never opens files
    an imported trace names unless the user asked for it.
    """
    for key in ("sql_schema", "sqlite_schema"):
        schema = meta.get(key)
        if isinstance(schema, str) and schema.strip():
            return schema
    db = meta.get("sqlite_db")
    if open_files and isinstance(db, str) and db:
        try:
            return schema_from_db(db)
        except ValueError:
            return None
    return None


__all__ = [
    "RERUN_ROW_LIMIT",
    "RERUN_STEP_LIMIT",
    "SQL_KEYS",
    "looks_like_sql",
    "rerun_query",
    "schema_from_db",
    "schema_from_metadata",
    "sql_of",
    "sql_problem",
]
