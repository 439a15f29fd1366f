"""Values inside step inputs and outputs: numbers with their units, dates, ids, short strings.

One reader of values for the whole package: the analysis traces values from
step to step (lineage), compares them across runs (references) and reads the
values an error names; importers and the recorder judge tool payloads with the
same functions.  Everything here is pure, standard library only, and bounded
(depth, breadth, text length): it runs on untrusted content.

An `Atom` is one value as the analysis sees it: a number (sign kept, thousands
separators and currency symbols read, a unit or currency next to it kept), a
date or time, an identifier, or a short string; with the field name it sat
under when it came from structured data.  Two atoms are the same value when
their ``key`` is equal.  Numbers written as English words ("four nights")
count as numbers: that one reading is English-only.
"""

from __future__ import annotations

import ast
import json
import math
import re
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from trajdebug.core.mentions import (
    _CODE,
    _CURRENCY_SYMBOLS,
    _DATE,
    _DIGIT,
    _ID,
    _QUOTED,
    NUMBER_WORDS,
    TEXT_LIMIT,
    Mention,
    _blank,
    _blanked,
    _mentions,
    date_forms,
    date_keys,
    is_date,
    is_year,
    mentions,
    number_key,
    parse_number,
)


AtomKind = Literal["number", "date", "id", "text"]
"""What an atom is: a number, a date or time, an identifier, or a short string."""


MAX_ATOMS = 400
"""At most this many atoms are read from one value."""

MAX_DEPTH = 8
"""Nesting depth the readers descend to."""


@dataclass(frozen=True, slots=True)
class Atom:
    """One value inside a step's input or output."""

    key: str
    """Identity for matching: ``n:<number>``, ``d:<date>``, ``i:<id>``, ``s:<text>`` (case-folded)."""
    kind: AtomKind
    """Number, date, id or text."""
    field: str | None = None
    """The name of the field it was the value of (lower case), or None in free text."""
    unit: str | None = None
    """A unit or currency written next to a number (``km2``, ``eur``, ``%``), when there was one."""
    raw: str = ""
    """The value as written (for reasons shown to people)."""
    number: float | None = None
    """The number, for number atoms."""


# -- atoms -----------------------------------------------------------------------


_NOT_MAPPINGS = frozenset({list, tuple, int, float, bool, type(None)})
"""Built-in types that are no mapping: the walks ask the (slower) ``Mapping`` check of other types only."""
_SCALARS_AND_LISTS = _NOT_MAPPINGS | {str}


def is_mapping(value: Any) -> TypeGuard[Mapping[Any, Any]]:
    """``isinstance(value, Mapping)``, answered without the ABC check for a dict, a string, a number or a list.

    The ABC check is a Python-level call (some 250 ns); the analysis asks it of every leaf it walks, on every
    step, and nearly every value it meets is one of these built-in types.
    """
    t = type(value)
    return t is dict or (t not in _SCALARS_AND_LISTS and isinstance(value, Mapping))


def atoms(value: Any, *, limit: int = MAX_ATOMS) -> list[Atom]:
    """The atoms of a value: its scalar leaves, and the numbers, dates, ids and quoted strings of its text.

    JSON written as a string (a tool's arguments, a model's answer) is parsed and
    read as structure.  A leaf keeps the name of its field; numbers in free text
    keep the unit written next to them.
    """
    out: list[Atom] = []
    _walk(value, None, 0, out, limit)
    return out


def _walk(value: Any, field: str | None, depth: int, out: list[Atom], limit: int) -> None:
    if len(out) >= limit or depth > MAX_DEPTH:
        return
    if value is None:
        return
    if isinstance(value, bool):
        if field is not None:
            # A flag says something only under its name (cached=true).
            raw = "true" if value else "false"
            out.append(Atom("s:" + raw, "text", field, None, raw))
        return
    if isinstance(value, (int, float)):
        try:
            f = float(value)
        except OverflowError:  # an int too large for a float names no quantity we can match
            return
        if math.isfinite(f):
            out.append(Atom("n:" + number_key(f), "number", field, None, repr(value), f))
        return
    if isinstance(value, str):
        _text(value, field, depth, out, limit)
        return
    if isinstance(value, dict) or (type(value) not in _NOT_MAPPINGS and isinstance(value, Mapping)):
        for i, (k, v) in enumerate(value.items()):
            if i >= 200 or len(out) >= limit:
                break
            if isinstance(k, str) and k.startswith("__trajdebug_"):
                if k == SUMMARY_KEY and i == 0:
                    _summary_atoms(value, field, out, limit)
                return  # a truncation or repr marker: not the value itself
            _walk(v, str(k).lower(), depth + 1, out, limit)
        return
    if isinstance(value, (list, tuple)):
        for v in value[:200]:
            if len(out) >= limit:
                break
            _walk(v, field, depth + 1, out, limit)


