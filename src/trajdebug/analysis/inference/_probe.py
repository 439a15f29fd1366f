"""Input probes: a step's input prepared for probing the index of earlier outputs' fingerprints.

An output keeps only its winnowed atoms (`_fingerprint.py`); an input keeps all of them, so that finding
whether an earlier output's content reached it is one lookup per atom: every shingle hash, every number atom
with the token position of its leaf, the leaf paths to say where in the input a match sits (`format_path`:
``messages[3].content``), and the value keys of its token sequences, built on demand.  Long input strings
recur across steps (a growing conversation), so their tokens and numbers are memoized, in bounded memory.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from trajdebug.analysis.inference._fingerprint import Path, _leaf_text, _numbers_in, _walk
from trajdebug.analysis.inference._tokens import (
    MIN_WEIGHT,
    VALUE_TAG,
    kgram_hashes,
    normalize,
    number_key,
    number_weight,
    token_ids,
    tokenize,
)


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
            keys = {h ^ VALUE_TAG for h in kgram_hashes(self.ids, n)}
            self._ngrams[n] = keys
        return keys

    def path_at(self, position: int) -> Path:
        """The path of the leaf holding the token at ``position``."""
        i = bisect_right(self.starts, position) - 1
        return self.paths[i] if i >= 0 else ()


_Leaf = tuple[list[str], list[int], list[tuple[str, int, float]]]


_LEAF_MEMO: dict[str, _Leaf] = {}


_LEAF_MEMO_MIN = 64
"""Input strings at least this long are memoized (shorter ones cost less than the lookup saves)."""


_LEAF_MEMO_TOKENS = 1 << 18
"""The memo is dropped when it holds this many tokens (a few tens of MB at most)."""


_leaf_memo_size = [0]


def _input_leaf(text: str) -> _Leaf:
    """Tokens, token ids and numbers of one input string, memoized per distinct long string.

    Agents resend the conversation so far with every LLM call: the same message
    strings come back in input after input, and are read once.
    """
    if len(text) < _LEAF_MEMO_MIN:
        norm = normalize(text)
        tokens = tokenize(norm)
        return tokens, token_ids(tokens), _numbers_in(norm, tokens)
    leaf = _LEAF_MEMO.get(text)
    if leaf is None:
        norm = normalize(text)
        tokens = tokenize(norm)
        leaf = (tokens, token_ids(tokens), _numbers_in(norm, tokens))
        if _leaf_memo_size[0] + len(tokens) > _LEAF_MEMO_TOKENS:
            _LEAF_MEMO.clear()
            _leaf_memo_size[0] = 0
        _LEAF_MEMO[text] = leaf
        _leaf_memo_size[0] += len(tokens)
    return leaf


def probe_input(value: Any) -> InputProbe:
    """Prepare a step's input for matching against earlier outputs."""
    numbers: dict[int, tuple[str, int]] = {}
    tokens: list[str]
    ids: list[int]
    starts: list[int] = [0]
    paths: list[Path] = [()]
    if isinstance(value, str):  # the common case: one prompt or one argument
        leaf_tokens, leaf_ids, found = _input_leaf(value)
        tokens, ids = list(leaf_tokens), leaf_ids
        for canon, nkey, weight in found:
            if weight >= MIN_WEIGHT:
                numbers.setdefault(nkey, (canon, 0))
    else:
        tokens, ids, starts, paths = [], [], [], []
        for path, key, leaf in _walk(value):
            if key is not None:
                ktokens = tokenize(normalize(key))
                tokens.extend(ktokens)
                ids.extend(token_ids(ktokens))
            pos = len(tokens)
            if isinstance(leaf, str):
                leaf_tokens, leaf_ids, found = _input_leaf(leaf)
                for canon, nkey, weight in found:
                    if weight >= MIN_WEIGHT:
                        numbers.setdefault(nkey, (canon, pos))
            else:
                leaf_text = _leaf_text(leaf)
                if leaf_text is None:
                    continue
                if isinstance(leaf, (int, float)) and not isinstance(leaf, bool) and leaf_text:
                    weight = number_weight(leaf_text)
                    if weight >= MIN_WEIGHT:
                        numbers.setdefault(number_key(leaf_text), (leaf_text, pos))
                leaf_tokens = tokenize(leaf_text)
                leaf_ids = token_ids(leaf_tokens)
            starts.append(pos)
            paths.append(path)
            tokens.extend(leaf_tokens)
            ids.extend(leaf_ids)
    return InputProbe(
        tokens=tokens,
        ids=tuple(ids),
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
    "InputProbe",
    "probe_input",
    "format_path",
]
