"""The one trajectory model.

Every source of runs converges here: the recorder writes it, the JSONL reader
and the SQLite store load it, the importers (OTLP, message logs, transcripts)
convert into it, and every analysis and reporter reads it.  Nothing in this
module imports anything beyond the standard library.

The types are small frozen dataclasses with slots.  They hold plain JSON-able
values (``str``, numbers, ``None``, lists and dicts) in ``input``, ``output``,
``metadata`` and ``attributes``; a value the recorder could not serialize is
stored as a marker dict (see `TRUNCATED_KEY` and `REPR_KEY`).  Steps and runs
are compared by value; hash them by ``step_id`` / ``run_id``, since their
mapping fields are not hashable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args


StepKind = Literal[
    "llm",
    "tool",
    "parse",
    "condition",
    "retrieval",
    "state",
    "agent",
    "input",
    "output",
    "other",
]
"""What a step does.  ``agent`` steps enclose other steps (agents, sub-agents, loops)."""

StepStatus = Literal["ok", "error"]
"""Whether the step finished normally."""

Outcome = Literal["success", "failure", "incomplete"]
"""A run's outcome; ``incomplete`` when its end was never recorded (crash, still running)."""

DepKind = Literal["data", "control", "state", "env", "context"]
"""What flows along a dependency: a value, a decision, shared state, the
environment, or context carried over from an earlier run (conversation turn)."""

DepOrigin = Literal["tracked", "declared", "inferred"]
"""How a dependency was obtained: seen by value identity at run time, written
by the user (``deps=``, ``traced``), or inferred from content after the fact."""

Stage = Literal["occurred", "propagated", "recovered", "ignored", "failed"]
"""An error's lifecycle stage."""

Severity = Literal["WARN", "ERROR", "CRITICAL"]
"""An error's severity, assigned by the lifecycle analysis."""

ScoreSource = Literal["human", "code", "llm"]
"""Where a score came from: a person, a program (a check, an evaluator), a model (an LLM judge)."""

ScoreValue = float | int | str | bool
"""A score's value: a number, a category (a string) or a boolean."""

STEP_KINDS: tuple[str, ...] = get_args(StepKind)
BOUNDARY_KINDS: frozenset[str] = frozenset({"llm", "tool", "retrieval"})
"""Kinds of step that cross the agent's boundary (a model or the outside world): nondeterministic, recorded for replay."""
OBSERVATION_KINDS: frozenset[str] = frozenset({"tool", "retrieval"})
"""Kinds of step whose output is an observation of the outside world rather than something the agent computed."""
CONTAINER_KINDS: frozenset[str] = frozenset({"agent"})
"""Kinds of step that enclose other steps (agents, sub-agents, loops)."""
VALUE_DEP_KINDS: frozenset[DepKind] = frozenset({"data", "state"})
"""Dependency kinds along which a value flows (as opposed to a decision, the environment or context)."""
DEP_KINDS: tuple[str, ...] = get_args(DepKind)
DEP_ORIGINS: tuple[str, ...] = get_args(DepOrigin)
OUTCOMES: tuple[str, ...] = get_args(Outcome)
STAGES: tuple[str, ...] = get_args(Stage)
SCORE_SOURCES: tuple[str, ...] = get_args(ScoreSource)

TRUNCATED_KEY = "__trajdebug_truncated__"
"""Marker key of a value stored truncated: ``{TRUNCATED_KEY: original_size, "head": "..."}``."""

REPR_KEY = "__trajdebug_repr__"
"""Marker key of a value that was not JSON-serializable: ``{REPR_KEY: "repr(...)", "type": "..."}``."""

REDACTED = "__REDACTED__"
"""Placeholder of a redacted secret (the OpenInference convention)."""


@dataclass(frozen=True, slots=True)
class Dependency:
    """An edge from an earlier step into the step that holds it."""

    step_id: str
    """The upstream step whose output (or decision, or write) was consumed."""
    kind: DepKind = "data"
    """What flowed along the edge."""
    origin: DepOrigin = "declared"
    """How the edge was obtained."""
    confidence: float = 1.0
    """Belief in the edge, in [0, 1]; 1 for tracked and declared edges."""
    key: str | None = None
    """The argument name or state key through which the value flowed, if known."""
    run_id: str | None = None
    """The run of the upstream step when it is not this run (``context`` edges)."""


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """The error a step ended with (or reported without raising)."""

    type: str
    """The exception class name, or a short error kind for reported errors."""
    message: str
    """The error message."""
    error_id: str | None = None
    """The error event this step's error belongs to (the same id along a propagation path)."""
    traceback: str | None = None
    """A formatted traceback, when one was captured."""


