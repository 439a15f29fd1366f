"""Tokens, numbers and hashed shingles: the text primitives of content fingerprints.

Text is reduced to normalized word tokens (lowercase, JSON escapes undone,
punctuation dropped), each token to a stable integer id (BLAKE2b, so results
do not depend on ``PYTHONHASHSEED``), runs of ``SHINGLE`` tokens to hashes,
and an output's hashes to a winnowed subset (Schleimer, Wilkerson and Aiken,
"Winnowing", SIGMOD 2003).  Numbers get one canonical form whether they are
JSON numbers or written in text.  `trajdebug.analysis.inference._fingerprint` builds
the atoms of whole values from these.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence


SHINGLE = 5
"""Tokens per shingle (a word 5-gram)."""
WINDOW = 6
"""Winnowing window, in shingles: a shared run of ``SHINGLE + WINDOW - 1`` = 10 tokens always shares a
fingerprint, one of 16 tokens two (enough for the default confidence threshold)."""
SHORT_MAX = 12
"""String leaves of at most this many tokens are also indexed whole, as value atoms."""
SHINGLE_WEIGHT = 0.3
"""Weight of one winnowed shingle (one is kept per about 3.5 tokens of running text)."""
MIN_WEIGHT = 0.1
"""Value atoms lighter than this are not indexed at all (``"ok"``, ``"done"``, ``42``)."""
MAX_JSON_CHARS = 1 << 20
"""Strings longer than this are not parsed as JSON (their tokens still count)."""


_TOKEN = re.compile(r"\w+")
# ASCII text tokenizes 4x faster by mapping every non-word character to a space
# and splitting: the same tokens as _TOKEN on ASCII.
_NON_WORD = str.maketrans(
    {c: " " for c in map(chr, range(128)) if not (c.isalnum() or c == "_" or c.isspace())}
)
# JSON and Python escapes (any number of backslashes, for JSON inside JSON):
# \uXXXX becomes its character, the others a separator.
_ESCAPE = re.compile(r"\\+(?:u([0-9a-fA-F]{4})|[nrtbf])?")
# Numbers as written in text: thousands separators allowed, not glued to words
# ("rossi7301", "v2" and "1.2.3" hold no numbers).  The pattern starts with a
# digit so the regex engine skips to the next digit in C; what precedes that
# digit is then looked behind at (neither a word character nor a dot).
_NUMBER = re.compile(r"(\d(?<![\w.]\d)\d*(?:,\d{3})*)(?:\.(\d+))?(?!\w|\.\d)")
_NUMBER_ONLY = re.compile(r"[-+$€£]?\s*(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\s*%?")

_TOKEN_IDS: dict[str, int] = {}
_TOKEN_IDS_MAX = 2_000_000


def token_id(token: str) -> int:
    """Return a stable 63-bit id of a token (cached; the same in every process).

    Tokens of up to 7 bytes are their own id (their bytes as an integer, below
    2**56); longer ones hash with BLAKE2b into [2**62, 2**63), so ids never collide
    across the two ranges.
    """
    tid = _TOKEN_IDS.get(token)
    if tid is None:
        if len(_TOKEN_IDS) >= _TOKEN_IDS_MAX:
            _TOKEN_IDS.clear()  # content-derived ids: dropping the cache changes no result
        data = token.encode("utf-8", "surrogatepass")
        if len(data) <= 7:
            tid = int.from_bytes(data, "big") or 1
        else:
            digest = hashlib.blake2b(data, digest_size=8).digest()
            tid = (int.from_bytes(digest, "big") >> 2) | (1 << 62)
        _TOKEN_IDS[token] = tid
    return tid


def _new_token_ids(tokens: Iterable[str]) -> None:
    # token_id for many new tokens at once (one BLAKE2b object per token is most of the cost).
    if len(_TOKEN_IDS) >= _TOKEN_IDS_MAX:
        _TOKEN_IDS.clear()
    blake2b, from_bytes, cache = hashlib.blake2b, int.from_bytes, _TOKEN_IDS
    for token in tokens:
        data = token.encode("utf-8", "surrogatepass")
        if len(data) <= 7:
            cache[token] = from_bytes(data, "big") or 1
        else:
            cache[token] = (from_bytes(blake2b(data, digest_size=8).digest(), "big") >> 2) | (1 << 62)


def token_ids(tokens: Sequence[str]) -> list[int]:
    """Return the stable ids of tokens (cache lookups run in C; only new tokens are hashed)."""
    ids: list[int | None] = list(map(_TOKEN_IDS.get, tokens))
    if None in ids:
        _new_token_ids(set(tokens).difference(_TOKEN_IDS))
        ids = list(map(_TOKEN_IDS.get, tokens))
        if None in ids:  # the cache was cleared midway: look up one by one
            ids = [token_id(t) for t in tokens]
    return ids  # type: ignore[return-value]


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    return chr(int(code, 16)) if code else " "


def normalize(text: str) -> str:
    """Lowercase a text and undo JSON escapes, so serialized and raw text tokenize alike."""
    if "\\" in text:  # before lowercasing: \u00c9 must become "é", not "É"
        text = _ESCAPE.sub(_unescape, text)
    return text.lower()


def tokenize(text: str) -> list[str]:
    """Split normalized text into word tokens (letters, digits, underscores)."""
    if text.isascii():
        return text.translate(_NON_WORD).split()
    return _TOKEN.findall(text)


def canonical_number(value: int | float | str) -> str | None:
    """Return the canonical text of a number (``1,234.50`` -> ``1234.5``), or None if not finite."""
    if isinstance(value, str):
        whole, _, frac = value.replace(",", "").partition(".")
        frac = frac.rstrip("0")
        whole = whole.lstrip("0") or "0"
        return f"{whole}.{frac}" if frac else whole
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        if value.is_integer() and abs(value) < 1e16:
            return str(abs(int(value)))
        return repr(abs(value))
    return str(abs(value))


def number_weight(canon: str) -> float:
    """Weight of a number, by significant digits; integers coincide more often than decimals.

    ``42`` -> 0, ``19122`` -> 0.15, ``9523456873`` -> 0.9, ``50.88`` -> 0.4, ``1234.56`` -> 0.7.
    """
    mantissa = canon.partition("e")[0]
    if "." in mantissa:
        digits = len(mantissa.replace(".", "").lstrip("0"))
        return round(min(1.0, max(0.0, 0.4 + (digits - 4) * 0.15)), 4) if digits >= 3 else 0.0
    digits = len(mantissa.lstrip("0").rstrip("0"))
    return round(min(1.0, max(0.0, (digits - 4) * 0.15)), 4)


def number_key(canon: str) -> int:
    """The atom key of a canonical number."""
    return token_id("#" + canon)


def value_weight(tokens: list[str]) -> float:
    """Weight of a whole-token-sequence atom: by length, more for ids, less for plain words.

    ``"yusuf_rossi_9620"`` -> 1, ``"763 broadway"`` -> 1, ``"crew neck"`` -> 0.45,
    ``"philadelphia"`` -> 0.3 (one dictionary word never makes an edge on its own), ``"ok"`` -> 0.
    """
    length = sum(map(len, tokens)) + len(tokens) - 1
    weight = min(1.0, max(0.0, (length - 3) / 10))
    joined = "".join(tokens)
    if joined.isalpha():  # words only
        weight = min(0.3, weight * 0.5) if len(tokens) == 1 else weight * 0.75
    elif not joined.isdigit() and any(c.isdigit() for c in joined):
        weight = min(1.0, weight * 1.5)  # letters with digits: an identifier
    return weight


VALUE_TAG = 0x5A17_0F_C0DE_D00D
"""XORed into value-atom keys so a 5-token value never shares a key with a shingle."""


def value_key(ids: Sequence[int]) -> int:
    """The atom key of a whole token sequence (a short value or an identifier)."""
    return hash(tuple(ids)) ^ VALUE_TAG


def kgram_hashes(ids: Sequence[int], k: int = SHINGLE) -> list[int]:
    """Hash every window of ``k`` token ids (the hash of an int tuple is not salted)."""
    if len(ids) < k:
        return []
    return list(map(hash, zip(*(ids[i:] for i in range(k)), strict=False)))


def winnow(hashes: list[int], window: int = WINDOW) -> set[int]:
    """Keep the minimum hash of every window of ``window`` hashes (Schleimer et al. 2003)."""
    if len(hashes) <= window:
        return {min(hashes)} if hashes else set()
    if window == WINDOW:  # 6 = 3 + 3: minima of 3 (inline comparisons), then two of them
        m3 = [
            (a if a < c else c) if a < b else (b if b < c else c)
            for a, b, c in zip(hashes, hashes[1:], hashes[2:])
        ]
        return {a if a < b else b for a, b in zip(m3, m3[3:])}
    # Sliding minimum by doubling (a sparse table): after the loop, level[i] is the
    # minimum of hashes[i : i + span].  Two overlapping spans then cover each window.
    # Inline comparisons run three times faster than calls to min().
    level, span = hashes, 1
    while span * 2 <= window:
        level = [a if a < b else b for a, b in zip(level, level[span:])]
        span *= 2
    return {a if a < b else b for a, b in zip(level, level[window - span :])}