SUMMARY_KEY = "__trajdebug_summary__"
"""First key of a value recorded in summary mode (`trajdebug.record.summary`): a hash, a length and
features instead of the content, and under ``atoms`` the atoms of the original value as
``[kind, hash, field, number, unit]`` (kind ``n``, ``d``, ``i`` or ``s``; the hash of the atom's key)."""

_SUMMARY_KINDS: dict[str, AtomKind] = {"n": "number", "d": "date", "i": "id", "s": "text"}


def _summary_atoms(value: Mapping[Any, Any], field: str | None, out: list[Atom], limit: int) -> None:
    """The atoms a summary kept: keyed by the hash of the original atom's key, so two summaries of one
    value share them (value lineage on hashes).  Malformed entries are skipped: this is read from files."""
    items = value.get("atoms")
    if not isinstance(items, list):
        return
    for item in items[:MAX_ATOMS]:
        if len(out) >= limit:
            return
        if not isinstance(item, list) or len(item) < 2:
            continue
        kind = _SUMMARY_KINDS.get(item[0]) if isinstance(item[0], str) else None
        digest = item[1]
        if kind is None or not isinstance(digest, str) or not digest:
            continue
        own = item[2] if len(item) > 2 and isinstance(item[2], str) else None
        num = item[3] if len(item) > 3 and isinstance(item[3], (int, float)) and not isinstance(item[3], bool) else None
        unit = item[4] if len(item) > 4 and isinstance(item[4], str) else None
        try:
            number = float(num) if num is not None and math.isfinite(float(num)) else None
        except OverflowError:  # an int too large for a float: no number to read
            number = None
        out.append(Atom("h:" + digest, kind, own if own is not None else field, unit, "#" + digest[:8], number))


_TEXT_MEMO: dict[tuple[str, str | None], tuple[tuple[Atom, ...], int]] = {}
"""The atoms of strings read before, by (string, field), with the depth they were read at (-1: any
depth gives them, the string held no structure): a run repeats its values from step to step (a tool's
result is the next step's input), and reading strings is most of reading a value."""
_PLAIN_MEMO: dict[str, tuple[Atom, ...]] = {}
"""The atoms of strings read before that held no structure, under whatever field they were read: such a
string's atoms all carry the field it was read under and are otherwise the same under any field (the
same text is a tool's ``query`` argument, then a record's ``title``, then a dropped value of no field)."""
_TEXT_MEMO_CHARS = 1 << 25
"""The memos are dropped past this budget: each entry counts its string's characters plus
`_MEMO_ENTRY` for the entry and its atoms (some 40 MB at most)."""
_MEMO_ENTRY = 400
_text_memo_chars = [0]


def _text(s: str, field: str | None, depth: int, out: list[Atom], limit: int) -> None:
    key = (s, field)
    hit = _TEXT_MEMO.get(key)
    if hit is not None and hit[1] in (-1, depth) and len(out) + len(hit[0]) < limit:
        out.extend(hit[0])
        return
    plain = _PLAIN_MEMO.get(s)
    if plain is not None and len(out) + len(plain) < limit:
        if plain and plain[0].field != field:
            plain = tuple(Atom(a.key, a.kind, field, a.unit, a.raw, a.number) for a in plain)
        out.extend(plain)
        _TEXT_MEMO[key] = (plain, -1)
        _text_memo_chars[0] += _MEMO_ENTRY
        return
    start = len(out)
    nested = _read_text(s, field, depth, out, limit)
    if len(out) < limit:
        # The limit never cut the reading short: these are the string's own atoms, whatever came before.
        if _text_memo_chars[0] + len(s) + _MEMO_ENTRY > _TEXT_MEMO_CHARS:
            _TEXT_MEMO.clear()
            _PLAIN_MEMO.clear()
            _text_memo_chars[0] = 0
        found = tuple(out[start:])
        _TEXT_MEMO[key] = (found, depth if nested else -1)
        if not nested:
            _PLAIN_MEMO[s] = found
        _text_memo_chars[0] += len(s) + _MEMO_ENTRY * (1 if nested else 2)


