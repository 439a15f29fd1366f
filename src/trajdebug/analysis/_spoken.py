"""What a failure's message speaks of, beyond the values it names: the records of a list it names, the fields
and labels it mentions, the words of the user's task it repeats, a total it says fell short, and the values it
states that a failing step which recorded nothing it read was linked by.

Helpers of the value-lineage sources (`trajdebug.analysis._value_sources`), which call them with the slice and
the failure; moved here when that module passed 600 lines.  Each returns findings or keys, never writes into
shared maps.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from trajdebug.analysis._content import has_word
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis._picked import before
from trajdebug.analysis._sources import (
    _TERM,
    NAMING_FIELDS,
    Found,
    Mark,
    Slice,
    _field_words,
    _thin,
    _trivial_number,
)
from trajdebug.analysis.diagnosers import WORD as _WORD
from trajdebug.analysis.inference import CHOSE_KEY, UNRECORDED_KEY
from trajdebug.analysis.lineage import StepView, message_atoms, one_item_short, record_lists
from trajdebug.core.model import CONTAINER_KINDS, Step
from trajdebug.core.values import Atom, atoms, iter_text


def not_argument_names(step: Step, failing: StepView, named: list[Atom]) -> list[Atom]:
    """The message's values without the words that name an argument of the failing step and no value it was
    given (``{"error": "document", ...}`` refusing the ``document`` it was handed): such a word says which of
    its inputs was wrong, no value some earlier step should have passed on."""
    keys = _keys(step.input)
    return [a for a in named if not (a.kind == "text" and a.raw.casefold() in keys and not failing.given(a))]


def _keys(value: Any, depth: int = 0) -> set[str]:
    """The keys of a step's input, at every level of its mappings (case-folded; lists walked, up to 4 levels)."""
    out: set[str] = set()
    if depth > 4:
        return out
    if isinstance(value, Mapping):
        for k, v in value.items():
            out.add(str(k).casefold())
            out |= _keys(v, depth + 1)
    elif isinstance(value, list):
        for v in value[:50]:
            out |= _keys(v, depth + 1)
    return out


def unnamed_records(value: Any, message: str) -> set[str]:
    """The keys of the values that only the records a failure's message does not name hold, in the lists of
    records of ``value`` where it names some records and not all (by a text value written as a whole word)."""
    text = message.casefold()
    inside: set[str] = set()
    outside: set[str] = set()
    for records in record_lists(value):
        named = [any(_names_record(v, message, text) for v in r.values()) for r in records]
        if any(named) and not all(named):
            for r, hit in zip(records, named):
                (inside if hit else outside).update(a.key for a in atoms(r))
    return outside - inside


def _names_record(v: Any, message: str, folded: str) -> bool:
    """Whether a record's text value names it in a failure's message: a code (letters and digits, in any case)
    or a capitalised name written as it is; a common word ("no", "pending") names no record."""
    if not isinstance(v, str):
        return False
    v = v.strip()
    if len(v) >= 2 and any(c.isdigit() for c in v) and any(c.isalpha() for c in v):
        return has_word(folded, v.casefold())
    return len(v) >= 3 and v[0].isupper() and has_word(message, v)


def _short_totals(sl: Slice, named: Sequence[Atom], pos: int, within: set[str], where: str) -> list[Found]:
    """Steps whose total falls short of a number the failure states, and no step returned, by exactly one item
    of the list they were given (a train's length without one car, an invoice's total without one line): a check
    that added the items afresh found one the step skipped (`one_item_short`)."""
    stated = [a for a in named if a.kind == "number" and a.number and not sl.lin.holders(a.key)]
    out: list[Found] = []
    for sid in sorted(within, key=sl.g.position) if stated else ():
        if sl.g.position(sid) >= pos:
            continue
        view = sl.lin.view(sid)
        computed = [b for b in view.outputs if b.kind == "number" and not view.given(b)]
        for a in stated:
            hit = one_item_short(sl.g.steps[sid].input, computed, a.number or 0.0)
            if hit is not None:
                b, item = hit
                # The same counterfactual as a what-if slip: with the item counted, the run's number is the failure's.
                reason = (
                    f"its {b.field}={b.raw} looks short by one item: with the {item:g} of the list it was given, "
                    f"it would be the {a.raw} the failure at {where} states"
                )
                out.append(Evidence(sid, sl.w["whatif"], reason, "lineage:whatif"))
                break
    return out


