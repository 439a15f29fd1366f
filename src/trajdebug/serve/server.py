"""Running the web UI: uvicorn on 127.0.0.1 by default, a token whenever it listens elsewhere.

`Server` binds the socket itself (port 0 picks a free port, which tests
use), then runs uvicorn on it, in the foreground (`Server.run`) or on a
background thread (`Server.start`, `Server.stop`).  Listening on anything
but a loopback address makes the UI reachable from other machines, so a
token is then required (one is generated when none is given) and the
``Host`` check is relaxed to any name; so is any address but 127.0.0.1,
``localhost`` and ``::1`` (another loopback address such as 127.0.0.2 too).
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
import threading
from pathlib import Path
from typing import Any

from trajdebug.serve.app import LOOPBACK_HOSTS, create_app


def is_loopback(host: str) -> bool:
    """Whether a host name or address only reaches this machine."""
    if host in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Server:
    """The web UI over one source, served by uvicorn.

    Args:
        source: A store, a trajdebug JSONL file or a foreign trace.
        host: The address to listen on (default 127.0.0.1).
        port: The port (0: any free port; see `url`).
        fmt: The source's format (auto-detected by default).
        token: Required from every request; None on a loopback address means
            none, elsewhere one is generated (see `token`).
    """

    def __init__(
        self,
        source: str | Path,
        *,
        host: str = "127.0.0.1",
        port: int = 8765,
        fmt: str | None = None,
        token: str | None = None,
    ) -> None:
        import uvicorn

        # Only the usual loopback names go without a token: another loopback address
        # (127.0.0.2) is what a shared machine's other users can reach too, and a Host
        # check naming it would refuse every request (HTTP 400).
        remote = host.strip("[]") not in ("127.0.0.1", "localhost", "::1")
        self.token = token or (secrets.token_urlsafe(24) if remote else None)
        self.app = create_app(
            source, fmt=fmt, token=self.token, allowed_hosts=["*"] if remote else list(LOOPBACK_HOSTS)
        )
        family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host.strip("[]"), port))
        # Listening now lets connections queue until uvicorn accepts them, so the
        # URL printed before `run` already answers.
        self._sock.listen(2048)
        self.host = host
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The address to open, with the token when there is one."""
        host = f"[{self.host.strip('[]')}]" if ":" in self.host.strip("[]") else self.host
        base = f"http://{host}:{self.port}/"
        return base + (f"?token={self.token}" if self.token else "")

    def run(self) -> None:
        """Serve until interrupted (Ctrl-C)."""
        self._server.run(sockets=[self._sock])

    def start(self) -> Server:
        """Serve on a background thread; returns once the server accepts connections."""
        self._thread = threading.Thread(target=self.run, name="trajdebug-serve", daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the web server stopped while starting")
            self._thread.join(0.01)
        return self

    def stop(self) -> None:
        """Stop a server started with `start`."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self._sock.close()

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


__all__ = ["Server", "is_loopback"]
