"""The evidence sources of the failures' value lineage: where the values a failure names came from.

A failure names values ("expected 120, got 95", "no slot on 2024-06-03"), and
its step was given others.  These functions (`trajdebug.analysis._sources`
has the slice they read and the findings they return) trace them:

- the step that **introduced** a value the failure involves joins its thin
  slice; a step that only computed it from its inputs passes the mark to its
  operands' origins (Zeller's stopping rule, "faulty, with correct origins");
- a step that was **given** a value the failure expects and **did not pass
  it on** (an omission), or a word of the user's task (not a model's turn
  when a later turn of its conversation carried the value on);
- the step that produced a value **in passing runs** where no step did here;
- the step whose number the failure **contradicts**, the **one-digit slip**
  that turns the run's number into the one expected, the **source that
  disagrees** with the one the failing check consulted;
- the steps that introduced the values of a **field** or a **label** the
  failure's message speaks of.
"""

from __future__ import annotations

from collections.abc import Sequence

from trajdebug.analysis._contradictions import (
    contradicted,
    disagreeing_sources,
    emptied,
    inside_of,
    short_collection,
    status_codes,
    whatif_found,
    yardsticks,
)
from trajdebug.analysis._detect import Failure
from trajdebug.analysis._drops import dropped
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis._left_out import left_out_items, left_out_names
from trajdebug.analysis._picked import limit_ignored, picked_named, replaced_named
from trajdebug.analysis._sources import (
    Found,
    Slice,
    _field_words,
    _terms,
    _thin,
    _trivial_number,
    reading_position,
    wrapping_failures,
)
from trajdebug.analysis._spoken import (
    _short_totals,
    _spoken_choices,
    _spoken_fields,
    _spoken_labels,
    _task_words,
    not_argument_names,
    read_as_stated,
    stated_values,
    unnamed_records,
)
from trajdebug.analysis._stated import checked_values, stated_limits
from trajdebug.analysis.lineage import PROTOCOL_FIELDS, StepView, counted_items, items_totalled, message_atoms
from trajdebug.analysis.reference import producers_of, step_key
from trajdebug.core.model import Step
from trajdebug.core.values import Atom, atoms


def lineage_evidence(sl: Slice) -> list[Found]:
    """The failures' values, traced to the steps that introduced or dropped them."""
    within = set(sl.dist)
    out: list[Found] = []
    wrappers = wrapping_failures(sl)
    for f in sl.failures:
        if f.step_id not in wrappers:
            out += _failure_values(sl, f, within)
    return out


def _outside_names(given: Sequence[Atom], message: str, named: list[Atom]) -> list[Atom]:
    """The message's values with the numbers that are words of a name the failing step was given and the
    message quotes whole ("Bay 12 is full ...", "Route 66 is closed") read as that name: the name is
    what it speaks of, its number no quantity some step should have passed on.  A name given as a value
    takes the number's place (its origin is the step that chose the flight); a name given as the key of
    a map keyed by names has no value of its own to trace."""
    low = message.casefold()
    names: dict[str, Atom | None] = {}
    for a in given:
        for name, atom in ((a.raw, a if a.kind == "text" else None), (a.field, None)):
            if name and len(name.split()) > 1 and name.casefold() in low:
                names[name.casefold()] = names.get(name.casefold()) or atom
    out: list[Atom] = []
    for a in named:
        hits = [n for n in names if a.kind == "number" and a.raw.casefold() in n.split()]
        if not hits:
            out.append(a)
            continue
        for n in hits:
            atom = names[n]
            if atom is not None and all(x.key != atom.key for x in out):
                out.append(atom)
    return out


_NAME_WORDS = 4
"""The longest name, in words, read from a failure's message as a value an earlier step returned: place,
desk and company names run to three or four words ("Port of Long Beach"); a longer capitalised run is a
title or a heading, not one value."""

_ABSENCE_REACH = 4
"""How many words from a name a word of absence may stand and still be about it: "no pickup planned at X" puts
three words between them (the thing absent, a verb, a preposition); further off, the word belongs to another clause."""


