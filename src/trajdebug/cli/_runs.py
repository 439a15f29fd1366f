"""``trajdebug runs``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from trajdebug.cli._common import (
    console,
    emit_json,
    fail,
    fmt_option,
    json_option,
    load_source,
    source_argument,
    store_path,
)
from trajdebug.core.model import Run, Score
from trajdebug.core.shortids import shortener


if TYPE_CHECKING:
    from trajdebug.scores import ScoreFilter
    from trajdebug.search import StepMatch
    from trajdebug.store import RunSummary


@click.command(name="runs")
@source_argument
@click.option(
    "--store", "store", metavar="PATH", help="The store (same as SOURCE; default: $TRAJDEBUG_STORE or ./trajdebug.db)."
)
@fmt_option
@click.option(
    "--outcome", type=click.Choice(["success", "failure", "incomplete"]), help="Only runs with this outcome."
)
@click.option(
    "--name",
    metavar="TEXT",
    help="Only runs whose name contains TEXT (any case), as serve's name box: `--name desk` lists support-desk.",
)
@click.option(
    "--tag",
    metavar="TAG",
    help="Only runs with this tag, as serve's tag box: an item of the run's tags list (prod), a metadata key "
    "(channel) or key=value (channel=chat).",
)
@click.option("--user", metavar="USER", help="Only runs of this user (metadata user, else user_id).")
@click.option("--session", metavar="ID", help="Only runs of this session (metadata session), oldest first.")
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most this many runs."
)
@click.option(
    "--all", "show_all", is_flag=True, help="Also list replays and reference runs (hidden by default)."
)
@click.option(
    "--search",
    metavar="TEXT",
    help="Only runs holding every word of TEXT (any case) in a step's input, output or error, a step name or "
    "the run's name; each run says which steps matched.  Values are searched as stored: a redacted secret "
    "is never found by its value.",
)
@click.option(
    "--totals",
    is_flag=True,
    help="End with a line of totals over every run the filters keep (--limit aside): runs, failed, tokens, cost, "
    "and the mean of each numeric score.",
)
@click.option(
    "--score",
    "score_filters",
    metavar="NAME[OPVALUE]",
    multiple=True,
    help="Only runs with a score of this name (on the run or a step; `trajdebug score`), and with a bound one that "
    'meets it: "helpfulness<0.5", "helpfulness>=0.8", tone=rude, correct=false (<, <=, >, >=, =, !=). Repeatable: '
    "every one must hold.",
)
@json_option
def runs_cmd(
    source: str | None,
    store: str | None,
    fmt: str | None,
    outcome: str | None,
    name: str | None,
    tag: str | None,
    user: str | None,
    session: str | None,
    limit: int,
    show_all: bool,
    search: str | None,
    totals: bool,
    score_filters: tuple[str, ...],
    as_json: bool,
) -> None:
    """List the runs of SOURCE, newest first.

    Each run with when it started, its outcome and why it failed, its
    session, user, LLM tokens and cost.  SOURCE is a store, a trajdebug JSONL file or a foreign trace, as for every
    other command (default: $TRAJDEBUG_STORE or ./trajdebug.db; --store is the
    same).  Replays and reference runs that verification recorded are hidden
    unless --all is given.  A run the recorder lost records of (dropped under
    load, unwritable, finished after the run ended) shows how many next to its
    outcome.  The filters are the web UI's (`trajdebug serve`): --name is a
    substring, --tag a tag, key or key=value; --json gives every column.

    \b
    Example:
        trajdebug runs meeting.db --outcome failure
        trajdebug runs support.db --tag refund --user dan --totals
        trajdebug runs support.db --search "A103 laptop"
    """
    from pathlib import Path

    from trajdebug.store import StoreError, is_store

    if source and store and Path(source) != Path(store):
        raise fail(f"two sources given: {source} and --store {store}; give one")
    path = store_path(source or store)
    if not Path(path).exists():
        raise fail(f"{path}: no store here yet (record a run, or try: trajdebug demo)")
    from trajdebug.cli._score import parse_filter

    f = _Filters(outcome, name, tag, user, session, search, show_all, tuple(parse_filter(t) for t in score_filters))
    if fmt not in (None, "store") or not is_store(path):
        if fmt == "store":
            raise fail(f"{path}: not a trajdebug store")
        picked = _pick(_file_candidates(load_source(path, None, fmt)), f, limit, totals)
    else:
        try:
            picked = _from_store(path, f, limit, totals)
        except StoreError as exc:
            raise fail(str(exc)) from None
    if as_json:
        data = {"store": path, "runs": [_row_dict(r) for r in picked.rows], "hidden": picked.hidden}
        if totals:
            data["totals"] = picked.totals
        emit_json(data)
        return
    _print_runs(picked)


@dataclass(frozen=True, slots=True)
class _Filters:
    """What `runs` keeps: the columns of its ``runs`` row first (cheap), then what needs the run read."""

    outcome: str | None
    name: str | None
    tag: str | None
    user: str | None
    session: str | None
    search: str | None
    show_all: bool
    scores: tuple[ScoreFilter, ...] = ()

    def keeps_row(self, s: RunSummary) -> bool:
        """The outcome, the name (a substring, any case) and replays and reference runs."""
        if self.outcome is not None and s.outcome != self.outcome:
            return False
        if self.name is not None and self.name.lower() not in s.name.lower():
            return False
        return self.show_all or not _derived_note(s.note)

    @property
    def reads_runs(self) -> bool:
        """Whether a filter needs each run's metadata or values (the ``runs`` row does not hold them)."""
        return bool(self.scores) or any(v is not None for v in (self.tag, self.user, self.session, self.search))


