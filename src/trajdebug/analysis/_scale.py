"""A power-of-ten slip read from the failure's numbers alone: the run's number stated beside the number, limit
or range it should have met, a power of ten apart (`scale_found`), and where that slip was made (the number's
origin, a step that relabelled it under another unit, or upstream of a step that only did its habit)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis._sources import Found, Slice, _short, _written_as
from trajdebug.analysis._stated import HTTP_ERRORS
from trajdebug.analysis.lexicon import Lexicon
from trajdebug.core.model import CONTAINER_KINDS
from trajdebug.core.values import Atom, Mention, mentions


_DECADE_EXACT = 0.02
"""A fit this near (in decades, under 5 %) is a unit slip's own: the digits kept, only the point moved.  A fit
between this and `_DECADE_FIT` counts only when another pair of the failure fits the same power of ten."""

_DECADE_FIT = 0.1
"""How near a power of ten (in decades) the expected number must be to the run's times that power: a tenth of a
decade (a factor of 1.26), so a limit just missed by a number a power of ten off ("1.1 in is shorter than 9.6 in")
counts, and two numbers merely far apart (3 against 40) do not."""


def scale_found(
    sl: Slice, message: str, named: Sequence[Atom], pos: int, within: set[str], where: str
) -> list[Found]:
    """A number the failing step was given that the failure states beside the number it expected (or the limit
    or range it missed), a power of ten apart: the step that introduced it scaled it wrong.

    A unit slip (centimetres divided by 1000 into metres, inches times 2.54 where 25.4 gives millimetres) leaves
    a number off by a power of ten, and the failure says so in numbers alone ("declared 0.04 m disagrees with
    gauge (0.41 m)", "8.1 outside 60-100", "1.1 in is shorter than 9.6 in").  The run's number is one the failing
    step was given, as the failure writes it (rounded), or else one an earlier step held as written; the expected one is the number beside it (or the range right after it), and
    both must be written in the same unit when both carry one.  Times 10^k (k from -3 to 3, not 0) the run's
    number lands on it, within a tenth of a decade, or inside the range.  No derivation is needed: the slip is
    at the step the number came from (`Lineage.origin`), by a factor its inputs do not hold; a number the
    lineage matched as computed from others (a sum of stored totals) is left to the replay of that derivation,
    which finds the operand that slipped.
    """
    if pos >= len(sl.run.steps):
        return []
    fid = sl.run.steps[pos].step_id
    given = [
        a
        for a in sl.lin.view(fid).inputs
        if a.kind == "number" and a.number is not None and a.number != 0 and not _small_integer(a.number)
    ]
    ms = [m for m in mentions(message, words=False) if _quantity(message, m)]
    pairs = _scaled_pairs(sl, message, ms, given, named, pos)
    out: list[Found] = []
    seen: set[str] = set()
    for i, a, (k, t, j, miss), both in pairs:
        if miss > _DECADE_EXACT and sum(1 for _, _, f, _ in pairs if f[0] == k) < 2:
            continue  # a loose fit once is chance (a limit or another quantity that happens to lie near)
        m = ms[i]
        o = sl.lin.origin(a, pos, within)
        if o.step_id is None or o.step_id == fid or o.derived_from:
            continue  # (a number computed from others: the replay of its derivation finds where, `slips`)
        if both and not _odd_call(sl, o.step_id, o.atom, a.number or 0.0, ms[j].value):
            continue  # two of the run's numbers disagree, and nothing says this one is the slip
        sid, slipped = (
            _relabelled(sl, a, o.step_id, pos, within)
            or _habit_upstream(sl, o.step_id, o.atom, ms, within)
            or (o.step_id, o.atom)
        )
        if sid in seen:
            continue
        seen.add(sid)
        what = f"{10 ** abs(k)}x too {'small' if k > 0 else 'large'}"
        label = f"{slipped.field}={slipped.raw}" if slipped.field else slipped.raw
        out.append(
            Evidence(
                sid,
                sl.w["whatif"],
                f"its {label} looks {what}: at {_short((a.number or 0.0) * 10.0**k)}, the run's {m.raw.strip()} "
                f"would meet the {t} the failure at {where} expects",
                "lineage:whatif",
            )
        )
    return out


def _scaled_pairs(
    sl: Slice, message: str, ms: Sequence[Mention], given: Sequence[Atom], named: Sequence[Atom], pos: int
) -> list[tuple[int, Atom, tuple[int, str, int, float], bool]]:
    """The failure's numbers that are the run's (given to the failing step as written, else held earlier) with
    the number or range beside them a power of ten away (`_decade_fit`).  A pair whose other number the failing
    step was given too ("fell from 94% to 0.92%": both the run's) says which two disagree, not which slipped:
    it is marked (`_odd_call` decides)."""
    pairs: list[tuple[int, Atom, tuple[int, str, int, float], bool]] = []
    expected: set[int] = set()  # mentions read as the expected number of one before: no run's number then
    for i, m in enumerate(ms):
        if i in expected:
            continue
        held = {a.number: a for a in given if a.number is not None and _written_as(a.number, m)}
        if not held:
            held = {
                a.number: a
                for a in named
                if a.kind == "number"
                and a.number == m.value
                and a.number
                and not _small_integer(a.number)
                and sl.lin.holders(a.key, pos)
            }
        if len(held) != 1:
            continue  # not the run's number, or too many of its numbers read alike
        a = next(iter(held.values()))
        fit = _decade_fit(message, ms, i, a.number or 0.0)
        if fit is None:
            continue
        j = fit[2]
        expected.add(j)
        ranged = j == i + 1 and message[ms[j].end : ms[j].end + 1] == "-"
        both = not ranged and any(b.number is not None and _written_as(b.number, ms[j]) for b in given)
        pairs.append((i, a, fit, both))
    return pairs


def _power(x: float, y: float) -> int | None:
    """The power of ten (-3..3) that ``x`` is of ``y`` within `_DECADE_EXACT`, or None."""
    if not x or not y:
        return None
    r = math.log10(abs(x / y))
    k = round(r)
    return k if abs(k) <= 3 and abs(r - k) <= _DECADE_EXACT else None


def _habit_upstream(
    sl: Slice, sid: str, atom: Atom, ms: Sequence[Mention], within: set[str]
) -> tuple[str, Atom] | None:
    """Where the slip is when the number's origin only did its habit: it scaled one of its inputs by the power of
    ten it scales that input by in its other calls (those whose number the failure does not state), so its
    input was already off (a kilogram count read 1000x small and converted rightly into tonnes): the slip is at
    that input's origin."""
    view, x = sl.lin.view(sid), atom.number or 0.0
    name, stated = sl.g.steps[sid].name, {m.value for m in ms}
    others = [s.step_id for s in sl.run.steps if s.step_id != sid and s.name == name]
    for y in view.inputs:
        f = _power(x, y.number or 0.0) if y.kind == "number" and y.field else None
        if f is None:
            continue
        habits = []
        for other in others:
            ov = sl.lin.view(other)
            outs = [b.number for b in ov.outputs if b.field == atom.field and b.number and b.number not in stated]
            ins = [b.number for b in ov.inputs if b.field == y.field and b.number]
            if outs and ins:
                habits.append(_power(outs[0], ins[0]))
        if habits and all(h == f for h in habits):
            o = sl.lin.origin(y, sl.g.position(sid), within)
            if o.step_id is not None and o.step_id != sid:
                return o.step_id, o.atom
    return None


def _odd_call(sl: Slice, sid: str, atom: Atom, x: float, other: float) -> bool:
    """Whether the step's other calls in the run gave the same field numbers nearer (in decades) the other
    number than this call's ``x``: this call is the odd one out, a power of ten away from its own habit."""
    name = sl.g.steps[sid].name
    seen = [
        b.number
        for s in sl.run.steps
        if s.step_id != sid and s.name == name
        for b in sl.lin.view(s.step_id).outputs
        if b.field == atom.field and b.kind == "number" and b.number
    ]
    if not seen or not x or not other:
        return False
    return all(abs(math.log10(abs(v / other))) < abs(math.log10(abs(v / x))) for v in seen if v)


def _quantity(message: str, m: Mention) -> bool:
    """Whether a number of a message stands as a quantity: no small integer written as one (a count, a seed's
    place; ``6.0%`` closing a range is a reading), no error
    status (``409 Conflict``, ``422 quote rejected``: three digits an HTTP error can be), no piece of an id or a
    path (``021`` of ``1883/021/02124``: joined to the text beside it, or written with a leading zero)."""
    raw = m.raw.strip()
    if (raw.isdigit() and _small_integer(m.value)) or (raw.isdigit() and len(raw) == 3 and int(raw) in HTTP_ERRORS):
        return False
    before = message[m.start - 1 : m.start] if m.start > 0 else ""
    after = message[m.end : m.end + 1]
    joined = any(c.isalnum() or c in "/_" for c in before + after)
    return not joined and not (len(raw) > 1 and raw[0] == "0" and raw[1].isdigit())


def _relabelled(sl: Slice, a: Atom, origin: str, pos: int, within: set[str]) -> tuple[str, Atom] | None:
    """The first step after the number's origin that was handed it under one field and handed it on under another
    only (``caffeine_pct=2.6`` in, ``caffeine_mg_per_g=2.6`` out; ``value=41.0`` in, ``fat_pct=41.0`` out): it
    relabelled the number as another quantity without converting it, which is where a power of ten goes missing
    when the origin's own number was right.  Only when the new field states a unit the old did not
    (`_new_unit`), not a model (it restates values under names of its choosing), and only from an origin that
    gave the number a field."""
    start = sl.g.position(origin)
    if not any(b.key == a.key and b.field for b in sl.lin.view(origin).outputs):
        return None  # a number written in a text: no field of its own to be relabelled from
    for p in sl.lin.holders(a.key, pos):
        sid = sl.run.steps[p].step_id
        if p <= start or sid not in within or sl.g.steps[sid].kind in CONTAINER_KINDS or sl.g.steps[sid].kind == "llm":
            continue
        view = sl.lin.view(sid)
        ins = {b.field for b in view.inputs if b.key == a.key and b.field}
        outs = [b for b in view.outputs if b.key == a.key and b.field]
        relabelled = ins and outs and not any(_same_quantity(b.field or "", f) for b in outs for f in ins)
        if relabelled and any(_new_unit(b.field or "", ins, sl.lexicon) for b in outs):
            return sid, outs[0]
    return None


def _new_unit(field: str, given: set[str], lexicon: Lexicon) -> bool:
    """Whether a field name states a unit (``fat_pct``, ``dose_mg``) that none of the fields the number came in
    under states: the step asserted a unit for it.  A plain new name (``contract_value`` handed on as
    ``rated_against``) converts nothing and can lose no power of ten."""
    named = {w for f in given for w in re.findall(r"[a-z0-9]+", f.lower())}
    return any(w in lexicon.measure_suffixes and w not in named for w in re.findall(r"[a-z0-9]+", field.lower()))


def _same_quantity(one: str, other: str) -> bool:
    """Whether two field names name one quantity: the same, or the words of one among the other's (``blocks`` for
    ``blocks_in``, an echo dropping the unit): no relabelling."""
    a, b = (set(re.findall(r"[a-z0-9]+", x.lower())) for x in (one, other))
    return a <= b or b <= a


def _decade_fit(message: str, ms: Sequence[Mention], i: int, x: float) -> tuple[int, str, int, float] | None:
    """The power of ten k (not 0) that turns ``x``, the run's number stated as mention ``i``, into the number
    beside it (the one before or after, written in the same unit when both carry one) or into the range right
    after it (``60-100``), with how the failure wrote that, its (first) mention and how far from the power of ten
    it lands (in decades; 0 inside a range); None when none or several fit."""
    m = ms[i]
    if i + 2 < len(ms) and message[ms[i + 1].end : ms[i + 1].end + 1] == "-":
        lo, hi = ms[i + 1].value, ms[i + 2].value
        ks = [k for k in (-3, -2, -1, 1, 2, 3) if lo <= x * 10.0**k <= hi]
        if lo < hi and not lo <= x <= hi and len(ks) == 1:
            return ks[0], f"{ms[i + 1].raw.strip()}-{ms[i + 2].raw.strip()}", i + 1, 0.0
    fits: list[tuple[int, str, int, float]] = []
    for j in (i - 1, i + 1):
        if not 0 <= j < len(ms) or ms[j].value == 0:
            continue
        t = ms[j]
        if (m.unit and t.unit and m.unit != t.unit) or (m.unit == "%") != (t.unit == "%"):
            continue  # (a percentage is a ratio: never the same quantity as a number written without one)
        r = math.log10(abs(t.value / x))
        k = round(r)
        if k != 0 and abs(k) <= 3 and abs(r - k) <= _DECADE_FIT:
            fits.append((k, t.raw.strip(), j, abs(r - k)))
    return fits[0] if len(fits) == 1 else None


def _small_integer(x: float) -> bool:
    """Whether a number is a small integer (-10..10), the counts and sizes `content.norm_number` skips too."""
    return x.is_integer() and -10 <= x <= 10
