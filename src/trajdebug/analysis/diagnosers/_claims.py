"""The ``llm-output`` diagnoser: values a model's answer states that its inputs do not hold or contradict.

A model's answer is read for the values it *claims* (SQL literals, JSON leaves, the numbers of its text), and
each is looked for in what the model was given: its input, the outputs it depends on, the run's task.  What
the model chose is no claim (`trajdebug.analysis.diagnosers._choices`: settings, options it was shown, keys its
lookups confirmed), and neither is what it worked out from given numbers.  Moved out of
`trajdebug.analysis.diagnosers._steps` when that module passed 600 lines.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Container, Iterable, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis import _numerals as numerals
from trajdebug.analysis._sql import sql_of
from trajdebug.analysis.diagnosers import _choices as choices
from trajdebug.analysis.diagnosers._conflicts import (
    contradictions,
    earlier_answers,
    present,
    upstream_outputs,
)
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._conversation import _ASSISTANT_ROLES
from trajdebug.analysis.diagnosers._reads import ERROR, Reads, reading
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.model import Step
from trajdebug.core.values import atoms, date_forms, is_date, is_mapping, is_year


def _replace_key(value: Any, key: str, new: Any) -> Any:
    out = copy.deepcopy(value)

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k in list(v):
                if str(k).lower() == key:
                    v[k] = new
                else:
                    walk(v[k])
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(out)
    return out


_SQL_LITERAL = re.compile(r"'((?:[^']|'')*)'")


def _stated(out: Any, *, lexicon: Lexicon = ENGLISH) -> list[Any]:
    """The values an output states: SQL literals, JSON leaves, or the numbers of a text."""
    stmt = sql_of(out)
    if stmt is not None:
        # The literals of generated SQL are the values it claims from the question.
        lits: list[Any] = [m.group(1).replace("''", "'") for m in _SQL_LITERAL.finditer(stmt)]
        return lits + [float(n) for n in numerals.stated_numbers(_SQL_LITERAL.sub("", stmt))]
    text = out.get("content") if isinstance(out, Mapping) and isinstance(out.get("role"), str) and out.get("role") in _ASSISTANT_ROLES else None
    if isinstance(text, str) and not content.looks_like_json(text):
        # A chat message's text is the model's text, however the route recorded it (a bare string through the
        # SDK, a message through OTLP or the Agents SDK): the numbers it states, not the whole sentence.
        return _stated(text, lexicon=lexicon) + _leaves({k: v for k, v in out.items() if k != "content"}, lexicon)
    if isinstance(out, (Mapping, list)):
        return _leaves(out, lexicon)
    if isinstance(out, str):
        parsed = content.parse_json(out) if content.looks_like_json(out) else None
        if parsed is not None:
            return _leaves(parsed, lexicon)
        return [float(n) for n in numerals.stated_numbers(out)]
    return []


def _leaves(value: Any, lexicon: Lexicon) -> list[Any]:
    """The values of a JSON value, names and JSON text left out.

    JSON text inside an answer (a tool call's argument, as an agent used as a tool takes its ``input``) is an
    expression, like prose (`present`): never one claimed value, found whole in no input.  Read value by
    value it made the model's own choices (a code, a ratio) claims where they were none before, so it is
    left out (measured on the blind suites, 2026-12-02).
    """
    return [
        v
        for p, v in content.leaves(value)
        if not lexicon.identifier_path.search(p) and not (isinstance(v, str) and _json_text(v))
    ]


def _json_text(s: str) -> bool:
    return content.looks_like_json(s) and isinstance(content.parse_json(s), (dict, list))


_LABEL = re.compile(r"^[a-z]+(?:[-_][a-z]+){0,2}$")
"""A label: a lowercase word, or up to three joined by hyphens or underscores (``how-to``, ``on_hold``): how a
model names a kind of thing, not a fact it could have got wrong from its inputs (a name, a number, an id or a
date is)."""
_PLAIN_WORDS = re.compile(r"^[a-z]+(?: [a-z]+){1,2}$")
"""Two or three plain lowercase words (``sand hull``): a label only as an item of a list the model wrote (the
steps of a plan it saves); a single value, a tool call's argument above all, may be a made-up fact written in
lowercase (``new york``, ``next day air``)."""


def _listed(out: Any, depth: int = 0) -> set[str]:
    """The texts (stripped) that are items of a list of an answer, reading a call's JSON-text arguments too."""
    found: set[str] = set()
    for p, v in content.leaves(out):
        if not isinstance(v, str):
            continue
        if p.endswith("]"):
            found.add(v.strip())
        elif depth < 2 and _json_text(v):
            found |= _listed(content.parse_json(v), depth + 1)
    return found


def _computed(step: Step, ctx: DiagnoseContext, value: float) -> bool:
    """Whether a number a step states is a simple computation of numbers its input holds (the value lineage)."""
    lin = ctx.lineage
    if lin is None:
        return False
    from trajdebug.analysis.lineage import derivation
    from trajdebug.analysis.lineage._views import StepView
    from trajdebug.core.values import Atom, number_key

    atom = Atom("n:" + number_key(value), "number", None, None, repr(value), value)
    view = lin.view(step.step_id)
    if derivation(view, atom) is not None:
        return True
    # One step further: from a number the same answer computed first (a deduction of 3 % of the gross
    # it worked out from hours and a rate), as a model writes its working out in one answer.
    worked = [
        o
        for o in view.outputs[:12]
        if o.kind == "number" and o.number not in (None, value) and derivation(view, o) is not None
    ]
    given = [a for a in view.inputs if a.kind == "number"][:40]
    return any(derivation(StepView(view.step_id, [*given, o], [], ""), atom) is not None for o in worked)


class _Forms:
    """The haystack's number forms and the sums of its tables (`numerals.number_forms`, `numerals.aggregate_forms`),
    each read on the first lookup that needs it: most stated numbers are found among the text's own forms, and
    reading a long conversation's tables costs more than the rest of the check.  A lookup answers as the
    union of both sets would."""

    __slots__ = ("_agg", "_ctx", "_hay", "_own", "_step")

    def __init__(self, step: Step, ctx: DiagnoseContext, hay: str) -> None:
        self._step, self._ctx, self._hay = step, ctx, hay
        self._own: set[str] | None = None
        self._agg: set[str] | None = None

    def __contains__(self, n: object) -> bool:
        if self._own is None:
            # (`hay` is the step's `upstream_text`: its forms are read part by part, each part once per run.)
            self._own = self._ctx.upstream_forms(self._step)
        if n in self._own:
            return True
        if self._agg is None:
            # Totals restated from a table (the sum of a row or a group) are derived, not made up.
            self._agg = numerals.aggregate_forms([self._step.input, *upstream_outputs(self._step, self._ctx)])
        return n in self._agg


def _lookups(
    step: Step, ctx: DiagnoseContext, hay: str, stated: list[Any]
) -> tuple[Container[str], set[str] | None]:
    """The haystack's number forms and dates, for `present`.

    Each is read only when a stated value can be looked up among it (``forms`` for numbers, ``dates`` for
    strings that are dates): on a long conversation they cost more than the rest of the check.
    """
    forms: Container[str] = frozenset()
    if any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in stated):
        forms = _Forms(step, ctx, hay)
    dates = date_forms(hay) if any(isinstance(v, str) and is_date(v.strip().lower()) for v in stated) else None
    return forms, dates


