"""The step handle: a step being recorded, and the hot path that enters and leaves it.

Cost model (measured in ``benchmarks/``): entering and leaving a step is a
ContextVar set/reset, two clock reads, a counter and one deque append.  Inputs
and outputs that are not plain scalars are snapshotted with orjson at the
boundary, so later mutation by the agent cannot rewrite history.  Everything
else (building records, dependency tracking, redaction, I/O) happens on the
writer thread (`trajdebug.record.sinks.Writer`).

What the handle's methods read on every step is a global of this module (the
context variables, the clock, the step counter, the count of open scopes), so
the scope and stop counters that `StepHandle.__enter__` reads live here too.
`step()`, the no-op handle and `current_step`/`current_run` are in
`trajdebug.record.recorder`, which re-exports these names.
"""

from __future__ import annotations

from _thread import allocate_lock

from trajdebug.record import config as _config
from trajdebug.record import context as _ctx
from trajdebug.record.config import CONFIG
from trajdebug.record.decorate import bind, decorate


# `import trajdebug` imports this module (through `trajdebug.record.recorder`) and nothing heavier
# (see docs/benchmarks.md, "Report, start-up"): what a step needs only once a run records it (the
# model, the schema, the snapshot's codec, the error lifecycle, the time bounds) is imported on
# first use, below; `typing` is for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from contextvars import Token
    from types import TracebackType
    from typing import Any, TypeVar, overload

    from trajdebug.core.model import Dependency
    from trajdebug.record.decorate import Spec
    from trajdebug.record.runs import RunHandle

    F = TypeVar("F", bound=Callable[..., Any])
    T = TypeVar("T")

# The context variables, bound by assignment rather than imported by name: CPython 3.11
# compiles ``name.get()`` on an imported name as an attribute load plus a call (it
# takes the name for a module), ~30 ns slower than the method call it uses otherwise,
# and the hot path makes four such calls per step.
_RUN = _ctx._RUN
_STEP = _ctx._STEP
_BRANCH = _ctx._BRANCH
_ATTEMPT = _ctx._ATTEMPT
RemoteParent = _ctx.RemoteParent

# Module-global aliases of the clock and the step counter (`trajdebug.record.context`),
# read on the hot path without an attribute lookup; `trajdebug.testing.deterministic`
# swaps both places together.
_now: Callable[[], int] = _ctx._now
_next_seq: Callable[[], int] = _ctx._next_seq

_SCALARS = frozenset({str, int, float, bool, type(None)})
_KINDS = frozenset({"llm", "tool", "parse", "condition", "retrieval", "state", "agent", "input", "output", "other"})
"""`trajdebug.core.model.STEP_KINDS` (a test holds them equal), spelled out so that declaring a step
needs no model: any other kind goes to `trajdebug.core.schema.check_kind`."""
_new_handle = object.__new__

# How many branch or retry-attempt scopes are open anywhere in the process.
# While none is, starting a step skips reading their two context variables:
# a process-wide hint read on every step, counted under a lock because the
# scopes that change it are rare.
_scopes = 0
_scopes_lock = allocate_lock()  # `threading.Lock`, without importing `threading`


def scope_opened() -> None:
    """A `branch` or retry attempt scope was entered (see `_scopes`)."""
    global _scopes
    with _scopes_lock:
        _scopes += 1


def scope_closed() -> None:
    """A `branch` or retry attempt scope was left."""
    global _scopes
    with _scopes_lock:
        _scopes -= 1


class StopRun(Exception):
    """Raised at the start of the next step of a run a live hook asked to stop
    (`trajdebug.on_critical(..., stop=True)`); the agent may catch it."""

    def __init__(self, event: Any) -> None:
        super().__init__(f"stopped by a live hook: {getattr(event, 'summary', event)}")
        self.event = event
        """The critical chain that stopped the run (`trajdebug.record.hooks.CriticalError`)."""


def request_stop(run: RunHandle, event: Any) -> None:
    """Ask a run to stop: its next step raises `StopRun`.  While a stop is pending anywhere, starting a
    step takes its slow path (counted in `_scopes`), so nothing is added to the hot path otherwise."""
    global _scopes
    with _scopes_lock:
        if run._stop is None and getattr(run, "_active", False):
            run._stop = event
            _scopes += 1


