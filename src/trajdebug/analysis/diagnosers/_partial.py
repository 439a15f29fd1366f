"""A tool asked about a list of items that answered about some of them: the rest went missing there.

A batch request (a list of samples to read, of parcels to price) answered with
records for part of the list is an incomplete answer (a page, a cut export, a
timeout mid-way), unless the tool filters by design.  It counts when the failure
names items that were asked about and left out, and the answer covers others of
the list: the failure's missing items were lost at this call, not upstream
(they were in its request) and not downstream (nothing later could have
brought them back).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._reads import ERROR, TOOLS, Reads, reading
from trajdebug.analysis.lineage import GENERIC_FIELDS
from trajdebug.core.model import CONTAINER_KINDS, Step
from trajdebug.core.values import atoms


PARTIAL = 0.5
"""The suspicion of a batch answer leaving out items the failure names."""
MIN_ASKED = 3
"""Fewer items asked about than this is no batch (a lookup by one or two keys)."""


def _ids(value: object) -> set[str]:
    return {a.key for a in atoms(value) if a.kind == "id"}


@reading(Reads(kinds=TOOLS, skips_statuses=ERROR, failures=True))
def request_partial(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A tool or retrieval answering about some of the ids it was asked about, leaving out ids the failure names."""
    if step.kind not in ("tool", "retrieval") or step.status == "error" or content.is_empty(step.output):
        return
    asked = _ids(step.input)
    if len(asked) < MIN_ASKED:
        return
    answered = _ids(step.output)
    covered, missing = asked & answered, asked - answered
    if len(covered) < 2 or not missing:
        return  # an answer about none of them (an acknowledgement) or all of them says nothing
    named = ctx.memo("failure-atom-keys", lambda: {a.key for f in ctx.failures for a in atoms(f.message)})
    left = sorted(k for k in missing if k in named)
    # The items left out must be of a kind the answer covers others of (samples answered, a sample
    # missing), not the request's other ids (a method, a batch) beside a list it only acknowledged.
    shapes = [content.run_shape(k) for k in covered]
    if not any(shapes.count(content.run_shape(k)) >= 2 for k in left):
        return
    raws = {a.key: a.raw for a in atoms(step.input) if a.key in left}
    shown = ", ".join(repr(raws.get(k, k)) for k in left[:3])
    yield Evidence(
        step.step_id,
        PARTIAL,
        f"was asked about {len(asked)} items and answered about {len(covered)}: it left out {shown}, "
        "which the failure names",
        "request-partial",
    )


_INDEX = re.compile(r"\[\d+\]$")


def _field_lists(record: Mapping[str, Any], *, items: bool = True) -> dict[str, list[str]]:
    """A record's text fields by their last name (``metadata.author`` -> author), generic names left out; with
    ``items``, a list's items are one field's values (``spots[0]``, ``spots[1]``: every spot it serves)."""
    out: dict[str, list[str]] = {}
    for path, v in content.leaves(record):
        name = path.rsplit(".", 1)[-1].lower()
        name = _INDEX.sub("", name) if items else name
        if isinstance(v, str) and len(v) >= 3 and name not in GENERIC_FIELDS and not name.startswith("page_"):
            out.setdefault(name, []).append(v)
    return out


def _fields(record: Mapping[str, Any]) -> dict[str, str]:
    """A record's text fields by their last name, each list item on its own (`_field_lists`)."""
    return {k: vs[0] for k, vs in _field_lists(record, items=False).items()}


__all__ = ["request_partial"]


OFF_OPTIONS = 0.45
"""The suspicion of a model answer naming, under a field, an identifier none of the given records has there."""


def _field_texts(
    value: object, out: dict[str, set[str]] | None = None, depth: int = 0
) -> dict[str, set[str]]:
    """The text values of each field name inside a value (JSON text read, also after a heading), case-folded."""
    out = {} if out is None else out
    if depth > 6:
        return out
    if isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(v, str) and v.strip():
                parsed = content.embedded_json(v)
                if isinstance(parsed, (Mapping, list)):
                    _field_texts(parsed, out, depth + 1)
                else:
                    out.setdefault(str(k).lower(), set()).add(v.strip().lower())
            else:
                _field_texts(v, out, depth + 1)
    elif isinstance(value, list):
        for v in value[:200]:
            _field_texts(v, out, depth + 1)
    return out


def _id_like(text: str) -> bool:
    """A short name with letters and digits (``courtroom 9b``, ``v-107``), not a sentence."""
    return (
        len(text) <= 40
        and text.count(" ") <= 2
        and any(c.isdigit() for c in text)
        and any(c.isalpha() for c in text)
    )


_PART = re.compile(r"[^\w.\-]+")
"""What separates the parts of a composed value: spaces, and joints no id is made of (``=`` in ``w-1=a-3``)."""


