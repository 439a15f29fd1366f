"""Recording a run: ``with trajdebug.run("name") as run``.

`run` opens a `RunHandle` (`trajdebug.record.handle`: the agent's side of a run, its queue, outcome,
state and metadata, what the recorder could not keep); inside `trajdebug.replay` it joins the run being
recorded there instead (`_JoinedRun`), and with recording off it returns a handle that writes nothing
(`_NoopRun`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from trajdebug.record import context as _ctx
from trajdebug.record import exceptions as _errors
from trajdebug.record.account import Account
from trajdebug.record.config import CONFIG
from trajdebug.record.export import RunExport
from trajdebug.record.handle import LOST_KINDS, RECORDER_KEY, RunHandle
from trajdebug.record.sinks import Sink


if TYPE_CHECKING:
    from trajdebug.store import Store


def run(
    name: str,
    *,
    store: Store | str | Path | None = None,
    path: str | Path | None = None,
    sinks: Iterable[Sink] = (),
    metadata: Mapping[str, Any] | None = None,
    tags: Iterable[str] | Mapping[str, Any] = (),
    continues: str | None = None,
    task: str | None = None,
    agent: str | None = None,
    version: str | None = None,
    session: str | None = None,
) -> RunHandle:
    """Record a run: ``with trajdebug.run("name") as run: ...``.

    Example:
        ```python
        with trajdebug.run("support", metadata={"customer": "c-42"}, tags=["nightly", "eu"]) as run:
            ...
        ```

    Args:
        name: The run's name.
        store: A store (path or `trajdebug.store.Store`) to write to.
        path: A JSONL file to append to.
        sinks: Extra sinks.
        metadata: Free metadata (any JSON-able values; what cannot be encoded is kept as a
            marker, secrets are redacted).  Add more during the run with ``run.add_metadata(...)``.
        tags: Labels for the run, kept sorted and without duplicates in ``metadata["tags"]``;
            key-value tags (``tags={"team": "search"}``) are kept whole, as a mapping.
        continues: The run id this run continues (an earlier conversation turn).
        task: The task (recorded in metadata).
        agent: The agent's name (recorded in metadata).
        version: The agent's version (recorded in metadata).
        session: The conversation or user session the run belongs to (``metadata["session"]``):
            `trajdebug serve` lists sessions, ``analyze --session`` searches its earlier runs.

    Without ``store``, ``path`` or ``sinks`` the run goes to the configured default:
    ``trajdebug.configure(path=...)`` or ``store=...``, else ``$TRAJDEBUG_STORE`` or ``./trajdebug.db``.

    Inside `trajdebug.replay.record` or a replay, the run joins the run being recorded
    there (its name and metadata go to that run; ``store``, ``path`` and ``sinks`` are not used).
    """
    md = dict(metadata or {})
    for key, value in (("task", task), ("agent", agent), ("version", version), ("session", session)):
        if value is not None:
            md[key] = value
    if isinstance(tags, Mapping):
        # Key-value tags are kept whole (a dict, merged into one given in metadata).
        had = md.get("tags")
        md["tags"] = {**(dict(had) if isinstance(had, Mapping) else {}), **{str(k): v for k, v in tags.items()}}
    elif tags:
        given = [tags] if isinstance(tags, str) else list(tags)
        had = md.get("tags")
        had = list(had) if isinstance(had, (list, tuple, set, frozenset)) else ([] if had is None else [had])
        md["tags"] = sorted({str(t) for t in [*had, *given]})
    if not CONFIG.enabled:
        return _NoopRun(name)
    host = _ctx._HOST.get()
    if host is not None and host[0]._active:
        return _JoinedRun(host[0], name if host[1] else None, md)  # type: ignore[return-value]
    return RunHandle(name, store=store, path=path, sinks=sinks, metadata=md, continues=continues)


class _JoinedRun:
    """``trajdebug.run(...)`` opened by an entry point that `trajdebug.replay` records or replays.

    It starts no run of its own (its store and sinks are not used): entering it
    names the host run (when the host lets it) and adds the metadata the host
    does not already have, and gives the host's handle, so ``run.state``,
    ``run.fail(...)`` and the steps all land in the one recorded run.  An
    exception leaving its block fails the host there, as it would have failed
    a run of its own, even when the caller catches it afterwards.
    """

    __slots__ = ("_host", "_metadata", "_name")

    def __init__(self, host: RunHandle, name: str | None, metadata: dict[str, Any]) -> None:
        self._host = host
        self._name = name
        self._metadata = metadata

    def __enter__(self) -> RunHandle:
        host = self._host
        if self._name is not None:
            host.name = self._name
        new = {k: v for k, v in self._metadata.items() if k not in host.metadata}
        if new:
            host.add_metadata(**new)
        return host

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        host = self._host
        if exc is None or not isinstance(exc, Exception) or not host._active or exc is host._acct.escaped:
            return
        try:
            _errors.on_run_exception(host, exc)
            host._acct.escaped = exc
            if host.outcome is None:
                host.outcome = "failure"
                host.failure_reason = f"{type(exc).__name__}: {_errors.safe_str(exc)}"
        except Exception:  # noqa: BLE001
            host._internal_error("joined run end")

    def close(self) -> None:
        """Nothing to end: the host run ends where it was opened."""

    def __getattr__(self, attr: str) -> Any:
        # Used without ``with`` (``r = trajdebug.run(...); r.state[...]``): the host's handle answers.
        return getattr(self._host, attr)


class _NoopRun(RunHandle):
    """What `run` returns when recording is off: nothing is opened or written."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.run_id = ""
        self.outcome = None
        self.failure_reason = None
        self._active = False
        self._final = True
        self._state = None
        self._acct = Account("")
        self._export = RunExport(self, self._acct, [])

    def __enter__(self) -> RunHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def flush(self, timeout: float | None = None) -> bool:
        return True

    @property
    def state(self) -> Any:
        if self._state is None:
            self._state = {}
        return self._state


__all__ = ["LOST_KINDS", "RECORDER_KEY", "RunHandle", "run"]
