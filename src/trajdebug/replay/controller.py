"""The replay controller: per step, serve the recording, the patch, or run live.

The recorder consults it before every decorated step
(`trajdebug.record.context._REPLAY`: ``before(handle) -> (served, value)``,
which may raise, and ``after(handle, value)`` once a live step returned).  The
rules are described in `trajdebug.replay.engine`.
"""

from __future__ import annotations

import copy
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from trajdebug.core.codec import to_jsonable
from trajdebug.core.model import REPR_KEY, TRUNCATED_KEY
from trajdebug.replay.cassette import (
    BOUNDARY_KINDS,
    STATE_VALUES_ATTR,
    Cassette,
    Closest,
    Entry,
    Path,
    fingerprint,
    is_boundary,
)


Mode = Literal["recorded", "live", "strict"]
"""How steps in the patch's forward slice run: served when their request was
recorded, else live (``recorded``); always live (``live``); served or stop (``strict``)."""

CallMode = Literal["served", "live", "patched", "rerun"]
"""What happened to one step during a replay."""


class ReplayDivergence(BaseException):
    """Raised inside the agent when a strict replay asks for a call that was not recorded.

    It derives from BaseException so that the agent's own ``except Exception``
    handlers (retries, fallbacks) cannot swallow it.
    """

    def __init__(self, divergence: Divergence) -> None:
        super().__init__(divergence.describe())
        self.divergence = divergence


@dataclass(frozen=True, slots=True)
class Correction:
    """A corrected output for one step, and where it came from."""

    output: Any
    """The output the patched step returns."""
    state: Mapping[str, Any] | None = None
    """``run.state`` writes the step should make (a state-writing step's effect)."""
    source: str = "user"
    """Where the correction came from: ``fixer``, ``passing-run``, ``diagnoser``, ``user``."""
    origin: str | None = None
    """The step (``run_id/step_id``) the correction was taken from, when it came from a run."""

    def to_dict(self) -> dict[str, Any]:
        """The correction as JSON data."""
        out: dict[str, Any] = {"output": to_jsonable(self.output), "source": self.source}
        if self.state:
            out["state"] = to_jsonable(dict(self.state))
        if self.origin:
            out["origin"] = self.origin
        return out


@dataclass(frozen=True, slots=True)
class Divergence:
    """A boundary call the recording could not answer as asked."""

    step_id: str
    """The step in the replayed run."""
    name: str
    """Its name."""
    path: Path
    """Its name path."""
    ordinal: int
    """Its call order among calls with that path."""
    reason: str
    """What diverged, in words."""
    closest: Closest | None = None
    """The closest recorded request, when there is one."""

    def describe(self) -> str:
        """One line naming the call and the closest recorded request."""
        where = "/".join(self.path) + f"[{self.ordinal}]"
        text = f"{where}: {self.reason}"
        c = self.closest
        if c is not None:
            diff = f"; differing arguments: {', '.join(c.differing)}" if c.differing else ""
            text += f" (closest recorded request: {c.step_id} at {'/'.join(c.path)}[{c.ordinal}], similarity {c.similarity:.2f}{diff})"
        return text

    def to_dict(self) -> dict[str, Any]:
        """The divergence as JSON data."""
        return {
            "step_id": self.step_id,
            "name": self.name,
            "path": list(self.path),
            "ordinal": self.ordinal,
            "reason": self.reason,
            "closest": self.closest.to_dict() if self.closest else None,
        }


@dataclass(frozen=True, slots=True)
class Call:
    """What the replay did with one step."""

    step_id: str
    """The step in the replayed run."""
    name: str
    """Its name."""
    original: str | None
    """The aligned step of the original run (None for a step the original did not have)."""
    mode: CallMode
    """Served from the recording, run live, patched, or re-executed (deterministic step)."""
    reason: str = ""
    """Why a boundary step ran live."""

    def to_dict(self) -> dict[str, Any]:
        """The call as JSON data."""
        return {
            "step_id": self.step_id,
            "name": self.name,
            "original": self.original,
            "mode": self.mode,
            "reason": self.reason,
        }


