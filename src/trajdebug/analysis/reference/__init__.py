"""References: what an agent's passing runs say about a failing one.

`references` picks the passing runs of the same agent from a source; `learn`
turns them into a `Profile` of likely invariants per step; `violations` reads
a failing step's breaches of them as evidence; `spectrum` scores the failing
run's steps by how rarely passing runs executed them (Ochiai); `Contrast` weighs at nothing a
diagnoser's finding that passing runs show as often.
"""

from __future__ import annotations

from trajdebug.analysis.reference._answers import asked_before, unkeyed
from trajdebug.analysis.reference._contrast import Contrast
from trajdebug.analysis.reference._enclosing import learn
from trajdebug.analysis.reference._invariants import (
    GIVEN,
    MIN_SUPPORT,
    Profile,
    StepKey,
    passing_had,
    returns_empty,
    step_key,
    unseen,
    violations,
)
from trajdebug.analysis.reference._profile import producers_of, spectrum
from trajdebug.analysis.reference._relations import relayed_source
from trajdebug.analysis.reference._select import (
    MAX_REFERENCES,
    first_input_key,
    first_inputs_agree,
    given_input,
    input_key,
    is_original,
    references,
    same_agent,
    same_request,
)
from trajdebug.analysis.reference._siblings import sibling_profiles


__all__ = [
    "GIVEN",
    "Contrast",
    "MAX_REFERENCES",
    "MIN_SUPPORT",
    "Profile",
    "StepKey",
    "asked_before",
    "given_input",
    "first_input_key",
    "first_inputs_agree",
    "input_key",
    "is_original",
    "learn",
    "passing_had",
    "producers_of",
    "returns_empty",
    "references",
    "relayed_source",
    "same_agent",
    "same_request",
    "sibling_profiles",
    "spectrum",
    "step_key",
    "unkeyed",
    "unseen",
    "violations",
]
