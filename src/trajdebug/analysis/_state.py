"""The one typed state the analysis stages pass along (`trajdebug.analysis._pipeline.STAGES`).

The analysis used to keep four versions of one run and two graphs in local
variables of one long function; here each has a field whose name says which
it is.  A stage is a function ``stage(state) -> state`` that fills some fields
and returns a new state (`dataclasses.replace`): a processor chain in the
style of structlog's, where inserting a stage is one more element of a tuple.

The runs, in the order the stages make them:

- ``recorded``: the run as given, with its declared outcome (``declare_outcome``);
- ``annotated``: ``recorded`` with the dependencies content inference found
  (thinned), then the edges from the failures to the values they name;
- ``searched``: ``annotated`` joined with its earlier conversation turns and the
  lineage's value edges: the run the ranking searches (``origin`` maps its
  step ids back to the turn they came from);
- ``own``: the analyzed run as reported (`Analysis.run`): ``annotated``, with
  the value edges when there were no earlier turns (then it is ``searched``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from trajdebug.analysis._detect import Detector, Failure
from trajdebug.analysis._localize import Localization
from trajdebug.analysis._ranking import Ranking
from trajdebug.analysis.diagnosers._context import Diagnoser, Evidence
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.analysis.lineage import Lineage
from trajdebug.analysis.reference import Profile
from trajdebug.core.graph import DependencyGraph
from trajdebug.core.model import Outcome, Run


@dataclass(frozen=True, slots=True)
class Options:
    """What the caller of `trajdebug.analysis.analyze` asked for (read by the stages, never changed)."""

    top: int = 5
    """How many root-cause candidates to keep."""
    outcome: Outcome | None = None
    """The run's outcome when the source did not record one."""
    detectors: Mapping[str, Detector] | Sequence[Detector] | None = None
    """Failure detectors (None: built-in and registered)."""
    diagnosers: Mapping[str, Diagnoser] | Sequence[Diagnoser] | None = None
    """Step diagnosers (None: built-in and registered)."""
    weights: Mapping[str, float] | None = None
    """Ranking weight overrides."""
    sql_schema: str | None = None
    """DDL of the SQLite database the run's SQL targets."""
    sql_db: str | Path | None = None
    """The SQLite file the run's SQL targets."""
    infer: bool = True
    """Infer data dependencies (and value edges) from content."""
    lexicon: Lexicon = ENGLISH
    """The words and phrases of the language the analysis reads (`trajdebug.analysis.lexicon`)."""
    model: Any = None
    """The learned ranker (`trajdebug.analysis.learned`): None (the hand ranking alone), ``"default"``
    (the shipped model), a path or a `trajdebug.analysis.learned.Model`."""


@dataclass(frozen=True, slots=True)
class AnalysisState:
    """Everything one analysis knows so far; each stage returns a new one with more fields filled."""

    recorded: Run
    """The run as given (with its declared outcome once ``declare_outcome`` ran)."""
    options: Options = field(default_factory=Options)
    """The caller's options."""
    previous: tuple[Run, ...] = ()
    """Earlier conversation turns, oldest first."""
    references: tuple[Run, ...] = ()
    """Passing runs of the same agent (the analyzed run itself left out)."""
    started: float = 0.0
    """`time.perf_counter` when the analysis began."""
    annotated: Run | None = None
    """``recorded`` with inferred edges (thinned) and the failures' named-value edges."""
    inferred: bool = False
    """Whether content inference added dependencies."""
    failures: tuple[Failure, ...] = ()
    """The failures found (after the references explained some away)."""
    seeds: tuple[Failure, ...] = ()
    """The failures the search starts from (a successful run: only those that contradict its success)."""
    profile: Profile | None = None
    """Likely invariants learned from ``references`` (None without references)."""
    searched: Run | None = None
    """``annotated`` joined with its earlier turns and value edges: the run the ranking searches."""
    origin: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """Step ids of ``searched`` that came from an earlier turn -> (that run's id, the step's own id)."""
    own: Run | None = None
    """The analyzed run as reported (``annotated``, with value edges when there were no earlier turns)."""
    lineage: Lineage | None = None
    """The value lineage of ``searched``."""
    graph: DependencyGraph | None = None
    """The dependency graph of ``searched``."""
    own_graph: DependencyGraph | None = None
    """The dependency graph of ``own`` (``graph`` itself when they are one run)."""
    error_report: Any = None
    """The error-lifecycle report, when the run has errors."""
    origins: tuple[Evidence, ...] = ()
    """Evidence from the error lifecycle: where the chains that failed the run began."""
    ranking: Ranking | None = None
    """The slice and the evidence sources' findings, collected for ``rank`` (the combination's own memo)."""
    localization: Localization | None = None
    """The ranked candidates (ids of ``searched`` until ``map_home``, then of their own runs)."""
    verdict: str | None = None
    """The learned ranker's verdict on its best candidate (``learned_rank``; None without a model)."""
    verdict_thresholds: tuple[float, float] | None = None
    """Where that verdict turns ``likely`` and ``confident`` for this run (`Analysis.verdict_thresholds`)."""
    extras: Mapping[str, Any] = field(default_factory=dict)
    """Room for stages added by a caller (a learned re-ranking, an oracle search) to leave what they found."""

    @property
    def run(self) -> Run:
        """The most annotated version of the analyzed run so far (``own``, else ``annotated``, else ``recorded``)."""
        return self.own or self.annotated or self.recorded



_T = TypeVar("_T")


def need(value: _T | None, name: str) -> _T:
    """A field an earlier stage must have filled (a clear error when a stage was left out or moved)."""
    if value is None:
        raise RuntimeError(f"analysis stage order: {name} is not set yet")
    return value


Stage = Callable[[AnalysisState], AnalysisState]
"""One step of the analysis: a state in, a new state out (never mutated in place)."""


__all__ = ["AnalysisState", "Options", "Stage", "need"]
