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

import itertools
import json
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


# -- a value taken from a record of the same kind as the one answered about -----------------------------------


_MIN_SHARED = 3
"""Field names two records must share to be records of one kind (a booking and the previous booking): fewer, and
an order and its customer, which answers draw from together by design, would read as two of a kind."""


def _parsed(value: Any, depth: int = 0) -> Any:
    """The value with JSON written in its strings read (a prompt holding records as JSON)."""
    if depth > 6:
        return value
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in "{[":
            try:
                return _parsed(json.loads(text), depth + 1)
            except (ValueError, RecursionError):  # (too deeply nested to parse: text)
                return value
        at = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
        if at > 0:
            return _parsed(text[at:], depth + 1)
        return value
    if isinstance(value, Mapping):
        return {k: _parsed(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_parsed(v, depth + 1) for v in value[:200]]
    return value


def _flat_records(value: Any, depth: int = 0, within: int = 0) -> Iterator[tuple[Mapping[str, Any], int]]:
    """Every mapping inside a value with three or more scalar text fields (up to 6 levels, 200 records), with the
    list it is an item of (its ``id``; 0 when it is no list's item)."""
    if depth > 6:
        return
    if isinstance(value, Mapping):
        if sum(1 for v in value.values() if isinstance(v, str)) >= _MIN_SHARED:
            yield value, within
        for v in value.values():
            yield from _flat_records(v, depth + 1)
    elif isinstance(value, list):
        for v in value[:200]:
            yield from _flat_records(v, depth + 1, id(value))


def _texts(record: Mapping[str, Any], generic: frozenset[str]) -> dict[str, str]:
    return {str(k): v for k, v in record.items() if isinstance(v, str) and len(v) >= 3 and str(k).lower() not in generic}


def mixed(step: Step, generic: frozenset[str]) -> Iterator[Evidence]:
    """An answer that holds a value of one input record and, beside it, a value another record of the same kind
    gives under a field the first record fills otherwise (the crew schedule for lot VH-2's press, dated with the
    previous lot's start): the step answered about one record with a value of another.  Text values only;
    the first record's own value of that field must be missing from the answer.  Model calls only: a model's
    context holds records it was not asked about (the previous lot, an earlier ticket); a program merging
    records pairs them by its code, and a crossed join of ids is `crossed`'s."""
    if step.kind != "llm":
        return
    # (At most 50 records: pairs of them are compared, and a long list is a table, not records to mix.)
    # Items of one list (a queue of lots, a page of results) are what the step was to choose among or walk
    # through: its answer may speak of several.  Only records from different parts of its input mix.
    parsed = _parsed(step.input)
    records = [(_texts(r, generic), within) for r, within in itertools.islice(_flat_records(parsed), 50)]
    if len(records) < 2:
        return
    said = json.dumps(_parsed(step.output), default=str).casefold()
    for own, mine_in in records:
        hits = [k for k, v in own.items() if v.casefold() in said]
        for other, theirs_in in records:
            shared = set(own) & set(other)
            if other is own or len(shared) < _MIN_SHARED or not hits or (mine_in and mine_in == theirs_in):
                continue
            if any(own[k] == other.get(k) for k in hits):
                continue  # what it took from ``own`` the other record holds too: no sign of which it answered
            for f in sorted(shared):
                theirs, mine = other[f], own[f]
                if theirs != mine and theirs.casefold() in said and mine.casefold() not in said:
                    yield Evidence(
                        step.step_id,
                        CROSSED,
                        f"its answer holds {hits[0]}={own[hits[0]]!r} of one record and {f}={theirs!r} of another "
                        f"of its kind, where the first says {f}={mine!r}",
                        "lineage:crossed",
                    )
                    return
