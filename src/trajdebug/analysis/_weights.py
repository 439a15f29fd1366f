"""The ranking's hand weights and fixed tables, and the steps two of them single out.

`DEFAULT_WEIGHTS` are the weights `Ranking` (`_ranking.py`) combines the evidence with; `KIND_PRIOR`,
`PROGRAMMING_ERRORS` and `FAILURE_SUSPICION` are its fixed tables.  The ``focus`` weight boosts the steps
that produce the kind of output that failed (`_families`, `_matches`), the ``prune`` weight exonerates
steps whose declared checks all passed (`_verified_good`).  `FrozenMap` holds a step's features.
"""

from __future__ import annotations

import json
from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from dataclasses import replace
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis._content import has_word
from trajdebug.analysis._detect import Failure
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis._sources import _field_words, _terms
from trajdebug.analysis._sql import sql_of
from trajdebug.analysis.lexicon import Lexicon
from trajdebug.analysis.lineage import Lineage, message_atoms
from trajdebug.core.model import Run, Step


DEFAULT_WEIGHTS: dict[str, float] = {
    "data": 1.0,  # blame carried per edge kind (thin slicing as weights)
    "state": 0.8,
    "control": 0.5,
    "context": 0.35,
    "env": 0.25,
    "child": 0.9,  # implicit child -> enclosing-step edges
    "hop": 0.95,  # decay per edge, whatever its kind
    "absorb": 0.8,  # share of its blame a faulty-looking step keeps (explaining away)
    "proximity": 0.3,  # exponent of blame in the score: 1 favours steps near the failure, 0 ignores distance
    "focus": 1.3,  # boost of steps producing what failed (JSON for a JSON failure, SQL for SQL)
    "prune": 0.5,  # how much verified-good consumers exonerate a step (Zhang, Gupta & Gupta, PLDI 2006)
    "min_confidence": 0.5,  # edges below this do not keep a step from being a root
    "detached": 0.2,  # reach of a step before the failure that no edge connects to it
    "base": 0.4,  # share of the score a step with no evidence keeps (so blame orders steps with none)
    "symptom": 0.3,  # share of its own evidence a step keeps when it raised on what it was given
    "symptom_rank": 0.6,  # and of its reach: the failure shows there, its cause lies upstream
    "thin": 0.3,  # boost of a step on the failure's thin slice (the origin of a value the failure involves)
    "origin": 1.0,  # thin-slice strength: introduced a value the failure's message names
    "yardstick": 0.5,  # share of "origin" for the side of a two-value comparison whose origin came first
    "subject_id": 0.6,  # share of "origin" for an id a failure names beside numbers or dates (what it checked)
    "origin_arg": 0.4,  # thin-slice strength: introduced a value the failing step was given
    "elsewhere": 0.6,  # share of its score a step keeps when it was about another listed item than the failure
    "origin_spoken": 0.25,  # thin-slice strength: introduced a value of a field the failure's message speaks of
    "origin_named_arg": 0.7,  # and the failure's message speaks of that value's field
    "origin_chosen": 1.0,  # thin-slice strength: chose (a router) a branch whose name the failure's message speaks of
    "dropped": 0.45,  # was given a value the failure names and did not pass it on
    "rejected": 0.5,  # share of that finding kept for a number named beside the limit it broke (rejected, not expected)
    "dropped_reached": 0.6,  # share of that when the value still reached the failing step by another path
    "llm_dropped": 0.5,  # share of that for a model step
    "unrelated_claim": 0.25,  # share of a model's made-up-value finding when no such value reached the failure
    "expected": 0.5,  # produced, in passing runs, a value the failure expects and no step here produced
    "contradicted": 0.5,  # introduced a number for a quantity the failure states another value of
    "unfilled": 0.4,  # a tool answered the handle of what it made or found empty (an error swallowed into a default)
    "emptied": 0.5,  # first returned empty a field the failure says is empty (an error swallowed into a default)
    "short": 0.45,  # answered the collection the failure counts, with fewer items than a number beside the count
    "whatif": 0.6,  # one numeric slip in its number turns the run's number into the one the failure expects
    "disagrees": 0.45,  # gave a value the failing check's own source contradicts (same field, same entity)
    "earliest": 1.15,  # boost of the earliest step on the slice that breaks a reference invariant
    "sibling": 0.6,  # weight of a deviation from the step's other calls in the same run (vs passing runs)
    "inherited": 0.5,  # share of a deviation a step keeps when its input already deviated upstream
    "shared": 0.3,  # share of a lineage finding a step keeps when every call of it (3+), or all but one, has it
}
"""Ranking weights; override any of them with ``localize(weights=...)``."""

