"""Rendering of an `ErrorReport`: the chain table, for a terminal and for a ticket.

Two forms of the same content: rich output sized for an 80-column terminal
(`render_errors`) and Markdown (`errors_markdown`) to paste into an issue.
Each chain is a small table (error, step, stage, parent error, severity,
message), critical chains first, headed by its score and the rules that
fired; then the stage history of the errors in critical chains.  Ids are
shortened to the shortest suffix that is unique in the report on a terminal
and given in full in Markdown.  Untrusted text (step names, messages) is
escaped for rich markup and for Markdown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from trajdebug.core.escape import markdown, md_code, one_line, visible
from trajdebug.core.model import Run, Step


if TYPE_CHECKING:
    from trajdebug.analysis import ErrorChain, ErrorLifecycle, ErrorReport


SEVERITY_STYLE = {"CRITICAL": "bold red", "ERROR": "red", "WARN": "yellow"}
STAGE_STYLE = {
    "failed": "red",
    "recovered": "green",
    "ignored": "yellow",
    "propagated": "magenta",
    "occurred": "white",
}
OUTCOME_STYLE = {"success": "green", "failure": "red", "incomplete": "yellow"}
MAX_MESSAGE = 200


class _Ids:
    """Shortest unique suffixes (at least 6 characters) of a set of ids."""

    def __init__(self, ids: Iterable[str]) -> None:
        uniq = sorted(set(ids))
        self._short: dict[str, str] = {}
        for n in range(6, 33):
            tails = [i[-n:] for i in uniq]
            if len(set(tails)) == len(tails):
                break
        for i in uniq:
            self._short[i] = i[-n:]

    def __call__(self, ident: str | None) -> str:
        if ident is None:
            return "-"
        return self._short.get(ident, ident[-6:])


def _one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    flat = " ".join(visible(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _step_label(steps: Mapping[str, Step], step_id: str | None, short: _Ids, name: str = "") -> str:
    if step_id is None:
        return "(run)"
    s = steps.get(step_id)
    return one_line(f"{s.name if s is not None else name or '?'}#{short(step_id)}")


def _headline(report: ErrorReport) -> str:
    crit = len(report.critical_chains())
    n_err, n_ch = len(report.errors), len(report.chains)
    return (
        f"{n_err} error{'s' if n_err != 1 else ''}, {n_ch} chain{'s' if n_ch != 1 else ''}, "
        f"{crit} critical failure{'s' if crit != 1 else ''}"
    )


def _history(e: ErrorLifecycle, steps: Mapping[str, Step], short: _Ids) -> str:
    out = []
    for c in e.stages:
        where = _step_label(steps, c.step_id, short) if c.step_id is not None else "(run)"
        out.append(f"{c.stage} {where}")
    return " → ".join(out)


def _cell(text: str, width: int) -> str:
    """Pad or cut text to exactly ``width`` characters (plus a separating space)."""
    if len(text) > width:
        text = text[: width - 1] + "…"
    return text.ljust(width) + " "


_COLUMNS = (("error", 9), ("step", 23), ("stage", 10), ("parent", 17), ("severity", 8))


def render_errors(
    report: ErrorReport,
    console: Any,
    run: Run | None = None,
    *,
    history: bool = True,
    shown_id: str | None = None,
) -> None:
    """Print the error chains of a run on a rich console (fits 80 columns).

    Each error takes two lines: its id, step, final stage, parent error (with
    the link kind) and severity, then its message.

    Args:
        report: The lifecycle report (`trajdebug.core.lifecycle.analyze_errors`).
        console: A ``rich.console.Console``.
        run: The run, for step names (ids only without it).
        history: Also print the stage history of the errors in critical chains.
        shown_id: The run id as the header shows it (`trajdebug.core.shortids`: unique in the source); by
            default the whole id.
    """
    from rich.text import Text

    steps = run.step_map() if run is not None else {}
    by_id = {e.error_id: e for e in report.errors}
    err_id = _Ids(by_id)
    step_id = _Ids(
        [
            *steps,
            *(e.step_id for e in report.errors),
            *(c.step_id for e in report.errors for c in e.stages if c.step_id),
        ]
    )
    head = Text()
    head.append(f"errors of run {one_line(shown_id or report.run_id)}  ", style="bold")
    head.append(report.outcome, style=OUTCOME_STYLE.get(report.outcome, "white"))
    head.append(f"  {_headline(report)}")
    console.print(head)
    if not report.errors:
        console.print("  no errors recorded", style="dim")
        return
    for chain in report.chains:
        console.print()
        title = Text("  ")
        title.append(one_line(chain.chain_id), style="bold")
        if chain.critical:
            title.append("  CRITICAL FAILURE", style="bold red")
        title.append(f"  score {chain.score}")
        console.print(title)
        if chain.reasons:
            console.print(
                Text("    rules: " + one_line(", ".join(h.rule for h in chain.reasons)), style="dim"), overflow="fold"
            )
        console.print(Text("    " + "".join(_cell(name, w) for name, w in _COLUMNS).rstrip(), style="dim"))
        for eid in chain.error_ids:
            e = by_id[eid]
            parent = err_id(e.parent_error_id) if e.parent_error_id else "-"
            if e.link is not None and e.parent_error_id:
                parent += f" {e.link}"
            stage = e.stage + ("*" if e.silently_propagated else "")
            attempt = f" a{e.attempt}" if e.attempt != 1 else ""
            line = Text("    ")
            line.append(_cell(one_line(err_id(e.error_id)), 9))
            line.append(_cell(_step_label(steps, e.step_id, step_id, e.step_name) + attempt, 23))
            line.append(_cell(stage, 10), style=STAGE_STYLE.get(e.stage, "white"))
            line.append(_cell(one_line(parent), 17))
            line.append(e.severity, style=SEVERITY_STYLE.get(e.severity, "white"))
            console.print(line, no_wrap=True, overflow="ellipsis")
            console.print(
                Text(" " * 14 + _one_line(f"{e.type}: {e.message}")), no_wrap=True, overflow="ellipsis"
            )
    from trajdebug.core.lifecycle.analyze import CAUGHT

    # The chains say it only where no recorded step caught the error or took its message up.
    if any(CAUGHT in c.summary for c in report.chains):
        console.print(
            f"\n  occurred, and nothing after: {CAUGHT} (an except clause that set a default?"
            " `s.fallback(value, reason)` records what replaced it)",
            style="dim",
        )
    if any(e.silently_propagated for e in report.errors):
        console.print(
            "\n  * silently propagated: left open while its step's output was consumed", style="dim"
        )
    if history:
        _print_history(report, console, by_id, steps, err_id, step_id)


def _print_history(report: ErrorReport, console: Any, by_id: dict[str, Any], steps: Any, err_id: Any, step_id: Any) -> None:
    """The stage history of the errors in critical chains, each once."""
    from rich.text import Text

    shown = [by_id[i] for c in report.critical_chains() for i in c.error_ids]
    if not shown:
        return
    console.print()
    console.print("  lifecycle of the errors in critical chains", style="bold")
    for e in dict.fromkeys(shown):
        console.print(Text(f"    {err_id(e.error_id)}  {_history(e, steps, step_id)}"), overflow="fold")
        if e.retry_reason:
            console.print(Text(f"{' ' * 12}retried because: {_one_line(e.retry_reason, 140)}", style="dim"))
        for r in e.reasons:
            console.print(Text(f"{' ' * 12}{_one_line(r, 160)}", style="dim"), overflow="fold")


# -- Markdown ----------------------------------------------------------------------


def _md(text: str) -> str:
    """Escape text for a Markdown table cell."""
    return markdown(_one_line(text))


def _md_chain(chain: ErrorChain, by_id: Mapping[str, ErrorLifecycle], steps: Mapping[str, Step]) -> list[str]:
    kind = "Critical Failure" if chain.critical else "chain"
    lines = [f"**{_md(chain.chain_id)}** ({kind}), score {chain.score}"]
    for h in chain.reasons:
        lines.append(f"- {md_code(h.rule)} (+{h.weight}): {_md(h.detail)}")
    lines += ["", "| error | step | stage | parent error | severity | message |", "|---|---|---|---|---|---|"]
    for eid in chain.error_ids:
        e = by_id[eid]
        s = steps.get(e.step_id)
        name = s.name if s is not None else e.step_name or "?"
        parent = f"{md_code(e.parent_error_id)} ({_md(str(e.link))})" if e.parent_error_id else "—"
        sev = f"**{e.severity}**" if e.severity == "CRITICAL" else e.severity
        stage = e.stage + (" (silently propagated)" if e.silently_propagated else "")
        lines.append(
            f"| {md_code(e.error_id)} | {_md(name)} {md_code(e.step_id)} | {stage} | {parent} | {sev} | {_md(f'{e.type}: {e.message}')} |"
        )
    return lines


def errors_markdown(report: ErrorReport, run: Run | None = None, *, history: bool = True) -> str:
    """The error chains of a run as Markdown, for an issue or a pull request.

    Args:
        report: The lifecycle report.
        run: The run, for step names and the run's name.
        history: Also list the stage history of the errors in critical chains.
    """
    steps = run.step_map() if run is not None else {}
    name = f" ({_md(run.name)})" if run is not None and run.name else ""
    lines = [f"### Errors of run {md_code(report.run_id)}{name}: {report.outcome}", "", _headline(report) + "."]
    if run is not None and run.failure_reason:
        lines += ["", f"Failure reason: {_md(run.failure_reason)}"]
    by_id = {e.error_id: e for e in report.errors}
    for chain in report.chains:
        lines += ["", *_md_chain(chain, by_id, steps)]
    if history:
        shown = dict.fromkeys(by_id[i] for c in report.critical_chains() for i in c.error_ids)
        if shown:
            lines += ["", "**Lifecycle of the errors in critical chains**", ""]
            short = _Ids(list(steps))
            for e in shown:
                lines.append(f"- {md_code(e.error_id)}: {_md(_history(e, steps, short))}")
                if e.retry_reason:
                    lines.append(f"  - retried because: {_md(e.retry_reason)}")
                lines.extend(f"  - {_md(r)}" for r in e.reasons)
    return "\n".join(lines) + "\n"


__all__ = ["errors_markdown", "render_errors"]
