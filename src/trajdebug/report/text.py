"""Terminal rendering of runs: the step tree with kinds, timing, status and dependencies.

Written for an 80-column terminal: one line per step, dependencies on an
indented line below it.  Colour comes from rich when the output is a terminal;
untrusted text (step names, messages, ids) goes through `trajdebug.core.escape`,
so it can inject neither markup nor terminal control sequences.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.core.escape import markup, one_line, visible
from trajdebug.core.model import ASKED_GROUP, CONTAINER_KINDS, Answer, Dependency, Run, Step
from trajdebug.core.schema import lost_records


KIND_STYLE = {
    "llm": "magenta",
    "tool": "cyan",
    "parse": "yellow",
    "condition": "blue",
    "retrieval": "green",
    "state": "bright_blue",
    "agent": "bold",
    "input": "dim",
    "output": "bright_white",
    "other": "white",
}


def outcome_label(run: Run) -> str:
    """A run's outcome as shown: a run the recorder lost records of says so (never plain ``success``)."""
    lost = lost_records(run)
    return f"{run.outcome}, {lost:,} record{'s' if lost != 1 else ''} lost" if lost else run.outcome


def fmt_duration(ns: int | None) -> str:
    """A duration for humans: ``820ns``, ``12.3ms``, ``4.1s``; ``running`` when unknown."""
    if ns is None:
        return "unfinished"
    if ns < 1_000:
        return f"{ns}ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:.1f}µs"
    if ns < 1_000_000_000:
        return f"{ns / 1_000_000:.1f}ms"
    return f"{ns / 1_000_000_000:.2f}s"


def short(step_id: str) -> str:
    """The last 6 characters of an id, made visible: enough to tell steps of one run apart (an id is the
    agent's data, so a control character in it is shown, never sent to the terminal)."""
    return one_line(step_id[-6:])


def agent_of(step: Step | None, parent: Step | None) -> str | None:
    """The agent a step ran inside, for its label (None: none recorded, or the step is that agent's own step).

    Told by identity, never by name (an agent ``weather`` often calls a tool ``weather``): the agent's own step
    is the container step (``kind="agent"``) where the agent starts, its ``parent`` (None at the top) of another
    agent or of none; every step within it, a sub-agent loop of the same agent too, ran inside it.  A step is
    never shown as inside itself."""
    if step is None or not step.agent:
        return None
    starts = step.kind in CONTAINER_KINDS and (parent is None or parent.agent != step.agent)
    return None if starts else step.agent


def describe_dep(d: Dependency, steps: dict[str, Step]) -> str:
    """``name#id (kind, origin[ confidence])``."""
    src = steps.get(d.step_id)
    name = src.name if src is not None else (f"run {d.run_id}" if d.run_id else "?")
    how = d.origin if d.origin != "inferred" else f"inferred {d.confidence:.2f}"
    # The lineage's relayed edges keep their "via FIELD" in the key (`trajdebug.analysis.lineage`): one "via" shown.
    key = f" via {d.key.removeprefix('via ')}" if d.key else ""
    return visible(f"{name}#{short(d.step_id)} ({d.kind}, {how}{key})")


def tree_lines(run: Run) -> Iterable[tuple[int, Step]]:
    """Steps in tree order (parents before children, siblings by start), with depth."""
    ids = {s.step_id for s in run.steps}
    kids: dict[str | None, list[Step]] = defaultdict(list)
    for s in run.steps:
        parent = s.parent_id if s.parent_id in ids and s.parent_id != s.step_id else None
        kids[parent].append(s)
    seen: set[str] = set()
    # Steps caught in a parent cycle are reachable from no top-level step: they
    # are shown at the top level too, never left out.
    for root in [*kids[None], *run.steps]:
        if root.step_id in seen:
            continue
        stack: list[tuple[int, Step]] = [(0, root)]
        while stack:
            depth, s = stack.pop()
            if s.step_id in seen:
                continue
            seen.add(s.step_id)
            yield depth, s
            stack.extend((depth + 1, c) for c in reversed(kids.get(s.step_id, ())))


SHOW_LIMIT = 1_000
"""Steps `render_run` shows of a larger run unless asked for all: the first ones and the last `SHOW_TAIL`."""
SHOW_TAIL = 100
"""Of the steps shown of a capped run, how many are its last ones (where a failure usually shows)."""


def shown_steps(
    run: Run, *, max_steps: int | None = None, everything: bool = False
) -> list[tuple[int, Step] | int]:
    """The steps `render_run` shows, in tree order with their depth; a stretch left out is its step count.

    ``max_steps``: the first that many.  Otherwise a run of more than `SHOW_LIMIT`
    steps shows its first and its last ones (`SHOW_TAIL` of them), unless ``everything``.
    """
    lines: list[tuple[int, Step] | int] = list(tree_lines(run))
    if max_steps is not None:
        head, tail = max_steps, 0
    elif everything or len(lines) <= SHOW_LIMIT:
        return lines
    else:
        head, tail = SHOW_LIMIT - SHOW_TAIL, SHOW_TAIL
    if len(lines) <= head + tail:
        return lines
    return [*lines[:head], len(lines) - head - tail, *(lines[len(lines) - tail :] if tail else [])]


