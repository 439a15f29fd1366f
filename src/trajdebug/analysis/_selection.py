"""Steps that pick items from a list they were given: what they left out they were not asked for.

A step handed a whole list of records and one key (a sample, an account) that
answers about that key's records only, or a queue step that hands on the next
record of the list it holds, selects: the other records' values are not lost
on its way, they were never its to pass on.  Omission signals (a parse step
that "dropped" values, a step that was given a value the failure expects and
did not pass it on) read such a step as lossy; these helpers tell them which
records it picked, so they judge only what it was asked about.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.core.model import Step


MAX_DEPTH = 6
"""How deep in a step's input lists of records are looked for."""


@dataclass(frozen=True, slots=True)
class Selection:
    """A list of records in a step's input of which its output names some, by a text field, and not others."""

    records: tuple[Any, ...]
    """The list as given (its records, in order)."""
    field: str
    """The text field whose values tell the records apart (``sample``, ``logger``)."""
    picked: frozenset[str]
    """The values of that field the output names (case-folded)."""
    others: frozenset[str]
    """The values of that field the output does not name (case-folded)."""


def _record_lists(value: Any, depth: int = 0) -> Iterator[list[Any]]:
    """The lists of two or more mappings inside a value (JSON text read), outermost first."""
    if depth > MAX_DEPTH:
        return
    if isinstance(value, str):
        for parsed in _embedded(value):
            yield from _record_lists(parsed, depth + 1)
        return
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _record_lists(v, depth + 1)
    elif isinstance(value, list):
        recs = [r for r in value if isinstance(r, Mapping)]
        if len(recs) >= 2 and len(recs) == len(value):
            yield value
        for v in value[:50]:
            yield from _record_lists(v, depth + 1)


_BLOCK_START = re.compile(r"(?:^|[\n:=])[ \t]*([\[{])")
"""Where a JSON block may start in a prompt: at a line's start or after a label (``ROSTER:[...]``)."""


def _embedded(text: str, limit: int = 8) -> Iterator[Any]:
    """The JSON objects and arrays a text holds: the first (`content.embedded_json`), then any further block
    that starts a line or follows a label, as a prompt lays out a request and the list it chooses from."""
    first = content.embedded_json(text)
    if isinstance(first, (Mapping, list)):
        yield first
    if len(text) > content.TEXT_LIMIT or ("{" not in text and "[" not in text):
        return
    decoder, found, end = json.JSONDecoder(), 0, 0
    for m in _BLOCK_START.finditer(text):
        if m.start(1) < end or found >= limit:
            continue
        try:
            parsed, end = decoder.raw_decode(text, m.start(1))
        except (ValueError, RecursionError):
            continue
        if isinstance(parsed, (Mapping, list)) and parsed != first:
            found += 1
            yield parsed


def _strings(value: Any) -> set[str]:
    """The case-folded text leaves of a value (JSON text read)."""
    return {v.strip().lower() for _, v in content.decoded_leaves(value) if isinstance(v, str) and v.strip()}


def _is_id(text: str) -> bool:
    """Text with letters and digits (``dh114-020``, ``al-1110``): an identifier, which a repeated row shares."""
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


def selections(given: Any, answer: Any) -> list[Selection]:
    """The lists of records in ``given`` of which ``answer`` names some records, by a field, and not the rest.

    A field tells records apart when every record has a text value there and no
    two share it (a name), or when its values are identifiers (several rows of one
    sample): an answer naming one of those values is about those records.  An answer naming none of them, or all, picked nothing.
    """
    if answer is None or given is None:
        return []
    named = _strings(answer)
    if not named:
        return []
    out: list[Selection] = []
    for records in _record_lists(given):
        first = records[0]
        for field in first:
            values = [r.get(field) for r in records]
            if not all(isinstance(v, str) and v.strip() for v in values):
                continue
            keys = [str(v).strip().lower() for v in values]
            distinct = frozenset(keys)
            if len(distinct) < 2 or (len(distinct) < len(keys) and not all(_is_id(k) for k in distinct)):
                continue
            picked = frozenset(k for k in distinct if k in named)
            if picked and len(picked) < len(distinct):
                out.append(Selection(tuple(records), str(field), picked, distinct - picked))
                break
    return out


