"""The decorator form of `trajdebug.step`: sync and async functions, generators, async generators.

A decorated function records one step per call: its arguments bound to
parameter names are the input, its return value the output, an exception the
error.  The parameters are read once, on the first recorded call (so that
decorating at import time needs no `inspect`); a call
keeps its arguments as they came (the tuple and the keyword dict Python made
anyway), and they are bound to names on the writer thread.  Arguments that are
immutable scalars (strings, numbers, None) are not snapshotted at all; any
other argument freezes the bound input as JSON once, when the step starts, so
that a body changing an argument in place leaves the recorded input as it was
called (see `trajdebug.record.steps.StepHandle.__enter__`).  Generators are steps that span the whole iteration, current only while
their body runs (not while the consumer holds an item).  When a replay
controller is active (`trajdebug.replay`), it may serve a recorded response
instead of running the function.
"""

from __future__ import annotations

import functools
import sys

from trajdebug.record import context as _ctx
from trajdebug.record.config import CONFIG


TYPE_CHECKING = False  # `typing` is for the type checker only: this module is on `import trajdebug`'s path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from trajdebug.record.runs import RunHandle
    from trajdebug.record.steps import StepHandle

    Spawn = Callable[[tuple[Any, ...], dict[str, Any]], StepHandle]
    """Makes a call's step from the decorator's template (`StepHandle._spawner`)."""


# Bound by assignment, not imported by name, so that ``_RUN.get()`` compiles to a method
# call (see the same lines in `trajdebug.record.steps`).
_RUN = _ctx._RUN
_STEP = _ctx._STEP
_REPLAY = _ctx._REPLAY

# The step handle's module imports this one: it is named here for the type checker only (above).

_FUNCTION = type(_ctx.now)
"""A plain Python function's type (`types.FunctionType`)."""
_CO_GENERATOR, _CO_COROUTINE, _CO_ASYNC_GENERATOR = 0x20, 0x80, 0x200
"""The code flags `inspect.isgeneratorfunction` and its siblings test (`inspect.CO_GENERATOR`, ...)."""


def _unrecorded(run: RunHandle | None) -> bool:
    """Whether a call finds nothing to record into: no run in its context and none active anywhere."""
    return run is None and (not CONFIG.enabled or not _ctx.ACTIVE)


Spec = tuple[list[str], str | None, bool]
"""A function's parameters as the decorator reads them once: positional names, the ``*args`` name,
whether the first (``self``/``cls``) is left out."""


def _param_spec(fn: Callable[..., Any]) -> Spec:
    import inspect  # on the first recorded call (see `decorate`)

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return [], "args", False
    names: list[str] = []
    varargs = None
    skip_first = bool(params) and params[0].name in ("self", "cls")
    for _i, p in enumerate(params):
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            varargs = p.name
    return names, varargs, skip_first


