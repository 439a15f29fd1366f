"""Numbers, dates and times, and ids as written in text: read, keyed, found.

`parse_number` reads a number as people and programs write it (signs, thousands separators, currency
symbols, English number words), `number_key` and `date_keys` give the keys two writings of one value
share, `mentions` finds the numbers, dates and ids of a text, `date_forms` every date in it (ranges
written with one month included).  `trajdebug.core.values` builds its atoms on these readings.
Standard library only, bounded: it runs on untrusted content.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any


TEXT_LIMIT = 20_000
"""How much of a string the readers look at (they rank; a prefix is enough)."""


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

SYMBOL_OF_CURRENCY = {
    "eur": "€", "gbp": "£", "inr": "₹", "krw": "₩", "rub": "₽",
    "usd": "us$", "cad": "c$", "aud": "a$", "nzd": "nz$", "hkd": "hk$", "sgd": "s$",
}  # fmt: skip
"""The currency codes one symbol stands for alone, lower-case (``$`` is also the Canadian and the
Australian dollar, ``¥`` also the yuan): a text writing ``£2,950.00`` or ``US$ 6,100`` states ``GBP`` or
``USD``, one writing ``$`` states no code."""


def currency_written(code: str, text: str) -> bool:
    """Whether a lower-case text writes the one symbol of a currency code (``us$``, not the ``s$`` inside it)."""
    sym = SYMBOL_OF_CURRENCY.get(code)
    if sym is None:
        return False
    at = text.find(sym)
    while at >= 0:
        if at == 0 or not text[at - 1].isalpha():
            return True
        at = text.find(sym, at + 1)
    return False

# A number as people and programs write it: optional sign, optional currency symbol,
# digits with thousands separators or plain, decimals, an exponent, a percent sign.
# (Each pattern below starts with a lookahead on the characters its alternatives can start with: the
# same matches, found without trying every alternative at every position.)
_NUM = re.compile(
    r"(?<![\w.])(?=[-+−$€£¥₹₩₽\d])(?P<sign>[-+−])?(?:(?P<cur>[$€£¥₹₩₽])\s?)?"
    r"(?P<num>\d{1,3}(?:[,\u202f\u00a0 ]\d{3})+(?:\.\d+)?|\d{1,3}(?:\.\d{3})+,\d+|\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?)"
    r"(?![.,]\d)(?P<pct>%)?(?![\w])"
)
# (Never part of a number: ``2.5kg`` or ``4.25x5.5`` is no mention of 2 or 4, its digits before the point.)
_UNIT = re.compile(r"\s?(?P<unit>[A-Za-z%²³][A-Za-z0-9²³/]{0,9})")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_NAME = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)(?![a-z])"
)
"""A month's name or abbreviation, as a whole word: a word that merely starts like one (``deck 7``,
``market 5``, ``octane 95``) is a label and its number, not a date."""
_DATE = re.compile(
    r"\b(?=[\dajfmsond])(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{1,2}/\d{1,2}/\d{2,4}"
    r"|" + _MONTH_NAME + r"\.? \d{1,2}(?:st|nd|rd|th)?\b(?:,? \d{4})?"
    r"|\d{1,2}(?:st|nd|rd|th)? (?:of )?" + _MONTH_NAME + r"\.?(?:,? \d{4})?"
    r"|\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?"
    r"|\d{1,2}\s?[ap]\.?m\.?)",
    re.I,
)
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[t ](\d{2}):(\d{2}))?")
_US = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{2,4})")
_MD = re.compile(r"([a-z]{3})[a-z]*\.? (\d{1,2})", re.I)
_DM = re.compile(r"(\d{1,2})(?:st|nd|rd|th)? (?:of )?([a-z]{3})", re.I)
_TIME = re.compile(r"(\d{1,2})(?::(\d{2}))?(?::\d{2})?\s?([ap])?\.?m?\.?$", re.I)


_YEAR = re.compile(r"(?<!\d)(?:1[89]|2[01])\d\d(?!\d)")


def date_year(raw: str) -> str | None:
    """The year a date as written names (1800 to 2199; the first), None when it names none: what `date_keys`
    leaves out, for a match that must hold in the year too (a warranty's 2026-08-01 against 2024-08-01)."""
    m = _YEAR.search(raw)
    return m.group(0) if m else None


def same_year(a: str, b: str) -> bool:
    """Whether two dates as written name one year, or either names none."""
    ya, yb = date_year(a), date_year(b)
    return ya is None or yb is None or ya == yb


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
    r"|\b[A-Z]{1,10}\d{2,}\b"
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


_MARKS = tuple(
    (f"{sep}{use}", re.compile(pat))
    for sep, other in ((".", ","), (",", "."))
    for use, pat in (
        # A decimal mark before other than three digits ("2,4"), which no thousands group is.
        ("decimal", rf"(?<![\d.,])\d+{re.escape(sep)}(?:\d{{1,2}}|\d{{4,}})(?![\d.,])"),
        # A thousands mark twice, or before the other mark ("1.250.000", "1.250,5").
        ("thousands", rf"\d{re.escape(sep)}\d{{3}}(?:{re.escape(sep)}\d{{3}}|{re.escape(other)}\d)"),
    )
)


def separator_marks(raw: str) -> frozenset[str]:
    """The uses of "." and "," a number's writing shows beyond doubt (``.decimal``, ``,thousands``...): "2,4"
    shows a decimal comma, "1.250" shows nothing (one and a quarter, or 1250 with a dot between thousands)."""
    return frozenset(name for name, pat in _MARKS if pat.search(raw))


def number_key(f: float) -> str:
    """The canonical text of a number (integers without a decimal point, 6 significant digits)."""
    if not math.isfinite(f):
        return repr(f)  # inf and nan reach here from JSON's Infinity/NaN; int() of them raises
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
        start = m.start()
        if m.group("sign") and start > 0 and text[start - 1].isalnum():
            # A hyphen joining the number to the identifier before it, which the mask blanked (``1099-INT-2025``
            # holds 2025, not -2025): no sign.
            f, start = abs(f), m.start() + 1
        unit = _CURRENCY_SYMBOLS.get(m.group("cur") or "") or ("%" if m.group("pct") else None)
        if unit is None:
            u = _UNIT.match(masked, m.end())
            if u is not None:
                unit = u.group("unit").lower()
        out.append(Mention(f, start, m.end(), unit, text[start : m.end()].strip()))
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


# -- dates -------------------------------------------------------------------------

_MONTH_WORD = r"(" + _MONTH_NAME + r")\.?"
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


__all__ = [
    "NUMBER_WORDS",
    "SYMBOL_OF_CURRENCY",
    "currency_written",
    "TEXT_LIMIT",
    "Mention",
    "date_forms",
    "date_keys",
    "date_year",
    "is_date",
    "is_year",
    "mentions",
    "number_key",
    "parse_number",
    "same_year",
    "separator_marks",
]
