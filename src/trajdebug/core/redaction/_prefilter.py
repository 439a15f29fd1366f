"""The prefilter: single-character and digit tests that tell a string clean for certain before any rule runs."""

from __future__ import annotations

import bisect
import itertools


# The prefilter.  A string is scanned by the rules only when it may hold a match,
# and that test has to cost next to nothing on the ordinary text an agent records.
# Python's regular expressions scan a few nanoseconds per character and try every
# alternative at every candidate position, and ordinary English is full of the
# words a naive hint list holds ("key", "token", "pass"), so the test is built
# from single-character searches instead (``c in s`` is one ``memchr``): every
# match of every rule holds one of a few characters that are rare in prose
# (`Rule.needs`: ``-`` in ``sk-``, ``_`` in ``ghp_``, ``J`` in ``eyJ``, ``A`` in
# ``AKIA``, ``:`` or ``=`` in an assignment, ``@`` in URL credentials), or the
# word ``bearer`` or ``basic`` (in any case), or at least 13 digits (a card).  A
# string with none of them is clean for certain.  A string with some of them is
# scanned only by the rules whose own literals it holds (`Rule.gate`,
# `Rule.lower_gate`); the assignment rule, whose words are ordinary English,
# first checks that one of its words stands right before a ``:`` or ``=``.
RARE = "-_:=JA"
"""The characters one of which a match of a value rule holds, unless it is a bearer or Basic credential or a
card number (``@`` joins them when e-mail redaction is on)."""

_NOT_DIGITS = bytes(b for b in range(256) if not 48 <= b <= 57)

# Case-insensitive matching in `re` equates these with ASCII letters ("\u017f" with "s",
# "\u212a" with "k", dotted and dotless "i" with "i"), which ``str.lower`` does not.
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})

_ASSIGNED_WORDS = (
    "password", "passwd", "pwd", "passphrase", "secret", "token", "key", "dsn", "credential", "credentials",
)
"""The last word of every keyword of the assignment rule (``api_key``, ``client-secret`` end in one)."""

_MAX_SEPARATORS = 16
"""Past this many ``:`` and ``=``, the assignment rule's words are not looked up one by one (it just runs)."""


def _lowered(s: str) -> str:
    """``s`` lowercased as `re` compares it case-insensitively."""
    return s.lower() if s.isascii() else s.translate(_FOLD).lower()


_MEMO_CHARS = 1 << 22
"""The memo of tested strings is dropped when it holds this many characters (a few MB)."""

_HEAD_MIN = 256
"""Snapshots shorter than this are split whole: comparing them with earlier ones would save little."""
_HEADS = 4
"""How many clean snapshots' heads are remembered (a step's input and output, and those of a step or two
beside it)."""

_RUN_TABLE = bytes(ord("d") if 48 <= b <= 57 else 0 if b == 0 else ord("x") for b in range(256))
_RUN = b"d" * 13


def _digit_run(s: str) -> bool:
    """Whether ``s`` may hold a card number: 13 digits in a row once every space and dash is taken out
    (a card number is 13 to 19 digits, each followed by at most one space or dash).  One translation
    and one ``memmem``, not the card pattern tried at every digit."""
    return _RUN in s.encode("utf-8", "surrogatepass").translate(_RUN_TABLE, b" -")


