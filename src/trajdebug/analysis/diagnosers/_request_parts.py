"""The parts of a request the request diagnosers read: what a tool or a retrieval was asked, and what it answered.

A call's input and output are read here as mappings (JSON text read), its answer as the largest list of records
inside it, the text of what it asked as one lower-cased string, and each is read once per step for all the rules
(`trajdebug.analysis.diagnosers._requests` and `trajdebug.analysis.diagnosers._field_values`), through the
context's step facts.  A field's name is read by its words (`name_words`), never against a list of names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers._context import DiagnoseContext
from trajdebug.core.model import Step
from trajdebug.core.values import is_mapping


_ASKED = ("tool", "retrieval")


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def name_words(name: str) -> frozenset[str]:
    """The words of a field's name (``top_k`` -> {top, k}; ``pageSize`` -> {page, size})."""
    return frozenset(w for w in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", str(name)).lower()) if w)


def _mapping(value: Any) -> Mapping[str, Any] | None:
    """A value as a mapping (JSON text read), None when it is none."""
    if isinstance(value, str):
        t = value.strip()
        if t[:1] != "{" or len(t) > 100_000:
            return None
        try:
            value = json.loads(t)
        except (ValueError, RecursionError):
            return None
    return value if is_mapping(value) else None


def _records(value: Any, depth: int = 0) -> list[Mapping[str, Any]] | None:
    """The largest list of records (mappings) inside an answer, JSON text read."""
    if isinstance(value, str):
        value = _mapping(value) if value.strip()[:1] == "{" else _json_list(value)
    rows = content.largest_list(value) if value is not None else None
    if not rows or not all(is_mapping(r) for r in rows):
        return None
    return rows


def _json_list(text: str) -> list[Any] | None:
    t = text.strip()
    if t[:1] != "[" or len(t) > 100_000:
        return None
    try:
        v = json.loads(t)
    except (ValueError, RecursionError):
        return None
    return v if isinstance(v, list) else None


def _given(step: Step, ctx: DiagnoseContext) -> Mapping[str, Any] | None:
    """`_mapping` of the step's input, read once for all the request diagnosers."""
    found: Mapping[str, Any] | None = ctx.step_fact(step, "request-args", lambda: _mapping(step.input))
    return found


def _answer(step: Step, ctx: DiagnoseContext) -> Mapping[str, Any] | None:
    """`_mapping` of the step's output, read once for all the request diagnosers."""
    found: Mapping[str, Any] | None = ctx.step_fact(step, "request-answer", lambda: _mapping(step.output))
    return found


def _answer_records(step: Step, ctx: DiagnoseContext) -> list[Mapping[str, Any]] | None:
    """`_records` of the step's output, read once for all the request diagnosers."""
    found: list[Mapping[str, Any]] | None = ctx.step_fact(step, "request-records", lambda: _records(step.output))
    return found


def _asked(step: Step, ctx: DiagnoseContext) -> str:
    """`_asked_text` of the step's input, read once for all the request diagnosers."""
    found: str = ctx.step_fact(step, "request-asked", lambda: _asked_text(step.input))
    return found


def _later_calls(step: Step, ctx: DiagnoseContext) -> Iterator[Step]:
    """The steps recorded after this one."""
    seen = False
    for s in ctx.run.steps:
        if seen:
            yield s
        elif s.step_id == step.step_id:
            seen = True


def _asked_text(value: Any) -> str:
    """The text a request asks with: its string arguments (a bare string is the query)."""
    if isinstance(value, str) and _mapping(value) is None:
        return value.casefold()
    args = _mapping(value)
    if args is None:
        return ""
    return " ".join(v for _, v in content.leaves(args) if isinstance(v, str)).casefold()


def _within(value: str, text: str) -> bool:
    at = text.find(value.casefold())
    return (
        at >= 0
        and not text[at - 1 : at].isalnum()
        and not text[at + len(value) : at + len(value) + 1].isalnum()
    )


__all__ = [
    "name_words",
]
