"""Instrumentation health: what the recorded data says about how an agent is instrumented.

`lint(runs)` reads recorded runs (no re-execution) and returns one `Finding`
per problem, each with the step, what is wrong and a one-line fix:

| code | what it finds |
|---|---|
| ``swallowed-exception`` | an exception left a step and nothing recorded its handling: no retry recovered it, no ``fallback()`` ignored it, it did not fail the run |
| ``broken-chain`` | an error names a cause, a step or a propagation step that is not in the run, or propagates through a step that does not enclose it |
| ``open-stage`` | a step that never finished in a run that ended; a run that never ended |
| ``missing-dependency`` | a step with no recorded dependency whose input content says data flowed from an earlier step (content inference found it at `INFERRED_CONFIDENCE` or more); a step a framework or importer recorded gets that route's advice, not ``deps=`` (`ROUTE_EDGES`) |
| ``lost-context`` | a step whose parent is not in the run (a sub-agent joined with a parent nobody recorded); a run recorded separately inside a step of another run with no children (a sub-agent that did not join the trace) |
| ``outside-run`` | steps that ran in threads outside the run's context (``context_lost``) or finished after the run (``after_run_end``) |
| ``no-timeout`` | tool steps trajdebug's recorder wrote without a ``timeout`` (not a framework's tool: `FRAMEWORK_ROUTES`; not a tool whose every call ended within 1 ms: `IN_PROCESS_NS`) |
| ``body-state`` | a step read a ``run.state`` key last written in the run's body, outside every step: no edge joins it to where the value came from |

``trajdebug lint SOURCE`` prints them (``--json`` for machines) and exits 1
when it found anything to fix, for CI: a finding the user cannot act on (a dependency a framework's route
cannot record) is ``info`` and leaves the exit code 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from trajdebug.core.lifecycle.machine import TERMINAL
from trajdebug.core.model import Dependency, Run, Step
from trajdebug.core.shortids import shortener
from trajdebug.record.registry import MIN_TRACKED_STR


CODES: dict[str, str] = {
    "swallowed-exception": "an exception was caught and nothing recorded how it was handled",
    "broken-chain": "an error chain points at errors or steps that are not there",
    "open-stage": "a step or a run was left open",
    "missing-dependency": "a step's input came from an earlier step, but no dependency was recorded",
    "lost-context": "a sub-agent lost the trace context",
    "outside-run": "a step ran outside the run's context",
    "no-timeout": "a tool step has no timeout",
    "body-state": "a step read run.state written outside every step, so no edge joins it to the value's source",
}
"""Every finding code and what it means."""

INFERRED_CONFIDENCE = 0.8
"""An edge content inference (`trajdebug.analysis.infer_dependencies`) finds at least this confident counts as
content saying data flowed.  Lower floors were measured on 311 passing runs of the development suites (rev52w,
fix52x): 0.65 added 75 warnings, 11 naming as the producer a step that merely echoed a value of the task, and
0.7 added 50, 13 whose value is the task's (8: ``sales_history`` "holds output of" ``read_stock`` for the task's
SKU); a CI job fails on each.  A short field handed on (about 0.7) is left unreported."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One instrumentation problem."""

    code: str
    """One of `CODES`."""
    run_id: str
    """The run."""
    step_id: str | None
    """The step it is about (None: the run as a whole)."""
    step_name: str | None
    """That step's name."""
    message: str
    """What is wrong, in one line."""
    fix: str
    """How to fix it, in one line."""
    actionable: bool = True
    """False for a finding the user has nothing to do about (a dependency a framework's route cannot record:
    the analysis infers it): reported as ``info``, it never fails the exit code (issue 23, nu23: a CI job
    failed on four of them, each saying there was nothing to declare)."""

    @property
    def severity(self) -> str:
        """``warning`` (something to fix: `trajdebug lint` exits 1) or ``info`` (nothing to fix)."""
        return "warning" if self.actionable else "info"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "code": self.code,
            "run_id": self.run_id,
            "step_id": self.step_id,
            "step": self.step_name,
            "message": self.message,
            "fix": self.fix,
            "severity": self.severity,
        }


