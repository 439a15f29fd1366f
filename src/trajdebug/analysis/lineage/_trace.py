"""Value lineage of one run: where each value came from, and who let one go.

Dynamic taint tracking at the granularity of values (Newsome & Song, NDSS
2005) computed after the fact from what was recorded: a value *originates* at
the earliest step whose output holds it while its input does not ("where"
provenance, Buneman, Khanna & Tan, ICDT 2001); every later holder only passed
it on.  Following a failure's values to their origins is thin slicing
(Sridharan, Fink & Bodík, PLDI 2007): only the steps that produced a value are
followed, not every step that handled it.

Two refinements keep relays transparent:

- an enclosing step (an agent, a graph node) is given its children's outputs
  as well as its own input, so it never "introduces" what a child produced;
- a number that a step computed from the numbers it was given (a sum, a
  difference, a product or ratio of two, a count, an extreme) is *derived*: its
  origin is the origin of its operands (`Lineage.operands`).

Value edges.  Identity tracking at record time cannot follow small values
(numbers, short strings) and imported traces carry few edges; `value_edges`
links each step to the latest earlier step whose output held a value its input
holds, as an ``inferred`` data edge whose confidence grows with how rare the
value is in the run.

Unread outputs.  A recorder may carry only part of what a step read (an OTLP
span whose ``input.value`` holds one argument of several, a function reading
a closure or a program variable): `unread_edges` links the outputs no step
consumed to the next local computation, under the same enclosing step, that
returned more values than it was given, as ``inferred`` data edges.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Container, Iterable
from dataclasses import dataclass
from typing import Any

from trajdebug.analysis.lineage._anomalies import GENERIC_FIELDS
from trajdebug.analysis.lineage._derivation import Derivation, derivation, fits_formula, formulas, operands
from trajdebug.analysis.lineage._key_paths import field_of, last_name, part_of, value_at
from trajdebug.analysis.lineage._reads import named_reads
from trajdebug.analysis.lineage._records import keyed_first, record_lists
from trajdebug.analysis.lineage._views import (
    StepView,
    _has_word,
    failure_atoms,
    held_before,
    seen_index,
    step_views,
    trivial,
)
from trajdebug.core.graph import WHOLE_INPUT_KEY
from trajdebug.core.model import CONTAINER_KINDS, Dependency, Run, Step
from trajdebug.core.values import Atom, atoms


MAX_PRODUCERS = 64
"""Above this many holders, a value is too common to say where it came from."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a value came from."""

    step_id: str | None
    """The step that introduced it, or None when the run was given it (a task, a user message)."""
    atom: Atom
    """The value as that step produced it (or as the consumer held it, when external)."""
    derived_from: tuple[Atom, ...] = ()
    """When the introducing step computed it from numbers it was given: those operands."""

_WORDS = re.compile(r"[\w][\w-]*")


