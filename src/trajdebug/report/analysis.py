"""Rendering of an `Analysis`: failures, ranked root causes with evidence and path, error chains.

Three forms of the same content: rich output for a terminal (`render_analysis`),
plain text lines for 80 columns (`analysis_lines`), and Markdown
(`analysis_markdown`) for issues and pull requests.  Untrusted text (step
names, messages, reasons quoting outputs) is escaped for rich markup and for
Markdown.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from trajdebug.core.escape import markdown, md_code, one_line, visible
from trajdebug.core.model import Run, Step
from trajdebug.report.text import agent_of, answer_word, short


if TYPE_CHECKING:
    from trajdebug.analysis import Analysis, Candidate


WIDTH = 80
MAX_REASONS = 4
OUTCOME_STYLE = {"success": "green", "failure": "red", "incomplete": "yellow"}


def _label(step: Step | None, step_id: str) -> str:
    return f"{step.name}#{short(step_id)}" if step is not None else f"?#{short(step_id)}"


PATH_SHOWN = 8
"""Steps of a candidate's path named in the text: an agent loop's path runs through every turn after the step
(a model call, a tool, the next model call, ...), and fifteen hops wrapped over five lines hide the ranking;
a longer path names its first three and last four steps and counts the rest (the report's graph shows all)."""


def _path(c: Candidate, steps: Mapping[str, Step], shared: frozenset[str] | None = None) -> str:
    """The candidate's path by step name, with the id (``name#123abc``) of a step whose name another step of the
    run shares (``shared``, `_shared_names` of ``steps`` when not given), so that a path through one of two
    ``get_profile`` calls says which (nu32 finding 8)."""
    if shared is None:
        shared = _shared_names(steps)
    names = [(_label(steps[s], s) if steps[s].name in shared else steps[s].name) if s in steps else short(s)
             for s in c.path]
    if len(names) > PATH_SHOWN:
        names = [*names[:3], f"… {len(names) - 7} more …", *names[-4:]]
    return " → ".join(names)


def _shared_names(steps: Mapping[str, Step]) -> frozenset[str]:
    """The step names more than one step of ``steps`` carries."""
    seen: set[str] = set()
    shared: set[str] = set()
    for step in steps.values():
        (shared if step.name in seen else seen).add(step.name)
    return frozenset(shared)


def _seconds(s: float) -> str:
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def chain_summary(chain: Any, steps: Mapping[str, Step]) -> str:
    """One line for an error chain of the lifecycle report, whatever fields it carries."""
    if isinstance(chain, Mapping):
        for key in ("summary", "text", "description"):
            if isinstance(chain.get(key), str):
                return str(chain[key])
        ids = chain.get("steps") or chain.get("step_ids")
        if isinstance(ids, list) and ids:
            names = [steps[i].name if isinstance(i, str) and i in steps else str(i) for i in ids]
            stage = chain.get("stage") or chain.get("final_stage")
            return " → ".join(names) + (f" ({stage})" if stage else "")
    from trajdebug.analysis import text_of

    return text_of(chain, 160)


SETTLE = (
    "what would settle it: a passing run of the same input in the source (then `trajdebug diff` "
    "shows where they part), `--judge` (a model reviews the shortlisted steps), or replaying the "
    "top candidates with `--verify`"
)
"""What the text says when the learned ranker is unsure."""
SETTLE_SAME = (
    "what would settle it: `--ask` (the passing run of the same input, {ref}, compared already, answers for "
    "every step whose output it also produced, so only the steps where they part are asked), `--judge`, or "
    "replaying the top candidates with `--verify`"
)
"""`SETTLE` when a passing run of the same input was among the references: advising one again confused a user."""


STANDING_TAGS = {
    "proved": "proved root",
    "singled out": "singled out by the answers, not a person's: no proof",
    "set aside": "set aside by the answers, not a person's: no proof",
}
"""A candidate's tag when the answers placed it (`trajdebug.analysis.answer_standing`), in place of the ranking's
"suspect" and confidence; the other standings ("ruled out", "wrong, not the root") read as they are.  "Set aside"
is not the root by answers not all a person's, a step they answered wrong included (`SET_ASIDE`): its own line
says how it was answered."""


def verdict_note(a: Analysis) -> str | None:
    """The verdict as a sentence: proved by a person's answers (which), or the learned ranker's (None when no
    model ranked the run and no person proved the root)."""
    from trajdebug.analysis import person_proof

    verdict = getattr(a, "verdict", None)
    steps = a.run.step_map()
    g = getattr(a, "guided", None)
    if verdict == "proved":
        # A person's answers settled it: which answers, and what the ranking alone thought, never what would settle it.
        proof = person_proof(a)
        root = f" {_label(steps.get(g.root), g.root)}" if g is not None and g.root else ""
        which = ", ".join(f"{_label(steps.get(x.step_id), x.step_id)} {answer_word(x)}" for x in proof)
        alone = getattr(a, "ranker_verdict", None)
        best = getattr(a, "ranker_confidence", None)
        before = "" if alone is None else f"; the ranking alone was {alone}" + (
            "" if best is None else f" (its best candidate's calibrated confidence {best:.0%})"
        )
        return f"verdict: proved{root} by a person's {len(proof)} answer(s) ({which}){before}"
    automatic = ""
    if g is not None and g.certain and g.root and not g.conflict:
        # An automatic oracle's proof (a passing run, an expectation, a judge) is a lead, not a verdict.
        from trajdebug.analysis import whose

        automatic = f"; the answers of {one_line(whose(a))} single out {_label(steps.get(g.root), g.root)}, no person's: not a proof"
    if verdict is None:
        return None
    conf, bounds = _ranking_confidence(a, steps), verdict_bounds(a)
    conf = f"{conf[:-1]}; {bounds})" if conf.endswith(")") and bounds else conf + (f" ({bounds})" if bounds else "")
    if verdict == "unsure":
        same = getattr(a, "same_input", ())
        return f"verdict: unsure{conf}; {SETTLE_SAME.format(ref=shown_id(a, same[0])) if same else SETTLE}{automatic}"
    return f"verdict: {verdict}{conf}{automatic}"


def verdict_bounds(a: Analysis) -> str:
    """Where the verdict's words begin for this run: the learned model's thresholds (its file's
    ``thresholds``), the ``confident`` one of the setting the run was analysed in (with references or alone: they
    differ), so that 77 % "likely" beside 78 % "confident" reads as a threshold between them (nu62 bug 5)."""
    bounds = getattr(a, "verdict_thresholds", None)
    if bounds is None:
        return ""
    likely, sure = bounds
    setting = "with references" if getattr(a, "references", ()) else "alone"
    top = f"confident from {sure:.1%}" if sure <= 1.0 else "never confident"
    return f"{setting}: likely from {likely:.0%}, {top}"


def _ranking_confidence(a: Analysis, steps: Mapping[str, Step]) -> str:
    """The verdict's number: the calibrated confidence of the ranking's own best candidate (`ranker_confidence`),
    named when answers moved another step to the head of the list (nu25 F10: the step the answers single out,
    at the ranking's 0%, read as the verdict's "likely" candidate)."""
    best = getattr(a, "ranker_confidence", None)
    if best is None:
        return ""
    ranked = getattr(a, "ranked", None)
    top = ranked.candidates[0] if ranked is not None and ranked.candidates else None
    if top is not None and a.root_causes and top.step_id != a.root_causes[0].step_id:
        return f" (the ranking's own best candidate, {_label(steps.get(top.step_id), top.step_id)}, has calibrated confidence {best:.0%})"
    return f" (the best candidate's calibrated confidence is {best:.0%})"


def _sections(a: Analysis) -> Iterable[tuple[str, Any]]:
    """The analysis as a sequence of typed pieces the three renderers format alike."""
    from trajdebug.analysis import answer_standing

    run = a.run
    steps = {s.step_id: s for s in run.steps}
    earlier = {(r.run_id, s.step_id): s for r in getattr(a, "previous", ()) for s in r.steps}
    for (_, sid), st in earlier.items():
        steps.setdefault(sid, st)
    reason = f": {run.failure_reason}" if run.failure_reason else ""
    yield "title", (run, f"{run.outcome}{reason}")
    if a.inferred:
        yield "note", "some dependencies were inferred from content (candidates say which)"
    yield "note", compared_note(a)
    groups = a.failure_groups()
    yield "heading", f"Failures ({len(groups)})"
    if not groups:
        yield "note", "no failure detected"
    for g in groups:
        f = g.failure
        # One exception re-raised by each step it left (a sub-agent, the tool that ran it, its caller)
        # is one failure: where it occurred, then the path it propagated along.
        via = " → ".join(f"{_label(steps.get(p.step_id), p.step_id)}" for p in g.propagated)
        yield "failure", (_label(steps.get(f.step_id), f.step_id), f.detector, f.where, f.message, via)
    yield "heading", _causes_heading(a)
    order = _order_line(a)
    if order:
        yield "note", order
    by_share = _by_share(a)
    by_answers = ordered_by(a) == "answers"
    answered = answer_standing(a) if getattr(a, "guided", None) is not None else {}
    shared = _shared_names(steps)  # once for the run, not once per candidate
    for i, c in enumerate(a.root_causes, 1):
        run_id = getattr(c, "run_id", None)
        s = earlier.get((run_id, c.step_id)) if run_id is not None else steps.get(c.step_id)
        kind = s.kind if s is not None else "?"
        where = agent_of(s, _parent(s, run_id, steps, earlier))
        agent = f", agent {where}" if where else ""
        if run_id is not None:
            agent += f", earlier turn {shown_id(a, run_id)}"
        tag = "structural root" if c.root else "suspect"
        conf = getattr(c, "confidence", None)
        ruled = answered.get(c.step_id) if run_id is None else None
        if ruled is not None:
            # The answers placed it: the ranking's tag and confidence no longer describe it (the JSON keeps them).
            tag = STANDING_TAGS.get(ruled, ruled)
            if ruled == "set aside" and conf is not None:
                # No proof set it aside, so what the ranking thought of it still counts, named as the ranking's.
                tag += f" (the ranking's confidence {conf:.0%})"
        elif conf is not None:
            tag += f", confidence {conf:.0%}"
        # The number shown is the one the list is in the order of: the learned model's share, else the score.
        # Ordered by the answers, no number orders it: the score is named as the evidence's, so a cleared step
        # above the proved root's score does not read as ranked above it.
        number = (
            f"share {c.share:.3f}" if by_share else f"evidence score {c.score:.3f}" if by_answers else f"score {c.score:.3f}"
        )
        yield (
            "cause",
            (
                i,
                _label(s, c.step_id),
                f"{kind}{agent}",
                number,
                tag,
                c.reasons[:MAX_REASONS],
                _path(c, steps, shared),
            ),
        )
    note = verdict_note(a)
    if note:
        yield "note", note
    chains = a.error_chains()
    if chains:
        yield "heading", f"Error chains ({len(chains)})"
        for ch in chains[:5]:
            yield "chain", chain_summary(ch, steps)
    st = a.localization.stats
    yield "stats", f"examined {st.steps_examined} of {st.steps} steps in {_seconds(st.seconds)}"


def _parent(
    s: Step | None, run_id: str | None, steps: Mapping[str, Step], earlier: Mapping[tuple[str, str], Step]
) -> Step | None:
    """The step a candidate's step ran inside: in the run analyzed, or in its earlier turn ``run_id``."""
    if s is None or not s.parent_id:
        return None
    return earlier.get((run_id, s.parent_id)) if run_id is not None else steps.get(s.parent_id)


def shown_id(a: Analysis, rid: str) -> str:
    """A run id as the reports show it: its shortest prefix of at least 12 characters unique among the run ids
    of the analysis's sources (`Analysis.source_ids`), else among the ones it names (`trajdebug.core.shortids`)."""
    from trajdebug.core.shortids import short_id

    ids = getattr(a, "source_ids", ()) or (
        a.run.run_id,
        *(getattr(a, "references", ()) or ()),
        *(getattr(a, "same_input", ()) or ()),
        *(r.run_id for r in getattr(a, "previous", ()) or ()),
    )
    return short_id(rid, ids)


def compared_note(a: Analysis) -> str:
    """What the evidence was compared with: the passing runs used as references, or none."""
    refs = list(getattr(a, "references", ()) or ())
    if not refs:
        where = "the source or --refs" if getattr(a, "refs", ()) else "the source"
        note = f"compared with: no passing run of this agent in {where} (evidence from this run alone)"
    else:
        shown = ", ".join(shown_id(a, r) for r in refs[:5]) + (f" and {len(refs) - 5} more" if len(refs) > 5 else "")
        note = f"compared with {_runs(len(refs))} of this agent: {shown}"
    others = getattr(a, "other_agents", ()) or ()
    if others:
        # A file given to compare with whose runs were all another agent's left the user guessing why.
        n = sum(count for _, count in others)
        named = ", ".join(f"{count} of {name}" for name, count in others[:3]) + (", ..." if len(others) > 3 else "")
        note += (
            f"; --refs held {_runs(n)} of another agent, skipped ({named}; this run is {a.run.name}:"
            f" only runs of the same name are compared; {naming_fix(a.run)})"
        )
    return note


MESSAGE_LOGS = frozenset({"openai-messages", "transcript"})
"""Imported formats whose run is named by a top-level ``name``, else by the file's stem (docs/importers.md)."""


def naming_fix(run: Run) -> str:
    """How to give a run and its passing runs one name, in the terms of where ``run`` came from.

    A message log without a ``name`` is named after its file, so a failing and a passing log kept in two files
    (as the ``--refs`` examples suggest) are two agents until each says its name (newuser65)."""
    fmt = run.metadata.get("source_format")
    if fmt in MESSAGE_LOGS or (fmt is None and run.name == run.run_id):
        return 'to compare them, give each log the same top-level "name" (else its file\'s stem names its runs)'
    if fmt == "otlp":
        return "to compare them, give their top spans one name (or the resource attribute trajdebug.run.name)"
    return "to compare them, record them under one name (trajdebug.run(NAME, ...))"


def _runs(n: int) -> str:
    return f"{n} passing run" + ("" if n == 1 else "s")


def analysis_lines(a: Analysis, width: int = WIDTH) -> list[str]:
    """The analysis as plain text lines, wrapped to ``width`` columns."""
    out: list[str] = []

    def wrap(text: str, indent: str, first: str | None = None) -> None:
        out.extend(
            textwrap.wrap(
                text, width, initial_indent=first if first is not None else indent, subsequent_indent=indent
            )
            or [indent.rstrip()]
        )

    for kind, value in _sections(a):
        if kind == "title":
            run, status = value
            wrap(f"run {shown_id(a, run.run_id)} ({run.name}): {status}", "  ")
        elif kind == "heading":
            out.extend(["", value])
        elif kind == "note":
            wrap(value, "  ")
        elif kind == "failure":
            label, det, where, msg, via = value
            wrap(f"✗ {label} [{det}, {where}] {msg}", "    ", "  ")
            if via:
                wrap(f"propagated through {via} (the same exception, counted once)", "      ", "    ")
        elif kind == "cause":
            i, label, kind_s, number, tag, reasons, path = value
            wrap(f"{i}. {label} ({kind_s}) {number} [{tag}]", "     ", "  ")
            for r in reasons:
                wrap(r, "       ", "     · ")
            if " → " in path:
                wrap(f"path: {path}", "       ", "     ")
        elif kind == "chain":
            wrap(value, "    ", "  ")
        elif kind == "stats":
            out.extend(["", value])
    return [visible(line) for line in out]


def render_analysis(a: Analysis, console: Any, *, run: Run | None = None) -> None:
    """Print an analysis on a rich console (``run`` is accepted for symmetry with the other renderers)."""
    from rich.text import Text

    from trajdebug.core.escape import markup as escape

    def indented(markup: str, indent: int, style: str = "") -> None:
        # Wrapped continuation lines stay under the first one; each line is printed
        # as wrapped, so no line carries the padding's trailing spaces.
        text = Text.from_markup(markup, style=style)
        if console.soft_wrap:  # piped (`trajdebug.cli._common.console`): one line, never split mid-value
            console.print(Text(" " * indent) + text, soft_wrap=True)
            return
        width = max(20, (console.width or 80) - indent)
        for line in text.wrap(console, width):
            line.rstrip()
            console.print(Text(" " * indent) + line, soft_wrap=True)

    for kind, value in _sections(a):
        if kind == "title":
            r, status = value
            style = OUTCOME_STYLE.get(r.outcome, "white")
            console.print(
                f"[bold]Analysis[/] of run {escape(shown_id(a, r.run_id))} ({escape(r.name)}): [{style}]{escape(status)}[/]"
            )
        elif kind == "heading":
            console.print(f"\n[bold]{escape(value)}[/]")
        elif kind == "note":
            indented(escape(value), 2, "dim")
        elif kind == "failure":
            label, det, where, msg, via = value
            indented(f"[red]✗[/] {escape(label)} [dim]\\[{escape(det)}, {escape(where)}][/] {escape(msg)}", 2)
            if via:
                indented(f"propagated through {escape(via)} (the same exception, counted once)", 4, "dim")
        elif kind == "cause":
            i, label, kind_s, number, tag, reasons, path = value
            tag_style = "bold red" if tag.startswith("structural root") else "yellow"
            indented(f"[bold]{i}. {escape(label)}[/] ({escape(kind_s)}) {number} [{tag_style}]{tag}[/]", 2)
            for r in reasons:
                indented(f"· {escape(r)}", 5)
            if " → " in path:
                indented(f"path: {escape(path)}", 5, "dim")
        elif kind == "chain":
            indented(escape(value), 2)
        elif kind == "stats":
            console.print(f"\n{escape(value)}", style="dim")


def _md(text: str) -> str:
    return markdown(text)


def analysis_markdown(a: Analysis) -> str:
    """The analysis as Markdown."""
    lines: list[str] = []
    for kind, value in _sections(a):
        if kind == "title":
            r, status = value
            lines.append(f"## Analysis of run {md_code(shown_id(a, r.run_id))} ({_md(r.name)}): {_md(status)}")
        elif kind == "heading":
            lines.extend(["", f"### {_md(value)}", ""])
        elif kind == "note":
            lines.append(f"_{_md(value)}_")
        elif kind == "failure":
            label, det, where, msg, via = value
            lines.append(f"- **{_md(label)}** ({_md(det)}, {_md(where)}): {_md(msg)}")
            if via:
                lines.append(f"  - propagated through {_md(via)} (the same exception, counted once)")
        elif kind == "cause":
            i, label, kind_s, number, tag, reasons, path = value
            lines.append(f"{i}. **{_md(label)}** ({_md(kind_s)}), {number}, {tag}")
            lines.extend(f"   - {_md(r)}" for r in reasons)
            if " → " in path:
                lines.append(f"   - path: {_md(path)}")
        elif kind == "chain":
            lines.append(f"- {_md(value)}")
        elif kind == "stats":
            lines.extend(["", f"_{_md(value)}_"])
    return "\n".join(lines) + "\n"



def _causes_heading(a: Any) -> str:
    """The heading of the ranked list (how it is ordered is `_order_line`, the line under it)."""
    return "Root causes" + ("" if a.root_causes else " (none: nothing failed)" if not a.failures else "")


ORDER_LINES = {
    "answers": (
        "order: the root the answers prove (or single out), then suspects left, then steps they cleared; the evidence"
        " score beside each is the ranking's, from before the answers"
    ),
    "share": "order: by the learned model's share of the blame (the share shown), highest first",
    "judge": "order: by score, the evidence's combined with the model's verdicts (--judge), highest first",
    "roots-first": "order: structural roots first, then suspects; score orders within each",
}
"""The line under the ranked list that says how it is ordered, by `ordered_by`: it names the number that orders it,
which is the number each candidate shows (`_by_share`)."""

CALIBRATED_APART_LINE = (
    "order: by the learned model's share of the blame (the share shown), highest first; the confidence beside it "
    "is calibrated separately and can be higher further down"
)
"""The line for the learned order (`Analysis.order` ``share``) when a confidence rises down the list."""


def ordered_by(a: Any) -> str:
    """What orders an analysis's ranked list: `Analysis.order`, or ``judge`` when a model on top re-ranked it by
    score (`Analysis.judged`) and no guided search's answers moved it since."""
    order = getattr(a, "order", "roots-first")
    return "judge" if order != "answers" and getattr(a, "judged", False) else order


def _by_share(a: Any) -> bool:
    """Whether the list is in the learned model's order and each candidate has its share (then the share is the
    number shown, not the hand-weighted score, which would suggest another order)."""
    causes = a.root_causes
    return ordered_by(a) == "share" and bool(causes) and all(
        getattr(c, "share", None) is not None for c in causes
    )


def _order_line(a: Any) -> str | None:
    """How the ranked list is ordered, in one line (None when it is empty), so that no label or score
    seems to contradict a position: the hand ranking puts structural roots first whatever their score."""
    if not a.root_causes:
        return None
    order = ordered_by(a)
    flags = [bool(c.root) for c in a.root_causes]
    if order == "roots-first" and flags != sorted(flags, reverse=True):
        return "order: as re-ranked (a suspect stands before a structural root)"  # never the hand ranking's own
    if order == "share" and not _by_share(a):
        return "order: by the learned model's ranking"  # no share to show (a candidate it did not score)
    confs = [getattr(x, "confidence", None) for x in a.root_causes]
    if order == "share" and any(b > a for a, b in pairwise(confs) if a is not None and b is not None):
        # The model orders by its trees' probability (the share); the confidence is a calibrator's reading of it
        # with the hand score, fitted for the best candidate: a neighbour may show more (22 % under 21 %).
        # Neighbours only: a candidate without a confidence between two says nothing of their order.
        return CALIBRATED_APART_LINE
    return ORDER_LINES.get(order)


__all__ = [
    "CALIBRATED_APART_LINE",
    "ORDER_LINES",
    "SETTLE",
    "SETTLE_SAME",
    "agent_of",
    "analysis_lines",
    "analysis_markdown",
    "chain_summary",
    "compared_note",
    "ordered_by",
    "render_analysis",
    "verdict_note",
]