def lint(runs: Sequence[Run], *, infer: bool = True) -> list[Finding]:
    """Every instrumentation finding of the runs, run by run, in step order.

    Args:
        runs: Recorded runs (one source: overlapping runs are compared for lost sub-agents).
        infer: Run content inference for ``missing-dependency`` (the costly check).
    """
    out: list[Finding] = []
    for run in runs:
        out.extend(_run_findings(run, infer))
    if infer:
        out.extend(_same_step_elsewhere(runs, out))
    out.extend(_separate_subagents(runs))
    order = {r.run_id: i for i, r in enumerate(runs)}
    pos = {(r.run_id, s.step_id): i for r in runs for i, s in enumerate(r.steps)}
    out.sort(key=lambda f: (order.get(f.run_id, 0), pos.get((f.run_id, f.step_id or ""), -1)))
    return out


def _run_findings(run: Run, infer: bool) -> Iterable[Finding]:
    steps = run.step_map()
    yield from _swallowed(run, steps)
    yield from _broken_chains(run, steps)
    yield from _open(run)
    if infer:
        yield from _missing_dependencies(run)
    yield from _lost_parents(run, steps)
    yield from _outside(run)
    yield from _no_timeouts(run)
    yield from _body_state(run)


def _f(code: str, run: Run, step: Step | None, message: str, fix: str) -> Finding:
    return Finding(code, run.run_id, step.step_id if step else None, step.name if step else None, message, fix)


def _swallowed(run: Run, steps: dict[str, Step]) -> Iterable[Finding]:
    if run.outcome == "incomplete":
        return
    retried = {s.retry_of for s in run.steps if s.retry_of is not None}
    for e in run.errors:
        if e.attributes.get("reported") or e.attributes.get("handled"):
            continue  # reported on purpose (s.error, an error payload), or handled with fallback()
        if e.step_id in retried:
            continue  # handled by a retry: the later attempt carries it on
        recorded = [c for c in e.stages if not (c.reason or "").startswith("analysis: ")]
        if any(c.stage in TERMINAL for c in recorded):
            continue
        if any((c.reason or "") == "left the sub-agent" for c in recorded):
            continue  # the calling process decides
        last = next((c.step_id for c in reversed(recorded) if c.step_id), e.step_id)
        step = steps.get(last) or steps.get(e.step_id)
        yield _f(
            "swallowed-exception",
            run,
            step,
            f"{e.type} from step {e.step_id} was caught and its handling was not recorded",
            "where it is caught, call s.fallback(value, reason) on the step (or re-raise it)",
        )


def _encloses(steps: dict[str, Step], outer: str, inner: str) -> bool:
    cur: str | None = inner
    for _ in range(10_000):
        if cur is None:
            return False
        if cur == outer:
            return True
        s = steps.get(cur)
        cur = s.parent_id if s is not None else None
    return False


def _broken_chains(run: Run, steps: dict[str, Step]) -> Iterable[Finding]:
    ids = {e.error_id for e in run.errors}
    for e in run.errors:
        here = steps.get(e.step_id)
        if e.parent_error_id is not None and e.parent_error_id not in ids:
            yield _f(
                "broken-chain",
                run,
                here,
                f"error {e.error_id} names a cause {e.parent_error_id} that was not recorded in this run",
                "record the cause inside the run (raise ... from it in a recorded step)",
            )
        if here is None:
            yield _f(
                "broken-chain",
                run,
                None,
                f"error {e.error_id} occurred in step {e.step_id}, which is not in the run",
                "report errors from inside a recorded step (s.error(...) on its handle)",
            )
            continue
        for c in e.stages:
            if c.stage != "propagated" or c.step_id is None or (c.reason or "").startswith("analysis: "):
                continue
            if c.step_id not in steps:
                yield _f(
                    "broken-chain",
                    run,
                    here,
                    f"error {e.error_id} propagated to step {c.step_id}, which is not in the run",
                    "join sub-agents with trajdebug.extract(headers) so the calling step is in the run",
                )
            elif not _encloses(steps, c.step_id, e.step_id) and (c.reason or "") != "left the sub-agent":
                yield _f(
                    "broken-chain",
                    run,
                    steps[c.step_id],
                    f"error {e.error_id} propagated through step {c.step_id}, which does not enclose step {e.step_id}",
                    "do not re-raise a saved exception object from another step; raise a new one from it",
                )


