"""Shared fixtures: every test runs in its own directory with its own default store."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets a fresh cwd and default store, so nothing leaks between tests."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAJDEBUG_STORE", str(tmp_path / "trajdebug.db"))
    monkeypatch.delenv("TRAJDEBUG", raising=False)
