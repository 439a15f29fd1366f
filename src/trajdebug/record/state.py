"""Shared state with provenance: ``run.state`` and declared external state.

A write records its writer step; a read adds a ``state`` edge from the last
writer of that key, so a wrong value written early and read much later is one
hop away from its reader in the dependency graph.  State outside the process
(a database row, a file, a cache key) is declared with `writes` and `reads`.

Edges join steps: a write in the run's own body (outside every step) has no
writer to start an edge, and a read there has no reader to end one.  A value
read in the body from a key a step wrote is marked as coming from that step
(as `trajdebug.traced` does), so the step it is passed to depends on the
writer (a declared ``data`` edge).  A step that reads a key last written in the
body is marked (its ``state_body_reads`` attribute), and ``trajdebug lint``
reports it (``body-state``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from trajdebug.core.codec import to_jsonable
from trajdebug.core.model import Dependency
from trajdebug.record.edges import traced
from trajdebug.record.recorder import StepHandle, current_step


if TYPE_CHECKING:
    from trajdebug.record.runs import RunHandle


log = logging.getLogger("trajdebug")


def _current() -> StepHandle | None:
    return current_step()


WATCH_LIMIT = 500
"""Items a container read from `run.state` may hold to be watched for changes made in place."""

class RunState(MutableMapping[str, Any]):
    """A dict whose writes and reads are recorded as ``state`` dependencies."""

    def __init__(self, run: RunHandle) -> None:
        self._run = run
        self._data: dict[str, Any] = {}
        self._writers: dict[str, str] = {}
        self._lock = threading.Lock()
        # Containers a step got from the state, as they were then, by step id: compared when it ends.
        self._held: dict[str, dict[str, Any]] = {}
        # Keys last written in the run's body (outside every step): a step reading one gets no edge to where
        # the value came from, and is marked (``state_body_reads``) so that `trajdebug lint` can say so.
        self._body: set[str] = set()

    def _hold(self, h: StepHandle, key: str, value: Any, seen: Any = None) -> None:
        """Keep how a container a step got looked, so a change made in place is a write (`settle`);
        ``seen``: its JSON form when the caller has just made it (a write), not made twice."""
        # Copied once per step and key, and only small containers: the copy is made on the agent's thread,
        # and a step reading a large memo in a loop must not pay for it at every read.  A larger container
        # changed in place is not seen as a write (docs/recording.md); assignments always are.
        if not isinstance(value, (dict, list, set)) or len(value) > WATCH_LIMIT:
            return
        with self._lock:
            if key in self._held.get(h.id, ()):
                return
        try:
            form = seen if seen is not None else to_jsonable(value, 4096)
        except Exception:  # noqa: BLE001 - the recorder never raises into the agent (a container changed mid-copy)
            self._internal_error("run.state read")
            return
        with self._lock:
            self._held.setdefault(h.id, {}).setdefault(key, form)

    def settle(self, h: StepHandle) -> None:
        """When a step ends: a container it got and changed in place (``state.setdefault(k, {})[x] = y``)
        was written by it, as it is now (the write's value, and the next readers' edge).  Never raises
        into the agent: the step's exit calls it."""
        with self._lock:
            held = self._held.pop(h.id, None)
        for key, before in (held or {}).items():
            try:
                if key in self._data and to_jsonable(self._data[key], 4096) != before:
                    self._note_write(key, h, hold=False)
            except Exception:  # noqa: BLE001 - as above
                self._internal_error("run.state settle")

    def _internal_error(self, where: str) -> None:
        account = getattr(self._run, "_acct", None)
        if account is not None and hasattr(account, "internal_error"):
            account.internal_error(where)

    def _note_write(self, key: str, h: StepHandle | None = None, *, hold: bool = True) -> None:
        h = h or _current()
        if h is None:
            # The body replaced (or deleted) the value: no step wrote what is there now, so no later reader
            # depends on the step that wrote it before (docs/recording.md: a body write starts no edge).
            with self._lock:
                self._writers.pop(key, None)
            # An empty start (an accumulator the steps fill: [], {}, 0, None) is no value a reader depends on.
            if _blank(self._data.get(key)):
                self._body.discard(key)
            else:
                self._body.add(key)
            return
        self._body.discard(key)
        form = to_jsonable(self._data.get(key), 4096)
        with self._lock:
            self._writers[key] = h.id
            # Every other step that holds this key now holds what this write left: an enclosing step whose
            # child changed the container in place did not write it itself (the child did); a change it
            # makes after that is its own.
            for sid, held in self._held.items():
                if sid != h.id and key in held:
                    held[key] = form
        writes = h.attrs.get("state_writes") if h.attrs else None
        if writes is None:
            writes = []
            h.set("state_writes", writes)
        if key not in writes:
            writes.append(key)
        # The value written, so that a replay can redo the write and a patch can correct it.
        values = h.attrs.get("state_values") if h.attrs else None
        if values is None:
            values = {}
            h.set("state_values", values)
        values[key] = form
        if hold and key in self._data:
            self._hold(h, key, self._data[key], form)

    def _note_read(self, key: str, value: Any) -> None:
        h = _current()
        if h is None:
            writer = self._writers.get(key)
            if writer is not None:
                traced(value, source=writer)  # read in the run's body: the step it goes to depends on the writer
            return
        writer = self._writers.get(key)
        reads = h.attrs.get("state_reads") if h.attrs else None
        if reads is None:
            reads = []
            h.set("state_reads", reads)
        if key not in reads:
            reads.append(key)
        if self._body and key in self._body:
            _mark(h, "state_body_reads", key)
        if writer is not None and writer != h.id:
            h.deps = (*h.deps, Dependency(step_id=writer, kind="state", origin="tracked", key=key))
        self._hold(h, key, value)

    def __setitem__(self, key: str, value: Any) -> None:
        self._data[key] = value
        self._note_write(key)

    def __getitem__(self, key: str) -> Any:
        value = self._data[key]
        self._note_read(key, value)
        return value

    def __delitem__(self, key: str) -> None:
        del self._data[key]
        self._note_write(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def writer_of(self, key: str) -> str | None:
        """The id of the step that last wrote ``key``."""
        return self._writers.get(key)

    def __repr__(self) -> str:
        return f"RunState({self._data!r})"


def _mark(h: StepHandle, attribute: str, key: str) -> None:
    """Add ``key`` to the list a step keeps in ``attribute`` (once)."""
    found = h.attrs.get(attribute) if h.attrs else None
    if found is None:
        found = []
        h.set(attribute, found)
    if key not in found:
        found.append(key)


_external: dict[tuple[str, str], str] = {}
_ext_lock = threading.Lock()


StateHook = Callable[[str, str], bool]
"""``hook(verb, resource) -> taken``: records a `writes` (verb ``"writes"``) or `reads` made outside every
trajdebug step onto a step another recorder makes (the Agents SDK processor's span of the running tool)."""

_hooks: list[StateHook] = []
_unrecorded = [0]
_hooks_lock = threading.Lock()


def add_state_hook(hook: StateHook) -> None:
    """Ask ``hook`` about each `writes`/`reads` made outside every trajdebug step (an integration registers one)."""
    with _hooks_lock:
        if hook not in _hooks:
            _hooks.append(hook)


def remove_state_hook(hook: StateHook) -> None:
    """Stop asking ``hook`` (no error when it was not registered)."""
    with _hooks_lock:
        if hook in _hooks:
            _hooks.remove(hook)


def unrecorded_declarations() -> int:
    """`writes`/`reads` calls this process made outside every recorded step that no integration took: lost."""
    return _unrecorded[0]


def _elsewhere(verb: str, resource: str) -> None:
    """A declaration made outside every trajdebug step: an integration's step takes it, else it is counted
    and, the first time, said (a silent no-op left users with a state edge they believed declared)."""
    taken = False
    for hook in tuple(_hooks):
        try:
            taken = hook(verb, resource) or taken
        except Exception:  # a hook never breaks the agent
            log.debug("trajdebug: state hook failed", exc_info=True)
    if taken:
        return
    with _hooks_lock:
        _unrecorded[0] += 1
        first = _unrecorded[0] == 1
    if first:
        log.warning(
            "trajdebug: trajdebug.%s(%r) was called outside every recorded step, so it was not recorded "
            "(call it inside a trajdebug.run block's step, or a tool of an Agents SDK run a TrajdebugProcessor "
            "records; this warning is given once, trajdebug.record.state.unrecorded_declarations() counts them)",
            verb,
            resource,
        )


def writes(resource: str) -> None:
    """Declare that the current step wrote external state (``"db:orders/42"``, ``"file:out.csv"``).

    Outside every trajdebug step, an integration's step takes it (the Agents SDK tool running it, under a
    `TrajdebugProcessor`); otherwise it is not recorded: counted, with one warning.
    """
    h = _current()
    if h is None or h._run is None:
        _elsewhere("writes", resource)
        return
    with _ext_lock:
        _external[(h._run.run_id, resource)] = h.id
    lst = h.attrs.get("state_writes") if h.attrs else None
    if lst is None:
        lst = []
        h.set("state_writes", lst)
    lst.append(resource)


def reads(resource: str) -> None:
    """Declare that the current step read external state; adds a ``state`` edge from its last writer.

    Outside every trajdebug step, as `writes`.
    """
    h = _current()
    if h is None or h._run is None:
        _elsewhere("reads", resource)
        return
    writer = _external.get((h._run.run_id, resource))
    lst = h.attrs.get("state_reads") if h.attrs else None
    if lst is None:
        lst = []
        h.set("state_reads", lst)
    lst.append(resource)
    if writer is not None and writer != h.id:
        h.deps = (*h.deps, Dependency(step_id=writer, kind="state", origin="declared", key=resource))


def _blank(value: Any) -> bool:
    """An empty starting value: None, a zero, an empty text or container."""
    if value is None:
        return True
    if isinstance(value, (int, float)):
        return value == 0
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        return len(value) == 0
    return False