def _open(run: Run) -> Iterable[Finding]:
    if run.outcome == "incomplete":
        yield _f(
            "open-stage",
            run,
            None,
            "the run never ended (no end record): the process died, or the run was never closed",
            "record the run in a with-block (or call run.close()) so that it ends",
        )
        return
    for s in run.steps:
        if s.end_ns is None:
            yield _f(
                "open-stage",
                run,
                s,
                f"step {s.name} started but never finished before the run ended",
                "end the step before its run (leave its with-block; join the thread that runs it)",
            )


def _same_step_elsewhere(runs: Sequence[Run], found: Sequence[Finding]) -> Iterable[Finding]:
    """``missing-dependency`` in the other runs of a step it was found for: the same code lacks the
    dependency in every run, while content inference is sure of it only where the values happen to
    be distinctive, so there any inferred edge is enough (a count of 1 run when 5 lack it misleads)."""
    flagged = {f.step_name for f in found if f.code == "missing-dependency" and f.step_name is not None}
    if not flagged:
        return
    for run in runs:
        have = {f.step_name for f in found if f.code == "missing-dependency" and f.run_id == run.run_id}
        want = flagged - have
        if want and any(s.name in want for s in run.steps):
            yield from _missing_dependencies(run, only=frozenset(want), floor=0.0)


def _missing_dependencies(
    run: Run, only: frozenset[str] | None = None, floor: float = INFERRED_CONFIDENCE
) -> Iterable[Finding]:
    """Steps with no recorded dependency whose input holds upstream output (inferred at ``floor`` or more);
    ``only``: just the steps of these names."""
    from trajdebug.analysis import infer_dependencies

    steps = run.step_map()
    candidates = [
        s
        for s in run.steps
        if not s.deps and s.kind not in ("input", "agent") and s.input not in (None, {}, "", [])
        and (only is None or s.name in only)
    ]
    if not candidates:
        return
    # Plain content inference, not the analysis's thinned edges: thinning keeps the nearest producer of a
    # value, so a weak nearer match would hide a strong farther one (rev52w H1: crm-01's lookup_customer, 0.95,
    # behind price_renewal, 0.51), and lint would drop a real missing dependency.
    inferred = infer_dependencies(run).step_map()
    for s in candidates:
        got = inferred.get(s.step_id)
        if got is None:
            continue
        edges = [
            d
            for d in got.deps
            if d.origin == "inferred" and d.kind == "data" and d.confidence >= floor and d.run_id is None
        ]
        if edges:
            ids = sorted({d.step_id for d in edges})
            sources = [steps[i] for i in ids if i in steps]
            src = ", ".join(f"{steps[i].name} (#{i[-6:]})" if i in steps else i for i in ids[:3])
            route = _route(run, s)
            relays = _relays(run, sources, s) if route is None else []
            fix = (
                "pass the upstream step's returned object itself, or an object it holds at most three levels down "
                "(not a copy or a formatted string; docs/recording.md, \"Dependencies\"), or declare deps=[...]"
            )
            if route is not None:  # a framework's or an importer's step: deps= does not apply to it
                fix = _route_fix(route)
            elif _untracked(s, edges):
                # Passing it on as it is records nothing either: the recorder tracks no such value by identity.
                fix = (
                    f"what it was given ({', '.join(sorted({str(d.key) for d in edges}))}) is a number or a string "
                    f"under {MIN_TRACKED_STR} characters, which the recorder does not track by identity: declare "
                    f"the dependency (deps=[...] or s.uses(...) in {s.name})"
                )
            elif relays:
                # Passing the returned object would not help: a step that returns its own argument
                # makes nothing new, so identity tracking credits the object to the step that made it.
                names = ", ".join(sorted({u.name for u in relays}))
                fix = (
                    f"{names} returns its own argument, so passing on what it returned credits the step that made it: "
                    f"declare the dependency on {names} (deps=[...] or s.uses(...) in {s.name})"
                )
            found = _f(
                "missing-dependency",
                run,
                s,
                f"step {s.name} has no recorded dependency, but its input holds output of {src}",
                fix,
            )
            # A span link records an OTLP edge; a framework's or another importer's step can declare none.
            yield found if route in (None, "otlp") else replace(found, actionable=False)


