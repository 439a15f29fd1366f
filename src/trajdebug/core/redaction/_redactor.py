"""`Redactor`: replaces secrets in JSON data and in encoded records, and counts what it replaced."""

from __future__ import annotations

import functools
import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from trajdebug.core.model import REDACTED
from trajdebug.core.redaction._prefilter import (
    _HEAD_MIN,
    _HEADS,
    _LONG,
    _MEMO_CHARS,
    Gates,
    _assigned_word_before_separator,
    _decoded,
    _decoded_all,
    _digit_run,
    _has_13_digits,
    _holding,
    _lowered,
    _swap_escapes,
    _value_suspects,
    _words_before_separator,
)
from trajdebug.core.redaction._rules import (
    _KEY_HINTS,
    MAX_DEPTH,
    RULES,
    Rule,
    _secret_words,
    key_words,
)


_ATOMS = frozenset({int, float, bool})
_UNCLEAN_MAX = 4096
"""The memo of strings found unclean is emptied past this many strings (or `_MEMO_CHARS` characters); each is redacted anyway."""


@functools.lru_cache(maxsize=16)
def _compiled(extra_keys: tuple[str, ...], pii: tuple[str, ...]) -> tuple[Any, ...]:
    rules = tuple((r, re.compile(r.pattern)) for r in RULES if not r.pii or r.name in pii)
    extra = tuple(re.compile(k, re.IGNORECASE) for k in extra_keys)
    return rules, extra, _gates(tuple(r for r, _ in rules))


def _gates(rules: tuple[Rule, ...]) -> Gates | None:
    """The literals `_value_rules_hit` asks of a text before each rule's pattern (`_value_suspects`), None
    when a rule that may run on `RARE` characters has none (it would run on every text holding one)."""
    if any(r.needs and not r.gate and not r.lower_gate for r in rules):
        return None
    return (
        tuple(g.encode() for r in rules for g in r.gate),
        tuple(g.encode() for r in rules if not r.gate for g in r.lower_gate),
    )


class _Memo:
    """The strings found clean (or not) under one policy, shared by its redactors (see `_memo`)."""

    __slots__ = ("keys", "text_chars", "texts", "token_chars", "tokens", "unclean", "unclean_chars")

    def __init__(self) -> None:
        self.keys: dict[str, bool] = {}
        """Whether a key names a secret (`Redactor.secret_key`)."""
        self.texts: dict[str, bool] = {}
        """Whether `Redactor.text` leaves a string that passed the prefilter as it is (`Redactor._text_clean`)."""
        self.tokens: set[bytes] = set()
        """Strings as encoded found clean as values and as keys (`Redactor.clean_encoded`, `clean_strings`)."""
        self.unclean: set[bytes] = set()
        """Strings as encoded found unclean wherever they stand (`Redactor._unclean`; emptied past
        `_UNCLEAN_MAX` strings or `_MEMO_CHARS` characters: a secret resent in a growing conversation makes each
        turn's text a new unclean string)."""
        self.text_chars = self.token_chars = self.unclean_chars = 0


@functools.lru_cache(maxsize=16)
def _memo(extra_keys: tuple[str, ...], pii: tuple[str, ...]) -> _Memo:
    """The memo of one policy's redactors (the extra key patterns and PII classes are all it depends on)."""
    return _Memo()


