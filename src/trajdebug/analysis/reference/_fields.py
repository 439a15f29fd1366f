"""The fields of an answer, read as the same-input check (`_answers`) compares them.

An answer's leaf values by the unit each sits in (its path of field names, a named value's name, a text's
labelled line and its tokens), each with the record it belongs to in a list of records (lined up by an id- or
name-like field, not by place), and how often each unit changed among answers.  A text is read as what it
holds where it holds fields: JSON, a Python literal (``str(dict)``), one XML element, a CSV or markdown table.
And the text and number leaves of a request or an answer by field name, a request's text values.  Split from
`_answers`, which judges with them.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from trajdebug.analysis.lexicon import ENGLISH
from trajdebug.analysis.reference._profile import _FieldStats, _StepStats
from trajdebug.analysis.reference._reach import epoch_like


_Units = dict[str, list[tuple[str, str]]]
"""Leaf values by unit, each with its record's key in a list of records lined up by one ("" elsewhere)."""


def _units(value: Any, path: str = "", depth: int = 0, record: str = "") -> _Units:
    """A parsed answer's leaf values by the unit each sits in: its path of field names (`_unit_path`: a list's
    items as one, "" for a bare value), a text as what it holds (`_text_fields`: review rev48r, H1), else each
    line's tokens apart (`_lines`, `_tokens`: a text that varied in one time varied there only, rev48r2 H2).
    A list of records lined up by a key field gives each value its record's key and the list its order
    (``path`` and ``#order``): a record more or fewer, or another order, varies nothing of the records present
    in both (rev48r2, H1)."""
    out: _Units = {}
    if depth > 6:
        return out
    if isinstance(value, Mapping):
        for k, v in value.items():
            for f, vs in _units(v, _unit_path(path, value, k), depth + 1, record).items():
                out.setdefault(f, []).extend(vs)
    elif isinstance(value, list):
        key = _record_key(value)
        for v in value:
            mine = record if key is None else f"{record}\n{_cell(v[key])}"
            for f, vs in _units(v, path, depth + 1, mine).items():
                out.setdefault(f, []).extend(vs)
        if key is not None:
            out[f"{path}\n#order"] = [(record, json.dumps([_cell(v[key]) for v in value]))]
    elif isinstance(value, str):
        held = _text_fields(value)
        if held is not None:
            return _units(held, path, depth + 1, record)
        for unit, line in _lines(value, path):
            for sub, token in _tokens(line, unit):
                out.setdefault(sub, []).append((record, token))
    else:
        out[path] = [(record, json.dumps(value))]
    return out


def _changes_among(seen: Sequence[_Units]) -> dict[str, int]:
    """How many times each unit changed among some of one request's answers (``seen``, each read by `_units`;
    units that never changed left out): a unit under no list of records by its values in order (absent counts
    as empty), its distinct values less one; one under a list of records by each record's values, among the
    answers that hold that record (a record more or fewer, or another order, changes ``#order`` only), the
    most any record changed."""
    changes: dict[str, int] = {}
    for k in set().union(*seen):
        got = [x.get(k, []) for x in seen]
        if not all(r for vs in got for r, _ in vs):
            n = len({tuple(v for _, v in vs) for vs in got}) - 1
        else:
            by_record: dict[str, set[tuple[str, ...]]] = {}
            for vs in got:
                mine: dict[str, list[str]] = {}
                for r, v in vs:
                    mine.setdefault(r, []).append(v)
                for r, held in mine.items():
                    by_record.setdefault(r, set()).add(tuple(held))
            n = max((len(x) - 1 for x in by_record.values()), default=0)
        if n > 0:
            changes[k] = n
    return changes


def _record_key(items: list[Any]) -> str | None:
    """The field a list of records is lined up by: one every record holds, a text or a whole number unique
    among them, an id- or name-like one first (``id``, ``sku``, ``name``, ``room``), else the first text
    field; None for a list of fewer than two records or of no such field (lined up by place)."""
    if len(items) < 2 or not all(isinstance(v, Mapping) for v in items):
        return None
    first: Mapping[Any, Any] = items[0]
    fields = [
        k
        for k in first
        if all(k in v and isinstance(v[k], (str, int)) and not isinstance(v[k], bool) for v in items)
        and len({_cell(v[k]) for v in items}) == len(items)
    ]
    named = [k for k in fields if _SEP.split(str(k).casefold())[-1] in ENGLISH.record_name_words or str(k).casefold().endswith("id")]
    texts = [k for k in fields if isinstance(first[k], str) and not _NOT_NAME.search(first[k])]
    return str(named[0]) if named else (str(texts[0]) if texts else None)


