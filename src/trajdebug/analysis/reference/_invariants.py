"""Likely invariants of an agent's steps, learned from its passing runs, and their violations.

Daikon's idea (Ernst, Cockrell, Griswold & Notkin, TSE 2001) at the grain of
agent steps: over the passing runs of one agent, record per step what always
held, then read a failing run's violations as evidence; the earliest violation
on the failure's slice is the first suspect (Sahoo, Criswell, Geng & Adve,
ASPLOS 2013, "Using likely invariants for automated software fault
localization").  Passing runs answered other inputs, so only relations that
survive a change of input are kept:

- **grounded field**: an output field whose value the step was always given
  (a model copying an argument from the request; a tool echoing a filter);
- **kept field**: an output field whose value always equals the input value
  under the same name (a search returning items in the city asked for);
- **ratio**: an output number that is always the same multiple of an input
  number (a converter's rate, a unit factor);
- **magnitude**: the orders of magnitude an output field's numbers span;
- **sign**: an output field that is never negative, or never positive;
- **presence**: an output field that is always there;
- **categories**: a field with a handful of values (a unit, a currency, a status);
- **size**: the output's item count relative to the input's.

Steps are matched across runs by (agent, name, kind); every occurrence of a
step in a passing run is one observation.  An invariant needs
`MIN_SUPPORT` observations from at least two runs, and a violation's weight
grows with that support.
"""


from __future__ import annotations

import datetime
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

from trajdebug.analysis._content import char_shape
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.lineage import (
    PROTOCOL_FIELDS,
    StepView,
    holds_empty,
    holds_untraced,
    queue_keys,
    semantic,
)
from trajdebug.analysis.reference._answers import answer_checks
from trajdebug.analysis.reference._enclosing import inside_of, matched_inside, own_answer
from trajdebug.analysis.reference._first_picks import picked_first
from trajdebug.analysis.reference._profile import (
    DAY_PREFIX,
    MIN_SUPPORT,
    OUTPUT_FIELD,
    Profile,
    StepKey,
    _FieldStats,
    _in_fields,
    _out_fields,
    _size_ratio,
    _StepStats,
    field_sources,
    held_sources,
    input_parts,
    operand_view,
    returns_empty,
    step_key,
)
from trajdebug.analysis.reference._ranges import number_findings, passing_had, read_otherwise
from trajdebug.analysis.reference._relations import (
    formula_checks,
    ratio_checks,
    setting_ratio_checks,
    worked_out,
)
from trajdebug.analysis.reference._relations import support_weight as _w
from trajdebug.analysis.reference._routes import chose_next
from trajdebug.core.model import CONTAINER_KINDS, Step
from trajdebug.core.values import Atom, atoms


# -- violations -------------------------------------------------------------------


def violations(
    step: Step,
    view: StepView,
    profile: Profile,
    *,
    min_runs: int = 2,
    steps: Mapping[str, Step] | None = None,
    passing: Profile | None = None,
    within: Mapping[str, Step] | None = None,
    shared: Collection[StepKey] = (),
    zeros: bool = True,
) -> Iterator[Evidence]:
    """The likely invariants of this step that the failing run breaks, as evidence.

    Args:
        step: The step of the failing run.
        view: Its values (`trajdebug.analysis.lineage.StepView`).
        profile: What the agent's passing runs did.
        min_runs: Distinct runs (or, for a profile of the failing run itself,
            other occurrences) an invariant needs.
        steps: The failing run's steps by id: the writers of the state the step read
            (`_call_keys.asked_of`).
        passing: The passing runs' profile, when ``profile`` is the step's other calls in the failing
            run: a sign or magnitude odd among them but one the passing runs had is no violation.
        within: The failing run's steps by id, to key the step in ``passing`` (`step_key`): ``profile``, the
            run's own calls, keys it without them (`sibling_profiles`).
        shared: Steps whose every call shares another request's answer (`unkeyed`): no old answer.
        zeros: Whether a zero in a field the profile never had zero in is a violation (`_zero_check`):
            of the passing runs, yes; of the step's other calls in its own run, no (one lookup of five
            answering 0, an item out of stock, is what a run's calls do).
    """
    own = step_key(step, steps)
    st = profile.steps.get(own)
    key = step_key(step, within)
    if step.kind in CONTAINER_KINDS or st is None or step.status != "ok":
        yield from own_answer(step, profile, steps) if step.kind in CONTAINER_KINDS else ()
        return
    origin = steps is not None and matched_inside(step, profile, steps) == "" and step.step_id in inside_of(steps, profile).origin
    yield from (e for e in answer_checks(step, st, steps, origin) if not (own in shared and e.diagnoser == "reference:old-answer"))
    if st.n < MIN_SUPPORT or len(st.runs) < min_runs:
        return
    outs = _out_fields(view)
    ins = _in_fields(view)
    for f, fs in st.fields.items():
        if fs.n < MIN_SUPPORT or len(fs.runs) < 2 or f in PROTOCOL_FIELDS:
            continue
        yield from _field_checks(step, view, st, f, fs, outs, ins, passing, key, within or steps, zeros, within is not None)
    yield from _shape_checks(step, st, outs, min_runs)
    found = next(ratio_checks(step.step_id, outs, ins, st), None)
    yield from [found] if found is not None else setting_ratio_checks(step, outs, ins, st)
    size = _size_ratio(step)
    if size is not None and len(st.sizes) >= MIN_SUPPORT:
        lo, hi = min(st.sizes), max(st.sizes)
        if hi - lo <= 1e-9 and abs(size - lo) > 1e-9:
            yield Evidence(
                step.step_id,
                _w(0.4, len(st.sizes)),
                f"returned {size:g}x as many items as it was given; passing runs always {lo:g}x",
                "reference:size",
            )


