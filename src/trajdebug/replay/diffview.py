"""What ``trajdebug diff`` prints about an `Alignment`, as lines of styled segments (the command only prints them).

The header says when the two runs were given different inputs (then the comparison shows where the agent
behaved otherwise, not which value is wrong); the first divergence and every differing row show what differs:
a request that differs shows the two requests, and the two outputs when they differ too; an output that
differs alone, the two outputs.  Step ids are the failing run's; a step present in the passing run only is
shown as ``good#ID`` (ids are per run: the passing run's ``#00000d`` may be another step than the failing
run's ``#00000d``), one in the failing run only as ``bad#ID``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from trajdebug.core.escape import cut_where_differs
from trajdebug.core.model import Run, Step
from trajdebug.core.shortids import shortener
from trajdebug.replay.align import (
    Alignment,
    InputDifference,
    Pair,
    _content,
    _state_read,
    raised,
    reported_errors,
    returned,
)
from trajdebug.replay.cassette import STATE_VALUES_ATTR, canonical, fingerprint


Line = tuple[tuple[str, str], ...]
"""One printed line: ``(text, style)`` segments, the style a rich style name (``""``: plain)."""

IMPACT_SHOWN = 8
"""Steps named on the "downstream impact" line (the JSON lists all)."""

MARKS = {"same": "=", "output": "≠", "input": "~", "only-good": "-", "only-bad": "+"}
"""The mark in front of each row, by `trajdebug.replay.PairStatus`."""

WORDS = {
    "same": "",
    "output": "same request, different output",
    "input": "request differs",
    "only-good": "only in the passing run",
    "only-bad": "only in the failing run",
}
"""What each row says, by `trajdebug.replay.PairStatus` (`words` adjusts two cases)."""

_STYLE = {"same": "dim", "output": "red", "input": "yellow"}


def words(p: Pair) -> str:
    """What differs at a position, in words: an ``input`` step's difference is the run's input; an output that
    differs where neither run recorded the step's request is not said to have had the same request."""
    if p.status == "input" and p.bad is not None and p.bad.kind == "input":
        return "the run's input differs"
    unrecorded = p.good is not None and p.bad is not None and p.good.input is None and p.bad.input is None
    if p.status == "output" and unrecorded:
        return "different output (no request recorded)"
    return WORDS[p.status]


def label(p: Pair) -> str:
    """The step of a position as ``name#id``: the failing run's id, or ``good#id`` / ``bad#id`` for a step only
    one run has (ids are per run, so the side is named)."""
    if p.bad is not None and p.good is not None:
        return f"{p.bad.name}#{p.bad.step_id[-6:]}"
    if p.good is not None:
        return f"{p.good.name} good#{p.good.step_id[-6:]}"
    assert p.bad is not None
    return f"{p.bad.name} bad#{p.bad.step_id[-6:]}"


def short(value: Any, limit: int = 160, against: Any = None) -> str:
    """A value as one line of at most ``limit`` characters; beside ``against`` (what the other run had), cut
    around where the two first differ: two long values alike at their head would show as equal."""

    def line(v: Any) -> str:
        return " ".join((v if isinstance(v, str) else canonical(v)).split())

    return cut_where_differs(line(value), None if against is None else line(against), limit)


RAISED = "nothing: it raised"
"""What a step that raised returned, shown in place of what its route recorded for it: None from trajdebug's
recorder, ``{}`` (an empty update) from the LangChain tracer for a LangGraph node; one representation, that
does not read as a value it returned (issue 23, nu23)."""


NOT_RAISED = "recorded, did not raise"
"""Said beside an error recorded without raising (a ``with`` block that overran its timeout, a tool's error
payload): the step went on and returned what is shown (round 50 review: it read as "nothing: it raised")."""


def _shown(step: Step, other: Step | None, reported: frozenset[str] = frozenset()) -> Any:
    """What differs about a step's result: its output, the state it wrote when the outputs are equal, or
    `RAISED` when it raised and returned nothing (a route's empty placeholder is no output); a step whose
    error was recorded without raising (``reported``, `reported_errors`) shows what it returned."""
    if step.error is not None and raised(step, reported) and returned(step, reported) is None:
        return f"{RAISED} {step.error.type}"
    if other is not None and canonical(step.output) == canonical(other.output):
        state = step.attributes.get(STATE_VALUES_ATTR)
        if state is not None:
            return {"state written": state}
    return step.output


def _same_args(s: Step, o: Step) -> bool:
    """Whether two steps were given the same arguments (as `trajdebug.replay.align` compares them)."""
    return fingerprint(_content(s, s.input)) == fingerprint(_content(o, o.input))


