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
# asking it something, and is not checked.  Every verb but SELECT is also a word prose opens
# with ("Replace 30 l of ...", "With 3 rooms free, ...", "Update: ..."), so it counts only with
# the clause its statement cannot do without further on (INTO, AS (, SET, FROM or WHERE); a
# broken statement keeps that clause, and prose read as SQL would be reported as SQL that
# does not parse.
_SQL_START = re.compile(
    r"^\s*(?:select\b|with\b(?=.*\bas\s*\()|(?:insert|replace)\b(?=.*\b(?:into|values)\b)"
    r"|update\b(?=.*\bset\b)|delete\b(?=.*\b(?:from|where)\b))",
    re.I | re.S,
)
SQL_KEYS = ("sql", "query", "statement", "sql_query")
"""Argument names under which a tool receives SQL, in the order read when a call holds several (a tuple: a
set of strings is read in an order that follows the hash seed)."""


def looks_like_sql(s: str) -> bool:
    """True when a string (possibly fenced) starts like an SQL query or data change."""
    return bool(_SQL_START.match(strip_fence(s)))


def sql_of(value: Any) -> str | None:
    """The SQL a value carries: the value itself, or its ``sql``/``query`` field."""
    if isinstance(value, str):
        return strip_fence(value) if looks_like_sql(value) else None
    if is_mapping(value):
        for k in SQL_KEYS:
            v = value.get(k)
            if isinstance(v, str) and looks_like_sql(v):
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