GIVEN = " (it was given that value)"
"""The end of a category finding's reason when the step was given the new value: the deviation came in
with its input, and the step keeps only the inherited share of it (`trajdebug.analysis._sources`)."""

_SHAPE_DIGIT, _SHAPE_ALPHA = re.compile(r"\d"), re.compile(r"[A-Za-z]")


def _could_copy(raw: object, ins: Mapping[str, list[Any]]) -> bool:
    """Whether a step could have copied a value like ``raw`` from what it was given: an id (letters and
    digits, ``ZK-0101``) only when it was given some id of that shape (a lookup asked for ``all`` that
    answers records has no id to copy; one asked for ``ZK-0102`` that answers ``ZK-0101`` had one)."""
    text = str(raw)
    if not (_SHAPE_DIGIT.search(text) and _SHAPE_ALPHA.search(text)):
        return True
    shape = char_shape(text)
    return any(char_shape(str(a.raw)) == shape for vs in ins.values() for a in vs)

def _day_check(step: Step, fs: _FieldStats, f: str, atoms: Sequence[Any], operands: StepView) -> Iterator[Evidence]:
    """A field whose days were always ones the step was given (a lookup for a date answering with a reading
    or a forecast of that date, at a time of its own) now naming a day it was not given: an answer for
    another day (last night's cached reading, the previous evening's issue)."""
    day = next(
        (
            a
            for a in atoms
            if a.kind == "date" and a.key.startswith(DAY_PREFIX) and not operands.given(a) and not _zoned_near(a, operands)
        ),
        None,
    )
    if day is not None:
        yield Evidence(
            step.step_id,
            _w(0.4, fs.n),
            f"{f}={day.raw} names a day it was not given; in {fs.n} passing occurrences {f} named a day it was given",
            "reference:grounded",
        )


_ZONED = re.compile(r"(\d{4}-\d\d-\d\d)[T ][\d:.]+(?:Z|[+-]\d\d:?\d\d)", re.IGNORECASE)
"""A time stamped in a zone (UTC's ``Z``, an offset): its day is that zone's, a day off the asker's near midnight."""


def _zoned_near(a: Any, operands: StepView) -> bool:
    """Whether a zoned stamp's day is next to a day the step was given (the 17th's evening in the Americas is
    the 18th in UTC): the same day, seen from another zone."""
    m = _ZONED.fullmatch(str(a.raw).strip())
    if m is None:
        return False
    try:
        day = datetime.date.fromisoformat(m.group(1))
    except ValueError:
        return False
    near = (day + datetime.timedelta(days=d) for d in (-1, 1))
    return any(operands.given(Atom(f"{DAY_PREFIX}{n:%m-%d}", "date")) for n in near)


