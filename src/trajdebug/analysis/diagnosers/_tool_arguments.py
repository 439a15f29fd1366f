"""Diagnosers of the arguments a tool call was given: arguments from nowhere, and arguments the tool ignored.

An argument should come from somewhere: the task, a model's request for the call, an upstream answer (copied,
or worked out from two of its numbers: `computed`); one that comes from none of them, or two swapped against
where they came from, was made up or misplaced by the step that built the call (`tool_arguments`).  And a tool
should read what it is given: a call that answered other arguments with an earlier call's very answer did not
(`ignored_argument`).  Both are the call's arguments judged against what it was given and what it answered;
its result and its error on their own are judged in `trajdebug.analysis.diagnosers._tools`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers import _choices as choices
from trajdebug.analysis.diagnosers._conflicts import contradictions, present, upstream_outputs
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._reads import OK, TOOLS, Reads, reading
from trajdebug.analysis.lexicon import Lexicon
from trajdebug.core.graph import CHILD_KEY
from trajdebug.core.model import Dependency, Step


_FEW_NUMBERS = 8
"""At most this many numbers in one upstream answer for a pair of them to explain an argument (in a
longer answer some pair adds or multiplies up to almost any number: a made-up one too)."""


def computed(v: Any, ups: Iterable[Any]) -> bool:
    """Whether a number is the sum or the product of two numbers of one upstream output (0 and 1 left out).

    A program that calls a tool hands it what it worked out (a quantity from a count and a size per
    item), not only what it copied: such an argument comes from upstream, though no output holds it.
    """
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return False
    for u in ups:
        nums = [
            x
            for _, x in content.decoded_leaves(u)
            if isinstance(x, (int, float)) and not isinstance(x, bool) and x not in (0, 1)
        ]
        if len(nums) > _FEW_NUMBERS:
            continue
        for i, a in enumerate(nums):
            for b in nums[i + 1 :]:
                if any(math.isclose(v, w, rel_tol=1e-9) for w in (a + b, a * b)):
                    return True
    return False


def _facts(step: Step, ctx: DiagnoseContext) -> list[Any]:
    """The upstream outputs an argument may contradict: an earlier call of the same tool counts without the
    fields it only echoed from its own request (a loop asking about ``M-214`` and then ``M-219``: two requests,
    where neither answer states a fact about the other)."""
    out: list[Any] = []
    for d in ctx.graph.parents(step.step_id):
        if d.kind not in ("data", "state") or d.key == CHILD_KEY:
            continue
        up = ctx.step(d.step_id)
        keyed = _keyed_state(up, d)
        if keyed is not None:
            out.append(keyed)
            continue
        echo = _echo(up, step)
        out.append(up.output if echo is None else {k: v for k, v in up.output.items() if k not in echo})
    return out


def _keyed_state(up: Step, d: Dependency) -> dict[str, Any] | None:
    """The one key a declared state edge read from a writer whose output is the update it made (a graph node's:
    several keys, of which the reader was handed this one); None for any other edge.  A writer that recorded
    what it wrote (``state_values``, ``state_writes``) is read as before."""
    if d.kind != "state" or d.origin != "declared" or not d.key or not isinstance(up.output, Mapping):
        return None
    if d.key not in up.output or up.attributes.get("state_values") or up.attributes.get("state_writes"):
        return None
    return {d.key: up.output[d.key]}


def _echo(up: Step, step: Step) -> dict[str, Any] | None:
    """The fields an earlier call of the same tool as ``step`` was given and answered unchanged (its request
    echoed); None when ``up`` is no such call."""
    if up.name != step.name or up.kind != step.kind or not isinstance(up.output, Mapping) or not isinstance(up.input, Mapping):
        return None
    given = up.input
    return {k: v for k, v in up.output.items() if k in given and given[k] == v}


def _echoed(step: Step, ctx: DiagnoseContext) -> dict[str, Any]:
    """The fields an earlier call of the same tool, upstream of this one, was given and answered unchanged."""
    out: dict[str, Any] = {}
    for d in ctx.graph.parents(step.step_id):
        out.update(_echo(ctx.step(d.step_id), step) or {})
    return out


def _next_key(value: Any, earlier: Any) -> bool:
    """Whether a value is another id of the series an earlier request's echoed value belongs to (one shape)."""
    return (
        isinstance(value, str)
        and isinstance(earlier, str)
        and value != earlier
        and content.ID_TOKEN.fullmatch(value) is not None
        and content.char_shape(value) == content.char_shape(earlier)
    )


