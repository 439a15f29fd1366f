"""Error lifecycle analysis: every error from occurrence through propagation to its end.

The recorder (`trajdebug.record.exceptions`) writes what it sees at run time: one
error event per exception, its ``propagated`` stages up the step tree, its
cause, ``recovered`` when a retry succeeded, ``ignored`` for a fallback,
``failed`` when it escaped the run, each transition through the state machine
(`trajdebug.core.lifecycle.machine`) that this module replays on the recorded
history.  This module completes the picture with what only hindsight and the
dependency graph show:

1. **Links.**  Each error gets at most one parent error, found in this order:
   the recorded cause (``cause``); the previous attempt's error when the error
   is in a retry attempt (``retry``); the latest earlier unhandled error inside
   its step (itself or its sub-steps, e.g. a sub-agent in another process:
   ``nested``); else the latest earlier error whose *effect* reaches its step
   along data or state edges (``data``).  The effect is its path, a fallback
   that stood in for it, and the steps its message was handed to (a model
   told the error), never a later attempt that answered the operation: that
   answer is the operation's (nu26 F2), and an attempt that raised with no
   output handed its enclosing step nothing (`_answered`).  Parents are
   always earlier errors, so the links form a forest.
2. **Final stages** for errors the runtime left open: ``recovered`` when a
   later attempt of its step succeeded (payload errors, imported runs);
   ``failed`` when the run failed and its step's output reached the failure
   (a dynamic backward slice from the failing step, Korel & Laski 1988), or
   when a later error in its chain failed.  Recovered and ignored errors stay
   so.  Each change is added to the stage history with the step and time, its
   reason prefixed ``analysis:``.
3. **Silent propagation**: an error still open in a failed run whose step's
   output was consumed outside the steps that enclose it.
4. **Influence**: the blast radius (forward slice of its effect steps) and
   whether it reached a step that wrote shared state.
5. **Chains and severity** (`trajdebug.core.lifecycle.severity`): root-to-leaf
   paths of the forest, scored by stated rules; critical chains first.  The
   per-error working state and its read-out into chains and lifecycles are in
   `trajdebug.core.lifecycle.forest`.

Forward and backward reach for all errors at once is computed with one pass
over a topological order carrying a bitset of error indexes per step
(O((V + E) * errors / 64) word operations), not one slice per error.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence

from trajdebug.core.graph import CHILD_KEY, DependencyGraph, final_step
from trajdebug.core.lifecycle.forest import _chains, _Err, _facts, _lifecycle
from trajdebug.core.lifecycle.machine import TERMINAL, fold
from trajdebug.core.lifecycle.report import (
    CAUGHT,
    ErrorChain,
    ErrorLifecycle,
    ErrorReport,
    caught_unrecorded,
    handed_to,
    said_caught,
)
from trajdebug.core.lifecycle.severity import LinkKind
from trajdebug.core.model import Run, Step


_DATA_KINDS = frozenset({"data", "state"})

MAX_BLAST = 500
"""At most this many steps are listed in an error's blast radius (nearest first; see ``blast_truncated``)."""


# -- the errors and their attempts -----------------------------------------------


def _prepare(run: Run, steps: dict[str, Step]) -> list[_Err]:
    work: list[_Err] = []
    seen: set[str] = set()
    for i, ev in enumerate(run.errors):
        if ev.error_id in seen:
            continue
        seen.add(ev.error_id)
        step = steps.get(ev.step_id)
        t = 0
        if ev.stages:
            t = ev.stages[0].time_ns
        elif step is not None:
            t = step.end_ns or step.start_ns
        # The recorder's own transitions, replayed by the same state machine.
        folded = fold(ev.step_id, ev.stages, steps)
        w = _Err(ev, t, list(folded.path), folded.stage, list(folded.ended), index=i)
        w.stage = folded.stage
        w.answered = [sid for sid in w.ended if _retries(steps, sid, w.path)]
        work.append(w)
    work.sort(key=lambda w: (w.time, w.index))
    for i, w in enumerate(work):
        w.index = i
    return work


def _ancestors(steps: dict[str, Step], step_id: str) -> Iterator[str]:
    """The enclosing steps of a step, innermost first."""
    seen = {step_id}
    cur = steps.get(step_id)
    while cur is not None and cur.parent_id is not None and cur.parent_id not in seen:
        seen.add(cur.parent_id)
        yield cur.parent_id
        cur = steps.get(cur.parent_id)


