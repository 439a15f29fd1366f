"""Identity tracking of values between steps: the per-run registry of produced values (writer thread).

Runs on the writer thread, off the agent's hot path.

Every object a step returns is registered with that step, and
the registry keeps a strong reference to it for the run's life, because
``id()`` values are reused once an object is collected.  When a registered
object, or a container holding it, shows up in a later step's arguments, that
step gets a ``data`` edge (``tracked``, confidence 1).  Identity is not
trusted for values Python shares between unrelated producers (``None``,
booleans, numbers, short strings, which may be cached or interned): those are
left to content inference at analysis time (`trajdebug.analysis.inference._infer`).
`trajdebug.record.tracking.Tracker` is a `Registry` (its `encode` registers and looks up inline).
"""

from __future__ import annotations

from collections.abc import Sized
from itertools import chain, islice, repeat
from typing import Any

from trajdebug.core.model import Dependency
from trajdebug.record.config import CONFIG
from trajdebug.record.encoding import _SCALAR_TYPES


MIN_TRACKED_STR = 24
"""Strings shorter than this are not identity-tracked (they may be interned or cached)."""

_MAX_WALK = 512
_ENTRY_BYTES = 250
"""What a registry entry costs beyond its value (the tuple, the dict slot, the step id, the time)."""
_UNTRACKED = (type(None), bool, int, float, complex, bytes)
_OPEN = frozenset({dict, list, tuple, set, frozenset})
"""The containers `Registry._find` opens."""
_DICT = frozenset({dict})
_SEQS = _OPEN - _DICT
"""The containers whose iteration gives their items."""
_chain = chain.from_iterable
_repeat = repeat
_REGISTER_LEVELS = 3
"""How many levels below a step's returned value `Registry._register` takes what it holds."""
_REGISTER_ITEMS = 64
"""How many objects below a step's returned value `Registry._register` takes, at most (breadth first)."""
_MEMO_MAX = 4096
"""Containers whose ids `Registry._reached` keeps in one batch, at most."""

Entry = tuple[str, object, int, str, int]
"""A registered value: the step that produced it, the object (kept alive), when, how (``tracked``,
``declared``), and what the entry costs in bytes."""

Trace = tuple[str, object, str, int]
"""A control message from the agent's threads: ``("trace", value, step_id, end_ns)`` (`trajdebug.record.edges`)."""


def _ids_under(value: Any, levels: int) -> list[int]:
    """The ids of ``value`` and of the items ``levels`` levels below it, through the containers `_OPEN`
    (each one's first 128 items; a dict's values), as `Registry._find` walks them.  A level at a time: its
    containers' items gathered in C (no other thread changes a container in the middle of it: what is made
    while one is read, ids, never starts the collector, whose finalizers could switch threads), the level's types
    read in C first so that a level of dicts only (a conversation's messages), or of other containers only,
    is not picked over in Python.

    Through the containers' own iteration, not ``gc.get_referents``: that returns what a type's traverse
    visits, which is not always its items (on CPython 3.13 an object's attribute dict, ``vars(obj)``, held
    inline, visits none, so an earlier output held there was never reached and its data edge was lost); each
    call also raises an audit event carrying the agent's objects, and stops the world on a free-threaded
    build.  A dict's keys are not taken (the traverse took those of a dict with keys other than text): `_find`
    never walks keys, so they could only make the superset wider."""
    seen = [id(value)]
    t = type(value)
    if t not in _OPEN or levels < 1:
        return seen
    # The value's own items first: a list's or a tuple's by a slice (no iterator, the cap in the copy).
    level = value[:128] if t is list or t is tuple else list(islice(value.values() if t is dict else value, 128))
    seen += map(id, level)
    for n in range(1, levels):
        kinds = set(map(type, level))
        conts: Any
        if kinds == _DICT:
            conts = map(dict.values, level)
            # The sum first: a level of 128 items or fewer in all has no container over the cap.
            wide = sum(map(len, level)) > 128 and max(map(len, level)) > 128
        elif kinds.isdisjoint(_OPEN):
            break
        else:
            conts = (
                level
                if kinds <= _SEQS
                else [o.values() if type(o) is dict else o for o in level if type(o) in _OPEN]
            )
            wide = sum(map(len, conts)) > 128 and max(map(len, conts)) > 128
        items = _chain(map(islice, conts, _repeat(128)) if wide else conts)
        if n == levels - 1:
            seen += map(id, items)  # the last level's ids only: no list of it
            break
        level = list(items)
        seen += map(id, level)
    return seen