class Redactor:
    """Replace secrets in JSON data (returns new values; never mutates) and count what it replaced.

    Example:
        ```python
        r = Redactor()
        r({"api_key": "x", "note": "uses sk-abcdefghijklmnopqrstu"})
        # {'api_key': '__REDACTED__', 'note': 'uses __REDACTED__'}
        r.counts   # Counter({'key_name': 1, 'openai_key': 1})
        ```
    """

    def __init__(self, extra_keys: Iterable[str] = (), pii: Iterable[str] = ()) -> None:
        extra, classes = tuple(extra_keys), tuple(sorted(pii))
        self._rules, self._extra, self._gates = _compiled(extra, classes)
        self._at = "email" in classes
        # Bit i stands for self._rules[i]: which rules each rare character lets run, which the
        # bearer/Basic words do, which 13 digits do.
        by_char: dict[str, int] = {}
        self._words = self._digits = 0
        for i, (rule, _) in enumerate(self._rules):
            for c in rule.needs:
                by_char[c] = by_char.get(c, 0) | 1 << i
            if not rule.needs:
                if rule.lower_gate:
                    self._words |= 1 << i
                else:
                    self._digits |= 1 << i
        self._by_char = tuple(by_char.items())
        # What is clean under a policy does not change: the memos are shared by the policy's redactors (one
        # per run written), so each distinct string is tested once per process rather than once per run.
        self._memo = memo = _memo(extra, classes)
        self._keys = memo.keys
        self._clean_texts = memo.texts
        self._clean_tokens = memo.tokens
        self._clean_heads: list[bytes] = []
        """Clean snapshots' texts minus their closing brackets, newest first (`_remember_head`)."""
        self._longest_first: tuple[bytes, ...] = ()
        """The same heads, longest first (`_clean_head`)."""
        self.counts: Counter[str] = Counter()
        """How many values each rule replaced (``key_name`` for key rules)."""

    # -- tests -----------------------------------------------------------------------

    def needed(self, encoded: bytes) -> bool:
        """Whether a value, given as its JSON text, may hold a secret under a key or in a string."""
        try:
            return not self.clean_json(encoded)
        except ValueError:
            return True

    def clean_json(self, encoded: bytes) -> bool:
        """`clean` of a value given as its JSON text, exact for every string: True when `__call__` would
        leave it as it is (False also for a value nested past `MAX_DEPTH`).

        Agents resend the conversation so far with every model call, so the same strings come back step
        after step: each distinct string the prefilter (`may_hold`) cannot clear is tested once
        (`_text_clean`, memoized): its gates and patterns first (`_value_rules_hit`), then the rules.

        Raises:
            ValueError: ``encoded`` is not JSON.
        """
        from trajdebug.core.codec import loads

        return self._json_clean(loads(encoded), 0)

    def clean_encoded(self, encoded: bytes) -> bool:
        """`clean_json` of JSON text the recorder itself encoded (orjson, so valid and at most 255 levels
        deep), usually without decoding it: True when `__call__` would leave the value as it is.

        An agent resends its conversation with every model call, so nearly every string of a step's
        snapshot was in an earlier one.  Splitting the text at its quotes (escaped quotes set aside first)
        yields every string (key or value) exactly as encoded, between the structure; when every part is
        one already found clean, the value is clean.  Only new parts are tested, once each and strictly
        (clean as a value and not a secret key's name, whichever it is).  One split and one set lookup per
        part, in C, in place of a walk of the decoded value in Python.  A new string that is not strictly clean sends the value to
        `clean_json`, which is exact.

        Raises:
            ValueError: ``encoded`` is not JSON (found only on the way that decodes it).
        """
        # No depth test: orjson encodes at most 255 levels, fewer than `MAX_DEPTH`.
        text = encoded
        head = self._clean_head(encoded)
        if head:
            # The value begins with the whole of one found clean, outside any string: only what follows is split.
            text = encoded[head:]
        if b'\\"' in text:
            # Escaped quotes (and, first, escaped backslashes, so that ``\\"`` still ends a string) become
            # two bytes orjson never writes raw (it escapes control characters), so the split stays exact.
            text = text.replace(b"\\\\", b"\x01\x01").replace(b'\\"', b"\x02\x02")
        known = self._clean_tokens
        parts = text.split(b'"')
        if known.issuperset(parts):  # every part a string seen clean or structure seen before: no set built
            if not head or text.strip(b"]}"):
                # (A value that is a remembered head and its closing brackets has that head remembered.)
                self._remember_head(encoded)
            return True
        # Every part is tested: the strings (odd parts) and the structure between them (even parts: a few
        # distinct separators and numbers, clean, remembered with the strings).
        new = set(parts)
        new.difference_update(known)
        if not self._learn(new):
            return self.clean_json(encoded)
        self._remember_head(encoded)
        return True

    def clean_strings(self, encoded: bytes) -> bool:
        """Whether `__call__` would leave a value as it is, given orjson's encoding of it (`codec.plain_line`:
        every string of the value stands in it, and nothing else is a string): True when every string of the
        text is clean as a value and every key names no secret (exact for True; False is a maybe).

        Only the strings are tested (`clean_encoded` also tests the numbers and punctuation between them,
        new in nearly every record: times and counts), each distinct one once (memoized with
        `clean_encoded`'s): one split and one set lookup in C when every string was seen.  A long string is
        tested as a key only where it is one (followed by ``:``): splitting a text of many words as a key's
        name costs more than testing it as a value, and long values rarely come back.
        """
        return self.clean_lines([encoded])[0]

    def clean_lines(self, encoded: Sequence[bytes]) -> list[bool]:
        """`clean_strings` of each of several encodings (a run's records), their strings split and looked up
        together: one split and one set difference for them all; when some string among them is not clean,
        the joined text is searched for it and each find placed in its encoding (`_holding`)."""
        text = _swap_escapes(b"".join(encoded))
        strings = text.split(b'"')[1::2]
        if self._clean_tokens.issuperset(strings):
            return [True] * len(encoded)
        new = set(strings)
        new.difference_update(self._clean_tokens)
        bad = self._unclean(new, text)
        if not bad:
            return [True] * len(encoded)
        if len(encoded) == 1:
            return [False]
        # A string stands in its text between quotes; a text holding none of these quoted holds none of them.
        # Each encoding is searched as it stands in the joined text: a JSON text never ends with a backslash,
        # so the joined text swapped is the encodings each swapped, end to end.
        quoted = [b'"' + t + b'"' for t in bad]
        return [not held for held in _holding(text, list(itertools.accumulate(map(len, encoded))), quoted)]

    def _unclean(self, new: set[bytes], text: bytes) -> set[bytes]:
        """Which of these strings of ``text`` (as split by `clean_lines`) are not clean: as a value, or (long
        ones only where they are keys) as a key; the others are remembered.

        The value rules run only on the strings that one pass over their bytes (`_value_suspects`) cannot
        clear, the key rules only on those `_key_suspects` cannot; a string found unclean wherever it
        stands is so the next time without a test (`_Memo.unclean`: a run's session id, under its secret
        key, comes back in every run)."""
        memo = self._memo
        bad = new & memo.unclean
        new.difference_update(bad)
        tokens = list(new)
        suspects = _value_suspects(tokens, self._at, self._gates)
        may_hold, held_clean = self.may_hold, self._held_clean
        for k in range(len(tokens)) if suspects is None else suspects:
            s = _decoded(tokens[k])
            # `_text_clean` inline: the prefilter first (most suspects, ids, stop there), the rules past it.
            if len(s) >= 6 and may_hold(s) and not held_clean(s):
                bad.add(tokens[k])
        unclean = set(bad)  # unclean as values, or remembered so: wherever they stand
        # As keys: every short string (testing it costs less than telling whether it is a key), a long one
        # only where it is a key: a key stands in the text as ``"key":``, a value never does unless the same
        # string is a key too.
        as_keys = [t for t in tokens if t not in bad and (len(t) <= _LONG or b'"' + t + b'":' in text)]
        strings = _decoded_all(as_keys)
        keys = self._key_suspects(strings)
        for t, s in zip(as_keys, strings):
            if (keys is None or s in keys) and self.secret_key(s):
                bad.add(t)
                if len(t) <= _LONG:  # tested as a key wherever it stands
                    unclean.add(t)
        # Remembered clean: the strings tested as keys too (a long value here may be a key elsewhere).
        self._remember(new.intersection(as_keys).difference(bad))
        if unclean:
            chars = sum(map(len, unclean))
            if len(memo.unclean) + len(unclean) > _UNCLEAN_MAX or memo.unclean_chars + chars > _MEMO_CHARS:
                memo.unclean.clear()
                memo.unclean_chars = 0
            memo.unclean.update(unclean)
            memo.unclean_chars += chars
        return bad

    def _key_suspects(self, strings: list[str]) -> set[str] | None:
        """Those of these strings `secret_key` may find secret (told for them all at once: it finds none
        whose lowercased text holds no whole group of `_KEY_HINTS`), None: each is to be asked."""
        if self._extra:
            return None  # the policy's own key patterns: `secret_key` tries them on every key
        # One text for them all, each lowercased as `secret_key` does it (a NUL is no letter: no word of a
        # hint spans two strings, so a group not in the whole is in none of them).
        low = "\x00".join(strings).lower()
        hits = [g for g in _KEY_HINTS if g[0] in low and all(w in low for w in g)]
        suspects: set[str] = set()
        if hits:
            for s in strings:
                s_low = s.lower()
                if any(all(w in s_low for w in g) for g in hits):
                    suspects.add(s)
        return suspects

    def _learn(self, new: set[bytes]) -> bool:
        """Whether every one of these strings (as encoded, quotes and escapes swapped by `clean_strings`) is
        clean as a value and as a key; when all are, they are remembered."""
        for token in new:
            s = _decoded(token)
            if self.secret_key(s) or not self._text_clean(s):
                return False
        self._remember(new)
        return True

    def _remember(self, clean: set[bytes]) -> None:
        """Add strings found clean as values and as keys to the memo (emptied past `_MEMO_CHARS`)."""
        chars = self._memo.token_chars + sum(map(len, clean))
        if chars > _MEMO_CHARS:
            self._clean_tokens.clear()
            chars = sum(map(len, clean))
        self._clean_tokens.update(clean)
        self._memo.token_chars = chars

    def _clean_head(self, encoded: bytes) -> int:
        """The length of the longest remembered head (`_remember_head`) that ``encoded`` starts with, 0 if none.

        Agents resend their conversation with every call, the same or with turns appended: the bytes of a
        snapshot begin with those of an earlier one, minus its closing brackets.  Such a head ends outside
        any string (a JSON string ends with a quote, so the closing brackets at the end of a container's
        text are all structure), so splitting the rest at its quotes yields every string that is not
        wholly in the head exactly as the whole split would; the strings wholly in the head are strings of
        the earlier value, all found clean.  One comparison of bytes per remembered head, in C."""
        # Longest first: the first that matches is the answer (usually the first or second tried).
        for h in self._longest_first:
            if encoded.startswith(h):
                return len(h)
        return 0

    def _remember_head(self, encoded: bytes) -> None:
        """Keep a clean container snapshot's text without its closing brackets (long ones only, the last few)."""
        if len(encoded) >= _HEAD_MIN and encoded[-1:] in (b"]", b"}"):
            heads = self._clean_heads
            h = encoded.rstrip(b"]}")
            if h not in heads:
                heads.insert(0, h)
                del heads[_HEADS:]
                self._longest_first = tuple(sorted(heads, key=len, reverse=True))

    def _json_clean(self, value: Any, depth: int) -> bool:
        c = value.__class__
        if c is str:
            return self._text_clean(value)
        if c is dict:
            if depth >= MAX_DEPTH:
                return False
            for k, v in value.items():
                if self.secret_key(k) or not self._text_clean(k):
                    return False
                if v is not None and v.__class__ not in _ATOMS and not self._json_clean(v, depth + 1):
                    return False
            return True
        if c is list:
            if depth >= MAX_DEPTH:
                return False
            return all(v is None or v.__class__ in _ATOMS or self._json_clean(v, depth + 1) for v in value)
        return True

    def _text_clean(self, s: str) -> bool:
        """Whether `text` leaves ``s`` as it is (exact; memoized past the prefilter)."""
        if len(s) < 6 or not self.may_hold(s):
            return True
        return self._held_clean(s)

    def _held_clean(self, s: str) -> bool:
        """`_text_clean` of a string the prefilter (`may_hold`) did not clear."""
        hit = self._clean_texts.get(s)
        if hit is None:
            hit = not self._value_rules_hit(s) or self._unchanged(s)
            if self._memo.text_chars + len(s) > _MEMO_CHARS:
                self._clean_texts.clear()
                self._memo.text_chars = 0
            self._clean_texts[s] = hit
            self._memo.text_chars += len(s)
        return hit

    def _unchanged(self, s: str) -> bool:
        """Whether `text` leaves ``s`` as it is (a test, not a redaction: the counts are left as they were)."""
        saved = self.counts.copy()
        # Unchanged but counted (a secret already replaced by the placeholder, ``password=__REDACTED__``):
        # not clean, so that `__call__` counts it each time, as it would without the test.
        same = self.text(s) == s and self.counts == saved
        self.counts.clear()
        self.counts.update(saved)
        return same

    def _candidates(self, text: str, digits: Callable[[str], bool]) -> tuple[int, str | None]:
        """The rules whose characters the text holds (`Rule.needs`), as bits in the order of `RULES`,
        and the text lowercased when that was needed to tell (else None).  ``digits`` is the caller's
        card-number gate (`_digit_run` for the test `_value_rules_hit`, `_has_13_digits` for `text`)."""
        found = 0
        for c, mask in self._by_char:
            if c in text:
                found |= mask
        low: str | None = None
        if "b" in text or "B" in text or not text.isascii():
            low = _lowered(text)
            if "bearer" in low or "basic" in low:
                found |= self._words
        if self._digits and len(text) >= 13 and digits(text):
            found |= self._digits
        return found, low

    def _value_rules_hit(self, text: str) -> bool:
        """Whether a value rule may match in this text (False is certain): each rule's characters, its
        literals, then its pattern, over the whole text in one pass each."""
        if len(text) < 6:
            return False
        found, low = self._candidates(text, _digit_run)
        rules = self._rules
        while found:
            low_bit = found & -found
            found ^= low_bit
            rule, pattern = rules[low_bit.bit_length() - 1]
            if rule.gate and not any(g in text for g in rule.gate):
                continue
            if rule.lower_gate:
                if low is None:
                    low = _lowered(text)
                if rule.name == "assignment":
                    if not _assigned_word_before_separator(low):
                        continue
                elif not any(g in low for g in rule.lower_gate):
                    continue
            for m in pattern.finditer(text):
                part = m.group(rule.group)
                if part is not None and (rule.check is None or rule.check(part)):
                    return True
        return False

    def clean(self, value: Any, depth: int = 0) -> bool:
        """Whether `__call__` would leave ``value`` as it is, for certain (a walk that copies nothing).

        False is a maybe: a string passed the prefilter, a key names a secret, or the value is
        nested deeper than `MAX_DEPTH`.
        """
        if value.__class__ is str:
            return len(value) < 6 or not self.may_hold(value)
        if isinstance(value, dict):
            if depth >= MAX_DEPTH:
                return False
            for k, v in value.items():
                if isinstance(k, str) and (self.may_hold(k) or self.secret_key(k)):
                    return False
                if v is not None and v.__class__ not in _ATOMS and not self.clean(v, depth + 1):
                    return False
            return True
        if isinstance(value, (list, tuple)):
            if depth >= MAX_DEPTH:
                return False
            for v in value:
                if v is not None and v.__class__ not in _ATOMS and not self.clean(v, depth + 1):
                    return False
            return True
        return not isinstance(value, str) or self.clean(str(value), depth)

    def secret_key(self, key: str) -> bool:
        """Whether a value under this key is a secret (cached per key)."""
        hit = self._keys.get(key)
        if hit is None:
            if not self._extra:
                low = key.lower()
                for group in _KEY_HINTS:
                    if group[0] in low and (len(group) == 1 or all(w in low for w in group)):
                        break
                else:
                    return False
            hit = _secret_words(key_words(key), self._extra, key)
            if len(self._keys) < 4096:
                self._keys[key] = hit
        return hit

    # -- replacing ---------------------------------------------------------------------

    def may_hold(self, value: str) -> bool:
        """The prefilter: whether a string may hold a secret (False is certain, True is a maybe).

        One ``memchr`` per character of `RARE`, then (only when a ``b`` is there) the words of the
        bearer and Basic rules, then (only when a digit is there) the digits of a card number.
        """
        if len(value) < 6:
            return False
        if (
            "-" in value
            or "_" in value
            or ":" in value
            or "=" in value
            or "J" in value
            or "A" in value
            or (self._at and "@" in value)
        ):
            return True
        if "b" in value or "B" in value or not value.isascii():
            low = _lowered(value)
            if "bearer" in low or "basic" in low:
                return True
        return len(value) >= 13 and _has_13_digits(value)

    def text(self, value: str) -> str:
        """A string with every secret-shaped part replaced."""
        if len(value) < 6:
            return value
        found, low = self._candidates(value, _has_13_digits)
        rules = self._rules
        while found:
            low_bit = found & -found
            found ^= low_bit
            rule, pattern = rules[low_bit.bit_length() - 1]
            if rule.gate:
                for g in rule.gate:
                    if g in value:
                        break
                else:
                    continue
            elif rule.lower_gate:
                if low is None:
                    low = _lowered(value)
                if rule.name == "assignment":
                    # Its words are ordinary English: look only right before each separator.
                    if not _words_before_separator(low):
                        continue
                else:
                    for g in rule.lower_gate:
                        if g in low:
                            break
                    else:
                        continue
            new = pattern.sub(functools.partial(self._replace, rule), value)
            if new is not value and new != value:
                value, low = new, None
        return value

    def _replace(self, rule: Rule, m: re.Match[str]) -> str:
        g = rule.group
        part = m.group(g)
        if part is None or (rule.check is not None and not rule.check(part)):
            return m.group(0)
        self.counts[rule.name] += 1
        if not g:
            return REDACTED
        whole = m.group(0)
        start, end = m.start(g) - m.start(0), m.end(g) - m.start(0)
        return whole[:start] + REDACTED + whole[end:]

    def __call__(self, value: Any, depth: int = 0) -> Any:
        """``value`` with its secrets replaced (dicts and lists are copied, to any depth)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            if depth >= MAX_DEPTH:
                self.counts["too_deep"] += 1
                return REDACTED
            out = {}
            for k, v in value.items():
                if isinstance(k, str):
                    if self.secret_key(k) and v is not None and not isinstance(v, bool):
                        self.counts["key_name"] += 1
                        out[self.text(k)] = REDACTED
                        continue
                    k = self.text(k)
                out[k] = self(v, depth + 1)
            return out
        if isinstance(value, (list, tuple)):
            if depth >= MAX_DEPTH:
                self.counts["too_deep"] += 1
                return REDACTED
            return [self(v, depth + 1) for v in value]
        return value