def _source_check(step: Step, fs: _FieldStats, f: str, atoms: Sequence[Any]) -> Iterator[Evidence]:
    """A field whose values came from one part of the step's input in every passing occurrence (a memory
    node's licence from the fresh record in the conversation) now coming from another part only (the last
    trip's record it was also handed): the step took the value from the wrong source."""
    parts = input_parts(step)
    held = held_sources(fs)
    if parts is None or not held or not held <= set(parts):
        return
    now = field_sources(parts, atoms)
    if now is None or now & held:
        return
    mine = [a for a in atoms if a.kind != "number"]
    if not _holds_other(step, held, frozenset(a.kind for a in mine), frozenset(a.key for a in mine)):
        return
    raw = next(a.raw for a in atoms if a.kind != "number")
    yield Evidence(
        step.step_id,
        _w(0.45, fs.n),
        f"{f}={raw} comes from its input's {', '.join(sorted(now))}; in {fs.n} passing occurrences "
        f"it came from {', '.join(sorted(held))}",
        "reference:source",
    )


MONTH_DAY = 0.75
"""The share of an ungrounded finding kept when the passing occurrences were given their dates by month and
day only (`_FieldStats.dated`): a rule of whole years, not a value copied."""


def _ungrounded(step: Step, f: str, fs: _FieldStats, bad: Any) -> Evidence:
    """A field whose values the step was given in every passing occurrence holding one it was not given.  When
    some passing occurrences had a date only on the month and day of one given (a warranty's end, two years
    after the purchase), the reason says so, and the finding weighs less: no value was copied there."""
    weight = _w(0.55 if step.kind == "llm" else 0.4, fs.n)
    said = f"{f}={bad.raw} is not among the values it was given; in {fs.n} passing occurrences {f} always was"
    by_day = fs.n - fs.dated
    if by_day > 0:
        weight = round(weight * (1 - (1 - MONTH_DAY) * by_day / fs.n), 3)
        # (When none was given whole, "always was" would claim what no occurrence showed: say what they did.)
        said = (
            f"{said} (in {by_day} of them only by month and day, not by year)"
            if by_day < fs.n
            else f"{f}={bad.raw} is not among the values it was given; in {fs.n} passing occurrences {f} had "
            "the month and day of a date it was given, never its year"
        )
    return Evidence(step.step_id, weight, said, "reference:grounded")


def _holds_other(step: Step, held: frozenset[str], kinds: frozenset[str], now_keys: frozenset[str]) -> bool:
    """Whether a part the field's values always came from now holds another value of their kind (the fresh
    record's hub beside the stale one, under a name of its own): a part that holds none (a returning
    customer's id already in the request, no lookup run) leaves the value nowhere else to come from."""
    if not isinstance(step.input, Mapping):
        return False
    return any(a.kind in kinds and a.key not in now_keys for part in held for a in atoms(step.input.get(part)))


