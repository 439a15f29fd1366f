"""Whether the part of a container's answer that differs from a passing run's made the run fail.

A container given the same request as in a passing run, with every step inside it alike, that answered
otherwise "made the difference" only if that difference is one (a) the failure could have come from and
(b) no run of the agent would differ in anyway.  (a) `Reach`: the failing step, or a step on the failure's
dependency path (its values come from there), was handed the differing value, matched as a whole value (a
request's field equal to it, or a whole token of a text it was handed), or the failure's message names it.
A next node handed the whole state reaches nothing by that alone: the value must be one the failure's path
read.  (b) `run_varying`: what differs only by the run it was made in, judged by its shape: a time (a
date, a time of day, a date-time in any common form), a number near the run's start time read as seconds,
milliseconds, micro- or nanoseconds since the epoch, a number under a field whose name the lexicon marks as
timing (``elapsed_ms``, ``attempt``), a minted id (long hex, or a prefix with a token mixing letters and
digits), the same words in another order (a set joined or printed in the order it iterates), floats equal
but for the order they were summed in.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.analysis.reference._call_keys import asked_of
from trajdebug.core.model import Step


_DATE_LIKE = re.compile(
    r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{8}(?:T\d{4,6}(?:\.\d+)?Z?)?"
    r"|\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|(?:[A-Za-z]{3,9},? )?\d{1,2} [A-Za-z]{3,9} \d{4}(?: \d{1,2}:\d{2}(?::\d{2})?)?(?: [A-Z]{2,4}| [+-]\d{4})?"
)
"""A whole value that is a time: a date, a compact ISO stamp, a time of day, an RFC 1123 (HTTP) date."""
_HEX_ID = re.compile(r"(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,}|[0-9a-f]{16,}", re.IGNORECASE)
_PREFIXED_ID = re.compile(r"[A-Za-z]{1,12}[_\-:](?=\w*[A-Za-z])(?=\w*\d)[A-Za-z0-9]{4,}")
"""A prefix and a token mixing letters and digits (``req_7731ab``), as ids are minted; a catalogue's
``SKU-1001`` (digits only after its prefix) is a value chosen, not minted."""
_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:\-]*[A-Za-z0-9_]|[A-Za-z0-9_]")
_WORD = re.compile(r"\w+")
_FIELD_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
ANSWER = "<answer>"
"""`Reach`'s name for the run's answer, when no step erred: what reaches it reaches the failure."""
_YEARS = 3 * 366 * 86400
"""How near a number must be to the run's start (in seconds) to read as a clock's."""
_EPOCH_FALLBACK = (946_684_800, 4_102_444_800)
"""Seconds from 2000 to 2100: where a clock's reading lies when the run's start was not recorded."""


def epoch_like(value: Any, start_ns: int) -> bool:
    """Whether a number reads as a clock's (seconds, milli-, micro- or nanoseconds since the epoch) near the
    run's start (any time in 2000-2100 when the start was not recorded)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e20:
        return False
    start = start_ns / 1e9
    for scale in (1.0, 1e3, 1e6, 1e9):
        s = value / scale
        if (abs(s - start) <= _YEARS) if start > _EPOCH_FALLBACK[0] else (_EPOCH_FALLBACK[0] <= s <= _EPOCH_FALLBACK[1]):
            return True
    return False


