"""What a model chose rather than claimed: the options it was shown, the settings it picked.

A value a model states that none of its inputs holds is a claim about the world (a made-up price, an
invented id): `trajdebug.analysis.diagnosers._claims.llm_output` reports it.  Not every such value is a
claim.  A model that calls a tool picks the call's settings itself (a time window of ``15m``, a dosing
interval of 24 hours, a meeting of 30 minutes), or one of the options the tool's schema offered it (an
``enum``, a ``default``, the examples of a ``description``); a number it works out from such a setting and
a given rate (18 minutes at 40 litres a minute: 720 litres) is as much its own.  And a value the world
itself answered with, before anything handed it to the world, was no invention (a model that asks for a
customer's site and its roof in one turn names the site the customer record then returns).

These rules read values and the recorded request: the tools' JSON schemas as the route kept them (the
request's ``tools`` through the recording SDK, OpenInference's ``llm.tools.N.tool.json_schema``,
``gen_ai.tool.definitions``; LangGraph and the Agents SDK keep the tools' names only).  The words of time
units are the lexicon's (`trajdebug.analysis.lexicon.Lexicon.duration_text` and its siblings).
"""

from __future__ import annotations

import math
import re
from collections.abc import Container, Iterable, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis import _numerals as numerals
from trajdebug.analysis.diagnosers._context import DiagnoseContext
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.model import Step