class Lineage:
    """The value lineage of one run.

    Args:
        run: The run (steps in start order).
        children: Step id -> the ids of its child steps (an enclosing step is
            given its children's outputs).
    """

    def __init__(self, run: Run, children: dict[str, list[str]] | None = None) -> None:
        self.run = run
        self.pos: dict[str, int] = {s.step_id: i for i, s in enumerate(run.steps)}
        self.views: dict[str, StepView] = step_views(run, children)
        self._named: dict[str, set[str]] = {}  # step id -> the values it read by name (`named_reads`)
        for sid, named in named_reads(run.steps, self.views, run.metadata.get("source_format")).items():
            # A span that recorded part of its input read these by name: given, and linked to their holders
            # (not a number it computed from what it was given, which equals another item's by chance).
            read = [a for a in named if not operands(self.views[sid], a)]
            self.views[sid].inputs.extend(read)
            self.views[sid].in_keys.update(a.key for a in read)
            self._named[sid] = {a.key for a in read}
        self.steps = run.steps
        self._words: dict[str, list[int]] | None = None
        self._given: dict[tuple[str, str], int] | None = None
        self._seen = seen_index(self.views[s.step_id] for s in run.steps)  # (`held_before`)
        self._parent = {s.step_id: s.parent_id for s in run.steps}
        self._holders: dict[str, list[int]] = {}
        for i, s in enumerate(run.steps):
            v = self.views[s.step_id]
            for k in v.out_keys | v.out_spans:
                self._holders.setdefault(k, []).append(i)

    # -- queries ----------------------------------------------------------------

    def view(self, step_id: str) -> StepView:
        """The step's input and output values."""
        return self.views[step_id]

    def holders(self, key: str, before: int | None = None) -> list[int]:
        """Positions of the steps whose output holds the value, in start order (before ``before``)."""
        lst = self._holders.get(key, [])
        return lst if before is None else lst[: bisect.bisect_left(lst, before)]

    def rarity(self, key: str) -> float:
        """How telling a value is: 1 when one step produced it, falling as more steps hold it."""
        n = len(self._holders.get(key, ()))
        return 1.0 if n <= 1 else 1.0 / math.sqrt(n)

    def introduced(self, step_id: str) -> list[Atom]:
        """The values a step produced that it was not given."""
        v = self.views[step_id]
        return [a for a in v.outputs if not v.given(a)]

    def origin(self, atom: Atom, before: int, within: set[str] | None = None, skip: Container[str] = ()) -> Origin:
        """Where a value a step at position ``before`` held came from.

        The earliest step before it whose output holds the value and whose input does not, never one in ``skip``;
        holders inside ``within`` (the consumer's backward slice) are preferred when there are any.  None when
        the run had the value before that step did (`held_before`): it wrote it again, it did not introduce it."""
        pos = self.holders(atom.key, before)
        if not pos and atom.kind == "text":
            pos = self._writers(atom, before)
        pos = [p for p in pos if self.steps[p].step_id not in skip] if skip else pos
        if not pos or len(pos) > MAX_PRODUCERS:
            return Origin(None, atom)
        cands = [p for p in pos if within is None or self.steps[p].step_id in within] or pos
        cands = keyed_first(atom, [self.views[self.steps[p].step_id].outputs for p in cands], cands) if atom.field else cands
        for p in cands:
            sid = self.steps[p].step_id
            view = self.views[sid]
            if atom.key not in view.out_keys and not view.holds(atom):
                continue  # a span's number, and the value is no span (``15%`` beside a ``15m`` window)
            if not view.given(atom):
                produced = next((a for a in view.outputs if a.key == atom.key), atom)
                consumer = self.views[self.steps[before].step_id] if before < len(self.steps) else None
                if self._caller_gave_instead(atom, produced, before) or held_before(
                    atom, produced, p, self._seen, _ancestors(sid, self._parent), self.steps, consumer, before
                ):
                    return Origin(None, atom)
                return Origin(sid, produced, self.operands(sid, produced))
        return Origin(None, atom)

    def _caller_gave_instead(self, atom: Atom, produced: Atom, before: int) -> bool:
        """Whether the would-be origin states the value under another name than the consumer holds it by, and the
        run's caller gave it under the consumer's name: the number is the caller's (a roster's 5 basses), the
        producer's is another that equals it by chance (a piece's 5 minutes)."""
        if atom.field is None or produced.field in (None, atom.field):
            return False
        at = self._caller_gave(atom)
        return at is not None and at < before

    def _caller_gave(self, atom: Atom) -> int | None:
        """The position of the outermost step that was given this value under the same field name (a graph's
        initial state, an agent's arguments).  The caller gave it: no step inside
        introduced it, though one may hold the same number under another name by chance (a piece's 5 minutes
        for a roster's 5 basses).  None when no outermost step was given it so."""
        if self._given is None:
            self._given = {}
            for i, s in enumerate(self.steps):
                if s.kind in CONTAINER_KINDS and (s.parent_id is None or s.parent_id not in self.pos):
                    for a in self.views[s.step_id].inputs:
                        if a.field is not None:
                            self._given.setdefault((a.key, a.field), i)
        return self._given.get((atom.key, atom.field or ""))

    def _writers(self, atom: Atom, before: int) -> list[int]:
        """Positions of the steps whose output *writes* a short text value inside a longer text.

        A model that answers "Schedule: monthly. Reason: ..." produced the value
        ``monthly`` a later tool is given, though no output atom is that word.
        """
        raw = atom.raw.strip().casefold()
        if not 3 <= len(raw) <= 40:
            return []
        first = _WORDS.search(raw)
        if first is None:
            return []
        if self._words is None:
            # Built once, on first need: word -> positions of the steps whose output text has it.
            self._words = {}
            for i, s in enumerate(self.steps):
                for w in set(_WORDS.findall(self.views[s.step_id].out_text)):
                    self._words.setdefault(w, []).append(i)
        cands = self._words.get(first.group(0), [])
        k = bisect.bisect_left(cands, before)
        if k > 4 * MAX_PRODUCERS:
            return []  # a common word: no telling who wrote it
        out: list[int] = []
        for i in cands[:k]:
            if _has_word(self.views[self.steps[i].step_id].out_text, raw):
                out.append(i)
                if len(out) > MAX_PRODUCERS:
                    break
        return out

    def operands(self, step_id: str, atom: Atom) -> tuple[Atom, ...]:
        """The numbers a step was given that its output number is computed from (see `operands`)."""
        return operands(self.views[step_id], atom)

    def droppers(self, atom: Atom, candidates: Iterable[str]) -> list[str]:
        """The candidate steps that were given the value and did not pass it on (earliest first)."""
        out = []
        for sid in candidates:
            v = self.views.get(sid)
            if v is None or v.given_by_parents:
                continue
            if v.given(atom) and not v.holds(atom) and (v.outputs or v.out_text) and not self._stored(v, atom):
                out.append(sid)
        out.sort(key=self.pos.__getitem__)
        return out

    def _stored(self, view: StepView, atom: Atom) -> bool:
        """Whether a step given the value whole wrote it into shared state (``state_values``): a writer passes
        values on through the state its readers read, whatever it returns (a count of the rows it stored).
        Only a value it was given as such: one it was given as a piece of another (a host id cut down to its
        pool's name) and wrote was changed there, not passed on."""
        if atom.key not in view.in_keys:
            return False
        written = self.steps[self.pos[view.step_id]].attributes.get("state_values")
        return isinstance(written, dict) and any(a.key == atom.key for a in atoms(written))

    def value_edges(self, min_confidence: float = 0.45, max_holders: int = 4) -> dict[str, list[Dependency]]:
        """Inferred data edges: each step from the latest earlier step whose output held a value its input holds.

        One edge per producer, with the rarest shared value's rarity as its
        confidence; a value more than ``max_holders`` steps produced is too
        common to say where a step took it from, and an enclosing step (which
        holds what its children made) is not where its own children took it.
        """
        out: dict[str, list[Dependency]] = {}
        for i, s in enumerate(self.steps):
            best: dict[int, tuple[float, str]] = {}
            ancestors = _ancestors(s.step_id, self._parent)
            for a in self.views[s.step_id].inputs:
                # The holders before this step are a prefix of the value's holders: only its length
                # and last position are needed (a copy of it per input value was quadratic).
                lst = self._holders.get(a.key, ())
                k = bisect.bisect_left(lst, i)
                written = k == 0 and a.kind == "text" and bool(a.field) and not lst
                if written:
                    # A value a step wrote inside a longer text ("Schedule: monthly. ...").
                    pos = self._writers(a, i)
                    if not pos or len(pos) > max_holders:
                        continue
                    p, n = pos[-1], len(pos)
                else:
                    if k == 0 or len(lst) > max_holders:
                        continue
                    p, n = lst[k - 1], len(lst)
                if self.steps[p].step_id in ancestors:
                    continue
                conf = (1.0 / math.sqrt(n) if n > 1 else 1.0) * (0.9 if a.field else 0.75) * (0.8 if written else 1.0)
                if conf > best.get(p, (0.0, ""))[0]:
                    best[p] = (conf, a.field or a.raw[:40])
            for p, conf, key in self._record_holders(s, i, ancestors, max_holders):
                if conf > best.get(p, (0.0, ""))[0]:
                    best[p] = (conf, key)
            deps = [
                Dependency(self.steps[p].step_id, "data", "inferred", round(c, 3), f"value:{key}")
                for p, (c, key) in sorted(best.items())
                if c >= min_confidence
            ]
            if deps:
                out[s.step_id] = deps
        return out


    def _record_holders(
        self, step: Step, before: int, ancestors: set[str], max_holders: int
    ) -> list[tuple[int, float, str]]:
        """Producers of a record's values by the record: (position, confidence, field).

        A value several steps returned (a rack ``RK-03`` two lookups answered) is taken from the latest by
        `value_edges`; a record of the step's input that holds it beside other values (the boat it goes
        with) came from the earlier holder whose output holds more of that record (the lookup of that boat).
        """
        out: list[tuple[int, float, str]] = []
        for records in record_lists(step.input):
            for rec in records:
                # (A message's role or content, a record's generic name, ties no entity's values together.)
                keys = {a.key: a for a in atoms(rec) if not trivial(a) and a.field and a.field not in GENERIC_FIELDS}
                if len(keys) < 2:
                    continue
                for a in keys.values():
                    lst = self._holders.get(a.key, ())
                    k = bisect.bisect_left(lst, before)
                    if k < 2 or len(lst) > max_holders:
                        continue
                    held = [(len(keys.keys() & self.views[self.steps[p].step_id].out_keys), p) for p in lst[:k]]
                    top, p = max(held)
                    if top > held[-1][0] and self.steps[p].step_id not in ancestors:
                        out.append((p, (1.0 / math.sqrt(len(lst))) * 0.9, a.field or a.raw[:40]))
        return out

    def unread_edges(self, consumed: set[str], confidence: float = 0.4) -> dict[str, list[Dependency]]:
        """Inferred data edges from outputs no step consumed to the computation that must have read them.

        A value a program computed and nobody used is rare; a local computation
        (not a model, tool, retrieval or enclosing step, which bring values in from
        outside) whose output holds more values it was not given than its input
        holds at all read something its recorded input does not show.  Each
        output of a sibling under the same enclosing step that ended before it
        started, that no edge consumed and no step in between was given whole,
        is linked to the first such step.
        """
        out: dict[str, list[Dependency]] = {}
        pending: dict[str | None, list[Step]] = {}
        for s in self.steps:
            waiting = pending.setdefault(s.parent_id, [])
            if waiting and s.kind not in _FROM_OUTSIDE and self._reads_more(s.step_id):
                done = [p for p in waiting if p.end_ns is not None and p.end_ns <= s.start_ns]
                read = [p for p in done if not self._passed_whole(p.step_id, s.step_id)]
                if read:
                    # A data edge, not a state one: nothing says the value was stored (a state
                    # write whose readers never saw its values would read as a bad write).
                    out[s.step_id] = [Dependency(p.step_id, "data", "inferred", confidence, "unread output") for p in read]
                gone = {p.step_id for p in done}
                pending[s.parent_id] = [p for p in waiting if p.step_id not in gone]
            if s.step_id not in consumed and s.kind != "agent" and self.views[s.step_id].outputs:
                # The latest 64 only: a long loop's unread outputs must not make this quadratic.
                pending[s.parent_id] = [*pending[s.parent_id][-63:], s]
        return out

    def empty_edges(self, confidence: float = 0.5) -> dict[str, list[Dependency]]:
        """Inferred data edges from the latest earlier step whose output left a field empty that a step's input
        holds empty under the same name.

        Empty values (``""``, ``null``, ``[]``, ``{}``) are too common to index as
        values, but a missing value is often what fails a run ("no budget
        reservation"): the field's name says where it came from.  Only top-level
        fields of mapping inputs and outputs; an enclosing step counts (a graph node
        returns the state update it wrote), but never for its own descendants.  An empty
        list or object under a name no step left empty links to the step right before it
        under the same enclosing step, when that step returned the same empty value whole
        (a parser that found nothing, its result handed straight on), and never for a model
        call: an empty list in a model request (its tools) is a parameter of the API, and
        an empty default (``filters={}``) after unrelated steps is no result handed on.
        """
        out: dict[str, list[Dependency]] = {}
        latest: dict[str, Step] = {}
        # The latest step under each enclosing step.
        last: dict[str | None, Step] = {}
        for s in self.steps:
            ancestors = _ancestors(s.step_id, self._parent)
            deps: dict[str, Dependency] = {}
            for k, v in s.input.items() if isinstance(s.input, dict) else ():
                p = latest.get(str(k)) if _empty(v) else None
                if p is None and isinstance(v, (list, dict)) and not v and s.kind != "llm":
                    # No step left a field of that name empty: a parser that found nothing returned `[]`
                    # whole, and the code right after it handed it on under a name of its own.
                    p, conf = last.get(s.parent_id), confidence * 0.8
                    if p is None or p.kind in CONTAINER_KINDS or type(p.output) is not type(v) or p.output:
                        p = None
                else:
                    conf = confidence
                if p is not None and p.step_id not in ancestors and p.end_ns is not None and p.end_ns <= s.start_ns:
                    deps.setdefault(p.step_id, Dependency(p.step_id, "data", "inferred", conf, f"empty:{k}"))
            if deps:
                out[s.step_id] = list(deps.values())
            for k, v in s.output.items() if isinstance(s.output, dict) else ():
                if _empty(v):
                    latest[str(k)] = s
            last[s.parent_id] = s
        return out

    def inherited_edges(self, deps: dict[str, list[Dependency]], factor: float = 0.8) -> dict[str, list[Dependency]]:
        """Edges from a tool given a number no earlier step produced to what its enclosing step depends on.

        A tool's argument computed in the code between two recorded steps (a total a graph
        node worked out from the state it read, then handed to its tool) has no
        producer of its own: it came from what the enclosing step read.  ``deps``:
        every step's dependencies so far (recorded and inferred), by step id; the
        enclosing step's own descendants are left out (it holds what they made).
        """
        out: dict[str, list[Dependency]] = {}
        for i, s in enumerate(self.steps):
            up = deps.get(s.parent_id or "", [])
            if not up or s.kind not in ("tool", "retrieval") or not isinstance(s.input, dict):
                continue
            args = {str(k) for k, v in s.input.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            if not any(a.field in args and self._unproduced(a, i) for a in self.views[s.step_id].inputs):
                continue
            start = self.pos[s.parent_id or ""]
            inherited = [
                Dependency(d.step_id, d.kind, "inferred", round(d.confidence * factor, 3), "computed in the enclosing step")
                for d in up
                if d.step_id in self.pos and self.pos[d.step_id] < start
            ]
            if inherited:
                out[s.step_id] = inherited
        return out

    def handed_down_edges(
        self, deps: dict[str, list[Dependency]], factor: float = 0.8
    ) -> dict[str, list[Dependency]]:
        """Edges from a step to what its enclosing step read the step's values from.

        ``factor`` is `inherited_edges`' own (an edge passed down one level of nesting is that much less sure
        than the node's edge), not a weight fitted here.

        A graph node is given the shared state and calls its model or tools with
        values taken from it: the call's arguments came through the node's input,
        field by field, and content matching often cannot say which earlier step
        wrote a short or common value (a time slot, a three-letter code).  When a
        step's input holds a value found in one top-level field of its enclosing
        step's input, and the enclosing step depends on an earlier step for that
        field (an edge keyed by the field's path), the step depends on that earlier
        step too.  Only values with no source yet count: none an edge of the step
        names the field of, none an earlier step of the same node produced (a parser
        reads its model's answer); and no enclosing step's own update is the writer
        (its steps wrote it).  ``deps``: every step's dependencies so far, by step id.
        """
        by_id = {s.step_id: s for s in self.steps}
        fields: dict[tuple[str, ...], set[str]] = {}
        siblings: dict[str, set[str]] = {}  # what the node's steps so far produced
        writers: dict[str, list[Dependency]] = {}
        out: dict[str, list[Dependency]] = {}
        for s in self.steps:
            parent = by_id.get(s.parent_id or "")
            if parent is None or s.kind == "agent" or not isinstance(parent.input, dict):
                continue
            keyed = [d for d in deps.get(parent.step_id, ()) if field_of(d, parent.input) is not None]
            keyed += writers.setdefault(parent.step_id, self._field_writers(parent))
            if not keyed:
                continue
            own = deps.get(s.step_id, ())
            have = {d.step_id for d in own}
            # Only the values no edge of the step already names the field of: those have a source.
            named = {last_name(d.key) for d in own if d.key}
            mine = {a.key for a in self.views[s.step_id].inputs if not trivial(a) and a.field not in named}
            # ... and that no earlier step in the same node produced (a parser reads its model's answer).
            made = siblings.setdefault(parent.step_id, set())
            mine -= made
            made |= self.views[s.step_id].out_keys
            added: list[Dependency] = []
            for d in sorted(keyed, key=lambda d: -d.confidence):  # the surest of a writer's edges that hands it down
                f = field_of(d, parent.input)
                if (
                    f is None
                    or d.step_id in have
                    or self.pos.get(d.step_id, len(self.steps)) >= self.pos[parent.step_id]
                    or self.steps[self.pos[d.step_id]].kind == "agent"  # a node's update: its own steps wrote it
                ):
                    continue
                if mine & self._written(parent, f, d, fields):
                    added.append(Dependency(d.step_id, d.kind, "inferred", round(d.confidence * factor, 3), f"via {f}"))
                    have.add(d.step_id)
            if added:
                out[s.step_id] = added
        return out

    def _written(self, node: Step, field: str, dep: Dependency, cache: dict[tuple[str, ...], set[str]]) -> set[str]:
        """The values of ``field`` of a node's input (the state) that ``dep``'s producer wrote there: those of
        the part of the field its key names (``data.offers[0]``, one loop pass's offer in a state that also holds
        the request; a leaf's key, ``data.offers[0].unit``, reads as the record holding it) and every other value
        of the field its output holds (the next record of a list it wrote whole, a deadline it returned beside the
        record); the whole field when its key names nothing deeper.  ``cache``: by node, part and producer."""
        part = field if field == WHOLE_INPUT_KEY else part_of(dep.key or field, node.input)
        whole = cache.get((node.step_id, field))
        if whole is None:
            given = node.input if field == WHOLE_INPUT_KEY else node.input[field]
            whole = cache[(node.step_id, field)] = {a.key for a in atoms(given) if not trivial(a)}
        if part == field:
            return whole
        held = cache.get((node.step_id, part, dep.step_id))
        if held is None:
            named = {a.key for a in atoms(value_at(part, node.input)) if not trivial(a)}
            view = self.views[dep.step_id]
            also = {a.key for a in atoms(node.input[field]) if a.key in whole - named and view.holds(a)}
            held = cache[(node.step_id, part, dep.step_id)] = named | also
        return held

    def _field_writers(self, node: Step, confidence: float = 0.9) -> list[Dependency]:
        """Edges keyed by the fields of a node's input (the state) that an earlier step returned under the same
        name and value: a node's update (``{"lender": ...}``) is merged into the state the next node reads.
        The search looks back 200 steps (a node's update is read by the next nodes, not a whole run later:
        bounded so a long run stays linear); ``confidence`` is the inferred edges' for a match by field and
        value (0.9, `_trace`'s own for a keyed value)."""
        given = node.input if isinstance(node.input, dict) else {}
        wanted = {str(k): _canonical(v) for k, v in given.items() if isinstance(v, (dict, list))}
        wanted = {k: c for k, c in wanted.items() if c is not None}
        out: list[Dependency] = []
        for p in range(self.pos[node.step_id] - 1, max(-1, self.pos[node.step_id] - 200), -1):
            if not wanted:
                break
            prev = self.steps[p]
            if prev.kind == "agent" or not isinstance(prev.output, dict):
                continue
            for k in [k for k in wanted if k in prev.output and _canonical(prev.output[k]) == wanted[k]]:
                out.append(Dependency(prev.step_id, "data", "inferred", confidence, k))
                del wanted[k]
        return out

    def _unproduced(self, atom: Atom, before: int) -> bool:
        if atom.kind != "number" or atom.field is None or trivial(atom):
            return False
        return bisect.bisect_left(self._holders.get(atom.key, ()), before) == 0

    def _passed_whole(self, step_id: str, until: str, window: int = 200) -> bool:
        """Whether a step between ``step_id`` and ``until`` was given every value of its output (it was
        read, whatever step content inference credited the values to)."""
        keys = self.views[step_id].out_keys
        lo, hi = self.pos[step_id] + 1, min(self.pos[until], self.pos[step_id] + window)
        return any(keys <= self.views[t.step_id].in_keys for t in self.steps[lo:hi])

    def _reads_more(self, step_id: str) -> bool:
        # On the input as recorded: the values it read by name do not make the recording whole.
        v, named = self.views[step_id], self._named.get(step_id, set())
        new = {a.key for a in v.outputs if a.key in named or not v.given(a)}
        return len(new) >= 2 and len({a.key for a in v.inputs} - named) < len(new)


def _canonical(value: Any) -> str | None:
    """A structured value's canonical JSON (None when it cannot be written or is too small to tell apart)."""
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return None
    return text if len(text) >= 20 else None


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list, dict)) and not value)


def _ancestors(step_id: str, parent: dict[str, str | None]) -> set[str]:
    out: set[str] = set()
    cur = parent.get(step_id)
    while cur is not None and cur not in out and len(out) < 64:
        out.add(cur)
        cur = parent.get(cur)
    return out


_FROM_OUTSIDE = frozenset({"llm", "tool", "retrieval", "agent", "input"})
"""Step kinds whose output may hold values they were not given without having read them in the program."""


__all__ = ["MAX_PRODUCERS", "Derivation", "Lineage", "Origin", "derivation", "failure_atoms", "fits_formula", "formulas", "operands"]
