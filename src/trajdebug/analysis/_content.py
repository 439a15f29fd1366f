"""Content inspection of recorded values: JSON, HTTP status, error text, emptiness, numbers (SQL: `_sql.py`).

The failure detectors and the diagnosers look inside the values a run
recorded.  Those values are untrusted data (LLM and tool output): they are
parsed, never evaluated (SQL in them is read by `_sql.py`).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.model import REPR_KEY, TRUNCATED_KEY
from trajdebug.core.payloads import error_payload
from trajdebug.core.values import is_mapping


TEXT_LIMIT = 20_000
"""How much of a value's text the content checks read (they rank, so a prefix is enough)."""


def text_of(value: Any, limit: int = TEXT_LIMIT) -> str:
    """A value as text: strings as they are, anything else as compact JSON, cut at ``limit``.

    Within `text_memo` (one analysis), a value's text is written once: the detectors, edge inference
    and some twenty diagnosers each ask for the text of the same step's input and output.
    """
    if isinstance(value, str):
        return value[:limit]
    if value is None:
        return ""
    memo = _READINGS.get() if limit == TEXT_LIMIT else None
    if memo is not None:
        hit = memo.texts.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
    try:
        s = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        s = str(value)
    s = s[:limit]
    if memo is not None:
        memo.keep(len(s))
        memo.texts[id(value)] = (value, s)
    return s


@dataclass(frozen=True, slots=True)
class _Readings:
    """What `text_of` and `leaves` read of each value in the current analysis, by the id of the value (kept
    with its reading, so its id names no other value while the entry lives)."""

    texts: dict[int, tuple[Any, str]] = field(default_factory=dict)
    leaves: dict[int, tuple[Any, tuple[tuple[str, Any], ...]]] = field(default_factory=dict)
    keyed: dict[int, tuple[Any, dict[str, Any]]] = field(default_factory=dict)
    """`keyed_values` of each value read so far (copied out: its callers change theirs)."""
    unmarked: dict[int, tuple[Any, str]] = field(default_factory=dict)
    """`unmarked_text` of each value read so far, by the id of the value as recorded (markers and all)."""
    kept: list[int] = field(default_factory=lambda: [0])
    """The characters of text and the leaves kept (each entry counted `_ENTRY` more)."""

    def keep(self, size: int) -> None:
        """Count a new entry; past `READINGS_KEPT`, start over."""
        self.kept[0] += size + _ENTRY
        if self.kept[0] > READINGS_KEPT:
            self.texts.clear()
            self.leaves.clear()
            self.keyed.clear()
            self.unmarked.clear()
            self.kept[0] = size + _ENTRY


_READINGS: ContextVar[_Readings | None] = ContextVar("trajdebug_readings", default=None)
"""The current analysis's readings (`text_memo`); None outside one."""
READINGS_KEPT = 1 << 23
"""How much `text_memo` keeps (characters of text plus leaves; it starts over past this): about as much
again as a long run's values, at most."""
_ENTRY = 64


@contextmanager
def text_memo() -> Iterator[None]:
    """`text_of` and `leaves` read each value once while this lasts (one analysis; dropped after): the
    detectors, edge inference and some twenty diagnosers each read the same step's input and output.

    The analysis reads recorded values and never changes them, so a value's reading stays what it was.
    """
    token = _READINGS.set(_Readings())
    try:
        yield
    finally:
        _READINGS.reset(token)


def without_markers(value: Any, depth: int = 0) -> Any:
    """A value with the recorder's truncation / repr markers left out (their text is not the value's content).

    A ``repr`` marker snapshots an object (a state store, a client) as it was
    when the step ended, so it may show values the step itself wrote.
    """
    if depth > 8:
        return None
    if is_mapping(value):
        if is_marker(value):
            return None
        return {k: without_markers(v, depth + 1) for k, v in value.items() if not is_marker(v)}
    if isinstance(value, (list, tuple)):
        return [without_markers(v, depth + 1) for v in value if not is_marker(v)]
    return value


def unmarked_text(value: Any) -> str:
    """`text_of` the value `without_markers`: what a step was given, as text.

    Within `text_memo`, once per value: `without_markers` builds a new value on every call, which `text_of`'s
    memo (by identity) never finds, and an enclosing step's input is read for every step inside it."""
    memo = _READINGS.get() if not isinstance(value, str) and value is not None else None
    if memo is not None:
        hit = memo.unmarked.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
    text = text_of(without_markers(value))
    if memo is not None:
        memo.keep(len(text))
        memo.unmarked[id(value)] = (value, text)
    return text