def _untracked(step: Step, edges: Sequence[Dependency]) -> bool:
    """Whether every input value the inferred edges name (their ``key``) is one the recorder does not track by
    identity (a number, a string shorter than `MIN_TRACKED_STR`): passing the producer's object on would not
    record the edge (nu25: a 19-character description)."""
    given = step.input if isinstance(step.input, dict) else {}
    values = [given[k] for k in (str(d.key).split(".", 1)[0] for d in edges if d.key) if k in given]
    return bool(values) and all(
        isinstance(v, (int, float)) or (isinstance(v, str) and len(v) < MIN_TRACKED_STR) for v in values
    )


ROUTE_EDGES = {
    "langchain": "the LangChain tracer records piping, tool-call ids, and LangGraph state keys a model, tool or "
    "retriever call in a node was handed whole, not what plain Python read",
    "openai-agents": "the Agents SDK's trace records model -> tool -> model by tool call and handoffs",
    "otlp": "an imported span's dependencies are its span links",
}
"""What a recording route other than trajdebug's own SDK records as dependencies (docs/importers.md): a
``missing-dependency`` on a step it recorded gets this instead of ``deps=[...]``, which such a step (a LangGraph
node, a function tool, a foreign span) cannot declare."""


def _route(run: Run, step: Step) -> str | None:
    """The route that recorded ``step`` when it is not trajdebug's SDK: a framework (`FRAMEWORK_ROUTES`, told by
    the step's own attribute, so an SDK step merged into a framework's run, or a framework's step merged into an
    SDK run, is each told apart) or an imported format (the run's ``source_format``); None for trajdebug's SDK."""
    for name, attr in FRAMEWORK_ROUTES.items():
        if attr in step.attributes:
            return name
    fmt = run.metadata.get("source_format")
    return str(fmt) if fmt else None


def _route_fix(route: str) -> str:
    """The advice for a ``missing-dependency`` on a step a framework or an importer recorded (no ``deps=``)."""
    records = ROUTE_EDGES.get(route, f"the {route} import records only the edges its source states")
    if route == "otlp":
        # A span's links are written by whoever makes the spans, so the edge can be declared: a finding to fix
        # (it fails the exit code), whose advice must not say there is nothing to declare (nu24, F6).
        return (
            f"add a span link from this span to the producing span ({records}; docs/importers.md); until then "
            "the analysis infers this edge from content"
        )
    return f"nothing to declare on this route: the analysis infers this edge from content ({records}; docs/importers.md)"


def _returns_its_argument(step: Step) -> bool:
    """Whether a step returned one of its arguments, the very object (a pass-through such as a validator).

    Equal content is no evidence: a step that builds new dicts and a new list from its argument
    (``{l["sku"]: dict(l) for l in lines}`` then ``list(d.values())``) returns an equal value that
    is its own.  Identity is seen only when recording (the recorder marks such a step); a run
    recorded without the mark gets no such claim."""
    return step.attributes.get("returned_argument") is True


def _relays(run: Run, sources: Sequence[Step], step: Step) -> list[Step]:
    """Steps between a source and ``step`` that returned their own argument holding the source's output
    (or the sources themselves when they did): the steps ``step`` may really depend on."""
    out = [u for u in sources if _returns_its_argument(u)]
    for u in sources:
        if u.output is None:
            continue
        out += [
            p
            for p in run.steps
            if u.start_ns <= p.start_ns <= step.start_ns and p is not u and p is not step
            and p.output == u.output and _returns_its_argument(p)
        ]
    return out


def _lost_parents(run: Run, steps: dict[str, Step]) -> Iterable[Finding]:
    for s in run.steps:
        if s.parent_id is not None and s.parent_id not in steps:
            yield _f(
                "lost-context",
                run,
                s,
                f"step {s.name} names a parent {s.parent_id} that is not in the run",
                "record the calling step too, and pass trajdebug.inject() from inside it to the sub-agent",
            )


