"""The built-in diagnosers, one per sign of a faulty step.

Each is a plain callable ``(step, ctx) -> Iterable[Evidence]`` (see
`trajdebug.analysis.diagnosers._context`).  Suspicion values are ranks, not
probabilities: about 0.7 for a step that is wrong on its face (malformed SQL,
a failed post-condition), about 0.5 for one that visibly misbehaved (an error,
dropped items, a contradiction), 0.2-0.4 for weak signs (values with no
visible source, a failure that its arguments probably caused).

The diagnosers of tool calls (results, errors, arguments) live in
`trajdebug.analysis.diagnosers._tools`, the data-flow diagnosers (lost values, parse
steps, state writes, retries) in `trajdebug.analysis.diagnosers._dataflow`;
`trajdebug.analysis.diagnosers.BUILTIN_DIAGNOSERS` registers them all.

Evidence is *pulled*: a diagnoser reports about the step it is given, also
from what its consumers saw (a consumer's failed pre-condition, a reader that
found a state write invalid), so one verdict per step holds everything known
about it.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Container, Iterable, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis._sql import sql_of, sql_problem
from trajdebug.analysis.diagnosers import _choices as choices
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._conversation import _ASSISTANT_ROLES
from trajdebug.analysis.diagnosers._tools import (
    contradictions,
    handled,
    present,
    swallowing_wrapper,
    upstream_outputs,
)
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.model import ErrorInfo, Step
from trajdebug.core.values import atoms, date_forms, is_date, is_year


# -- errors --------------------------------------------------------------------

_INPUT_ERROR_TYPES = frozenset(
    [
        "KeyError",
        "IndexError",
        "LookupError",
        "ValueError",
        "TypeError",
        "AssertionError",
        "JSONDecodeError",
        "ValidationError",
        "UnicodeDecodeError",
        "ZeroDivisionError",
    ]
)


def _quotes_argument(message: str, given: Any) -> bool:
    """Whether an error message names one of the values a step was given (``... does not belong to u-999``)."""
    text = message.lower()
    for _, v in content.leaves(given):
        if isinstance(v, str) and 3 <= len(v) <= 100 and v.lower() in text:
            return True
    return False


def input_caused(err: ErrorInfo, given: Any = None, *, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether an error says more about what a step was given than about the step.

    A ``KeyError`` or a failed validation is raised by a step *on* its input, and
    so is an error that names one of its argument values: the step is where the
    infection showed, its input is where to look next.
    """
    return (
        err.type.rsplit(".", 1)[-1] in _INPUT_ERROR_TYPES
        or bool(lexicon.input_caused.search(err.message))
        or _quotes_argument(err.message, given)
    )




