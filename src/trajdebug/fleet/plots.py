"""Plots of a fleet: failures over time by group, group sizes, and a regression comparison.

matplotlib with the Agg backend (no display needed); the file's suffix picks
the format (``.png`` or ``.svg``).  Group labels are the group ids with a
short title: run content never reaches a plot as anything but text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trajdebug.fleet.groups import Group
from trajdebug.fleet.render import _when


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _label(g: Group, width: int = 48) -> str:
    t = f"{g.group_id[:8]} {g.signature.root_name} → {g.signature.error}"
    return t if len(t) <= width else t[: width - 1] + "…"


def _save(fig: Any, path: str | Path) -> Path:
    p = Path(path)
    if p.suffix.lower() not in (".png", ".svg"):
        raise ValueError(f"{p}: plots are written as .png or .svg")
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=110, bbox_inches="tight")
    _pyplot().close(fig)
    return p


# Bucket widths in minutes, from a minute to a week: the first that keeps the span within
# `_MAX_BARS` bars is used (200 runs in an hour are 60 bars of a minute, a quarter is 13 weeks).
_BUCKETS: tuple[tuple[int, str], ...] = (
    (1, "minute"),
    (5, "5 minutes"),
    (15, "15 minutes"),
    (60, "hour"),
    (360, "6 hours"),
    (1440, "day"),
    (10080, "week"),
)
_MAX_BARS = 60


def timeline_bucket(minutes: Sequence[int]) -> tuple[int, str]:
    """The bucket (width in minutes, name) for failures spread over these minutes since the epoch."""
    if not minutes:
        return _BUCKETS[-2]
    span = max(minutes) - min(minutes) + 1
    for width, name in _BUCKETS:
        if span / width <= _MAX_BARS:
            return width, name
    return _BUCKETS[-1]


def plot_timeline(groups: Sequence[Group], path: str | Path, *, top: int = 8) -> Path:
    """Failures over time of the largest groups (the rest as "other"), stacked; the bucket (a minute to a
    week) is chosen from the time span (`timeline_bucket`)."""
    plt = _pyplot()
    ranked = sorted(groups, key=lambda g: (-g.count, g.group_id))
    shown, rest = ranked[:top], ranked[top:]
    width, bucket = timeline_bucket([m for g in groups for m in g.timeline])
    keys: set[int] = set()
    series: list[tuple[str, Counter[int]]] = []
    for g in shown:
        c: Counter[int] = Counter()
        for minute, n in g.timeline.items():
            c[minute // width] += n
        keys |= set(c)
        series.append((_label(g), c))
    if rest:
        other: Counter[int] = Counter()
        for g in rest:
            for minute, n in g.timeline.items():
                other[minute // width] += n
        keys |= set(other)
        series.append((f"other ({len(rest)} groups)", other))
    fig, ax = plt.subplots(figsize=(10, 4.5))
    if keys:
        xs = list(range(min(keys), max(keys) + 1))
        cut = 10 if width >= 1440 else 16
        bottom = [0] * len(xs)
        for label, c in series:
            ys = [c.get(x, 0) for x in xs]
            ax.bar(
                [_when(x * width * 60_000_000_000)[:cut] for x in xs],
                ys,
                bottom=bottom,
                label=label,
                width=0.9,
            )
            bottom = [b + y for b, y in zip(bottom, ys)]
        ax.tick_params(axis="x", labelrotation=60, labelsize=7)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_ylabel(f"failed runs per {bucket}")
    ax.set_title("Failures over time by group")
    return _save(fig, path)


def plot_group_sizes(groups: Sequence[Group], path: str | Path, *, top: int = 15) -> Path:
    """Failed runs per group (critical ones darker), largest first."""
    plt = _pyplot()
    ranked = sorted(groups, key=lambda g: (-g.count, g.group_id))[:top][::-1]
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(ranked) + 1.5))
    labels = [_label(g) for g in ranked]
    ax.barh(labels, [g.count - g.critical for g in ranked], color="#8fb3d9", label="not critical")
    ax.barh(
        labels,
        [g.critical for g in ranked],
        left=[g.count - g.critical for g in ranked],
        color="#c0392b",
        label="critical",
    )
    ax.set_xlabel("failed runs")
    ax.set_title("Failure groups by size")
    ax.tick_params(axis="y", labelsize=7)
    ax.legend(fontsize=7)
    return _save(fig, path)


def plot_comparison(cmp: Any, path: str | Path, *, top: int = 12) -> Path:
    """Failure and critical rates of A and B, and each changed group's rate, with 95 % Wilson intervals."""
    plt = _pyplot()
    d = cmp.to_dict()
    rows: list[tuple[str, dict[str, dict[str, Any]]]] = [
        ("failure rate", {"a": d["a"]["failure_rate"], "b": d["b"]["failure_rate"]}),
        ("critical-failure rate", {"a": d["a"]["critical_rate"], "b": d["b"]["critical_rate"]}),
    ]
    groups = sorted(d["groups"], key=lambda g: -abs(g["b"]["rate"] - g["a"]["rate"]))[:top]
    rows += [(f"{g['group_id'][:8]} ({g['change']})", {"a": g["a"], "b": g["b"]}) for g in groups]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.5))
    ys = list(range(len(rows)))[::-1]
    for off, side, color in ((0.18, "a", "#7f8c8d"), (-0.18, "b", "#c0392b")):
        vals = [r[1][side]["rate"] for r in rows]
        lo = [r[1][side]["rate"] - r[1][side]["low"] for r in rows]
        hi = [r[1][side]["high"] - r[1][side]["rate"] for r in rows]
        label = f"{side.upper()}: {str(d[side]['label'])[:40]}"
        ax.barh([y + off for y in ys], vals, height=0.34, xerr=[lo, hi], color=color, label=label, capsize=2)
    ax.set_yticks(ys, [r[0] for r in rows], fontsize=7)
    ax.set_xlabel("share of runs (95 % Wilson interval)")
    ax.set_title("Regression: B against A")
    ax.legend(fontsize=7)
    return _save(fig, path)


__all__ = ["plot_comparison", "plot_group_sizes", "plot_timeline"]