_SCHEMA_ATTRS = ("gen_ai.tool.definitions", "llm.tools")
CALL_ARGS = ("arguments", "args", "input", "parameters")
"""The keys under which the known call formats hold a tool call's arguments (``tool_calls[0].arguments``), in
the order read when a call holds several (a tuple: a set of strings is read in an order that follows the hash seed)."""
_LAST = re.compile(r"\[\d+\]$")
_CLOCK = re.compile(r"(?<![\d:.])([01]?\d|2[0-3]):([0-5]\d)(?![\d.]|:\d)")
_FIELD_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def key(v: Any) -> tuple[str, Any] | None:
    """A value as the rules compare it: a number by its amount, a string by its lower-case text."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return ("n", round(float(v), 6))
    if isinstance(v, str):
        return ("s", v.strip().lower())
    return None


def shown(step: Step) -> str:
    """Lower-case text of the tool schemas the model was offered, as its route recorded them ('' if none)."""
    parts: list[str] = []
    if isinstance(step.input, Mapping) and step.input.get("tools"):
        parts.append(content.text_of(step.input["tools"]))
    for k, v in step.attributes.items():
        schema = k in _SCHEMA_ATTRS or (k.startswith("llm.tools.") and k.endswith("json_schema"))
        names = isinstance(v, list) and all(isinstance(x, str) for x in v)  # names alone offer no value
        if schema and not (k == "llm.tools" and names):
            parts.append(v if isinstance(v, str) else content.text_of(v))
    return "\n".join(parts).lower()


def _duration_field(name: str, lexicon: Lexicon) -> bool:
    words = {w.lower() for w in _FIELD_WORD.findall(name)}
    return bool(words & lexicon.duration_words)


def setting(param: str, v: Any, *, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a value given to a call's parameter is a setting the caller picked: a span of time (``15m``;
    a number of a field named for one, ``every_hours=24``) or a small round number (a page size, a limit)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, str):
        return bool(lexicon.duration_value.match(v))
    if isinstance(v, (int, float)):
        if _duration_field(param, lexicon):
            return True
        return float(v).is_integer() and 0 < abs(v) <= 100 and int(v) % 5 == 0
    return False


def settings(
    out: Any, *, slots: bool = False, clock: bool = True, lexicon: Lexicon = ENGLISH
) -> set[tuple[str, Any]]:
    """The keys of the values an output sets rather than claims.

    In a tool call's arguments (every argument of a tool's input when ``slots``): the `setting` values.
    In text (a model's prose, a chat message's content): each span of time it sets ("every 24 hours"), and the
    parts of a time of day (unless not ``clock``: a time of day is no amount to work a number out from).
    """
    found: set[tuple[str, Any]] = set()
    for path, v in content.leaves(out):
        parts = path.rsplit(".", 2)
        inside = len(parts) >= 2 and _LAST.sub("", parts[-2]) in CALL_ARGS and "[" not in parts[-1]
        param = parts[-1] if inside else _LAST.sub("", parts[-1]) if slots else None
        if param is not None:
            if setting(param, v, lexicon=lexicon) and (k := key(v)) is not None:
                found.add(k)
            continue
        if isinstance(v, str):
            for d in lexicon.duration_text.finditer(v):
                found.add(("n", round(float(d.group(1)), 6)))
            for t in _CLOCK.finditer(v) if clock else ():
                # A time of day a plan sets ("A1: 05:30 for 18 min") is one setting, not the numbers 5 and 30.
                found.update({("n", float(t.group(1))), ("n", float(t.group(2)))})
    return found


def bounds(out: Any, *, lexicon: Lexicon = ENGLISH) -> set[tuple[str, Any]]:
    """The keys of the numbers a tool call's arguments give to a parameter named as a bound (``min_score=7.5``,
    `Lexicon.bound_field`): a threshold on what the call asks for.  Where the caller was given no number to
    put there, the threshold is how it chose to ask (`trajdebug.analysis.diagnosers._claims.llm_output`)."""
    found: set[tuple[str, Any]] = set()
    for path, v in content.leaves(out):
        parts = path.rsplit(".", 2)
        inside = len(parts) >= 2 and _LAST.sub("", parts[-2]) in CALL_ARGS and "[" not in parts[-1]
        bound = inside and isinstance(v, (int, float)) and lexicon.bound_field.match(parts[-1])
        if bound and (k := key(v)) is not None:
            found.add(k)
    return found


def bound_words(out: Any, *, lexicon: Lexicon = ENGLISH) -> set[str]:
    """The words of the quantities a tool call's bounds limit (``min_berths`` -> berths, ``priceMax`` ->
    price), lower-cased: what a number the caller was given must be about to be the one a bound restates."""
    found: set[str] = set()
    for path, v in content.leaves(out):
        parts = path.rsplit(".", 2)
        inside = len(parts) >= 2 and _LAST.sub("", parts[-2]) in CALL_ARGS and "[" not in parts[-1]
        m = lexicon.bound_field.match(parts[-1]) if inside and isinstance(v, (int, float)) else None
        if m is not None:
            quantity = next(g for g in (m.group(2), m.group(3), m.group(6), m.group(7)) if g)
            found |= set(field_words(quantity))
    return found


_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def field_words(name: str) -> list[str]:
    """The words of a field name, lower-cased (``charge_pct`` -> charge, pct; ``minPrice`` -> min, price)."""
    return [w.lower() for w in _WORDS.findall(name)]


_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")


def planned(out: Any, hay: str, *, lexicon: Lexicon = ENGLISH) -> set[tuple[str, Any]]:
    """The keys of the days a call made for its effect sets after every day its input states.

    A call that books, schedules or delivers names the day it plans the action for: a day later than any
    its input wrote (a visit the day after an alarm raised on the 5th; not a past visit's date) is its
    choice, not a claim about the world.  A lookup's day is what it asks about (the roster of the 15th for
    a shift on the 14th is a slip): calls named as reads (`Lexicon.read_tool`) set none.  Days written in
    full (``2026-03-06``) only: a day without its year cannot be placed after another.
    """
    days = [m.group(0) for m in _DAY.finditer(hay)]
    calls = out.get("tool_calls") if isinstance(out, Mapping) else None
    if not days or not isinstance(calls, list):
        return set()
    latest = max(days)
    found: set[tuple[str, Any]] = set()
    for c in calls:
        name = c.get("name") if isinstance(c, Mapping) else None
        if not isinstance(name, str) or lexicon.read_tool.match(name):
            continue
        for _, v in content.leaves(c.get("arguments")):
            if isinstance(v, str) and _DAY.fullmatch(v.strip()) and v.strip() > latest:
                found.add(("s", v.strip().lower()))
    return found


def worked_out_times(out: Any, hay: str, *, lexicon: Lexicon = ENGLISH) -> set[tuple[str, Any]]:
    """The keys of the times of day a tool call sets that are an earlier time of the same call plus the length
    of that very thing (``start=20:00, end=23:00`` beside ``'hours': 3``; ``90`` minutes): an end worked out from
    a start and a length is the call's setting, as the start is, not a time the model claims the world gave it.
    A window may cross midnight (22:00 + 3 h is 01:00).  The length is read only from a length-named field
    (`Lexicon.hours_length`, `Lexicon.minutes_length`) of the call itself or of a record its input prints
    holding the start: any length written elsewhere ("arrive 30 min early") is no span of this window."""
    calls = out.get("tool_calls") if isinstance(out, Mapping) else None
    if not isinstance(calls, list):
        return set()
    found: set[tuple[str, Any]] = set()
    for c in calls:
        args = _call_args(c)
        times = [
            (v.strip(), int(m.group(1)) * 60 + int(m.group(2)))
            for _, v in content.leaves(args)
            if isinstance(v, str) and (m := _CLOCK.fullmatch(v.strip()))
        ]
        if len(times) < 2:
            continue
        own = _lengths(content.text_of(args), lexicon)
        for i, (raw, start) in enumerate(times):
            spans = (own | _record_lengths(hay, raw, lexicon)) - {0}
            found |= {("s", r.lower()) for r, end in times[i + 1 :] if (end - start) % 1440 in spans}
    return found


def _call_args(call: Any) -> Any:
    """A tool call's arguments, in any of the known call formats (`CALL_ARGS`, under ``function`` too), a
    JSON text of them read as the record it writes."""
    if not isinstance(call, Mapping):
        return None
    fn = call.get("function")
    inner = fn if isinstance(fn, Mapping) else call
    args = next((inner[k] for k in CALL_ARGS if k in inner), None)
    return content.parse_json(args) if isinstance(args, str) and content.looks_like_json(args) else args


_LONGEST = 10_000
"""Minutes beyond which a length is no window of a day's booking (and a run of digits no number to compute with)."""


