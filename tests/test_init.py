"""The package's start-up: every public name resolves, and ``import trajdebug`` loads only the recorder."""

from __future__ import annotations

import importlib
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


def test_import_loads_neither_readers_nor_store_nor_analysis() -> None:
    """``import trajdebug`` imports the recorder only: not the analysis, the readers, the store or values."""
    out = _fresh("import sys, trajdebug\nprint(' '.join(sorted(sys.modules)))").split()
    for absent in (
        "trajdebug.analysis",
        "trajdebug.core.jsonl",
        "trajdebug.sources.load",
        "trajdebug.store",
        "trajdebug.core.values",
    ):
        assert absent not in out
    assert "trajdebug.record.runs" in out and "trajdebug.record.recorder" in out


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
    eager = {"StepHandle", "StopRun", "current_run", "current_step", "step", "RunHandle", "run"}
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
