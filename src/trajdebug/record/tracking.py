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

from collections.abc import Mapping
from typing import Any

from trajdebug import redaction
from trajdebug._encode import dumps, loads, marker, safe_repr, to_jsonable, truncated
from trajdebug.model import REDACTED, TRUNCATED_KEY, Dependency
from trajdebug.record.config import CONFIG
from trajdebug.record.errors import new_error_id
from trajdebug.record.recorder import StepHandle
from trajdebug.schema import (
    RECORDER_KEY,
    dep_to_dict,
    error_record,
    open_record,
    stage_record,
    step_record,
)


MIN_TRACKED_STR = 24
"""Strings shorter than this are not identity-tracked (they may be interned or cached)."""

MAX_NAME = 1024
"""Step, agent and error-type names longer than this are cut (with an ellipsis)."""

_MAX_WALK = 512
_ENTRY_BYTES = 250
"""What a registry entry costs beyond its value (the tuple, the dict slot, the step id, the time)."""
_UNTRACKED = (type(None), bool, int, float, complex, bytes)
_ID_FIELDS = frozenset(
    {"v", "t", "run_id", "step_id", "error_id", "parent_id", "parent_error_id", "retry_of", "stage", "kind",
     "status", "outcome", "continues", "start_ns", "end_ns", "time_ns", "attempt", "source_index"}
)
_TEXT_FIELDS = frozenset({"message", "failure_reason", "reason", "traceback"})
_NAME_FIELDS = frozenset({"name", "agent", "type"})
_OBJECT_FIELDS = frozenset({"metadata", "attributes"})
_INT_RANGE = (-(2**63), 2**64)


