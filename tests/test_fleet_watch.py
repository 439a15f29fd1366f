"""Tests of `trajdebug watch`: following a store another process writes, deliveries, restarts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from trajdebug.cli import cli
from trajdebug.fleet.delivery import FileDelivery, WatchState, WebhookDelivery
from trajdebug.fleet.watch import Watcher
from trajdebug.store import Store


ROOT = Path(__file__).resolve().parent.parent


class _Hook:
    """A webhook receiver on 127.0.0.1 that records the JSON it is sent; it can refuse the first N posts."""

    def __init__(self, refuse: int = 0) -> None:
        self.received: list[dict[str, Any]] = []
        self.refuse = refuse
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if hook.refuse > 0:
                    hook.refuse -= 1
                    self.send_response(503)
                else:
                    hook.received.append(json.loads(body))
                    self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook() -> Iterator[_Hook]:
    h = _Hook()
    yield h
    h.close()


def _writer(store: Path, n: int, seed: int, delay: float = 0.01) -> subprocess.Popen[bytes]:
    """Another process recording runs of the benchmark agents into the store, one at a time."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks.fleetgen",
            str(store),
            str(n),
            "--seed",
            str(seed),
            "--delay",
            str(delay),
        ],
        env=env,
        cwd=ROOT,
    )


def _failed(store: Path) -> set[str]:
    with Store(store) as st:
        return {s.run_id for s in st.list_runs(outcome="failure")}


def _follow(w: Watcher, proc: subprocess.Popen[bytes]) -> tuple[list[str], list[dict[str, Any]]]:
    """Poll while the writer runs, then once more; return the runs analyzed and the alerts delivered."""
    analyzed: list[str] = []
    alerts: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        r = w.poll()
        analyzed += [f.run_id for f in r.analyzed]
        alerts += list(r.alerts)
        time.sleep(0.05)
    assert proc.wait(timeout=30) == 0
    r = w.poll()
    return analyzed + [f.run_id for f in r.analyzed], alerts + list(r.alerts)


def test_watch_analyzes_each_failed_run_once_and_never_alerts_twice_across_a_restart(
    tmp_path: Path, hook: _Hook
) -> None:
    """While another process writes runs, every failed run is analyzed once; a restarted watcher analyzes
    only the new ones and sends no alert it sent before, to the file or the webhook."""
    store, state, out = tmp_path / "live.db", tmp_path / "state.json", tmp_path / "alerts.jsonl"

    def watcher() -> Watcher:
        return Watcher(
            store, state=state, deliveries=[FileDelivery(out), WebhookDelivery(hook.url)], thresholds=(5, 20)
        )

    Store(store).close()
    analyzed, alerts = _follow(watcher(), _writer(store, 80, seed=11))
    assert sorted(analyzed) == sorted(_failed(store))  # each failed run once
    first_keys = [a["key"] for a in alerts]
    assert len(first_keys) == len(set(first_keys)) > 0
    assert {a["alert"] for a in alerts} == {"new-group", "threshold"}
    groups = {a["group_id"] for a in alerts if a["alert"] == "new-group"}
    assert groups == set(WatchState(state).groups)

    before = set(_failed(store))
    analyzed2, alerts2 = _follow(watcher(), _writer(store, 60, seed=12))
    assert sorted(analyzed2) == sorted(_failed(store) - before)
    assert not set(first_keys) & {a["key"] for a in alerts2}

    file_keys = [json.loads(line)["key"] for line in out.read_text().splitlines()]
    hook_keys = [a["key"] for a in hook.received]
    assert len(file_keys) == len(set(file_keys)) == len(first_keys) + len(alerts2)
    assert sorted(hook_keys) == sorted(file_keys)
    assert all(a["markdown"].startswith("## ") for a in hook.received)