def _asked(p: Pair, side: int, steps: tuple[dict[str, Step], dict[str, Step]]) -> Any:
    """What a step of a position whose request differs was asked, on one side (0: good, 1: bad): the run's input
    an ``input`` step records, its input where the inputs differ, else the state it read (`_state_read`;
    ``steps``: each run's steps by id, built once per table)."""
    s, o = (p.good, p.bad) if side == 0 else (p.bad, p.good)
    assert s is not None and o is not None
    same_input = _same_args(s, o)
    if s.kind == "input" and same_input:
        return s.output
    if not same_input:
        return s.input
    return {"state read": _state_read(s, steps[side])}


def values(
    al: Alignment, p: Pair, limit: int, steps: tuple[dict[str, Step], dict[str, Step]] | None = None
) -> list[tuple[str, str]]:
    """The ``(label, value)`` lines under a position, the passing run's first of each two: the two requests of one
    whose request differs (``good request``, or ``good input`` for an ``input`` step), and then its two outputs
    when they differ too (``good`` / ``bad``); the two results of one whose output alone differs.  ``steps``: each
    run's steps by id (`step_maps`), to build once for a whole table."""
    g, b = p.good, p.bad
    if g is None or b is None:
        return []
    rows: list[tuple[str, Any, Any]] = []
    if p.status == "input":
        maps = steps if steps is not None else step_maps(al)
        word = " input" if b.kind == "input" else " request"
        rows.append((word, _asked(p, 0, maps), _asked(p, 1, maps)))
    relayed = p.status == "input" and b.kind == "input" and _same_args(g, b)  # its input shown is its output
    if p.output_differs and not relayed:
        reported = reported_errors(al.good, al.bad)
        shown = ("", _shown(g, b, reported), _shown(b, g, reported))
        # An input step's output is its input: said once (nu64b: `good input:` and `good:` printed the same).
        if not (rows and b.kind == "input" and rows[-1][1:] == shown[1:]):
            rows.append(shown)
    out: list[tuple[str, str]] = []
    for word, x, y in rows:
        out += [(f"good{word}:", short(x, limit, y)), (f"bad{word}:", short(y, limit, x))]
    return out


def step_maps(al: Alignment) -> tuple[dict[str, Step], dict[str, Step]]:
    """The passing and the failing run's steps by id (what `values` reads the state a step read from)."""
    return al.good.step_map(), al.bad.step_map()


def _pad(rows: list[tuple[str, str]]) -> list[str]:
    width = max((len(k) for k, _ in rows), default=0) + 1
    return [f"{k:<{width}}{v}" for k, v in rows]


Shorten = tuple[Callable[[str], str], Callable[[str], str]]
"""How the passing and the failing run's ids are shown: each cut to its shortest prefix unique in its source
(`trajdebug.core.shortids`); without the sources, against the other run's id."""


def _shorteners(al: Alignment, short: Shorten | None) -> Shorten:
    if short is not None:
        return short
    pair = shortener((al.good.run_id, al.bad.run_id))
    return pair, pair


def header(al: Alignment, short: Shorten | None = None) -> list[Line]:
    """The summary line and, when the runs were given different inputs, the line that says so."""
    good, bad = al.good, al.bad
    sg, sb = _shorteners(al, short)
    out: list[Line] = [
        (
            ("diff", "bold"),
            (
                f" good {sg(good.run_id)} ({good.outcome}) vs bad {sb(bad.run_id)} ({bad.outcome}): "
                f"{al.counts()}",
                "",
            ),
        )
    ]
    warning = outcome_warning(al, (sg, sb))
    if warning:
        out.append(((warning, "bold yellow"),))
    differ = al.inputs_differ
    if differ is not None:
        out.append(((inputs_line(differ), "bold yellow"),))
    return out


def outcome_warning(al: Alignment, short: Shorten | None = None) -> str:
    """One line when GOOD failed or BAD passed (nu64b: `diff` called a failed GOOD "the passing run" and said
    nothing); empty when GOOD passed and BAD did not."""
    sg, sb = _shorteners(al, short)
    sides = (("GOOD", al.good, "failure", "failed", sg), ("BAD", al.bad, "success", "passed", sb))
    odd = [f"{arg} {cut(r.run_id)} {word}" for arg, r, out, word, cut in sides if r.outcome == out]
    if not odd:
        return ""
    swap = " (swapped? diff BAD GOOD compares them the other way round)" if len(odd) == 2 else ""
    return f"warning: {' and '.join(odd)}: what differs need not be what makes a run fail{swap}"


def inputs_line(d: InputDifference) -> str:
    """``inputs differ: task 'A' vs 'B'; this compares behaviour, not values``, each value cut to 60 characters."""
    return (
        f"inputs differ: {d.what} {short(d.good, 60, d.bad)!r} vs {short(d.bad, 60, d.good)!r}; "
        "this compares behaviour, not values"
    )


