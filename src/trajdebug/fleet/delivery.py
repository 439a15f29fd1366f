"""Where the watcher's alerts go, and what it remembers between restarts.

A delivery is a plain callable ``deliver(alert) -> None`` that raises when the
alert did not get through (the watcher then retries it on its next poll).
Three ship here: a file (one JSON line per alert, appended), standard output
(JSON lines), and a webhook (an HTTP POST of the alert as JSON).  Any other
callable with that shape plugs in the same way.

`WatchState` is the watcher's memory, one JSON file written atomically
(temporary file, fsync, rename) after every change: the runs it analyzed, the
groups with their counts, and for each alert the deliveries it reached.  An
alert is marked delivered to a target right after that target accepted it, so
a restarted watcher neither re-alerts nor loses an alert a target refused.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from trajdebug.core.codec import dumps_str


class Delivery(Protocol):
    """Sends one alert somewhere; raises when it did not get through."""

    name: str
    """A stable name (the state file records which deliveries an alert reached)."""

    def __call__(self, alert: dict[str, Any]) -> None: ...


class DeliveryError(RuntimeError):
    """An alert could not be delivered (the message says where and why)."""


class FileDelivery:
    """Append each alert to a file as one JSON line."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = f"file:{self.path}"

    def __call__(self, alert: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(dumps_str(alert) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


class StdoutDelivery:
    """Print each alert as one JSON line on standard output."""

    name = "stdout"

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream

    def __call__(self, alert: dict[str, Any]) -> None:
        from trajdebug.core.escape import json_text

        out = self.stream or sys.stdout
        out.write(json_text(dumps_str(alert)) + "\n")
        out.flush()


class WebhookDelivery:
    """POST each alert as JSON to a URL; any 2xx answer counts as delivered."""

    def __init__(self, url: str, *, timeout: float = 5.0, headers: dict[str, str] | None = None) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"webhook {url!r}: only http:// and https:// URLs are supported")
        self.url = url
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        self.name = f"webhook:{url}"

    def __call__(self, alert: dict[str, Any]) -> None:
        req = urllib.request.Request(
            self.url, data=dumps_str(alert).encode("utf-8"), headers=self.headers, method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                status = resp.status
        except urllib.error.HTTPError as exc:
            raise DeliveryError(f"webhook {self.url}: HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise DeliveryError(f"webhook {self.url}: {getattr(exc, 'reason', exc)}") from None
        if not 200 <= status < 300:
            raise DeliveryError(f"webhook {self.url}: HTTP {status}")


class WatchState:
    """The watcher's memory, kept in one JSON file.

    Attributes:
        analyzed: Ids of the runs already analyzed.
        groups: Group counters by group id (``Group.to_dict`` form).
        alerts: Alerts raised, by key (``<group id>:new`` or ``<group id>:<threshold>``),
            each with the deliveries it reached (``delivered``).
        files: For a watched folder, each file's ``[mtime_ns, size]`` when last read.
    """

    VERSION = 1

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.analyzed: set[str] = set()
        self.groups: dict[str, dict[str, Any]] = {}
        self.alerts: dict[str, dict[str, Any]] = {}
        self.files: dict[str, list[int]] = {}
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(
                f"{self.path}: unreadable watch state ({exc}); move it away to start afresh"
            ) from None
        if not isinstance(data, dict) or data.get("version") != self.VERSION:
            raise ValueError(f"{self.path}: not a trajdebug watch state (version {self.VERSION})")
        self.analyzed = set(data.get("analyzed") or ())
        self.groups = dict(data.get("groups") or {})
        self.alerts = dict(data.get("alerts") or {})
        self.files = {k: list(v) for k, v in (data.get("files") or {}).items()}

    def save(self) -> None:
        """Write the state atomically (a crash leaves the old file or the new one, never half)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        data = {
            "version": self.VERSION,
            "analyzed": sorted(self.analyzed),
            "groups": self.groups,
            "alerts": self.alerts,
            "files": self.files,
        }
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(dumps_str(data))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)

    def pending(self, targets: list[str]) -> list[tuple[str, dict[str, Any], list[str]]]:
        """Alerts some target has not accepted yet: ``(key, alert, missing targets)``, oldest first."""
        out = []
        for key, entry in self.alerts.items():
            missing = [t for t in targets if t not in entry.get("delivered", [])]
            if missing:
                out.append((key, entry["alert"], missing))
        return out


def parse_target(spec: str) -> Callable[[dict[str, Any]], None]:
    """A delivery from a command-line spec: ``-`` (stdout), an http(s) URL (webhook), else a file path."""
    if spec == "-":
        return StdoutDelivery()
    if spec.startswith(("http://", "https://")):
        return WebhookDelivery(spec)
    return FileDelivery(spec)


__all__ = [
    "Delivery",
    "DeliveryError",
    "FileDelivery",
    "StdoutDelivery",
    "WatchState",
    "WebhookDelivery",
    "parse_target",
]
