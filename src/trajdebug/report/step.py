"""One step in full on a terminal: what it received, what it returned, its error and its dependencies.

``trajdebug show --step SEL`` prints the steps a selector picks, and
``trajdebug show --io`` prints every step's input and output under the tree.
Values are printed as indented JSON (strings as they are); control
characters in them are shown escaped, so a tool's output cannot move the
cursor or recolour the terminal, and nothing is read as rich markup.
"""

from __future__ import annotations

import json
import re
from typing import Any

from trajdebug.core.model import Run, Step
from trajdebug.report.text import CUT_SHORT, cut_short, describe_dep, fmt_duration, short


IO_LIMIT = 2_000
"""Characters of a value ``--io`` prints before cutting it (``--step`` prints it all)."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """Text with control characters (and bidirectional overrides) written as ``\\xNN`` / ``\\uNNNN``."""
    return _CONTROL.sub(lambda m: ascii(m.group())[1:-1], text)


def value_text(value: Any, limit: int | None = None) -> str:
    """A value as text: a string as it is, anything else as indented JSON; cut at ``limit`` characters."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, indent=2, ensure_ascii=False, default=repr)
        except (TypeError, ValueError):
            text = repr(value)
    text = printable(text)
    if limit is not None and len(text) > limit:
        text = text[:limit] + f"… ({len(text) - limit} more characters; --step shows it all)"
    return text


def select_steps(run: Run, selector: str) -> list[Step]:
    """The steps a selector names: a step id, the end or start of one (as shown, ``#000005``), a name, or a
    name and id as every listing prints them (``search_hotels#000006``).

    An exact id wins; then a name joined to the end of an id by ``#`` (the form ``analyze`` and ``show``
    print, so a user can paste it back); otherwise every step whose id ends or starts with the selector
    (without its ``#``), and every step with that name.
    """
    sel = selector.lstrip("#")
    exact = [s for s in run.steps if s.step_id == sel]
    if exact:
        return exact
    name, hash_, tail = selector.rpartition("#")
    if hash_ and name and tail:
        printed = [s for s in run.steps if s.name == name and s.step_id.endswith(tail)]
        if printed:
            return printed
    return [s for s in run.steps if s.name == selector or s.step_id.endswith(sel) or s.step_id.startswith(sel)]


def render_step(step: Step, run: Run, console: Any, *, limit: int | None = None, io_only: bool = False) -> None:
    """Print one step: its header, input, output, error and (unless ``io_only``) attributes and dependencies.

    Args:
        step: The step.
        run: Its run (for dependency names and the steps that consumed it).
        console: A ``rich.console.Console``.
        limit: Cut each value after this many characters (None: print it whole).
        io_only: Only the header, the input, the output and the error.
    """
    from rich.text import Text

    steps = run.step_map()
    head = Text()
    head.append(f"{step.kind:<9}", style="dim")
    head.append(printable(step.name), style="bold")
    head.append(f"#{short(step.step_id)}  {fmt_duration(step.duration_ns)}  {step.status}")
    if step.status == "error" and step.attributes.get("interrupted"):
        head.append(f", interrupted ({printable(str(step.attributes['interrupted']))})")
    elif step.step_id in cut_short(run):
        head.append(f", {CUT_SHORT}")
    if step.attempt != 1:
        head.append(f"  attempt {step.attempt}")
    console.print(head, overflow="fold")

    def block(title: str, value: Any) -> None:
        console.print(Text(f"  {title}", style="cyan"))
        for line in value_text(value, limit).splitlines() or [""]:
            console.print(Text("    " + line), overflow="fold")

    block("input", step.input)
    block("output", step.output)
    if step.error is not None:
        console.print(Text(f"  error  {printable(step.error.type)}: {printable(step.error.message)}", style="red"), overflow="fold")
    if io_only:
        return
    if step.attributes:
        block("attributes", dict(step.attributes))
    if step.deps:
        console.print(Text("  depends on", style="cyan"))
        for d in step.deps:
            console.print(Text("    ← " + printable(describe_dep(d, steps))), overflow="fold")
    users = [(s, d) for s in run.steps for d in s.deps if d.step_id == step.step_id and d.run_id in (None, run.run_id)]
    if users:
        console.print(Text("  used by", style="cyan"))
        for s, d in users:
            how = d.origin if d.origin != "inferred" else f"inferred {d.confidence:.2f}"
            console.print(Text(f"    → {printable(s.name)}#{short(s.step_id)} ({d.kind}, {how})"), overflow="fold")


def step_to_json(step: Step, run: Run) -> dict[str, Any]:
    """A step as JSON data with the steps that consumed it (``used_by``)."""
    from trajdebug.report.json import step_to_dict

    out = step_to_dict(step)
    out["cut_short"] = step.step_id in cut_short(run)  # derived, as `show` marks it: not in the record
    out["used_by"] = [
        {"step_id": s.step_id, "kind": d.kind, "origin": d.origin, "confidence": d.confidence}
        for s in run.steps
        for d in s.deps
        if d.step_id == step.step_id and d.run_id in (None, run.run_id)
    ]
    return out


__all__ = ["IO_LIMIT", "printable", "render_step", "select_steps", "step_to_json", "value_text"]
