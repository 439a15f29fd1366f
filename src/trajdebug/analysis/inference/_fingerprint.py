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
business (see `trajdebug.analysis.inference._infer`).

Hashes are stable across processes (token ids come from BLAKE2b, not from the
salted ``hash(str)``), so inference gives the same edges on every run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import filterfalse, repeat
from typing import Any, Generic, TypeVar

from trajdebug.analysis import _content as content
from trajdebug.analysis.inference._tokens import (
    _NUMBER,
    _NUMBER_ONLY,
    _TOKEN_IDS_MAX,
    MAX_JSON_CHARS,
    MIN_WEIGHT,
    SHINGLE,
    SHINGLE_WEIGHT,
    SHORT_MAX,
    VALUE_TAG,
    WINDOW,
    canonical_number,
    kgram_hashes,
    normalize,
    number_key,
    number_weight,
    token_id,
    token_ids,
    tokenize,
    value_key,
    value_weight,
    winnow,
)
from trajdebug.core.model import REPR_KEY, TRUNCATED_KEY
from trajdebug.core.values import is_mapping


Path = tuple[str | int, ...]
"""Where a leaf sits in a value: dict keys and list indexes from the root."""


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


def _numbers_in(text: str, tokens: Iterable[str] | None = None) -> list[tuple[str, int, float]]:
    """The number atoms written in a text.

    ``tokens``, the text's tokens if known, let texts without numbers skip the regex
    search: the first digit run of a number is a whole token of digits.
    """
    if tokens is not None and not any(map(str.isdigit, tokens)):
        return []
    cache = _NUMBER_ATOMS
    return [cache.get(m) or _number_atom(*m) for m in _NUMBER.findall(text)]


@dataclass(slots=True)
class OutputPrint:
    """The fingerprint of a step's output: what an index stores for it."""

    shingles: set[int] = field(default_factory=set)
    """Winnowed shingle hashes of the output's token stream."""
    values: dict[int, tuple[float, int, int]] = field(default_factory=dict)
    """Value atoms: key -> (weight, first token id, token count); token count 0 for numbers."""
    unlisted: float = 0.0
    """Weight of value atoms left out of ``values`` because no known input can hold them (see
    `fingerprint_output`); they still count in the output's weight."""

    def weight(self) -> float:
        """Total weight of the output's atoms (the denominator of coverage)."""
        return (
            len(self.shingles) * SHINGLE_WEIGHT + sum(w for w, _, _ in self.values.values()) + self.unlisted
        )


@dataclass(slots=True)
class _Atoms:
    """The value atoms of an output being collected."""

    values: dict[int, tuple[float, int, int]]
    relevant: set[str] | frozenset[str] | None
    """Tokens of the inputs to be matched, if known: a value atom whose first token is not
    one of them can never be found, so only its weight is kept."""
    unlisted: dict[str | tuple[str, ...], float] = field(default_factory=dict)
    """Weights of the atoms left out, by their tokens (a value counts once, like a key of ``values``)."""


def _add_value(atoms: _Atoms, tokens: list[str]) -> None:
    if not tokens:
        return
    weight = value_weight(tokens)
    if weight >= MIN_WEIGHT:
        if atoms.relevant is not None and tokens[0] not in atoms.relevant:
            atoms.unlisted[tokens[0] if len(tokens) == 1 else tuple(tokens)] = weight
            return
        ids = token_ids(tokens)
        atoms.values[value_key(ids)] = (weight, ids[0], len(ids))


class _IdentWeights(dict[int, float]):
    """Weight of an identifier that holds a digit, by its length in characters (filled on demand)."""

    def __missing__(self, length: int) -> float:
        weight = self[length] = value_weight(["a" * (length - 1) + "1"])
        return weight


_IDENT_WEIGHTS = _IdentWeights()


def _add_identifiers(atoms: _Atoms, idents: list[str]) -> None:
    """Add one-token value atoms for identifier-like tokens (neither all letters nor all digits).

    The same atoms as ``_add_value(atoms, [tok])`` for each, in bulk: most of the atoms of id-heavy outputs.
    """
    joined = "".join(idents)
    if joined.isascii() and "_" not in joined:
        # Lowercase ASCII, not all letters or digits, no underscore: each holds a digit,
        # so its weight depends on its length only (at least 0.3: all are indexed).
        if atoms.relevant is not None:
            listed = atoms.relevant.intersection(idents)
            if len(listed) < len(idents):
                # In token order: read off the sets, atoms (and float sums) would follow the hash seed.
                unlisted = [t for t in idents if t not in listed]
                atoms.unlisted.update(zip(unlisted, map(_IDENT_WEIGHTS.__getitem__, map(len, unlisted))))
                idents = [t for t in idents if t in listed]
        ids = token_ids(idents)
        keys = [h ^ VALUE_TAG for h in map(hash, zip(ids))]
        weights = map(_IDENT_WEIGHTS.__getitem__, map(len, idents))
        atoms.values.update(zip(keys, zip(weights, ids, repeat(1))))
        return
    for tok in idents:
        _add_value(atoms, [tok])


