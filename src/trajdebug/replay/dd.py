"""Difference isolation between a passing and a failing run (delta debugging).

Two searches, both with real replays as the test:

* `dd`: Zeller & Hildebrandt's isolation algorithm ("Simplifying and isolating
  failure-inducing input", TSE 2002).  A configuration is the set of the
  failing run's step differences *kept*; the others are transplanted from the
  passing run.  dd narrows a passing and a failing configuration towards each
  other until their difference is 1-minimal: the failure-inducing differences.
* `earliest`: along a dependency chain ``a1 -> ... -> ak -> failure`` with one
  defect ``aj``, "correcting ``ai`` fixes the run" is false before ``j`` and true
  from it on (the defect re-infects), so the earliest fixing step, the cause
  transition, is found by binary search in O(log k) replays (Cleve & Zeller,
  ICSE 2005).

`isolate` runs both on two recorded runs of the same agent.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from trajdebug.core.model import Run
from trajdebug.replay.align import Alignment, align
from trajdebug.replay.cassette import STATE_VALUES_ATTR
from trajdebug.replay.engine import Correction, Mode
from trajdebug.replay.verifier import Verifier, backward_slice


T = TypeVar("T", bound=Hashable)

Outcome = Literal["pass", "fail", "unresolved"]
"""A test's outcome: ✔, ✘, or ? (Zeller's three outcomes)."""


@dataclass(frozen=True, slots=True)
class DDResult(Generic[T]):
    """What dd isolated."""

    failure_inducing: tuple[T, ...]
    """The 1-minimal failure-inducing difference (``c'✘ - c'✔``), in the deltas' order."""
    passing: frozenset[T]
    """The largest passing configuration found (``c'✔``)."""
    failing: frozenset[T]
    """The smallest failing configuration found (``c'✘``)."""
    tests: int
    """Distinct configurations tested."""


def _split(items: Sequence[T], n: int) -> list[list[T]]:
    k, extra = divmod(len(items), n)
    out: list[list[T]] = []
    start = 0
    for i in range(n):
        size = k + (1 if i < extra else 0)
        if size:
            out.append(list(items[start : start + size]))
        start += size
    return out


def dd(deltas: Sequence[T], test: Callable[[frozenset[T]], Outcome]) -> DDResult[T]:
    """Isolate the failure-inducing subset of ``deltas`` (Zeller's dd).

    Args:
        deltas: The differences; the empty configuration must pass and the full one fail.
        test: ``test(configuration)``: ``pass``, ``fail`` or ``unresolved`` (treated as
            neither, as in the paper).

    Returns:
        The isolated difference and the two configurations around it.
    """
    order = {d: i for i, d in enumerate(deltas)}
    memo: dict[frozenset[T], Outcome] = {}

    def run_test(c: frozenset[T]) -> Outcome:
        if c not in memo:
            memo[c] = test(c)
        return memo[c]

    c_pass: frozenset[T] = frozenset()
    c_fail: frozenset[T] = frozenset(deltas)
    memo[c_pass] = "pass"
    memo[c_fail] = "fail"
    n = 2
    while True:
        delta = sorted(c_fail - c_pass, key=order.__getitem__)
        if len(delta) <= 1:
            break
        n = min(n, len(delta))
        subsets = [frozenset(s) for s in _split(delta, n)]
        moved = False
        # The four cases of dd2, tried in the paper's order.
        for d in subsets:
            if run_test(c_pass | d) == "fail":
                c_fail, n, moved = c_pass | d, 2, True
                break
        if not moved:
            for d in subsets:
                if run_test(c_fail - d) == "pass":
                    c_pass, n, moved = c_fail - d, 2, True
                    break
        if not moved:
            for d in subsets:
                if run_test(c_pass | d) == "pass":
                    c_pass, n, moved = c_pass | d, max(n - 1, 2), True
                    break
        if not moved:
            for d in subsets:
                if run_test(c_fail - d) == "fail":
                    c_fail, n, moved = c_fail - d, max(n - 1, 2), True
                    break
        if not moved:
            if n >= len(delta):
                break
            n = min(2 * n, len(delta))
    tested = len(memo) - 2
    return DDResult(tuple(sorted(c_fail - c_pass, key=order.__getitem__)), c_pass, c_fail, tested)


@dataclass(frozen=True, slots=True)
class Earliest:
    """The result of the binary search along a chain."""

    index: int | None
    """Index of the earliest element whose correction flips the outcome (None: none does)."""
    tests: int
    """Tests run."""


def earliest(chain: Sequence[Any], flips: Callable[[Any], bool], *, known_last: bool = False) -> Earliest:
    """Binary search for the earliest element of a monotone chain that flips the outcome.

    Args:
        chain: The chain, root first.
        flips: ``flips(element)``: True when correcting it fixes the run.
        known_last: The caller already knows the last element flips.
    """
    if not chain:
        return Earliest(None, 0)
    tests = 0
    if not known_last:
        tests += 1
        if not flips(chain[-1]):
            return Earliest(None, tests)
    lo, hi = 0, len(chain) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        tests += 1
        if flips(chain[mid]):
            hi = mid
        else:
            lo = mid + 1
    return Earliest(lo, tests)


