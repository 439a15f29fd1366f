"""Recorder configuration: the on/off switch, default sinks, limits, durability, redaction."""

from __future__ import annotations

import os
from _thread import allocate_lock


# `typing`, `dataclasses` and `pathlib` cost `import trajdebug` more than the whole recorder's own
# start-up (the decorator reads `CONFIG.enabled`): they are named for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


class Config:
    """Process-wide recorder settings (change them with `configure`).

    A plain class, not a dataclass, so that importing it costs nothing (`dataclasses` imports
    `inspect`): each setting's default is a class attribute, `SETTINGS` lists them, and an instance
    holds what differs (`configure` sets only known names).
    """

    enabled: bool = True
    """When False every recording call is a no-op (``TRAJDEBUG=off`` in the environment)."""
    store: str | Path | None = None
    """Default store for runs that name no sink; None means ``$TRAJDEBUG_STORE`` or ``./trajdebug.db``."""
    path: str | Path | None = None
    """Default JSONL file for runs that name no sink (used instead of the store when set)."""
    max_value_bytes: int = 64 * 1024
    """Inputs, outputs, attribute values and messages larger than this are stored truncated, with a
    marker (after redaction, so a secret beyond the cut is scrubbed too)."""
    max_buffer: int = 100_000
    """Records of one run waiting for the writer; past this the ``backpressure`` policy applies."""
    max_buffer_bytes: int = 64 * 1024 * 1024
    """Bytes of snapshotted inputs and outputs of one run waiting for the writer; past this the
    ``backpressure`` policy applies (so memory per waiting step is bounded)."""
    backlog_seconds: float | None = 0.1
    """While the writer is backlogged (a tight loop), the queue holds at most what it drains in this
    many seconds (never less than ``max_batch``): a SIGKILL then loses at most about that much of
    finished steps, the rest are dropped and counted on disk.  None: up to ``max_buffer`` whatever the
    writer's pace (fewer drops in a burst, a longer loss window)."""
    backpressure: str = "drop"
    """What a full buffer does to a new record: ``drop`` it and count it (the agent never waits), or
    ``block`` the agent until the writer makes room, for at most ``block_timeout`` (then drop and count)."""
    block_timeout: float = 1.0
    """Seconds a step may wait for room under ``backpressure="block"``."""
    flush_interval: float = 0.1
    """The longest a finished step waits before the writer writes it, while the writer keeps up.
    The writer wakes twice per interval and writes batches of at most ``max_batch`` records, so under
    any load a write happens at least this often (see docs/format.md, "Durability")."""
    max_batch: int = 2048
    """Records per write at most (bounds the time between writes under load)."""
    close_timeout: float = 5.0
    """Seconds leaving a run's block waits for its records to be written.  It never waits on a
    locked or unreachable store (the writer retries that in the background); 0: never wait."""
    exit_timeout: float = 5.0
    """Seconds the interpreter's exit waits for records still queued."""
    late_grace: float = 1.0
    """Seconds a run's sinks stay open after its end record: steps that finish in that time (a thread
    the agent did not join) are still written, marked ``after_run_end``; later ones are counted."""
    store_busy_timeout: float = 0.005
    """Seconds one write attempt waits (inside SQLite) for a locked store before the writer moves on
    and retries on its next round (10 ms later); nobody else waits for it."""
    track_budget_bytes: int = 32 * 1024 * 1024
    """Approximate bytes a run keeps for identity tracking (produced values and their entries); past
    this the oldest are released (their consumers fall back to content inference at analysis time),
    so memory per step stays bounded however long the run."""
    redact: bool = True
    """Redact secrets (by key name and by value pattern) before anything reaches disk, on every write
    path (`trajdebug.core.redaction`)."""
    redact_keys: tuple[str, ...] = ()
    """Extra key-name patterns (regular expressions) to redact."""
    redact_pii: tuple[str, ...] = ()
    """Opt-in classes of personal data to redact too (``("email",)``)."""
    env_allow: tuple[str, ...] = ("TRAJDEBUG_*", "MODEL*", "*_MODEL", "OPENAI_BASE_URL", "LANG", "TZ")
    """Environment variables recorded in the run's environment snapshot (fnmatch patterns)."""
    packages: tuple[str, ...] = ("trajdebug", "openai", "anthropic", "langchain-core", "openai-agents")
    """Packages whose versions go into the environment snapshot when installed."""
    capture_tracebacks: bool = True
    """Store a formatted traceback with each error."""
    summary: tuple[str, ...] = ()
    """Summary mode (`trajdebug.record.summary`): which step fields are stored as a hash, a length and
    features instead of their content: ``("*",)`` every input and output, a kind (``"tool"``), a field
    (``"*.output"``, ``"llm.input"``, ``"*.attributes"``, ``"*.error"``).  ``$TRAJDEBUG_SUMMARY``."""
    summary_key: str | None = None
    """Key of the keyed hash (BLAKE2b) of summarized values, so a short value cannot be found by
    hashing guesses; runs compared with each other must share it.  ``$TRAJDEBUG_SUMMARY_KEY``."""
    summary_numbers: bool = True
    """Keep the numbers a summarized value contains (up to 16) in the clear; False keeps only their
    hashes."""
    sample_rate: float = 1.0
    """Tail sampling (`trajdebug.record.sampling`): the share of successful runs kept, decided at the
    run's end by its id; failed, incomplete and lossy runs are always kept.  ``$TRAJDEBUG_SAMPLE_RATE``."""
    head_rate: float = 1.0
    """Head sampling: the share of runs recorded at all, decided at the run's start by its id (failures
    of runs not chosen are not kept).  ``$TRAJDEBUG_HEAD_RATE``."""
    sample_buffer_bytes: int = 8 * 1024 * 1024
    """Bytes of encoded records a tail-sampled run holds in memory while its fate is open; past this
    they spill to a temporary file.  ``$TRAJDEBUG_SAMPLE_BUFFER_BYTES``."""
    sinks: tuple[Any, ...] = ()
    """Sinks every run writes to besides its own target (a live exporter,
    `trajdebug.integrations.otlp_exporter.OtlpExporter`)."""
    rollout_file: str | Path | None = None
    """A rollout file (TOML or JSON) with a recording mode per agent, re-read at each run start
    (`trajdebug.record.rollout`).  ``$TRAJDEBUG_ROLLOUT_FILE``."""
    extra: dict[str, Any]
    """Free settings of integrations (a fresh dict per instance)."""

    def __init__(self, **settings: Any) -> None:
        self.extra = {}
        for key, value in settings.items():
            if key not in SETTINGS:
                raise TypeError(f"Config() got an unknown setting {key!r}")
            setattr(self, key, value)

    def __repr__(self) -> str:
        return f"Config({', '.join(f'{k}={getattr(self, k)!r}' for k in SETTINGS)})"


