"""Counterfactual replay: verify a root cause by patching a step and re-running what depends on it.

``trajdebug.replay(agent, run, patch={step_id: value})`` re-executes the
agent's entry point; boundary calls (LLM, tool, declared replayable) that the
patch cannot affect are served from the recording, the patched step returns
the patch, and the result says whether the failure is gone and which calls
ran live.  `verify` checks root-cause candidates this way, `isolate` finds the
failure-inducing differences between a passing and a failing run, and `align`
lines two runs up step by step (``trajdebug diff``).
"""

from __future__ import annotations

import sys
import types
from typing import Any

from trajdebug.replay.align import Alignment, Pair, align
from trajdebug.replay.cassette import Cassette, fingerprint, replayable
from trajdebug.replay.dd import DDResult, Isolation, dd, earliest, isolate
from trajdebug.replay.engine import (
    ENTRY_KEY,
    Call,
    Correction,
    Divergence,
    Mode,
    ReplayDivergence,
    ReplayError,
    ReplayResult,
    record,
    replay,
)
from trajdebug.replay.verify import CandidateCheck, Trial, Verification, Verifier, verify, verify_demo


class _CallableModule(types.ModuleType):
    """``trajdebug.replay`` is both this package and the `replay` function.

    ``trajdebug.replay(agent, run, patch=...)`` is the documented call, but once
    the package is imported the attribute ``trajdebug.replay`` is the package
    itself; making the package callable keeps both spellings working.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> ReplayResult:
        return replay(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = [
    "ENTRY_KEY",
    "Alignment",
    "Call",
    "CandidateCheck",
    "Cassette",
    "Correction",
    "DDResult",
    "Divergence",
    "Isolation",
    "Mode",
    "Pair",
    "ReplayDivergence",
    "ReplayError",
    "ReplayResult",
    "Trial",
    "Verification",
    "Verifier",
    "align",
    "dd",
    "earliest",
    "fingerprint",
    "isolate",
    "record",
    "replay",
    "replayable",
    "verify",
    "verify_demo",
]
