"""Same-input answers: a request answered otherwise than in every passing run, or with another request's answer.

The strongest reference signal (a step is a function of its input: one answer to a request in every passing
run that made it, and another now, is stale data or a changed environment), with what keeps it honest: ids a
step mints on every call, date stamps new in every run, parts several requests share, a request about the
same subject.  Split from `_invariants` (which calls `answer_checks` for every profiled step).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.lexicon import ENGLISH
from trajdebug.analysis.lineage import semantic
from trajdebug.analysis.reference._call_keys import _canon, answer_key, asked_of, keyed_parts
from trajdebug.analysis.reference._fields import (
    _NUMBER,
    _SHAPE_ALPHA,
    _SHAPE_DIGIT,
    _changes_among,
    _fields_of,
    _leaves,
    _minted_only,
    _request_values,
    _units,
    volatile_difference,
)
from trajdebug.analysis.reference._profile import Profile, StepKey, _StepStats, step_key
from trajdebug.analysis.reference._select import stated
from trajdebug.core.escape import cut_where_differs
from trajdebug.core.model import CONTAINER_KINDS, OBSERVATION_KINDS, Step
from trajdebug.core.values import atoms as value_atoms


def answer_checks(step: Step, st: _StepStats, steps: Mapping[str, Step] | None, origin: bool = False) -> Iterator[Evidence]:
    """A request answered otherwise than in every passing run; an answer passing runs got for another request.

    ``origin``: the step encloses others, one of which answered its own request otherwise than in every
    passing run, none matching the same step's inside in a passing run (`_enclosing`): it is the origin."""
    asked_key = answer_key(asked_of(step, steps))
    answers = st.answers.get(asked_key)
    # One answer to this request in every passing run that made it, and another one now: a
    # function of its input that changed (stale data, a changed environment), the strongest
    # sign a step's output is off.  Passing runs that disagree among themselves say nothing.
    now = answer_key(semantic(step, step.output))
    if (
        answers is not None
        and len(answers) == 1
        and now not in answers
        and not _minted_only(st, now, answers)
        and not _volatile_only(step, steps, now, answers)
        and not origin
        # An entry step given nothing answers with what its run was asked: another input (rev51u M1).
        and not _reads_unrecorded(step, steps) and (step.kind != "input" or stated(step.input))
    ):
        weight = _weight(st, now, answers, st.asks.get(asked_key, 1))
        then, run = next(iter(answers.items()))
        yield Evidence(
            step.step_id,
            (0.65 if step.kind != "llm" else 0.4) * weight,
            f"given the same input as in passing run {run[:12]}, it answered differently: {contrast(now, then)}"
            + (
                f" (asked once in passing runs, where its answers to other requests changed in the same part:"
                f" weighed x{weight:.2f})"
                if weight < 1
                else ""
            ),
            "reference:same-input",
        )
    if step.kind in OBSERVATION_KINDS and st.parts:
        # The answer (or a sizeable part of it) a passing run got for another request: a
        # cache or a lookup that served the wrong entry.
        asked = semantic(step, step.input)
        request = _canon(asked)
        for key, part in keyed_parts(semantic(step, step.output)):
            got = st.parts.get(part)
            # Only an answer specific to one request in the passing runs: a part several
            # requests got alike (a static table, a policy) says nothing.
            if got is not None and len(got) == 1 and request not in got:
                (other, run), = got.items()
                if _same_subject(asked, other, key, part) or _shared_cause(asked, other, part):
                    continue
                weight = _answers_this(asked, other, key, part, st)
                if not weight:
                    continue
                yield Evidence(
                    step.step_id,
                    0.5 * weight,
                    f"answered with what passing run {run[:12]} got for another request ({other[:80]})"
                    + (f" (other subjects' answers held where requests differed so: weighed x{weight:.2f})" if weight < 1 else ""),
                    "reference:old-answer",
                )
                break


def contrast(now: str, then: str, width: int = 72) -> str:
    """``NOW where the passing run answered THEN``, each in at most ``width`` characters, cut around where the two
    first differ: the value a developer needs to see (nu30 finding 5: "it answered differently" named no value)."""
    return f"{cut_where_differs(now, then, width)} where the passing run answered {cut_where_differs(then, now, width)}"


