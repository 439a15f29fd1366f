"""Tool answers whose own shape shows an error swallowed into a default: the handle of what the call made or
found left empty beside an otherwise filled record (`unfilled_handles`, evidence ``unfilled-handle``); the
reading of a record's empty and filled fields (`empty_fields`), shared with the what-if rules; and of a text
holding a record (`parse_record`), shared with the left-out rule.

Record values may be anything a recorder kept (a numpy array, an object whose ``==`` raises): a value is only
ever tested by identity or by type before it is compared, so no value's own ``==`` runs here."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis._sources import Found, Slice
from trajdebug.analysis.lexicon import Lexicon
from trajdebug.analysis.reference import step_key
from trajdebug.core.model import Step


_NAME_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
"""A word of a field or step name, snake or camel case (``hold_id`` -> hold, id; ``bookingRef`` -> booking, Ref)."""

_STEM = 4
"""Words of a name compared by their first letters (``book_slot`` and ``booking``, ``reserve`` and
``reservation``), as the decision rules compare a model's words with an agent's name."""


def blank(value: object) -> bool:
    """None or an empty text: the empty answers a call gives for a handle (and the only values tested)."""
    return value is None or (isinstance(value, str) and value == "")


def unset(value: object) -> bool:
    """A value that tells nothing was made or found: blank, an empty list or record, a zero, a false flag."""
    if blank(value) or value is False:
        return True
    if type(value) in (list, tuple, dict):
        return len(value) == 0  # type: ignore[arg-type]
    return type(value) in (int, float) and value == 0


def parse_record(s: str) -> Any:
    """The data a text holds whole: JSON, else a program's dict or list printed by Python (`content.python_repr`:
    the Agents SDK's ``str(result)`` of a tool), read as literals only; None for anything else."""
    parsed = content.parse_json(s)
    if parsed is not None or not content.python_repr(s):
        return parsed
    try:
        return ast.literal_eval(content.strip_fence(s))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def parsed_record(text: str) -> object:
    """A text printing a record or a list (JSON, or a tool's result as Python prints it) as that value, else None."""
    t = text.strip()
    return parse_record(t) if t[:1] in ("{", "[") and len(t) < 20_000 else None


def record_of(value: object) -> dict[str, object] | None:
    """A step's answer as a record (a dict, or a text printing one)."""
    if isinstance(value, str):
        value = parsed_record(value)
    return value if isinstance(value, dict) else None


def empty_fields(value: object, depth: int = 0, *, filled: bool = False) -> list[str]:
    """The names of the fields a value holds empty (None or an empty text; with ``filled``, the fields it holds
    filled), each by its last name; a text that prints a record is read as that record."""
    found: list[str] = []
    for p, v in content.leaves(value):
        if isinstance(v, str) and depth < 3 and v.strip()[:1] in ("{", "["):
            parsed = parsed_record(v)
            found += empty_fields(parsed, depth + 1, filled=filled) if isinstance(parsed, (dict, list)) else []
        elif blank(v) != filled and p and not p.endswith("]"):
            found.append(p.rsplit(".", 1)[-1])
    return found


def _stems(name: str) -> set[str]:
    return {w.lower()[:_STEM] for w in _NAME_WORD.findall(name) if len(w) >= 3}


def unfilled_handles(sl: Slice, ids: Iterable[str]) -> list[Found]:
    """Tool calls that answered the handle of what they made or found empty: an error swallowed into a default.

    A call that did its work names what it did (a hold's id, a booking's reference); a tool that caught its
    service's error (a timeout, a 503) and answered anyway fills the rest of its record from the request or
    defaults and leaves that handle ``None`` or ``""``.  Nothing was recorded as an error, so the error
    lifecycle never sees it: the answer's shape is the only trace.  The handle must be the call's own product
    (`_own_handles`): another entity's key left empty (``parent_id``, ``manager_id``, ``promo_id``) is an
    optional field, not a failure.  Ordinary emptiness is left out (`_Calls.ordinary`).
    """
    calls = _Calls(sl)
    out: list[Found] = []
    for sid in ids:
        step = sl.g.steps[sid]
        if step.kind not in ("tool", "retrieval") or step.status != "ok" or sid in sl.has_children:
            continue
        record = calls.record(step)
        if record is None or content.error_text(step.output):
            continue
        fields = _own_handles(record, step, sl.lexicon) - set(empty_fields(step.input))
        fields = {f for f in fields if not calls.ordinary(step, f)}
        if fields:
            shown = ", ".join(sorted(fields)[:2])
            out.append(
                Evidence(
                    sid,
                    sl.w["unfilled"],
                    f"answered {shown} empty beside an otherwise filled answer: a call that did its work names what"
                    " it made or found, so an error was likely caught here and a default answered",
                    "unfilled-handle",
                )
            )
    return out


