"""Redaction of secrets before anything reaches disk, on every write path.

Two kinds of rule, as in logfire's scrubbing and Langfuse's ``mask``:

* **key rules**: a value whose key names a secret (``password``, ``api_key``,
  ``Authorization``, ``auth_token``, ``dsn``...) is replaced whole.  Keys are
  compared word by word (``apiKey``, ``x-api-key`` and ``OPENAI_API_KEY`` are
  all ``api key``), so ``classname`` and ``businessname`` never match ``ssn``,
  ``prompt_tokens`` never matches ``token``, and a key ending in a counting
  word (``token_count``, ``password_length``) is left alone.
* **value rules**: a string that holds a credential of a known shape is
  redacted wherever it appears (values, names, error messages, dict keys):
  provider keys (OpenAI/Anthropic ``sk-``, Stripe ``sk_live_``, GitHub
  ``ghp_``/``github_pat_``, AWS ``AKIA``, Google ``AIza``, Hugging Face ``hf_``,
  Slack ``xox?-``), Azure account keys and SAS signatures, bearer and Basic
  authorization (any case), JWTs, PEM private keys, the password in a URL,
  ``password=...``-style assignments in text, card numbers (checked with
  Luhn's algorithm and the issuer's prefix), and, as an opt-in PII class,
  e-mail addresses.

The placeholder is OpenInference's ``__REDACTED__``.  Each `Redactor` counts
what it scrubbed per rule (`Redactor.counts`), never the value, so a run can
say what was removed.  Values are walked to any depth; a value nested deeper
than `MAX_DEPTH` is replaced whole rather than written unscanned.

The process-wide policy (`POLICY`, changed through `trajdebug.configure`) is
read by every write path: the recorder's writer thread, `trajdebug.store.Store`
and the JSONL writer, so ``import``, integrations and store merges are
redacted the same way as recorded runs.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from trajdebug.core.model import REDACTED


_ATOMS = frozenset({int, float, bool})


MAX_DEPTH = 300
"""Values nested deeper than this are replaced whole (no recorded value is that deep)."""

# -- key rules ------------------------------------------------------------------------

SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "secret",
        "secrets",
        "token",
        "apikey",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "cookies",
        "csrf",
        "xsrf",
        "jwt",
        "ssn",
        "dsn",
        "bearer",
        "privatekey",
        "accesskey",
        "secretkey",
        "sessionid",
        "cvv",
        "cvc",
    }
)
"""Single words that make a key secret (compared with the key's words, not as substrings)."""

SECRET_PHRASES: tuple[tuple[str, ...], ...] = (
    ("api", "key"),
    ("access", "key"),
    ("private", "key"),
    ("secret", "key"),
    ("account", "key"),
    ("session", "id"),
    ("session", "key"),
    ("client", "secret"),
    ("credit", "card"),
    ("card", "number"),
    ("connection", "string"),
    ("set", "cookie"),
)
"""Consecutive words that make a key secret (``api_key``, ``apiKey``, ``x-api-key``)."""

COUNTING_WORDS = frozenset(
    {
        "count",
        "counts",
        "limit",
        "limits",
        "length",
        "len",
        "size",
        "usage",
        "type",
        "types",
        "expires",
        "expiry",
        "expiration",
        "ttl",
        "remaining",
        "used",
        "estimate",
        "budget",
        "url",
        "uri",
        "endpoint",
        "name",
        "names",
        "set",
        "present",
        "required",
        "enabled",
    }
)
"""A key in which one of these follows the secret word describes the secret without holding it (``token_count``,
``llm.token_count.prompt``)."""


def _key_hints() -> tuple[tuple[str, ...], ...]:
    """Groups of literals all of which the lowercased text of a secret key holds, for one group at least:
    each secret word (less those holding another: ``authorization`` holds ``auth``), and each phrase's
    words (less the phrases one of whose words holds a secret word: ``client secret``)."""
    words = sorted(w for w in SECRET_WORDS if not any(o != w and o in w for o in SECRET_WORDS))
    phrases = [p for p in SECRET_PHRASES if not any(w in pw for w in words for pw in p)]
    return tuple((w,) for w in words) + tuple(phrases)


_KEY_HINTS = _key_hints()
"""A key whose lowercased text holds no group of these names no secret (`key_words` splits ``key.lower()``,
so every word of a key is a part of it): a few ``in`` tests rather than splitting the key into words."""


def key_words(key: str) -> tuple[str, ...]:
    """A key's words, lowercased: ``"OPENAI_API_KEY"``, ``"apiKey"`` -> ``("openai", "api", "key")``, ``("api", "key")``."""
    k = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key)
    k = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", k)
    return tuple(w for w in re.split(r"[^A-Za-z0-9]+", k.lower()) if w)


