"""Hand-offs no content shows: a check's verdict that kept an item, a span's unrecorded result, an empty result.

Content inference (`trajdebug.analysis.inference._infer`) links a step to the
earlier outputs whose content its input holds, crediting a value to where it
began.  Four hand-offs common in traces written by hand (OpenTelemetry spans
around a program's own functions) carry no content of their own:

* `kept_edges`: a loop checks each candidate and keeps those that pass; the
  kept items are the candidates' own values, so a wrong yes/no that let an
  item through is linked to nothing (control dependence).
* `returned_edges`: a span around a sub-agent's calls that set no output
  returned what its calls made; the steps that read it are linked to the
  calls, never to the span whose input (the entity it ran for) decided them.
* `yes_no_edges`: a parser's one-field yes/no (``{"licence": false}``) handed
  on under its name: a boolean is no content to match.
* `unread_empty_edges`: a filter that found nothing returns ``[]``, which holds
  no content to match, and a call recorded with positional arguments has no
  field name to match it by.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence, Set
from itertools import pairwise
from typing import Any

from trajdebug.analysis.inference._tokens import normalize, tokenize
from trajdebug.core.model import CONTAINER_KINDS, Dependency, Run, Step
from trajdebug.core.values import is_mapping


KEPT_KEY = "kept:"
"""Prefix of the ``key`` of a gate edge (`kept_edges`); the kept item follows."""
RETURNED_KEY = "returned:"
"""Prefix of the ``key`` of an edge to an enclosing step that recorded no output (`returned_edges`); the key of
the edge to its step follows."""
_MAX_VERDICT_FIELDS = 8
"""A record of more fields than this is a lookup's answer, not a verdict on one item."""
_MAX_GATES = 4
"""Verdicts kept per item (the latest): a loop that checks the same item again supersedes the older ones."""
_MAX_KEPT = 32
"""Gate edges per step at most: a step handed a long list depends on every check of it, as one decision each."""


def _item(value: Any) -> str | None:
    """A text scalar as an item's key (case-folded, 3 to 120 characters); None for anything else."""
    if not isinstance(value, str):
        return None
    t = value.strip().casefold()
    return t if 3 <= len(t) <= 120 else None


def _leaf_items(value: Any, depth: int = 0) -> set[str]:
    """The text leaves of a value as item keys (`_item`), two levels deep."""
    if is_mapping(value) and depth < 2:
        return set().union(*(_leaf_items(v, depth + 1) for v in value.values()))
    if isinstance(value, list) and depth < 2:
        return set().union(*(_leaf_items(v, depth + 1) for v in value[:64]))
    t = _item(value)
    return {t} if t is not None else set()


def _numbers(value: Any, depth: int = 0) -> set[float]:
    """The numbers (not yes/no) of a value's leaves, two levels deep."""
    if is_mapping(value) and depth < 2:
        return set().union(*(_numbers(v, depth + 1) for v in value.values()))
    if isinstance(value, list) and depth < 2:
        return set().union(*(_numbers(v, depth + 1) for v in value[:64]))
    return {float(value)} if isinstance(value, (int, float)) and not isinstance(value, bool) else set()


def _verdict_items(step: Step) -> set[str]:
    """The item a step answered yes or no about: its output is a small record with a yes/no field, and one other
    field, a text, echoes what it was given (``{"title": "Nimrod", "fits": true}`` for ``{"title": "Nimrod"}``).
    An output echoing two or more of its input's values is a record written back (an acknowledgement such as
    ``{"ticket": t, "status": s, "updated": true}`` or ``{"scheduled": true, "payee": p, "amount": a}``), no
    verdict on one item."""
    out = step.output
    if step.kind in ("agent", "llm") or not is_mapping(out) or not 2 <= len(out) <= _MAX_VERDICT_FIELDS:
        return set()
    if not any(isinstance(v, bool) for v in out.values()):
        return set()
    given = _leaf_items(step.input)
    echoed = {t for v in out.values() if (t := _item(v)) is not None and t in given}
    if len(echoed) != 1:
        return set()
    numbers = _numbers(step.input)
    if any(isinstance(v, (int, float)) and not isinstance(v, bool) and float(v) in numbers for v in out.values()):
        return set()
    return echoed


