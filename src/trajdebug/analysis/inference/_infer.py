"""Content inference of data dependencies: which earlier outputs reached a step's input.

Object identity is lost as soon as an agent serializes a value into a prompt,
so the recorder's tracked edges miss most of the data flow that matters for
LLM steps, and foreign traces have no edges at all.  This module recovers it
from content ("value fingerprinting", algorithms.md §7, layer 4): every
output is fingerprinted (`trajdebug.analysis.inference._fingerprint`) into an inverted
index, and every input probes it.  The cost is linear in the size of the
values, not in the number of step pairs.

Confidence of an edge from producer ``p`` into a consumer, given the atoms
``A`` of ``p``'s output found in the input (each atom ``a`` with intrinsic
weight ``w(a)``, held by ``m(a)`` eligible producers)::

    S = Σ_{a∈A} w(a) / m(a)                  evidence, shared among the producers that hold it
    C = Σ_{a∈A} w(a) / Σ_{a∈p} w(a)          coverage: the fraction of p's content found
    confidence = 1 - exp(-S · (1 + C))

So a long identifier or a ten-token quotation is good evidence on its own, the
whole of an output pasted into a prompt is near-certain, and a value that
many outputs share (a date, ``"success"``) counts for little; an atom held by
more than ``max_postings`` outputs is dropped as common, like a stop word.
Content that a producer merely echoed from its own input (a tool returning
its argument, an LLM quoting a document) is credited to the step it came
from when that step is a candidate too: the value's origin, not its relay.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import filterfalse
from operator import itemgetter
from typing import Any

from trajdebug.analysis.inference._fingerprint import (
    SHINGLE,
    SHINGLE_WEIGHT,
    VALUE_TAG,
    fingerprint_output,
    value_key,
)
from trajdebug.analysis.inference._probe import InputProbe, format_path, probe_input
from trajdebug.core.model import Dependency, Run, Step, replace


@dataclass(frozen=True, slots=True)
class Match:
    """An earlier output whose content was found in a value."""

    step_id: str
    """The producing step."""
    run_id: str | None
    """The producing step's run, as given to `ContentIndex.add_output` (None: the current run)."""
    confidence: float
    """Belief that the output flowed into the value, in [0, 1] (see the module docstring)."""
    evidence: str
    """What was found, in words (shared shingles, the strongest shared value, coverage)."""
    key: str | None = None
    """The path in the value where the strongest evidence sits (``messages[3].content``), if not the root."""
    order: int = 0
    """The producer's order, as given to `ContentIndex.add_output` (ties go to the most recent)."""


@dataclass(slots=True)
class _Producer:
    step_id: str
    run_id: str | None
    order: int
    weight: float


