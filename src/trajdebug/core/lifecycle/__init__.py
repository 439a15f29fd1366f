"""The error lifecycle: each error from occurrence through propagation to recovery or failure.

One state machine (`machine`: the stages, their transitions, an error counted once) that
the recorder drives while the agent runs and the analysis replays afterwards;
`analyze_errors(run)` follows every error event of a run with hindsight: its final stage,
the errors it caused, the steps its effects reached (blast radius), silently propagated
errors, severities, and the critical chains with the rules that fired (`severity`).

It sits in the core, below both the recorder and the analysis, so that the recorder's live
hooks (`trajdebug.on_critical`) and log records (`trajdebug.record.errorlog`) judge a run by
the same rules as ``trajdebug errors`` without the recorder importing the analysis.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:
    from trajdebug.core.lifecycle.analyze import MAX_BLAST, analyze_errors
    from trajdebug.core.lifecycle.forest import ANALYSIS_PREFIX
    from trajdebug.core.lifecycle.machine import TERMINAL, Folded, advance, fold, is_open
    from trajdebug.core.lifecycle.report import ErrorChain, ErrorLifecycle, ErrorReport
    from trajdebug.core.lifecycle.severity import LINK_KINDS, RULE_BY_NAME, RULES, ErrorFacts, Rule, RuleHit

_WHERE = {
    **dict.fromkeys(("MAX_BLAST", "analyze_errors"), "analyze"),
    "ANALYSIS_PREFIX": "forest",
    **dict.fromkeys(("TERMINAL", "Folded", "advance", "fold", "is_open"), "machine"),
    **dict.fromkeys(("ErrorChain", "ErrorLifecycle", "ErrorReport"), "report"),
    **dict.fromkeys(("LINK_KINDS", "RULE_BY_NAME", "RULES", "ErrorFacts", "Rule", "RuleHit"), "severity"),
}
"""Public name -> its submodule, imported on first use: the recorder imports `machine` alone at start-up
(``import trajdebug``), and importing a submodule runs this file first."""


def __getattr__(name: str) -> Any:
    sub = _WHERE.get(name)
    if sub is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{sub}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ANALYSIS_PREFIX",
    "LINK_KINDS",
    "MAX_BLAST",
    "RULES",
    "RULE_BY_NAME",
    "TERMINAL",
    "ErrorChain",
    "ErrorFacts",
    "ErrorLifecycle",
    "ErrorReport",
    "Folded",
    "Rule",
    "RuleHit",
    "advance",
    "analyze_errors",
    "fold",
    "is_open",
]
