"""The RCA pipeline: follow a store or a folder, analyze each new failed run once, alert once per group.

`Watcher.poll` does one pass: it lists the failed runs that have ended and
that it has not analyzed yet (a store's ``runs`` table; in a folder, the
files whose size or modification time changed), analyzes each, folds it into
its failure group, and raises an alert when a group is new or when its count
crosses a threshold (10, 100, 1000 by default).  Each alert goes to every
delivery (`trajdebug.fleet.delivery`); the state file records what was
analyzed and which delivery accepted which alert, after each change, so a
restarted watcher picks up where it stopped: no run analyzed twice, no alert
sent twice, and an alert a delivery refused is retried on the next poll.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajdebug.core.model import Run
from trajdebug.fleet.engine import analyze_run
from trajdebug.fleet.groups import Finding, Group, group_from_dict
from trajdebug.fleet.units import _skip, expand


log = logging.getLogger("trajdebug")

DEFAULT_THRESHOLDS = (10, 100, 1000)
"""Group sizes that raise an alert when crossed."""

SAVE_EVERY = 50
"""Runs analyzed between two saves of the state during a backlog."""


def _target_name(d: Callable[[dict[str, Any]], None]) -> str:
    return str(getattr(d, "name", None) or getattr(d, "__qualname__", repr(d)))


def alert_of(group: Group, kind: str, threshold: int | None = None) -> dict[str, Any]:
    """The alert for a group: ``kind`` is ``new-group`` or ``threshold``."""
    from trajdebug.fleet.render import group_markdown

    return {
        "alert": kind,
        "key": f"{group.group_id}:{'new' if kind == 'new-group' else threshold}",
        "group_id": group.group_id,
        "title": group.title(),
        "count": group.count,
        "threshold": threshold,
        "severity": group.severity,
        "critical": group.critical,
        "first_seen_ns": group.first_seen_ns,
        "last_seen_ns": group.last_seen_ns,
        "examples": [{"run_id": r, "start_ns": t, "message": m} for t, r, m in group.examples],
        "signature": group.signature.to_dict(),
        "markdown": group_markdown(group),
    }


@dataclass(frozen=True, slots=True)
class PollResult:
    """What one poll did."""

    analyzed: tuple[Finding, ...]
    """The failed runs analyzed in this poll."""
    alerts: tuple[dict[str, Any], ...]
    """The alerts delivered to every delivery in this poll (retries of earlier ones included)."""
    problems: tuple[str, ...]
    """Runs or deliveries that failed, one line each."""


class Watcher:
    """Follows a store or a folder of run files and alerts once per new failure group.

    Example:
        ```python
        from trajdebug.fleet.delivery import FileDelivery
        w = Watcher("trajdebug.db", state="watch.json", deliveries=[FileDelivery("alerts.jsonl")])
        w.run(interval=2.0)
        ```

    Args:
        source: A store, a run file, or a folder of them.
        state: The state file (created when missing).
        deliveries: Where alerts go (callables; see `trajdebug.fleet.delivery`).
        thresholds: Group sizes that raise an alert when crossed.
        alert_existing: On a first start (no state file yet), also alert on the groups of
            the failed runs already in the source.  By default those are the baseline:
            counted without an alert (a group they form alerts again only when it crosses
            a threshold later), so pointing a new watcher at a busy store does not announce
            every known group as new.
    """

    def __init__(
        self,
        source: str | Path,
        *,
        state: str | Path,
        deliveries: Sequence[Callable[[dict[str, Any]], None]],
        thresholds: Sequence[int] = DEFAULT_THRESHOLDS,
        alert_existing: bool = False,
    ) -> None:
        from trajdebug.fleet.delivery import WatchState

        self.source = Path(source)
        if not self.source.exists():
            raise FileNotFoundError(f"{self.source}: no such file or folder")
        fresh = not Path(state).exists()
        self.state = WatchState(state)
        # The baseline: on a first start, failed runs that started before the watcher did and
        # that its first poll finds are counted silently (None: no baseline).
        self._baseline_ns: int | None = time.time_ns() if fresh and not alert_existing else None
        self.baseline = 0
        """Failed runs counted as the baseline (no alert)."""
        self.deliveries = list(deliveries)
        self.thresholds = tuple(sorted(set(thresholds)))
        self.groups: dict[str, Group] = {gid: group_from_dict(d) for gid, d in self.state.groups.items()}

    # -- finding new failed runs -------------------------------------------------------

    def _new_failed(self) -> Iterator[Run]:
        for path in [self.source] if not self.source.is_dir() else expand([self.source]):
            yield from self._new_in(path)

    def _new_in(self, path: Path) -> Iterator[Run]:
        from trajdebug.sources.load import SourceError, read_source
        from trajdebug.store import Store, is_store

        if is_store(path):
            with Store(path) as store:
                ids = [
                    r
                    for (r,) in store.connection().execute(
                        "SELECT run_id FROM runs WHERE outcome = 'failure' ORDER BY start_ns, rowid"
                    )
                    if r not in self.state.analyzed
                ]
                for rid in ids:
                    yield store.load_run(rid)
            return
        try:
            st = path.stat()
        except FileNotFoundError:
            return
        mark = [st.st_mtime_ns, st.st_size]
        if self.state.files.get(str(path)) == mark:
            return
        try:
            result = read_source(path)
        except SourceError as exc:
            log.warning("%s", exc)
            return
        for run in result.runs:
            if run.outcome == "failure" and run.run_id not in self.state.analyzed:
                yield run
        # A file still being written may end in a partial record: mark it read only when it
        # parsed cleanly, so the rest of that run is read on the next poll.
        if not result.problems:
            self.state.files[str(path)] = mark

    # -- one pass ----------------------------------------------------------------------

    def poll(self) -> PollResult:
        """Analyze the failed runs that landed since the last poll and deliver the alerts they raise."""
        analyzed: list[Finding] = []
        problems: list[str] = []
        for run in self._new_failed():
            self.state.analyzed.add(run.run_id)
            if _skip(run.metadata):
                continue
            try:
                finding = analyze_run(run)
            except Exception as exc:  # noqa: BLE001 - one broken run must not stop the watcher
                problems.append(f"{self.source}: run {run.run_id}: {type(exc).__name__}: {exc}")
                continue
            analyzed.append(finding)
            quiet = self._baseline_ns is not None and run.start_ns < self._baseline_ns
            self.baseline += quiet
            self._count(finding, quiet=quiet)
            # Counts and the analyzed set are saved together, so a crash loses both or neither;
            # every SAVE_EVERY runs, so a long backlog is not rewritten once per run.
            if len(analyzed) % SAVE_EVERY == 0:
                self.state.save()
        # Saved before anything is sent: an alert leaves only once it is on disk.
        self.state.save()
        self._baseline_ns = None  # only the first poll reads the source as it was
        delivered = self._deliver(problems)
        return PollResult(tuple(analyzed), tuple(delivered), tuple(problems))

    def _count(self, f: Finding, *, quiet: bool = False) -> None:
        g = self.groups.get(f.group_id)
        if g is None:
            g = self.groups[f.group_id] = Group(f.signature)
        before = g.count
        g.add(f)
        self.state.groups[g.group_id] = g.to_dict()
        if quiet:
            return
        if before == 0:
            self._raise(alert_of(g, "new-group"))
        for t in self.thresholds:
            if before < t <= g.count:
                self._raise(alert_of(g, "threshold", t))

    def _raise(self, alert: dict[str, Any]) -> None:
        # Raised once per key: a key already in the state was raised before a restart.
        self.state.alerts.setdefault(alert["key"], {"alert": alert, "delivered": []})

    def _deliver(self, problems: list[str]) -> list[dict[str, Any]]:
        done = []
        names = {_target_name(d): d for d in self.deliveries}
        for key, alert, missing in self.state.pending(list(names)):
            ok = True
            for name in missing:
                try:
                    names[name](alert)
                except Exception as exc:  # noqa: BLE001 - a refused delivery is retried next poll
                    problems.append(f"alert {key}: {name}: {exc}")
                    ok = False
                    continue
                self.state.alerts[key]["delivered"].append(name)
                self.state.save()
            if ok:
                done.append(alert)
        return done

    def run(self, *, interval: float = 2.0, polls: int | None = None, idle_exit: float | None = None) -> None:
        """Poll until interrupted, ``polls`` passes were made, or nothing landed for ``idle_exit`` seconds."""
        n = 0
        idle_since = time.monotonic()
        while polls is None or n < polls:
            result = self.poll()
            n += 1
            for p in result.problems:
                log.warning("%s", p)
            if result.analyzed:
                idle_since = time.monotonic()
            elif idle_exit is not None and time.monotonic() - idle_since >= idle_exit:
                return
            if polls is None or n < polls:
                time.sleep(interval)


__all__ = ["DEFAULT_THRESHOLDS", "PollResult", "Watcher", "alert_of"]