def _servable(value: Any, depth: int = 0) -> bool:
    # A repr or truncation marker is not the value the agent saw: serving it would lie.
    if isinstance(value, dict):
        if REPR_KEY in value or TRUNCATED_KEY in value:
            return False
        return depth > 64 or all(_servable(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return depth > 64 or all(_servable(v, depth + 1) for v in value)
    return True


def _request(value: Any) -> Any:
    """A live request as the recorder would have stored it (JSON, truncated, redacted)."""
    from trajdebug.record.config import CONFIG

    data = to_jsonable(value, CONFIG.max_value_bytes)
    if CONFIG.redact:
        from trajdebug.core import redaction

        red = redaction.redactor()
        if red is not None:
            data = red(data)
    return data


def _exception(entry: Entry) -> BaseException:
    """Rebuild the exception a recorded step raised, so the agent's handlers see the same type.

    The class is looked up by the qualified name in the recorded traceback, among
    modules already imported (recorded data never causes an import).
    """
    err = entry.step.error
    type_name = err.type if err is not None else "Exception"
    message = err.message if err is not None else ""
    candidates: list[str] = []
    if err is not None and err.traceback:
        last = err.traceback.strip().splitlines()[-1]
        head = last.split(":", 1)[0].strip()
        if head.endswith(type_name):
            candidates.append(head)
    candidates.append(f"builtins.{type_name}")
    for qual in candidates:
        mod_name, _, cls_name = qual.rpartition(".")
        mod = sys.modules.get(mod_name or "builtins")
        cls = getattr(mod, cls_name, None) if mod is not None else None
        if isinstance(cls, type) and issubclass(cls, Exception):
            try:
                return cls(message)
            except Exception:  # noqa: BLE001 - a class with another constructor
                break
    return RecordedError(type_name, message)


class RecordedError(Exception):
    """A recorded exception whose class could not be rebuilt; ``type`` holds its class name."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type = type_name


class Controller:
    """The replay controller the recorder consults (see `trajdebug.record.context._REPLAY`).

    With no cassette it only captures the values of ``run.state`` writes, so
    that a run recorded under it can later supply corrections for state steps.
    """

    def __init__(
        self,
        cassette: Cassette | None = None,
        *,
        keys: Mapping[tuple[Path, int], str] | None = None,
        patch: Mapping[str, Correction] | None = None,
        forward: Iterable[str] = (),
        must_run: Iterable[str] = (),
        mode: Mode = "recorded",
        requests: Mapping[str, str] | None = None,
        state_edges: Iterable[tuple[str, str]] = (),
        slicer: Callable[[Iterable[str]], Iterable[str]] | None = None,
    ) -> None:
        self.cassette = cassette
        self.keys = dict(keys or {})
        self.patch = dict(patch or {})
        self.forward = set(forward)
        self.must_run = frozenset(must_run)
        self.mode = mode
        self.kinds = cassette.kinds if cassette is not None else BOUNDARY_KINDS
        self.requests = dict(requests or {})
        self.slicer = slicer
        self.calls: list[Call] = []
        self.divergences: list[Divergence] = []
        self.applied: set[str] = set()
        self._counts: dict[Path, int] = {}
        self._lock = threading.RLock()
        # Recorded steps by (path, request fingerprint), in call order, to align calls
        # that concurrency started in another order than recorded.
        self._by_request: dict[tuple[Path, str], list[str]] = {}
        for (path, _), sid in sorted(self.keys.items(), key=lambda kv: kv[0][1]):
            fp = self.requests.get(sid)
            if fp is not None:
                self._by_request.setdefault((path, fp), []).append(sid)
        self._claimed: set[str] = set()
        self._reads: dict[str, set[str]] = {}
        self._writes: dict[str, set[str]] = {}
        for writer, reader in state_edges:
            self._reads.setdefault(reader, set()).add(writer)
            self._writes.setdefault(writer, set()).add(reader)

    @staticmethod
    def _path(h: Any) -> Path:
        names = [h.name]
        p = h.parent
        while p is not None and hasattr(p, "name"):
            names.append(p.name)
            p = p.parent
        return tuple(reversed(names))

    def before(self, h: Any) -> tuple[bool, Any]:
        """Decide for one starting step: ``(True, value)`` to serve, ``(False, None)`` to run it."""
        if self.cassette is None:
            return False, None
        # Steps in worker threads share the controller (the context is copied):
        # call order and playback must be assigned one step at a time.
        with self._lock:
            return self._decide(h)

    def _decide(self, h: Any) -> tuple[bool, Any]:
        assert self.cassette is not None
        path = self._path(h)
        ordinal = self._counts.get(path, 0)
        self._counts[path] = ordinal + 1
        request = _request(h.input)
        fp = fingerprint(request)
        orig = self._align(path, ordinal, fp)
        if orig is not None and orig in self.patch:
            corr = self.patch[orig]
            self.applied.add(orig)
            h.set("replay", "patched")
            self._write_state(h, corr.state)
            self.calls.append(Call(h.id, h.name, orig, "patched"))
            return True, copy.deepcopy(corr.output)
        in_slice = orig is None or orig in self.forward
        missed = not in_slice and orig is not None and self.requests.get(orig, fp) != fp
        if missed:
            # The patch cannot have changed this step's input, yet it changed: the
            # recording missed a dependency (or the agent is nondeterministic off the
            # boundary).  The step is downstream after all, and so is every step its
            # output reaches: serving them their old responses would falsify the
            # counterfactual.
            assert orig is not None
            self._extend(orig)
            in_slice = True
        if not is_boundary(h.kind, h.attrs, self.kinds):
            self.calls.append(Call(h.id, h.name, orig, "rerun"))
            return False, None
        if missed:
            self.divergences.append(
                Divergence(
                    h.id,
                    h.name,
                    path,
                    ordinal,
                    "request differs from the recording outside the patch's forward slice (a missed dependency?)",
                    self.cassette.closest(path, request),
                )
            )
        if orig is not None and orig in self.must_run:
            return self._live(h, orig, "encloses a patched step")
        if self.mode == "live" and in_slice:
            return self._live(h, orig, "live mode, downstream of the patch")
        if in_slice and orig is not None and self._reads_changed_state(orig):
            # The fingerprint covers the arguments only: a step that reads state written
            # downstream of the patch (or writes state such a step reads) has an input the
            # recorded request does not show, so no recorded response can stand for it.
            reason = "reads or writes state that the patch changed"
            if self.mode == "strict":
                div = Divergence(h.id, h.name, path, ordinal, reason)
                self.divergences.append(div)
                raise ReplayDivergence(div)
            return self._live(h, orig, reason)
        entry = self.cassette.lookup(path, ordinal, fp)
        if entry is None:
            reason = "request not recorded"
            if missed:
                div = self.divergences[-1]
                reason = div.reason
            else:
                div = Divergence(h.id, h.name, path, ordinal, reason, self.cassette.closest(path, request))
                self.divergences.append(div)
            if self.mode == "strict":
                raise ReplayDivergence(div)
            return self._live(h, orig, reason)
        if not _servable(entry.step.output):
            if self.mode == "strict":
                raise ReplayDivergence(
                    Divergence(
                        h.id,
                        h.name,
                        path,
                        ordinal,
                        "recorded response is not servable (truncated or not JSON)",
                    )
                )
            return self._live(h, orig, "recorded response is truncated or not JSON")
        return self._serve(h, orig, entry)

    def _align(self, path: Path, ordinal: int, fp: str) -> str | None:
        """The recorded step this call replays: by call order, unless the request says otherwise.

        Concurrent calls of one path may start in another order than recorded; a
        call whose request is not the one recorded at its call order, but is the
        request of another (not yet replayed) recorded call of that path, is that call.
        """
        by_order = self.keys.get((path, ordinal))
        if by_order is not None and self.requests.get(by_order, fp) == fp and by_order not in self._claimed:
            self._claimed.add(by_order)
            return by_order
        for sid in self._by_request.get((path, fp), ()):
            if sid not in self._claimed:
                self._claimed.add(sid)
                return sid
        if by_order is not None:
            self._claimed.add(by_order)
        return by_order

    def _extend(self, step_id: str) -> None:
        """Add a step, and what its output reaches, to the patch's forward slice."""
        self.forward.add(step_id)
        if self.slicer is not None:
            self.forward.update(self.slicer([step_id]))

    def _reads_changed_state(self, step_id: str) -> bool:
        """Whether the step reads state an in-slice step wrote, or writes state an in-slice step reads."""
        ups = self._reads.get(step_id, ())
        downs = self._writes.get(step_id, ())
        return any(u in self.forward for u in ups) or any(d in self.forward for d in downs)

    def _live(self, h: Any, orig: str | None, reason: str) -> tuple[bool, Any]:
        h.set("replay", "live")
        self.calls.append(Call(h.id, h.name, orig, "live", reason))
        return False, None

    def _serve(self, h: Any, orig: str | None, entry: Entry) -> tuple[bool, Any]:
        recorded = entry.step
        for k, v in recorded.attributes.items():
            if k not in ("state_writes", "state_reads", STATE_VALUES_ATTR, "replay"):
                h.set(k, copy.deepcopy(v))
        h.set("replay", "served")
        h.set("replay_source", f"{entry.run_id}/{recorded.step_id}")
        self.calls.append(Call(h.id, h.name, orig, "served"))
        self._write_state(h, recorded.attributes.get(STATE_VALUES_ATTR))
        if entry.raised:
            raise _exception(entry)
        return True, copy.deepcopy(recorded.output)

    @staticmethod
    def _write_state(h: Any, values: Mapping[str, Any] | None) -> None:
        run = getattr(h, "_run", None)
        if not values or run is None:
            return
        state = run.state
        for k, v in values.items():
            state[k] = copy.deepcopy(v)

    def after(self, h: Any, value: Any) -> None:
        """A step ran live: capture the values of its ``run.state`` writes."""
        writes = h.attrs.get("state_writes") if h.attrs else None
        run = getattr(h, "_run", None)
        state = getattr(run, "_state", None) if run is not None else None
        if not writes or state is None:
            return
        # Read the backing dict, not the mapping: a read through it would be
        # recorded as a state read of this step.
        data = getattr(state, "_data", {})
        h.set(STATE_VALUES_ATTR, {k: to_jsonable(data[k]) for k in writes if k in data})


__all__ = [
    "Call",
    "CallMode",
    "Controller",
    "Correction",
    "Divergence",
    "Mode",
    "RecordedError",
    "ReplayDivergence",
]