def usage_text(u: Any) -> str:
    """Model, tokens and cost in a few words: ``gpt-4o 1,234 tok (1,000 in, 234 out) $0.0049``."""
    from trajdebug.usage import format_cost, format_tokens

    parts = [visible(u.model)] if u.model and u.calls == 1 else []
    if u.calls > 1:
        parts.append(f"{u.calls} LLM calls")
    if u.total_tokens is not None:
        tok = f"{format_tokens(u.total_tokens)} tok"
        if u.prompt_tokens is not None and u.completion_tokens is not None:
            tok += f" ({format_tokens(u.prompt_tokens)} in, {format_tokens(u.completion_tokens)} out)"
        parts.append(tok)
    if u.cost is not None:
        parts.append(format_cost(u.cost))
    return " ".join(parts)


NESTED_RUN = "a nested Runner.run (an agent run as a tool): the Agents SDK names every run's task span after the workflow"
"""How `show` marks an Agents SDK task span nested in another step (an agent run as a tool, ``Agent.as_tool``):
the SDK opens a task span per ``Runner.run`` named after the trace's workflow, so the sub-agent's run appears
under its tool step with the parent workflow's name, which read as a recursive run (nu25 F12).  The name is the
SDK's and is kept (a step's name is its replay key and what its runs are matched by); the mark says what it is."""


CUT_SHORT = "cut short by the run's failure"
"""How `show` marks a step that ended empty, with no error of its own, after the error that failed the run
(a parallel tool call or task cancelled as the failure unwound: `cut_short`)."""


def cut_short(run: Run) -> frozenset[str]:
    """The steps the run's failure cut short, as the analysis reads them (`trajdebug.analysis.cut_short_steps`):
    derived when shown, never stored (a recorder that saw the cancellation stores ``interrupted`` instead)."""
    ends = [s.end_ns for s in run.steps if s.status == "error" and s.end_ns is not None]
    if not ends:
        return frozenset()  # only a raised error cuts steps short: a clean run never loads the analysis
    first = min(ends)
    if not any(s.status == "ok" and (s.end_ns or 0) > first and _maybe_empty(s.output) for s in run.steps):
        # No step could have been cut short (one ends, empty, after an error): nor is the analysis loaded,
        # most of what `show` cost on a failed run (nu64b).
        return frozenset()
    from trajdebug.analysis import cut_short_steps

    return cut_short_steps(run)


def _maybe_empty(value: Any) -> bool:
    """Whether `trajdebug.analysis`'s ``is_empty`` could hold for a value: never false when it holds (a short
    text, any mapping, an empty list), so the analysis is loaded only when a step might have been cut short."""
    if value is None or isinstance(value, Mapping):
        return True
    if isinstance(value, str):
        return len(value.strip()) <= len("no results found")
    return isinstance(value, (list, tuple)) and not value


def render_run(
    run: Run,
    console: Any,
    *,
    show_deps: bool = True,
    max_steps: int | None = None,
    everything: bool = False,
    shown_id: str | None = None,
) -> list[Step]:
    """Print a run as a tree on a rich console; return the steps shown.

    ``shown_id`` is the run id as the header shows it (`trajdebug.core.shortids`: unique in the source); by
    default its first 12 characters.

    A run of more than `SHOW_LIMIT` steps shows its first and last steps and
    says how many it left out, unless ``everything`` (``trajdebug show --all``);
    ``max_steps`` shows only the first that many.  Lines are printed in batches
    (rich's cost is per call).
    """
    from rich.text import Text

    from trajdebug.usage import default_prices, step_usage

    prices = default_prices()
    _render_head(run, console, prices, shown_id or run.run_id[:12])
    steps = run.step_map()
    cut = cut_short(run)
    shown: list[Step] = []
    batch: list[Any] = []

    def flush() -> None:
        if batch:
            console.print(Text("\n").join(batch), overflow="ellipsis", no_wrap=True)
            batch.clear()

    for item in shown_steps(run, max_steps=max_steps, everything=everything):
        if isinstance(item, int):
            batch.append(
                Text(f"  ... {item:,} more step{'s' if item != 1 else ''} not shown (--all shows every step)", style="dim")
            )
            continue
        depth, s = item
        shown.append(s)
        batch.append(_step_line(s, depth, cut, step_usage(s, prices) if s.kind == "llm" or s.attributes else None))
        pad = "  " + "  " * depth + " " * 9
        if s.parent_id is not None and s.attributes.get("agents.span_type") == "task":
            # Under the step, wrapped at words: on the step's own line the terminal cut it mid-word (nu26 F12).
            width = max(console.width - len(pad), 30)
            batch.extend(Text(pad + piece, style="dim") for piece in textwrap.wrap(f"({NESTED_RUN})", width))
        if show_deps and s.deps:
            for d in s.deps:
                batch.append(Text(pad + "← " + describe_dep(d, steps), style="dim"))
        if len(batch) >= 200:
            flush()
    flush()
    if run.answers:
        render_answers(run, console)
    return shown