def differing_paths(a: Any, b: Any, limit: int = 8) -> list[str]:
    """The paths (``key``, ``key.sub``, ``items[2]``) at which two values' leaves differ, in key order, at most
    ``limit``: which fields differ, named (nu30 finding 8: a swap of two dates was visible only by eye).  Empty
    when either value is not a mapping or a list: a text that differs has no field to name."""
    out: list[str] = []

    def walk(x: Any, y: Any, path: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(x, Mapping) and isinstance(y, Mapping):
            for k in sorted(set(x) | set(y), key=str):
                sub = f"{path}.{k}" if path else str(k)
                if k not in x or k not in y:
                    out.append(sub)
                elif canonical(x[k]) != canonical(y[k]):
                    walk(x[k], y[k], sub)
                if len(out) >= limit:
                    return
        elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for i, (u, v) in enumerate(zip(x, y)):
                if canonical(u) != canonical(v):
                    walk(u, v, f"{path}[{i}]")
        else:
            out.append(path)

    if isinstance(a, (Mapping, list)) and isinstance(b, (Mapping, list)) and canonical(a) != canonical(b):
        walk(a, b, "")
    return [p for p in out if p]


def _fields_line(first: Pair) -> list[Line]:
    """``differs in: a, b`` under a first divergence whose two outputs (or, where the request differs, requests)
    are records: the fields to look at."""
    g, b = first.good, first.bad
    if g is None or b is None:
        return []
    x, y = (g.input, b.input) if first.status == "input" and not _same_args(g, b) else (g.output, b.output)
    paths = differing_paths(x, y)
    return [((f"  differs in: {', '.join(paths)}", "dim"),)] if paths else []


def first_divergence(al: Alignment) -> list[Line]:
    """The first divergence: the step, what differs, its values, and the steps downstream that changed."""
    first = al.first_divergence
    if first is None:
        return [(("the runs do not differ", "dim"),)]
    step = first.bad or first.good
    assert step is not None
    out: list[Line] = [
        (("first divergence: ", ""), (label(first), "bold"), (f" ({step.kind}): {words(first)}", ""))
    ]
    rows = values(al, first, 160)
    if not rows and first.good is not None and first.bad is None:
        rows = [("good:", short(first.good.output))]
    reported = reported_errors(al.bad)
    if not rows and first.bad is not None and first.good is None:
        rows = [("bad:", short(_shown(first.bad, None, reported)))]
    if first.bad is not None and first.bad.error is not None:
        rows = rows or [("bad:", "")]
        k, v = rows[-1]
        how = "" if raised(first.bad, reported) else f" ({NOT_RAISED})"
        rows[-1] = (k, f"{v}  ✗ {first.bad.error.type}: {first.bad.error.message}{how}")
    out.extend(((f"  {text}", ""),) for text in _pad(rows))
    out.extend(_fields_line(first))
    if first.status == "input" and al.inputs_differ is None:
        out.append(((f"  {_asked_by(al, first)}", "dim"),))
    out.extend(_impact(al, first))
    out.extend(_origins(al))
    return out


def _origins(al: Alignment) -> list[Line]:
    """The "origins" line when more than one step answered the same request otherwise (`Alignment.origins`, what
    ``--json`` lists as ``origins``): each made a difference of its own, not only the first (nu63)."""
    origins = al.origins
    if len(origins) < 2:
        return []
    names = [label(p) for p in origins[:IMPACT_SHOWN]]
    if len(origins) > IMPACT_SHOWN:
        names.append(f"and {len(origins) - IMPACT_SHOWN} more (--json lists them)")
    return [((f"origins (same request, different output): {len(origins)} steps: {', '.join(names)}", ""),)]


def _asked_by(al: Alignment, first: Pair) -> str:
    """Where the request of a first divergence whose request differs came from.  A nested step's request comes
    from the step enclosing it (`first_divergence` passes over enclosing steps): that step is named, with
    whether its own request differs too; a step at the top was asked by code between the recorded steps."""
    bad = al.bad.step_map()
    parent = bad.get(first.bad.parent_id) if first.bad is not None and first.bad.parent_id else None
    if parent is None:
        return (
            "no recorded step before it differs: its request changed outside the recorded steps (the run's "
            "input, or code between steps, such as a default set where an error was caught)"
        )
    up = next((p for p in al.pairs if p.bad is parent), None)
    name = f"{parent.name}#{parent.step_id[-6:]}"
    if up is not None and up.status == "input":
        return f"its request comes from the step enclosing it, {name}, whose own request differs too"
    return (
        f"its request comes from the step enclosing it, {name}, given the same request in both runs: "
        f"{name}'s own code made the difference before it called this step"
    )


def _impact(al: Alignment, first: Pair) -> list[Line]:
    """The "downstream impact" line: the steps after the first divergence that changed (`Alignment.impact`)."""
    impact = al.impact(first)
    if not impact:
        return []
    names = [f"{al.bad.step(s).name}#{s[-6:]}" for s in impact[:IMPACT_SHOWN]]
    if len(impact) > IMPACT_SHOWN:
        names.append(f"and {len(impact) - IMPACT_SHOWN} more (--json lists them)")
    plural = "s" if len(impact) != 1 else ""
    return [((f"downstream impact: {len(impact)} step{plural}: {', '.join(names)}", ""),)]


def table(al: Alignment) -> list[Line]:
    """One row per aligned position (mark, kind, step, what differs), with the differing values under it."""
    out: list[Line] = []
    steps = step_maps(al)
    if any(p.status == "only-good" for p in al.pairs):
        good, bad = (n.split(" (")[0] for n in al.side_names())
        out.append(((f"  step ids are {bad}'s; good#ID is {good}'s (ids are per run)", "dim"),))
    for p in al.pairs:
        s = p.bad or p.good
        assert s is not None
        style = _STYLE.get(p.status, "magenta")
        out.append(((f"  {MARKS[p.status]}  {s.kind:<9} {label(p)}", style), (f"  {words(p)}".rstrip(), "")))
        out.extend(((f"       {text}", "dim"),) for text in _pad(values(al, p, 120, steps)))
    return out


def isolation_lines(al: Alignment, iso: Any) -> list[Line]:
    """What ``--isolate`` found: the failure-inducing differences (dd) and the earliest correction."""
    if iso.problem:
        return [((f"isolation: {iso.problem}", ""),)]
    bad = al.bad
    names = ", ".join(f"{bad.step(s).name}#{s[-6:]}" for s in iso.failure_inducing) or "none"
    out: list[Line] = [
        ((f"failure-inducing difference (dd, {iso.replays} replays): ", ""), (names, "bold")),
    ]
    if iso.earliest:
        out.append(
            ((f"earliest correction that removes the failure: {bad.step(iso.earliest).name}#{iso.earliest[-6:]}", ""),)
        )
    return out


def diff_lines(al: Alignment, iso: Any = None, short: Shorten | None = None) -> list[Line]:
    """Everything ``trajdebug diff`` prints: header, first divergence, the aligned table, and the isolation;
    ``short`` shows each run's id (default: cut against the other's, `Shorten`)."""
    out = [*header(al, short), *first_divergence(al), (), *table(al)]
    if iso is not None:
        out.extend([(), *isolation_lines(al, iso)])
    return out


MATCHED_BY = {"task": "task id", "task_id": "task id", "input": "entry arguments", "args": "entry arguments"}
"""How a passing run of the same input was paired with the failing one, in the words the report uses, by where
`trajdebug.analysis.reference.given_input` read the input (a metadata key; ``first``: the first step's input)."""


def parting(good: Run, bad: Run) -> dict[str, Any]:
    """What the report says of a passing run of the same input (``good``, as `trajdebug.same_input` pairs it with
    the failing run ``bad``): which run, how it was matched (the metadata key the input was read from, with the
    first step's input where both state one, or the first step's input alone) and the first step where the runs
    part, as ``trajdebug diff GOOD BAD`` names it (`first_divergence`; None when no step differs)."""
    from trajdebug.analysis.reference import first_input_key, given_input
    from trajdebug.replay.align import align

    given = given_input(bad)
    where = given[0] if given is not None else "first"
    first_too = where != "first" and None not in (first_input_key(good), first_input_key(bad))
    al = align(good, bad)
    first = al.first_divergence
    return {
        "run_id": good.run_id,
        "matched_by": where,
        "matched_words": MATCHED_BY.get(where, "first step's input"),
        "matched_value": None if given is None else short(given[1], 120),
        "first_input_too": first_too,
        "first_step": bad.steps[0].name if bad.steps else None,
        "first_divergence": None if first is None else {
            "step_id": first.bad.step_id if first.bad is not None else None,
            "label": label(first),
            "status": first.status,
            "words": words(first),
        },
        "counts": al.counts(),
    }


__all__ = [
    "IMPACT_SHOWN",
    "MATCHED_BY",
    "MARKS",
    "WORDS",
    "Line",
    "diff_lines",
    "first_divergence",
    "header",
    "inputs_line",
    "isolation_lines",
    "label",
    "parting",
    "short",
    "step_maps",
    "table",
    "values",
    "words",
]
