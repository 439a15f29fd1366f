"""``trajdebug analyze``: failures, ranked root causes and error chains of runs."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from trajdebug.cli._common import (
    console,
    emit_json,
    fmt_option,
    json_option,
    refs_option,
    run_option,
    source_argument,
    store_path,
)
from trajdebug.cli._judge import add_judge_options, report_usage
from trajdebug.cli._judge import judge_config as _judge_config
from trajdebug.cli._replay import add_verify_option, load_callable
from trajdebug.core.model import Outcome, Run


EVERY = sys.maxsize
"""``--top 0``: as many candidates as there are ranked steps (the candidate lists are cut at ``top``)."""

_ANALYZE_HELP = """Find where runs failed and rank the steps most likely to have caused it.

For each run that did not succeed (or the run given with --run): the
failures the detectors found, every step of the failure's backward slice
ranked (the top candidates shown, each with its evidence and the
dependency path from it to the failure), the error chains, and what was
compared.  Passing runs of the same agent in SOURCE, and in each --refs
FILE, serve as references: where the failing run breaks what they always
did is evidence.  A reference on another input compares behaviour (what
the steps always did), not values; a passing run of the same input is
compared value for value.  SOURCE is a store, a trajdebug JSONL file or a
foreign trace (default: the default store).  The JSON output is described
in docs/analysis.md: per run, root_causes lists the first --top candidates
in rank order (--top 0 lists every ranked step) and ranked counts the
steps ranked.  The same analysis in Python is
`trajdebug.analyze_source(SOURCE, refs=[FILE])`.

