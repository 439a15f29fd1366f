"""Freezing a step's value on the agent's thread, at a cost bounded by size, not by content.

A step's input is frozen as JSON when the step starts and its output when it
ends (`freeze`), so that the agent may change the object afterwards (the
step's own body may change its input).  Encoding is fast (orjson),
but a hostile value makes any encoder slow: ``{"rows": <5 million items>}``
takes over 100 ms to encode whole, all of it on the agent's thread, while the
store keeps only the first ``max_value_bytes`` (64 KiB) of it.

So before encoding, `fits` walks the value with a budget: it counts the items
of every container (``len``, never iterating a container that alone exceeds
the budget) and looks at the length of every string, and stops at the first
sign that the value is larger than could be stored.  Values that fit (nearly
all) are then encoded as they are.  Those that do not are copied by `bounded`,
which visits at most `ITEMS` items in all, cuts strings to `TEXT` characters,
stops at `DEPTH` levels, and says what it cut where it cut it: ``"<N more
items>"`` markers, and a string's original length (``__trajdebug_truncated__``).
Either way the work on the agent's thread is at most a few `ITEMS` item
visits, whatever the value holds.
"""

from __future__ import annotations

import itertools
from typing import Any

from trajdebug.core.codec import dumps, marker
from trajdebug.core.model import TRUNCATED_KEY
from trajdebug.record.config import CONFIG


DEPTH = 64
"""Levels of nesting kept (what is deeper becomes a marker); JSON readers refuse much deeper data."""

_LEAVES = frozenset({int, float, bool, type(None)})
_MORE_KEY = "__trajdebug_more__"