def _listed(value: Any, depth: int = 0) -> set[str]:
    """The text items of the lists a step's input holds (the items, or the text fields of record items), three
    levels deep.  A top-level list is the call's positional arguments, not a collection: its own text items are
    arguments, each checked by name elsewhere, not the items a loop kept."""
    if depth > 3:
        return set()
    if is_mapping(value):
        return set().union(*(_listed(v, depth + 1) for v in value.values()))
    if not isinstance(value, list):
        return set()
    found: set[str] = set()
    for v in value[:200]:
        if isinstance(v, list) or (depth == 0 and is_mapping(v)):
            found |= _listed(v, depth + 1)
        elif depth > 0 and is_mapping(v):
            found.update(t for x in v.values() if (t := _item(x)) is not None)
        elif depth > 0 and (t := _item(v)) is not None:
            found.add(t)
    return found


def _input_key(step: Step) -> str:
    """A step's input as text, to tell the checks of different inputs apart."""
    try:
        return json.dumps(step.input, sort_keys=True, default=str)[:2000]
    except (TypeError, ValueError):
        return repr(step.input)[:2000]


def kept_edges(run: Run, *, named: str = "", confidence: float = 0.5) -> dict[str, list[Dependency]]:
    """Inferred ``control`` edges from the checks whose yes/no verdict on an item let it into a later step's list.

    A loop that checks each candidate (``{"title": t, "fits": true}``) and keeps those that pass hands the
    kept ones on as a list: no value of the verdict reaches that list (the item is the candidate's own, which
    content inference credits to where it began), yet a wrong verdict is what let a bad item through.  A step
    given a list that holds an item some earlier check answered about (its output echoes the item beside a
    yes/no) depends on that check, as on a choice (control dependence; `control_edges`).  A text that one check
    echoes for different inputs (a warehouse, a user) is a setting its calls share, no item.  ``named``: the
    failures' messages (case-folded): past `_MAX_KEPT` edges, the items they name come first, then the latest.
    """
    gates: dict[str, list[Step]] = {}
    inputs: dict[str, dict[str, set[str]]] = {}
    pending: list[tuple[int, Step, set[str]]] = []
    out: dict[str, list[Dependency]] = {}
    for s in run.steps:
        keep = []
        for end, done, items in pending:
            if end <= s.start_ns or not s.start_ns or not end:
                for t in items:
                    gates[t] = [*gates.get(t, [])[1 - _MAX_GATES :], done]
            else:
                keep.append((end, done, items))
        pending = keep
        if gates and s.input is not None:
            deps = _gates_of(s, gates, inputs, named, confidence)
            if deps:
                out[s.step_id] = deps
        items = _verdict_items(s) if s.status == "ok" else set()
        if items:
            pending.append((s.end_ns or 0, s, items))
            for t in items:
                inputs.setdefault(t, {}).setdefault(s.name, set()).add(_input_key(s))
    return out


def _gates_of(
    s: Step,
    gates: Mapping[str, list[Step]],
    inputs: Mapping[str, Mapping[str, set[str]]],
    named: str,
    confidence: float,
) -> list[Dependency]:
    """The gate edges of a step given a list: the checks of each item it holds that each check (by name) echoed
    for one input only, at most `_MAX_KEPT`, the items the failures name first, then the most recently checked."""
    items = [t for t in _listed(s.input) & gates.keys() if all(len(v) == 1 for v in inputs.get(t, {}).values())]
    items.sort(key=lambda t: (t not in named, -max(g.end_ns or 0 for g in gates[t]), t))
    deps: dict[str, Dependency] = {}
    for t in items:
        for g in gates[t]:
            if len(deps) < _MAX_KEPT and g.step_id != s.step_id:
                deps.setdefault(g.step_id, Dependency(g.step_id, "control", "inferred", confidence, KEPT_KEY + t))
    return list(deps.values())