_SEP = re.compile(r"[\W_]+")
"""What parts a field name's words."""

_NOT_NAME = re.compile(r"\d[:\-/]\d|^\s*-?\d[\d.,\s]*$")
"""A text that is a time, a date or a number: no record's name (a ``checked`` time differs in every record)."""


def _cell(value: Any) -> str:
    """A record key's value as text."""
    return value if isinstance(value, str) else json.dumps(value)


def _unit_path(path: str, record: Mapping[Any, Any], key: Any) -> str:
    """The unit of a record's field: the path to the record and the field's name, and for a record that names
    itself by a ``name`` or ``key`` beside a ``value`` (an attribute list's ``{"name": "price_eur", "value":
    42}``) that name too: a stock that varied says nothing of the price beside it (review rev48r, M2)."""
    if len(record) > 4:
        return f"{path}.{key}"
    fields = {str(k).casefold(): v for k, v in record.items()}
    if fields.keys() & ENGLISH.value_field_words:
        for label in ENGLISH.value_name_fields:
            own = fields.get(label)
            if label != str(key).casefold() and isinstance(own, str) and len(own) <= 60:
                return f"{path}.{own}.{key}"
    return f"{path}.{key}"



def _json_text(value: str) -> Any:
    """What a text that is JSON holds (a tool answering ``json.dumps({...})``), else None."""
    stripped = value.strip()
    if stripped[:1] not in "{[":
        return None
    try:
        held = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    return held if isinstance(held, (Mapping, list)) else None


def _text_fields(value: str) -> Any:
    """What a text that holds fields holds: JSON, a Python literal (``str(dict)``), one XML element, a CSV or
    markdown table (rows by their header's names); else None (review rev48r2, H2)."""
    if len(value) > _TEXT_CAP:
        return _json_text(value)
    held = _json_text(value)
    if held is None:
        held = _literal(value)
    if held is None:
        held = _xml(value)
    return held if held is not None else _table(value)


_TEXT_CAP = 100_000
"""The longest text read as a Python literal, XML or a table (JSON is read at any size)."""


def _literal(value: str) -> Any:
    """What a Python literal text (``str(dict)``: quotes, ``None``, ``True``) holds, read by `ast.literal_eval`
    (literals only, no call), a dict or a list, else None."""
    stripped = value.strip()
    if stripped[:1] not in "{[(" or stripped[-1:] not in "}])":
        return None
    try:
        held = ast.literal_eval(stripped)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(held, tuple):
        held = list(held)
    return json.loads(json.dumps(held, default=str)) if isinstance(held, (dict, list)) else None


def _xml(value: str) -> Any:
    """What one XML element's text holds (``<quote><price>42</price></quote>``) as fields: its children by tag,
    attributes as ``@name``; else None.  A text declaring a DOCTYPE or an entity is refused (no entity is
    expanded: no billion laughs)."""
    stripped = value.strip()
    if not (stripped.startswith("<") and stripped.endswith(">")) or "<!" in stripped:
        return None
    try:
        root = ET.fromstring(stripped)
    except (ET.ParseError, ValueError, RecursionError):
        return None
    held = _element(root, 0)
    return held if isinstance(held, Mapping) else None


def _element(node: ET.Element, depth: int) -> Any:
    """An XML element as fields: its attributes (``@name``), its children by tag (a list for a repeated tag),
    its text (``#text`` beside others); a bare element as its text."""
    out: dict[str, Any] = {f"@{k}": v for k, v in node.attrib.items()}
    for child in node if depth < 6 else ():
        held = _element(child, depth + 1)
        if child.tag in out:
            had = out[child.tag]
            out[child.tag] = [*had, held] if isinstance(had, list) else [had, held]
        else:
            out[child.tag] = held
    text = (node.text or "").strip()
    if not out:
        return text
    if text:
        out["#text"] = text
    return out


