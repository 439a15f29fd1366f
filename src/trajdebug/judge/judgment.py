"""The judge: an optional model on top of the deterministic analysis of one run.

`Judge.judge(analysis)` runs, within one token budget per run:

1. the **shortlist** (`trajdebug.judge.shortlist`): the deterministic
   ranking's head plus the steps on the candidates' paths to the failure;
2. optionally the **expectation** (`trajdebug.judge.expectation`): the outline
   of a correct solution, planned from the task alone;
3. the **verdicts** (`trajdebug.judge.prompts`): one question over the whole
   shortlist, so the model sees the chain of steps it is comparing; the
   constraints are then enforced (`trajdebug.judge.combine.enforce`);
4. the **combination** (`trajdebug.judge.combine.combine`): the final ranking,
   every deterministic candidate kept with its evidence;
5. optionally the **explanation** (`trajdebug.judge.explain`) of the top cause.

`judgment_lines`, `print_judgment`, `judgment_markdown` and `notice` show the
judge's part of a report: which part of the ranking came from the model, and
what it cost (tokens sent, and to which endpoint).

Every failure of the model (an HTTP error, a timeout, an invalid answer after
the repair attempt, an exhausted budget) is recorded in `Judgment.problems`
and leaves the deterministic answer as it was; only a configuration error
raises.  With no candidate (a run that did not fail) nothing is sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from trajdebug.analysis import Analysis
from trajdebug.core.model import Step
from trajdebug.judge.client import ChatClient, ChatModel, JudgeError
from trajdebug.judge.combine import Judged, Verdict, combine, enforce, read_verdicts, rerank
from trajdebug.judge.config import JudgeConfig, require_config
from trajdebug.judge.expectation import Outline, expect, first_departure
from trajdebug.judge.explain import SIGNAL as EXPLAINED
from trajdebug.judge.explain import Explanation, explain
from trajdebug.judge.prompts import VERDICT_SCHEMA, Redaction, verdict_messages
from trajdebug.judge.shortlist import Shortlist, failure_of, task_of
from trajdebug.judge.structured import Session, Tally


MIN_VALUE_CHARS = 150
"""The shortest cut of a step's input or output the budget may force (below it, steps are dropped instead)."""


