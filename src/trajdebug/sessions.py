"""Sessions: the runs of one conversation or user session, in order; a run's user and tags, as lists filter them.

A run belongs to a session when its metadata names one under ``session``:
``trajdebug.run(..., session="s-42")`` records it, and the importers and
integrations read it from their source (OpenInference ``session.id``,
LangGraph's ``thread_id`` in the run's ``configurable``, the OpenAI Agents
SDK's trace ``group_id``).  A session is the set of such runs ordered by
start time; ``continues`` links one turn to the one before when the
recorder knows it, a session groups turns when it does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from trajdebug.core.model import Run


SESSION_KEY = "session"
"""The run metadata key that names a run's session."""


def session_of(run: Run) -> str | None:
    """The session a run belongs to, or None."""
    return session_in(run.metadata)


def session_in(metadata: Mapping[str, Any] | None) -> str | None:
    """The session named in run metadata (a non-empty string or number), or None."""
    v = (metadata or {}).get(SESSION_KEY)
    if isinstance(v, bool) or v is None or v == "":
        return None
    return str(v) if isinstance(v, (str, int)) else None


USER_KEYS = ("user", "user_id")
"""The run metadata keys that name a run's user, first found wins: ``user`` is what the importers write
(OpenInference ``user.id``), ``user_id`` what agents commonly pass in ``metadata``."""


def user_in(metadata: Mapping[str, Any] | None) -> str | None:
    """The user named in run metadata (`USER_KEYS`: a non-empty string or number), or None."""
    for key in USER_KEYS:
        v = (metadata or {}).get(key)
        if isinstance(v, (str, int)) and not isinstance(v, bool) and v != "":
            return str(v)
    return None


def run_tags(metadata: Mapping[str, Any]) -> tuple[str, ...]:
    """A run's metadata as tags: ``key=value`` for each scalar value (and a mapping's ``name``), then the
    items of a ``tags`` list; what the run lists filter by tag (`has_tag`)."""
    out: list[str] = []
    for key, value in metadata.items():
        if isinstance(value, (str, int, float, bool)):
            out.append(f"{key}={value}")
        elif isinstance(value, Mapping) and isinstance(value.get("name"), str):
            out.append(f"{key}={value['name']}")
    tags = metadata.get("tags")
    if isinstance(tags, (list, tuple)):
        out.extend(str(t) for t in tags if isinstance(t, (str, int, float)))
    return tuple(out)


def has_tag(tags: Iterable[str], want: str) -> bool:
    """Whether ``want`` (``key=value``, a key, or an item of the ``tags`` list) is among a run's `run_tags`."""
    want = want.strip()
    return any(t == want or t.split("=", 1)[0] == want for t in tags)


def listed_tags(metadata: Mapping[str, Any]) -> list[str]:
    """The items of a run's ``tags`` list (what ``trajdebug.run(..., tags=[...])`` recorded)."""
    tags = metadata.get("tags")
    return [str(t) for t in tags if isinstance(t, (str, int, float))] if isinstance(tags, (list, tuple)) else []


@dataclass(frozen=True, slots=True)
class Session:
    """The runs of one session, oldest first."""

    session_id: str
    run_ids: tuple[str, ...]
    failures: int
    first_ns: int
    last_ns: int

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        return {
            "session": self.session_id,
            "runs": list(self.run_ids),
            "failures": self.failures,
            "first_ns": self.first_ns,
            "last_ns": self.last_ns,
        }


def group_sessions(runs: Iterable[Run]) -> list[Session]:
    """The sessions of these runs (runs with no session left out), the most recently active first."""
    by: dict[str, list[Run]] = {}
    for r in runs:
        sid = session_of(r)
        if sid is not None:
            by.setdefault(sid, []).append(r)
    out = []
    for sid, members in by.items():
        members.sort(key=lambda r: (r.start_ns, r.run_id))
        out.append(
            Session(
                sid,
                tuple(r.run_id for r in members),
                sum(1 for r in members if r.outcome == "failure"),
                members[0].start_ns,
                max((r.end_ns or r.start_ns) for r in members),
            )
        )
    return sorted(out, key=lambda s: (-s.last_ns, s.session_id))


def earlier_in_session(run: Run, pool: Iterable[Run]) -> list[Run]:
    """The runs of ``run``'s session that started before it, oldest first (none without a session)."""
    sid = session_of(run)
    if sid is None:
        return []
    return sorted(
        (r for r in pool if r.run_id != run.run_id and session_of(r) == sid and r.start_ns < run.start_ns),
        key=lambda r: (r.start_ns, r.run_id),
    )


__all__ = [
    "SESSION_KEY",
    "USER_KEYS",
    "Session",
    "earlier_in_session",
    "group_sessions",
    "has_tag",
    "listed_tags",
    "run_tags",
    "session_in",
    "session_of",
    "user_in",
]