def _secret_words(words: tuple[str, ...], extra: tuple[re.Pattern[str], ...], key: str) -> bool:
    if not words:
        return False
    end = -1  # where the last secret word or phrase ends
    for i, w in enumerate(words):
        if w in SECRET_WORDS:
            end = i
    present = set(words)
    for phrase in SECRET_PHRASES:
        if not present.issuperset(phrase):
            continue
        n = len(phrase)
        for i in range(len(words) - n + 1):
            if words[i : i + n] == phrase:
                end = max(end, i + n - 1)
    if end < 0:
        return any(p.search(key) for p in extra)
    # A counting word after the secret describes it without holding it: ``token_count``, and as
    # OpenInference names its counts, ``llm.token_count.prompt``.
    return not any(w in COUNTING_WORDS for w in words[end + 1 :])


# -- value rules ---------------------------------------------------------------------


def _luhn(digits: str) -> bool:
    """Luhn's checksum (ISO/IEC 7812-1): doubling every second digit from the right."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


_CARD_BRANDS: tuple[tuple[re.Pattern[str], frozenset[int]], ...] = (
    (re.compile(r"4"), frozenset({13, 16, 19})),  # Visa
    (re.compile(r"5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)"), frozenset({16})),  # Mastercard
    (re.compile(r"3[47]"), frozenset({15})),  # American Express
    (re.compile(r"6(?:011|5|4[4-9])"), frozenset({16, 17, 18, 19})),  # Discover
    (re.compile(r"3(?:0[0-5]|[68])"), frozenset({14})),  # Diners Club
    (re.compile(r"35(?:2[89]|[3-8]\d)"), frozenset({16, 17, 18, 19})),  # JCB
)
"""Issuer prefixes and lengths of the major card brands (ISO/IEC 7812 issuer identification)."""


def _is_card(text: str) -> bool:
    digits = re.sub(r"[ -]", "", text)
    return any(p.match(digits) and len(digits) in lengths for p, lengths in _CARD_BRANDS) and _luhn(digits)


def _is_basic(token: str) -> bool:
    """Whether ``token`` is base64 of ``user:password`` (a Basic authorization credential)."""
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in raw and all(32 <= b < 127 for b in raw)


@dataclass(frozen=True, slots=True)
class Rule:
    """One value rule: a named pattern whose match (or one group of it) is replaced."""

    name: str
    """The rule's name, as counted in `Redactor.counts`."""
    pattern: str
    """The regular expression (without the outer named group)."""
    group: int = 0
    """The group of the match to replace (0: the whole match)."""
    check: Callable[[str], bool] | None = None
    """A validator of the text to replace (Luhn for card numbers); None: always replace."""
    pii: bool = False
    """Personal data rather than a credential: applied only when its class is enabled."""
    gate: tuple[str, ...] = ()
    """Literals one of which every match contains (searched as they are); empty: see ``lower_gate``."""
    lower_gate: tuple[str, ...] = ()
    """Literals one of which every match contains, searched in the lowercased text."""
    needs: str = ""
    """Characters one of which every match contains (each found with one ``memchr``: the cheapest test,
    tried first); empty: the rule needs none of `RARE` (the bearer and Basic words, card digits)."""


_ASSIGNED = (
    r"password|passwd|pwd|passphrase|secret|token|api[_\-]?key|access[_\-]?key|secret[_\-]?key"
    r"|private[_\-]?key|client[_\-]?secret|dsn|credentials?"
)

