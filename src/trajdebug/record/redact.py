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


class Redactor:
    """Replace secrets in JSON data (returns a new value; never mutates)."""

    def __init__(self, extra_keys: Iterable[str] = ()) -> None:
        self._key = re.compile("|".join((*SECRET_KEYS, *extra_keys)), re.IGNORECASE)
        self._val = re.compile("|".join(SECRET_VALUES))

    def __call__(self, value: Any, depth: int = 0) -> Any:
        if isinstance(value, str):
            return self._val.sub(REDACTED, value) if len(value) >= 16 else value
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
