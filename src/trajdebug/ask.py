"""A person as the oracle, in the terminal: ``trajdebug analyze SOURCE --ask``.

The guided search (`trajdebug.analysis.GuidedSearch`) picks one step at a
time; `ask_in_terminal` shows it with the input it was given and where that
came from (`trajdebug.report.question`) and reads one key: ``y`` the output is
correct given the input; ``o`` it is wrong for the input it was given (its own
fault: what it was given was right); ``i`` it is wrong because what it was
given was wrong; ``n`` it is wrong (not saying which); ``?`` don't know; ``e``
expand the folded values; ``q`` stop.  ``o`` and ``i`` are Naish's erroneous
and inadmissible (*A Declarative Debugging Scheme*, 1997, `Answer.admissible`):
``o`` spares the questions about the step's inputs, ``i`` sends the search
upstream; ``n`` is always safe.  Each answer is
stored with the run as soon as it is given (`trajdebug.answers.AnswerLog`,
``by="person"``), so stopping, Ctrl-C or a crash keeps every answer given,
and a second ``--ask`` starts from the stored answers: no step is asked twice.
It ends with the root, the answers that prove it and the path to the failure.

Keys come from ``click.getchar`` on a terminal (one key, no Enter) and from
lines on a pipe (the first character of each line), so a script can answer too.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajdebug.analysis import Analysis, Guided, GuidedSearch, ReferenceOracle
from trajdebug.answers import AnswerLog
from trajdebug.core.escape import cut_where_differs, one_line
from trajdebug.core.model import Answer, Run, Step
from trajdebug.report.question import question_for, render_guided, render_question
from trajdebug.report.text import short


KEYS = {"y": True, "n": False, "?": None, "o": False, "i": False}
"""The answer keys: correct, wrong, don't know; ``o`` and ``i`` are wrong too (`ADMISSIBLE` says how)."""
ADMISSIBLE = {"o": True, "i": False}
"""Of the wrong keys, what they say of the step's inputs (`Answer.admissible`): ``o`` right (the step's
own fault), ``i`` wrong (it was given a wrong value); ``n`` says nothing."""

PROMPT = (
    "Is this output right, what the run needed here?  [y] yes  [o] no, its own fault (what it was given was right)"
    "  [i] no, it was given a wrong input  [n] no (not saying which)  [?] don't know  [e] expand  [q] quit"
)


@dataclass(frozen=True, slots=True)
class Asked:
    """What one ``--ask`` session did to one run."""

    run_id: str
    guided: Guided
    given: int
    """Answers about steps given in this session, each stored (a group's "all right" is one per step)."""
    stopped: bool
    """The person stopped (``q`` or Ctrl-C) before the search was done."""


def read_key_default() -> str:
    """One key from the terminal, or the first character of a line when stdin is not a terminal.

    Raises:
        KeyboardInterrupt: Ctrl-C.
        EOFError: stdin ended (a pipe with no line left, a terminal that closed or hung up, Ctrl-D).
    """
    if sys.stdin.isatty():
        import click

        try:
            key = click.getchar()
        except OSError as e:  # the terminal went away (EIO on a hung-up pseudo-terminal)
            raise EOFError from e
        if not key:
            raise EOFError  # the terminal closed (a read of nothing): no key will come
        return key
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.strip()[:1] or "\n"


def _key(read_key: Callable[[], str]) -> str:
    """The key read, lower case, without the whitespace around it: a key typed with Enter in one write (a
    pasted ``y⏎``, a script's line) is that key (issue 23, nu23).  Enter or a space alone stays as read."""
    raw = read_key()
    return raw.strip().lower() or raw


def ask_in_terminal(
    source: str | Path,
    analyses: Sequence[Analysis],
    console: Any,
    *,
    read_key: Callable[[], str] = read_key_default,
    strategy: str = "prior",
    max_questions: int | None = None,
    twins: Mapping[str, Run | None] | None = None,
) -> list[Asked]:
    """Ask a person about the failed runs' steps until each root is found; store each answer with its run.

    Args:
        source: Where the runs live (answers are appended there, or to a foreign source's side file).
        analyses: The analyses; runs with no failing step are skipped with a line saying so.
        console: A ``rich.console.Console``.
        read_key: Reads one key (`read_key_default`).
        strategy: The question order (`trajdebug.analysis.STRATEGIES`).
        max_questions: Ask at most this many per run.
        twins: Per failed run's id, a passing run of the same input (`trajdebug.api.same_input`): a step
            whose output it also produced is answered correct by it, never asked of the person.

    Raises:
        trajdebug.sources.load.SourceError: an answer cannot be stored (the message names the file).
    """
    out: list[Asked] = []
    for analysis in analyses:
        if analysis.run.outcome == "success":
            continue
        twin = (twins or {}).get(analysis.run.run_id)
        asked = _ask_run(source, analysis, console, read_key, strategy, max_questions, twin)
        out.append(asked)
        if asked.stopped:
            break
    return out


