"""Redaction of secrets before anything reaches a sink.

Two rules, as in logfire's scrubbing and Langfuse's ``mask``: a value whose key
names a secret is replaced whole, and a string that looks like a credential
(API keys, bearer tokens, private keys) is replaced wherever it appears.
The placeholder is OpenInference's ``__REDACTED__``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from trajdebug.model import REDACTED


SECRET_KEYS = (
    r"password",
    r"passwd",
    r"secret",
    r"api[._ -]?key",
    r"access[._ -]?token",
    r"refresh[._ -]?token",
    r"auth(?!ors?\b)(orization)?$",
    r"credential",
    r"private[._ -]?key",
    r"session[._ -]?id",
    r"cookie",
    r"csrf",
    r"jwt",
    r"ssn",
    r"credit[._ -]?card",
)

SECRET_VALUES = (
    r"\bsk-[A-Za-z0-9_\-]{16,}",  # OpenAI / Anthropic style keys
    r"\bgh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
    r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bxox[abpr]-[A-Za-z0-9-]{10,}",  # Slack tokens
    r"\b(?i:bearer)\s+[A-Za-z0-9._\-]{16,}",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JWTs
)


# Cheap substring tests that every secret pattern above needs: the regular
# expression runs only on strings that contain one of them (most do not).
_HINTS = re.compile(r"sk-|gh[pousr]_|AKIA|xox|earer|PRIVATE KEY|eyJ")


class Redactor:
    """Replace secrets in JSON data (returns a new value; never mutates)."""

    def __init__(self, extra_keys: Iterable[str] = ()) -> None:
        self._key = re.compile("|".join((*SECRET_KEYS, *extra_keys)), re.IGNORECASE)
        self._val = re.compile("|".join(SECRET_VALUES))
        # One scan of a value's lowercased JSON text for literals that every
        # secret key or value pattern contains decides whether the (Python-level)
        # walk is needed at all; most values contain none of them.
        literals = [
            b"sk-",
            b"gh",
            b"akia",
            b"xox",
            b"bearer",
            b"private key",
            b"eyj",
            b"pass",
            b"secret",
            b"key",
            b"token",
            b"auth",
            b"credential",
            b"session",
            b"cookie",
            b"csrf",
            b"jwt",
            b"ssn",
            b"credit",
        ]
        literals += [re.escape(k.lower()).encode() for k in extra_keys]
        self._hint_bytes = re.compile(b"|".join(literals))

    def needed(self, encoded: bytes) -> bool:
        """Whether a value, given as its JSON text, may hold a secret (a cheap C-level scan)."""
        return self._hint_bytes.search(encoded.lower()) is not None

    def __call__(self, value: Any, depth: int = 0) -> Any:
        if isinstance(value, str):
            if len(value) < 16 or _HINTS.search(value) is None:
                return value
            return self._val.sub(REDACTED, value)
        if depth > 32:
            return value
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if isinstance(k, str) and self._key.search(k) and v is not None and not isinstance(v, bool):
                    out[k] = REDACTED
                else:
                    out[k] = self(v, depth + 1)
            return out
        if isinstance(value, list):
            return [self(v, depth + 1) for v in value]
        return value