# -- isolation between two recorded runs ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Isolation:
    """The failure-inducing differences between a passing and a failing run."""

    alignment: Alignment
    """The two runs aligned."""
    deltas: tuple[str, ...]
    """The failing run's differing steps dd worked on (origins of differences)."""
    failure_inducing: tuple[str, ...]
    """The minimal set of those differences that makes the run fail (dd)."""
    chain: tuple[str, ...] = ()
    """The differing steps on the failure's backward slice, in execution order."""
    earliest: str | None = None
    """The earliest step on the chain whose correction flips the outcome (the cause transition)."""
    replays: int = 0
    """Replays run."""
    problem: str | None = None
    """Why isolation could not run, or None."""
    tests: int = field(default=0)
    """Configurations dd tested."""

    def to_dict(self) -> dict[str, Any]:
        """The isolation as JSON data."""
        return {
            "good": self.alignment.good.run_id,
            "bad": self.alignment.bad.run_id,
            "deltas": list(self.deltas),
            "failure_inducing": list(self.failure_inducing),
            "chain": list(self.chain),
            "earliest": self.earliest,
            "replays": self.replays,
            "tests": self.tests,
            "problem": self.problem,
        }


def _failure_step(run: Run) -> str | None:
    for s in reversed(run.steps):
        if s.status == "error" and not any(c.parent_id == s.step_id for c in run.steps):
            return s.step_id
    return run.steps[-1].step_id if run.steps else None


def _corrections(al: Any, good: Run) -> dict[str, Correction]:
    """The passing run's output (and state) for every differing step it finished: what a test transplants."""
    corrections: dict[str, Correction] = {}
    for p in al.differences:
        if p.good is not None and p.bad is not None and p.good.status == "ok" and not p.enclosing:
            g = p.good
            origin = f"{good.run_id}/{g.step_id}"
            corrections[p.bad.step_id] = Correction(
                g.output, g.attributes.get(STATE_VALUES_ATTR), "passing-run", origin
            )
    return corrections


def isolate(
    agent: Callable[..., Any],
    good: Run,
    bad: Run,
    *,
    mode: Mode = "recorded",
    samples: int = 1,
    store: Any = None,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    oracle: Callable[[Run], bool] | None = None,
    max_replays: int = 60,
) -> Isolation:
    """Isolate the failure-inducing step differences of a failing run against a passing one.

    A test replays the failing run with the passing run's outputs transplanted
    into the differences left out of the configuration; the passing run's
    recorded calls are served too, so most tests need no live call.

    Args:
        agent: The entry point of both runs.
        good: The passing run.
        bad: The failing run.
        mode: The replay mode.
        samples: Replays per test when live calls make it nondeterministic.
        store: Where to save the replayed runs (None: memory only).
        args: The entry point's positional arguments (default: recorded in ``bad``).
        kwargs: Its keyword arguments (default: recorded).
        oracle: ``oracle(run) -> True`` when a run passes.
        max_replays: Replay budget.
    """
    al = align(good, bad)
    corrections = _corrections(al, good)
    origins = [p.bad.step_id for p in al.origins if p.bad is not None and p.bad.step_id in corrections]
    deltas = origins or list(corrections)
    v = Verifier(
        agent,
        bad,
        corrections=corrections,
        passing=[good],
        samples=samples,
        mode=mode,
        store=store,
        args=args,
        kwargs=kwargs,
        oracle=oracle,
        max_replays=max_replays,
    )
    pos = {s.step_id: i for i, s in enumerate(bad.steps)}
    failing_step = _failure_step(bad)
    back = backward_slice(bad, failing_step) if failing_step else set()
    chain = tuple(sorted((sid for sid in corrections if sid in back), key=pos.__getitem__))
    if not deltas:
        return Isolation(
            al, (), (), chain, None, 0, "the runs do not differ in any step the replay can correct"
        )

    def test(kept: frozenset[str]) -> Outcome:
        return v.trial([d for d in deltas if d not in kept]).outcome

    if test(frozenset()) != "pass":
        return Isolation(
            al,
            tuple(deltas),
            (),
            chain,
            None,
            v.replays,
            "transplanting every difference from the passing run does not remove the failure",
        )
    result = dd(deltas, test)
    found = earliest(list(chain), v.flips) if chain else Earliest(None, 0)
    first = chain[found.index] if found.index is not None else None
    return Isolation(al, tuple(deltas), result.failure_inducing, chain, first, v.replays, None, result.tests)


__all__ = ["DDResult", "Earliest", "Isolation", "Outcome", "dd", "earliest", "isolate"]
