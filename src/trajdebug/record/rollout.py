"""Gradual rollout: how each agent is recorded (off, summary, sampled, full), decided at each run start.

Recording can be dialled down (or up) without a redeploy: the mode of an
agent comes from, strongest first,

1. a **rollout file** (``$TRAJDEBUG_ROLLOUT_FILE`` or
   ``trajdebug.configure(rollout_file=...)``), TOML or JSON, re-read at a run's
   start whenever it changed (one ``stat`` per run start)::

       default = "full"                      # agents not listed below

       [agents]
       support = "summary"
       billing = { mode = "sampled", sample_rate = 0.05 }
       "batch-*" = "off"                     # fnmatch patterns

2. the environment, ``TRAJDEBUG_ROLLOUT="support=summary,billing=sampled:0.05,*=full"``
   (read at each run start);
3. the code's settings (`trajdebug.configure`: ``summary``, ``sample_rate``,
   ``head_rate``; their environment variables).

The modes: ``off`` records nothing (the run's steps do no work beyond the
hot path's few operations and reach no sink); ``summary`` stores inputs and
outputs as summaries (`trajdebug.record.summary`); ``sampled`` keeps every
failed, incomplete or lossy run and ``sample_rate`` of the successful ones
(`trajdebug.record.sampling`); ``full`` records everything in full.  An agent
is the run's ``agent=`` (its metadata ``agent``) or else the run's name.

A file that cannot be read or parsed is one warning naming it (the line, for
a syntax error) and the last good version stays in force; a bad entry is one
warning naming the field, and the other entries are kept.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from trajdebug.record import sampling as _sampling
from trajdebug.record.config import CONFIG
from trajdebug.record.processors import Processor, SummaryProcessor, TailSampler


if TYPE_CHECKING:
    from trajdebug.record.summary import Policy


log = logging.getLogger("trajdebug")

Mode = Literal["off", "summary", "sampled", "full"]
"""How an agent is recorded."""

MODES: tuple[str, ...] = ("off", "summary", "sampled", "full")

ENV_ROLLOUT = "TRAJDEBUG_ROLLOUT"
"""The environment variable with per-agent modes (``name=mode[:rate],...``)."""

SAMPLED_DEFAULT_RATE = 0.1
"""The share of successful runs ``sampled`` keeps when neither the entry nor the settings name one."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One agent's line of a rollout: its mode and, for ``sampled``, the share of successes kept."""

    mode: Mode
    """off, summary, sampled or full."""
    sample_rate: float | None = None
    """The share of successful runs kept (``sampled``), when the entry names one."""


@dataclass(frozen=True, slots=True)
class Plan:
    """How one run is recorded (resolved at its start)."""

    mode: Mode
    """The mode in force."""
    summary: tuple[str, ...] = ()
    """Summary rules (`trajdebug.record.summary`); empty: content in full."""
    sample_rate: float = 1.0
    """Tail sampling: the share of successful runs kept (1: every run)."""
    head_rate: float = 1.0
    """Head sampling: the share of runs recorded at all (1: every run)."""
    source: str = "settings"
    """Where the mode came from: ``settings``, ``env`` or ``file:<path>``."""

    @property
    def plain(self) -> bool:
        """Whether nothing differs from ordinary full recording (no summary, no sampling)."""
        return self.mode == "full" and not self.summary and self.sample_rate >= 1.0 and self.head_rate >= 1.0

    def to_dict(self) -> dict[str, Any]:
        """What a run's metadata records of its plan (``metadata["recording"]``)."""
        out: dict[str, Any] = {"mode": self.mode, "source": self.source}
        if self.summary:
            out["summary"] = list(self.summary)
        if self.sample_rate < 1.0:
            out["sample_rate"] = self.sample_rate
        if self.head_rate < 1.0:
            out["head_rate"] = self.head_rate
        return out


# -- parsing ---------------------------------------------------------------------------


