"""The runs a web UI serves: a source read live, searchable, with each run's analysis cached.

A `Catalog` watches one source.  Over a store it asks the ``runs`` table
what changed on every query (a new run, a run that gained steps or ended)
and loads only those runs, so runs recorded while the server is up appear
on the next request; over a file it reloads when the file's size or
modification time changes.  Each run is indexed once per version: its
metadata as tags, its step names, inputs, outputs and error messages for
full-text search (`trajdebug.search`: values as stored, so a redacted secret
is never found by its value; `Catalog.matched` names the steps that match),
and, for a failed run, the names of its top root causes (the analysis is
kept for the run page).

A run's analysis is the one ``trajdebug analyze SOURCE --run ID`` prints
(`trajdebug.api.analyze_source` over the same runs): it compares the run
with the passing runs of the same agent, so it is computed only once every
changed run is loaded, and it goes stale when a run of the same agent
arrives, changes or goes.  Stale analyses are recomputed when they are next
needed: for the run page, and for the runs a list shows or filters by cause.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from trajdebug.analysis import Analysis
from trajdebug.api import analyze_source
from trajdebug.core.model import Run, Score
from trajdebug.core.schema import score_to_dict
from trajdebug.core.shortids import shortener
from trajdebug.scores import ScoreFilter, score_cells
from trajdebug.search import StepMatch, search_run, value_text
from trajdebug.sessions import Session, group_sessions, has_tag, run_tags, session_of, user_in
from trajdebug.sources.load import SourceError, load_runs
from trajdebug.store import Store, is_store
from trajdebug.usage import default_prices, run_usage


CAUSES_INDEXED = 3
"""Root causes per failed run that the ``cause`` filter matches."""


@dataclass(frozen=True, slots=True)
class RunEntry:
    """One run as the run list shows and filters it."""

    run_id: str
    """The run's id."""
    name: str
    """The run's name."""
    outcome: str
    """``success``, ``failure`` or ``incomplete``."""
    start_ns: int
    """Start time, nanoseconds since the epoch."""
    end_ns: int | None
    """End time, None while running."""
    steps: int
    """Number of steps."""
    errors: int
    """Number of error events."""
    failure_reason: str | None
    """Why it failed."""
    derived: str | None
    """``replay`` or ``reference`` for runs verification recorded for another run, else None."""
    tags: tuple[str, ...]
    """Metadata as ``key=value`` strings (scalar values) plus the items of a ``tags`` list."""
    causes: tuple[str, ...]
    """Names of the top root-cause steps (failed runs only)."""
    text: str
    """Lower-cased run name, step names, inputs, outputs, error types and messages: what full-text search reads."""
    tokens: int | None = None
    """Tokens of the run's LLM calls (`trajdebug.usage`), None when none are stated."""
    cost: float | None = None
    """Cost of the run's LLM calls in US dollars, None when unknown."""
    session: str | None = None
    """The session the run belongs to (`trajdebug.sessions`)."""
    user: str | None = None
    """The run's user (`trajdebug.sessions.user_in`)."""
    scores: tuple[Score, ...] = ()
    """The run's and its steps' scores (`trajdebug.scores`), which the score filter reads."""
    scores_text: str = ""
    """Those scores in one cell, as `runs` shows them (`trajdebug.scores.score_cells`)."""

    def to_dict(self) -> dict[str, Any]:
        """As JSON data (the text index left out)."""
        return {
            "run_id": self.run_id,
            "name": self.name,
            "outcome": self.outcome,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "steps": self.steps,
            "errors": self.errors,
            "failure_reason": self.failure_reason,
            "derived": self.derived,
            "tags": list(self.tags),
            "causes": list(self.causes),
            "tokens": self.tokens,
            "cost": self.cost,
            "session": self.session,
            "user": self.user,
            "scores": [score_to_dict(s) for s in self.scores],
        }