def _spoken_fields(sl: Slice, said: set[str], pos: int, within: set[str], where: str) -> list[Found]:
    """Steps that introduced the values of a field the failure speaks of ("a reservation points
    at a bin outside ..."): where those values came from is where to look, weakly, and more
    weakly the more steps wrote that field (a field everyone wrote says little)."""
    out: list[Found] = []
    by_field: dict[str, dict[str, Atom]] = {}
    for sid in sorted(within, key=sl.g.position):
        if sl.g.position(sid) >= pos or sl.g.steps[sid].kind in CONTAINER_KINDS:
            continue
        for a in sl.lin.introduced(sid):
            if (
                a.kind in ("id", "text")
                and a.field
                and a.field.lower() not in NAMING_FIELDS
                and all(sl.lexicon.singular(w) in said for w in _field_words(a.field, sl.lexicon))
            ):
                by_field.setdefault(a.field.lower(), {}).setdefault(sid, a)
    for steps in by_field.values():
        if len(steps) > 3:
            continue
        for sid, a in steps.items():
            # A flag a model set (``revision=false``) is its decision, and the failure speaks of what it
            # decided: as strong as a value of the failing step's whose field the failure speaks of.
            flag = a.raw in ("true", "false") and sl.g.steps[sid].kind == "llm"
            out += _thin(
                sid,
                sl.w["origin_named_arg"] if flag else sl.w["origin_spoken"] / math.sqrt(len(steps)),
                f"introduced {a.field}={a.raw}, a field the failure at {where} speaks of",
            )
    return out

def _spoken_labels(sl: Slice, message: str, pos: int, within: set[str], where: str) -> list[Found]:
    """The step that first stated a label the failure's message uses as a word ("no hardware
    fault found" after a model filed ``category=hardware``): the decision the failure speaks
    of.  A label is often one of the options a model was given, so the first step whose
    output states it is taken when it introduced it or is a model choosing it."""
    out: list[Found] = []
    words = {w for w in _TERM.findall(message.lower()) if w not in sl.lexicon.stopwords and w not in sl.lexicon.short_stopwords}
    first: dict[str, tuple[int, str, Atom]] = {}
    about = [a for a in atoms(message) if a.kind == "id" or (a.kind == "number" and not _trivial_number(a))]
    for sid in sorted(within, key=sl.g.position):
        p = sl.g.position(sid)
        if p >= pos or sl.g.steps[sid].kind in CONTAINER_KINDS:
            continue
        for a in sl.lin.view(sid).outputs:
            label = a.raw.strip().casefold()
            if (
                a.kind == "text"
                and a.field
                and a.field.lower() not in NAMING_FIELDS
                and 3 <= len(label) <= 30
                and label.isalpha()
                and label in words
                and before(sl, (p, sid), first.get(label), about)
            ):
                first[label] = (p, sid, a)
    for _, sid, a in first.values():
        view = sl.lin.view(sid)
        # A model given the label under the same field (the request's ``section``) passed it on, chose nothing.
        copied = any(b.key == a.key and b.field == a.field for b in view.inputs)
        if (sl.g.steps[sid].kind == "llm" and not copied) or not view.given(a):
            out += _thin(
                sid,
                sl.w["origin_spoken"],
                f"first stated {a.field}={a.raw}, a word the failure at {where} uses",
            )
    return out

