"""The rules of redaction: secret key words and phrases, and the value rules (credential shapes, cards)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass


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

# A credential's edges are ASCII word boundaries, ``(?a:\b)``: a token of ASCII letters and digits ends where
# a character outside ASCII starts, so a key glued to a word of another script (``密钥sk-...``, ``token是sk-...``,
# a full-width ``Ａ`` or ``４``, ``clé`` before ``sk-``) is found, which Unicode's ``\b`` misses (``密`` is a
# word character there).  One glued to an ASCII letter or digit (``task-...``, ``mask-...``, ``xsk-...``) stays
# part of a longer token, as before.  The card rule's digits are ASCII digits for the same reason (``４`` is a
# ``\d`` in Unicode; no issuer's number holds one).  On ASCII text every rule matches as it did with ``\b``.
RULES: tuple[Rule, ...] = (
    Rule(
        "private_key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
        gate=("PRIVATE KEY",),
        needs="-",
    ),
    Rule("jwt", r"(?a:\b)eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", gate=("eyJ",), needs="J"),
    Rule("openai_key", r"(?a:\b)sk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_\-]{16,}", gate=("sk-",), needs="-"),
    Rule("stripe_key", r"(?a:\b)[rs]k_(?:live|test)_[A-Za-z0-9]{16,}", gate=("k_live_", "k_test_"), needs="_"),
    Rule(
        "github_token",
        r"(?a:\b)gh[pousr]_[A-Za-z0-9]{20,}|(?a:\b)github_pat_[A-Za-z0-9_]{20,}",
        gate=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        needs="_",
    ),
    Rule("aws_access_key_id", r"(?a:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?a:\b)", gate=("AKIA", "ASIA"), needs="A"),
    Rule(
        "aws_secret_key",
        r"(?i:aws[_\- ]?secret[_\- ]?(?:access[_\- ]?)?key)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})",
        group=1,
        lower_gate=("aws",),
        needs=":=",
    ),
    Rule("google_api_key", r"(?a:\b)AIza[0-9A-Za-z_\-]{35}", gate=("AIza",), needs="A"),
    Rule("huggingface_token", r"(?a:\b)hf_[A-Za-z0-9]{30,}", gate=("hf_",), needs="_"),
    Rule(
        "azure_key",
        r"(?i:AccountKey|SharedAccessKey|SharedAccessSignature|[?&]sig)=([A-Za-z0-9%+/=]{20,})",
        group=1,
        lower_gate=("accountkey", "sharedaccess", "sig="),
        needs="=",
    ),
    Rule("slack_token", r"(?a:\b)xox[abposr]-[A-Za-z0-9-]{10,}", gate=("xox",), needs="-"),
    Rule("bearer", r"(?i:(?a:\b)bearer)\s+([A-Za-z0-9._~+/\-]{16,}=*)", group=1, lower_gate=("bearer",)),
    Rule("basic_auth", r"(?i:(?a:\b)basic)\s+([A-Za-z0-9+/]{6,}={0,2})", group=1, check=_is_basic, lower_gate=("basic",)),
    Rule("url_credentials", r"(?a:\b)[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@\"']*:([^/\s@\"']+)@", group=1, gate=("://",), needs="@"),
    Rule(
        "assignment",
        r"(?i:(?:" + _ASSIGNED + r"))\b[\"']?\s*[:=]\s*[\"']?([^\s\"',;&}\])]+)",
        group=1,
        lower_gate=("pass", "pwd", "secret", "token", "key", "dsn", "credential"),
        needs=":=",
    ),
    Rule("card_number", r"(?a:(?<![\w-])(?:\d[ -]?){12,18}\d(?![\w-]))", check=_is_card),
    Rule(
        "email",
        r"(?a:\b)[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}(?a:\b)",
        gate=("@",),
        needs="@",
        pii=True,
    ),
)
"""The maintained value rules, in the order they are tried at one position."""

PII_CLASSES = frozenset(r.name for r in RULES if r.pii)
"""Opt-in classes of personal data (``trajdebug.configure(redact_pii=("email",))``)."""


