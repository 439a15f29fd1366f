"""Shared fixtures: every test runs in its own directory with its own default store.

Also the builders several test modules share: running the real command line
in a subprocess (`cli_run`), a real read-only file system for a command
(`readonly`), and the data sets under ``../shared/data`` next to the
repository (`shared_data`); a real headless browser (`browser`, `page`) and hostile runs
for the HTML report; a recorded fleet (`fleet_store`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

import trajdebug
from trajdebug.core.model import Run


ROOT = Path(__file__).resolve().parents[1]

# Property tests check behaviour, not speed: hypothesis's per-example deadline (200 ms) fails them on a
# loaded machine (seen in test_values at load 11), and speed lives in benchmarks/.
settings.register_profile("trajdebug", deadline=None)
settings.load_profile("trajdebug")


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test gets a fresh cwd and default store, so nothing leaks between tests."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAJDEBUG_STORE", str(tmp_path / "trajdebug.db"))
    monkeypatch.delenv("TRAJDEBUG", raising=False)
    monkeypatch.delenv("TRAJDEBUG_SINK", raising=False)
    saved = {k: getattr(trajdebug.record.CONFIG, k) for k in trajdebug.record.config.SETTINGS if k != "extra"}
    yield
    from trajdebug.record import context

    leaked = [r.name for r in context.ACTIVE]
    context.ACTIVE.clear()
    trajdebug.record.flush(5)
    trajdebug.configure(**saved)
    assert not leaked, f"runs left recording after the test: {leaked}"


CliRun = Callable[..., subprocess.CompletedProcess[bytes]]


@pytest.fixture
def cli_run(tmp_path: Path) -> CliRun:
    """Run ``python -m trajdebug ARGS`` in a real subprocess (output piped, as bytes).

    Keyword ``wrap`` prefixes the command (e.g. with `readonly`); ``env`` adds variables.
    """

    def run(*args: str, wrap: Sequence[str] = (), env: dict[str, str] | None = None, check: bool = False) -> subprocess.CompletedProcess[bytes]:
        full = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
        return subprocess.run(
            [*wrap, sys.executable, "-m", "trajdebug", *args],
            cwd=tmp_path,
            env=full,
            capture_output=True,
            timeout=120,
            check=check,
        )

    return run


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.fixture
def readonly() -> Callable[[Path], list[str]]:
    """A command prefix that runs a command with ``folder`` on a read-only file system.

    The folder is bind-mounted read-only in a private mount namespace
    (``unshare``), so writes fail with EROFS as on a read-only mount; where
    namespaces are not available and the tests do not run as root, the folder
    is made read-only with its permissions instead.
    """
    can_unshare = _unshare_works()

    def prefix(folder: Path) -> list[str]:
        folder.mkdir(parents=True, exist_ok=True)
        if can_unshare:
            script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"'
            return ["unshare", "-rm", "sh", "-c", script, str(folder)]
        if os.geteuid() != 0:
            folder.chmod(0o555)
            return []
        pytest.skip("no way to make a read-only folder here (no user namespaces, running as root)")

    return prefix


def shared_data(name: str) -> Path:
    """A data set from ``../shared/data/NAME`` beside the repository (or beside its worktree parent).

    In CI (``$CI`` set) a missing data set fails the test loudly; elsewhere it skips.
    """
    for base in (ROOT.parent, ROOT.parent.parent):
        candidate = base / "shared" / "data" / name
        if candidate.exists():
            return candidate
    message = f"data set {name!r} not found at ../shared/data/{name} (relative to {ROOT})"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def tau_dir() -> Path:
    """The AgentRx tau-bench data set (``../shared/data/agentrx-tau``)."""
    return shared_data("agentrx-tau")


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


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium; missing Chromium fails the test loudly (CI installs it).

    One per test module, not per session: Playwright's sync API keeps an event loop running on the main
    thread while it is open, and every later test that calls ``asyncio.run`` would find it running."""
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


@pytest.fixture
def run_async() -> Callable[[Callable[[], Any]], Any]:
    """Run a coroutine to completion on a fresh thread with its own event loop, and return its result.

    A test may run while a session-wide browser (Playwright's sync API) keeps an event loop
    marked running on the main thread, where ``asyncio.run`` refuses to start.
    """
    import asyncio
    import threading

    def run(make: Callable[[], Any]) -> Any:
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = asyncio.run(make())
            except BaseException as exc:  # noqa: BLE001 - handed to the test
                box["error"] = exc

        t = threading.Thread(target=trajdebug.wrap(target))
        t.start()
        t.join()
        if "error" in box:
            raise box["error"]
        return box.get("value")

    return run