def _python_literal(t: str) -> Any:
    """A program's dict or list printed by ``str`` (the OpenAI Agents SDK records a function tool's result
    so: ``{'unit_id': 'V-212', 'odometer_mi': 98471}``), read as the data it prints; None otherwise.
    Literals only (``ast.literal_eval`` evaluates nothing)."""
    if t[1:2] not in ("'", "{", "[", " ", "(") and t[:2] != "[]":
        return None
    try:
        v = ast.literal_eval(t)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return v if isinstance(v, (dict, list)) else None


def _read_text(s: str, field: str | None, depth: int, out: list[Atom], limit: int) -> bool:
    """Read one string's atoms into ``out``; True when it held structure (JSON, a table) read one level deeper."""
    t = s.strip()
    if not t:
        return False
    if t[:1] in "{[" and len(t) < TEXT_LIMIT:
        try:
            parsed = json.loads(t)
        except RecursionError:  # nested deeper than the parser's stack: read as plain text
            parsed = None
        except ValueError:
            parsed = _python_literal(t)
        if isinstance(parsed, (dict, list)):
            _walk(parsed, field, depth + 1, out, limit)
            return True
    table = _table(t)
    if table is not None:
        _walk(table, field, depth + 1, out, limit)
        return True
    digit = _DIGIT.search(t) is not None
    if not digit and "@" not in t and _CODE.search(t) is None:
        # No digit and no address: no number, date, time or id; a short string is a value,
        # a text may still quote values or write numbers as words.
        if len(t) <= 80 and "\n" not in t:
            out.append(Atom(_key("text", t), "text", field, None, t))
            if not any(c in "'\"`" for c in t):
                return False
        t = t[:TEXT_LIMIT]
        _quoted_atoms(t, field, out)
        for mm in mentions(t):
            out.append(Atom("n:" + number_key(mm.value), "number", field, mm.unit, mm.raw, mm.value))
        return False
    n = parse_number(t)
    if n is not None and len(t) <= 40:
        unit = next((u for sym, u in _CURRENCY_SYMBOLS.items() if sym in t), "%" if t.endswith("%") else None)
        out.append(Atom("n:" + number_key(n), "number", field, unit, t, n))
        return False
    if len(t) <= 80 and "\n" not in t:
        # A short string is a value in itself (a city, a status, a name).
        kind: AtomKind = "date" if _DATE.fullmatch(t) else ("id" if _ID.fullmatch(t) else "text")
        if kind == "date":
            out.extend(Atom(k, "date", field, None, t) for k in date_keys(t))
        else:
            out.append(Atom(_key(kind, t), kind, field, None, t))
        # (A decimal digit ``\d`` finds is a digit to ``str.isdigit``: the scan is for other digits and quotes.)
        if kind != "text" or not (digit or any(c.isdigit() or c in "'\"`" for c in t) or _CODE.search(t)):
            return False
    t = t[:TEXT_LIMIT]
    dates = list(_DATE.finditer(t))
    for m in dates:
        out.extend(Atom(k, "date", field, None, m.group(0)) for k in date_keys(m.group(0)))
    ids = list(_ID.finditer(t))
    if dates:
        # A piece of a date is no id (``12-14T06`` of ``2026-12-14T06:00``).
        # The dates are sorted and do not overlap: the one that may hold an id is the last starting at or
        # before it (found by bisection, so a long log of dated lines costs ids x log(dates), not ids x dates).
        starts, ends = [d.start() for d in dates], [d.end() for d in dates]
        ids = [m for m in ids if (i := bisect_right(starts, m.start()) - 1) < 0 or m.start() >= ends[i]]
    for m in ids:
        out.append(Atom(_key("id", m.group(0)), "id", field, None, m.group(0)))
    _quoted_atoms(t, field, out)
    # The number mask reuses the matches just found (identifiers are sought after dates are blanked).
    has_digits = _DIGIT.search(t) is not None
    if not has_digits:
        masked = t
    elif dates:
        masked = _ID.sub(_blank, _blanked(t, dates))
    else:
        masked = _blanked(t, ids)
    for mm in _mentions(t, masked, has_digits, True):
        out.append(Atom("n:" + number_key(mm.value), "number", field, mm.unit, mm.raw, mm.value))
        if len(out) >= limit:
            return False
    return False


