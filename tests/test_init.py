"""The package's start-up: every public name resolves, and ``import trajdebug`` loads only the step and its decorator."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import trajdebug
import trajdebug.record


SRC = str(Path(trajdebug.__file__).resolve().parent.parent)


def _fresh(code: str) -> str:
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize("name", trajdebug.__all__)
def test_every_public_name_resolves_in_a_fresh_process(name: str) -> None:
    """Each name in ``trajdebug.__all__`` is an attribute of a freshly imported package, and ``from trajdebug import`` works."""
    out = _fresh(
        f"import trajdebug\nfrom trajdebug import {name}\nprint(getattr(trajdebug, {name!r}) is {name})"
    )
    assert out.strip() == "True"


@pytest.mark.parametrize("name", trajdebug.record.__all__)
def test_every_recorder_name_resolves(name: str) -> None:
    """Each name in ``trajdebug.record.__all__`` resolves (imported on first use)."""
    assert getattr(trajdebug.record, name) is not None


def test_an_unknown_name_is_an_attribute_error() -> None:
    """A name the package does not have raises AttributeError (so ``hasattr`` is False)."""
    assert not hasattr(trajdebug, "no_such_name")
    assert not hasattr(trajdebug.record, "no_such_name")


DEFERRED = (
    "sqlite3",
    "orjson",
    "json",
    "logging",
    "typing",
    "dataclasses",
    "inspect",
    "pathlib",
    "threading",
    "uuid",
    "trajdebug.core.model",
    "trajdebug.core.schema",
    "trajdebug.core.codec",
    "trajdebug.core.redaction",
    "trajdebug.core.jsonl",
    "trajdebug.core.values",
    "trajdebug.core.mentions",
    "trajdebug.record.runs",
    "trajdebug.record.handle",
    "trajdebug.record.writer",
    "trajdebug.record.sinks",
    "trajdebug.record.snapshot",
    "trajdebug.record.exceptions",
    "trajdebug.record.timeouts",
    "trajdebug.analysis",
    "trajdebug.sources.load",
    "trajdebug.store",
)
"""What ``import trajdebug`` and decorating a function leave for the first run (or first use)."""


def test_import_and_decorating_load_only_the_step_and_its_decorator() -> None:
    """``import trajdebug``, decorating a function at import time, calling it and a ``with trajdebug.step``
    block with no run active load none of `DEFERRED`: not the run, the writer, the sinks, the codec or the
    model, nor sqlite3, orjson, logging, typing, dataclasses or inspect; the wrappers of a coroutine, a
    generator and an async generator function are still such functions."""
    code = (
        "import sys, trajdebug\n"
        "@trajdebug.step(kind='tool')\n"
        "def f(x): return x + 1\n"
        "@trajdebug.step\n"
        "async def g(): pass\n"
        "@trajdebug.step\n"
        "def h(): yield 1\n"
        "@trajdebug.step\n"
        "async def a(): yield 1\n"
        "with trajdebug.step('s', kind='parse') as s: s.output = [1]\n"
        "assert f(1) == 2\n"
        "print(' '.join(sorted(sys.modules)))\n"
        "import inspect\n"
        "print([fn(w) for fn, w in ((inspect.iscoroutinefunction, g), (inspect.isgeneratorfunction, h),"
        " (inspect.isasyncgenfunction, a), (inspect.isfunction, f))])\n"
    )
    loaded, shapes = _fresh(code).splitlines()
    assert "trajdebug.record.recorder" in loaded.split()
    assert [m for m in DEFERRED if m in loaded.split()] == []
    # Decorated without `inspect`, each wrapper is still the same kind of function as the one it wraps.
    assert shapes == "[True, True, True, True]"


def test_the_first_decorated_call_in_a_run_records_it(tmp_path: Path) -> None:
    """A function decorated before anything was loaded, called once inside ``trajdebug.run(path=...)`` in a
    fresh process, is in the run's file with its bound input and its output (the deferred modules load then)."""
    path = tmp_path / "r.jsonl"
    code = (
        "import sys, trajdebug\n"
        "@trajdebug.step(kind='tool')\n"
        "def f(x, *, y=0): return {'sum': x + y}\n"
        f"with trajdebug.run('t', path={str(path)!r}):\n"
        "    f(1, y=2)\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    out = _fresh(code).split()
    steps = [r for r in map(json.loads, path.read_text().splitlines()) if r["t"] == "step"]
    assert [(r["name"], r["kind"], r["input"], r["output"]) for r in steps] == [
        ("f", "tool", {"x": 1, "y": 2}, {"sum": 3})
    ]
    assert "trajdebug.record.runs" in out and "orjson" in out


def test_a_decorated_call_with_no_run_runs_the_function_unrecorded() -> None:
    """A decorated function called with no run active returns its value (a generator its items), in a fresh process."""
    code = (
        "import trajdebug\n"
        "@trajdebug.step\n"
        "def f(x): return x * 2\n"
        "@trajdebug.step(kind='retrieval')\n"
        "def g(n): yield from range(n)\n"
        "print(f(21), list(g(3)), trajdebug.current_run(), trajdebug.current_step())\n"
    )
    assert _fresh(code).strip() == "42 [0, 1, 2] None None"


def test_a_run_records_with_only_the_eager_modules() -> None:
    """A decorated step inside ``trajdebug.run`` records to memory in a fresh process."""
    code = (
        "import trajdebug\n"
        "from trajdebug.record.sinks import MemorySink\n"
        "@trajdebug.step(kind='tool')\n"
        "def f(x): return x + 1\n"
        "h = trajdebug.run('t', sinks=[MemorySink()])\n"
        "with h: f(1)\n"
        "print([s.name for s in h.load().steps])\n"
    )
    assert "'f'" in _fresh(code)


def _lazy_tables() -> list[tuple[str, str, str, str]]:
    """(package, public name, module that holds it, its name there) of both lazy tables."""
    out = [("trajdebug", name, mod, attr) for name, (mod, attr) in trajdebug._LAZY.items()]
    # A public name the table does not list is the recorder's, imported from `trajdebug.record`.
    eager = {"StepHandle", "StopRun", "current_run", "current_step", "step"}
    rest = [n for n in trajdebug.__all__ if n not in trajdebug._LAZY and n not in eager]
    out += [("trajdebug", name, "trajdebug.record", name) for name in rest]
    out += [("trajdebug.record", name, mod, name) for name, mod in trajdebug.record._WHERE.items()]
    return out


def test_every_lazy_name_is_public_and_found_where_the_table_says() -> None:
    """Each entry of ``_LAZY`` and ``_WHERE`` is in its package's ``__all__`` and names a module that holds it
    (a moved module must be moved in the table too, in a fresh process where nothing was imported first)."""
    tables = _lazy_tables()
    assert [(p, n) for p, n, _, _ in tables if n not in importlib.import_module(p).__all__] == []
    code = (
        "import importlib\n"
        f"for p, n, m, a in {tables!r}:\n"
        "    v = getattr(importlib.import_module(m), a, None)\n"
        "    if v is None or getattr(importlib.import_module(p), n) is not v: print(p, n, m)\n"
    )
    assert _fresh(code).split("\n")[0] == ""


def test_the_suite_tests_the_package_of_the_checkout_it_sits_in() -> None:
    """``trajdebug`` is imported from the ``src`` beside these tests, not from an installed copy elsewhere
    (a shared virtualenv's editable install naming another checkout), with or without PYTHONPATH."""
    assert Path(trajdebug.__file__).resolve().parent == Path(__file__).resolve().parents[1] / "src" / "trajdebug"
