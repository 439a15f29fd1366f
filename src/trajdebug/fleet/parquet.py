"""Runs as a Parquet dataset: the writer, the reader, and DuckDB queries over it (the schema: `_parquet_schema`).

A dataset is a folder with one sub-folder per table (``runs``, ``steps``,
``errors``, ``dependencies``, and ``analyses`` when analyses were written),
each holding ``part-NNNNN.parquet`` files, plus ``_trajdebug.json`` naming
the format.  Part *k* of every table holds the same runs, so one part is a
self-contained unit of work: a worker reads part *k* of each table and
rebuilds those runs exactly (`read_part`).  Values that are free JSON
(inputs, outputs, attributes, metadata) are stored as JSON text columns
(``*_json``).  Model, tokens and cost (`trajdebug.usage`) are columns of
``runs`` (the sum over the run) and ``steps``, the session (`trajdebug.sessions`)
a column of ``runs``.  The schema is documented in docs/format.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from trajdebug.core.codec import dumps_str, loads
from trajdebug.core.model import Dependency, ErrorEvent, ErrorInfo, Run, Score, StageChange, Step
from trajdebug.core.schema import decode_score, numeric
from trajdebug.fleet._parquet_schema import (
    COLUMNS,
    FORMAT,
    MANIFEST,
    PART_ROWS,
    PART_SIZE,
    SCHEMA_VERSION,
    TABLES,
    _schema,
)
from trajdebug.sessions import session_of
from trajdebug.usage import Usage, default_prices, step_usage, total_usage


def _json(v: Any) -> str | None:
    return None if v is None else dumps_str(v)


def _usage_cols(u: Usage | None) -> dict[str, Any]:
    if u is None:
        return {}
    return {
        "model": u.model,
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.total_tokens,
        "cost": u.cost,
    }


def _flat_metadata(md: Mapping[str, Any]) -> dict[str, str] | None:
    """Metadata as a string map (queryable as ``metadata['task']``): text as it is, other values as JSON."""
    if not md:
        return None
    return {str(k): v if isinstance(v, str) else dumps_str(v) for k, v in md.items()}


def _tags(md: Mapping[str, Any]) -> list[str] | None:
    """The run's tags: the items of a ``tags`` list, ``key=value`` for a ``tags`` mapping."""
    tags = md.get("tags")
    if isinstance(tags, Mapping):
        return [f"{k}={v}" for k, v in tags.items()]
    if isinstance(tags, (list, tuple)):
        return [str(t) for t in tags]
    return None if tags is None else [str(tags)]


def _run_rows(run: Run, rows: dict[str, list[dict[str, Any]]]) -> None:
    """Append one run's rows to each table: the run, its steps, their dependencies, its errors."""
    prices = default_prices()
    usages = [step_usage(s, prices) for s in run.steps]
    rows["runs"].append(_run_row(run, total_usage(usages)))
    for i, s in enumerate(run.steps):
        rows["steps"].append(_step_row(run.run_id, i, s, usages[i]))
        rows["dependencies"].extend(
            {
                "run_id": run.run_id,
                "step_id": s.step_id,
                "upstream_step_id": d.step_id,
                "kind": d.kind,
                "origin": d.origin,
                "confidence": float(d.confidence),
                "key": d.key,
                "upstream_run_id": d.run_id,
            }
            for d in s.deps
        )
    rows["scores"].extend(_score_row(run.run_id, i, s) for i, s in enumerate(run.scores))
    for i, err in enumerate(run.errors):
        rows["errors"].append(
            {
                "run_id": run.run_id,
                "error_id": err.error_id,
                "step_id": err.step_id,
                "seq": i,
                "type": err.type,
                "message": err.message,
                "parent_error_id": err.parent_error_id,
                "attempt": err.attempt,
                "stage": err.stage,
                "stages_json": _json(
                    [
                        {"stage": c.stage, "step_id": c.step_id, "time_ns": c.time_ns, "reason": c.reason}
                        for c in err.stages
                    ]
                ),
                "attributes_json": _json(dict(err.attributes)) if err.attributes else None,
            }
        )


def _score_row(rid: str, i: int, s: Score) -> dict[str, Any]:
    number = numeric(s.value)
    return {
        "run_id": rid,
        "step_id": s.step_id,
        "seq": i,
        "name": s.name,
        "value_json": _json(s.value),
        "value_number": float(s.value) if number else None,
        "source": s.source,
        "by": s.by,
        "comment": s.comment,
        "at_ns": s.at_ns,
    }


