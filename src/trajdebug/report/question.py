"""One question of the guided search, as a person sees it, and what the answers found.

The guided search (`trajdebug.analysis.GuidedSearch`) asks about one step at a
time: is its output right, what the run needed there (wrong also when the step
only passed on a wrong value it was given)?  A person needs the step (its
kind, its name, where it sits: its place in the run, the step it runs inside,
its agent), what it received, what it returned, and the steps that produced
what it received.  `question_for` gathers that from the run; the terminal
(`render_question`), the HTML report and ``trajdebug serve`` (`question_to_dict`)
show the same.  `render_guided` prints the end: the root, the answers that
prove it and the path from it to the failure.

Every value shown comes from the run (model and tool output, names), so it is
escaped (`trajdebug.core.escape.visible`) and never read as rich markup; a long value
is folded to `FOLD` characters until the person expands it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trajdebug.core.escape import one_line, visible
from trajdebug.core.model import ASKED_GROUP, Answer, Run, Step
from trajdebug.report.step import value_text
from trajdebug.report.text import agent_of, answer_word, short


if TYPE_CHECKING:
    from trajdebug.analysis import Analysis, Guided, GuidedSearch

FOLD = 600
"""Characters of a value shown before it is folded (``e`` in the terminal, a button in the page, expands it)."""

FOLD_LINES = 12
"""Lines of a value shown before it is folded."""

FOLD_SLACK = 80
"""A value at most this many characters past the fold is shown whole."""


@dataclass(frozen=True, slots=True)
class Producer:
    """A step that produced something the questioned step received."""

    step_id: str
    name: str
    kind: str
    output: Any


@dataclass(frozen=True, slots=True)
class Question:
    """What a person needs to judge one step: the step, where it sits, its input, output and producers."""

    step_id: str
    name: str
    kind: str
    index: int
    """The step's place in the run, from 1 (start order)."""
    total: int
    """How many steps the run has."""
    parent: str | None
    """The name of the step it runs inside, if any."""
    agent: str | None
    """The agent it ran inside (`trajdebug.report.text.agent_of`: None for the agent's own step)."""
    input: Any
    output: Any
    producers: tuple[Producer, ...]
    number: int = 1
    """Which question this is (1 for the first asked in this session)."""
    wrote: Any = None
    """What the step wrote into ``run.state`` (key -> value), None when it wrote nothing: a state step's
    return is often nothing at all, and what it left in the state is what its readers took."""
    error: str | None = None
    """The error the step ended with or reported (``HTTPError: HTTP Error 503``), None without one: a step that
    raised has no output to judge (``null``), and the person asked whether it is right needs to see why."""


def question_for(run: Run, step_id: str, number: int = 1) -> Question:
    """The question about one step of a run.

    Raises:
        KeyError: the run has no such step.
    """
    steps = run.step_map()
    position = {s.step_id: i for i, s in enumerate(run.steps, start=1)}
    return _question(run, steps, position, step_id, number)


def _question(run: Run, steps: dict[str, Step], position: dict[str, int], step_id: str, number: int) -> Question:
    step = steps[step_id]
    index = position[step_id]
    parent = steps.get(step.parent_id) if step.parent_id else None
    read: dict[str, dict[str, Any]] = {}
    for d in step.deps:
        # What a reader took from run.state is what the key's writer wrote there, not what the writer returned
        # (a count of the rows it stored): the person judging the reader needs the value it read.
        written = steps[d.step_id].attributes.get("state_values") if d.kind == "state" and d.step_id in steps else None
        if isinstance(written, Mapping) and d.key in written:
            read.setdefault(d.step_id, {})[str(d.key)] = written[d.key]
    seen: set[str] = set()
    producers = []
    for d in step.deps:
        p = steps.get(d.step_id)
        if p is None or d.run_id not in (None, run.run_id) or p.step_id in seen:
            continue
        seen.add(p.step_id)
        producers.append(Producer(p.step_id, p.name, p.kind, read.get(p.step_id, p.output)))
    return Question(
        step_id=step.step_id,
        name=step.name,
        kind=step.kind,
        index=index,
        total=len(run.steps),
        parent=parent.name if parent is not None else None,
        agent=agent_of(step, parent),
        input=step.input,
        output=step.output,
        producers=tuple(producers),
        number=number,
        wrote=_wrote(step),
        error=f"{step.error.type}: {step.error.message}" if step.error is not None else None,
    )


def _wrote(step: Step) -> Any:
    """The state values a step wrote (``state_values``), or None."""
    values = step.attributes.get("state_values")
    return dict(values) if isinstance(values, Mapping) and values else None


