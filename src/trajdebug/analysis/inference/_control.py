"""Edges no value carries: the step whose answer chose which steps ran, and reads through the world.

Value edges (content inference, the lineage) link a step to where the values
it was given came from.  Two dependencies carry no value at all:

* `control_edges`: a plan (a list of step names) or a router (an answer that
  is a node's name) decides which steps run; nothing it wrote reaches what
  those steps did, yet a wrong choice is the cause (control dependence,
  Ferrante, Ottenstein & Warren, TOPLAS 1987; slicing over it, Weiser 1981).
  A step whose name is a name a chooser answered, the first to run after it,
  and every step it encloses, depend on the chooser by a ``control`` edge.
* `env_edges`: a tool whose answer no step read acted on the world (a write:
  a dispatch, a release, a booking).  A later step given the same resource's
  id (a station, an order) may read the world that write changed, through a
  server the recording does not show: an ``env`` edge links it to the write.

Names are compared as sets of words (``emergency_release`` names
``release_emergency``; ``reviewEquipment`` names ``review_equipment``), never
by a list of words of one language.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import replace
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.inference._named import message_codes
from trajdebug.core.model import Dependency, Run, Step
from trajdebug.core.values import is_mapping


CHOSE_KEY = "chose:"
"""Prefix of the ``key`` of a control edge; the chosen name follows."""
WROTE_KEY = "wrote:"
"""Prefix of the ``key`` of an env edge; the resource's id follows."""

_NAME = re.compile(r"^[A-Za-z_][\w.:-]{0,63}$")
"""A chosen name: one identifier-like word (no spaces), as a router answers or a plan lists."""
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_ID = re.compile(r"^(?=[^\s]*\d)(?=[^\s]*[A-Za-z])[A-Za-z0-9][\w.:/-]{1,39}$")
"""A resource's id: letters and digits together (``O-3``, ``R-42``, ``MRN-1042``), no spaces."""
_MAX_NAMES = 32
"""A chooser answering more names than this is a listing, not a plan."""
_ENV_CONFIDENCE = 0.5
_MAX_WRITES = 3
"""An id more writes than this were given is too common to say which write a read saw."""
_MAX_UNKEYED = 8
"""A read is linked to at most this many of the latest writes before it."""
_UNKEYED_CONFIDENCE = 0.35


def _words(name: str) -> frozenset[str]:
    """The words of a name, lowercased: ``release_emergency`` and ``emergencyRelease`` give the same set."""
    return frozenset(w.lower() for w in _WORDS.findall(name))


def _chosen(output: Any) -> list[str]:
    """The names a step's output chose: the whole answer when it is one name, the items of a list of
    names (a plan), the one-name text leaves of a flat mapping (a router's ``{"path": ...}``)."""
    if isinstance(output, str):
        leaves: Iterable[Any] = (output.strip(),)
    elif isinstance(output, list):
        leaves = output if all(isinstance(v, str) for v in output) else ()
    elif isinstance(output, Mapping):
        leaves = (v for v in output.values() if isinstance(v, str))
    else:
        leaves = ()
    names = [v for v in leaves if isinstance(v, str) and _NAME.match(v)]
    return names if len(names) <= _MAX_NAMES else []


def _descendants(run: Run) -> dict[str, list[Step]]:
    kids: dict[str, list[Step]] = {}
    for s in run.steps:
        if s.parent_id is not None:
            kids.setdefault(s.parent_id, []).append(s)
    return kids


def _ancestors(step: Step, by_id: Mapping[str, Step]) -> set[str]:
    out: set[str] = set()
    cur = step.parent_id
    while cur is not None and cur in by_id and cur not in out:
        out.add(cur)
        cur = by_id[cur].parent_id
    return out


