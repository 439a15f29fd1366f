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

from collections.abc import Iterable
from dataclasses import dataclass

from trajdebug.core.redaction._prefilter import RARE
from trajdebug.core.redaction._redactor import Redactor
from trajdebug.core.redaction._rules import (
    COUNTING_WORDS,
    MAX_DEPTH,
    PII_CLASSES,
    RULES,
    SECRET_PHRASES,
    SECRET_WORDS,
    Rule,
    key_words,
)


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
