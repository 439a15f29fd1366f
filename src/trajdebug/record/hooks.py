"""Live hooks: a callback when an error becomes critical during a run, with the chain so far.

``trajdebug.on_critical(callback)`` calls ``callback(event)`` once per error
chain that becomes critical while a run is recorded, judged by the same rules
as ``trajdebug errors`` (`trajdebug.core.lifecycle.analyze_errors` on the run as
recorded so far): a chain is critical when its last error reached the run's
failure (``terminal-failed``); with ``score=N`` it counts as soon as the rules
that fired for it so far add up to N (``score=2``: every attempt of a retried
tool failed, ``retries-exhausted``; ``score=3``: and the error left the step
that called it, ``propagated-across-steps``), which is what lets an agent be
stopped early.  The event
(`CriticalError`) carries the chain (its errors, links, rules and score) and
the run.

Use it to report at once (a page, a ticket, a log line), or, with
``stop=True``, to stop the agent early: the next step the run starts raises
`StopRun` in the agent (an `Exception` it can catch; raised once per
critical chain, and only because the user asked for it).  The run then ends
``failure`` with the reason ``StopRun: ...`` unless the agent handles it.

Where it runs: the recorder's writer thread hands each batch of records (the
JSON lines it encoded once) to one hook thread (nothing is added to the
agent's path), which decodes them and keeps the
run's skeleton (no inputs or outputs) and re-judges it when errors or stages
arrive, at most every ``interval`` seconds and at the run's end.  A callback
that raises is logged and ignored; a slow one delays only later events.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trajdebug.core.codec import loads
from trajdebug.core.model import ErrorEvent
from trajdebug.record.steps import StopRun, request_stop


if TYPE_CHECKING:
    from trajdebug.core.lifecycle import ErrorChain


log = logging.getLogger("trajdebug")

_KEEP_TYPES = frozenset({"run", "step", "open", "error", "stage", "dep", "end"})
_CONTENT = ("input", "output")


@dataclass(frozen=True, slots=True)
class CriticalError:
    """An error chain that became critical during a run."""

    run_id: str
    """The run."""
    run_name: str
    """The run's name."""
    chain: ErrorChain
    """The chain so far (`trajdebug.core.lifecycle.ErrorChain`: error ids, links, rules that fired, score)."""
    errors: tuple[ErrorEvent, ...]
    """The chain's errors, origin first, with their stages so far."""
    critical: bool
    """Whether its last error reached the run's failure (else the score reached the hook's threshold)."""

    @property
    def score(self) -> int:
        """The sum of the weights of the rules that fired."""
        return int(self.chain.score)

    @property
    def rules(self) -> tuple[str, ...]:
        """The names of the rules that fired."""
        return tuple(r.rule for r in self.chain.reasons)

    @property
    def summary(self) -> str:
        """One line: the chain's errors, steps, links and rules."""
        return str(self.chain.summary)


@dataclass(eq=False, slots=True)
class Hook:
    """A registered callback (`on_critical`); ``remove()`` unregisters it."""

    callback: Callable[[CriticalError], Any]
    """Called with each critical chain."""
    score: int | None = None
    """Also fire for chains whose score reaches this (None: only chains that reached the failure)."""
    stop: bool = False
    """Ask the run to stop: the next step it starts raises `StopRun`."""
    fired: set[tuple[str, str]] = field(default_factory=set)
    """(run, origin error) pairs already reported."""

    def remove(self) -> None:
        """Stop calling this hook."""
        with _lock:
            if self in HOOKS:
                HOOKS.remove(self)


HOOKS: list[Hook] = []
"""The registered hooks (the writer feeds the hook thread only while there is one)."""
_lock = threading.Lock()

INTERVAL = 0.05
"""Seconds between two judgements of one run (at most), besides the one at its end."""


def on_critical(callback: Callable[[CriticalError], Any], *, score: int | None = None, stop: bool = False) -> Hook:
    """Call ``callback(event)`` when an error chain becomes critical during a run (see the module docstring).

    Example:
        ```python
        hook = trajdebug.on_critical(lambda e: pager.send(e.summary), score=2, stop=True)
        try:
            with trajdebug.run("support"):
                agent.answer(question)
        except trajdebug.StopRun as stopped:
            reply_with_apology(stopped.event)
        ```

    Args:
        callback: Called on the hook thread with a `CriticalError`.
        score: Also fire when a chain's score reaches this before the run fails.
        stop: Ask the run to stop (`StopRun` at its next step).

    Returns:
        The `Hook` (``hook.remove()`` unregisters it).
    """
    hook = Hook(callback, score, stop)
    with _lock:
        HOOKS.append(hook)
    return hook