def fold(value: Any, expanded: bool = False) -> tuple[str, int]:
    """A value as visible text, and how many characters were folded away (0 when shown whole)."""
    text = visible(value_text(value))
    if expanded:
        return text, 0
    lines = text.splitlines()
    cut = "\n".join(lines[:FOLD_LINES]) if len(lines) > FOLD_LINES else text
    cut = cut[:FOLD]
    if len(text) - len(cut) <= FOLD_SLACK:
        return text, 0  # hiding a few characters behind a key costs more than showing them
    return cut, len(text) - len(cut)


def where(q: Question) -> str:
    """Where the step sits, in words: ``step 5 of 12, inside 'agent', agent 'sales'``."""
    parts = [f"step {q.index} of {q.total}"]
    if q.parent:
        parts.append(f"inside {one_line(q.parent)!r}")
    if q.agent:
        parts.append(f"agent {one_line(q.agent)!r}")
    return ", ".join(parts)


def question_to_dict(q: Question) -> dict[str, Any]:
    """The question as JSON data for the report and serve; values as visible text, whole (the page folds them)."""
    return {
        "step_id": q.step_id,
        "short": short(q.step_id),
        "name": visible(q.name),
        "kind": q.kind,
        "where": where(q),
        "number": q.number,
        "input": visible(value_text(q.input)),
        "output": visible(value_text(q.output)),
        "wrote": None if q.wrote is None else visible(value_text(q.wrote)),
        "error": None if q.error is None else visible(q.error),
        "producers": [
            {
                "step_id": p.step_id,
                "short": short(p.step_id),
                "name": visible(p.name),
                "kind": p.kind,
                "output": visible(value_text(p.output)),
            }
            for p in q.producers
        ],
    }


def render_question(q: Question, console: Any, *, expanded: bool = False) -> bool:
    """Print a question; return whether anything was folded (so ``e`` has something to expand)."""
    from rich.text import Text

    head = Text(f"question {q.number}: ", style="bold")
    head.append(f"{q.kind} ", style="cyan")
    head.append(one_line(q.name), style="bold")
    head.append(f" #{short(q.step_id)}", style="dim")
    head.append(f"  ({where(q)})", style="dim")
    console.print(head, overflow="fold")
    folded = False
    shown = [("input", q.input), ("output", q.output)]
    if q.wrote is not None:
        shown.append(("wrote to run.state", q.wrote))
    if q.error is not None:
        shown.append(("error (it raised or reported this)", q.error))
    for title, value in shown:
        text, cut = fold(value, expanded)
        folded = folded or cut > 0
        console.print(Text(f"  {title}", style="cyan"))
        for line in text.splitlines() or [""]:
            console.print(Text("    " + line), overflow="fold")
        if cut:
            console.print(Text(f"    … {cut} more characters (e expands)", style="dim"))
    if q.producers:
        console.print(Text("  its inputs came from", style="cyan"))
        for p in q.producers:
            text, cut = fold(p.output, expanded)
            first = _preview(text)
            more = " …" if cut or len(first) < len(" ".join(text.split())) else ""
            row = Text(f"    ← {p.kind} ")
            row.append(one_line(p.name), style="bold")
            row.append(f" #{short(p.step_id)}", style="dim")
            row.append(f": {first}{more}")
            console.print(row, overflow="fold")
            folded = folded or bool(more)
    else:
        console.print(Text("  its inputs have no recorded producer", style="dim"))
    return folded


def _preview(text: str, width: int = 120) -> str:
    """A value's first ``width`` characters on one line, its lines joined (a pretty-printed list or object
    starts with a line holding only ``[`` or ``{``, which says nothing of what it holds)."""
    return one_line(" ".join(text.split()))[:width]


