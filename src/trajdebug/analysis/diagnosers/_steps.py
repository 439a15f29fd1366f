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

from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis._sql import sql_of, sql_problem
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._reads import Reads, reading
from trajdebug.analysis.diagnosers._tools import (
    handled,
    swallowing_wrapper,
)
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.model import ErrorInfo, Step


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


@reading(Reads(errors=True))
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


def _printed_before(step: Step, text: str, ctx: DiagnoseContext) -> bool:
    """Whether a call to the outside world (a tool, a retrieval) that fed this step returned this very text
    before this step answered.  Its record printed by Python (the Agents SDK keeps a function tool's result as
    ``str(result)``) is data, never malformed JSON (`content.python_repr`), and a model or a sub-agent answering
    with it word for word (a buyer agent relaying its quote) repeats that data: it wrote no JSON of its own.

    Only such a call counts, and only one this step reached by an edge or enclosed: a wrapper (a chain, a
    node, an agent-as-tool) that encloses a model returns the model's text after it, and any other step that
    printed the same text elsewhere in the run handed this step nothing."""
    printed: dict[str, list[Step]] = ctx.memo("printed-records", lambda: _printed_records(ctx))
    sources = printed.get(text.strip())
    if not sources:
        return False
    fed = ctx.graph.backward_slice([step.step_id])
    return any(s.step_id in fed and s.step_id != step.step_id and _ended_by(s, step) for s in sources)


def _printed_records(ctx: DiagnoseContext) -> dict[str, list[Step]]:
    found: dict[str, list[Step]] = {}
    for s in ctx.run.steps:
        if s.kind in ("tool", "retrieval") and isinstance(s.output, str) and content.python_repr(s.output):
            found.setdefault(s.output.strip(), []).append(s)
    return found


def _ended_by(source: Step, step: Step) -> bool:
    """Whether ``source`` had answered when ``step`` did (its end, else its start, by the recorded clock)."""
    done = source.end_ns if source.end_ns is not None else source.start_ns
    then = step.end_ns if step.end_ns is not None else step.start_ns
    return done <= then


@reading(Reads(skips_kinds=frozenset({"tool", "retrieval", "input"})))
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
        if problem_j and content.python_repr(out) and _printed_before(step, out, ctx):
            return  # it handed on, word for word, a record a program printed (a tool's ``str(result)``)
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




# -- contracts and inputs ------------------------------------------------------------


@reading(Reads(checks=True))
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


@reading(Reads(kinds=frozenset({"input"})))
def external_input(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """Inputs given to the run are taken as given (they are where the search ends)."""
    if step.kind == "input":
        yield Evidence(step.step_id, 0.0, "input given to the run", "external-input", sound=True)


__all__ = [
    "contracts",
    "input_caused",
    "is_check",
    "external_input",
    "malformed_output",
    "step_error",
]
