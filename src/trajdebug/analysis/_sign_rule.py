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

from collections import Counter
from collections.abc import Iterable, Sequence

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


def _scales(given: dict[str, float], got: dict[str, float]) -> dict[tuple[str, str], int]:
    """(output field, input field) -> the power of ten k with output = input * 10^k, k not 0 (numbers by field)."""
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


class CallRules:
    """`signed_by_rule` and `scaled_by_rule` for every step of one run, each call's numbers read once.

    Both judge a step by its other calls (the run's steps of the same name and kind): asked of each call of a
    step in turn, reading every other call again made them quadratic in the calls of one step (a tool
    called 10,000 times was read 10^8 times).  Here each call's numbers and scales are read once, and the
    tally of the calls agreeing on a scale is kept per group of calls (``calls``: the same list object for
    every step of the group, as `local_evidence` passes it), so a step costs its own reading.
    """

    def __init__(self, lin: Lineage) -> None:
        self._lin = lin
        self._calls: dict[str, tuple[dict[str, float], dict[str, float], dict[tuple[str, str], int]]] = {}
        self._groups: dict[int, _Group] = {}

    def _read(self, sid: str) -> tuple[dict[str, float], dict[str, float], dict[tuple[str, str], int]]:
        """A call's input numbers, output numbers and scales (`_scales`), read once."""
        hit = self._calls.get(sid)
        if hit is None:
            view = self._lin.view(sid)
            given, got = _numbers(view.inputs), _numbers(view.outputs)
            hit = self._calls[sid] = (given, got, _scales(given, got))
        return hit

    def signed(self, step: Step, calls: Iterable[Step]) -> frozenset[str]:
        """The output fields whose sign this step flipped as its other calls show it does by rule.

        ``calls``: the run's steps of the same name and kind (this one among them).  A field counts when
        another call of the step kept the same field's sign while being given the same-signed number and
        another text under some field name both calls were given.
        """
        view = self._lin.view(step.step_id)
        flipped = _flipped(view)
        if not flipped:
            return frozenset()
        mine, texts = self._read(step.step_id)[0], _texts(view)
        out: set[str] = set()
        for other in calls:
            if other.step_id == step.step_id:
                continue
            ov = self._lin.view(other.step_id)
            their_texts = _texts(ov)
            differ = any(f in their_texts and their_texts[f] != k for f, k in texts.items())
            if not differ:
                continue
            theirs = self._read(other.step_id)[0]
            for f in flipped & _kept(ov):
                if f in theirs and (theirs[f] > 0) == (mine[f] > 0):
                    out.add(f)
        return frozenset(out)

    def scaled(self, step: Step, calls: Sequence[Step], least: int = 3) -> frozenset[str]:
        """The output fields this step scales by a power of ten as every one of its calls does (see the module).

        ``calls``: the run's steps of the same name and kind (this one among them).  A field counts when at
        least ``least`` calls scale it from the same input field by the same power, more than the calls given
        that input field and answering that output field that scale it otherwise (those slipped: they keep
        the finding), and its name is not the input field's (a conversion renames what it converts).
        """
        mine = self._read(step.step_id)[2]
        if not mine:
            return frozenset()
        group = self._group(calls)
        # (The step itself agrees with its own scale: counted once, among the calls or not, however many times
        # its id is listed: review rev46p M1, a run listing a step twice made it agree with itself twice.)
        own = 1 - group.ids.get(step.step_id, 0)
        out: set[str] = set()
        for (f, g), k in mine.items():
            agree = group.agree.get((f, g, k), 0) + own
            differ = group.answered(f, g) - group.agree.get((f, g, k), 0)
            # A conversion renames what it converts (price -> price_cents): a field scaled into its own name
            # by every call (amount -> amount x 100) claims no new unit, and is the ordinary shape of a slip.
            if agree >= least and agree > differ and _leaf(f) != _leaf(g):
                out.add(f)
        return frozenset(out)

    def _group(self, calls: Sequence[Step]) -> _Group:
        """The tally of one group of calls, made on its first step (kept with the list, so its id is its own)."""
        hit = self._groups.get(id(calls))
        if hit is None or hit.calls is not calls:
            read = [self._read(c.step_id) for c in calls]
            hit = self._groups[id(calls)] = _Group(calls, Counter(c.step_id for c in calls), read)
        return hit


class _Group:
    """The calls of one step: how many scale each (output field, input field) by each power, and how many were
    given the input field and answered the output field (counted per pair when first asked)."""

    def __init__(
        self,
        calls: Sequence[Step],
        ids: Counter[str],
        read: list[tuple[dict[str, float], dict[str, float], dict[tuple[str, str], int]]],
    ) -> None:
        self.calls, self.ids, self._read = calls, ids, read
        self.agree: dict[tuple[str, str, int], int] = {}
        for _, _, scales in read:
            for (f, g), k in scales.items():
                self.agree[(f, g, k)] = self.agree.get((f, g, k), 0) + 1
        self._answered: dict[tuple[str, str], int] = {}

    def answered(self, f: str, g: str) -> int:
        """How many calls were given input field ``g`` and answered output field ``f``."""
        n = self._answered.get((f, g))
        if n is None:
            n = self._answered[(f, g)] = sum(1 for given, got, _ in self._read if f in got and g in given)
        return n


def signed_by_rule(step: Step, calls: Iterable[Step], lin: Lineage) -> frozenset[str]:
    """`CallRules.signed` of one step (a run's many steps share one `CallRules`)."""
    return CallRules(lin).signed(step, calls)


def scaled_by_rule(step: Step, calls: Sequence[Step], lin: Lineage, least: int = 3) -> frozenset[str]:
    """`CallRules.scaled` of one step (a run's many steps share one `CallRules`)."""
    return CallRules(lin).scaled(step, calls, least)


def _leaf(field: str) -> str:
    return field.rsplit(".", 1)[-1].lower()


__all__ = ["CallRules", "scaled_by_rule", "signed_by_rule"]