def asked_before(step: Step, profile: Profile | None, steps: Mapping[str, Step] | None) -> bool:
    """Whether a passing run made this step's request (`asked_of`, keyed as `answer_checks` keys it): "given the
    same input" is true of it then only.  A sub-agent given the same task whose model call was handed another
    document (nu25 F2) got the same input; its model call did not."""
    st = profile.steps.get(step_key(step, steps)) if profile is not None else None
    return st is not None and answer_key(asked_of(step, steps)) in st.answers


def unkeyed(steps: Iterable[Step], profile: Profile, by_id: Mapping[str, Step]) -> frozenset[StepKey]:
    """The steps (by key) each of whose two or more calls in the failing run answered with what a passing run
    got for another request: a lookup whose answers follow something else than the request (the item's
    place in a batch, the day), alike in every run, not a cache that served one request a wrong entry.  A
    stale entry is one call's; an answer every call shares with another request is how the tool answers."""
    calls: dict[StepKey, list[Step]] = {}
    for s in steps:
        if s.kind in OBSERVATION_KINDS and s.status == "ok":
            calls.setdefault(step_key(s, by_id), []).append(s)
    out: set[StepKey] = set()
    for key, group in calls.items():
        st = profile.steps.get(key)
        if len(group) < 2 or st is None or not st.parts:
            continue
        if all(any(e.diagnoser == "reference:old-answer" for e in answer_checks(s, st, by_id)) for s in group):
            out.add(key)
    return frozenset(out)


def _volatile_only(step: Step, steps: Mapping[str, Step] | None, now: str, answers: Mapping[str, str]) -> bool:
    """Whether the answer differs from the passing run's only in values volatile by form (a stamp, a minted id, a
    duration: `volatile_difference`) that nothing after it read: a weather tool's new ``observed_at`` beside
    the same temperature is the same answer (review rev53c, MEDIUM-3).  A new value a later step was handed,
    or a failure's message names, mattered to the run: that answer did change."""
    new = volatile_difference(now, next(iter(answers)))
    if new is None:
        return False
    texts = {v[1:-1] if v[:1] == '"' == v[-1:] else v for v in new}
    after = step.end_ns if step.end_ns is not None else step.start_ns
    if step.start_ns >= after:  # (a step of no duration: its own input is no later reader, skip it by id)
        for s in (steps or {}).values():
            read = _canon(s.input) if s.step_id != step.step_id and s.start_ns >= after else ""
            said = s.error.message if s.error is not None else ""
            if any(t in read or t in said for t in texts):
                return False
        return True
    joined, start, said = _read_texts(steps or {}, after)
    return not any(joined.find(t, start) >= 0 or t in said for t in texts)


_READS: tuple[Any, Any] = (None, None)
"""The last run's steps and their texts (`_read_texts`), one tuple swapped whole (two analyses in two threads each
read a consistent pair): every step of a run with stamps in its answers asks, and writing every input out again
for each of them was quadratic in the run's length."""


def _read_texts(steps: Mapping[str, Step], after: int) -> tuple[str, int, str]:
    """The run's canonical inputs joined in start order (a NUL between two, which no stamp or id holds, so no
    match spans two inputs), the offset where those of the steps that started at or after ``after`` begin, and
    every step's error message joined."""
    global _READS
    cached = _READS
    if cached[0] is not steps:
        order = sorted(steps.values(), key=lambda s: s.start_ns)
        texts = [_canon(s.input) for s in order]
        offsets = [0]
        for text in texts:
            offsets.append(offsets[-1] + len(text) + 1)
        said = "\0".join(s.error.message for s in order if s.error is not None)
        cached = (steps, ([s.start_ns for s in order], offsets, "\0".join(texts), said))
        _READS = cached
    starts, offsets, joined, said = cached[1]
    return joined, offsets[bisect.bisect_left(starts, after)], said


