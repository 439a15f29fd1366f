"""The judge's on-disk response cache: one JSON file per request, keyed by the request's hash.

The key is the SHA-256 of the request as sent (endpoint, model, messages,
sampling and answer-shape parameters) in canonical JSON, so the same question
to the same model is answered once: rerunning ``analyze --judge`` on a run
already judged sends nothing.  The key never includes the API key, and the
request itself is not stored (only its hash and the answer), so the cache
holds no prompt content.  Only answers that passed validation are stored.

Writes go to a temporary file renamed into place, so concurrent analyses
never read half an entry; an unreadable entry is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


FORMAT = 1
"""Version of an entry's layout; entries of another version are misses."""


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    """An answer read from the cache."""

    text: str
    """The model's answer (its message content)."""
    prompt_tokens: int
    """Tokens the request cost when it was sent."""
    completion_tokens: int
    """Tokens the answer cost when it was received."""
    model: str
    """The model that answered, as the endpoint named it."""


def request_key(endpoint: str, body: Mapping[str, Any]) -> str:
    """The cache key of a request: SHA-256 of the endpoint and body in canonical JSON (the key leaves out streaming)."""
    canonical = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    text = json.dumps([FORMAT, endpoint, canonical], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResponseCache:
    """Answers on disk under ``directory``, two hex digits of fan-out, one file per request.

    Args:
        directory: Where the entries live (created on the first write).
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def _file(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedAnswer | None:
        """The stored answer for ``key``, or None (missing, unreadable or of another layout)."""
        try:
            data = json.loads(self._file(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("text"), str):
            return None
        usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
        return CachedAnswer(
            data["text"],
            _count(usage.get("prompt_tokens")),
            _count(usage.get("completion_tokens")),
            str(data.get("model") or ""),
        )

    def put(self, key: str, answer: CachedAnswer) -> None:
        """Store an answer (best effort: a cache that cannot be written is skipped silently)."""
        target = self._file(key)
        entry = {
            "format": FORMAT,
            "text": answer.text,
            "model": answer.model,
            "usage": {"prompt_tokens": answer.prompt_tokens, "completion_tokens": answer.completion_tokens},
        }
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(entry, fh, ensure_ascii=False)
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            # The cache saves tokens; a read-only or full disk must not fail the analysis.
            pass

    def __len__(self) -> int:
        """How many entries the cache holds."""
        if not self.directory.is_dir():
            return 0
        return sum(1 for _ in self.directory.glob("??/*.json"))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


__all__ = ["FORMAT", "CachedAnswer", "ResponseCache", "request_key"]
