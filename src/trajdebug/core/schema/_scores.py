"""Scores: the ``score`` record, its JSON form, and the one check every way in goes through.

A score (`trajdebug.core.model.Score`) is built by `make_score` wherever it comes in (the ``score``
command, `trajdebug.score`, serve's form, an import): a bad field is a `ValueError` of one line naming the
field, so the three ways in refuse the same things in the same words.  Reading a ``score`` record back is
tolerant like every other record: a record that fails the check is skipped with a problem naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from trajdebug.core.model import SCORE_SOURCES, Score, ScoreValue
from trajdebug.core.schema._records import FORMAT_VERSION


NAME_MAX = 200
"""The longest score name (a name is a label, not a text: the comment holds the words)."""

COMMENT_MAX = 10_000
"""The longest comment kept (a longer one is refused, not cut: a cut comment reads as a different one)."""


def make_score(
    name: Any,
    value: Any,
    *,
    source: Any = "human",
    by: Any = None,
    comment: Any = None,
    step_id: Any = None,
    at_ns: Any = 0,
) -> Score:
    """A checked `Score`.

    Raises:
        ValueError: a field is missing or of the wrong kind; the one-line message names it
            (``score field 'value': ...``).
    """
    return Score(
        name=_name(name),
        value=_value(value),
        source=_source(source),
        by=_optional_text("by", by, NAME_MAX),
        comment=_optional_text("comment", comment, COMMENT_MAX),
        step_id=_optional_text("step_id", step_id, NAME_MAX),
        at_ns=_at(at_ns),
    )


def _bad(field: str, why: str) -> ValueError:
    return ValueError(f"score field {field!r}: {why}")


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise _bad("name", "give a non-empty name (e.g. helpfulness)")
    text = name.strip()
    if len(text) > NAME_MAX or "\n" in text:
        raise _bad("name", f"a name is one line of at most {NAME_MAX} characters")
    if any(c in text for c in "=<>"):
        raise _bad("name", "a name cannot hold '=', '<' or '>' (they separate a name from a value or a bound)")
    return text


def _value(value: Any) -> ScoreValue:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise _bad("value", f"a number must be finite, got {value!r}")
        return value
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise _bad("value", "give a number, a category or true/false, got an empty value")
        if len(text) > NAME_MAX or "\n" in text:
            raise _bad("value", f"a category is one line of at most {NAME_MAX} characters")
        return text
    raise _bad("value", f"must be a number, a category (a string) or a boolean, got {type(value).__name__}")


def parse_value(text: str) -> ScoreValue:
    """A value as typed on a command line or in a form: ``true``/``false`` (any case) a boolean, a number a
    number (an integer stays one), anything else a category."""
    t = text.strip()
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(t)
    except ValueError:
        pass
    try:
        number = float(t)
    except ValueError:
        return t
    # "nan" and "inf" parse as floats but are no score: the check refuses them by name.
    return number


def _source(source: Any) -> Any:
    if source not in SCORE_SOURCES:
        raise _bad("source", f"must be one of {', '.join(SCORE_SOURCES)}, got {source!r}")
    return source


def _optional_text(field: str, value: Any, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _bad(field, f"must be a string, got {type(value).__name__}")
    text = value.strip()
    if field == "comment":
        if len(text) > limit:
            raise _bad(field, f"at most {limit:,} characters, got {len(text):,}")
        return text or None
    if not text:
        raise _bad(field, "must not be empty (leave it out instead)")
    if len(text) > limit or "\n" in text:
        raise _bad(field, f"one line of at most {limit} characters")
    return text


def _at(at_ns: Any) -> int:
    if isinstance(at_ns, bool) or not isinstance(at_ns, int) or at_ns < 0:
        raise _bad("at_ns", f"must be a time in nanoseconds since the epoch, got {at_ns!r}")
    return at_ns


def score_record(run_id: str, s: Score) -> dict[str, Any]:
    """A ``score`` record: a named value put on a run (``step_id`` null) or one of its steps, where it came from
    (``source``), who gave it (``by``), why (``comment``) and when (``at_ns``)."""
    return {
        "v": FORMAT_VERSION,
        "t": "score",
        "run_id": run_id,
        "step_id": s.step_id,
        "name": s.name,
        "value": s.value,
        "source": s.source,
        "by": s.by,
        "comment": s.comment,
        "at_ns": s.at_ns,
    }


def score_to_dict(s: Score) -> dict[str, Any]:
    """A score as JSON data for reports and ``--json`` (the record's fields, without the record's framing)."""
    return {
        "name": s.name,
        "value": s.value,
        "source": s.source,
        "by": s.by,
        "comment": s.comment,
        "step_id": s.step_id,
        "at_ns": s.at_ns,
    }


def decode_score(r: Mapping[str, Any], problems: list[str]) -> Score | None:
    """A ``score`` record (or `score_to_dict`'s form) as a `Score`, or None (with a problem naming the field)
    when it fails `make_score`'s check."""
    try:
        return make_score(
            r.get("name"),
            r.get("value"),
            source=r.get("source", "human"),
            by=r.get("by"),
            comment=r.get("comment"),
            step_id=None if r.get("step_id") is None else str(r.get("step_id")),
            at_ns=r.get("at_ns") or 0,
        )
    except ValueError as exc:
        problems.append(f"{exc}; ignored")
        return None


def numeric(value: object) -> bool:
    """Whether a score's value is a number (a boolean is not: it orders and averages as no score does)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def score_text(value: ScoreValue) -> str:
    """A score's value as people read it: ``true``/``false``, a number without a float's noise, a category."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


__all__ = [
    "COMMENT_MAX",
    "NAME_MAX",
    "decode_score",
    "make_score",
    "numeric",
    "parse_value",
    "score_record",
    "score_text",
    "score_to_dict",
]