def _table(value: str) -> list[dict[str, str]] | None:
    """A CSV or markdown table's rows by their header's names (two lines or more, every row as wide as the
    header, the header's cells short distinct names); else None."""
    lines = [x.strip() for x in value.strip().splitlines() if x.strip()]
    if len(lines) < 2:
        return None
    if lines[0].startswith("|"):
        if not _MD_RULE.match(lines[1]):
            return None
        rows = [[c.strip() for c in x.strip("|").split("|")] for x in [lines[0], *lines[2:]]]
    else:
        try:
            rows = list(csv.reader(io.StringIO("\n".join(lines))))
        except csv.Error:
            return None
    head = rows[0]
    if (
        len(head) < 2
        or len(set(head)) < len(head)
        or not all(_HEADER.match(h) for h in head)
        or any(len(r) != len(head) for r in rows)
    ):
        return None
    return [dict(zip(head, r)) for r in rows[1:]]


_MD_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?$")
"""A markdown table's rule under its header (``|---|:---:|``)."""

_HEADER = re.compile(r"^[^\W\d][\w .()/%-]{0,40}$")
"""A table header's cell: a short name (``price_eur``, ``Unit price (EUR)``)."""


def _lines(text: str, field: str) -> Iterator[tuple[str, str]]:
    """A text's lines, each with its unit: the field's name and the line's label (``Checked: 10:07`` under
    ``checked``), or else its place among the text's unlabelled lines."""
    plain = 0
    for line in filter(None, (x.strip() for x in text.splitlines())):
        label = _LABEL.match(line)
        if label is None:
            plain += 1
        yield f"{field}\n{label.group(1).casefold() if label else plain}", line


_LABEL = re.compile(r"([^\W\d][^:=\n]{0,40}?)\s*[:=]\s")
"""A text line's label: a few words ahead of a colon or an equals sign and a space (``Price: 42 EUR``; not the
colon of a time, ``10:07``)."""


def _tokens(line: str, unit: str) -> Iterator[tuple[str, str]]:
    """A line's tokens (split at spaces, commas, semicolons and bars), each with its unit: the line's and its
    place in the line (a time beside a price on one line varies the time only)."""
    for i, token in enumerate(filter(None, _TOKEN.split(line))):
        yield f"{unit}\n{i}", token


