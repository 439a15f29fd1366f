"""The evidence sources of the ranking: functions that return what they found about the slice's steps.

Each source reads the failures' backward slice (`Slice`, read-only) and
returns a list of findings: `Evidence` for a step's verdict (the suspicion it
adds, a sentence a person can check, the signal's name), or a `Mark` for a
score factor that is no suspicion (``thin``: the step introduced a value the
failure involves; ``elsewhere``: it was about another listed item than the
failure).  No source writes into shared state: `trajdebug.analysis._ranking`
gathers the findings and combines them with the hand weights.

The sources (in the order the ranking gathers them):

- `trajdebug.analysis._value_sources.lineage_evidence`: the failures' **value
  lineage** (where a value the failure names or was given came from, who
  dropped one it expects, whose number it contradicts);
- `local_evidence`: **local anomalies** of a step's own transformation;
- `reference_evidence`: deviations from the agent's **passing runs** (likely
  invariants, Ernst et al. 2001) and from the step's other calls in the run;
- `trajdebug.analysis._elsewhere.other_entities`: steps about **another listed
  item** than the failure's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from trajdebug.analysis import _content as content
from trajdebug.analysis import reference
from trajdebug.analysis._detect import Failure
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis._failures import cut_short
from trajdebug.analysis._sign_rule import CallRules
from trajdebug.analysis.inference import carried_map
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.analysis.lineage import (
    GENERIC_FIELDS,
    Cursor,
    Lineage,
    anomalies,
    counted_loops,
    run_units,
    state_keys,
    update_index,
)
from trajdebug.analysis.reference import Profile, sibling_profiles, step_key, unkeyed, unseen, violations
from trajdebug.core.graph import DependencyGraph
from trajdebug.core.model import CONTAINER_KINDS, VALUE_DEP_KINDS, Run, Step
from trajdebug.core.values import Atom, Mention, atoms, iter_text


NAMING_FIELDS = GENERIC_FIELDS | ENGLISH.naming_fields
"""Fields whose value names who acts or what is called (`Lexicon.naming_fields`) or is a message's own
structure: a choice of actor, not a value put in place of a task word."""


@dataclass(frozen=True, slots=True)
class Slice:
    """What every evidence source reads: the run, its graph and lineage, the failures and their backward slice."""

    run: Run
    g: DependencyGraph
    lin: Lineage
    profile: Profile | None
    failures: Sequence[Failure]
    fail_ids: Sequence[str]
    w: Mapping[str, float]
    """The ranking weights (`trajdebug.analysis._weights.DEFAULT_WEIGHTS` and the caller's overrides)."""
    dist: Mapping[str, int]
    """Hops from each step of the backward slice to the nearest failure."""
    has_children: frozenset[str | None]
    """Steps that enclose others."""
    lexicon: Lexicon = ENGLISH
    """The words the sources read in messages."""


@dataclass(frozen=True, slots=True)
class Mark:
    """A finding that scales a step's score rather than adding suspicion (``thin``, ``elsewhere``)."""

    step_id: str
    name: str
    value: float
    sentence: str


Found = Evidence | Mark
"""What a source returns for one step."""


def _thin(sid: str, strength: float, reason: str) -> list[Found]:
    """The step joins the failure's thin slice with this strength (it introduced a value the failure involves)."""
    return [Mark(sid, "thin", strength, reason)]


_TERM = re.compile(r"[a-z][a-z0-9]{2,}")
"""A word of a field name or of a message that may name one (``bin``, ``qty``, ``fee``: three letters or more)."""


def _terms(text: str, lexicon: Lexicon = ENGLISH) -> set[str]:
    """The words of a text that may name a field or a label: `_TERM`, function words left out, a plural's
    ``s`` cut (*English*)."""
    return {
        lexicon.singular(w)
        for w in _TERM.findall(text.lower())
        if w not in lexicon.stopwords and w not in lexicon.short_stopwords
    }


def _trivial_number(a: Atom) -> bool:
    """A small count without a name (1 to 10): too common to say what is wrong."""
    return a.kind == "number" and a.number is not None and a.field is None and a.unit is None and a.number == int(a.number) and -10 <= a.number <= 10


def _field_words(field: str, lexicon: Lexicon = ENGLISH) -> list[str]:
    """The words of a field name (``paid_days_left`` -> paid, days, left), English stop words left out."""
    words = _TERM.findall(field.lower().replace("_", " "))
    return [w for w in words if w not in lexicon.stopwords and w not in lexicon.short_stopwords] or ["\0"]


def _short(x: float) -> str:
    """A number as a reason shows it (four significant digits)."""
    return f"{x:.4g}"


def _written_as(x: float, m: Mention) -> bool:
    """Whether a number is the one a text mentions, as written there (rounded to its digits; a percent as a share)."""
    raw = m.raw.strip().rstrip("%")
    decimals = len(raw.rsplit(".", 1)[1]) if "." in raw else 0
    tol = 0.5 * 10.0**-decimals + 1e-9
    if abs(x - m.value) <= tol:
        return True
    return m.unit == "%" and abs(x * 100 - m.value) <= tol


def _shape(raw: str) -> str:
    """The shape of an identifier or a date: its letters as ``A``, its digits as ``9``."""
    return re.sub(r"[A-Za-z]", "A", re.sub(r"\d", "9", raw.strip()))


def _conversation(step: Step) -> bool:
    """Whether a step is a model call given a conversation (more than three messages) rather than one request."""
    if step.kind != "llm":
        return False
    msgs = step.input.get("messages") if isinstance(step.input, Mapping) else None
    return isinstance(msgs, list) and len(msgs) > 3


def reference_evidence(sl: Slice, ids: Iterable[str]) -> tuple[list[Evidence], str | None]:
    """Deviations from the agent's passing runs and from the step's other occurrences in this run.

    Also the earliest step on the slice whose deviation it did not inherit, which
    weighs more (Sahoo et al. 2013; `earliest`).
    """
    out: list[Evidence] = []
    ids = list(ids)
    siblings = sibling_profiles(sl.run, sl.lin, {step_key(sl.g.steps[s]) for s in ids})
    first: str | None = None
    deviates: dict[str, float] = {}
    chosen = set(ids)
    order = [s for s in sl.g.topological_order() if s in chosen]
    shared = unkeyed(sl.run.steps, sl.profile, sl.g.steps) if sl.profile is not None else frozenset()
    for sid in order:
        step = sl.g.steps[sid]
        if cut_short(step, sl.g.steps, sl.failures):
            continue  # interrupted by the failure: its missing answer differs from the passing runs' by that alone
        view = sl.lin.view(sid)
        found: list[Evidence] = []
        if sl.profile is not None:
            found += violations(step, view, sl.profile, steps=sl.g.steps, shared=shared)
            u = unseen(step, sl.profile, sl.g.steps)
            if u is not None:
                found.append(u)
        own = siblings.get(sid)
        # A model's calls in one run see conversations of different lengths (each turn adds messages):
        # tool calls per message differ by construction, so no count of items ties its calls together.
        if own is not None:
            found += [
                Evidence(
                    e.step_id,
                    round(e.suspicion * sl.w["sibling"], 3),
                    e.reason.replace("passing occurrences", "other calls in this run").replace(
                        "passing runs", "its other calls in this run"
                    ).replace("passing values", "values of its other calls in this run"),
                    "sibling:" + e.diagnoser.split(":", 1)[1],
                    e.sound,
                    given=e.given,
                )
                for e in violations(step, view, own, passing=sl.profile, within=sl.g.steps, zeros=False)
                if not (step.kind == "llm" and e.diagnoser == "reference:size")
            ]
        strength = max((e.suspicion for e in found if e.diagnoser != "reference:unseen"), default=0.0)
        # A deviation that came in through an input already deviating is inherited (the
        # infection propagated): the earliest deviation on a chain is the suspect.
        came = [
            d.step_id
            for d in sl.g.parents(sid)
            if d.kind in VALUE_DEP_KINDS and deviates.get(d.step_id, 0.0) >= 0.9 * strength > 0
        ]
        if not came:
            # A new value the step was given (a parse copying a model's answer, a model no reference
            # profiles) came in with its input: the step keeps the inherited share of that finding, and
            # its own deviation still passes on to the steps after it.
            out += [m for e in found if e.given for m in (*_modelled(sl, sid, e, deviates), *reference.relayed_source(sl.lin, sl.g.steps, sid, e))]
            found = [
                replace(e, suspicion=round(e.suspicion * sl.w["inherited"], 3)) if e.given else e
                for e in found
            ]
        if came:
            name = sl.g.steps[came[0]].name
            found = [
                Evidence(
                    e.step_id,
                    round(e.suspicion * sl.w["inherited"], 3),
                    f"{e.reason} (its input from {name} already deviated)",
                    e.diagnoser,
                    e.sound,
                )
                for e in found
            ]
        if strength > 0:
            deviates[sid] = strength
        out += found
        if first is None and strength > 0 and not came:
            first = sid
    return out, first


_LABEL = re.compile(r"^[a-z]+(?:[-_][a-z]+){0,2}$")
"""A label: a lowercase word, or up to three joined by hyphens or underscores (``how-to``, ``on_hold``)."""


def _modelled(sl: Slice, sid: str, e: Evidence, deviates: Mapping[str, float]) -> list[Evidence]:
    """A new value a step was given by a model call (its argument, its answer) that wrote it, moved to that call.

    References profile no model output (its wording varies run to run), so a value a model made up is seen
    first at the step that takes it: when that step's deviation is one it was given, the model that wrote
    the value carries the finding (the step keeps the inherited share), unless the model's own inputs
    already deviated (its answer then followed them: the earliest deviation is the suspect) or held the
    value (it copied it from further upstream).  A label the
    model picked (``approve``, ``on_hold``) is a choice among options its inputs drive, not its own writing:
    it stays where it was seen, and the search goes on upstream.
    """
    if not e.values or e.diagnoser != "reference:category":
        return []
    value = e.values[0].casefold()
    if _LABEL.match(value):
        return []
    step = sl.g.steps[sid]
    return [
        Evidence(
            d.step_id,
            e.suspicion,
            f"wrote {e.values[0][:60]!r}, which {step.name} passed on: {e.reason}",
            "reference:category-source",
        )
        for d in sl.g.parents(sid)
        if d.kind in VALUE_DEP_KINDS
        and sl.g.steps[d.step_id].kind == "llm"
        and len(value) >= 3
        and value in sl.lin.view(d.step_id).out_text
        and value not in sl.lin.view(d.step_id).in_text  # (a value the model was given, it copied)
        and not any(deviates.get(p.step_id, 0.0) > 0 for p in sl.g.parents(d.step_id))
    ]


def local_evidence(sl: Slice, ids: Iterable[str]) -> list[Found]:
    """Local anomalies of each step's own transformation (`trajdebug.analysis.lineage.anomalies`)."""
    out: list[Found] = []
    calls: dict[tuple[str, str], list[Step]] = {}
    for s in sl.run.steps:
        calls.setdefault((s.name, s.kind), []).append(s)
    updates: dict[tuple[str, str], int] | None = None  # (built on first need: one pass over the outputs)
    units: frozenset[str] | None = None
    carried: dict[str, dict[str, Step]] | None = None  # (one pass over the run: `carried_map`)
    rules = CallRules(sl.lin)  # (each call's numbers read once for all its step's calls)
    loops: dict[tuple[str, str], frozenset[Cursor]] = {}  # (per step: the lists its calls walk by a counter)
    for sid in ids:
        step = sl.g.steps[sid]
        same = calls.get((step.name, step.kind), [])
        signed: frozenset[str] = frozenset()
        if len(same) > 1 and step.kind not in CONTAINER_KINDS:
            # (Fields the step signs or scales by a rule its other calls show: no slip.)
            signed = rules.signed(step, same) | rules.scaled(step, same)
        if updates is None:
            updates = update_index(sl.run.steps)
        rewritten = state_keys(step, updates, sl.g.position(sid))
        if units is None:
            units = run_units(sl.lin.view(s.step_id) for s in sl.run.steps)
        if carried is None:
            carried = carried_map(sl.run.steps)
        walks = loops.get((step.name, step.kind))
        if walks is None:
            walks = loops[(step.name, step.kind)] = counted_loops(same) if len(same) > 1 else frozenset()
        found = anomalies(
            step, sl.lin.view(sid), sid in sl.has_children, signed, rewritten, units, carried.get(sid, {}), walks
        )
        for e in found:
            if e.diagnoser == "lineage:admitted" and e.values and not _passed_on(sl, sid, e.values[0]):
                # The record let through went no further than the step's readers: whatever failed
                # later did so without it (a planner given the list that picked other records).
                continue
            out.append(e)
    return out


def _passed_on(sl: Slice, sid: str, label: str) -> bool:
    """Whether a step after ``sid`` (not one enclosing it) answered with ``label``: the record went on."""
    pos = sl.g.position(sid)
    want = label.casefold()
    outer: set[str] = set()
    parent = sl.g.steps[sid].parent_id
    while parent is not None and parent in sl.g.steps and parent not in outer:
        outer.add(parent)
        parent = sl.g.steps[parent].parent_id
    # A whole-word match on the text as written (non-ASCII kept): "Team 1" is not in "Team 10".
    return any(
        content.has_word(content.text_of(s.output, 200_000).casefold(), want)
        for s in sl.run.steps
        if s.output is not None and s.step_id not in outer and s.step_id in sl.g.steps and sl.g.position(s.step_id) > pos
    )


_ONE_VALUE = 24
"""The longest text read as one value written in parts (``20<->30``, ``M1/M2``), not a list to choose from."""


def parts_of_one_value(step: Step, a: Atom, b: Atom) -> bool:
    """Whether two values a step was given are parts of one short text of its input (``20<->30``), alone or
    as one word of a longer text ("regime 20<->30 C").

    A step that passed on one part of it lost the other; it did not choose between two given values.
    """
    if a.raw == b.raw:
        return False
    for t in iter_text(step.input):
        words = [t] if len(t) <= _ONE_VALUE else t.split()
        if any(len(w) <= _ONE_VALUE and a.raw in w and b.raw in w.replace(a.raw, " ", 1) for w in words):
            return True
    return False


def passed_instead(sl: Slice, sid: str, a: Atom, b: Atom) -> bool:
    """Whether a step passed on ``b`` where it lost ``a``, both given to it as values of their own (a choice
    between given values), not as parts of one value."""
    view = sl.lin.view(sid)
    return view.given(b) and view.holds(b) and not parts_of_one_value(sl.g.steps[sid], a, b)


def carried_by_state(sl: Slice, sid: str, a: Atom, pos: int) -> str | None:
    """A later step given the same part of a shared state as this one, that passed the value on, if any.

    A graph's nodes and its routing functions are each given the whole state (LangGraph hands a conditional
    edge the state it hands the next node): a step given the state's ``loan`` and answering a branch name
    lost nothing the run lacks when a later step before the failure, given the very same ``loan``, carried
    the value on. The value travelled in the state, not through the step.
    """
    step = sl.g.steps[sid]
    if not isinstance(step.input, Mapping):
        return None
    keys = [
        k
        for k, v in step.input.items()
        if isinstance(v, Mapping) and any(x.key == a.key for x in atoms(v))
    ]
    if not keys:
        return None
    start = sl.g.position(sid)
    for later in sl.run.steps:
        if (
            start < sl.g.position(later.step_id) < pos
            and isinstance(later.input, Mapping)
            and any(later.input.get(k) == step.input[k] for k in keys)
            and sl.lin.view(later.step_id).holds(a)
        ):
            return later.step_id
    return None


def kept_by_state(sl: Slice, sid: str, a: Atom) -> bool:
    """Whether the value sat in a part of a shared state the step was handed and did not write back.

    A graph's node is handed the whole state and returns an update of the keys it wrote; the keys it
    left alone stay in the state for the nodes after it (LangGraph merges the update, a loop keeps
    ``state["recipe"]``).  A node that computed ``reading`` from a state holding ``recipe`` lost none
    of the recipe's values: it never had to pass them on.  Only a step that rewrote the part holding
    the value can have dropped it.  Shared parts are those earlier steps returned under the same key
    (`trajdebug.analysis.lineage.state_keys`); a value handed down a pipeline is no state and still counts.
    (`trajdebug.analysis._selection.left_in_state` reads the same for ids and text from the answer's shape;
    this reads it for every value, numbers too, from the run's own earlier updates.)
    """
    step = sl.g.steps[sid]
    if not isinstance(step.input, Mapping) or not isinstance(step.output, Mapping) or not step.output:
        return False
    holding = [k for k, v in step.input.items() if any(x.key == a.key for x in atoms(v))]
    if not holding:
        return False
    shared = state_keys(step, update_index(sl.run.steps), sl.g.position(sid))
    if not all(str(k) in shared and k not in step.output for k in holding):
        return False
    # Only an answer merged back is an update: a later step is handed each of its parts under the same
    # key (a model's reply to the conversation the state holds is a message, not an update of the state).
    start = sl.g.position(sid)
    later = [s.input for s in sl.run.steps if sl.g.position(s.step_id) > start and isinstance(s.input, Mapping)]
    return any(all(k in given and given[k] == v for k, v in step.output.items()) for given in later)


ARGUMENT_SIGNALS = frozenset(
    {"tool-arguments", "step-error", "error-lifecycle", "symptom", "tool-result", "swallowed-error", "starved-consumer"}
)
"""Signals that judge what a step was given or how its call ended, not the answer it returned: a wrapper keeps
them (`trajdebug.analysis._wrappers.answered_inside`)."""

def reading_position(sl: Slice, step_id: str) -> tuple[int, frozenset[str]]:
    """Where a failure's values are read from, and the steps read there that cannot be their origin.

    The failing step's own place, or, for a step enclosing others (the trace's top span a run's failure is
    placed on, an agent judged on its final answer), the place after its last inner step: it ends when they
    have answered and judges what they produced; read at its start, every value they made lies after it and
    has no origin to trace.  Read there, the step itself is no origin (its answer is where the failure showed,
    as for a step read at its place), nor is a step between its start and that place that is neither inside it
    nor in the failure's backward slice (another root span running beside it; one that fed a step inside may
    have made the value)."""
    pos = sl.g.position(step_id)
    if step_id not in sl.has_children:
        return pos, frozenset()
    inside: set[str] = set()
    for sid, s in sl.g.steps.items():
        p, hops = s.parent_id, 0
        while p is not None and p != step_id and hops < 64:
            p, hops = (sl.g.steps[p].parent_id if p in sl.g.steps else None), hops + 1
        if p == step_id:
            inside.add(sid)
    last = max((sl.g.position(sid) for sid in inside), default=pos)
    window = (sid for sid in sl.g.steps if pos <= sl.g.position(sid) <= last and sid not in inside)
    return last + 1, frozenset(sid for sid in window if sid == step_id or sid not in sl.dist)


def wrapping_failures(sl: Slice) -> set[str]:
    """Failing steps that enclose another failing step: an agent span failing because a tool inside it
    raised repeats that failure, and it started before the steps inside it, so read at its own place
    it would take every value its children handled on the way for a value lost before it."""
    failing = {f.step_id for f in sl.failures}
    out: set[str] = set()
    for sid in failing:
        seen: set[str] = set()
        parent = sl.g.steps[sid].parent_id if sid in sl.g.steps else None
        while parent is not None and parent in sl.g.steps and parent not in seen:
            seen.add(parent)
            if parent in failing:
                out.add(parent)
            parent = sl.g.steps[parent].parent_id
    return out


__all__ = [
    "ARGUMENT_SIGNALS",
    "NAMING_FIELDS",
    "Found",
    "Mark",
    "Slice",
    "carried_by_state",
    "kept_by_state",
    "local_evidence",
    "parts_of_one_value",
    "passed_instead",
    "reading_position",
    "wrapping_failures",
    "reference_evidence",
]

