"""Transformations that look wrong on their face, read off one step's input and output.

Each signal compares what a step was given with what it produced and needs
nothing else (no rule about the step's purpose, no other run):

- **conflict**: the output states another value for a field the input fixed
  (asked for ``city=Paris``, answered with items whose ``city`` is ``Lyon``;
  given ``customer_id=C-1``, returned ``customer_id=C-2``).  Text, ids and dates
  only: numbers under one name change legitimately (a converted amount).
- **altered**: an output number is a given number damaged in a familiar way:
  its sign dropped, a power of ten off, or cut at a thousands separator.
- **dropped column**: the input is a table whose header names a column that
  the output's records lack while they keep the others.
- **admitted**: the step's output lists records, most of which agree with a
  value its input fixes outside any list (``city=Hoboken``), and one does not
  (``city=Jersey City``): a record let through a filter it should not have
  passed (a search ignoring an argument, a context mixing in a stale item).
- **wrong record**: the step picked one record of a list it was given (its
  output names that record's id) while another record of the list matches
  more of the values the rest of its input asks about (the order, the item):
  the wrong entity chosen (`trajdebug.analysis.lineage._records`).
- **crossed**: an output record pairs two ids its input paired with others
  (`trajdebug.analysis.lineage._pairs`).

These are evidence, not proof: a step that computes a sign, converts units or
picks a column on purpose trips them too.  They rank; the failure's value
lineage and the agent's passing runs decide between them.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.analysis.lineage._derivation import half_converted, misconverted, relabelled
from trajdebug.analysis.lineage._pairs import crossed, mixed
from trajdebug.analysis.lineage._picks import Cursor, head_fields, queue_heads, wrong_pick
from trajdebug.analysis.lineage._records import _count as _count  # (tests read them here)
from trajdebug.analysis.lineage._records import _mentioned as _mentioned
from trajdebug.analysis.lineage._records import record_lists, wrong_record
from trajdebug.analysis.lineage._views import StepView, semantic
from trajdebug.core.model import CONTAINER_KINDS, Step
from trajdebug.core.values import Atom, atoms, is_mapping, iter_text, mentions, number_key


GENERIC_FIELDS = frozenset(
    {
        "id",
        "name",
        "type",
        "kind",
        "role",
        "content",
        "text",
        "message",
        "messages",
        "status",
        "result",
        "results",
        "value",
        "data",
        "output",
        "input",
        "description",
        "title",
        "summary",
        "error",
        "created",
        "updated",
        "timestamp",
        "time",
        "index",
        "score",
        "query",
        "q",
        "tool",
        "arguments",
        "args",
        "reason",
        "note",
        "notes",
        "comment",
        "answer",
        "response",
        "url",
        "source",
        "tool_call_id",
        "call_id",
    }
)
"""Field names too generic to say two values should agree (request and response use them differently)."""

PROTOCOL_FIELDS = frozenset({"role", "tool_call_id", "call_id"})
"""Fields of a message protocol's envelope (who speaks, a minted call id): never a value a step got wrong."""

CONFLICT = 0.45
ALTERED_SIGN = 0.5
ALTERED_SCALE = 0.35
ALTERED_CUT = 0.5
DROPPED_COLUMN = 0.35
ADMITTED = 0.45


