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

from typing import TYPE_CHECKING, Any

from trajdebug._encode import loads, to_jsonable
from trajdebug.format import dep_to_dict
from trajdebug.model import TRUNCATED_KEY, Dependency
from trajdebug.record.config import CONFIG
from trajdebug.record.recorder import StepHandle


if TYPE_CHECKING:
    from trajdebug.record.recorder import RunHandle

MIN_TRACKED_STR = 24
"""Strings shorter than this are not identity-tracked (they may be interned or cached)."""

_MAX_WALK = 512
_UNTRACKED = (type(None), bool, int, float, complex, bytes)


class Tracker:
    """Per-run registry of produced values and the encoder of step records."""

    def __init__(self, run: RunHandle) -> None:
        self.run = run
        self.registry: dict[int, tuple[str, Any, int, str]] = {}
        self._redactor: Any = None
        if CONFIG.redact:
            from trajdebug.record.redact import Redactor

            self._redactor = Redactor(CONFIG.redact_keys)

    def redact(self, record: dict[str, Any]) -> dict[str, Any]:
        """A record with its secrets redacted (when redaction is on); ids and times are left alone."""
        if self._redactor is None:
            return record
        redacted: dict[str, Any] = self._redactor(record)
        return redacted

    def release(self) -> None:
        """Drop the strong references at the run's end."""
        self.registry.clear()

    # -- explicit provenance ---------------------------------------------------------

    def handle(self, item: tuple[Any, ...]) -> None:
        """Handle a control message from the agent threads (``("trace", value, step_id, end_ns)``)."""
        if item[0] == "trace":
            _, value, step_id, t = item
            if not isinstance(value, _UNTRACKED):
                self.registry[id(value)] = (step_id, value, t, "declared")

    # -- tracking ----------------------------------------------------------------------

    def _register(self, h: StepHandle, value: Any, depth: int = 1) -> None:
        if isinstance(value, _UNTRACKED) or (type(value) is str and len(value) < MIN_TRACKED_STR):
            return
        self.registry[id(value)] = (h.id, value, h.t1 or 0, "tracked")
        # The items of a returned list/tuple/dict are that step's outputs too.
        if depth > 0 and type(value) in (list, tuple):
            for item in value[:64]:
                if id(item) not in self.registry:
                    self._register(h, item, depth - 1)
        elif depth > 0 and type(value) is dict:
            for item in list(value.values())[:64]:
                if id(item) not in self.registry:
                    self._register(h, item, depth - 1)

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

    def _value(self, snap: Any) -> Any:
        if type(snap) is bytes:
            if len(snap) > CONFIG.max_value_bytes:
                return {
                    TRUNCATED_KEY: len(snap),
                    "head": snap[: CONFIG.max_value_bytes].decode("utf-8", "ignore"),
                }
            needs_redaction = self._redactor is not None and self._redactor.needed(snap)
            try:
                snap = loads(snap)
            except ValueError:
                return to_jsonable(snap)
            return self._redactor(snap) if needs_redaction else snap
        if (type(snap) is str and len(snap) > CONFIG.max_value_bytes) or type(snap) is int:
            snap = to_jsonable(snap, CONFIG.max_value_bytes)
        if self._redactor is not None:
            snap = self._redactor(snap)
        return snap

    def encode(self, h: StepHandle) -> list[dict[str, Any]]:
        """Records for a finished step: ``open`` records for newly seen parents, then the step."""
        out: list[dict[str, Any]] = []
        run = self.run
        parent = h.parent
        chain: list[StepHandle] = []
        while isinstance(parent, StepHandle):
            if parent._announced or parent.t1 is not None:
                break
            chain.append(parent)
            parent = parent.parent
        for p in reversed(chain):
            p._announced = True
            rec = {
                "v": 1,
                "t": "open",
                "run_id": run.run_id,
                "step_id": p.id,
                "name": p.name,
                "kind": p.kind,
                "start_ns": p.t0,
            }
            if p.parent is not None:
                rec["parent_id"] = p.parent.id
            if p.agent is not None:
                rec["agent"] = p.agent
            out.append(rec)

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
            self._register(h, live_out)
        h._live_out = None

        sid = h.id
        output = self._value(h.output)
        rec = {
            "v": 1,
            "t": "step",
            "run_id": run.run_id,
            "step_id": sid,
            "name": h.name,
            "kind": h.kind,
            "start_ns": h.t0,
            "end_ns": h.t1,
            "status": h.status,
        }
        if h.parent is not None:
            rec["parent_id"] = h.parent.id
        if h.agent is not None:
            rec["agent"] = h.agent
        if h.input is not None:
            rec["input"] = self._value(h.input)
        if output is not None:
            rec["output"] = output
        if h.err is not None:
            err: dict[str, Any] = {"type": h.err[0], "message": h.err[1]}
            if h.error_id is not None:
                err["error_id"] = h.error_id
            if h.err[2]:
                err["traceback"] = h.err[2]
            rec["error"] = self._value(err)
        if h.attempt is not None and h.attempt != 1:
            rec["attempt"] = h.attempt
        if h.retry_of is not None:
            rec["retry_of"] = h.retry_of
        if deps:
            seen: set[tuple[str, str]] = set()
            uniq = []
            for d in deps:
                k = (d.step_id, d.kind)
                if k not in seen and d.step_id != sid:
                    seen.add(k)
                    uniq.append(dep_to_dict(d))
            rec["deps"] = uniq
        if h.attrs:
            rec["attributes"] = self._value(h.attrs) if self._redactor is not None else h.attrs
        if h.kind == "tool" and h.status == "ok":
            payload_error = error_payload(output)
            if payload_error is not None:
                self._payload_error(h, rec, payload_error, out)
        out.append(rec)
        return out

    def _payload_error(
        self, h: StepHandle, rec: dict[str, Any], message: str, out: list[dict[str, Any]]
    ) -> None:
        """A tool returned an error as data: that is an error too (it stays green elsewhere)."""
        from trajdebug.record import errors

        eid = errors._new_error_id()
        run = self.run
        rec["status"] = "error"
        rec["error"] = {"type": "ToolErrorPayload", "message": message, "error_id": eid}
        out.append(
            {
                "v": 1,
                "t": "error",
                "run_id": run.run_id,
                "error_id": eid,
                "step_id": h.id,
                "type": "ToolErrorPayload",
                "message": message,
                "parent_error_id": None,
                "attempt": h.attempt or 1,
                "attributes": {"reported": True, "payload": True},
            }
        )
        out.append(
            {
                "v": 1,
                "t": "stage",
                "run_id": run.run_id,
                "error_id": eid,
                "stage": "occurred",
                "step_id": h.id,
                "time_ns": h.t1,
                "reason": "tool result flagged as an error",
            }
        )


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