def is_check(step: Step, err: ErrorInfo | None = None, *, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a step's error is a check it ran on its input: a validator, a test, a fact check.

    Such an error is raised *on* what the step was given (an assertion, a failed
    validation, a "does not match" verdict), so it is a symptom: the failure is
    where the infection became visible, not where it began.
    """
    err = err if err is not None else step.error
    if err is None:
        return False
    name = err.type.rsplit(".", 1)[-1]
    if step.kind in ("tool", "retrieval", "llm"):
        return False  # a tool or a model failing is judged by its own diagnosers
    return bool(lexicon.check_types.search(name)) or bool(lexicon.check_text.search(err.message[:500]))


def _own_error(step: Step, ctx: DiagnoseContext) -> ErrorInfo | None:
    """The step's error when it raised it itself (not passed up from a child)."""
    err = step.error
    if step.status != "error" or err is None:
        return None
    if err.error_id is not None and step.kind == "agent":
        for c in ctx.children(step.step_id):
            if c.error is not None and c.error.error_id == err.error_id:
                return None
    return err


def _swallowed(step: Step, ctx: DiagnoseContext) -> Evidence | None:
    """A step that ended normally after the last call inside it raised, no model inside it saw the error and
    no later call inside it succeeded, and whose output later steps used: it turned the error into a value
    (a default, a placeholder), where the wrong value the run went on with was born."""
    if step.kind in ("agent", "llm") or step.output is None:
        return None
    kids = ctx.children(step.step_id)
    if not kids or kids[-1].status != "error" or kids[-1].error is None or any(k.kind == "llm" for k in kids):
        return None
    if kids[-1].step_id in handled(ctx):
        return None
    if kids[-1].kind in ("tool", "retrieval") and swallowing_wrapper(kids[-1], ctx) is step:
        return None  # `swallowed-error` says it, once (two readings of one swallow were counted twice)
    if not any(ctx.graph.steps[c].parent_id != step.step_id and c != step.parent_id
               for c, _ in ctx.graph.children(step.step_id)):
        return None
    err = kids[-1].error
    return Evidence(
        step.step_id,
        0.3,
        f"returned a value after {kids[-1].name} inside it raised ({err.type}: {err.message[:120]}), "
        "and later steps used that value",
        "step-error",
    )


def step_error(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A step that ended with an error: weak when raised on its input or passed up from a child; a step that
    ended normally though the last call inside it raised (`_swallowed`)."""
    if step.status == "ok":
        found = _swallowed(step, ctx)
        if found is not None:
            yield found
        return
    if step.status != "error" or step.kind in ("tool", "retrieval"):
        return  # tool errors are judged by tool_result
    err = _own_error(step, ctx)
    if step.step_id in handled(ctx):
        text = f"{step.error.type}: {step.error.message}" if step.error else "an error"
        yield Evidence(
            step.step_id,
            0.05,
            f"reported {text[:140]}, which was handled (ignored or recovered)",
            "step-error",
        )
        return
    if err is None:
        text = f"{step.error.type}: {step.error.message}" if step.error else "an error"
        yield Evidence(step.step_id, 0.15, f"passed up {text[:160]} from a step inside it", "step-error")
    elif is_check(step, err):
        # Zeller's infection chain: a check is where the infection became
        # visible.  It judged what it was given; blame flows to its inputs.
        yield Evidence(
            step.step_id,
            0.05,
            f"a check that rejected its input ({err.type}: {err.message[:140]}): where the failure shows, not its cause",
            "step-error",
        )
    elif input_caused(err):
        yield Evidence(
            step.step_id, 0.2, f"raised {err.type} on its input: {err.message[:160]}", "step-error"
        )
    else:
        yield Evidence(step.step_id, 0.5, f"ended with {err.type}: {err.message[:160]}", "step-error")


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


def _repaired_by(step: Step, text: str, ctx: DiagnoseContext) -> str | None:
    """The name of a program step given this text whole that returned it as data (a dict or a list) keeping
    every value a lenient reading of it holds (a trailing comma), if any.  A reader that lost values, or text
    no lenient reading parses, leaves the slip standing: what was lost went with it."""
    lenient = content.embedded_json(text)
    if lenient is None:
        return None
    values = [v for _, v in content.leaves(lenient) if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
    for cid, d in ctx.graph.children(step.step_id):
        if d.kind != "data":
            continue
        reader = ctx.step(cid)
        if reader.kind in ("llm", "agent") or reader.status == "error":
            continue
        if isinstance(reader.output, (Mapping, list)) and any(
            v == text for _, v in content.leaves(reader.input)
        ):
            kept = {repr(v) for _, v in content.leaves(reader.output)}
            if all(repr(v) in kept or repr(float(v)) in kept for v in values if not isinstance(v, str)) and all(
                repr(v) in kept for v in values if isinstance(v, str)
            ):
                return reader.name
    return None


def malformed_output(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """Output that is malformed on its face: JSON that does not parse, SQL that fails ``EXPLAIN``, tool-call arguments that are not JSON."""
    if step.kind in ("tool", "retrieval", "input"):
        return  # results of the outside world are judged by tool_result
    out = step.output
    stmt = sql_of(out)
    if stmt is not None:
        problem = sql_problem(stmt, ctx.sql_schema)
        if problem:
            what = "does not parse" if problem[0] == "syntax" else "fails EXPLAIN on the schema"
            yield Evidence(
                step.step_id, 0.7, f"produced SQL that {what}: {problem[1][:120]}", "malformed-output"
            )
        return
    if isinstance(out, str) and (content.looks_like_json(out) or step.attributes.get("expect") == "json"):
        problem_j = content.json_problem(out)
        if problem_j:
            reader = _repaired_by(step, out, ctx)
            if reader is not None:
                # The program read it anyway (a lenient parser, a JSON repair): the slip was recovered,
                # as an error retried cleanly is; what the reader made of it is the reader's to answer for.
                yield Evidence(
                    step.step_id,
                    0.1,
                    f"produced malformed JSON ({problem_j[:80]}), which {reader} read into data",
                    "malformed-output",
                )
                return
            yield Evidence(
                step.step_id, 0.65, f"produced malformed JSON: {problem_j[:120]}", "malformed-output"
            )
        return
    if step.kind != "llm" or not isinstance(out, (Mapping, list)):
        return
    for path, v in content.leaves(out):
        if path.endswith("arguments") and isinstance(v, str) and content.looks_like_json(v):
            problem_a = content.json_problem(v)
            if problem_a:
                yield Evidence(
                    step.step_id,
                    0.6,
                    f"tool-call arguments are not valid JSON: {problem_a[:100]}",
                    "malformed-output",
                )
                return




def _stated(out: Any, *, lexicon: Lexicon = ENGLISH) -> list[Any]:
    """The values an output states: SQL literals, JSON leaves, or the numbers of a text."""
    stmt = sql_of(out)
    if stmt is not None:
        # The literals of generated SQL are the values it claims from the question.
        lits: list[Any] = [m.group(1).replace("''", "'") for m in _SQL_LITERAL.finditer(stmt)]
        return lits + [float(n) for n in content.stated_numbers(_SQL_LITERAL.sub("", stmt))]
    text = out.get("content") if isinstance(out, Mapping) and out.get("role") in _ASSISTANT_ROLES else None
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
        return [float(n) for n in content.stated_numbers(out)]
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
"""A label: a lowercase word, or up to three joined by hyphens or underscores (``how-to``, ``on_hold``)."""


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
    """The haystack's number forms and the sums of its tables (`content.number_forms`, `content.aggregate_forms`),
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
            self._own = content.number_forms(self._hay)
        if n in self._own:
            return True
        if self._agg is None:
            # Totals restated from a table (the sum of a row or a group) are derived, not made up.
            self._agg = content.aggregate_forms([self._step.input, *upstream_outputs(self._step, self._ctx)])
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
        # A threshold of a call made where no number was given to put there (``min_score=7.5`` for a
        # request naming a section and a day) is how the model chose to ask; given any number (a budget,
        # a count), the bound may restate it, so it is a claim to check.
        if (bound := choices.bounds(out)) and not any(a.kind == "number" for a in atoms(step.input)):
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
                self._shown_forms = content.number_forms(self._shown)
            if present(v, self._shown, self._shown_forms):
                return True
        return k[0] == "n" and choices.from_setting(k[1], self._spans, self._forms)


def _unconfirmed(step: Step, ctx: DiagnoseContext, missing: list[str], raw: list[Any]) -> list[str]:
    """The made-up values (``missing``, stated as ``raw``) left once those the world answered with before
    anything handed them to it are taken out: those were no invention (`choices.confirmed`)."""
    texts = [v for v in raw if isinstance(v, str)]
    said = choices.confirmed(step, ctx, texts) | choices.looked_up(step, ctx, texts)
    return [m for m, v in zip(missing, raw) if not (isinstance(v, str) and v.strip().lower() in said)]


def _contradicted(step: Step, ctx: DiagnoseContext, out: Any, hay: str) -> Evidence | None:
    """The finding of an output that contradicts its input on a field, with the input's value as correction."""
    claimed = content.parse_json(out) if isinstance(out, str) and content.looks_like_json(out) else out
    bad = contradictions(
        claimed if claimed is not None else out,
        # A request typed as ``key=value`` text fixes those fields as a JSON one would.
        [step.input, *upstream_outputs(step, ctx), content.written_pairs(step.input)],
        hay,
    )
    # A number worked out from its inputs (a sum of receipts, a product) restates them.
    bad = [
        b
        for b in bad
        if not (isinstance(b[1], (int, float)) and not isinstance(b[1], bool) and _computed(step, ctx, float(b[1])))
    ]
    if bad:
        asked = _asked_before(step, ctx, claimed if claimed is not None else out)
        bad = [b for b in bad if not (_when(b[1]) and _when(b[2]) and (b[0], str(b[2])) in asked)]
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


def _when(v: Any) -> bool:
    """Whether a value is a date or a time of day."""
    return isinstance(v, str) and is_date(v.strip().lower())


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
    fields = {k for k, _ in _asked_before(step, ctx, out)}
    found: set[tuple[str, Any]] = set()
    for _, args in _called(out) if fields else ():
        for k, v in content.keyed_values(args).items():
            if k in fields and _when(v) and (c := choices.key(v)):
                found.add(c)
    return found


def llm_output(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """An LLM output that is empty, or states values absent from or contradicting its inputs."""
    if step.kind != "llm" or step.status == "error":
        return
    out = step.output
    if content.is_empty(out):
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
                arithmetic = len(content.stated_numbers(content.text_of(step.input))) >= 2
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


# -- contracts and inputs ------------------------------------------------------------


def contracts(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """Declared contracts: the step's own checks, and its consumers' pre-conditions on its output."""
    checks = step.attributes.get("checks")
    own = [c for c in checks if isinstance(c, Mapping)] if isinstance(checks, list) else []
    for c in own:
        if c.get("when") == "pre":
            continue  # a pre-condition judges the step's inputs (pulled by the producers below)
        name = c.get("name", "?")
        if c.get("passed") is False:
            msg = f": {c['message']}" if c.get("message") else ""
            yield Evidence(step.step_id, 0.75, f"its check {name} failed{msg}", "contract")
        elif c.get("passed") is True:
            yield Evidence(step.step_id, 0.0, f"its check {name} passed", "contract", sound=True)
    if not ctx.has_checks():
        return
    for consumer_id, d in ctx.graph.children(step.step_id):
        if d.kind not in ("data", "state"):
            continue
        consumer = ctx.step(consumer_id)
        cchecks = consumer.attributes.get("checks")
        if not isinstance(cchecks, list):
            continue
        for c in cchecks:
            if isinstance(c, Mapping) and c.get("when") == "pre":
                name = c.get("name", "?")
                if c.get("passed") is False:
                    yield Evidence(
                        step.step_id,
                        0.6,
                        f"its output failed pre-condition {name} of {consumer.name}",
                        "contract",
                    )
                elif c.get("passed") is True:
                    yield Evidence(
                        step.step_id,
                        0.0,
                        f"its output passed pre-condition {name} of {consumer.name}",
                        "contract",
                        sound=True,
                    )


def external_input(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """Inputs given to the run are taken as given (they are where the search ends)."""
    if step.kind == "input":
        yield Evidence(step.step_id, 0.0, "input given to the run", "external-input", sound=True)


__all__ = [
    "contracts",
    "input_caused",
    "is_check",
    "external_input",
    "llm_output",
    "malformed_output",
    "step_error",
]