def _ask_run(
    source: str | Path,
    analysis: Analysis,
    console: Any,
    read_key: Callable[[], str],
    strategy: str,
    max_questions: int | None,
    twin: Run | None = None,
) -> Asked:
    run = analysis.run
    same = None if twin is None else ReferenceOracle(twin)
    log = _Log(source, run.run_id)
    # An automatic oracle's "don't know" leaves the question to the person: it neither blocks it (a step
    # answered once is not asked again) nor is stored (the oracle is asked again by the next analysis).
    known = [a for a in run.answers if a.correct is not None or _by_person(a)]
    # What the oracles of this analysis (--oracle, checks, a passing run, --judge) answered is data
    # too: stored with the run beside the person's answers, and never asked of the person again.
    seen = {(a.step_id, a.run_id, a.by) for a in run.answers}
    told = analysis.guided.questions if analysis.guided else ()
    found = [a for a in told if a.correct is not None and (a.step_id, a.run_id, a.by) not in seen]
    known.extend(log.save(a) for a in found)
    # Each answer is stored as given, so the search asks no step twice (``once``): a resumed session, which
    # reads back only the latest answer per step, then asks what this one would have asked next.
    search = GuidedSearch(analysis, known, strategy=strategy, max_questions=max_questions, once=True)
    rid = shown_run(analysis)
    console.print(f"run {rid}: {len(run.answers)} stored answer(s)", markup=False, highlight=False)
    # Questions are numbered across sessions: a resumed session goes on from the questions stored before (the
    # answers one question gave a group of like steps share their time; its "not all" is stored as a record).
    before = len({a.at_ns for a in run.answers if a.by == "person"})
    questions = given = 0  # questions answered in this session; answers stored (a group's "all right": one a step)
    stopped, sid, about = False, None, []  # about: the steps of the question left open
    try:
        while (sid := search.next_question()) is not None:
            if same is not None and same(search.graph.steps[sid], run) is True:
                # The passing run of the same input produced this very output: what the run needed here.
                search.answer(log.save(search.stamp(Answer(sid, True, same.by, time.time_ns()))))
                continue
            about = _group(search, sid, run, same)
            if len(about) > 1:
                said_all = _group_answer(run, about, before + questions + 1, console, read_key)
                if said_all == "quit":
                    stopped = True
                    break
                questions += 1
                if said_all == "yes":
                    search.answer_group(_all_right(search, log, run, about))
                    given += len(about)
                    continue
                # "Not all" or "don't know": stored as a record of the question (it judges no step), so a resumed
                # session asks the step on its own too, numbered as here; its answer is asked next.
                log.save(search.not_all(about, time.time_ns(), unsure=said_all == "unsure"))
                about = [sid]
            q = question_for(run, sid, before + questions + 1)
            said = _one_answer(q, console, read_key)
            if isinstance(said, str):
                stopped = True
                break
            # Stored with what it was asked as (an audit, a question): a resumed session takes it the same way.
            stored = log.save(search.stamp(Answer(sid, said[0], "person", time.time_ns(), admissible=said[1])))
            search.answer(stored)
            questions += 1
            given += 1
    except (KeyboardInterrupt, EOFError):
        stopped = True
    guided = search.result()
    if stopped:
        console.print(f"\nstopped: {_tally(given, questions, before)}; ask again to resume", markup=False, highlight=False)
        if sid is not None and not guided.certain and guided.root is not None and guided.root not in about:
            why = _why_asked(search, strategy)
            console.print(_not_the_likeliest(run, about, before + questions + 1, why), markup=False, highlight=False)
    console.print()
    render_guided(guided, run, console)
    if guided.clashing:
        console.print(_take_back(source, rid, guided), markup=False, highlight=False)
    if guided.unproven is not None and (again := _answer_again(source, rid, guided)):
        console.print(again, markup=False, highlight=False)
    return Asked(run.run_id, guided, given, stopped)