def _run_row(run: Run, total: Any) -> dict[str, Any]:
    md = run.metadata
    return {
        "run_id": run.run_id,
        "name": run.name,
        "start_ns": run.start_ns,
        "end_ns": run.end_ns,
        "outcome": run.outcome,
        "failure_reason": run.failure_reason,
        "continues": run.continues,
        "task": None if md.get("task") is None else str(md["task"]),
        "version": None if md.get("version") is None else str(md["version"]),
        "steps": len(run.steps),
        "errors": len(run.errors),
        "metadata_json": _json(dict(md)) if md else None,
        "session": session_of(run),
        "start_time": run.start_ns or None,
        "end_time": run.end_ns,
        "metadata": _flat_metadata(md),
        "tags": _tags(md),
        **(_usage_cols(total) if total.calls else {}),
    }


def _step_row(rid: str, i: int, s: Any, usage: Any) -> dict[str, Any]:
    e = s.error
    return {
        "run_id": rid,
        "step_id": s.step_id,
        "seq": i,
        "name": s.name,
        "kind": s.kind,
        "parent_id": s.parent_id,
        "agent": s.agent,
        "status": s.status,
        "error_type": e.type if e else None,
        "error_message": e.message if e else None,
        "error_id": e.error_id if e else None,
        "error_traceback": e.traceback if e else None,
        "start_ns": s.start_ns,
        "end_ns": s.end_ns,
        "attempt": s.attempt,
        "retry_of": s.retry_of,
        "source_index": s.source_index,
        "input_json": _json(s.input),
        "output_json": _json(s.output),
        "attributes_json": _json(dict(s.attributes)) if s.attributes else None,
        **_usage_cols(usage),
        "start_time": s.start_ns or None,
        "end_time": s.end_ns,
    }


def analysis_row(analysis: Any, finding: Any) -> dict[str, Any]:
    """One ``analyses`` row from a run's `Analysis` and its fleet `Finding`."""
    sig = finding.signature
    return {
        "run_id": finding.run_id,
        "name": finding.name,
        "start_ns": finding.start_ns,
        "group_id": finding.group_id,
        "title": sig.title(),
        "root_kind": sig.root_kind,
        "root_name": sig.root_name,
        "root_agent": sig.root_agent,
        "error": sig.error,
        "evidence": sig.evidence,
        "path_shape": sig.path,
        "root_step": finding.root_step,
        "severity": finding.severity,
        "critical": finding.critical,
        "message": finding.message,
        "analysis_json": dumps_str(analysis.to_dict()),
    }