def anomalies(
    step: Step,
    view: StepView,
    has_children: bool = False,
    signed: Collection[str] = (),
    rewritten: Collection[str] = (),
    units: Collection[str] = (),
    carried: Collection[str] = (),
    loops: Collection[Cursor] = (),
) -> Iterator[Evidence]:
    """The local signals of one step (see the module docstring); ``signed``: output fields whose sign or
    power of ten the step sets by a rule its other calls show (`trajdebug.analysis._sign_rule`), no altered value; ``rewritten``:
    top-level input keys holding a shared state earlier steps wrote (`state_keys`), whose values fix nothing;
    ``units``: the units the run writes next to numbers (`relabelled` reads field names by them); ``carried``:
    top-level output keys whose entries an earlier call of the step returned (`carried_keys`), no answer to
    what this call was given; ``loops``: the places the step's calls walk a list by (`counted_loops`)."""
    if step.kind in CONTAINER_KINDS or has_children or step.kind in ("input", "output"):
        return
    if step.status != "ok" or not view.outputs:
        return
    if step.kind != "llm":
        # (A model's answer is judged by the llm-output diagnoser: values it states
        # that none of its inputs hold, or that contradict them.)
        given = step.input
        inputs = view.inputs
        if rewritten and is_mapping(step.input):
            given = {k: v for k, v in step.input.items() if k not in rewritten}
            kept = {(a.field, a.key) for a in atoms(given)}
            inputs = [a for a in view.inputs if (a.field, a.key) in kept]
        yield from _conflicts(step, view, inputs, _fresh(step, carried), loops)
        yield from crossed(step)
        yield from _altered(step, view, signed)
        yield from relabelled(view, units)
        yield from half_converted(view)
        yield from misconverted(view, units)
        yield from _dropped_columns(step, view)
        yield from _admitted(step, given)
        yield from _out_of_bounds(step)
    yield from wrong_record(step, view)
    yield from wrong_pick(step, view, GENERIC_FIELDS, loops)
    yield from mixed(step, GENERIC_FIELDS)


def _fresh(step: Step, carried: Collection[str]) -> frozenset[tuple[str | None, str]] | None:
    """The (field, key) of the atoms of a step's output outside the entries it carried from an earlier call
    (``carried``), None when it carried none."""
    if not carried or not is_mapping(step.output):
        return None
    return frozenset((a.field, a.key) for a in atoms({k: v for k, v in step.output.items() if str(k) not in carried}))


def _conflicts(
    step: Step,
    view: StepView,
    inputs: Collection[Atom] | None = None,
    fresh: Collection[tuple[str | None, str]] | None = None,
    loops: Collection[Cursor] = (),
) -> Iterator[Evidence]:
    """Output values that contradict the one value the step was given under the same field.  ``fresh``: the
    output atoms this call wrote (`_fresh`); an entry an accumulator carried from the step's earlier call answers
    that call's input, not this one's (a register holding every item's date, updated one item per call)."""
    given: dict[str, set[str]] = {}
    raw_in: dict[str, str] = {}
    for a in view.inputs if inputs is None else inputs:
        if a.field and a.kind != "number" and a.field not in GENERIC_FIELDS:
            given.setdefault(a.field, set()).add(a.key)
            raw_in.setdefault(a.field, a.raw)
    if not given:
        return
    heads = queue_heads(step, loops)
    got: dict[str, list[Atom]] = {}
    for a in view.outputs:
        if a.field in given and a.kind != "number" and (fresh is None or (a.field, a.key) in fresh):
            got.setdefault(a.field, []).append(a)
    for f, outs in got.items():
        keys = given[f]
        if len(keys) != 1:
            continue  # several values given under that name: no single one the output must keep
        # A value given as several items in one text (``A1-A4``, ``Paris, Lyon``) comes back split: each
        # item the step answers with is a part of what it was given, no other value.
        parts = _parts(raw_in[f])
        # A value the shared state handed it under the same name is given too: answering with it is a
        # choice between two given values (a fresh record's dose over the one a memory kept), no conflict.
        shared = {a.key for a in view.inputs if a.field == f} if inputs is not None else keys
        # A loop moving on to the next item of a work queue it was handed (`queue_heads`) rightly answers with it,
        # and with that item's own fields as its input records them (its ``track`` replaces the last item's);
        # any other field it rewrites (the customer it was working for) is still checked.
        if heads:
            parts |= heads | head_fields(step, f, heads)
        other = [a for a in outs if a.key not in keys | shared and a.raw.strip().lower() not in parts]
        if not other or len(other) < len(outs) / 2:
            continue
        share = len(other) / len(outs)
        example = other[0].raw
        yield Evidence(
            step.step_id,
            CONFLICT * (1.0 if share == 1.0 else 0.6),
            f"was given {f}={raw_in[f]!r} but its output says {f}={example!r}"
            + (f" ({len(other)} of {len(outs)})" if len(outs) > 1 else ""),
            "lineage:conflict",
        )