def test_watch_retries_an_alert_the_webhook_refused(tmp_path: Path, fleet_store: Path) -> None:
    """A refused delivery is retried on the next poll; the target that accepted it first does not get it again."""
    refusing = _Hook(refuse=100)
    try:
        out = tmp_path / "alerts.jsonl"
        w = Watcher(
            fleet_store,
            state=tmp_path / "s.json",
            deliveries=[FileDelivery(out), WebhookDelivery(refusing.url)],
            alert_existing=True,
        )
        r1 = w.poll()
        assert r1.analyzed and not r1.alerts and not refusing.received
        assert any("HTTP 503" in p for p in r1.problems)
        lines = out.read_text().splitlines()
        refusing.refuse = 0
        r2 = Watcher(
            fleet_store,
            state=tmp_path / "s.json",
            deliveries=[FileDelivery(out), WebhookDelivery(refusing.url)],
        ).poll()
        assert not r2.analyzed and len(r2.alerts) == len(lines)
        assert len(refusing.received) == len(lines) and out.read_text().splitlines() == lines
    finally:
        refusing.close()


def test_watch_follows_a_folder_of_jsonl_files(tmp_path: Path, fleet_store: Path) -> None:
    """Files dropped into a folder are read when they appear or grow; `watch --once` prints alerts as JSON lines."""
    from trajdebug.core.jsonl import write_jsonl

    with Store(fleet_store) as st:
        runs = [st.load_run(r) for r in st.run_ids()[:60]]
    folder = tmp_path / "runs"
    folder.mkdir()
    write_jsonl(runs[:30], folder / "a.jsonl")
    r = CliRunner().invoke(cli, ["watch", str(folder), "--once", "--alert-existing"])
    assert r.exit_code == 0, r.output
    first = [json.loads(line) for line in r.stdout.splitlines()]
    assert first and all(a["alert"] == "new-group" for a in first)
    write_jsonl(runs[30:], folder / "b.jsonl")
    again = CliRunner().invoke(cli, ["watch", str(folder), "--once"])
    seen = {a["key"] for a in first}
    assert all(json.loads(line)["key"] not in seen for line in again.stdout.splitlines())
    state = WatchState(folder / ".trajdebug-watch.json")
    assert state.analyzed == {r.run_id for r in runs if r.outcome == "failure"}


def test_watch_state_that_is_not_json_is_named(tmp_path: Path, fleet_store: Path) -> None:
    """A corrupt state file is an error naming it, not a silent restart that would alert again."""
    bad = tmp_path / "state.json"
    bad.write_text("{half", encoding="utf-8")
    with pytest.raises(ValueError, match=r"state\.json: unreadable watch state"):
        Watcher(fleet_store, state=bad, deliveries=[])


def test_webhook_refuses_urls_that_are_not_http(tmp_path: Path) -> None:
    """Only http(s) webhooks: a file:// URL is refused when the watcher is set up."""
    with pytest.raises(ValueError, match="only http"):
        WebhookDelivery("file:///etc/passwd")


def test_first_start_over_an_existing_store_announces_no_known_group(tmp_path: Path, fleet_store: Path) -> None:
    """A new watcher counts the failed runs already there as its baseline (no alert); a later failure of a
    group it has not seen is announced."""
    import trajdebug

    store = tmp_path / "busy.db"
    shutil.copy(fleet_store, store)
    out = tmp_path / "alerts.jsonl"
    w = Watcher(store, state=tmp_path / "s.json", deliveries=[FileDelivery(out)])
    first = w.poll()
    assert first.analyzed and not first.alerts and w.baseline == len(first.analyzed)
    assert WatchState(tmp_path / "s.json").groups  # the groups are known, just not announced
    with trajdebug.run("brand-new-agent", store=store) as r:
        with pytest.raises(KeyError), trajdebug.step("lookup", kind="tool"):
            raise KeyError("missing")
        r.fail("lookup failed")
    trajdebug.flush()
    second = w.poll()
    assert [a["alert"] for a in second.alerts] == ["new-group"]
    assert second.alerts[0]["group_id"] == second.analyzed[0].group_id
