"""An optional model on top of the deterministic analysis: expectations, verdicts and explanations.

Off unless configured (`load_config` returns None, and then nothing is sent).
With an OpenAI-compatible endpoint configured, `Judge.judge(analysis)` asks
the model about the deterministic search's shortlist and returns the analysis
re-ranked by the combination rule, every deterministic candidate and its
evidence kept, with a `Judgment` saying which part came from the model.
``trajdebug analyze --judge`` and ``trajdebug.analyze_source(..., judge=...)``
use it; ``docs/analysis.md`` ("Model on top (optional)") has the prompts, the
combination rule and how to point it at OpenAI, vLLM, Ollama, a llama.cpp
server or a LiteLLM proxy.

The model only ever sees redacted content (the recorder's redactor, applied
before and after values are cut); step ids stay out of the prompt.
"""

from __future__ import annotations

from trajdebug.judge.client import ChatClient, ChatModel, Completion, JudgeError
from trajdebug.judge.combine import Judged, Verdict
from trajdebug.judge.config import JudgeConfig, JudgeConfigError, load_config, require_config
from trajdebug.judge.expectation import Outline, OutlineStep
from trajdebug.judge.explain import Explanation
from trajdebug.judge.judgment import (
    Judge,
    Judgment,
    judge_analysis,
    judgment_lines,
    judgment_markdown,
    notice,
    print_judgment,
    totals,
)
from trajdebug.judge.oracle import JudgeOracle
from trajdebug.judge.structured import BudgetExceeded


__all__ = [
    # configuration
    "JudgeConfig",
    "JudgeConfigError",
    "load_config",
    "require_config",
    # the model
    "ChatClient",
    "ChatModel",
    "Completion",
    "JudgeError",
    "BudgetExceeded",
    # judging
    "Judge",
    "Judgment",
    "Judged",
    "Verdict",
    "Outline",
    "OutlineStep",
    "Explanation",
    "judge_analysis",
    "JudgeOracle",
    "totals",
    # reporting
    "judgment_lines",
    "judgment_markdown",
    "notice",
    "print_judgment",
]
