"""JSON encoding of recorded values: fast when orjson is there, never raising.

A recorded value may be anything an agent passes around.  `dumps` encodes it
with orjson; when that fails anywhere inside the value (a ``model_dump`` that
raises on a detached ORM object, a property that raises, a recursive list,
tuple keys, an integer beyond 64 bits, a lone surrogate, nesting deeper than
orjson's limit), the value is rebuilt by `sanitize` into plain JSON data in
which only the parts that cannot be encoded are markers (see
`trajdebug.core.model`), and encoded again.  So one bad attribute costs its own
value, never the record or the batch around it.  `to_jsonable` additionally
cuts what is too large with a truncation marker.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from trajdebug.core.model import REPR_KEY, TRUNCATED_KEY


_orjson: Any
try:  # orjson is a dependency, but the recorder must work without it.
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only without orjson
    _orjson = None

_FRAGMENT: Any = getattr(_orjson, "Fragment", None)


class Encoded:
    """A value already encoded as JSON: embedded as it is wherever a value holding it is encoded (`dumps`,
    `dumps_line`), neither decoded nor encoded again (with orjson's ``Fragment``; decoded where orjson
    lacks it).  The recorder puts a snapshot with nothing to redact into its record this way."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data
        """The JSON text (bytes), valid JSON."""

    def value(self) -> Any:
        """The value, decoded."""
        return loads(self.data)

DEFAULT_MAX_BYTES = 64 * 1024
"""Values larger than this (encoded) are stored truncated."""

MAX_DEPTH = 100
"""`sanitize` replaces what is nested deeper than this with a marker."""

MAX_ITEMS = 100_000
"""`sanitize` keeps at most this many items of one container (the rest become one marker)."""

_SCALARS = (str, int, float, bool, type(None))
_INT_RANGE = (-(2**63), 2**64)


def _embedded(obj: Encoded) -> Any:
    try:
        return obj.value()
    except ValueError:
        return marker(None, "<undecodable snapshot>")


def marker(obj: Any, why: str | None = None) -> dict[str, Any]:
    """The marker of a value that cannot be stored as JSON: its ``repr`` (or why) and its type."""
    try:
        tname = type(obj).__qualname__
    except Exception:  # noqa: BLE001 - a hostile __class__ must not break recording
        tname = "?"
    return {REPR_KEY: why if why is not None else safe_repr(obj), "type": tname}


def safe_repr(obj: Any, limit: int = 2000) -> str:
    """``repr(obj)`` cut to ``limit`` characters, or a placeholder when ``repr`` itself fails."""
    try:
        r = repr(obj)
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ (or an int too long to print) must not break recording
        try:
            r = f"<unrepresentable {type(obj).__qualname__}: {type(exc).__name__}>"
        except Exception:  # noqa: BLE001
            r = "<unrepresentable>"
    if not isinstance(r, str):
        r = "<unrepresentable>"
    r = r if len(r) <= limit else r[:limit] + "..."
    # Lone surrogates cannot be written as UTF-8: keep them visible, escaped.
    return r.encode("utf-8", "backslashreplace").decode("utf-8")