def _retries(steps: dict[str, Step], sid: str, path: Sequence[str]) -> bool:
    """Whether step ``sid`` is a later attempt of one of the steps ``path`` names or of a step enclosing them."""
    scope = {*path, *(a for p in path for a in _ancestors(steps, p))}
    cur, hops = steps.get(sid), 0
    while cur is not None and cur.retry_of is not None and hops < 10_000:
        if cur.retry_of in scope:
            return True
        cur, hops = steps.get(cur.retry_of), hops + 1
    return False


def _answered(work: Sequence[_Err], steps: dict[str, Step], seen: tuple[list[Step], dict[str, str]]) -> None:
    """For an error a later attempt answered: its steps that raised and recorded no output (``mute``: only
    they handed their enclosing step nothing; a payload error reported with ``Step.error`` beside an output
    did not, rev53b M2), and the steps its message was handed to (``handed``: a hand-written retry loop that
    puts the error text into a model's messages makes the model's answer the error's, rev53b M1), bar the
    answering attempts and their sub-steps, whose answer is the operation's, told the error or not."""
    for w in (w for w in work if w.answered and w.ev.step_id in steps):
        reported = bool(w.ev.attributes.get("reported"))  # `Step.error`: the step went on, it did not raise
        w.mute = [s for s in w.path if steps[s].output is None and not (reported and s == w.ev.step_id)]
        own, handed = set(w.answered), handed_to(w.ev.message, steps[w.ev.step_id], *seen)
        w.handed = [sid for sid in handed if own.isdisjoint((sid, *_ancestors(steps, sid)))]


def _retried_by(run: Run, steps: dict[str, Step]) -> dict[str, list[Step]]:
    """For each step that was retried, the attempts that retried it."""
    out: dict[str, list[Step]] = {}
    for s in run.steps:
        if s.retry_of is not None and s.retry_of in steps:
            out.setdefault(s.retry_of, []).append(s)
    return out


def _recover_by_retry(
    work: Sequence[_Err], retried_by: dict[str, list[Step]], steps: dict[str, Step]
) -> None:
    """Open errors whose step (or an enclosing attempt) was retried by a later attempt that succeeded end ``recovered``."""
    if not retried_by:
        return
    for w in work:
        if not w.open:
            continue
        # The attempt may be the error's step, a step it left, or a step enclosing them.
        scope = dict.fromkeys([*w.path, *(a for sid in w.path for a in _ancestors(steps, sid))])
        stack = [t for sid in scope for t in retried_by.get(sid, ())]
        seen: set[str] = set()
        while stack:
            t = stack.pop()
            if t.step_id in seen:
                continue
            seen.add(t.step_id)
            if t.status == "ok":
                w.end(
                    "recovered",
                    t.step_id,
                    t.end_ns or t.start_ns,
                    f"attempt {t.attempt} ({t.name}#{t.step_id[-6:]}) succeeded",
                )
                w.ended.append(t.step_id)
                w.answered.append(t.step_id)
                break
            stack.extend(retried_by.get(t.step_id, ()))


# -- 1. links ------------------------------------------------------------------------


def _reach(
    graph: DependencyGraph, seeds: dict[str, int], kinds: frozenset[str] | None, mute: dict[str, int]
) -> dict[str, int]:
    """For each step, the bitset of errors whose seed steps reach it (seeds included); the errors of ``mute``
    do not cross the implicit edge from a step it names into the enclosing step (`_mute`)."""
    reach: dict[str, int] = {}
    for sid in graph.topological_order():
        r = seeds.get(sid, 0)
        for d in graph.parents(sid):
            if kinds is None or d.kind in kinds:
                r |= reach.get(d.step_id, 0) & ~(mute.get(d.step_id, 0) if d.key == CHILD_KEY else 0)
        if r:
            reach[sid] = r
    return reach


def _mute(work: Sequence[_Err]) -> dict[str, int]:
    """Each error's ``mute`` steps with its bit: a failed attempt that raised and returned nothing leaves its
    enclosing step's output to the answer, not the error (only what the attempt wrote on its way, state or a
    step it fed, is the error's); one that recorded an output may have handed it on (`_answered`)."""
    out: dict[str, int] = {}
    for w in work:
        for sid in w.mute:
            out[sid] = out.get(sid, 0) | (1 << w.index)
    return out


def _effects(work: Sequence[_Err]) -> dict[str, int]:
    seeds: dict[str, int] = {}
    for w in work:
        for sid in w.effect:
            seeds[sid] = seeds.get(sid, 0) | (1 << w.index)
    return seeds