class Registry:
    """Per-run registry of produced values: which step produced an object, found again in a later
    step's arguments.

    The registry keeps strong references to produced objects (``id()`` values
    are reused once an object is collected) within a byte budget
    (``track_budget_bytes``): past it the oldest are released, and a later step
    consuming one of those gets its edge from content inference instead.
    """

    def __init__(self) -> None:
        self.registry: dict[int, Entry] = {}
        self._registry_bytes = 0
        self._budget = CONFIG.track_budget_bytes
        self._memo: dict[int, tuple[Any, int, int, list[int]]] = {}
        """`_reached`'s ids under a container, by its id, for the batch being encoded."""
        self._queue: Sized | None = None
        """What is left of the queue the batch being encoded comes from (`batch`); None between batches."""
        self.at = 0
        """The position in its batch of the item being encoded (set by the writer)."""

    def release(self) -> None:
        """Drop the strong references at the run's end."""
        self.registry.clear()
        self._registry_bytes = 0

    # -- explicit provenance ---------------------------------------------------------

    def handle(self, item: Trace) -> None:
        """Handle a control message from the agent threads (``("trace", value, step_id, end_ns)``)."""
        if item[0] == "trace":
            _, value, step_id, t = item
            if not issubclass(type(value), _UNTRACKED):
                self._keep(id(value), (step_id, value, t, "declared", _ENTRY_BYTES + 64))

    # -- tracking ----------------------------------------------------------------------

    def _keep(self, key: int, entry: Entry) -> None:
        registry = self.registry
        old = registry.pop(key, None)
        size = self._registry_bytes + entry[4]
        if old is not None:
            size -= old[4]
        registry[key] = entry
        self._registry_bytes = size
        if size > self._budget:
            self._trim()

    def _trim(self) -> None:
        """Release the oldest values first (dicts keep insertion order), down to 90 % of the budget."""
        registry = self.registry
        target = self._budget * 0.9
        while registry and self._registry_bytes > target:
            oldest = next(iter(registry))
            self._registry_bytes -= registry.pop(oldest)[4]

    def _register(self, sid: str, t1: int, value: Any, size: int, depth: int = _REGISTER_LEVELS) -> None:
        """Register a step's returned ``value``, and what it holds down to `_REGISTER_LEVELS` levels (at most
        `_REGISTER_ITEMS` of them, breadth first; ``depth`` levels when given): a later step given any of
        those objects consumed this output.

        What it holds is this step's output too when no step returned it before (an object already
        registered is another step's, and what it holds is that step's: it is neither taken nor opened).
        The levels reach the object a loop naturally hands the next step out of a model's answer dumped to a
        dict: ``answer["tool_calls"][i]`` and its ``["function"]`` (OpenAI chat), ``answer["content"][i]`` and
        its ``["input"]`` (Anthropic), ``answer["output"][i]`` (Responses).  The item count keeps a step's
        registration within what one level of 64 items cost before (review ux49: the writer's cost per step).
        """
        t = type(value)
        if issubclass(t, _UNTRACKED) or (t is str and len(value) < MIN_TRACKED_STR):
            return
        self._keep(id(value), (sid, value, t1, "tracked", _ENTRY_BYTES + size))
        if t is not list and t is not tuple and t is not dict:
            return
        # The items are new entries (those registered are passed over), entered here without `_keep`'s
        # call each and counted once at the end: a call per item was half of this walk's time.
        registry = self.registry
        left = _REGISTER_ITEMS
        level: list[Any] = [value]
        for _ in range(depth):
            below: list[Any] = []
            for obj in level:
                for item in obj[:left] if type(obj) is not dict else islice(obj.values(), left):
                    c = type(item)
                    if c is str:
                        if len(item) < MIN_TRACKED_STR:
                            continue
                    elif c is list or c is dict or c is tuple:
                        below.append(item)
                    elif issubclass(c, _UNTRACKED):
                        continue
                    key = id(item)
                    if key in registry:
                        if below and below[-1] is item:
                            below.pop()  # another step's, and what it holds is that step's
                        continue
                    registry[key] = (sid, item, t1, "tracked", _ENTRY_BYTES + 64)
                    left -= 1
                    if left <= 0:
                        break
                if left <= 0:
                    break
            if left <= 0 or not below:
                break
            level = below
        self._registry_bytes += (_REGISTER_ITEMS - left) * (_ENTRY_BYTES + 64)
        if self._registry_bytes > self._budget:
            self._trim()

    def _reaches(self, value: Any) -> bool:
        """`_may_reach`, or True when a container changed size while it was read: a free-threaded build lets
        another thread resize a shared dict or set mid-read (review rev46g), and `_find`, which copies what it
        reads, then decides; a wrong True costs a walk, never an edge."""
        try:
            return self._may_reach(value)
        except RuntimeError:
            return True

    def _may_reach(self, value: Any) -> bool:
        """Whether any object the walk of `_find` could visit is registered: a superset of its visits (each
        level's containers opened, hits descended into too), one set test in C.  Hits are rare (a chat
        payload's messages are new dicts each step), so the walk itself usually does not run.

        A call's arguments are a new dict each step, but what they hold often is not (the same conversation
        resent, or the same list grown): the ids under each container argument are kept for the batch
        (`_reached`) and tested again against the registry as it is then, for a step that had ended (was
        queued) when they were taken: what the step was given is in them, and a change made after it ended
        is not its input."""
        registry = self.registry
        if not registry:
            return False
        if type(value) is not dict:
            return not registry.keys().isdisjoint(self._reached(value, 3))
        if id(value) in registry:
            return True
        for v in value.values() if len(value) <= 128 else islice(value.values(), 128):
            if type(v) in _OPEN:
                if not registry.keys().isdisjoint(self._reached(v, 2)):
                    return True
            elif id(v) in registry:
                return True
        return False

    def _reached(self, value: Any, levels: int) -> list[int]:
        """The ids of ``value`` and of what it holds ``levels`` levels down (each container's first 128
        items), from this batch's memo when they were taken after the step being encoded was queued
        (`_reaches`, `batch`)."""
        memo = self._memo
        key = id(value)
        got = memo.get(key)
        if got is not None and got[0] is value and got[1] == levels and self.at < got[2]:
            return got[3]
        queue = self._queue
        # Items (this batch's, counted from its first) that had ended and been queued before the walk.
        ended = -1 if queue is None else self.at + 1 + len(queue)
        seen = _ids_under(value, levels)
        if queue is not None and type(value) in _OPEN and len(memo) < _MEMO_MAX:
            memo[key] = (value, levels, ended, seen)  # the value is held until the batch ends: its id stays its own
        return seen

    def batch(self, queue: Sized | None) -> None:
        """The writer starts a batch taken from ``queue`` (what is left of it there: the writer sets `at` to
        each item's position as it encodes it), or, with None, the batch is done (what `_reached` kept is
        released)."""
        self._queue = queue
        self.at = 0
        self._memo.clear()  # at a start too: a batch cut short by an exception never reuses what it kept

    def _whole(self, own: str, start: int, value: Any) -> list[Dependency]:
        """The step that returned ``value`` itself (or held it, `_register`'s levels down), when one did: a `with` step's
        ``input=`` dict of scalars (the arguments a model's answer chose), which `_find`'s path for a decorated
        call's arguments (a dict bound anew, of scalars) never looks up whole."""
        hit = self.registry.get(id(value))
        if hit is not None and hit[1] is value and hit[0] != own and hit[2] <= start:
            return [Dependency(step_id=hit[0], kind="data", origin=hit[3])]  # type: ignore[arg-type]
        return []

    def _find(self, own: str, start: int, value: Any) -> list[Dependency]:
        """Registered objects reachable from a step's arguments (not descending into hits)."""
        registry = self.registry
        cls = type(value)
        if cls is str:
            # The common case of a single text argument: one lookup, no walk.
            hit = registry.get(id(value))
            if hit is not None and hit[1] is value and hit[0] != own and hit[2] <= start:
                return [Dependency(step_id=hit[0], kind="data", origin=hit[3])]  # type: ignore[arg-type]
            return []
        if cls is dict:
            # A decorated call's arguments, most often scalars: one lookup per text, no walk.  Keys
            # are taken last to first, as the walk below takes them.
            hits: list[tuple[Any, Any]] | None = None
            for k, v in value.items():
                c = type(v)
                if c is str:
                    hit = registry.get(id(v))
                    if hit is not None and hit[1] is v and hit[0] != own and hit[2] <= start:
                        if hits is None:
                            hits = []
                        hits.append((k, hit))
                elif c not in _SCALAR_TYPES:
                    break
            else:
                if hits is None:
                    return []
                first: dict[str, Dependency] = {}
                for k, hit in reversed(hits):
                    if hit[0] not in first:
                        first[hit[0]] = Dependency(step_id=hit[0], kind="data", origin=hit[3], key=str(k))
                return list(first.values())
        if not self._reaches(value):
            return []
        found: dict[str, Dependency] = {}
        budget = _MAX_WALK
        stack: list[tuple[Any, str | None, int]] = [(value, None, 3)]
        top = type(value) is dict
        while stack and budget > 0:
            obj, key, depth = stack.pop()
            budget -= 1
            hit = registry.get(id(obj))
            if hit is not None and hit[1] is obj and hit[0] != own and hit[2] <= start:
                if hit[0] not in found:
                    found[hit[0]] = Dependency(step_id=hit[0], kind="data", origin=hit[3], key=key)  # type: ignore[arg-type]
                continue
            if depth <= 0:
                continue
            t = type(obj)
            if t is dict:
                for k, v in list(obj.items())[:128]:
                    if not issubclass(type(v), _UNTRACKED):
                        stack.append((v, str(k) if key is None and top and obj is value else key, depth - 1))
            elif t in (list, tuple, set, frozenset):
                for v in list(obj)[:128]:
                    if not issubclass(type(v), _UNTRACKED):
                        stack.append((v, key, depth - 1))
        return list(found.values())