def _spoken_choices(
    sl: Slice,
    said: set[str],
    pos: int,
    within: set[str],
    where: str,
    made: Collection[str] = (),
    origins: Collection[str] = (),
) -> list[Found]:
    """The steps that chose a branch the failure speaks of (a routing function answering ``wet_harvest`` before
    "load from W-01 was wet-harvested"): the failure is about what ran there, and running it was that choice.

    A choice is an inferred ``control`` edge (`trajdebug.analysis.inference.CHOSE_KEY`) into a step on the
    failure's slice before it; the branch is spoken of when a word of its name (three letters or more, not a
    function word) is a word of the message and no word of the failing step's own name.  A choice of a step that
    first ran before the chooser's own node did is a loop's way back (a router inside a loop's node choosing that
    node again, a loop's last node choosing its first), no branch; and so is a choice its chooser was handed, a word
    of the name among its input's values (a one-word text, or the word heading one: a model's diagnosis
    ``valve: replace the valves`` before ``valve_work``), or a one-word label the failure says that a step before it
    made (`_handed_label`: ``severity=high`` before ``urgent_repair``).  Several choices of the branch share the mark,
    and a step that leads by that mark alone gets no verdict above unsure (`Ranking.by_choice_alone`).

    A failure about a wrong quantity (``made``: the steps that introduced or computed a number or date its message
    names, `_value_sources._named_origins`) is no failure of a choice: the branch named is where the value showed
    (a router rightly choosing ``dry_harvest`` before a misweighed load "the dry-harvested load weighs 7000.0
    barrels"), or the router followed it (an upstream quantity of 400 routed to ``place_order``); no choice joins.
    Nor does a choice when a step after it, the branch's own step among them, made a value the failure names (``origins``:
    the steps that introduced one), or a value of a field or a one-word label it speaks of (`_made_after`): the
    failure is about that value, made downstream (a right ``express_ship`` before a cover step's ``cover=none``,
    "express shipments need cover, this one has none").  A chooser that some time went back (its loop's exit or
    next pass: a ``more`` choosing ``route_fixture`` again, then ``markers``) decides how often a loop runs, no
    branch between alternatives: none of its choices joins until that loop has exited (`_loop_choosers`).
    """
    own = {sl.lexicon.singular(w) for w in _field_words(where, sl.lexicon)}
    first: dict[str, int] = {}
    for i, s in enumerate(sl.run.steps):
        first.setdefault(s.name, i)
    choosers: dict[str, str] = {}
    after: set[str] = set()
    if made:
        return []
    loops, exits = _loop_choosers(sl, first)
    for sid in sorted(within, key=sl.g.position):
        if sl.g.position(sid) >= pos:
            continue
        chosen = sl.g.steps[sid]
        for d in sl.g.parents(sid):
            if d.kind != "control" or not (d.key or "").startswith(CHOSE_KEY) or d.step_id in choosers:
                continue
            name = d.key[len(CHOSE_KEY):] if d.key else ""
            if name != chosen.name or d.step_id not in within or sl.g.steps[d.step_id].kind in CONTAINER_KINDS:
                continue
            home = sl.g.steps[sl.g.parent(d.step_id) or d.step_id].name
            if first[name] <= first[home] or _in_loop(sl, d.step_id, home, loops, exits):
                continue  # a loop's way back (its next pass, or its first node again), or its exit
            words = {sl.lexicon.singular(w) for w in _field_words(name, sl.lexicon)}
            # A chooser given a word of the name (a model's ``queue: planned`` before ``planned_works``) passed on
            # a choice made before it: the step that made it is the one to ask.
            given = _given_words(sl.g.steps[d.step_id].input, sl)
            if (words - own) & said and not words & given and not _handed_label(sl, d.step_id, said, within):
                choosers[d.step_id] = name
                # (A choice with a value made after it still counts among the branch's choices that share the mark.)
                if _made_after(sl, (d.step_id, sid), pos, within, (said, words), origins):
                    after.add(d.step_id)
    out: list[Found] = []
    for sid, name in choosers.items():
        if sid in after:
            continue
        share = sum(n == name for n in choosers.values())
        # (Named ``chosen``, not ``thin``: a step that leads by this mark alone gets no verdict above unsure.)
        out.append(Mark(sid, "chosen", sl.w["origin_chosen"] / math.sqrt(share), f"chose {name}, a branch the failure at {where} speaks of"))
    return out


def _handed_label(sl: Slice, chooser: str, said: set[str], within: set[str]) -> bool:
    """Whether a chooser was given a one-word label the failure says that a step on the slice before it made."""
    labels = _given_words(sl.g.steps[chooser].input, sl) & said
    at = sl.g.position(chooser)
    for sid in within:
        if sl.g.position(sid) >= at or sl.g.steps[sid].kind in CONTAINER_KINDS:
            continue
        for a in sl.lin.introduced(sid):
            w = a.raw.strip().casefold()
            if a.kind in ("id", "text") and w.isalpha() and sl.lexicon.singular(w) in labels:
                return True
    return False


def _loop_choosers(sl: Slice, first: Mapping[str, int]) -> tuple[set[tuple[str, str]], dict[str, int]]:
    """The choosers (by their own name and their node's) that some time chose a step first run before their node
    did: a loop's way back, so their other choices are its exit or next pass; and per function of them, the
    position of its last exit from such a node (a choice there of a step first run after it).  The caller reads
    a function's choices at its other nodes (``more`` routing both ``record_match`` and ``record_walkover``) as
    the loop's until that exit; after it, the function routes anew (review rev58p: keyed by the function alone,
    a reused router's real choices were silenced)."""
    out: set[tuple[str, str]] = set()
    choices: list[tuple[str, str, str, str]] = []
    for sid, s in sl.g.steps.items():
        for d in sl.g.parents(sid):
            if d.kind == "control" and d.key == CHOSE_KEY + s.name:
                home = sl.g.steps[sl.g.parent(d.step_id) or d.step_id].name
                fn = sl.g.steps[d.step_id].name
                choices.append((fn, home, s.name, d.step_id))
                if first[s.name] <= first[home]:
                    out.add((fn, home))
    exits: dict[str, int] = {}
    for fn, home, name, chooser in choices:
        if (fn, home) in out and first[name] > first[home]:
            exits[fn] = max(exits.get(fn, -1), sl.g.position(chooser))
    return out, exits


