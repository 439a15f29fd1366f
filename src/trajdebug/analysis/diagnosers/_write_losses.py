"""What a storing state writer's left-out values mean: one it replaced, one a later step needed, or a value
later steps were handed by another path (a projection).

Split from `trajdebug.analysis.diagnosers._dataflow`, whose `state_write` asks these, with the value matching
both use (`_lost`: a value in a text, numbers in any restated form).  A dropped value is weighed by where it
went after the write, so the questions here read the steps after the writer and the failures' messages.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis import _numerals as numerals
from trajdebug.analysis.diagnosers._context import _QUOTED, DiagnoseContext
from trajdebug.analysis.diagnosers._state_values import _NAMED_NUMBER
from trajdebug.analysis.lineage import PROTOCOL_FIELDS
from trajdebug.core.model import Step
from trajdebug.core.values import atoms


_INDEX = re.compile(r"\[\d+\]")
"""A list position in a leaf's path."""


_NUMERAL = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-+]?\d+\.\d+|[-+]?\d+")
"""A number written out whole, thousands separators allowed."""


def _lost(values: list[Any], text: str) -> list[Any]:
    """The values that do not show in a (lower-case) text, numbers in any restated form."""
    forms: set[str] | None = None  # read when a value is not found as written (most are)
    lost = []
    for v in values:
        if isinstance(v, str):
            if v.strip().lower() in text:
                continue
            # A number written as text ('1,429.00') is kept when the output holds it as a number (1429.0).
            n = numerals.norm_number(v.strip()) if _NUMERAL.fullmatch(v.strip()) else None
            if n is None:
                lost.append(v)
                continue
        else:
            n = numerals.norm_number(repr(v))
        if forms is None:
            forms = _number_forms(text)
        if n not in forms:
            lost.append(v)
    return lost


def _converted_in_place(lost: list[Any], given: Any, out: Any) -> list[Any]:
    """The ``lost`` values less the small numbers written as text ('10.00', no telling number by
    `numerals.norm_number`) that the output holds as that number in the same place: under the same field
    name, or at the same position of a list (a delimited record's parts against the record's values in
    order).  Converting its type dropped nothing; the same number elsewhere in the output (a quantity 10
    beside a dropped discount '10.00') is another value."""
    small = {v for v in lost if isinstance(v, str) and _NUMERAL.fullmatch(v.strip())}
    if not small:
        return lost
    kept: set[str] = set()
    if not isinstance(out, (Mapping, list)):
        return lost
    if isinstance(given, list) and all(isinstance(v, str) for v in given):
        theirs = list(out.values()) if isinstance(out, Mapping) else out
        for i, v in enumerate(given):
            if v in small and i < len(theirs) and _same_number(v, theirs[i]):
                kept.add(v)
    elif isinstance(given, (Mapping, list)):
        # (Records in a list are read by their leaves' paths, ``[2].qty``: the same position, then the same name.)
        placed: dict[str, list[Any]] = {}
        for p, w in content.leaves(out):
            placed.setdefault(p, []).append(w)
            placed.setdefault(_last_field(p), []).append(w)
        for p, v in content.leaves(given):
            if isinstance(v, str) and v in small and any(
                _same_number(v, w) for w in placed.get(p, placed.get(_last_field(p), []))
            ):
                kept.add(v)
    return [v for v in lost if v not in kept] if kept else lost


def _last_field(path: str) -> str:
    """A leaf path's last field name (``lines[2].qty`` is ``qty``)."""
    return _INDEX.sub("", path).rsplit(".", 1)[-1]


def _same_number(raw: str, value: Any) -> bool:
    """Whether ``value`` (a number, or a numeral as text) is the number ``raw`` writes."""
    if isinstance(value, bool):
        return False
    if isinstance(value, str):
        if not _NUMERAL.fullmatch(value.strip()):
            return False
        value = float(value.strip().replace(",", ""))
    return isinstance(value, (int, float)) and float(raw.strip().replace(",", "")) == float(value)


_FORMS_OF: dict[str, set[str]] = {}
"""The texts `_number_forms` read, with their forms: a writer's leaves are each tested against the same text, and
each writer's text is read twice (what its calls leave out, `_lost_paths`, then what this call lost), the whole
run's writers in between.  Keyed by the text itself, so two threads analysing at once never pair one text with
the other's forms."""


_FORMS_OF_SIZE = 1 << 22
"""The characters of the texts whose forms are kept (a long run's writers, each a few hundred characters; past
this, it starts over)."""


