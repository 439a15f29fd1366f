"""``trajdebug diff`` and the ``--verify`` support of ``trajdebug analyze``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from trajdebug.cli._common import console, emit_json, fmt_option, is_derived, json_option, store_path
from trajdebug.core.model import Run, Step


F = TypeVar("F", bound=Callable[..., Any])


def load_callable(spec: str, what: str = "entry point") -> Callable[..., Any]:
    """Import ``module:function`` (`trajdebug.core.plugins.load_callable`), as a click parameter error when it fails."""
    from trajdebug.core.plugins import load_callable as load

    try:
        return load(spec, what)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


# -- analyze --verify ----------------------------------------------------------------------


def add_verify_option(command: F) -> F:
    """Add ``--verify MODULE:FUNCTION``, ``--fixer MODULE:FUNCTION`` and ``--samples K`` to a command.

    The command receives ``verify_entry``, ``fixer`` and ``verify_samples`` and
    passes them to `verify_analyses`.
    """
    command = click.option(
        "--samples",
        "verify_samples",
        type=click.IntRange(min=1),
        default=3,
        show_default=True,
        help="With --verify: replays per patch when live calls make a replay nondeterministic.",
    )(command)
    command = click.option(
        "--fixer",
        "fixer",
        metavar="MODULE:FUNCTION",
        help="With --verify: fixer(step, run) returning a step's corrected output (or None).",
    )(command)
    command = click.option(
        "--verify",
        "verify_entry",
        metavar="MODULE:FUNCTION",
        help="Verify the top candidates by replaying the run through this entry point "
        "(called with the arguments recorded in the run's 'entry' metadata).",
    )(command)
    return command


# -- diff ---------------------------------------------------------------------------------------


def _resolve(ref: str, fmt: str | None, store: str | None, want: str) -> Run:
    """A run reference: ``PATH``, ``PATH@RUN_ID`` or a run id (prefix) in the store."""
    from trajdebug.sources.load import SourceError, load_runs

    path, run_id = ref, None
    if not Path(ref).exists() and "@" in ref:
        head, _, tail = ref.rpartition("@")
        if Path(head).exists():
            path, run_id = head, tail
    if not Path(path).exists():
        path, run_id = store_path(store), ref
    try:
        runs = load_runs(path, run_id=run_id, fmt=fmt)
    except SourceError as exc:
        raise click.ClickException(str(exc)) from None
    if not runs:
        raise click.ClickException(f"{path}: no runs found")
    if len(runs) > 1:
        # Several runs: the newest with the outcome this side needs.
        originals = [r for r in runs if not is_derived(r)] or runs
        fitting = [r for r in originals if r.outcome == want] or originals
        return max(fitting, key=lambda r: r.start_ns)
    return runs[0]


def _shown(step: Step, other: Step | None) -> Any:
    """What differs about a step: its output, or the state it wrote when the outputs are equal."""
    from trajdebug.replay.cassette import STATE_VALUES_ATTR, canonical

    if other is not None and canonical(step.output) == canonical(other.output):
        state = step.attributes.get(STATE_VALUES_ATTR)
        if state is not None:
            return {"state written": state}
    return step.output


def _short(value: Any, limit: int = 160, against: Any = None) -> str:
    """A value as one line of at most ``limit`` characters; beside ``against`` (what the other run had), cut
    around where the two first differ: two long values alike at their head would show as equal."""
    from trajdebug.replay.cassette import canonical

    def line(v: Any) -> str:
        return " ".join((v if isinstance(v, str) else canonical(v)).split())

    text = line(value)
    if len(text) <= limit:
        return text
    start = 0
    if against is not None:
        other = line(against)
        same = next((i for i, (a, b) in enumerate(zip(text, other)) if a != b), min(len(text), len(other)))
        if same > limit - limit // 4:
            start = same - limit // 4  # a quarter of the line of what both had, then the difference
    head = "…" if start else ""
    body = text[start:]
    return head + (body if len(body) + len(head) <= limit else body[: limit - 1 - len(head)] + "…")


IMPACT_SHOWN = 8
"""Steps named on the "downstream impact" line of ``diff`` (the JSON lists all)."""

_MARK = {"same": "=", "output": "≠", "input": "~", "only-good": "-", "only-bad": "+"}
_WORDS = {
    "same": "",
    "output": "same request, different output",
    "input": "request differs",
    "only-good": "only in the passing run",
    "only-bad": "only in the failing run",
}


def _render_diff(al: Any, iso: Any) -> None:
    from trajdebug.core.escape import markup as escape

    con = console()
    good, bad = al.good, al.bad
    con.print(
        f"[bold]diff[/] good {escape(good.run_id[:12])} ({good.outcome}) vs bad {escape(bad.run_id[:12])} ({bad.outcome}): "
        f"{len(al.pairs)} aligned steps, {len(al.differences)} differ"
    )
    first = al.first_divergence
    if first is None:
        con.print("the runs do not differ", style="dim")
    else:
        step = first.bad or first.good
        con.print(
            f"first divergence: [bold]{escape(step.name)}#{escape(step.step_id[-6:])}[/] ({escape(step.kind)}): "
            f"{_WORDS[first.status]}"
        )
        # Runs of different inputs first differ in a request answered alike: the two equal outputs
        # would read as "no difference here", so the requests that differ are what is shown.
        asked = first.status == "input" and not first.output_differs and first.good is not None
        word = " request" if asked else ""
        if first.good is not None:
            shown = first.good.input if asked else _shown(first.good, first.bad)
            other = (first.bad.input if asked else _shown(first.bad, first.good)) if first.bad is not None else None
            con.print(f"  good{word}: {escape(_short(shown, against=other))}")
        if first.bad is not None:
            err = f"  ✗ {first.bad.error.type}: {first.bad.error.message}" if first.bad.error else ""
            shown = first.bad.input if asked else _shown(first.bad, first.good)
            other = (first.good.input if asked else _shown(first.good, first.bad)) if first.good is not None else None
            con.print(f"  bad{word}:  {escape(_short(shown, against=other))}{escape(err)}")
        if first.status == "input":
            # No step at its level before it differs (`first_divergence` passes over enclosing pairs, whose
            # request may differ too), so the recorded steps cannot say where its request changed.
            con.print(
                "  no recorded step at its level before it differs: its request changed outside the recorded "
                "steps (the run's input, or code between steps, such as a default set where an error was caught)",
                style="dim",
            )
        impact = al.impact(first)
        if impact:
            labels = [f"{bad.step(s).name}#{s[-6:]}" for s in impact[:IMPACT_SHOWN]]
            if len(impact) > IMPACT_SHOWN:
                labels.append(f"and {len(impact) - IMPACT_SHOWN} more (--json lists them)")
            con.print(
                f"downstream impact: {len(impact)} step{'s' if len(impact) != 1 else ''}: {escape(', '.join(labels))}"
            )
    con.print()
    for p in al.pairs:
        s = p.bad or p.good
        style = {"same": "dim", "output": "red", "input": "yellow"}.get(p.status, "magenta")
        con.print(
            f"  [{style}]{_MARK[p.status]}  {escape(f'{s.kind:<9}')} {escape(s.name)}#{escape(s.step_id[-6:])}[/]  "
            f"{_WORDS[p.status]}"
        )
        if p.status in ("output", "input") and p.output_differs and p.good is not None and p.bad is not None:
            g, b = _shown(p.good, p.bad), _shown(p.bad, p.good)
            con.print(f"       good: {escape(_short(g, 120, b))}", style="dim")
            con.print(f"       bad:  {escape(_short(b, 120, g))}", style="dim")
    if iso is not None:
        con.print()
        if iso.problem:
            con.print(f"isolation: {escape(iso.problem)}")
        else:
            names = ", ".join(f"{bad.step(s).name}#{s[-6:]}" for s in iso.failure_inducing) or "none"
            con.print(f"failure-inducing difference (dd, {iso.replays} replays): [bold]{escape(names)}[/]")
            if iso.earliest:
                con.print(
                    f"earliest correction that removes the failure: {escape(bad.step(iso.earliest).name)}#{iso.earliest[-6:]}"
                )


@click.command(name="diff")
@click.argument("good")
@click.argument("bad")
@fmt_option
@click.option(
    "--store", metavar="PATH", help="Store for run ids (default: $TRAJDEBUG_STORE or ./trajdebug.db)."
)
@click.option(
    "--isolate",
    "entry",
    metavar="MODULE:FUNCTION",
    help="Also isolate the failure-inducing differences by replay (delta debugging) through this entry point.",
)
@json_option
def diff_cmd(
    good: str, bad: str, fmt: str | None, store: str | None, entry: str | None, as_json: bool
) -> None:
    """Align a passing and a failing run step by step and show where they diverge.

    GOOD and BAD are each a run id (prefix) in the store, a file or store
    (its newest passing run for GOOD, newest failing run for BAD), or
    PATH@RUN_ID.  Steps are matched by name path and call order.  Shown: the
    first divergence, the differing outputs, and the steps downstream of it.
    With --isolate, replays find the minimal failure-inducing set of
    differences (Zeller's dd) and the earliest correction that removes the
    failure.

    \b
    Example:
        trajdebug diff 3f2a 9c1e
        trajdebug diff runs.jsonl runs.jsonl --isolate myagent:main
    """
    from trajdebug.replay import align, isolate

    g = _resolve(good, fmt, store, "success")
    b = _resolve(bad, fmt, store, "failure")
    if g.run_id == b.run_id:
        raise click.ClickException(f"GOOD and BAD are the same run ({g.run_id[:12]})")
    al = align(g, b)
    iso = isolate(load_callable(entry), g, b) if entry else None
    if as_json:
        out = al.to_dict()
        if iso is not None:
            out["isolation"] = iso.to_dict()
        emit_json(out)
        return
    _render_diff(al, iso)


def register(cli: click.Group) -> None:
    """Add ``diff``."""
    cli.add_command(diff_cmd)


__all__ = ["add_verify_option", "load_callable", "register"]