def _tally(given: int, questions: int, before: int) -> str:
    """The answers given in a session and the questions they answered, which part when a group's one question
    stored an answer per step (or its "not all" none); with ``before`` questions of earlier sessions, the total."""
    tally = f"{given} answer(s) given {'now' if before else 'and stored'}"
    tally += f" in {questions} question(s)" if questions != given else ""
    return tally + (f", {before + questions} question(s) in all" if before else "")


class _Log:
    """The run's `AnswerLog`, opened at the first answer stored: a session that stores nothing resolves nothing."""

    def __init__(self, source: str | Path, run_id: str) -> None:
        self.source, self.run_id = source, run_id
        self._log: AnswerLog | None = None

    def save(self, answer: Answer) -> Answer:
        if self._log is None:
            self._log = AnswerLog(self.source, self.run_id, known=[self.run_id])
        return self._log.save(answer)


GROUP_PROMPT = (
    "Are all {n} outputs right, what the run needed there?  [y] yes, all {n}  [n] not all  [?] don't know "
    "(either: ask them one by one)  [q] quit"
)
"""The keys of a question about a group of like steps (`GuidedSearch.group`), ``{n}`` the group's size: the
three-valued oracle's yes, no and don't know, as every question takes them."""


def group_head(run: Run, group: Sequence[str]) -> str:
    """What a question about a group of like steps is about, said as a question about them all: their count,
    kind and name, and every id (nu26 F10: "other estimate_hours #000013 and 4 more estimate_hours step(s)"
    read as a question about #000013, and a script answered it for that step alone)."""
    first = run.step_map()[group[0]]
    ids = ", ".join(f"#{short(sid)}" for sid in group)
    return f"Are all {len(group)} of these right? {one_line(first.kind)} {one_line(first.name)} {ids}"


_GROUP_SHOWN = 160
"""Characters of each input and output shown in a group's question (one line each)."""


def _group(search: GuidedSearch, sid: str, run: Run, same: ReferenceOracle | None) -> list[str]:
    """The like steps to ask about with ``sid`` at once (`GuidedSearch.group`), none the passing run of the
    same input answers.  A group's "not all" is stored as a record of the question (`GuidedSearch.not_all`):
    no group of that name is offered again, in this session or a resumed one."""
    group = search.group(sid)
    if same is not None:
        group = [g for g in group if g == sid or same(search.graph.steps[g], run) is not True]
    return group


def _group_answer(run: Run, group: Sequence[str], number: int, console: Any, read_key: Callable[[], str]) -> str:
    """Show one question about a group of like steps, each step's input and output on a line; ``"yes"`` when a
    person answers that every output is right, ``"no"`` (not all, ask them one by one), ``"unsure"`` (don't know:
    ask them one by one too) or ``"quit"``.  A key it does not take asks again, with the prompt and its keys."""
    steps = run.step_map()
    at = {s.step_id: k for k, s in enumerate(run.steps, 1)}
    console.print()
    # The count and the question lead, then every id: read as "question N: KIND NAME #ID", a group's question
    # was taken for one about its first step (nu26 F10), so it no longer has that shape.
    console.print(f"question {number}: {group_head(run, group)}", markup=False, highlight=False, style="bold")
    # In the run's order, each value cut where it first differs from the first step's (nu30 finding 9: listed out of
    # order, every input cut at its head, just before where they differed).
    shown = sorted(group, key=lambda g: at.get(g, 0))
    head = steps[shown[0]]
    for sid in shown:
        s = steps[sid]
        console.print(f"  #{short(sid)} (step {at[sid]} of {len(run.steps)})", markup=False, highlight=False)
        console.print(f"    input  {_one(s.input, head.input)}", markup=False, highlight=False)
        console.print(f"    output {_one(s.output, head.output)}", markup=False, highlight=False)
    prompt = GROUP_PROMPT.format(n=len(group))
    console.print(prompt, markup=False, highlight=False, style="bold")
    while True:
        key = _key(read_key)
        if key in ("y", "q"):
            return "yes" if key == "y" else "quit"
        if key in ("n", "o", "i"):
            if key != "n":
                # A step's wrong answer says not all are right: each step is asked on its own, said, not done silently.
                console.print(f"{key!r} read as [n] not all: each step is asked on its own", markup=False,
                              highlight=False, style="dim")
            return "no"
        if key == "?":
            # Don't know, as every question takes it (nu32: a script answering '?' waited forever): no "not all"
            # (round 50 review), but each step is asked on its own, where it can be answered.
            return "unsure"
        if key not in ("\r", "\n", "", " "):
            # Asked again with the prompt, so a script that waits for it (its keys, "[q] quit") reads it again.
            console.print(f"{key!r} is no answer here: press y, n, ? or q", markup=False,
                          highlight=False, style="dim")
            console.print(prompt, markup=False, highlight=False, style="bold")


