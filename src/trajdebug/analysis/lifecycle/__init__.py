"""The error lifecycle: each error from occurrence through propagation to recovery or failure.

`analyze_errors(run)` follows every error event of a run: its final stage, the
errors it caused, the steps its effects reached (blast radius), silently
propagated errors, severities, and the critical chains with the rules that
fired (`trajdebug.analysis.lifecycle._severity`).
"""

from __future__ import annotations

from trajdebug.analysis.lifecycle._analyze import ANALYSIS_PREFIX, MAX_BLAST, TERMINAL, analyze_errors
from trajdebug.analysis.lifecycle._report import ErrorChain, ErrorLifecycle, ErrorReport
from trajdebug.analysis.lifecycle._severity import LINK_KINDS, RULE_BY_NAME, RULES, ErrorFacts, Rule, RuleHit


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
    "Rule",
    "RuleHit",
    "analyze_errors",
]