def control_edges(run: Run, *, confidence: float = 0.7, inside: float = 0.5) -> dict[str, list[Dependency]]:
    """Inferred ``control`` edges from the step whose answer chose a step to that step and what it encloses.

    A chooser's answer names a step (by its words, `_words`) that no step of
    that name ran between the answer and it: the first such step after the
    chooser ended is the one it chose.  Names the chooser was given itself (a
    conversation repeating a tool's name, a list handed on) chose nothing, and
    neither does the chooser's own name.  A router inside a loop's node that
    answers the node's own name chose the next pass (LangGraph runs a
    conditional edge's function inside the node before it).
    """
    by_id = {s.step_id: s for s in run.steps}
    kids = _descendants(run)
    words = {s.step_id: _words(s.name) for s in run.steps}
    out: dict[str, list[Dependency]] = {}
    # Open choices: the words of a chosen name -> (chooser, name), waiting for the first step of that name.
    waiting: dict[frozenset[str], tuple[Step, str]] = {}
    for s in run.steps:
        hit = waiting.pop(words[s.step_id], None) if words[s.step_id] else None
        if hit is not None:
            chooser, name = hit
            ended = chooser.end_ns is None or not s.start_ns or chooser.end_ns <= s.start_ns
            if ended and chooser.step_id not in _ancestors(s, by_id):
                dep = Dependency(chooser.step_id, "control", "inferred", confidence, CHOSE_KEY + name)
                out.setdefault(s.step_id, []).append(dep)
                # The steps inside depend on the choice too, but as one decision: their edges share it (blame
                # through many of them would add up, noisy-OR, to more than the choice's own share).
                inner = replace(dep, confidence=round(confidence * inside, 3))
                stack = list(kids.get(s.step_id, ()))
                while stack:
                    t = stack.pop()
                    out.setdefault(t.step_id, []).append(inner)
                    stack.extend(kids.get(t.step_id, ()))
        given = _given_names(s.input)
        for name in _chosen(s.output):
            w = _words(name)
            if w and w != words[s.step_id] and name not in given:
                waiting[w] = (s, name)
    return out


def _given_names(value: Any, depth: int = 0) -> set[str]:
    """The one-name text leaves of a step's input (what it was handed cannot be what it chose)."""
    if depth > 6:
        return set()
    if isinstance(value, str):
        return {value.strip()} if _NAME.match(value.strip()) else set()
    if is_mapping(value):
        return set().union(*(_given_names(v, depth + 1) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_given_names(v, depth + 1) for v in value[:200]))
    return set()


def _ids(value: Any, depth: int = 0) -> set[str]:
    """The resource ids a value names: text leaves and mapping keys with letters and digits."""
    if depth > 4:
        return set()
    if isinstance(value, str):
        return {value} if _ID.match(value) else set()
    if is_mapping(value):
        found = {str(k) for k in value if _ID.match(str(k))}
        return found.union(*(_ids(v, depth + 1) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_ids(v, depth + 1) for v in value[:200]))
    return set()


CHANGED_KEY = "changed"
"""The key prefix of an inferred edge from a state step that changed a shared value in place (``changed:<key>``)."""


def _state_keys(step: Step, attr: str) -> set[str]:
    keys = step.attributes.get(attr)
    return {k for k in keys if isinstance(k, str)} if isinstance(keys, list) else set()


def mutation_edges(run: Run) -> dict[str, list[Dependency]]:
    """Inferred ``state`` edges from a state step that only read a key to the next readers of that key.

    A step declared a state step (kind ``state``) that read a shared key and recorded no write of it
    changed the value it got in place (``memo = state.setdefault(...)``, then ``memo[k] = v``): a
    recorder sees a read, and every later reader is linked to the first writer only.  The readers
    after it, up to the next step that writes or changes that key, read what it left there.
    """
    out: dict[str, list[Dependency]] = {}
    changer: dict[str, str] = {}
    for s in run.steps:
        reads, writes = _state_keys(s, "state_reads"), _state_keys(s, "state_writes")
        for key in sorted(reads - writes):  # edges in one order whatever the hash seed
            src = changer.get(key)
            if src is not None and src != s.step_id:
                out.setdefault(s.step_id, []).append(
                    Dependency(src, kind="state", origin="inferred", confidence=0.6, key=f"{CHANGED_KEY}:{key}")
                )
        for key in writes:
            changer.pop(key, None)
        if s.kind == "state" and s.status == "ok":
            for key in reads - writes:
                changer[key] = s.step_id
    return out


def world_readers(run: Run, messages: Mapping[str, str]) -> frozenset[str]:
    """The failing steps whose message names an id they were not given (``messages``: the failures' messages by
    step id): a check that reports on ``tank T5`` handed only a date read the tanks from the world.

    An id is a code of the message (`message_codes`: no URL or path segment, no format such as
    ``utf-8``) written with a capital letter, as record codes are (``T5``, ``G-102``), or one a step of the run
    returned as a value (``bay-7``); a lower-case word no step returned (``v2``, ``md5sum``) names no record."""
    by_id = {s.step_id: s for s in run.steps}
    out: set[str] = set()
    returned: set[str] | None = None
    for sid, message in messages.items():
        step = by_id.get(sid)
        if step is None or step.kind in ("llm", "agent"):
            continue
        given = " ".join(sorted(_ids(step.input))) + " " + repr(step.input)
        for code in message_codes(message):
            if code in given:
                continue
            if code.lower() == code:
                if returned is None:
                    returned = _returned_words(run)
                if code not in returned:
                    continue
            out.add(sid)
            break
    return frozenset(out)