@dataclass(frozen=True, slots=True)
class StageChange:
    """One transition in an error's lifecycle."""

    stage: Stage
    """The stage entered."""
    step_id: str | None
    """The step where the transition happened (the enclosing step for ``propagated``)."""
    time_ns: int
    """When it happened, in nanoseconds since the epoch."""
    reason: str | None = None
    """Why, in words (the retry policy, the fallback used, the run's failure)."""


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """One error, counted once, with its lifecycle."""

    error_id: str
    """Globally unique id of the error."""
    step_id: str
    """The step where it occurred."""
    type: str
    """The exception class name or reported error kind."""
    message: str
    """The error message."""
    parent_error_id: str | None = None
    """The error that caused this one (``raise ... from``, raised while handling)."""
    stages: tuple[StageChange, ...] = ()
    """The lifecycle so far, oldest first; the first entry is ``occurred``."""
    attempt: int = 1
    """The attempt number of the step it occurred in."""
    attributes: Mapping[str, Any] = field(default_factory=dict)
    """Free attributes (``reported: true`` for errors reported without raising, tool payload flags)."""

    @property
    def stage(self) -> Stage:
        """The current (last) stage."""
        return self.stages[-1].stage if self.stages else "occurred"


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a trajectory: an LLM call, a tool call, a parse, a state write, an agent."""

    step_id: str
    """Unique within the run (an OpenTelemetry-style 16-hex-digit id when recorded)."""
    name: str
    """The step's name, usually the function name or the tool's name."""
    kind: StepKind = "other"
    """What the step does."""
    parent_id: str | None = None
    """The enclosing step (agent, sub-agent, loop), or None at the top."""
    agent: str | None = None
    """The agent that executed the step, when the run has several."""
    input: Any = None
    """The step's inputs; for a function, its arguments bound to parameter names."""
    output: Any = None
    """The step's output (the return value)."""
    status: StepStatus = "ok"
    """``error`` when the step raised or reported an error."""
    error: ErrorInfo | None = None
    """The error, when ``status`` is ``error``."""
    start_ns: int = 0
    """Start time in nanoseconds since the epoch."""
    end_ns: int | None = None
    """End time in nanoseconds since the epoch; None when the step never finished."""
    attempt: int = 1
    """1 for a first try; n for the n-th attempt of a retried operation."""
    retry_of: str | None = None
    """The step this attempt retries (the previous attempt)."""
    deps: tuple[Dependency, ...] = ()
    """Upstream steps this step consumed."""
    attributes: Mapping[str, Any] = field(default_factory=dict)
    """Free attributes: model name, tool call id, state reads and writes, contracts."""
    source_index: int | None = None
    """Position of the record in the source it was imported from (0-based), if any."""

    @property
    def duration_ns(self) -> int | None:
        """The step's duration, or None when it never finished."""
        return None if self.end_ns is None else self.end_ns - self.start_ns


@dataclass(frozen=True, slots=True)
class Answer:
    """An oracle's answer about one step: is its output right, what the run needed there?

    The guided search (`trajdebug.analysis.GuidedSearch`) asks these questions
    (Shapiro's algorithmic debugging); answers are data, kept with the run.
    """

    step_id: str
    """The step asked about."""
    correct: bool | None
    """True: the output is right (what the run needed there); False: wrong (also when the step only
    passed on a wrong value it was given: `admissible` says which); None: don't know."""
    by: str
    """Who answered: ``person``, ``check:<name>``, ``model:<model>``, ``reference:<run_id>``,
    ``oracle:<module:function>`` (trust in that order: person first, model last)."""
    at_ns: int = 0
    """When, in nanoseconds since the epoch (0: unknown)."""
    reason: str | None = None
    """Why, in words (a model's reason, a check's message)."""
    run_id: str | None = None
    """The run of the step when it is an earlier run (a conversation turn)."""
    withdrawn: bool = False
    """True on the record that takes back this answerer's earlier answer about the step
    (``trajdebug answers forget``); readers then keep no answer of theirs for it."""
    admissible: bool | None = None
    """Of a wrong answer, whether the inputs the step was given were right (Naish's three-valued answers,
    *A Declarative Debugging Scheme*, 1997): True, *erroneous*: wrong for the inputs it was given, its own
    fault (or, for a step that encloses others, one of theirs); False, *inadmissible*: it was given a wrong
    input, so its root lies strictly upstream; None: not said (a two-valued answer).  Only a wrong answer
    carries it (readers drop it from any other)."""
    asked: str | None = None
    """What the guided search asked it as, when it asked it: ``question``; ``recheck`` (a step asked again);
    ``audit:<step id>`` (a question testing the proof of that step against inputs the recording may have
    missed, `trajdebug.analysis.GuidedSearch`); ``group`` (`ASKED_GROUP`: not an answer about the step but a
    question about a group of like steps led by it, answered "not all right" or "don't know", so a resumed
    search asks what the live one asked next).  None: not said (volunteered, or stored without it), read as a
    question.  Stored with the answer, so a search resumed over stored answers takes each as it was asked
    whatever answers were taken back before it."""