_PARTS = re.compile(r"\s*[>/,;|+]\s*")
"""The separators that join the parts of a compound value (not spaces: prose is no compound)."""


def passed_over(sel: Selection, text: str) -> bool:
    """Whether ``text`` (a failure's message) names, as a word, a text value of a record the selection
    did not pick and of none it picked: what the picker left behind is what was wanted.  A value joined
    from parts (a language pair ``en>pt-pt``, a route ``lis/opo``) offers each part too: the failure names
    the part that mattered."""
    mine: set[str] = set()
    theirs: set[str] = set()
    for r in sel.records:
        values = _strings(r)
        parts = {p for v in values for p in _PARTS.split(v) if p and p != v}
        (mine if str(r.get(sel.field, "")).strip().lower() in sel.picked else theirs).update(values | parts)
    low = text.lower()
    return any(
        len(v) >= 3 and content.has_word(low, v)
        for v in theirs - mine
    )


def unpicked(value: Any, sel: list[Selection], depth: int = 0) -> Any:
    """The value with the records no selection picked left out of its lists (JSON text read where it holds one)."""
    if not sel or depth > MAX_DEPTH + 1:
        return value
    if isinstance(value, str):
        parsed = content.embedded_json(value)
        return value if not isinstance(parsed, (Mapping, list)) else unpicked(parsed, sel, depth + 1)
    if isinstance(value, Mapping):
        return {k: unpicked(v, sel, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        for s in sel:
            if len(value) == len(s.records) and all(a is b or a == b for a, b in zip(value, s.records)):
                return [r for r in value if str(r.get(s.field, "")).strip().lower() in s.picked]
        return [unpicked(v, sel, depth + 1) for v in value]
    return value


def other_item(given: Any, answer: Any, raw: str) -> bool:
    """True when ``raw`` is the key of a record of a list the step was given that its answer did not pick,
    or of a list of three or more records its answer names none of (a plan for the whole batch, by
    analyte, is about none of its samples: it lost no one of them)."""
    key = raw.strip().lower()
    for s in selections(given, answer):
        mine = {
            k for r in s.records if str(r.get(s.field, "")).strip().lower() in s.picked for k in _strings(r)
        }
        if key in s.others or any(
            key in _strings(r) and key not in mine
            for r in s.records
            if str(r.get(s.field, "")).strip().lower() in s.others
        ):
            return True
    if answer is None or content.is_empty(answer):
        return False
    named = _strings(answer)
    for records in _record_lists(given):
        if len(records) < 3:
            continue
        for field in records[0]:
            keys = {str(r.get(field, "")).strip().lower() for r in records}
            if key in keys and len(keys) == len(records) and not keys & named:
                return True
    return False


def left_in_state(given: Any, answer: Any, raw: str) -> bool:
    """True when a step that did not echo ``raw`` never had to: a graph node's answer is merged back.

    A node of a state graph (LangGraph and the like) is handed the whole state and
    answers with the fields it changes (``{"current": ..., "i": 2}``, some of them
    fields it was given): the state keeps every other field as it was.  A value it
    was given only under a field its answer leaves alone was passed on by the
    state, not lost.  (A routing function answering the next node's name is not
    exempted: measured, it moved a root that won a tie among equal droppers.)
    """
    if not isinstance(given, Mapping) or not isinstance(answer, Mapping) or len(given) < 3:
        return False
    shared = [k for k in answer if k in given]
    if not shared or len(answer) >= len(given):
        return False
    key = raw.strip().lower()
    under = [k for k, v in given.items() if key in _strings(v) or str(v).strip().lower() == key]
    return bool(under) and all(k not in answer for k in under)


def not_its_own(step: Step, raw: str) -> bool:
    """True when a step that did not pass ``raw`` on was never asked to: another record of a list it picked
    from (`other_item`), or a field of a state its answer leaves alone (`left_in_state`)."""
    return other_item(step.input, step.output, raw) or left_in_state(step.input, step.output, raw)


__all__ = ["Selection", "left_in_state", "not_its_own", "other_item", "passed_over", "selections", "unpicked"]
