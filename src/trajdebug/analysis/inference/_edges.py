"""Edges the recorder could not see, added before the search: flows by equal content, values a failure names, earlier turns.

The recorder tracks values by identity and content inference
(`trajdebug.analysis.inference._infer`) finds copied text and numbers.  What is still
missing, and what is too much:

* `structural_edges`: an argument equal, object for object, to an earlier
  step's whole (parsed) output: ``json.loads`` of a model's reply, a dict
  rebuilt field by field.
* `entry_edges`: a map entry (``{"B-17": 3}``) a step was given, built from an
  earlier step's record output (``{"id": "B-17", "priority": 3}``) re-keyed.
* `answer_edges`: a word a model's answer introduced, handed on as a field's value.
* `item_edges`: a list of small items (``[1, "port"]``) a later step's calls took, each in turn, as their
  arguments: a loop over the list.
* `named_edges` (in `_named`): a failure whose message names a value is linked to where
  that value came from (origin tracking from the failure message, as a
  debugger reads an assertion's message to find who set the bad value).
* `thin_inferred`: inferred edges that skip a path the run already has are
  dropped (a transitive reduction), so the search does not jump over the
  relays where a value may have been corrupted.
* `with_context`: the run with its earlier conversation turns in front, so
  the search can follow ``context`` edges into them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.inference._fingerprint import RECORD_FIELDS, RecordIndex, record_items, source_record
from trajdebug.core.graph import WHOLE_INPUT_KEY
from trajdebug.core.model import Dependency, Run, Step
from trajdebug.core.values import is_mapping


_MIN_BUDGET = 1 << 17
"""Dependencies the thinning's walks may read in any run, however short (a tenth of a second at most)."""


def thin_inferred(run: Run, *, limit: int = 512, budget: int = 16, short: int = 16) -> Run:
    """Drop inferred edges that skip over a path the run already has.

    Content inference finds a value in every later input that repeats it, so a
    step gets edges both to the step it read the value from and to the step
    that produced it first (a plan's categories show up in the SQL, the rows,
    the report).  An inferred edge ``c -> p`` is redundant when ``p`` is
    reachable from another of ``c``'s inputs: the value travelled that way, and
    the direct edge would let the search skip the relays where it may have been
    corrupted (transitive reduction, as in thin slicing).  The walk from the
    other inputs stops at steps that started before ``p`` (edges go back in
    time) and after ``limit`` steps, keeping the edge when in doubt.

    The walks of the whole run read at most ``budget`` dependencies per step of the run (and at least
    `_MIN_BUDGET`, so a run of a few thousand steps is thinned exactly): an edge that skips
    thousands of steps (a number that recurs by chance in a long run) costs a walk of up to ``limit``
    steps, and such coincidences grow with the run, so without the run-wide budget the thinning grows
    quadratically until every walk hits ``limit``.  Past the budget a walk stops after ``short`` steps
    (a relay next to the step is still found; a path thousands of steps long is not, and the edge is
    kept, in doubt); runs whose walks stay within the budget are thinned exactly as without it.

    A ``context`` edge past the first hop relays nothing: it says a step was made after reading another (a
    customer's reply to an assistant message, an imported turn order), not that its output carries that
    step's value, so no walk goes on through one.  An assistant turn that read the whole conversation keeps
    its edge to the turn before the customer's reply: a correct reply clears nothing the turn read beside it
    (nu65: a truthful "right" about the customer's complaint proved the turn after it the root).
    """
    pos = {s.step_id: i for i, s in enumerate(run.steps)}
    left = max(budget * len(run.steps), _MIN_BUDGET)
    deps_of = {s.step_id: s.deps for s in run.steps}
    rid = run.run_id
    changed = False
    out: list[Step] = []
    for st in run.steps:
        inferred = [d for d in st.deps if d.origin == "inferred" and d.run_id in (None, rid)]
        if not inferred or len(st.deps) < 2:
            out.append(st)
            continue
        drop: set[int] = set()
        for i, d in enumerate(st.deps):
            if d.origin != "inferred" or d.run_id not in (None, rid) or d.step_id not in pos:
                continue
            floor = pos[d.step_id]
            stack = [
                o.step_id
                for j, o in enumerate(st.deps)
                if j != i and j not in drop and o.run_id in (None, rid) and pos.get(o.step_id, -1) > floor
            ]
            seen = set(stack)
            found = False
            cap = limit if left > 0 else short
            while stack and not found and len(seen) <= cap:
                deps = deps_of.get(stack.pop(), ())
                left -= len(deps)
                for o in deps:
                    if o.kind == "context":
                        continue  # read, not relayed (see above)
                    q = o.step_id
                    if q == d.step_id:
                        found = True
                        break
                    if q not in seen and o.run_id in (None, rid) and pos.get(q, -1) > floor:
                        seen.add(q)
                        stack.append(q)
            if found:
                drop.add(i)
        if drop:
            changed = True
            out.append(replace(st, deps=tuple(d for i, d in enumerate(st.deps) if i not in drop)))
        else:
            out.append(st)
    return replace(run, steps=tuple(out)) if changed else run