class ContentIndex:
    """An inverted index from content atoms to the outputs that hold them; add outputs, match inputs.

    Incremental: a recorder adds each output when its step ends and matches each
    input when its step starts.  Not thread-safe: one thread (or a lock) per index.

    Args:
        max_postings: an atom held by more outputs than this is common and ignored.
    """

    def __init__(self, *, max_postings: int = 24) -> None:
        self._max_postings = max_postings
        self._producers: list[_Producer] = []
        self._by_step: dict[str, list[int]] = {}
        # Atom key -> producer number (an int while there is one, then a list);
        # a negative number ~p marks content that producer p echoed from its input.
        self._postings: dict[int, int | list[int]] = {}
        self._common: set[int] = set()
        self._weights: dict[int, float] = {}  # value and number atoms; shingles weigh SHINGLE_WEIGHT
        # Where value atoms can start in an input: first token ids of indexed values.  One-token
        # values (identifiers, most of them) are a set, probed in bulk; longer ones map the first
        # token id to a bit mask of the lengths indexed for it.
        self._singles: set[int] = set()
        self._first: dict[int, int] = {}
        # When every input to be matched is known in advance (`infer_dependencies`): the atom
        # keys (shingles, numbers) and token ids of those inputs.  Atoms no input holds are
        # never looked up, so they are left out of the index: most atoms of most outputs.
        self._relevant: tuple[set[int], set[str]] | None = None

    def __len__(self) -> int:
        """The number of outputs added."""
        return len(self._producers)

    def add_output(
        self,
        step_id: str,
        value: Any,
        *,
        run_id: str | None = None,
        order: int | None = None,
        consumed: Any = None,
    ) -> None:
        """Index a step's output.

        Args:
            step_id: the producing step.
            value: its output (JSON data, marker dicts allowed).
            run_id: its run, for outputs of other runs (earlier conversation turns).
            order: its position, for ranking ties (default: the number of outputs added so far).
            consumed: its input (a value or an `InputProbe`): content of the output also found
                there is marked as echoed, credited to this step only when no step that produced
                it is a candidate.
        """
        self._add(step_id, value, run_id=run_id, order=order, consumed=consumed)

    def _add(
        self, step_id: str, value: Any, *, run_id: str | None, order: int | None, consumed: Any
    ) -> int | None:
        if value is None:
            return None
        fp = fingerprint_output(value, relevant=None if self._relevant is None else self._relevant[1])
        pid = len(self._producers)
        self._producers.append(_Producer(step_id, run_id, pid if order is None else order, fp.weight()))
        self._by_step.setdefault(step_id, []).append(pid)
        shingles, values = fp.shingles, fp.values
        if self._relevant is not None:
            keys = self._relevant[0]
            shingles = shingles & keys
            if values:  # value atoms are filtered by their first token already, numbers here
                values = {k: v for k, v in values.items() if v[2] or k in keys}
        echoed: set[int] = set()
        if consumed is not None:
            probe = consumed if isinstance(consumed, InputProbe) else probe_input(consumed)
            echoed = shingles.intersection(probe.hashes)
            if values:
                echoed |= _echoed_values(values, probe)
        atoms = shingles.union(values)
        if values:  # in bulk, in C: id-heavy outputs hold hundreds of value atoms
            self._weights.update(zip(values, map(itemgetter(0), values.values())))
            # Number atoms add first token id 0, which no token has: harmless.
            self._singles.update(map(itemgetter(1), values.values()))
            if max(map(itemgetter(2), values.values())) > 1:
                first = self._first
                for _w, tok, n in values.values():
                    if n > 1:
                        first[tok] = first.get(tok, 0) | (1 << n)
        postings, common, cap = self._postings, self._common, self._max_postings
        # Most atoms of a new output are new to the index: insert those in bulk (in C;
        # set algebra with the index's key view would copy the whole index).
        fresh = set(filterfalse(postings.__contains__, atoms))
        if common:
            fresh -= common
        if echoed:
            postings.update(dict.fromkeys(fresh - echoed, pid))
            postings.update(dict.fromkeys(fresh & echoed, ~pid))
        else:
            postings.update(dict.fromkeys(fresh, pid))
        for key in filterfalse(fresh.__contains__, atoms):
            if key in common:
                continue
            entry = ~pid if key in echoed else pid
            cur = postings[key]
            if isinstance(cur, int):
                postings[key] = [cur, entry]
            elif len(cur) < cap:
                cur.append(entry)
            else:  # held by too many outputs: a stop word of this corpus
                del postings[key]
                common.add(key)
        return pid

    def match(
        self,
        value: Any,
        *,
        exclude: Collection[str] = (),
        min_confidence: float = 0.0,
        limit: int | None = None,
    ) -> list[Match]:
        """Find the indexed outputs whose content appears in ``value``, most confident first.

        Args:
            value: an input (JSON data) or an `InputProbe` of one.
            exclude: step ids that are not candidates (running steps, ancestors); they also
                take no share of the evidence.
            min_confidence: drop matches below this confidence.
            limit: keep at most this many matches.
        """
        probe = value if isinstance(value, InputProbe) else probe_input(value)
        excluded = {p for sid in exclude for p in self._by_step.get(sid, ())}
        scored = self._score(probe, excluded, min_confidence)
        if limit is not None:
            scored = scored[:limit]
        return [self._to_match(probe, s) for s in scored]

    def _found(self, probe: InputProbe) -> dict[int, tuple[int, int]]:
        """Atom keys of the probe present in the index -> (token position, length; -1 shingle, 0 number)."""
        postings = self._postings
        hashes = probe.hashes
        # Filtered in C; a shingle's position (-1 here) is looked up only if it ends up the best evidence.
        found = dict.fromkeys(filter(postings.__contains__, hashes), (-1, -1))
        for key, (_canon, pos) in probe.numbers.items():
            if key in postings:
                found.setdefault(key, (pos, 0))
        # Value atoms can start at any token: probe only where an indexed value starts,
        # with the lengths indexed for that first token.  Hits are added in token order
        # (then by length), so the first occurrence of a value gives its position.
        ids = probe.ids
        hits: list[tuple[int, int, int]] = []
        singles = self._singles.intersection(ids)
        if singles:
            index: Callable[[int], int] = ids.index
            if len(singles) > 8:  # one pass for the first position of every token
                index = dict(zip(reversed(ids), range(len(ids) - 1, -1, -1))).__getitem__
            for tok in singles:
                key = hash((tok,)) ^ VALUE_TAG
                if key in postings:
                    hits.append((index(tok), 1, key))
        first = self._first
        starts = first.keys() & set(ids) if first else ()
        if starts:
            total = len(ids)
            for i, tok in enumerate(ids):
                if tok not in starts:
                    continue
                mask, n = first[tok] >> 2, 2
                while mask and i + n <= total:
                    if mask & 1:
                        key = value_key(ids[i : i + n])
                        if key in postings:
                            hits.append((i, n, key))
                    mask >>= 1
                    n += 1
        if hits:
            hits.sort()
            for i, n, key in hits:
                if key not in found:
                    found[key] = (i, n)
        return found

    def _score(self, probe: InputProbe, excluded: Collection[int], min_confidence: float) -> list[_Scored]:
        """The producers whose atoms were found, with confidence, most confident first (no evidence text)."""
        postings, weights = self._postings, self._weights
        # Per producer: evidence S, matched weight, shingles, values, best weight, best key, pos, length.
        acc: dict[int, list[Any]] = {}
        for key, (pos, n) in self._found(probe).items():
            cur = postings[key]
            entries = (cur,) if isinstance(cur, int) else cur
            holders = [p for p in entries if p >= 0 and p not in excluded]
            if not holders:  # only relays hold it: credit them
                holders = [~p for p in entries if p < 0 and ~p not in excluded]
                if not holders:
                    continue
            weight = SHINGLE_WEIGHT if n < 0 else weights[key]
            share = weight / len(holders)
            for p in holders:
                a = acc.get(p)
                if a is None:
                    a = acc[p] = [0.0, 0.0, 0, 0, -1.0, 0, 0, 0]
                a[0] += share
                a[1] += weight
                if n < 0:
                    a[2] += 1
                else:
                    a[3] += 1
                if weight > a[4]:
                    a[4], a[5], a[6], a[7] = weight, key, pos, n
        out: list[_Scored] = []
        producers = self._producers
        for rank, (p, (evidence, matched, shingles, values, _bw, best, pos, n)) in enumerate(acc.items()):
            prod = producers[p]
            coverage = min(1.0, matched / prod.weight) if prod.weight > 0 else 0.0
            confidence = round(1.0 - math.exp(-evidence * (1.0 + coverage)), 4)
            if confidence >= min_confidence:
                out.append((-confidence, -prod.order, rank, p, shingles, values, best, pos, n, coverage))
        out.sort()
        return out

    def _to_match(self, probe: InputProbe, scored: _Scored, *, evidence: bool = True) -> Match:
        """The `Match` of a scored producer; ``evidence=False`` leaves its text out (edges need none)."""
        neg_conf, _neg_order, _rank, p, shingles, values, best, pos, n, coverage = scored
        if pos < 0:
            pos = probe.hashes.index(best)
        prod = self._producers[p]
        return Match(
            step_id=prod.step_id,
            run_id=prod.run_id,
            confidence=-neg_conf,
            evidence=_describe(probe, shingles, values, best, pos, n, coverage) if evidence else "",
            key=format_path(probe.path_at(pos)),
            order=prod.order,
        )


