"""Steps enclosing others (a graph node, an agent turn, an SDK span) judged against a passing run of the same input.

An alignment of a failing run with a passing run of the same input finds the first divergence: a node
whose every inner step was asked and answered as in the passing run, and that answered otherwise itself,
diverged in its own code; a node whose output differs because an inner step answered otherwise did not
(the inner step did).  `learn` keeps, per enclosing step and request, a digest of its inside and its answer;
`own_answer` is the container's evidence; `inside_of` tells `answer_checks` about a non-container span.

What varies from run to run makes no difference: a model's envelope (ids, usage, fingerprints), date-time
stamps, clock readings and UUIDs, ids an inner step mints on every call (`_fields._mints`), the completion
order of a container's lists, what the container writes anew in every passing run (`Profile.varying`), and
any part that is a time, a clock or timing number, a minted id, a reordering or a float summation order
(`_reach.run_varying`).  A difference that is left must also have reached the failure (`_reach.Reach`).  The digest hashes each step's request and answer in full (no cut before hashing), in
one bottom-up pass over the run (a Merkle fold: linear in the steps, whatever the nesting depth).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.lineage import ENVELOPE_KEYS, semantic
from trajdebug.analysis.reference._call_keys import _UUID, answer_key, asked_of
from trajdebug.analysis.reference._fields import _masked, _minted_only, _mints
from trajdebug.analysis.reference._profile import Profile, step_key
from trajdebug.analysis.reference._profile import learn as learn_steps
from trajdebug.analysis.reference._reach import ANSWER, Reach, epoch_like, leaves, run_varying
from trajdebug.core.model import CONTAINER_KINDS, Run, Step


_STAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
"""A date with its time of day: when a run happened (``located_at``), new in every run."""
_WORD = re.compile(r"\w+")
_DEPTH = 64
"""Deeper than this a value is cut (a value nested thousands deep is no reason to fail an analysis)."""


@dataclass(frozen=True, slots=True)
class Inside:
    """A run's enclosing steps: what was done inside each."""

    digest: Mapping[str, str]
    """Per step enclosing others, a digest of every step inside it (any depth): asked, answered, status."""
    origin: frozenset[str]
    """Steps with an inner step that answered its request otherwise than in every passing run."""


def learn(runs: Sequence[Run]) -> Profile:
    """`_profile.learn`, with what each enclosing step's inside and answer were per request (`Profile.enclosing`)."""
    profile = learn_steps(runs)
    table: dict[Any, dict[str, dict[tuple[str, str], str]]] = {}
    timeline: dict[Any, list[tuple[int, Any]]] = {}
    wrote: dict[Any, list[dict[tuple[str, ...], frozenset[tuple[str, ...]]]]] = {}
    for run in runs:
        by_id = {s.step_id: s for s in run.steps}
        kids: dict[str, list[str]] = {}
        for s in run.steps:
            if s.parent_id in by_id and s.parent_id != s.step_id:
                kids.setdefault(s.parent_id, []).append(s.step_id)
        inside = inner_calls(run.steps, by_id, profile, origins=False)
        for s in run.steps:
            if s.status == "ok" and s.step_id in inside.digest:
                seen = table.setdefault(step_key(s, by_id), {}).setdefault(answer_key(asked_of(s, by_id)), {})
                seen.setdefault((inside.digest[s.step_id], _text(steady(s.output))), run.run_id)
                timeline.setdefault(step_key(s, by_id), []).append((s.start_ns, s.output))
                texts = _words(steady(s.output))
                if texts:
                    told = _told(s, by_id, kids)
                    wrote.setdefault(step_key(s, by_id), []).append(
                        {p: w for p, w in texts.items() if not any(t in told for ws in w for t in ws)}
                    )
    varying = _varying(table)
    for key, paths in [*_counting(timeline).items(), *_minting(wrote).items()]:
        varying[key] = varying.get(key, frozenset()) | paths
    return replace(profile, enclosing=table, varying=varying)


