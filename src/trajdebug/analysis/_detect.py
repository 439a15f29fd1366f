"""Failure detectors: where did this run observably go wrong?

A detector is a plain callable ``(run, ctx) -> Iterable[Failure]``.  The
built-in ones look for the failure signs listed in `BUILTIN_DETECTORS`; more
can be registered under the entry-point group ``trajdebug.detectors``.

Content detectors (JSON, SQL, HTTP status, empty result, error text) run on
the run's *final output* and on its *checkpoints*: steps marked
``attributes["checkpoint"]``, steps that declare an expected output
(``attributes["expect"]``), and every tool or retrieval result (an observation
of the outside world, which an agent is supposed to check).  Each `Failure`
says where it fired (``where``).  Detectors report failures (Zeller's
*infection* made visible); finding the defect behind them is the localizer's
job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from trajdebug.analysis import _content as content
from trajdebug.analysis._sql import schema_from_metadata, sql_of, sql_problem
from trajdebug.core.graph import final_step
from trajdebug.core.model import Run, Step
from trajdebug.core.plugins import entry_point_callables


Where = Literal["final", "checkpoint", "step", "pre", "post", "run"]
"""Where a detector fired: the final output, a checkpoint, a step's status, the
step's input (``pre``: a pre-condition, SQL a tool was given) or its output
(``post``), or the run as a whole."""


@dataclass(frozen=True, slots=True)
class Failure:
    """One observed failure."""

    step_id: str
    """The step where the failure shows."""
    detector: str
    """The detector that fired."""
    message: str
    """What was observed, in words."""
    signature: str
    """The failure's kind, used to focus the search: ``json``, ``sql``, ``http``,
    ``empty``, ``error-text``, ``contract``, ``exception:<Type>``, ``run-failure``."""
    where: Where = "step"
    """Where it fired."""

    def to_dict(self) -> dict[str, Any]:
        """The failure as JSON data."""
        return {
            "step_id": self.step_id,
            "detector": self.detector,
            "message": self.message,
            "signature": self.signature,
            "where": self.where,
        }


@dataclass(slots=True)
class DetectContext:
    """What detectors share: the step map, the final step, the checkpoints, the SQL schema."""

    run: Run
    """The run under inspection."""
    sql_schema: str | None = None
    """DDL of the SQLite database the run's SQL targets (also read from run metadata
    ``sql_schema``/``sqlite_schema``)."""
    steps: dict[str, Step] = field(default_factory=dict)
    """The run's steps by id."""
    final: Step | None = None
    """The step producing the run's final output (see `final_step`)."""
    recovered: set[str] = field(default_factory=set)
    """Ids of steps whose error was recovered (a later attempt succeeded, or the lifecycle says so)."""
    _targets: list[tuple[Step, Where]] | None = None
    _consumed: set[str] | None = None

    @classmethod
    def build(cls, run: Run, *, sql_schema: str | None = None) -> DetectContext:
        """Prepare the context of a run."""
        schema = sql_schema or schema_from_metadata(run.metadata)
        steps = run.step_map()
        recovered = {s.retry_of for s in run.steps if s.retry_of is not None and s.status == "ok"}
        for e in run.errors:
            if e.stage in ("recovered", "ignored") and e.step_id in steps:
                recovered.add(e.step_id)
        recovered |= superseded(run)
        recovered |= _inside_recovered(steps, recovered)
        return cls(run, schema, steps, final_step(run), {r for r in recovered if r})

    def targets(self) -> list[tuple[Step, Where]]:
        """The final output step and the checkpoints, each once."""
        if self._targets is None:
            out: list[tuple[Step, Where]] = []
            if self.final is not None:
                out.append((self.final, "final"))
            for s in self.run.steps:
                if s is not self.final and (
                    s.kind in ("tool", "retrieval")
                    or s.attributes.get("checkpoint")
                    or s.attributes.get("expect")
                ):
                    out.append((s, "checkpoint"))
            self._targets = out
        return self._targets

    def consumed(self, step_id: str) -> bool:
        """Whether another step of the run consumed this step's output along a data edge."""
        if self._consumed is None:
            rid = self.run.run_id
            self._consumed = {
                d.step_id
                for s in self.run.steps
                for d in s.deps
                if d.kind == "data" and d.run_id in (None, rid)
            }
        return step_id in self._consumed


def _targets_of(value: Any) -> set[str]:
    """The string arguments of a call that name what it acts on (a test id, a URL, a path)."""
    out: set[str] = set()
    for _, v in content.leaves(value):
        if isinstance(v, str) and 3 <= len(v) <= 200:
            out.add(v)
    return out


