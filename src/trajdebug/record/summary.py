"""Summary mode: a hash, a length and features of a step's content are stored, not the content.

With ``trajdebug.configure(summary=("*",))`` (or ``$TRAJDEBUG_SUMMARY``, or an
agent's ``summary`` mode in the rollout) the writer thread replaces the chosen
fields of each step, after redaction, with a summary::

    {"__trajdebug_summary__": 1, "hash": "9f2c...", "bytes": 1834, "type": "text",
     "json": true, "keys": ["region", "total"], "rows": 12, "error_code": "E_TIMEOUT",
     "numbers": [1250.5, 12], "atoms": [["n", "41d0...", "total", 1250.5, "eur"], ["s", "7be1...", "region"]]}

- ``hash``: keyed BLAKE2b-128 of the value (its UTF-8 text, or its JSON), with
  ``summary_key`` (``$TRAJDEBUG_SUMMARY_KEY``) so that a short value cannot be
  found by hashing guesses; ``bytes``: its length in bytes; ``type``: ``text``,
  ``object``, ``array``, ``number``, ``boolean``;
- ``json``: a structure, or text holding a JSON object or array; ``keys``: its
  top-level keys (names, not values: up to 32); ``rows``: the length of a list
  (of the value, of a JSON array in text, of a table in text, or of a
  ``rows``/``results``/``data``/``items`` list in it);
- ``error_code``: the error code the value carries (``{"code": "E42"}`` in an error
  payload, an HTTP status of 400 or more), or true for an error payload or
  text that reads as an error;
- ``numbers``: up to 16 numbers it contains (``summary_numbers=False`` keeps
  none in the clear);
- ``atoms``: the value's atoms (`trajdebug.core.values.atoms`: numbers, dates, ids,
  short strings with their field names) as ``[kind, hash, field, number,
  unit]`` with the keyed hash of each atom's key, so `trajdebug.core.values.atoms`
  reads a summary as atoms keyed by hashes of the original values, and value
  lineage connects a producer and a consumer that saw the same value.

Rules choose what is summarized: ``*`` (every step's input, output and
attributes), a kind (``tool``: its input, output and attributes), a field
(``*.output``, ``llm.input``, ``*.attributes``), and ``*.error`` (error
messages: step errors, error events, stage reasons, the run's failure reason;
tracebacks are dropped).  In attributes, each value holding text or structure
is summarized; numbers, flags and the attributes the recorder sets itself
(``timeout``, ``service``, ``fallback``, ``retry_reason``, ...) stay.
Names (steps, agents, error types, keys), ids, times, statuses and
dependencies are structure and are always kept.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from trajdebug.core.codec import Encoded, dumps, loads
from trajdebug.core.model import Run, Step
from trajdebug.core.payloads import error_payload
from trajdebug.core.values import SUMMARY_KEY, atoms


FIELDS: tuple[str, ...] = ("input", "output", "attributes", "error")
"""The step fields a rule may name."""

MAX_KEYS = 32
MAX_NUMBERS = 16
MAX_ATOMS = 128

SUMMARY_VERSION = 1

_KIND_LETTER = {"number": "n", "date": "d", "id": "i", "text": "s"}
_LISTS = ("rows", "results", "data", "items", "records", "hits")
_ERROR_WORDS = re.compile(
    r"\b(?:error|exception|traceback|failed|failure|denied|forbidden|not found|invalid|timed out|timeout)\b", re.I
)
_CODE_FIELDS = ("code", "error_code", "errno", "status", "status_code")
_KEEP_ATTRIBUTES = frozenset(
    {"timeout", "service", "fallback", "fallback_value", "retry_reason", "context_lost", "after_run_end",
     "interrupted", "closed_early", "recorded_kind", "recorded_status", "unencodable", "tool_call_id"}
)


@dataclass(frozen=True, slots=True)
class Policy:
    """Compiled summary rules: which fields of which step kinds are summarized."""

    rules: tuple[str, ...]
    """The rules as given."""
    fields: Mapping[str, frozenset[str]]
    """Fields summarized per kind (``*``: every kind)."""
    errors: bool
    """Whether error messages are summarized (in any rule)."""
    key: bytes
    """The hash key."""
    numbers: bool
    """Whether numbers are kept in the clear."""

    @classmethod
    def compile(cls, rules: Iterable[str], key: str | bytes | None = None, numbers: bool = True) -> Policy:
        """Compile rules (see the module docstring).

        Raises:
            ValueError: a rule naming a field that is not one of `FIELDS`.
        """
        fields: dict[str, set[str]] = {}
        given = tuple(rules)
        for rule in given:
            kind, _, field = rule.strip().partition(".")
            kind = kind or "*"
            if not field:
                chosen = {"input", "output", "attributes"}
            elif field == "*":
                chosen = set(FIELDS)
            elif field in FIELDS:
                chosen = {field}
            else:
                raise ValueError(f"summary rule {rule!r}: unknown field {field!r} (expected one of {', '.join(FIELDS)} or *)")
            fields.setdefault(kind, set()).update(chosen)
        raw = key.encode() if isinstance(key, str) else (key or b"")
        return cls(
            given,
            {k: frozenset(v) for k, v in fields.items()},
            any("error" in v for v in fields.values()),
            hashlib.blake2b(raw, digest_size=32).digest() if raw else b"",
            numbers,
        )

    def fields_for(self, kind: str) -> frozenset[str]:
        """The fields summarized for a step of ``kind``."""
        own = self.fields.get(kind)
        every = self.fields.get("*")
        if own is None:
            return every or frozenset()
        return own | every if every else own

    def digest(self, data: bytes, size: int = 16) -> str:
        """The keyed hash of some bytes, as hex."""
        return hashlib.blake2b(data, digest_size=size, key=self.key).hexdigest()

    # -- values -------------------------------------------------------------------------

    def summarize(self, value: Any) -> Any:
        """A value's summary (None stays None; a summary stays as it is)."""
        if value is None or is_summary(value):
            return value
        if value.__class__ is Encoded:
            # A snapshot the tracker embeds as its JSON bytes: the summary reads the value itself.
            try:
                value = loads(value.data)
            except ValueError:
                return value
        data = value.encode("utf-8", "replace") if isinstance(value, str) else dumps(value)
        out: dict[str, Any] = {SUMMARY_KEY: SUMMARY_VERSION, "hash": self.digest(data), "bytes": len(data)}
        out["type"] = _type(value)
        parsed = _parsed(value)
        if isinstance(parsed, (Mapping, list)):
            out["json"] = True
        if isinstance(parsed, Mapping):
            out["keys"] = [str(k)[:64] for k in list(parsed)[:MAX_KEYS]]
        rows = _rows(value, parsed)
        if rows is not None:
            out["rows"] = rows
        err = _error(value, parsed)
        if err is not None:
            out["error_code"] = err
        found = atoms(value)
        nums = [a.number for a in found if a.kind == "number" and a.number is not None]
        if nums and self.numbers:
            out["numbers"] = nums[:MAX_NUMBERS]
        if found:
            seen: set[tuple[str, str | None]] = set()
            kept: list[list[Any]] = []
            for a in found:
                if (a.key, a.field) in seen:
                    continue
                seen.add((a.key, a.field))
                entry: list[Any] = [_KIND_LETTER[a.kind], self.digest(a.key.encode("utf-8", "replace"), 8), a.field]
                if a.number is not None and self.numbers:
                    entry.append(a.number)
                    if a.unit:
                        entry.append(a.unit)
                kept.append(entry)
                if len(kept) >= MAX_ATOMS:
                    break
            out["atoms"] = kept
        return out

    def text(self, value: Any) -> Any:
        """A message or reason summarized as text (a reader expects a string there)."""
        if not isinstance(value, str) or not value or value.startswith("[summary "):
            return value
        data = value.encode("utf-8", "replace")
        return f"[summary {self.digest(data, 8)}, {len(data)} bytes]"

    # -- records --------------------------------------------------------------------------

    def apply(self, rec: dict[str, Any]) -> dict[str, Any]:
        """Summarize a record in place (step, error, stage and end records; others as they are)."""
        t = rec.get("t")
        if t == "step":
            fields = self.fields_for(str(rec.get("kind")))
            for name in ("input", "output"):
                if name in fields and rec.get(name) is not None:
                    rec[name] = self.summarize(rec[name])
            if "attributes" in fields and isinstance(rec.get("attributes"), Mapping):
                rec["attributes"] = self.attributes(rec["attributes"])
            err = rec.get("error")
            if "error" in fields and isinstance(err, dict):
                err["message"] = self.text(err.get("message"))
                err.pop("traceback", None)
        elif self.errors:
            if t == "error":
                rec["message"] = self.text(rec.get("message"))
            elif t == "stage":
                rec["reason"] = self.text(rec.get("reason"))
            elif t == "end":
                rec["failure_reason"] = self.text(rec.get("failure_reason"))
        return rec

    def attributes(self, attrs: Mapping[str, Any]) -> dict[str, Any]:
        """Attributes with each text or structured value summarized (flags, numbers and the recorder's own kept)."""
        out: dict[str, Any] = {}
        for k, v in attrs.items():
            if k in _KEEP_ATTRIBUTES or v is None or isinstance(v, (bool, int, float)):
                out[k] = v
            else:
                out[k] = self.summarize(v)
        return out

    def step(self, s: Step) -> Step:
        """A model step with its chosen fields summarized (for runs read from elsewhere)."""
        from trajdebug.core.model import ErrorInfo, replace

        fields = self.fields_for(s.kind)
        changes: dict[str, Any] = {}
        for name in ("input", "output"):
            if name in fields and getattr(s, name) is not None:
                changes[name] = self.summarize(getattr(s, name))
        if "attributes" in fields and s.attributes:
            changes["attributes"] = self.attributes(s.attributes)
        if "error" in fields and s.error is not None:
            changes["error"] = ErrorInfo(s.error.type, self.text(s.error.message), s.error.error_id, None)
        return replace(s, **changes) if changes else s


