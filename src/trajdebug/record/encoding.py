"""A run's values as recorded: JSON-safe, redacted, then capped (writer thread).

Every value a record carries (a step's input and output, a call's arguments, a name, a message,
attributes, the fields of a ready-made record) passes through `Encoder`: made JSON-safe, redacted
and only then cut to ``max_value_bytes``, so a secret beyond the cut is scrubbed, not half-kept.
What repeats within a run (a function's name, a decorated call's argument names) is decided once
and remembered for the run.  `trajdebug.record.tracking.Tracker` is an `Encoder`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from trajdebug.core import redaction
from trajdebug.core.codec import Encoded, dumps, loads, marker, safe_repr, to_jsonable, truncated
from trajdebug.core.model import REDACTED, TRUNCATED_KEY
from trajdebug.core.schema import RECORDER_KEY
from trajdebug.record.config import CONFIG


MAX_NAME = 1024
"""Step, agent and error-type names longer than this are cut (with an ellipsis)."""

_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})
"""The immutable scalars a step keeps as they came, not snapshotted (`trajdebug.record.steps`)."""
_ID_FIELDS = frozenset(
    {"v", "t", "run_id", "step_id", "error_id", "parent_id", "parent_error_id", "retry_of", "stage", "kind",
     "status", "outcome", "continues", "start_ns", "end_ns", "time_ns", "attempt", "source_index"}
)
_TEXT_FIELDS = frozenset({"message", "failure_reason", "reason", "traceback"})
_NAME_FIELDS = frozenset({"name", "agent", "type"})
_OBJECT_FIELDS = frozenset({"metadata", "attributes"})
_INT_RANGE = (-(2**63), 2**64)

_MARGIN = 16 * 1024
"""Characters past the size cut that are still redacted before cutting: a secret that starts inside the
kept head (a PEM private key is about 3 KiB) is scrubbed whole, never half-kept."""

_WHOLE_BYTES = 1 << 20
"""A snapshot larger than this is not decoded whole to be redacted: its kept head is (`red_head`)."""

_JSON_PAIR = re.compile(r'"((?:[^"\\]|\\.){1,100})"\s*:\s*("(?:[^"\\]|\\.)*"|[^,}\]]+)')


def red_head(red: redaction.Redactor, head: str) -> str:
    """The head of a large value's JSON text, redacted: values under secret key names, then the text."""

    def one(m: re.Match[str]) -> str:
        return f'"{m.group(1)}":"{REDACTED}"' if red.secret_key(m.group(1)) else m.group(0)

    return str(red.text(_JSON_PAIR.sub(one, head)))


class Encoder:
    """The encoder of one run's values: each made JSON-safe, redacted and only then cut to
    ``max_value_bytes`` (so a secret beyond the cut is scrubbed, not half-kept)."""

    def __init__(self, rewrite: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self.redactor: redaction.Redactor | None = redaction.redactor() if CONFIG.redact else None
        self._max = CONFIG.max_value_bytes
        self._names: dict[str, str] = {}
        self._params: dict[Any, tuple[str, bool]] = {}
        """`_param`'s answers, by argument name."""
        self.rewrite = rewrite
        """The run's processors that rewrite records (`trajdebug.record.processors.Processors.on_record`:
        summary mode), applied to every record built here; None when there are none."""

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

    def _values(self, inp: Any, outp: Any) -> tuple[Any, Any]:
        """A step's input and output that are neither two texts nor a call's arguments (those are in `encode`)."""
        return (None if inp is None else self._own(inp)), (None if outp is None else self._own(outp))

    def _own(self, v: Any) -> Any:
        """`value` of a step's input or output: bytes there are the recorder's own encoding (a snapshot)."""
        return self._from_json(v, True) if type(v) is bytes else self.value(v)