RULES: tuple[Rule, ...] = (
    Rule(
        "private_key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
        gate=("PRIVATE KEY",),
        needs="-",
    ),
    Rule("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", gate=("eyJ",), needs="J"),
    Rule("openai_key", r"\bsk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_\-]{16,}", gate=("sk-",), needs="-"),
    Rule("stripe_key", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}", gate=("k_live_", "k_test_"), needs="_"),
    Rule(
        "github_token",
        r"\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}",
        gate=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        needs="_",
    ),
    Rule("aws_access_key_id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", gate=("AKIA", "ASIA"), needs="A"),
    Rule(
        "aws_secret_key",
        r"(?i:aws[_\- ]?secret[_\- ]?(?:access[_\- ]?)?key)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})",
        group=1,
        lower_gate=("aws",),
        needs=":=",
    ),
    Rule("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}", gate=("AIza",), needs="A"),
    Rule("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}", gate=("hf_",), needs="_"),
    Rule(
        "azure_key",
        r"(?i:AccountKey|SharedAccessKey|SharedAccessSignature|[?&]sig)=([A-Za-z0-9%+/=]{20,})",
        group=1,
        lower_gate=("accountkey", "sharedaccess", "sig="),
        needs="=",
    ),
    Rule("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", gate=("xox",), needs="-"),
    Rule("bearer", r"(?i:\bbearer)\s+([A-Za-z0-9._~+/\-]{16,}=*)", group=1, lower_gate=("bearer",)),
    Rule("basic_auth", r"(?i:\bbasic)\s+([A-Za-z0-9+/]{6,}={0,2})", group=1, check=_is_basic, lower_gate=("basic",)),
    Rule("url_credentials", r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@\"']*:([^/\s@\"']+)@", group=1, gate=("://",), needs="@"),
    Rule(
        "assignment",
        r"(?i:(?:" + _ASSIGNED + r"))\b[\"']?\s*[:=]\s*[\"']?([^\s\"',;&}\])]+)",
        group=1,
        lower_gate=("pass", "pwd", "secret", "token", "key", "dsn", "credential"),
        needs=":=",
    ),
    Rule("card_number", r"(?<![\w-])(?:\d[ -]?){12,18}\d(?![\w-])", check=_is_card),
    Rule(
        "email",
        r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b",
        gate=("@",),
        needs="@",
        pii=True,
    ),
)
"""The maintained value rules, in the order they are tried at one position."""

PII_CLASSES = frozenset(r.name for r in RULES if r.pii)
"""Opt-in classes of personal data (``trajdebug.configure(redact_pii=("email",))``)."""


@dataclass(frozen=True, slots=True)
class Policy:
    """The process-wide redaction settings (see `trajdebug.configure`)."""

    enabled: bool = True
    """Redact at all."""
    extra_keys: tuple[str, ...] = ()
    """Extra key-name patterns (regular expressions, searched case-insensitively)."""
    pii: tuple[str, ...] = ()
    """Enabled PII classes (`PII_CLASSES`)."""


POLICY = Policy()
"""The current policy; `set_policy` replaces it."""


def set_policy(*, enabled: bool | None = None, extra_keys: Iterable[str] | None = None, pii: Iterable[str] | None = None) -> Policy:
    """Change the process-wide policy (called by `trajdebug.configure`).

    Raises:
        ValueError: an unknown PII class.
    """
    global POLICY
    cur = POLICY
    classes = tuple(pii) if pii is not None else cur.pii
    unknown = set(classes) - PII_CLASSES
    if unknown:
        raise ValueError(f"unknown PII class {sorted(unknown)[0]!r} (known: {', '.join(sorted(PII_CLASSES))})")
    POLICY = Policy(
        enabled=cur.enabled if enabled is None else bool(enabled),
        extra_keys=cur.extra_keys if extra_keys is None else tuple(extra_keys),
        pii=classes,
    )
    return POLICY


def redactor() -> Redactor | None:
    """A fresh `Redactor` for the current policy (its own counts), or None when redaction is off."""
    p = POLICY
    return Redactor(p.extra_keys, p.pii) if p.enabled else None


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

_RUN_TABLE = bytes(ord("d") if 48 <= b <= 57 else ord("x") for b in range(256))
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


def _decoded(token: bytes) -> str:
    """A string as split from orjson's text at its quotes (escaped backslashes and quotes swapped for
    ``\\x01\\x01`` and ``\\x02\\x02``, `Redactor.clean_encoded`), decoded."""
    if b"\\" in token or b"\x01" in token or b"\x02" in token:
        from trajdebug.core.codec import loads

        s: str = loads(b'"' + token.replace(b"\x01\x01", b"\\\\").replace(b"\x02\x02", b'\\"') + b'"')
        return s
    return token.decode("utf-8", "surrogatepass")