KIND_PRIOR: dict[str, float] = {"agent": 0.5, "input": 0.4}
"""Prior of a step by kind (1 when not listed): an agent span is made of its children, which are ranked themselves;
the run's input, when it has one input step, is taken as given (the backward search ends there: what the agent did
with it is what went wrong; a conversation's several user turns keep the prior of any step)."""


PROGRAMMING_ERRORS = frozenset(
    {
        "TypeError",
        "NameError",
        "AttributeError",
        "UnboundLocalError",
        "ImportError",
        "ModuleNotFoundError",
        "NotImplementedError",
        "SyntaxError",
        "ZeroDivisionError",
        "RecursionError",
        "IndexError",
    }
)
"""Exception types that say the raising code itself is wrong, rather than what it was given."""

FAILURE_SUSPICION: dict[str, float] = {
    "json": 0.45,
    "sql": 0.45,
    "http": 0.4,
    "empty": 0.4,
    "error-text": 0.45,
}
"""Suspicion a failure adds to the step where it shows, by detector (detectors that judge the step's own output)."""



class FrozenMap(Mapping[str, float]):
    """A read-only mapping of names to numbers (picklable and hashable, unlike a mapping proxy)."""

    __slots__ = ("_d",)

    def __init__(self, items: Mapping[str, float] | Iterable[tuple[str, float]] = ()) -> None:
        self._d: dict[str, float] = dict(items)

    def __getitem__(self, key: str) -> float:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    # The dict's own views and look-ups: `Mapping`'s generic ones go through `__getitem__` key by key, and the
    # learned ranker reads every ranked step's features (10,000 maps on a long run).
    def __contains__(self, key: object) -> bool:
        return key in self._d

    def get(self, key: str, default: Any = None) -> Any:
        return self._d.get(key, default)

    def keys(self) -> KeysView[str]:
        return self._d.keys()

    def values(self) -> ValuesView[float]:
        return self._d.values()

    def items(self) -> ItemsView[str, float]:
        return self._d.items()

    def __hash__(self) -> int:
        return hash(frozenset(self._d.items()))

    def __repr__(self) -> str:
        return f"FrozenMap({self._d!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMap, (self._d,))


def _families(failures: Iterable[Failure]) -> set[str]:
    """What kind of output failed: JSON, SQL, an HTTP call, an empty result (focus the search on its producers)."""
    fam: set[str] = set()
    for f in failures:
        sig = f.signature.lower()
        if "json" in sig:
            fam.add("json")
        elif "sql" in sig or "operationalerror" in sig:
            fam.add("sql")
        elif "http" in sig:
            fam.add("http")
        elif sig == "empty":
            fam.add("empty")
    return fam


def _matches(step: Step, families: set[str]) -> bool:
    out = step.output
    if "json" in families and (
        step.attributes.get("expect") == "json" or (isinstance(out, str) and content.looks_like_json(out))
    ):
        return True
    if "sql" in families and sql_of(out) is not None:
        return True
    if "http" in families and step.kind in ("tool", "llm"):
        return True
    return "empty" in families and step.kind in ("retrieval", "tool", "parse")


