"""Writer-side work for each finished step: its records, with tracked data edges and redaction.

Runs on the writer thread, off the agent's hot path.  `Tracker` is the run's encoder: a
`trajdebug.record.registry.Registry` (identity tracking of values between steps) and a
`trajdebug.record.encoding.Encoder` (each value JSON-safe, redacted, capped) that turns a finished
`trajdebug.record.steps.StepHandle` into its records (`Tracker.encode`: the ``open`` records of
newly seen parents, the step, a tool's error payload or a timeout overrun as an error).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trajdebug.core.codec import Encoded
from trajdebug.core.model import TRUNCATED_KEY, Dependency
from trajdebug.core.payloads import error_payload
from trajdebug.core.schema import (
    FORMAT_VERSION,
    dep_to_dict,
    error_record,
    open_record,
    plain_step_record,
    stage_record,
    step_record,
)
from trajdebug.record import config as _config
from trajdebug.record.account import Account
from trajdebug.record.context import RemoteParent
from trajdebug.record.decorate import bind
from trajdebug.record.encoding import MAX_NAME as MAX_NAME
from trajdebug.record.encoding import Encoder
from trajdebug.record.encoding import red_head as red_head
from trajdebug.record.exceptions import new_error_id
from trajdebug.record.registry import _ENTRY_BYTES, _UNTRACKED, MIN_TRACKED_STR, Registry
from trajdebug.record.registry import Entry as Entry
from trajdebug.record.registry import Trace as Trace
from trajdebug.record.steps import StepHandle
from trajdebug.record.timeouts import overrun


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



class Tracker(Registry, Encoder):
    """Per-run registry of produced values, and the encoder of the run's records (writer thread).

    Every value is made JSON-safe, redacted and only then cut to
    ``max_value_bytes`` (so a secret beyond the cut is scrubbed, not half-kept:
    `Encoder`).  The registry keeps strong references to produced objects within
    a byte budget (`Registry`).  The two are bases of one class, not parts it
    holds, so that `encode` reaches each method and field with one attribute
    lookup, as when they were one class.
    """

    def __init__(self, run_id: str, account: Account, rewrite: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self.run_id = run_id
        self.account = account
        """Where an internal failure is counted (the run's)."""
        Registry.__init__(self)
        Encoder.__init__(self, rewrite)

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

        # What is recorded is the frozen JSON (`StepHandle._in`/`_out`) where the step made one, else the
        # value itself (a scalar); identity tracking reads the live objects, `input` and `output`.
        live_in, live = h.input, h.output
        inp: Any = h._in
        outp: Any = h._out
        if inp is None:
            inp = live_in
            if h._spec is not None:
                # A decorated call's scalar arguments, bound here rather than on the agent's thread.
                inp = live_in = bind(h._spec, inp, h._kw)
        if outp is None:
            outp = live
        # Identity tracking (inline: a call per step shows in the cost per step); scalars were not snapshotted.
        deps: list[Dependency] | None = None
        if live_in is not None and type(live_in) is not bytes:
            deps = self._find(sid, h.t0, live_in) or (  # (`_whole`: never a decorated call's new dict)
                self._whole(sid, h.t0, live_in) if h._spec is None and type(live_in) is dict else None
            ) or None
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


    def plain(self, h: StepHandle) -> dict[str, Any] | None:
        """`encode`'s one record of the commonest step, or None for any other step (`encode` takes those).

        The commonest step ended ``ok`` with a text in (a `with` step's input, or a decorated call's one text
        argument) and a text out, both within the size cap (redacted as `encode` redacts them); no extras
        (error, attributes, agent, retry, time bound, declared or found data edge, a parent to announce) and no
        relay of its argument.  Its record is built in this one frame: `encode` spends about ten calls on it
        (binding, identity lookup, the argument encoder, the record's builder), a quarter of the writer's
        instructions per step.
        A step whose input or output was snapshotted as a structure is `snapped`'s (or `encode`'s).
        """
        live = h.output
        if type(live) is not str or h.status != "ok" or h._in is not None or h._out is not None:
            return None
        inp = h.input
        key = None
        if h._spec is not None:
            inp, key = self._one_argument(h, inp)
        if (
            type(inp) is not str or h.err is not None or h.deps or h.attrs or h.branch or h.agent is not None
            or h.attempt is not None or h.retry_of is not None or h.timeout is not None
        ):
            return None
        parent = h.parent
        if parent is not None and type(parent) is StepHandle and not parent._announced and parent.t1 is None:
            return None  # its ``open`` record goes first (`encode`)
        red = self.redactor
        cap = self._max
        if red is None or len(inp) > cap or len(live) > cap:
            return None
        sid = h._sid
        if sid is None:
            sid = f"{_config._prefix}{h.seq:08x}"  # as `encode` formats and keeps it
            if h.seq:
                h._sid = sid
        t0, t1 = h.t0, h.t1
        hit = self.registry.get(id(inp))
        if (hit is not None and hit[1] is inp and hit[0] != sid and hit[2] <= t0) or (
            live is inp and len(live) >= MIN_TRACKED_STR
        ):
            return None  # a data edge found by identity, or a relay of its argument (`encode`)
        if len(live) >= MIN_TRACKED_STR:
            self._keep(id(live), (sid, live, t1 or 0, "tracked", _ENTRY_BYTES + len(live)))
        out: Any = live
        if red.may_hold(inp + live):
            # Redacted as `encode` redacts them (after the last way back to it: the counts move): a call's
            # argument within the cap is not cut, a `with` step's input is.
            if key is None:
                inp, out = self._str(inp), self._str(live)
            else:
                out, inp = self._str(live), red.text(inp)
        name = self._names.get(h.name or "") or self.name(h.name)
        if key is not None:
            inp = {key: inp}
        pid = None if parent is None else parent.id
        # Each record in one literal, its keys in `plain_step_record`'s order (no dict grown key by key).
        if pid is None:
            return {
                "v": FORMAT_VERSION, "t": "step", "run_id": self.run_id, "step_id": sid, "name": name,
                "kind": h.kind, "start_ns": t0, "end_ns": t1, "status": "ok", "input": inp, "output": out,
            }  # fmt: skip
        return {
            "v": FORMAT_VERSION, "t": "step", "run_id": self.run_id, "step_id": sid, "name": name,
            "kind": h.kind, "start_ns": t0, "end_ns": t1, "status": "ok", "parent_id": pid, "input": inp,
            "output": out,
        }  # fmt: skip

    def snapped(self, h: StepHandle) -> dict[str, Any] | None:
        """`encode`'s one record of a step whose input was snapshotted as a structure (a chat request), its
        output snapshotted too or a text or nothing, or None for any other step (`encode` takes those).

        The step has no extras (as `plain`: no error, attributes, agent, retry, time bound, declared or found
        data edge, parent to announce, relay of its argument) and is not a tool (whose result may flag an
        error), and its snapshots are within the size cap.  Everything that can send the step to `encode`
        is decided before anything is registered, so that `encode` starts from the state it would have
        had.  Its record is built in this one frame, the snapshots tested by the redactor without the calls
        of `_values`: `encode` spends about a dozen calls on this step, most of the writer's Python.
        """
        inp = h._in
        outp = h._out
        live = h.output
        if (
            type(inp) is not bytes or (outp is None and live is not None and type(live) is not str)
            or h.err is not None or h.deps or h.attrs or h.branch or h.agent is not None or h.attempt is not None
            or h.retry_of is not None or h.timeout is not None or h.kind == "tool" or h._spec is not None
        ):
            return None
        red = self.redactor
        cap = self._max
        if red is None or len(inp) > cap or (outp is not None and len(outp) > cap):
            return None
        parent = h.parent
        if parent is not None and type(parent) is StepHandle and not parent._announced and parent.t1 is None:
            return None  # its ``open`` record goes first (`encode`)
        sid = h._sid
        if sid is None:
            sid = f"{_config._prefix}{h.seq:08x}"  # as `encode` formats and keeps it
            if h.seq:
                h._sid = sid
        t0, t1 = h.t0, h.t1
        live_in = h.input
        if live_in is not None and type(live_in) is not bytes and (
            self._find(sid, t0, live_in) or (type(live_in) is dict and self._whole(sid, t0, live_in))
        ):
            return None  # a data edge found by identity (`encode` finds it again: the registry is as it was)
        if live_in is not None and _is_argument(live, live_in):
            return None  # a relay of its argument
        if type(live) is str:
            if len(live) >= MIN_TRACKED_STR:
                self._keep(id(live), (sid, live, t1 or 0, "tracked", _ENTRY_BYTES + len(live)))
        elif live is not None and type(live) is not bytes:
            self._register(sid, t1 or 0, live, len(outp) if type(outp) is bytes else 64)
        # Redacted by `_from_json` itself, the one test of a snapshot: testing it here first tested a dirty one
        # twice (review rev46r: a resent request holding a secret paid the full redaction walk twice per step).
        value_in: Any = self._from_json(inp, True)
        value_out: Any = None
        if outp is not None:
            value_out = self._from_json(outp, True)
        elif live is not None:
            value_out = self._str(live)
        name = self._names.get(h.name or "") or self.name(h.name)
        # The record's keys in `plain_step_record`'s order (no dict grown key by key where it can be helped).
        rec = {
            "v": FORMAT_VERSION, "t": "step", "run_id": self.run_id, "step_id": sid, "name": name,
            "kind": h.kind, "start_ns": t0, "end_ns": t1, "status": h.status,
        }  # fmt: skip
        if parent is not None:
            rec["parent_id"] = parent.id
        if value_in is not None:
            rec["input"] = value_in
        if value_out is not None:
            rec["output"] = value_out
        return rec

    def _one_argument(self, h: StepHandle, args: Any) -> tuple[Any, str | None]:
        """A decorated call's one argument given by position or keyword, and its name as recorded (`plain`);
        (None, None) for any other call, or an argument secret by its name."""
        spec = h._spec
        kw = h._kw
        assert spec is not None
        names = spec[0]
        if spec[2] and args:
            args, names = args[1:], names[1:]  # self or cls (`bind`)
        if kw is None:
            if len(args) != 1 or not names:
                return None, None
            k, v = names[0], args[0]
        elif args or len(kw) != 1:
            return None, None
        else:
            ((k, v),) = kw.items()
        param = self._params.get(k) or self._param(k)
        return (None, None) if param[1] else (v, param[0])

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
