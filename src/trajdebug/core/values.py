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

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal


AtomKind = Literal["number", "date", "id", "text"]
"""What an atom is: a number, a date or time, an identifier, or a short string."""

TEXT_LIMIT = 20_000
"""How much of a string the readers look at (they rank; a prefix is enough)."""

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


# -- numbers -------------------------------------------------------------------

NUMBER_WORDS: dict[str, int] = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
}
"""English number words read as numbers (English-only)."""
NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "hundred": 100, "dozen": 12})

_CURRENCY_SYMBOLS = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy", "₹": "inr", "₩": "krw", "₽": "rub"}

# A number as people and programs write it: optional sign, optional currency symbol,
# digits with thousands separators or plain, decimals, an exponent, a percent sign.
# (Each pattern below starts with a lookahead on the characters its alternatives can start with: the
# same matches, found without trying every alternative at every position.)
_NUM = re.compile(
    r"(?<![\w.])(?=[-+−$€£¥₹₩₽\d])(?P<sign>[-+−])?(?:(?P<cur>[$€£¥₹₩₽])\s?)?"
    r"(?P<num>\d{1,3}(?:[,\u202f\u00a0 ]\d{3})+(?:\.\d+)?|\d{1,3}(?:\.\d{3})+,\d+|\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?)"
    r"(?P<pct>%)?(?![\w])"
)
_UNIT = re.compile(r"\s?(?P<unit>[A-Za-z%²³][A-Za-z0-9²³/]{0,9})")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DATE = re.compile(
    r"\b(?=[\dajfmsond])(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{1,2}/\d{1,2}/\d{2,4}"
    r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?\b(?:,? \d{4})?"
    r"|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?(?:,? \d{4})?"
    r"|\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?"
    r"|\d{1,2}\s?[ap]\.?m\.?)",
    re.I,
)
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[t ](\d{2}):(\d{2}))?")
_US = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{2,4})")
_MD = re.compile(r"([a-z]{3})[a-z]*\.? (\d{1,2})", re.I)
_DM = re.compile(r"(\d{1,2})(?:st|nd|rd|th)? (?:of )?([a-z]{3})", re.I)
_TIME = re.compile(r"(\d{1,2})(?::(\d{2}))?(?::\d{2})?\s?([ap])?\.?m?\.?$", re.I)


def date_keys(raw: str) -> list[str]:
    """Canonical keys of a date or time as written: ``d:MM-DD`` for the day, ``t:HH:MM`` for the time.

    "2025-03-11T09:00", "11 Mar", "March 11, 2025" and "3/11/2025" share the day
    key ``d:03-11``; "9am", "09:00" and "9:00 a.m." share ``t:09:00``.  The year is
    left out so a date written with and without one still matches.  A value that
    does not read as a date or time gives its case-folded text.
    """
    t = raw.strip().lower()
    out: list[str] = []
    m = _ISO.match(t)
    if m:
        out.append(f"d:{m.group(2)}-{m.group(3)}")
        if m.group(4):
            out.append(f"t:{m.group(4)}:{m.group(5)}")
        return out
    m = _US.fullmatch(t)
    if m:
        return [f"d:{int(m.group(1)):02d}-{int(m.group(2)):02d}"]
    m = _MD.match(t) or None
    if m and m.group(1) in _MONTHS:
        return [f"d:{_MONTHS.index(m.group(1)) + 1:02d}-{int(m.group(2)):02d}"]
    m = _DM.match(t)
    if m and m.group(2) in _MONTHS:
        return [f"d:{_MONTHS.index(m.group(2)) + 1:02d}-{int(m.group(1)):02d}"]
    m = _TIME.match(t)
    if m and (m.group(2) is not None or m.group(3)):
        h = int(m.group(1)) % 12 + (12 if m.group(3) == "p" else 0) if m.group(3) else int(m.group(1))
        return [f"t:{h:02d}:{m.group(2) or '00'}"]
    return ["d:" + " ".join(t.split())]


_ID = re.compile(
    r"\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+\b"
    r"|\b[A-Z]{1,5}\d{2,}\b"
    r"|\b\d+(?:[-_][A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*)+\b"
    r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
    r"|\b[\w.+-]+@[\w-]+\.[\w.-]+\b"
    # A code in capitals joined by hyphens or underscores (a rate code, a plan, a region):
    # an identifier even without a digit (unless a number follows it: then it is the
    # head of a longer identifier, a plate or a serial, read as text).
    r"|\b[A-Z][A-Z0-9]+(?:[-_][A-Z0-9]+)+\b(?![ ]?\d)"
)
_DIGIT = re.compile(r"\d")
_CODE = re.compile(r"[A-Z0-9][-_][A-Z0-9]")
_QUOTED = re.compile(r"'([^'\n]{2,80})'|\"([^\"\n]{2,80})\"|`([^`\n]{2,80})`")