@functools.lru_cache(maxsize=16)
def _compiled(extra_keys: tuple[str, ...], pii: tuple[str, ...]) -> tuple[Any, ...]:
    rules = tuple((r, re.compile(r.pattern)) for r in RULES if not r.pii or r.name in pii)
    extra = tuple(re.compile(k, re.IGNORECASE) for k in extra_keys)
    return rules, extra


class _Memo:
    """The strings found clean (or not) under one policy, shared by its redactors (see `_memo`)."""

    __slots__ = ("keys", "text_chars", "texts", "token_chars", "tokens", "values", "values_chars")

    def __init__(self) -> None:
        self.keys: dict[str, bool] = {}
        """Whether a key names a secret (`Redactor.secret_key`)."""
        self.texts: dict[str, bool] = {}
        """Whether `Redactor.text` leaves a string that passed the prefilter as it is (`Redactor._text_clean`)."""
        self.tokens: set[bytes] = set()
        """Strings as encoded found clean as values and as keys (`Redactor.clean_encoded`, `clean_strings`)."""
        self.values: set[bytes] = set()
        """Long strings as encoded found clean as values, not tested as keys (`Redactor.clean_strings`)."""
        self.text_chars = self.token_chars = self.values_chars = 0


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
        self._rules, self._extra = _compiled(extra, classes)
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
        self._clean_values = memo.values
        self._clean_heads: list[bytes] = []
        """Clean snapshots' texts minus their closing brackets, newest first (`_clean_head`)."""
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
        each encoding is searched for it."""
        joined = b"".join(encoded)
        # Swap every record alike: `_swapped` leaves a text without an escaped quote as it is, so a record
        # swapped alone could spell a string otherwise than the joined text (``\\`` against ``\x01\x01``)
        # and a bad string found in the whole would not be found in its own record.
        swap = b'\\"' in joined
        text = _swap_all(joined) if swap else joined
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
        quoted = [b'"' + t + b'"' for t in bad]
        return [not any(q in e for q in quoted) for e in (map(_swap_all, encoded) if swap else encoded)]

    def _unclean(self, new: set[bytes], text: bytes) -> set[bytes]:
        """Which of these strings of ``text`` (as split by `clean_lines`) are not clean: as a value, or (long
        ones only where they are keys) as a key; the others are remembered."""
        bad: set[bytes] = set()
        values = self._clean_values
        for t in [t for t in new if len(t) > _LONG]:
            if t not in values:
                if not self._text_clean(_decoded(t)):
                    bad.add(t)
                    continue
                if self._memo.values_chars > _MEMO_CHARS:
                    values.clear()
                    self._memo.values_chars = 0
                values.add(t)
                self._memo.values_chars += len(t)
            # A key stands in the text as ``"key":``; a value never does unless the same string is a key too.
            if b'"' + t + b'":' not in text:
                new.discard(t)
        for t in new:
            if t not in bad:
                s = _decoded(t)
                if self.secret_key(s) or not self._text_clean(s):
                    bad.add(t)
        new.difference_update(bad)
        self._remember(new)
        return bad

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
        best = 0
        for h in self._clean_heads:
            if len(h) > best and encoded.startswith(h):
                best = len(h)
        return best

    def _remember_head(self, encoded: bytes) -> None:
        """Keep a clean container snapshot's text without its closing brackets (long ones only, the last few)."""
        if len(encoded) >= _HEAD_MIN and encoded[-1:] in (b"]", b"}"):
            heads = self._clean_heads
            h = encoded.rstrip(b"]}")
            if h not in heads:
                heads.insert(0, h)
                del heads[_HEADS:]

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


__all__ = [
    "COUNTING_WORDS",
    "RARE",
    "MAX_DEPTH",
    "PII_CLASSES",
    "POLICY",
    "RULES",
    "SECRET_PHRASES",
    "SECRET_WORDS",
    "Policy",
    "Redactor",
    "Rule",
    "key_words",
    "redactor",
    "set_policy",
]