@dataclass(frozen=True, slots=True)
class _Row:
    """One listed run: its ``runs`` row, its session, user, tags, usage and, after a search, its matched steps."""

    summary: RunSummary
    session: str | None
    user: str | None
    tags: tuple[str, ...]
    tokens: int | None
    cost: float | None
    matched: tuple[StepMatch, ...] | None
    run: Run | None = None
    """The run read (its scores: `Run.scores`)."""


@dataclass(frozen=True, slots=True)
class _Picked:
    rows: list[_Row]
    hidden: int
    totals: dict[str, Any] | None
    """Over every run the filters keep: runs, failed, tokens, cost (None unless asked)."""
    ids: tuple[str, ...] = ()
    """Every run id of the source, listed or not: what a shown id must stay unique among (`core.shortids`)."""


def _derived_note(note: str | None) -> bool:
    """Whether a ``runs`` row's note says it is a replay or a reference run (`trajdebug.store.run_note`)."""
    return bool(note) and (str(note).startswith("replay of ") or str(note).startswith("reference for "))


def _from_store(path: str, f: _Filters, limit: int, totals: bool) -> _Picked:
    """The runs of a store the filters keep: its ``runs`` rows filtered first, each kept run then read once."""
    from trajdebug.store import Store

    with Store(path, readonly=True) as st:
        summaries = st.list_runs()

        def load(rid: str) -> Run | None:
            try:
                return st.load_run(rid)
            except KeyError:
                return None  # gone since it was listed

        return _pick(((s, functools.partial(load, s.run_id)) for s in summaries), f, limit, totals)


def _file_candidates(runs: list[Run]) -> Iterator[tuple[RunSummary, Callable[[], Run | None]]]:
    """A file's runs as `Store.list_runs` rows (newest first, among equal starts the later first), each with
    its run."""
    from trajdebug.core.schema import RECORDER_KEY, lost_in
    from trajdebug.store import RunSummary, run_note

    ordered = [r for _, r in sorted(enumerate(runs), key=lambda p: (p[1].start_ns, p[0]), reverse=True)]
    for r in ordered:
        summary = RunSummary(
            r.run_id,
            r.name,
            r.start_ns,
            r.end_ns,
            r.outcome,
            r.failure_reason,
            len(r.steps),
            len(r.errors),
            run_note(r.metadata),
            lost_in(r.metadata.get(RECORDER_KEY)),
        )
        yield summary, functools.partial(_same, r)