def _write_part(
    out: Path, part: int, rows: Mapping[str, list[dict[str, Any]]], tables: Iterable[str]
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    for table in tables:
        schema = _schema(table)
        t = pa.Table.from_pylist(list(rows.get(table, [])), schema=schema)
        pq.write_table(t, out / table / f"part-{part:05d}.parquet", compression="zstd")


def write_dataset(
    runs: Iterable[Run],
    out: str | Path,
    *,
    part_size: int = PART_SIZE,
    analyses: bool = False,
    references: Mapping[str, Sequence[Run]] | None = None,
    part_rows: int = PART_ROWS,
) -> dict[str, int]:
    """Write runs as a Parquet dataset partitioned by run, ``part_size`` runs or ``part_rows`` steps per part (streaming).

    Args:
        runs: The runs (any iterable: a store is read one run at a time).
        out: The dataset folder (created; parts already there are replaced).
        part_size: Runs per part, at most.
        part_rows: Step rows per part, at most (a run is never split; a run longer than this
            is a part of its own).
        analyses: Also analyze each failed run and write the ``analyses`` table.
        references: Per agent, the passing runs failures are compared with
            (`trajdebug.fleet.units.reference_pool`, as the fleet job).

    Returns:
        Rows written per table.
    """
    path = Path(out)
    tables = (*TABLES, "analyses") if analyses else TABLES
    for table in tables:
        (path / table).mkdir(parents=True, exist_ok=True)
        for old in (path / table).glob("part-*.parquet"):
            old.unlink()
    counts = dict.fromkeys(tables, 0)
    rows: dict[str, list[dict[str, Any]]] = {t: [] for t in tables}
    part = n = 0
    for run in runs:
        _run_rows(run, rows)
        if analyses and run.outcome == "failure":
            rows["analyses"].append(_analysis_row_of(run, (references or {}).get(run.name, ())))
        n += 1
        if n == part_size or len(rows["steps"]) >= part_rows:
            _flush(path, part, rows, tables, counts)
            part, n = part + 1, 0
    if n or part == 0:
        _flush(path, part, rows, tables, counts)
        part += 1
    (path / MANIFEST).write_text(
        json.dumps({"format": FORMAT, "version": SCHEMA_VERSION, "parts": part, "tables": list(tables)})
        + "\n"
    )
    return counts


def _flush(
    path: Path,
    part: int,
    rows: dict[str, list[dict[str, Any]]],
    tables: Iterable[str],
    counts: dict[str, int],
) -> None:
    _write_part(path, part, rows, tables)
    for t in tables:
        counts[t] += len(rows[t])
        rows[t].clear()


def _analysis_row_of(run: Run, pool: Sequence[Run] = ()) -> dict[str, Any]:
    from trajdebug.analysis import analyze, same_agent
    from trajdebug.fleet.groups import finding_of

    refs = [r for r in pool if r.run_id != run.run_id and same_agent(r, run)]
    # The hand ranking: a group is keyed on the first candidate, and the hand ranker's is the same for runs of
    # one fault; the learned re-ranking moves some of them to a near-tied neighbour and splits the group.
    a = analyze(run, top=3, references=refs, model=None)
    return analysis_row(a, finding_of(a))


def is_dataset(path: str | Path) -> bool:
    """Whether ``path`` is a trajdebug Parquet dataset folder."""
    p = Path(path)
    return p.is_dir() and (p / MANIFEST).is_file() and (p / "runs").is_dir()


def parts(path: str | Path) -> list[str]:
    """The part names of a dataset (``part-00000``, ...), in order."""
    return sorted(f.stem for f in (Path(path) / "runs").glob("part-*.parquet"))


def _read(path: Path, table: str, part: str, run_ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    f = path / table / f"{part}.parquet"
    if not f.exists():
        return []
    filters = None if run_ids is None else [("run_id", "in", list(run_ids))]
    # The typed views (timestamps, the metadata map, tags) are for query engines; runs are
    # rebuilt from the exact columns (integer nanoseconds, JSON).
    exact = [c for c, t in COLUMNS[table] if t not in ("timestamp", "map", "list")]
    names = set(pq.read_schema(f).names)
    rows: list[dict[str, Any]] = pq.read_table(f, columns=[c for c in exact if c in names], filters=filters).to_pylist()
    return rows


def part_run_ids(path: str | Path, part: str) -> list[str]:
    """The run ids of one part, in order (reads one column)."""
    import pyarrow.parquet as pq

    f = Path(path) / "runs" / f"{part}.parquet"
    return [str(r) for r in pq.read_table(f, columns=["run_id"]).column("run_id").to_pylist()]


def _opt_json(v: str | None) -> Any:
    return None if v is None else loads(v)


def read_part(path: str | Path, part: str, run_ids: Sequence[str] | None = None) -> list[Run]:
    """Rebuild the runs of one part of a dataset (only ``run_ids`` when given: a slice of the part,
    read with a Parquet filter, so a part can be shared by several tasks)."""
    p = Path(path)
    want = None if run_ids is None else list(run_ids)
    deps: dict[tuple[str, str], list[Dependency]] = {}
    for d in _read(p, "dependencies", part, want):
        deps.setdefault((d["run_id"], d["step_id"]), []).append(
            Dependency(
                d["upstream_step_id"], d["kind"], d["origin"], d["confidence"], d["key"], d["upstream_run_id"]
            )
        )
    steps: dict[str, list[Step]] = {}
    for s in sorted(_read(p, "steps", part, want), key=lambda r: (r["run_id"], r["seq"])):
        err = None
        if s["error_type"] is not None:
            err = ErrorInfo(s["error_type"], s["error_message"] or "", s["error_id"], s["error_traceback"])
        steps.setdefault(s["run_id"], []).append(
            Step(
                step_id=s["step_id"],
                name=s["name"],
                kind=s["kind"],
                parent_id=s["parent_id"],
                agent=s["agent"],
                input=_opt_json(s["input_json"]),
                output=_opt_json(s["output_json"]),
                status=s["status"],
                error=err,
                start_ns=s["start_ns"],
                end_ns=s["end_ns"],
                attempt=s["attempt"],
                retry_of=s["retry_of"],
                deps=tuple(deps.get((s["run_id"], s["step_id"]), ())),
                attributes=_opt_json(s["attributes_json"]) or {},
                source_index=s["source_index"],
            )
        )
    errors: dict[str, list[ErrorEvent]] = {}
    for e in sorted(_read(p, "errors", part, want), key=lambda r: (r["run_id"], r["seq"])):
        stages = tuple(
            StageChange(c["stage"], c.get("step_id"), int(c["time_ns"]), c.get("reason"))
            for c in _opt_json(e["stages_json"]) or ()
        )
        errors.setdefault(e["run_id"], []).append(
            ErrorEvent(
                e["error_id"],
                e["step_id"],
                e["type"],
                e["message"],
                e["parent_error_id"],
                stages,
                e["attempt"],
                _opt_json(e["attributes_json"]) or {},
            )
        )
    scores: dict[str, list[Score]] = {}
    problems: list[str] = []
    for sc in sorted(_read(p, "scores", part, want), key=lambda r: (r["run_id"], r["seq"])):
        got = decode_score({**sc, "value": _opt_json(sc["value_json"])}, problems)
        if got is not None:
            scores.setdefault(sc["run_id"], []).append(got)
    return [
        Run(
            run_id=r["run_id"],
            name=r["name"],
            start_ns=r["start_ns"],
            end_ns=r["end_ns"],
            outcome=r["outcome"],
            failure_reason=r["failure_reason"],
            metadata=_opt_json(r["metadata_json"]) or {},
            steps=tuple(steps.get(r["run_id"], ())),
            errors=tuple(errors.get(r["run_id"], ())),
            continues=r["continues"],
            scores=tuple(scores.get(r["run_id"], ())),
        )
        for r in _read(p, "runs", part, want)
    ]


def iter_dataset(path: str | Path) -> Iterator[Run]:
    """Every run of a dataset, one part at a time."""
    for part in parts(path):
        yield from read_part(path, part)


def replay_runs(path: str | Path) -> list[Run]:
    """The replays in a dataset, as runs holding only outcome and metadata (for the verified share)."""
    con = connect(path)
    rows = con.execute(
        "SELECT run_id, name, outcome, metadata_json FROM runs WHERE metadata_json LIKE '%\"replay_of\"%'"
    ).fetchall()
    return [Run(run_id=r, name=n, outcome=o, metadata=_opt_json(m) or {}) for r, n, o, m in rows]


def connect(path: str | Path) -> Any:
    """A DuckDB connection with one view per table of the dataset (``runs``, ``steps``, ...)."""
    import duckdb

    p = Path(path)
    con = duckdb.connect()
    for table in COLUMNS:
        if any((p / table).glob("part-*.parquet")):
            glob = str(p / table / "part-*.parquet").replace("'", "''")
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{glob}')")
    return con


def failure_rates(path: str | Path, *, by: str = "name") -> list[dict[str, Any]]:
    """Runs, failures and failure rate per value of a ``runs`` column (``name``, ``version``, ``task``)."""
    if by not in {c for c, _ in COLUMNS["runs"]}:
        raise ValueError(f"runs has no column {by!r}")
    con = connect(path)
    rows = con.execute(
        f"SELECT \"{by}\", count(*), count(*) FILTER (WHERE outcome = 'failure') FROM runs GROUP BY 1 ORDER BY 1"
    ).fetchall()
    return [{by: k, "runs": n, "failed": f, "failure_rate": f / n if n else 0.0} for k, n, f in rows]


def group_counts(path: str | Path) -> list[dict[str, Any]]:
    """Failure groups of a dataset's ``analyses`` table: count, critical, first and last seen, one title."""
    con = connect(path)
    rows = con.execute(
        "SELECT group_id, count(*), count(*) FILTER (WHERE critical), min(start_ns), max(start_ns), min(title) "
        "FROM analyses GROUP BY group_id ORDER BY 2 DESC, 1"
    ).fetchall()
    return [
        {"group_id": g, "count": n, "critical": c, "first_seen_ns": a, "last_seen_ns": b, "title": t}
        for g, n, c, a, b, t in rows
    ]


__all__ = [
    "COLUMNS",
    "FORMAT",
    "PART_ROWS",
    "PART_SIZE",
    "SCHEMA_VERSION",
    "TABLES",
    "analysis_row",
    "connect",
    "failure_rates",
    "group_counts",
    "is_dataset",
    "iter_dataset",
    "part_run_ids",
    "parts",
    "read_part",
    "replay_runs",
    "write_dataset",
]
