"""The built-in diagnosers, one per sign of a faulty step.

Each is a plain callable ``(step, ctx) -> Iterable[Evidence]`` (see
`trajdebug.analysis.diagnose`).  Suspicion values are ranks, not
probabilities: about 0.7 for a step that is wrong on its face (malformed SQL,
a failed post-condition), about 0.5 for one that visibly misbehaved (an error,
dropped items, a contradiction), 0.2-0.4 for weak signs (values with no
visible source, a failure that its arguments probably caused).

The data-flow diagnosers (lost values, parse steps, state writes, retries)
live in `trajdebug.analysis.dataflow`; `BUILTIN_DIAGNOSERS` registers both.

Evidence is *pulled*: a diagnoser reports about the step it is given, also
from what its consumers saw (a consumer's failed pre-condition, a reader that
found a state write invalid), so one verdict per step holds everything known
about it.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.analysis import content
from trajdebug.analysis.chat_rules import CONVERSATION_DIAGNOSERS
from trajdebug.analysis.dataflow import (
    dropped_value,
    parse_dropped,
    retry_divergence,
    scaled_value,
    state_values,
    state_write,
    value_origin,
)
from trajdebug.analysis.decisions import decision, delegated_result, lost_update
from trajdebug.analysis.diagnose import _QUOTED, DiagnoseContext, Diagnoser, Evidence
from trajdebug.analysis.graph import CHILD_KEY
from trajdebug.analysis.observations import environment_read, stale_retry, truncated_output
from trajdebug.model import ErrorInfo, Step


# -- errors --------------------------------------------------------------------

_INPUT_CAUSED = re.compile(
    r"syntax|invalid|malformed|not found|no such|unknown|missing|required|unexpected|bad request|"
    r"does not exist|cannot parse|could not parse|validation|unprocessable|check failed|expected",
    re.I,
)
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


def input_caused(err: ErrorInfo, given: Any = None) -> bool:
    """Whether an error says more about what a step was given than about the step.

    A ``KeyError`` or a failed validation is raised by a step *on* its input, and
    so is an error that names one of its argument values: the step is where the
    infection showed, its input is where to look next.
    """
    return (
        err.type.rsplit(".", 1)[-1] in _INPUT_ERROR_TYPES
        or bool(_INPUT_CAUSED.search(err.message))
        or _quotes_argument(err.message, given)
    )


_CHECK_TEXT = re.compile(
    r"\bcheck(?:s)? failed|\bfailed (?:the )?check|\bverif(?:y|ication) failed|\breview failed|assert|"
    r"does not match|doesn't match|mismatch|\bexpected\b|\bshould (?:be|have)\b|\bis missing\b|\bare missing\b",
    re.I,
)
_CHECK_TYPES = re.compile(r"check|assert|validation|verif|mismatch", re.I)


def is_check(step: Step, err: ErrorInfo | None = None) -> bool:
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
    return bool(_CHECK_TYPES.search(name)) or bool(_CHECK_TEXT.search(err.message[:500]))


def _own_error(step: Step, ctx: DiagnoseContext) -> ErrorInfo | None:
    """The step's error when it raised it itself (not passed up from a child)."""
    err = step.error
    if step.status != "error" or err is None:
        return None
    if err.error_id is not None and step.kind == "agent":
        for c in ctx.run.children(step.step_id):
            if c.error is not None and c.error.error_id == err.error_id:
                return None
    return err