def returned_edges(run: Run, every: Mapping[str, Sequence[Dependency]], factor: float = 0.8) -> dict[str, list[Dependency]]:
    """Edges to an enclosing step that recorded no output from the later steps that read what its steps made.

    A sub-agent traced as a span around its calls (OpenTelemetry's ``start_as_current_span`` with no
    ``output.value`` set) returns what its steps produced, but the recording says so nowhere: a later step is
    linked to the step inside that produced the value, and never to the sub-agent, whose input (the entity it
    was run for, its task) decided all of it.  A step outside it that started after it ended and depends on
    one of its descendants by a value edge depends on it too (``factor``: one level of nesting less sure, as in
    `trajdebug.analysis.lineage.Lineage.handed_down_edges`).  ``every``: each step's edges so far, by step id.
    For imported spans only (the analysis calls it for `trajdebug.analysis.lineage.PARTIAL_FORMATS`): the
    recorder writes what a step returned, so there a step with no output returned nothing.
    """
    by_id = {s.step_id: s for s in run.steps}
    # Only an agent span given an input: what it was run for is what decided its steps (a turn or agent span
    # that recorded neither is a frame of the conversation, whose steps are linked to one another).  A chain
    # span around a program's loop (``reserve_passes`` over the passes it was handed) is no sub-agent: its
    # input came from the steps before it, and linking it lifts its calls above the step that chose that input
    # (review rev52o, suite_l satellite_03).
    silent = {
        s.step_id
        for s in run.steps
        if s.kind in CONTAINER_KINDS and s.output is None and s.input is not None and s.end_ns
    }
    if not silent:
        return {}
    # The silent enclosing steps around each step (nearest first).
    around: dict[str, list[str]] = {}
    for s in run.steps:
        up, seen = s.parent_id, {s.step_id}
        while up is not None and up in by_id and up not in seen:
            seen.add(up)
            if up in silent:
                around.setdefault(s.step_id, []).append(up)
            up = by_id[up].parent_id
    out: dict[str, list[Dependency]] = {}
    for s in run.steps:
        have = {d.step_id for d in every.get(s.step_id, ())}
        mine = set(around.get(s.step_id, ()))
        added: dict[str, Dependency] = {}
        for d in every.get(s.step_id, ()):
            if d.kind not in ("data", "state") or d.run_id is not None:
                continue
            for p in around.get(d.step_id, ()):
                enc = by_id[p]
                if p in have or p in added or p in mine or not (enc.end_ns and enc.end_ns <= s.start_ns):
                    continue
                key = RETURNED_KEY + (d.key or "")
                added[p] = Dependency(p, d.kind, "inferred", round(d.confidence * factor, 3), key)
        if added:
            out[s.step_id] = list(added.values())
    return out


EMPTY_KEY = "empty:"
"""Prefix of the ``key`` of an edge from the step whose empty result a later step was handed (`unread_empty_edges`);
the argument (its field, or its position) follows."""


def _empty_args(value: Any) -> list[tuple[str, str]]:
    """(argument, canonical form) of each empty list or object among a call's positional arguments (a list
    input).  A named argument is no lost hand-off: an empty one of the producer's name is linked by name
    (`trajdebug.analysis.lineage.Lineage.empty_edges`), and one of another name is a default or a model's
    choice (``extras: []``, ``exclude: []``), which no empty result handed on."""
    if not isinstance(value, list):
        return []
    args = ((f"[{i}]", v) for i, v in enumerate(value[:32]))
    return [(a, "[]" if isinstance(v, list) else "{}") for a, v in args if isinstance(v, (list, dict)) and not v]


def _given(value: Any) -> set[str]:
    """A call's arguments as canonical JSON (a list input's items, a record's fields' values, or the input
    itself): the non-empty records and lists, and the texts of 3 characters or more (`_item`); and the texts
    they hold (`_leaf_items`: a job id given alone to one call and in a list to the next)."""
    args = value if isinstance(value, list) else list(value.values()) if is_mapping(value) else [value]
    found = _leaf_items(value)
    for v in args[:32]:
        if (isinstance(v, (list, dict)) and v) or _item(v) is not None:
            with contextlib.suppress(TypeError, ValueError):
                found.add(json.dumps(v, sort_keys=True, default=str)[:2000])
    return found