With --verify MODULE:FUNCTION (the agent's entry point), the top
candidates are verified by counterfactual replay: each is patched with a
correction (from --fixer, the same step of a passing run in SOURCE, or a
diagnoser's suggestion) and reported verified, refuted or unresolved.

With --judge, a model (any OpenAI-compatible endpoint, configured in the
environment) judges the shortlisted steps and the ranking combines its
verdicts with the deterministic scores; every candidate keeps its evidence.

Piped (not a terminal), the text is never wrapped or cut: a value stays
on one line, and one shortened on purpose ends with "…".  On a terminal it
wraps to the terminal's width (COLUMNS sets another).

Exit status: 0 when the runs were analyzed, whatever was found (a passing
run, given with --run or in a source where no run failed, too: a note on
stderr says nothing failed); 1 on an error, said on stderr in one line
starting "Error:" (an unreadable source, a run id no run has), or when the
reader of the output went away (a pipe closed early, as by `head`); 2 on a
wrong option.

With --oracle MODULE:FUNCTION (or expectations registered with
trajdebug.expect), a guided search asks whether single steps' outputs are
correct and converges on the root: a wrong step whose inputs are all
correct (docs/analysis.md, "Guided search").  A passing run of the same
input in SOURCE (or --refs) answers too, and with --judge the model does,
trusted last.
With --guided and no --oracle, the search runs on what answers by itself:
a passing run of the same input, --judge, expectations.

With --ask, you answer: one step at a time (its input, its output and the
steps that produced its input), is its output correct?  Keys y / o (wrong,
its own fault) / i (wrong, it was given a wrong input) / n (wrong) / ?
(don't know) / e (expand) / q (stop); a question about a group of like steps
takes y (all right) / n (not all) / ? (don't know) / q, n and ? asking each
step on its own.  A key not taken asks again; the end of input stops, as q
does.  Each answer is stored with the run as it is given, with what the oracles above answered; a second --ask resumes
(docs/analysis.md, "Asking").
Answers are appended to SOURCE itself (a foreign trace's to SOURCE.answers.jsonl); its runs read as before (copy SOURCE first to keep the file as recorded).

\b
Example:
    trajdebug analyze trajdebug.db --run 4bf92f35 --top 3
    trajdebug analyze failed.jsonl --refs passing.jsonl --refs more.db
    trajdebug analyze conversation.json --from openai --outcome failure --json
    trajdebug analyze trajdebug.db --verify trajdebug.demo:demo_agent
    trajdebug analyze trajdebug.db --oracle checks:is_right --max-questions 5
    trajdebug analyze trajdebug.db --run 4bf92f35 --ask
"""
"""`trajdebug analyze --help` (kept out of the command function, which it would triple)."""


@click.command(name="analyze", help=_ANALYZE_HELP)
@source_argument
@run_option
@fmt_option
@click.option(
    "--top",
    "top",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="How many root-cause candidates to show, and --json to list as root_causes (and --verify replays, three "
    "at most); 0 for every ranked step.  The ranking, the verdict and the guided search read every ranked step, "
    "whatever --top says.",
)
@click.option(
    "--outcome",
    type=click.Choice(["failure", "success"]),
    help="The runs' outcome, when the source does not record one (imported traces).",
)
@click.option(
    "--sql-db",
    "sql_db",
    type=click.Path(dir_okay=False, exists=True),
    help="The SQLite file the runs' SQL targets: its schema checks their SQL, and recorded query "
    "results are compared with read-only re-runs (analysis never opens a path a run names by itself).",
)
@refs_option
@click.option(
    "--no-references",
    "no_references",
    is_flag=True,
    help="Do not compare with the passing runs of the same agent in SOURCE (or --refs).",
)
@click.option(
    "--session",
    "use_session",
    is_flag=True,
    help="Also search the earlier runs of the run's session (metadata 'session') for the root, "
    "as earlier turns of one conversation.",
)
@click.option("--markdown", is_flag=True, help="Print Markdown instead of text.")
@click.option(
    "--format",
    "renderer",
    metavar="NAME",
    help="text, markdown (as in `trajdebug errors`), or a renderer registered under the "
    "'trajdebug.renderers' entry point group.",
)
@click.option(
    "--ask",
    "ask",
    is_flag=True,
    help="Find the cause by asking you: one step at a time, is its output right, what the run needed there? "
    "(keys y yes / o no, its own fault: what it was given was right / i no, it was given a wrong input / "
    "n no, not saying which / ? / e expand / q quit: o and i are Naish's erroneous and inadmissible "
    "and spare questions; answers are appended to SOURCE itself (a foreign trace's to SOURCE.answers.jsonl), "
    "and a second --ask resumes; "
    "a step whose output a passing run of the same input also produced is not asked; "
    "a root the answers prove is written as the run's label to SOURCE.labels.jsonl beside SOURCE, "
    "and replaced or withdrawn when later answers prove another or none; like steps may be asked at once).",
)
@click.option(
    "--oracle",
    "oracles",
    metavar="MODULE:FUNCTION",
    multiple=True,
    help="Find the root by asking this function whether a step's output is correct "
    "(fn(step, run) -> True, False or None); repeatable.",
)
@click.option(
    "--guided",
    "guided",
    is_flag=True,
    help="Run the guided search even with no --oracle: a passing run of the same input in SOURCE or --refs answers "
    "its questions (and --judge, expectations); without one of those it asks nothing.",
)
@click.option(
    "--max-questions",
    "max_questions",
    type=click.IntRange(min=0),
    help="Stop the guided search after this many questions (the candidates left ranked).",
)
@click.option(
    "--strategy",
    type=click.Choice(["prior", "top-down", "linear"]),
    default="prior",
    show_default=True,
    help="The guided search's question order.",
)
@click.option(
    "--model",
    "model",
    metavar="FILE|default|none",
    default="default",
    show_default=True,
    help="Re-rank with a learned model (`default`: the shipped one; a file from `trajdebug fit`; `none`: the hand "
    "ranking alone): each candidate gets a calibrated confidence and the run a verdict from its best candidate's: "
    "likely from the model's `likely` threshold, confident from its `confident` one for the run's setting, else "
    "unsure; proved when a person's answers, given with --ask or stored, prove the root.  The shipped model: likely "
    "from 50 %, confident from 77.7 % with references (passing runs of the agent in SOURCE or --refs) and never "
    "alone; the verdict line names the thresholds that applied.",
)
@add_verify_option
@add_judge_options
@json_option
def analyze_cmd(
    source: str | None,
    run_id: str | None,
    fmt: str | None,
    top: int,
    outcome: str | None,
    sql_db: str | None,
    no_references: bool,
    use_session: bool,
    markdown: bool,
    renderer: str | None,
    model: str | None,
    verify_entry: str | None,
    fixer: str | None,
    verify_samples: int,
    use_judge: bool,
    judge_config: str | None,
    as_json: bool,
    ask: bool = False,
    oracles: tuple[str, ...] = (),
    max_questions: int | None = None,
    strategy: str = "prior",
    ask_person: object = None,
    guided: bool = False,
    refs: tuple[str, ...] = (),
) -> None:
    """`trajdebug analyze` (its help: `_ANALYZE_HELP`): the options translated for `trajdebug.analyze_source`."""
    judge = _judge_config(use_judge, judge_config)
    _check_model(model)
    declared: Outcome | None = None if outcome is None else ("failure" if outcome == "failure" else "success")
    path = store_path(source)
    options = {
        "fmt": fmt,
        "top": top or EVERY,
        "outcome": declared,
        "use_references": not no_references,
        "sql_db": sql_db,
        "verify": load_callable(verify_entry) if verify_entry else None,
        "fixer": load_callable(fixer, "fixer") if fixer else None,
        "samples": verify_samples,
        "judge": judge,
        "oracle": list(oracles) or None,
        "guided": True if guided else None,
        "max_questions": max_questions,
        "strategy": strategy,
        "ask": ask_person,
        "model": None if model == "none" else model,
        "session": use_session,
        "refs": refs,
    }
    result = _analyzed(path, run_id, options, quiet=as_json, oracles=bool(oracles))
    analyses = list(result.analyses)
    if not analyses:
        raise click.ClickException(f"{path}: no runs found")
    _notes(path, analyses, run_id, guided, refs)
    if ask:
        _ask(path, analyses, as_json, max_questions, strategy, result.twins)
        return
    _render(analyses, result, renderer, markdown, as_json)

def _notes(path: str, analyses: list[Any], run_id: str | None, guided: bool, refs: tuple[str, ...]) -> None:
    """What the user should know before the result, on stderr (so --json stays one document): each analysis's
    problems, a source where no run failed, and the runs a guided search could not be run for."""
    from trajdebug.ask import shown_run

    unguided = []
    for a in analyses:
        for problem in a.problems:
            click.echo(f"warning: {path}: {problem}", err=True)
        if guided and a.failures and a.guided is None and not a.run.answers:
            unguided.append(shown_run(a))
    if run_id is None and all(a.run.outcome == "success" for a in analyses):
        # Every run passed, so each is shown as a success with nothing to rank (nu63: the user read that as an
        # analysis that failed): one line says why, on stderr so --json stays one document.
        click.echo(
            f"note: {path}: no run failed ({len(analyses)} passing), so there is no failure to trace: each run "
            "is shown with nothing ranked (analyze a failing run; these can be its --refs)",
            err=True,
        )
    if unguided:
        # One note for the whole source: a store of a hundred failed runs should not print a hundred lines.
        more = ", ..." if len(unguided) > 3 else ""
        which = f"run {unguided[0]}" if len(unguided) == 1 else f"{len(unguided)} runs ({', '.join(unguided[:3])}{more})"
        click.echo(
            f"note: {which}: no guided search: no passing run of the same input in {path}{' or --refs' if refs else ''}, "
            "no --oracle, --judge or expectation to answer its questions",
            err=True,
        )


def _analyzed(path: Any, run_id: str | None, options: dict[str, Any], *, quiet: bool, oracles: bool) -> Any:
    """`trajdebug.analyze_source` behind a progress bar, its errors as one-line click errors."""
    from trajdebug.api import analyze_source
    from trajdebug.cli._common import Progress
    from trajdebug.sources.load import SourceError

    try:
        with Progress("analyzing", enabled=not quiet) as bar:
            return analyze_source(path, run_id, progress=bar.update, **options)
    except SourceError as exc:
        raise click.ClickException(str(exc)) from None
    except (ImportError, AttributeError, ValueError, TypeError) as exc:
        if not oracles:
            raise
        raise click.ClickException(f"--oracle: {exc}") from None


def _check_model(model: str | None) -> None:
    """--model names a readable model file (checked before the analysis starts, not after it)."""
    if model is None or model in ("default", "none"):
        return
    from trajdebug.analysis.learned import load_model

    try:
        load_model(model)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise click.ClickException(f"--model {model}: not a model file ({type(exc).__name__}: {exc})") from None


def _render(analyses: list[Any], result: Any, renderer: str | None, markdown: bool, as_json: bool) -> None:
    """Print the analyses: a plugin renderer by name, JSON, Markdown or the terminal text."""
    verifications = list(result.verifications)
    judgments = list(result.judgments) + [None] * (len(analyses) - len(result.judgments))
    report_usage(judgments)
    if renderer in ("text", "markdown"):
        markdown = markdown or renderer == "markdown"
        renderer = None
    if renderer is not None:
        from trajdebug.core.plugins import entry_point_callables

        found = dict(entry_point_callables("trajdebug.renderers"))
        if renderer not in found:
            known = ", ".join(["text", "markdown", *sorted(found)])
            raise click.ClickException(f"no renderer {renderer!r} (available: {known})")
        click.echo(found[renderer](analyses), nl=False)
        return
    if as_json:
        _emit_json(analyses, verifications, judgments, result.hints)
    elif markdown:
        _emit_markdown(analyses, verifications, judgments, result.hints)
    else:
        _emit_text(analyses, verifications, judgments, result.hints)


def _emit_json(analyses: list[Any], verifications: list[Any], judgments: list[Any], hints: Sequence[str]) -> None:
    from trajdebug.analysis import analyses_to_dict

    data = analyses_to_dict(analyses)
    for entry, v in zip(data["runs"], verifications, strict=False):
        entry["verification"] = None if v is None else v.to_dict()
    for entry, j in zip(data["runs"], judgments):
        if j is not None:
            j.annotate(entry)
    for entry in data["runs"]:
        _own_run_named(entry)
    data["hints"] = list(hints)
    emit_json(data)


def _own_run_named(entry: dict[str, Any]) -> None:
    """Each root cause's ``run_id`` is the run its step is in, the analyzed run's too (`Analysis.to_dict` leaves
    that one null, which read as "unknown": newuser64 F14), and ``earlier_turn`` says whether it is an earlier
    turn's.  Done on the document the command prints (after the judge matched its parts by the null)."""
    for rc in entry.get("root_causes") or ():
        rc["earlier_turn"] = rc.get("run_id") is not None
        if rc.get("run_id") is None:
            rc["run_id"] = entry.get("run_id")


def _emit_markdown(analyses: list[Any], verifications: list[Any], judgments: list[Any], hints: Sequence[str]) -> None:
    from trajdebug.report.analysis import analysis_markdown

    parts = []
    for i, a in enumerate(analyses):
        part = analysis_markdown(a)
        v = verifications[i] if i < len(verifications) else None
        if v is not None:
            part += "\n" + v.summary() + "\n"
        if judgments[i] is not None:
            from trajdebug.judge import judgment_markdown

            part += judgment_markdown(judgments[i], a)
        if a.guided is not None:
            from trajdebug.analysis import proof
            from trajdebug.report.guided import guided_lines

            part += "\n" + "\n".join(guided_lines(a.guided, markdown=True, proof=proof(a))) + "\n"
        parts.append(part)
    click.echo("\n".join(parts), nl=False)
    for hint in hints:
        click.echo(f"\nCompare with a passing run: `{hint}`")


def _emit_text(analyses: list[Any], verifications: list[Any], judgments: list[Any], hints: Sequence[str]) -> None:
    from trajdebug.report.analysis import render_analysis

    con = console(unwrapped_piped=True)
    for i, a in enumerate(analyses):
        if i:
            con.print()
        render_analysis(a, con, run=a.run)
        v = verifications[i] if i < len(verifications) else None
        if v is not None:
            con.print()
            con.print(v.summary())
        if judgments[i] is not None:
            from trajdebug.judge import print_judgment

            print_judgment(judgments[i], con, a)
        if a.guided is not None:
            from trajdebug.analysis import proof
            from trajdebug.report.guided import guided_lines

            con.print()
            for line in guided_lines(a.guided, proof=proof(a)):
                con.print(line, markup=False, highlight=False)
    for hint in hints:
        con.print()
        # A command to copy: never wrapped, on a terminal or piped.
        con.print(f"compare with a passing run: {hint}", markup=False, style="dim", soft_wrap=True)


def _ask(
    path: str,
    analyses: list,  # type: ignore[type-arg]
    as_json: bool,
    max_questions: int | None,
    strategy: str,
    same: Sequence[Run | None] = (),
) -> None:
    """``--ask``: the terminal session (`trajdebug.ask`); --json prints each run's guided result after it.

    A passing run of the same input (``same``, one per analysis, as `analyze_source` found it) answers for
    the steps whose output it also produced (not asked)."""
    from trajdebug.ask import ask_in_terminal
    from trajdebug.sources.load import SourceError

    try:
        twins = {a.run.run_id: twin for a, twin in zip(analyses, same)}
        # With --json the session talks on stderr, so stdout holds only the JSON document.
        asked = ask_in_terminal(
            path,
            analyses,
            console(unwrapped_piped=True, stderr=as_json),
            strategy=strategy,
            max_questions=max_questions,
            twins=twins,
        )
    except SourceError as exc:
        raise click.ClickException(str(exc)) from None
    if not asked:
        click.echo("nothing to ask: no failed run", err=True)
    from trajdebug.ask import shown_run

    _label_proved(path, asked, {a.run.run_id: shown_run(a) for a in analyses})
    if as_json:
        emit_json({"runs": [{"run_id": a.run_id, "guided": a.guided.to_dict(), "given": a.given} for a in asked]})


def _label_proved(path: str, asked: list, shown: dict[str, str] | None = None) -> None:  # type: ignore[type-arg]
    """The run's label as the answers leave it (`trajdebug.labels.prove`): a root they prove is stored as the
    run's label (what `trajdebug eval` measures the ranking on and `trajdebug fit` learns from), replacing
    the one they proved before; a label they proved before and no longer prove is withdrawn."""
    from trajdebug.labels import prove, sidecar
    from trajdebug.sources.load import SourceError

    for a in asked:
        rid = (shown or {}).get(a.run_id, a.run_id)  # unique in the source, so the command below names this run
        root = a.guided.root if a.guided.certain else None
        try:
            done = prove(path, a.run_id, root)
        except (SourceError, OSError, ValueError) as exc:
            click.echo(f"{path}: the label of run {rid} was not updated ({exc})", err=True)
            continue
        if done == "withdrawn":
            click.echo(
                f"withdrew the label of run {rid} (in {sidecar(path)}): the answers no longer prove its root",
                err=True,
            )
        elif done == "labelled" and root is not None:
            click.echo(
                f"labelled run {rid}: root {root[-6:]} (in {sidecar(path)}); an answer given by "
                f"mistake: trajdebug answers forget {path} --run {rid} [--step ID]",
                err=True,
            )


def register(cli: click.Group) -> None:
    """Add ``analyze``."""
    cli.add_command(analyze_cmd)
