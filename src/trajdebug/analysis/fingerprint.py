"""Content fingerprints of step values: the atoms the dependency matcher indexes and probes.

A value that flows from one step into another is rarely passed by identity:
prompt assembly, ``json.dumps``, f-strings and parsers turn it into other
text.  What survives is *content*.  This module reduces a JSON value to
hashed "atoms" that survive those transformations:

* **Shingles.**  The value is flattened to a stream of normalized word
  tokens (lowercase, JSON escapes undone, punctuation and whitespace dropped,
  dict keys included in serialization order), so ``json.dumps(x)``,
  ``json.dumps(x, indent=2)``, ``str(x)`` and ``x`` itself give the same
  stream.  Every ``SHINGLE``-token window is hashed; an output keeps only
  the *winnowed* hashes (the minimum of each window of ``WINDOW`` hashes,
  Schleimer, Wilkerson and Aiken, "Winnowing", SIGMOD 2003), which guarantees
  that any shared run of at least ``SHINGLE + WINDOW - 1`` tokens shares a
  fingerprint, while an input keeps all its hashes so that each probe is
  one dictionary lookup.
* **Values.**  Short string leaves (up to ``SHORT_MAX`` tokens; strings that
  hold JSON are parsed, recursively), identifier-like tokens of long texts
  (letters with digits or underscores) and dict keys that hold data (ids) are
  whole-token-sequence atoms; an input finds them at any token position.
* **Numbers.**  Numeric leaves and numbers written in text (``"total:
  1,234.56"``) share one canonical form, so a number parsed out of text
  matches the text it came from.

Each atom has an intrinsic *weight* in [0, 1], how much one match of it says:
long identifiers and many-digit numbers say a lot, short words and small
integers nothing.  How common an atom is across outputs is the index's
business (see `trajdebug.analysis.infer`).

Hashes are stable across processes (token ids come from BLAKE2b, not from the
salted ``hash(str)``), so inference gives the same edges on every run.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import filterfalse
from typing import Any

from trajdebug.model import REPR_KEY, TRUNCATED_KEY


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

Path = tuple[str | int, ...]
"""Where a leaf sits in a value: dict keys and list indexes from the root."""

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
# ("rossi7301", "v2" and "1.2.3" hold no numbers).  The separator before the
# number is consumed rather than looked behind at (twice as fast); the text is
# searched with a space in front.
_NUMBER = re.compile(r"[^\w.](\d+(?:,\d{3})*)(?:\.(\d+))?(?!\w|\.\d)")
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


def token_ids(tokens: list[str]) -> list[int]:
    """Return the stable ids of tokens (cache lookups run in C; only new tokens are hashed)."""
    ids: list[int | None] = list(map(_TOKEN_IDS.get, tokens))
    if None in ids:
        for token in set(tokens).difference(_TOKEN_IDS):
            token_id(token)
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


_VALUE_TAG = 0x5A17_0F_C0DE_D00D
"""XORed into value-atom keys so a 5-token value never shares a key with a shingle."""


def value_key(ids: Sequence[int]) -> int:
    """The atom key of a whole token sequence (a short value or an identifier)."""
    return hash(tuple(ids)) ^ _VALUE_TAG


def kgram_hashes(ids: Sequence[int], k: int = SHINGLE) -> list[int]:
    """Hash every window of ``k`` token ids (the hash of an int tuple is not salted)."""
    if len(ids) < k:
        return []
    return list(map(hash, zip(*(ids[i:] for i in range(k)), strict=False)))


def winnow(hashes: list[int], window: int = WINDOW) -> set[int]:
    """Keep the minimum hash of every window of ``window`` hashes (Schleimer et al. 2003)."""
    if len(hashes) <= window:
        return {min(hashes)} if hashes else set()
    # Sliding minimum by doubling (a sparse table): after the loop, level[i] is the
    # minimum of hashes[i : i + span].  Two overlapping spans then cover each window.
    # Inline comparisons run three times faster than calls to min().
    level, span = hashes, 1
    while span * 2 <= window:
        level = [a if a < b else b for a, b in zip(level, level[span:])]
        span *= 2
    return {a if a < b else b for a, b in zip(level, level[window - span :])}


def _marker_text(value: dict[Any, Any]) -> str | None:
    # A truncated or repr'd value: its text is its content.
    if TRUNCATED_KEY in value:
        head = value.get("head")
        return head if isinstance(head, str) else ""
    if REPR_KEY in value:
        text = value.get(REPR_KEY)
        return text if isinstance(text, str) else ""
    return None


def _walk(value: Any) -> Iterator[tuple[Path, str | None, Any]]:
    """Yield ``(path, key, leaf)`` in serialization order; ``key`` is set when a dict key is entered.

    Iterative, so deeply nested values cannot exhaust the stack.
    """
    stack: list[tuple[Path, str | None, Any]] = [((), None, value)]
    while stack:
        path, key, v = stack.pop()
        if isinstance(v, dict):
            text = _marker_text(v)
            if text is not None:
                yield path, key, text
                continue
            if key is not None:
                yield path, key, _ENTER
            for k, x in reversed(list(v.items())):
                ks = str(k)
                stack.append(((*path, ks), ks, x))
        elif isinstance(v, (list, tuple)):
            if key is not None:
                yield path, key, _ENTER
            for i in range(len(v) - 1, -1, -1):
                stack.append(((*path, i), None, v[i]))
        else:
            yield path, key, v


_ENTER = object()
"""Placeholder leaf: a dict key whose value is a container (the key is emitted, no leaf)."""


def _leaf_text(leaf: Any) -> str | None:
    # The text a scalar serializes to; None for the container placeholder.
    if isinstance(leaf, str):
        return normalize(leaf)
    if leaf is _ENTER:
        return None
    if leaf is None:
        return "null"
    if isinstance(leaf, bool):
        return "true" if leaf else "false"
    if isinstance(leaf, (int, float)):
        return canonical_number(leaf) or ""
    return normalize(str(leaf))


_NUMBER_ATOMS: dict[tuple[str, str], tuple[str, int, float]] = {}


def _number_atom(whole: str, frac: str) -> tuple[str, int, float]:
    # (canonical text, key, weight) of a number written as whole[.frac]; cached,
    # since tool outputs repeat the same prices, ids and counts.
    atom = _NUMBER_ATOMS.get((whole, frac))
    if atom is None:
        if len(_NUMBER_ATOMS) >= _TOKEN_IDS_MAX:
            _NUMBER_ATOMS.clear()
        canon = canonical_number(f"{whole}.{frac}" if frac else whole) or "0"
        atom = _NUMBER_ATOMS[whole, frac] = (canon, number_key(canon), number_weight(canon))
    return atom


def _numbers_in(text: str) -> list[tuple[str, int, float]]:
    # The number atoms written in a text.
    return [_number_atom(w, f) for w, f in _NUMBER.findall(" " + text)]


@dataclass(slots=True)
class OutputPrint:
    """The fingerprint of a step's output: what an index stores for it."""

    shingles: set[int] = field(default_factory=set)
    """Winnowed shingle hashes of the output's token stream."""
    values: dict[int, tuple[float, int, int]] = field(default_factory=dict)
    """Value atoms: key -> (weight, first token id, token count); token count 0 for numbers."""

    def weight(self) -> float:
        """Total weight of the output's atoms (the denominator of coverage)."""
        return len(self.shingles) * SHINGLE_WEIGHT + sum(w for w, _, _ in self.values.values())