def unread_empty_edges(run: Run, every: Mapping[str, Sequence[Dependency]], confidence: float = 0.4) -> dict[str, list[Dependency]]:
    """Edges from the one earlier step that returned an empty list or object whole, which no step read, to a
    step handed that empty value as a positional argument under the same enclosing step.

    A filter that found nothing (``flag_pads`` returning ``[]``) hands its result on, often several steps
    later, into a call that assembles the outcome; an empty value holds no content to match, and a call's
    arguments recorded by position (``input.value`` a JSON array of the arguments) have no name to match by
    (`trajdebug.analysis.lineage.Lineage.empty_edges` links fields of the same name, or the result of the step
    right before).  A result nobody read is rare: the empty argument is the likeliest reader, but only when it
    is the only one of its form waiting there (of two, either could be the one handed on: no edge), and when
    the call is also handed one of the arguments the empty result was found for (``assemble(days, flags)``
    after ``flag_pads(days, limit)``, ``report(item, records)`` after ``lookup(item)``): an empty list beside
    arguments of nothing the finder was given is a literal or a default as likely (``render(template, [])``;
    review rev52p, positional_default).  Never for a model call (an empty list in a request is an API
    parameter).  ``every``: each step's edges so far.
    """
    read = {d.step_id for ds in every.values() for d in ds}
    # Per enclosing step, per empty form: the earlier steps that returned it whole, unread so far.
    waiting: dict[tuple[str | None, str], list[Step]] = {}
    out: dict[str, list[Dependency]] = {}
    for s in run.steps:
        if s.kind != "llm":
            deps: dict[str, Dependency] = {}
            for arg, form in _empty_args(s.input):
                ps = [p for p in waiting.get((s.parent_id, form), ()) if p.end_ns and p.end_ns <= s.start_ns]
                if len(ps) == 1 and ps[0].step_id not in deps and _given(ps[0].input) & _given(s.input):
                    deps[ps[0].step_id] = Dependency(ps[0].step_id, "data", "inferred", confidence, EMPTY_KEY + arg)
            if deps:
                out[s.step_id] = list(deps.values())
                read.update(deps)
                waiting = {k: [p for p in v if p.step_id not in deps] for k, v in waiting.items()}
        empty = isinstance(s.output, (list, dict)) and not s.output
        if empty and s.kind not in CONTAINER_KINDS and s.kind != "llm" and s.step_id not in read:
            waiting.setdefault((s.parent_id, "[]" if isinstance(s.output, list) else "{}"), []).append(s)
    return out


ANSWERED_KEY = "yes/no:"
"""Prefix of the ``key`` of an edge from the step whose one-field yes/no a later step was given (`yes_no_edges`);
the field follows."""


def _yes_no(value: Any) -> tuple[str, str] | None:
    """A one-field record holding a yes/no (``{"licence": false}``) as (its field's tokens, ``true``/``false``)."""
    if not is_mapping(value) or len(value) != 1:
        return None
    (k, v), = value.items()
    words = tokenize(normalize(str(k)))
    if not isinstance(v, bool) or len(words) != 1 or len(words[0]) < 4:
        return None
    return words[0], "true" if v else "false"


def _pairs(value: Any, fields: Set[str]) -> set[tuple[str, str]]:
    """(token, next token) of a step's input as text: a field and its value wherever the input holds it, a
    mapping's own or one written into a prompt as JSON.  Empty unless the text holds one of ``fields`` (most
    inputs hold none: they are not tokenized; past `_MAX_SCANNED` fields, tokenizing is the cheaper test)."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
    except (TypeError, ValueError):
        return set()
    text = normalize(text[:_MAX_TEXT])
    if len(fields) <= _MAX_SCANNED and not any(f in text for f in fields):
        return set()
    tokens = tokenize(text)
    return set(pairwise(tokens))


_MAX_SCANNED = 32
"""Fields looked for in an input's text one by one before tokenizing it (a bound on the work per step)."""


_MAX_TEXT = 100_000
"""Characters of an input read for yes/no fields (a bound on the work per step)."""


