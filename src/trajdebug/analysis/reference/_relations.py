"""Relations an output number keeps with the step's inputs in passing runs, and the failing run's breaks of them.

Two of the likely invariants of `trajdebug.analysis.reference._invariants` relate an output number to the
numbers the step was given rather than describe it alone:

- **formula**: the way the number is computed from the inputs (``copy(guests)``, ``mul(price,qty)``),
  when passing runs almost always computed it one way;
- **ratio**: an output number that is always about the same multiple of an input number (a converter's
  rate, a unit factor), over all calls or per setting (``unit=lb``).

Each finding says what was measured and nothing more (issue 23, a new user's trial nu22): a ratio that
varied in passing runs is given as the range it varied in, never as "always" its mean, and weighs less than
a ratio that held to the digit; a formula the failing number happens to fit is named only when it is more
than one coincidence (it held in passing occurrences too, or its operands are not small counts, whose
products and sums land on many a number).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.lineage import Lineage, StepView, derivation, fits_formula
from trajdebug.analysis.lineage import formulas as explaining
from trajdebug.analysis.reference._profile import (
    MIN_SUPPORT,
    _FieldStats,
    _StepStats,
    operand_view,
    settings,
)
from trajdebug.core.model import Step


def support_weight(base: float, support: int) -> float:
    """A violation's weight: its base, growing with the support of the invariant (3 -> 0.8x, 10+ -> 1x)."""
    return round(base * min(1.0, 0.7 + 0.03 * support), 3)


_w = support_weight

# -- formulas ---------------------------------------------------------------------

NO_FORMULA = "no simple formula of its inputs (one operation on two of them)"
"""How a reason names a number no formula of `trajdebug.analysis.lineage.formulas` explains."""

SMALL_COUNT = 12
"""The largest whole number read as a small count (a dozen: batches, servings, items of an order): two of
them make many a number by a sum or a product, so a formula of small counts alone is no explanation."""

_PAIRWISE = frozenset({"add", "sub", "mul", "div", "pct"})
"""The operations of two given numbers (`Derivation.op`); the others copy, total or pick given values."""


def worked_out(view: StepView, a: Any) -> bool:
    """Whether an output number is the total of one field's given values (``sum(seats)``,
    `trajdebug.analysis.lineage.formulas`): a formula mixing fields (a running sum of a line number and a
    quantity) fits a transposed number by chance, a total of like values does not."""
    return a.kind == "number" and any(f.startswith("sum(") for f in explaining(view, a))


def formula_checks(
    sid: str, view: StepView, f: str, fs: _FieldStats, numbers: Sequence[Any]
) -> Iterator[Evidence]:
    """The way a number is computed from the step's inputs, when passing runs almost always computed it one
    way (a coincidence, such as a zero operand, may make a few look like another formula).

    A number deviates only when it fits none of the formulas that fit the passing runs' values as
    the usual one does (`_FieldStats.fits`, 70% of them): one that still fits the usual formula,
    or one the passing values fit as well (a sum of the quantities where they equalled the stated
    total), was computed as the passing runs computed theirs, whichever formula `derivation`
    happens to name first.  A formula that fits only some passing values (a previous proposal's
    figure, where it shares a cap with the current one) is no way they were computed.  The reason names
    the formula the number fits only when it is more than a coincidence (`_coincidence`); else it says
    what was measured: the usual formula no longer holds.
    """
    usual, count = max(fs.formulas.items(), key=lambda kv: kv[1])
    total = sum(fs.formulas.values())
    share = count / total
    if count >= MIN_SUPPORT and share >= 0.7 and usual != "given-by-no-formula" and not _constant(fs):
        operands = operand_view(view)
        nows = [(a, explaining(operands, a)) for a in numbers]
        for a, fit in nows:
            now = fit[0]
            if (
                not fits_formula(operands, a, usual)
                and fs.formulas.get(now, 0) / total < 0.15
                and not any(fs.fits.get(g, 0) / total >= 0.7 for g in fit)
                and not _as_often(now, nows, fs)
            ):
                was = spoken(usual)
                if now == "given-by-no-formula":
                    said = f"{f}={a.raw} is {NO_FORMULA}; {count} of {total} passing values were {was}"
                elif _coincidence(operands, a, now, fs):
                    said = f"{f}={a.raw} is not {was}, as {count} of {total} passing values were"
                else:
                    said = f"{f}={a.raw} is {spoken(now)}; {count} of {total} passing values were {was}"
                yield Evidence(sid, _w(0.55 * share, count), said, "reference:formula")
                break