def _text(s: str) -> str:
    """A string UTF-8 can carry: lone surrogates shown as ``\\udcxx`` escapes."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8")


def _key(k: Any) -> str:
    """A dict key as JSON can carry it (a string), whatever it was."""
    if isinstance(k, str):
        return _text(k)
    if k is None or isinstance(k, (bool, float)) or (isinstance(k, int) and _INT_RANGE[0] <= k < _INT_RANGE[1]):
        return json.dumps(k)
    return safe_repr(k, 200)


def _convert(obj: Any) -> Any:
    """The JSON-able stand-in of a non-JSON object (sets, bytes, pydantic models, named tuples, dataclasses)."""
    if isinstance(obj, (set, frozenset)):
        try:
            return sorted(obj, key=repr)
        except Exception:  # noqa: BLE001
            return list(obj)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj).decode("utf-8", "replace")
    to_dict = getattr(obj, "model_dump", None) or getattr(obj, "_asdict", None)
    if callable(to_dict):
        return to_dict()
    if hasattr(obj, "__dataclass_fields__") and not isinstance(obj, type):
        import dataclasses

        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    return marker(obj)


def _default(obj: Any) -> Any:
    # orjson calls this for what it cannot encode; it must never raise.
    if obj.__class__ is Encoded:
        return _FRAGMENT(obj.data) if _FRAGMENT is not None else _embedded(obj)
    try:
        return _convert(obj)
    except Exception:  # noqa: BLE001 - a model_dump or property that raises costs only this value
        return marker(obj)


def sanitize(obj: Any, depth: int = 0, _stack: set[int] | None = None) -> Any:
    """Rebuild ``obj`` as plain JSON data; what cannot be encoded becomes a marker in its place.

    Never raises.  Recursive references, integers beyond 64 bits, NaN and
    infinities, keys that are not strings, lone surrogates and objects whose
    conversion raises each become a marker (or an escaped string) where they
    were; everything else is kept.
    """
    try:
        t = type(obj)
        if t is str:
            return _text(obj)
        if obj is None or t is bool:
            return obj
        if t is int or (isinstance(obj, int) and not isinstance(obj, bool)):
            v = int(obj)
            return v if _INT_RANGE[0] <= v < _INT_RANGE[1] else marker(obj, f"<int of {v.bit_length()} bits>")
        if t is float or isinstance(obj, float):
            f = float(obj)
            return f if f == f and f not in (float("inf"), float("-inf")) else marker(obj, repr(f))
        if isinstance(obj, str):
            return _text(str(obj))
        if t is Encoded:
            return sanitize(_embedded(obj), depth, _stack)
        if depth >= MAX_DEPTH:
            return marker(obj, f"<nested deeper than {MAX_DEPTH} levels>")
        stack = _stack if _stack is not None else set()
        oid = id(obj)
        if oid in stack:
            return marker(obj, "<recursive reference>")
        stack.add(oid)
        try:
            if isinstance(obj, Mapping):
                out: dict[str, Any] = {}
                for i, (k, v) in enumerate(obj.items()):
                    if i >= MAX_ITEMS:
                        out[REPR_KEY] = f"<{len(obj) - MAX_ITEMS} more items>"
                        break
                    out[_key(k)] = sanitize(v, depth + 1, stack)
                return out
            if isinstance(obj, (list, tuple)):
                items = [sanitize(v, depth + 1, stack) for v in obj[:MAX_ITEMS]]
                if len(obj) > MAX_ITEMS:
                    items.append(marker(obj, f"<{len(obj) - MAX_ITEMS} more items>"))
                return items
            converted = _convert(obj)
            if converted is obj:  # pragma: no cover - _convert always returns something new
                return marker(obj)
            return sanitize(converted, depth + 1, stack)
        finally:
            stack.discard(oid)
    except Exception:  # noqa: BLE001 - whatever goes wrong, this value becomes a marker
        return marker(obj)
    except RecursionError:  # pragma: no cover - MAX_DEPTH keeps well below the interpreter's limit
        return marker(obj, "<too deep>")


_FALLBACK = b'{"' + REPR_KEY.encode() + b'":"<unencodable>","type":"?"}'


def _dumps_stdlib(obj: Any) -> bytes:
    try:
        return json.dumps(obj, default=_default, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()
    except Exception:  # noqa: BLE001
        try:
            return json.dumps(sanitize(obj), separators=(",", ":"), ensure_ascii=True).encode()
        except Exception:  # noqa: BLE001
            return _FALLBACK


if _orjson is not None:
    _OPTS = _orjson.OPT_NON_STR_KEYS | _orjson.OPT_SERIALIZE_NUMPY
    _PLAIN_OPTS = _orjson.OPT_SERIALIZE_NUMPY
    """`_OPTS` without OPT_NON_STR_KEYS, which doubles orjson's time on a chat payload (5 KB: about 2.5 µs more):
    for a value whose keys are all strings the bytes are the same, and any other key makes orjson raise."""

    def dumps(obj: Any) -> bytes:
        """Encode to compact JSON bytes (never raises: what cannot be encoded becomes a marker in place)."""
        try:
            # Plain JSON data with string keys (nearly every value), without `_default`: a value it refuses
            # (a key that is not a string, an object orjson does not know) is encoded again below, from the
            # start, so that `_default` runs once per object, as it did.
            plain: bytes = _orjson.dumps(obj, option=_PLAIN_OPTS)
            return plain
        except Exception:  # noqa: BLE001 - JSONEncodeError is a TypeError
            pass
        try:
            data: bytes = _orjson.dumps(obj, default=_default, option=_OPTS)
            return data
        except Exception:  # noqa: BLE001 - JSONEncodeError is a TypeError; anything else is the value's fault
            pass
        try:
            clean: bytes = _orjson.dumps(sanitize(obj), option=_OPTS)
            return clean
        except Exception:  # noqa: BLE001
            return _dumps_stdlib(obj)

else:  # pragma: no cover

    def dumps(obj: Any) -> bytes:
        """Encode to compact JSON bytes (never raises: what cannot be encoded becomes a marker in place)."""
        return _dumps_stdlib(obj)


if _orjson is not None:
    # Without OPT_NON_STR_KEYS (and numpy), which cost orjson a third more on every record: a record's
    # keys are strings; a record with a key that is not goes the way of `dumps`.
    _LINE_OPTS = _orjson.OPT_APPEND_NEWLINE

    def dumps_line(obj: Any) -> bytes:
        """Encode to one line of compact JSON, newline included (never raises, like `dumps`)."""
        try:
            data: bytes = _orjson.dumps(obj, default=_default, option=_LINE_OPTS)
            return data
        except Exception:  # noqa: BLE001 - `dumps` rebuilds what cannot be encoded
            return dumps(obj) + b"\n"

else:  # pragma: no cover

    def dumps_line(obj: Any) -> bytes:
        """Encode to one line of compact JSON, newline included (never raises, like `dumps`)."""
        return dumps(obj) + b"\n"


def plain_line(obj: Any) -> bytes | None:
    """`dumps_line` of a value orjson encodes on its own (string keys; no value that needs `dumps`'s
    fallbacks), else None: the line is then the value's own encoding, whose every string stands in it."""
    if _orjson is None:  # pragma: no cover
        return None
    try:
        data: bytes = _orjson.dumps(obj, option=_orjson.OPT_APPEND_NEWLINE)
    except Exception:  # noqa: BLE001 - JSONEncodeError is a TypeError
        return None
    return data