@dataclass(frozen=True, slots=True)
class Judgment:
    """What the model added to one run's analysis, and what it cost."""

    endpoint: str
    """Where the questions went."""
    model: str
    """The model asked."""
    causes: tuple[Judged, ...] = ()
    """The final ranking, with each cause's deterministic and model parts."""
    verdicts: tuple[Verdict, ...] = ()
    """Every verdict that counts, in run order (path steps judged sound included)."""
    shortlist: tuple[tuple[str, str, str | None, str], ...] = ()
    """The shortlisted steps: ``(label, step id, earlier run id or None, name)``, in run order."""
    outline: Outline | None = None
    """The expected solution outline, when asked for."""
    departure: str | None = None
    """The first shortlisted step (id) whose output departs from the outline."""
    explanation: Explanation | None = None
    """Why the top cause erred, when asked for."""
    usage: Tally = field(default_factory=Tally)
    """What was sent and received."""
    problems: tuple[str, ...] = ()
    """What failed (the deterministic answer stood where it did)."""

    @property
    def changed(self) -> bool:
        """Whether the model moved any cause from its deterministic rank."""
        return any(j.deterministic_rank != i for i, j in enumerate(self.causes, 1))

    def to_dict(self) -> dict[str, Any]:
        """The ``judge`` field of a run in ``analyze --json``."""
        return {
            "endpoint": self.endpoint,
            "model": self.model,
            "shortlist": [
                {"label": lab, "step_id": sid, "run_id": rid, "name": name} for lab, sid, rid, name in self.shortlist
            ],
            "verdicts": [v.to_dict() for v in self.verdicts],
            "expectation": self.outline.to_dict() if self.outline is not None else None,
            "departs_first": self.departure,
            "explanation": self.explanation.to_dict() if self.explanation is not None else None,
            "usage": self.usage.to_dict(),
            "problems": list(self.problems),
        }

    def annotate(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Add the judge's parts to one run of ``analyze --json``: ``judge`` on the run and on each root cause."""
        parts = {(j.candidate.run_id, j.candidate.step_id): j for j in self.causes}
        for rc in entry.get("root_causes", ()):
            j = parts.get((rc.get("run_id"), rc.get("step_id")))
            rc["judge"] = j.to_dict() if j is not None else None
        entry["judge"] = self.to_dict()
        return entry


class Judge:
    """A model on top of the deterministic analysis (see the module's docstring).

    Args:
        config: Endpoint and limits.
        model: The model to ask (default: a `ChatClient` of ``config``'s endpoint).
    """

    def __init__(self, config: JudgeConfig, model: ChatModel | None = None) -> None:
        self.config = config
        self.model: ChatModel = model if model is not None else ChatClient(config)

    @classmethod
    def of(cls, option: Any) -> Judge:
        """A judge from what ``analyze_source(judge=...)`` accepts.

        ``True`` reads the configuration from the environment (OpenAI's
        variables included: the user asked for the judge); a `JudgeConfig`, a
        `Judge`, or any `ChatModel` (with the default limits) are used as given.

        Raises:
            trajdebug.judge.JudgeConfigError: ``True`` and nothing is configured.
            TypeError: anything else.
        """
        if isinstance(option, Judge):
            return option
        if option is True:
            return cls(require_config())
        if isinstance(option, JudgeConfig):
            return cls(option)
        if isinstance(option, ChatModel):
            name = str(getattr(option, "model", "") or type(option).__name__)
            return cls(JudgeConfig(base_url=str(option.endpoint), model=name), option)
        raise TypeError(f"judge: expected True, a JudgeConfig, a Judge or a ChatModel, not {type(option).__name__}")

    def judge(self, analysis: Analysis) -> tuple[Analysis, Judgment | None]:
        """The analysis with the model on top, and what the model added (None: nothing to judge, nothing sent)."""
        if not analysis.root_causes:
            return analysis, None
        cfg = self.config
        session = Session(self.model, cfg.budget, cfg.max_answer_tokens)
        red = Redaction(secrets=[cfg.api_key] if cfg.api_key else [])
        problems: list[str] = []
        task, failure = task_of(analysis.run), failure_of(analysis)
        outline: Outline | None = None
        if cfg.expectation:
            try:
                outline = expect(session, task, red, cfg.value_chars)
            except JudgeError as exc:
                problems.append(f"expectation: {exc}")
        shortlist, messages = self._fit(analysis, session, task, failure, red, outline)
        verdicts: dict[str, Verdict] = {}
        try:
            answer = session.ask("verdicts", messages, VERDICT_SCHEMA)
            found, ignored = read_verdicts(answer, shortlist)
            problems.extend(f"verdicts: ignored {x}" for x in ignored)
            verdicts = enforce(found, shortlist)
        except JudgeError as exc:
            problems.append(f"verdicts: {exc} (the deterministic ranking stands)")
        order = [e.label for e in shortlist]
        first = first_departure(order, {k: v.departs for k, v in verdicts.items()}) if outline else None
        judged = combine(analysis, shortlist, verdicts, cfg.weight, first)
        explanation = None
        if cfg.explain and judged:
            explanation, judged = self._explain(session, task, failure, shortlist, judged, red, problems)
        by_label = shortlist.by_label()
        return rerank(analysis, judged), Judgment(
            self.model.endpoint,
            cfg.model,
            tuple(judged),
            tuple(verdicts[x] for x in order if x in verdicts),
            tuple((e.label, e.step.step_id, e.run_id, e.step.name) for e in shortlist),
            outline,
            by_label[first].step.step_id if first is not None else None,
            explanation,
            session.tally,
            tuple(problems),
        )

    def _fit(
        self,
        analysis: Analysis,
        session: Session,
        task: str,
        failure: str,
        red: Redaction,
        outline: Outline | None,
    ) -> tuple[Shortlist, list[dict[str, str]]]:
        """The shortlist and verdict question that fit the budget: values cut shorter first, then fewer steps."""
        cfg = self.config
        steps, limit = cfg.max_steps, cfg.value_chars
        while True:
            shortlist = Shortlist(analysis, cfg.shortlist, steps)
            messages = verdict_messages(task, failure, shortlist, red, limit, outline)
            if session.fits(messages):
                return shortlist, messages
            if limit > MIN_VALUE_CHARS:
                limit = max(limit // 2, MIN_VALUE_CHARS)
            elif steps > 1 and len(shortlist) > 1:
                steps = min(steps, len(shortlist)) - 1
            else:
                # Does not fit even at its smallest: `Session.ask` refuses it and says so.
                return shortlist, messages

    def _explain(
        self,
        session: Session,
        task: str,
        failure: str,
        shortlist: Shortlist,
        judged: list[Judged],
        red: Redaction,
        problems: list[str],
    ) -> tuple[Explanation | None, list[Judged]]:
        top = judged[0]
        key = (top.candidate.run_id, top.candidate.step_id)
        entry = next((e for e in shortlist if e.key == key), None)
        if entry is None:
            return None, judged
        v = top.verdict
        said = f"{v.verdict} (confidence {v.confidence:.2f}): {v.reason}" if v is not None else "not judged"
        try:
            found = explain(session, task, failure, entry, shortlist, said, red, self.config.value_chars)
        except JudgeError as exc:
            problems.append(f"explanation: {exc}")
            return None, judged
        c = top.candidate
        marked = replace(c, reasons=(*c.reasons, found.line()), signals=(*c.signals, EXPLAINED))
        return found, [replace(top, candidate=marked), *judged[1:]]


def judge_analysis(analysis: Analysis, judge: Any) -> tuple[Analysis, Judgment | None]:
    """`Judge.judge` for what ``analyze_source(judge=...)`` accepts (see `Judge.of`)."""
    return Judge.of(judge).judge(analysis)


def totals(judgments: Iterable[Judgment | None]) -> Tally:
    """The usage of several judgments added up."""
    out = Tally()
    for j in judgments:
        if j is None:
            continue
        out.requests += j.usage.requests
        out.cached += j.usage.cached
        out.repairs += j.usage.repairs
        out.tokens_sent += j.usage.tokens_sent
        out.tokens_received += j.usage.tokens_received
        out.skipped.extend(j.usage.skipped)
    return out


# -- the judge's part of a report ------------------------------------------------------------
#
# Printed after the deterministic analysis (which already carries the model's lines among each
# cause's reasons).  Model text was cleaned to one printable line when read; it is escaped here
# for rich (Text, never markup) and for Markdown.


def _name(steps: Mapping[str, Step], step_id: str) -> str:
    s = steps.get(step_id)
    return f"{s.name}#{step_id[-6:]}" if s is not None else f"?#{step_id[-6:]}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def notice(judgments: Iterable[Judgment | None]) -> str | None:
    """One line: how many tokens went out, to which endpoint (None when nothing was asked)."""
    items = [j for j in judgments if j is not None]
    if not items:
        return None
    t = totals(items)
    where = ", ".join(dict.fromkeys(f"{j.endpoint} (model {j.model})" for j in items))
    cached = f", {t.cached} answered from the cache" if t.cached else ""
    return (
        f"judge: sent {t.tokens_sent:,} tokens in {_count(t.requests, 'request')} "
        f"to {where}, received {t.tokens_received:,}{cached}"
    )


def judgment_lines(j: Judgment, analysis: Any) -> list[str]:
    """The judge's part of an analysis as plain lines (two-space indents)."""
    steps = steps_of(analysis)
    out = [f"Model on top ({j.model} at {j.endpoint})"]
    u = j.usage
    out.append(
        f"  sent {u.tokens_sent:,} tokens in {_count(u.requests, 'request')}, received {u.tokens_received:,}"
        + (f"; {u.cached} answers from the cache" if u.cached else "")
        + (f"; {u.repairs} invalid answers repaired" if u.repairs else "")
    )
    if j.outline is not None:
        first = f"; first step departing from it: {_name(steps, j.departure)}" if j.departure else ""
        out.append(f"  expected solution outline: {_count(len(j.outline.steps), 'step')}{first}")
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


__all__ = [
    "MIN_VALUE_CHARS",
    "Judge",
    "Judgment",
    "judge_analysis",
    "judgment_lines",
    "judgment_markdown",
    "notice",
    "print_judgment",
    "steps_of",
    "totals",
]