def _link(work: list[_Err], graph: DependencyGraph, steps: dict[str, Step]) -> None:
    by_id = {w.ev.error_id: w for w in work}
    by_step: dict[str, list[_Err]] = {}
    under: dict[str, list[_Err]] = {}
    for w in work:
        for sid in w.path:
            by_step.setdefault(sid, []).append(w)
        # Indexed under its own step and every enclosing step: "inside" them.
        for a in (w.ev.step_id, *_ancestors(steps, w.ev.step_id)):
            under.setdefault(a, []).append(w)
    inside = {a: sum(1 << c.index for c in errs) for a, errs in under.items()}
    seeds = _effects(work)
    upstream = _reach(graph, seeds, _DATA_KINDS, _mute(work))

    def attach(w: _Err, parent: _Err, kind: LinkKind) -> None:
        w.parent, w.link = parent, kind
        parent.children.append(w)

    for w in work:
        origin = w.ev.step_id
        pid = w.ev.parent_error_id
        cause = by_id.get(pid) if pid is not None else None
        prev = _previous_attempt_error(w, steps, by_id, by_step)
        if cause is not None and cause is not w and not _is_ancestor(w, cause):
            # A cause that is the previous attempt's error (the same exception
            # object raised again by the next attempt) is a retry.
            attach(w, cause, "retry" if cause is prev else "cause")
            continue
        if prev is not None:
            attach(w, prev, "retry")
            continue
        nested = [
            c
            for c in under.get(origin, ())
            if c.index < w.index and c.runtime_stage not in ("recovered", "ignored")
        ]
        if nested:
            attach(w, nested[-1], "nested")
            continue
        if origin not in steps:
            continue
        mask = seeds.get(origin, 0) & ~(1 << w.index)
        for d in graph.parents(origin):
            if d.kind in _DATA_KINDS:
                mask |= upstream.get(d.step_id, 0)
        # Errors inside the step are the nested rule's business: a recovered
        # one there says nothing about data the step consumed.
        mask &= ((1 << w.index) - 1) & ~inside.get(origin, 0)
        if mask:
            attach(w, work[mask.bit_length() - 1], "data")


def _is_ancestor(w: _Err, candidate: _Err) -> bool:
    """Whether linking ``w`` under ``candidate`` would close a cycle."""
    cur: _Err | None = candidate
    hops = 0
    while cur is not None and hops <= 100_000:
        if cur is w:
            return True
        cur, hops = cur.parent, hops + 1
    return False


def _previous_attempt_error(
    w: _Err, steps: dict[str, Step], by_id: dict[str, _Err], by_step: dict[str, list[_Err]]
) -> _Err | None:
    """The error of the attempt that the attempt containing ``w``'s step retried."""
    for sid in w.path:
        s = steps[sid]
        if s.retry_of is None or s.retry_of not in steps:
            continue
        prev_step = steps[s.retry_of]
        cand = by_id.get(prev_step.error.error_id) if prev_step.error and prev_step.error.error_id else None
        if cand is None:
            earlier = [c for c in by_step.get(prev_step.step_id, ()) if c.index < w.index]
            cand = earlier[-1] if earlier else None
        if cand is not None and cand.index < w.index:
            return cand
    return None


# -- 2b. failures ----------------------------------------------------------------------


def _failure_steps(run: Run, work: Sequence[_Err], steps: dict[str, Step]) -> list[str]:
    """Where the run's failure surfaced: the origin of each error that escaped the run, else the final step
    (a run failed by ``run.fail(...)``, a wrong answer or a failed check, failed at its final output)."""
    if run.outcome != "failure":
        return []
    escaped = [w.ev.step_id for w in work if w.runtime_stage == "failed" and w.ev.step_id in steps]
    if escaped:
        return list(dict.fromkeys(escaped))
    final = final_step(run)
    return [final.step_id] if final is not None else []


def _decide_failures(run: Run, work: Sequence[_Err], graph: DependencyGraph, failure: Sequence[str]) -> None:
    if run.outcome != "failure":
        return
    end = run.end_ns or max((s.end_ns or s.start_ns for s in run.steps), default=0)
    if failure:
        reached = graph.backward_slice(failure)
        where = ", ".join(f"{graph.steps[f].name}#{f[-6:]}" for f in failure)
        for w in work:
            if w.open and any(sid in reached for sid in w.path):
                w.end("failed", failure[-1], end, f"its step's output reached the run's failure at {where}")
    # A chain that ends failed takes its open ancestors with it.
    for w in reversed(work):
        if w.stage != "failed":
            continue
        cur = w.parent
        while cur is not None:
            if cur.open:
                cur.end(
                    "failed", w.ev.step_id, end, f"its chain ends in the run's failure (via {w.ev.error_id})"
                )
            cur = cur.parent