def dumps_str(obj: Any) -> str:
    """Encode to a compact JSON string."""
    return dumps(obj).decode("utf-8")


def loads(data: bytes | str) -> Any:
    """Decode JSON (falling back to the standard library, which accepts escaped lone surrogates).

    Raises:
        ValueError: not JSON, or nested too deeply to decode.
    """
    if _orjson is None:  # pragma: no cover
        try:
            return json.loads(data)
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None
    try:
        return _orjson.loads(data)
    except ValueError as exc:
        try:
            return json.loads(data)
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None
        except ValueError:
            raise exc from None


def truncated(data: bytes, max_bytes: int) -> dict[str, Any]:
    """The truncation marker of an encoded value: its size and its first ``max_bytes`` bytes as text."""
    return {TRUNCATED_KEY: len(data), "head": data[:max_bytes].decode("utf-8", "ignore")}


def to_jsonable(value: Any, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """Return ``value`` as plain JSON data, truncated or repr'd with a marker if need be.

    Never raises: a value whose encoding fails anywhere is stored with a marker there.
    """
    if type(value) in _SCALARS:
        if type(value) is str:
            if len(value) > max_bytes:
                return {TRUNCATED_KEY: len(value), "head": _text(value[:max_bytes])}
            return _text(value)
        if type(value) is int and not _INT_RANGE[0] <= value < _INT_RANGE[1]:
            # Beyond 64 bits JSON readers disagree, and past 4,300 digits Python will not print it.
            return marker(value, f"<int of {value.bit_length()} bits>")
        if type(value) is float and (value != value or value in (float("inf"), float("-inf"))):
            return marker(value, repr(value))
        return value
    data = dumps(value)
    if len(data) > max_bytes:
        return truncated(data, max_bytes)
    try:
        return loads(data)
    except ValueError:
        return marker(value)


__all__ = [
    "DEFAULT_MAX_BYTES",
    "Encoded",
    "dumps",
    "dumps_line",
    "plain_line",
    "dumps_str",
    "loads",
    "marker",
    "safe_repr",
    "sanitize",
    "to_jsonable",
    "truncated",
]
