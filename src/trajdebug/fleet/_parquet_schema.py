"""The Parquet dataset's layout: its tables, their columns and Arrow types, and the part sizes (docs/format.md).

Kept apart from the writer and reader (`trajdebug.fleet.parquet`), which both read it: the schema is what a
dataset promises its readers, DuckDB queries included.
"""

from __future__ import annotations

from typing import Any


FORMAT = "trajdebug-parquet"
SCHEMA_VERSION = 1
"""Version of the dataset layout, in ``_trajdebug.json``."""

PART_SIZE = 250
"""Runs per part, at most (a part is one unit of work: several parts let a cluster share the work)."""

PART_ROWS = 50_000
"""Step rows per part, at most: a part closes at `PART_SIZE` runs or this many steps, whichever
comes first (never inside a run), so a dataset of long runs still splits into bounded parts."""

MANIFEST = "_trajdebug.json"

_USAGE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("model", "string"),
    ("prompt_tokens", "int64"),
    ("completion_tokens", "int64"),
    ("total_tokens", "int64"),
    ("cost", "float64"),
)
"""The token usage and cost of a run (its steps summed) or of a step (`_usage_cols`)."""

_TIME_COLUMNS: tuple[tuple[str, str], ...] = (("start_time", "timestamp"), ("end_time", "timestamp"))
"""A run's or a step's start and end as timestamps (for time filters in queries)."""

# (column, pyarrow type name, nullable) per table; the order is the file's column order.
COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "runs": (
        ("run_id", "string"),
        ("name", "string"),
        ("start_ns", "int64"),
        ("end_ns", "int64"),
        ("outcome", "string"),
        ("failure_reason", "string"),
        ("continues", "string"),
        ("task", "string"),
        ("version", "string"),
        ("steps", "int32"),
        ("errors", "int32"),
        ("metadata_json", "string"),
        ("session", "string"),
        *_USAGE_COLUMNS,
        *_TIME_COLUMNS,
        ("metadata", "map"),
        ("tags", "list"),
    ),
    "steps": (
        ("run_id", "string"),
        ("step_id", "string"),
        ("seq", "int32"),
        ("name", "string"),
        ("kind", "string"),
        ("parent_id", "string"),
        ("agent", "string"),
        ("status", "string"),
        ("error_type", "string"),
        ("error_message", "string"),
        ("error_id", "string"),
        ("error_traceback", "string"),
        ("start_ns", "int64"),
        ("end_ns", "int64"),
        ("attempt", "int32"),
        ("retry_of", "string"),
        ("source_index", "int64"),
        ("input_json", "string"),
        ("output_json", "string"),
        ("attributes_json", "string"),
        *_USAGE_COLUMNS,
        *_TIME_COLUMNS,
    ),
    "errors": (
        ("run_id", "string"),
        ("error_id", "string"),
        ("step_id", "string"),
        ("seq", "int32"),
        ("type", "string"),
        ("message", "string"),
        ("parent_error_id", "string"),
        ("attempt", "int32"),
        ("stage", "string"),
        ("stages_json", "string"),
        ("attributes_json", "string"),
    ),
    "dependencies": (
        ("run_id", "string"),
        ("step_id", "string"),
        ("upstream_step_id", "string"),
        ("kind", "string"),
        ("origin", "string"),
        ("confidence", "float64"),
        ("key", "string"),
        ("upstream_run_id", "string"),
    ),
    # The scores of the run and its steps (`trajdebug.score`) as `runs --json` gives them; ``value_json`` is the
    # exact value, ``value_number`` the same when numeric (for queries: AVG, a bound).  Comments are as stored:
    # redacted when they were written.
    "scores": (
        ("run_id", "string"),
        ("step_id", "string"),
        ("seq", "int32"),
        ("name", "string"),
        ("value_json", "string"),
        ("value_number", "float64"),
        ("source", "string"),
        ("by", "string"),
        ("comment", "string"),
        ("at_ns", "int64"),
    ),
    "analyses": (
        ("run_id", "string"),
        ("name", "string"),
        ("start_ns", "int64"),
        ("group_id", "string"),
        ("title", "string"),
        ("root_kind", "string"),
        ("root_name", "string"),
        ("root_agent", "string"),
        ("error", "string"),
        ("evidence", "string"),
        ("path_shape", "string"),
        ("root_step", "string"),
        ("severity", "string"),
        ("critical", "bool"),
        ("message", "string"),
        ("analysis_json", "string"),
    ),
}
"""Every table's columns and their Parquet (Arrow) types; every column is nullable."""

TABLES = ("runs", "steps", "errors", "dependencies", "scores")
"""The tables every dataset has (``analyses`` is optional; a dataset written before scores has no ``scores``)."""


def _schema(table: str) -> Any:
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "int32": pa.int32(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "timestamp": pa.timestamp("ns", tz="UTC"),
        "map": pa.map_(pa.string(), pa.string()),
        "list": pa.list_(pa.string()),
    }
    return pa.schema([pa.field(name, types[t], nullable=True) for name, t in COLUMNS[table]])