def _field_checks(
    step: Step,
    view: StepView,
    st: _StepStats,
    f: str,
    fs: _FieldStats,
    outs: Mapping[str, list[Any]],
    ins: Mapping[str, list[Any]],
    passing: Profile | None = None,
    key: StepKey | None = None,
    run: Mapping[str, Step] | None = None,
    zeros: bool = True,
    siblings: bool = False,
) -> Iterator[Evidence]:
    """One output field against its invariants (``siblings``: the profile is the step's other calls in its run)."""
    sid = step.step_id
    atoms = outs.get(f)
    present_share = st.present.get(f, 0) / st.n
    if atoms is None:
        # (A model answers in different shapes from call to call: a tool call, then prose;
        # so does any step passing a model's message on, which says who speaks in `role`.)
        if (
            present_share >= 0.99
            and view.outputs
            and step.kind != "llm"
            and "role" not in outs
            and not holds_untraced(step, f)
            and f not in queue_keys(step)  # (the rest of a work queue it ran to its end: an empty list)
        ):
            # A field held as null is as absent to the lineage; the reason says so, for the person finds the key.
            what = f"its output's {f!r} is empty, filled" if holds_empty(semantic(step, step.output), f) else f"its output lacks {f!r}, present"
            yield Evidence(sid, _w(0.45, fs.n), f"{what} in all {st.n} passing occurrences", "reference:presence")
        return
    # A number worked out from its inputs (a model summing two sections' seats into an order's qty) was
    # not made up, though its other calls copied their qty: it is where the copied value came from.
    # Entries of an id-keyed memory passed whole are no inputs to copy from (`operand_view`).
    # A first tool call's name is given by the tools the model was offered (`picked_first`, asked only of a
    # name no input holds: it walks the run's earlier model calls).
    operands = operand_view(view)
    # A route the step took (its answer names the step that ran next: a router's) is a name of the program,
    # chosen, never copied (`chose_next`), against the step's other calls (a loop's router answering a word of
    # its prompt by chance).  Against passing runs it is skipped only where their answers of the step were not
    # given to it at least once, and then `fs.grounded < fs.n` already holds the check back: a router whose
    # passing runs always passed on a given label and that now made its route up (a fallback) keeps the finding.
    bad = next((a for a in atoms if not operands.given(a) and not picked_first(step, run, f, a.raw)
                and not worked_out(view, a) and not _unsigned(view, a)
                and not (siblings and chose_next(step, run, str(a.raw)))),
               None) if fs.grounded == fs.n else None
    if bad is not None and _could_copy(bad.raw, ins):
        yield _ungrounded(step, f, fs, bad)
    elif fs.days_seen == fs.n and fs.days_grounded == fs.n:
        yield from _day_check(step, fs, f, atoms, operands)
    if fs.sources_seen == fs.n >= MIN_SUPPORT:
        yield from _source_check(step, fs, f, atoms)
    given = ins.get(f)
    if fs.kept_seen >= MIN_SUPPORT and fs.kept == fs.kept_seen and given and len({a.key for a in given}) == 1:
        moved = [a for a in atoms if a.key != given[0].key]
        if moved:
            yield Evidence(
                sid,
                _w(0.55, fs.kept_seen),
                f"{f}={moved[0].raw} differs from the {f}={given[0].raw} it was given; "
                f"in {fs.kept_seen} passing occurrences it was kept",
                "reference:kept",
            )
    # A number written as either reading ("1.250": one and a quarter, or 1250 with a dot between thousands)
    # is no outlier when the other reading is what passing runs had and something says the writer may have
    # meant it (`_read_otherwise`): which one was meant is then not known.
    nums = [a for a in atoms if a.kind == "number" and a.number is not None and not read_otherwise(a, fs, view)]
    # A negative reading among positive ones is odd in one run, ordinary when passing runs had such too:
    # the passing runs know the field's range better than the step's other calls in this run.
    usual = passing is not None and all(passing_had(step, f, a.number, passing, key) for a in nums)
    if nums and len(fs.numbers) >= MIN_SUPPORT and not usual:
        yield from number_findings(sid, f, nums, atoms, fs, zeros)
    numbers = [a for a in atoms if a.kind == "number"][:20]
    if numbers and fs.formulas and step.kind != "llm":
        yield from formula_checks(sid, view, f, fs, numbers)
    yield from _category_checks(step, f, fs, atoms, view, run if siblings else None)


def _unsigned(view: StepView, a: Any) -> bool:
    """Whether an output number is a given negative number without its sign: a shortfall of -7 restated as
    7 to move, a loss as an amount; the magnitude came from the input (a sign flip is `_number_checks`')."""
    x = a.number if a.kind == "number" else None
    return x is not None and x > 0 and any(i.kind == "number" and i.number == -x for i in view.inputs)


def _category_checks(
    step: Step, f: str, fs: _FieldStats, atoms: Sequence[Any], view: StepView, run: Mapping[str, Step] | None = None
) -> Iterator[Evidence]:
    """A text value never seen in passing runs, where they always had one of a few; marked `GIVEN` when the
    step was given that value (a parse copying a model's answer): it came in with its input.  Among a step's
    calls in its run (``run``: its steps by id), not a loop's exit (`_exits_as_usual`)."""
    sid = step.step_id
    cats = [a for a in atoms if a.kind == "text"]
    text_values = {k: n for k, n in fs.values.items() if k.startswith("s:")}
    observed = sum(text_values.values())
    if (
        cats
        and step.kind != "llm"
        and text_values
        and len(text_values) <= 3
        and observed >= max(MIN_SUPPORT, 2 * len(text_values))
    ):
        new = [a for a in cats if a.key not in text_values]
        if len(text_values) > 1:
            # A stamp holding a day (``2027-05-11T06Z``) that passing runs already wrote differently follows
            # each run's own input (a tide table published the day before the one asked for): a new one is
            # the next day, not a new category.  One stamp shared by every passing run still says something.
            days = [a.raw for a in atoms if a.kind == "date" and a.key.startswith(DAY_PREFIX)]
            new = [a for a in new if not any(d in a.raw for d in days)]
        if new and not _exits_as_usual(step, new[0].raw, run):
            usual = ", ".join(repr(fs.raws[k]) for k in list(text_values)[:3])
            # A value unseen in n observations may still have a share up to 3/n (the rule
            # of three, Hanley & Lippman-Hand 1983): few observations say little about a
            # category, unlike a structural invariant (a value always copied).
            shapes = [str(fs.raws[k]).casefold() for k in text_values]
            parts = [a.raw if view.given(a) else _wrapped(a, view, shapes) for a in new]
            copied = all(parts)
            yield Evidence(
                sid,
                round((0.45 if len(text_values) == 1 else 0.3) * max(0.0, 1.0 - 3.0 / observed), 3),
                f"{f}={new[0].raw}, never seen in passing runs (always {usual})" + (GIVEN if copied else ""),
                "reference:category",
                values=tuple(str(p) for p in parts[:1]) if copied else (),
                given=copied,
            )


