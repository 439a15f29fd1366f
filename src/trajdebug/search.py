"""Full-text search in what a run's steps were given and returned: which runs hold some text, and where.

A search is a few words, matched without regard to case: a run matches when every word occurs
somewhere in it (its name, its failure reason, a step's name, a step's input, output or error, an
error event), and each step whose input, output or error holds one of the words is named with the
place and a short excerpt, so a result says which step matched.  Values are read as they were
stored: the recorder redacts secrets before anything reaches a store or a file, so a redacted value
is searched as its placeholder and can never be found by the secret itself.

The search scans the runs it is given (a store's runs are loaded and read in full): the store keeps
each step's values in its record batches, not in columns SQLite could index, so an index would be a
second copy of every value for the store to keep in step; a scan over the runs is correct by
construction and fast enough for the runs a person lists (tens of thousands of steps a second).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from trajdebug.core.model import Run, Step


EXCERPT_CHARS = 80
"""The length of the excerpt shown around a step's first match."""

MAX_DEPTH = 40
"""How deep a nested value is read (deeper parts are not searched: a cycle-free record is never this deep)."""

Place = Literal["input", "output", "error"]


@dataclass(frozen=True, slots=True)
class StepMatch:
    """A step whose input, output or error holds a searched word."""

    step_id: str
    """The step's id."""
    name: str
    """The step's name."""
    where: Place
    """Which of its values holds the word (the first of input, output, error that does)."""
    excerpt: str
    """The text around the first match, on one line."""

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        return {"step_id": self.step_id, "name": self.name, "where": self.where, "excerpt": self.excerpt}


def words_of(text: str) -> tuple[str, ...]:
    """The words a search looks for: the text split on white space, lower-cased."""
    return tuple(w for w in text.lower().split() if w)


def value_text(value: Any) -> str:
    """A recorded value as searchable text: every key and every scalar, one per line (JSON quoting and
    escapes left out, so a word is found as it reads)."""
    return "\n".join(_leaves(value, 0))


def _leaves(value: Any, depth: int) -> Iterator[str]:
    if depth > MAX_DEPTH or value is None:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _leaves(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v, depth + 1)
    else:
        yield str(value)


def _step_texts(step: Step) -> Iterator[tuple[Place, str]]:
    yield "input", value_text(step.input)
    yield "output", value_text(step.output)
    if step.error is not None:
        yield "error", f"{step.error.type}: {step.error.message}"


def _excerpt(text: str, word: str) -> str:
    at = text.lower().find(word)
    start = max(0, at - (EXCERPT_CHARS - len(word)) // 2)
    cut = " ".join(text[start : start + EXCERPT_CHARS].split())
    return ("…" if start else "") + cut + ("…" if start + EXCERPT_CHARS < len(text) else "")


def search_run(run: Run, text: str) -> tuple[StepMatch, ...] | None:
    """The steps of ``run`` whose input, output or error holds a word of ``text``, in the run's order, or None
    when the run does not hold every word (an empty search matches every run, naming no step)."""
    words = words_of(text)
    if not words:
        return ()
    missing = set(words)
    found: list[StepMatch] = []
    plain = "\n".join([run.name, run.failure_reason or "", *(f"{e.type}: {e.message}" for e in run.errors)]).lower()
    missing -= {w for w in words if w in plain}
    for step in run.steps:
        missing -= {w for w in words if w in step.name.lower()}
        first: StepMatch | None = None
        for where, body in _step_texts(step):
            low = body.lower()
            hits = [w for w in words if w in low]
            missing -= set(hits)
            if hits and first is None:
                first = StepMatch(step.step_id, step.name, where, _excerpt(body, hits[0]))
        if first is not None:
            found.append(first)
    return None if missing else tuple(found)


__all__ = ["EXCERPT_CHARS", "StepMatch", "search_run", "value_text", "words_of"]