def _with_deps(run: Run, added: Mapping[str, Sequence[Dependency]]) -> Run:
    """The run with ``added[step_id]`` appended to each step's dependencies (the run itself when none)."""
    if not added:
        return run
    return replace(
        run,
        steps=tuple(
            replace(s, deps=(*s.deps, *added[s.step_id])) if s.step_id in added else s for s in run.steps
        ),
    )


def _canonical(value: Any, *, single: bool = False) -> str | None:
    """A structured value's canonical JSON, when it is telling enough to identify a flow (20+ characters).
    ``single``: a record of one field counts too (a whole output, `_output_keys`)."""
    if not (isinstance(value, list) or is_mapping(value)) or len(value) < (1 if single else 2) or content.is_marker(value):
        return None
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return None
    return text if len(text) >= 20 else None


def _sub_values(value: Any, path: str = "", depth: int = 0) -> Iterable[tuple[str, Any]]:
    if depth > 3 or content.is_marker(value):
        return
    if is_mapping(value):
        if depth:
            yield path, value
        for k, v in value.items():
            yield from _sub_values(v, f"{path}.{k}" if path else str(k), depth + 1)
    elif isinstance(value, list):
        if depth:
            yield path, value
        for i, v in enumerate(value[:50]):
            yield from _sub_values(v, f"{path}[{i}]", depth + 1)


def structural_edges(run: Run, *, confidence: float = 0.9, part: float = 0.7, record: float = 0.6) -> Run:
    """Edges from a step to an earlier one whose whole (parsed) output, or a list or object inside it, is an
    argument of it, by equal content.

    ``json.loads`` of a model's reply, a dict rebuilt field by field, a list
    copied: the value is new (no identity to track) but equal to an earlier
    output, object for object.  Content inference credits such a value's
    parts to where each part began; this edge names the step that assembled it.
    A list or object found inside an earlier output (a retrieval's
    ``row.donor_types`` handed on as ``types``) links at ``part`` confidence:
    short text items (blood types, codes) are too short for content inference
    one by one, but the same items in the same order are a copy.
    A small flat record whose every field an argument object holds (same name, same value) links at
    ``record`` confidence: a parsed choice ``{"pick": "T04"}`` merged into the next call's arguments.
    """
    latest: dict[str, tuple[Step, float]] = {}
    records: RecordIndex[Step] = RecordIndex()
    by_id = {s.step_id: s for s in run.steps}
    # A one-field answer that several steps give alike (``{"status": "success"}``) is an acknowledgement
    # calls share, no datum of one of them: it is no key (the latest step answering it would win).
    alike = Counter(k for s in run.steps if (k := _one_field(s.output)) is not None)
    shared = {k for k, n in alike.items() if n > 1}
    enclosing = {s.parent_id for s in run.steps if s.parent_id is not None}
    added: dict[str, list[Dependency]] = {}
    pending: list[tuple[int, Step, list[tuple[str, float]], frozenset[tuple[str, str]] | None]] = []
    for st in run.steps:
        # Outputs of steps that ended before this one started become sources.
        keep = []
        for end, done, keys, rec in pending:
            if end <= st.start_ns or not st.start_ns or not end:
                for k, conf in keys:
                    latest[k] = (done, conf)
                if rec is not None:
                    records.add(rec, done.end_ns or 0, done)
            else:
                keep.append((end, done, keys, rec))
        pending = keep
        anc: set[str] = set()
        cur = st.parent_id
        while cur is not None and cur in by_id and cur not in anc:
            anc.add(cur)
            cur = by_id[cur].parent_id
        have = {d.step_id for d in st.deps}
        # The whole input too: an enclosing step opened with one record of an earlier output as its
        # input (a loop over a plan's items) is given every field of it at once.  Only a step that encloses
        # others: a leaf call handed the record is linked by its fields, else every call given a plan's
        # records would hang on the plan whole and outweigh what it really used (the fault suite's
        # `research-team`, 2026-12-04).
        whole = [(WHOLE_INPUT_KEY, st.input)] if st.step_id in enclosing or st.kind == "agent" else []
        for path, sub in [*whole, *_sub_values(st.input)]:
            found = _canonical(sub, single=is_mapping(sub))
            hit = latest.get(found) if found is not None else None
            if hit is None:
                continue
            prod, conf = hit
            if prod.step_id in have or prod.step_id in anc or prod.step_id == st.step_id:
                continue
            have.add(prod.step_id)
            added.setdefault(st.step_id, []).append(Dependency(prod.step_id, "data", "inferred", conf, path))
        for path, prod in _record_sources(st.input, records):
            if prod.step_id not in have and prod.step_id not in anc and prod.step_id != st.step_id:
                have.add(prod.step_id)
                added.setdefault(st.step_id, []).append(Dependency(prod.step_id, "data", "inferred", record, path or None))
        keys = _output_keys(st.output, confidence, part, shared)
        rec = source_record(st.output)
        if (keys or rec) and st.kind != "agent":
            pending.append((st.end_ns or 0, st, keys, rec))
    return _with_deps(run, added)


