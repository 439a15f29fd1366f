"""Counterfactual replay: re-execute an agent with one step's output patched.

The engine plugs a controller into the recorder (`trajdebug.record.context._REPLAY`);
every decorated step asks it, before running, whether to serve a value.  The
rules follow rr's split (record the nondeterministic inputs, recompute the
rest; O'Callahan et al. 2017) and vcrpy's record modes:

* the patched step returns the patch (and redoes the patch's ``run.state`` writes);
* a boundary step (LLM, tool, declared replayable) outside the patch's forward
  slice gets its recorded response: the patch cannot have changed its request
  (if it did change, the recording missed a dependency: the step is treated as
  downstream and the divergence reported);
* a boundary step inside the slice is served when its request is one that was
  recorded (mode ``recorded``), runs live (mode ``live``), or stops the replay
  with a `ReplayDivergence` when its request was never recorded (mode ``strict``);
* every other step (parsing, state, control flow) is re-executed: it is
  deterministic given its inputs, and re-running it rebuilds in-process state.

The replayed run is recorded like any run, with metadata ``replay_of``,
``patch`` and ``live_calls``, and judged by the failure oracle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trajdebug.core import model
from trajdebug.core.codec import to_jsonable
from trajdebug.core.model import Run
from trajdebug.replay.cassette import BOUNDARY_KINDS, Cassette, fingerprint, step_paths
from trajdebug.replay.controller import (
    Call,
    CallMode,
    Controller,
    Correction,
    Divergence,
    Mode,
    RecordedError,
    ReplayDivergence,
)


ENTRY_KEY = "entry"
"""Run metadata key holding the entry point and its arguments: ``{"target": "module:function",
"args": [...], "kwargs": {...}}`` (written by `record` and the demo)."""


class ReplayError(ValueError):
    """A replay that cannot start: an unknown step in the patch, no arguments for the entry point."""


# -- the replay ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """One replay of a run."""

    run: Run
    """The replayed run (recorded, with metadata ``replay_of``, ``patch``, ``live_calls``)."""
    original: Run
    """The run that was replayed."""
    patch: Mapping[str, Correction]
    """The corrections, by original step id."""
    mode: Mode
    """The replay mode."""
    passed: bool
    """True when the oracle says the replayed run succeeded (the failure is gone)."""
    calls: tuple[Call, ...] = ()
    """What happened to each decorated step, in start order."""
    divergences: tuple[Divergence, ...] = ()
    """Boundary calls the recording could not answer as asked, first first."""
    applied: frozenset[str] = frozenset()
    """Patched step ids that the re-execution actually reached."""
    failures: tuple[Any, ...] = ()
    """What the failure detectors found on the replayed run."""
    stopped: str | None = None
    """Why the replay stopped early (a strict divergence), or None."""

    @property
    def live_calls(self) -> list[Call]:
        """Boundary calls that ran live."""
        return [c for c in self.calls if c.mode == "live"]

    @property
    def served(self) -> int:
        """Boundary calls served from the recording."""
        return sum(1 for c in self.calls if c.mode == "served")

    @property
    def rerun(self) -> int:
        """Deterministic steps re-executed."""
        return sum(1 for c in self.calls if c.mode == "rerun")

    @property
    def deterministic(self) -> bool:
        """True when no boundary call ran live: a second replay would do exactly the same."""
        return not self.live_calls

    @property
    def complete(self) -> bool:
        """True when every patch was applied and the replay ran to its end."""
        return self.stopped is None and self.applied == frozenset(self.patch)

    @property
    def first_divergence(self) -> Divergence | None:
        """The first boundary call the recording could not answer, if any."""
        return self.divergences[0] if self.divergences else None

    def counts(self) -> str:
        """``"2 calls live, 3 served from the recording, 5 steps re-executed"``."""
        live = len(self.live_calls)
        return (
            f"{live} call{'s' if live != 1 else ''} live, {self.served} served from the recording, "
            f"{self.rerun} deterministic step{'s' if self.rerun != 1 else ''} re-executed"
        )

    def summary(self) -> str:
        """One line: what was patched and whether the failure is gone."""
        what = ", ".join(_label(self.original, sid) for sid in self.patch) or "nothing"
        verdict = "the failure is gone" if self.passed else "the run still fails"
        if self.stopped:
            verdict = f"stopped: {self.stopped}"
        return f"replay of {self.original.run_id[:12]} patching {what}: {verdict} ({self.counts()})"

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON data."""
        return {
            "run_id": self.run.run_id,
            "replay_of": self.original.run_id,
            "mode": self.mode,
            "passed": self.passed,
            "outcome": self.run.outcome,
            "failure_reason": self.run.failure_reason,
            "patch": {k: v.to_dict() for k, v in self.patch.items()},
            "applied": sorted(self.applied),
            "calls": [c.to_dict() for c in self.calls],
            "live_calls": [c.to_dict() for c in self.live_calls],
            "divergences": [d.to_dict() for d in self.divergences],
            "failures": [f.to_dict() if hasattr(f, "to_dict") else str(f) for f in self.failures],
            "stopped": self.stopped,
        }