def run_varying(field: str, now: Any, then: Any, start_ns: int, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether two values of one field, a failing run's and a passing run's, differ only as every run would."""
    if isinstance(now, str) and isinstance(then, str):
        a, b = now.strip(), then.strip()
        if all(_DATE_LIKE.fullmatch(x) for x in (a, b)):
            return True
        if all(_HEX_ID.fullmatch(x) for x in (a, b)) or all(_PREFIXED_ID.fullmatch(x) for x in (a, b)):
            return True
        return sorted(_WORD.findall(a)) == sorted(_WORD.findall(b))
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (now, then)):
        return False
    words = {w.lower() for w in _FIELD_WORDS.findall(field)}
    if words & lexicon.timing_words or all(epoch_like(x, start_ns) for x in (now, then)):
        return True
    try:
        return (isinstance(now, float) or isinstance(then, float)) and math.isclose(now, then, rel_tol=1e-9, abs_tol=1e-12)
    except OverflowError:  # an int past a float's range
        return False


def _tiny(value: Any) -> bool:
    """A value too common to follow by itself (a flag, a null, one digit, one or two characters)."""
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        return abs(value) < 10
    if isinstance(value, float):
        return abs(value) < 10 and value.is_integer()
    return len(str(value).strip()) < 3


def _key(value: Any) -> str:
    """A scalar as an index key: numbers by value (5 and 5.0 alike), text as it is."""
    if isinstance(value, bool) or value is None:
        return f"b:{value}"
    if isinstance(value, (int, float)):
        # An int past a float's range keys as itself (a count of digits: no text of 4,300 of them is made).
        return f"n:{float(value)!r}" if abs(value) < 1e300 else f"n:{type(value).__name__}{value.bit_length() if isinstance(value, int) else ''}"
    return f"s:{value}"


def _number_key(token: str) -> str | None:
    try:
        return f"n:{float(token)!r}"
    except (ValueError, OverflowError):
        return None


def leaves(value: Any, field: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """A value's scalars with the field each sits under (a list's entries under the list's field)."""
    if depth > 64:
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from leaves(v, str(k), depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from leaves(v, field, depth + 1)
    else:
        yield field, value


@dataclass(slots=True)
class Reach:
    """A failing run's failure and the values its dependency path was handed, indexed once per run."""

    start_ns: int
    """When the run started (its earliest step): clock readings lie near it."""
    messages: tuple[str, ...]
    whole: dict[str, list[str]]
    """A scalar (`_key`) handed to a step on the failure's path -> those steps."""
    named: dict[tuple[str, str], list[str]]
    """(field, scalar) -> steps: a tiny value counts only under its own field."""
    tokens: dict[str, list[str]]
    """A whole token of a text handed to a step on the path (numbers also by value) -> those steps."""

    @staticmethod
    def of(steps: Mapping[str, Step]) -> Reach:
        """The failure (the steps that erred; else the run's last step) and its dependency path: every
        step its values came from, through recorded and inferred edges."""
        failing = [s for s in steps.values() if s.status == "error"] or list(steps.values())[-1:]
        seen = {s.step_id for s in failing}
        todo = list(seen)
        while todo:
            s = steps.get(todo.pop())
            for d in s.deps if s is not None else ():
                if d.step_id in steps and d.step_id not in seen:
                    seen.add(d.step_id)
                    todo.append(d.step_id)
        out = Reach(min((s.start_ns for s in steps.values()), default=0), tuple(s.error.message for s in failing if s.error is not None and s.error.message), {}, {}, {})
        handed: list[tuple[str, Any]] = [(sid, asked_of(steps[sid], steps)) for sid in seen]
        if not any(s.status == "error" for s in failing):
            # No step erred: the failure is the run's answer (its last step's, its last top-level step's).
            tops = [s for s in steps.values() if s.parent_id is None or s.parent_id not in steps]
            handed += [(ANSWER, s.output) for s in {id(x): x for x in failing + tops[-1:]}.values()]
        for sid, asked in handed:
            for field, v in leaves(asked):
                k = _key(v)
                out.whole.setdefault(k, []).append(sid)
                out.named.setdefault((field, k), []).append(sid)
                for t in _TOKEN.findall(v) if isinstance(v, str) else ():
                    out.tokens.setdefault(t, []).append(sid)
                    n = _number_key(t)
                    if n is not None:
                        out.tokens.setdefault(n, []).append(sid)
        return out

    def handed(self, field: str, value: Any) -> list[str]:
        """The steps on the failure's path handed ``value`` (of ``field``) whole: as a field's value, or as a
        whole token of a text (never a tiny value inside a text, never a substring of a token)."""
        k = _key(value)
        if _tiny(value):
            return self.named.get((field, k), [])
        found = list(self.whole.get(k, []))
        if isinstance(value, str):
            toks = _TOKEN.findall(value)
            if len(toks) == 1 and toks[0] == value.strip():
                found += self.tokens.get(toks[0], [])
        elif isinstance(value, (int, float)):
            found += self.tokens.get(k, [])
        return found

    def named_by_failure(self, value: Any) -> bool:
        """Whether the failure's message names the value as a whole token (never a tiny value)."""
        if _tiny(value):
            return False
        text = value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value)
        pattern = re.compile(r"(?<![\w.])" + re.escape(text.strip()) + r"(?![\w]|\.\d)")
        return any(pattern.search(m) for m in self.messages)


__all__ = ["ANSWER", "Reach", "epoch_like", "leaves", "run_varying"]