def _one(value: Any, against: Any = None) -> str:
    """A value on one line, cut to `_GROUP_SHOWN` characters; beside ``against`` (the group's first step's), cut
    around where the two first differ, so that like steps' values do not all read as their common head."""
    return cut_where_differs(_text(value), None if against is None else _text(against), _GROUP_SHOWN)


def _text(value: Any) -> str:
    """A value as one line of JSON (its repr when JSON cannot say it)."""
    import json

    try:
        return one_line(json.dumps(value, ensure_ascii=False, default=str))
    except (TypeError, ValueError, RecursionError):
        return one_line(repr(value))


def _all_right(search: GuidedSearch, log: _Log, run: Run, group: Sequence[str]) -> list[Answer]:
    """The group's "all right" as one stored answer per step, by the person, at one time (one question), each
    saying it was given for the group: a resumed search reads them back as any answer."""
    now = time.time_ns()
    name = run.step_map()[group[0]].name
    why = f"answered at once for {len(group)} {name} steps: all right"
    return [log.save(search.stamp(Answer(sid, True, "person", now, why))) for sid in group]


def _by_person(a: Answer) -> bool:
    """True for a person's answer (``person``, ``person:alice``), which a search that asks a person keeps as given."""
    return a.by.split(":", 1)[0] == "person"


def shown_run(analysis: Analysis) -> str:
    """The analysed run's id as the session shows it and puts in the commands it suggests: its shortest prefix of
    at least 12 characters unique in its sources (`trajdebug.core.shortids`), whole when they are not known."""
    from trajdebug.core.shortids import short_id

    rid = analysis.run.run_id
    ids = getattr(analysis, "source_ids", ())
    return short_id(rid, ids) if ids else rid


def _take_back(source: str | Path, rid: str, guided: Guided) -> str:
    """How to settle answers that clash: no step is asked twice (`GuidedSearch` ``once``), so the person takes
    one back and asks again.  Only steps that hold an answer are named (`Guided.clashing`)."""
    forget = " (or ".join(f"`trajdebug answers forget {source} --run {rid} --step {s}`" for s in guided.clashing)
    more = ")" * (len(guided.clashing) - 1)
    return f"take back the answer that is wrong: {forget}{more}, and ask again"


def _answer_again(source: str | Path, rid: str, guided: Guided) -> str | None:
    """How to give the answer that would prove a root left unproven (`Guided.unproven`): no step is asked twice
    (`GuidedSearch` ``once``), so the person takes back the root's answer, or a "don't know" of its audit, and
    asks again.  None when no answer of theirs is there to take back (the root is the failure, unanswered)."""
    steps = [s for s in (guided.root, *(guided.unproven or ())) if s is not None and s != guided.failure]
    if not steps:
        return None
    forget = " or ".join(f"`trajdebug answers forget {source} --run {rid} --step {s}`" for s in steps)
    return f"to answer again: {forget}, then ask again"


_ORDER = {
    "prior": "the search asks the step whose answer is expected to narrow the candidates most (information gain)",
    "top-down": "the top-down order asks the inputs of the deepest wrong step first",
    "linear": "the linear order asks backward from the failure",
}
_AUDIT = (
    "it tests the proof: no recorded input ties the root below to the steps before it, so one of them may have "
    "handed it a wrong value the recording missed"
)
_LIKELIEST = "the likeliest step holds most of the candidates' probability, so the search proves or refutes it by its inputs"


def _why_asked(search: GuidedSearch, strategy: str) -> str:
    """Why the question left open was asked (`_not_the_likeliest`): an audit of the proof, the likeliest step, or
    the strategy's order."""
    if (search.asked_as() or "").startswith("audit:"):
        return _AUDIT
    return _LIKELIEST if search.chosen_by == "likeliest" else _ORDER.get(strategy, _ORDER["prior"])