def _trie(words: list[str]) -> str:
    """A regex alternation of words as a prefix tree (``t(?:en|wo)``): the same words, matched without
    trying each one in turn."""
    tree: dict[str, Any] = {}
    for w in words:
        node = tree
        for c in w:
            node = node.setdefault(c, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        alts = [re.escape(c) + emit(node[c]) for c in sorted(node) if c]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 and "" not in node else "(?:" + "|".join(alts) + ")"
        return body + ("?" if "" in node else "")

    return emit(tree)


_WORDNUM = re.compile(r"\b(" + _trie(list(NUMBER_WORDS)) + r")\b", re.I)


def parse_number(text: str) -> float | None:
    """A number written as text, or None.

    Reads signs (``-``, ``+``, the minus sign ``−``), currency symbols, thousands
    separators (``1,250.00``, ``1 250``, ``1.250,00``), decimal commas
    (``12,5``), exponents and a trailing percent sign (kept as the number: 12%
    is 12).

    Example:
        >>> parse_number("-$1,250.50")
        -1250.5
    """
    m = _NUM.fullmatch(text.strip())
    return None if m is None else _number(m)


def _number(m: re.Match[str]) -> float | None:
    s = m.group("num")
    if s.isdigit():  # no separator, no decimal point (most numbers): as written
        f = float(s)
        if not math.isfinite(f):
            return None
        return -f if m.group("sign") in ("-", "−") else f
    for sep in ("\u202f", "\u00a0", " "):
        s = s.replace(sep, ",")
    if "," in s and "." in s:
        # The separator written last is the decimal one (1,250.00 vs 1.250,00).
        s = s.replace(".", "").replace(",", ".") if s.rfind(",") > s.rfind(".") else s.replace(",", "")
    elif "," in s:
        head, _, tail = s.rpartition(",")
        s = s.replace(",", "") if len(tail) == 3 and head.replace(",", "").isdigit() else head + "." + tail
    try:
        f = float(s)
    except ValueError:
        return None
    if not math.isfinite(f):
        return None
    return -f if m.group("sign") in ("-", "−") else f


def number_key(f: float) -> str:
    """The canonical text of a number (integers without a decimal point, 6 significant digits)."""
    if f == int(f) and abs(f) < 1e15:
        return str(int(f))
    r = float(f"{f:.6g}")
    if r == int(r) and abs(r) < 1e15:
        return str(int(r))  # 999999.5 rounds to a whole number: written as one, as 1000000 is
    return f"{r:.6g}"


@dataclass(frozen=True, slots=True)
class Mention:
    """A number found in text, with where it was and what stood beside it."""

    value: float
    """The number (sign kept)."""
    start: int
    """Offset in the text."""
    end: int
    """End offset in the text."""
    unit: str | None
    """A currency symbol, percent sign or the word right after it (lower case)."""
    raw: str
    """As written."""


def mentions(text: str, *, words: bool = True) -> list[Mention]:
    """The numbers in a text, left to right; dates, times and identifiers are not numbers.

    Args:
        text: The text (read up to `TEXT_LIMIT` characters).
        words: Also read English number words ("four", "a dozen").
    """
    text = text[:TEXT_LIMIT]
    has_digits = _DIGIT.search(text) is not None
    # No digits: nothing to mask or read.
    return _mentions(text, _mask(text) if has_digits else text, has_digits, words)


def _mentions(text: str, masked: str, has_digits: bool, words: bool) -> list[Mention]:
    """`mentions` of a text whose dates, times and identifiers are blanked out in ``masked``."""
    out: list[Mention] = []
    for m in _NUM.finditer(masked) if has_digits else ():
        f = _number(m)
        if f is None:
            continue
        unit = _CURRENCY_SYMBOLS.get(m.group("cur") or "") or ("%" if m.group("pct") else None)
        if unit is None:
            u = _UNIT.match(masked, m.end())
            if u is not None:
                unit = u.group("unit").lower()
        out.append(Mention(f, m.start(), m.end(), unit, text[m.start() : m.end()].strip()))
    if words:
        for m in _WORDNUM.finditer(masked):
            u = _UNIT.match(masked, m.end())
            out.append(
                Mention(
                    float(_number_word(m.group(1))),
                    m.start(),
                    m.end(),
                    u.group("unit").lower() if u else None,
                    m.group(1),
                )
            )
        out.sort(key=lambda x: x.start)
    return out


def _number_word(word: str) -> int:
    """The number a number word names, however its letters are cased (``ſix`` is six, as the pattern reads it)."""
    n = NUMBER_WORDS.get(word.lower())
    if n is None:  # a letter that case-folds onto an ASCII one (ſ, ı, İ): as rare as it is hostile
        n = next(v for w, v in NUMBER_WORDS.items() if re.fullmatch(w, word, re.I))
    return n


def _mask(text: str) -> str:
    """The text with dates, times and identifiers blanked out (their digits are not numbers)."""

    return _ID.sub(_blank, _DATE.sub(_blank, text))


def _blank(m: re.Match[str]) -> str:
    return " " * (m.end() - m.start())


def _blanked(text: str, found: list[re.Match[str]]) -> str:
    """The text with these matches of it blanked out (as ``pattern.sub(_blank, text)`` gives)."""
    parts: list[str] = []
    at = 0
    for m in found:
        parts.append(text[at : m.start()])
        parts.append(" " * (m.end() - m.start()))
        at = m.end()
    parts.append(text[at:])
    return "".join(parts)


# -- atoms -----------------------------------------------------------------------


_NOT_MAPPINGS = frozenset({list, tuple, int, float, bool, type(None)})
"""Built-in types that are no mapping: the walks ask the (slower) ``Mapping`` check of other types only."""


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


def _read_text(s: str, field: str | None, depth: int, out: list[Atom], limit: int) -> bool:
    """Read one string's atoms into ``out``; True when it held structure (JSON, a table) read one level deeper."""
    t = s.strip()
    if not t:
        return False
    if t[:1] in "{[" and len(t) < TEXT_LIMIT:
        try:
            parsed = json.loads(t)
        except ValueError:
            parsed = None
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


def _quoted_atoms(t: str, field: str | None, out: list[Atom]) -> None:
    for m in _QUOTED.finditer(t):
        q = next(g for g in m.groups() if g is not None)
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


_MONTH_WORD = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_RANGE_DM = re.compile(
    r"\b(\d{1,2})(?:st|nd|rd|th)?\s*(?:-|–|to|until|through|till)\s*\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH_WORD,
    re.I,
)
_RANGE_MD = re.compile(
    r"\b" + _MONTH_WORD + r"\s+\d{1,2}(?:st|nd|rd|th)?\s*(?:-|–|to|until|through|till)\s*(\d{1,2})(?:st|nd|rd|th)?\b", re.I
)

_MONTH_BEFORE = re.compile(_MONTH_WORD + r"\s+$", re.I)
_MONTH_AFTER = re.compile(r"\s+(?:of\s+)?" + _MONTH_WORD, re.I)


def date_forms(text: str) -> set[str]:
    """The keys (`date_keys`) of every date and time written in a text.

    A range written with one month ("3 to 7 November", "Nov 3-7") holds both of its days.
    """
    text = text[:TEXT_LIMIT]
    keys = {k for m in _DATE.finditer(text) for k in date_keys(m.group(0))}
    for m in _RANGE_DM.finditer(text):
        if not _MONTH_BEFORE.search(text[max(0, m.start() - 12) : m.start()]):  # not "March 30 to 2 April"
            keys.update(date_keys(f"{m.group(1)} {m.group(2)}"))
    for m in _RANGE_MD.finditer(text):
        if not _MONTH_AFTER.match(text, m.end()):
            keys.update(date_keys(f"{m.group(2)} {m.group(1)}"))
    return keys


def is_date(text: str) -> bool:
    """Whether a string is a date or a time (in one of the forms `date_keys` reads)."""
    return _DATE.fullmatch(text.strip()) is not None


def is_year(value: object, now_ns: int | None = None) -> bool:
    """Whether a value is a whole number that reads as a calendar year (1900 to 2100).

    With ``now_ns`` (when the run happened), only that year counts: the current
    year is context every writer knows, so a step stating it has not made a
    value up; any other year it states is a claim (a date filter, a horizon).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if not (float(value).is_integer() and 1900 <= value <= 2100):
        return False
    if now_ns is None:
        return True
    if now_ns <= 0:
        return False
    import datetime

    return int(value) == datetime.datetime.fromtimestamp(now_ns / 1e9, datetime.UTC).year


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
    "is_year",
    "iter_text",
    "mentions",
    "number_key",
    "parse_number",
    "quoted",
]