class _Chosen:
    """Whether a value a model stated is its own choice (`trajdebug.analysis.diagnosers._choices`): a setting
    of a call it makes, an option a tool schema it was shown offers, or a number worked out from a setting."""

    __slots__ = ("_forms", "_set", "_shown", "_shown_forms", "_spans")

    def __init__(
        self, step: Step, out: Any, forms: Container[str], hay: str = "", again: Iterable[tuple[str, Any]] = ()
    ) -> None:
        self._set = choices.settings(out) | choices.planned(out, hay) | set(again)
        self._set |= choices.worked_out_times(out, hay)
        # A threshold of a call made where no number was given to put there (``min_score=7.5`` for a
        # request naming a section and a day) is how the model chose to ask; given a number it may restate
        # (a budget written in the request, a count), it is a claim to check.
        if (bound := choices.bounds(out)) and not _restatable(step, out):
            self._set |= bound
        self._spans = choices.settings(out, clock=False)
        self._shown = choices.shown(step)
        self._shown_forms: set[str] | None = None
        self._forms = forms

    def __call__(self, v: Any) -> bool:
        k = choices.key(v)
        if k is None:
            return False
        if k in self._set:
            return True
        if self._shown:
            if self._shown_forms is None:
                self._shown_forms = numerals.number_forms(self._shown)
            if present(v, self._shown, self._shown_forms):
                return True
        return k[0] == "n" and choices.from_setting(k[1], self._spans, self._forms)