def _held_names(sl: Slice, message: str, pos: int, named: Sequence[Atom], failing: StepView) -> list[Atom]:
    """Names the message writes plainly ("no pickup at Cobalt Hill", "no account for Acme Corp") that a step
    before the failure returned as a value: `atoms` reads only numbers, dates, ids and quoted strings out
    of free text, so a name left unquoted was no value the failure involves, and the step that was given
    it and lost it went unasked.  Only capitalised word runs (a name, not a word of the sentence; no code in
    capitals, a currency or a unit), or lowercase runs of two words or more (an item's name, ``lamb shank``;
    since 2026-12-04), that an earlier output holds whole, the longest at each place, and only
    names the failing step was not given: what the failure says is missing.  A name it was given is the
    subject it checked (a person, a place it names to say what was wrong with it), which every step that
    handled the record passed along or left behind by design.  And only a name the message says is absent (a
    word of absence, `Lexicon.absence_words`, within `_ABSENCE_REACH` words of it): a name the failure writes
    for another reason (who set the limit it checked) says nothing of a list that left it out."""
    tokens = message.split()
    absent = [i for i, t in enumerate(tokens) if t.strip(",;:.!?()[]'\"").casefold() in sl.lexicon.absence_words]
    if not absent:
        return []
    have = {a.key for a in named}
    out: list[Atom] = []
    i = 0
    while i < len(tokens):
        step = 1
        for n in range(min(_NAME_WORDS, len(tokens) - i), 0, -1):
            raw = " ".join(tokens[i : i + n]).strip(",;:.!?()[]'\"")
            # A lowercase run of two words or more counts too when an earlier output holds it whole: an item
            # of a list written as it is ("does not cover booked courses: lamb shank"), no word of the sentence.
            if len(raw) < 3 or raw.isupper() or not (raw[:1].isupper() or (n > 1 and raw.islower())):
                continue
            if not any(i - _ABSENCE_REACH <= j <= i + n - 1 + _ABSENCE_REACH for j in absent):
                continue
            found = [a for a in atoms([raw]) if a.kind == "text" and a.raw == raw]
            if found and found[0].key not in have and sl.lin.holders(found[0].key, pos) and not failing.given(found[0]):
                out.append(found[0])
                have.add(found[0].key)
                step = n
                break
        i += step
    return out


def _failure_values(sl: Slice, f: Failure, within: set[str]) -> list[Found]:
    """One failure's values: those its message names, the task words it misses, what its step was given."""
    step = sl.g.steps[f.step_id]
    pos = sl.g.position(f.step_id)
    message = f.message if f.message else (step.error.message if step.error else "")
    codes = status_codes(message, sl.lexicon)  # a service's error status names no value of the run
    named = [
        a
        for a in message_atoms(message)
        if not (a.kind == "text" and len(a.raw) <= 2) and not (a.kind == "number" and a.unit is None and a.raw in codes)
    ]
    named = _outside_names(sl.lin.view(f.step_id).inputs, message, named)
    named = not_argument_names(step, sl.lin.view(f.step_id), named)
    seen: set[str] = set()
    out = _named_values(sl, f, message, named, seen, within)
    out += left_out_names(sl, _held_names(sl, message, pos, named, sl.lin.view(f.step_id)), pos, within, step.name)
    out += contradicted(sl, message, pos, within, step.name) + emptied(sl, message, pos, within, step.name)
    out += short_collection(sl, message, pos, within, step.name)
    out += whatif_found(sl, message, named, pos, within, step.name)
    out += disagreeing_sources(sl, f.step_id, message, pos, within, step.name)
    out += left_out_items(sl, message, pos, within, step.name)
    for a in _task_words(sl, message):
        # A word of the user's request that the failure says is missing: who was
        # given it and did not carry it on (a plan, a query, a model's reading).
        if a.key not in seen:
            # (The failing step may hold the task itself, to check against it: that is
            # no path by which the word reached it.)
            seen.add(a.key)
            out += dropped(sl, a, pos, within, step.name, named, task_word=True)
    # A failure naming one record of a list it was given (the hive ``H6`` of a manifest) is about that
    # record: the values only the other records hold are no part of it.
    others = unnamed_records(step.input, message)
    args = [
        a for a in sl.lin.view(f.step_id).inputs if a.key not in seen and a.key not in others and a.field not in PROTOCOL_FIELDS
    ][:60]
    # A step that recorded nothing it read, linked by its message alone (`UNRECORDED_KEY`), read what the message
    # states of the outputs it was linked to: the rest of them it was never shown to have been given.
    stated = read_as_stated(sl, step)
    if stated:
        args = stated_values(message, args)
    # An argument whose field the message speaks of ("the estimated saving is
    # implausible" for est_monthly_savings_usd) is the one the failure is about.
    said = _terms(message, sl.lexicon)
    out += _spoken_fields(sl, said, pos, within, step.name)
    out += _spoken_labels(sl, message, pos, within, step.name)
    made, origins = _named_origins(sl, f, named, within)
    out += _spoken_choices(sl, said, pos, within, step.name, made, origins)
    out += picked_named(sl, named, pos, within, step.name)
    out += replaced_named(sl, named, pos, within, step.name)
    out += _short_totals(sl, named, pos, within, step.name)
    for a in args:
        seen.add(a.key)
        spoken = a.field is not None and any(sl.lexicon.singular(w) in said for w in _field_words(a.field, sl.lexicon))
        what = f"{step.name}, where the run failed, was given" + (" (the failure speaks of its field)" if spoken else "")
        what = f"the failure at {step.name} names" if stated else what
        out += _trace(sl, a, pos, within, sl.w["origin_named_arg" if spoken else "origin_arg"], what)
    return out


