"""Evidence about steps, and how a step's evidence folds into one verdict.

Every signal of the analysis speaks the same language: a diagnoser's rule, a
value's lineage, a deviation from the agent's passing runs, the error
lifecycle.  Each is an `Evidence` with a suspicion contribution in [0, 1], a
reason a person can check, and the name of the signal that found it; `fold`
combines a step's evidence into a `Verdict`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


FAULTY_THRESHOLD = 0.3
"""Local suspicion at or above which a step is diagnosed faulty."""

SOUND_DAMPING = 0.7
"""The factor applied to a step's suspicion when all of its other evidence is sound (see `fold`)."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """One diagnoser finding about one step."""

    step_id: str
    """The step the finding is about."""
    suspicion: float
    """Contribution to the step's suspicion, in [0, 1] (for sound evidence: what suspicion remains)."""
    reason: str
    """Why, in words a person can check."""
    diagnoser: str
    """The diagnoser that found it."""
    sound: bool = False
    """True when the finding says an aspect of the step checked out."""
    correction: Any = None
    """A suggested corrected output, when the diagnoser can tell (replay uses it to verify candidates)."""
    values: tuple[str, ...] = ()
    """The values the finding is about, as written (the ones a model call stated that none of its inputs
    holds): what the contrast with passing runs compares (`trajdebug.analysis.reference.Contrast`)."""
    given: bool = False
    """True when every value the finding is about came in with the step's input (the step was given it):
    the step keeps only the inherited share of the finding unless its input came from no deviating step."""
    own: bool = False
    """True when the finding is about a step's own code, every step inside it cleared: never moved onto the
    model call inside it that wrote its answer (`trajdebug.analysis._ranking`)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """A step's evidence folded into one call."""

    step_id: str
    """The step."""
    suspicion: float
    """Local suspicion in [0, 1]."""
    faulty: bool
    """True when the suspicion reaches `FAULTY_THRESHOLD`."""
    evidence: tuple[Evidence, ...]
    """The evidence, strongest first."""

    @property
    def reasons(self) -> tuple[str, ...]:
        """The reasons of the suspicious evidence, strongest first."""
        return tuple(e.reason for e in self.evidence if not e.sound)

    @property
    def correction(self) -> Any:
        """The strongest suggested correction, if any."""
        return next((e.correction for e in self.evidence if e.correction is not None), None)


def fold(step_id: str, evidence: Iterable[Evidence], threshold: float = FAULTY_THRESHOLD) -> Verdict:
    """Fold evidence about one step into a verdict.

    The suspicious contributions combine by noisy-OR; sound evidence multiplies
    the result by ``1 - (1 - SOUND_DAMPING) * share``, ``share`` being the
    fraction of the evidence that is sound (all sound: `SOUND_DAMPING`).
    """
    ev = sorted(evidence, key=lambda e: (e.sound, -e.suspicion))
    keep = 1.0
    n_sound = n_faulty = 0
    for e in ev:
        if e.sound:
            n_sound += 1
        else:
            n_faulty += 1
            keep *= 1.0 - min(max(e.suspicion, 0.0), 1.0)
    susp = 1.0 - keep
    if n_sound:
        # Aspects that checked out temper, in proportion, the ones that did not.
        susp *= 1.0 - (1.0 - SOUND_DAMPING) * n_sound / (n_sound + n_faulty)
    return Verdict(step_id, susp, susp >= threshold, tuple(ev))