def _outside(run: Run) -> Iterable[Finding]:
    lost = [s for s in run.steps if s.attributes.get("context_lost")]
    late = [s for s in run.steps if s.attributes.get("after_run_end")]
    if lost:
        yield _f(
            "outside-run",
            run,
            lost[0],
            f"{len(lost)} step(s) ran in threads without the run's context (first: {lost[0].name})",
            "submit work with trajdebug.ContextThreadPoolExecutor or wrap callables with trajdebug.wrap",
        )
    if late:
        yield _f(
            "outside-run",
            run,
            late[0],
            f"{len(late)} step(s) finished after the run had ended (first: {late[0].name})",
            "join the threads and tasks a run starts before leaving its block",
        )


FRAMEWORK_ROUTES = {"openai-agents": "agents.span_type", "langchain": "langchain.run_type"}
"""The recording routes through a framework (a run's ``source_format``) and the attribute their steps carry.  A
tool such a route records is the framework's (an Agents SDK ``@function_tool``, a LangChain tool): its bound is
set in the framework, which the trace does not record, so ``no-timeout`` neither finds it missing nor advises
``@trajdebug.step(timeout=...)``, which does not apply to it (docs/production.md, "trajdebug lint")."""


def _framework_tool(run: Run, step: Step) -> bool:
    """Whether a tool step was recorded through a framework's route (`FRAMEWORK_ROUTES`), not trajdebug's recorder."""
    return run.metadata.get("source_format") in FRAMEWORK_ROUTES or any(
        attr in step.attributes for attr in FRAMEWORK_ROUTES.values()
    )


IN_PROCESS_NS = 1_000_000
"""A tool whose every recorded call ended within this (1 ms) waited on nothing a timeout bounds: a lookup in the
process's memory (a dict, a table loaded at start) that lint does not ask to bound.  A call over a network,
even to this machine, takes longer."""


def _in_process(calls: Sequence[Step]) -> bool:
    """Whether every call of a tool ended, each within `IN_PROCESS_NS` of its start."""
    return all(s.end_ns is not None and s.end_ns - s.start_ns < IN_PROCESS_NS for s in calls)


def _no_timeouts(run: Run) -> Iterable[Finding]:
    by_name: dict[str, list[Step]] = defaultdict(list)
    for s in run.steps:
        if s.kind == "tool" and s.attributes.get("timeout") is None and not _framework_tool(run, s):
            by_name[s.name].append(s)
    for name, found in by_name.items():
        if _in_process(found):
            continue
        fix = _timeout_fix(_route(run, found[0]), name)
        if fix is None:
            continue
        yield _f("no-timeout", run, found[0], f"tool step {name} has no timeout ({len(found)} call{'s' * (len(found) != 1)})", fix)


def _timeout_fix(route: str | None, name: str) -> str | None:
    """How to declare a tool's bound on the route that recorded it; None where the source has no way to say it
    (a message log, a transcript: nothing to ask for)."""
    if route is None:
        return f"declare one: @trajdebug.step(kind=\"tool\", timeout=SECONDS) on {name}"
    if route == "otlp":
        # An imported span has no trajdebug decorator; its attributes become the step's (docs/importers.md).
        return f"bound the call in your code and say so on its span: the span attribute timeout=SECONDS on {name}"
    return None


def _body_state(run: Run) -> Iterable[Finding]:
    """Steps that read ``run.state`` keys last written in the run's body (the recorder marks them): the write
    had no step to be the writer, so the reader depends on nothing for that value."""
    for s in run.steps:
        keys = s.attributes.get("state_body_reads")
        if not keys or not isinstance(keys, list):
            continue
        shown = ", ".join(repr(str(k)) for k in keys[:3]) + (f" (+{len(keys) - 3})" if len(keys) > 3 else "")
        yield _f(
            "body-state",
            run,
            s,
            f"step {s.name} read run.state {shown}, written in the run's body outside every step: no dependency records where it came from",
            "write run.state inside the step that computes the value (or pass the value to the reading step as its input)",
        )


