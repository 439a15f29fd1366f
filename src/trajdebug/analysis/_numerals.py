"""Numerals: numbers as a run's values write them, read out of text, normalized, and the forms they restate in.

A number reaches a step as a JSON number or as text (``5,118``, ``3.50``, a total inside a sentence); the
lineage and the rules compare numbers by one normal form (`norm_number`: ``3.50`` -> ``3.5``, small integers
left out) and by the forms a number may be restated in (`number_forms`: rounded to 0-2 decimals, a fraction
as per cent), memoized in bounded memory since a run restates the same numbers step after step.  A value's
text in general (JSON, error text, leaves) is `trajdebug.analysis._content`; numbers, read by most rules,
have their own module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from trajdebug.analysis._content import is_marker, looks_like_json, parse_json


_NUMBER = re.compile(
    # (The look-ahead ``(?=-?\d)`` changes no match, every one starts so: it makes the search skip a position
    # that starts no number at once, where the look-behinds were tried first; half the time on long texts.)
    r"(?=-?\d)(?<![\w.])(?:(?<!,)|(?<!\d,)|(?<=\.\d,)|(?<=\.\d\d,)|(?!\d{3}(?!\d)))"
    r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\.|(?![xX]\b)\w)"
)
"""A number standing alone, or glued to a multiplication sign (``12x SKU-2040``: twelve of the item; ``×``
is no word character): an id such as ``4A``, ``12xl`` or ``0x1F`` is no number, nor is ``x12``'s 12.  After a
comma it is one unless the comma is a thousands separator (a digit before it, three digits after it, no
decimals before it): compact JSON writes a list of numbers ``[508.0,711.2]`` or ``[3,4]``, not ``1,234``."""


def numbers_in(text: str) -> set[str]:
    """The numbers written in a text, normalized (``3.50`` -> ``3.5``, ``5,118`` -> ``5118``), skipping -10..10."""
    out: set[str] = set()
    for m in _NUMBER.finditer(text):
        n = norm_number(m.group(0))
        if n is not None:
            out.add(n)
    return out


def norm_number(s: str) -> str | None:
    """A number's canonical text, or None for small integers (counts and indices say little)."""
    # Memoized: a run states the same prices, totals and ids on step after step.
    hit = _NORMS.get(s, _MISS)
    if hit is not _MISS:
        return hit  # type: ignore[return-value]
    try:
        f = float(s.replace(",", ""))
    except ValueError:
        n = None
    else:
        n = None if f.is_integer() and -10 <= f <= 10 else repr(int(f)) if f.is_integer() else repr(f)
    if len(_NORMS) >= _FORMS_MEMO_SIZE:
        _NORMS.clear()
    _NORMS[s] = n
    return n


_MISS = object()


_NORMS: dict[str, str | None] = {}


_FORMS_MEMO_SIZE = 1 << 16
"""Numbers whose restated forms are kept (a run restates the same prices and totals again and again)."""


_FORMS: dict[str, tuple[str, ...]] = {}


_PLAIN_FORMS: dict[str, tuple[str, ...]] = {}


def _forms(number: str, *, percent: bool) -> tuple[str, ...]:
    """The restated forms of one number as written (`number_forms` of it alone), memoized."""
    memo = _FORMS if percent else _PLAIN_FORMS
    hit = memo.get(number)
    if hit is not None:
        return hit
    if number.isascii() and number.isdigit() and len(number) < 300:
        # A whole number (most of a run's ids, counts and amounts): every rounding of it is itself, and
        # per cent it is also a hundred times itself (the loop below, without the rounding).
        f = float(number)
        whole, hundred = repr(int(f)), repr(int(f * 100.0))
        hit = (whole, hundred) if percent and hundred != whole else (whole,)
    else:
        hit = _rounded_forms(number, percent=percent)
        if hit is None:
            return ()
    if len(memo) >= _FORMS_MEMO_SIZE:
        memo.clear()
    memo[number] = hit
    return hit


def _rounded_forms(number: str, *, percent: bool) -> tuple[str, ...] | None:
    """`_forms` of a number with a sign, a separator or decimals (None: no number)."""
    try:
        f = float(number.replace(",", ""))
    except ValueError:
        return None
    out: dict[str, None] = {}
    if percent:
        out[repr(int(f)) if f.is_integer() else repr(f)] = None
        for x in (f, f * 100.0):
            for d in (0, 1, 2):
                r = round(x, d)
                out[repr(int(r)) if float(r).is_integer() else repr(r)] = None
    else:
        for d in (0, 1, 2, 6):
            r = round(f, d)
            out[repr(int(r)) if float(r).is_integer() else repr(r)] = None
    return tuple(out)


def plain_number_forms(text: str) -> set[str]:
    """The numbers of a text as is and rounded to 0-2 decimals (`number_forms` without percentages)."""
    out: set[str] = set()
    for number in _NUMBER.findall(text):
        out.update(_forms(number, percent=False))
    return out


def number_forms(text: str) -> set[str]:
    """Every way a number of the text may be restated: as is, rounded to 0-2 decimals, as a percentage.

    ``5118.450000000001`` is also ``5118.45``, ``5118.5`` and ``5118``; ``0.0226`` is
    also ``2.26``, ``2.3`` and ``2`` (per cent).  Used to tell a value an LLM
    restated from one it made up.
    """
    out: set[str] = set()
    for number in _NUMBER.findall(text):
        out.update(_FORMS.get(number) or _forms(number, percent=True))
    return out


def aggregate_forms(values: list[Any], limit: int = 2000) -> set[str]:
    """The sums of the numbers grouped in each list or object of some values, in every restated form.

    A total an LLM states from a table (a row's or a group's sum) then counts
    as restated rather than made up.  JSON-looking strings are parsed; at most
    ``limit`` containers are summed.
    """
    out: set[str] = set()
    budget = [limit]

    def walk(v: Any, depth: int) -> None:
        if depth > 6 or budget[0] <= 0:
            return
        if isinstance(v, str):
            if depth == 0 and looks_like_json(v):
                walk(parse_json(v), depth + 1)
            return
        items = (
            list(v.values()) if isinstance(v, Mapping) else list(v) if isinstance(v, (list, tuple)) else None
        )
        if items is None or is_marker(v):
            return
        budget[0] -= 1
        nums = [float(x) for x in items if isinstance(x, (int, float)) and not isinstance(x, bool)]
        if len(nums) >= 2:
            out.update(number_forms(repr(round(sum(nums), 6))))
        for x in items[:200]:
            walk(x, depth + 1)

    for value in values:
        walk(value, 0)
    return out


def stated_numbers(text: str) -> list[str]:
    """The numbers a text states (normalized), skipping -10..10."""
    return [n for m in _NUMBER.finditer(text) if (n := norm_number(m.group(0))) is not None]


__all__ = [
    "numbers_in",
    "norm_number",
    "plain_number_forms",
    "number_forms",
    "aggregate_forms",
    "stated_numbers",
]
