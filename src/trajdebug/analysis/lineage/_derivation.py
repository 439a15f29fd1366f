"""Derivations: a number or a date a step worked out from what it was given (a sum, a difference, a product
or ratio of two, an extreme, a percentage, a date plus days, a time plus minutes), so its origin is its
operands' (`trajdebug.analysis.lineage.Lineage.operands`).  Matched at the precision the value was written
with, the formulas tried in a fixed order, the looser ones last."""

from __future__ import annotations

import datetime
import functools
import math
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass

from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.analysis.lineage._views import StepView, trivial
from trajdebug.core.values import Atom, number_key


@dataclass(frozen=True, slots=True)
class Derivation:
    """How a step computed an output number from the numbers it was given."""

    op: str
    """``copy``, ``sum`` (of one field), ``run-sum`` (of consecutive values), ``max``, ``min``,
    ``add``, ``sub``, ``mul``, ``div`` or ``pct`` (a number times a percentage over 100); for a date, ``date+days`` or ``date-days``;
    for a time of day, ``time+minutes`` or ``time-minutes``."""
    operands: tuple[Atom, ...]
    """The given numbers it was computed from."""

    @property
    def formula(self) -> str:
        """The shape of the computation, independent of the values: ``sub(on_hand,reserved)``."""
        fields = [a.field or "?" for a in self.operands]
        if self.op in ("sum", "run-sum", "max", "min", "copy"):
            fields = sorted(set(fields))
        return f"{self.op}({','.join(fields)})"


def derivation(view: StepView, atom: Atom) -> Derivation | None:
    """How an output number was computed from the step's given numbers, if a simple formula explains it.

    Tried, at the precision the output was written with: a given number as is;
    the sum of all given numbers of one field, or of a run of consecutive given
    numbers (a total over listed items); the minimum or maximum of one field;
    the sum, difference, product or ratio of two given numbers.  None for a
    value no such formula explains: the step made it up (or looked it up).
    """
    if atom.kind == "date":
        return _date_derivation(view, atom) or _time_derivation(view, atom)
    if atom.kind != "number" or atom.number is None:
        return None
    y = atom.number
    dec = _decimals(atom.raw)
    nums = [a for a in view.inputs if a.kind == "number" and a.number is not None][:60]
    if not nums:
        return None

    def close(x: float) -> bool:
        return _close(x, y, dec)

    for a in nums:
        if close(a.number or 0.0) and a.key == atom.key:
            return Derivation("copy", (a,))
    by_field: dict[str | None, list[Atom]] = {}
    for a in nums:
        by_field.setdefault(a.field, []).append(a)
    for group in by_field.values():
        if len(group) >= 2:
            vals = [a.number or 0.0 for a in group]
            if close(sum(vals)):
                return Derivation("sum", tuple(group))
            hit = [a for a in group if close(a.number or 0.0)]
            if hit and close(max(vals)):
                return Derivation("max", (hit[0],))
            if hit and close(min(vals)):
                return Derivation("min", (hit[0],))
    vals = [a.number or 0.0 for a in nums]
    for size in range(2, min(12, len(vals)) + 1):
        window = sum(vals[:size])
        for start in range(len(vals) - size + 1):
            if start:
                window += vals[start + size - 1] - vals[start - 1]
            if close(window):
                return Derivation("run-sum", tuple(nums[start : start + size]))
    for i, a in enumerate(nums[:40]):
        x = a.number or 0.0
        for b in nums[i + 1 : 40]:
            z = b.number or 0.0
            if close(x + z):
                return Derivation("add", (a, b))
            if close(x - z):
                return Derivation("sub", (a, b))
            if close(z - x):
                return Derivation("sub", (b, a))
            if close(x * z):
                return Derivation("mul", (a, b))
            if z != 0 and close(x / z):
                return Derivation("div", (a, b))
            if x != 0 and close(z / x):
                return Derivation("div", (b, a))
    if not dec:
        # A whole number rounded from a percentage fits too many pairs: only an exact one counts.
        close = functools.partial(_close, y=y)
    return _percent_of(nums[:40], close)