def _named_origins(sl: Slice, f: Failure, named: Sequence[Atom], within: set[str]) -> tuple[set[str], set[str]]:
    """The steps on a failure's slice that introduced or computed a quantity its message names (a number or a date,
    not a small count; read where `_named_values` reads them): a wrong value the failure is about; and those that
    introduced any value it names."""
    pos = sl.g.position(f.step_id)
    end, skip = reading_position(sl, f.step_id) if f.detector in ("run-failure", "outcome") else (pos, frozenset())
    quantity: set[str] = set()
    every: set[str] = set()
    for a in named:
        o = sl.lin.origin(a, end, within, skip).step_id
        if o is not None:
            every.add(o)
            if a.kind in ("number", "date") and not _trivial_number(a):
                quantity.add(o)
    return quantity, every


def _named_values(
    sl: Slice, f: Failure, message: str, named: Sequence[Atom], seen: set[str], within: set[str]
) -> list[Found]:
    """The values a failure's message names: their origins, who dropped them, who produces them in passing runs.

    ``seen`` collects the keys of the values handled (the caller skips them later).
    """
    step = sl.g.steps[f.step_id]
    pos = sl.g.position(f.step_id)
    # A run failed after the fact (a mark, a check of its answer) on a step enclosing the rest judges all they made:
    # its values are traced past its inner steps.  A step that raised judged its inner steps' answers against
    # what it was given (a check's own lookup is its reference): read at its place.  (``pos`` indexes steps below.)
    end, skip = reading_position(sl, f.step_id) if f.detector in ("run-failure", "outcome") else (pos, frozenset())
    view = sl.lin.view(f.step_id)
    # An enclosing step (an agent, a request handler) fails with what a step inside it
    # raised: a value that reached that inner failing step reached the failure.
    inner = [sl.lin.view(g.step_id) for g in sl.failures if inside_of(sl, g.step_id, f.step_id)]
    bounds = {float(x.replace(",", "")) for m in sl.lexicon.range_.finditer(message) for x in m.groups() if x}
    bounds |= stated_limits(message, sl.lexicon)  # "exceeds the limit of 2500", "over the $3,200 ceiling"
    checked = checked_values(message, sl.lexicon)  # "is 122 days, above the 30-day maximum"
    quantities = any(a.kind in ("number", "date") and not _trivial_number(a) for a in named)
    yard, out = yardsticks(sl, named, end, within, skip, bounds)  # (and the marks of the later sides)
    for a in named:
        if a.key in seen:
            continue
        seen.add(a.key)
        # A range the failure checks against ("300-900 kcal") is a limit: traced like any
        # value it names, never a value some step should have passed on.
        limit = a.kind == "number" and a.number in bounds
        reached = view.given(a) or view.holds(a)
        # A message naming an id beside numbers or dates ("reservation R-1 runs 3 to 7
        # June (4 nights)") names what it checked by the id and what is wrong by the rest.
        strength = sl.w["origin"] * (sl.w["subject_id"] if a.kind == "id" and quantities else 1.0)
        strength *= sl.w["yardstick"] if a.key in yard else 1.0
        if not reached and any(v.given(a) for v in inner):
            # It reached the inner step that raised: that failure's own reading
            # covers the value (nothing on the way to it lost it).
            out += _trace(sl, a, end, within, strength, f"the failure at {step.name} names", skip=skip)
            continue
        if reached or any(sl.lin.steps[h].step_id not in skip for h in sl.lin.holders(a.key, end)):
            out += _trace(sl, a, end, within, strength, f"the failure at {step.name} names", skip=skip)
        out += _counted(sl, a, step, within, strength, f"the failure at {step.name} names", 0)
        if limit:
            out += limit_ignored(sl, a, named, pos, within, step.name, message)
        if (a.kind == "number" and reached) or limit:
            continue
        # Not given to the failing step (or, when given, perhaps lost on another path to it):
        # the steps that were given it and did not pass it on.  A number the message holds against a limit
        # ("122 days, above the 30-day maximum") is the value the check rejected, not one it waited for: a
        # step that did not pass it on lost little (issue 23, nu22).
        share = sl.w["dropped_reached"] if reached else 1.0
        rejected = a.kind == "number" and a.number in checked
        out += dropped(sl, a, pos, within, step.name, named, share * (sl.w["rejected"] if rejected else 1.0))
        if not reached:
            out += _expected(sl, a, pos, within, step.name)
    return out