def take_stop(run: RunHandle) -> Any:
    """A run's pending stop, taken (at a step's start, or the run's end), or None."""
    global _scopes
    with _scopes_lock:
        event = run._stop
        if event is None:
            return None
        run._stop = None
        _scopes -= 1
        return event


def _check_kind(kind: str) -> str:
    from trajdebug.core.schema import check_kind  # a kind not built in: warned about there

    return check_kind(kind)


def _freeze(value: Any) -> bytes | Any:
    """`trajdebug.record.snapshot.freeze`, imported by the first step that snapshots a value (and put
    in this function's place, so later steps call it directly)."""
    global _freeze
    from trajdebug.record.snapshot import freeze

    _freeze = freeze
    return freeze(value)


def _snap(value: Any) -> Any:
    """Freeze a value at the step boundary: scalars as they are, the rest as JSON bytes, at a cost bounded
    by the value's size, not its content (`trajdebug.record.snapshot`)."""
    if type(value) in _SCALARS:
        return value
    return _freeze(value)  # never raises: unencodable values become markers


class RecorderWarning(UserWarning):
    """Something given to the recorder that it ignored rather than break the agent (a bad ``deps=`` entry)."""


def _dep(d: Any, kind: str = "data") -> Dependency | None:
    from trajdebug.core.model import Dependency  # only for steps that declare dependencies

    if isinstance(d, Dependency):
        return d
    if isinstance(d, (StepHandle, RemoteParent)):
        return Dependency(step_id=d.id, kind=kind, origin="declared")  # type: ignore[arg-type]
    if isinstance(d, str) and d:
        return Dependency(step_id=d, kind=kind, origin="declared")  # type: ignore[arg-type]
    import warnings

    warnings.warn(
        f"trajdebug: deps= takes step handles, step ids or Dependency objects, not {type(d).__name__};"
        " this entry is ignored",
        RecorderWarning,
        stacklevel=4,
    )
    return None


def _deps(items: Iterable[Any], kind: str = "data") -> tuple[Dependency, ...]:
    try:
        found = [_dep(d, kind) for d in items]
    except TypeError:
        import warnings

        warnings.warn("trajdebug: deps= must be an iterable; ignored", RecorderWarning, stacklevel=3)
        return ()
    return tuple(d for d in found if d is not None)