def _add_value(values: dict[int, tuple[float, int, int]], tokens: list[str]) -> None:
    if not tokens:
        return
    weight = value_weight(tokens)
    if weight >= MIN_WEIGHT:
        ids = token_ids(tokens)
        values[value_key(ids)] = (weight, ids[0], len(ids))


def _add_numbers(values: dict[int, tuple[float, int, int]], text: str) -> None:
    for _canon, key, weight in _numbers_in(text):
        if weight >= MIN_WEIGHT:
            values[key] = (weight, 0, 0)


def _maybe_json(text: str) -> Any:
    # Parse strings that hold a JSON object or array; anything else is text.
    stripped = text.strip()
    if len(stripped) < 2 or len(stripped) > MAX_JSON_CHARS:
        return None
    if (stripped[0], stripped[-1]) not in (("{", "}"), ("[", "]")):
        return None
    from trajdebug._encode import loads

    try:
        parsed = loads(stripped)
    except ValueError:
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


def _text_atoms(values: dict[int, tuple[float, int, int]], text: str, tokens: list[str]) -> None:
    """Collect the atoms of one normalized string leaf: its numbers, and itself or its identifiers."""
    _add_numbers(values, text)
    if _NUMBER_ONLY.fullmatch(text.strip()):
        return
    if len(tokens) <= SHORT_MAX:
        _add_value(values, tokens)
        if len(tokens) == 1:
            return
    # Identifier-like tokens (letters mixed with digits or underscores) are values
    # of their own: "order #W2378156 shipped" names W2378156.  Filtered in C,
    # since long texts are most of the volume.
    for tok in filterfalse(str.isdigit, filterfalse(str.isalpha, set(tokens))):
        if len(tok) >= 5:
            _add_value(values, [tok])


def _value_atoms(values: dict[int, tuple[float, int, int]], value: Any) -> None:
    """Collect the value and number atoms of a value, parsing JSON held in strings."""
    pending = [value]
    while pending:
        for _path, key, leaf in _walk(pending.pop()):
            if key is not None and any(c.isdigit() for c in key):
                # A dict keyed by data (item ids -> item): the key is content.
                text = normalize(key)
                _text_atoms(values, text, tokenize(text))
            if isinstance(leaf, str):
                parsed = _maybe_json(leaf)
                if parsed is not None:
                    pending.append(parsed)
                else:
                    text = normalize(leaf)
                    _text_atoms(values, text, tokenize(text))
            elif isinstance(leaf, (int, float)) and not isinstance(leaf, bool):
                canon = canonical_number(leaf)
                if canon is not None and number_weight(canon) >= MIN_WEIGHT:
                    values[number_key(canon)] = (number_weight(canon), 0, 0)