def parse_entry(value: Any, where: str) -> Entry:
    """An entry from a file or the environment: ``"summary"``, ``"sampled:0.05"`` or ``{mode, sample_rate}``.

    Raises:
        ValueError: a mode or rate it cannot take, with ``where`` (the field) in the message.
    """
    rate: Any = None
    if isinstance(value, Mapping):
        mode = value.get("mode")
        rate = value.get("sample_rate")
    elif isinstance(value, str):
        mode, _, raw = value.strip().partition(":")
        mode = mode.strip().lower()
        if raw.strip():
            try:
                rate = float(raw)
            except ValueError:
                raise ValueError(f"{where}: sample rate {raw.strip()!r} is not a number") from None
    else:
        raise ValueError(f"{where}: expected a mode ({', '.join(MODES)}) or a table, not {type(value).__name__}")
    if mode not in MODES:
        raise ValueError(f"{where}: unknown mode {mode!r} (expected one of {', '.join(MODES)})")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate <= 1.0):
        raise ValueError(f"{where}: sample_rate {rate!r} is not a number from 0 to 1")
    return Entry(mode, None if rate is None else float(rate))


def parse_env(text: str) -> dict[str, Entry]:
    """``name=mode[:rate],...`` as entries (a bad item is one warning; the others are kept)."""
    out: dict[str, Entry] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep:
            # A bare mode is the default for every agent.
            name, value = "*", item
        try:
            out[name.strip()] = parse_entry(value, f"${ENV_ROLLOUT} entry {item.strip()!r}")
        except ValueError as exc:
            log.warning("trajdebug: %s; ignored", exc)
    return out


def parse_file(path: Path) -> dict[str, Entry]:
    """A rollout file's entries (``default`` under the name ``*``).

    Raises:
        ValueError: the file is not TOML or JSON, or its top level is not a table (naming the file, and
            the line for a syntax error).
        OSError: the file cannot be read.
    """
    raw = path.read_bytes()
    if path.suffix.lower() == ".json":
        try:
            doc = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    else:
        import tomllib

        try:
            doc = tomllib.loads(raw.decode("utf-8", "replace"))
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{path}: {exc}") from None
    if not isinstance(doc, Mapping):
        raise ValueError(f"{path}: expected a table at the top level")
    out: dict[str, Entry] = {}
    if "default" in doc:
        try:
            out["*"] = parse_entry(doc["default"], f"{path}: default")
        except ValueError as exc:
            log.warning("trajdebug: %s; ignored", exc)
    agents = doc.get("agents", {})
    if not isinstance(agents, Mapping):
        log.warning("trajdebug: %s: agents: expected a table; ignored", path)
        agents = {}
    for name, value in agents.items():
        try:
            out[str(name)] = parse_entry(value, f"{path}: agents.{name}")
        except ValueError as exc:
            log.warning("trajdebug: %s; ignored", exc)
    for key in doc:
        if key not in ("default", "agents"):
            log.warning("trajdebug: %s: unknown key %r; ignored", path, key)
    return out


# -- the cache of the file ------------------------------------------------------------------