def _reads_unrecorded(step: Step, steps: Mapping[str, Step] | None) -> bool:
    """Whether a step ran steps inside it that were handed values its own recorded input does not hold (a
    span recorded with a site name whose model call is handed the week's results): its recorded input is
    not all it read, so the same recorded input in a passing run is no same request."""
    if not steps:
        return False
    inner = _children(steps).get(step.step_id)
    if not inner:
        return False
    mine = {a.key for a in value_atoms(step.input)}
    said: set[str] | None = None
    for s in inner:
        extra = {a.key for a in value_atoms(s.input)} - mine
        if not extra:
            continue
        said = {a.key for a in value_atoms(step.output)} if said is None else said
        # An inner step handed the step's whole answer (a LangGraph routing function nested under its node, run
        # on the state the node returned; nu25 F3) read what the step made, nothing the step read.
        if not (extra <= said and said <= extra | mine):
            return True
    return False


_CHILDREN: list[tuple[Mapping[str, Step], int, dict[str, list[Step]]]] = []
"""The last run's children map, kept for its next call: `_reads_unrecorded` is asked once per step."""


def _children(steps: Mapping[str, Step]) -> dict[str, list[Step]]:
    """Each step's non-container children, built once per steps map (a scan of every step per call is
    quadratic in a run's steps)."""
    last = _CHILDREN[-1] if _CHILDREN else None
    if last is not None and last[0] is steps and last[1] == len(steps):
        return last[2]
    out: dict[str, list[Step]] = {}
    for s in steps.values():
        if s.parent_id is not None and s.kind not in CONTAINER_KINDS:
            out.setdefault(s.parent_id, []).append(s)
    # One slot, replaced whole (threads see an old or a new entry, never half of one).
    _CHILDREN[:] = [(steps, len(steps), out)]
    return out


def _weight(st: _StepStats, now: str, answers: Mapping[str, str], asks: int) -> float:
    """How much the answer's change tells, 0.5 to 1.  A request passing runs repeated (``asks``: the times it
    was made) and always got one answer to has its own rate of change, nought, and that decides: the finding is
    whole, whatever other requests' answers did (a sale on the toaster says nothing of the stale kettle price;
    review rev49r, H1).  A request made once has no rate of its own: the step's others stand in, gently, one
    less the rate (`_variation_of`), never below half, of the unit (`_units`) that changed least among those its answer
    changed in (units that change together, a median beside its rates, are one change, so their rates are not
    multiplied): a live reading that changed on every repeat halves it, never less.  Masking the units that
    varied hid true roots wherever they were read wrong (a sentence's tokens shifted by a longer phrase, review
    rev48r3).  An answer that does not parse (cut for its size), or a change no unit shows, tells fully."""
    if asks > 1:
        return 1.0
    changes, repeats = _variation_of(st)
    if not changes:
        return 1.0
    try:
        differ = _changes_among([_units(json.loads(now)), _units(json.loads(next(iter(answers))))])
    except (ValueError, RecursionError):
        return 1.0
    if not differ:
        return 1.0
    return max(0.5, 1.0 - min(changes.get(unit, 0) for unit in differ) / (repeats + 1))


_VARIED: dict[int, tuple[_StepStats, int, tuple[dict[str, int], int]]] = {}
"""Per step profile (by identity, with the count of its requests when read): its units' changes, its repeats."""


def _variation_of(st: _StepStats) -> tuple[dict[str, int], int]:
    """How often a step's passing answers changed when a request was repeated: per unit (`_units`), the changes
    summed over its requests (`_changes_among`), and the repeats (a request made n times, n - 1), read once per
    profile (asked of every step that answered its request otherwise: re-reading every answer each time was
    quadratic).  A one-off change among many repeats (one request's stock that fell) is weighed by its rate,
    not as a unit that always varies (the pooled masking did, for every request)."""
    hit = _VARIED.get(id(st))
    if hit is not None and hit[0] is st and hit[1] == len(st.answers):
        return hit[2]
    changes: dict[str, int] = {}
    repeats = 0
    for asked, got in st.answers.items():
        repeats += max(st.asks.get(asked, 1), len(got)) - 1
        if len(got) < 2:
            continue
        try:
            seen = [_units(json.loads(a)) for a in got]
        except (ValueError, RecursionError):
            continue
        for unit, n in _changes_among(seen).items():
            changes[unit] = changes.get(unit, 0) + n
    out = (changes, repeats)
    if len(_VARIED) > 512:
        _VARIED.clear()
    _VARIED[id(st)] = (st, len(st.answers), out)
    return out


