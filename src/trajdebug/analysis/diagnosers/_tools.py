"""Diagnosers of tool calls: their results and their errors (the arguments they were given: `_tool_arguments`).

Each is a plain callable ``(step, ctx) -> Iterable[Evidence]`` (see
`trajdebug.analysis.diagnosers._context`), registered in
`trajdebug.analysis.evidence.BUILTIN_DIAGNOSERS`.  A tool's result is the
outside world's answer: an error says either that the tool (or its
environment) failed or that what it was asked was wrong, and the wording of
the error tells which (a 4xx or "invalid argument" points upstream, at the
arguments; a timeout at the tool).  An empty answer says more about the
question asked than about the tool, so it also implicates the step that asked.

The value checks (`present`, `contradictions`, `upstream_outputs`) and the
error wording (`handled`, which errors blame the input) are shared with the
error diagnosers of `trajdebug.analysis.diagnosers._steps` and the LLM-output one of `trajdebug.analysis.diagnosers._claims`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from trajdebug.analysis import _content as content
from trajdebug.analysis._sql import rerun_query, sql_of
from trajdebug.analysis.diagnosers._conflicts import contradictions, present, upstream_outputs
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._reads import OK, TOOLS, Reads, reading
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.graph import CHILD_KEY
from trajdebug.core.model import Step


# -- error wording ----------------------------------------------------------------


# -- results ------------------------------------------------------------------------


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
        if c.kind in ("tool", "retrieval") and c.status == "ok" and content.is_empty(c.output) and not ctx.cut_short(c):
            yield Evidence(
                step.step_id,
                0.2,
                f"{c.name} returned nothing for what this step gave it",
                "starved-consumer",
            )
            return


def handled(ctx: DiagnoseContext) -> set[str]:
    """Steps whose error a later attempt, a repeated call or another source recovered (`trajdebug.analysis._detect.superseded`,
    `trajdebug.analysis._detect.fallbacks`)."""

    def compute() -> set[str]:
        from trajdebug.analysis._detect import fallbacks, superseded

        ids = {s.retry_of for s in ctx.run.steps if s.retry_of is not None and s.status == "ok"}
        ids |= {e.step_id for e in ctx.run.errors if e.stage in ("recovered", "ignored")}
        return {i for i in ids if i} | superseded(ctx.run) | set(fallbacks(ctx.run))

    found: set[str] = ctx.memo("handled", compute)
    return found


FALLBACK_SUSPICION = 0.45
"""A fallback's answer is suspect as a swallowing wrapper's is: the program chose to go on without the source
it asked first (a cache or a backup may be stale, partial or for something else)."""


def _replaced(ctx: DiagnoseContext) -> dict[str, Step]:
    """Each fallback's id -> the errored call it answered in place of (`trajdebug.analysis._detect.fallbacks`)."""

    def compute() -> dict[str, Step]:
        from trajdebug.analysis._detect import fallbacks

        return {fb.step_id: ctx.step(failed) for failed, fb in fallbacks(ctx.run).items()}

    found: dict[str, Step] = ctx.memo("replaced", compute)
    return found


def swallowing_wrapper(step: Step, ctx: DiagnoseContext) -> Step | None:
    """The step that caught a tool's error and answered as if it had a result, if one did.

    A wrapper around one call (every step inside it is an attempt of that call; not an agent
    or model, which report a tool's error on to the conversation) that ended well, whose last
    attempt failed and whose answer does not carry the error on (a placeholder in place of
    the result): it swallowed the error, and what it answered is its own.
    """
    if step.status != "error" or step.error is None or step.parent_id is None:
        return None
    parent = ctx.graph.steps.get(step.parent_id)
    if parent is None or parent.status != "ok" or parent.kind in ("agent", "llm"):
        return None
    kids = ctx.children(parent.step_id)
    if not kids or kids[-1].step_id != step.step_id or any(k.name != step.name for k in kids):
        return None
    if content.is_empty(parent.output) or step.error.message[:60].lower() in content.text_of(parent.output).lower():
        return None
    return parent