def _exits_as_usual(step: Step, value: str, run: Mapping[str, Step] | None) -> bool:
    """Whether a value new among a step's other calls in its run is how its loop ends (nu25 F4): the step's last
    call in the run, whose value names the step that ran next (a routing function sending the run out of the
    loop: every loop ends once).  Only among its calls in the run (``run`` given): against the passing runs, a
    value they never had stays a finding; a value naming a step that ran later, not next, or one the passing
    runs' calls had (a possible category, not an exit) excuses nothing (review rev52u M2)."""
    if run is None:
        return False
    after = list(run.values())
    at = next((i for i, s in enumerate(after) if s.step_id == step.step_id), None)
    if at is None:
        return False
    later = [s for s in after[at + 1 :] if s.parent_id != step.step_id]
    if any(s.name == step.name and s.kind == step.kind and s.agent == step.agent for s in later):
        return False
    return bool(later) and later[0].name == value


def _wrapped(atom: Any, view: StepView, usual: Sequence[str]) -> str | None:
    """The value the step was given that a text holds inside the wording every passing value has too (a tool
    echoing its argument, ``saved: <note>``): what differs is the given part, which came in with the input."""
    raw = atom.raw.casefold()
    for a in sorted((a for a in view.inputs if a.kind == "text"), key=lambda a: len(a.raw), reverse=True):
        g = a.raw.casefold()
        if len(g) >= 3 and g in raw:
            before, after = raw.split(g, 1)
            same = bool(before or after) and all(u.startswith(before) and u.endswith(after) for u in usual)
            return a.raw if same else None
    return None


def _shape_checks(step: Step, st: _StepStats, outs: Mapping[str, list[Any]], min_runs: int) -> Iterator[Evidence]:
    """A field no passing occurrence had, when the step's output has a fixed set of fields
    (a record, not a mapping keyed by data such as names or dates)."""
    sid = step.step_id
    if step.kind != "llm" and st.n >= MIN_SUPPORT and len(st.runs) >= min_runs and len(st.schemas) == 1:
        new = [f for f in outs if f not in st.fields and not any(f in sch for sch in st.schemas)]
        # (A bare value where the others returned a structure, or the reverse, is a change of
        # shape, as a router's last call ending a loop, not a new field.)
        if new and new[0] != OUTPUT_FIELD and OUTPUT_FIELD not in st.fields:
            yield Evidence(
                sid,
                _w(0.3, st.n),
                f"its output has {new[0]!r}, a field none of {st.n} passing occurrences had",
                "reference:new-field",
            )


def unseen(step: Step, profile: Profile, steps: Mapping[str, Step] | None = None) -> Evidence | None:
    """Evidence that a step never appears in the agent's passing runs (a path they never took); ``steps``:
    its run's steps by id (`step_key`)."""
    if profile.knows(step, steps) or step.kind in CONTAINER_KINDS or step.kind in ("input", "output"):
        return None
    n = len(profile.runs)
    if n < 2:
        return None
    return Evidence(
        step.step_id, 0.25, f"no passing run of this agent ({n}) has a step like it", "reference:unseen"
    )


__all__ = [
    "MIN_SUPPORT",
    "Profile",
    "StepKey",
    "passing_had",
    "returns_empty",
    "step_key",
    "unseen",
    "violations",
]
