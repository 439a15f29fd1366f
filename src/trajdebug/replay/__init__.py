"""Counterfactual replay: verify a root cause by patching a step and re-running what depends on it.

``trajdebug.replay_run(agent, run, patch={step_id: value})`` (`trajdebug.replay.replay`) re-executes the
agent's entry point; boundary calls (LLM, tool, declared replayable) that the
patch cannot affect are served from the recording, the patched step returns
the patch, and the result says whether the failure is gone and which calls
ran live.  `verify` checks root-cause candidates this way, `isolate` finds the
failure-inducing differences between a passing and a failing run, and `align`
lines two runs up step by step (``trajdebug diff``).
"""

from __future__ import annotations

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
from trajdebug.replay.verifier import Trial, Verifier
from trajdebug.replay.verify import CandidateCheck, Verification, verify, verify_analyses


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
    "verify_analyses",
]