def superseded(run: Run) -> set[str]:
    """Errored steps whose operation the agent ran again, in the same scope, and got a clean result.

    An agent that reads a tool's error and calls the tool again (a test re-run
    after a patch, a query re-issued after fixing it) has handled that error:
    it is part of the work, not the failure.  "Again" means a later step of the
    same name under the same parent that acts on one of the same targets (a
    string argument in common, or no string arguments on either side), ended
    ``ok`` and carries no error in its output.  Retries (``retry_of``) are
    handled the same way by the caller.
    """
    scopes = {(s.parent_id, s.name) for s in run.steps if s.status == "error"}
    if not scopes:
        return set()
    by_scope: dict[tuple[str | None, str], list[Step]] = {}
    for s in run.steps:
        if (s.parent_id, s.name) in scopes:
            by_scope.setdefault((s.parent_id, s.name), []).append(s)
    out: set[str] = set()
    for group in by_scope.values():
        if len(group) < 2 or not any(s.status == "error" for s in group):
            continue
        # From the last step back, keeping what the clean steps after this one act on: an error is
        # superseded by a later clean step sharing a target, or, with no targets, by one with none
        # (linear in the group, where pairing every error with every later clean step was quadratic).
        later: set[str] = set()
        later_untargeted = False
        for s in reversed(group):
            if s.status == "error":
                mine = _targets_of(s.input)
                if (not mine.isdisjoint(later)) if mine else later_untargeted:
                    out.add(s.step_id)
            elif s.status == "ok" and content.error_text(s.output) is None:
                theirs = _targets_of(s.input)
                later |= theirs
                later_untargeted = later_untargeted or not theirs
    return out


def fallbacks(run: Run) -> dict[str, Step]:
    """Errored tool calls that another tool answered in place of: the errored step's id -> the fallback.

    A program that catches a tool's error and asks another source for the same
    thing (a cache, a replica, a backup service) has handled the error: the
    fallback's answer is what went on, and the failed call fed nothing.  The
    fallback is the next step in the same scope, a clean tool or retrieval of
    another name acting on one of the same targets (a string argument in common),
    whose answer went on: a later step depends on it or was handed one of its values
    (a logger or a notifier called after the error, whose answer nothing reads, is
    no fallback).  A call that depends on the errored one is no fallback either: it
    was handed the errored call's answer (a tool that warned and returned), so it
    used that call rather than asked in its place.  And it must start after the
    failed call ended: a call started while the other still ran (parallel tool calls
    one model turn asked for together) was made before anyone knew of the error, so
    it answered its own request, not in its place.
    """
    out: dict[str, Step] = {}
    last: dict[str | None, Step] = {}
    for i, s in enumerate(run.steps):
        prev = last.get(s.parent_id)
        last[s.parent_id] = s
        if (
            prev is None
            or prev.status != "error"
            or prev.kind not in ("tool", "retrieval")
            or s.kind not in ("tool", "retrieval")
            or s.status != "ok"
            or s.name == prev.name
            or content.error_text(s.output) is not None
            or any(d.step_id == prev.step_id for d in s.deps)
            or (prev.end_ns is not None and s.start_ns < prev.end_ns)
        ):
            continue
        if not _targets_of(prev.input).isdisjoint(_targets_of(s.input)) and _went_on(s, run.steps[i + 1 : i + 51]):
            out[prev.step_id] = s
    return out


def _went_on(step: Step, later: Sequence[Step]) -> bool:
    """Whether a step's answer went on: one of the next steps records a dependency on it, or was handed one
    of its values (a string of three characters or more, or a number other than 0 and 1)."""
    if any(d.step_id == step.step_id for s in later for d in s.deps):
        return True
    values = {
        str(v)
        for _, v in content.leaves(step.output)
        if (isinstance(v, str) and len(v.strip()) >= 3)
        or (isinstance(v, (int, float)) and not isinstance(v, bool) and v not in (0, 1))
    }
    if not values:
        return False
    return any(v in content.text_of(s.input) for s in later for v in values)


def _inside_recovered(steps: dict[str, Step], recovered: set[str]) -> set[str]:
    """Errored steps whose error rose through errored enclosing steps to one that was recovered.

    A sub-agent that failed because its tool timed out, and that the agent ran
    again to a clean end, redid the tool's work too: the tool's error was handled
    with it, however the re-run's own tool call is parented.
    """
    out: set[str] = set()
    for s in steps.values():
        if s.status != "error" or s.step_id in recovered:
            continue
        p = steps.get(s.parent_id or "")
        seen = 0
        while p is not None and p.status == "error" and seen < 50:
            if p.step_id in recovered:
                out.add(s.step_id)
                break
            p, seen = steps.get(p.parent_id or ""), seen + 1
    return out