def _verified_good(run: Run) -> set[str]:
    """Steps whose declared checks all passed (their outputs are verified good)."""
    good: set[str] = set()
    for s in run.steps:
        checks = s.attributes.get("checks")
        if (
            isinstance(checks, list)
            and checks
            and all(isinstance(c, Mapping) and c.get("passed") is True for c in checks)
        ):
            good.add(s.step_id)
    return good


LOCAL_SIGNALS = frozenset(
    {"lineage:conflict", "lineage:altered", "lineage:dropped-column", "lineage:admitted", "lineage:crossed", "lineage:wrong-record"}
)
"""The findings about a step's own transformation of its input (`lineage.anomalies`), which say the same of every
call that transforms alike; a finding about the failure ("was given 0.5, which the failure expects") says the same
of every call because the failure is one, and is no rule of the step."""

SHARED_CALLS = 3
"""The fewest distinct inputs of one step whose identical finding is read as the step's rule (`shared_findings`)."""


def shared_findings(
    extra: Mapping[str, list[Evidence]],
    run: Run,
    share: float,
    spoken: Callable[[str], bool] = lambda sid: False,
) -> dict[str, list[Evidence]]:
    """The findings with each lineage finding that the calls of its step share on every input it was given (or
    on all but one), word for word, kept at ``share``.

    A lookup that answers ``substrate='paper'`` for the ``'laid paper'`` it was given for each of four books
    maps one value to another by a rule of its own (a normalized category): the same finding on every input is
    how the step works, not where this run went wrong, and four such calls must not outrank the one step that
    erred once.  Only findings whose sentence is the same in those calls (the same values given and answered): a
    converter wrong by a factor states other numbers in each call and keeps its weight; and only findings about
    the step's own transformation (`LOCAL_SIGNALS`; a tool failing in every call is still a failure).

    Counted by distinct input, not by call: an agent asking the same thing twice gets the same slip twice,
    which shows no rule (the repeats keep ``share`` of it all the same, `_repeats`: one slip, counted once).  All inputs but one count only when the odd one was answered otherwise (a finding of
    the same signal in other words: the call that answered ``'vellum'`` stands out); an odd input with no such
    finding leaves the rule unshown.  And never a step whose change the failure itself speaks of (``spoken``,
    `about_the_failure`): a rule that maps ``'full leather'`` to ``'leather'`` may be the very bug a failure
    refusing ``'leather'`` shows.
    """
    calls: dict[tuple[str, str], list[Step]] = {}
    for st in run.steps:
        calls.setdefault((st.name, st.kind), []).append(st)
    damped: set[tuple[str, str, str]] = set()
    for group in calls.values():
        if len(group) < SHARED_CALLS or not any(_local(extra.get(st.step_id, ())) for st in group):
            continue  # no call of it has a finding to share: its inputs need not be written out
        inputs = {st.step_id: _input_key(st.input) for st in group}
        distinct = set(inputs.values())
        if len(distinct) < SHARED_CALLS:
            continue
        counts: dict[tuple[str, str], list[str]] = {}
        for sid in inputs:
            for key in {(e.diagnoser, e.reason) for e in extra.get(sid, ()) if e.diagnoser in LOCAL_SIGNALS and not e.sound}:
                counts.setdefault(key, []).append(sid)
        for (d, r), holders in counts.items():
            held = {inputs[sid] for sid in holders}
            odd = [sid for sid in inputs if inputs[sid] not in held]
            if len(held) < len(distinct) - 1 or any(spoken(sid) for sid in holders):
                continue
            # The odd input, if any, was answered otherwise: the same signal, in other words.
            if odd and not any(e.diagnoser == d and e.reason != r and not e.sound for sid in odd for e in extra.get(sid, ())):
                continue
            damped |= {(sid, d, r) for sid in holders}
    damped |= _repeats(calls.values(), extra)
    if not damped:
        return dict(extra)
    return {
        sid: [replace(e, suspicion=e.suspicion * share) if (sid, e.diagnoser, e.reason) in damped else e for e in evs]
        for sid, evs in extra.items()
    }