def _label(run: Run, step_id: str) -> str:
    try:
        return f"{run.step(step_id).name}#{step_id[-6:]}"
    except KeyError:
        return step_id


def detect_failures(run: Run) -> list[Any]:
    """The failure detectors' findings on a run."""
    from trajdebug.analysis import detect

    try:
        return list(detect(run))
    except Exception:  # noqa: BLE001 - a broken detector must not decide a verdict
        return []


def default_oracle(run: Run, failures: Sequence[Any] = ()) -> bool:
    """The run passes when it ended in success and no detector fired on its final output.

    The run's own outcome (an exception, ``run.fail``) is the primary oracle;
    a failure detected on the final output (``where == "final"``) overrides a
    recorded success, as in `trajdebug.analysis._detect`.
    """
    if run.outcome != "success":
        return False
    return not any(getattr(f, "where", None) in ("final", "run") for f in failures)


def forward_slice(run: Run, step_ids: Iterable[str]) -> set[str]:
    """The steps a change at ``step_ids`` can reach (data, state, control edges and enclosing steps)."""
    ids = list(step_ids)
    try:
        from trajdebug.analysis import DependencyGraph

        return DependencyGraph(run).forward_slice(ids)
    except Exception:  # noqa: BLE001 - a malformed graph: fall back to a plain walk
        children: dict[str, set[str]] = {}
        for s in run.steps:
            for d in s.deps:
                children.setdefault(d.step_id, set()).add(s.step_id)
            if s.parent_id is not None:
                children.setdefault(s.step_id, set()).add(s.parent_id)
        seen = set(ids)
        stack = list(ids)
        while stack:
            for c in children.get(stack.pop(), ()):
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return seen


def state_edges(run: Run) -> list[tuple[str, str]]:
    """The run's ``state`` dependencies as ``(writer, reader)`` pairs (shared state, declared resources)."""
    return [
        (d.step_id, s.step_id) for s in run.steps for d in s.deps if d.kind == "state" and d.run_id is None
    ]


def ancestors(run: Run, step_ids: Iterable[str]) -> set[str]:
    """The enclosing steps of these steps (parents, grandparents, ...)."""
    steps = run.step_map()
    out: set[str] = set()
    for sid in step_ids:
        p = steps[sid].parent_id if sid in steps else None
        while p is not None and p in steps and p not in out:
            out.add(p)
            p = steps[p].parent_id
    return out


def entry_arguments(run: Run) -> tuple[list[Any], dict[str, Any]]:
    """The entry point's recorded arguments (run metadata ``entry``).

    Raises:
        ReplayError: the run does not record them.
    """
    entry = run.metadata.get(ENTRY_KEY)
    if not isinstance(entry, Mapping):
        raise ReplayError(
            f"run {run.run_id} does not record its entry point's arguments (metadata {ENTRY_KEY!r}); "
            "record it with trajdebug.replay.record(...) or pass args=/kwargs= to replay"
        )
    args = entry.get("args") or []
    kwargs = entry.get("kwargs") or {}
    if not isinstance(args, list) or not isinstance(kwargs, Mapping):
        raise ReplayError(
            f"run {run.run_id}: metadata {ENTRY_KEY!r} must hold a list 'args' and an object 'kwargs'"
        )
    return list(args), dict(kwargs)


def as_correction(value: Any) -> Correction:
    """A patch value as a `Correction` (a plain value is the output)."""
    return value if isinstance(value, Correction) else Correction(value)