def _record_sources(value: Any, records: RecordIndex[Step]) -> Iterable[tuple[str, Step]]:
    """(path, producer) for each argument object of ``value`` holding every field of an earlier record output
    (`record_items`; the latest such record): `structural_edges`."""
    if isinstance(value, str) and content.looks_like_json(value):
        value = content.parse_json(value)
    for path, sub in [("", value), *_sub_values(value)] if records else ():
        items = record_items(sub, RECORD_FIELDS * 4, whole=False)
        best = records.latest(items) if items else None
        if best is not None:
            yield path, best


def _output_keys(out: Any, whole: float, part: float, shared: AbstractSet[str] = frozenset()) -> list[tuple[str, float]]:
    """The canonical forms an output offers as arguments, each with its edge's confidence: the whole
    output (and its parsed JSON text), then the lists and objects inside it, two levels deep.  ``shared``: the
    one-field answers several steps give alike, which are none (`_one_field`)."""
    values = [out]
    if isinstance(out, str) and content.looks_like_json(out):
        values.append(content.parse_json(out))
    keys: list[tuple[str, float]] = []
    seen: set[str] = set()
    for v in values:
        # A whole answer of one field (a warranty lookup's ``{"covered_until": null}``, handed on whole as
        # ``warranty``) is as telling as a longer one: its field's name says what it is (round 42).
        k = _canonical(v) if not (is_mapping(v) and len(v) == 1) else one if (one := _one_field(v)) not in shared else None
        if k and k not in seen:
            seen.add(k)
            keys.append((k, whole))
    for v in values:
        for _, sub in _sub_values(v):
            k = _canonical(sub) if isinstance(sub, (Mapping, list)) and _shallow(sub) else None
            if k and k not in seen:
                seen.add(k)
                keys.append((k, part))
    return keys


def _one_field(value: Any) -> str | None:
    """A one-field record's canonical form, when it holds a datum: a yes/no under one field (``{"sent": true}``)
    acknowledges a call, and a null under a named field (a lookup's ``{"covered_until": null}``) stays one."""
    if not is_mapping(value) or len(value) != 1 or isinstance(next(iter(value.values())), bool):
        return None
    return _canonical(value, single=True)


def _shallow(value: Any) -> bool:
    """A list of scalars or an object of scalars: a part small enough to have been handed on as one value."""
    items = value.values() if is_mapping(value) else value
    return all(not (isinstance(v, list) or is_mapping(v)) for v in items)


_Scalar = str | int | float


