"""Shared fixtures: every test runs in its own directory with its own default store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trajdebug.model import Run


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets a fresh cwd and default store, so nothing leaks between tests."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAJDEBUG_STORE", str(tmp_path / "trajdebug.db"))
    monkeypatch.delenv("TRAJDEBUG", raising=False)


# -- real browser (Chromium from the system's packages, driven by Playwright) ----------------

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
HOSTILE = (
    '<script>window.__pwned = "script"</script>'
    '<img src=x onerror="window.__pwned = \'onerror\'">'
    '<a href="javascript:window.__pwned = \'href\'" id=planted>click me</a>'
    "</script><script>alert(1)</script>"
)
"""Markup planted in LLM outputs, step names and error messages: none of it may ever run."""


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """A headless Chromium; missing Chromium fails the test loudly (CI installs it)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install it with 'apt-get install -y chromium' (.ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page; ``page.dialogs`` collects any dialog (and dismisses it), ``page.errors`` script errors."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = ctx.new_page()
    pg.dialogs = []
    pg.errors = []
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    ctx.close()


@pytest.fixture
def hostile_run() -> Run:
    """A failed run recorded by the real recorder with `HOSTILE` markup in a run name, step names,
    an LLM output, a tool output, an input, an attribute and an error message."""
    import trajdebug
    from trajdebug.testing import capture_runs

    with capture_runs() as runs:
        try:
            with trajdebug.run("agent " + HOSTILE, metadata={"tags": [HOSTILE]}):
                with trajdebug.step("plan " + HOSTILE, kind="llm", input={"prompt": HOSTILE}) as s:
                    s.output = "Sure! " + HOSTILE
                    s.set("model", HOSTILE)
                with trajdebug.step("fetch", kind="tool", deps=[s]) as t:
                    t.output = {"html": HOSTILE, "url": "javascript:window.__pwned='url'"}
                with trajdebug.step("use " + HOSTILE, kind="parse", deps=[t]):
                    raise ValueError("bad page: " + HOSTILE)
        except ValueError:
            pass
    return runs[0]


@pytest.fixture(scope="session")
def fleet_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of 240 recorded runs of the fleet benchmark's agents (faults and passing runs mixed).

    Shared by the session: copy it before writing to it.
    """
    import sys

    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from benchmarks.fleetgen import generate

    path = tmp_path_factory.mktemp("fleet") / "fleet.db"
    generate(path, 240, seed=3)
    return path