def _not_the_likeliest(run: Run, about: Sequence[str], number: int, why: str) -> str:
    """Why the question left open (about the steps ``about``: one, or a group of like steps) was not about the
    likeliest root named below it (``why``): the order asks for the answer that tells the most, which a step
    whose reach holds most of the candidates would not; or the likeliest step holds most of the mass and is
    proved or refuted by its inputs (`GuidedSearch.chosen_by`)."""
    step = run.step_map().get(about[0])
    kind = one_line(step.name) if step else "?"
    name = f"{kind} #{short(about[0])}"
    if len(about) > 1 and step is not None:
        name = f"all {len(about)} {kind} steps, " + ", ".join(f"#{short(sid)}" for sid in about)
    return f"question {number} ({name}) is not about the likeliest root below: {why}"


def _one_answer(q: Any, console: Any, read_key: Callable[[], str]) -> tuple[bool | None, bool | None] | str:
    """Show the question and read keys until an answer (``(correct, admissible)``) or ``"quit"``."""
    console.print()
    folded = render_question(q, console)
    prompt = True
    while True:
        if prompt:
            console.print(PROMPT, markup=False, highlight=False, style="bold")
        prompt = True
        key = _key(read_key)
        if key in ("\r", "\n", "", " "):
            prompt = False  # Enter or a space answers nothing: wait for a key without repeating the prompt
            continue
        if key in KEYS:
            return KEYS[key], ADMISSIBLE.get(key)
        if key == "q":
            return "quit"
        if key == "e":
            if folded:
                console.print()
                render_question(q, console, expanded=True)
            else:
                console.print("(nothing is folded)", markup=False, highlight=False, style="dim")
            continue
        # Asked again with the prompt (its keys listed), so a script waiting for the prompt reads it again.
        console.print(f"{key!r} is no answer: press y, o, i, n, ?, e or q", markup=False, highlight=False,
                      style="dim")


class TerminalOracle:
    """A person at the terminal as an oracle of `trajdebug.analyze_source` (``ask=``): each question shown
    as ``--ask`` shows it, each answer stored with the run when a source is given.

    ``q``, Ctrl-C or the end of input stop the asking: every later question is answered "don't know"
    without being shown, so the analysis still finishes (with the candidates left ranked).

    Example:
        ```python
        import trajdebug
        from trajdebug.ask import TerminalOracle

        result = trajdebug.analyze_source("trajdebug.db", "4f2a", ask=TerminalOracle("trajdebug.db"))
        print(result.analyses[0].guided.root)
        ```
    """

    by = "person"
    interactive = True
    """Asked on the calling thread without a timeout (a person takes their time)."""
    asked_as: str | None = None
    """What the question being asked is asked as (`Answer.asked`), set by `trajdebug.analysis.guided_search`
    before each question, and stored with the answer so a resumed search takes it the same way."""

    def __init__(
        self,
        source: str | Path | None = None,
        *,
        console: Any = None,
        read_key: Callable[[], str] = read_key_default,
    ) -> None:
        if console is None:
            from rich.console import Console

            console = Console(highlight=False, soft_wrap=False)
        self.source = source
        self.console = console
        self.read_key = read_key
        self.given = 0
        self.stopped = False
        self._logs: dict[str, AnswerLog] = {}

    def __call__(self, step: Step, run: Run) -> Answer | None:
        if self.stopped:
            return None
        said: tuple[bool | None, bool | None] | str
        try:
            said = _one_answer(question_for(run, step.step_id, self.given + 1), self.console, self.read_key)
        except (KeyboardInterrupt, EOFError):
            said = "quit"
        if isinstance(said, str):
            self.stopped = True
            self.console.print(f"\nstopped: {self.given} answer(s) given", markup=False, highlight=False)
            return None
        answer = Answer(step.step_id, said[0], self.by, time.time_ns(), admissible=said[1], asked=self.asked_as)
        if self.source is not None:
            log = self._logs.get(run.run_id)
            if log is None:
                log = self._logs[run.run_id] = AnswerLog(self.source, run.run_id, known=[run.run_id])
            answer = log.save(answer)
        self.given += 1
        return answer


__all__ = ["ADMISSIBLE", "KEYS", "PROMPT", "Asked", "TerminalOracle", "ask_in_terminal", "read_key_default"]