def _trace(
    sl: Slice, a: Atom, pos: int, within: set[str], weight: float, what: str, depth: int = 0, skip: frozenset[str] = frozenset()
) -> list[Found]:
    """Mark the steps a failing value came from: its origin, or the origins of the numbers it was computed from.

    Lineage says where to look, not what is wrong: a step that introduced a
    value the failure involves joins the failure's thin slice (a boost of its
    score, `thin`), and its own evidence, or the agent's passing runs, say
    whether it erred.  A step that computed the value from its inputs passes
    the mark to its operands' origins.  No step in ``skip`` is an origin (`reading_position`).
    """
    out: list[Found] = []
    o = sl.lin.origin(a, pos, within, skip)
    if o.step_id is None or depth > 2:
        return out
    label = f"{a.field}={a.raw}" if a.field else repr(a.raw)
    items = items_totalled(sl.lin.view(o.step_id).outputs, o.atom) if not o.derived_from else []
    if items:
        # A total a step wrote beside the items it adds up (a day's log and its total):
        # the items came from elsewhere; where they came from is where to look.
        out += _thin(o.step_id, weight * 0.4, f"totals {label}, which {what}, from the items it lists")
        opos = sl.g.position(o.step_id)
        name = sl.g.steps[o.step_id].name
        # An item is not a value the failure names: it counts toward one (the gap between
        # two totals is no item's number either).
        part = f"counts toward {name}'s total {o.atom.raw.strip()}, which {what}"
        for op in items:
            out += _trace(sl, op, opos, within, weight * 0.85, part, depth + 1, skip)
        return out
    if o.derived_from:
        out += _thin(o.step_id, weight * 0.4, f"computed {label}, which {what}, from its inputs")
        opos = sl.g.position(o.step_id)
        name = sl.g.steps[o.step_id].name
        # An operand is not the value the failure names: it went into it (as an item counts toward a total).
        part = f"went into {name}'s {o.atom.raw.strip()}, which {what}"
        for op in o.derived_from:
            out += _trace(sl, op, opos, within, weight * 0.85, part, depth + 1, skip)
        return out
    out += _counted(sl, a, sl.g.steps[o.step_id], within, weight, what, depth)
    # The field named is the one the origin wrote the value under: the failing step's own field for it (a
    # check's ``closed_stops``) is no field of a lookup that answered a plain list of street names.
    if a.field and o.atom.field != a.field:
        label = f"{o.atom.field}={a.raw}" if o.atom.field else repr(a.raw)
    out += _thin(o.step_id, weight * sl.lin.rarity(a.key) ** 0.5, f"introduced {label}, which {what}")
    return out

def _counted(sl: Slice, a: Atom, step: Step, within: set[str], weight: float, what: str, depth: int) -> list[Found]:
    """A number that is the size of a collection ``step`` was given (a count of a list, `counted_items`): the
    items' origin made the collection that long (a page cut short, a parse that lost lines)."""
    items = counted_items(step.input, a) if depth <= 2 else []
    part = f"is one of the {a.raw.strip()} items {step.name} was given, a count {what}"
    pos = sl.g.position(step.step_id)
    return [f for op in items for f in _trace(sl, op, pos, within, weight * 0.85, part, depth + 1)]


def _expected(sl: Slice, a: Atom, pos: int, within: set[str], where: str) -> list[Found]:
    """A value the failure expects that no step of this run produced: who produces it in passing runs?

    When the agent's passing runs have a step whose output held the value
    (a category, an id, a date), that step, here, should have produced it.
    """
    out: list[Found] = []
    if sl.profile is None or a.kind == "number":
        return out
    keys = set(producers_of(sl.profile, a.key))
    if not keys:
        return out
    # A step called several times (a lookup per item) whose other call here produced the value did not fail
    # to: the value is there, from the call about the item that has it.
    made_here = {step_key(sl.g.steps[sl.run.steps[i].step_id], sl.g.steps) for i in sl.lin.holders(a.key, pos)}
    for sid in sorted(within, key=sl.g.position):
        if (
            sl.g.position(sid) < pos
            and step_key(sl.g.steps[sid], sl.g.steps) in keys
            and step_key(sl.g.steps[sid], sl.g.steps) not in made_here
            and not sl.lin.view(sid).holds(a)
        ):
            out.append(
                Evidence(
                    sid,
                    sl.w["expected"],
                    f"the failure at {where} expects {a.raw!r}; in passing runs this step produced it, here it did not",
                    "reference:expected",
                )
            )
    return out


__all__ = ["lineage_evidence"]