def _percent_of(nums: list[Atom], close: Callable[[float], bool]) -> Derivation | None:
    """A given number's given percentage (a duty of 12 % on a customs value, a 3 % pension deduction on a
    gross): ``x * p / 100`` with ``0 < p <= 100``.  Tried last, after every plain formula."""
    for a in nums:
        p = a.number or 0.0
        if not 0.0 < p <= 100.0:
            continue
        for b in nums:
            if b is not a and close((b.number or 0.0) * p / 100.0):
                return Derivation("pct", (b, a))
    return None


def formulas(view: StepView, atom: Atom) -> tuple[str, ...]:
    """Every simple formula that explains an output number, `derivation`'s first.

    A value may fit several at once: an aisle copied from a stock record equals the quantity
    given beside it; a total of the listed quantities equals the stated total when the two
    agree.  Which one `derivation` names is then an accident of input order, so a comparison
    with other runs must ask whether a formula fits, not whether it was the one named.  Besides
    `derivation`'s, the cheap ones are all tried: each given number of its key (a copy) and the
    sum of each field.  ``given-by-no-formula`` when none fits.
    """
    d = derivation(view, atom)
    if d is None:
        return ("given-by-no-formula",)
    out = [d.formula]
    if atom.kind != "number" or atom.number is None:
        return tuple(out)
    y = atom.number
    dec = _decimals(atom.raw)
    nums = [a for a in view.inputs if a.kind == "number" and a.number is not None][:60]
    by_field: dict[str | None, list[Atom]] = {}
    for a in nums:
        by_field.setdefault(a.field, []).append(a)
        if a.key == atom.key and _close(a.number or 0.0, y, dec):
            out.append(Derivation("copy", (a,)).formula)
    for group in by_field.values():
        vals = [a.number or 0.0 for a in group]
        if len(group) >= 2 and _close(sum(vals), y, dec):
            out.append(Derivation("sum", tuple(group)).formula)
    return tuple(dict.fromkeys(out))


_PAIRS: dict[str, Callable[[float, float], float | None]] = {
    "add": lambda x, z: x + z,
    "sub": lambda x, z: x - z,
    "mul": lambda x, z: x * z,
    "div": lambda x, z: x / z if z else None,
    "pct": lambda x, p: x * p / 100.0 if 0.0 < p <= 100.0 else None,
}
"""The two-operand formulas of `derivation`, by name, first operand first (``pct``: a number, then its percentage)."""


def fits_formula(view: StepView, atom: Atom, shape: str) -> bool:
    """Whether an output number fits one formula shape (`Derivation.formula`: ``mul(guests,grams)``), its
    operands taken from the given numbers of the fields it names (``?``: a number under no field).

    `formulas` lists `derivation`'s first fit and the cheap ones only: a number that is also a sum of two
    neighbouring lines (80 grams: 30 + 50) is not asked whether it is 8 guests x 10 grams.  A comparison
    with the formula other runs used asks this of that formula itself."""
    if atom.kind != "number" or atom.number is None:
        return False
    op, _, rest = shape.partition("(")
    names = rest.rstrip(")").split(",") if rest else []
    fields = [None if n == "?" else n for n in names]
    y, dec = atom.number, _decimals(atom.raw)
    nums = [a for a in view.inputs if a.kind == "number" and a.number is not None][:60]
    pair = _PAIRS.get(op)
    if pair is not None and len(fields) == 2:
        firsts = [a for a in nums if a.field == fields[0]][:40]
        seconds = [b for b in nums if b.field == fields[1]][:40]
        return any(
            (r := pair(a.number or 0.0, b.number or 0.0)) is not None and _close(r, y, dec)
            for a in firsts
            for b in seconds
            if a is not b
        )
    group = [a.number or 0.0 for a in nums if a.field in fields]
    if op == "copy":
        return any(a.field in fields and a.key == atom.key and _close(a.number or 0.0, y, dec) for a in nums)
    if op in ("sum", "max", "min") and len(group) >= 2:
        return _close(sum(group) if op == "sum" else max(group) if op == "max" else min(group), y, dec)
    if op == "run-sum":
        return any(
            _close(sum(a.number or 0.0 for a in nums[i:j]), y, dec)
            for i in range(len(nums))
            for j in range(i + 2, min(i + 12, len(nums)) + 1)
            if {a.field for a in nums[i:j]} == set(fields)
        )
    return False


def _iso(raw: str) -> datetime.date | None:
    try:
        return datetime.date.fromisoformat(raw.strip()[:10])
    except ValueError:
        return None