@reading(Reads(kinds=frozenset({"tool"})))
def tool_arguments(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """Tool arguments that come from no upstream output, or contradict one."""
    if step.kind != "tool" or not isinstance(step.input, Mapping):
        return
    if (
        not any(d.kind in ("data", "state") and d.origin != "inferred" for d in step.deps)
        and ctx.recorded_edges()
    ):
        return  # recorded, and fed no tracked value: its arguments are constants or computed by the agent's code
    ups = upstream_outputs(step, ctx)
    hay = ctx.upstream_text(step, own_input=False)  # built once: both checks read it
    bad = contradictions(step.input, _facts(step, ctx), hay)
    if bad:
        k, v, w = bad[0]
        yield Evidence(
            step.step_id, 0.6, f"argument {k}={v!r} contradicts the upstream value {w!r}", "tool-arguments"
        )
        return
    if not hay.strip():
        return
    args = list(content.decoded_leaves(step.input))
    # The haystack's numbers are read only when an argument is a number (`present` reads ``forms`` for those alone).
    numeric = any(isinstance(v, (int, float)) and not isinstance(v, bool) for _, v in args)
    forms = ctx.upstream_forms(step, own_input=False) if numeric else set()
    checked, missing, chosen = 0, [], False
    echoed = _echoed(step, ctx)
    for path, v in args:
        seen = present(v, hay, forms)
        if seen is None:
            continue
        if not seen and _next_key(v, echoed.get(path.split(".", 1)[0])):
            # The next id of the series an earlier call of this tool took as its request and echoed: a
            # loop's own key (``H-12``, then ``H-19``), which the code walking the loop supplies.
            seen = chosen = True
        if not seen and choices.setting(path.rsplit(".", 1)[-1], v, lexicon=ctx.lexicon):
            # A setting of the call (a window, a page size) is the caller's choice, not a claim: accounted
            # for, never found upstream.
            seen = chosen = True
        if not seen and computed(v, ups):
            # Worked out by the agent's code from one upstream answer (4 replicates of 50 seeds: 200):
            # accounted for, as a setting is, never found upstream as written.
            seen = chosen = True
        checked += 1
        if not seen:
            missing.append(f"{path}={v!r}"[:60])
    if missing and not _asked_by_model(step, ctx) and not _swapped(missing, hay):
        # No model had spoken yet, or none named this tool (a graph node's code walking its own roster):
        # what the call was given that no step produced came from the program itself (its clock, its
        # settings, its constants), which is computed, not made up, unless a value of the same shape
        # was given upstream (the program put another client's id in its place).
        missing = []
        chosen = True
    if missing:
        frac = len(missing) / checked
        plural = len(missing) > 1
        yield Evidence(
            step.step_id,
            0.1 + 0.25 * frac,
            f"argument{'s' if plural else ''} {', '.join(missing[:3])} come{'' if plural else 's'} from no upstream output",
            "tool-arguments",
        )
    elif checked and not chosen:
        yield Evidence(
            step.step_id, 0.0, "its arguments all come from upstream outputs", "tool-arguments", sound=True
        )


def _shape(text: str) -> str:
    """A value's shape: each run of letters an ``a``, of digits a ``9`` (``CL-303`` -> ``a-9``)."""
    return re.sub(r"[0-9]+", "9", re.sub(r"[^\W\d_]+", "a", text))


def _swapped(missing: list[str], hay: str) -> bool:
    """True when a missing argument (``path='value'``) has the shape of a token of the upstream text."""
    shapes = {_shape(t) for t in re.findall(r"[\w-]+", hay[:20000]) if any(c.isdigit() for c in t)}
    for m in missing:
        value = m.split("=", 1)[-1].strip("'\"")
        if any(c.isdigit() for c in value) and _shape(value) in shapes:
            return True
    return False


def _asked_by_model(step: Step, ctx: DiagnoseContext) -> bool:
    """False when no model call started before the step, or when the step runs inside an enclosing step
    (a graph node, a function of the agent) whose model calls, if any, each recorded an empty list of tool
    calls, or at the top level of a run whose values were tracked (the run's own code called it), and no
    earlier model's answer names the tool (in a tool call, or in text a program parses into one): the code
    called it.  Otherwise a model may have made its arguments up."""
    if _before_any_model(step, ctx):
        return False
    if step.parent_id is None and not ctx.recorded_edges():
        return True  # the top level of a trace that tracked no value: who called it is unknown
    if step.parent_id is not None and step.parent_id not in ctx.graph.steps:
        return True  # its enclosing step was not recorded: who called it is unknown
    # A model beside it in the same enclosing step may have asked for it, unless every such model recorded
    # that it asked for no tool at all (an empty list of tool calls): then the enclosing code called it with
    # its own constants, as a node with no model does (round 42: an OTLP run's flat agent span holding a model
    # that answered text, `tool_calls: []`, and a price lookup the program makes with its market's name).  A
    # step at the top level of a run whose recorder tracked its values was called by the run's own code (the
    # body of `trajdebug.run`): a model there asked for it only by naming it, which the test below reads.
    if step.parent_id is not None and any(s.kind == "llm" and not _asked_no_tool(s) for s in ctx.children(step.parent_id)):
        return True
    pos = ctx.memo("step-positions", lambda: {s.step_id: i for i, s in reversed(list(enumerate(ctx.run.steps)))})
    # The models' answers read once per run, with their places: one scan per tool step reads only these.
    said = ctx.memo(
        "model-answers",
        lambda: [(i, content.text_of(s.output).lower()) for i, s in enumerate(ctx.run.steps) if s.kind == "llm"],
    )
    here = pos.get(step.step_id, len(ctx.run.steps))
    name = step.name.lower()
    return any(i < here and name in text for i, text in said)


def _asked_no_tool(model: Step) -> bool:
    """Whether a model call's recorded answer says it asked for no tool: a message whose list of tool calls is
    there and empty.  An answer recording no such list (text alone) says nothing either way."""
    out = model.output
    return isinstance(out, Mapping) and out.get("tool_calls") == []


def _before_any_model(step: Step, ctx: DiagnoseContext) -> bool:
    """True when no model call started before the step (by start time, else by order)."""
    first = ctx.memo(
        "first-model",
        lambda: next((i for i, s in enumerate(ctx.run.steps) if s.kind == "llm"), None),
    )
    if first is None:
        return True
    # Positions indexed once per run: a scan per tool step made this quadratic on long runs.
    pos = ctx.memo("step-positions", lambda: {s.step_id: i for i, s in reversed(list(enumerate(ctx.run.steps)))})
    here = pos.get(step.step_id)
    return here is not None and here < first


SAME_ANSWER = 0.45
"""Suspicion of a call that answered other arguments with an earlier call's very answer (`ignored_argument`)."""


@reading(Reads(kinds=TOOLS, statuses=OK, failures=True))
def ignored_argument(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A tool or retrieval that answered, apart from the arguments it echoes, exactly what an earlier call of it
    answered for other arguments (the trousers' measurements the jacket's, field for field): it did not read
    the argument that changed.  The first call's answer may be right; the later one answers a question it was
    not asked.  An answer of fewer than three values of its own may repeat by chance, and is left alone."""
    if step.kind not in ("tool", "retrieval") or step.status != "ok" or not isinstance(step.input, Mapping):
        return
    body = _own_answer(step, ctx)
    if body is None or not _failure_about(step, ctx):
        return
    # The earlier calls answering alike, found for every call in one pass per run: comparing each call with
    # every earlier call of its tool was quadratic on long loops.
    other, n = ctx.memo("answer-twins", lambda: _answer_twins(ctx)).get(step.step_id, (None, 0))
    k = next((k for k in step.input if other.input[k] != step.input[k]), None) if other is not None else None
    if other is not None and k is not None:  # The first call to repeat an answer is where the argument stopped being read.
        yield Evidence(
            step.step_id,
            SAME_ANSWER if n == 1 else SAME_ANSWER * 0.6,
            f"answered {k}={step.input[k]!r} with what an earlier call answered {k}={other.input[k]!r}: it did not read {k}",
            "ignored-argument",
        )


def _answer_twins(ctx: DiagnoseContext) -> dict[str, tuple[Step, int]]:
    """For each successful call answering what an earlier call of its tool answered with the same argument names
    but other values: the first such earlier call, and how many there were.  An earlier call with the very same
    arguments (a retry) read them, and is not counted."""
    groups: dict[tuple[str, frozenset[str], tuple[tuple[str, str], ...]], list[Step]] = {}
    for c in (c for calls in ctx.memo("calls-by-name", lambda: _calls_by_name(ctx)).values() for c in calls):
        if isinstance(c.input, Mapping) and (body := _own_answer(c, ctx)) is not None:
            groups.setdefault((c.name, frozenset(c.input), body), []).append(c)
    out: dict[str, tuple[Step, int]] = {}
    for group in groups.values():
        seen: dict[str, int] = {}  # calls so far by their arguments
        firsts: list[tuple[str, Step]] = []  # the first call of the first two distinct arguments
        for n, c in enumerate(group):
            key = repr(sorted(c.input.items(), key=lambda kv: kv[0]))
            other = next((s for k, s in firsts if k != key), None)
            if other is not None:
                out[c.step_id] = (other, n - seen.get(key, 0))
            if key not in seen and len(firsts) < 2:
                firsts.append((key, c))
            seen[key] = seen.get(key, 0) + 1
    return out


def _failure_about(step: Step, ctx: DiagnoseContext) -> bool:
    """Whether a failure is about this call's answer: its message names a value the call was asked about and
    a word of the tool's name or of its answer's fields (``trousers: inseam missing from measurements``).
    Calls of a check answering alike for every item (four artworks at 300 dpi) are the world's sameness, and
    a failure that speaks of something else says nothing of them."""
    said = " ".join(f.message for f in ctx.failures).casefold()
    if not said or not any(isinstance(v, str) and len(v) >= 3 and v.casefold() in said for v in step.input.values()):
        return False
    terms = ctx.failure_words()
    # (The fields it echoes, `job` beside the job asked about, are the question's, not the answer's.)
    out = content.embedded_json(step.output) if isinstance(step.output, str) else step.output
    own = [p for p, _ in content.leaves(out) if p not in step.input]
    words = re.findall(r"[a-z]{3,}", " ".join([step.name, *own]).casefold())
    return any(ctx.lexicon.singular(w) in terms for w in words)


def _calls_by_name(ctx: DiagnoseContext) -> dict[str, list[Step]]:
    """The run's successful tool and retrieval calls by name, in run order."""
    out: dict[str, list[Step]] = {}
    for s in ctx.run.steps:
        if s.kind in ("tool", "retrieval") and s.status == "ok":
            out.setdefault(s.name, []).append(s)
    return out


def _own_answer(step: Step, ctx: DiagnoseContext) -> tuple[tuple[str, str], ...] | None:
    """A call's answer without the arguments it echoes back, as sorted (path, value) pairs, read once per step;
    None when fewer than three values of its own are left, or fewer than two of them tell anything: a number
    other than zero, a text that is no flag, empty or default word (``unknown``).  A store answers every key it
    does not know with one default record (``stock: 0, status: unknown``), and two full dates alike: answers
    the same for other arguments by design."""
    memo: dict[str, tuple[tuple[str, str], ...] | None] = ctx.memo("own-answers", dict)
    return memo[step.step_id] if step.step_id in memo else memo.setdefault(step.step_id, _read_own_answer(step, ctx.lexicon))


def _read_own_answer(step: Step, lexicon: Lexicon) -> tuple[tuple[str, str], ...] | None:
    out = step.output
    if isinstance(out, str):
        out = content.embedded_json(out)
    if not isinstance(out, (Mapping, list)) or not isinstance(step.input, Mapping):
        return None
    given = {repr(v) for _, v in content.leaves(step.input)}
    # The answer's leaves walked and written once (each was walked twice and written three times, per call).
    mine = [(p, v, r) for p, v in content.leaves(out) if (r := repr(v)) not in given]
    if len(mine) < 3:
        return None
    dull = lexicon.boolean_words | lexicon.default_words
    telling = sum(1 for _, v, _ in mine if not isinstance(v, bool) and (
        (isinstance(v, (int, float)) and v != 0) or (isinstance(v, str) and len(v.strip()) >= 2 and v.strip().casefold() not in dull)))
    if telling < 2:
        return None
    return tuple(sorted((p, r) for p, _, r in mine))


__all__ = [
    "computed",
    "tool_arguments",
    "SAME_ANSWER",
    "ignored_argument",
]