def _repeats(groups: Iterable[list[Step]], extra: Mapping[str, list[Evidence]]) -> set[tuple[str, str, str]]:
    """The findings of a call that an earlier call of its step, given the same input, had word for word: one
    slip asked twice (a retry, a lookup repeated) is one slip, which the first call carries whole; the repeats
    say nothing new, and counted whole they would crowd the ranking with copies of one suspect."""
    out: set[tuple[str, str, str]] = set()
    for group in groups:
        seen: set[tuple[str, str, str]] = set()
        for st in group if len(group) > 1 else ():
            local = _local(extra.get(st.step_id, ()))
            if not local:
                continue  # its input is written out only when it has a finding to compare
            k = _input_key(st.input)
            for e in local:
                if (k, e.diagnoser, e.reason) in seen:
                    out.add((st.step_id, e.diagnoser, e.reason))
                seen.add((k, e.diagnoser, e.reason))
    return out


def _local(evs: Iterable[Evidence]) -> list[Evidence]:
    """The findings about a step's own transformation (`LOCAL_SIGNALS`) that are not proven (``sound``)."""
    return [e for e in evs if e.diagnoser in LOCAL_SIGNALS and not e.sound]


def _input_key(value: Any) -> str:
    """A step's input as one comparable text (two calls given the same values have the same key)."""
    return json.dumps(value, sort_keys=True, default=str)


def about_the_failure(lin: Lineage, failures: Iterable[Failure], lexicon: Lexicon) -> Callable[[str], bool]:
    """Whether a failure speaks of a step's own change of its input: it names a value the step introduced
    (``'leather'`` where the step was given ``'full leather'``), or speaks of a field the step was given and
    answered with another value ("the material does not match the commission")."""
    messages = [f.message for f in failures]
    named = {a.key for m in messages for a in message_atoms(m) if a.kind != "text" or len(a.raw) > 2}
    folded = [m.casefold() for m in messages]
    said = set().union(*(_terms(m, lexicon) for m in messages))

    def spoken(sid: str) -> bool:
        view = lin.view(sid)
        given = {a.field for a in view.inputs if a.field}
        # The messages without the texts it was given: 'paper' in "the map is laid paper" names the given
        # 'laid paper', not the 'paper' the step answered for it.
        texts = sorted({a.raw.casefold() for a in view.inputs if a.kind == "text" and len(a.raw) > 2}, key=len, reverse=True)
        rest = [_without(m, texts) for m in folded]
        # Its output's values not given as they are ('leather' is inside the given 'full leather', and changed).
        for a in (a for a in view.outputs if a.key not in view.in_keys):
            if a.key in named or (a.kind == "text" and _word(a.raw, lexicon) and any(has_word(m, a.raw.casefold()) for m in rest)):
                return True
            if a.field in given and all(lexicon.singular(w) in said for w in _field_words(a.field, lexicon)):
                return True
        return False

    return spoken


def _without(text: str, parts: list[str]) -> str:
    """``text`` with each of ``parts`` (longest first) blanked out."""
    for p in parts:
        text = text.replace(p, " ")
    return text


def _word(raw: str, lexicon: Lexicon) -> bool:
    """Whether a text value is telling enough to be read as named where a message writes it (no function word)."""
    v = raw.strip().casefold()
    return len(v) > 2 and any(c.isalpha() for c in v) and v not in lexicon.stopwords and v not in lexicon.short_stopwords


__all__ = [
    "DEFAULT_WEIGHTS",
    "FAILURE_SUSPICION",
    "KIND_PRIOR",
    "PROGRAMMING_ERRORS",
    "LOCAL_SIGNALS",
    "SHARED_CALLS",
    "FrozenMap",
    "about_the_failure",
    "shared_findings",
]