class Detector(Protocol):
    """A failure detector: a plain callable."""

    def __call__(self, run: Run, ctx: DetectContext, /) -> Iterable[Failure]: ...


# -- built-in detectors ------------------------------------------------------


def run_failure(run: Run, ctx: DetectContext) -> Iterable[Failure]:
    """The run failed: point at the step whose error ended it, else at the final output."""
    if run.outcome != "failure":
        return
    reason = run.failure_reason or "the run failed"
    step = _failing_step(run, ctx)
    if step is not None:
        yield Failure(step.step_id, "run-failure", reason, "run-failure", "run")


def _failing_step(run: Run, ctx: DetectContext) -> Step | None:
    # The innermost step that raised the error the run ended with.
    for e in reversed(run.errors):
        if e.stage == "failed" and e.step_id in ctx.steps:
            return ctx.steps[e.step_id]
    errored = [s for s in run.steps if s.status == "error" and s.step_id not in ctx.recovered]
    if errored:
        last = errored[-1]
        # Walk into the children that raised the same error.
        while True:
            inner = [c for c in errored if c.parent_id == last.step_id]
            if not inner:
                return last
            last = inner[-1]
    return ctx.final


def step_error(run: Run, ctx: DetectContext) -> Iterable[Failure]:
    """Steps that ended with an error nobody recovered from (reported once, where it occurred)."""
    errored = {s.step_id: s for s in run.steps if s.status == "error" and s.step_id not in ctx.recovered}
    # An error propagating up the hierarchy marks every enclosing step; report
    # the innermost one (where the error occurred).
    outer = {s.parent_id for s in errored.values() if s.parent_id in errored}
    for sid, s in errored.items():
        if sid in outer:
            continue
        etype = s.error.type if s.error else "Error"
        msg = s.error.message if s.error else "step ended with an error"
        yield Failure(sid, "step-error", f"{etype}: {msg}"[:300], f"exception:{etype}", "step")


def contracts(run: Run, ctx: DetectContext) -> Iterable[Failure]:
    """Declared contracts (``trajdebug.check``, pre/post-conditions) that did not hold."""
    for s in run.steps:
        checks = s.attributes.get("checks")
        if not isinstance(checks, list):
            continue
        for c in checks:
            if isinstance(c, Mapping) and c.get("passed") is False:
                when = c.get("when", "checkpoint")
                where: Where = when if when in ("pre", "post") else "checkpoint"
                text = f"check {c.get('name', '?')!s} failed" + (
                    f": {c['message']}" if c.get("message") else ""
                )
                yield Failure(s.step_id, "contract", text, "contract", where)


def json_output(run: Run, ctx: DetectContext) -> Iterable[Failure]:
    """Output that should be JSON and is not (declared ``expect: json``, or JSON-looking text that does not parse)."""
    for s, where in ctx.targets():
        out = s.output
        declared = s.attributes.get("expect") == "json"
        if isinstance(out, str) and (declared or content.looks_like_json(out)):
            problem = content.json_problem(out)
            if problem and not declared and s.kind != "llm" and content.python_repr(out):
                continue  # a program's object printed by repr (an Agents SDK tool's result), not JSON
            if problem:
                yield Failure(s.step_id, "json", f"output is not valid JSON: {problem}", "json", where)
        elif declared and (out is None or not isinstance(out, (dict, list))):
            yield Failure(s.step_id, "json", f"expected JSON output, got {type(out).__name__}", "json", where)


def sql(run: Run, ctx: DetectContext) -> Iterable[Failure]:
    """SQL that does not parse, or fails ``EXPLAIN`` on the run's SQLite schema."""
    for s, where in ctx.targets():
        seen: set[str] = set()
        # A tool's SQL argument is judged where the tool received it ("pre"):
        # the failure is in what it was given, not in what it returned.
        checked: tuple[tuple[Any, Where], ...] = (
            (s.input if s.kind == "tool" else None, "pre"),
            (s.output, where),
        )
        for value, at in checked:
            stmt = sql_of(value)
            if stmt is None or stmt in seen:
                continue
            seen.add(stmt)
            problem = sql_problem(stmt, ctx.sql_schema)
            if problem:
                kind, msg = problem
                what = "does not parse" if kind == "syntax" else "fails EXPLAIN on the schema"
                yield Failure(s.step_id, "sql", f"SQL {what}: {msg}", "sql", at)