def _add_numbers(atoms: _Atoms, found: list[tuple[str, int, float]]) -> None:
    for _canon, key, weight in found:
        if weight >= MIN_WEIGHT:
            atoms.values[key] = (weight, 0, 0)


def _maybe_json(text: str) -> Any:
    # Parse strings that hold a JSON object or array; anything else is text.
    stripped = text.strip()
    if len(stripped) < 2 or len(stripped) > MAX_JSON_CHARS:
        return None
    if (stripped[0], stripped[-1]) not in (("{", "}"), ("[", "]")):
        return None
    from trajdebug.core.codec import loads

    try:
        parsed = loads(stripped)
    except ValueError:
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


def _text_atoms(atoms: _Atoms, text: str, tokens: list[str]) -> None:
    """Collect the atoms of one normalized string leaf: its numbers, and itself or its identifiers."""
    # Tokens that are not all letters: numbers and identifiers are among them
    # (filtered in C, since long texts are most of the volume).
    other = list(filterfalse(str.isalpha, set(tokens)))
    if other and any(map(str.isdigit, other)):  # a number's first digit run is a token of digits
        _add_numbers(atoms, _numbers_in(text))
        if _NUMBER_ONLY.fullmatch(text.strip()):
            return
    if len(tokens) <= SHORT_MAX:
        _add_value(atoms, tokens)
        if len(tokens) == 1:
            return
    # Identifier-like tokens (letters mixed with digits or underscores) are values
    # of their own: "order #W2378156 shipped" names W2378156.
    idents = [tok for tok in other if len(tok) >= 5 and not tok.isdigit()]
    if idents:
        _add_identifiers(atoms, idents)


def _has_digit(key: str) -> bool:
    return not key.isalpha() and any(c.isdigit() for c in key)


def _leaves(value: Any) -> Iterator[tuple[str | None, Any]]:
    """`_walk` without the paths (outputs need none): ``(key, leaf)`` in serialization order."""
    stack: list[tuple[str | None, Any]] = [(None, value)]
    while stack:
        key, v = stack.pop()
        if isinstance(v, dict):
            text = _marker_text(v)
            if text is not None:
                yield key, text
                continue
            if key is not None:
                yield key, _ENTER
            stack.extend([(str(k), x) for k, x in reversed(v.items())])
        elif isinstance(v, (list, tuple)):
            if key is not None:
                yield key, _ENTER
            stack.extend([(None, x) for x in reversed(v)])
        else:
            yield key, v


def _value_atoms(atoms: _Atoms, value: Any, tokens: list[str] | None) -> None:
    """Collect the value and number atoms of a value, parsing JSON held in strings.

    With ``tokens``, also append the token stream of ``value`` itself (not of the JSON
    parsed out of its strings): one walk for both.
    """
    pending = [value]
    stream = tokens
    while pending:
        for key, leaf in _leaves(pending.pop()):
            if key is not None:
                ktext = normalize(key)
                ktokens = tokenize(ktext)
                if stream is not None:
                    stream.extend(ktokens)
                if _has_digit(key):
                    # A dict keyed by data (item ids -> item): the key is content.
                    _text_atoms(atoms, ktext, ktokens)
            if isinstance(leaf, str):
                text = normalize(leaf)
                ltokens = tokenize(text)
                if stream is not None:
                    stream.extend(ltokens)
                parsed = _maybe_json(leaf)
                if parsed is not None:
                    pending.append(parsed)
                else:
                    _text_atoms(atoms, text, ltokens)
            elif leaf is _ENTER:
                continue
            elif isinstance(leaf, (int, float)) and not isinstance(leaf, bool):
                canon = canonical_number(leaf)
                if stream is not None:
                    stream.extend(tokenize(canon or ""))
                if canon is not None and number_weight(canon) >= MIN_WEIGHT:
                    atoms.values[number_key(canon)] = (number_weight(canon), 0, 0)
            elif stream is not None:
                leaf_text = _leaf_text(leaf)
                if leaf_text:
                    stream.extend(tokenize(leaf_text))
        stream = None  # JSON parsed out of strings adds values, not tokens