def _same_subject(asked: Any, other: str, key: str | None, part: str) -> bool:
    """Whether another request (canonical JSON) asked for everything an answer's part is about: the values of
    this request the part, or the key it sits under, names (``SKU-1001``'s stock record, served to two
    requests that both list ``SKU-1001``).  A lookup answers one thing alike whatever else it was asked."""
    values = _request_values(asked)
    about = [v for v in values if v == key or _canon(v) in part]
    if not about or not all(_canon(v) in other for v in about):
        return False
    # A whole answer is about the whole request: the other request must have asked for all of it too (a
    # lookup for C-1 that serves the record another request got for C-2 is a stale entry, even when this
    # request also carried C-2, say as a cache key).
    return key is not None or all(_canon(v) in other for v in values)


def _shared_cause(asked: Any, other: str, part: str) -> bool:
    """Whether the two requests share a value (``region=emea`` for two stores), the other also named
    one of its own (its store), and the part names no value of either: an answer about nothing either asked
    for can follow from what they share (one price list per region), no entry served for the other request (one that names a value is `_same_subject`'s)."""
    try:
        theirs = set(_request_values(json.loads(other)))
    except (ValueError, RecursionError):
        return False
    mine = set(_request_values(asked))
    own = theirs - mine
    # The other request named something of its own (another store) that the part does not name: the
    # part is not about it.  Requests that differ only in numbers leave that unsaid.
    return bool(mine & theirs) and bool(own) and not any(v.lower() in part.lower() for v in theirs | mine)


_LOOSE_ELSEWHERE = 0.5  # an old answer's weight when only other subjects held across the fields differing


def _answers_this(asked: Any, other: str, key: str | None, part: str, st: _StepStats) -> float:
    """How much an answer another request also got still says it is that request's, 0 to 1: nought when it
    answers this one (`_names_this`).  A field passing requests differed in alone while they got one value
    under the answer's same key is one the part does not follow when this request's own subject showed it
    (SKU-C asked on two dates, one price); shown by other subjects only (two SKUs whose prices held), this
    subject's answer may follow it all the same (SKU-C's price changed and a cache keyed by SKU served its old
    record): the finding is then weighed, never dropped (review rev49r, H2)."""
    try:
        theirs = json.loads(other)
    except (ValueError, RecursionError):
        return 1.0
    try:
        got = json.loads(part)
    except (ValueError, RecursionError):
        got = part
    mine, yours = _asked_units(asked), _asked_units(theirs)
    differ = {f for f in mine[0].keys() | yours[0].keys() if mine[0].get(f) != yours[0].get(f)}
    _, _, by_key, shown = _requests_of(st)
    # This request's own subject got one answer for two values of the field (one SKU's price on two dates):
    # for it, the field is one the part does not follow.
    own = {f for f in differ if any(_subject(mine[0], mine[1], f) in shown.get(k, {}).get(f, ()) for k in (None, key))}
    if _names_this(mine, yours, differ, own, got, part, key, st):
        return 0.0
    wide = own | by_key.get(None, frozenset()) | by_key.get(key, frozenset())
    if wide != own and _names_this(mine, yours, differ, wide, got, part, key, st):
        return _LOOSE_ELSEWHERE
    return 1.0


_Asked = tuple[dict[str, set[str]], set[str], set[str]]