# -- 3, 4. silent propagation and influence --------------------------------------------


def _forward(
    graph: DependencyGraph, seeds: Sequence[str], limit: int, mute: frozenset[str]
) -> tuple[list[str], bool]:
    """Steps downstream of ``seeds`` in breadth-first order (nearest first), at most ``limit``, not along the
    implicit edge from a step of ``mute`` into its enclosing step."""
    seen = set(seeds)
    out: list[str] = []
    queue = deque(seeds)
    while queue:
        sid = queue.popleft()
        for c, d in graph.children(sid):
            if c not in seen and not (sid in mute and d.key == CHILD_KEY):
                if len(out) >= limit:
                    return out, True
                seen.add(c)
                out.append(c)
                queue.append(c)
    return out, False


def _influence(run: Run, work: Sequence[_Err], graph: DependencyGraph, steps: dict[str, Step]) -> None:
    pos = {s.step_id: i for i, s in enumerate(run.steps)}
    writers = [s for s in run.steps if s.kind == "state" or s.attributes.get("state_writes")]
    touched_bits = 0
    if writers:
        # Exact even when a blast radius is cut: one bitset pass over the graph.
        down = _reach(graph, _effects(work), None, _mute(work))
        for s in writers:
            touched_bits |= down.get(s.step_id, 0)
    for w in work:
        seeds = list(dict.fromkeys(w.effect))
        near, w.truncated = _forward(graph, seeds, MAX_BLAST, frozenset(w.mute))
        reach = [sid for sid in dict.fromkeys([*seeds, *near]) if sid != w.ev.step_id]
        reach.sort(key=lambda sid: pos.get(sid, 0))
        w.blast = reach
        w.touched = bool(touched_bits >> w.index & 1)
        keys: set[str] = set()
        for sid in (*seeds, *reach):
            writes = steps[sid].attributes.get("state_writes")
            if isinstance(writes, list):
                keys.update(str(k) for k in writes)
        w.state_keys = sorted(keys)
        if run.outcome == "failure" and w.runtime_stage not in TERMINAL and w.stage != "recovered":
            loud = any(c.link in ("cause", "retry", "nested") for c in w.children)
            enclosing = {a for sid in w.path for a in _ancestors(steps, sid)}
            consumers = [sid for sid in near if sid not in enclosing and sid not in w.path]
            if consumers and not loud:
                w.silent = True
                first = steps[consumers[0]]
                w.notes.append(
                    f"left open while {first.name}#{first.step_id[-6:]} consumed its step's output"
                )


# -- all passes, and 5. chains (read out in `forest`) -------------------------------


def analyze_errors(run: Run, graph: DependencyGraph | None = None) -> ErrorReport:
    """Analyze the lifecycle of every error of a run.

    Args:
        run: The run.
        graph: Its dependency graph, if already built (built here otherwise).

    Returns:
        The report: each error's final stage, history, severity, blast radius
        and reasons, and the scored error chains (critical ones first).

    Raises:
        trajdebug.core.graph.GraphError: the run's dependencies are not a
            graph (a cycle, or an edge to a missing step).
    """
    if graph is None:
        graph = DependencyGraph(run)
    steps = graph.steps
    work = _prepare(run, steps)
    retried_by = _retried_by(run, steps)
    _recover_by_retry(work, retried_by, steps)
    seen = (sorted(run.steps, key=lambda t: t.start_ns), dict[str, str]())  # one order and one text per step
    _answered(work, steps, seen)
    _link(work, graph, steps)
    failure = _failure_steps(run, work, steps)
    _decide_failures(run, work, graph, failure)
    _influence(run, work, graph, steps)

    facts = {w.index: _facts(w) for w in work}
    chains, origin_of, failed_below = _chains(work, facts, steps)
    errors = [_lifecycle(w, facts[w.index], steps, retried_by, origin_of, failed_below) for w in work]
    by_id = {e.error_id: e for e in errors}
    chains = [said_caught(c, by_id, run, steps, seen) for c in chains]
    return ErrorReport(run.run_id, run.outcome, tuple(errors), tuple(chains), tuple(failure))


__all__ = [
    "CAUGHT", "MAX_BLAST", "TERMINAL", "ErrorChain", "ErrorLifecycle",
    "ErrorReport", "analyze_errors", "caught_unrecorded",
]