class StepHandle:
    """A step being recorded.  ``with trajdebug.step(...) as s`` gives you one.

    Set ``s.output`` (and ``s.input``) inside the block; after it they are
    still the objects you set, and the record holds their JSON: the input's as
    it was when the block started (``input=``; one set in the block: as it was
    when the block ended), the output's as it was when the block ended.
    Call ``s.error(...)`` to report an error without raising, ``s.fallback(...)``
    when a degraded value replaces a failed one.  As a decorator the handle is a
    template: every call of the function records a fresh step.
    """

    # Defaults live on the class and an instance stores only what differs:
    # creating a step then costs a few attribute writes, not two dozen
    # (CPython 3.11 keeps instance attributes inline, as fast as __slots__).
    name: str | None = None
    kind: str = "other"
    deps: tuple[Dependency, ...] = ()
    agent: str | None = None
    input: Any = None
    output: Any = None
    attempt: int | None = None
    retry_of: str | None = None
    attrs: dict[str, Any] | None = None
    status: str = "ok"
    err: tuple[str, str, str | None] | None = None
    error_id: str | None = None
    parent: StepHandle | RemoteParent | None = None
    branch: tuple[str, ...] = ()
    seq: int = 0
    t0: int = 0
    t1: int | None = None
    _run: RunHandle | None = None
    _token: Token[StepHandle | RemoteParent | None] | None = None
    _child_errors: list[str] | None = None
    _in: bytes | None = None
    _out: bytes | None = None
    """The recorded JSON of ``input`` and ``output`` (`_snap`) when the value is not a scalar: the input's
    as the step starts (as it was called), the output's as it ends; ``input`` and ``output`` keep the
    user's objects (read after the block, and tracked by identity)."""
    _held: Any = None
    """The object ``input`` held when `_in` was made: an input set or replaced in the body since (another
    object) is frozen at the end."""
    _announced: bool = False
    _spec: Spec | None = None
    """Set while ``input`` holds a decorated call's arguments as they came (the positional tuple; the
    keywords in ``_kw``), not yet bound to parameter names: the parameters (`decorate.Spec`)."""
    _kw: dict[str, Any] | None = None
    timeout: float | None = None

    def __init__(
        self,
        name: str | None = None,
        kind: str = "other",
        *,
        deps: Iterable[Any] = (),
        agent: str | None = None,
        input: Any = None,
        attempt: int | None = None,
        retry_of: Any = None,
        attributes: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> None:
        self.name = name
        self.kind = kind if kind.__class__ is str and kind in _KINDS else _check_kind(kind)
        if deps:
            self.deps = _deps(deps)
        if agent is not None:
            self.agent = agent
        if input is not None:
            self.input = input
        if attempt is not None:
            self.attempt = attempt
        if retry_of is not None:
            self.retry_of = retry_of.id if isinstance(retry_of, (StepHandle, RemoteParent)) else retry_of
        if attributes:
            self.attrs = dict(attributes)
        if timeout is not None:
            # Kept as an attribute too: the writer finds overruns by it, `trajdebug lint` finds tools without one.
            self.timeout = float(timeout)
            self.set("timeout", self.timeout)

    # -- identity ------------------------------------------------------------

    _sid: str | None = None

    @property
    def id(self) -> str:
        """The step id (16 hex digits), valid once the step has started."""
        sid = self._sid
        if sid is None and self.seq:
            # Formatted on first use (usually on the writer thread), then kept.
            sid = self._sid = f"{_config._prefix}{self.seq:08x}"
        return sid or f"{_config._prefix}{self.seq:08x}"

    def __repr__(self) -> str:
        return f"<step {self.name!r} kind={self.kind} id={self.id if self.seq else '-'}>"

    # -- lifecycle -----------------------------------------------------------

    def __enter__(self) -> StepHandle:
        run = _RUN.get()
        if run is None:
            run = self._adopt()
            if run is None:
                return self
        if self.name is None:
            self.name = "step"
        self._run = run
        parent = _STEP.get()
        if parent is not None and (parent.__class__ is RemoteParent or parent._run is run):
            self.parent = parent
            if self.agent is None and parent.__class__ is StepHandle:
                self.agent = parent.agent
        self.seq = _next_seq()
        if _scopes and (run._stop is not None or _BRANCH.get() or _ATTEMPT.get() is not None):
            self._start_slow(run)
        inp = self.input
        if type(inp) not in _SCALARS:
            # The input as the step was called with it: anything but a scalar is frozen as JSON now into `_in`
            # (the body may change it in place), and `input` stays the user's object (identity tracking).
            try:
                spec = self._spec
                if spec is not None:
                    # A decorated call: arguments that are all immutable scalars stay as they came
                    # (bound on the writer thread); anything else is bound and frozen now.
                    args = iter(inp)
                    if spec[2]:
                        next(args, None)  # self or cls: not part of the input
                    for a in args:
                        if type(a) not in _SCALARS:
                            break
                    else:
                        kw = self._kw
                        if kw is None or all(type(v) in _SCALARS for v in kw.values()):
                            inp = None
                    if inp is not None:
                        inp = self.bound_input()
                if inp is not None:
                    self._in = _snap(inp)
                    self._held = inp
            except Exception:  # noqa: BLE001 - the recorder never breaks the agent (a `with` step's end tries again)
                run._internal_error("step start")
        self._token = _STEP.set(self)
        self.t0 = _now()
        return self

    def _adopt(self) -> RunHandle | None:
        """The run of a step started where the context holds none (a plain thread pool), or None.

        The step joins the one active run of the process, or the most recent of
        several, marked ``context_lost`` (``True``, or ``"ambiguous"``) and counted
        in the run's account; never dropped silently.  See `trajdebug.record.context.orphan_run`.
        """
        if not _ctx.ACTIVE or not CONFIG.enabled:
            return None
        found = _ctx.orphan_run()
        if found is None:
            return None
        run, ambiguous = found
        if ambiguous is not None:
            self.set("context_lost", "ambiguous" if ambiguous else True)
            run._adopted(ambiguous)
        return run

    def _start_slow(self, run: RunHandle) -> None:
        if run._stop is not None:
            event = take_stop(run)
            if event is not None:
                raise StopRun(event)
        branch = _BRANCH.get()
        if branch:
            self.branch = branch
        att = _ATTEMPT.get()
        if att is not None and self.attempt is None:
            # The first step started inside a retry attempt is that attempt.
            self.attempt, self.retry_of, reason = att
            _ATTEMPT.set(None)
            if reason:
                self.set("retry_reason", reason)

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        # The decorator form calls this too, so that a step ends the same way
        # in both forms, and a failure inside the recorder never reaches the agent.
        run = self._run
        if run is None or self.t1 is not None:
            return
        try:
            self.t1 = _now()
            try:
                _STEP.reset(self._token)  # type: ignore[arg-type]  # set by __enter__ whenever _run is
            except ValueError:
                # Reset from another context (a generator resumed elsewhere): fall back to the parent.
                _STEP.set(self.parent)
            attrs = self.attrs
            if attrs is not None and ("state_reads" in attrs or "state_writes" in attrs):
                # Containers it got from run.state and changed in place are its writes (`RunState.settle`).
                settle = getattr(getattr(run, "_state", None), "settle", None)
                if settle is not None:
                    settle(self)
            if exc is not None:
                from trajdebug.record import exceptions as _errors  # loaded with the run (`runs` imports it)

                _errors.on_exception(run, self, exc)
            elif self.retry_of is not None:
                from trajdebug.record import exceptions as _errors

                _errors.on_retry_success(run, self)
            # The input was frozen when the step started (`__enter__`); one set or replaced in the body since
            # is frozen now.  The output is frozen now: scalars are kept as they are, anything else as JSON into
            # `_out`, and `input`/`output` stay the user's objects (what ``s.output`` gives after the block, and
            # what identity tracking needs).  Snapshot bytes count against the run's byte budget when the step
            # is queued (only when there are any).
            # (A decorated call's all-scalar arguments are left as they came: no attribute read beyond `_spec`.)
            big = False
            inp = self.input
            if type(inp) not in _SCALARS:
                if self._spec is None or type(inp) is not tuple:
                    if inp is not self._held:
                        self._input_set(inp)
                    snap = self._in
                    if snap is not None:
                        run._bytes += len(snap)
                        big = True
            elif inp is not None and self._in is not None:
                self._in = None  # replaced by a scalar in the body: that is the input
            out = self.output
            if type(out) not in _SCALARS:
                self._out = snap = _snap(out)
                run._bytes += len(snap)
                big = True
            led = run._led
            if led is not None:
                # Counted in the ledger file before it is queued: a SIGKILL from here on cannot lose it uncounted.
                led[0] += 1
            q = run._queue
            if len(q) < run._max_buffer and (big is False or run._bytes < run._max_bytes):
                q.append(self)
            else:
                run._full(self)
        except Exception:  # noqa: BLE001 - the recorder never breaks the agent
            run._internal_error("step exit")

    def _input_set(self, inp: Any) -> None:
        """The step's end: its input, not a scalar, was set or replaced in the body (``s.input = ...``) after
        `__enter__` froze what it was called with (or could not): frozen now."""
        if self._spec is not None:
            self._spec = self._kw = None  # a decorated call's arguments replaced (through `current_step`)
        self._in = _snap(inp)
        self._held = inp

    # -- user API inside a step ------------------------------------------------

    def set(self, key: str, value: Any) -> None:
        """Set a free attribute on the step (model name, tool call id, ...)."""
        if self.attrs is None:
            self.attrs = {}
        self.attrs[key] = value

    def usage(
        self,
        *,
        model: str | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        total_tokens: int | None = None,
        cost: float | None = None,
    ) -> None:
        """Record an LLM call's model, tokens and cost (US dollars) as its ``llm.*`` attributes.

        What is not given is left as it was; a cost not given is priced from the
        model when the run is read (`trajdebug.usage`).
        """
        for key, value in (
            ("llm.model", model),
            ("llm.usage.prompt_tokens", prompt_tokens),
            ("llm.usage.completion_tokens", completion_tokens),
            ("llm.usage.total_tokens", total_tokens),
            ("llm.usage.cost", cost),
        ):
            if value is not None:
                self.set(key, value)

    def uses(self, *deps: Any, kind: str = "data") -> None:
        """Declare dependencies found inside the step (step handles, ids or `Dependency`)."""
        self.deps = self.deps + _deps(deps, kind)

    def error(self, message: str, *, type: str = "ReportedError", **attributes: Any) -> str | None:
        """Report an error without raising (a tool returned an error payload, a check failed).

        Returns:
            The new error's id (None when not recording).
        """
        if self._run is None:
            return None
        try:
            from trajdebug.record import exceptions as _errors

            return _errors.report_error(self._run, self, type, message, attributes)
        except Exception:  # noqa: BLE001 - the recorder never breaks the agent
            self._run._internal_error("error report")
            return None

    def fallback(self, value: T, reason: str = "fallback value used") -> T:
        """Use a degraded value after an error: the error ends ``ignored``; ``value`` is the output.

        Records ``fallback_value``: ``"kept"`` when ``value`` is the output the step already had
        (``s.fallback(s.output, "harmless warning")``: the step goes on with its own answer), else
        ``"replaced"`` (a stand-in for the value the error cost).

        Returns:
            ``value``, so that ``return s.fallback(cached, "rate service timed out")`` answers with it.
        """
        kept = self.output is not None and value is self.output
        self.output = value
        self.set("fallback", reason)
        self.set("fallback_value", "kept" if kept else "replaced")
        if self._run is not None:
            try:
                from trajdebug.record import exceptions as _errors

                _errors.on_fallback(self._run, self, reason)
            except Exception:  # noqa: BLE001 - the recorder never breaks the agent
                self._run._internal_error("fallback")
        return value

    # -- decorator ---------------------------------------------------------------

    if TYPE_CHECKING:  # the overloads are the type checker's (`typing.overload` costs start-up)

        @overload
        def __call__(self, fn: F) -> F: ...
        @overload
        def __call__(self, fn: Any) -> Any: ...

    def __call__(self, fn: Any) -> Any:
        """Decorate a function, coroutine function, generator or async generator."""
        if self.timeout is not None:
            # A bound's wrapper and the summary of its standard error are imported when it is declared.
            from trajdebug.record.timeouts import timed

            return timed(self, fn)
        return decorate(self, fn)

    def bound_input(self) -> Any:
        """The step's input; a decorated call's arguments are bound to their parameter names now (and kept so)."""
        spec = self._spec
        if spec is not None:
            self.input = bind(spec, self.input, self._kw)
            self._spec = self._kw = None
        return self.input

    def _spawner(self, spec: Spec) -> Callable[[tuple[Any, ...], dict[str, Any]], StepHandle]:
        """The function that makes each call's step from this template (decoration time): the step keeps
        the call's arguments unbound (`bound_input`)."""
        name, kind = self.name, self.kind
        if self.deps or self.agent is not None or self.attempt is not None or self.retry_of is not None or self.attrs:

            def spawn_full(args: tuple[Any, ...], kwargs: dict[str, Any]) -> StepHandle:
                h = self._spawn()
                h.input = args
                h._spec = spec
                if kwargs:
                    h._kw = kwargs
                return h

            return spawn_full

        def spawn(args: tuple[Any, ...], kwargs: dict[str, Any]) -> StepHandle:
            h = _new_handle(StepHandle)
            h.name = name
            h.kind = kind
            h.input = args
            h._spec = spec
            if kwargs:
                h._kw = kwargs
            return h

        return spawn

    def _spawn(self) -> StepHandle:
        h = StepHandle.__new__(StepHandle)
        h.name = self.name
        h.kind = self.kind
        if self.deps:
            h.deps = self.deps
        if self.agent is not None:
            h.agent = self.agent
        if self.attempt is not None:
            h.attempt = self.attempt
        if self.retry_of is not None:
            h.retry_of = self.retry_of
        if self.attrs:
            h.attrs = dict(self.attrs)
        if self.timeout is not None:
            h.timeout = self.timeout
        return h


__all__ = [
    "RecorderWarning",
    "RemoteParent",
    "StepHandle",
    "StopRun",
    "request_stop",
    "scope_closed",
    "scope_opened",
    "take_stop",
]