class Tracker:
    """Per-run registry of produced values, and the encoder of the run's records (writer thread).

    Every value is made JSON-safe, redacted and only then cut to
    ``max_value_bytes`` (so a secret beyond the cut is scrubbed, not half-kept).
    The registry keeps strong references to produced objects (``id()`` values
    are reused once an object is collected) within a byte budget
    (``track_budget_bytes``): past it the oldest are released, and a later step
    consuming one of those gets its edge from content inference instead.
    """

    def __init__(self, run: Any) -> None:
        self.run = run
        self.registry: dict[int, tuple[str, Any, int, str, int]] = {}
        self._registry_bytes = 0
        self.redactor: redaction.Redactor | None = redaction.redactor() if CONFIG.redact else None
        self._max = CONFIG.max_value_bytes
        self._names: dict[str, str] = {}

    def release(self) -> None:
        """Drop the strong references at the run's end."""
        self.registry.clear()
        self._registry_bytes = 0

    # -- values ------------------------------------------------------------------------

    def _from_json(self, data: bytes) -> Any:
        """A value given as JSON bytes: redacted (whole), then cut to the size limit."""
        red = self.redactor
        if red is not None and red.needed(data):
            try:
                obj = red(loads(data))
            except ValueError:
                return marker(None, "<undecodable snapshot>")
            if len(data) <= self._max:
                return obj
            data = dumps(obj)
        if len(data) > self._max:
            return truncated(data, self._max)
        try:
            return loads(data)
        except ValueError:
            return marker(None, "<undecodable snapshot>")

    def _str(self, s: str) -> Any:
        red = self.redactor
        if red is not None:
            s = red.text(s)
        if len(s) > self._max:
            return {TRUNCATED_KEY: len(s), "head": s[: self._max]}
        return s

    def value(self, v: Any) -> Any:
        """Any recorded value (a snapshot, a scalar, a live object) as JSON data, redacted, then capped."""
        t = v.__class__
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
        if v.__class__ is not str:
            try:
                v = str(v)
            except Exception:  # noqa: BLE001 - a hostile __str__ costs only this text
                v = safe_repr(v)
        red = self.redactor
        if red is not None:
            v = red.text(v)
        cap = self._max if limit is None else limit
        if len(v) > cap:
            v = f"{v[:cap]}… [{len(v)} characters, truncated]"
        return v  # type: ignore[no-any-return]

    def name(self, v: Any) -> str | None:
        """A step, agent or error-type name (None stays None).

        Names repeat (a function's name on every call): each distinct one is redacted once.
        """
        if v is None:
            return None
        if v.__class__ is str:
            done = self._names.get(v)
            if done is None:
                done = self.text(v, MAX_NAME)
                if len(self._names) < 4096:
                    self._names[v] = done
            return done
        return self.text(v, MAX_NAME)

    def attributes(self, attrs: Any) -> Any:
        """Attributes or metadata, each value capped on its own (one huge value never costs the others)."""
        if not isinstance(attrs, Mapping):
            return self.value(attrs)
        red = self.redactor
        out: dict[str, Any] = {}
        try:
            items = list(attrs.items())
        except Exception:  # noqa: BLE001 - a mapping whose items() raises
            return marker(attrs)
        for k, v in items:
            key = k if k.__class__ is str else safe_repr(k, 200)
            if red is not None:
                if red.secret_key(key) and v is not None and v.__class__ is not bool:
                    red.counts["key_name"] += 1
                    out[red.text(key)] = REDACTED
                    continue
                key = red.text(key)
            out[key] = self.value(v)
        return out

    def record(self, rec: Mapping[str, Any]) -> dict[str, Any]:
        """A ready-made record (run, error, stage, meta, merged steps) made JSON-safe, redacted and capped."""
        out: dict[str, Any] = {}
        for k, v in rec.items():
            if k in _ID_FIELDS and (v is None or v.__class__ in (str, int)):
                out[k] = v
            elif k in _TEXT_FIELDS:
                out[k] = None if v is None else self.text(v)
            elif k in _NAME_FIELDS:
                out[k] = self.name(v)
            elif k in _OBJECT_FIELDS:
                out[k] = self.attributes(v)
            elif k == "error" and isinstance(v, Mapping):
                out[k] = self.record(v)
            elif k in ("deps", "dep", RECORDER_KEY):
                out[k] = to_jsonable(v, 1 << 30)
            else:
                out[k] = self.value(v)
        return out

    # -- explicit provenance ---------------------------------------------------------

    def handle(self, item: tuple[Any, ...]) -> None:
        """Handle a control message from the agent threads (``("trace", value, step_id, end_ns)``)."""
        if item[0] == "trace":
            _, value, step_id, t = item
            if not isinstance(value, _UNTRACKED):
                self._keep(id(value), (step_id, value, t, "declared", _ENTRY_BYTES + 64))

    # -- tracking ----------------------------------------------------------------------

    def _keep(self, key: int, entry: tuple[str, Any, int, str, int]) -> None:
        registry = self.registry
        old = registry.pop(key, None)
        if old is not None:
            self._registry_bytes -= old[4]
        registry[key] = entry
        self._registry_bytes += entry[4]
        if self._registry_bytes > CONFIG.track_budget_bytes:
            # Release the oldest values first (dicts keep insertion order).
            target = CONFIG.track_budget_bytes * 0.9
            while registry and self._registry_bytes > target:
                oldest = next(iter(registry))
                self._registry_bytes -= registry.pop(oldest)[4]

    def _register(self, h: StepHandle, value: Any, size: int, depth: int = 1) -> None:
        if isinstance(value, _UNTRACKED) or (type(value) is str and len(value) < MIN_TRACKED_STR):
            return
        self._keep(id(value), (h.id, value, h.t1 or 0, "tracked", _ENTRY_BYTES + size))
        # The items of a returned list/tuple/dict are that step's outputs too.
        if depth > 0 and type(value) in (list, tuple):
            for item in value[:64]:
                if id(item) not in self.registry:
                    self._register(h, item, 64, depth - 1)
        elif depth > 0 and type(value) is dict:
            for item in list(value.values())[:64]:
                if id(item) not in self.registry:
                    self._register(h, item, 64, depth - 1)

    def _find(self, h: StepHandle, value: Any) -> list[Dependency]:
        """Registered objects reachable from a step's arguments (not descending into hits)."""
        registry = self.registry
        if type(value) is str:
            # The common case of a single text argument: one lookup, no walk.
            hit = registry.get(id(value))
            if hit is not None and hit[1] is value and hit[0] != h.id and hit[2] <= h.t0:
                return [Dependency(step_id=hit[0], kind="data", origin=hit[3])]  # type: ignore[arg-type]
            return []
        found: dict[str, Dependency] = {}
        own = h.id
        start = h.t0
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
                    if not isinstance(v, _UNTRACKED):
                        stack.append((v, str(k) if key is None and top and obj is value else key, depth - 1))
            elif t in (list, tuple, set, frozenset):
                for v in list(obj)[:128]:
                    if not isinstance(v, _UNTRACKED):
                        stack.append((v, key, depth - 1))
        return list(found.values())

    # -- encoding -------------------------------------------------------------------------

    def encode_safe(self, h: StepHandle, after_end: bool = False) -> list[dict[str, Any]]:
        """`encode`, and when that fails (it should not), a minimal record of the step rather than nothing."""
        try:
            return self.encode(h, after_end)
        except Exception as exc:  # noqa: BLE001 - a step is never lost for a field
            self.run._internal_error("encode")
            try:
                name = self.name(h.name) or "step"
            except Exception:  # noqa: BLE001  # pragma: no cover
                name = "step"
            return [
                step_record(
                    self.run.run_id,
                    h.id,
                    name,
                    h.kind if h.kind.__class__ is str else "other",
                    h.t0 if h.t0.__class__ is int else 0,
                    h.t1 if h.t1.__class__ is int else None,
                    "error" if h.status == "error" else "ok",
                    parent_id=h.parent.id if h.parent is not None else None,
                    attributes={"unencodable": f"{type(exc).__name__}: the step's fields could not be recorded"},
                )
            ]

    def encode(self, h: StepHandle, after_end: bool = False) -> list[dict[str, Any]]:
        """Records for a finished step: ``open`` records for newly seen parents, then the step."""
        out: list[dict[str, Any]] = []
        run_id = self.run.run_id
        parent = h.parent
        chain: list[StepHandle] = []
        while isinstance(parent, StepHandle):
            if parent._announced or parent.t1 is not None:
                break
            chain.append(parent)
            parent = parent.parent
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

        deps: list[Dependency] = list(h.deps)
        # Scalars were not snapshotted: the step's own input is the live object.
        live_in = h._live_in if h._live_in is not None else h.input
        if live_in is not None and type(live_in) is not bytes:
            deps.extend(self._find(h, live_in))
        for decision in h.branch:
            deps.append(Dependency(step_id=decision, kind="control", origin="declared"))
        h._live_in = None
        live_out = h._live_out if h._live_out is not None else h.output
        if live_out is not None and type(live_out) is not bytes:
            snap = h.output
            self._register(h, live_out, len(snap) if snap.__class__ in (bytes, str) else 64)
        h._live_out = None

        sid = h.id
        output = self.value(h.output) if h.output is not None else None
        error = None
        if h.err is not None:
            error = {"type": self.name(h.err[0]), "message": self.text(h.err[1])}
            if h.error_id is not None:
                error["error_id"] = h.error_id
            if h.err[2]:
                error["traceback"] = self.text(h.err[2])
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
        rec = step_record(
            run_id,
            sid,
            self.name(h.name),
            h.kind,
            h.t0,
            h.t1,
            h.status,
            parent_id=h.parent.id if h.parent is not None else None,
            agent=self.name(h.agent),
            input=self.value(h.input) if h.input is not None else None,
            output=output,
            error=error,
            attempt=h.attempt,
            retry_of=h.retry_of,
            deps=uniq,
            attributes=attrs,
        )
        if h.kind == "tool" and h.status == "ok":
            payload_error = error_payload(output)
            if payload_error is not None:
                self._payload_error(h, rec, self.text(payload_error), out)
        out.append(rec)
        return out

    def _payload_error(
        self, h: StepHandle, rec: dict[str, Any], message: str, out: list[dict[str, Any]]
    ) -> None:
        """A tool returned an error as data: that is an error too (it stays green elsewhere)."""
        eid = new_error_id()
        run_id = self.run.run_id
        rec["status"] = "error"
        rec["error"] = {"type": "ToolErrorPayload", "message": message, "error_id": eid}
        out.append(
            error_record(
                run_id, eid, h.id, "ToolErrorPayload", message, None, h.attempt or 1, {"reported": True, "payload": True}
            )
        )
        out.append(stage_record(run_id, eid, "occurred", h.id, h.t1 or 0, "tool result flagged as an error"))


def error_payload(output: Any) -> str | None:
    """The error message of a tool result that flags itself as an error, else None.

    Recognized: ``{"is_error": true}``, ``{"isError": true}`` (MCP), ``{"success": false|0}``,
    ``{"ok": false}``, ``{"status": "error"|"failed"}`` with an ``error``/``message`` field,
    ``{"error": "..."}`` with no result.
    """
    if not isinstance(output, dict):
        return None
    msg = output.get("error") or output.get("message") or output.get("detail")
    text = msg if isinstance(msg, str) else (str(msg) if msg else "tool reported an error")
    if output.get("is_error") is True or output.get("isError") is True:
        return text
    if "success" in output and output["success"] in (False, 0):
        return text
    if output.get("ok") is False:
        return text
    status = output.get("status")
    if isinstance(status, str) and status.lower() in ("error", "failed", "failure"):
        return text
    if (
        isinstance(output.get("error"), (str, dict))
        and output.get("error")
        and not any(k in output for k in ("result", "results", "data", "rows", "output"))
    ):
        return text
    return None
