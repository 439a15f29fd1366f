"""Every English word list and phrase pattern the analysis reads, as data, in one place.

The analysis reads values (numbers, dates, ids) the same in every language; a
few of its rules also read words: a range written "between 5 and 10", a tool
error that blames its input ("not found", "invalid"), a user saying "yes, go
ahead".  Those words live here, in one `Lexicon`, so the language boundary of
the analysis is one module and the count of its phrases is visible
(`Lexicon.count`).  The stages pass `ENGLISH` along (`Options.lexicon`); the
modules that read words take it as a default argument.

No other module under ``trajdebug/analysis`` may compile a pattern of English
words (``tests/test_lexicon.py`` scans for them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields


_NUM = r"(\d[\d,]*(?:\.\d+)?)"


@dataclass(frozen=True, slots=True)
class Lexicon:
    """The words and phrases of one language the analysis reads."""

    range_: re.Pattern[str]
    """A range of numbers in a message ("300-900", "between 5 and 10"): the bounds of a check.
    "From 40 to 400" is a change, not a range."""
    short_stopwords: frozenset[str]
    """Three-letter function words, which the four-letter-and-up stop words leave in."""

    def count(self) -> dict[str, int]:
        """How many phrases each field holds (a pattern counts its top-level alternatives; a set, its words)."""
        out: dict[str, int] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, re.Pattern):
                out[f.name] = _alternatives(v.pattern)
            elif isinstance(v, (frozenset, tuple)):
                out[f.name] = len(v)
        return out


def _alternatives(pattern: str) -> int:
    """The top-level alternatives of a regular expression (``a|b|c`` -> 3; a group counts once)."""
    depth, n, i = 0, 1, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "|" and depth == 0:
            n += 1
        i += 1
    return n


ENGLISH = Lexicon(
    range_=re.compile(
        rf"(?<![\w.-]){_NUM}\s*[-–]\s*{_NUM}(?![\w.]|-\d)|\bbetween\s+{_NUM}\s+and\s+{_NUM}(?![\w.])", re.I
    ),
    short_stopwords=frozenset(
        ["the", "and", "not", "new", "all", "any", "for", "but", "are", "was", "has", "had", "its", "out", "one", "can", "our", "you", "per", "via", "off", "too", "yet", "nor", "own", "who", "why", "how", "may", "did", "got", "let", "use"]
    ),
)
"""The English the analysis reads (the only lexicon today)."""


__all__ = ["ENGLISH", "Lexicon"]
