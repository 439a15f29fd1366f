"""What a number in a failure's message states: a value of the world, a bound, or a piece of a longer token.

`lineage:contradicted` reads a failure's number beside the words of a field some
step introduced with another value as the true value of that field ("has **2**
paid days left" where a lookup said ``paid_days_left=7``).  Three kinds of number
in a message state no such value:

- **a bound** the run broke ("exceeds the deferment limit of **2500.00**",
  "loan-to-value above **80%**", "over the **$3,200** ceiling"): the check's
  limit, which says nothing of what the quantity is;
- **an item's label** ("**day 1**: release 0.0 ...", "**day 1** release" where a lookup said
  ``days=10``): which item the clause is about, not a count of them;
- **a piece of a longer token** joined to other digits without a space (the year
  of ``2024-03``, a part of ``10/12``): a month, a range or a code, not a
  quantity;
- **a status code** opening the message or the clause after a service's name
  ("print queue: **422** job rejected", "**409** Conflict: ..."): the
  answer's HTTP status, not a quantity the words after it describe.

A limit still contradicts a field named for it: "below the minimum due
**35.00**" where a lookup said ``minimum_due=0.35``.

These are read off the message's shape and the lexicon's words of comparison
(`trajdebug.analysis.lexicon.Lexicon.bound_words`), never off a field or a value
of one agent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.mentions import Mention, mentions


BEFORE_WORDS = 3
"""How many words before a number may name it as a bound ("the deferment limit of 2500")."""

_WORD = re.compile(r"[a-z]+")
_JOINED = "-/"
"""Characters that join digits into one token with no space (``2024-03``, ``10/12``)."""


def _words_before(message: str, m: Mention) -> list[str]:
    """The last words before a number, in its clause (a colon, a semicolon or a parenthesis ends one)."""
    head = message[: m.start].lower()
    for stop in ":;(":
        head = head.rsplit(stop, 1)[-1]
    return _WORD.findall(head)[-BEFORE_WORDS:]


def _word_after(message: str, m: Mention) -> str | None:
    """The first word after a number and its unit ("the $3,200 **ceiling**", "30 kg **maximum**")."""
    tail = message[m.end :].lower()
    if m.unit and tail.lstrip().startswith(m.unit):
        tail = tail.lstrip()[len(m.unit) :]
    found = _WORD.match(tail.lstrip())
    return found.group(0) if found else None


def bound_word(message: str, m: Mention, lexicon: Lexicon = ENGLISH) -> str | None:
    """The word that makes the number a limit ("above 80%", "the limit of 2500", "a 500 cap"), if any."""
    before = [w for w in _words_before(message, m) if w in lexicon.bound_words]
    if before:
        return before[-1]
    after = _word_after(message, m)
    return after if after is not None and after in lexicon.bound_nouns else None


def is_piece(message: str, m: Mention) -> bool:
    """True when the number is joined to other digits without a space (``2024-03``, ``10/12``)."""
    before = message[m.start - 2 : m.start] if m.start >= 2 else ""
    after = message[m.end : m.end + 2]
    return (len(before) == 2 and before[1] in _JOINED and before[0].isdigit()) or (
        len(after) == 2 and after[0] in _JOINED and after[1].isdigit()
    )


_STATUS = re.compile(r"[45]\d\d")
"""An HTTP client or server error status's shape (4xx, 5xx)."""
HTTP_ERRORS = frozenset([*range(400, 419), *range(421, 427), 428, 429, 431, 451, *range(500, 509), 510, 511])
"""The error statuses HTTP defines (RFC 9110 and its registry): a number of that shape outside them ("Rejected:
480 guests") is a quantity, not a status."""