def _restatable(step: Step, out: Any, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a model call's input holds a number a bound of its call may restate: any number but a reading
    of another measure.  A number under a field named for a unit (``charge_pct``, ``hull_c``) measures that,
    so beside such readings alone a threshold on another quantity (``min_berths=6``) is still the model's way
    to ask; a number in a text, under a field of no unit (a ``budget``, a ``limit``, a count), or under one
    sharing a word with the bound's quantity (``depth_m`` for ``min_depth_m``) may be restated by it."""
    numbers = [a for a in atoms(step.input) if a.kind == "number"]
    if not numbers:
        return False
    words = choices.bound_words(out)
    prose = {
        p.rsplit(".", 1)[-1].lower() for p, v in content.leaves(step.input) if isinstance(v, str) and " " in v.strip()
    }

    def reading(field: str) -> bool:
        named = choices.field_words(field)
        return bool(named) and named[-1] in lexicon.measure_suffixes and not words & set(named)

    return any(a.field is None or a.field.lower() in prose or not reading(a.field) for a in numbers)


def _unconfirmed(step: Step, ctx: DiagnoseContext, missing: list[str], raw: list[Any]) -> list[str]:
    """The made-up values (``missing``, stated as ``raw``) left once those the world answered with before
    anything handed them to it are taken out: those were no invention (`choices.confirmed`)."""
    texts = [v for v in raw if isinstance(v, str)]
    said = choices.confirmed(step, ctx, texts) | choices.looked_up(step, ctx, texts)
    return [m for m, v in zip(missing, raw) if not (isinstance(v, str) and v.strip().lower() in said)]


_PROSE_PAIR = re.compile(
    r"(?<![\w.-])([A-Za-z][A-Za-z_]{2,30}):[ \t]+([A-Za-z][\w-]*(?:[ \t][A-Z][\w-]*){0,3})(?=[ \t]*(?:$|[\r\n;,)]))"
)
"""A field written out in prose, ``name: Value`` (``rank: Senior Warden``): a capitalised name may run to a few
words, and the value must end where the clause does (``,;)`` or the line's end), so that a field restated as a
sentence (``Reason: Because the card was declined.``) is not read as its first word."""

_SHORT_VALUE = 4
"""The most words an input's field may hold to be checked against a prose restatement: a name or a code is
restated whole, a free-text field is reworded."""


def _prose_pairs(out: Any, given: list[Any]) -> dict[str, str]:
    """The fields of its inputs a model's text restates by name (``(Mara Lind, rank: Senior Warden)`` in
    the request it writes a sub-agent): set against the inputs like the fields of a JSON answer.  A name no
    input has as a field (``Note:``) states nothing checkable."""
    fields: set[str] | None = None
    found: dict[str, str] = {}
    for _, v in content.leaves(out):
        if not isinstance(v, str) or ":" not in v or content.looks_like_json(v):
            continue
        for m in _PROSE_PAIR.finditer(v[:20_000]):
            if fields is None:
                fields = {
                    k
                    for g in given
                    for k, x in content.keyed_values(g).items()
                    if not isinstance(x, str) or len(x.split()) <= _SHORT_VALUE
                }
            k = m.group(1).lower()
            if k in fields:
                found.setdefault(k, m.group(2))
    return found


def _contradicted(step: Step, ctx: DiagnoseContext, out: Any, hay: str) -> Evidence | None:
    """The finding of an output that contradicts its input on a field, with the input's value as correction."""
    claimed = content.parse_json(out) if isinstance(out, str) and content.looks_like_json(out) else out
    pairs = content.written_pairs(step.input)
    # Its own earlier answers (a loop's last turn, reached by an edge, or its messages in the conversation it
    # continues) are that turn's decisions: the next call sets its fields anew (`_own_messages`).
    heard, wrote = _own_messages(step.input)
    given = [heard, wrote, *upstream_outputs(step, ctx), pairs]
    surely = [heard, wrote, *upstream_outputs(step, ctx, recorded=True), pairs]
    # A request typed as ``key=value`` text fixes those fields as a JSON one would.
    own = [*earlier_answers(step, ctx), wrote]
    bad = contradictions(claimed if claimed is not None else out, given, hay, surely, own)
    if not bad and (said := _prose_pairs(out, given)):
        bad = contradictions(said, given, hay, surely, own)
    # A number worked out from its inputs (a sum of receipts, a product) restates them.
    bad = [
        b
        for b in bad
        if not (isinstance(b[1], (int, float)) and not isinstance(b[1], bool) and _computed(step, ctx, float(b[1])))
    ]
    if bad:
        asked = _asked_before(step, ctx, claimed if claimed is not None else out)
        bad = [b for b in bad if not (_when(b[1]) and _when(b[2]) and (b[0], str(b[2])) in asked and _next_to(b[1], b[2]))]
    if not bad:
        return None
    k, v, w = bad[0]
    return Evidence(
        step.step_id,
        0.55,
        f"states {k}={v!r} but its input says {w!r}",
        "llm-output",
        correction=(json.dumps(_replace_key(claimed, k, w)) if claimed is not out else _replace_key(out, k, w)),
    )


def _own_messages(given: Any) -> tuple[Any, list[Any]]:
    """A model's input split into what it was told and the messages it wrote itself in earlier turns.

    A conversation holds the model's earlier answers as assistant messages: the tool it called last turn and
    the arguments it set then (``item=kayak`` for the first piece of a hire) were that turn's decisions, so
    the next call setting a field otherwise (``item=paddle``) contradicts nothing it was given -- as an earlier
    answer reached by an edge does not (`earlier_answers`).  What those messages state is still written
    upstream, and what a tool answered (the result echoing the call) and what the user asked still fix fields.
    """
    if isinstance(given, list):
        mine = [m for m in given if _assistant(m)]
        return ([m for m in given if not _assistant(m)], mine) if mine else (given, [])
    if not is_mapping(given):
        return given, []
    heard: dict[str, Any] = {}
    said: list[Any] = []
    for k, v in given.items():
        heard[k], mine = _own_messages(v) if isinstance(v, list) else (v, [])
        said.extend(mine)
    return (heard, said) if said else (given, [])


def _assistant(m: Any) -> bool:
    return is_mapping(m) and isinstance(m.get("role"), str) and m.get("role") in _ASSISTANT_ROLES


def _called(value: Any, depth: int = 0) -> Iterable[tuple[str, Any]]:
    """The (tool name, arguments) of the tool calls anywhere in a value (a chat history, an answer)."""
    if depth > 8:
        return
    if isinstance(value, Mapping):
        fn = value.get("function")
        call = fn if isinstance(fn, Mapping) else value
        name = call.get("name")
        args = next((call[k] for k in choices.CALL_ARGS if k in call), None)
        if isinstance(name, str) and args is not None:
            yield name, (content.parse_json(args) if isinstance(args, str) and content.looks_like_json(args) else args)
            return
        for v in value.values():
            yield from _called(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _called(v, depth + 1)


_MONTH = re.compile(r"\d{4}[-/](?:0[1-9]|1[0-2])")
"""A month written as a year and its number (``2026-05``): a period a loop steps through as it does days."""


def _when(v: Any) -> bool:
    """Whether a value is a date, a time of day or a month: a call asking for the next month after reading the
    last one's result sets it anew, as the next day (nu25 F1)."""
    return isinstance(v, str) and (is_date(v.strip().lower()) or _MONTH.fullmatch(v.strip()) is not None)


def _month(v: Any) -> int | None:
    """A year-month (``2026-05``) as a count of months, None for any other value."""
    m = _MONTH.fullmatch(v.strip()) if isinstance(v, str) else None
    return int(v.strip()[:4]) * 12 + int(v.strip()[5:7]) if m else None


def _next_to(v: Any, asked: Any) -> bool:
    """Whether a value a call sets is one it may set anew beside one asked before: a date or a time, any; a
    month, only the one before or after (a loop stepping through months).  A month a year back or named
    nowhere is no step of a loop but a stale value (review rev52u M1: 2025-06 asked where 2026-06 was meant)."""
    a, b = _month(v), _month(asked)
    return a is None or b is None or abs(a - b) == 1


def _asked_before(step: Step, ctx: DiagnoseContext, out: Any) -> set[tuple[str, str]]:
    """The (field, value) pairs of the earlier calls of a tool this answer calls again.

    A model that calls a tool once more to book the next slot sets the call's date or time anew: the earlier
    call's, and its result echoing it, answered another request, so a date or time that differs from them is
    that call's own, not a contradiction of what the model was given.  Any other field (a room type, an id)
    that differs from the earlier call's is still checked: a repeated call on the wrong item is a slip.
    """
    names = {n for n, _ in _called(out)}
    if not names:
        return set()
    earlier = [a for n, a in _called(step.input) if n in names]
    earlier += [ctx.step(d.step_id).input for d in ctx.graph.parents(step.step_id) if ctx.step(d.step_id).name in names]
    return {(k, str(v)) for a in earlier for k, v in content.keyed_values(a).items()}


def _rescheduled(step: Step, ctx: DiagnoseContext, out: Any) -> set[tuple[str, Any]]:
    """The keys of the dates and times a call sets on a field an earlier call of the same tool set too.

    A model booking one slot after another (the next start time, the next day) works each out from the
    last: the new time is that call's setting, not a time it claims the world gave it.
    """
    asked = _asked_before(step, ctx, out)
    fields = {k for k, _ in asked}
    found: set[tuple[str, Any]] = set()
    for _, args in _called(out) if fields else ():
        for k, v in content.keyed_values(args).items():
            near = any(_next_to(v, w) for f, w in asked if f == k)
            if k in fields and _when(v) and near and (c := choices.key(v)):
                found.add(c)
    return found


@reading(Reads(kinds=frozenset({"llm"}), skips_statuses=ERROR))
def llm_output(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """An LLM output that is empty, or states values absent from or contradicting its inputs."""
    if step.kind != "llm" or step.status == "error":
        return
    out = step.output
    if content.is_empty(out):
        if not ctx.cut_short(step):
            yield Evidence(step.step_id, 0.5, "the model returned nothing", "llm-output")
        return
    hay = ctx.upstream_text(step)  # built once: both checks read it
    said = _contradicted(step, ctx, out, hay)
    if said is not None:
        yield said
        return
    if not hay.strip():
        return
    stated = _stated(out)
    forms, dates = _lookups(step, ctx, hay, stated)
    checked, missing, raw = 0, [], []
    # The literals of generated SQL are values it claims, whatever they look like.
    labels = sql_of(out) is None
    listed: set[str] | None = None  # read on the first value of plain words
    unsure = False
    computed = 0
    # Read only once a value is not found (most steps restate all they state).
    arithmetic: bool | None = None
    chosen: _Chosen | None = None
    for v in stated:
        if is_year(v, step.start_ns):
            continue  # the current year is context, not a claim
        seen = present(v, hay, forms, dates)
        if seen is None:
            continue
        if labels and not seen and isinstance(v, str) and _PLAIN_WORDS.match(v.strip()):
            listed = _listed(out) if listed is None else listed
            if v.strip() in listed:
                unsure = True  # an item of a list it wrote (a step of its plan) is its own label
                continue
        if labels and not seen and isinstance(v, str) and _LABEL.match(v.strip()):
            unsure = True  # a label ("none", "how-to") may be a choice among options, not a claim
            continue
        if not seen and isinstance(v, (int, float)) and _computed(step, ctx, float(v)):
            seen = True  # a number computed from the numbers it was given (a difference, a ratio) is derived
        if not seen and chosen is None:
            chosen = _Chosen(step, out, forms, hay, _rescheduled(step, ctx, out))
        if not seen and chosen is not None and chosen(v):
            # A setting of its call, or an option it was offered: its choice, not a claim.  It counts as a
            # value accounted for (the share of made-up values falls), never as one found (no sound verdict).
            seen = unsure = True
        checked += 1
        if not seen and repr(v)[:40] not in missing:
            missing.append(repr(v)[:40])
            raw.append(v)
            # A whole number (a count, an age in minutes) is often computed from
            # the inputs rather than made up: it counts half when small, or when
            # the inputs hold numbers to compute it from.
            if arithmetic is None:
                arithmetic = len(numerals.stated_numbers(content.text_of(step.input))) >= 2
            if isinstance(v, (int, float)) and float(v).is_integer() and (abs(v) < 1000 or arithmetic):
                computed += 1
    if raw and (left := _unconfirmed(step, ctx, missing, raw)) != missing:
        missing, unsure = left, True
    if missing:
        frac = min(1.0, (len(missing) - 0.5 * computed) / checked)
        # One unexplained value among few says little (a computed age, a count).
        yield Evidence(
            step.step_id,
            0.15 + 0.4 * frac,
            f"states {', '.join(missing[:3])}, found in none of its inputs",
            "llm-output",
            values=tuple(missing),
        )
    elif checked and not unsure:
        yield Evidence(
            step.step_id, 0.0, "the values it states appear in its inputs", "llm-output", sound=True
        )


__all__ = ["llm_output"]