def _minting(wrote: Mapping[Any, list[dict[tuple[str, ...], frozenset[tuple[str, ...]]]]]) -> dict[Any, frozenset[tuple[str, ...]]]:
    """Per enclosing step, the text parts of its answer new in every passing run (three or more, whatever
    their requests) with no word it was given or told by a step inside it: what it draws by itself (a random
    sample of its own list, a fresh name), run-varying as a leaf's minted ids are."""
    out: dict[Any, frozenset[tuple[str, ...]]] = {}
    for key, runs in wrote.items():
        if len(runs) < 3:
            continue
        paths = {p for p in runs[0] if all(p in r for r in runs) and len({r[p] for r in runs}) == len(runs)}
        if paths:
            out[key] = frozenset(paths)
    return out


def _words(value: Any, at: tuple[str, ...] = ()) -> dict[tuple[str, ...], frozenset[tuple[str, ...]]]:
    """An answer's text values by path (a list's entries under ``*``), each as its words."""
    if len(at) > _DEPTH:
        return {}
    if isinstance(value, Mapping):
        return {p: w for k, v in value.items() for p, w in _words(v, (*at, str(k))).items()}
    if isinstance(value, list):
        found: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        for v in value:
            for p, w in _words(v, (*at, "*")).items():
                found.setdefault(p, set()).update(w)
        return {p: frozenset(w) for p, w in found.items()}
    if isinstance(value, str) and _WORD.search(value):
        return {at: frozenset({tuple(_WORD.findall(value.lower()))})}
    return {}


_TOLD_CAP = 2000
"""Inner steps read to learn what a step was told; past it, every word counts as told (nothing learned)."""


def _told(step: Step, by_id: Mapping[str, Step], kids: Mapping[str, list[str]]) -> frozenset[str] | _All:
    """The words of a step's request and of every answer inside it (any depth)."""
    words = set(_WORD.findall(_text(asked_of(step, by_id)).lower()))
    todo, n = list(kids.get(step.step_id, ())), 0
    while todo:
        n += 1
        if n > _TOLD_CAP:
            return _All()
        sid = todo.pop()
        words.update(_WORD.findall(_text(by_id[sid].output).lower()))
        todo.extend(kids.get(sid, ()))
    return frozenset(words)


class _All:
    """Every word (a step too large to read whole)."""

    def __contains__(self, _: object) -> bool:
        return True


def _counting(timeline: Mapping[Any, list[tuple[int, Any]]]) -> dict[Any, frozenset[tuple[str, ...]]]:
    """Per enclosing step, the numbers of its answer that rose with every passing run, whatever its request
    (a counter, a clock: three runs or more, each later than the last): learned across inputs, as a leaf's
    minted ids are, so one passing run of the failing run's input is enough to know the number is the run's."""
    out: dict[Any, frozenset[tuple[str, ...]]] = {}
    for key, seen in timeline.items():
        if len(seen) < 3:
            continue
        series = [_numbers(v) for _, v in sorted(seen, key=lambda x: x[0])]
        rising = {
            p for p in series[0]
            if all(p in later and later[p] > earlier[p] for earlier, later in pairwise(series))
        }
        if rising:
            out[key] = frozenset(rising)
    return out


def _numbers(value: Any, at: tuple[str, ...] = ()) -> dict[tuple[str, ...], float]:
    """The numbers of an answer's mappings by path (never inside a list, whose entries have no fixed place)."""
    if isinstance(value, Mapping) and len(at) <= _DEPTH:
        return {p: n for k, v in value.items() for p, n in _numbers(v, (*at, str(k))).items()}
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {at: float(value)}
    return {}


def _varying(table: Mapping[Any, Mapping[str, Mapping[tuple[str, str], str]]]) -> dict[Any, frozenset[tuple[str, ...]]]:
    """Per enclosing step, the parts of its answer (paths; ``*`` a list's entries) that differed between passing
    runs given the same request with every step inside alike: what it writes anew in every run (a duration, a
    counter), learned from the agent's own runs, so no difference there in a failing run is its code's."""
    out: dict[Any, frozenset[tuple[str, ...]]] = {}
    for key, per in table.items():
        paths: set[tuple[str, ...]] = set()
        for seen in per.values():
            first: dict[str, Any] = {}
            for sig, answer in seen:
                if sig in first:
                    paths |= _paths_differing(first[sig], _parsed(answer))
                else:
                    first[sig] = _parsed(answer)
        if paths:
            out[key] = frozenset(paths)
    return out