_LIST_SEPARATORS = re.compile(r"\s*[,;|/&+\-]\s*")


def _parts(raw: str) -> frozenset[str]:
    """The items of a text that lists several at once (split at punctuation), none when it is one item."""
    parts = [p.lower() for p in _LIST_SEPARATORS.split(raw.strip()) if p]
    return frozenset(parts) if len(parts) > 1 else frozenset()


def _altered(step: Step, view: StepView, signed: Collection[str] = ()) -> Iterator[Evidence]:
    outs = [
        a for a in view.outputs if a.kind == "number" and a.number is not None and a.key not in view.in_keys
    ]
    if not outs:
        return
    ins = [a for a in view.inputs if a.kind == "number" and a.number is not None and a.number != 0]
    cut = _cut_forms(view)
    seen: set[str] = set()
    scaled: list[tuple[int, Evidence]] = []
    for y in outs:
        if y.key in seen:
            continue
        seen.add(y.key)
        yv = y.number or 0.0
        label = f"{y.field}={y.raw}" if y.field else y.raw
        if y.key in cut:
            yield Evidence(
                step.step_id,
                ALTERED_CUT,
                f"output {label} looks like the given {cut[y.key]!r} cut at a separator",
                "lineage:altered",
            )
            continue
        for x in ins:
            xv = x.number or 0.0
            if _same(yv, -xv):
                if y.field in signed:
                    break  # the step signs this field by a rule of its input (its other calls show it)
                yield Evidence(
                    step.step_id,
                    ALTERED_SIGN,
                    f"output {label} is the given {x.raw} with its sign dropped"
                    if xv < 0
                    else f"output {label} is the given {x.raw} with its sign flipped",
                    "lineage:altered",
                )
                break
            # (A given 1 scales to no telling value in another field: every power of ten is "1 times 10^k", so
            # such an output says only that it is round, a discount of 10% beside an index 1.  Under the field it
            # was given in, a 1 answered as 1000 is a scaling: a weight in kilograms read as grams.)
            one = abs(xv) == 1 and (y.field is None or y.field != x.field)
            k = power_of_ten(yv, xv) if not one else 0
            if k and (y.field is None or x.field is None or y.field == x.field or _related(y.field, x.field)):
                if y.field in signed:
                    break  # the step scales this field by a rule (every call of it does: a unit converted)
                scaled.append(
                    (k, Evidence(step.step_id, ALTERED_SCALE, f"output {label} is the given {x.raw} times 10^{k}",
                                 "lineage:altered"))
                )
                break
    yield from (e for _, e in _odd_scales(scaled))


def _odd_scales(scaled: list[tuple[int, Evidence]]) -> list[tuple[int, Evidence]]:
    """The scalings, the one that says what went wrong first.  A step that scales its numbers by one power
    of ten (grams to kilograms) converts units; when all but one share a power, the one apart is the slip
    (``butter_g / 100`` beside ``flour_g / 1000``) and is named first: naming a rightly converted field
    pointed the reader at a value that was fine.  Every scaling stays evidence, with its weight."""
    powers = Counter(k for k, _ in scaled)
    if len(powers) < 2:
        return scaled
    (usual, n), (_, second) = powers.most_common(2)
    if n < 2 or n == second:
        return scaled
    return sorted(scaled, key=lambda ke: ke[0] == usual)


