"""Signs a step sets by a rule of its input, told from its other calls in the run.

`lineage:altered` flags an output number that is a given number with its sign
flipped (``mwh=-4032`` from ``mwh=4032``): a sign lost or gained by mistake.  A
step that signs a quantity on purpose (a sale booked negative, a debit, a
deduction) trips it too.  Its other calls tell the two apart: when another call
of the same step was given that field's number with the same sign and kept it,
while the two calls were given different text under one field (``side`` buy in
one, sell in the other), the sign follows the input: it is the step's rule, and
a wrong sign is the input's.  No word is read: only the shape of the calls.

The same holds for a power of ten (``price_cents=905`` from ``price=9.05``): a step that scales a field by
the same power of ten in most of its calls (three at least) converts a unit by design; a slip made once is
the call that scales otherwise.  `scaled_by_rule` names such fields.
"""

from __future__ import annotations

from collections.abc import Iterable

from trajdebug.analysis.lineage import Lineage, StepView, power_of_ten
from trajdebug.core.model import Step


def _numbers(atoms: Iterable[object]) -> dict[str, float]:
    """Number atoms by field name (the first of each name)."""
    out: dict[str, float] = {}
    for a in atoms:
        field, number = getattr(a, "field", None), getattr(a, "number", None)
        if getattr(a, "kind", None) == "number" and field and number is not None and number != 0:
            out.setdefault(field, number)
    return out


def _texts(view: StepView) -> dict[str, str]:
    """Text and id values of a call's input by field name (the first of each name)."""
    out: dict[str, str] = {}
    for a in view.inputs:
        if a.kind in ("text", "id") and a.field:
            out.setdefault(a.field, a.key)
    return out


def _flipped(view: StepView) -> set[str]:
    """The fields whose output number is the input number of the same field with its sign turned."""
    given, got = _numbers(view.inputs), _numbers(view.outputs)
    return {f for f, y in got.items() if f in given and abs(y + given[f]) <= 1e-9 * max(1.0, abs(y))}


def _kept(view: StepView) -> set[str]:
    """The fields whose output number is the input number of the same field, sign and all."""
    given, got = _numbers(view.inputs), _numbers(view.outputs)
    return {f for f, y in got.items() if f in given and abs(y - given[f]) <= 1e-9 * max(1.0, abs(y))}


def signed_by_rule(step: Step, calls: Iterable[Step], lin: Lineage) -> frozenset[str]:
    """The output fields whose sign this step flipped as its other calls show it does by rule.

    ``calls``: the run's steps of the same name and kind (this one among them).  A
    field counts when another call of the step kept the
    same field's sign while being given the same-signed number and another text
    under some field name both calls were given.
    """
    view = lin.view(step.step_id)
    flipped = _flipped(view)
    if not flipped:
        return frozenset()
    mine, texts = _numbers(view.inputs), _texts(view)
    out: set[str] = set()
    for other in calls:
        if other.step_id == step.step_id:
            continue
        ov = lin.view(other.step_id)
        theirs, their_texts = _numbers(ov.inputs), _texts(ov)
        differ = any(f in their_texts and their_texts[f] != k for f, k in texts.items())
        if not differ:
            continue
        for f in flipped & _kept(ov):
            if f in theirs and (theirs[f] > 0) == (mine[f] > 0):
                out.add(f)
    return frozenset(out)


def _scales(view: StepView) -> dict[tuple[str, str], int]:
    """(output field, input field) -> the power of ten k with output = input * 10^k, k not 0."""
    given, got = _numbers(view.inputs), _numbers(view.outputs)
    out: dict[tuple[str, str], int] = {}
    for f, y in got.items():
        if f in given and given[f] == y:
            continue  # the field came through as it was given: nothing scaled it
        for g, x in given.items():
            k = power_of_ten(y, x)
            if k:
                out[(f, g)] = k
                break
    return out


def scaled_by_rule(step: Step, calls: Iterable[Step], lin: Lineage, least: int = 3) -> frozenset[str]:
    """The output fields this step scales by a power of ten as every one of its calls does (see the module).

    ``calls``: the run's steps of the same name and kind (this one among them).  A field counts when at least
    ``least`` calls scale it from the same input field by the same power, more than the calls given that input
    field and answering that output field that scale it otherwise (those slipped: they keep the finding), and
    its name is not the input field's (a conversion renames what it converts).
    """
    mine = _scales(lin.view(step.step_id))
    if not mine:
        return frozenset()
    agree = dict.fromkeys(mine, 1)
    differ = dict.fromkeys(mine, 0)
    for other in calls:
        if other.step_id == step.step_id:
            continue
        ov = lin.view(other.step_id)
        theirs = _scales(ov)
        given, got = _numbers(ov.inputs), _numbers(ov.outputs)
        for (f, g), k in mine.items():
            if f in got and g in given:
                if theirs.get((f, g)) == k:
                    agree[(f, g)] += 1
                else:
                    differ[(f, g)] += 1
    # A conversion renames what it converts (price -> price_cents): a field scaled into its own name by
    # every call (amount -> amount x 100) claims no new unit, and is the ordinary shape of a units slip.
    return frozenset(
        f for (f, g), n in agree.items() if n >= least and n > differ[(f, g)] and _leaf(f) != _leaf(g)
    )


def _leaf(field: str) -> str:
    return field.rsplit(".", 1)[-1].lower()


__all__ = ["scaled_by_rule", "signed_by_rule"]