def _same(run: Run) -> Run | None:
    return run


def _pick(
    candidates: Iterable[tuple[RunSummary, Callable[[], Run | None]]], f: _Filters, limit: int, totals: bool
) -> _Picked:
    """The newest ``limit`` runs the filters keep (a session's oldest first), how many replays and reference runs
    were left out, and the totals over every run kept."""
    from trajdebug.search import search_run
    from trajdebug.sessions import has_tag, listed_tags, run_tags, session_in, user_in
    from trajdebug.usage import default_prices, run_usage

    prices = default_prices()
    rows: list[_Row] = []
    scored: list[tuple[Score, ...]] = []
    hidden = 0
    count = failed = tokens = 0
    cost: float | None = None
    ids: list[str] = []
    for summary, load in candidates:
        ids.append(summary.run_id)
        if not f.keeps_row(summary):
            # Replays and reference runs left out are counted when nothing else would have to be read to tell.
            hidden += int(not f.show_all and not f.reads_runs and f.keeps_row(_as_original(summary)))
            continue
        if len(rows) >= limit and not totals and not f.session:
            continue  # enough runs: what is left only counts toward the hidden ones
        run = load()
        if run is None:
            continue
        md = run.metadata
        if (f.tag and not has_tag(run_tags(md), f.tag)) or (f.user is not None and user_in(md) != f.user):
            continue
        if f.session is not None and session_in(md) != f.session:
            continue
        if not all(sf.keeps(run.scores) for sf in f.scores):
            continue
        matched = search_run(run, f.search) if f.search is not None else None
        if f.search is not None and matched is None:
            continue
        usage = run_usage(run, prices)
        count += 1
        failed += run.outcome == "failure"
        tokens += usage.total_tokens or 0
        cost = cost if usage.cost is None else (cost or 0.0) + usage.cost
        rows.append(
            _Row(summary, session_in(md), user_in(md), tuple(listed_tags(md)), usage.total_tokens, usage.cost, matched, run)
        )
        scored.append(run.scores)
    if f.session is not None:
        # A session reads as a conversation: its turns in order, the newest ``limit`` of them.
        rows = sorted(rows[:limit], key=lambda r: (r.summary.start_ns or 0, r.summary.run_id))
    summed: dict[str, Any] | None = {"runs": count, "failed": failed, "tokens": tokens, "cost": cost} if totals else None
    if summed is not None:
        from trajdebug.cli._score import score_means

        summed["scores"] = score_means(scored)
    return _Picked(rows[:limit], hidden, summed, tuple(ids))


def _as_original(s: RunSummary) -> RunSummary:
    from dataclasses import replace

    return replace(s, note=None)


def _row_dict(r: _Row) -> dict[str, Any]:
    """A listed run as JSON: the ``runs`` row and every column the table shows, and the matched steps."""
    d = r.summary.to_dict()
    d.update(
        {
            "started": _started(r.summary.start_ns),
            "session": r.session,
            "user": r.user,
            "tags": list(r.tags),
            "tokens": r.tokens,
            "cost": r.cost,
        }
    )
    if r.matched is not None:
        d["matched"] = [m.to_dict() for m in r.matched]
    from trajdebug.core.schema import score_to_dict

    d["scores"] = [score_to_dict(s) for s in r.run.scores] if r.run is not None else []
    return d