def _separate_subagents(runs: Sequence[Run]) -> Iterable[Finding]:
    """A run recorded entirely inside a childless agent or tool step of another run: a sub-agent that did
    not join the caller's trace."""
    callers: list[tuple[Run, Step]] = []
    for run in runs:
        parents = {s.parent_id for s in run.steps if s.parent_id is not None}
        for s in run.steps:
            if s.kind in ("agent", "tool") and s.step_id not in parents and s.end_ns is not None:
                callers.append((run, s))
    if not callers:
        return
    short = shortener(r.run_id for r in runs)
    for sub in runs:
        if sub.end_ns is None or sub.continues is not None:
            continue
        for run, s in callers:
            if run.run_id != sub.run_id and s.start_ns <= sub.start_ns and sub.end_ns <= (s.end_ns or 0):
                yield _f(
                    "lost-context",
                    run,
                    s,
                    f"run {short(sub.run_id)} ({sub.name}) was recorded separately while step {s.name} ran, which has no sub-steps",
                    "pass trajdebug.inject() from the calling step and join with trajdebug.extract(headers) in the sub-agent",
                )
                break


@dataclass(frozen=True, slots=True)
class FindingGroup:
    """The findings of one problem across runs: the same code, step and fix."""

    code: str
    """One of `CODES`."""
    step_name: str | None
    """The step's name (None: runs as a whole)."""
    fix: str
    """The fix, in one line."""
    findings: tuple[Finding, ...]
    """Every finding of the group, in lint order."""

    @property
    def runs(self) -> int:
        """Distinct runs the problem shows in."""
        return len({f.run_id for f in self.findings})

    @property
    def severity(self) -> str:
        """``warning`` when any of its findings asks for a fix, else ``info`` (`Finding.severity`): not the
        first finding's alone (round 50 review)."""
        return "warning" if failing(self.findings) else "info"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (the first finding as the example)."""
        first = self.findings[0]
        return {
            "code": self.code,
            "step": self.step_name,
            "severity": self.severity,
            "runs": self.runs,
            "findings": len(self.findings),
            "message": first.message,
            "example_run_id": first.run_id,
            "fix": self.fix,
        }


def group_findings(findings: Sequence[Finding]) -> list[FindingGroup]:
    """Findings folded by problem (code, step name, fix, severity), the most widespread first: one line per
    problem instead of one per run; a problem to fix and one with nothing to fix are two lines."""
    by: dict[tuple[str, str | None, str, bool], list[Finding]] = defaultdict(list)
    for f in findings:
        by[(f.code, f.step_name, f.fix, f.actionable)].append(f)
    groups = [FindingGroup(c, n, fix, tuple(fs)) for (c, n, fix, _), fs in by.items()]
    return sorted(groups, key=lambda g: (-g.runs, g.code, g.step_name or ""))


def summary_line(findings: Sequence[Finding], runs: int) -> str:
    """``3 findings in 2 runs (no-timeout 2, swallowed-exception 1)``, or that nothing was found."""
    if not findings:
        return f"no findings in {runs} run{'s' if runs != 1 else ''}"
    counts: dict[str, int] = defaultdict(int)
    for f in findings:
        counts[f.code] += 1
    parts = ", ".join(f"{c} {n}" for c, n in sorted(counts.items(), key=lambda x: (-x[1], x[0])))
    info = sum(1 for f in findings if not f.actionable)
    if info:
        parts += f"; {info} info, nothing to fix, not counted in the exit code" if info < len(findings) else "; info only, nothing to fix: exit 0"
    return f"{len(findings)} finding{'s' if len(findings) != 1 else ''} in {runs} run{'s' if runs != 1 else ''} ({parts})"


def failing(findings: Sequence[Finding]) -> bool:
    """Whether the findings fail a CI job: any that asks for a fix (`Finding.actionable`)."""
    return any(f.actionable for f in findings)


__all__ = ["CODES", "INFERRED_CONFIDENCE", "Finding", "FindingGroup", "failing", "group_findings", "lint", "summary_line"]
