"""Values of a field other than the ones the run gives that field: two tells, read off field names the run shares.

A field's values elsewhere in a run say what the field may hold.  Two steps are
suspect for answering another value than those:

* **Another kind** (`request_kind`, ``request-kind``): a search answering
  records of another kind than its query names, a kind the run gives the same
  field elsewhere.
* **Unlisted** (`unlisted_value`, ``unlisted-value``): a model answering a
  field with a value none of the listed values of that field it was given.

Both are read by shape and by field names shared within the run, never by a
list of field names or values, and no English word is read.  Like every
diagnoser they rank, they do not prove.

**Another kind.**  A retrieval asked for ``loan policy for work on paper`` answers one record whose
``medium`` is ``painting``.  Nothing in the answer says the record is off the
query, and the query's words are too common to be a tell by themselves (a word
of the query missing from the answer fires on any search).  What makes it one is
the run itself: an earlier step's output holds ``medium: work on paper``, so the
query's words *are* a value of the field the answer fills with another value.
It fires when:

* the step was asked with text (a query, string arguments) and answered records;
* for some text field of those records, no record's value is in the query;
* an earlier step's output holds, under the same field name, another value that
  the query names (as whole words) and the answer never mentions.

**Unlisted.**  A model handed a list to pick from (lots and the tools to run them on, each tool
under ``tool``) that answers ``tool: LTH-07``, where the tools it was given are
``LTH-01`` to ``LTH-03`` and nothing upstream names ``LTH-07``, made that value
up.  A model's JSON answer is left out of the made-up value check
(`trajdebug.analysis.diagnosers._claims.llm_output`): a model *chooses* codes,
ratios and labels, and a choice is no claim.  A field whose values the model
was given as a list is different: the list is the options, and a value outside
it and outside everything upstream is no option.  It fires when:

* the model's prompt holds JSON (whole, or after a short lead-in) with at least
  two distinct values under one field name;
* its answer (JSON) holds, under that field name, a value of one word with a
  digit (an id, a code: words are labels it may coin, a sentence is its own
  writing) that is none of them;
* the value is nowhere in what the model could have read (`upstream_text`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._partial import _fields, off_options
from trajdebug.analysis.diagnosers._reads import ERROR, OK, TOOLS, Reads, reading
from trajdebug.analysis.diagnosers._request_parts import _ASKED, _answer, _answer_records, _asked, _within
from trajdebug.core.model import Step


# -- another kind ------------------------------------------------------------------


KIND = 0.45
_MAX_STEPS = 2000
"""Earlier steps read for the field's other values (a long run's first steps are enough to name its kinds)."""


def _answered(step: Step, ctx: DiagnoseContext) -> dict[str, dict[str, str]]:
    """The text values of the answer's records by field name (each record's first value of a name), by their
    case-folded form."""
    out = _answer(step, ctx)
    rows = _answer_records(step, ctx) or ([out] if out is not None else None)
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


@reading(Reads(kinds=TOOLS, statuses=OK))
def request_kind(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """Records whose field holds another value than the one the query names, a value the run gives that field."""
    if step.kind not in _ASKED or step.status != "ok":
        return
    asked = _asked(step, ctx)
    by_field = _answered(step, ctx)
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


# -- unlisted ----------------------------------------------------------------------


UNLISTED = 0.45
_MAX_TEXT = 100_000


def _texts(value: Any) -> Iterator[str]:
    """The strings of a model call's messages (or of its answer), largest structures first read whole."""
    for _, v in content.leaves(value):
        if isinstance(v, str) and 2 < len(v) <= _MAX_TEXT:
            yield v


def _by_field(value: Any) -> dict[str, set[str]]:
    """The string values of the JSON a value's texts hold, by their last field name."""
    out: dict[str, set[str]] = {}
    for t in _texts(value):
        parsed = content.embedded_json(t) if ("{" in t or "[" in t) else None
        if parsed is None:
            continue
        for path, v in content.decoded_leaves(parsed):
            name = path.rsplit(".", 1)[-1].split("[", 1)[0].lower()
            if isinstance(v, str) and name:
                out.setdefault(name, set()).add(v.strip())
    return out