def _started(ns: int | None) -> str:
    """A start time in local time, to the second (what a person reads as "when")."""
    from datetime import datetime

    return "" if ns is None else datetime.fromtimestamp(ns / 1e9).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _print_runs(picked: _Picked) -> None:
    """The runs as a terminal table, with what is hidden and why; after a search, the steps that matched; the
    totals when asked."""
    from rich.table import Table

    from trajdebug.core.escape import markup as escape
    from trajdebug.report.text import fmt_duration
    from trajdebug.usage import format_cost, format_tokens

    table = Table(box=None, pad_edge=False)
    from trajdebug.scores import score_cells

    # The scores column only when a listed run has a score: a store nobody scored lists as it always did.
    cells = [score_cells(row.run) if row.run is not None else "" for row in picked.rows]
    cols = ["run", "name", "started", "outcome", "steps", "duration", "tokens", "cost", "session", "user"]
    cols += ["scores"] * any(cells) + ["why / note"]
    for col in cols:
        table.add_column(col, no_wrap=col not in ("name", "why / note", "scores"), overflow="ellipsis")
    style = {"success": "green", "failure": "red", "incomplete": "yellow"}
    short = shortener(picked.ids)
    for row, cell in zip(picked.rows, cells, strict=True):
        r = row.summary
        dur = None if r.end_ns is None or r.start_ns is None else r.end_ns - r.start_ns
        why = "; ".join(x for x in (r.failure_reason, r.note) if x)
        table.add_row(
            escape(short(r.run_id)),
            escape(r.name),
            _started(r.start_ns)[5:],
            f"[{'yellow' if r.lost else style.get(r.outcome, 'white')}]{escape(r.outcome)}"
            + (f", {r.lost:,} lost" if r.lost else "")
            + "[/]",
            str(r.steps) + (f" ({r.errors} err)" if r.errors else ""),
            fmt_duration(dur),
            format_tokens(row.tokens),
            format_cost(row.cost),
            escape(row.session or ""),
            escape(row.user or ""),
            *([escape(cell)] if any(cells) else []),
            escape(why),
        )
    out = console()
    if not out.is_terminal:
        # Piped (a file, grep, a pager), the table is as wide as its values: no column is cut to 80.
        out.width = 1000
    out.print(table)
    if any(row.matched for row in picked.rows):
        # A matched value stays on one line, whole, when piped (for grep), as `show` prints values.
        _print_found(console(unwrapped_piped=True), picked.rows, short)
    if not picked.rows:
        out.print("no runs", style="dim")
    if picked.hidden:
        n = picked.hidden
        out.print(f"{n} more run{'s' if n != 1 else ''} hidden: replays and reference runs (--all lists them)", style="dim")
    if picked.totals is not None:
        t = picked.totals
        tok = f", {format_tokens(t['tokens'])} tokens" if t["tokens"] else ""
        cost = f", {format_cost(t['cost'])}" if t["cost"] is not None else ""
        console(unwrapped_piped=True).print(
            f"total: {t['runs']:,} run{'s' if t['runs'] != 1 else ''}, {t['failed']:,} failed{tok}{cost}", markup=False
        )
        if t.get("scores"):
            means = ", ".join(f"{n} {m['mean']:.3g} (n={m['n']})" for n, m in t["scores"].items())
            console(unwrapped_piped=True).print(f"score means: {means}", markup=False)


def _print_found(out: Any, rows: list[_Row], short: Callable[[str], str]) -> None:
    """Where the search matched in each listed run: step, place (input, output, error) and the text around it."""
    from trajdebug.core.escape import visible

    out.print()
    for row in rows:
        hits = row.matched or ()
        n = len(hits)
        out.print(f"run {visible(short(row.summary.run_id))}: {n} step{'s' if n != 1 else ''} matched", markup=False)
        for m in hits:
            out.print(f"  {visible(m.name)}#{visible(m.step_id[-6:])} ({m.where}): {visible(m.excerpt)}", markup=False)


def register(cli: click.Group) -> None:
    """Add ``runs``."""
    cli.add_command(runs_cmd)
