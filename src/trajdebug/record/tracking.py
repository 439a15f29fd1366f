"""Writer-side work for each finished step: records, tracked data edges, redaction.

Runs on the writer thread, off the agent's hot path.

Value tracking: every object a step returns is registered with that step, and
the registry keeps a strong reference to it for the run's life, because
``id()`` values are reused once an object is collected.  When a registered
object, or a container holding it, shows up in a later step's arguments, that
step gets a ``data`` edge (``tracked``, confidence 1).  Identity is not
trusted for values Python shares between unrelated producers (``None``,
booleans, numbers, short strings, which may be cached or interned): those are
left to content inference at analysis time (`trajdebug.analysis.inference._infer`).
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Mapping, Sized
from itertools import islice
from typing import Any

from trajdebug.core import redaction
from trajdebug.core.codec import Encoded, dumps, loads, marker, safe_repr, to_jsonable, truncated
from trajdebug.core.model import REDACTED, TRUNCATED_KEY, Dependency
from trajdebug.core.payloads import error_payload
from trajdebug.core.schema import (
    RECORDER_KEY,
    dep_to_dict,
    error_record,
    open_record,
    plain_step_record,
    stage_record,
    step_record,
)
from trajdebug.record import config as _config
from trajdebug.record.account import Account
from trajdebug.record.config import CONFIG
from trajdebug.record.context import RemoteParent
from trajdebug.record.decorate import bind
from trajdebug.record.exceptions import new_error_id
from trajdebug.record.recorder import StepHandle
from trajdebug.record.timeouts import overrun


MIN_TRACKED_STR = 24
"""Strings shorter than this are not identity-tracked (they may be interned or cached)."""

MAX_NAME = 1024
"""Step, agent and error-type names longer than this are cut (with an ellipsis)."""

_MAX_WALK = 512
_ENTRY_BYTES = 250
"""What a registry entry costs beyond its value (the tuple, the dict slot, the step id, the time)."""
_UNTRACKED = (type(None), bool, int, float, complex, bytes)
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})
_OPEN = frozenset({dict, list, tuple, set, frozenset})
"""The containers `Tracker._find` opens."""
_MEMO_MAX = 4096
"""Containers whose ids `Tracker._reached` keeps in one batch, at most."""
_ID_FIELDS = frozenset(
    {"v", "t", "run_id", "step_id", "error_id", "parent_id", "parent_error_id", "retry_of", "stage", "kind",
     "status", "outcome", "continues", "start_ns", "end_ns", "time_ns", "attempt", "source_index"}
)
_TEXT_FIELDS = frozenset({"message", "failure_reason", "reason", "traceback"})
_NAME_FIELDS = frozenset({"name", "agent", "type"})
_OBJECT_FIELDS = frozenset({"metadata", "attributes"})
_INT_RANGE = (-(2**63), 2**64)


Entry = tuple[str, object, int, str, int]
"""A registered value: the step that produced it, the object (kept alive), when, how (``tracked``,
``declared``), and what the entry costs in bytes."""

Trace = tuple[str, object, str, int]
"""A control message from the agent's threads: ``("trace", value, step_id, end_ns)`` (`trajdebug.record.edges`)."""


_MARGIN = 16 * 1024
"""Characters past the size cut that are still redacted before cutting: a secret that starts inside the
kept head (a PEM private key is about 3 KiB) is scrubbed whole, never half-kept."""

_WHOLE_BYTES = 1 << 20
"""A snapshot larger than this is not decoded whole to be redacted: its kept head is (`red_head`)."""

_JSON_PAIR = re.compile(r'"((?:[^"\\]|\\.){1,100})"\s*:\s*("(?:[^"\\]|\\.)*"|[^,}\]]+)')


RETURNED_ARGUMENT = "returned_argument"
"""The attribute of a step that returned one of its arguments, the very object (a pass-through such
as a validator): what `trajdebug lint` needs to tell a relay from a step that made an equal copy."""


def _is_argument(value: Any, inp: Any) -> bool:
    """Whether ``value`` is ``inp`` itself or one of a call's arguments (identity, not equality), for a
    value identity tracking follows (numbers and short texts may be shared by unrelated producers)."""
    t = type(value)
    if value is None or issubclass(t, _UNTRACKED) or (t is str and len(value) < MIN_TRACKED_STR):
        return False
    if value is inp:
        return True
    if type(inp) is dict:
        for v in inp.values():
            if v is value:
                return True
    return False