_FORMS_OF_KEPT: list[int] = [0]


_LONG_TEXT = 1 << 16
"""A text longer than this (characters) is kept alone, as one pair, until the next long one (`_LONG_FORMS`)."""


_LONG_FORMS: list[tuple[str, set[str]] | None] = [None]


def _number_forms(text: str) -> set[str]:
    """`numerals.number_forms` of a text, kept for later calls on the same text (the caller does not change it)."""
    if len(text) > _LONG_TEXT:
        last = _LONG_FORMS[0]
        if last is None or last[0] != text:  # (one pair swapped whole: see `_FORMS_OF`)
            last = _LONG_FORMS[0] = (text, numerals.number_forms(text))
        return last[1]
    forms = _FORMS_OF.get(text)  # (equal texts, not only the same object: the caller may lower a text again)
    if forms is None:
        _FORMS_OF_KEPT[0] += len(text)
        if _FORMS_OF_KEPT[0] > _FORMS_OF_SIZE:
            _FORMS_OF.clear()
            _FORMS_OF_KEPT[0] = len(text)
        forms = _FORMS_OF[text] = numerals.number_forms(text)
    return forms


def _with_json_read(value: Any, depth: int = 0) -> Any:
    """The value with JSON written in its strings read (a chat message whose content is JSON, a field holding a record)."""
    if depth > 4:
        return value
    if isinstance(value, str):
        parsed = content.embedded_json(value)
        return value if parsed is None else _with_json_read(parsed, depth + 1)
    if isinstance(value, Mapping):
        return {k: _with_json_read(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_json_read(v, depth + 1) for v in value[:500]]
    return value


def _kept_field_lost(lost: list[Any], step: Step, written: Mapping[str, Any]) -> bool:
    """Whether a value the writer left out was given under a field it wrote (list items read as one): it kept
    the field and changed its value (a revenue stored a thousand times over), no projection that dropped the
    field."""
    kept = {_INDEX.sub("[]", p).rsplit(".", 1)[-1] for p, _ in content.leaves(written)}
    gone = {str(v) for v in lost}
    return any(
        str(v) in gone and _INDEX.sub("[]", p).rsplit(".", 1)[-1] in kept
        for p, v in content.leaves(_with_json_read(content.without_markers(step.input)))
    )


def _needed_later(lost: list[Any], step: Step, ctx: DiagnoseContext) -> bool:
    """Whether a value a storing writer left out was needed after it (issue 24, nu24 F7): one no later step was
    handed (the write was its way on, and it went nowhere), or one a failure's message writes as a word of its
    own (three characters at least: a short number there is as likely another quantity).  A value every later
    step that needed it was handed by another path (`_handed`) was not lost by this write."""
    said = [f.message.casefold() for f in ctx.failures]
    if any(len(t := str(v).casefold()) >= 3 and any(content.has_word(m, t) for m in said) for v in lost):
        return True
    pos = next(i for i, s in enumerate(ctx.run.steps) if s.step_id == step.step_id)
    whole, prose = _handed(step, ctx.run.steps[pos + 1 :])
    return any(not _handed_on(v, whole, prose) for v in lost)


def _handed(writer: Step, later: Iterable[Step]) -> tuple[set[str], list[str]]:
    """The values later steps were given, as (whole leaf values, numbers as ``n:<number>``; leaves of prose):
    values, not the keys of a mapping (a rates table keyed by service names hands on no service), and not the
    writer's own later calls (a loop writer's next item is no other path).  A model call's prompt is left out
    (its system prompt lists options, its context quotes records): what a model passes on shows in its answer,
    which the steps after it are given."""
    whole: set[str] = set()
    prose: list[str] = []
    for s in later:
        if s.name == writer.name or s.kind == "llm":
            continue
        for _, v in content.leaves(_with_json_read(content.without_markers(s.input))):
            if v is None or isinstance(v, bool):
                continue
            t = str(v).strip().casefold()
            n = _norm(v)
            whole.add(t if n is None else f"n:{n}")
            if n is None and " " in t:
                prose.append(t)
    return whole, prose


def _norm(v: Any) -> str | None:
    """A number's canonical text (a numeral written as text too), or None for other values and small integers."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return numerals.norm_number(repr(v))
    if isinstance(v, str) and _NUMERAL.fullmatch(v.strip()):
        return numerals.norm_number(v.strip())
    return None


def _handed_on(v: Any, whole: set[str], prose: list[str]) -> bool:
    """Whether a value was handed on (`_handed`): a number only as a whole value (a 12 inside "within 12
    hours" is another quantity), a text as a whole value or, four characters at least, as a word of its own in
    a longer text ('nuts' is not handed on inside 'walnuts', nor 'ab' anywhere)."""
    n = _norm(v)
    if n is not None:
        return f"n:{n}" in whole
    t = str(v).strip().casefold()
    if t in whole:
        return True
    return len(t) >= 4 and not _NUMERAL.fullmatch(t) and any(content.has_word(p, t) for p in prose)


def _overwritten(lost: list[Any], step: Step, written: Mapping[str, Any], ctx: DiagnoseContext) -> tuple[str, Any, Any] | None:
    """A value a storing writer left out that a failure's message names as a value (`_named`), given under a
    field the writer wrote another value under (a memory handed ``discount=0.02`` that stored ``discount=0.0``):
    (the field, the value given, the value written); None when there is none.  The write replaced a value the
    run was later judged on (nu24 F7's narrowing: dropping a value is evidence when a later step needed it).
    A field the write left out altogether is no replacement, nor is a value written in another form of the
    same value (`_restated`: rounded, re-cased, re-formatted), which a normalizing store does by design."""
    said = [f.message for f in ctx.failures]
    named = {str(v).casefold() for v in lost if _named(v, said)}
    if not named:
        return None
    wrote = {_field(p): v for p, v in content.leaves(written) if "[" not in p and not isinstance(v, (Mapping, list))}
    given = [(p, v) for p, v in content.leaves(_with_json_read(content.without_markers(step.input))) if "[" not in p]
    # Only a writer that stores: of the given fields it wrote, it wrote most (two at least) as they were given.
    # One that derives a record from its input (a ledger entry from an invoice) writes other values by design;
    # a field it left out altogether says neither (a memory keeps a few fields of three records).
    shared = [(_field(p), v) for p, v in given if _field(p) in wrote]
    held = sum(1 for k, v in shared if _same(v, wrote[k]))
    if held < 2 or 2 * held <= len(shared):
        return None
    for path, v in given:
        key = _field(path)
        if str(v).casefold() not in named or key.rsplit(".", 1)[-1] in PROTOCOL_FIELDS:
            continue
        if key not in wrote:
            continue
        if not _same(v, wrote[key]) and not _restated(v, wrote[key]):
            return key.rsplit(".", 1)[-1], v, wrote[key]
    return None


def _same(a: Any, b: Any) -> bool:
    """Whether two leaves are one value as written (case aside; a number whole or not: 9 and 9.0)."""
    return str(a).casefold() == str(b).casefold() or (_norm(a) is not None and _norm(a) == _norm(b))


def _field(path: str) -> str:
    """A leaf's path below its root (the argument's or the state key's name, which differ between what a writer
    is given and what it writes): ``customer.name`` and ``product.name`` are two fields."""
    return path.split(".", 1)[1] if "." in path else path


def _named(v: Any, said: list[str]) -> bool:
    """Whether a failure's message names a value as a value: a number as a number (three characters at least),
    an id-like token (letters and digits) as a word of its own, or any value quoted.  An English word the
    message uses as a word ('could not open the scan') names no status of 'open'."""
    t = str(v).strip()
    if len(t) < 3:
        return False
    n = _norm(v)
    if n is not None:
        return any(numerals.norm_number(m.group(0)) == n for s in said for m in _NAMED_NUMBER.finditer(s))
    low = t.casefold()
    if any(low == (m.group(1) or m.group(2) or "").strip().casefold() for s in said for m in _QUOTED.finditer(s)):
        return True
    return bool(re.search(r"\d", low) and re.search(r"[^\W\d_]", low)) and any(content.has_word(s.casefold(), low) for s in said)


def _restated(was: Any, wrote: Any) -> bool:
    """Whether a written value is the given one in another form: a number rounded (19.999 as 20.0: within 1 %), a
    text re-cased or re-punctuated, a date re-formatted."""
    a, b = _norm(was), _norm(wrote)
    if a is not None and b is not None:
        x, y = float(a), float(b)
        return math.isclose(x, y, rel_tol=1e-2)
    if (a is None) != (b is None):
        return False
    plain = [re.sub(r"[\W_]+", "", str(s).casefold()) for s in (was, wrote)]
    if plain[0] == plain[1]:
        return True
    keys = [{at.key for at in atoms(str(s))} for s in (was, wrote)]
    return bool(keys[0]) and keys[0] == keys[1]