SETTINGS: tuple[str, ...] = tuple(Config.__annotations__)
"""The settings' names, in order (``extra`` last)."""

CONFIG = Config(enabled=os.environ.get("TRAJDEBUG", "").strip().lower() not in ("off", "0", "false", "no"))

_lock = allocate_lock()  # `threading.Lock` itself, without importing `threading`

_CHOICES = {"backpressure": ("drop", "block")}
_RATES = ("sample_rate", "head_rate")
_REDACTION = ("redact", "redact_keys", "redact_pii")


def configure(**settings: Any) -> Config:
    """Change recorder settings; returns the configuration.

    Example:
        ```python
        trajdebug.configure(enabled=False)          # every call becomes a no-op
        trajdebug.configure(path="runs.jsonl")      # default sink for new runs
        trajdebug.configure(backpressure="block", block_timeout=0.5)
        trajdebug.configure(redact_pii=("email",))  # scrub e-mail addresses too
        ```

    Raises:
        TypeError: an unknown setting name.
        ValueError: a setting with a value it cannot take.
    """
    from trajdebug.core import redaction

    with _lock:
        for key, value in settings.items():
            if key not in SETTINGS or key == "extra":
                raise TypeError(f"configure() got an unknown setting {key!r}")
            if key in _CHOICES and value not in _CHOICES[key]:
                raise ValueError(f"configure({key}={value!r}): expected one of {', '.join(_CHOICES[key])}")
            if key in _RATES and not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
                raise ValueError(f"configure({key}={value!r}): expected a number from 0 to 1")
        if any(k in settings for k in _REDACTION):
            redaction.set_policy(
                enabled=settings.get("redact", CONFIG.redact),
                extra_keys=settings.get("redact_keys", CONFIG.redact_keys),
                pii=settings.get("redact_pii", CONFIG.redact_pii),
            )
        for key, value in settings.items():
            if key == "summary":
                value = _summary_rules(value)
            setattr(CONFIG, key, tuple(value) if key in ("redact_keys", "redact_pii", "sinks") else value)
    return CONFIG