def ask_data(analysis: Analysis, endpoint: str | None = None) -> dict[str, Any]:
    """What the report's "find the cause" panel needs to run the guided search in the page.

    The failure's slice in topological order (``ids``), each step's producers in
    it (``parents``, indices), the prior (``prior``) and the stored answers (``tally``,
    the order they came in ``voted``); the page reads each question's step, place,
    values and producers from the run it embeds.  With an
    ``endpoint`` (``trajdebug serve``) the page asks the server instead, which runs
    the same search in Python and stores each answer.
    """
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.schema import answer_to_dict

    search = GuidedSearch(analysis, analysis.run.answers)
    up = _enclosing(search)
    starts = [search.graph.steps[s].start_ns for s in search.ids]
    ends = [e if (e := search.graph.steps[s].end_ns) is not None else t for s, t in zip(search.ids, starts, strict=True)]
    carries = [[p for p in ps if search.carrier.carries(j, p)] for j, ps in enumerate(search.parents)]
    votes = search.verdicts
    return {
        "failure": search.failure,
        "ids": search.ids,
        "parents": search.parents,
        "prior": list(search.mass),
        # The stored answers as `_verdicts.Verdicts` counts them (`Verdicts.tally`: how many were given, and of
        # the most trusted source's, how many said correct, erroneous, inadmissible, plain wrong, erroneous by a
        # person): the page combines its own answers with them as Python does (a majority stands, a tie is
        # asked again) and derives what an erroneous answer vouches for, in the order they came (``voted``),
        # with each step's nearest enclosing step (``up``).  Each is null when it says nothing (no answer yet,
        # no step inside another, nothing relayed whole): the page then reads its default, and a large run's
        # document stays small.
        "tally": [votes.tally(i) if i in votes.votes else None for i in range(len(search.ids))] if votes.votes else None,
        "voted": list(search.votes),
        "up": up if any(u >= 0 for u in up) else None,
        # A correct answer implies its carried inputs correct (`GuidedSearch._imply`): each step's inputs it
        # relays whole (`Carrier.carries`), node indices.
        "carries": carries if any(carries) else None,
        # A pass-through container is asked after its child, whose wrong answer stands for it (`GuidedSearch._stand`):
        # each node's child standing for it (-1: none), and the containers whose answer is their child's.
        "stands": [search.stand_in.get(i, -1) for i in range(len(search.ids))] if search.stand_in else None,
        "stood": sorted(search.stood),
        # Not the record of a group's question (the page asks no group): it judges no step.
        "answers": [answer_to_dict(a) for a in analysis.run.answers if a.asked != ASKED_GROUP],
        "endpoint": endpoint,
        # The audit (GuidedSearch._audit): its budget, whose proofs it tests, whom it may ask, in what order.
        "audit": search.audit,
        "weak": [search.weak(i) for i in range(len(search.ids))],
        "auditable": [search.auditable(i) for i in range(len(search.ids))],
        "start": starts,
        # Each step's end (its start when it recorded none, `_verdicts.until`): a step that started before another
        # ended may have fed it (`_verdicts.fed_in_time`); null when every step ended as it started.
        "end": ends if ends != starts else None,
    }


def _enclosing(search: GuidedSearch) -> list[int]:
    """Each search node's nearest enclosing node (by index; -1: none), through steps that are not nodes: the
    first of `Carrier.enclosing`, the relation the Python search uses."""
    return [e[0] if (e := search.carrier.enclosing(i)) else -1 for i in range(len(search.ids))]


def proving(guided: Guided, run: Run) -> list[Answer]:
    """The answers that prove the root (or, not certain, point at it): the root's own, those about the steps
    that produced its inputs, and those about the children it handed a wrong input (`Guided.misled`)."""
    if guided.root is None:
        return []
    steps = run.step_map()
    root = steps.get(guided.root)
    inputs = {d.step_id for d in root.deps} if root is not None else set()
    inputs.update(guided.misled)
    # The answers of its audit too (asked to test this root's proof, not another's): with no recorded input,
    # the earlier steps it asked are what the proof rests on.
    audit = f"audit:{guided.root}"
    said = [a for a in guided.questions if a.step_id == guided.root or a.step_id in inputs or a.asked == audit]
    # An input nobody was asked about stands correct on another answer (a relay answered correct, an
    # erroneous answer about the root): listed with that answer's answerer and why, never as nobody's word.
    asked = {a.step_id for a in said}
    implied = [a for a in guided.implied if a.step_id in inputs and a.step_id not in asked] if guided.certain else []
    return said + implied


def _inputs_said(guided: Guided, root: Any) -> str:
    """What a certain root's inputs were answered: every recorded one correct; with none recorded, the earlier
    steps its audit asked correct (any of them may have fed it unrecorded), or none could have fed it."""
    if root is None or root.deps:
        return "every input it consumed was answered correct"
    audit = f"audit:{guided.root}"
    if any(a.asked == audit and a.correct is True for a in guided.questions):
        return "no input of it was recorded; the earlier steps that may have fed it unrecorded, asked below, were answered correct"
    return "no input of it was recorded, and no step before it could have fed it"


