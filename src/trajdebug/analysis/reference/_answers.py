"""Same-input answers: a request answered otherwise than in every passing run, or with another request's answer.

The strongest reference signal (a step is a function of its input: one answer to a request in every passing
run that made it, and another now, is stale data or a changed environment), with what keeps it honest: ids a
step mints on every call, date stamps new in every run, parts several requests share, a request about the
same subject.  Split from `_invariants` (which calls `answer_checks` for every profiled step).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.lineage import semantic
from trajdebug.analysis.reference._profile import (
    Profile,
    StepKey,
    _canon,
    _FieldStats,
    _StepStats,
    _tools_of,
    answer_key,
    asked_of,
    keyed_parts,
    step_key,
)
from trajdebug.analysis.reference._reach import epoch_like
from trajdebug.core.chat import input_messages, normalize_llm_step, tool_calls, tool_names
from trajdebug.core.model import CONTAINER_KINDS, OBSERVATION_KINDS, Step
from trajdebug.core.values import atoms as value_atoms


_SHAPE_DIGIT, _SHAPE_ALPHA = re.compile(r"\d"), re.compile(r"[A-Za-z]")
"""A minted id mixes digits and letters (``BK-7031``)."""


def answer_checks(step: Step, st: _StepStats, steps: Mapping[str, Step] | None, origin: bool = False) -> Iterator[Evidence]:
    """A request answered otherwise than in every passing run; an answer passing runs got for another request.

    ``origin``: the step encloses others, one of which answered its own request otherwise than in every passing
    run, and none of which matched the same step's inside in a passing run (`_enclosing`): it, not the step,
    is the origin."""
    answers = st.answers.get(answer_key(asked_of(step, steps)))
    # One answer to this request in every passing run that made it, and another one now: a
    # function of its input that changed (stale data, a changed environment), the strongest
    # sign a step's output is off.  Passing runs that disagree among themselves say nothing.
    now = answer_key(semantic(step, step.output))
    if (
        answers is not None
        and len(answers) == 1
        and now not in answers
        and not _minted_only(st, now, answers)
        and not origin
        and not _reads_unrecorded(step, steps)
    ):
        yield Evidence(
            step.step_id,
            0.65 if step.kind != "llm" else 0.4,
            f"given the same input as in passing run {next(iter(answers.values()))[:12]}, it answered differently",
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
                yield Evidence(
                    step.step_id,
                    0.5,
                    f"answered with what passing run {run[:12]} got for another request ({other[:80]})",
                    "reference:old-answer",
                )
                break


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
    return any(any(a.key not in mine for a in value_atoms(s.input)) for s in inner)


_CHILDREN: list[tuple[Mapping[str, Step], int, dict[str, list[Step]]]] = []
"""The last run's children map, kept for its next call: `_reads_unrecorded` is asked once per step."""


def _children(steps: Mapping[str, Step]) -> dict[str, list[Step]]:
    """Each step's non-container children, built once per steps map (not per call: a scan of every step per
    call is quadratic in a run's steps)."""
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


def _minted_only(st: _StepStats, now: str, answers: Mapping[str, str]) -> bool:
    """Whether the answer differs from the passing run's only in ids the step mints on every call (a booking
    tool's ``booking=BK-7031`` where the same request got ``BK-7003``): a new id per call, new
    in every passing occurrence too and never given, is no changed answer."""
    minted = {f for f, fs in st.fields.items() if _mints(fs)}
    if not minted:
        return False
    try:
        mine = _masked(json.loads(now), minted)
        return any(_masked(json.loads(old), minted) == mine for old in answers)
    except (ValueError, RecursionError):
        return False


def _mints(fs: _FieldStats) -> bool:
    """A field whose every passing value was new (seen once), an id (letters and digits), never given; or a
    stamp: a field of dates never given, each date seen in one passing run only, and some date shared by one
    run's calls with different requests (a snapshot's ``as_of``, dated anew in every run; the time of day
    beside it may repeat), unlike an order's ship date, which one request gets."""
    if fs.n < 2 or fs.grounded:
        return False
    if all(c == 1 for c in fs.values.values()) and all(
        _SHAPE_DIGIT.search(r) and _SHAPE_ALPHA.search(r) for r in fs.raws.values()
    ):
        return True
    if len(fs.runs) >= 2 and fs.numbers and len(set(fs.numbers)) == len(fs.numbers) and all(map(_clock, fs.numbers)):
        return True
    dates = [k for k in fs.values if k.startswith("d:")]
    return (
        len(fs.runs) >= 2
        and bool(dates)
        and all(k.startswith(("d:", "t:")) for k in fs.values)
        and not fs.across.intersection(dates)
        and bool(fs.shared)
    )


def _clock(value: Any) -> bool:
    """Whether a number is a clock's reading: seconds (or finer) since the epoch, 2000-2100 (no run's start
    at hand: a field's numbers come from many runs)."""
    return epoch_like(value, 0)