def _paths_differing(a: Any, b: Any, at: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    if len(at) > _DEPTH:
        return {at}
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out: set[tuple[str, ...]] = set()
        for k in set(a) | set(b):
            out |= _paths_differing(a.get(k), b.get(k), (*at, str(k)))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return {p for x, y in zip(a, b) for p in _paths_differing(x, y, (*at, "*"))}
    return set() if a == b else {at}


def _without(value: Any, paths: frozenset[tuple[str, ...]], at: tuple[str, ...] = ()) -> Any:
    """An answer with the parts at ``paths`` blanked (lists kept as multisets)."""
    if at in paths or len(at) > _DEPTH:
        return None
    if isinstance(value, Mapping):
        return {k: _without(v, paths, (*at, str(k))) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((_without(v, paths, (*at, "*")) for v in value), key=_text)
    return value


def inner_calls(
    steps: Sequence[Step], by_id: Mapping[str, Step], profile: Profile | None = None, origins: bool = True
) -> Inside:
    """Per step enclosing others, a digest of each step inside it: equal digests, every inner step matched its
    counterpart (same request, answer and status; in any order, as parallel calls finish).  ``profile``: the
    passing runs', to mask the ids an inner step mints and (``origins``) to find the inner steps that answered
    otherwise."""
    kids: dict[str, list[str]] = {}
    for s in steps:
        if s.parent_id is not None and s.parent_id in by_id and s.parent_id != s.step_id:
            kids.setdefault(s.parent_id, []).append(s.step_id)
    node: dict[str, bytes] = {}
    digest: dict[str, str] = {}
    origin: set[str] = set()
    diverged: set[str] = set()
    roots = [s.step_id for s in steps if s.parent_id is None or s.parent_id not in by_id or s.parent_id == s.step_id]
    for root in roots:
        # Iterative post-order: a step's children are folded before it, each once.
        stack: list[tuple[str, bool]] = [(root, False)]
        while stack:
            sid, done = stack.pop()
            if done:
                inner = sorted(node[k] for k in kids.get(sid, ()) if k in node)
                if inner:
                    digest[sid] = hashlib.blake2b(b"".join(inner), digest_size=16).hexdigest()
                    if any(k in diverged or k in origin for k in kids[sid]):
                        origin.add(sid)
                step = by_id[sid]
                node[sid] = hashlib.blake2b(_call(step, by_id, profile) + digest.get(sid, "").encode(), digest_size=16).digest()
                if origins and profile is not None and _diverges(step, by_id, profile):
                    diverged.add(sid)
            elif sid not in node:
                stack.append((sid, True))
                stack.extend((k, False) for k in kids.get(sid, ()) if k not in node)
    return Inside(digest, frozenset(origin))


def _call(step: Step, by_id: Mapping[str, Step], profile: Profile | None) -> bytes:
    """A step's call as bytes to hash: its name, kind, status, request and (run-steady) answer, each in full."""
    st = profile.steps.get(step_key(step, by_id)) if profile is not None else None
    if step.kind in CONTAINER_KINDS:
        answer = steady(step.output)
    else:
        answer = _stamped(semantic(step, step.output), start_ns=step.start_ns)
        minted = {f for f, fs in st.fields.items() if _mints(fs)} if st is not None else set()
        answer = _masked(answer, minted) if minted else answer
    parts = (_text([step.name, step.kind, step.status]), _text(_stamped(asked_of(step, by_id))), _text(answer))
    # Each part hashed on its own: a long request can never push the answer out of the digest.
    return b"".join(hashlib.blake2b(p.encode("utf-8", "surrogatepass"), digest_size=16).digest() for p in parts)


def _diverges(step: Step, by_id: Mapping[str, Step], profile: Profile) -> bool:
    """Whether a (non-container) step answered its request otherwise than in every passing run that made it."""
    st = profile.steps.get(step_key(step, by_id)) if step.kind not in CONTAINER_KINDS and step.status == "ok" else None
    answers = st.answers.get(answer_key(asked_of(step, by_id))) if st is not None else None
    if st is None or answers is None or len(answers) != 1:
        return False
    now = answer_key(semantic(step, step.output))
    return now not in answers and not _minted_only(st, now, answers)


def steady(value: Any, depth: int = 0) -> Any:
    """A container's answer without what varies from run to run: a model envelope relayed as is (its id,
    usage, fingerprint), date-time stamps and UUIDs; its lists as multisets (in completion order, they vary)."""
    if depth > _DEPTH:
        return None
    if isinstance(value, Mapping):
        choices = value.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
            return steady(choices[0].get("message") or choices[0].get("delta") or {}, depth + 1)
        return {str(k): steady(v, depth + 1) for k, v in value.items() if str(k).lower() not in ENVELOPE_KEYS}
    if isinstance(value, (list, tuple)):
        return sorted((steady(v, depth + 1) for v in value), key=_text)
    return _stamped(value, depth)


def _stamped(value: Any, depth: int = 0, start_ns: int | None = None) -> Any:
    """A value with its date-time stamps and UUIDs masked (minted anew in every run); with ``start_ns`` (when
    the step ran), its clock readings too (seconds or finer since the epoch, near that time: `epoch_like`)."""
    if depth > _DEPTH:
        return None
    if isinstance(value, str):
        return _UUID.sub("<uuid>", _STAMP.sub("<time>", value))
    if isinstance(value, Mapping):
        return {str(k): _stamped(v, depth + 1, start_ns) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_stamped(v, depth + 1, start_ns) for v in value]
    return "<time>" if start_ns is not None and epoch_like(value, start_ns) else value


def _text(value: Any) -> str:
    """A value as canonical JSON, in full (never cut: a difference past any cut would go unseen)."""
    try:
        return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return type(value).__name__


def matched_inside(step: Step, profile: Profile, steps: Mapping[str, Step] | None) -> str | None:
    """The passing run whose same step, given the same request, had every step inside it asked and answered
    as in this run; '' when there were such passing steps but none matched (an inner step differs); None
    when the step encloses nothing or no passing run gave it this request."""
    table = profile.enclosing.get(step_key(step, steps)) if steps else None
    mine = inside_of(steps, profile).digest.get(step.step_id) if table and steps else None
    seen = table.get(answer_key(asked_of(step, steps))) if table and mine is not None else None
    if not seen:
        return None
    return next((run for (sig, _), run in seen.items() if sig == mine), "")


def own_answer(step: Step, profile: Profile, steps: Mapping[str, Step] | None) -> list[Evidence]:
    """A container (a graph node that calls a tool, then computes from its answer) given the same request as
    in passing runs, where it answered one way, with every step inside it asked and answered as in one of
    them, that answered otherwise in a part that reached the failure and is no per-run value
    (`_made_the_difference`): nothing it enclosed made the difference, its own code did (the first divergence, as an alignment of the two runs finds it).  The finding is the
    container's own: the ranking never moves it onto the model call inside that wrote its answer."""
    run = matched_inside(step, profile, steps) if step.status == "ok" and steps else None
    if not run or not steps:
        return []
    key = step_key(step, steps)
    answers = {a for _, a in profile.enclosing[key][answer_key(asked_of(step, steps))]}
    now = steady(step.output)
    varies = profile.varying.get(key)
    if varies:
        answers = {_text(_without(_parsed(a), varies)) for a in answers}
        now = _without(now, varies)
    if len(answers) != 1 or _text(now) in answers:
        return []
    if not _made_the_difference(step, _differing(now, _parsed(next(iter(answers)))), steps):
        return []
    return [
        Evidence(
            step.step_id,
            0.65,
            f"given the same input as in passing run {run[:12]}, with every step inside it asked and answered"
            " alike, it answered differently: its own code made the difference",
            "reference:same-input",
            own=True,
        )
    ]


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


_GONE = object()
"""A part one answer has and the other has not."""


def _differing(now: Any, then: Any, field: str = "", depth: int = 0) -> list[tuple[str, Any, Any]]:
    """Where an answer differs from another: (field, its scalar, the other's) per differing scalar; a part
    of another shape or length gives each of its scalars against `_GONE`, a part it lacks gives the part's
    field name against `_GONE` (a failure may name what is missing)."""
    if depth > _DEPTH:
        return []
    if isinstance(now, Mapping) and isinstance(then, Mapping):
        out: list[tuple[str, Any, Any]] = [(str(k), str(k), _GONE) for k in then if k not in now]
        for k, v in now.items():
            out += _differing(v, then[k], str(k), depth + 1) if k in then else _all(v, str(k))
        return out
    if isinstance(now, list) and isinstance(then, list) and len(now) == len(then):
        return [d for a, b in zip(now, then) for d in _differing(a, b, field, depth + 1)]
    if isinstance(now, (Mapping, list)) or isinstance(then, (Mapping, list)):
        return _all(now, field)
    return [] if now == then else [(field, now, then)]


def _all(value: Any, field: str) -> list[tuple[str, Any, Any]]:
    return [(f, v, _GONE) for f, v in leaves(value, field)]


def _made_the_difference(step: Step, parts: list[tuple[str, Any, Any]], steps: Mapping[str, Step]) -> bool:
    """Whether a part where a container's answer differs reached its run's failure and differs otherwise than
    every run does (`_reach`): a value the failure's path was handed, or that its message names, that is no
    time, clock reading, minted id, reordering or rounding.  A part no step on the failure's path read made
    no difference (a next node handed the whole state, say, but reading one field of it)."""
    reach = reach_of(steps)
    for field, now, then in parts:
        if then is not _GONE and run_varying(field, now, then, reach.start_ns):
            continue
        if reach.named_by_failure(now):
            return True
        if any(_after(step, sid, steps) for sid in reach.handed(field, now)):
            return True
    return False


def _after(step: Step, sid: str, steps: Mapping[str, Step]) -> bool:
    """Whether a step that was handed a value got it from ``step``'s answer: it started once ``step`` ended
    and is not inside it (an inner step is handed part of its input, not its answer); the run's answer is."""
    if sid == ANSWER:
        return True
    other = steps.get(sid)
    if other is None or sid == step.step_id or (step.end_ns is not None and other.start_ns < step.end_ns):
        return False
    hops = 0
    while other is not None and other.parent_id is not None and hops <= len(steps):
        if other.parent_id == step.step_id:
            return False
        other, hops = steps.get(other.parent_id), hops + 1
    return True


_REACH: list[tuple[Mapping[str, Step], int, Reach]] = []
"""The last run's `Reach`, kept for its next container (built once per run, not per container)."""


def reach_of(steps: Mapping[str, Step]) -> Reach:
    """`Reach.of` a failing run's steps, built once per steps map."""
    last = _REACH[-1] if _REACH else None
    if last is not None and last[0] is steps and last[1] == len(steps):
        return last[2]
    out = Reach.of(steps)
    _REACH[:] = [(steps, len(steps), out)]
    return out


_INSIDE: list[tuple[Mapping[str, Step], int, Profile, Inside]] = []
"""The last run's `inner_calls`, kept for its next call (asked once per step)."""


def inside_of(steps: Mapping[str, Step], profile: Profile) -> Inside:
    """`inner_calls` of a failing run's steps (by id, in execution order), built once per steps map and profile."""
    last = _INSIDE[-1] if _INSIDE else None
    if last is not None and last[0] is steps and last[1] == len(steps) and last[2] is profile:
        return last[3]
    out = inner_calls(list(steps.values()), steps, profile)
    # One slot, replaced whole (threads see an old or a new entry, never half of one).
    _INSIDE[:] = [(steps, len(steps), profile, out)]
    return out


__all__ = ["Inside", "inner_calls", "inside_of", "learn", "matched_inside", "own_answer", "steady"]