@dataclass(frozen=True, slots=True)
class Query:
    """Filters of the run list; every field left None matches every run."""

    outcome: str | None = None
    """Only this outcome."""
    name: str | None = None
    """Run name contains this (case-insensitive)."""
    since_ns: int | None = None
    """Started at or after this time."""
    until_ns: int | None = None
    """Started at or before this time."""
    tag: str | None = None
    """A metadata tag: ``key=value``, a key, or an item of the ``tags`` list."""
    cause: str | None = None
    """A root-cause step's name contains this (case-insensitive)."""
    text: str | None = None
    """Every word occurs in the run's name, step names, step inputs, outputs or errors (`trajdebug.search`)."""
    derived: bool = False
    """Also replays and reference runs."""
    session: str | None = None
    """Only the runs of this session."""
    user: str | None = None
    """Only the runs of this user (`trajdebug.sessions.user_in`)."""
    scores: tuple[ScoreFilter, ...] = ()
    """Only runs with a score each of these keeps, as `runs --score` (`trajdebug.scores.ScoreFilter`)."""
    sort: str = "started"
    """The column to sort by (`SORT_KEYS`)."""
    descending: bool = True
    """Largest (newest) first."""
    limit: int = 500
    """At most this many runs, newest first."""


SORT_KEYS: dict[str, Any] = {
    "started": lambda e: e.start_ns,
    "name": lambda e: e.name.lower(),
    "outcome": lambda e: e.outcome,
    "steps": lambda e: e.steps,
    "errors": lambda e: e.errors,
    "duration": lambda e: -1 if e.end_ns is None else e.end_ns - e.start_ns,
    "tokens": lambda e: -1 if e.tokens is None else e.tokens,
    "cost": lambda e: -1.0 if e.cost is None else e.cost,
}
"""The run list's sortable columns (unknown values sort as smallest)."""


def _derived(metadata: Mapping[str, Any]) -> str | None:
    if metadata.get("replay_of"):
        return "replay"
    if metadata.get("reference_for"):
        return "reference"
    return None


def _matches(e: RunEntry, q: Query) -> bool:
    if not q.derived and e.derived:
        return False
    if q.outcome and e.outcome != q.outcome:
        return False
    if q.name and q.name.lower() not in e.name.lower():
        return False
    if q.since_ns is not None and e.start_ns < q.since_ns:
        return False
    if q.until_ns is not None and e.start_ns > q.until_ns:
        return False
    if q.tag and not has_tag(e.tags, q.tag):
        return False
    if q.user is not None and e.user != q.user:
        return False
    if q.session is not None and e.session != q.session:
        return False
    if q.cause and not any(q.cause.lower() in c.lower() for c in e.causes):
        return False
    if not all(f.keeps(e.scores) for f in q.scores):
        return False
    return not q.text or all(word in e.text for word in q.text.lower().split())