def fingerprint_output(value: Any, *, relevant: set[str] | frozenset[str] | None = None) -> OutputPrint:
    """Fingerprint a step's output: winnowed shingles of its token stream plus its value atoms.

    Args:
        value: the output.
        relevant: the tokens of all the inputs it will be matched against, if known: value
            atoms that start with another token are left out of ``values`` (their weight is
            kept in ``unlisted``).  Id-heavy outputs hold hundreds of identifiers that no
            input mentions.
    """
    atoms = _Atoms({}, relevant)
    tokens: list[str]
    if isinstance(value, str):  # one text (perhaps JSON): tokenize it once
        text = normalize(value)
        tokens = tokenize(text)
        parsed = _maybe_json(value)
        if parsed is None:
            _text_atoms(atoms, text, tokens)
        else:
            _value_atoms(atoms, parsed, None)
    else:
        tokens = []
        _value_atoms(atoms, value, tokens)
    return OutputPrint(
        shingles=winnow(kgram_hashes(token_ids(tokens))),
        values=atoms.values,
        unlisted=sum(atoms.unlisted.values()),
    )


_P = TypeVar("_P")

RECORD_FIELDS = 6
"""Fields a record output may have to be found merged into a later argument object (a small parsed choice)."""


def record_items(out: Any, fields: int = RECORD_FIELDS, *, whole: bool = True) -> frozenset[tuple[str, str]] | None:
    """A small flat record's fields as (name, canonical value), JSON text read; None for anything else, or
    for a record of flags only (``{"ok": true}`` names no value).  ``whole=False`` reads the scalar fields of
    any object of up to ``fields`` fields (an argument object that may hold lists and objects too)."""
    if isinstance(out, str) and content.looks_like_json(out):
        out = content.parse_json(out)
    if not is_mapping(out) or not 0 < len(out) <= fields or content.is_marker(out):
        return None
    items = []
    for k, v in out.items():
        if isinstance(v, list) or is_mapping(v) or (isinstance(v, str) and not v.strip()):
            if whole:
                return None
            continue
        items.append((str(k), json.dumps(v.strip().lower() if isinstance(v, str) else v, default=str)))
    if all(v in ("true", "false", "null") for _, v in items):
        return None
    return frozenset(items)


def source_record(out: Any) -> frozenset[tuple[str, str]] | None:
    """A record output that may source a later argument object: two fields or more (a loop's counters
    ``{"scored": 3, "total": 4}`` handed on whole), or one whose value is an id (``{"courier": "C7"}``); one
    small number or word (``{"page": 1}``) recurs by chance in unrelated calls' arguments."""
    rec = record_items(out)
    texts = [json.loads(v) for _, v in rec or () if v.startswith('"')]
    # An id: one short name mixing letters and digits (``c7``, ``b-17``), not a word or a sentence.
    ids = [t for t in texts if len(t) <= 40 and " " not in t and any(c.isdigit() for c in t) and any(c.isalpha() for c in t)]
    return rec if rec is not None and (len(rec) >= 2 or ids) else None


class RecordIndex(Generic[_P]):
    """The latest producer of each distinct record, each filed under one field (its rarest when first seen):
    an argument holding a record's every field holds that one, so looking up its fields finds the record,
    and a field every output repeats (``status="done"``) files no record twice.  Linear in a run's steps."""

    __slots__ = ("_count", "_filed", "_latest")

    def __init__(self) -> None:
        self._latest: dict[frozenset[tuple[str, str]], tuple[int, _P]] = {}
        self._filed: dict[tuple[str, str], list[frozenset[tuple[str, str]]]] = {}
        self._count: dict[tuple[str, str], int] = {}

    def __bool__(self) -> bool:
        return bool(self._latest)

    def add(self, rec: frozenset[tuple[str, str]], order: int, producer: _P) -> None:
        """Make ``producer`` the latest of ``rec`` (ties pick the same field in every run: sorted first)."""
        if rec not in self._latest:
            for item in rec:
                self._count[item] = self._count.get(item, 0) + 1
            self._filed.setdefault(min(sorted(rec), key=self._count.__getitem__), []).append(rec)
        self._latest[rec] = (order, producer)

    def latest(self, items: frozenset[tuple[str, str]]) -> _P | None:
        """The latest producer of a record every field of which ``items`` holds."""
        found = [self._latest[rec] for item in items for rec in self._filed.get(item, ()) if rec <= items]
        return max(found, key=lambda t: t[0])[1] if found else None


__all__ = [
    "MIN_WEIGHT",
    "SHINGLE",
    "SHINGLE_WEIGHT",
    "SHORT_MAX",
    "VALUE_TAG",
    "WINDOW",
    "RECORD_FIELDS",
    "RecordIndex",
    "OutputPrint",
    "Path",
    "canonical_number",
    "fingerprint_output",
    "kgram_hashes",
    "normalize",
    "number_key",
    "number_weight",
    "record_items",
    "source_record",
    "token_id",
    "token_ids",
    "tokenize",
    "value_key",
    "value_weight",
    "winnow",
]