def _date_derivation(view: StepView, atom: Atom) -> Derivation | None:
    """A date a step computed as a given date plus or minus a given whole number of days (a
    check-out from a check-in and a number of nights, a due date from a term)."""
    want = _iso(atom.raw)
    if want is None:
        return None
    dates = [(d, a) for a in view.inputs if a.kind == "date" and a.key != atom.key and (d := _iso(a.raw)) is not None]
    days = [a for a in view.inputs if a.kind == "number" and a.number is not None and a.number == int(a.number) and 0 < abs(a.number) <= 3660]
    for d, a in dates[:20]:
        for n in days[:40]:
            step = datetime.timedelta(days=int(n.number or 0))
            try:
                if d + step == want:
                    return Derivation("date+days", (a, n))
                if d - step == want:
                    return Derivation("date-days", (a, n))
            except OverflowError:
                continue  # a sentinel date (9999-12-31, 0001-01-01) a count of days pushes off the calendar
    return None


_CLOCK = re.compile(r"^\s*(\d{1,2}):(\d{2})(?::00)?\s*$")


def _clock(raw: str) -> int | None:
    """A time of day written ``H:MM`` or ``HH:MM`` (``:00`` seconds allowed) as minutes after midnight."""
    m = _CLOCK.match(raw)
    if m is None or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        return None
    return int(m.group(1)) * 60 + int(m.group(2))


def _time_derivation(view: StepView, atom: Atom) -> Derivation | None:
    """A time of day a step computed as a given time plus or minus a given whole number of minutes (an
    arrival from a departure and a duration, a reminder before a meeting), across midnight too."""
    want = _clock(atom.raw)
    if want is None:
        return None
    times = [(t, a) for a in view.inputs if a.kind == "date" and a.key != atom.key and (t := _clock(a.raw)) is not None]
    minutes = [a for a in view.inputs if a.kind == "number" and a.number is not None and a.number == int(a.number) and 0 < a.number <= 1440]
    for t, a in times[:20]:
        for n in minutes[:40]:
            if (t + int(n.number or 0)) % 1440 == want:
                return Derivation("time+minutes", (a, n))
            if (t - int(n.number or 0)) % 1440 == want:
                return Derivation("time-minutes", (a, n))
    return None


def operands(view: StepView, atom: Atom) -> tuple[Atom, ...]:
    """The given numbers an output number was computed from (empty when copied or unexplained)."""
    d = derivation(view, atom)
    return () if d is None or d.op == "copy" else d.operands


def _close(x: float, y: float, decimals: int | None = None) -> bool:
    """Whether a computed ``x`` is the written ``y`` (at ``y``'s precision when known, else to 1e-6)."""
    if x == y:
        return True
    if decimals is not None:
        return round(x, decimals) == round(y, decimals) and (y != 0 or abs(x) < 10.0**-decimals)
    return abs(x - y) <= 1e-6 * max(1.0, abs(x), abs(y))


def _decimals(raw: str) -> int | None:
    """How many decimals a number was written with (None when it was not written as text)."""
    t = raw.strip().rstrip("%")
    if not t or not (t[-1].isdigit()):
        return None
    _, dot, tail = t.rpartition(".")
    if dot and tail.isdigit() and len(tail) != 3:
        return len(tail)
    return 0 if "." not in t and "e" not in t.lower() else None


# -- units: a number carried from one unit into a field named for another ------------------------


UNCONVERTED = 0.35
"""The suspicion of a number kept unconverted: the strength of `_anomalies`' other damaged-number finding
(a power of ten off, ``ALTERED_SCALE``), the same kind of slip; no weight fitted here."""

_NAME_WORDS = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])")


def run_units(views: Iterable[StepView]) -> frozenset[str]:
    """The units (and currencies) a run writes next to its numbers, lower case (percent left out); those
    written against their number (``120c``) too."""
    out: set[str] = set()
    for v in views:
        out.update(a.unit.lower() for a in (*v.inputs, *v.outputs) if a.kind == "number" and a.unit and a.unit != "%")
        out.update(unit for _, unit in _glued(v.in_text))
        out.update(unit for _, unit in _glued(v.out_text))
    return frozenset(out)


