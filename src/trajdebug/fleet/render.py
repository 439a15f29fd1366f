"""The fleet and compare reports as terminal tables and ticket-ready Markdown.

Everything a run carries (names, messages, task text) is untrusted: it goes
into rich `Text` objects (never parsed as markup) and is escaped in Markdown.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from trajdebug.fleet.groups import Group
from trajdebug.usage import format_cost


def _when(ns: int) -> str:
    if not ns:
        return "-"
    return _dt.datetime.fromtimestamp(ns / 1e9, tz=_dt.UTC).strftime("%Y-%m-%d %H:%M")


def _md(text: str) -> str:
    out = str(text).replace("\\", "\\\\")
    for ch in "`*_[]<>|#":
        out = out.replace(ch, "\\" + ch)
    return out.replace("\n", " ").replace("\r", " ")


def _share(g: Group) -> str:
    v = g.verified_share
    return "-" if v is None else f"{v:.0%} of {g.replayed}"


def _totals(report: Any) -> str:
    """Cost and sessions of the whole fleet in one line (empty when the runs state neither)."""
    parts = []
    cost, tokens = getattr(report, "cost", 0.0), getattr(report, "tokens", 0)
    if cost or tokens:
        failed = sum(g.cost for g in report.groups.groups.values())
        parts.append(f"LLM cost {format_cost(cost)} ({tokens:,} tokens), {format_cost(failed)} of it in failed runs")
    if getattr(report, "sessions", None):
        c = report.session_counts()
        parts.append(f"{c['sessions']} session{'s' * (c['sessions'] != 1)}, {c['failed']} with a failed run")
    return "; ".join(parts)


def group_markdown(g: Group, rank: int | None = None) -> str:
    """One ticket-ready alert for a failure group."""
    s = g.signature
    head = f"## {'#' + str(rank) + ' ' if rank else ''}{_md(g.title())}"
    lines = [
        head,
        "",
        f"- **group**: `{g.group_id}`; **{g.count}** failed run{'s' * (g.count != 1)}, "
        f"{g.critical} critical; severity {g.severity}",
        f"- **first seen** {_when(g.first_seen_ns)} UTC, **last seen** {_when(g.last_seen_ns)} UTC",
        f"- **root**: {_md(s.root_name)} ({_md(s.root_kind)}"
        + (f", agent {_md(s.root_agent)}" if s.root_agent != "-" else "")
        + f") in {_md(s.agent)}",
        f"- **failure**: {_md(s.error)}; **evidence**: {_md(s.evidence)}; **path**: {_md(s.path)}",
        f"- **verified by replay**: {_share(g)}",
    ]
    if g.cost or g.tokens:
        lines.append(f"- **LLM cost of the failed runs**: {format_cost(g.cost)} ({g.tokens:,} tokens)")
    if g.sessions:
        lines.append(f"- **sessions**: {len(g.sessions)}")
    if g.versions:
        lines.append("- **versions**: " + ", ".join(f"{_md(v)} ({n})" for v, n in sorted(g.versions.items())))
    if g.examples:
        lines.append("- **examples**:")
        lines.extend(f"  - `{_md(r)}` at {_when(t)}: {_md(m)}" for t, r, m in g.examples)
    lines.append(f"\nReproduce: `trajdebug analyze SOURCE --run {g.examples[0][1]}`" if g.examples else "")
    return "\n".join(lines).rstrip() + "\n"


def fleet_markdown(report: Any, *, top: int = 20) -> str:
    """The fleet report as Markdown: one alert per group, then the spectrum ranking."""
    groups = report.groups.ranked()
    parts = [
        f"# Fleet: {report.groups.failed} failed of {report.runs} runs in {len(groups)} group{'s' * (len(groups) != 1)}\n"
    ]
    extra = _totals(report)
    if extra:
        parts.append(_md(extra) + "\n")
    parts.extend(group_markdown(g, i + 1) for i, g in enumerate(groups[:top]))
    suspects = report.suspects()
    if suspects:
        parts.append("## What failing runs have that passing runs don't\n")
        parts.append("| agent | feature | Ochiai | DStar | failing | passing |\n|---|---|---|---|---|---|")
        parts.extend(
            f"| {_md(s.agent)} | {_md(s.description)} | {s.ochiai:.3f} | {s.dstar:.1f} | {s.ef}/{s.failing} | {s.ep}/{s.passing} |"
            for s in suspects
        )
    return "\n".join(parts) + "\n"


def render_fleet(report: Any, console: Any, *, top: int = 20) -> None:
    """The fleet report as terminal tables."""
    from rich.table import Table
    from rich.text import Text

    groups = report.groups.ranked()
    console.print(
        Text(
            f"{report.groups.failed} failed of {report.runs} runs, {len(groups)} failure group"
            f"{'s' * (len(groups) != 1)} ({report.seconds:.1f} s on {report.workers} worker{'s' * (report.workers != 1)})",
            style="bold",
        )
    )
    extra = _totals(report)
    if extra:
        console.print(Text(extra))
    # One entry per group: a line of counts, then the title (wrapped, never squeezed out).
    for i, g in enumerate(groups[:top]):
        head = Text(f"{i + 1:>2}. ", style="bold")
        head.append(g.group_id, style="cyan")
        head.append(
            f"  {g.count} run{'s' * (g.count != 1)} ({g.critical} critical)"
            f"  last seen {_when(g.last_seen_ns)}  verified {_share(g)}"
        )
        if g.cost:
            head.append(f"  cost {format_cost(g.cost)}", style="cyan")
        if g.sessions:
            head.append(f"  {len(g.sessions)} session{'s' * (len(g.sessions) != 1)}")
        console.print(head)
        console.print(Text("    " + g.title()))
    if len(groups) > top:
        console.print(Text(f"… {len(groups) - top} more groups (--top, --json)", style="dim"))
    suspects = report.suspects()
    if suspects:
        console.print()
        console.print(Text("What failing runs have that passing runs don't (Ochiai, DStar)", style="bold"))
        s_t = Table(show_edge=False, pad_edge=False)
        for col, width in (("agent", 12), ("Ochiai", 6), ("DStar", 6), ("failing", 7), ("passing", 7)):
            s_t.add_column(col, no_wrap=True, min_width=width)
        # The feature is the key: wrapped, never cut (a narrow terminal used to leave ~20 characters of it).
        s_t.add_column("feature", no_wrap=False, overflow="fold", min_width=20)
        for s in suspects:
            s_t.add_row(
                Text(s.agent),
                f"{s.ochiai:.3f}",
                f"{s.dstar:.1f}",
                f"{s.ef}/{s.failing}",
                f"{s.ep}/{s.passing}",
                Text(s.description),
            )
        console.print(s_t)
    for p in report.problems[:10]:
        console.print(Text(f"warning: {p}", style="yellow"))


def _rate(d: dict[str, Any]) -> str:
    return f"{d['rate']:.1%} [{d['low']:.1%}, {d['high']:.1%}] ({d['k']}/{d['n']})"


def render_compare(cmp: Any, console: Any) -> None:
    """The comparison as terminal tables."""
    from rich.table import Table
    from rich.text import Text

    d = cmp.to_dict()
    t = Table(show_edge=False, pad_edge=False, title=None)
    t.add_column("")
    t.add_column(Text("A: " + d["a"]["label"]))
    t.add_column(Text("B: " + d["b"]["label"]))
    t.add_row("runs", str(d["a"]["runs"]), str(d["b"]["runs"]))
    t.add_row("failure rate (95 % CI)", _rate(d["a"]["failure_rate"]), _rate(d["b"]["failure_rate"]))
    t.add_row("critical-failure rate", _rate(d["a"]["critical_rate"]), _rate(d["b"]["critical_rate"]))
    console.print(t)
    m = d["metric"]
    verdict = "REGRESSED" if m["regressed"] else "no significant regression"
    console.print(
        Text(
            f"critical failures per run: {m['a']:.3f} → {m['b']:.3f} ({m['delta']:+.3f}): {verdict}",
            style="bold red" if m["regressed"] else "bold",
        )
    )
    changed = [g for g in d["groups"] if g["change"] != "same"]
    if changed:
        console.print()
        g_t = Table(show_edge=False, pad_edge=False)
        for col in ("change", "group", "A", "B", "title"):
            g_t.add_column(col)
        for g in changed:
            g_t.add_row(g["change"], g["group_id"], f"{g['a']['k']}", f"{g['b']['k']}", Text(g["title"]))
        console.print(g_t)
    if d["changed_steps"]:
        console.print()
        console.print(Text("Steps whose output changed for the same input", style="bold"))
        for c in d["changed_steps"][:20]:
            console.print(Text(f"  {c['agent']} / {c['step']}: input {str(c['input'])[:80]}"))


__all__ = ["fleet_markdown", "group_markdown", "render_compare", "render_fleet"]