def _returned_words(run: Run) -> set[str]:
    """The short string values (lower case) the run's steps returned, read only when a message names a
    lower-case code."""
    return {
        v.strip().lower()
        for s in run.steps
        if s.output is not None
        for _, v in content.leaves(s.output)
        if isinstance(v, str) and len(v) <= 40
    }


def env_edges(
    run: Run, consumed: set[str], linked: Set[str] = frozenset(), readers: Set[str] = frozenset()
) -> dict[str, list[Dependency]]:
    """Inferred ``env`` edges from a write (a tool whose answer no step read) to the later steps given
    an id it was given.

    ``consumed``: the steps some edge of the run reads from.  A tool whose
    answer was read is a lookup as far as the run shows; one whose answer
    nobody read was called for its effect.  The read must start after the
    write ended; an id given to more than `_MAX_WRITES` writes says nothing.
    ``linked``: the steps with an edge of any kind.  A step given no id and
    linked to nothing at all (a check handed a stock level it read from a
    server) read the world as the run's writes left it: it is linked, more
    weakly, to the latest `_MAX_UNKEYED` writes before it; so is a step in ``readers`` (`world_readers`:
    its failure names a resource it was not given), whatever else it is linked to.
    """
    writes: dict[str, list[Step]] = {}
    unkeyed: list[Step] = []
    for s in run.steps:
        if s.kind == "tool" and s.step_id not in consumed and s.status == "ok" and s.end_ns:
            unkeyed.append(s)
            for i in _ids(s.input):
                writes.setdefault(i, []).append(s)
    if not unkeyed:
        return {}
    by_id = {s.step_id: s for s in run.steps}
    pos = {s.step_id: i for i, s in enumerate(run.steps)}
    # The writes by end time, to find the latest ones before a read by bisection (no scan per read).
    unkeyed.sort(key=lambda w: w.end_ns or 0)
    ends = [w.end_ns or 0 for w in unkeyed]
    out: dict[str, list[Dependency]] = {}
    for s in run.steps:
        if not s.start_ns:
            continue
        anc = _ancestors(s, by_id)
        found: dict[str, Dependency] = {}
        ids = _ids(s.input)
        for i in sorted(ids):
            ws = writes.get(i, ())
            if len(ws) > _MAX_WRITES:
                continue
            for w in ws:
                if w.step_id in found or w.step_id == s.step_id or w.step_id in anc:
                    continue  # (the first id that links a write names the edge: built once, not per id)
                if w.end_ns is not None and w.end_ns <= s.start_ns:
                    found[w.step_id] = Dependency(w.step_id, "env", "inferred", _ENV_CONFIDENCE, WROTE_KEY + i)
        unlinked = s.step_id not in linked and s.input not in (None, "", {}, []) and not ids
        if not found and (unlinked or s.step_id in readers):
            k = bisect.bisect_right(ends, s.start_ns)
            before = [w for w in unkeyed[max(0, k - _MAX_UNKEYED - len(anc)) : k] if w.step_id not in anc]
            for w in before[-_MAX_UNKEYED:]:
                found[w.step_id] = Dependency(w.step_id, "env", "inferred", _UNKEYED_CONFIDENCE, WROTE_KEY.rstrip(":"))
        if found:
            # The latest writes only: a read naming many resources must not fan out over a whole run.
            out[s.step_id] = sorted(found.values(), key=lambda d: pos[d.step_id])[-_MAX_UNKEYED:]
    return out


CARRIED_KEY = "carried:"
"""The prefix of an edge from an earlier call of a step to a later one that returned an entry of its output again
(the entry's key follows)."""
_LOCAL_KINDS = frozenset({"state", "other", "parse", "condition"})
"""Kinds of step that run in the agent's own code, where an accumulator kept between calls lives (a tool, a model
or a retriever that answers an earlier answer again looked it up again)."""


def _canon(value: Any) -> str | None:
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return None


def _strings(value: Any, depth: int = 0) -> Iterable[str]:
    """The string leaves of a value, three levels deep."""
    if isinstance(value, str):
        yield value
    elif depth < 3 and isinstance(value, (dict, list)):
        for v in value.values() if isinstance(value, dict) else value[:64]:
            yield from _strings(v, depth + 1)


def _wrote(key: str, entry: Any, given: str) -> bool:
    """Whether a call wrote ``entry`` from what it was given (``given``: its input as JSON text): the entry's key or
    one of its words (a string leaf) is among the call's input values.  A builder's constant record (headers,
    settings) answers nothing the call was given, so no later call carries a decision of it."""
    return any(len(w) >= 2 and json.dumps(w) in given for w in (key, *_strings(entry)))