def _lengths(text: str, lexicon: Lexicon) -> set[int]:
    """The lengths in minutes that length-named fields of a text give (``'hours': 3.5``, ``slot_mins=45``)."""
    found: set[int] = set()
    for pattern, scale in ((lexicon.hours_length, 60), (lexicon.minutes_length, 1)):
        for m in pattern.finditer(text):
            if m.group("a") is None:
                continue  # a length in prose ("2 hours") is no field of a record
            x = float(m.group("a")) * scale
            if math.isfinite(x) and 0 < x <= _LONGEST:
                found.add(round(x))
    return found


def _record_lengths(hay: str, start: str, lexicon: Lexicon) -> set[int]:
    """The lengths (`_lengths`) of the printed records (``{...}``) of a text that hold the time ``start``."""
    found: set[int] = set()
    at = hay.find(start)
    for _ in range(20):
        if at < 0:
            break
        lo, hi = hay.rfind("{", 0, at), hay.find("}", at)
        if lo >= 0 and hi > at and "}" not in hay[lo:at] and "{" not in hay[at:hi]:
            found |= _lengths(hay[lo : hi + 1], lexicon)
        at = hay.find(start, at + 1)
    return found


def from_setting(v: float, chosen: Iterable[tuple[str, Any]], forms: Container[str]) -> bool:
    """Whether a number is a setting times or over a number of the inputs (18 minutes at 40 a minute: 720)."""
    for kind, s in chosen:
        if kind != "n" or not s:
            continue
        for r in (v / s, v * s):
            n = numerals.norm_number(repr(round(r, 6)))
            if n is not None and n in forms:
                return True
    return False


def confirmed(step: Step, ctx: DiagnoseContext, values: Iterable[str], reach: int = 50) -> set[str]:
    """The strings among ``values`` a later tool answered with before any step was handed them.

    A model that names a customer's site in the same turn it asks for the customer record, which then
    returns that site, invented nothing: the world said it first.  A tool given the value only echoes it,
    and once any step was handed it the world may be repeating it back (a write read again).
    """
    left = {v.strip().lower() for v in values if isinstance(v, str) and len(v.strip()) >= 3}
    found: set[str] = set()
    pos = ctx.graph.position(step.step_id)
    for s in ctx.run.steps[pos + 1 : pos + 1 + reach]:
        if not left:
            break
        given = ctx.input_text(s)
        said = ctx.text(s.step_id) if s.kind in ("tool", "retrieval") and s.status == "ok" else ""
        for v in list(left):
            if v in given:
                left.discard(v)
            elif v in said and content.has_word(said, v):
                found.add(v)
                left.discard(v)
    return found


def looked_up(step: Step, ctx: DiagnoseContext, values: Iterable[str], reach: int = 50) -> set[str]:
    """The strings among ``values`` that found what the step's own request was about, once handed to a tool.

    A model that looks a record up by a key it was never shown (a caller's phone number from a session the
    recording does not carry) and whose lookup answers with the pet, customer or order its request named
    made up nothing: the world tied the key to the request.  Only the first clean tool call given the value
    is read, and only names and codes of its answer that its call was not given and the request writes as
    they are written there, a word of their own: a key that found another record answers with other names.
    A name is capitalised and a code holds letters and digits; a date, a number or a common word written in
    lower case in the request ("a dog", "must be active") names no record.
    """
    left = {v.strip().lower() for v in values if isinstance(v, str) and len(v.strip()) >= 3}
    asked = content.unmarked_text(step.input)
    found: set[str] = set()
    pos = ctx.graph.position(step.step_id)
    for s in ctx.run.steps[pos + 1 : pos + 1 + reach]:
        if not left:
            break
        if s.kind not in ("tool", "retrieval"):
            continue
        given = ctx.input_text(s)
        for v in [v for v in left if v in given]:
            left.discard(v)
            if s.status == "ok" and any(_names_asked(w, given, asked) for _, w in content.decoded_leaves(s.output)):
                found.add(v)
    return found


def _names_asked(w: Any, given: str, asked: str) -> bool:
    """Whether an answer's value names what the request wrote: a capitalised name or a code, found as written."""
    if not isinstance(w, str):
        return False
    w = w.strip()
    if len(w) < 3 or not any(c.isalpha() for c in w) or not (w[0].isupper() or content.ID_TOKEN.fullmatch(w)):
        return False
    return w.lower() not in given and content.has_word(asked, w)


__all__ = ["CALL_ARGS", "confirmed", "looked_up", "from_setting", "key", "setting", "settings", "shown"]