_Scored = tuple[float, int, int, int, int, int, int, int, int, float]
"""A scored producer: (-confidence, -order, rank, producer, shingles, values, best key, position,
length, coverage); sorted, the most confident come first, ties to the most recent, then the first
found."""


def _echoed_values(values: dict[int, tuple[float, int, int]], probe: InputProbe) -> set[int]:
    """The value and number atoms of an output that are also in its step's input."""
    lengths = set(map(itemgetter(2), values.values()))
    pool: set[int] = set()
    for n in lengths:
        pool.update(probe.numbers if n == 0 else probe.value_keys(n))
    out: set[int] = set()
    for key in pool.intersection(values):  # a key of another length could only collide
        n = values[key][2]
        if key in probe.numbers if n == 0 else key in probe.value_keys(n):
            out.add(key)
    return out


def _describe(
    probe: InputProbe, shingles: int, values: int, best: int, pos: int, n: int, coverage: float
) -> str:
    # The example shown is the heaviest atom found: the text of a shingle, a value or a number.
    parts: list[str] = []
    if shingles:
        example = f" (e.g. {' '.join(probe.tokens[pos : pos + SHINGLE])!r})" if n < 0 else ""
        parts.append(f"{shingles} shared text shingle{'s' if shingles > 1 else ''}{example}")
    if values:
        example = ""
        if n == 0:
            example = f" (e.g. {probe.numbers[best][0]})"
        elif n > 0:
            example = f" (e.g. {' '.join(probe.tokens[pos : pos + n])!r})"
        parts.append(f"{values} shared value{'s' if values > 1 else ''}{example}")
    parts.append(f"{coverage:.0%} of its output")
    return ", ".join(parts)