def _related(a: str, b: str) -> bool:
    if min(len(a), len(b)) < 3:
        # A name of one or two letters (a counter `i`, a unit `m`) is inside many names by chance:
        # it relates only to a name it is a whole word of (`m` of `length_m`).
        return a in _name_words(b) or b in _name_words(a)
    return a in b or b in a


def _name_words(name: str) -> set[str]:
    """The words of a field name, split at non-alphanumerics and lower-to-upper case changes."""
    return {w.lower() for w in re.split(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])", name) if w}


def _same(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


_POWERS = (1, 2, 3, 6, -1, -2, -3, -6)


def power_of_ten(y: float, x: float) -> int:
    """The power k (not 0) with y = x * 10^k, of the powers a slip makes; 0 when there is none."""
    if x == 0 or y == 0 or (x < 0) != (y < 0):
        return 0
    if abs(y) >= 1.0 and math.isfinite(x) and math.isfinite(y):
        # Then `_same` is a relative test (within 1e-9), so y / x must be within about 1e-9 of 10**k:
        # only a k that close to log10(y / x) can pass (1e-6 leaves room for rounding).
        q = math.log10(abs(y)) - math.log10(abs(x))
        return next((k for k in _POWERS if abs(q - k) < 1e-6 and _same(y, x * 10.0**k)), 0)
    for k in _POWERS:
        if _same(y, x * 10.0**k):
            return k
    return 0


_power_of_ten = power_of_ten  # (tests read it by its old name)


_SEP = re.compile(r"[,.\u202f\u00a0 ]")


def _cut_forms(view: StepView) -> dict[str, str]:
    """Numbers written with separators, mapped from what their leading group alone reads as."""
    out: dict[str, str] = {}
    for m in mentions(view.in_text, words=False):
        raw = m.raw.lstrip("-+−$€£¥₹₩₽ ")
        parts = _SEP.split(raw)
        if len(parts) >= 2 and parts[0].isdigit() and abs(m.value) >= 1000:
            head = float(parts[0]) * (-1 if m.value < 0 else 1)
            out.setdefault("n:" + number_key(head), m.raw)
            out.setdefault("n:" + number_key(abs(head)), m.raw)
    return out


_HEADER_SPLIT = re.compile(r"\s*[,;\t|]\s*")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_ ]{0,40}$")


def _dropped_columns(step: Step, view: StepView) -> Iterator[Evidence]:
    out_keys = _record_keys(semantic(step, step.output))
    if len(out_keys) < 2:
        return
    for text in iter_text(step.input):
        first = text.strip().split("\n", 1)
        if len(first) < 2:
            continue
        cols = [c.strip().strip("|").strip() for c in _HEADER_SPLIT.split(first[0].strip().strip("|"))]
        cols = [c for c in cols if c]
        if len(cols) < 3 or not all(_IDENT.match(c) for c in cols):
            continue
        norm = {c.lower().replace(" ", "_"): c for c in cols}
        kept = [c for c in norm if c in out_keys]
        lost = [norm[c] for c in norm if c not in out_keys]
        if lost and len(kept) >= 2 and len(kept) >= len(norm) / 2:
            yield Evidence(
                step.step_id,
                DROPPED_COLUMN,
                f"its input table has column(s) {', '.join(map(repr, lost[:3]))} that its output records lack "
                f"(they keep {len(kept)} of {len(norm)})",
                "lineage:dropped-column",
            )
            return


def _record_keys(value: Any, depth: int = 0) -> set[str]:
    if depth > 4:
        return set()
    if is_mapping(value):
        keys = {str(k).lower() for k in value}
        for v in value.values():
            if isinstance(v, list) or is_mapping(v):
                keys |= _record_keys(v, depth + 1)
        return keys
    if isinstance(value, list):
        found: set[str] = set()
        for v in value[:20]:
            found |= _record_keys(v, depth + 1)
        return found
    return set()


__all__ = ["GENERIC_FIELDS", "anomalies"]


