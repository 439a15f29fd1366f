"""The range checks of an output field's numbers against the passing runs': sign, order of magnitude, a zero.

Split from `trajdebug.analysis.reference._invariants` (which learns and checks the other likely invariants).
A number is compared only with passing numbers written in its unit word (``500 mg`` with the field's other
``mg`` values, never with its ``50 micrograms``; ``1 day`` and ``3 days``, ``9%`` and ``20 percent`` are one unit
as `Lexicon.unit` spells them): a unit after the number that differs says the two are not comparable, and a unit the field's passing values changed between says its scale follows the writer's choice
of unit (`like_units`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.lineage import StepView
from trajdebug.analysis.reference._profile import (
    MIN_SUPPORT,
    Profile,
    StepKey,
    _FieldStats,
    step_key,
    unit_word,
)
from trajdebug.analysis.reference._relations import support_weight as _w
from trajdebug.core.model import Step


def number_findings(
    sid: str, f: str, nums: Sequence[Any], atoms: Sequence[Any], fs: _FieldStats, zeros: bool
) -> list[Evidence]:
    """What the range checks find in a field's numbers (``nums``: number atoms), each unit's numbers against
    the passing numbers of that unit (`_unit_checks`, said as `_told_apart` says it); when they find nothing
    and ``zeros`` (see `violations`), a zero the profile never had (`_zero_check`)."""
    found = list(_told_apart(_unit_checks(sid, f, nums, fs), f, atoms, fs))
    return found or (list(_zero_check(sid, f, [a.number for a in nums], atoms, fs)) if zeros else [])


def like_units(fs: _FieldStats, unit: str) -> _FieldStats | None:
    """The field's passing numbers a number written in ``unit`` (`unit_word`, "" for none) is compared with.

    All of them when they were all written in that unit (a bare number's field, an ``mg`` dose's); those of
    that unit when every passing occurrence wrote one in it (a text stating several quantities, each in its
    own word: ``3 probes, moisture 41%``); None when some occurrence wrote the field in another unit instead
    (``20 mg``, ``50 micrograms``, ``5 mg``): its numbers' scale changes with the unit, and no range holds.
    A unit no passing number was written in is compared with them all, only to be said as such (`_told_apart`:
    a unit they never wrote, not a number out of their range)."""
    units = set(fs.units)
    if units <= {unit} or unit not in units:
        return fs
    same = [x for x, u in zip(fs.numbers, fs.units, strict=False) if u == unit]
    if len(same) < max(MIN_SUPPORT, fs.n):
        return None
    return dataclasses.replace(fs, numbers=same, units=[unit] * len(same))


def _unit_checks(sid: str, f: str, nums: Sequence[Any], fs: _FieldStats) -> Iterator[Evidence]:
    """`_number_checks` of each unit's numbers in turn (in the order written), against `like_units`; the first
    finding."""
    by_unit: dict[str, list[float]] = {}
    for a in nums:
        by_unit.setdefault(unit_word(a), []).append(a.number)
    for unit, xs in by_unit.items():
        like = like_units(fs, unit)
        found = None if like is None else next(_number_checks(sid, f, xs, like), None)
        if found is not None:
            yield found
            return


def _told_apart(found: Iterable[Evidence], f: str, atoms: Sequence[Any], fs: _FieldStats) -> Iterator[Evidence]:
    """A range violation said as what it is when the number is in a unit word the passing values never had: no
    reading "10x outside" theirs, whose unit differs.  A text states several quantities, each with its unit
    word (``3 probes, moisture 41%``): when one is written as the passing values were and lies in their range,
    the number is a quantity they never stated (a changed format, a count beside the reading); otherwise it
    is written in a unit they never wrote (``3560 F`` where they wrote ``C``).  Same weight, true words."""
    seen = set(fs.units)
    nums = [a for a in atoms if a.kind == "number" and a.number is not None]
    # Only a number in a unit word vouches for the text: a bare count or batch number in range says
    # nothing of the reading beside it.
    kept = next((a for a in nums if unit_word(a) and unit_word(a) in seen and _in_units(a, fs)), None)
    new = [a for a in nums if unit_word(a) not in seen]
    for e in found:
        a = next((a for a in new if e.reason.startswith(f"{f}={a.number:g} ")), None)
        if a is None or e.diagnoser != "reference:magnitude":
            yield e
            continue
        if kept is not None:
            said = f"{f} states {a.raw} {a.unit or ''}".rstrip()
            said += f", a quantity passing runs never wrote (its {kept.raw} is as theirs were)"
        else:
            named = sorted(u for u in seen if u)
            theirs = f"they wrote {', '.join(named)}" if named else "theirs had none"
            said = f"{f} states {a.raw} {a.unit}, a unit" if a.unit else f"{f} states {a.raw} with no unit, a way"
            said += f" passing runs never wrote it ({theirs})"
        yield dataclasses.replace(e, reason=said)


def _in_units(a: Any, fs: _FieldStats) -> bool:
    """Whether a number atom lies in the passing range of the numbers written in its unit (`like_units`)."""
    like = like_units(fs, unit_word(a))
    return like is not None and _in_range(a.number, like)


_GROUPED = re.compile(r"\s*([1-9]\d{0,2})[.,](\d{3})(?![\d.,])")
"""A number written with one separator before three digits ("1.250", "6,100"): a decimal point or comma in
one locale, a thousands separator in another ("0.160" is no thousands: no group starts with a zero)."""


def read_otherwise(a: Any, fs: _FieldStats, view: StepView) -> bool:
    """Whether a number written either way (`_GROUPED`) reads, the other way, as a number in the field's
    passing range, and the other reading has support: the step wrote it as it was given it (a copy of the
    user's "1.250", whose reading is the writer's, upstream), or the field's passing values were written in
    the other convention ("2,4" with a decimal comma).  A code step printing 1250 as "1,250" where passing
    runs wrote "2.4" made a thousands value: that it also reads as 1.25 is a coincidence of the separator."""
    m = _GROUPED.match(str(a.raw))
    if m is None:
        return False
    whole, tail = m.groups()
    readings = {float(f"{whole}.{tail}"), float(whole + tail)}
    others = [x for x in readings if abs(x - a.number) > 1e-9]
    if not others or not _in_range(others[0], fs):
        return False
    raw = str(a.raw).strip().casefold()
    copied = re.search(rf"(?<![\d.,]){re.escape(raw)}(?![\d]|[.,]\d)", view.in_text) is not None
    sep = str(a.raw).strip()[len(whole)]
    # The other convention shows in a passing value only where its separator cannot be the reading here
    # used: a decimal mark before other than three digits, a thousands mark twice or before the decimal one.
    shown = f"{sep}decimal" if others[0] < a.number else f"{sep}thousands"
    return copied or shown in fs.marks


def _in_range(x: float, fs: _FieldStats) -> bool:
    return next(_number_checks("", "", [x], fs), None) is None


def _number_checks(sid: str, f: str, nums: Sequence[float], fs: _FieldStats) -> Iterator[Evidence]:
    ref = fs.numbers
    if all(x >= 0 for x in ref) and any(x < 0 for x in nums):
        bad = next(x for x in nums if x < 0)
        yield Evidence(
            sid, _w(0.5, len(ref)), f"{f}={bad:g} is negative; it never was in passing runs", "reference:sign"
        )
        return
    if all(x <= 0 for x in ref) and any(x > 0 for x in ref + list(nums)) and any(x > 0 for x in nums):
        bad = next(x for x in nums if x > 0)
        yield Evidence(
            sid, _w(0.5, len(ref)), f"{f}={bad:g} is positive; it never was in passing runs", "reference:sign"
        )
        return
    mags = [math.log10(abs(x)) for x in ref if x]
    if len(mags) < MIN_SUPPORT:
        return
    lo, hi = min(mags), max(mags)
    if hi - lo > 2.5:
        return  # the field spans too many orders of magnitude to say what is odd
    for x in nums:
        if not x:
            continue
        m = math.log10(abs(x))
        off = max(lo - m, m - hi)
        if off >= 0.9:
            yield Evidence(
                sid,
                _w(0.5 if off >= 1.5 else 0.35, len(mags)),
                f"{f}={x:g} is about {10 ** round(off):g}x outside what passing runs had "
                f"({10**lo:.3g} to {10**hi:.3g})",
                "reference:magnitude",
            )
            return


def _zero_check(sid: str, f: str, nums: Sequence[float], atoms: Sequence[Any], fs: _FieldStats) -> Iterator[Evidence]:
    """A zero in a field where every passing occurrence had a number and none had zero (a rate looked up
    as 0.0 by a key that missed, where passing runs had 0.08 to 0.15): the magnitude check cannot see it
    (a zero has no order of magnitude) nor the sign check (zero has no sign).  Only a field that held
    bare numbers, in every passing occurrence and now: a number read out of a text ("0 results") is
    a count that text may well state, and a text value beside the numbers says the field is no number.
    Nor a field whose passing numbers were all whole: a count, whose zero is "none" (no loans out, no
    seats held, no places free), which any count reaches; a fraction among them (a rate, a measure, an
    amount in cents) says the field is a quantity, whose zero is rather a default put for a value not found."""
    ref = fs.numbers
    if fs.values or 0.0 not in nums or 0.0 in ref or any(a.kind != "number" for a in atoms):
        return
    if all(x == int(x) for x in ref):
        return
    lo, hi = min(ref), max(ref)
    # (A field seen once per run says "runs"; one seen several times per run counts its occurrences.)
    seen = f"{fs.n} passing runs" if fs.n == len(fs.runs) else f"{fs.n} passing occurrences"
    yield Evidence(
        sid,
        _w(0.5, len(ref)),  # the magnitude check's weight for a number far (1.5+ orders) outside the range
        f"{f}=0 where every one of {seen} had a non-zero value ({lo:g} to {hi:g})",
        "reference:zero",
    )


def passing_had(step: Step, f: str, x: float, profile: Profile, key: StepKey | None = None) -> bool:
    """Whether the passing runs had numbers like ``x`` in this step's field ``f``: its sign and its magnitude
    (the checks of `violations` find nothing in it), with the support those checks need.  ``key``: the
    step's key when its run's steps gave it a role (`step_key`).  Not whether it is a zero they never had
    (`_zero_check`): asked of each number of a field, a zero answered no would open the sibling range checks
    of the field's other numbers, which the passing runs had; and the zero check is no sibling check."""
    st = profile.steps.get(key if key is not None else step_key(step))
    fs = None if st is None else st.fields.get(f)
    if fs is None or len(fs.numbers) < MIN_SUPPORT or len(fs.runs) < 2:
        return False
    return next(_number_checks(step.step_id, f, [x], fs), None) is None


__all__ = ["like_units", "number_findings", "passing_had", "read_otherwise"]