_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n?\s*```\s*$", re.S)


def strip_fence(s: str) -> str:
    """Remove a surrounding Markdown code fence (```json ... ```), if any."""
    m = _FENCE.match(s)
    return m.group(1) if m else s.strip()


_NOT_MAPPINGS = frozenset({str, list, tuple, int, float, bool, type(None)})
"""Built-in types that are no mapping: the ``Mapping`` check (slower) is asked of other types only."""


def is_marker(value: Any) -> bool:
    """True for the recorder's truncation / repr markers (the value itself was not kept)."""
    return (
        isinstance(value, dict) or (type(value) not in _NOT_MAPPINGS and isinstance(value, Mapping))
    ) and (TRUNCATED_KEY in value or REPR_KEY in value)


def looks_like_json(s: str) -> bool:
    """True when a string is meant to be JSON (an object or array, possibly fenced)."""
    t = strip_fence(s)
    return t[:1] in ("{", "[")


def json_problem(s: str) -> str | None:
    """Why a string is not valid JSON (None when it is)."""
    try:
        json.loads(strip_fence(s))
    except (ValueError, RecursionError) as exc:  # too deep to parse is no JSON we can read
        return str(exc)
    return None


def parse_json(s: str) -> Any:
    """The parsed JSON value of a (possibly fenced) string, or None when it does not parse."""
    try:
        return json.loads(strip_fence(s))
    except (ValueError, RecursionError):  # too deeply nested to parse: plain text
        return None


_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def embedded_json(text: str) -> Any:
    """The JSON object or array a text holds whole, or after a short lead-in ("Here is the profile:"),
    read leniently (trailing commas allowed, as lenient parsers do); None when there is none."""
    if looks_like_json(text):
        parsed = parse_json(text)
        if parsed is not None:
            return parsed
    starts = [i for i in (text.find("{"), text.find("[")) if 0 <= i <= 200]
    if not starts:
        return None
    body = text[min(starts) :]
    for candidate in (body, _TRAILING_COMMA.sub(r"\1", body)):
        try:
            parsed, _ = json.JSONDecoder().raw_decode(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(parsed, (dict, list)):
            return parsed
    return None


_PY_REPR_START = re.compile(r"\s*[\[{(]\s*[\[{(]?\s*'")
"""A container whose first string is single-quoted: Python's ``repr``, never JSON."""


def python_repr(text: str) -> bool:
    """True for a program's object printed by ``str``/``repr`` (``{'shipment': 'SHP-1102'}``), not JSON.

    The OpenAI Agents SDK records a function tool's result as ``str(result)``: a dict comes out with
    single quotes, ``True`` and ``None``. That text was never meant to be JSON, so it is not malformed
    JSON. Read with ``ast.literal_eval`` (literals only, never evaluated), or known by its first string's
    single quote when it holds objects no literal spells (``Decimal('1.5')``).
    """
    t = strip_fence(text)
    if t[:1] not in ("{", "[", "(") or len(t) > TEXT_LIMIT:
        return False
    try:
        return isinstance(ast.literal_eval(t), (dict, list, tuple))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _PY_REPR_START.match(t) is not None


# -- HTTP status, error text, emptiness ---------------------------------------

_STATUS_KEYS = ("status_code", "status", "http_status", "statusCode", "code")


def http_status(value: Any, *, lexicon: Lexicon = ENGLISH) -> int | None:
    """The HTTP status a tool result reports, if it reports one."""
    if is_mapping(value):
        for k in _STATUS_KEYS:
            v = value.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and 100 <= v <= 599:
                return v
            if k != "code" and isinstance(v, str) and v[:3].isdigit() and 100 <= int(v[:3]) <= 599:
                return int(v[:3])
        return None
    if isinstance(value, str):
        m = lexicon.status_text.search(value[:2000])
        return int(m.group(1)) if m else None
    return None


_TRACEBACK = "Traceback (most recent call last)"
_EXIT_KEYS = ("exit_code", "returncode", "exitCode", "exit_status")
_ERROR_KEYS = ("error", "errors", "exception", "error_message")


def error_text(value: Any) -> str | None:
    """The error a tool result carries in its content, as a short description (None if none)."""
    if is_mapping(value):
        if is_marker(value):
            return None
        for k in _EXIT_KEYS:
            v = value.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and v != 0:
                return f"non-zero exit code {v}"
        for k in _ERROR_KEYS:
            v = value.get(k)
            if v:
                return f"{k}: {text_of(v, 200)}"
        for v in value.values():
            if isinstance(v, str) and (found := _text_error(v)):
                return found
        # A result that flags itself (``isError``, ``success: false``...) says so in the protocol's own fields.
        said = error_payload(value)
        return said[:200] if said is not None else None
    if isinstance(value, str):
        return _text_error(value)
    return None


def _text_error(s: str, *, lexicon: Lexicon = ENGLISH) -> str | None:
    s = s[:TEXT_LIMIT]
    if _TRACEBACK in s:
        last = [ln for ln in s.strip().splitlines() if ln.strip()][-1].strip()
        return f"traceback: {last[:200]}"
    m = lexicon.exit_status.search(s)
    if m and int(m.group(1)) != 0:
        return f"non-zero exit code {m.group(1)}"
    m = lexicon.error_line.search(s)
    if m:
        return m.group(0).strip()[:200]
    return None


_DATA_KEYS = ("rows", "results", "data", "items", "records", "hits", "documents", "matches", "result")


def is_empty(value: Any) -> bool:
    """True for a result that carries no data: None, empty text or containers, ``{"rows": []}``."""
    if value is None:
        return True
    if isinstance(value, str):
        t = value.strip()
        return t in ("", "[]", "{}", "null", "None") or t.lower() in (
            "no results",
            "no results found",
            "not found",
        )
    if is_mapping(value):
        if not value:
            return True
        if is_marker(value):
            return False
        present = [k for k in _DATA_KEYS if k in value]
        return bool(present) and all(is_empty(value[k]) for k in present)
    if isinstance(value, (list, tuple)):
        return len(value) == 0
    return False


# -- values ------------------------------------------------------------------


def leaves(value: Any, path: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """The scalar leaves of a JSON value with their dotted paths (bounded depth)."""
    # Collected into a list by plain recursion: a chain of nested generators paid
    # one resumption per level for every leaf, on every step the analysis reads.
    memo = _READINGS.get() if not path and not depth and not isinstance(value, str) else None
    if memo is not None:
        hit = memo.leaves.get(id(value))
        if hit is not None and hit[0] is value:
            return iter(hit[1])
    out: list[tuple[str, Any]] = []
    _collect_leaves(value, path, depth, out)
    if memo is not None:
        memo.keep(len(out))
        memo.leaves[id(value)] = (value, tuple(out))
    return iter(out)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _collect_leaves(value: Any, path: str, depth: int, out: list[tuple[str, Any]]) -> None:
    if depth > 6:
        return
    if isinstance(value, dict) or (type(value) not in _NOT_MAPPINGS and isinstance(value, Mapping)):
        if TRUNCATED_KEY in value or REPR_KEY in value:
            return  # a marker (`is_marker`): the value itself was not kept
        inline = depth < 6  # a scalar child is a leaf unless it lies past the depth bound
        for k, v in value.items():
            p = f"{path}.{k}" if path else str(k)
            if inline and type(v) in _SCALARS:
                out.append((p, v))
            else:
                _collect_leaves(v, p, depth + 1, out)
    elif isinstance(value, (list, tuple)):
        inline = depth < 6
        for i, v in enumerate(value[:200]):
            if inline and type(v) in _SCALARS:
                out.append((f"{path}[{i}]", v))
            else:
                _collect_leaves(v, f"{path}[{i}]", depth + 1, out)
    else:
        out.append((path, value))


def decoded_leaves(value: Any, path: str = "", nested: int = 0) -> Iterator[tuple[str, Any]]:
    """`leaves`, a leaf that is JSON text (an object or array) read as the leaves it encodes.

    A tool call's argument is often a JSON document passed as a string (an agent used as a tool takes its
    ``input`` so): its values are what the caller states, one by one, never the encoded text as a whole.
    """
    for p, v in leaves(value, path):
        inner = parse_json(v) if nested < 2 and isinstance(v, str) and looks_like_json(v) else None
        if isinstance(inner, (dict, list)):
            yield from decoded_leaves(inner, p, nested + 1)
        else:
            yield p, v


def keyed_values(value: Any) -> dict[str, Any]:
    """The scalar leaves of a value keyed by their last field name (the first one seen wins); a new dict, the
    caller's to change."""
    # An upstream output is keyed once for every step it feeds (`text_memo`), each reader given its own copy.
    memo = _READINGS.get() if not isinstance(value, str) else None
    if memo is not None:
        hit = memo.keyed.get(id(value))
        if hit is not None and hit[0] is value:
            return dict(hit[1])
    out: dict[str, Any] = {}
    for p, v in leaves(value):
        key = p.rsplit(".", 1)[-1]
        if "[" in key or not key:
            continue
        out.setdefault(key.lower(), v)
    if memo is not None:
        memo.keep(len(out))
        memo.keyed[id(value)] = (value, dict(out))
    return out


_WRITTEN_PAIR = re.compile(r"(?<![\w.-])([A-Za-z][A-Za-z_]{1,30})=([A-Za-z][\w-]{0,40})(?=$|[\s;,&])")


def written_pairs(value: Any) -> dict[str, str]:
    """``key=value`` pairs written in a value's texts (a request typed as ``ticket=T-1; region=emea``),
    keyed as `keyed_values` keys fields; word values only (numbers are read as numbers elsewhere)."""
    out: dict[str, str] = {}
    for _, v in leaves(value):
        if isinstance(v, str) and "=" in v:
            for m in _WRITTEN_PAIR.finditer(v[:20_000]):
                out.setdefault(m.group(1).lower(), m.group(2))
    return out


def largest_list(value: Any, depth: int = 0) -> list[Any] | None:
    """The longest list inside a value (the payload of a tool result or a parse), if any."""
    if depth > 4:
        return None
    if isinstance(value, list):
        return value
    if isinstance(value, str) and looks_like_json(value):
        return largest_list(parse_json(value), depth + 1)
    if is_mapping(value):
        best: list[Any] | None = None
        for v in value.values():
            lst = largest_list(v, depth + 1)
            if lst is not None and (best is None or len(lst) > len(best)):
                best = lst
        return best
    return None


def has_word(text: str, value: str) -> bool:
    """Whether ``value`` is written in ``text`` as a word of its own: not inside a longer word, an id or a
    hyphenated name (``Team 1`` is not in "Team 10", ``ns`` not in "instructions")."""
    return re.search(r"(?<![\w-])" + re.escape(value) + r"(?![\w-])", text) is not None


ID_TOKEN = re.compile(r"(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9][\w-]{2,}")
"""An id or code: letters and digits (``ZK-0112``, ``ord42``), three characters or more."""

_DIGIT, _ALPHA = re.compile(r"\d"), re.compile(r"[A-Za-z]")


def char_shape(value: str) -> str:
    """An id's shape, character by character: each digit a ``9``, each ASCII letter an ``a``
    (``ZK-0112`` -> ``aa-9999``): ids of one series have one shape."""
    return _ALPHA.sub("a", _DIGIT.sub("9", value))


def run_shape(value: str) -> str:
    """An id's shape, run by run: each run of letters an ``a``, of digits a ``9`` (``dh114-027`` ->
    ``a9-9``): ids of one scheme whose parts vary in length have one shape."""
    return re.sub(r"[0-9]+", "9", re.sub(r"[^\W\d_]+", "a", value))


_QUANTITY = re.compile(r"\s*([-+]?\d+(?:\.\d+)?)\s*([^\W\d_]{1,12}|%)\s*")
"""A number and its unit (``53.6 F``, ``41 kg``, ``12%``): a parse keeps the number, the unit goes to a field's name."""


def read_out(sentence: str, out: Any) -> bool:
    """Whether a parse read a value of ``out`` with a digit out of a sentence (4+ words; fewer: one value),
    or read a quantity whole: its number kept under a field named for its unit, or beside the unit
    (``11.5 C`` -> ``temp_c: 11.5``); ``53.6 F`` -> ``temp_c: 53.6`` lost its unit."""
    found = [x for _, x in leaves(out) if isinstance(x, (int, float, str)) and not isinstance(x, bool)]
    if (q := _QUANTITY.fullmatch(sentence)) is not None:
        unit, n = q.group(2).lower(), float(q.group(1))
        held = unit in {x.lower() for x in found if isinstance(x, str)}
        return any(isinstance(x, (int, float)) and x == n and (held or unit in re.split(r"[\W_]+", k.lower()))
                   for k, x in leaves(out))
    if len(sentence.split()) < 4:
        return False
    return any(any(c.isdigit() for c in x) and x in sentence.lower() for x in (str(v).lower() for v in found))


__all__ = [
    "has_word", "ID_TOKEN", "char_shape", "run_shape", "TEXT_LIMIT", "error_text",
    "http_status", "is_empty", "is_marker", "json_problem", "keyed_values", "largest_list", "leaves",
    "looks_like_json", "parse_json", "python_repr", "read_out", "strip_fence", "text_of", "without_markers",
]
