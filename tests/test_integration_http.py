"""HTTP clients as tool steps: httpx and requests against a real server on 127.0.0.1, failures with standard fields."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
import requests

import trajdebug
from trajdebug.integrations.http import AsyncHttpxTransport, HttpxTransport, instrument_requests
from trajdebug.testing import capture_runs


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/slow"):
            time.sleep(1.0)
        status = 503 if self.path.startswith("/down") else 200
        body = b'{"ok": true}' if status == 200 else b'{"error": "overloaded"}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:  # the client gave up (a timeout test)
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 with /ok, /down (503) and /slow (1 s)."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _closed_port() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def test_httpx_requests_are_tool_steps_and_a_5xx_is_an_error(server: str) -> None:
    """A 200 is an ok tool step with the status; a 503 returns normally but records an HttpStatusError with code and endpoint."""
    with capture_runs() as runs, trajdebug.run("client"), httpx.Client(transport=HttpxTransport(), timeout=2.0) as c:
        assert 200 == c.get(f"{server}/ok?token=abc").status_code
        assert 503 == c.get(f"{server}/down").status_code
    ok, down = runs[0].steps
    host = server.removeprefix("http://")
    assert ("tool", f"HTTP GET {host}", {"status": 200, "bytes": 12}, 2.0) == (ok.kind, ok.name, ok.output, ok.attributes["timeout"])
    assert f"GET http://{host}/ok" == ok.attributes["endpoint"]
    [err] = runs[0].errors
    assert ("HttpStatusError", "status", 503, host, f"GET http://{host}/down") == (
        err.type, err.attributes["error.kind"], err.attributes["code"], err.attributes["service"], err.attributes["endpoint"]
    )
    assert "error" == down.status


def test_httpx_transport_errors_carry_the_standard_fields() -> None:
    """A refused connection propagates as httpx's error and records error.kind transport with the errno name."""
    url = _closed_port()
    with capture_runs() as runs, pytest.raises(httpx.ConnectError), trajdebug.run("client"), httpx.Client(transport=HttpxTransport()) as c:
        c.get(f"{url}/x")
    [err] = runs[0].errors
    assert ("transport", "ECONNREFUSED") == (err.attributes["error.kind"], err.attributes["code"])
    assert err.attributes["request"]["__trajdebug_summary__"] == 1


def test_httpx_client_timeouts_are_timeout_errors(server: str) -> None:
    """A read timeout of the client records error.kind timeout."""
    with capture_runs() as runs, pytest.raises(httpx.ReadTimeout), trajdebug.run("client"), httpx.Client(transport=HttpxTransport(), timeout=0.2) as c:
        c.get(f"{server}/slow")
    assert ("timeout", "timeout", 0.2) == tuple(runs[0].errors[0].attributes[k] for k in ("error.kind", "code", "timeout_s"))


def test_async_httpx_records_steps(server: str, run_async: Any) -> None:
    """The asyncio transport records each request as a tool step too."""

    async def main() -> int:
        async with httpx.AsyncClient(transport=AsyncHttpxTransport(), timeout=2.0) as c:
            return (await c.get(f"{server}/down")).status_code

    with capture_runs() as runs, trajdebug.run("client"):
        assert 503 == run_async(main)
    assert "HttpStatusError" == runs[0].errors[0].type


def test_requests_sessions_are_recorded_the_same_way(server: str) -> None:
    """A requests session with the adapter records statuses, 5xx errors and refused connections alike."""
    session = instrument_requests(requests.Session())
    with capture_runs() as runs, trajdebug.run("client"):
        assert 200 == session.get(f"{server}/ok", timeout=2).status_code
        assert 503 == session.get(f"{server}/down", timeout=2).status_code
        with pytest.raises(requests.ConnectionError):
            session.get(f"{_closed_port()}/x", timeout=2)
    kinds = [e.attributes["error.kind"] for e in runs[0].errors]
    assert ["status", "transport"] == kinds
    assert ["ok", "error", "error"] == [s.status for s in runs[0].steps]


def test_outside_a_run_requests_pass_through(server: str) -> None:
    """Without a recorded run the transport only sends the request."""
    with httpx.Client(transport=HttpxTransport()) as c:
        assert 200 == c.get(f"{server}/ok").status_code