_SPOKEN = {
    "copy": "a copy of {0}",
    "sum": "the sum of {0}",
    "run-sum": "a sum of consecutive values of {0}",
    "max": "the largest of {0}",
    "min": "the smallest of {0}",
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} x {1}",
    "div": "{0} / {1}",
    "pct": "{0} x {1} / 100",
}
"""A formula's shape (`Derivation.formula`: ``copy(line)``) as a reason says it: "a copy of line" read as a
copy of the whole field (nu25 F6), and ``div(request,request)`` as a number divided by itself (nu25 F3)."""


def spoken(shape: str) -> str:
    """A formula's shape in words: ``copy(line)`` is "a copy of a number in line", ``div(a,a)`` "a number of a /
    another number of a"; a shape it does not know, as written."""
    op, _, rest = shape.partition("(")
    fields = rest.rstrip(")").split(",") if rest else []
    said = _SPOKEN.get(op)
    if said is None or not fields or (op in _PAIRWISE and len(fields) != 2):
        return shape
    if op not in _PAIRWISE:
        return said.format(" and ".join(fields)).replace("a copy of ", "a copy of a number in ", 1)
    a, b = fields
    return said.format(a, b) if a != b else said.format(f"a number of {a}", f"another number of {b}")


def _coincidence(operands: StepView, a: Any, now: str, fs: _FieldStats) -> bool:
    """Whether the formula a failing number fits, which no passing occurrence's numbers fit, may be chance:
    one of two given small counts (8 servings x 5 lemons = 40 portions, where 5 was also the number of
    batches), or a given number plus or minus a small count (45 guests - 5 lemons), which any number within a
    dozen of a given one fits.  A formula that held in passing occurrences, or a product or a sum of numbers
    that are no small counts (a price, a rate), explains the number."""
    if fs.fits.get(now, 0) > 0:
        return False
    d = derivation(operands, a)
    # (A sum of two consecutive given values is their addition.)
    op = "add" if d is not None and d.op == "run-sum" and len(d.operands) == 2 else d.op if d is not None else ""
    if d is None or op not in _PAIRWISE:
        return False
    if op == "div" and a.number == 0:
        # A quotient written as 0 is any small number over a large one, rounded (a room's 0 W as its area over
        # the house's description's numbers; nu25 F3): no computation it names.
        return True
    small = [o.number is not None and o.number == int(o.number) and abs(o.number) <= SMALL_COUNT for o in d.operands]
    return all(small) or (op in ("add", "sub") and any(small))


def _constant(fs: _FieldStats) -> bool:
    """Whether the field held 0 in most passing occurrences (a shortfall of 0 in each): the formulas a zero
    fits are coincidences (0 is the quotient of any small amounts, rounded).  Any other value held while its
    operands varied (nights = checkout - checkin, three every time) is an ordinary rule: it keeps its formula."""
    top = Counter(fs.numbers).most_common(1)
    return bool(top) and top[0][0] == 0 and top[0][1] >= 0.7 * len(fs.numbers)


def _as_often(now: str, nows: Sequence[tuple[Any, tuple[str, ...]]], fs: _FieldStats) -> bool:
    """True when passing occurrences computed numbers the unusual way at least as often as this one does
    (a closing total in every run's text, written once per occurrence): the exception is theirs too."""
    seen = fs.formulas.get(now, 0)
    return seen > 0 and sum(1 for _, fit in nows if fit[0] == now) <= seen / max(fs.n, 1)


# -- ratios -----------------------------------------------------------------------

ROUNDING = 0.005
"""How far (relative to their mean) ratios may part and still be one factor written at the precision of its
outputs (an amount rounded to the cent), at least; outputs written coarser allow more (`_rounding`); up to
`FACTOR_SPREAD` they are a factor that varied."""

FAR = 10.0
"""How many widths of the passing ratios' range a failing ratio must lie beyond it for their variation not
to matter: a rate of 1.8 against passing 1.073 to 1.086 breaks the factor however it moved."""

FACTOR_SPREAD = 0.02
"""How far (relative to their mean) ratios may part and still be read as about one factor."""

VARIED = 0.5
"""The share of a ratio finding kept when the passing ratios varied beyond rounding: a factor that moved
(a price per day over 6100/9 and 5917/9) is a weaker rule than one that held."""