def _restated(value: str, hay: str) -> bool:
    """Whether every part of a value is a whole word of the given text ("panel w-1a." from a record's
    ``W-1A`` and a prompt's "panel"; ``w-1=a-3`` from ``W-1`` and ``A-3``): the model wrote given names
    into a sentence or a pair, it named nothing outside its options."""
    parts = [p.strip(".-") for p in _PART.split(value)]
    parts = [p for p in parts if p]
    return bool(parts) and all(
        re.search(rf"(?<![\w\-]){re.escape(p)}(?![\w\-])", hay) is not None for p in parts
    )


def off_options(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A model answering a field (``room``) with an identifier (``Courtroom 9B``) that no record it was
    given has under that field, while they hold others there (``Courtroom 6C``): it chose outside its options.
    The names-with-spaces reading of `unlisted-value` (`_field_values.unlisted_value` asks it second)."""
    if step.kind != "llm" or step.status == "error" or content.is_empty(step.output):
        return
    given = _field_texts(step.input)
    if not given:
        return
    hay = content.text_of(step.input).lower()
    for name, values in _field_texts(step.output).items():
        options = given.get(name)
        if not options or name in ("role", "type", "id", "name"):
            continue
        # A value naming one of the options among other words ("M-01 or M-03") speaks of the options: it
        # is the model's own writing, not a name it chose outside them.
        off = sorted(
            v for v in values
            if _id_like(v) and v not in options and v not in hay and not any(o in v for o in options)
            and not _restated(v, hay)
        )
        if off and any(_id_like(o) for o in options):
            yield Evidence(
                step.step_id,
                OFF_OPTIONS,
                f"answered {name}={off[0]!r}, which none of the records it was given has under {name} "
                f"(they have {', '.join(repr(o) for o in sorted(options)[:3])})",
                "unlisted-value",
            )
            return


__all__ += ["off_options"]


# -- a list short of the item the failure names -----------------------------------

GAP = 0.5
"""The suspicion of a list answer of a series short of the item of that series the failure names: as strong as
a batch answer leaving out items the failure names (`PARTIAL`), the same omission seen from the other side."""
_SERIES = re.compile(r"^(.*?)([0-9]+)$")


def _series(key: str) -> tuple[str, int] | None:
    """An id's series: what precedes its closing number, and that number's width (``r-n-04`` -> ``r-n-``, 2)."""
    m = _SERIES.match(key)
    return (m.group(1), len(m.group(2))) if m and m.group(1) else None


def _run_ids(ctx: DiagnoseContext) -> tuple[set[str], dict[tuple[str, int], str]]:
    """Every id a step of the run was given or answered, and per series the first step (not an enclosing one)
    that answered two or more ids of it it was not given: where the run's list of that series came from."""
    seen: set[str] = set()
    first: dict[tuple[str, int], str] = {}
    for s in ctx.run.steps:
        given, said = _ids(s.input), _ids(s.output)
        seen |= given | said
        if s.kind in CONTAINER_KINDS:
            continue  # an enclosing step answers what its children said first
        counts: dict[tuple[str, int], int] = {}
        for k in said - given:
            ser = _series(k)
            if ser is not None:
                counts[ser] = counts.get(ser, 0) + 1
        for ser, n in counts.items():
            if n >= 2:
                first.setdefault(ser, s.step_id)
    return seen, first


def _continues(key: str, listed: list[str]) -> bool:
    """Whether an id's number falls among or after the numbers a list of its series holds, where a list cut
    short or missing an item lacks it (``R-N-04`` after ``R-N-01`` to ``R-N-03``): a list that starts past it
    (the pairings of another day, ``J4520`` for ``J4410``) is about another stretch of the series."""
    nums = [int(m.group(2)) for m in map(_SERIES.match, listed) if m]
    m = _SERIES.match(key)
    return bool(nums) and m is not None and min(nums) <= int(m.group(2))


@reading(Reads(kinds=TOOLS, skips_statuses=ERROR, failures=True))
def series_gap(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A tool or retrieval whose answer first listed ids of a series (routes ``R-N-01`` to ``R-N-03``) while the
    failure names another id of that series (``R-N-04``) that no step of the run ever held: the list the run
    worked from was short of it, and nothing later could have brought it back."""
    if step.kind not in ("tool", "retrieval") or step.status == "error" or content.is_empty(step.output):
        return
    named = ctx.memo("failure-atom-keys", lambda: {a.key for f in ctx.failures for a in atoms(f.message)})
    if not any(k.startswith("i:") for k in named):
        return
    seen, first = ctx.memo("series-gap", lambda: _run_ids(ctx))
    for k in sorted(named - seen):
        ser = _series(k) if k.startswith("i:") else None
        if ser is not None and first.get(ser) == step.step_id:
            listed = sorted({a.raw for a in atoms(step.output) if a.kind == "id" and _series(a.key) == ser})
            if not _continues(k, [a.key for a in atoms(step.output) if a.kind == "id" and _series(a.key) == ser]):
                continue
            raw = next((a.raw for f in ctx.failures for a in atoms(f.message) if a.key == k), k)
            yield Evidence(
                step.step_id,
                GAP,
                f"listed {len(listed)} items of the series {listed[0]!r}... and not {raw!r}, which the failure "
                "names and no step of the run ever held: the list was short of it",
                "series-gap",
            )
            return


__all__ += ["series_gap"]