@reading(Reads(kinds=frozenset({"llm"}), skips_statuses=ERROR))
def unlisted_value(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A model's answer giving a field a value none of the listed values of that field it was given: a code
    (``LTH-07``) read here, or a name with spaces (``Courtroom 9B``, `_partial.off_options`).  Two readings
    of one tell, so one finding: the first that fires (both at once counted it twice by noisy-OR)."""
    for tell in (_unlisted(step, ctx), off_options(step, ctx)):
        for found in tell:
            yield found
            return


def _unlisted(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    if step.kind != "llm" or step.status == "error" or step.input is None:
        return
    answered = _by_field(step.output)
    if not answered:
        return
    given = _by_field(step.input)
    hay: str | None = None
    for name, values in answered.items():
        options = given.get(name)
        if not options or len(options) < 2:
            continue
        for v in sorted(values):
            if v in options or len(v) < 3 or not any(c.isdigit() for c in v) or any(c.isspace() for c in v):
                continue  # (a sentence with a number, an explanation, is the model's own writing: no option)
            if hay is None:
                hay = ctx.upstream_text(step)
            if v.lower() in hay:
                continue
            shown = ", ".join(sorted(options)[:4])
            yield Evidence(
                step.step_id,
                UNLISTED,
                f"answered {name}={v!r}, none of the {len(options)} values of {name} it was given ({shown})",
                "unlisted-value",
            )
            return


SHARED = 0.4
"""The suspicion of a lookup answering another call's record id (`shared_answer`)."""
_CODE = content.ID_TOKEN


def _codes(value: object) -> set[str]:
    return {m.group(0) for m in _CODE.finditer(content.text_of(value))}


def _answered_calls(ctx: DiagnoseContext) -> dict[str, list[Step]]:
    """The run's calls that answered a record, by name, in run order: read once per run, not once per call
    (a run of n lookups would scan its n steps n times)."""

    def compute() -> dict[str, list[Step]]:
        out: dict[str, list[Step]] = {}
        for s in ctx.run.steps:
            if s.status == "ok" and isinstance(s.output, Mapping):
                out.setdefault(s.name, []).append(s)
        return out

    calls: dict[str, list[Step]] = ctx.memo("answered-calls", compute)
    return calls


@reading(Reads(kinds=TOOLS, statuses=OK, failures=True))
def shared_answer(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A lookup whose answer gives a field the id another call of it answered for another question, where
    every other call answered an id of its own (one sheet per animal), and the failure names that id and
    one this call was asked about: of the two calls, this one answered a record not its own."""
    out = step.output
    if step.kind not in ("tool", "retrieval") or step.status != "ok" or not isinstance(out, Mapping):
        return
    named = " ".join(f.message for f in ctx.failures)
    asked = {c for c in _codes(step.input) if c in named}
    if not asked:
        return
    calls = [s for s in _answered_calls(ctx).get(step.name, ()) if s.input != step.input]
    for field, v in out.items():
        if not (isinstance(v, str) and _CODE.fullmatch(v) and v in named and v not in content.text_of(step.input)):
            continue
        seen = [s.output.get(field) for s in calls]
        others = [x for x in seen if x != v]
        if len(calls) >= 3 and v in seen and len(set(map(str, others))) == len(others):
            yield Evidence(
                step.step_id,
                SHARED,
                f"answered {field}={v!r} for {sorted(asked)[0]!r}, the {field} another call answered for another "
                f"question, where every other call had its own",
                "shared-answer",
                values=(v,),
            )
            return


__all__ = ["KIND", "SHARED", "UNLISTED", "request_kind", "shared_answer", "unlisted_value"]