def _digit_count(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass").translate(None, _NOT_DIGITS))


def _has_13_digits(s: str) -> bool:
    """Whether ``s`` may hold a card number: at least 13 ASCII digits, one of them a 2, 3, 4, 5 or 6 (every
    issuer's number starts with one of those, `_CARD_BRANDS`)."""
    if not ("4" in s or "5" in s or "3" in s or "6" in s or "2" in s):
        return False
    return _digit_count(s) >= 13


def _words_before_separator(low: str) -> bool:
    """Whether an assignment keyword stands right before a ``:`` or ``=`` (the rule's own condition:
    the word, an optional quote, optional spaces, the separator), in lowercased text."""
    seen = 0
    for sep in ":=":
        i = low.find(sep)
        while i >= 0:
            seen += 1
            if seen > _MAX_SEPARATORS:
                return True
            j = i
            if j and low[j - 1].isspace():
                j = len(low[:j].rstrip())
            if j and low[j - 1] in "'\"":
                j -= 1
            if low.endswith(_ASSIGNED_WORDS, 0, j):
                return True
            i = low.find(sep, i + 1)
    return False


def _assigned_word_before_separator(low: str) -> bool:
    """`_words_before_separator` for text of any length (JSON text has a ``:`` after every key): each
    occurrence of an assignment word is looked at, whether a separator follows it as the rule requires
    (a word boundary, an optional quote, optional spaces, ``:`` or ``=``)."""
    n = len(low)
    for w in _ASSIGNED_WORDS:
        i = low.find(w)
        while i >= 0:
            j = i + len(w)
            if j < n and not (low[j].isalnum() or low[j] == "_"):
                if low[j] in "'\"":
                    j += 1
                while j < n and low[j].isspace():
                    j += 1
                if j < n and low[j] in ":=":
                    return True
            i = low.find(w, i + 1)
    return False


_LONG = 64
"""Strings longer than this are tested as keys only where they are keys (`Redactor.clean_strings`)."""


def _swapped(encoded: bytes) -> bytes:
    """orjson's text with its escaped backslashes, then its escaped quotes, made bytes orjson never writes
    (it escapes control characters), so that splitting it at its quotes yields its strings exactly."""
    if b'\\"' in encoded:
        return encoded.replace(b"\\\\", b"\x01\x01").replace(b'\\"', b"\x02\x02")
    return encoded


def _swap_all(encoded: bytes) -> bytes:
    """`_swapped` done whether or not this text holds an escaped quote (to match a text that did)."""
    return encoded.replace(b"\\\\", b"\x01\x01").replace(b'\\"', b"\x02\x02")


def _holding(text: bytes, ends: list[int], quoted: list[bytes]) -> list[bool]:
    """For each part of ``text`` (ending at ``ends``, in order), whether one of ``quoted`` is in it (whole
    within the part): each found by a search of the whole text, not of every part in turn."""
    held = [False] * len(ends)
    for q in quoted:
        i = text.find(q)
        while i >= 0:
            k = bisect.bisect_right(ends, i)
            if i + len(q) <= ends[k]:
                held[k] = True
                i = text.find(q, ends[k])  # this part holds one: on to the next part
            else:  # across two parts: in neither
                i = text.find(q, i + 1)
    return held


def _swap_escapes(joined: bytes) -> bytes:
    """`_swap_all` of a text that holds an escaped quote, else the text as it is (`Redactor.clean_lines`).

    Every escape starts with a backslash, and the records of a run hold few (a traceback's, a JSON text
    kept as a string): only the stretch from the first backslash to the last is searched and swapped, in
    place of two passes over the whole text stopping at each of its quotes.  The swap of that stretch is
    the swap of the whole, as no pattern matches outside it."""
    i = joined.find(b"\\")
    if i < 0:
        return joined
    j = joined.rfind(b"\\") + 2
    mid = joined[i:j]
    if b'\\"' not in mid:
        return joined
    return joined[:i] + _swap_all(mid) + joined[j:]


def _decoded(token: bytes) -> str:
    """A string as split from orjson's text at its quotes (escaped backslashes and quotes swapped for
    ``\\x01\\x01`` and ``\\x02\\x02``, `Redactor.clean_encoded`), decoded."""
    if b"\\" in token or b"\x01" in token or b"\x02" in token:
        from trajdebug.core.codec import loads

        s: str = loads(b'"' + token.replace(b"\x01\x01", b"\\\\").replace(b"\x02\x02", b'\\"') + b'"')
        return s
    return token.decode("utf-8", "surrogatepass")


def _decoded_all(tokens: list[bytes]) -> list[str]:
    """`_decoded` of each token: joined and decoded at once when none holds an escape (one call in C)."""
    joined = b"\x00".join(tokens)
    if b"\\" not in joined and b"\x01" not in joined and b"\x02" not in joined:
        out = joined.decode("utf-8", "surrogatepass").split("\x00")
        if len(out) == len(tokens):  # orjson writes a NUL escaped: a raw one (not from orjson) splits a token
            return out
    return [_decoded(t) for t in tokens]


def _unflagged(at: bool) -> bytes:
    """The bytes `_value_suspects` deletes: all but the NUL between strings, `RARE` (and ``@`` when e-mail
    redaction is on), what an escape holds (a backslash, the bytes `_swapped` writes) and every byte of a
    character outside ASCII (whose case folding `may_hold` does as `re` does)."""
    kept = set((RARE + ("@" if at else "")).encode()) | {0, 1, 2, ord("\\")} | set(range(128, 256))
    return bytes(b for b in range(256) if b not in kept)


_UNFLAGGED = (_unflagged(False), _unflagged(True))
_NOT_DIGITS_NUL = bytes(b for b in range(256) if not (48 <= b <= 57 or b == 0))
_AT_LEAST_13 = (12).__lt__
_NOT_ESCAPE_NUL = bytes(b for b in range(256) if not (b in (0, 1, 2, 92) or b >= 128))


Gates = tuple[tuple[bytes, ...], tuple[bytes, ...]]
"""A policy's value rules' literals, as they are (`Rule.gate`) and lowercased (`Rule.lower_gate`)."""


def _value_suspects(tokens: list[bytes], at: bool, gates: Gates | None) -> list[int] | None:
    """Which of these strings (as split from orjson's text by `Redactor.clean_lines`) a value rule may match
    in, by their indices, told for them all by passes over their bytes; None: each is to be asked.

    The strings are joined with NULs (orjson writes a NUL escaped).  First what `may_hold` tests: the joined
    bytes translated once with the characters that matter kept (`RARE`, escapes, bytes outside ASCII), in
    C (a string whose part of the result is empty holds none of them); 13 digits; ``bearer`` and ``basic``
    in the lowercased whole.  Then, of those strings only, what `_value_rules_hit` tests before a pattern
    (`_gated`): each rule's literals.  A superset of the strings the rules find a secret in: they run on
    these only (`Redactor._unclean`).  ``gates`` None: a rule has no literal (the second pass is skipped)."""
    joined = b"\x00".join(tokens)
    if joined.count(b"\x00") != len(tokens) - 1:  # a raw NUL (not orjson's text): one by one
        return None
    n = range(len(tokens))
    found = set(itertools.compress(n, joined.translate(None, _UNFLAGGED[at]).split(b"\x00")))
    digits = joined.translate(None, _NOT_DIGITS_NUL).split(b"\x00")
    found.update(itertools.compress(n, map(_AT_LEAST_13, map(len, digits))))
    low = joined.lower()
    if b"bearer" in low or b"basic" in low:
        found.update(_finds(low, [len(t) + 1 for t in tokens], (b"bearer", b"basic")))
    if not found:
        return []
    ids = sorted(found)
    if gates is None:
        return ids
    return [ids[k] for k in _gated([tokens[i] for i in ids], gates)]


def _finds(joined: bytes, sizes: list[int], words: tuple[bytes, ...]) -> set[int]:
    """The indices of the parts of ``joined`` (of these sizes, each with its separator) holding one of these
    words (a word holds no separator, so no find spans two parts)."""
    ends = list(itertools.accumulate(sizes))
    found: set[int] = set()
    for word in words:
        i = joined.find(word)
        while i >= 0:
            k = bisect.bisect_right(ends, i)
            found.add(k)
            i = joined.find(word, ends[k])  # this part holds it: on to the next
    return found


def _gated(tokens: list[bytes], gates: Gates) -> list[int]:
    """Which of these strings hold a literal of a rule that may then run (``gates``: the policy's rules'
    literals as they are and lowercased, `Rule.gate`, `Rule.lower_gate`), 13 digits in a row (spaces and
    dashes aside: a card number, `_digit_run`), an escape or a character outside ASCII (asked one by one)."""
    joined = b"\x00".join(tokens)
    sizes = [len(t) + 1 for t in tokens]
    found = set(itertools.compress(range(len(tokens)), joined.translate(None, _NOT_ESCAPE_NUL).split(b"\x00")))
    found |= _finds(joined, sizes, gates[0]) | _finds(joined.lower(), sizes, gates[1])
    runs = joined.translate(_RUN_TABLE, b" -")
    k = start = 0
    i = runs.find(_RUN)
    while i >= 0:
        k += runs.count(b"\x00", start, i)  # counted from the last find on, not from the start each time
        found.add(k)
        start = runs.find(b"\x00", i)  # on to the next string
        i = -1 if start < 0 else runs.find(_RUN, start)
    return sorted(found)