def _unproven(guided: Guided, label: Callable[[str], str]) -> str:
    """What would prove a root left unproven with nothing left to ask (`Guided.unproven`): no input of it was
    recorded and no earlier step that may have fed it was answered correct in its audit."""
    unsure = [label(s) for s in guided.unproven or ()]
    said = f", and its audit's {' and '.join(unsure)} {'were' if len(unsure) > 1 else 'was'} answered don't know" if unsure else ""
    ways = ['"correct" about ' + ("one of those" if len(unsure) > 1 else "it" if unsure else "an earlier step its audit asks")]
    if guided.root != guided.failure:  # the failure is wrong by definition: never asked
        ways.insert(0, '"no, its own fault" ([o]) about the root')
    return (f"not proven: no input of it was recorded, so a step before it may have fed it unrecorded{said}; "
            f"it would be proven by {' or by '.join(ways)}")


def render_guided(guided: Guided, run: Run, console: Any) -> None:
    """Print the search's end: the root (certain or likeliest), the answers that prove it, the path to the failure."""
    from rich.text import Text

    steps = run.step_map()

    def label(sid: str) -> str:
        s = steps.get(sid)
        return f"{one_line(s.name) if s else '?'} #{short(sid)}"

    if guided.failure is None:
        console.print(Text("nothing to ask: no failing step found in this run", style="yellow"))
        return
    clash = " and ".join(label(s) for s in guided.clashing)
    if guided.conflict:
        one, other = guided.conflict[:2]
        # The steps whose answers clash first (one of those answers is wrong), then where each side's root likely is.
        said = f"the answers about {clash} admit no single root" if clash else "the answers admit no single root"
        console.print(Text(f"{said}: the likeliest root is {label(one)} or {label(other)}", style="yellow"))
        return
    if guided.root is None:
        console.print(Text("no root found", style="yellow"))
        return
    head = Text("root: ", style="bold")
    head.append(label(guided.root), style="bold red")
    own = [a for a in guided.questions if a.step_id == guided.root and a.correct is False]
    if guided.certain and own and own[-1].admissible:
        head.append("  (certain: answered wrong for the inputs it was given, and those were right)")
    elif guided.certain:
        # Its output is wrong because the run failed there (a detector's finding, no one's answer) or on an
        # answer; its inputs are right on the answers listed below, or it has none recorded (`_inputs_said`).
        wrong = "the run failed at this step" if guided.root == guided.failure else "its output is wrong"
        head.append(f"  (certain: {wrong}, and {_inputs_said(guided, steps.get(guided.root))})")
    elif kids := guided.misled:
        # Never certain (`Verdicts.misled`): the child's input is proven wrong, not that the container wrote it.
        was = "were" if len(kids) > 1 else "was"
        head.append(f"  (likeliest, not certain: it called {' and '.join(label(k) for k in kids)}, which {was} given "
                    "a wrong input; the recording cannot show that nothing else fed "
                    f"{'them' if len(kids) > 1 else 'it'})")
    else:
        p = dict(guided.candidates).get(guided.root)
        head.append(f"  (likeliest so far{f', p={p:.2f}' if p is not None else ''}; not proven by the answers)")
    console.print(head, overflow="fold")
    if guided.unproven is not None:
        console.print(Text(f"  {_unproven(guided, label)}", style="yellow"), overflow="fold")
    proof = proving(guided, run)
    if proof:
        title = "the answers that prove it:" if guided.certain else "the answers so far about it and its inputs:"
        console.print(Text(f"  {title}", style="cyan"))
        for a in proof:
            why = f" ({visible(a.reason)})" if a.reason and a.reason.startswith("implied") else ""
            if a.asked == f"audit:{guided.root}":
                why = " (an earlier step that may have fed it unrecorded: its audit)"
            console.print(Text(f"    {answer_word(a):<10} {label(a.step_id)}  by {visible(a.by)}{why}"), overflow="fold")
    if guided.path:
        console.print(Text("  path to the failure: " + " → ".join(label(s) for s in guided.path)), overflow="fold")
    if not guided.certain and len(guided.candidates) > 1:
        rest = ", ".join(f"{label(s)} {p:.2f}" for s, p in guided.candidates[:5])
        console.print(Text(f"  candidates: {rest}", style="dim"), overflow="fold")
    if clash:  # a tie no question may settle (`GuidedSearch` ``once``)
        console.print(Text(f"the answers about {clash} disagree, and none outweighs the other", style="yellow"))


__all__ = [
    "FOLD",
    "ask_data",
    "FOLD_LINES",
    "Producer",
    "Question",
    "fold",
    "proving",
    "question_for",
    "question_to_dict",
    "render_guided",
    "render_question",
    "where",
]