def _admitted(step: Step, given: Any = None) -> Iterator[Evidence]:
    fixed = _constraints(step.input if given is None else given)
    if not fixed:
        return
    for records in record_lists(step.output):
        for fld, want in fixed.items():
            vals = [r.get(fld) for r in records]
            if not all(isinstance(v, str) for v in vals):
                continue
            agree = [v for v in vals if isinstance(v, str) and v.casefold() == want.casefold()]
            odd = [r for r in records if isinstance(r.get(fld), str) and str(r.get(fld)).casefold() != want.casefold()]
            if len(agree) >= 1 and len(odd) == 1 and len(agree) >= len(odd):
                bad = odd[0]
                label = next((str(bad[k]) for k in bad if k in ("id", "sku", "code", "ref") or k.endswith("_id")), None)
                yield Evidence(
                    step.step_id,
                    ADMITTED,
                    f"let {label + ' ' if label else 'a record '}with {fld}={bad.get(fld)!s} through among records "
                    f"with the {fld}={want} its input fixes",
                    "lineage:admitted",
                    values=(label,) if label else (),
                )
                return




def _bounds(value: Any, *, lexicon: Lexicon = ENGLISH) -> list[tuple[str, str, float]]:
    """Numeric bounds a request's top-level fields set by name (``min_capacity``, ``price_max``): (field,
    min|max, bound)."""
    out: list[tuple[str, str, float]] = []
    if not isinstance(value, Mapping):
        return out
    for k, v in value.items():
        bound = _finite(v)
        if bound is None:
            continue
        m = lexicon.bound_field.match(str(k))
        if m:
            g = m.groups()
            side, name = next((g[i], g[i + 1]) if i % 4 == 0 else (g[i + 1], g[i]) for i in (0, 2, 4, 6) if g[i])
            out.append((name.lower().strip("_"), side.lower(), bound))
    return out


def _finite(v: Any) -> float | None:
    """A number as a finite float (None for anything else: a bool, text, an int too large for a float, NaN)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        x = float(v)
    except OverflowError:
        return None
    return x if math.isfinite(x) else None


def _out_of_bounds(step: Step) -> Iterator[Evidence]:
    """A result whose field breaks the bound its own request set (``capacity`` 24 for ``min_capacity`` 30)."""
    bounds = _bounds(step.input)
    if not bounds:
        return
    out = step.output
    records = [out] if isinstance(out, Mapping) else [r for r in out if isinstance(r, Mapping)] if isinstance(out, list) else []
    for r in records[:200]:
        for fld, side, bound in bounds:
            got = _finite(r.get(fld))
            if got is None:
                continue
            if (side == "min" and got < bound) or (side == "max" and got > bound):
                yield Evidence(
                    step.step_id,
                    ADMITTED,
                    f"returned {fld}={got:g} for a request with {side} {fld} {bound:g}",
                    "lineage:admitted",
                )
                return


def _constraints(value: Any, depth: int = 0, out: dict[str, str] | None = None, *, lexicon: Lexicon = ENGLISH) -> dict[str, str]:
    """Text fields the input fixes outside any list of records (a request's ``city``), by name; a field
    with two different values is no constraint."""
    out = {} if out is None else out
    if depth > 4:
        return out
    if isinstance(value, str):
        t = value.strip()
        if t[:1] == "{" and len(t) < 100_000:
            try:
                value = json.loads(t)
            except (ValueError, RecursionError):
                return out
        else:
            return out
    if isinstance(value, Mapping):
        for k, v in list(value.items())[:100]:
            key = str(k).lower()
            if isinstance(v, str) and 2 <= len(v) <= 60 and key not in GENERIC_FIELDS and v.casefold() not in lexicon.boolean_words:
                if key in out and out[key].casefold() != v.casefold():
                    out[key] = ""  # two values: not a constraint
                else:
                    out.setdefault(key, v)
            elif isinstance(v, Mapping):
                _constraints(v, depth + 1, out)
    return {k: v for k, v in out.items() if v} if depth == 0 else out