def carried_map(steps: Sequence[Step]) -> dict[str, dict[str, Step]]:
    """By step id, the top-level keys of the step's mapping output whose entry (a non-empty record or list) an
    earlier call of the same step returned under the same key, which wrote it from its own input (`_wrote`), and
    which this call was not given: an accumulator kept between calls (a register updated one item per call, a
    running tally) carried it from that call, the latest one that returned it.  Only with a record or list of
    the output that is new (no earlier call returned it under its key), the update.

    One pass: each step name keeps an index from (key, entry) to its latest call, so every entry is written out
    once (a loop of thousands of calls stays linear)."""
    out: dict[str, dict[str, Step]] = {}
    index: dict[tuple[str, str], dict[tuple[str, str], Step]] = {}
    returned: dict[tuple[str, str], set[tuple[str, str]]] = {}  # every (key, entry) a call of the step returned
    for step in steps:
        if step.kind not in _LOCAL_KINDS or not is_mapping(step.output):
            continue
        seen = index.setdefault((step.name, step.kind), {})
        before = returned.setdefault((step.name, step.kind), set())
        given = _canon(step.input) or ""
        entries = [
            (str(k), c, v)
            for k, v in step.output.items()
            if isinstance(v, (dict, list)) and v and (c := _canon(v)) is not None and c not in given
        ]
        found = {k: seen[(k, c)] for k, c, _ in entries if (k, c) in seen}
        if found and any((k, c) not in before for k, c, _ in entries):
            out[step.step_id] = found
        if step.status == "ok":
            for k, c, v in entries:
                before.add((k, c))
                if (k, c) in seen or _wrote(k, v, given):
                    seen[(k, c)] = step  # (the latest call that returned it)
    return out


def carried_keys(step: Step, earlier: Sequence[Step]) -> dict[str, Step]:
    """The carried keys of one call (`carried_map`) given the earlier calls of its step, in run order."""
    return carried_map([*earlier, step]).get(step.step_id, {})


def carried_edges(run: Run, carried: Mapping[str, Mapping[str, Step]] | None = None) -> dict[str, list[Dependency]]:
    """Inferred edges from an earlier call of a step to a later call whose output carries entries the earlier one
    returned (`carried_map`, or ``carried`` when already built): what the later call returned holds what the
    earlier one decided, though no input of the later call shows it (the accumulator lives in the code between
    the calls)."""
    out: dict[str, list[Dependency]] = {}
    for sid, keys in (carried_map(run.steps) if carried is None else carried).items():
        by_src: dict[str, list[str]] = {}
        for k, e in keys.items():
            by_src.setdefault(e.step_id, []).append(k)
        for src, ks in by_src.items():
            out.setdefault(sid, []).append(
                Dependency(src, kind="data", origin="inferred", confidence=0.6, key=CARRIED_KEY + sorted(ks)[0])
            )
    return out


RETRIED_KEY = "retried:"
"""The prefix of an edge a retry took over from the attempt before it (the edge's own key follows)."""


def retry_edges(run: Run, every: Mapping[str, Sequence[Dependency]]) -> dict[str, list[Dependency]]:
    """The edges a retry takes over from the failed attempt right before it.

    A call that failed (a gateway timeout) and was made again with the same input, as the next step
    under the same enclosing step, is one call: what decided its input decided the retry's.  The edges
    found for the attempt (a pick by the parser right before it, `picked_edges`, which sees only the
    step right after the pick) are the retry's too, though the retry, not the attempt, is what later
    steps read.  ``every``: each step's edges so far (recorded and inferred).
    """
    out: dict[str, list[Dependency]] = {}
    last: dict[str | None, Step] = {}
    for s in run.steps:
        prev = last.get(s.parent_id)
        last[s.parent_id] = s
        if prev is None or prev.status != "error" or prev.name != s.name or prev.kind != s.kind:
            continue
        if prev.input in (None, "", {}, []) or prev.input != s.input:
            continue
        have = {d.step_id for d in every.get(s.step_id, ())} | {prev.step_id}
        # (A chain of retries hands the first attempt's edges on: each takes over what its attempt took over.)
        taken = [*every.get(prev.step_id, ()), *out.get(prev.step_id, ())]
        new = [replace(d, key=RETRIED_KEY + (d.key or "")) for d in taken if d.step_id not in have and d.kind != "env"]
        if new:
            out[s.step_id] = list({d.step_id: d for d in new}.values())
    return out


__all__ = [
    "CARRIED_KEY",
    "CHOSE_KEY",
    "RETRIED_KEY",
    "WROTE_KEY",
    "carried_edges",
    "carried_keys",
    "carried_map",
    "control_edges",
    "env_edges",
    "retry_edges",
    "world_readers",
]