# -- the hook thread ---------------------------------------------------------------------------


class _Skeleton:
    """What the hook thread keeps of one run: its records without content, and what was reported."""

    __slots__ = ("dirty", "ended", "judged", "name", "records", "run")

    def __init__(self, run: Any) -> None:
        self.run = run
        self.name = str(getattr(run, "name", "run"))
        self.records: list[dict[str, Any]] = []
        self.dirty = False
        self.ended = False
        self.judged = 0.0


class _Thread:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.inbox: deque[tuple[Any, Sequence[Mapping[str, Any] | bytes]]] = deque()
        self.runs: dict[str, _Skeleton] = {}
        self.thread: threading.Thread | None = None

    def feed(self, run: Any, records: Sequence[Mapping[str, Any] | bytes]) -> None:
        with self.cond:
            self.inbox.append((run, records))
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._loop, name="trajdebug-hooks", daemon=True)
                self.thread.start()
            self.cond.notify()

    def _loop(self) -> None:
        while True:
            with self.cond:
                if not self.inbox:
                    # Runs waiting for their next judgement wake the thread; otherwise it sleeps.
                    self.cond.wait(INTERVAL if self.runs else None)
                items = list(self.inbox)
                self.inbox.clear()
            for run, records in items:
                self._take(run, records)
            now = time.monotonic()
            for rid, sk in list(self.runs.items()):
                if sk.dirty and (sk.ended or now - sk.judged >= INTERVAL):
                    sk.dirty = False
                    sk.judged = now
                    try:
                        self._judge(sk)
                    except Exception:
                        log.debug("trajdebug: live hook judgement failed", exc_info=True)
                if sk.ended:
                    del self.runs[rid]
                    for hook in list(HOOKS):
                        hook.fired = {k for k in hook.fired if k[0] != rid}

    def _take(self, run: Any, records: Sequence[Mapping[str, Any] | bytes]) -> None:
        rid = str(run.run_id)
        sk = self.runs.get(rid)
        if sk is None:
            sk = self.runs[rid] = _Skeleton(run)
        for line in records:
            r = loads(line) if line.__class__ is bytes else line
            if not isinstance(r, Mapping):
                continue
            t = r.get("t")
            if t not in _KEEP_TYPES:
                continue
            rec = dict(r)
            for k in _CONTENT:
                rec.pop(k, None)
            sk.records.append(rec)
            if t in ("error", "stage"):
                sk.dirty = True
            elif t == "end":
                sk.ended = True
                sk.dirty = True

    def _judge(self, sk: _Skeleton) -> None:
        # Imported on the hook thread, the first time a run is judged: recording never loads it.
        from trajdebug.core.jsonl import RunBuilder
        from trajdebug.core.lifecycle import analyze_errors

        hooks = list(HOOKS)
        if not hooks:
            return
        builder = RunBuilder("live")
        for rec in sk.records:
            builder.add(rec)
        runs = builder.runs()
        if not runs:
            return
        run = runs[0]
        report = analyze_errors(run)
        by_id = {e.error_id: e for e in run.errors}
        for chain in report.chains:
            for hook in hooks:
                critical = bool(chain.critical)
                if not critical and (hook.score is None or chain.score < hook.score):
                    continue
                key = (run.run_id, chain.error_ids[0])
                if key in hook.fired:
                    continue
                hook.fired.add(key)
                errors = tuple(by_id[e] for e in chain.error_ids if e in by_id)
                event = CriticalError(run.run_id, sk.name, chain, errors, critical)
                # The stop is requested before the callback runs: whoever the callback tells (an agent
                # waiting for it, a test) finds the stop pending at the run's next step.
                if hook.stop and not sk.ended:
                    request_stop(sk.run, event)
                try:
                    hook.callback(event)
                except Exception:
                    log.warning("trajdebug: a live hook raised; ignored", exc_info=True)


_THREAD = _Thread()


def feed(run: Any, records: Sequence[Mapping[str, Any] | bytes]) -> None:
    """Writer thread: hand a batch of a run's records (mappings or their JSON lines) to the hook thread
    (called only while hooks exist)."""
    _THREAD.feed(run, records)


__all__ = ["HOOKS", "INTERVAL", "CriticalError", "Hook", "StopRun", "feed", "on_critical"]