_U_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _unescaped(q: str) -> str:
    """A quoted string with its JSON ``\\uXXXX`` escapes undone.

    A prompt that embeds JSON written with ASCII escapes (Python's ``json.dumps`` default) quotes
    ``"Mus\\u00e9e"`` where the answer, read as JSON, holds ``Musée``: one value, written two ways.
    """
    if "\\u" not in q:
        return q
    u = _U_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), q)
    try:
        return u.encode("utf-16", "surrogatepass").decode("utf-16")  # a pair of escapes: one character
    except UnicodeError:
        return q


def _quoted_atoms(t: str, field: str | None, out: list[Atom]) -> None:
    for m in _QUOTED.finditer(t):
        q = _unescaped(next(g for g in m.groups() if g is not None))
        qkind: AtomKind = "date" if _DATE.fullmatch(q) else ("id" if _ID.fullmatch(q) else "text")
        if qkind == "date":
            out.extend(Atom(k, "date", field, None, q) for k in date_keys(q))
        else:
            out.append(Atom(_key(qkind, q), qkind, field, None, q))


def _table(t: str) -> list[dict[str, str]] | None:
    """A delimited table (CSV, TSV, pipe- or semicolon-separated, with a header row) as records, else None.

    Read as records, a table's cells keep their column names (a field each), and a
    comma between cells is not taken for a thousands separator.
    """
    if "\n" not in t or len(t) > TEXT_LIMIT:
        return None
    lines = [ln for ln in t.splitlines() if ln.strip()][:500]
    if len(lines) < 2:
        return None
    for sep in (",", "\t", "|", ";"):
        counts = {ln.strip().strip("|").count(sep) for ln in lines}
        if len(counts) != 1 or next(iter(counts)) < 1:
            continue
        import csv

        rows = list(csv.reader([ln.strip().strip("|") for ln in lines], delimiter=sep))
        header = [h.strip() for h in rows[0]]
        if not all(h and not any(c.isdigit() for c in h[:1]) for h in header):
            return None
        return [{h: c.strip() for h, c in zip(header, r)} for r in rows[1:]]
    return None


def _key(kind: AtomKind, raw: str) -> str:
    folded = " ".join(raw.casefold().split())
    if kind == "date":
        return "d:" + folded
    if kind == "id":
        return "i:" + folded
    return "s:" + folded


def quoted(text: str) -> list[str]:
    """The quoted strings of a text (``'…'``, ``"…"``, ```…```), 2 to 80 characters."""
    return [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(text[:TEXT_LIMIT])]


def iter_text(value: Any, depth: int = 0) -> Iterator[str]:
    """The strings inside a value (keys excluded), depth-first, bounded."""
    if depth > MAX_DEPTH:
        return
    if isinstance(value, str):
        yield value[:TEXT_LIMIT]
    elif isinstance(value, dict) or (type(value) not in _NOT_MAPPINGS and isinstance(value, Mapping)):
        for i, v in enumerate(value.values()):
            if i >= 200:
                break
            yield from iter_text(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value[:200]:
            yield from iter_text(v, depth + 1)


__all__ = [
    "MAX_ATOMS",
    "NUMBER_WORDS",
    "SUMMARY_KEY",
    "TEXT_LIMIT",
    "Atom",
    "AtomKind",
    "Mention",
    "atoms",
    "date_forms",
    "date_keys",
    "is_date",
    "is_mapping",
    "is_year",
    "iter_text",
    "mentions",
    "number_key",
    "parse_number",
    "quoted",
]