def _scalar(v: Any) -> _Scalar | None:
    """A scalar as a lookup key (strings case-folded), None for what names no value (booleans, nulls, long text)."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, str):
        t = v.strip().lower()
        return t if 0 < len(t) <= 80 else None
    if isinstance(v, (int, float)):
        return float(v)
    return None


def _entry_value(v: Any) -> _Scalar | None:
    """A map entry's value as a lookup key: a scalar (`_scalar`), or a short list or object of scalars by its
    canonical JSON (a loop's ``crews[tower] = picked``: the record ``{"tower": ..., "crew": [...]}`` re-keyed)."""
    if (isinstance(v, list) or is_mapping(v)) and 0 < len(v) <= 40 and _shallow(v):
        # (Paired with the key, a short list says enough: no length floor as for a value alone.)
        try:
            return "\x1f" + json.dumps(v, sort_keys=True, separators=(",", ":"), default=str)
        except (TypeError, ValueError):
            # Keys of mixed types (an in-memory run's ``{1: ..., "spare": ...}``) have no sorted order: no key.
            return None
    return _scalar(v)


def _record_pairs(out: Any) -> list[tuple[str, _Scalar]]:
    """(a field's text value, another field's value) for every pair of fields of a record output: scalars, and
    short lists or objects of scalars (`_entry_value`)."""
    if not isinstance(out, Mapping) or len(out) > 40 or content.is_marker(out):
        return []
    scalars = [(k, _entry_value(v)) for k, v in out.items()]
    pairs: list[tuple[str, _Scalar]] = []
    for k, key in scalars:
        if not isinstance(key, str) or len(key) < 2:
            continue
        pairs.extend((key, v) for k2, v in scalars if k2 != k and v is not None)
    return pairs


def entry_edges(run: Run, *, confidence: float = 0.7, limit: int = 64) -> Run:
    """Edges from the steps whose record outputs became entries of a map a later step was given.

    A loop that keeps a memory or an index (``memory[item["id"]] = item["priority"]``) turns each
    step's record into one entry of a map that grows from call to call and is handed on whole: the
    entry ``{"B-17": 3}`` is the record ``{"id": "B-17", "priority": 3}`` re-keyed.  No text of the
    record survives (a key and a small number), so content inference cannot see the flow; the pair
    does: the latest earlier step whose output record holds the entry's key as one field's value and
    its value as another's produced the entry.
    """
    latest: dict[tuple[str, _Scalar], Step] = {}
    by_id = {s.step_id: s for s in run.steps}
    added: dict[str, list[Dependency]] = {}
    pending: list[tuple[int, Step, list[tuple[str, _Scalar]]]] = []
    for st in run.steps:
        keep = []
        for end, done, pairs in pending:
            if end <= st.start_ns or not st.start_ns or not end:
                latest.update(dict.fromkeys(pairs, done))
            else:
                keep.append((end, done, pairs))
        pending = keep
        if latest:
            new = _entry_producers(st, latest, by_id, confidence, limit)
            if new:
                added[st.step_id] = new
        pairs = _record_pairs(st.output) if st.kind != "agent" else []
        if pairs:
            pending.append((st.end_ns or 0, st, pairs))
    return _with_deps(run, added)


ITEM_KEY = "item:"
"""Prefix of the ``key`` of an item edge (`item_edges`); the list's field follows (empty for a list output)."""
_MIN_LOOP = 3
"""Items a list must hold, every one answered by a call in turn, before the calls count as a loop over it: two
small items in order recur by chance."""
_MAX_LISTS = 64
"""Lists tried per run, a bound on the work."""


def _leaf(v: Any) -> str | None:
    """A scalar as a comparable token (``1`` and ``1.0`` alike); None for a container or a missing value."""
    if v is None or isinstance(v, (list, dict)) or is_mapping(v):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return f"{type(v).__name__ if isinstance(v, (bool, str)) else 'n'}:{v}"


def _item_tokens(item: Any) -> frozenset[str] | None:
    """The scalars of one list item, a tuple (``[1, "port"]``), two or more, or None.  A record item is left to
    the structural and entry edges, which read its fields by name (a call handed a record of a plan is linked
    where its fields say it is)."""
    vals = item if isinstance(item, list) else None
    if vals is None or len(vals) > 12:
        return None
    toks = [_leaf(v) for v in vals]
    if any(t is None for t in toks) or len(set(toks)) < 2:
        return None
    return frozenset(t for t in toks if t is not None)


def _given_tokens(value: Any, depth: int = 0) -> set[str]:
    """The scalars of a step's input, two levels deep."""
    if depth > 2:
        return set()
    if is_mapping(value):
        value = list(value.values())
    if isinstance(value, list):
        out: set[str] = set()
        for v in value[:64]:
            out |= _given_tokens(v, depth + 1)
        return out
    t = _leaf(value)
    return {t} if t is not None else set()


def _item_lists(out: Any) -> list[tuple[str, list[frozenset[str]]]]:
    """(field, the items' scalars) of each list of small tuples an output is or holds at its top level."""
    found = [("", out)] if isinstance(out, list) else [(str(k), v) for k, v in out.items()] if is_mapping(out) else []
    lists = []
    for field, v in found:
        if isinstance(v, list) and _MIN_LOOP <= len(v) <= 200:
            items = [_item_tokens(x) for x in v]
            if all(x is not None for x in items) and len(set(items)) == len(items):
                lists.append((field, [x for x in items if x is not None]))
    return lists


def _walked(group: Sequence[Step], items: Sequence[frozenset[str]], tokens: dict[str, set[str]]) -> Sequence[Step]:
    """The consecutive calls of ``group`` that took ``items`` one each, in order, as their arguments; empty when
    none did.  A value every call of the group was given (a constant option, ``retries=3``) tells no item from
    another: an item must hold one value that not every call was given, or a fetch loop with fixed small
    settings would take every item of a list of small pairs."""
    for s in group:
        if s.step_id not in tokens:
            tokens[s.step_id] = _given_tokens(s.input)
    const = set.intersection(*(tokens[s.step_id] for s in group))
    for start in range(len(group) - len(items) + 1):
        if all(items[j] - const and items[j] <= tokens[group[start + j].step_id] for j in range(len(items))):
            return group[start : start + len(items)]
    return ()


def item_edges(run: Run, *, confidence: float = 0.7) -> Run:
    """Edges from a step whose output is a list of small tuples (``[[1, "port"], [2, "port"], ...]``) to the calls
    of one later step that took those items, every one in turn, as their arguments: a loop over the list.  An
    item of small numbers and short words carries no text content inference can trace, but a whole list walked
    by consecutive calls in its order, each told apart by the item it took (`_walked`), is no chance (the plan a loop ran, and each call one of its items)."""
    tried = 0
    tokens: dict[str, set[str]] = {}
    added: dict[str, list[Dependency]] = {}
    for i, src in enumerate(run.steps):
        if src.kind == "agent" or src.status != "ok" or tried >= _MAX_LISTS:
            continue
        for field, items in _item_lists(src.output):
            tried += 1
            calls: dict[tuple[str, str], list[Step]] = {}
            for s in run.steps[i + 1 :]:
                calls.setdefault((s.name, s.kind), []).append(s)
            for group in calls.values():
                if len(group) < len(items):
                    continue
                got = _walked(group, items, tokens)
                if got:
                    for s in got:
                        if all(d.step_id != src.step_id for d in s.deps):
                            dep = Dependency(src.step_id, kind="data", origin="inferred", confidence=confidence, key=ITEM_KEY + field)
                            added.setdefault(s.step_id, []).append(dep)
    return _with_deps(run, added)


def _entry_producers(
    st: Step, latest: Mapping[tuple[str, _Scalar], Step], by_id: Mapping[str, Step], confidence: float, limit: int
) -> list[Dependency]:
    """The producers of the map entries in one step's input (`entry_edges`), one edge per producer."""
    anc: set[str] = set()
    cur = st.parent_id
    while cur is not None and cur in by_id and cur not in anc:
        anc.add(cur)
        cur = by_id[cur].parent_id
    have = {d.step_id for d in st.deps} | anc | {st.step_id}
    out: list[Dependency] = []
    for path, sub in _sub_values(st.input):
        if not isinstance(sub, Mapping):
            continue
        for k, v in list(sub.items())[:200]:
            key, val = _scalar(k) if isinstance(k, str) else None, _entry_value(v)
            prod = latest.get((key, val)) if isinstance(key, str) and val is not None else None
            if prod is None or prod.step_id in have:
                continue
            have.add(prod.step_id)
            out.append(Dependency(prod.step_id, "data", "inferred", confidence, f"{path}.{k}"))
            if len(out) >= limit:
                return out
    return out


_WORD = re.compile(r"[^\W\d_][\w-]{2,39}")
"""A word a model may answer with and a step take as a field's whole value (a track, a category, a label)."""


def _words_of(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def answer_edges(run: Run, *, confidence: float = 0.6, limit: int = 8) -> Run:
    """Edges from the model call whose answer introduced a word a later step was given as a field's value.

    A model that answers ``B-17: routine, post 15 t`` chose ``routine``; the agent parses the word out and
    hands it on (``{"track": "routine"}``).  One word is too short for content inference, and a loop's
    calls all answer with the same few words, so the index drops them as common.  The latest earlier
    model answer that wrote the word without having been given it is where the value was chosen.
    """
    from trajdebug.analysis.lineage import semantic

    latest: dict[str, Step] = {}
    by_id = {s.step_id: s for s in run.steps}
    added: dict[str, list[Dependency]] = {}
    pending: list[tuple[int, Step, set[str]]] = []
    for st in run.steps:
        keep = []
        for end, done, words in pending:
            if end <= st.start_ns or not st.start_ns or not end:
                latest.update(dict.fromkeys(words, done))
            else:
                keep.append((end, done, words))
        pending = keep
        if latest and st.input is not None:
            new = _answer_producers(st, latest, by_id, confidence, limit)
            if new:
                added[st.step_id] = new
        if st.kind == "llm" and st.output is not None:
            given = _words_of(content.text_of(semantic(st, st.input)))
            words = _words_of(content.text_of(semantic(st, st.output))) - given
            if words:
                pending.append((st.end_ns or 0, st, words))
    return _with_deps(run, added)


def _answer_producers(
    st: Step, latest: Mapping[str, Step], by_id: Mapping[str, Step], confidence: float, limit: int
) -> list[Dependency]:
    """The model calls that chose the one-word field values of one step's input (`answer_edges`)."""
    anc: set[str] = set()
    cur = st.parent_id
    while cur is not None and cur in by_id and cur not in anc:
        anc.add(cur)
        cur = by_id[cur].parent_id
    have = {d.step_id for d in st.deps} | anc | {st.step_id}
    out: list[Dependency] = []
    for path, v in content.leaves(st.input):
        if not isinstance(v, str) or not _WORD.fullmatch(v.strip()):
            continue
        prod = latest.get(v.strip().lower())
        if prod is None or prod.step_id in have:
            continue
        have.add(prod.step_id)
        out.append(Dependency(prod.step_id, "data", "inferred", confidence, path or None))
        if len(out) >= limit:
            break
    return out


def with_context(run: Run, previous: Sequence[Run]) -> tuple[Run, dict[str, tuple[str, str]]]:
    """The run with the steps of its earlier turns in front, for the search to follow ``context`` edges.

    Diagnosers see the earlier turns too (an environment read that changed
    since the previous turn, a decision unlike the earlier ones).

    Edges into an earlier turn become edges of the combined run (their kind,
    ``context``, is kept: it carries its own weight in the search).  A step id
    an earlier turn shares with a later one is relabelled ``<run>:<id>``.
    Returns the combined run and, for each step of an earlier turn, its
    ``(run_id, step_id)``.
    """
    earlier = [r for r in previous if r.run_id != run.run_id]
    if not earlier:
        return run, {}
    origin: dict[str, tuple[str, str]] = {}
    label: dict[tuple[str, str], str] = {}
    taken = {s.step_id for s in run.steps}
    for r in earlier:
        for st in r.steps:
            new_id = st.step_id if st.step_id not in taken else f"{r.run_id[:12]}:{st.step_id}"
            taken.add(new_id)
            label[(r.run_id, st.step_id)] = new_id
            origin[new_id] = (r.run_id, st.step_id)

    def relink(st: Step, own: str) -> Step:
        deps = []
        for d in st.deps:
            rid = own if d.run_id is None else d.run_id
            new_id = label.get((rid, d.step_id)) if rid != run.run_id else d.step_id
            if new_id is not None:
                deps.append(replace(d, step_id=new_id, run_id=None))
        parent = st.parent_id if own == run.run_id else label.get((own, st.parent_id or ""))
        return replace(
            st, step_id=label.get((own, st.step_id), st.step_id), deps=tuple(deps), parent_id=parent
        )

    steps = [relink(st, r.run_id) for r in earlier for st in r.steps]
    steps += [relink(st, run.run_id) for st in run.steps]
    return replace(run, steps=tuple(steps)), origin


__all__ = ["ITEM_KEY", "item_edges", "structural_edges", "thin_inferred", "with_context"]