_GLUED = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)([a-z]{1,4})(?!\w)")
"""A number written against its unit in case-folded text (``1940f``, ``210min``, ``5kg``).  Values read such
a token as a word, not a number (``12b`` is a seat as often as a size): only the unit rule below reads it,
where the number must reappear as written under a field named for another unit."""


def _glued(text: str) -> Iterator[tuple[str, str]]:
    """The (number as written, unit) pairs of a text's numbers glued to their unit."""
    for m in _GLUED.finditer(text):
        yield m.group(1), m.group(2)


def _joins(view: StepView, a: Atom) -> bool:
    """Whether the word read as the number's unit stands between it and another number (``2 to 8``): a
    range's joint, whatever its language, not a unit."""
    unit = re.escape(a.unit or "")
    return re.search(rf"(?<![\w.]){re.escape(a.raw.strip())}\s*{unit}\s+[-+]?\d", view.in_text, re.I) is not None


def _written_as(out: str, given: str) -> bool:
    """Whether an output number is the given one as written, or its float form (``1940.0`` for ``1940``: a
    parser's ``float()``), not merely an equal value written otherwise (``12`` for ``12.0``)."""
    out, given = out.strip(), given.strip()
    return out == given or ("." not in given and given.lstrip("+-").isdigit() and out == given + ".0")


