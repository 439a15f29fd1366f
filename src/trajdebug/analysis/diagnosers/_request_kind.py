"""A search answered with another kind than it asked for, where the run names that kind under the same field.

A retrieval asked for ``loan policy for work on paper`` answers one record whose
``medium`` is ``painting``.  Nothing in the answer says the record is off the
query, and the query's words are too common to be a tell by themselves (a word
of the query missing from the answer fires on any search).  What makes it one is
the run itself: an earlier step's output holds ``medium: work on paper``, so the
query's words *are* a value of the field the answer fills with another value.
The rule is read by shape and by field names shared within the run, never by a
list of field names or values:

* the step was asked with text (a query, string arguments) and answered records;
* for some text field of those records, no record's value is in the query;
* an earlier step's output holds, under the same field name, another value that
  the query names (as whole words) and the answer never mentions.

Like every diagnoser it ranks, it does not prove.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._requests import _ASKED, _asked_text, _fields, _mapping, _records, _within
from trajdebug.core.model import Step


KIND = 0.45
_MAX_STEPS = 2000
"""Earlier steps read for the field's other values (a long run's first steps are enough to name its kinds)."""


def _answered(step: Step) -> dict[str, dict[str, str]]:
    """The text values of the answer's records by field name (each record's first value of a name), by their
    case-folded form."""
    out = _mapping(step.output)
    rows = _records(step.output) or ([out] if out is not None else None)
    by_field: dict[str, dict[str, str]] = {}
    for row in rows or ():
        for f, v in _fields(row).items():
            by_field.setdefault(f, {}).setdefault(v.casefold(), v)
    return by_field


def _earlier(step: Step, ctx: DiagnoseContext) -> Iterator[Step]:
    for i, s in enumerate(ctx.run.steps):
        if s.step_id == step.step_id or i >= _MAX_STEPS:
            return
        yield s


def _named_elsewhere(
    step: Step, ctx: DiagnoseContext, field: str, asked: str, answer: str, own: Mapping[str, str]
) -> Any:
    """Another value of ``field`` in an earlier step's output that the query names and the answer does not."""
    for s in _earlier(step, ctx):
        for path, v in content.decoded_leaves(s.output):
            if (
                isinstance(v, str)
                and len(v) >= 3
                and path.rsplit(".", 1)[-1].lower() == field
                and v.casefold() not in own
                and _within(v, asked)
                and not _within(v, answer)
            ):
                return v
    return None


def request_kind(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """Records whose field holds another value than the one the query names, a value the run gives that field."""
    if step.kind not in _ASKED or step.status != "ok":
        return
    asked = _asked_text(step.input)
    by_field = _answered(step)
    if not asked or not by_field:
        return
    answer = content.text_of(step.output).casefold()
    for field, own in by_field.items():
        if any(_within(v, asked) for v in own):
            continue  # the answer holds what was asked under this field
        other = _named_elsewhere(step, ctx, field, asked, answer, own)
        if other is None:
            continue
        shown = own[sorted(own)[0]]
        yield Evidence(
            step.step_id,
            KIND,
            f"was asked for {other!r} and answered with {field}={shown!r}; the run has {field}={other!r} "
            "elsewhere, which no record of the answer holds",
            "request-kind",
        )
        return


__all__ = ["KIND", "request_kind"]