def _bool_fields(value: Any) -> set[str]:
    """The one-token names of a mapping's top-level yes/no fields (``{"sent": true, "to": ...}`` -> sent)."""
    if not is_mapping(value):
        return set()
    names = (tokenize(normalize(str(k))) for k, v in value.items() if isinstance(v, bool))
    return {w[0] for w in names if len(w) == 1}


def _nested_answers(value: Any, depth: int = 0) -> set[tuple[str, str]]:
    """(field's token, ``true``/``false``) of the one-token yes/no fields a record holds inside (a customer's
    ``{"customer": {"flagged": false}}``), three levels deep, not its own top-level fields (`_bool_fields`)."""
    found: set[tuple[str, str]] = set()
    if depth > 3:
        return found
    if is_mapping(value):
        for k, v in value.items():
            if isinstance(v, bool) and depth > 0 and len(w := tokenize(normalize(str(k)))) == 1:
                found.add((w[0], "true" if v else "false"))
            elif isinstance(v, (list, dict)) or is_mapping(v):
                found |= _nested_answers(v, depth + 1)
    elif isinstance(value, list):
        for v in value[:64]:
            found |= _nested_answers(v, depth + 1)
    return found


def yes_no_edges(run: Run, *, confidence: float = 0.5) -> dict[str, list[Dependency]]:
    """Edges from the step that answered a yes/no under one field to the later steps given that field and answer.

    A parser that reads a model's verdict into ``{"licence": false}`` hands the yes/no on under its name (a
    report's data, the next call's arguments): a boolean is no content to match, yet that field with that
    answer is the parser's.  Only a field one step's output holds as a yes/no: a field several steps answer
    alike (``{"sent": true}`` here, ``{"sent": true, "to": ...}`` there) is an acknowledgement calls share, no
    datum of one of them (as in `trajdebug.analysis.inference._edges.structural_edges`).  Never for a model
    call's own answer.  Nor for a step that could have been handed the answer by an earlier record holding the
    same field and answer inside it (``{"customer": {"flagged": false}}``): the field is that record's datum as
    much as the one-field answer's (review rev52p, nested_flag).
    """
    fields = Counter(f for s in run.steps for f in _bool_fields(s.output))
    answers = {
        s.step_id: a
        for s in run.steps
        if s.kind != "llm" and (a := _yes_no(s.output)) is not None and fields[a[0]] == 1
    }
    if not answers:
        return {}
    # The earliest end of a record holding each answer inside it: a step that started later was given it by
    # either.
    held: dict[tuple[str, str], int] = {}
    wanted = set(answers.values())
    for s in run.steps:
        if s.end_ns and (is_mapping(s.output) or isinstance(s.output, list)):
            for a in _nested_answers(s.output) & wanted:
                held[a] = min(held.get(a, s.end_ns), s.end_ns)
    # The answers by end time, moved to `done` as the steps that follow start (each once: no rescan per step).
    pending = sorted((s for s in run.steps if s.step_id in answers and s.end_ns), key=lambda p: p.end_ns or 0)
    done: dict[tuple[str, str], Step] = {}
    names: set[str] = set()
    k = 0
    out: dict[str, list[Dependency]] = {}
    for s in run.steps:
        while k < len(pending) and (pending[k].end_ns or 0) <= s.start_ns:
            done[answers[pending[k].step_id]] = pending[k]
            names.add(answers[pending[k].step_id][0])
            k += 1
        if not done or s.input is None:
            continue
        given = _pairs(s.input, names)
        hits = given & done.keys() if len(given) < len(done) else {a for a in done if a in given}
        deps = [Dependency(done[a].step_id, "data", "inferred", confidence, ANSWERED_KEY + a[0])
                for a in sorted(hits)
                if done[a].step_id != s.step_id and (done[a].end_ns or 0) <= s.start_ns
                and (a not in held or held[a] > s.start_ns)]
        if deps:
            out[s.step_id] = deps
    return out


__all__ = [
    "ANSWERED_KEY",
    "EMPTY_KEY",
    "KEPT_KEY",
    "RETURNED_KEY",
    "kept_edges",
    "returned_edges",
    "unread_empty_edges",
    "yes_no_edges",
]