def _usual(ratios: Sequence[float], now: float, outputs: Sequence[float]) -> tuple[float, str, float] | None:
    """The factor ``ratios`` keep: (their mean, the words for what they were, the share of a finding on the
    ratio ``now`` kept); None when they part by more than `FACTOR_SPREAD` (no factor) or their mean is 0.
    "always 0.92" only when every ratio reads so at four digits; else the range they spanned.  They weigh
    half (`VARIED`) when they parted by more than the rounding of the ``outputs`` they were read from, and
    ``now`` lies within `FAR` widths of their range."""
    mean = sum(ratios) / len(ratios)
    if mean == 0:
        return None
    spread = max(abs(r - mean) for r in ratios) / abs(mean)
    if spread > FACTOR_SPREAD:
        return None
    lo, hi = f"{min(ratios):.4g}", f"{max(ratios):.4g}"
    if lo == hi:
        return mean, f"always {lo}", 1.0
    width = max(ratios) - min(ratios)
    far = max(min(ratios) - now, now - max(ratios)) > FAR * width
    return mean, f"{lo} to {hi}", 1.0 if far or spread <= _rounding(outputs) else VARIED


def _rounding(outputs: Sequence[float]) -> float:
    """How far (relative) ratios read from ``outputs`` part by rounding alone: an output written to a unit
    ``u`` (a whole dollar, a cent, as the most precise of them shows) is off by up to ``u/2``, so two ratios
    by up to ``u`` over the smallest output (whole dollars of 42 to 68: 2.4 %); never less than `ROUNDING`."""
    nums = [abs(y) for y in outputs if y and math.isfinite(y)]
    if not nums:
        return ROUNDING
    places = max(len(f"{y:.6f}".rstrip("0").partition(".")[2]) for y in nums)
    return max(ROUNDING, 10.0**-places / min(nums))


def ratio_checks(
    sid: str, outs: Mapping[str, list[Any]], ins: Mapping[str, list[Any]], st: _StepStats
) -> Iterator[Evidence]:
    """An output number that is not the multiple of an input number the passing runs (nearly) always had."""
    for (fo, fi), ratios in st.ratios.items():
        if len(ratios) < MIN_SUPPORT:
            continue
        o, i = outs.get(fo), ins.get(fi)
        if not o or not i or len(o) != 1 or len(i) != 1 or o[0].number is None or not i[0].number:
            continue
        fs = st.fields.get(fo)
        usual = _usual(ratios, o[0].number / i[0].number, fs.numbers if fs is not None else ())
        if usual is None:
            continue  # not a constant factor
        if fs is not None and len(set(fs.numbers)) <= 1:
            # The output never changed: a constant factor of two constants says only that each was
            # constant (a count of 2 over a threshold of 7.5 on every passing input), no relation.
            continue
        mean, was, kept = usual
        r = o[0].number / i[0].number
        if abs(r - mean) / abs(mean) > 0.05:
            # (Only when the number it is measured against is of the size passing runs gave, within an order of
            # magnitude: a divisor a hundred times off broke the ratio itself, and its maker is the suspect.)
            nums = [abs(x / mean) for x in (fs.numbers if fs is not None else ()) if x]
            usual_size = bool(nums) and min(nums) / 10 <= abs(i[0].number) <= max(nums) * 10
            copied = relayed(fo, fi, o[0].number, ins, st) if usual_size else None
            yield Evidence(
                sid,
                round(_w(0.6, len(ratios)) * kept, 3),
                f"{fo}/{fi} = {r:.4g}; in {len(ratios)} passing occurrences it was {was}"
                + (_PASSED_ON.format(copied) if copied else ""),
                "reference:ratio",
                values=(o[0].raw,) if copied else (),
                given=copied is not None,
            )
            return


_PASSED_ON = " (it passed on its input's {} unchanged, as it always did)"
"""What a ratio's finding adds when the step relayed its number (`relayed`), naming the input field it copied."""
_INDEX = re.compile(r"\[\d*\]")
"""A list position in a field's path."""


def relayed(fo: str, fi: str, x: float, ins: Mapping[str, list[Any]], st: _StepStats) -> str | None:
    """The input field, other than ``fi``, that gave the step an output number ``x`` and whose value the output
    copied unchanged in every passing occurrence (a model handing a tool's ``refund_eur`` on as its call's
    ``amount_eur``); None when there is none.  The step relayed the value as it always does, and a broken
    ratio came in with it (issue 24, nu24 F4).  A step that copied a field it never copied in passing runs (a net amount where it
    always handed on the gross) chose the wrong value: not relayed."""
    for fs, given in ins.items():
        if fs == fi or len(given) != 1 or given[0].number is None or not math.isclose(given[0].number, x):
            continue
        seen = st.ratios.get((fo, fs), [])
        if len(seen) >= MIN_SUPPORT and all(math.isclose(q, 1.0, rel_tol=1e-6) for q in seen):
            return fs
    return _usual_copy(fo, fi, x, ins, st)