ASKED_GROUP = "group"
"""`Answer.asked` of the record of a question about a group of like steps answered "not all right, or not
sure" (`trajdebug.analysis.GuidedSearch.group`): it judges no step, and readers keep it apart from the person's
answer about the step that leads the group (`trajdebug.core.schema.latest_answers`)."""


@dataclass(frozen=True, slots=True)
class Score:
    """A judgement put on a run or on one of its steps after the fact or while it ran: a named number,
    category or boolean (Langfuse's scores, LangSmith's feedback, Phoenix's annotations).

    More than a verdict (`trajdebug.mark`) or a root-cause label: a run or step holds any number of scores,
    under several names and from several authors, and a score is never merged into another (two scores of one
    name are two judgements, both kept).  The analysis does not read them.
    """

    name: str
    """What is judged (``helpfulness``, ``correct``, ``tone``)."""
    value: ScoreValue
    """A number, a category (a non-empty string) or a boolean."""
    source: ScoreSource = "human"
    """Where it came from: ``human``, ``code`` (a check, an evaluator) or ``llm`` (a model as judge)."""
    by: str | None = None
    """Who gave it: a person, a check's name, a model (None: not said)."""
    comment: str | None = None
    """Why, in words (redacted like every free text when redaction is on)."""
    step_id: str | None = None
    """The step judged; None: the whole run."""
    at_ns: int = 0
    """When, in nanoseconds since the epoch (0: unknown)."""


@dataclass(frozen=True, slots=True)
class Run:
    """One agent run (one trace): its steps in start order and its errors."""

    run_id: str
    """The run's id (a 32-hex-digit trace id when recorded)."""
    name: str
    """The run's name."""
    start_ns: int = 0
    """Start time in nanoseconds since the epoch."""
    end_ns: int | None = None
    """End time; None when the run never finished."""
    outcome: Outcome = "incomplete"
    """How the run ended."""
    failure_reason: str | None = None
    """Why the run failed, when it did."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Task, agent, version, environment snapshot, injected fault (demo and benchmarks)."""
    steps: tuple[Step, ...] = ()
    """The steps, ordered by start time."""
    errors: tuple[ErrorEvent, ...] = ()
    """The error events, ordered by occurrence."""
    continues: str | None = None
    """The run this one continues (the earlier turn of a conversation), if any."""
    answers: tuple[Answer, ...] = ()
    """Answers about its steps' outputs (a person, a check, a model, a passing run), oldest first."""
    scores: tuple[Score, ...] = ()
    """Scores put on the run and its steps (`Score`), oldest first, every one kept."""

    def step(self, step_id: str) -> Step:
        """Return the step with this id.

        Raises:
            KeyError: no step has that id.
        """
        for s in self.steps:
            if s.step_id == step_id:
                return s
        raise KeyError(f"run {self.run_id} has no step {step_id!r}")

    def step_map(self) -> dict[str, Step]:
        """Map step ids to steps (built on each call: keep it if you need it twice)."""
        return {s.step_id: s for s in self.steps}

    def error(self, error_id: str) -> ErrorEvent:
        """Return the error event with this id.

        Raises:
            KeyError: no error has that id.
        """
        for e in self.errors:
            if e.error_id == error_id:
                return e
        raise KeyError(f"run {self.run_id} has no error {error_id!r}")

    def children(self, step_id: str | None) -> Iterator[Step]:
        """Yield the steps whose parent is ``step_id`` (None: the top-level steps)."""
        return (s for s in self.steps if s.parent_id == step_id)

    @property
    def duration_ns(self) -> int | None:
        """The run's duration, or None when it never finished."""
        return None if self.end_ns is None else self.end_ns - self.start_ns


def replace(obj: Any, /, **changes: Any) -> Any:
    """Return a copy of a model object with some fields changed (`dataclasses.replace`)."""
    return dataclasses.replace(obj, **changes)


__all__ = [
    "ASKED_GROUP",
    "BOUNDARY_KINDS",
    "CONTAINER_KINDS",
    "DEP_KINDS",
    "DEP_ORIGINS",
    "OBSERVATION_KINDS",
    "OUTCOMES",
    "REDACTED",
    "REPR_KEY",
    "SCORE_SOURCES",
    "STAGES",
    "STEP_KINDS",
    "TRUNCATED_KEY",
    "VALUE_DEP_KINDS",
    "Answer",
    "DepKind",
    "DepOrigin",
    "Dependency",
    "ErrorEvent",
    "ErrorInfo",
    "Outcome",
    "Run",
    "Score",
    "ScoreSource",
    "ScoreValue",
    "Severity",
    "Stage",
    "StageChange",
    "Step",
    "StepKind",
    "StepStatus",
    "replace",
]
