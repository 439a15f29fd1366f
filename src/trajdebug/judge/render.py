"""The judge's part of a report: which part of the ranking came from the model, and what it cost.

Printed after the deterministic analysis (which already carries the model's
lines among each cause's reasons): the endpoint and the tokens that went out,
the expected outline's first departure, each cause's verdict and how far it
moved from its deterministic rank, the explanation of the top cause, and what
failed.  Model text is untrusted: it was cleaned to one printable line when
read, and is escaped here for rich markup and for Markdown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.judge.judgment import Judgment, totals
from trajdebug.model import Step


def _name(steps: Mapping[str, Step], step_id: str) -> str:
    s = steps.get(step_id)
    return f"{s.name}#{step_id[-6:]}" if s is not None else f"?#{step_id[-6:]}"


def notice(judgments: Iterable[Judgment | None]) -> str | None:
    """One line: how many tokens went out, to which endpoint (None when nothing was asked)."""
    items = [j for j in judgments if j is not None]
    if not items:
        return None
    t = totals(items)
    where = ", ".join(dict.fromkeys(f"{j.endpoint} (model {j.model})" for j in items))
    cached = f", {t.cached} answered from the cache" if t.cached else ""
    return (
        f"judge: sent {t.tokens_sent:,} tokens in {t.requests} request{'s' if t.requests != 1 else ''} "
        f"to {where}, received {t.tokens_received:,}{cached}"
    )


def judgment_lines(j: Judgment, analysis: Any) -> list[str]:
    """The judge's part of an analysis as plain lines (two-space indents)."""
    steps = steps_of(analysis)
    out = [f"Model on top ({j.model} at {j.endpoint})"]
    u = j.usage
    out.append(
        f"  sent {u.tokens_sent:,} tokens in {u.requests} requests, received {u.tokens_received:,}"
        + (f"; {u.cached} answers from the cache" if u.cached else "")
        + (f"; {u.repairs} invalid answers repaired" if u.repairs else "")
    )
    if j.outline is not None:
        first = f"; first step departing from it: {_name(steps, j.departure)}" if j.departure else ""
        out.append(f"  expected solution outline: {len(j.outline.steps)} steps{first}")
    for i, c in enumerate(j.causes, 1):
        v = c.verdict
        was = f"deterministic rank {c.deterministic_rank}" if c.deterministic_rank else "a path step"
        moved = "" if c.deterministic_rank == i else f" ({was} → {i})"
        head = f"  {i}. {_name(steps, c.candidate.step_id)}{moved}: "
        if v is None:
            out.append(head + "not judged: deterministic score kept")
            continue
        out.append(head + f"{v.verdict}, confidence {v.confidence:.2f}, combined {c.combined:.3f}")
        if v.override:
            out.append(f"     the model said {v.said}; {v.override}")
        if v.reason:
            out.append(f"     {v.reason}")
    if j.explanation is not None:
        e = j.explanation
        out.append(f"  why {_name(steps, e.step_id)} erred: {e.cause}: {e.text}")
    out.extend(f"  problem: {p}" for p in j.problems)
    return out


def print_judgment(j: Judgment, console: Any, analysis: Any) -> None:
    """Print the judge's part of an analysis on a rich console (no markup is read from its text)."""
    from rich.padding import Padding
    from rich.text import Text

    lines = judgment_lines(j, analysis)
    console.print()
    console.print(Text(lines[0], style="bold"))
    for line in lines[1:]:
        body = line.lstrip(" ")
        style = "yellow" if body.startswith("problem:") else ""
        # Text, not markup: the model's words are printed as they are; Padding keeps wrapped lines indented.
        console.print(Padding(Text(body, style=style), (0, 0, 0, len(line) - len(body)), expand=False))


def _md(text: str) -> str:
    out = text.replace("\\", "\\\\")
    for ch in "`*_[]<>|#":
        out = out.replace(ch, "\\" + ch)
    return out.replace("\n", " ")


def judgment_markdown(j: Judgment, analysis: Any) -> str:
    """The judge's part of an analysis as Markdown."""
    lines = judgment_lines(j, analysis)
    out = ["", f"### {_md(lines[0])}", ""]
    out.extend(f"- {_md(line.strip())}" if not line.startswith("     ") else f"  - {_md(line.strip())}" for line in lines[1:])
    return "\n".join(out) + "\n"


def steps_of(analysis: Any) -> dict[str, Step]:
    """The steps an analysis may name: its run's and its earlier turns'."""
    steps = {s.step_id: s for r in getattr(analysis, "previous", ()) for s in r.steps}
    steps.update({s.step_id: s for s in analysis.run.steps})
    return steps


__all__ = ["judgment_lines", "judgment_markdown", "notice", "print_judgment", "steps_of"]