def step_error(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A step that ended with an error: weak when raised on its input or passed up from a child."""
    if step.status != "error" or step.kind in ("tool", "retrieval"):
        return  # tool errors are judged by tool_result
    err = _own_error(step, ctx)
    if step.step_id in _handled(ctx):
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


def consumer_rejection(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A step whose output made a consumer fail on its input (a ``KeyError``, a failed validation)."""
    mine: str | None = None
    for cid, d in ctx.errored_consumers(step.step_id):
        if d.kind not in ("data", "state") or d.key == CHILD_KEY or cid in _handled(ctx):
            continue  # (an error the agent handled made nothing fail)
        c = ctx.step(cid)
        err = _own_error(c, ctx)
        if err is None or not input_caused(err, c.input):
            continue
        quoted = [m.group(1) or m.group(2) for m in _QUOTED.finditer(err.message)]
        carried = False
        if quoted:
            if mine is None:
                mine = (content.text_of(step.input) + "\n" + ctx.text(step.step_id)).lower()
            carried = any(q.lower() in mine for q in quoted)
            if not carried:
                # What the consumer misses never reached this step: not its doing.
                yield Evidence(
                    step.step_id,
                    0.0,
                    f"{c.name} failed on {quoted[0]!r}, which never reached it",
                    "consumer-rejection",
                    sound=True,
                )
                return
        # A check that names no culprit implicates each of its inputs a little;
        # one that quotes a value this step carried implicates it more.
        weight = 0.2 if carried else (0.15 if is_check(c, err) else 0.25)
        yield Evidence(
            step.step_id,
            weight,
            f"its output made {c.name} fail: {err.type}: {err.message[:120]}",
            "consumer-rejection",
        )
        return


def starved_consumer(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A step whose output a tool or retrieval consumed and returned nothing for (what it asked was wrong?)."""
    flags = ctx._flags
    if "empty-observations" not in flags:
        flags["empty-observations"] = any(
            s.kind in ("tool", "retrieval") and s.status == "ok" and content.is_empty(s.output)
            for s in ctx.run.steps
        )
    if not flags["empty-observations"]:
        return
    for cid, d in ctx.graph.children(step.step_id):
        if d.kind not in ("data", "state") or d.key == CHILD_KEY:
            continue
        c = ctx.step(cid)
        if c.kind in ("tool", "retrieval") and c.status == "ok" and content.is_empty(c.output):
            yield Evidence(
                step.step_id,
                0.2,
                f"{c.name} returned nothing for what this step gave it",
                "starved-consumer",
            )
            return


def _handled(ctx: DiagnoseContext) -> set[str]:
    """Steps whose error a later attempt or a repeated call recovered (`trajdebug.analysis.detect.superseded`)."""

    def compute() -> set[str]:
        from trajdebug.analysis.detect import superseded

        ids = {s.retry_of for s in ctx.run.steps if s.retry_of is not None and s.status == "ok"}
        ids |= {e.step_id for e in ctx.run.errors if e.stage in ("recovered", "ignored")}
        return {i for i in ids if i} | superseded(ctx.run)

    found: set[str] = ctx.memo("handled", compute)
    return found


def tool_result(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A tool or retrieval result carrying an error, an HTTP error status, or nothing."""
    if step.kind not in ("tool", "retrieval"):
        return
    out = step.output
    problem: str | None = None
    code = content.http_status(out)
    if code is not None and code >= 400:
        problem = f"HTTP status {code}"
        text = content.text_of(out, 400)
        caused = (400 <= code < 500 and code not in (408, 429)) or bool(_INPUT_CAUSED.search(text))
    elif step.status == "error" and step.error is not None:
        problem = f"{step.error.type}: {step.error.message}"
        caused = not _ENVIRONMENT.search(problem)
    elif found := content.error_text(out):
        problem = found
        caused = not _ENVIRONMENT.search(problem)
    elif (
        content.is_empty(out) and step.status == "ok" and any(True for _ in ctx.graph.children(step.step_id))
    ):
        # An empty answer says more about the question asked than about the tool.
        yield Evidence(
            step.step_id, 0.15, "returned an empty result that later steps consumed", "tool-result"
        )
        return
    else:
        return
    if step.step_id in _handled(ctx):
        # A later attempt (or the same call made again) succeeded: the error
        # was handled, and its (absent) output fed nothing.
        yield Evidence(
            step.step_id,
            0.05,
            f"its error ({problem[:120]}) was handled: recovered by a later attempt, or reported and ignored",
            "tool-result",
        )
        return
    if caused and _CHECK_TEXT.search(problem[:500]):
        # A test run or a validator failing is a check on what the tool was
        # given (a patch, a record): the infection shows here, it began upstream.
        yield Evidence(
            step.step_id,
            0.15,
            f"a check it ran failed on what it was given ({problem[:140]})",
            "tool-result",
        )
        return
    if caused:
        # A 4xx or "invalid argument" says more about the caller's arguments
        # than about the tool: keep the tool suspect but let the search go on.
        yield Evidence(
            step.step_id,
            0.35,
            f"result carries an error ({problem[:160]}), likely caused by its arguments",
            "tool-result",
        )
    else:
        yield Evidence(step.step_id, 0.7, f"tool or its environment failed: {problem[:160]}", "tool-result")


_ENVIRONMENT = re.compile(
    r"time(?:d)? ?out|timeout|connection|unavailable|unreachable|rate.?limit|too many requests|quota|overload|"
    r"internal (?:server )?error|temporar|refused|reset by peer|\b5\d\d\b|service|network|dns|ssl|broken pipe",
    re.I,
)
"""Errors of the tool or its environment; any other tool error is taken as a rejection of its arguments."""

_QUERY = re.compile(r"^\s*(select|with)\b", re.I)


def sql_result(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A SQL tool whose recorded rows differ from re-running its (read-only) query on the run's database.

    Only when the run names its SQLite file (metadata ``sqlite_db``) and the
    query is a ``SELECT``; the file is opened read-only and the query is cut off
    after a bounded amount of work.  A database changed since the run also
    shows here, so this ranks, it does not prove.
    """
    if step.kind != "tool" or step.status != "ok":
        return
    db = ctx.run.metadata.get("sqlite_db")
    stmt = content.sql_of(step.input)
    if not isinstance(db, str) or stmt is None or not _QUERY.match(stmt):
        return
    rows = content.largest_list(step.output)
    if rows is None:
        return
    fresh = content.rerun_query(db, stmt)
    if fresh is None:
        return
    if len(rows) < len(fresh):
        yield Evidence(
            step.step_id,
            0.6,
            f"returned {len(rows)} rows; its query yields {len(fresh)} on the database",
            "sql-result",
            correction=fresh,
        )
    elif len(rows) > len(fresh):
        yield Evidence(
            step.step_id,
            0.4,
            f"returned {len(rows)} rows; its query yields only {len(fresh)} on the database",
            "sql-result",
            correction=fresh,
        )
    else:
        yield Evidence(step.step_id, 0.0, "its rows match re-running its query", "sql-result", sound=True)


# -- arguments and stated values ---------------------------------------------------


def _present(value: Any, haystack: str, forms: set[str]) -> bool | None:
    """Whether a scalar shows up in a text (None: the value says too little to tell)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        n = content.norm_number(repr(value))
        if n is None:
            return None
        return n in forms
    if isinstance(value, str):
        v = value.strip().lower()
        # Identifiers and short values are claims; prose and expressions are not.
        if len(v) < 3 or len(v) > 60 or len(v.split()) > 3 or content.looks_like_sql(v):
            return None
        if v in haystack:
            return True
        # A few words composed from words of the input ("acme annual report") are no claim either.
        words = v.split()
        return len(words) > 1 and all(w in haystack for w in words)
    return None


def _contradictions(produced: Any, upstream: list[Any], context: str = "") -> list[tuple[str, Any, Any]]:
    """Fields a value shares with upstream outputs but with a different scalar value found nowhere upstream.

    A value that differs from one upstream field but appears elsewhere upstream
    (a user's other order, another row) is a choice among given values, not a
    contradiction.
    """
    mine = content.keyed_values(produced)
    if not mine:
        return []
    out: list[tuple[str, Any, Any]] = []
    everywhere: str | None = None
    for up in upstream:
        theirs = content.keyed_values(up)
        for k, v in mine.items():
            if k in theirs and k not in ("id", "name", "role", "type", "content", "status"):
                w = theirs[k]
                if type(v) is type(w) and v != w and not isinstance(v, bool) and len(str(v)) < 200:
                    if everywhere is None:
                        everywhere = "\n".join(content.text_of(u) for u in upstream).lower() + "\n" + context
                    if str(v).lower() not in everywhere:
                        out.append((k, v, w))
    return out


def _upstream_outputs(step: Step, ctx: DiagnoseContext) -> list[Any]:
    return [
        ctx.step(d.step_id).output
        for d in ctx.graph.parents(step.step_id)
        if d.kind in ("data", "state") and d.key != CHILD_KEY
    ]


def tool_arguments(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """Tool arguments that come from no upstream output, or contradict one."""
    if step.kind != "tool" or not isinstance(step.input, Mapping):
        return
    if (
        not any(d.kind in ("data", "state") and d.origin != "inferred" for d in step.deps)
        and ctx.recorded_edges()
    ):
        return  # recorded, and fed no tracked value: its arguments are constants or computed by the agent's code
    ups = _upstream_outputs(step, ctx)
    bad = _contradictions(step.input, ups, ctx.upstream_text(step, own_input=False))
    if bad:
        k, v, w = bad[0]
        yield Evidence(
            step.step_id, 0.6, f"argument {k}={v!r} contradicts the upstream value {w!r}", "tool-arguments"
        )
        return
    hay = ctx.upstream_text(step, own_input=False)
    if not hay.strip():
        return
    forms = content.number_forms(hay)
    checked, missing = 0, []
    for path, v in content.leaves(step.input):
        seen = _present(v, hay, forms)
        if seen is None:
            continue
        checked += 1
        if not seen:
            missing.append(f"{path}={v!r}"[:60])
    if missing:
        frac = len(missing) / checked
        plural = len(missing) > 1
        yield Evidence(
            step.step_id,
            0.1 + 0.25 * frac,
            f"argument{'s' if plural else ''} {', '.join(missing[:3])} come{'' if plural else 's'} from no upstream output",
            "tool-arguments",
        )
    elif checked:
        yield Evidence(
            step.step_id, 0.0, "its arguments all come from upstream outputs", "tool-arguments", sound=True
        )


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


def malformed_output(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """Output that is malformed on its face: JSON that does not parse, SQL that fails ``EXPLAIN``, tool-call arguments that are not JSON."""
    if step.kind in ("tool", "retrieval", "input"):
        return  # results of the outside world are judged by tool_result
    out = step.output
    stmt = content.sql_of(out)
    if stmt is not None:
        problem = content.sql_problem(stmt, ctx.sql_schema)
        if problem:
            what = "does not parse" if problem[0] == "syntax" else "fails EXPLAIN on the schema"
            yield Evidence(
                step.step_id, 0.7, f"produced SQL that {what}: {problem[1][:120]}", "malformed-output"
            )
        return
    if isinstance(out, str) and (content.looks_like_json(out) or step.attributes.get("expect") == "json"):
        problem_j = content.json_problem(out)
        if problem_j:
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


# Fields that name or identify rather than claim: call ids the model mints,
# tool (or sub-agent) names it picks from its tool list, message roles and
# types, and free text it composes (a search query, a prompt, a message).
_IDENTIFIER_PATH = re.compile(
    r"(?:^|\.|\])(?:id|call_id|tool_call_id|name|type|role|tool|tool_name|agent|query|q|search|prompt|text|message)$"
)


def _stated(out: Any) -> list[Any]:
    """The values an output states: SQL literals, JSON leaves, or the numbers of a text."""
    stmt = content.sql_of(out)
    if stmt is not None:
        # The literals of generated SQL are the values it claims from the question.
        lits: list[Any] = [m.group(1).replace("''", "'") for m in _SQL_LITERAL.finditer(stmt)]
        return lits + [float(n) for n in content.stated_numbers(_SQL_LITERAL.sub("", stmt))]
    if isinstance(out, (Mapping, list)):
        return [v for p, v in content.leaves(out) if not _IDENTIFIER_PATH.search(p)]
    if isinstance(out, str):
        parsed = content.parse_json(out) if content.looks_like_json(out) else None
        if parsed is not None:
            return [v for p, v in content.leaves(parsed) if not _IDENTIFIER_PATH.search(p)]
        return [float(n) for n in content.stated_numbers(out)]
    return []


_LABEL = re.compile(r"^[a-z]+$")


def llm_output(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """An LLM output that is empty, or states values absent from or contradicting its inputs."""
    if step.kind != "llm" or step.status == "error":
        return
    out = step.output
    if content.is_empty(out):
        yield Evidence(step.step_id, 0.5, "the model returned nothing", "llm-output")
        return
    claimed = content.parse_json(out) if isinstance(out, str) and content.looks_like_json(out) else out
    bad = _contradictions(
        claimed if claimed is not None else out,
        [step.input, *_upstream_outputs(step, ctx)],
        ctx.upstream_text(step),
    )
    if bad:
        k, v, w = bad[0]
        yield Evidence(
            step.step_id,
            0.55,
            f"states {k}={v!r} but its input says {w!r}",
            "llm-output",
            correction=(
                json.dumps(_replace_key(claimed, k, w)) if claimed is not out else _replace_key(out, k, w)
            ),
        )
        return
    hay = ctx.upstream_text(step)
    if not hay.strip():
        return
    # Totals restated from a table (the sum of a row or a group) are derived, not made up.
    forms = content.number_forms(hay) | content.aggregate_forms([step.input, *_upstream_outputs(step, ctx)])
    checked, missing = 0, []
    # The literals of generated SQL are values it claims, whatever they look like.
    labels = content.sql_of(out) is None
    unsure = False
    computed = 0
    arithmetic = len(content.stated_numbers(content.text_of(step.input))) >= 2
    for v in _stated(out):
        seen = _present(v, hay, forms)
        if seen is None:
            continue
        if labels and not seen and isinstance(v, str) and _LABEL.match(v.strip()):
            unsure = True  # a one-word label ("none", "deploy") may be a choice among options, not a claim
            continue
        checked += 1
        if not seen and repr(v)[:40] not in missing:
            missing.append(repr(v)[:40])
            # A whole number (a count, an age in minutes) is often computed from
            # the inputs rather than made up: it counts half when small, or when
            # the inputs hold numbers to compute it from.
            if isinstance(v, (int, float)) and float(v).is_integer() and (abs(v) < 1000 or arithmetic):
                computed += 1
    if missing:
        frac = min(1.0, (len(missing) - 0.5 * computed) / checked)
        # One unexplained value among few says little (a computed age, a count).
        yield Evidence(
            step.step_id,
            0.15 + 0.4 * frac,
            f"states {', '.join(missing[:3])}, found in none of its inputs",
            "llm-output",
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


BUILTIN_DIAGNOSERS: dict[str, Diagnoser] = {
    "step-error": step_error,
    "consumer-rejection": consumer_rejection,
    "starved-consumer": starved_consumer,
    "tool-result": tool_result,
    "sql-result": sql_result,
    "dropped-value": dropped_value,
    "tool-arguments": tool_arguments,
    "malformed-output": malformed_output,
    "llm-output": llm_output,
    "parse-dropped": parse_dropped,
    "state-write": state_write,
    "retry-divergence": retry_divergence,
    "scaled-value": scaled_value,
    "value-origin": value_origin,
    "state-values": state_values,
    "truncated-output": truncated_output,
    "stale-retry": stale_retry,
    "environment": environment_read,
    "decision": decision,
    "race": lost_update,
    "sub-agent": delegated_result,
    "contract": contracts,
    "external-input": external_input,
    **CONVERSATION_DIAGNOSERS,
}
"""The built-in diagnosers by name (with the tool-calling conversation rules of
`trajdebug.analysis.chat_rules`)."""


__all__ = [
    "BUILTIN_DIAGNOSERS",
    "consumer_rejection",
    "contracts",
    "dropped_value",
    "input_caused",
    "is_check",
    "external_input",
    "llm_output",
    "malformed_output",
    "parse_dropped",
    "retry_divergence",
    "sql_result",
    "starved_consumer",
    "state_write",
    "step_error",
    "tool_arguments",
    "tool_result",
]
