"""No test binds a fixed port: a busy machine (another test run, a notebook's Dask dashboard on 8787,
`trajdebug serve` on 8765) must never make the suite fail.

Scans the test tree's source for what binds a fixed port: a ``port=`` or ``--port`` of a literal other
than 0, a Dask dashboard address left to its default (``dashboard_address=None`` is 8787) or naming a
port, a ``bind`` to a literal port, and the well-known ports themselves.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest


TESTS = Path(__file__).resolve().parent

FIXED = [
    (re.compile(r"\bport\s*=\s*[1-9]\d{1,4}\b"), "port= a fixed number"),
    (re.compile(r"""["']--port["']\s*,\s*["']?[1-9]\d{1,4}"""), "--port a fixed number"),
    (re.compile(r"dashboard_address\s*=\s*None"), "dashboard_address=None (Dask's default, port 8787)"),
    (re.compile(r"""dashboard_address\s*=\s*["'][^"']*:[1-9]\d*["']"""), "a dashboard on a fixed port"),
    (re.compile(r"""\.bind\(\(\s*["'][^"']*["']\s*,\s*[1-9]\d{1,4}\s*\)\)"""), "bind to a fixed port"),
    (re.compile(r"(?<![\d.])(?:8787|8765)(?![\d.])"), "a well-known port (8787: Dask, 8765: trajdebug serve)"),
]


def _fixed_ports(text: str) -> list[str]:
    return [f"line {text.count(chr(10), 0, m.start()) + 1}: {why}" for rx, why in FIXED for m in rx.finditer(text)]


@pytest.mark.parametrize(
    "line",
    ['Server(store, port=8765)', 'run("serve", "--port", "8765")', "LocalCluster(dashboard_address=None)",
     'LocalCluster(dashboard_address=":8787")', 's.bind(("127.0.0.1", 9000))'],
)
def test_the_scan_finds_a_fixed_port(line: str) -> None:
    """Each way of binding a fixed port is found by the scan."""
    assert _fixed_ports(line)


def test_the_scan_accepts_port_zero() -> None:
    """Port 0 (the OS picks a free one) is not a fixed port."""
    assert not _fixed_ports('Server(store, port=0); run("serve", "--port", "0"); LocalCluster(dashboard_address="127.0.0.1:0")')


def test_no_test_binds_a_fixed_port() -> None:
    """No file of the test tree (but this one) binds a fixed port."""
    found = {
        str(f.relative_to(TESTS)): hits
        for f in sorted(TESTS.rglob("*.py"))
        if f.name != Path(__file__).name and (hits := _fixed_ports(f.read_text(encoding="utf-8")))
    }
    assert found == {}