def _own_handles(record: dict[str, object], step: Step, lexicon: Lexicon) -> set[str]:
    """The handle fields (`Lexicon.handle_words`) a record holds blank that name the call's own product.

    Own: the field is a bare identifier (every word in `Lexicon.identifier_words`: ``id``, ``ref``), which
    names the record itself; or a word of it is a word of the call's name (``hold_berth`` -> ``hold_ref``,
    ``book_slot`` -> ``booking``); or the call was handed it filled (asked to act on it, answered it empty).
    A field qualified by another entity (``parent_id``, ``po_reference``) is that entity's key, often unset.
    The record must hold something else set (an empty list, a zero, a false flag are defaults, not answers),
    and no flag saying the request was refused: false in a field of `Lexicon.granted_words` or named for the
    call (``available: false``), an honest no.  An unrelated false (``breakfast: false``) is just a value.
    """
    name = _stems(step.name)
    keys = [k for k in record if isinstance(k, str)]
    for k in keys:
        if record[k] is False and (_stems(k) & name or {w.lower() for w in _NAME_WORD.findall(k)} & lexicon.granted_words):
            return set()
    empty = {k for k in keys if blank(record[k])}
    if not empty or all(unset(v) for k, v in record.items() if k not in empty):
        return set()
    handed = set(empty_fields(step.input, filled=True))
    out = set()
    for k in empty:
        words = [w.lower() for w in _NAME_WORD.findall(k)]
        if not words or words[-1] not in lexicon.handle_words or set(words) & lexicon.more_words:
            continue
        if set(words) <= lexicon.identifier_words or _stems(k) & name or k in handed:
            out.add(k)
    return out


class _Calls:
    """The run's tool calls grouped by (name, kind) once, each answer read as a record once: the guards ask
    about every call of the same step for every empty handle, which would otherwise re-read them all."""

    def __init__(self, sl: Slice) -> None:
        self.sl = sl
        self.groups: dict[tuple[str, str], list[Step]] = {}
        for s in sl.g.steps.values():
            self.groups.setdefault((s.name, s.kind), []).append(s)
        self.records: dict[str, dict[str, object] | None] = {}
        self.fields: dict[tuple[str, str, str], tuple[int, dict[str, int]]] = {}

    def record(self, step: Step) -> dict[str, object] | None:
        if step.step_id not in self.records:
            self.records[step.step_id] = record_of(step.output)
        return self.records[step.step_id]

    def _field(self, step: Step, fld: str) -> tuple[int, dict[str, int]]:
        """For a step's calls: how many answered ``fld`` blank, and per request (its text) the last position
        of an ok call that answered it filled."""
        key = (step.name, step.kind, fld)
        if key not in self.fields:
            blanks, filled = 0, dict[str, int]()
            for other in self.groups[(step.name, step.kind)]:
                rec = self.record(other)
                if rec is None or fld not in rec:
                    continue
                if blank(rec[fld]):
                    blanks += 1
                elif other.status == "ok":
                    req = content.text_of(other.input)
                    filled[req] = max(filled.get(req, -1), self.sl.g.position(other.step_id))
            self.fields[key] = (blanks, filled)
        return self.fields[key]

    def ordinary(self, step: Step, fld: str) -> bool:
        """Whether the step answers ``fld`` blank as a matter of course, or its blank answer was made good: another
        call of it in this run answered it blank too, a later call on the same request answered it filled (a
        retry that recovered), or the agent's passing runs saw it answer the field blank at least once."""
        blanks, filled = self._field(step, fld)
        if blanks > 1 or filled.get(content.text_of(step.input), -1) > self.sl.g.position(step.step_id):
            return True
        if self.sl.profile is None:
            return False
        st = self.sl.profile.steps.get(step_key(step, self.sl.g.steps))
        return st is not None and st.present.get(fld, 0) < st.n