def _token_stream(value: Any) -> tuple[list[str], list[int], list[Path]]:
    """Flatten a value to tokens, with the token offset and path of each leaf."""
    if isinstance(value, str):  # the common case: one text
        return tokenize(normalize(value)), [0], [()]
    tokens: list[str] = []
    starts: list[int] = []
    paths: list[Path] = []
    for path, key, leaf in _walk(value):
        if key is not None:
            tokens.extend(tokenize(normalize(key)))
        text = _leaf_text(leaf)
        if text is not None:
            starts.append(len(tokens))
            paths.append(path)
            tokens.extend(tokenize(text))
    return tokens, starts, paths


def fingerprint_output(value: Any) -> OutputPrint:
    """Fingerprint a step's output: winnowed shingles of its token stream plus its value atoms."""
    values: dict[int, tuple[float, int, int]] = {}
    if isinstance(value, str):  # one text (perhaps JSON): tokenize it once
        text = normalize(value)
        tokens = tokenize(text)
        parsed = _maybe_json(value)
        if parsed is None:
            _text_atoms(values, text, tokens)
        else:
            _value_atoms(values, parsed)
    else:
        tokens = _token_stream(value)[0]
        _value_atoms(values, value)
    return OutputPrint(shingles=winnow(kgram_hashes(token_ids(tokens))), values=values)


@dataclass(slots=True)
class InputProbe:
    """A step's input, prepared for probing an index (all shingles, all numbers, leaf paths)."""

    tokens: list[str]
    """The normalized token stream."""
    ids: tuple[int, ...]
    """Token ids, aligned with ``tokens``."""
    hashes: list[int]
    """Every shingle hash; position i covers tokens i .. i + SHINGLE - 1."""
    numbers: dict[int, tuple[str, int]]
    """Number atoms: key -> (canonical text, token position of its leaf)."""
    starts: list[int]
    """Token offset of each leaf."""
    paths: list[Path]
    """Path of each leaf, aligned with ``starts``."""
    _ngrams: dict[int, set[int]] = field(default_factory=dict)

    def value_keys(self, n: int) -> set[int]:
        """The value-atom keys of all ``n``-token sequences of the input (cached)."""
        keys = self._ngrams.get(n)
        if keys is None:
            keys = {h ^ _VALUE_TAG for h in kgram_hashes(self.ids, n)}
            self._ngrams[n] = keys
        return keys

    def path_at(self, position: int) -> Path:
        """The path of the leaf holding the token at ``position``."""
        i = bisect_right(self.starts, position) - 1
        return self.paths[i] if i >= 0 else ()


def probe_input(value: Any) -> InputProbe:
    """Prepare a step's input for matching against earlier outputs."""
    numbers: dict[int, tuple[str, int]] = {}

    def note_numbers(found: list[tuple[str, int, float]], pos: int) -> None:
        for canon, key, weight in found:
            if weight >= MIN_WEIGHT:
                numbers.setdefault(key, (canon, pos))

    tokens: list[str]
    starts: list[int] = []
    paths: list[Path] = []
    if isinstance(value, str):  # the common case: one prompt or one argument
        text = normalize(value)
        tokens = tokenize(text)
        starts.append(0)
        paths.append(())
        note_numbers(_numbers_in(text), 0)
    else:
        tokens = []
        for path, key, leaf in _walk(value):
            if key is not None:
                tokens.extend(tokenize(normalize(key)))
            leaf_text = _leaf_text(leaf)
            if leaf_text is None:
                continue
            starts.append(len(tokens))
            paths.append(path)
            if isinstance(leaf, str):
                note_numbers(_numbers_in(leaf_text), len(tokens))
            elif isinstance(leaf, (int, float)) and not isinstance(leaf, bool) and leaf_text:
                note_numbers([(leaf_text, number_key(leaf_text), number_weight(leaf_text))], len(tokens))
            tokens.extend(tokenize(leaf_text))
    ids = tuple(token_ids(tokens))
    return InputProbe(
        tokens=tokens,
        ids=ids,
        hashes=kgram_hashes(ids),
        numbers=numbers,
        starts=starts,
        paths=paths,
    )


def format_path(path: Path) -> str | None:
    """Render a leaf path as ``messages[3].content`` (None for the root)."""
    if not path:
        return None
    out: list[str] = []
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        else:
            out.append(f".{part}" if out else part)
    return "".join(out)


__all__ = [
    "MIN_WEIGHT",
    "SHINGLE",
    "SHINGLE_WEIGHT",
    "SHORT_MAX",
    "WINDOW",
    "InputProbe",
    "OutputPrint",
    "Path",
    "canonical_number",
    "fingerprint_output",
    "format_path",
    "kgram_hashes",
    "normalize",
    "number_key",
    "number_weight",
    "probe_input",
    "token_id",
    "token_ids",
    "tokenize",
    "value_key",
    "value_weight",
    "winnow",
]
