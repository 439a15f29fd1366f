"""Elsewhere: steps and findings about another part of the run than the one where the failure began.

An agent that walks a list (accounts of a team, orders of a customer) and fails on one item did, at a step
asked about another listed item, its part for that item: the step is marked ``elsewhere`` (`other_entities`,
an evidence source of the ranking, with the items the failure's message names: `_named_subjects`).  And a
model's made-up values that none of the failure's steps was given, nor its message names, are an error of the
model's, but not where this failure began: the finding keeps a share of its weight (`off_the_failure`).  The
other sources, and the slice they all read, are in `trajdebug.analysis._sources`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from trajdebug.analysis._detect import Failure
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis._sources import NAMING_FIELDS, Found, Mark, Slice
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.analysis.lineage import (
    Lineage,
    StepView,
    trivial,
)
from trajdebug.core.model import CONTAINER_KINDS
from trajdebug.core.values import Atom, atoms


def other_entities(sl: Slice, ids: Sequence[str]) -> list[Found]:
    """Steps about another item of a list the run went through than the one the failure is about.

    An agent that walks a list (accounts of a team, orders of a customer) and fails on
    one item: a step asked about another listed item (``account_id`` acct-2 where the
    failing step was given acct-1, both listed by one earlier step), whose own output
    never reached the failing step, did its part for another item.  An empty answer
    there is no starvation of the failure.  When the failure's message names its item
    (`_named_subjects`), a step about another one is elsewhere even when its output
    reached the failing step (one record of the batch it checked).
    """
    out: list[Found] = []
    subject: dict[str, str] = {}
    said: set[str] = set()  # the fields whose item the failure's message names
    for f in sl.failures:
        if sl.g.steps[f.step_id].kind in CONTAINER_KINDS:
            continue
        byfield: dict[str, set[str]] = {}
        for a in sl.lin.view(f.step_id).inputs:
            if a.field and a.kind in ("id", "text") and a.field.lower() not in NAMING_FIELDS and len(a.raw) <= 60:
                byfield.setdefault(a.field, set()).add(a.key)
        mine = {fld: next(iter(keys)) for fld, keys in byfield.items() if len(keys) == 1}
        named = _named_subjects(sl, f.message or "", mine, sl.g.steps[f.step_id].input)
        said |= {fld for fld, key in named.items() if key != mine[fld]}
        subject.update(named)
    if not subject:
        return out
    failing = [sl.lin.view(f.step_id) for f in sl.failures]
    # Per field, once: the values written beside the failing one by the (first 64) steps
    # whose output holds it; a step's other item must be one of them.
    beside = {
        fld: {
            k for p in sl.lin.holders(want)[:64] for k in sl.lin.view(sl.lin.steps[p].step_id).out_keys
        }
        for fld, want in subject.items()
    }
    for sid in ids:
        if sid in sl.fail_ids:
            continue
        view = sl.lin.view(sid)
        for fld, want in subject.items():
            mine = {a.key: a.raw for a in (*view.inputs, *view.outputs) if a.field == fld}
            if not mine or want in mine:
                continue
            if not any(k in beside[fld] for k in mine):
                continue  # not an item listed beside the failing one (a typo, an invented id)
            if fld not in said and any(v.given(a) for a in sl.lin.introduced(sid) for v in failing):
                # Its own output reached the failure: unless the failure names its item, and
                # another (a check that goes through every record says which one it fails on).
                continue
            reason = f"about {fld}={next(iter(mine.values()))}, another listed item than the failure's"
            out.append(Mark(sid, "elsewhere", 1.0, reason))
            break
    return out


def _named_subjects(sl: Slice, message: str, mine: dict[str, str], given: object) -> dict[str, str]:
    """The failing step's item per field, the failure's own word first: a check given the one record it
    passed (``hive=HV-N3``) that fails on another it names ("hive HV-N2 ...") is about the one it names,
    when some step wrote that one under the same field.

    Not when the message speaks of the given record too, by its id or by a value written beside it
    ("settled amount 75.0 is the balance of ACC-202"): the other id is then what it is compared with.
    """
    stated = [a for a in atoms(message) if not trivial(a)]
    said = [a.key for a in stated if a.kind == "id"]
    out = dict(mine)
    for fld, key in mine.items():
        if key in said:
            continue  # it names the item it was given too ("MTR-5521 ... has MTR-5524"): that one is its subject
        if any(a.kind != "id" and a.key in _beside(given, fld, key) for a in stated):
            continue  # it states a value of the given record: it failed on that record
        other = {
            k
            for k in said
            if k != key
            and any(b.key == k and b.field == fld for p in sl.lin.holders(k)[:64] for b in sl.lin.view(sl.lin.steps[p].step_id).outputs)
        }
        if len(other) == 1:
            out[fld] = other.pop()
    return out


def _beside(value: object, fld: str, key: str, depth: int = 0) -> set[str]:
    """The keys of the values written in the records of ``value`` (a step's input) whose ``fld`` is ``key``
    (the other fields of the one record the check was given), at most 6 mappings deep as `content.leaves`."""
    out: set[str] = set()
    if depth > 6:
        return out
    if isinstance(value, Mapping):
        mine = atoms({k: v for k, v in value.items() if not isinstance(v, (Mapping, list, tuple))})
        if any(a.field == fld and a.key == key for a in mine):
            out |= {a.key for a in mine if a.field != fld and not trivial(a)}
        inner: Iterable[object] = value.values()
    elif isinstance(value, (list, tuple)):
        inner = value
    else:
        return out
    for v in inner:
        out |= _beside(v, fld, key, depth + 1)
    return out


_WORD = re.compile(r"\w[\w'-]*")


def _a_name(value: str, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a value reads as a name in a sentence: a token bearing digits (``QX-7``), or two words or more,
    each capitalised, not all of them common words (``Dana Whitfield``, ``Quantum Ops``; not ``Standard``, a
    word any failure's prose may use)."""
    words = _WORD.findall(value)
    if any(ch.isdigit() for ch in value) and len(value.strip()) >= 2:
        return True
    return (
        len(words) >= 2
        and all(w[0].isupper() for w in words)
        and not all(w.casefold() in lexicon.stopwords or w.casefold() in lexicon.short_stopwords for w in words)
    )


def _in_text(value: str, message: str) -> bool:
    """Whether a value that reads as a name (`_a_name`) occurs in a message as whole words: ``Dana Whitfield``
    in "is assigned to Dana Whitfield, who ...", not ``ana`` in "Dana", nor ``Standard`` in "standard service
    only".  A name of words is matched as written (capitalised in the sentence too); a token with digits,
    case-folded."""
    v = " ".join(value.split())
    if not _a_name(v):
        return False
    text = " ".join(message.split())
    if any(ch.isdigit() for ch in v):
        v, text = v.casefold(), text.casefold()
    return re.search(rf"(?<!\w){re.escape(v)}(?!\w)", text) is not None


@dataclass
class Routine:
    """The made-up values of a model step's calls (`_routines.Routines.of`), each call's read into atoms once:
    per call, the atoms of the values it states found in none of its inputs (calls that state none are left
    out).  Which of them a step was given is worked out once per step (`others_given`), so checking every
    call of a thousand-call loop stays linear.  ``upstream`` (a step id -> the steps it reaches back to by
    recorded edges, not inferred ones) tells a value another call handed on from one equal by chance: a
    made-up 20 and a room's capacity of 20 the check was given from the room."""

    calls: Mapping[str, tuple[Atom, ...]]
    upstream: Callable[[str], Iterable[str]] | None = None
    _given: dict[str, dict[str, frozenset[str]]] = field(default_factory=dict)

    @classmethod
    def of(cls, values: Mapping[str, Sequence[str]]) -> Routine:
        """From each call's made-up values as the findings write them (``'kelp meal'``, ``40``)."""
        return cls({c: tuple(a for raw in vals for a in atoms(raw.strip("'\""))) for c, vals in values.items() if vals})

    def others_given(
        self, view_id: str, view: StepView, sid: str, keys: set[str], lin: Lineage | None = None
    ) -> bool:
        """Whether the step ``view_id`` was given a value another call than ``sid`` stated, one not among
        ``keys`` (the values of the finding at hand).  With ``upstream``, a call's value counts as given only
        when it reached the step from that call: the call is upstream of it by recorded edges, or the value's
        lineage (`Lineage.origin`) names the call; an equal value from elsewhere is not that call's."""
        by_key = self._given.get(view_id)
        if by_key is None:
            acc: dict[str, set[str]] = {}
            up = None if self.upstream is None else set(self.upstream(view_id))
            at = lin.pos.get(view_id) if lin is not None else None
            for c, found in self.calls.items():
                for a in found:
                    if view.given(a) and (
                        up is None
                        or c in up
                        or c == sid
                        or (lin is not None and at is not None and lin.origin(a, at).step_id == c)
                    ):
                        acc.setdefault(a.key, set()).add(c)
            by_key = self._given[view_id] = {k: frozenset(v) for k, v in acc.items()}
        own = keys | {a.key for a in self.calls.get(sid, ())}
        excluded = sum(1 for k in own if k in by_key and (k in keys or by_key[k] == {sid}))
        return len(by_key) > excluded


def off_the_failure(
    e: Evidence,
    lin: Lineage,
    failures: Sequence[Failure],
    thin: Iterable[str],
    share: float,
    *,
    routine: Routine | None = None,
) -> Evidence:
    """A model's finding of made-up values (``llm-output``) at ``share`` of its weight when none of them
    reached the failure: the model erred, but not where this failure began (a tool call's own
    error, or a step that dropped an item, sits on the failure's path).

    A value reached it when the failure's message names it, when a failing step was given it,
    or when a step on the failure's thin slice was (a unit converter given a made-up weight,
    whose result the failure names).  A ``routine`` finding (the made-up values of the step's calls: at least
    two others, and at least half of them, state values found in none of their inputs too: an appraiser's
    estimates, a planner's quantities) is the step's job, not a slip: it stays whole only when the failure's
    message names one of its values (as a value, or, for a value that reads as a name, as words of its
    sentence: `_in_text`), when a step on the thin slice whose answer the message names was given one, or when
    a failing or thin-slice step was given one and none of the other calls' values (a per-item check; a
    checker given the whole record was given those values whatever it failed on).
    """
    if e.diagnoser != "llm-output" or e.sound or not e.values:
        return e
    messages = [f.message or "" for f in failures]
    named = {a.key for m in messages for a in atoms(m)}
    mine = [a for raw in e.values for a in atoms(raw.strip("'\""))]
    thin = list(thin)
    ids = [f.step_id for f in failures] + thin
    if routine is not None:
        if any(_in_text(raw.strip("'\""), m) for raw in e.values for m in messages):
            return e
        keys = {a.key for a in mine}
        answered = [t for t in thin if any(a.key in named for a in lin.view(t).outputs)]
        ids = [i for i in ids if not routine.others_given(i, lin.view(i), e.step_id, keys, lin)] + answered
    views = [lin.view(i) for i in ids]
    if any(a.key in named or any(v.given(a) for v in views) for a in mine):
        return e
    return replace(e, suspicion=e.suspicion * share)


__all__ = [
    "other_entities",
    "off_the_failure",
]