def is_status(message: str, m: Mention) -> bool:
    """True when the number is an HTTP error status heading the message or the clause after a colon (a
    service's name, an exception's type: ``courier: 422 no service``), followed by words: the words after
    it say what the status means, they name no quantity of it."""
    # (No test of `Mention.unit`: the reader takes any word after a number for its unit, "422 self-service".)
    if _STATUS.fullmatch(m.raw.strip()) is None or int(m.raw.strip()) not in HTTP_ERRORS:
        return False
    head = message[: m.start].rstrip(" ")
    if head and not head.endswith(":"):
        return False
    tail = message[m.end :]
    return tail[:1] == " " and tail[1:2].isalpha()


def is_label(message: str, m: Mention, field_words: Sequence[str] = (), lexicon: Lexicon = ENGLISH) -> bool:
    """True when the number labels the item a clause is about, not how many there are: one word, the number
    and a colon at the head of the message or of a clause ("**day 1**: release 0.0 ...", "line 3: ..."), or
    the singular of a field counted in the plural right before it ("**day 1** release" against ``days=10``,
    where a count is written "10 days")."""
    head = message[: m.start]
    words = _WORD.findall(head.lower()[-40:])
    last = head[-1:].isspace() and bool(words) and head.lower().rstrip().endswith(words[-1])
    if last and any(f != words[-1] and lexicon.singular(f) == words[-1] for f in field_words):
        return True
    if m.unit or message[m.end :].lstrip()[:1] != ":":
        return False
    for stop in ".;\n":
        head = head.rsplit(stop, 1)[-1]
    return len(head.split()) == 1 and _WORD.fullmatch(head.strip().lower()) is not None


def states_no_value(message: str, m: Mention, field_words: Sequence[str], lexicon: Lexicon = ENGLISH) -> bool:
    """True when a failure's number is no value a field of these words could have got wrong: a piece of a
    longer token, an item's label, or a limit the run broke, unless the field is named for that limit
    (``minimum_due`` is contradicted by "the minimum due 35.00")."""
    if is_piece(message, m) or is_status(message, m) or is_label(message, m, field_words, lexicon):
        return True
    word = bound_word(message, m, lexicon)
    return word is not None and word not in field_words and lexicon.singular(word) not in field_words


def stated_limits(message: str, lexicon: Lexicon = ENGLISH) -> set[float]:
    """The numbers a failure's message states as limits the run broke (the check's own, not the run's)."""
    return {m.value for m in mentions(message, words=False) if bound_word(message, m, lexicon) is not None}


_CLAUSE_END = re.compile(r"[:;(]|\.(?!\d)")
"""What ends a clause after a number: a colon, a semicolon, a parenthesis, a full stop (not a decimal point)."""


def _words_after(message: str, m: Mention, count: int = BEFORE_WORDS) -> list[str]:
    """The first ``count`` words after a number and its unit, in its clause (a colon, a semicolon, a
    parenthesis or a full stop ends one)."""
    words = _WORD.findall(_CLAUSE_END.split(message[m.end :].lower(), maxsplit=1)[0])
    if m.unit and words and words[0] == m.unit.lower():
        words = words[1:]
    return words[:count]


def checked_values(message: str, lexicon: Lexicon = ENGLISH) -> set[float]:
    """The numbers a failure's message holds against a limit ("is **122** days, above the 30-day maximum",
    "total **4500** exceeds the limit"): a word of comparison follows them in their clause, which names what
    they are compared with a limit (`bound_nouns`), and none makes them the limit.  The check rejected them:
    they are the run's, not what it waited for.  Two quantities compared ("45 guests exceed the 40 portions
    planned") do not say which one the run got wrong: the 45 may be the one it should have kept."""
    return {
        m.value
        for m in mentions(message, words=False)
        if bound_word(message, m, lexicon) is None
        and any(w in lexicon.bound_words for w in _words_after(message, m))
        and any(w in lexicon.bound_nouns for w in _words_after(message, m, 12))
    }


__all__ = [
    "HTTP_ERRORS",
    "bound_word",
    "checked_values",
    "is_label",
    "is_piece",
    "is_status",
    "stated_limits",
    "states_no_value",
]