_PROBE_BUDGET = 400_000
"""Input tokens `infer_dependencies` probes ahead of the sweep (about 40 MB of probes at most)."""


_CODE_KINDS = frozenset({"parse", "condition", "state", "output", "other"})
"""Kinds of steps the program computes itself (not a model, a tool or the world answering)."""


def _given(step: Step, parents: Collection[str]) -> Any:
    """What a step was given, to probe for earlier outputs: its input; for a code step that recorded none and
    encloses no steps (a ``with step(...)`` block building a record from the program's variables), its
    output, which is assembled from what it closed over: otherwise the values it passes on lose their lineage."""
    if step.input is not None:
        return step.input
    if step.kind in _CODE_KINDS and step.step_id not in parents and step.output is not None:
        return step.output
    return None


def _timed(step: Step) -> bool:
    return step.end_ns is not None and step.end_ns > 0


def infer_dependencies(
    run: Run,
    *,
    previous: Sequence[Run] = (),
    min_confidence: float = 0.35,
    max_edges_per_step: int = 8,
) -> Run:
    """Return a copy of ``run`` whose steps gain inferred edges from earlier outputs found in their inputs.

    A producer is a candidate for a consumer when it ended before the consumer
    started (``end_ns <= start_ns`` when both are known, else list order), is not
    the consumer itself and is not one of its ancestors: an enclosing agent is
    no data source for the steps inside it (its output is assembled from
    theirs), but a sibling's output is.
    Outputs of ``previous`` runs (earlier turns of the conversation) give
    ``kind="context"`` edges carrying their ``run_id``.  No edge duplicates an
    existing one for the same upstream step.

    Args:
        run: the run to annotate.
        previous: the runs it continues, any order.
        min_confidence: the least confidence for an edge.
        max_edges_per_step: the most inferred edges per step (the most confident).
    """
    parents = {s.parent_id for s in run.steps if s.parent_id is not None}
    probes, index, order = _prepared_index(run, previous, parents)
    by_id = {s.step_id: s for s in run.steps}
    pids: dict[str, int] = {}
    running: list[tuple[int, int]] = []  # (end_ns, producer) of timed steps that may still run
    still_running: set[int] = set()
    new_steps: list[Step] = []
    changed = False
    # Outputs of the steps from the last one with an input on are never read: not indexed.
    last_reader = max((i for i, s in enumerate(run.steps) if _given(s, parents) is not None), default=-1)
    for i, s in enumerate(run.steps):
        probe = probes[i]
        given = _given(s, parents) if probe is None else None
        if given is not None:
            probe = probe_input(given)
        probes[i] = None  # dropped as the sweep goes
        added: list[Dependency] = []
        if probe is not None and (probe.hashes or probe.ids or probe.numbers):
            timed = s.start_ns > 0
            if timed:
                while running and running[0][0] <= s.start_ns:
                    still_running.discard(heapq.heappop(running)[1])
            excluded = set(still_running) if timed else set()
            excluded |= _ancestor_producers(s, by_id, pids)
            scored = index._score(probe, excluded, min_confidence)
            limit = max_edges_per_step
            if len(scored) > limit:
                # A step given a whole conversation or state has more producers than the cap, and the
                # earliest ones match best (every later message repeats them): the latest producer, what
                # the step was handed last, is kept past the cap.
                latest = min(scored, key=lambda m: m[1])
                if latest not in scored[:limit]:
                    # The rest stays behind it: `_edges` skips recorded producers, and the next-best fills in.
                    rest = [m for m in scored[limit:] if m is not latest]
                    scored, limit = [*scored[:limit], latest, *rest], limit + 1
            # Matches are made lazily, without evidence text: most steps keep only a few.
            matches = (index._to_match(probe, m, evidence=False) for m in scored)
            added = _edges(run, s, matches, by_id, min_confidence, limit)
        if added:
            changed = True
            new_steps.append(replace(s, deps=(*s.deps, *added)))
        else:
            new_steps.append(s)
        if i >= last_reader:
            continue
        pid = index._add(s.step_id, s.output, run_id=None, order=order, consumed=probe)
        order += 1
        if pid is not None:
            pids[s.step_id] = pid
            if s.end_ns is not None and s.end_ns > 0:
                heapq.heappush(running, (s.end_ns, pid))
                still_running.add(pid)
    return replace(run, steps=tuple(new_steps)) if changed else run