@reading(Reads(statuses=OK))
def swallowed_error(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A wrapper around a tool call that caught the call's error and answered anyway (`swallowing_wrapper`),
    or another source asked in the failed call's place (`trajdebug.analysis._detect.fallbacks`)."""
    if step.kind in ("tool", "retrieval") and step.status == "ok":
        failed = _replaced(ctx).get(step.step_id)
        if failed is not None and failed.error is not None:
            yield Evidence(
                step.step_id,
                FALLBACK_SUSPICION,
                f"answered in place of {failed.name}, whose {failed.error.type} was caught: what went on is this "
                "fallback's answer",
                "swallowed-error",
            )
            return
    kids = ctx.children(step.step_id) if step.status == "ok" else []
    last = kids[-1] if kids else None
    if last is None or last.kind not in ("tool", "retrieval") or last.step_id in handled(ctx):
        return
    if swallowing_wrapper(last, ctx) is step and last.error is not None:
        yield Evidence(
            step.step_id,
            0.45,
            f"caught the {last.error.type} of {last.name} and answered without its result: the error was swallowed",
            "swallowed-error",
        )


@reading(Reads(kinds=TOOLS))
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
        caused = (400 <= code < 500 and code not in (408, 429)) or bool(ctx.lexicon.input_caused.search(text))
    elif step.status == "error" and step.error is not None:
        problem = f"{step.error.type}: {step.error.message}"
        caused = not ctx.lexicon.environment.search(problem)
    elif found := content.error_text(out):
        problem = found
        caused = not ctx.lexicon.environment.search(problem)
    elif (
        content.is_empty(out)
        and step.status == "ok"
        and any(True for _ in ctx.graph.children(step.step_id))
        and not ctx.cut_short(step)
    ):
        # An empty answer says more about the question asked than about the tool.
        yield Evidence(
            step.step_id, 0.15, "returned an empty result that later steps consumed", "tool-result"
        )
        return
    else:
        return
    if step.step_id in handled(ctx):
        # A later attempt (or the same call made again) succeeded: the error
        # was handled, and its (absent) output fed nothing.
        yield Evidence(
            step.step_id,
            0.05,
            f"its error ({problem[:120]}) was handled: recovered by a later attempt, or reported and ignored",
            "tool-result",
        )
        return
    holder = swallowing_wrapper(step, ctx)
    if holder is not None and not caused:
        # The outage is the world's; the step that caught it and answered in its place chose what
        # went on (`swallowed_error`).
        yield Evidence(
            step.step_id,
            0.15,
            f"its error ({problem[:120]}) was caught by {holder.name}, which answered without its result",
            "tool-result",
        )
        return
    if caused and ctx.lexicon.check_text.search(problem[:500]):
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


def environmental(error: str, *, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a tool's error speaks of the tool or its environment (a timeout, a 5xx, a refused
    connection) rather than rejecting what it was given (*English*)."""
    return bool(lexicon.environment.search(error))


_QUERY = re.compile(r"^\s*(select|with)\b", re.I)


@reading(Reads(kinds=frozenset({"tool"}), statuses=OK))
def sql_result(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A SQL tool whose recorded rows differ from re-running its (read-only) query on the run's database.

    Only when the analysis was given the run's SQLite file (``analyze(sql_db=...)``,
    ``trajdebug analyze --sql-db``) and the query is a ``SELECT``; the file is opened read-only and the query is cut off
    after a bounded amount of work.  A database changed since the run also
    shows here, so this ranks, it does not prove.
    """
    if step.kind != "tool" or step.status != "ok":
        return
    db = ctx.sql_db
    stmt = sql_of(step.input)
    if db is None or stmt is None or not _QUERY.match(stmt):
        return
    rows = content.largest_list(step.output)
    if rows is None:
        return
    fresh = rerun_query(db, stmt)
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


__all__ = [
    "contradictions",
    "handled",
    "present",
    "sql_result",
    "starved_consumer",
    "swallowed_error",
    "tool_result",
    "upstream_outputs",
]
