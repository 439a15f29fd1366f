"""Values a step states against what it was given: the contradiction checks of a tool call's arguments
and of a model's claims (`tool_arguments`, `_claims.llm_output`).

`present` asks whether a value is in what the step was given (numbers in any written form, dates in any
format, words at word edges); `contradictions` finds a field stated with one value where the step's inputs
give it another (a JSON object written as text read field by field, a model's JSON answer held to its labels
against records sharing its ids).  Split from `_tools`.
"""

from __future__ import annotations

import re
from collections.abc import Container, Sequence
from dataclasses import dataclass
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis import _numerals as numerals
from trajdebug.analysis._sql import looks_like_sql
from trajdebug.analysis.diagnosers._context import DiagnoseContext
from trajdebug.analysis.diagnosers._conversation import _ASSISTANT_ROLES
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.graph import CHILD_KEY
from trajdebug.core.mentions import currency_written
from trajdebug.core.model import Step
from trajdebug.core.values import date_forms, date_keys, is_date, is_mapping


def present(value: Any, haystack: str, forms: Container[str], dates: set[str] | None = None) -> bool | None:
    """Whether a scalar shows up in a text (None: the value says too little to tell).

    ``dates`` holds the haystack's dates and times (`trajdebug.core.values.date_forms`):
    a date written another way ("2025-03-11" for "11 March") is present.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        n = numerals.norm_number(repr(value))
        if n is None:
            return None
        return n in forms
    if isinstance(value, str):
        v = value.strip().lower()
        # Identifiers and short values are claims; prose and expressions are not.
        if len(v) < 3 or len(v) > 60 or len(v.split()) > 3 or looks_like_sql(v):
            return None
        if v in haystack or currency_written(v, haystack):
            return True  # (a currency code whose one symbol the input writes, `£` for GBP, is restated)
        if dates is not None and is_date(v):
            return bool(set(date_keys(v)) & dates)
        # A few words composed from words of the input ("acme annual report") are no claim either, nor is a
        # short sentence naming a given id ("Panel W-1A."): a word's closing stop or comma is not its value.
        # A given value under a label of the writer's own (``Vessel: Kestrel``, a request to a sub-agent written
        # as a record's line): the label says what the value is, and the value is the input's.
        label, sep, rest = v.partition(": ")
        rest = rest.strip().strip(_STOPS)
        # A value without letters must be written whole: "Total: 100" is no part of an input's "1000".
        given = rest in haystack if any(c.isalpha() for c in rest) else _whole(rest, haystack)
        if sep and label.replace(" ", "").isalpha() and len(label.split()) <= 2 and len(rest) >= 3 and given:
            return True
        words = [w.strip(_STOPS) for w in v.split()]
        words = [w for w in words if w]
        if len(words) == 1 and words[0] != v and len(words[0]) >= 3 and words[0] in haystack:
            return True
        return (len(words) > 1 and all(w in haystack for w in words)) or _joined(v, haystack, value.strip())
    return None


_STOPS = ".,;:!?"
"""Sentence punctuation around a word ("W-1A." at a sentence's end), never part of an id, number or date."""
_JOINT = re.compile(r"[^\w\s.\-]+")
"""A separator between values written as one (``>`` in ``en-US>de-DE``, ``/`` in ``SFO/JFK``): punctuation
that no id, number or date is made of (hyphens, dots and underscores are)."""


def _joined(v: str, haystack: str, raw: str = "") -> bool:
    """Whether a value is given values joined by a separator (a language pair ``en-US>de-DE`` from a source
    ``en-US`` and a target ``de-DE``; a route ``SFO/JFK``): an expression of the inputs, not a claim.  Each
    part must be a value of its own (three characters or more, a letter among them), found in the input."""
    parts = [p.strip() for p in _JOINT.split(v)]
    if len(parts) < 2 or not all(len(p) >= 3 for p in parts):
        return False
    found = [p in haystack for p in parts]
    if all(found) and all(any(c.isalpha() for c in p) for p in parts):
        return True
    # A record written as one line (``HOLD|BK-7|2027-05-02|Ostend``, a request to a sub-agent) carries given
    # values of any shape (a date, an amount), two or more, and may open with a keyword of its format: its first
    # part, one word in capitals no input holds (``v`` arrives lower-cased: read from ``raw``).  A part without
    # a letter counts as given only as a whole value of the input (``20.5`` is no part of ``420.5``), and a
    # keyword is longer than a code: three capitals (``EUR``, ``CDG``) are the shape of a value, a currency or
    # an airport the model may have made up.
    found = [p in haystack if any(c.isalpha() for c in p) else _whole(p, haystack) for p in parts]
    if sum(found) < 2 or not all(found[1:]) or not any(c.isalpha() for c in v):
        return False
    if found[0]:
        return True
    written = [p.strip() for p in _JOINT.split(raw)]
    keyword = written[0] if len(written) == len(parts) else ""
    return len(keyword) > _CODE_LENGTH and keyword.isalpha() and keyword.isupper()


_CODE_LENGTH = 3
"""The length of the codes written in capitals (a currency, an airport, a country): values, not keywords."""


def _whole(part: str, haystack: str) -> bool:
    """Whether a part without letters (a number, a date) is written whole in the haystack, not inside another."""
    return re.search(rf"(?<![\w.]){re.escape(part)}(?![\w]|\.\d)", haystack) is not None


def contradictions(
    produced: Any,
    upstream: list[Any],
    context: str = "",
    labels_against: list[Any] | None = None,
    decided: Sequence[Any] = (),
) -> list[tuple[str, Any, Any]]:
    """Fields a value shares with upstream outputs but with a different scalar value found nowhere upstream.

    A value that differs from one upstream field but appears elsewhere upstream
    (a user's other order, another row) is a choice among given values, not a
    contradiction.  The labels of a model's JSON answer are set only against ``labels_against`` (of
    ``upstream``: what the step was surely handed), and only against a record sharing its ids.  The values of
    ``upstream`` that are also in ``decided`` (`earlier_answers`) are read as text, never set field by field.
    """
    mine = content.keyed_values(produced)
    labels: dict[str, Any] = {}
    for k, v in list(mine.items()):
        if _structured(v):
            # Its own fields are what it states, each to be set against the same field upstream.  In a message's
            # ``content`` (a model's answer written as JSON) only its texts: a number there may be worked out by
            # a formula no check here knows (a rate times a gross plus a flat fee); a label cannot.
            del mine[k]
            for k2, v2 in content.keyed_values(content.parse_json(v)).items():
                if k not in _UNCOMPARED or isinstance(v2, str):
                    mine.setdefault(k2, v2)
                    if k in _UNCOMPARED:
                        labels.setdefault(k2, v2)
    ids = {str(v).lower() for v in labels.values() if isinstance(v, str) and content.ID_TOKEN.fullmatch(v)}
    if not mine:
        return []
    out: list[tuple[str, Any, Any]] = []
    everywhere: str | None = None
    vocabulary: set[str] | None = None
    dates: set[str] | None = None
    # A field that takes several values in any one input fixes none in the others either: a model looping
    # over a list holds each earlier call's one value in that call's answer, and every value in its
    # conversation (the next invoice line is no contradiction of the previous one's request).
    # (Read on the first field that differs: most outputs restate their inputs.)
    several: set[str] | None = None
    stated = {v for v in mine.values() if isinstance(v, str) and content.ID_TOKEN.fullmatch(v)}
    for up in upstream:
        if any(up is d for d in decided):
            continue
        theirs = content.keyed_values(up)
        index: _Records | None = None  # (read once per upstream, on its first differing field)
        for k, v in mine.items():
            if k in theirs and k not in _UNCOMPARED:
                w = theirs[k]
                if not (type(v) is type(w) and v != w and not isinstance(v, bool) and len(str(v)) < 200):
                    continue
                index = index or _records(up)
                if k in labels and not _labelled(index, k, ids, labels_against, up):
                    continue
                if _another_record(index, k, stated):
                    continue
                if several is None:
                    several = set().union(*(_several(u) for u in upstream))
                if k in several:
                    continue
                if everywhere is None:
                    everywhere = "\n".join(content.text_of(u) for u in upstream).lower() + "\n" + context
                if _written_in(str(v).lower(), everywhere):
                    continue
                if isinstance(v, str) and " " in v.strip():
                    if vocabulary is None:
                        vocabulary = set(_WORD.findall(everywhere))
                    if _recomposed(v, w, vocabulary):
                        continue
                if isinstance(v, str) and is_date(v):
                    # A date written another way upstream ("6 Nov" for 2025-11-06) is no contradiction.
                    if dates is None:
                        dates = date_forms(everywhere)
                    if set(date_keys(v)) & dates:
                        continue
                out.append((k, v, w))
    return out


@dataclass(frozen=True, slots=True)
class _Records:
    """One upstream value's leaves read once: the first path of each field name, and the texts of each record.

    `contradictions` asks of every field an output shares with an upstream value which record holds it; a
    walk of the whole value per field made a wide record (a config of a few thousand fields) quadratic."""

    first: dict[str, str]
    """A field name (as written) -> the first path ending in it."""
    first_folded: dict[str, str]
    """The same, by the name lower-cased."""
    texts: dict[str, list[str]]
    """A record's path -> the texts of its own fields."""


def _records(up: Any) -> _Records:
    first: dict[str, str] = {}
    folded: dict[str, str] = {}
    texts: dict[str, list[str]] = {}
    for p, v in content.leaves(up):
        record, _, name = p.rpartition(".")
        first.setdefault(name, p)
        folded.setdefault(name.lower(), p)
        if isinstance(v, str):
            texts.setdefault(record, []).append(v)
    return _Records(first, folded, texts)


def _labelled(index: _Records, k: str, ids: set[str], against: list[Any] | None, up: Any) -> bool:
    """Whether a JSON answer's label ``k`` may be set against ``up``: a record holding ``k`` that shares one of
    the answer's ids (field F-10's crop against field F-6's is no claim); for an answer naming no id, a value
    the step was surely handed (not one reached by a guessed edge: the previous ticket's side)."""
    if not ids:
        return against is None or any(up is a for a in against)
    found = index.first_folded.get(k)
    if found is None:
        return True  # (read from a written ``key=value`` pair: no record to tell)
    record = found.rpartition(".")[0]
    return any(v.lower() in ids for v in index.texts.get(record, ()))


def _another_record(index: _Records, k: str, stated: set[str]) -> bool:
    """Whether the upstream value of ``k`` sits in a nested record about another entity than the output's: the
    record names an id of the shape of one the output states (``stated``), and none the output states (a job's
    ``related`` earlier job, its translator, beside a call about this job).  Its fields say what held for that
    entity."""
    found = index.first.get(k)
    record = found.rpartition(".")[0] if found else ""
    if not record:
        return False
    theirs = {v for v in index.texts.get(record, ()) if content.ID_TOKEN.fullmatch(v)}
    shapes = {content.char_shape(v) for v in stated}
    return bool(theirs) and not theirs & stated and any(content.char_shape(v) in shapes for v in theirs)


_UNCOMPARED = ("id", "name", "role", "type", "content", "status")
"""Fields never set against upstream: protocol fields, and a message's content (an expression, as prose is)."""


def _structured(v: Any) -> bool:
    """Whether a value is a JSON object or list written as text (an Agents SDK sub-agent's one ``input``
    argument carrying a whole request): a request of several values, read field by field, never as one value
    to set against another request's text under the same generic field."""
    return isinstance(v, str) and content.looks_like_json(v) and isinstance(content.parse_json(v), (dict, list))


def _written_in(v: str, text: str) -> bool:
    """Whether a value is written in a text: a short code of letters as a whole word only, as letters inside
    other words are not that value (``ab`` in "tabs"); a number as before (``3.5`` is written in "3.50")."""
    # Four characters: the length of a short code (``NS``, ``D5W``, ``ABC1``); a longer value inside a word
    # is rare enough that a substring match holds.
    if len(v) > 4 or not any(c.isalpha() for c in v):
        return v in text
    return content.has_word(text, v)


def _several(value: Any) -> set[str]:
    """The fields that take more than one value in ``value`` (each visit of a history has its own date).

    Such a field fixes no value: an output stating another (the date of a new visit it books) adds a
    record, it does not contradict one.
    """
    seen: dict[str, Any] = {}
    out: set[str] = set()
    for p, v in content.leaves(value):
        k = p.rsplit(".", 1)[-1].lower()
        if k in seen and seen[k] != v:
            out.add(k)
        seen.setdefault(k, v)
    return out


_WORD = re.compile(r"[^\W_][\w-]*")
_AMOUNT = re.compile(r"[\d.,]+")


def _recomposed(v: Any, w: Any, vocabulary: set[str], *, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a sentence differs from the upstream one only by names given elsewhere upstream.

    ("Analyse acct-2 for May" after "Analyse acct-1 for May", with acct-2 in a listed team): the next
    item of a given list, not a contradiction.  Only names count (a word with a digit or a hyphen, or
    of four letters or more that is no common word): "not", "no" or another amount still contradict.
    """
    if not (isinstance(v, str) and isinstance(w, str) and " " in v.strip()):
        return False
    new = set(_WORD.findall(v.lower())) - set(_WORD.findall(w.lower()))
    return bool(new) and all(
        not _AMOUNT.fullmatch(word)
        and (any(c.isdigit() or c == "-" for c in word) or (len(word) >= 4 and word not in lexicon.stopwords))
        and word in vocabulary
        for word in new
    )


def upstream_outputs(step: Step, ctx: DiagnoseContext, recorded: bool = False) -> list[Any]:
    """The outputs of the steps a step took data or state from (not its children); ``recorded``: only over
    edges not inferred."""
    return [
        ctx.step(d.step_id).output
        for d in ctx.graph.parents(step.step_id)
        if d.kind in ("data", "state") and d.key != CHILD_KEY and not (recorded and d.origin == "inferred")
    ]


def earlier_answers(step: Step, ctx: DiagnoseContext) -> list[Any]:
    """The outputs among a step's upstream (`upstream_outputs`) given by earlier turns of the same loop.

    A model called once per turn of a loop decides each turn anew: the tool its last answer picked, the
    arguments it set, answered that turn.  A field the new answer sets otherwise (the next tool, the next
    amount) is the next decision, not a contradiction of a fact it was given; what the earlier answer
    states still counts as written upstream.  A shared name is no such loop (an SDK names every model call
    ``response``, LangChain after the model class): the earlier call must be this one's own last turn
    (`_own_turn`)."""
    found: list[Any] = []
    for d in ctx.graph.parents(step.step_id):
        if d.kind in ("data", "state") and d.key != CHILD_KEY:
            up = ctx.step(d.step_id)
            if up.name == step.name and up.kind == step.kind and _own_turn(up, step):
                found.append(up.output)
    return found


def _own_turn(up: Step, step: Step) -> bool:
    """Whether ``up`` is an earlier turn of the conversation ``step`` continues: what it was given is still in
    this call's input (every field kept, a list grown at its end, a map grown by new keys: the goal it
    keeps, the notes or messages it adds to), or its answer comes back in this input as an assistant message.
    Two calls given different requests (an extraction, then a reply) are two models, whatever their names."""
    if _kept(up.input, step.input) and _telling(up.input):
        return True
    if _counted_on(up.input, step.input):
        return True
    return up.output is not None and _answered_in(up.output, step.input)


def _counted_on(old: Any, new: Any) -> bool:
    """Whether ``new`` is ``old``'s next turn with its counters moved on: a loop's input often carries a field
    that changes every turn (the turn number, the steps or budget left), so every old field is still there,
    each kept or a number changed into another number, and at least one field that is no number (the goal,
    the messages) is kept -- numbers alone say nothing about which conversation this is."""
    if not (is_mapping(old) and is_mapping(new)) or not all(k in new for k in old):
        return False
    anchored = False
    for k, v in old.items():
        if _kept(v, new[k]):
            anchored = anchored or (not _number(v) and not content.is_empty(v))
        elif not (_number(v) and _number(new[k])):
            return False
    return anchored


def _number(value: Any) -> bool:
    """A count or amount (not a flag: ``True`` is no counter)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _kept(old: Any, new: Any, depth: int = 0) -> bool:
    """Whether ``new`` keeps ``old``: equal, a list ``old`` starts, or a map holding each of ``old``'s fields
    kept."""
    if old == new:
        return True
    if depth > 4:
        return False
    if isinstance(old, list) and isinstance(new, list):
        return len(old) <= len(new) and new[: len(old)] == old
    if is_mapping(old) and is_mapping(new):
        return all(k in new and _kept(v, new[k], depth + 1) for k, v in old.items())
    return False


def _telling(value: Any) -> bool:
    """Whether an input holds something a call could keep (not empty, not only empty fields)."""
    if is_mapping(value):
        return any(not content.is_empty(v) for v in value.values())
    return not content.is_empty(value)


def _answered_in(answer: Any, given: Any) -> bool:
    """Whether ``given`` (a call's input) holds ``answer`` as an assistant message: the answer itself, or a
    message whose role is the assistant's and whose content is the answer's."""
    said = answer.get("content") if is_mapping(answer) else answer
    if content.is_empty(said):
        return False
    items = given if isinstance(given, list) else list(given.values()) if is_mapping(given) else []
    messages = [m for v in items for m in (v if isinstance(v, list) else [v])]
    return any(
        m == answer or (is_mapping(m) and isinstance(m.get("role"), str) and m.get("role") in _ASSISTANT_ROLES and m.get("content") == said)
        for m in messages
    )


__all__ = ["contradictions", "earlier_answers", "present", "upstream_outputs"]