def _same_span_unit(given: str, named: str, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether two unit words are one unit of time spelt two ways (``m`` and ``min``, ``h`` and ``hrs``): both
    write a span of time after a number (`Lexicon.duration_value`) and start alike, as a span's units
    (seconds, minutes, hours, days, weeks) each do.  A ``60m`` interval under ``period_min`` is kept, not
    left unconverted."""
    g, n = given.lower(), named.lower()
    span = lexicon.duration_value
    return g[:1] == n[:1] and span.match(f"1 {g}") is not None and span.match(f"1 {n}") is not None


def relabelled(view: StepView, units: Collection[str]) -> Iterator[Evidence]:
    """An output number that is a given number written with one unit (``air 95.9 F``), kept unchanged under
    a field named for another unit the run writes numbers in (``air_c``): a unit dropped, not converted.
    The field's last word must be such a unit (``c``, ``kg``, ``usd`` where the run writes ``27.6 C``), and
    some unit word of the field no part of the given unit (``eur/kg`` under ``per_kg``: the unit was kept;
    under ``usd_per_kg``: the currency was not), the
    number must be the one written (``95.9`` for ``95.9 F``, not ``12`` for ``12.0 mL``: a coincidence), and
    the word after the given number a unit, not a word joining it to the next number (``3 to 9 °C``)."""
    if not units:
        return
    given: dict[str, Atom] = {}
    for a in view.inputs:
        if a.kind == "number" and a.unit and not trivial(a) and a.number not in (0, None) and not _joins(view, a):
            given.setdefault(a.key, a)
    for raw, unit in _glued(view.in_text):
        n = float(raw)
        if n and not (n == int(n) and -10 <= n <= 10):  # a small count is no measurement (`trivial`)
            given.setdefault(f"n:{number_key(n)}", Atom(f"n:{number_key(n)}", "number", None, unit, raw, n))
    if not given:
        return
    for y in view.outputs:
        x = given.get(y.key)
        if x is None or y.kind != "number" or not y.field or y.unit or not _written_as(y.raw, x.raw):
            continue
        words = [w.lower() for w in _NAME_WORDS.split(y.field) if w]
        last = words[-1] if words else ""
        # A field of one word names no unit: a short one is as often a quantity's abbreviation (``ta`` for an
        # acidity the run also writes after numbers) as a unit's symbol (``kg``); measured on the development
        # suites, reading it as a unit cost more cases than it found (round 42).
        if len(words) >= 2 and last in units and x.unit is not None and last != x.unit.lower():
            # The field's unit words that are no part of the given unit: none when the field names only parts
            # of a compound unit (``1.85 EUR/kg`` under ``per_kg`` or ``eur_per_kg``: the unit was kept); one
            # part alone says nothing of the rest (``2.35 EUR/kg`` under ``usd_per_kg``: the currency dropped).
            parts = x.unit.lower().split("/")
            foreign = [w for w in words if w in units and w not in parts]
            if _same_span_unit(x.unit, last) or not foreign:
                continue
            yield Evidence(
                view.step_id,
                UNCONVERTED,
                f"output {y.field}={y.raw} is the given {x.raw} {x.unit}, kept unconverted under a field named for "
                f"{foreign[-1]}",
                "lineage:altered",
            )
            return

def half_converted(view: StepView) -> Iterator[Evidence]:
    """A step that renamed its fields for another unit (``burst_psi`` to ``burst_kpa``, ``rate_psi_s`` to ``rate_kpa_s``: one
    word swapped, the same swap in every renamed field) and changed one renamed field's number but returned
    another's as it was given: a conversion applied to one value and not to its neighbour.  One renamed
    field alone says nothing (a rate of 1, a field renamed for its own sake)."""
    ins = {a.field: a for a in view.inputs if a.kind == "number" and a.field and not trivial(a)}
    pairs: dict[tuple[str, str], list[tuple[Atom, Atom]]] = {}
    for y in view.outputs:
        if y.kind != "number" or not y.field or y.field in ins:
            continue
        out_words = [w.lower() for w in _NAME_WORDS.split(y.field) if w]
        for f, x in ins.items():
            in_words = [w.lower() for w in _NAME_WORDS.split(f) if w]
            if len(in_words) != len(out_words) or len(in_words) < 2:
                continue
            diff = [(a, b) for a, b in zip(in_words, out_words, strict=True) if a != b]
            # Three letters at most: a unit's symbol (f, c, kg, lb, km); a longer word swapped is another quantity.
            if len(diff) == 1 and len(diff[0][0]) <= 3 and len(diff[0][1]) <= 3:
                pairs.setdefault(diff[0], []).append((x, y))
    for (was, now), got in pairs.items():
        kept = [(x, y) for x, y in got if x.number == y.number]
        if kept and len(kept) < len(got):
            x, y = kept[0]
            z = next((x2, y2) for x2, y2 in got if x2.number != y2.number)
            yield Evidence(
                view.step_id,
                UNCONVERTED,
                f"output {y.field}={y.raw} is the given {x.field}={x.raw} unchanged, where {z[0].field}={z[0].raw} "
                f"became {z[1].field}={z[1].raw}: renamed from {was} to {now} and left unconverted",
                "lineage:altered",
            )
            return


_SI_PREFIX = {"k": 1e3, "d": 1e-1, "c": 1e-2, "m": 1e-3, "µ": 1e-6, "u": 1e-6}
"""SI prefix symbols (language-neutral, no English words) and their factors: ``kg`` and ``g`` are one unit
scaled, so a number moved between them by a power of ten was converted."""


def _si(unit: str) -> tuple[str, float]:
    """A unit's base and its factor to that base (``kg`` -> ``g``, 1000); a unit of one letter is its own base."""
    u = unit.lower()
    if len(u) >= 2 and u[0] in _SI_PREFIX:
        return u[1:], _SI_PREFIX[u[0]]
    return u, 1.0


def misconverted(view: StepView, units: Collection[str]) -> Iterator[Evidence]:
    """An output number under a field named for a unit the run writes (``flour_g``) that is a given number
    written in another, unrelated unit (``1.4 lb``) times the factor from a third unit the run writes, kin to
    the field's (``kg`` to ``g``: 1000): the value was converted as if it were written in that unit.  No
    conversion between unrelated units is a power of ten, and the run itself shows the unit whose factor was
    used, so a coincidence needs both."""
    if not units:
        return
    given = [
        a for a in view.inputs
        if a.kind == "number" and a.unit and a.number and not trivial(a) and not _joins(view, a)
    ]
    for y in view.outputs if given else ():
        words = [w.lower() for w in _NAME_WORDS.split(y.field or "") if w]
        if y.kind != "number" or y.unit or not y.number or len(words) < 2 or words[-1] not in units:
            continue
        base, to = _si(words[-1])
        for x in given:
            xu = (x.unit or "").lower()
            if _si(xu)[0] == base or x.number is None:
                continue  # kin units: a power of ten is their conversion
            for u in sorted(units):
                ub, f = _si(u)
                if u == xu or ub != base or f == to or not math.isclose(y.number, x.number * f / to, rel_tol=1e-9):
                    continue
                yield Evidence(
                    view.step_id,
                    UNCONVERTED,
                    f"output {y.field}={y.raw} is the given {x.raw} {x.unit} converted as if it were {u}",
                    "lineage:altered",
                )
                return

