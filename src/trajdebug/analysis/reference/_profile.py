"""What an agent's steps did in its passing runs: the observations `learn` gathers per step key.

A `Profile` holds, per (agent, name, kind), the counts `_invariants.py` reads as likely invariants
(grounded and kept fields, ratios, magnitudes, signs, presence, categories, sizes) and the values each
step brought into the runs; `_siblings.py` builds the same observations from a run's own repeated calls.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.lexicon import ENGLISH
from trajdebug.analysis.lineage import Lineage, StepView, semantic
from trajdebug.analysis.lineage import formulas as explaining
from trajdebug.analysis.reference._call_keys import _canon, answer_key, asked_of, keyed_parts
from trajdebug.core.chat import tool_names
from trajdebug.core.mentions import date_year, same_year, separator_marks
from trajdebug.core.model import CONTAINER_KINDS, OBSERVATION_KINDS, Run, Step
from trajdebug.core.values import atoms as value_atoms


MIN_SUPPORT = 3
"""Observations an invariant needs before a violation counts."""

StepKey = tuple[str, str, str]
"""How a step is matched across runs: (agent, name, kind)."""


def step_key(step: Step, steps: Mapping[str, Step] | None = None) -> StepKey:
    """The key that matches a step with its counterparts in other runs of the agent.

    ``steps`` (the run's steps by id) lets a model call with no agent be told apart by its role: routes that
    name every model call after the client (one name for the planner's, the router's, the writer's calls)
    would otherwise profile them as one step with many schemas and no invariant.
    """
    return (step.agent or _role(step, steps), step.name, step.kind)


def _role(step: Step, steps: Mapping[str, Step] | None) -> str:
    """What a model call with no agent is for: its enclosing node or sub-agent (not the run's root, which
    encloses every call), else the tools it was offered; '' when neither tells, or without the run's steps
    (the plain key, which a run's own calls are compared by: `sibling_profiles`)."""
    if step.kind != "llm" or steps is None:
        return ""
    parent = steps.get(step.parent_id) if step.parent_id is not None else None
    if parent is not None and parent.kind in CONTAINER_KINDS and parent.parent_id is not None:
        return parent.name
    names = sorted(set(tool_names(_tools_of(step))))
    return "(" + ",".join(names) + ")" if names else ""


def _tools_of(step: Step) -> Any:
    """The tools a model call was offered, as its request or its envelope (``llm.tools``) holds them."""
    inp = step.input if isinstance(step.input, Mapping) else {}
    return inp.get("tools") or step.attributes.get("llm.tools")


@dataclass(slots=True)
class _FieldStats:
    n: int = 0
    runs: set[str] = field(default_factory=set)
    grounded: int = 0
    kept: int = 0
    kept_seen: int = 0
    days_seen: int = 0
    """Occurrences whose field held a day (a date, a timestamp's date)."""
    days_grounded: int = 0
    """... every day of which the step was given (a lookup for a date answering for that date)."""
    dated: int = 0
    """Occurrences whose every given date was given in its year too, not by month and day only (`_years_given`)."""
    sources_seen: int = 0
    """Occurrences whose values were found in a part of the step's input (`field_sources`)."""
    source_counts: dict[str, int] = field(default_factory=dict)
    """Per input part, the occurrences in which it held the field's values (`field_sources`)."""
    numbers: list[float] = field(default_factory=list)
    units: list[str] = field(default_factory=list)
    """The unit word of each of `numbers` (`unit_word`), in the same order."""
    marks: set[str] = field(default_factory=set)  # (`_FieldObs.marks` of all its passing occurrences)
    values: dict[str, int] = field(default_factory=dict)
    raws: dict[str, str] = field(default_factory=dict)
    formulas: dict[str, int] = field(default_factory=dict)
    fits: dict[str, int] = field(default_factory=dict)
    """How many of its numbers each formula explains (a number may fit several: `formulas`)."""
    # Read only to compare answers across passing runs (`_fields._mints`): sibling profiles, which compare
    # no answers, leave them empty.
    day_asks: dict[str, dict[str, str]] = field(default_factory=dict, compare=False)
    """Each day's runs, each with the first request that got it (days only, uncapped: a field's repeats must
    all count, or any date field reads as new in every run once `values` is full)."""
    across: set[str] = field(default_factory=set, compare=False)
    """Days seen in more than one run: a day in none of them is new in every run (a clock reading)."""
    shared: set[str] = field(default_factory=set, compare=False)
    """Days one run's calls with different requests all got: a stamp of the run, not an answer's own date."""


@dataclass(slots=True)
class _StepStats:
    n: int = 0
    runs: set[str] = field(default_factory=set)
    answers: dict[str, dict[str, str]] = field(default_factory=dict)
    asks: dict[str, int] = field(default_factory=dict)
    """How many times each request of ``answers`` was made: the repeats its answers' changes are counted
    against (`_answers._variation_of`)."""
    schemas: dict[frozenset[str], int] = field(default_factory=dict)
    empty: int = 0
    parts: dict[str, dict[str, str]] = field(default_factory=dict)
    """Large parts of its outputs (canonical text) -> the requests that got them -> the run."""
    part_keys: dict[str, str | None] = field(default_factory=dict)
    """Per large part (``parts``), the top-level key of the answer it first sat under (None: the whole answer):
    what each key of an answer follows is read apart (`_answers._requests_of`)."""
    fields: dict[str, _FieldStats] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)
    ratios: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    unit_ratios: dict[tuple[str, str, str], list[tuple[float, float]]] = field(default_factory=dict)
    """(output field, input field, a setting ``unit=lb``) -> (ratio, input number): a factor per setting."""
    sizes: list[float] = field(default_factory=list)
    introduced: set[str] = field(default_factory=set)
    """Values (texts, ids, dates) its output held that its input did not: values it brought into the run."""


@dataclass(frozen=True, slots=True)
class Profile:
    """What an agent's steps did in its passing runs."""

    runs: tuple[str, ...]
    """The passing runs it was learned from."""
    steps: Mapping[StepKey, _StepStats]
    """Per step key, the observations."""
    enclosing: Mapping[StepKey, Mapping[str, Mapping[tuple[str, str], str]]] = field(default_factory=dict)
    """Per step enclosing others, per request: (its inside, its steady answer) -> run (`_enclosing.learn`)."""
    varying: Mapping[StepKey, frozenset[tuple[str, ...]]] = field(default_factory=dict)
    """Per step enclosing others, the parts of its answer that varied between passing runs alike inside."""

    def knows(self, step: Step, steps: Mapping[str, Step] | None = None) -> bool:
        """Whether the profile has seen this step in a passing run (``steps``: its run's, `step_key`)."""
        return step_key(step, steps) in self.steps


def learn(runs: Sequence[Run]) -> Profile:
    """Learn the likely invariants of an agent's steps from its passing runs."""
    table: dict[StepKey, _StepStats] = {}
    for run in runs:
        lin = Lineage(run)
        kids = _children(run)
        by_id = {s.step_id: s for s in run.steps}
        for s in run.steps:
            if s.kind in CONTAINER_KINDS or s.status != "ok":
                continue
            st = table.setdefault(step_key(s, by_id), _StepStats())
            _observe(st, s, lin.view(s.step_id), run.run_id, bool(kids.get(s.step_id)), by_id)
    return Profile(tuple(r.run_id for r in runs), table)


def _children(run: Run) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in run.steps:
        if s.parent_id is not None:
            out[s.parent_id] = out.get(s.parent_id, 0) + 1
    return out


def unit_word(a: Any) -> str:
    """The unit written after a number atom as `Lexicon.unit` compares it, "" for none: which quantity it is."""
    return ENGLISH.unit(a.unit or "")


OUTPUT_FIELD = "(output)"
"""The pseudo-field of a step's output when it is a bare value (a string, a number) rather than a record."""


def _out_fields(view: StepView) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for a in view.outputs:
        out.setdefault(a.field or OUTPUT_FIELD, []).append(a)
    return out


_ENTRY_KEY = re.compile(r"(?=.*\d).*[^\w]")
"""A key holding a digit and a character no identifier has (``b-0610``, ``2026-10-14``, ``sku 12``): an
entry of a map keyed by ids or dates, not a parameter's name."""


def entry_key(name: str | None) -> bool:
    """Whether an atom's field is the key of a map entry (an id or a date) rather than a parameter's name."""
    return name is not None and _ENTRY_KEY.match(name) is not None


def operand_view(view: StepView) -> StepView:
    """The view whose inputs can be operands of a ratio or a formula: map entries keyed by ids or dates left
    out.  A memory or an index passed whole to each call grows by an entry per call, so its first entry
    equals many a call's output by chance of the data (a priority equal to the first item's); a rule of the
    step relates its output to its parameters, not to whichever entry came first.  Nor is a value found
    only among the entries "given" (every priority after the first is somewhere in the memory)."""
    if not any(entry_key(a.field) for a in view.inputs):
        return view
    kept = [a for a in view.inputs if not entry_key(a.field)]
    only_entries = {a.key for a in view.inputs if entry_key(a.field)} - {a.key for a in kept}
    return replace(view, inputs=kept, in_keys=view.in_keys - only_entries)


def _in_fields(view: StepView) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for a in view.inputs:
        if a.field:
            out.setdefault(a.field, []).append(a)
    return out


VALUES_CAP = 30
"""A field's distinct non-number values counted at most (the first ones seen; then counting stops)."""

SCHEMAS_CAP = 20
"""Distinct output shapes counted at most per step (the first ones seen)."""

INTRODUCED_CAP = 5000
"""Values a step brought in kept at most per step (the first ones seen)."""


@dataclass(frozen=True, slots=True)
class _FieldObs:
    """What one occurrence of a step contributes to the stats of one of its output fields."""

    name: str
    """The field."""
    grounded: bool
    """Every value of the field was given to the step."""
    kept_seen: bool
    """The step was given one value under the same name."""
    kept: bool
    """... and the field kept it."""
    formulas: tuple[str, ...]
    """How each of its (first 20) numbers was computed from the step's inputs (`Derivation.formula`)."""
    fits: tuple[str, ...]
    """Every formula that explains each of those numbers (`lineage.formulas`), one after another."""
    numbers: tuple[float, ...]
    """Its numbers (among its first 50 values)."""
    values: tuple[tuple[str, str], ...]
    """(key, raw) of its non-number values (among its first 50), in order."""
    introduced: tuple[str, ...]
    """Keys of those it was not given (values the step brought in), in order."""
    days: bool | None = None
    """Every day its values name (``sampled_at=2027-03-10T07:25``'s date) was given; None: it names none."""
    sources: frozenset[str] | None = None
    """The top-level parts of the step's input holding all its values (`field_sources`); None: not read."""
    units: tuple[str, ...] = ()
    """The unit word written after each of `numbers`, lower case ("" for none), in the same order."""
    dated: bool = True
    """Every date among its values that the step was given, it was given in that year (`_years_given`)."""
    marks: frozenset[str] = frozenset()
    """The uses of "." and "," its numbers' writings show beyond doubt (`separator_marks`: "2,4")."""


@dataclass(frozen=True, slots=True)
class _Obs:
    """What one occurrence of a step contributes to its `_StepStats` (requests and answers aside)."""

    run_id: str
    """The run it was seen in (for a step's other occurrences in one run: its own id)."""
    empty: bool
    """It returned nothing."""
    schema: frozenset[str]
    """The fields of its output (those left empty too)."""
    fields: tuple[_FieldObs, ...]
    """Per output field, in the output's order."""
    ratios: tuple[tuple[tuple[str, str], float], ...]
    """(output field, input field) -> output number / input number, for single numbers."""
    size: float | None
    """Items out per item in, when both are counts."""
    unit_ratios: tuple[tuple[tuple[str, str, str], float, float], ...] = ()
    """``ratios`` again, keyed by each setting the step was given too (`settings`), with the input number."""


def _observe(
    st: _StepStats, s: Step, view: StepView, run_id: str, container: bool, steps: Mapping[str, Step]
) -> None:
    if s.kind in OBSERVATION_KINDS and len(st.parts) < 2000:
        request = _canon(semantic(s, s.input))
        for key, part in keyed_parts(semantic(s, s.output)):
            st.part_keys.setdefault(part, key)
            got = st.parts.setdefault(part, {})
            if len(got) < 3:
                got.setdefault(request, run_id)
    asked = answer_key(asked_of(s, steps))
    if len(st.answers) < 500:
        seen = st.answers.setdefault(asked, {})
        answer = answer_key(semantic(s, s.output))
        if len(seen) < 4:
            seen.setdefault(answer, run_id)
        if answer in seen:
            # Only the asks whose answer is kept count: the changes are read from the kept answers, so a unit
            # that changed on every repeat reads as such, not as 3 in n (review rev49r, L1).
            st.asks[asked] = st.asks.get(asked, 0) + 1
    _apply(st, _record(s, view, run_id), asked)


DAY_PREFIX = "d:"
"""The key prefix of a day's atom (`trajdebug.core.values`: ``d:01-24``; a time of day is ``t:``)."""


def _days_given(atoms: Sequence[Any], operands: StepView) -> bool | None:
    """Whether every day a field's values name was given to the step (None: they name no day).  A
    timestamp's time of day is rarely given (a reading taken at 05:50), its date is (the day asked for)."""
    days = [a for a in atoms if a.kind == "date" and a.key.startswith(DAY_PREFIX)]
    return all(operands.given(a) for a in days) if days else None


def _years_given(atoms: Sequence[Any], operands: StepView) -> bool:
    """Whether every date of a field given by month and day (`date_keys`) was given in that year too (or with
    none, or as written): a warranty's end, 2026-08-01, is no value its purchase's 2024-08-01 gave."""
    for a in atoms:
        year = date_year(a.raw) if a.kind == "date" and a.key.startswith(DAY_PREFIX) else None
        settled = year is None or not operands.given(a) or a.raw.casefold() in operands.in_text
        if not settled and not any(i.kind == "date" and i.key == a.key and same_year(a.raw, i.raw) for i in operands.inputs):
            return False
    return True


PARTS_CAP = 12
"""Top-level input parts read for where a value came from (a graph's state, a tool's named arguments)."""


def input_parts(s: Step) -> dict[str, frozenset[str]] | None:
    """The keys of the values each top-level part of a step's input holds, for a step handed several parts
    (a graph node given the conversation and the request; a memory given the fresh record and the last
    one); None for a model call, a container, or an input of one part."""
    if s.kind == "llm" or s.kind in CONTAINER_KINDS or not isinstance(s.input, Mapping):
        return None
    if not 2 <= len(s.input) <= PARTS_CAP:
        return None
    return {str(k): frozenset(a.key for a in value_atoms(v) if a.kind != "number") for k, v in s.input.items()}


def held_sources(fs: _FieldStats) -> frozenset[str]:
    """The input parts that held the field's values in every occurrence that read any (`field_sources`)."""
    if fs.sources_seen != fs.n:
        return frozenset()
    return frozenset(k for k, c in fs.source_counts.items() if c == fs.n)


def field_sources(parts: Mapping[str, frozenset[str]] | None, atoms: Sequence[Any]) -> frozenset[str] | None:
    """The parts of the input that hold every (non-number) value of an output field; None when the field
    holds none or no part holds them all (a value the step made)."""
    keys = {a.key for a in atoms if a.kind != "number"}
    if parts is None or not keys:
        return None
    found = frozenset(k for k, held in parts.items() if keys <= held)
    return found or None


def _record(s: Step, view: StepView, run_id: str) -> _Obs:
    """One occurrence's contribution: everything `_apply` adds to the stats, read from its values."""
    outs = _out_fields(view)
    ins = _in_fields(view)
    operands = operand_view(view)
    parts = input_parts(s)
    fields = []
    for f, atoms in outs.items():
        given = ins.get(f) or []
        kept_seen = bool(given) and len({a.key for a in given}) == 1
        formulas = []
        fits: list[str] = []
        for a in [a for a in atoms if a.kind == "number"][:20]:
            fit = explaining(operands, a)
            formulas.append(fit[0])
            fits.extend(fit)
        head = atoms[:50]
        fields.append(
            _FieldObs(
                f,
                all(operands.given(a) for a in atoms),
                kept_seen,
                kept_seen and all(a.key == given[0].key for a in atoms),
                tuple(formulas),
                tuple(fits),
                tuple(a.number for a in head if a.kind == "number" and a.number is not None),
                tuple((a.key, a.raw) for a in head if a.kind != "number"),
                tuple(a.key for a in head if a.kind != "number" and not view.given(a)),
                _days_given(atoms, operands),
                field_sources(parts, atoms),
                tuple(unit_word(a) for a in head if a.kind == "number" and a.number is not None),
                _years_given(atoms, operands),
                frozenset().union(*(separator_marks(a.raw) for a in head if a.kind == "number")),
            )
        )
    # Ratios between single output numbers and single input numbers, by field.
    out_nums = {f: a[0].number for f, a in outs.items() if len(a) == 1 and a[0].number is not None}
    in_nums = {
        f: a[0].number for f, a in ins.items() if len(a) == 1 and a[0].number is not None and not entry_key(f)
    }
    ratios = tuple(
        ((fo, fi), y / x) for fo, y in out_nums.items() for fi, x in in_nums.items() if x and y is not None
    )
    per_setting = tuple(
        ((fo, fi, c), y / x, x)
        for c in settings(s)
        for fo, y in out_nums.items()
        for fi, x in in_nums.items()
        if x and y is not None
    )
    # A field left empty (``excluded: []``) holds no value, yet the output has it: part of its shape.
    blank = [k for k, v in s.output.items() if _is_empty(v)] if isinstance(s.output, Mapping) else []
    shape = frozenset([*outs, *blank])
    return _Obs(run_id, _is_empty(s.output), shape, tuple(fields), ratios, _size_ratio(s), per_setting)


def settings(s: Step) -> list[str]:
    """The short text arguments a step was given at its top level (``unit=lb``, ``currency=EUR``), at most
    three: a converter's factor, a rate, depends on them, so a ratio constant per setting is a relation
    even when it is none over all calls."""
    given = s.input
    if isinstance(given, str) and content.looks_like_json(given):
        given = content.parse_json(given)
    if not isinstance(given, Mapping) or len(given) > 12:
        return []
    found = [
        f"{k}={v.strip().lower()}"
        for k, v in given.items()
        if isinstance(v, str) and 0 < len(v.strip()) <= 12 and not entry_key(str(k))
    ]
    return found[:3]


def _apply(st: _StepStats, ob: _Obs, asked: str | None = None) -> None:
    """Add one occurrence's contribution to a step's stats (``asked``: its request, when answers are compared)."""
    st.n += 1
    st.runs.add(ob.run_id)
    if ob.empty:
        st.empty += 1
    if len(st.schemas) < SCHEMAS_CAP:
        st.schemas[ob.schema] = st.schemas.get(ob.schema, 0) + 1
    for fo in ob.fields:
        f = fo.name
        fs = st.fields.setdefault(f, _FieldStats())
        fs.n += 1
        fs.runs.add(ob.run_id)
        st.present[f] = st.present.get(f, 0) + 1
        if fo.grounded:
            fs.grounded += 1
        if fo.sources is not None:
            fs.sources_seen += 1
            for part in fo.sources:
                fs.source_counts[part] = fs.source_counts.get(part, 0) + 1
        fs.dated += int(fo.dated)
        if fo.days is not None:
            fs.days_seen += 1
            fs.days_grounded += int(fo.days)
        if fo.kept_seen:
            fs.kept_seen += 1
            if fo.kept:
                fs.kept += 1
        for shape in fo.formulas:
            fs.formulas[shape] = fs.formulas.get(shape, 0) + 1
        for shape in fo.fits:
            fs.fits[shape] = fs.fits.get(shape, 0) + 1
        fs.numbers.extend(fo.numbers)
        fs.units.extend(fo.units)
        fs.marks |= fo.marks
        for key, raw in fo.values:
            if len(fs.values) < VALUES_CAP:
                fs.values[key] = fs.values.get(key, 0) + 1
                fs.raws.setdefault(key, raw)
            if asked is not None and key.startswith(DAY_PREFIX):
                runs = fs.day_asks.setdefault(key, {})
                if runs.setdefault(ob.run_id, asked) != asked:
                    fs.shared.add(key)
                if len(runs) > 1:
                    fs.across.add(key)
        for key in fo.introduced:
            if len(st.introduced) < INTRODUCED_CAP:
                st.introduced.add(key)
    for pair, r in ob.ratios:
        st.ratios.setdefault(pair, []).append(r)
    for ukey, r, x in ob.unit_ratios:
        st.unit_ratios.setdefault(ukey, []).append((r, x))
    if ob.size is not None:
        st.sizes.append(ob.size)


def _is_empty(value: Any) -> bool:
    if value is None or isinstance(value, str):
        return value is None or value.strip() in ("", "[]", "{}", "null")
    return isinstance(value, (list, tuple, Mapping)) and len(value) == 0


def returns_empty(profile: Profile, step: Step, steps: Mapping[str, Step] | None = None) -> bool:
    """Whether the step returned nothing in some of the agent's passing runs (an empty result is normal for it);
    ``steps``: its run's steps by id (`step_key`)."""
    st = profile.steps.get(step_key(step, steps))
    return st is not None and st.empty > 0


def _size_ratio(s: Step) -> float | None:
    a, b = _count(semantic(s, s.input)), _count(semantic(s, s.output))
    return None if a is None or b is None or a == 0 else b / a


def _count(value: Any) -> int | None:
    if isinstance(value, Mapping):  # (a mapping holding one list counts as that list)
        lists = [v for v in value.values() if isinstance(v, list)]
        value = lists[0] if len(lists) == 1 else None
    return len(value) if isinstance(value, list) else None


def producers_of(profile: Profile, key: str) -> list[StepKey]:
    """The steps that brought this value (a text, id or date) into the agent's passing runs.

    A step that only passed on a value it was given (a model repeating an id into a
    tool call) is not its producer.
    """
    return [k for k, st in profile.steps.items() if key in st.introduced]


def spectrum(failing: Iterable[Step], profile: Profile) -> dict[str, float]:
    """Ochiai suspiciousness of each failing-run step key over one failing and the passing runs.

    With one failing run, Ochiai (Abreu, Zoeteweij & van Gemund, 2007) is
    ``1 / sqrt(1 + ep)``, ``ep`` being the passing runs that executed the step:
    a step no passing run executed scores 1.
    """
    out: dict[str, float] = {}
    by_id = {s.step_id: s for s in failing}
    for s in by_id.values():
        st = profile.steps.get(step_key(s, by_id))
        ep = len(st.runs) if st is not None else 0
        out[s.step_id] = 1.0 / math.sqrt(1 + ep)
    return out


__all__ = [
    "INTRODUCED_CAP",
    "MIN_SUPPORT",
    "OUTPUT_FIELD",
    "SCHEMAS_CAP",
    "VALUES_CAP",
    "Profile",
    "StepKey",
    "learn",
    "producers_of",
    "returns_empty",
    "spectrum",
    "step_key",
    "unit_word",
]