def _render_head(run: Run, console: Any, prices: Any, shown_id: str) -> None:
    """The run's header lines: id, name, outcome, counts, usage, reason and an injected fault."""
    from rich.text import Text

    from trajdebug.usage import run_usage

    escape = markup
    outcome_style = {"success": "green", "failure": "bold red", "incomplete": "yellow"}.get(run.outcome, "white")
    head = Text()
    head.append(f"run {visible(shown_id)}  ", style="bold")
    head.append(visible(run.name or "(unnamed)"))
    head.append("  ")
    head.append(outcome_label(run), style=outcome_style if not lost_records(run) else "yellow")
    n_steps, n_errors = len(run.steps), len(run.errors)
    units = [
        Text(
            f"{n_steps} step{'s' if n_steps != 1 else ''}, {n_errors} error{'s' if n_errors != 1 else ''}, "
            f"{fmt_duration(run.duration_ns)}"
        )
    ]
    total = run_usage(run, prices)
    if total.calls:
        units.append(Text(usage_text(total), style="cyan"))
    # Each unit whole: a unit that does not fit goes on a line of its own, indented, rather than the terminal
    # breaking it at a space (nu25 read "69.9ms  9" then "LLM calls 1,343 tok": the count cut from its noun).
    lines = [head]
    for unit in units:
        if len(lines[-1].plain) + 2 + len(unit.plain) > console.width:
            lines.append(Text("  "))
        else:
            lines[-1].append("  ")
        lines[-1].append_text(unit)
    for line in lines:
        console.print(line)
    if run.failure_reason:
        console.print(f"  reason: {escape(run.failure_reason)}", style="red")
    fault = run.metadata.get("fault") if isinstance(run.metadata, dict) else None
    if isinstance(fault, dict) and fault.get("name"):
        where = f" at #{escape(short(str(fault['step_id'])))}" if fault.get("step_id") else ""
        console.print(f"  injected fault: {escape(str(fault.get('name')))}{where}", style="dim")


def _step_line(s: Step, depth: int, cut: frozenset[str], u: Any) -> Any:
    """One step's line: kind, name, id, attempt, duration, usage and how it ended."""
    from rich.text import Text

    line = Text("  " + "  " * depth)
    line.append(f"{s.kind:<9} ", style=KIND_STYLE.get(s.kind, "white"))
    line.append(one_line(s.name))
    line.append(f"#{visible(short(s.step_id))}", style="dim")
    if s.attempt != 1:
        line.append(f" attempt {s.attempt}", style="yellow")
    line.append(f"  {fmt_duration(s.duration_ns)}", style="dim")
    if u is not None:
        line.append(f"  {usage_text(u)}", style="cyan")
    if s.status == "error" and s.attributes.get("interrupted"):
        line.append(f"  ⊘ interrupted ({one_line(str(s.attributes['interrupted']))})", style="yellow")
    elif s.status == "error":
        msg = s.error.type if s.error else "error"
        line.append(f"  ✗ {one_line(msg)}", style="red")
    elif s.step_id in cut:
        line.append(f"  ⊘ {CUT_SHORT}", style="yellow")
    elif s.end_ns is None:
        line.append("  … unfinished", style="yellow")
    return line


ANSWER_WORD: dict[bool | None, str] = {True: "correct", False: "wrong", None: "don't know"}
"""How an answer's ``correct`` reads in the terminal and the reports."""


def answer_word(a: Answer) -> str:
    """How an answer reads: `ANSWER_WORD`, a wrong one saying whether what the step was given was right; the
    record of a group's question (`ASKED_GROUP`) as what it said of the group."""
    if a.asked == ASKED_GROUP:
        return "not all"
    if a.correct is False and a.admissible is not None:
        return "wrong (its own fault)" if a.admissible else "wrong (given a wrong input)"
    return ANSWER_WORD[a.correct]


def render_answers(run: Run, console: Any) -> None:
    """Print the answers stored with a run: the step, the judgement, who gave it and why."""
    from rich.text import Text

    steps = run.step_map()
    console.print(Text(f"  answers ({len(run.answers)}):", style="bold"))
    for a in run.answers:
        step = steps.get(a.step_id)
        line = Text("    ")
        style = "yellow" if a.correct is None else "green" if a.correct else "red"
        line.append(f"{answer_word(a):<10} ", style=style)
        line.append(one_line(step.name) if step else "(no such step)")
        line.append(f"#{visible(short(a.step_id))}", style="dim")
        line.append(f"  by {visible(a.by)}", style="dim")
        if a.reason:
            line.append(f": {one_line(a.reason)}")
        console.print(line, overflow="ellipsis", no_wrap=True)
