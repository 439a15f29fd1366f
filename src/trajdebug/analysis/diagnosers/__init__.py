"""Diagnosers: per-step rules that say whether a step's output looks wrong, and why.

A diagnoser is a plain callable ``(step, ctx) -> Iterable[Evidence]`` (the
`Diagnoser` protocol); `BUILTIN_DIAGNOSERS` names the built-in ones and
`registered_diagnosers` adds those registered under the entry-point group
``trajdebug.diagnosers``.  The modules behind this package group the rules by
concern: steps in general, tool calls, value flow, observations, decisions,
tool-calling conversations.

Each built-in rule declares the steps it can fire on (`Reads`, set with
``@reading(Reads(...))``: kinds, statuses, a retry, a step attribute, and what its
run must hold), and a step is shown only the rules whose declaration admits it
(`trajdebug.analysis.diagnosers._reads.DiagnoserIndex`).  A plugin rule may
declare the same way; one that declares nothing is shown every step.
"""

from __future__ import annotations

from trajdebug.analysis.diagnosers._chat_rules import CONVERSATION_DIAGNOSERS
from trajdebug.analysis.diagnosers._claims import llm_output
from trajdebug.analysis.diagnosers._context import (
    _WORD as WORD,
)
from trajdebug.analysis.diagnosers._context import (
    FAULTY_THRESHOLD,
    DiagnoseContext,
    Diagnoser,
    Evidence,
    Verdict,
    fold,
)
from trajdebug.analysis.diagnosers._dataflow import (
    parse_dropped,
    retry_divergence,
    state_write,
)
from trajdebug.analysis.diagnosers._decisions import (
    decision,
    delegated_result,
    lost_update,
    option_choice,
    repeated_option,
)
from trajdebug.analysis.diagnosers._field_values import request_kind, shared_answer, unlisted_value
from trajdebug.analysis.diagnosers._misfiled import misfiled_write
from trajdebug.analysis.diagnosers._observations import (
    cached_answer,
    environment_read,
    format_sibling,
    stale_retry,
    stale_sibling,
    truncated_output,
)
from trajdebug.analysis.diagnosers._partial import request_partial, series_gap
from trajdebug.analysis.diagnosers._reads import Reads, reading
from trajdebug.analysis.diagnosers._requests import REQUEST_DIAGNOSERS
from trajdebug.analysis.diagnosers._state_values import state_values
from trajdebug.analysis.diagnosers._steps import (
    contracts,
    external_input,
    input_caused,
    is_check,
    malformed_output,
    step_error,
)
from trajdebug.analysis.diagnosers._tool_arguments import ignored_argument, tool_arguments
from trajdebug.analysis.diagnosers._tools import (
    environmental,
    sql_result,
    starved_consumer,
    swallowed_error,
    tool_result,
)
from trajdebug.core.model import Run, Step
from trajdebug.core.plugins import entry_point_callables


BUILTIN_DIAGNOSERS: dict[str, Diagnoser] = {
    "step-error": step_error,
    "starved-consumer": starved_consumer,
    "tool-result": tool_result,
    "swallowed-error": swallowed_error,
    "sql-result": sql_result,
    "tool-arguments": tool_arguments,
    "ignored-argument": ignored_argument,
    "malformed-output": malformed_output,
    "llm-output": llm_output,
    "parse-dropped": parse_dropped,
    "state-write": state_write,
    "retry-divergence": retry_divergence,
    "state-values": state_values,
    "truncated-output": truncated_output,
    "stale-retry": stale_retry,
    "stale-sibling": stale_sibling,
    "format-sibling": format_sibling,
    "stale-cache": cached_answer,
    "environment": environment_read,
    **REQUEST_DIAGNOSERS,
    "request-partial": request_partial,
    "series-gap": series_gap,
    "request-kind": request_kind,
    "unlisted-value": unlisted_value,
    "shared-answer": shared_answer,
    "decision": decision,
    "option-choice": option_choice,
    "repeated-option": repeated_option,
    "race": lost_update,
    "misfiled-write": misfiled_write,
    "sub-agent": delegated_result,
    "contract": contracts,
    "external-input": external_input,
    **CONVERSATION_DIAGNOSERS,
}
"""The built-in diagnosers by name."""


def registered_diagnosers() -> dict[str, Diagnoser]:
    """The built-in diagnosers plus those registered under ``trajdebug.diagnosers``."""
    found: dict[str, Diagnoser] = dict(BUILTIN_DIAGNOSERS)
    for name, fn in entry_point_callables("trajdebug.diagnosers"):
        found.setdefault(name, fn)
    return found


def diagnose(
    run: Run,
    step_ids: list[str] | None = None,
    *,
    diagnosers: dict[str, Diagnoser] | list[Diagnoser] | None = None,
) -> dict[str, Verdict]:
    """Diagnose some steps of a run (all when ``step_ids`` is None)."""
    ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers() if diagnosers is None else diagnosers)
    ids = list(step_ids) if step_ids is not None else [s.step_id for s in run.steps]
    return {sid: ctx.verdict(sid) for sid in ids}


__all__ = [
    "BUILTIN_DIAGNOSERS",
    "FAULTY_THRESHOLD",
    "WORD",
    "DiagnoseContext",
    "Diagnoser",
    "Evidence",
    "Reads",
    "Step",
    "Verdict",
    "diagnose",
    "environmental",
    "fold",
    "input_caused",
    "is_check",
    "reading",
    "registered_diagnosers",
]