def red_head(red: redaction.Redactor, head: str) -> str:
    """The head of a large value's JSON text, redacted: values under secret key names, then the text."""

    def one(m: re.Match[str]) -> str:
        return f'"{m.group(1)}":"{REDACTED}"' if red.secret_key(m.group(1)) else m.group(0)

    return str(red.text(_JSON_PAIR.sub(one, head)))


def _ids_under(value: Any, levels: int) -> list[int]:
    """The ids of ``value`` and of the items ``levels`` levels below it, through the containers `_OPEN`
    (each one's first 128 items; a dict's keys too, a superset).  A level at a time in C
    (`gc.get_referents` of containers that small: their items, and nothing else), only the level's
    containers picked out in Python."""
    seen = [id(value)]
    level = [value]
    for _ in range(levels):
        level = [o for o in level if type(o) in _OPEN]
        if not level:
            break
        if max(map(len, level)) <= 128:
            nxt = gc.get_referents(*level)
        else:
            nxt = []
            for obj in level:
                if len(obj) <= 128:
                    nxt += gc.get_referents(obj)
                else:
                    nxt.extend(islice(obj.values() if type(obj) is dict else obj, 128))
        seen += map(id, nxt)
        level = nxt
    return seen


class Tracker:
    """Per-run registry of produced values, and the encoder of the run's records (writer thread).

    Every value is made JSON-safe, redacted and only then cut to
    ``max_value_bytes`` (so a secret beyond the cut is scrubbed, not half-kept).
    The registry keeps strong references to produced objects (``id()`` values
    are reused once an object is collected) within a byte budget
    (``track_budget_bytes``): past it the oldest are released, and a later step
    consuming one of those gets its edge from content inference instead.
    """

    def __init__(self, run_id: str, account: Account, rewrite: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self.run_id = run_id
        self.account = account
        """Where an internal failure is counted (the run's)."""
        self.registry: dict[int, Entry] = {}
        self._registry_bytes = 0
        self._budget = CONFIG.track_budget_bytes
        self.redactor: redaction.Redactor | None = redaction.redactor() if CONFIG.redact else None
        self._max = CONFIG.max_value_bytes
        self._names: dict[str, str] = {}
        self._params: dict[Any, tuple[str, bool]] = {}
        """`_param`'s answers, by argument name."""
        self._memo: dict[int, tuple[Any, int, int, list[int]]] = {}
        """`_reached`'s ids under a container, by its id, for the batch being encoded."""
        self._queue: Sized | None = None
        """What is left of the queue the batch being encoded comes from (`batch`); None between batches."""
        self.at = 0
        """The position in its batch of the item being encoded (set by the writer)."""
        self.rewrite = rewrite
        """The run's processors that rewrite records (`trajdebug.record.processors.Processors.on_record`:
        summary mode), applied to every record built here; None when there are none."""

    def release(self) -> None:
        """Drop the strong references at the run's end."""
        self.registry.clear()
        self._registry_bytes = 0

    # -- values ------------------------------------------------------------------------

    def _from_json(self, data: bytes, snapshot: bool = False) -> Any:
        """A value given as JSON bytes: redacted (whole), then cut to the size limit.

        A snapshot with nothing to redact goes into the record as the very bytes it was
        snapshotted to (`Encoded`): it is neither rebuilt nor encoded again.  ``snapshot`` says the
        bytes are the recorder's own encoding (a step's frozen input or output: valid JSON, so the
        redaction test need not decode them, `Redactor.clean_encoded`); bytes from elsewhere are
        decoded, so that invalid JSON never reaches a record.
        """
        red = self.redactor
        if len(data) <= self._max:
            if red is None:
                return Encoded(data)
            try:
                # Most strings of a snapshot were in earlier ones: only the new ones are tested.
                if red.clean_encoded(data) if snapshot else red.clean_json(data):
                    return Encoded(data)
                return red(loads(data))
            except ValueError:
                return marker(None, "<undecodable snapshot>")
        if red is not None:
            if len(data) > _WHOLE_BYTES:
                # Bounded by size: only the head that is kept is redacted (as text, key names too).
                return {TRUNCATED_KEY: len(data), "head": red_head(red, data[: self._max + _MARGIN].decode("utf-8", "ignore"))[: self._max]}
            try:
                obj = loads(data)
                dirty = not red.clean_json(data)
            except ValueError:
                return marker(None, "<undecodable snapshot>")
            if dirty:
                data = dumps(red(obj))
                if len(data) <= self._max:
                    return loads(data)
        return truncated(data, self._max)

    def _str(self, s: str) -> Any:
        red = self.redactor
        n = len(s)
        if n > self._max + _MARGIN:
            s = s[: self._max + _MARGIN]  # bounded by size: a secret longer than the margin never fits the head
        if red is not None:
            s = red.text(s)
        if len(s) > self._max:
            return {TRUNCATED_KEY: n, "head": s[: self._max]}
        return s

    def value(self, v: Any) -> Any:
        """Any recorded value (a snapshot, a scalar, a live object) as JSON data, redacted, then capped."""
        t = type(v)
        if t is bytes:
            return self._from_json(v)
        if t is str:
            return self._str(v)
        if v is None or t is bool or (t is int and _INT_RANGE[0] <= v < _INT_RANGE[1]):
            return v
        if t is float and v == v and v not in (float("inf"), float("-inf")):
            return v
        return self._from_json(dumps(v))

    def text(self, v: Any, limit: int | None = None) -> str:
        """A message, reason or name as text: redacted, then cut to ``limit`` (default ``max_value_bytes``)."""
        if type(v) is not str:
            try:
                v = str(v)
            except Exception:  # noqa: BLE001 - a hostile __str__ costs only this text
                v = safe_repr(v)
        red = self.redactor
        cap = self._max if limit is None else limit
        n = len(v)
        if n > cap + _MARGIN:
            v = v[: cap + _MARGIN]  # bounded by size (see `_str`)
        if red is not None:
            v = red.text(v)
        if len(v) > cap:
            v = f"{v[:cap]}… [{max(n, len(v))} characters, truncated]"
        return v  # type: ignore[no-any-return]

    def name(self, v: Any) -> str | None:
        """A step, agent or error-type name (None stays None).

        Names repeat (a function's name on every call): each distinct one is redacted once.
        """
        if v is None:
            return None
        if type(v) is str:
            done = self._names.get(v)
            if done is None:
                done = self.text(v, MAX_NAME)
                if len(self._names) < 4096:
                    self._names[v] = done
            return done
        return self.text(v, MAX_NAME)

    def attributes(self, attrs: Any) -> Any:
        """Attributes or metadata, each value capped on its own (one huge value never costs the others)."""
        try:
            if not isinstance(attrs, Mapping):
                return self.value(attrs)
        except Exception:  # noqa: BLE001 - a lazy proxy whose __class__ raises: a marker, not the record
            return marker(attrs)
        red = self.redactor
        out: dict[str, Any] = {}
        try:
            items = list(attrs.items())
        except Exception:  # noqa: BLE001 - a mapping whose items() raises
            return marker(attrs)
        for k, v in items:
            key = k if type(k) is str else safe_repr(k, 200)
            if red is not None:
                if red.secret_key(key) and v is not None and type(v) is not bool:
                    red.counts["key_name"] += 1
                    out[red.text(key)] = REDACTED
                    continue
                key = red.text(key)
            try:
                out[key] = self.value(v)
            except Exception:  # noqa: BLE001 - one hostile value costs only itself
                out[key] = marker(v)
        return out

    def arguments(self, args: dict[str, Any], output: Any = None) -> tuple[Any, Any]:
        """A decorated call's arguments bound to their names (the live values: scalars, which were not
        snapshotted, so nothing is encoded to be decoded again), redacted and capped as one value, and
        the call's output.  When the output is text too, the texts pass one redaction prefilter."""
        red = self.redactor
        if len(args) == 1 and type(output) is str and red is not None:
            # The commonest call (one text in, a text out), without the general loops below.
            for k, v in args.items():
                if type(v) is str and len(v) <= self._max:
                    return self._one_text(k, v, output, red)
        texts: list[str] = []
        size = 0
        for v in args.values():
            c = type(v)
            if c is str:
                texts.append(v)
                size += len(v)
            elif c not in _SCALAR_TYPES:
                return self.value(args), (None if output is None else self._own(output))
        if size > self._max:
            return self.value(args), (None if output is None else self._own(output))
        clean = red is None
        if not clean and type(output) is str:
            texts.append(output)
            clean = not red.may_hold("".join(texts))  # type: ignore[union-attr]
            if clean:
                cap = self._max
                if len(output) > cap:
                    output = {TRUNCATED_KEY: len(output), "head": output[:cap]}
            else:
                output = self._str(output)
        elif output is not None:
            output = self._own(output)
        params = self._params
        out: dict[str, Any] = {}
        for k, v in args.items():
            param = params.get(k)
            if param is None:
                param = self._param(k)
            key, secret = param
            if secret and v is not None and type(v) is not bool:
                red.counts["key_name"] += 1  # type: ignore[union-attr]
                out[key] = REDACTED
            elif type(v) is str:
                out[key] = v if clean else red.text(v)  # type: ignore[union-attr]
            else:
                out[key] = self.value(v)
        return out, output

    def _one_text(self, k: Any, v: str, output: str, red: redaction.Redactor) -> tuple[dict[str, Any], Any]:
        """`arguments` of a call with one text argument (within the size limit) that returned a text: the
        same answer, the two texts through one prefilter."""
        param = self._params.get(k)
        if param is None:
            param = self._param(k)
        key, secret = param
        if red.may_hold(v + output):
            out: Any = self._str(output)
            if not secret:
                v = red.text(v)
        elif len(output) > self._max:
            out = {TRUNCATED_KEY: len(output), "head": output[: self._max]}
        else:
            out = output
        if secret:
            red.counts["key_name"] += 1
            return {key: REDACTED}, out
        return {key: v}, out

    def _param(self, k: Any) -> tuple[str, bool]:
        """A call argument's name as recorded, and whether its value is a secret by that name (each
        distinct name decided once: the same few names come with every call of a decorated function)."""
        red = self.redactor
        param = (self.name(k) or str(k), red is not None and red.secret_key(k))
        if len(self._params) < 4096:
            self._params[k] = param
        return param

    def record(self, rec: Mapping[str, Any]) -> dict[str, Any]:
        """A ready-made record (run, error, stage, meta, merged steps) made JSON-safe, redacted and capped."""
        out: dict[str, Any] = {}
        for k, v in rec.items():
            try:
                out[k] = self._field(k, v)
            except Exception:  # noqa: BLE001 - one hostile value costs only itself, never the record
                out[k] = marker(v)
        if self.rewrite is not None:
            return self.rewrite(out)
        return out

    def _field(self, k: str, v: Any) -> Any:
        """One field of a ready-made record, JSON-safe, redacted and capped."""
        if k in _ID_FIELDS and (v is None or type(v) in (str, int)):
            return v
        if k in _TEXT_FIELDS:
            return None if v is None else self.text(v)
        if k in _NAME_FIELDS:
            return self.name(v)
        if k in _OBJECT_FIELDS:
            return self.attributes(v)
        if k == "error" and isinstance(v, Mapping):
            return self.record(v)
        if k in ("deps", "dep", RECORDER_KEY):
            return to_jsonable(v, 1 << 30)
        return self.value(v)

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
            # Release the oldest values first (dicts keep insertion order).
            target = self._budget * 0.9
            while registry and self._registry_bytes > target:
                oldest = next(iter(registry))
                self._registry_bytes -= registry.pop(oldest)[4]

    def _register(self, sid: str, t1: int, value: Any, size: int, depth: int = 1) -> None:
        t = type(value)
        if issubclass(t, _UNTRACKED) or (t is str and len(value) < MIN_TRACKED_STR):
            return
        self._keep(id(value), (sid, value, t1, "tracked", _ENTRY_BYTES + size))
        # The items of a returned list/tuple/dict are that step's outputs too (those not registered yet;
        # what is never tracked is passed over here, not in a call).
        if depth > 0 and (t is list or t is tuple or t is dict):
            registry = self.registry
            for item in value[:64] if t is not dict else list(value.values())[:64]:
                c = type(item)
                if id(item) not in registry and not (issubclass(c, _UNTRACKED) or (c is str and len(item) < MIN_TRACKED_STR)):
                    self._register(sid, t1, item, 64, depth - 1)

    def _reaches(self, value: Any) -> bool:
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

    # -- encoding -------------------------------------------------------------------------

    def encode_safe(self, h: StepHandle, after_end: bool = False) -> list[dict[str, Any]]:
        """`encode`, and when that fails (it should not), a minimal record of the step rather than nothing."""
        try:
            return self.encode(h, after_end)
        except Exception as exc:  # noqa: BLE001 - a step is never lost for a field
            return self.unencodable(h, exc)

    def unencodable(self, h: StepHandle, exc: Exception) -> list[dict[str, Any]]:
        """The minimal record of a step whose fields could not be encoded (`encode` raised ``exc``)."""
        self.account.internal_error("encode")
        try:
            name = self.name(h.name) or "step"
        except Exception:  # noqa: BLE001  # pragma: no cover
            name = "step"
        return [
            step_record(
                self.run_id,
                h.id,
                name,
                h.kind if type(h.kind) is str else "other",
                h.t0 if h.t0.__class__ is int else 0,
                h.t1 if h.t1.__class__ is int else None,
                "error" if h.status == "error" else "ok",
                parent_id=h.parent.id if h.parent is not None else None,
                attributes={"unencodable": f"{type(exc).__name__}: the step's fields could not be recorded"},
            )
        ]

    def encode(self, h: StepHandle, after_end: bool = False) -> list[dict[str, Any]]:
        """Records for a finished step: ``open`` records for newly seen parents, then the step.

        Written for the common step (text or scalar input and output, no extras): its attributes are
        read once each, its name comes from a cache, and its two texts pass one redaction prefilter.
        """
        out: list[dict[str, Any]] = []
        run_id = self.run_id
        parent = h.parent
        if parent is not None and type(parent) is StepHandle and not parent._announced and parent.t1 is None:
            self._announce(parent, run_id, out)
        sid = h._sid
        if sid is None:
            # `StepHandle.id`, formatted here without the property's call (kept on the handle as it keeps it).
            sid = f"{_config._prefix}{h.seq:08x}"
            if h.seq:
                h._sid = sid
        t1 = h.t1

        inp, outp = h.input, h.output
        if h._spec is not None:
            # A decorated call's scalar arguments, bound here rather than on the agent's thread.
            inp = bind(h._spec, inp, h._kw)
        # Identity tracking (inline: a call per step shows in the cost per step); scalars were not snapshotted.
        deps: list[Dependency] | None = None
        live_in = h._live_in
        if live_in is None:
            live_in = inp
        else:
            h._live_in = None
        if live_in is not None and type(live_in) is not bytes:
            found = self._find(sid, h.t0, live_in)
            if found:
                deps = found
        live = h._live_out
        if live is None:
            live = outp
        else:
            h._live_out = None
        if type(live) is str:
            if len(live) >= MIN_TRACKED_STR:
                self._keep(id(live), (sid, live, t1 or 0, "tracked", _ENTRY_BYTES + len(live)))
        elif live is not None and type(live) is not bytes:
            self._register(sid, t1 or 0, live, len(outp) if type(outp) is bytes else 64)
        returned = live_in is not None and _is_argument(live, live_in)

        red = self.redactor
        if type(inp) is str and type(outp) is str and red is not None:
            # Both texts pass one prefilter together (what either holds, the two hold).
            if red.may_hold(inp + outp):
                inp, outp = self._str(inp), self._str(outp)
            else:
                cap = self._max
                if len(inp) > cap:
                    inp = {TRUNCATED_KEY: len(inp), "head": inp[:cap]}
                if len(outp) > cap:
                    outp = {TRUNCATED_KEY: len(outp), "head": outp[:cap]}
        elif type(inp) is dict:
            inp, outp = self.arguments(inp, outp)  # a decorated call's arguments (no call more per step)
        else:
            inp, outp = self._values(inp, outp)
        name = self._names.get(h.name or "") or self.name(h.name)
        err = h.err
        if (
            deps is None and err is None and not h.branch and not h.deps and not h.attrs and not after_end
            and h.agent is None and h.attempt is None and h.retry_of is None and not returned
        ):
            rec = plain_step_record(
                run_id, sid, name, h.kind, h.t0, t1, h.status, parent.id if parent is not None else None, inp, outp
            )
        else:
            rec = self._full_record(h, run_id, sid, name, inp, outp, deps or [], after_end, returned)
        if h.status == "ok" and (h.timeout is not None or (outp is not None and type(outp) is not str and h.kind == "tool")):
            self._flagged(h, rec, outp, out)
        rewrite = self.rewrite
        if rewrite is not None:
            out = [rewrite(r) for r in out]
            rec = rewrite(rec)
        out.append(rec)
        return out

    def _values(self, inp: Any, outp: Any) -> tuple[Any, Any]:
        """A step's input and output that are neither two texts nor a call's arguments (those are in `encode`)."""
        return (None if inp is None else self._own(inp)), (None if outp is None else self._own(outp))

    def _own(self, v: Any) -> Any:
        """`value` of a step's input or output: bytes there are the recorder's own encoding (a snapshot)."""
        return self._from_json(v, True) if type(v) is bytes else self.value(v)

    def _flagged(self, h: StepHandle, rec: dict[str, Any], outp: Any, out: list[dict[str, Any]]) -> None:
        """An ok step that is an error after all: a tool's result that flags itself as one, or a bounded
        block that ran past its timeout (the error and its stage go into ``out``)."""
        if outp is not None and type(outp) is not str and h.kind == "tool":
            payload_error = error_payload(outp.value() if type(outp) is Encoded else outp)
            if payload_error is not None:
                self._payload_error(h, rec, self.text(payload_error), out)
        if h.timeout is not None:
            fields = overrun(h, h.attrs or {})
            if fields is not None:
                self._payload_error(h, rec, f"{h.name} ran {fields['elapsed_s']:g} s, past its timeout of {h.timeout:g} s", out, "ToolTimeout", fields)

    def _full_record(
        self,
        h: StepHandle,
        run_id: str,
        sid: str,
        name: Any,
        inp: Any,
        outp: Any,
        found: list[Dependency],
        after_end: bool,
        returned: bool = False,
    ) -> dict[str, Any]:
        """The step record of a step with extras: an error, dependencies, attributes, an agent, a retry."""
        deps = list(h.deps) + found if h.deps else found
        if h.branch:
            deps.extend(Dependency(step_id=d, kind="control", origin="declared") for d in h.branch)
        error = None
        err = h.err
        if err is not None:
            error = {"type": self.name(err[0]), "message": self.text(err[1])}
            if h.error_id is not None:
                error["error_id"] = h.error_id
            if err[2]:
                error["traceback"] = self.text(err[2])
        uniq = []
        if deps:
            seen: set[tuple[str, str]] = set()
            for d in deps:
                k = (d.step_id, d.kind)
                if k not in seen and d.step_id != sid:
                    seen.add(k)
                    uniq.append(dep_to_dict(d))
        attrs = self.attributes(h.attrs) if h.attrs else None
        if after_end:
            attrs = {**(attrs or {}), "after_run_end": True}
        if returned:
            attrs = {**(attrs or {}), RETURNED_ARGUMENT: True}
        return step_record(
            run_id,
            sid,
            name,
            h.kind,
            h.t0,
            h.t1,
            h.status,
            parent_id=h.parent.id if h.parent is not None else None,
            agent=self.name(h.agent),
            input=inp,
            output=outp,
            error=error,
            attempt=h.attempt,
            retry_of=h.retry_of,
            deps=uniq,
            attributes=attrs,
        )

    def _announce(self, parent: StepHandle, run_id: str, out: list[dict[str, Any]]) -> None:
        """``open`` records for the unfinished ancestors not announced yet, outermost first."""
        chain: list[StepHandle] = []
        p: StepHandle | RemoteParent | None = parent
        while isinstance(p, StepHandle):
            if p._announced or p.t1 is not None:
                break
            chain.append(p)
            p = p.parent
        for p in reversed(chain):
            p._announced = True
            out.append(
                open_record(
                    run_id,
                    p.id,
                    self.name(p.name),
                    p.kind,
                    p.t0,
                    p.parent.id if p.parent is not None else None,
                    self.name(p.agent),
                )
            )

    def _payload_error(
        self,
        h: StepHandle,
        rec: dict[str, Any],
        message: str,
        out: list[dict[str, Any]],
        kind: str = "ToolErrorPayload",
        fields: dict[str, Any] | None = None,
    ) -> None:
        """A tool returned an error as data (or a bounded block overran): that is an error too (it stays
        green elsewhere)."""
        eid = new_error_id()
        run_id = self.run_id
        rec["status"] = "error"
        rec["error"] = {"type": kind, "message": message, "error_id": eid}
        attrs = {"reported": True, "payload": True} if fields is None else {"reported": True, **self.attributes(fields)}
        out.append(error_record(run_id, eid, h.id, kind, message, None, h.attempt or 1, attrs))
        why = "tool result flagged as an error" if fields is None else "ran past its timeout"
        out.append(stage_record(run_id, eid, "occurred", h.id, h.t1 or 0, why))