def is_summary(value: Any) -> bool:
    """Whether a recorded value is a summary."""
    return isinstance(value, Mapping) and bool(value) and next(iter(value)) == SUMMARY_KEY


def _type(value: Any) -> str:
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, Mapping):
        return "object"
    return "array" if isinstance(value, (list, tuple)) else type(value).__name__


def _parsed(value: Any) -> Any:
    if isinstance(value, str):
        t = value.strip()
        if t[:1] in "{[" and len(t) < 1_000_000:
            try:
                return json.loads(t)
            except ValueError:
                return None
        return None
    return value


def _rows(value: Any, parsed: Any) -> int | None:
    if isinstance(parsed, list):
        return len(parsed)
    if isinstance(parsed, Mapping):
        for k in _LISTS:
            if isinstance(parsed.get(k), list):
                return len(parsed[k])
        return None
    if isinstance(value, str) and "\n" in value:
        lines = [ln for ln in value.splitlines() if ln.strip()]
        seps = [sep for sep in (",", "\t", "|", ";") if len(lines) > 1 and len({ln.count(sep) for ln in lines}) == 1 and lines[0].count(sep)]
        if seps:
            return len(lines) - 1
    return None


def _error(value: Any, parsed: Any) -> Any:
    if isinstance(parsed, Mapping):
        for k in _CODE_FIELDS:
            code = parsed.get(k)
            if k.startswith("status") and isinstance(code, int) and not isinstance(code, bool) and code >= 400:
                return code
        if error_payload(dict(parsed)) is not None:
            for k in ("code", "error_code", "errno"):
                code = parsed.get(k)
                if isinstance(code, (str, int)) and not isinstance(code, bool) and str(code):
                    return code if isinstance(code, int) else str(code)[:64]
            return True
        return None
    if isinstance(value, str) and _ERROR_WORDS.search(value[:4096]):
        return True
    return None


def summarize_run(run: Run, rules: Iterable[str] = ("*",), *, key: str | bytes | None = None) -> Run:
    """A run with its steps summarized as summary mode would have recorded them (runs recorded in full,
    imported traces; the benchmarks measure what summary mode costs the analysis with it)."""
    from trajdebug.core.model import replace

    policy = Policy.compile(rules, key)
    steps = tuple(policy.step(s) for s in run.steps)
    if policy.errors:
        errors = tuple(replace(e, message=policy.text(e.message)) for e in run.errors)
        out: Run = replace(run, steps=steps, errors=errors, failure_reason=policy.text(run.failure_reason))
        return out
    plain: Run = replace(run, steps=steps)
    return plain


__all__ = ["FIELDS", "SUMMARY_KEY", "Policy", "is_summary", "summarize_run"]