class _FileCache:
    """The rollout file as last read: re-read when its modification time or size changed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.path: str | None = None
        self.stamp: tuple[int, int] | None = None
        self.entries: dict[str, Entry] = {}
        self.warned: tuple[str, tuple[int, int] | None] | None = None

    def get(self, path: str) -> dict[str, Entry]:
        try:
            st = os.stat(path)
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError as exc:
            self._warn(path, None, f"trajdebug: rollout file {path}: {exc.strerror or exc}; using the settings")
            return {} if self.path != path else self.entries
        with self.lock:
            if self.path == path and self.stamp == stamp:
                return self.entries
            try:
                entries = parse_file(Path(path))
            except (OSError, ValueError) as exc:
                self._warn(path, stamp, f"trajdebug: {exc}; the last good rollout stays in force")
                return self.entries if self.path == path else {}
            self.path, self.stamp, self.entries = path, stamp, entries
            return entries

    def _warn(self, path: str, stamp: tuple[int, int] | None, message: str) -> None:
        # One warning per version of the file, not one per run.
        if self.warned != (path, stamp):
            self.warned = (path, stamp)
            log.warning("%s", message)


_FILE = _FileCache()


def _match(entries: Mapping[str, Entry], agent: str) -> Entry | None:
    hit = entries.get(agent)
    if hit is not None:
        return hit
    for pattern, entry in entries.items():
        if pattern != "*" and any(c in pattern for c in "*?[") and fnmatch.fnmatchcase(agent, pattern):
            return entry
    return entries.get("*")


def entry_for(agent: str) -> tuple[Entry | None, str]:
    """The rollout entry of an agent and where it came from (file, environment), or ``(None, "settings")``."""
    path = CONFIG.rollout_file
    if path is not None:
        hit = _match(_FILE.get(str(path)), agent)
        if hit is not None:
            return hit, f"file:{path}"
    env = os.environ.get(ENV_ROLLOUT)
    if env:
        hit = _match(parse_env(env), agent)
        if hit is not None:
            return hit, "env"
    return None, "settings"


def configured() -> bool:
    """Whether anything but plain full recording could be in force (cheap: checked at every run start)."""
    c = CONFIG
    return bool(
        c.summary
        or c.sample_rate < 1.0
        or c.head_rate < 1.0
        or c.rollout_file is not None
        or os.environ.get(ENV_ROLLOUT)
    )


def plan_for(agent: str) -> Plan:
    """How a run of ``agent`` is recorded now (the rollout entry over the settings)."""
    c = CONFIG
    entry, source = entry_for(agent)
    if entry is None:
        mode: Mode = "summary" if c.summary else ("sampled" if c.sample_rate < 1.0 else "full")
        return Plan(mode, tuple(c.summary), float(c.sample_rate), float(c.head_rate), source)
    if entry.mode == "off":
        return Plan("off", source=source)
    if entry.mode == "full":
        return Plan("full", source=source)
    if entry.mode == "summary":
        rate = entry.sample_rate if entry.sample_rate is not None else float(c.sample_rate)
        return Plan("summary", tuple(c.summary) or ("*",), rate, float(c.head_rate), source)
    rate = entry.sample_rate if entry.sample_rate is not None else (
        float(c.sample_rate) if c.sample_rate < 1.0 else SAMPLED_DEFAULT_RATE
    )
    return Plan("sampled", tuple(c.summary), rate, float(c.head_rate), source)


@dataclass(frozen=True, slots=True)
class Setup:
    """How a new run is recorded, by its plan: what `trajdebug.record.runs.RunHandle` takes at its start."""

    plan: Plan
    """The plan in force."""
    void: bool = False
    """Off, or not chosen by head sampling: the run records into nothing."""
    processors: tuple[Processor, ...] = ()
    """Its processors, in order: summary mode, then tail sampling."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Keys added to the run's metadata: the plan (``recording``) and a head-sampling decision (``sampling``)."""


def setup(agent: str, run_id: str, joined: bool = False) -> Setup | None:
    """How a new run of ``agent`` is recorded: None for plain full recording, else its `Setup`."""
    plan = plan_for(agent)
    if plan.plain:
        return None
    if plan.mode == "off" or not _sampling.head_keeps(run_id, plan.head_rate):
        return Setup(plan, void=True)
    metadata: dict[str, Any] = {} if joined else {"recording": plan.to_dict()}
    processors: list[Processor] = []
    if plan.summary:
        processors.append(SummaryProcessor(_policy(plan.summary)))
    if plan.sample_rate < 1.0:
        processors.append(TailSampler(_sampling.Hold(run_id, plan.sample_rate, plan.head_rate)))
    elif plan.head_rate < 1.0 and not joined:
        metadata[_sampling.SAMPLING_KEY] = {
            "decision": "kept",
            "why": "head",
            "sample_rate": 1.0,
            "head_rate": plan.head_rate,
            "weight": _sampling.weight("head", 1.0, plan.head_rate),
        }
    return Setup(plan, False, tuple(processors), metadata)


def _policy(rules: tuple[str, ...]) -> Policy:
    from trajdebug.record.summary import Policy  # (here: summary mode loads the value helpers)

    try:
        return Policy.compile(rules, CONFIG.summary_key, CONFIG.summary_numbers)
    except ValueError as exc:
        # A bad rule must not record content the user asked to keep out: everything is summarized.
        log.warning("trajdebug: %s; summarizing every input and output", exc)
        return Policy.compile(("*",), CONFIG.summary_key, CONFIG.summary_numbers)


__all__ = [
    "ENV_ROLLOUT",
    "MODES",
    "SAMPLED_DEFAULT_RATE",
    "Entry",
    "Mode",
    "Plan",
    "Setup",
    "configured",
    "entry_for",
    "parse_entry",
    "parse_env",
    "parse_file",
    "plan_for",
    "setup",
]
