"""Recorder configuration: the on/off switch, default sinks, limits, redaction."""

from __future__ import annotations

import os
import random
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(slots=True)
class Config:
    """Process-wide recorder settings (change them with `configure`)."""

    enabled: bool = True
    """When False every recording call is a no-op (``TRAJDEBUG=off`` in the environment)."""
    store: str | Path | None = None
    """Default store for runs that name no sink; None means ``$TRAJDEBUG_STORE`` or ``./trajdebug.db``."""
    path: str | Path | None = None
    """Default JSONL file for runs that name no sink (used instead of the store when set)."""
    max_value_bytes: int = 64 * 1024
    """Inputs and outputs larger than this are stored truncated, with a marker."""
    max_buffer: int = 100_000
    """Records waiting for the writer beyond this are dropped and counted (never raised)."""
    flush_interval: float = 0.2
    """Seconds between background flushes."""
    redact: bool = True
    """Redact secrets (by key name and by value pattern) before anything reaches a sink."""
    redact_keys: tuple[str, ...] = ()
    """Extra key-name patterns (regular expressions) to redact."""
    env_allow: tuple[str, ...] = ("TRAJDEBUG_*", "MODEL*", "*_MODEL", "OPENAI_BASE_URL", "LANG", "TZ")
    """Environment variables recorded in the run's environment snapshot (fnmatch patterns)."""
    packages: tuple[str, ...] = ("trajdebug", "openai", "anthropic", "langchain-core", "openai-agents")
    """Packages whose versions go into the environment snapshot when installed."""
    capture_tracebacks: bool = True
    """Store a formatted traceback with each error."""
    extra: dict[str, Any] = field(default_factory=dict)


CONFIG = Config(enabled=os.environ.get("TRAJDEBUG", "").strip().lower() not in ("off", "0", "false", "no"))

_lock = threading.Lock()


def configure(**settings: Any) -> Config:
    """Change recorder settings; returns the configuration.

    Example:
        ```python
        trajdebug.configure(enabled=False)          # every call becomes a no-op
        trajdebug.configure(path="runs.jsonl")      # default sink for new runs
        ```

    Raises:
        TypeError: an unknown setting name.
    """
    with _lock:
        for key, value in settings.items():
            if not hasattr(CONFIG, key) or key == "extra":
                raise TypeError(f"configure() got an unknown setting {key!r}")
            setattr(CONFIG, key, value)
    return CONFIG


# -- ids -------------------------------------------------------------------
# uuid4 costs ~1.7 µs (perf-anchors §3); a per-process random prefix plus a
# counter is ~0.1 µs and still unique across processes writing one store.

_prefix = f"{random.getrandbits(32):08x}"


def _reseed_after_fork() -> None:
    global _prefix
    _prefix = f"{random.getrandbits(32):08x}"


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed_after_fork)


def id_prefix() -> str:
    """This process's id prefix (8 hex digits)."""
    return _prefix


def new_run_id() -> str:
    """A 32-hex-digit run id (an OpenTelemetry-compatible trace id)."""
    return f"{random.getrandbits(128):032x}"