def http_error(run: Run, ctx: DetectContext) -> Iterable[Failure]:
    """A tool result with HTTP status 400 or above."""
    for s, where in ctx.targets():
        if s.step_id in ctx.recovered:
            continue
        code = content.http_status(s.output)
        if code is not None and code >= 400:
            yield Failure(s.step_id, "http", f"HTTP status {code}", "http", where)


def empty_result(run: Run, ctx: DetectContext) -> Iterable[Failure]:
    """An empty result where data was expected (a consumed tool/retrieval result, a declared expectation, the final output)."""
    for s, where in ctx.targets():
        if s.status == "error" or not content.is_empty(s.output):
            continue
        expected = s.attributes.get("expect") in ("data", "nonempty", "json") or (
            s.kind in ("tool", "retrieval") and ctx.consumed(s.step_id)
        )
        if where == "final" or expected:
            yield Failure(s.step_id, "empty", "empty result where data was expected", "empty", where)


def error_in_result(run: Run, ctx: DetectContext) -> Iterable[Failure]:
    """Error text in a result: a traceback, ``Error: ...``, a non-zero exit code, an ``error`` field."""
    for s, where in ctx.targets():
        if s.status == "error" or s.step_id in ctx.recovered:
            continue
        if content.http_status(s.output) is not None and (content.http_status(s.output) or 0) >= 400:
            continue  # reported by the HTTP detector
        found = content.error_text(s.output)
        if found:
            yield Failure(s.step_id, "error-text", f"result carries an error: {found}", "error-text", where)


BUILTIN_DETECTORS: dict[str, Detector] = {
    "run-failure": run_failure,
    "step-error": step_error,
    "contract": contracts,
    "json": json_output,
    "sql": sql,
    "http": http_error,
    "empty": empty_result,
    "error-text": error_in_result,
}
"""The built-in detectors by name."""


def registered_detectors() -> dict[str, Detector]:
    """The built-in detectors plus those registered under ``trajdebug.detectors``."""
    found: dict[str, Detector] = dict(BUILTIN_DETECTORS)
    for name, fn in entry_point_callables("trajdebug.detectors"):
        found.setdefault(name, fn)
    return found


def detect(
    run: Run,
    detectors: Mapping[str, Detector] | Sequence[Detector] | None = None,
    *,
    sql_schema: str | None = None,
) -> list[Failure]:
    """Run the detectors on a run.

    Args:
        run: The run.
        detectors: The detectors to run (None: the built-in and registered ones).
        sql_schema: DDL of the SQLite database the run's SQL targets.

    Returns:
        The failures, deduplicated, in step order.
    """
    ctx = DetectContext.build(run, sql_schema=sql_schema)
    if detectors is None:
        chosen: Iterable[Detector] = registered_detectors().values()
    elif isinstance(detectors, Mapping):
        chosen = detectors.values()
    else:
        chosen = detectors
    seen: set[tuple[str, str, str]] = set()
    out: list[Failure] = []
    for det in chosen:
        for f in det(run, ctx):
            k = (f.step_id, f.detector, f.message)
            if k not in seen and f.step_id in ctx.steps:
                seen.add(k)
                out.append(f)
    # An empty lookup consumed later is a failure only when nothing else failed: beside an
    # error it is an observation (a new user with no memory, a search with no hits), which
    # the diagnosers still weigh; one the step declared (``expect=``) or the run's final
    # output stays a failure.
    # An empty final output beside a step that raised is the raise's consequence (the run
    # stopped before it answered), not a second failure.
    raised = any(f.detector == "step-error" for f in out)
    if any(f.detector not in ("empty", "run-failure") for f in out):
        out = [
            f
            for f in out
            if f.detector != "empty"
            or (f.where == "final" and not raised)
            or ctx.steps[f.step_id].attributes.get("expect")
        ]
    # The run's failure shown where a step already failed says nothing new.
    flagged = {f.step_id for f in out if f.detector != "run-failure"}
    out = [f for f in out if f.detector != "run-failure" or f.step_id not in flagged]
    if len(out) > 1:
        wanted = {f.step_id for f in out}
        pos = {s.step_id: i for i, s in enumerate(run.steps) if s.step_id in wanted}
        out.sort(key=lambda f: pos[f.step_id])
    return out


__all__ = [
    "BUILTIN_DETECTORS",
    "DetectContext",
    "Detector",
    "Failure",
    "Where",
    "detect",
    "final_step",
    "registered_detectors",
]