class Catalog:
    """A live, searchable view of the runs of one source (a store, a JSONL file or a trace).

    Thread-safe: the web server calls it from worker threads.
    """

    def __init__(self, source: str | Path, *, fmt: str | None = None) -> None:
        self.source = Path(source)
        self.fmt = fmt
        self._lock = threading.RLock()
        self._runs: dict[str, Run] = {}
        self._entries: dict[str, RunEntry] = {}
        self._versions: dict[str, Any] = {}
        self._analyses: dict[str, Analysis] = {}
        self._stale: set[str] = set()
        """Failed runs whose indexed causes predate a change among their agent's runs."""
        self._file_version: Any = None
        self._store: Store | None = None
        self._prices = default_prices()
        self._short: tuple[int, Callable[[str], str]] | None = None
        """The shortener of the run ids, made again when runs come or go (keyed by their count)."""

    # -- refreshing ---------------------------------------------------------------------

    def _is_store(self) -> bool:
        return self.fmt in (None, "store") and self.source.exists() and is_store(self.source)

    def refresh(self) -> None:
        """Pick up new and changed runs.

        Raises:
            SourceError: the source cannot be read.
        """
        with self._lock:
            if self._is_store():
                self._refresh_store()
            else:
                self._refresh_file()

    def _refresh_store(self) -> None:
        if self._store is None:
            self._store = Store(self.source)
        summaries = self._store.list_runs()
        seen = set()
        changed: list[Run] = []
        for s in summaries:
            seen.add(s.run_id)
            version = (s.steps, s.errors, s.outcome, s.end_ns, s.note, s.name)
            if self._versions.get(s.run_id) == version:
                continue
            try:
                run = self._store.load_run(s.run_id)
            except KeyError:
                continue
            self._runs[run.run_id] = run
            self._versions[run.run_id] = version
            changed.append(run)
        self._changed(changed, [self._drop(gone) for gone in set(self._runs) - seen])

    def _refresh_file(self) -> None:
        try:
            st = self.source.stat()
        except OSError as exc:
            raise SourceError(f"{self.source}: cannot read ({exc.strerror or exc})") from None
        version = (st.st_mtime_ns, st.st_size)
        if version == self._file_version:
            return
        runs = load_runs(self.source, fmt=self.fmt)
        gone = [self._drop(rid) for rid in set(self._runs) - {r.run_id for r in runs}]
        for r in runs:
            self._runs[r.run_id] = r
            self._versions[r.run_id] = None
        self._changed(runs, gone)
        self._file_version = version

    def _drop(self, run_id: str) -> Run | None:
        run = self._runs.get(run_id)
        self._short = None
        for table in (self._runs, self._entries, self._versions, self._analyses):
            table.pop(run_id, None)
        self._stale.discard(run_id)
        return run

    def _changed(self, changed: Sequence[Run], gone: Sequence[Run | None]) -> None:
        """Index the changed runs, once all of them are loaded, and mark the analyses they outdate."""
        # An analysis reads the other runs of its agent (references: runs with the same name) and
        # the turns its run continues: a change among those outdates it.
        agents = {r.name for r in [*changed, *gone] if r is not None}
        touched = {r.run_id for r in [*changed, *gone] if r is not None}
        for rid, run in self._runs.items():
            if run.name in agents or (run.continues is not None and run.continues in touched):
                self._analyses.pop(rid, None)
                if run.outcome == "failure" and rid in self._entries:
                    self._stale.add(rid)
        for run in changed:
            self._stale.discard(run.run_id)
            self._entries[run.run_id] = self._entry(run)

    def _entry(self, run: Run) -> RunEntry:
        causes: tuple[str, ...] = ()
        if run.outcome == "failure":
            causes = self._causes(self._analyze(run))
        words = [run.name, run.failure_reason or ""]
        words += [s.name for s in run.steps]
        words += [f"{s.error.type} {s.error.message}" for s in run.steps if s.error is not None]
        words += [f"{e.type} {e.message}" for e in run.errors]
        # The same values `search_run` reads, so the index and the steps it names agree.
        words += [value_text(v) for s in run.steps for v in (s.input, s.output)]
        usage = run_usage(run, self._prices)
        return RunEntry(
            run_id=run.run_id,
            name=run.name,
            outcome=run.outcome,
            start_ns=run.start_ns,
            end_ns=run.end_ns,
            steps=len(run.steps),
            errors=len(run.errors),
            failure_reason=run.failure_reason,
            derived=_derived(run.metadata),
            tags=run_tags(run.metadata),
            user=user_in(run.metadata),
            causes=causes,
            text="\n".join(words).lower(),
            tokens=usage.total_tokens,
            cost=usage.cost,
            scores=run.scores,
            scores_text=score_cells(run),
            session=session_of(run),
        )

    @staticmethod
    def _causes(a: Analysis) -> tuple[str, ...]:
        return tuple(c["name"] for c in a.to_dict()["root_causes"][:CAUSES_INDEXED] if c.get("name"))

    def _fresh(self, entry: RunEntry) -> RunEntry:
        """The entry with its causes recomputed when they are stale."""
        if entry.run_id not in self._stale:
            return entry
        self._stale.discard(entry.run_id)
        fresh = replace(entry, causes=self._causes(self._analyze(self._runs[entry.run_id])))
        self._entries[entry.run_id] = fresh
        return fresh

    def _analyze(self, run: Run) -> Analysis:
        cached = self._analyses.get(run.run_id)
        if cached is not None:
            return cached
        a = analyze_source(self.source, run.run_id, runs=list(self._runs.values())).analyses[0]
        self._analyses[run.run_id] = a
        return a

    # -- reading -----------------------------------------------------------------------

    def query(self, q: Query | None = None) -> list[RunEntry]:
        """The runs matching ``q``, newest first (refreshes first)."""
        q = q or Query()
        self.refresh()
        with self._lock:
            key = SORT_KEYS.get(q.sort, SORT_KEYS["started"])
            entries = sorted(self._entries.values(), key=lambda e: (key(e), e.start_ns), reverse=q.descending)
            if q.cause:
                # The cause filter reads every candidate's causes: bring the stale ones up to date.
                entries = [self._fresh(e) if _matches(e, replace(q, cause=None)) else e for e in entries]
                return [e for e in entries if _matches(e, q)][: q.limit]
            return [self._fresh(e) for e in [e for e in entries if _matches(e, q)][: q.limit]]

    def sessions(self) -> list[tuple[Session, list[RunEntry]]]:
        """The sessions of the source's original runs, most recently active first, each with its runs in order."""
        self.refresh()
        with self._lock:
            runs = [r for r in self._runs.values() if not _derived(r.metadata)]
            return [
                (s, [self._entries[rid] for rid in s.run_ids if rid in self._entries])
                for s in group_sessions(runs)
            ]

    def hidden(self) -> int:
        """How many replays and reference runs the default list leaves out."""
        with self._lock:
            return sum(1 for e in self._entries.values() if e.derived)

    def resolve(self, run_id: str) -> str:
        """The full id of a run, from its id or a unique prefix.

        Raises:
            KeyError: no run, or several, match.
        """
        self.refresh()
        with self._lock:
            if run_id in self._runs:
                return run_id
            found = [r for r in self._runs if r.startswith(run_id)] if run_id else []
        if len(found) != 1:
            raise KeyError(f"{'no' if not found else 'more than one'} run {run_id!r}")
        return found[0]

    def short(self, run_id: str) -> str:
        """A run id as the pages show it: the shortest prefix of 12 or more characters no other run of the
        source starts with (`trajdebug.core.shortids`), so a shown id always finds its run."""
        with self._lock:
            if self._short is None or self._short[0] != len(self._runs):
                self._short = (len(self._runs), shortener(self._runs))
            return self._short[1](run_id)

    def run(self, run_id: str) -> Run:
        """One run (id or unique prefix), as it is now.

        Raises:
            KeyError: no run, or several, match.
        """
        rid = self.resolve(run_id)
        with self._lock:
            return self._runs[rid]

    def analysis(self, run_id: str) -> Analysis:
        """The analysis of one run (cached until the run changes).

        Raises:
            KeyError: no such run.
            GraphError: the run's dependencies are broken.
        """
        run = self.run(run_id)
        with self._lock:
            return self._analyze(run)

    def matched(self, run_id: str, text: str) -> tuple[StepMatch, ...]:
        """The steps of a run whose input, output or error holds a word of a search (`trajdebug.search`)."""
        with self._lock:
            run = self._runs.get(run_id)
        return () if run is None else search_run(run, text) or ()

    def runs(self, ids: Iterable[str] | None = None) -> list[Run]:
        """The runs (all, or these ids), oldest first."""
        with self._lock:
            pool: Sequence[Run] = list(self._runs.values())
        if ids is not None:
            wanted = set(ids)
            pool = [r for r in pool if r.run_id in wanted]
        return sorted(pool, key=lambda r: r.start_ns)

    def close(self) -> None:
        """Close the store connection of the calling thread."""
        if self._store is not None:
            self._store.close()


__all__ = ["CAUSES_INDEXED", "SORT_KEYS", "Catalog", "Query", "RunEntry"]