def _usual_copy(fo: str, fi: str, x: float, ins: Mapping[str, list[Any]], st: _StepStats) -> str | None:
    """The input field, other than ``fi``, that every passing value of ``fo`` was a copy of (``copy(g)`` among the
    formulas each value fits, at least `MIN_SUPPORT` of them: read from every fit, not the formula named first, which
    is an accident of input order), when every value the step was given under it is ``x``; None otherwise.  A step
    that did more than copy in any passing run (converted a unit, multiplied by a count, took off a coupon) and
    forgot to here is no relay: it is the step that went wrong (revmiss63b's probes).  A field given in several
    places (a record and the conversation repeating it) has no single-valued ratio in the profile, yet the step
    copied it as it always did: the broken ratio came in with the copy, and the relay is no more its origin than
    when the field was given once."""
    fs = st.fields.get(fo)
    if fs is None or not fs.formulas:
        return None
    total = sum(fs.formulas.values())
    for shape, n in fs.fits.items():
        op, _, field = shape.rstrip(")").partition("(")
        if op != "copy" or field == fi or n < max(MIN_SUPPORT, total):
            continue
        given = ins.get(field, [])
        if given and all(a.number is not None and math.isclose(a.number, x) for a in given):
            return field
    return None


def _copied_field(reason: str) -> str | None:
    """The name of the input field a ratio's finding says the step passed on (`_PASSED_ON`), read back from its
    sentence (the finding carries no other record of it): the last segment, lower case; None when it names none."""
    head, _, tail = _PASSED_ON.partition("{}")
    if head not in reason:
        return None
    return _INDEX.sub("", reason.partition(head)[2].partition(tail)[0]).rsplit(".", 1)[-1].lower()


def relayed_source(lin: Lineage, steps: Mapping[str, Step], sid: str, e: Evidence) -> list[Evidence]:
    """A broken ratio whose output number the step handed on unchanged (`relayed`), moved to the step of
    ``steps`` (the failure's slice) that introduced the number, by lineage: the relay keeps the inherited share
    (issue 24, nu24 F4: a model passing a tool's refund on was blamed for the refund).  No producer in the
    slice (the run was given the number), or one that computed it from its inputs (its own profile checks its
    formula): none moved.  Nor one that held the number under another field than the relay was given it
    under: a model answering 45 as a refund is no copy of a tool's 45 days, whatever lineage says (a two-digit
    answer is often somewhere upstream by chance)."""
    if e.diagnoser != "reference:ratio" or not e.values:
        return []
    atom = next((a for a in lin.view(sid).outputs if a.kind == "number" and a.raw == e.values[0]), None)
    if atom is None:
        return []
    found = lin.origin(atom, lin.pos[sid], within=set(steps))
    if found.step_id is None or found.step_id == sid or found.step_id not in steps or found.derived_from:
        return []
    if found.atom.field is not None and found.atom.field != _copied_field(e.reason):
        return []
    said = f"produced {found.atom.raw}, which {steps[sid].name} passed on unchanged: {e.reason}"
    return [Evidence(found.step_id, e.suspicion, said, e.diagnoser)]


def setting_ratio_checks(
    step: Step, outs: Mapping[str, list[Any]], ins: Mapping[str, list[Any]], st: _StepStats
) -> Iterator[Evidence]:
    """An output number that is not the multiple of an input number the passing runs always had for the
    same setting (``unit=lb``: 453.6 grams an amount): a converter's factor per unit, a rate per currency.
    Over all calls the ratio varies with the setting, so `ratio_checks` sees no relation.  The passing
    calls must have given at least two different input numbers: one repeated call shows no factor."""
    mine = set(settings(step))
    for (fo, fi, setting), seen in st.unit_ratios.items():
        if setting not in mine or len(seen) < MIN_SUPPORT or len({x for _, x in seen}) < 2:
            continue
        o, i = outs.get(fo), ins.get(fi)
        if not o or not i or len(o) != 1 or len(i) != 1 or o[0].number is None or not i[0].number:
            continue
        ratios = [r for r, _ in seen]
        fs = st.fields.get(fo)
        usual = _usual(ratios, o[0].number / i[0].number, fs.numbers if fs is not None else ())
        if usual is None:
            continue  # not a constant factor for this setting
        mean, was, kept = usual
        r = o[0].number / i[0].number
        if abs(r - mean) / abs(mean) > 0.05:
            yield Evidence(
                step.step_id,
                round(_w(0.6, len(ratios)) * kept, 3),
                f"{fo}/{fi} = {r:.4g} with {setting}; in {len(ratios)} passing occurrences with {setting} "
                f"it was {was}",
                "reference:ratio",
            )
            return


__all__ = ["NO_FORMULA", "formula_checks", "ratio_checks", "relayed", "relayed_source", "setting_ratio_checks", "support_weight", "worked_out"]