def bind(spec: Spec, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """A call's arguments by parameter name (the step's input)."""
    names, varargs, skip_first = spec
    if skip_first and args:
        args = args[1:]
        names = names[1:]
    if len(args) == 1 and names:
        inp = {names[0]: args[0]}
    else:
        inp = dict(zip(names, args))  # zip stops at the shorter: extra positionals go to *args below
        if varargs and len(args) > len(names):
            inp[varargs] = args[len(names) :]
    if kwargs:
        inp.update(kwargs)
    return inp


def _shape(fn: Any) -> int:
    """Which of the code flags above ``fn`` has (0: a plain function), as `inspect` answers.

    A plain Python function's flags are read directly, as `inspect` reads them, so that decorating
    at import time does not import it (its own imports cost more than the whole recorder's start-up).
    Anything else (a method, a partial, a callable object), or any function once `inspect` is loaded
    (only it can mark a function a coroutine function, 3.12's ``markcoroutinefunction``), is asked of
    `inspect` itself.
    """
    if type(fn) is _FUNCTION and "inspect" not in sys.modules:
        return int(fn.__code__.co_flags) & (_CO_GENERATOR | _CO_COROUTINE | _CO_ASYNC_GENERATOR)
    import inspect

    if inspect.isasyncgenfunction(fn):
        return _CO_ASYNC_GENERATOR
    if inspect.isgeneratorfunction(fn):
        return _CO_GENERATOR
    return _CO_COROUTINE if inspect.iscoroutinefunction(fn) else 0


def decorate(tpl: StepHandle, fn: Any) -> Any:
    """Wrap ``fn`` so that each call records a step built from the template ``tpl``.

    The parameters are read (`_param_spec`, with `inspect`) on the first recorded call, not here:
    each wrapper starts with a spawner that reads them, makes the real one and puts it in its place.
    """
    if tpl.name is None:
        tpl.name = getattr(fn, "__name__", "step")
    shape = _shape(fn)
    if shape & _CO_ASYNC_GENERATOR:
        return _async_generator(fn, tpl)
    if shape & _CO_GENERATOR:
        return _generator(fn, tpl)
    if shape & _CO_COROUTINE:
        return _coroutine(fn, tpl)
    return _function(fn, tpl)


def _async_generator(fn: Any, tpl: StepHandle) -> Any:
    """An async generator function's wrapper: one step over the whole iteration, its items the output."""
    spawn: Spawn

    def first(args: tuple[Any, ...], kwargs: dict[str, Any]) -> StepHandle:
        nonlocal spawn
        spawn = tpl._spawner(_param_spec(fn))
        return spawn(args, kwargs)

    spawn = first

    @functools.wraps(fn)
    async def agen_wrapper(*args: Any, **kwargs: Any) -> Any:
        run = _RUN.get() if CONFIG.enabled else None
        h = None
        if not _unrecorded(run):
            h = spawn(args, kwargs)
            h.__enter__()
        if h is None or h._token is None:
            async for item in fn(*args, **kwargs):
                yield item
            return
        items: list[Any] = []
        agen = fn(*args, **kwargs)
        _STEP.reset(h._token)
        try:
            while True:
                tok = _STEP.set(h)
                try:
                    item = await agen.__anext__()
                finally:
                    _STEP.reset(tok)
                items.append(item)
                yield item
        except StopAsyncIteration:
            pass
        except BaseException as exc:
            h.output = items
            h._token = _STEP.set(h)
            h.__exit__(type(exc), exc, exc.__traceback__)
            raise
        h.output = items
        h._token = _STEP.set(h)
        h.__exit__(None, None, None)

    return agen_wrapper


def _generator(fn: Any, tpl: StepHandle) -> Any:
    """A generator function's wrapper: one step over the whole iteration, its items (and return) the output."""
    spawn: Spawn

    def first(args: tuple[Any, ...], kwargs: dict[str, Any]) -> StepHandle:
        nonlocal spawn
        spawn = tpl._spawner(_param_spec(fn))
        return spawn(args, kwargs)

    spawn = first

    @functools.wraps(fn)
    def gen_wrapper(*args: Any, **kwargs: Any) -> Any:
        run = _RUN.get() if CONFIG.enabled else None
        h = None
        if not _unrecorded(run):
            h = spawn(args, kwargs)
            # The step is current only while the generator body runs, not
            # while the consumer holds a yielded item.
            h.__enter__()
        if h is None or h._token is None:
            return (yield from fn(*args, **kwargs))
        items: list[Any] = []
        gen = fn(*args, **kwargs)
        _STEP.reset(h._token)
        result = None
        sent: Any = None
        try:
            while True:
                tok = _STEP.set(h)
                try:
                    item = gen.send(sent)
                finally:
                    _STEP.reset(tok)
                items.append(item)
                sent = yield item
        except StopIteration as stop:
            result = stop.value
        except GeneratorExit:
            gen.close()
            h.set("closed_early", True)
        except BaseException as exc:
            h.output = items
            h._token = _STEP.set(h)
            h.__exit__(type(exc), exc, exc.__traceback__)
            raise
        h.output = items if result is None else {"items": items, "return": result}
        h._token = _STEP.set(h)
        h.__exit__(None, None, None)
        return result

    return gen_wrapper


def _coroutine(fn: Any, tpl: StepHandle) -> Any:
    """A coroutine function's wrapper: one step per awaited call."""
    spawn: Spawn

    def first(args: tuple[Any, ...], kwargs: dict[str, Any]) -> StepHandle:
        nonlocal spawn
        spawn = tpl._spawner(_param_spec(fn))
        return spawn(args, kwargs)

    spawn = first

    @functools.wraps(fn)
    async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
        run = _RUN.get() if CONFIG.enabled else None
        if run is None and _unrecorded(run):
            return await fn(*args, **kwargs)
        h = spawn(args, kwargs)
        h.__enter__()
        try:
            ctl = _REPLAY.get()
            if ctl is None:
                out = await fn(*args, **kwargs)
            else:
                h.bound_input()
                served, out = ctl.before(h)
                if not served:
                    out = await fn(*args, **kwargs)
                    ctl.after(h, out)
            h.output = out
        except BaseException as exc:
            h.__exit__(type(exc), exc, exc.__traceback__)
            raise
        h.__exit__(None, None, None)
        return out

    return async_wrapper


def _function(fn: Any, tpl: StepHandle) -> Any:
    """A plain function's wrapper: one step per call (the hot path of the decorator form)."""
    spawn: Spawn

    def first(args: tuple[Any, ...], kwargs: dict[str, Any]) -> StepHandle:
        nonlocal spawn
        spawn = tpl._spawner(_param_spec(fn))
        return spawn(args, kwargs)

    spawn = first

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        run = _RUN.get() if CONFIG.enabled else None
        if run is None and _unrecorded(run):
            return fn(*args, **kwargs)
        h = spawn(args, kwargs)
        h.__enter__()
        try:
            ctl = _REPLAY.get()
            if ctl is None:
                out = fn(*args, **kwargs)
            else:
                h.bound_input()
                served, out = ctl.before(h)
                if not served:
                    out = fn(*args, **kwargs)
                    ctl.after(h, out)
            h.output = out
        except BaseException as exc:
            h.__exit__(type(exc), exc, exc.__traceback__)
            raise
        h.__exit__(None, None, None)
        return out

    return wrapper
