"""Serve's score form: a score posted from a run page (the run's, or a step's from the inspector), checked as
every way in checks it (`trajdebug.core.schema.make_score`) and stored with `trajdebug.scores.save_score`.

The page posts ``{"name", "value", "comment", "by", "source", "step_id"}`` as JSON to
``/api/runs/ID/scores``; the value is read as the command line reads it (``true``/``false``, a number, else a
category).  Only JSON from the server's own pages is taken (the ``Origin`` check of the answers' endpoint), so a
page elsewhere cannot post scores to it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from trajdebug.core.model import Run, Score
from trajdebug.core.schema import make_score, parse_value, score_to_dict


MAX_BODY = 64 * 1024
"""The largest score a page may post (the comment is the only long field)."""


class BadScore(ValueError):
    """A posted score that cannot be stored (the message, one line, names the field)."""


def parse_score(body: bytes, content_type: str, origin: str | None, host: str | None, run: Run) -> Score:
    """The score a POST gives, on ``run`` or one of its steps.

    Raises:
        BadScore: not JSON, from another origin, a field that fails the check, or a step the run lacks.
    """
    if content_type.split(";", 1)[0].strip().lower() != "application/json":
        raise BadScore("a score is posted as application/json")
    if origin and origin != "null" and urlsplit(origin).netloc != (host or ""):
        raise BadScore("scores are accepted from this server's own pages only")
    if len(body) > MAX_BODY:
        raise BadScore("the score is too large")
    try:
        data = json.loads(body or b"null")
    except (ValueError, RecursionError):
        raise BadScore("the score is not JSON") from None
    if not isinstance(data, dict):
        raise BadScore('a score is an object: {"name": ..., "value": ..., "comment": ..., "by": ..., "source": ...}')
    sid = data.get("step_id") or None
    if sid is not None and (not isinstance(sid, str) or sid not in {s.step_id for s in run.steps}):
        raise BadScore(f"score field 'step_id': run {run.run_id} has no step {str(sid)[:40]!r}")
    value = data.get("value")
    try:
        return make_score(
            data.get("name"),
            parse_value(value) if isinstance(value, str) else value,
            source=data.get("source") or "human",
            by=_blank_none(data.get("by")),
            comment=_blank_none(data.get("comment")),
            step_id=sid,
            at_ns=time.time_ns(),
        )
    except ValueError as exc:
        raise BadScore(str(exc)) from None


def _blank_none(v: Any) -> Any:
    """An empty form field is a field not given."""
    return None if isinstance(v, str) and not v.strip() else v


def store_score(source: str | Path, run: Run, score: Score) -> dict[str, Any]:
    """Store a checked score with the run (its comment redacted) and return it as the page shows it.

    Raises:
        SourceError: the source cannot be written.
    """
    from trajdebug.scores import save_score

    return score_to_dict(save_score(source, run.run_id, score))


__all__ = ["MAX_BODY", "BadScore", "parse_score", "store_score"]