_TOKEN = re.compile(r"[\s,;|]+")


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _leaves(value: Any, field: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    """The text and number leaves of a value (numbers as text) with the name of the field each sits under (a
    list's items under the list's)."""
    if depth > 6:
        return
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in "{[":
            try:
                yield from _leaves(json.loads(stripped), field, depth + 1)
                return
            except (ValueError, RecursionError):
                pass
        yield field.casefold(), value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield field.casefold(), format(value, "g") if isinstance(value, float) else str(value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(v, str(k), depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v, field, depth + 1)


def _fields_of(value: Any) -> dict[str, set[str]]:
    """An answer's text and number values by the name of the field each sits under, at any depth, case-folded."""
    out: dict[str, set[str]] = {}
    for field, v in _leaves(value):
        out.setdefault(field, set()).add(v.strip().casefold())
    return out


def _request_values(value: Any, depth: int = 0) -> list[str]:
    """The text values of a request (ids, names: 3 characters or more), up to 200."""
    if isinstance(value, str):
        return [value] if len(value.strip()) >= 3 else []
    if depth > 4:
        return []
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, (list, tuple)) else ()
    out: list[str] = []
    for v in items:
        out.extend(_request_values(v, depth + 1))
        if len(out) >= 200:
            break
    return out[:200]


# -- minted ids -------------------------------------------------------------------

_SHAPE_DIGIT, _SHAPE_ALPHA = re.compile(r"\d"), re.compile(r"[A-Za-z]")
"""A minted id mixes digits and letters (``BK-7031``)."""


def _minted_only(st: _StepStats, now: str, answers: Mapping[str, str]) -> bool:
    """Whether the answer differs from the passing run's only in ids the step mints on every call (a booking
    tool's ``booking=BK-7031`` where the same request got ``BK-7003``): a new id per call, new
    in every passing occurrence too and never given, is no changed answer."""
    minted = {f for f, fs in st.fields.items() if _mints(fs)}
    if not minted:
        return False
    try:
        mine = _masked(json.loads(now), minted)
        return any(_masked(json.loads(old), minted) == mine for old in answers)
    except (ValueError, RecursionError):
        # An answer cut for its size no longer parses: its minted fields are masked in its text, and the two
        # compared as far as both go (review rev47r, L1: a ledger's minted ``ref`` made every call "changed").
        cut = re.compile(r'"(' + "|".join(map(re.escape, minted)) + r')": ("(?:[^"\\]|\\.)*"|-?[\d.eE+]+)')
        mine_text = cut.sub(r'"\1": ""', now)
        for old in answers:
            theirs = cut.sub(r'"\1": ""', old)
            end = min(len(mine_text), len(theirs))
            if len(now) >= 20_000 and mine_text[:end] == theirs[:end]:
                return True
        return False


def _mints(fs: _FieldStats) -> bool:
    """A field whose every passing value was new (seen once), an id (letters and digits), never given; or a
    stamp: a field of dates never given, each date seen in one passing run only, and some date shared by one
    run's calls with different requests (a snapshot's ``as_of``, dated anew in every run; the time of day
    beside it may repeat), unlike an order's ship date, which one request gets."""
    if fs.n < 2 or fs.grounded:
        return False
    # A field with no value read (a document's prose: no number, date or id in it) shows no id at all: "every
    # value new" of nothing would mask a whole text answer (nu25 F2: a cut document read as unchanged).
    if fs.values and all(c == 1 for c in fs.values.values()) and all(
        _SHAPE_DIGIT.search(r) and _SHAPE_ALPHA.search(r) for r in fs.raws.values()
    ):
        return True
    if len(fs.runs) >= 2 and fs.numbers and len(set(fs.numbers)) == len(fs.numbers) and all(map(_clock, fs.numbers)):
        return True
    dates = [k for k in fs.values if k.startswith("d:")]
    return (
        len(fs.runs) >= 2
        and bool(dates)
        and all(k.startswith(("d:", "t:")) for k in fs.values)
        and not fs.across.intersection(dates)
        and bool(fs.shared)
    )


def _clock(value: Any) -> bool:
    """Whether a number is a clock's reading: seconds (or finer) since the epoch, 2000-2100 (no run's start
    at hand: a field's numbers come from many runs)."""
    return epoch_like(value, 0)


def _masked(value: Any, fields: set[str]) -> Any:
    """A parsed answer with the values (text, or a clock's number) under ``fields`` blanked out."""
    if isinstance(value, Mapping):
        return {
            k: "" if k in fields and (isinstance(v, str) or _clock(v)) else _masked(v, fields)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_masked(v, fields) for v in value]
    return value


# -- values volatile by form --------------------------------------------------------

_VOLATILE = re.compile(
    r"(?:\d{4}-\d{2}-\d{2}[T ])?\d{1,2}:\d{2}:(?:\d{2}[.,]\d+|(?!00)\d{2})(?:Z|[+-]\d{2}:?\d{2})?"  # a stamp to the second
    r"|<uuid>|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # a UUID (masked or not)
    r"|(?=\w*\d)[0-9A-HJKMNP-TV-Z]{26}"  # a ULID (not a hex string: a content digest follows its content)
    r"|PT(?:\d+(?:\.\d+)?[HMS])+|\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s)",  # a duration (ISO 8601, or with its SI symbol)
    re.IGNORECASE,
)
"""A value that is new on every call by its form alone, whatever its field is called: a date-time stamp, a UUID or
another minted id (a ULID), a duration.  A date alone, a time to the minute (a booked
``10:00`` slot) or on the minute (``09:00:00``, an appointment) is no such value: a request's answer holds it."""


def _volatile(value: str) -> bool:
    """Whether one leaf (`_units`' text: a JSON number or string, or a token) is volatile by its form, or an
    epoch clock's reading."""
    text = value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
    # A token keeps the punctuation around it in prose ("at 11:40:01: 4 C").
    if _VOLATILE.fullmatch(text.strip().strip(":;,.()[]")) is not None:
        return True
    try:
        return _clock(json.loads(value))
    except (ValueError, RecursionError):
        return False


def volatile_difference(now: str, old: str) -> set[str] | None:
    """The values the answer ``now`` holds where it differs from ``old`` (both `answer_key` texts), when every
    value that differs, on either side, is volatile by form (`_volatile`): an answer whose stamp or trace id
    alone is new is the same answer.  None when some other value differs (or an answer does not parse)."""
    try:
        mine, theirs = _units(json.loads(now)), _units(json.loads(old))
    except (ValueError, RecursionError):
        return None
    new: set[str] = set()
    for unit in mine.keys() | theirs.keys():
        a = sorted(v for _, v in mine.get(unit, []))
        b = sorted(v for _, v in theirs.get(unit, []))
        if a == b:
            continue
        if not all(map(_volatile, set(a) ^ set(b))):
            return None
        new.update(v for v in set(a) - set(b))
    return new if new else None