def _masked(value: Any, fields: set[str]) -> Any:
    """A parsed answer with the values (text, or a clock's number) under ``fields`` blanked out."""
    if isinstance(value, Mapping):
        return {
            k: "" if k in fields and (isinstance(v, str) or _clock(v)) else _masked(v, fields)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_masked(v, fields) for v in value]
    return value


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


def _request_values(value: Any, depth: int = 0) -> list[str]:
    """The text values of a request (ids, names: 3 characters or more), up to 200."""
    if isinstance(value, str):
        return [value] if len(value.strip()) >= 3 else []
    if depth > 4:
        return []
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, (list, tuple)) else ()
    out: list[str] = []
    for v in items:
        out.extend(_request_values(v, depth + 1))
        if len(out) >= 200:
            break
    return out[:200]


__all__ = ["answer_checks", "unkeyed"]


def picked_first(step: Step, steps: Mapping[str, Step] | None, field: str, value: str) -> bool:
    """Whether ``value`` of the output field ``field`` is the tool name a first tool call picked (`first_picks`)."""
    return field == "name" and value.casefold() in first_picks(step, steps)


def first_picks(step: Step, steps: Mapping[str, Step] | None) -> frozenset[str]:
    """The tool names (case-folded) a model's first tool call in the run picked among the tools it was offered.

    A first call's history can name no tool, so the name it picks is given by the tools offered; a later call's
    history holds the tools called before, and a call there picking an offered tool no message names is the
    wrong pick the grounded check is for.  "First" is read in run order and on the normalized request: no
    earlier model call of the same agent in ``steps`` made a tool call (a stateless planner's every prompt is
    fresh), and its messages hold no tool call or result (Anthropic ``tool_use`` blocks, Responses items).
    Empty without the run's steps (nothing tells it is first).  Read where a violation is judged only: counted
    as given in passing runs, it would make "always given" an invariant their first calls never showed."""
    if step.kind != "llm" or steps is None:
        return frozenset()
    given, said, _ = normalize_llm_step(step.input, step.output, step.attributes)
    if any(m.get("tool_calls") or m.get("role") == "tool" for m in input_messages(given)) or _raw_called(step.input):
        return frozenset()
    if _called_before(step, steps):
        return frozenset()
    picked = {str(c.get("name") or (c.get("function") or {}).get("name") or "").casefold() for c in tool_calls(said)}
    offered = frozenset(n.casefold() for n in tool_names(_tools_of(step)))
    # A request that names an offered tool ("call read_gauge") asks for it: the pick is checked (review rev45n2).
    asked = " ".join(str(m.get("content") or "") for m in input_messages(given)).casefold()
    return frozenset() if any(n and n in asked for n in offered) else offered & picked


def _called_before(step: Step, steps: Mapping[str, Step]) -> bool:
    """Whether a model call of the step's agent before it in ``steps`` (all of them, when it is not there)
    made a tool call: `_first_calls` of the mapping, read once per run."""
    pos, first = _first_calls(steps)
    at, end = first.get(step.agent), pos.get(step.step_id, len(steps))
    return at is not None and at < end


def _first_calls(steps: Mapping[str, Step]) -> tuple[dict[str, int], dict[str | None, int]]:
    """Each step's position in ``steps`` and each agent's first model call that made a tool call, in one pass.

    Asked of many steps of one run: walking the run's earlier calls for each of them was quadratic on a long
    run of text-only turns (review rev45n2, N3).  Built once per steps map (one slot, as `inside_of`): the map
    must not change while it is in use (a graph's steps map never does; review rev46p L1)."""
    last = _FIRSTS[-1] if _FIRSTS else None
    if last is not None and last[0] is steps and last[1] == len(steps):
        return last[2]
    pos: dict[str, int] = {}
    first: dict[str | None, int] = {}
    for i, t in enumerate(steps.values()):
        pos.setdefault(t.step_id, i)
        if t.kind == "llm" and t.agent not in first and tool_calls(normalize_llm_step(t.input, t.output, t.attributes)[1]):
            first[t.agent] = i
    # One slot, replaced whole (threads see an old or a new entry, never half of one).
    _FIRSTS[:] = [(steps, len(steps), (pos, first))]
    return pos, first


_FIRSTS: list[tuple[Mapping[str, Step], int, tuple[dict[str, int], dict[str | None, int]]]] = []


def _raw_called(given: Any) -> bool:
    """Whether a raw request holds a tool call or result in a shape the normalization may leave (Chat
    Completions ``tool_calls``/``role: tool``, Responses ``function_call*`` items, Anthropic blocks)."""
    msgs = given.get("messages", given.get("input")) if isinstance(given, Mapping) else given
    kinds = ("function_call", "function_call_output", "tool_use", "tool_result")
    return isinstance(msgs, list) and any(
        isinstance(m, Mapping)
        and (
            bool(m.get("tool_calls"))
            or m.get("role") == "tool"
            or m.get("type") in kinds
            or (isinstance(m.get("content"), list) and any(isinstance(b, Mapping) and b.get("type") in kinds for b in m["content"]))
        )
        for m in msgs
    )