def _names_this(
    mine: _Asked, yours: _Asked, differ: set[str], loose: set[str], got: Any, part: str, key: str | None, st: _StepStats
) -> bool:
    """Whether an answer another request also got says it answers this one: it names this request's own value
    in every field where the two requests differ (`_echoes`), and, for a request written as free text, its own
    words (`_names_words`).  Two requests about one subject get one answer (the quote for a lock type asked at
    two times of day, the listing that holds both stations a name search matched).  A field both requests
    share, echoed (the date a weather tool that ignores the city repeats), or one of two fields that differ,
    says nothing about which request it answers (review rev47r, H2): the answer may follow the field it does
    not name.  Fields in ``loose`` are ones the part does not follow (`_answers_this`); a notice every answer
    carries follows no field, and says so of its own key only (review rev47r2, H-a)."""
    mine_f, mine_w, mine_p = mine
    theirs_f, theirs_w, theirs_p = yours
    if differ and differ <= loose and mine_w == theirs_w:
        # The requests differ only in fields passing requests differed in alone and got this part alike.
        return True
    own = {f: mine_f[f] - theirs_f.get(f, set()) for f in differ - loose if f in mine_f}
    own = {f: vs for f, vs in own.items() if vs}
    words = {w for w in mine_w - theirs_w if _rare(w, st)}
    if not own and not words:
        # Nothing this request asked alone that an answer could name: nothing says it is this request's.
        return False
    if not _echoes(got, own, whole=key is None):
        return False
    return not words or _names_words(got, part, words, mine_p - theirs_p)


def _echoes(got: Any, own: Mapping[str, set[str]], whole: bool) -> bool:
    """Whether an answer (or a part of it) echoes each of this request's own values under the field's name at
    its top (its own fields, or its records' in a list): a value nested deeper names something else (a
    manager's ``employee_id`` in the record of the employee the request did not ask for; review rev48r, H2),
    and a small one (a number under 1000, a text of three characters) names a whole answer only (a kennel's
    id 3 is no echo of a request for dog 3; review rev47r2, H-b)."""
    top = _top_fields(got)
    for f, vs in own.items():
        seen = {v for v in vs & top.get(f, set()) if whole or not _small(v)}
        if not seen:
            return False
    return True


def _small(text: str) -> bool:
    """Whether a request's value is too small to name it wherever it sits: a number under 1000, a short text."""
    return len(text) <= 3 or (_NUMBER.fullmatch(text) is not None and abs(float(text)) < 1000)


def _top_fields(value: Any) -> dict[str, set[str]]:
    """`_fields_of` at the top of an answer: its own, or its records' in a list (a list field holds each)."""
    if isinstance(value, str) and value.strip()[:1] in "{[":
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return {}
    if isinstance(value, Mapping):
        records = [value]
    elif isinstance(value, list):
        records = [v for v in value[:200] if isinstance(v, Mapping)]
    else:
        return {}
    out: dict[str, set[str]] = {}
    for record in records:
        for k, v in record.items():
            items = v[:200] if isinstance(v, list) else [v]
            for item in items:
                if isinstance(item, (str, int, float)) and not isinstance(item, bool):
                    for field, text in _leaves(item, str(k)):
                        out.setdefault(field, set()).add(text.strip().casefold())
    return out


def _names_words(got: Any, part: str, words: set[str], phrases: set[str]) -> bool:
    """Whether an answer names a free-text request by its own rare ``words``: two of them, or one that is an
    id (letters and digits: ``AC-12``), or the request's own text whole as one of the answer's values (the
    quay a name search asked for, listed).  One shared word (a warranty a refund article mentions in passing)
    is no answer to a question about a warranty (review rev47r2, H-c)."""
    shared = words & set(_WORD.findall(part.casefold()))
    if len(shared) >= 2 or any(_SHAPE_DIGIT.search(w) and _SHAPE_ALPHA.search(w) for w in shared):
        return True
    if not phrases:
        return False
    values = {" ".join(v.split()) for vs in _fields_of(got).values() for v in vs}
    return bool(phrases & values)


_WORD = re.compile(r"\w[\w.-]*\w")


def _rare(word: str, st: _StepStats) -> bool:
    """Whether a word of a free-text request can name it: no function word (the lexicon's), and held by at
    most one passing request or under a quarter of them (a word most requests hold, "weather" or "report",
    names none; review rev47r, H1)."""
    if word in _FUNCTION_WORDS:
        return False
    n, counts, _, _ = _requests_of(st)
    held = counts.get(word, 0)
    return held <= 1 or held * 4 < n


_FUNCTION_WORDS = ENGLISH.stopwords | ENGLISH.short_stopwords