def _target(agent: Callable[..., Any]) -> str:
    mod = getattr(agent, "__module__", None) or "?"
    return f"{mod}:{getattr(agent, '__qualname__', getattr(agent, '__name__', '?'))}"


def _open_store(store: Any) -> Any:
    if store is None:
        return None
    from trajdebug.store import Store

    return store if isinstance(store, Store) else Store(store)


def _execute(
    agent: Callable[..., Any],
    controller: Controller,
    name: str,
    metadata: dict[str, Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    named_by_agent: bool = False,
) -> tuple[Run, str | None]:
    """Run the agent under a controller in a fresh in-memory run; return the run and why it stopped.

    A ``trajdebug.run(...)`` the agent opens joins that run (`trajdebug.record.runs`):
    its steps, state and outcome are the run's, its metadata is added, and with
    ``named_by_agent`` its name becomes the run's.
    """
    from trajdebug.record import context, runs
    from trajdebug.record.sinks import MemorySink

    sink = MemorySink()
    host_token = context._HOST.set(None)  # this run is a run of its own, even inside another's host
    try:
        handle = runs.run(name, sinks=[sink], metadata=metadata)
    finally:
        context._HOST.reset(host_token)
    if type(handle) is not runs.RunHandle:
        raise ReplayError(
            "recording is disabled (trajdebug.configure(enabled=False) or TRAJDEBUG=off): nothing to replay into"
        )
    token = context._REPLAY.set(controller)
    host_token = context._HOST.set((handle, named_by_agent))
    stopped: str | None = None
    result: Any = None
    try:
        with handle:
            result = agent(*args, **kwargs)
    except ReplayDivergence as exc:
        stopped = str(exc)
    except Exception:  # noqa: BLE001 - the agent's failure is recorded in the run: it is the point
        pass
    finally:
        context._HOST.reset(host_token)
        context._REPLAY.reset(token)
    run: Run = result if isinstance(result, Run) else handle.load()
    if run.run_id == handle.run_id and run.name != handle.name:
        run = model.replace(run, name=handle.name)  # named by the agent's own trajdebug.run(...)
    if stopped is not None:
        run = model.replace(run, outcome="incomplete", failure_reason=f"replay stopped: {stopped}")
    return run, stopped


def record(
    agent: Callable[..., Any],
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    task: str | None = None,
    store: Any = None,
    metadata: Mapping[str, Any] | None = None,
) -> Run:
    """Record one run of an entry point so that it can be replayed.

    The run's metadata keeps the entry point and its arguments (``entry``), and
    each state-writing step keeps the values it wrote (``state_values``), so the
    run can later supply corrections for any of its steps.

    An entry point that opens its own ``with trajdebug.run("name", task=...)``
    records into this run: that block names the run (unless ``name`` is given)
    and adds its metadata (``task``, ``agent``, ...; what is given here wins),
    and its store and sinks are not used.  The run returned is the run stored.

    Example:
        ```python
        run = trajdebug.replay.record(plan_trip, ["4 nights in New York"], task="NY trip", store="trip.db")
        run.run_id, run.outcome   # the stored run: trajdebug analyze trip.db --verify trip_planner:plan_trip
        ```

    Args:
        agent: The entry point; it is called inside the run as ``agent(*args, **kwargs)``.
        args: Positional arguments (JSON data: they are recorded, and replays call the agent with them).
        kwargs: Keyword arguments (JSON data).
        name: The run's name (default: the name of the ``trajdebug.run`` the agent opens,
            else the function's name).  Runs of one agent share a name: that is how the
            analysis finds the passing runs to compare a failing one with.
        task: The task, recorded as the run's ``task`` metadata.
        store: Where to save the run: a `trajdebug.Store` or the path of a store file
            (SQLite, created when missing); None keeps it in memory only (the returned run).
        metadata: More run metadata.
    """
    kw = dict(kwargs or {})
    md = dict(metadata or {})
    if task is not None:
        md["task"] = task
    md[ENTRY_KEY] = {"target": _target(agent), "args": to_jsonable(list(args)), "kwargs": to_jsonable(kw)}
    default = str(getattr(agent, "__name__", "run"))
    run, _ = _execute(agent, Controller(), name or default, md, list(args), kw, named_by_agent=name is None)
    target = _open_store(store)
    if target is not None:
        target.save_run(run)
    return run


def _replay_metadata(run: Run, corrections: Mapping[str, Correction], mode: Mode) -> dict[str, Any]:
    """The replayed run's metadata: the original's, less its environment and any earlier replay's marks."""
    md: dict[str, Any] = {
        k: v
        for k, v in run.metadata.items()
        if k not in ("env", "replay_of", "patch", "live_calls", "replay_mode")
    }
    md.update(
        {
            "replay_of": run.run_id,
            "patch": {k: c.to_dict() for k, c in corrections.items()},
            "replay_mode": mode,
        }
    )
    return md


def replay(
    agent: Callable[..., Any],
    run: Run,
    patch: Mapping[str, Any] | None = None,
    *,
    mode: Mode = "recorded",
    store: Any = None,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    passing: Sequence[Run] = (),
    kinds: Iterable[str] = BOUNDARY_KINDS,
    oracle: Callable[[Run], bool] | None = None,
) -> ReplayResult:
    """Re-execute an agent's entry point with some steps' outputs patched.

    Example:
        ```python
        result = trajdebug.replay_run(my_agent, run, patch={sql_step_id: "SELECT ..."})
        result.passed, [c.name for c in result.live_calls]
        ```

    Args:
        agent: The entry point, called as ``agent(*args, **kwargs)`` inside a new run (it may
            also record its own run and return it as a `Run`).
        run: The recorded run to replay.
        patch: Corrected outputs by step id of ``run`` (plain values or `Correction`).
        mode: How boundary steps downstream of the patch run (see `Mode`).
        store: Where to save the replayed run (a store or its path); None keeps it in memory.
        args: Positional arguments (default: the run's recorded ``entry`` arguments).
        kwargs: Keyword arguments (default: the recorded ones).
        passing: Passing runs of the same agent whose recorded calls may also be served.
        kinds: Step kinds on the replay boundary.
        oracle: ``oracle(run) -> True`` when the replayed run passes (default: `default_oracle`).

    Raises:
        ReplayError: a patched step id is not in the run, or no arguments are known.
    """
    corrections = {sid: as_correction(v) for sid, v in (patch or {}).items()}
    steps = run.step_map()
    unknown = [sid for sid in corrections if sid not in steps]
    if unknown:
        raise ReplayError(f"run {run.run_id} has no step {unknown[0]!r} (in patch)")
    if args is None and kwargs is None:
        a, kw = entry_arguments(run)
    else:
        a, kw = list(args or ()), dict(kwargs or {})
    keys = {key: sid for sid, key in step_paths(run).items()}
    cassette = Cassette.from_runs([run, *passing], kinds)
    ctl = Controller(
        cassette,
        keys=keys,
        patch=corrections,
        forward=forward_slice(run, corrections),
        must_run=ancestors(run, corrections),
        mode=mode,
        requests={s.step_id: fingerprint(s.input) for s in run.steps},
        state_edges=state_edges(run),
        slicer=lambda ids: forward_slice(run, ids),
    )
    new, stopped = _execute(agent, ctl, run.name, _replay_metadata(run, corrections, mode), a, kw)
    live = [c.to_dict() for c in ctl.calls if c.mode == "live"]
    new = model.replace(new, metadata={**new.metadata, "replay_of": run.run_id, "live_calls": live})
    failures = detect_failures(new)
    passed = stopped is None and (oracle(new) if oracle is not None else default_oracle(new, failures))
    target = _open_store(store)
    if target is not None:
        target.save_run(new)
    return ReplayResult(
        run=new,
        original=run,
        patch=corrections,
        mode=mode,
        passed=passed,
        calls=tuple(ctl.calls),
        divergences=tuple(ctl.divergences),
        applied=frozenset(ctl.applied),
        failures=tuple(failures),
        stopped=stopped,
    )


__all__ = [
    "ENTRY_KEY",
    "Call",
    "CallMode",
    "Controller",
    "Correction",
    "Divergence",
    "Mode",
    "RecordedError",
    "ReplayDivergence",
    "ReplayError",
    "ReplayResult",
    "ancestors",
    "as_correction",
    "default_oracle",
    "detect_failures",
    "entry_arguments",
    "forward_slice",
    "record",
    "replay",
    "state_edges",
]