SIGNAL_FAMILIES: dict[str, str] = {
    "lineage:dropped": "omission",
    "lineage:dropped-column": "omission",
    "reference:expected": "omission",
    "reference:presence": "omission",
    "parse-dropped": "omission",
    "lineage:short": "omission",
    "starved-consumer": "omission",
    "lineage:altered": "wrong-value",
    "lineage:contradicted": "wrong-value",
    "lineage:emptied": "wrong-value",
    "lineage:whatif": "wrong-value",
    "reference:magnitude": "wrong-value",
    "reference:sign": "wrong-value",
    "reference:zero": "wrong-value",
    "reference:ratio": "wrong-value",
    "reference:formula": "wrong-value",
    "reference:size": "wrong-value",
    "lineage:conflict": "inconsistent",
    "lineage:crossed": "inconsistent",
    "lineage:wrong-record": "inconsistent",
    "lineage:admitted": "inconsistent",
    "request-code": "inconsistent",
    "request-flag": "inconsistent",
    "request-record": "inconsistent",
    "request-count": "wrong-value",
    "request-more": "omission",
    "request-partial": "omission",
    "series-gap": "omission",
    "request-misaligned": "inconsistent",
    "request-sum": "wrong-value",
    "request-variant": "inconsistent",
    "request-series": "inconsistent",
    "request-kind": "inconsistent",
    "unlisted-value": "inconsistent",
    "lineage:disagrees": "inconsistent",
    "reference:kept": "inconsistent",
    "reference:grounded": "inconsistent",
    "reference:source": "inconsistent",
    "reference:category": "inconsistent",
    "reference:new-field": "inconsistent",
    "llm-output": "inconsistent",
    "tool-arguments": "inconsistent",
    "state-values": "inconsistent",
    "state-write": "inconsistent",
    "misfiled-write": "inconsistent",
    "reference:same-input": "changed-answer",
    "reference:old-answer": "changed-answer",
    "stale-retry": "changed-answer",
    "stale-sibling": "changed-answer",
    "format-sibling": "malformed",
    "stale-cache": "changed-answer",
    "environment": "changed-answer",
    "retry-divergence": "changed-answer",
    "reference:unseen": "unusual-path",
    "decision": "unusual-path",
    "option-choice": "inconsistent",
    "step-error": "error",
    "swallowed-error": "error",
    "unfilled-handle": "error",
    "shared-answer": "inconsistent",
    "ignored-argument": "inconsistent",
    "repeated-option": "inconsistent",
    "tool-result": "error",
    "error-lifecycle": "error",
    "malformed-output": "malformed",
    "sql-result": "malformed",
    "contract": "malformed",
    "lineage:origin": "origin",
}
"""The family of each built-in signal: what kind of wrong it says a step did, coarser than the rule that saw it.

Two rules may see one fault (a value a step was given and did not pass on, or a
value the agent's passing runs show this step produces): grouping by family lets
failures with one cause group together (`trajdebug.fleet`)."""


def family(signal: str) -> str:
    """The family of a signal (`SIGNAL_FAMILIES`): ``failure:*`` and ``sibling:*`` map like their kin."""
    if signal.startswith("failure:"):
        return "error"
    if signal.startswith("sibling:"):
        signal = "reference:" + signal.split(":", 1)[1]
    return SIGNAL_FAMILIES.get(signal, signal.split(":", 1)[0])


def strongest(evidence: Iterable[Evidence]) -> list[Evidence]:
    """One piece of evidence per signal: the strongest, a little stronger for each further finding (at most +0.1).

    Many values traced to one step say one thing many times: counting each would
    let a step that handled many values outrank one that damaged a single one.
    """
    best: dict[tuple[str, bool], Evidence] = {}
    count: dict[tuple[str, bool], int] = {}
    for e in evidence:
        k = (e.diagnoser, e.sound)
        count[k] = count.get(k, 0) + 1
        if k not in best or e.suspicion > best[k].suspicion:
            best[k] = e
    out = []
    for k, e in best.items():
        n = count[k]
        if n > 1 and not e.sound and e.suspicion > 0:
            e = Evidence(
                e.step_id,
                min(1.0, e.suspicion + min(0.1, 0.03 * (n - 1))),
                e.reason,
                e.diagnoser,
                e.sound,
                e.correction,
                own=e.own,
            )
        out.append(e)
    return out


__all__ = ["FAULTY_THRESHOLD", "SIGNAL_FAMILIES", "SOUND_DAMPING", "Evidence", "Verdict", "family", "fold", "strongest"]