def _summary_rules(value: Any) -> tuple[str, ...]:
    """``summary=True`` is every input and output; a string is comma-separated rules."""
    if value is True:
        return ("*",)
    if not value:
        return ()
    if isinstance(value, str):
        return tuple(r.strip() for r in value.split(",") if r.strip())
    return tuple(str(r) for r in value)


def _from_environment(config: Config) -> None:
    """The production settings given by environment variables (a bad value is one warning naming it)."""
    env = os.environ
    for key, name, kind in (
        ("sample_rate", "TRAJDEBUG_SAMPLE_RATE", float),
        ("head_rate", "TRAJDEBUG_HEAD_RATE", float),
        ("sample_buffer_bytes", "TRAJDEBUG_SAMPLE_BUFFER_BYTES", int),
    ):
        raw = env.get(name)
        if raw is None or not raw.strip():
            continue
        try:
            value = kind(raw)
            if key in _RATES and not 0.0 <= value <= 1.0:
                raise ValueError("not between 0 and 1")
        except ValueError as exc:
            import logging  # only to warn: `import trajdebug` does not load it

            logging.getLogger("trajdebug").warning("trajdebug: %s=%r ignored (%s)", name, raw, exc)
            continue
        setattr(config, key, value)
    if env.get("TRAJDEBUG_SUMMARY", "").strip():
        raw = env["TRAJDEBUG_SUMMARY"].strip()
        config.summary = ("*",) if raw.lower() in ("1", "on", "true", "yes") else _summary_rules(raw)
    if env.get("TRAJDEBUG_SUMMARY_KEY"):
        config.summary_key = env["TRAJDEBUG_SUMMARY_KEY"]
    if env.get("TRAJDEBUG_ROLLOUT_FILE", "").strip():
        config.rollout_file = env["TRAJDEBUG_ROLLOUT_FILE"].strip()
    if env.get("TRAJDEBUG_REDACT_PII", "").strip():
        from trajdebug.core import redaction

        classes = tuple(c.strip() for c in env["TRAJDEBUG_REDACT_PII"].split(",") if c.strip())
        unknown = sorted(set(classes) - redaction.PII_CLASSES)
        if unknown:
            import logging

            logging.getLogger("trajdebug").warning("trajdebug: TRAJDEBUG_REDACT_PII: unknown classes %s ignored", unknown)
        config.redact_pii = tuple(c for c in classes if c in redaction.PII_CLASSES)
        redaction.set_policy(pii=config.redact_pii)


_from_environment(CONFIG)


# -- ids -------------------------------------------------------------------
# uuid4 costs ~1.7 µs (perf-anchors §3); a per-process random prefix plus a
# counter is ~0.1 µs and still unique across processes writing one store.
# Every random bit comes from the OS (os.urandom), never from the `random`
# module: an agent that calls ``random.seed(0)`` (common in evaluations) would
# otherwise get the same ids in every process, and its runs would merge.


def _draw_prefix() -> str:
    return os.urandom(4).hex()


_prefix = _draw_prefix()


def _reseed_after_fork() -> None:
    # A forked child shares the parent's prefix and counter: draw its own.
    global _prefix
    _prefix = _draw_prefix()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed_after_fork)


def id_prefix() -> str:
    """This process's id prefix (8 hex digits, from the OS's random source)."""
    return _prefix


def new_run_id() -> str:
    """A 32-hex-digit run id from the OS's random source (an OpenTelemetry-compatible trace id,
    never all zeros)."""
    return f"{int.from_bytes(os.urandom(16), 'big') | 1:032x}"
