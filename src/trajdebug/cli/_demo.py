"""``trajdebug demo``: record the bundled agent with an injected fault, then debug it."""

from __future__ import annotations

from typing import Any

import click

from trajdebug.cli._common import console, emit_json
from trajdebug.demo import DEFAULT_FAULT, FAULTS


REPORT_NAME = "trajdebug-report.html"
"""The demo's report file, written beside the store unless ``--report`` says otherwise."""


def _fault_help() -> str:
    return "Fault to inject: " + "; ".join(f"{k}: {v}" for k, v in FAULTS.items())


@click.command(name="demo")
@click.option(
    "--fault", type=click.Choice(list(FAULTS)), default=DEFAULT_FAULT, show_default=True, help=_fault_help()
)
@click.option("--clean", is_flag=True, help="Run without any fault (a passing run).")
@click.option(
    "--store", metavar="PATH", help="Record into this store (default: $TRAJDEBUG_STORE or ./trajdebug.db)."
)
@click.option(
    "--verify/--no-verify",
    default=True,
    show_default=True,
    help="Verify the root cause by counterfactual replay.",
)
@click.option(
    "--report",
    "report_path",
    metavar="PATH",
    help=f"Write the run's HTML report here (default: {REPORT_NAME} beside the store).",
)
@click.option("--no-report", is_flag=True, help="Do not write the HTML report.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def demo_cmd(
    fault: str,
    clean: bool,
    store: str | None,
    verify: bool,
    report_path: str | None,
    no_report: bool,
    as_json: bool,
) -> None:
    """Run the bundled SQL reporting agent with an injected fault and debug it.

    The agent plans, writes SQL, runs it on a real SQLite database the demo
    creates, parses the rows, keeps totals in shared state, computes growth and
    writes a report.  Its LLM is a deterministic scripted stand-in.  The run is
    recorded into the store and shown, followed by the error lifecycle, the
    root-cause analysis and its verification by replay; the HTML report of
    the run is written beside the store (./trajdebug-report.html by default).

    \b
    Example:
        trajdebug demo --fault stale-state
    """
    from trajdebug.demo import run_demo
    from trajdebug.store import Store, default_store_path

    target = Store(store or default_store_path())
    run = run_demo(None if clean else fault, store=target)
    fault_info = run.metadata.get("fault") or {}
    from trajdebug.analysis import analyze

    analysis = analyze(run, sql_db=run.metadata.get("sqlite_db"))
    verification = None
    if verify and run.outcome == "failure":
        from trajdebug.demo import verify_demo

        verification = verify_demo(run, analysis, store=target)
    report = None if no_report else _write_demo_report(report_path, target.path, analysis, verification)
    if as_json:
        from trajdebug.report.json import run_to_dict

        out = {
            "store": str(target.path),
            "run": run_to_dict(run),
            "fault": fault_info,
            "analysis": analysis.to_dict(),
        }
        if verification is not None:
            out["verification"] = verification.to_dict()
        if report is not None:
            out["report"] = str(report)
        emit_json(out)
        return
    _print_demo(run, analysis, verification, report, fault_info, target.path)


def _write_demo_report(report_path: str | None, store_path: Any, analysis: Any, verification: Any) -> Any:
    """The HTML report of the demo's run, beside the store unless ``report_path`` says where."""
    from pathlib import Path

    from trajdebug.report.html import write_report

    report_path = report_path or str(Path(store_path).parent / REPORT_NAME)
    try:
        return write_report(
            report_path,
            analysis,
            verification=verification.to_dict() if verification is not None else None,
            source=str(store_path),
        )
    except OSError as exc:
        raise click.ClickException(f"{report_path}: cannot write the report ({exc.strerror or exc})") from None


def _print_demo(
    run: Any, analysis: Any, verification: Any, report: Any, fault_info: dict[str, Any], store_path: Any
) -> None:
    """The demo in the terminal: the run, its errors, the analysis, the verification, the ground truth, the report."""
    from trajdebug.core.escape import markup
    from trajdebug.report.text import render_run

    con = console()
    con.print("[bold]trajdebug demo[/]: a SQL reporting agent (its LLM is a scripted stand-in)")
    con.print(f"recorded into {markup(str(store_path))}\n", style="dim", soft_wrap=True)
    render_run(run, con)
    if run.errors:
        from trajdebug.analysis import analyze_errors
        from trajdebug.report.errors import render_errors

        con.print()
        render_errors(analyze_errors(run), con, run=run)
    from trajdebug.report.analysis import render_analysis

    con.print()
    render_analysis(analysis, con, run=run)
    if verification is not None:
        con.print()
        con.print(verification.summary())
    if fault_info.get("name"):
        top = analysis.root_causes[0].step_id if analysis.root_causes else None
        hit = "matches" if top == fault_info.get("step_id") else "does not match"
        con.print(
            f"\nground truth: fault {fault_info['name']!r} was injected at #{str(fault_info.get('step_id'))[-6:]}"
            + (f"; the top-ranked root cause {hit}" if top else ""),
            style="dim",
        )
    sqlite_db = run.metadata.get("sqlite_db")
    if sqlite_db:
        from rich.markup import escape as _esc

        # The analysis above re-ran the agent's read-only SQL on its database; a later `analyze` sees
        # the same only when given that database (it never opens a file a run's metadata names by itself).
        con.print(
            "\nthe same analysis later: "
            + _esc(f"trajdebug analyze {store_path} --run {run.run_id[:12]} --sql-db {sqlite_db}"),
            style="dim",
            soft_wrap=True,
        )
    if report is not None:
        from rich.markup import escape

        con.print(f"\n[bold]report[/]: {escape(str(report))}", soft_wrap=True)  # a path to copy: never wrapped
        con.print("open it in a browser: the waterfall, the dependency graph, the root cause", style="dim")


def register(cli: click.Group) -> None:
    """Add ``demo``."""
    cli.add_command(demo_cmd)
