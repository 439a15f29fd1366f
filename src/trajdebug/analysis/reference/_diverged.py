"""Where a failing run first parts from a passing run of the same input, when its request changed there.

`answer_checks` reads a passing run of the same input step by step: a step asked the same as there and
answering otherwise is the origin of a difference.  A fix often reads one more value than the bug did (a
``run.state`` key, an argument): the step's request then differs from the passing run's own, no request is
alike, and that check is silent, while ``trajdebug diff`` names the step as the first divergence.  This module
lines the two runs up as ``diff`` does (`trajdebug.replay.align`, which the analysis may not import: steps
matched by their name path and call order, difflib over the two sequences) and finds that first divergence.
When the step's request differs there, its answer too, and every step it depends on that the alignment pairs
returned the same as in the passing run, nothing recorded upstream made the difference: it starts at the step
(its code, or what it read), the same finding as a changed answer to the same request.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.lineage import semantic
from trajdebug.analysis.reference._profile import answer_key, asked_of
from trajdebug.analysis.reference._select import given_input
from trajdebug.core.model import CONTAINER_KINDS, VALUE_DEP_KINDS, Run, Step


_Key = tuple[tuple[str, ...], int]
"""A step's name path (its enclosing steps' names, then its own) and its call order among steps of that path."""


def diverged(run: Run, passing: Sequence[Run]) -> dict[str, str]:
    """Per step of ``run`` where it first parts from a passing run of its input (`first_divergence`), that run's id.

    ``passing``: passing runs given the same input (`same_request`): runs of other inputs differ from the first
    step on, and say nothing of where a value went wrong.  Only an input the runs state is read as the same:
    runs whose first step was given nothing (an Agents SDK trace's) are alike by `same_request` whatever
    they were asked."""
    out: dict[str, str] = {}
    if not stated(run):
        return out
    for good in passing:
        sid = first_divergence(good, run)
        if sid is not None:
            out.setdefault(sid, good.run_id)
    return out


def stated(run: Run) -> bool:
    """Whether a run states what it was given (`given_input`): a value, not None or an empty one."""
    given = given_input(run)
    return given is not None and given[1] not in (None, "", {}, [])


def first_divergence(good: Run, bad: Run) -> str | None:
    """The failing run's step where it first parts from ``good``, when the difference starts there: its request and
    its answer differ, and each step it depends on (in either run) that the two runs share answered alike.  None
    when the first difference is an answer to the same request (`answer_checks` reads that), a step one run
    has alone, the run's input, or a step a dependency's changed answer reached."""
    g_by, b_by = good.step_map(), bad.step_map()
    pairs = _pairs(good, bad)
    inside = {s.parent_id for s in good.steps} | {s.parent_id for s in bad.steps}
    for g, b in pairs:
        s = b or g
        assert s is not None
        # An enclosing step differs because a step inside it does: the steps inside are compared instead.
        if s.kind in CONTAINER_KINDS or (g is not None and g.step_id in inside) or (b is not None and b.step_id in inside):
            continue
        if g is None or b is None:
            return None
        same_answer = _answer(g) == _answer(b)
        if answer_key(asked_of(g, g_by)) == answer_key(asked_of(b, b_by)):
            if same_answer:
                continue
            return None
        if same_answer or b.kind == "input":
            return None
        return b.step_id if _upstream_alike(g, b, pairs) and _fed(b, pairs) else None
    return None


def origin_evidence(step: Step, passing: str) -> Evidence:
    """The finding on a step where the run first parts from the passing run ``passing`` of its input (`diverged`):
    the diagnoser and the weight of a changed answer to the same request (`answer_checks`), since the difference
    starts at the step alike; its sentence says that the request differed, and why the step is still the origin."""
    return Evidence(
        step.step_id,
        0.65 if step.kind != "llm" else 0.4,
        f"the run first parts here from passing run {passing[:12]} of the same input: its request differs though"
        " every step it depends on returned the same there, so the difference starts at this step (its code, or"
        " what it read)",
        "reference:same-input",
    )


def _pairs(good: Run, bad: Run) -> list[tuple[Step | None, Step | None]]:
    """The two runs' steps matched by `_keys`, in execution order (difflib: a step one run has alone does not
    shift the rest; a key of a replaced block is matched out of order, as `trajdebug.replay.align` does)."""
    gk, bk = _keys(good), _keys(bad)
    out: list[tuple[Step | None, Step | None]] = []
    sm = difflib.SequenceMatcher(None, gk, bk, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            out += [(good.steps[i], bad.steps[j]) for i, j in zip(range(i1, i2), range(j1, j2))]
            continue
        block = {bk[j]: bad.steps[j] for j in range(j1, j2)}
        out += [(good.steps[i], block.pop(gk[i], None)) for i in range(i1, i2)]
        out += [(None, b) for b in block.values()]
    return out


def _keys(run: Run) -> list[_Key]:
    """Each step's `_Key`, in the run's order."""
    by_id = run.step_map()
    paths: dict[str, tuple[str, ...]] = {}

    def path(sid: str, depth: int = 0) -> tuple[str, ...]:
        known = paths.get(sid)
        if known is not None:
            return known
        s = by_id[sid]
        # A parent outside the run, or a parent cycle in a hand-written file, ends the path.
        up = path(s.parent_id, depth + 1) if s.parent_id in by_id and s.parent_id != sid and depth < 256 else ()
        paths[sid] = (*up, s.name)
        return paths[sid]

    counts: dict[tuple[str, ...], int] = {}
    out: list[_Key] = []
    for s in run.steps:
        p = path(s.step_id)
        out.append((p, counts.get(p, 0)))
        counts[p] = counts.get(p, 0) + 1
    return out


def _answer(s: Step) -> str:
    """What a step returned, as `answer_key` writes it: its status, its error, its answer and the state it wrote."""
    err = f"{s.error.type}:{s.error.message}" if s.error is not None else ""
    return answer_key([s.status, err, semantic(s, s.output), s.attributes.get("state_values")])


def _fed(b: Step, pairs: Sequence[tuple[Step | None, Step | None]]) -> bool:
    """Whether the failing run's step read (data or state) some step the two runs share: then the steps it
    depends on returning the same says something.  A step that read none (a first model call handed the user's
    message) may be asked otherwise because the run was: its request changed outside the recorded steps, as
    ``diff`` says, and it is no origin."""
    shared = {y.step_id for x, y in pairs if x is not None and y is not None}
    return any(d.kind in VALUE_DEP_KINDS and d.run_id is None and d.step_id in shared for d in b.deps)


def _upstream_alike(g: Step, b: Step, pairs: Sequence[tuple[Step | None, Step | None]]) -> bool:
    """Whether every step ``g`` or ``b`` depends on (data or state) that the two runs share answered alike in both:
    a dependency that answered otherwise passed its difference on, and the step is no origin.  A dependency one
    run has alone is not compared (nothing to compare it with)."""
    shared = [(x, y) for x, y in pairs if x is not None and y is not None]
    by_good = {x.step_id: (x, y) for x, y in shared}
    by_bad = {y.step_id: (x, y) for x, y in shared}
    for step, paired in ((g, by_good), (b, by_bad)):
        for d in step.deps:
            twin = paired.get(d.step_id) if d.kind in VALUE_DEP_KINDS and d.run_id is None else None
            if twin is not None and _answer(twin[0]) != _answer(twin[1]):
                return False
    return True


__all__ = ["diverged", "first_divergence", "origin_evidence"]