_Subject = frozenset[tuple[str, frozenset[str]]]
_Requests = tuple[
    int, dict[str, int], Mapping[str | None, frozenset[str]], Mapping[str | None, Mapping[str, set[_Subject]]]
]
"""How many passing requests; in how many each free-text word occurs; per key of the answer (None: the whole),
the fields no value under it followed (shown by two subjects), and per field the subjects that showed it."""

_REQUESTS: dict[int, tuple[_StepStats, int, _Requests]] = {}
"""Per step profile (by identity, with the count of its parts when read): what its passing requests show."""


def _requests_of(st: _StepStats) -> _Requests:
    """What a step's passing requests show, read once per profile (asked of every old-answer candidate,
    re-reading every request each time was quadratic in a tool's calls; review rev47r, H3b): how many there
    are, in how many each free-text word occurs, and per key of the answer the fields in which a request that
    got the same value under it as another differed from that one alone (the hour a fare is asked at), shown
    by two subjects (other values of the other fields) at least: fields the value under that key does not
    follow.  Each part's requests are compared with its first (linear)."""
    hit = _REQUESTS.get(id(st))
    if hit is not None and hit[0] is st and hit[1] == len(st.parts):
        return hit[2]
    read: dict[str, tuple[dict[str, set[str]], set[str], set[str]]] = {}
    for got in st.parts.values():
        for r in got:
            if r not in read:
                try:
                    read[r] = _asked_units(json.loads(r))
                except (ValueError, RecursionError):
                    read[r] = ({}, set(), set())
    counts: dict[str, int] = {}
    for _, ws, _ in read.values():
        for w in ws:
            counts[w] = counts.get(w, 0) + 1
    subjects: dict[str | None, dict[str, set[_Subject]]] = {}
    for part, got in st.parts.items():
        first, *rest = [read[r] for r in got] or [({}, set(), set())]
        fa, wa, _ = first
        for fb, wb, _ in rest:
            differ = {f for f in fa.keys() | fb.keys() if fa.get(f) != fb.get(f)}
            if len(differ) == 1 and wa == wb:
                (f,) = differ
                subjects.setdefault(st.part_keys.get(part), {}).setdefault(f, set()).add(_subject(fa, wa, f))
    # A subject every passing request shares (a lookup by one field; a constant status) is no request's own: two
    # users' empty carts would say no cart follows the user (review rev49r2).
    alike = {f for by in subjects.values() for f in by if len({_subject(fa, wa, f) for fa, wa, _ in read.values()}) < 2}
    subjects = {k: {f: seen for f, seen in by.items() if f not in alike} for k, by in subjects.items()}
    # One subject's answer alike on two dates is no sign for every subject: two must show it (review rev48r, M1).
    loose = {k: frozenset(f for f, seen in by.items() if len(seen) >= 2) for k, by in subjects.items()}
    out = (len(read), counts, loose, subjects)
    if len(_REQUESTS) > 512:
        _REQUESTS.clear()
    _REQUESTS[id(st)] = (st, len(st.parts), out)
    return out


def _subject(fields: Mapping[str, set[str]], words: set[str], field: str) -> _Subject:
    """What a request asked about besides ``field``: its other fields' values and its words."""
    return frozenset((g, frozenset(vs)) for g, vs in fields.items() if g != field) | {("", frozenset(words))}


def _asked_units(value: Any) -> _Asked:
    """What a request asks about, case-folded: its fields' values by field name (texts of three characters or
    more, and numbers), the words (three characters or more) of its free texts (ones with spaces: an answer
    echoes no field of a sentence), and those free texts whole (spaces made one).  A text that is JSON (an
    agent used as a tool takes its arguments so) is read as its fields."""
    fields: dict[str, set[str]] = {}
    words: set[str] = set()
    phrases: set[str] = set()
    for field, v in _leaves(value):
        text = v.strip().casefold()
        if any(c.isspace() for c in text):
            words.update(w for w in _WORD.findall(text) if len(w) >= 3)
            phrases.add(" ".join(text.split()))
        elif len(text) >= 3 or _NUMBER.fullmatch(text):
            fields.setdefault(field, set()).add(text)
    return fields, words, phrases


__all__ = ["answer_checks", "asked_before", "unkeyed"]


