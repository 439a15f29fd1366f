"""Records whose ids a step paired otherwise than its input did: a crossed join.

A step given records that pair ids (``order=O-3`` with ``payment=PM-3``,
``order=O-5`` with ``payment=PM-5``) and answering with a record that pairs
two of those ids across them (``order=O-5`` with ``payment=PM-3``) joined
the wrong records: a log entry copied from the previous one, a payment attached
to another order, a ticket filed under the previous customer.  Each id of the
crossed pair came in paired with another value of the other field, and no input
record pairs the two: the step made the pairing itself.

Only ids (letters and digits) count: names and numbers are shared by many
records by nature.  A step re-assigning things on purpose (a scheduler moving a
team to another slot) trips it too: it is evidence, not proof.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from trajdebug.analysis._evidence import Evidence
from trajdebug.core.model import Step


CROSSED = 0.45
"""As strong as a conflict (`_anomalies.CONFLICT`): both say the output contradicts what the step was given."""

_DIGIT, _ALPHA = re.compile(r"\d"), re.compile(r"[A-Za-z]")

Pair = tuple[tuple[str, str], tuple[str, str]]


def _ids(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The record's (field, id) entries: string values of letters and digits, 3 to 60 characters."""
    return [
        (str(k), v)
        for k, v in record.items()
        if isinstance(v, str) and 3 <= len(v) <= 60 and _DIGIT.search(v) and _ALPHA.search(v)
    ]


def _records(value: Any, depth: int = 0) -> Iterator[Mapping[str, Any]]:
    """Every mapping inside a value with two or more ids (up to 6 levels, 200 records)."""
    if depth > 6:
        return
    if isinstance(value, Mapping):
        if len(_ids(value)) >= 2:
            yield value
        for v in value.values():
            yield from _records(v, depth + 1)
    elif isinstance(value, list):
        for v in value[:200]:
            yield from _records(v, depth + 1)


def _pairs(record: Mapping[str, Any]) -> Iterator[Pair]:
    ids = _ids(record)
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            if a[0] != b[0]:
                yield (a, b) if a <= b else (b, a)


def crossed(step: Step) -> Iterator[Evidence]:
    """The first output record that pairs two given ids the input paired with others (see the module)."""
    given: set[Pair] = set()
    partners: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for rec in _records(step.input):
        for a, b in _pairs(rec):
            given.add((a, b))
            partners.setdefault(a, set()).add(b)
            partners.setdefault(b, set()).add(a)
    if not given:
        return
    for rec in _records(step.output):
        for a, b in _pairs(rec):
            if (a, b) in given or a not in partners or b not in partners:
                continue
            # Each came in paired with another value of the other's field, never with each other.
            if any(f == b[0] for f, _ in partners[a]) and any(f == a[0] for f, _ in partners[b]):
                yield Evidence(
                    step.step_id,
                    CROSSED,
                    f"paired {a[0]}={a[1]!r} with {b[0]}={b[1]!r}, which its input paired with others",
                    "lineage:crossed",
                )
                return
