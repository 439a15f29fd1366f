"""JSON encoding of recorded values: fast when orjson is there, never raising.

A recorded value may be anything an agent passes around.  `to_jsonable` turns it
into plain JSON data, replacing what cannot be encoded with a ``repr`` marker
and cutting what is too large with a truncation marker (see `trajdebug.model`),
so recording never fails because of a value.
"""

from __future__ import annotations

import json
from typing import Any

from trajdebug.model import REPR_KEY, TRUNCATED_KEY


_orjson: Any
try:  # orjson is a dependency, but the recorder must work without it.
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only without orjson
    _orjson = None

DEFAULT_MAX_BYTES = 64 * 1024
"""Values larger than this (encoded) are stored truncated."""

_SCALARS = (str, int, float, bool, type(None))


def _default(obj: Any) -> Any:
    # Common non-JSON containers and objects, in a readable form.
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    to_dict = getattr(obj, "model_dump", None) or getattr(obj, "_asdict", None)
    if callable(to_dict):
        return to_dict()
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses

        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    return {REPR_KEY: _safe_repr(obj), "type": type(obj).__qualname__}


def _safe_repr(obj: Any, limit: int = 2000) -> str:
    try:
        r = repr(obj)
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ (or an int too long to print) must not break recording
        r = f"<unrepresentable {type(obj).__qualname__}: {type(exc).__name__}>"
    r = r if len(r) <= limit else r[:limit] + "..."
    # Lone surrogates cannot be written as UTF-8: keep them visible, escaped.
    return r.encode("utf-8", "backslashreplace").decode("utf-8")


def _dumps_stdlib(obj: Any) -> bytes:
    # ensure_ascii=True escapes what UTF-8 cannot carry (lone surrogates); a
    # value even this cannot encode (an int of 5,000 digits) becomes its marker.
    try:
        return json.dumps(obj, default=_default, separators=(",", ":"), ensure_ascii=True).encode()
    except (TypeError, ValueError, RecursionError):
        marker = {REPR_KEY: _safe_repr(obj, 200), "type": type(obj).__qualname__}
        return json.dumps(marker, separators=(",", ":"), ensure_ascii=True).encode()


if _orjson is not None:
    _OPTS = _orjson.OPT_NON_STR_KEYS | _orjson.OPT_SERIALIZE_NUMPY

    def dumps(obj: Any) -> bytes:
        """Encode to compact JSON bytes (never raises: what cannot be encoded becomes a marker)."""
        try:
            data: bytes = _orjson.dumps(obj, default=_default, option=_OPTS)
            return data
        except (TypeError, ValueError, RecursionError):  # JSONEncodeError is a TypeError
            return _dumps_stdlib(obj)

else:  # pragma: no cover

    def dumps(obj: Any) -> bytes:
        """Encode to compact JSON bytes (never raises: what cannot be encoded becomes a marker)."""
        return _dumps_stdlib(obj)


def dumps_str(obj: Any) -> str:
    """Encode to a compact JSON string."""
    return dumps(obj).decode("utf-8")


def loads(data: bytes | str) -> Any:
    """Decode JSON (falling back to the standard library, which accepts escaped lone surrogates)."""
    if _orjson is None:  # pragma: no cover
        return json.loads(data)
    try:
        return _orjson.loads(data)
    except ValueError as exc:
        try:
            return json.loads(data)
        except (ValueError, RecursionError):
            raise exc from None


def to_jsonable(value: Any, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """Return ``value`` as plain JSON data, truncated or repr'd with a marker if need be.

    Never raises: a value whose encoding fails is stored as its ``repr``.
    """
    if type(value) in _SCALARS:
        if type(value) is str and len(value) > max_bytes:
            return {TRUNCATED_KEY: len(value), "head": value[:max_bytes]}
        if type(value) is int and not -(2**63) <= value < 2**64:
            # Beyond 64 bits JSON readers disagree, and past 4,300 digits Python will not print it.
            return {REPR_KEY: f"<int of {value.bit_length()} bits>", "type": "int"}
        if type(value) is float and value != value:  # NaN is not JSON
            return {REPR_KEY: "nan", "type": "float"}
        return value
    try:
        data = dumps(value)
    except Exception:  # noqa: BLE001 - a value must never break recording
        return {REPR_KEY: _safe_repr(value), "type": type(value).__qualname__}
    if len(data) > max_bytes:
        return {TRUNCATED_KEY: len(data), "head": data[:max_bytes].decode("utf-8", "ignore")}
    try:
        return loads(data)
    except ValueError:
        return {REPR_KEY: _safe_repr(value), "type": type(value).__qualname__}
