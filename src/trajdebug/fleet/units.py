"""The fleet's units of work: sources split into units of a few dozen runs, loaded where they run.

A unit (`Unit`) is run ids of a store, one part of a Parquet dataset, or runs already read from a file
(`units`); a worker loads its runs itself, so the parent holds no more than run ids.  The
passing runs each failed run is compared with are chosen once for the whole job (`reference_pool`).
`trajdebug.fleet.engine` processes the units.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajdebug.core.model import Run


REFERENCES_PER_RUN = 20
"""Passing runs of the same agent (from the run's unit) each failed run is compared with."""

UNIT_SIZE = 64
"""Runs per unit of work."""

_FILE_SUFFIXES = (".jsonl", ".json", ".db", ".sqlite", ".sqlite3", ".ndjson")


@dataclass(frozen=True, slots=True)
class Unit:
    """One unit of work: where its runs come from."""

    kind: str
    """``store`` (run ids of a store), ``parquet`` (one part of a dataset) or ``runs`` (runs in hand)."""
    path: str
    """The store, dataset or file."""
    ids: tuple[str, ...] = ()
    """Run ids (``store``; ``parquet``: a slice of the part, empty for all of it)."""
    part: str | None = None
    """The part name (``parquet``)."""
    runs: tuple[Run, ...] = ()
    """The runs (``runs``)."""
    tag: str | None = None
    """A label the caller attaches (`trajdebug.fleet.compare`: which set the unit belongs to)."""


def _skip(md: Mapping[str, Any]) -> bool:
    """Replays and reference runs are not runs of the fleet."""
    return bool(md.get("replay_of") or md.get("reference_for"))


_STORES: dict[str, Any] = {}


def _load(unit: Unit) -> Iterator[Run]:
    if unit.kind == "runs":
        yield from unit.runs
    elif unit.kind == "store":
        from trajdebug.store import Store

        store = _STORES.get(unit.path)
        if store is None:
            store = _STORES[unit.path] = Store(unit.path)
        for rid in unit.ids:
            yield store.load_run(rid)
    elif unit.kind == "parquet":
        from trajdebug.fleet.parquet import read_part

        yield from read_part(unit.path, str(unit.part), unit.ids or None)
    else:  # pragma: no cover - units are built here
        raise ValueError(f"unknown unit kind {unit.kind!r}")


def close_stores() -> None:
    """Close the stores `process_unit` opened in this process."""
    while _STORES:
        _STORES.popitem()[1].close()


def _store_units(path: Path, size: int) -> tuple[list[Unit], list[Run]]:
    """Units of a store's runs, and the store's replays (read for the verified share)."""
    from trajdebug.store import Store

    units: list[Unit] = []
    with Store(path) as store:
        conn = store.connection()
        batch: list[str] = []
        for rid, note in conn.execute("SELECT run_id, note FROM runs ORDER BY start_ns, rowid"):
            if note and note.startswith(("replay of", "reference for")):
                continue
            batch.append(rid)
            if len(batch) >= size:
                units.append(Unit("store", str(path), tuple(batch)))
                batch = []
        if batch:
            units.append(Unit("store", str(path), tuple(batch)))
        replay_ids = [r for (r,) in conn.execute("SELECT run_id FROM runs WHERE note LIKE 'replay of %'")]
        replays = [store.load_run(r) for r in replay_ids]
    return units, replays


def expand(sources: Iterable[str | Path]) -> list[Path]:
    """Sources with folders replaced by the files in them (a Parquet dataset stays whole)."""
    from trajdebug.fleet.parquet import is_dataset

    out: list[Path] = []
    for src in sources:
        p = Path(src)
        if p.is_dir() and not is_dataset(p):
            out.extend(
                f
                for f in sorted(p.iterdir())
                if f.is_file() and f.suffix in _FILE_SUFFIXES and not f.name.startswith(".")
            )
        else:
            out.append(p)
    return out


def units(sources: Iterable[str | Path], *, size: int = UNIT_SIZE) -> tuple[list[Unit], list[Run], list[str]]:
    """Split sources into units of work.

    Returns:
        The units, the replay runs found (for the verified share), and the
        sources that could not be read (one line each).

    Raises:
        SourceError: a source does not exist.
    """
    from trajdebug.fleet.parquet import is_dataset, parts, replay_runs
    from trajdebug.sources.load import SourceError, read_source
    from trajdebug.store import is_store

    out: list[Unit] = []
    replays: list[Run] = []
    problems: list[str] = []
    for p in expand(sources):
        if not p.exists():
            raise SourceError(f"{p}: no such file")
        if is_dataset(p):
            out.extend(Unit("parquet", str(p.resolve()), part=part) for part in parts(p))
            replays.extend(replay_runs(p))
        elif is_store(p):
            u, r = _store_units(p, size)
            out.extend(u)
            replays.extend(r)
        else:
            try:
                result = read_source(p)
            except SourceError as exc:
                problems.append(str(exc))
                continue
            problems.extend(str(x) for x in result.problems)
            keep = [r for r in result.runs if not _skip(r.metadata)]
            replays.extend(r for r in result.runs if r.metadata.get("replay_of"))
            out.extend(
                Unit("runs", str(p), runs=tuple(keep[i : i + size])) for i in range(0, len(keep), size)
            )
    return out, replays, problems


def reference_pool(sources: Iterable[str | Path], size: int = REFERENCES_PER_RUN) -> dict[str, tuple[Run, ...]]:
    """Per agent (run name), its most recent passing original runs across all sources.

    Chosen once for the whole job, so a failed run is compared with the same
    references whatever unit or engine analyzes it.  Ties in start time go to
    the smaller run id.
    """
    from trajdebug.fleet.parquet import is_dataset
    from trajdebug.sources.load import SourceError, read_source
    from trajdebug.store import Store, is_store

    best: dict[str, list[tuple[int, str, Any]]] = {}

    def offer(name: str, start: int, rid: str, load: Any) -> None:
        lst = best.setdefault(name, [])
        lst.append((start, rid, load))
        lst.sort(key=lambda t: (-t[0], t[1]))
        del lst[size:]

    for p in expand(sources):
        if not p.exists():
            continue
        if is_dataset(p):
            from trajdebug.fleet.parquet import connect, read_part

            con = connect(p)
            glob = str(p / "runs" / "part-*.parquet").replace("'", "''")
            rows = con.execute(
                f"SELECT name, start_ns, run_id, filename FROM read_parquet('{glob}', filename=true) "
                "WHERE outcome = 'success' AND coalesce(metadata_json, '') NOT LIKE '%\"replay_of\"%' "
                "AND coalesce(metadata_json, '') NOT LIKE '%\"reference_for\"%'"
            ).fetchall()
            for name, start, rid, fname in rows:
                part = Path(fname).stem
                offer(name, int(start or 0), rid, ("parquet", str(p), part))
        elif is_store(p):
            with Store(p) as store:
                conn = store.connection()
                for name, start, rid, note in conn.execute(
                    "SELECT name, start_ns, run_id, note FROM runs WHERE outcome = 'success'"
                ):
                    if note and note.startswith(("replay of", "reference for")):
                        continue
                    offer(name, int(start or 0), rid, ("store", str(p), rid))
        else:
            try:
                result = read_source(p)
            except SourceError:
                continue
            for r in result.runs:
                if r.outcome == "success" and not _skip(r.metadata):
                    offer(r.name, r.start_ns, r.run_id, ("run", r))
    out: dict[str, tuple[Run, ...]] = {}
    parts_cache: dict[tuple[str, str], dict[str, Run]] = {}
    for name, lst in best.items():
        runs: list[Run] = []
        for _, rid, load in lst:
            if load[0] == "run":
                runs.append(load[1])
            elif load[0] == "store":
                with Store(load[1]) as store:
                    runs.append(store.load_run(rid))
            else:
                key = (load[1], load[2])
                if key not in parts_cache:
                    from trajdebug.fleet.parquet import read_part

                    parts_cache[key] = {r.run_id: r for r in read_part(load[1], load[2])}
                if rid in parts_cache[key]:
                    runs.append(parts_cache[key][rid])
        out[name] = tuple(runs)
    return out


__all__ = [
    "REFERENCES_PER_RUN",
    "UNIT_SIZE",
    "Unit",
    "close_stores",
    "expand",
    "reference_pool",
    "units",
]