def _prepared_index(
    run: Run, previous: Sequence[Run], parents: Collection[str]
) -> tuple[list[InputProbe | None], ContentIndex, int]:
    """Every input probed, the index restricted to what some input holds, the earlier turns' outputs in it;
    and the order the run's own outputs continue from."""
    # Inputs are probed first, so the index can keep only the atoms some input holds (most
    # atoms of id-heavy outputs are in no input).  Probes are kept for the sweep, up to a
    # budget; past it, the rest are probed during the sweep and nothing is filtered.
    probes: list[InputProbe | None] = [None] * len(run.steps)
    keys: set[int] = set()
    tokens: set[str] = set()
    budget = _PROBE_BUDGET
    for i, s in enumerate(run.steps):
        given = _given(s, parents)
        if given is None:
            continue
        ahead = probes[i] = probe_input(given)
        budget -= len(ahead.tokens)
        if budget < 0:
            break
        keys.update(ahead.hashes)
        keys.update(ahead.numbers)
        tokens.update(ahead.tokens)
    index = ContentIndex()
    if budget >= 0:
        index._relevant = (keys, tokens)
    del keys, tokens
    order = 0
    for prev in previous:
        if prev.run_id == run.run_id:
            continue
        for s in prev.steps:
            index._add(s.step_id, s.output, run_id=prev.run_id, order=order, consumed=s.input)
            order += 1
    return probes, index, order


def _ancestor_producers(s: Step, by_id: Mapping[str, Step], pids: Mapping[str, int]) -> set[int]:
    """The producer ids of a step's ancestors (cycle-safe): an enclosing step is no data source for its children."""
    out: set[int] = set()
    parent, seen = s.parent_id, {s.step_id}
    while parent is not None and parent not in seen:
        seen.add(parent)
        if parent in pids:
            out.add(pids[parent])
        up = by_id.get(parent)
        parent = up.parent_id if up is not None else None
    return out


def _edges(
    run: Run,
    consumer: Step,
    matches: Iterable[Match],
    by_id: dict[str, Step],
    min_confidence: float,
    limit: int,
) -> list[Dependency]:
    existing = {(d.step_id, None if d.run_id == run.run_id else d.run_id) for d in consumer.deps}
    out: list[Dependency] = []
    for m in matches:
        if len(out) >= limit or m.confidence < min_confidence:
            break
        if (m.step_id, m.run_id) in existing or (m.run_id is None and m.step_id == consumer.step_id):
            continue
        if m.run_id is None:
            producer = by_id.get(m.step_id)
            # Re-check eligibility: steps out of start order can slip past the sweep.
            if producer is None or (
                _timed(producer)
                and consumer.start_ns > 0
                and producer.end_ns is not None
                and producer.end_ns > consumer.start_ns
            ):
                continue
        out.append(
            Dependency(
                step_id=m.step_id,
                kind="data" if m.run_id is None else "context",
                origin="inferred",
                confidence=m.confidence,
                key=m.key,
                run_id=m.run_id,
            )
        )
        existing.add((m.step_id, m.run_id))
    return out


def previous_turns(run: Run, runs: Iterable[Run]) -> tuple[Run, ...]:
    """The runs ``run`` continues, following ``Run.continues`` back to the first turn (oldest first)."""
    by_id = {r.run_id: r for r in runs}
    chain: list[Run] = []
    seen = {run.run_id}
    prev = run.continues
    while prev is not None and prev not in seen and prev in by_id:
        seen.add(prev)
        chain.append(by_id[prev])
        prev = by_id[prev].continues
    return tuple(reversed(chain))


__all__ = ["ContentIndex", "Match", "infer_dependencies", "previous_turns"]