def limits() -> tuple[int, int]:
    """The item budget and the string cap: what could reach a stored value of ``max_value_bytes`` (each
    item takes at least two bytes of JSON), and the longest string kept (that size, plus the margin the
    writer keeps so that a secret starting in the kept head is redacted whole)."""
    cap = CONFIG.max_value_bytes
    return max(1, cap // 2), cap + 16 * 1024


_LIMITS: list[int] = [0, 0, 0]
"""``max_value_bytes`` and the `limits` computed from it (recomputed when it changes)."""


def freeze(value: Any) -> bytes:
    """``value`` as JSON bytes, encoded whole when it fits what could be stored, else its bounded copy."""
    lim = _LIMITS
    if lim[0] != CONFIG.max_value_bytes:
        lim[0] = CONFIG.max_value_bytes
        lim[1], lim[2] = limits()
    if fits(value, lim[1], lim[2]):
        return dumps(value)
    return dumps(bounded(value, lim[1], lim[2])[0])


def fits(value: Any, items: int, text: int, depth: int = 0) -> bool:
    """Whether ``value`` is plain JSON data (dicts, lists, tuples, strings, numbers) of at most ``items``
    items and ``text`` characters of strings in all, no deeper than `DEPTH` (counting from ``depth``).
    Visits at most ``items`` items: a container that alone exceeds what is left is not looked into."""
    return _measure(value, items, text, depth)[0]


def _measure(value: Any, items: int, text: int, depth: int) -> tuple[bool, int, int]:
    """`fits`, with the items and characters looked at (all the value holds, when it fits).

    A dict's keys and values are looked at in one pass, and the characters tested once per container:
    the counts only grow, so the answer and the items counted are those of a test after every string."""
    left, chars = items, text
    stack: list[tuple[Any, int]] = [(value, depth)]
    push = stack.append
    while stack:
        c, depth = stack.pop()
        t = type(c)
        if t is dict:
            if left < len(c) or depth >= DEPTH:
                return False, items - left, text - chars  # not looked into
            left -= len(c)
            for k, v in c.items():
                tv = type(v)
                if type(k) is str:
                    chars -= len(k)
                if tv is str:
                    chars -= len(v)
                elif tv is dict or tv is list or tv is tuple:
                    push((v, depth + 1))
                elif tv not in _LEAVES:
                    return False, items - left, text - chars
        elif t is list or t is tuple:
            if left < len(c) or depth >= DEPTH:
                return False, items - left, text - chars  # not looked into
            left -= len(c)
            for v in c:
                tv = type(v)
                if tv is str:
                    chars -= len(v)
                elif tv is dict or tv is list or tv is tuple:
                    push((v, depth + 1))
                elif tv not in _LEAVES:
                    return False, items - left, text - chars
        else:
            return False, items - left, text - chars  # sets, models, anything else: the bounded copy converts them
        if chars < 0:
            return False, items - left, text - chars
    return True, items - left, text - chars


class _Budget:
    __slots__ = ("chars", "left", "visited", "work")

    def __init__(self, items: int, chars: int) -> None:
        self.left = items
        self.chars = chars
        self.visited = 0
        self.work = 3 * items
        """Visits allowed to the fast path's look-ahead (`_measure`); past it, item by item only."""

    def plain(self, head: Any, depth: int) -> bool:
        """Whether ``head`` is plain data within what is left; if so it is taken whole (counted)."""
        if self.visited >= self.work:
            return False
        ok, seen, chars = _measure(head, self.left, self.chars, depth)
        self.visited += seen
        if ok:
            self.left -= seen
            self.chars -= chars
        return ok


def bounded(value: Any, items: int, text: int) -> tuple[Any, int]:
    """A copy of ``value`` within the limits, and the number of items visited to make it (at most about
    ``items``).  What is cut is said in place: a container's remaining items as a marker of how many, a
    string as its original length and head, too deep a level as a marker."""
    budget = _Budget(items, text)
    return _copy(value, 0, budget, text), budget.visited


def _more(value: Any, n: int) -> dict[str, Any]:
    return {"__trajdebug_repr__": f"<{n:,} more items>", "type": type(value).__name__}


def _copy(v: Any, depth: int, budget: _Budget, text: int) -> Any:
    try:
        return _copy_any(v, depth, budget, text)
    except Exception:  # noqa: BLE001 - an object whose attributes raise (a lazy proxy) costs only itself
        return marker(v)


def _copy_any(v: Any, depth: int, budget: _Budget, text: int) -> Any:
    t = type(v)
    if t is str or isinstance(v, str):
        # Strings share one budget of characters: many long strings cost what one would.
        keep = max(0, min(len(v), budget.chars))
        budget.chars -= keep
        return v if keep == len(v) else {TRUNCATED_KEY: len(v), "head": str(v[:keep])}
    if t in _LEAVES or isinstance(v, (int, float)):
        return v
    if depth >= DEPTH:
        return marker(v, f"<nested deeper than {DEPTH} levels>")
    # Copied as containers exactly what the encoder writes as containers (dicts and lists with their
    # subclasses, plain tuples); any other mapping or sequence goes to the encoder as it is (a marker).
    if isinstance(v, dict):
        return _copy_map(v, depth, budget, text)
    if isinstance(v, list) or t is tuple:
        return _copy_seq(v, v[: max(0, budget.left)], len(v), depth, budget, text)
    if isinstance(v, (set, frozenset)):
        # As the encoder writes a set (sorted by repr) when it is small; the head of it, unsorted, when not.
        head = list(itertools.islice(v, max(0, budget.left)))
        if len(head) == len(v):
            try:
                head.sort(key=repr)
            except Exception:  # noqa: BLE001 - a repr that raises: kept unsorted
                pass
        return _copy_seq(v, head, len(v), depth, budget, text)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return _copy(bytes(v[: text * 4]).decode("utf-8", "replace"), depth, budget, text)
    return _copy_object(v, depth, budget, text)


def _copy_map(v: dict[Any, Any], depth: int, budget: _Budget, text: int) -> dict[Any, Any]:
    n = len(v)
    if type(v) is dict:
        # The head taken in one C-level pass; item by item only when it holds more than plain data.
        head = dict(itertools.islice(v.items(), max(0, budget.left)))
        if budget.plain(head, depth):
            if len(head) < n:
                head[_MORE_KEY] = _more(v, n - len(head))
            return head
    out: dict[Any, Any] = {}
    for k, item in itertools.islice(v.items(), max(0, budget.left)):
        if budget.left <= 0 or budget.chars <= 0:
            break
        budget.left -= 1
        budget.visited += 1
        if type(k) is str:
            budget.chars -= len(k)
            k = k[:text]
        # Numbers as they are, without a call per item (the common case of a wide dict).
        out[k] = item if type(item) in _LEAVES else _copy(item, depth + 1, budget, text)
    if len(out) < n:
        out[_MORE_KEY] = _more(v, n - len(out))
    return out


def _copy_seq(v: Any, head: Any, n: int, depth: int, budget: _Budget, text: int) -> list[Any]:
    if type(head) in (list, tuple) and budget.plain(head, depth):
        # Plain data: the head as it is, without a visit per item.
        return [*head, _more(v, n - len(head))] if len(head) < n else list(head)
    out: list[Any] = []
    for item in head:
        if budget.left <= 0:
            break
        budget.left -= 1
        budget.visited += 1
        out.append(item if type(item) in _LEAVES else _copy(item, depth + 1, budget, text))
    if len(out) < n:
        out.append(_more(v, n - len(out)))
    return out


def _copy_object(v: Any, depth: int, budget: _Budget, text: int) -> Any:
    """A model, dataclass or other object: as its fields when it has them (what the encoder writes),
    bounded like the rest; anything else is left to the encoder (dates, ids, enums: small by nature)."""
    try:
        to_dict = getattr(v, "model_dump", None) or getattr(v, "_asdict", None)
        if callable(to_dict):
            return _copy(to_dict(), depth + 1, budget, text)
        if hasattr(v, "__dataclass_fields__") and not isinstance(v, type):
            import dataclasses

            return _copy_map({f.name: getattr(v, f.name) for f in dataclasses.fields(v)}, depth, budget, text)
    except Exception:  # noqa: BLE001 - a conversion that raises costs only this value
        return marker(v)
    budget.left -= 1
    budget.visited += 1
    return v


__all__ = ["DEPTH", "bounded", "fits", "freeze", "limits"]