def _in_loop(sl: Slice, chooser: str, home: str, loops: set[tuple[str, str]], exits: Mapping[str, int]) -> bool:
    """Whether a choice is a loop's (`_loop_choosers`): its function went back from this node, or from another
    and had not yet exited that loop (an exit never seen: all its choices are the loop's)."""
    fn = sl.g.steps[chooser].name
    if (fn, home) in loops:
        return True
    return any(c == fn for c, _ in loops) and sl.g.position(chooser) <= exits.get(fn, math.inf)


def _made_after(
    sl: Slice,
    choice: tuple[str, str],
    pos: int,
    within: set[str],
    words: tuple[set[str], set[str]],
    origins: Collection[str],
) -> bool:
    """Whether a step on the slice after a chooser and before the failure, the step it chose among them (the
    right branch's own wrong value, review rev58g), introduced a value the failure names (``origins``), a text of a field whose words the failure says, or a
    one-word label it says (``words``: the message's, and the branch's, which say nothing of that step: a text
    holding one, ``Acid Yellow 49`` after ``acid_line``, is the branch's doing)."""
    chooser, _ = choice
    said, branch = words
    start = sl.g.position(chooser)
    for sid in within:
        if not start < sl.g.position(sid) < pos or sl.g.steps[sid].kind in CONTAINER_KINDS:
            continue
        if sid in origins:
            return True
        for a in sl.lin.introduced(sid):
            if a.kind not in ("id", "text") or {sl.lexicon.singular(w) for w in _TERM.findall(a.raw.casefold())} & branch:
                continue
            label = a.raw.strip().casefold()
            fields = {sl.lexicon.singular(w) for w in _field_words(a.field or "", sl.lexicon)}
            if a.field and a.field.lower() not in NAMING_FIELDS and fields and fields <= said - branch:
                return True
            if 3 <= len(label) <= 30 and label.isalpha() and sl.lexicon.singular(label) in said:
                return True
    return False


def _given_words(value: Any, sl: Slice, depth: int = 0) -> set[str]:
    """The one-word texts among a step's input values, and the one word before a colon heading a text (``valve:
    replace the valves``; case-folded, a plural's ``s`` cut; up to 6 levels deep)."""
    if depth > 6:
        return set()
    if isinstance(value, str):
        # A one-word text, or the one word heading a text (a model's ``valve: replace the valves``): a label.
        w = value.strip().casefold().partition(":")[0].rstrip()
        return {sl.lexicon.singular(w)} if 3 <= len(w) <= 30 and w.isalpha() else set()
    if isinstance(value, Mapping):
        return set().union(*(_given_words(v, sl, depth + 1) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_given_words(v, sl, depth + 1) for v in value[:200]))
    return set()


def _task_words(sl: Slice, message: str) -> list[Atom]:
    """Words of a failure message that are words of the run's task, the user's request (English stop words left out)."""
    task = _task_text(sl)
    if not task:
        return []
    words = set(_WORD.findall(task))
    return [
        Atom("s:" + w, "text", None, None, w)
        for w in dict.fromkeys(_WORD.findall(message.lower()))
        if w in words and w not in sl.lexicon.stopwords
    ]

def _task_text(sl: Slice) -> str:
    md = sl.run.metadata
    parts = [
        str(md[k]) for k in ("task", "question", "input", "instruction") if isinstance(md.get(k), str)
    ]
    if not parts:
        first = next((s for s in sl.run.steps if s.kind == "input"), None)
        if first is not None:
            parts.append(" ".join(iter_text(first.output if first.output is not None else first.input)))
    return " ".join(parts).lower()[:20_000]


def read_as_stated(sl: Slice, step: Step) -> bool:
    """Whether a failing step recorded no input and is linked to what it read only by the values its message
    states (`trajdebug.analysis.inference.UNRECORDED_KEY`): its view's input stands in the linked outputs whole."""
    return sl.lin.view(step.step_id).given_by_parents and any(d.key == UNRECORDED_KEY for d in step.deps)


def stated_values(message: str, given: Sequence[Atom]) -> list[Atom]:
    """The values of ``given`` a failure's message states: one of its own values (`message_atoms`), or a text
    written in it as words of their own (``the standard van``, which no quote or capital marks as a value)."""
    keys = {m.key for m in message_atoms(message)}
    low = message.casefold()
    return [a for a in given if a.key in keys or (a.kind == "text" and _written(a.raw.strip().casefold(), low))]


def _written(raw: str, low: str) -> bool:
    """Whether a text (three characters or more) is written in the case-folded ``low`` as words of its own."""
    return len(raw) >= 3 and has_word(low, raw)
