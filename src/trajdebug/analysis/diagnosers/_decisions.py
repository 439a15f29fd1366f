"""Diagnosers of decisions, shared state and sub-agents: choices, lost updates, delegated results.

* **Decisions** (`decision`): a ``condition`` step chooses a branch.  Its
  choice is suspect when alike decisions of the same run went the other way
  (the same kind of input, another answer), or when nothing in its input
  mentions what it chose (a label not grounded in the facts it was given).
* **Races** (`lost_update`): two steps that read and wrote the same state key
  while both were running (parallel branches overlapping in time); the one
  that wrote last overwrote the other's update without seeing it.  The write
  that won is blamed, with the pair as evidence.
* **Sub-agents** (`delegated_result`): an ``agent`` step whose output states
  a value that contradicts what its own children produced.

They rank, they do not prove (`trajdebug.analysis.diagnosers._context`).
"""

from __future__ import annotations

import ast
import bisect
import contextlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis._stated import stated_limits
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._conversation import SYSTEM_ROLES
from trajdebug.analysis.diagnosers._reads import OK, Reads, reading
from trajdebug.analysis.lineage import GENERIC_FIELDS
from trajdebug.core.chat import tool_calls
from trajdebug.core.model import Run, Step
from trajdebug.core.values import mentions


_TOKEN = re.compile(r"[a-z]{3,}")
_STEM = 4
_WORD = re.compile(r"[a-z0-9][a-z0-9-]{2,}")
"""A word naming a listed record: names and codes alike (``mia``, ``c-701``, ``100043``)."""
"""Letters compared when matching a choice's words to its input (``monthly`` ~ ``month``, ``growth`` ~ ``growing``)."""
BREACH = 0.4
"""A gate that let through a number a later check refused: below the 0.5 of a choice its own input contradicts
(the gate is judged by a later check, which may apply a rule the gate was never told)."""
_MAX_NESTING = 50
"""Enclosing steps followed up from a step: no agent nests deeper; a longer chain is a cycle of parent ids."""


def _choice(step: Step) -> str | None:
    out = step.output
    if isinstance(out, bool):
        return str(out).lower()
    if isinstance(out, str) and 0 < len(out.strip()) <= 40 and len(out.split()) <= 3:
        return out.strip()
    return None


def _words(text: str) -> set[str]:
    return set(_TOKEN.findall(text.lower()))


def _decisions(run: Run) -> dict[str, list[tuple[Step, set[str]]]]:
    """The run's decisions that chose (ok, with a choice) by name, in run order, with their input's words
    (read once per run, not once per decision compared)."""
    out: dict[str, list[tuple[Step, set[str]]]] = {}
    for s in run.steps:
        if s.kind == "condition" and s.status == "ok" and _choice(s) is not None:
            out.setdefault(s.name, []).append((s, _words(content.text_of(s.input))))
    return out


def _similar(a: set[str], b: set[str]) -> bool:
    return bool(a and b) and len(a & b) / len(a | b) >= 0.6


@reading(Reads(kinds=frozenset({"condition"}), statuses=OK))
def decision(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A decision (``condition`` step) whose choice differs from alike decisions, or that its input does not ground."""
    if step.kind != "condition" or step.status != "ok":
        return
    choice = _choice(step)
    if choice is None:
        return
    mine = _words(content.text_of(step.input))
    decisions: dict[str, list[tuple[Step, set[str]]]] = ctx.memo("decisions", lambda: _decisions(ctx.run))
    alike = [s for s, words in decisions.get(step.name, ()) if s.step_id != step.step_id and _similar(mine, words)]
    if alike:
        others = [_choice(s) for s in alike]
        differ = [c for c in others if c != choice]
        if len(differ) * 2 <= len(others):
            yield Evidence(
                step.step_id,
                0.0,
                f"chose {choice!r} like {len(others) - len(differ)} of {len(others)} alike decisions of this run (or its earlier turns)",
                "decision",
                sound=True,
            )
            return
        if len(differ) * 2 > len(others):
            usual = max(differ, key=differ.count)  # the first of the most chosen (a set's order follows the hash seed)
            yield Evidence(
                step.step_id,
                0.5,
                f"chose {choice!r} where {len(differ)} of {len(others)} alike decisions of this run (or its earlier turns) "
                f"(inputs of the same kind) chose {usual!r}",
                "decision",
            )
            return
    said = _TOKEN.findall(choice.lower().replace("_", " "))
    if not said:
        return
    stems = {w[:_STEM] for w in mine}
    if not any(w[:_STEM] in stems for w in said):
        yield Evidence(
            step.step_id,
            0.45,
            f"chose {choice!r}, which nothing in its input mentions: the choice is not grounded in what it was given",
            "decision",
        )
    else:
        yield Evidence(
            step.step_id, 0.0, f"its choice {choice!r} is named in its input", "decision", sound=True
        )


# -- races on shared state -------------------------------------------------------------


def _keys(step: Step, attr: str) -> set[str]:
    v = step.attributes.get(attr)
    return {str(k) for k in v} if isinstance(v, (list, tuple, Mapping)) else set()


def _overlap(a: Step, b: Step) -> bool:
    if not (a.start_ns and b.start_ns and a.end_ns and b.end_ns):
        return False
    return a.start_ns < b.end_ns and b.start_ns < a.end_ns


def _lost(theirs: Any, mine: Any) -> list[str]:
    """The string values the other write held that this one does not."""
    text = content.text_of(mine).lower()
    return [
        v for _, v in content.leaves(theirs) if isinstance(v, str) and len(v) >= 3 and v.lower() not in text
    ]


_Writers = dict[str, tuple[list[int], list[tuple[int, int, Step]]]]


def _writers(run: Run) -> _Writers:
    """Per written state key, the timed steps writing it, sorted by end time (with their end times apart,
    for `bisect`, and their run order, to visit candidates in the order a scan of the run would)."""
    by_key: dict[str, list[tuple[int, int, Step]]] = {}
    for i, s in enumerate(run.steps):
        if not (s.start_ns and s.end_ns):
            continue  # untimed: never overlaps (`_overlap`)
        for key in _keys(s, "state_writes"):
            by_key.setdefault(key, []).append((s.end_ns, i, s))
    out: _Writers = {}
    for key, rows in by_key.items():
        rows.sort(key=lambda r: (r[0], r[1]))
        out[key] = ([r[0] for r in rows], rows)
    return out


def _parallel_writers(step: Step, writes: set[str], index: _Writers) -> list[Step]:
    """The steps that wrote one of these keys, overlapped this step and ended no later than it, in run order.

    An interval index (Cormen et al., ch. 14, here a sorted list and two binary searches): a candidate ends in
    (step.start, step.end] -- ending after this step means it won, ending before it started means no overlap --
    so only those writers are visited, not every step of the run for every writer (quadratic on state-heavy runs).
    """
    assert step.start_ns and step.end_ns
    found: dict[int, Step] = {}
    for key in writes:
        entry = index.get(key)
        if entry is None:
            continue
        ends, rows = entry
        lo = bisect.bisect_right(ends, step.start_ns)
        hi = bisect.bisect_right(ends, step.end_ns)
        for _, i, other in rows[lo:hi]:
            if other.step_id != step.step_id and other.start_ns < step.end_ns:
                found[i] = other
    return [found[i] for i in sorted(found)]


@reading(Reads(attribute="state_writes"))
def lost_update(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A state write that overwrote a parallel step's update of the same key (both read, then wrote, overlapping in time)."""
    writes = _keys(step, "state_writes")
    if not writes or not (step.start_ns and step.end_ns):
        return  # (an untimed step overlaps nothing)
    reads = _keys(step, "state_reads")
    values = step.attributes.get("state_values")
    index: _Writers = ctx.memo("state-writers", lambda: _writers(ctx.run))
    for other in _parallel_writers(step, writes, index):
        shared = writes & _keys(other, "state_writes")
        for key in sorted(shared):
            if key not in reads and key not in _keys(other, "state_reads"):
                continue
            lost: list[str] = []
            theirs = other.attributes.get("state_values")
            if (
                isinstance(theirs, Mapping)
                and isinstance(values, Mapping)
                and key in theirs
                and key in values
            ):
                lost = _lost(theirs[key], values[key])
                if not lost:
                    continue  # its value carries the other's update: no update was lost
            what = f" (e.g. {lost[0][:40]!r} is gone)" if lost else ""
            yield Evidence(
                step.step_id,
                0.6,
                f"wrote {key!r} while {other.name} was also updating it in parallel; this later write "
                f"overwrote the other's update{what}: a lost update (race)",
                "race",
            )
            return


# -- choices among listed options (English) -------------------------------------------------



@reading(Reads(kinds=frozenset({"llm"}), statuses=OK))
def option_choice(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A model told to choose among listed options ("choose the track: purchase or refinance") whose
    choice is one option while its input's data names another as a value (``purpose=purchase``).

    English-only: the list is read from "choose / pick / route ... A, B or C".
    """
    if step.kind != "llm" or step.status != "ok" or step.output is None:
        return
    text = content.text_of(step.input)
    said = content.text_of(step.output).casefold()
    routed = _routed(step, ctx)
    if routed is not None:
        yield routed
        return
    for m in ctx.lexicon.options.finditer(text[:20_000]):
        options = [o.casefold() for o in re.split(r",\s*|\s+or\s+", m.group(1)) if o]
        if len(set(options)) < 2:
            continue
        chosen = [o for o in options if content.has_word(said, o)]
        if len(chosen) != 1:
            continue
        for field, v in _data_values(step.input):
            if v.casefold() == chosen[0] or v.casefold() not in options:
                continue
            yield Evidence(
                step.step_id,
                0.5,
                f"chose {chosen[0]!r} of {m.group(1).strip()!r} where its input says {field}={v!r}",
                "option-choice",
            )
            return
        breach = _breach_passed(step, ctx, chosen[0])
        if breach is not None:
            # A gate (go or hold, approve or refer) handed a number a later check refused as over its limit
            # chose to go on with it: the check says what the gate should have seen.
            what, where = breach
            yield Evidence(
                step.step_id,
                BREACH,
                f"chose {chosen[0]!r} of {m.group(1).strip()!r} while given {what}, which the failure at {where} "
                "says breaks its limit",
                "option-choice",
            )
            return


def _breach_passed(step: Step, ctx: DiagnoseContext, chosen: str) -> tuple[str, str] | None:
    """A number a later failure states beside a limit it broke (``gust 13 m/s above the 10 m/s limit``: 13) that the
    model's request (its instructions left out) holds, where the failing step is the branch the model chose
    (the first step after it named as its answer) or runs inside it: (the number, the failing step's name)."""
    given: set[float] | None = None
    for f in ctx.failures:
        failing = ctx.graph.steps.get(f.step_id)
        if failing is None or not _inside_choice(step, failing, chosen, ctx):
            continue
        limits = stated_limits(f.message, ctx.lexicon)
        if not limits:
            continue
        if given is None:
            given = {m.value for m in mentions(content.text_of(_request(step.input)), words=False)}
        for m in mentions(f.message, words=False):
            if m.value not in limits and m.value in given:
                return m.raw, failing.name
    return None


def _named_like(name: str, option: str) -> bool:
    return re.sub(r"[\W_]+", "", name).casefold() == re.sub(r"[\W_]+", "", option).casefold()


def _inside_choice(step: Step, failing: Step, chosen: str, ctx: DiagnoseContext) -> bool:
    """Whether the failing step is, or runs inside, the first step started after the model that is named
    as the option it chose (a graph node ``lift_plan`` run on the answer ``ROUTE: lift_plan``)."""
    ended = step.end_ns if step.end_ns is not None else step.start_ns
    if ended is None:
        return False
    branch = min(
        (s for s in ctx.run.steps if s.start_ns is not None and s.start_ns >= ended and _named_like(s.name, chosen)),
        key=lambda s: s.start_ns or 0,
        default=None,
    )
    sid: str | None = failing.step_id
    for _ in range(_MAX_NESTING):
        if branch is None or sid is None:
            return False
        if sid == branch.step_id:
            return True
        sid = ctx.graph.steps[sid].parent_id if sid in ctx.graph.steps else None
    return False


def _handoffs(step: Step, ctx: DiagnoseContext) -> list[str]:
    """The agents a model could hand the conversation to: the hand-offs of the agent enclosing it."""
    sid: str | None = step.parent_id
    for _ in range(_MAX_NESTING):
        if sid is None:
            return []
        s = ctx.step(sid)
        v = s.attributes.get("handoffs")
        if isinstance(v, list) and len(v) > 1:
            return [x for x in v if isinstance(x, str)]
        sid = s.parent_id
    return []


def _stems(text: str) -> set[str]:
    return {w[:_STEM] for w in _TOKEN.findall(text.lower())}


def _request(value: Any) -> Any:
    """A model's input without its instructions (system messages name every agent it may hand to)."""
    msgs = value.get("messages") if isinstance(value, Mapping) else None
    if not isinstance(msgs, list):
        return value
    return [m for m in msgs if not (isinstance(m, Mapping) and isinstance(m.get("role"), str) and m.get("role") in SYSTEM_ROLES)]


def _flags_on(value: Any, depth: int = 0) -> Any:
    """A request with the data in its texts read (JSON, a program's printed dict) and its switched-off fields
    left out: ``adults_only: False`` names no adults, it says the request is not theirs (a field set to False
    or None says what the request is not; set to True, its name says what it is)."""
    if depth > 6:
        return value
    if isinstance(value, str):
        t = value.strip()
        if t[:1] not in ("{", "["):
            return value
        # The whole text, never a structure after a lead-in or before more words: those words are the request's too.
        parsed = content.parse_json(t) if content.looks_like_json(t) else None
        if parsed is None and content.python_repr(t):
            with contextlib.suppress(ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                parsed = ast.literal_eval(content.strip_fence(t))
        return value if not isinstance(parsed, (Mapping, list)) else _flags_on(parsed, depth + 1)
    if isinstance(value, Mapping):
        return {k: _flags_on(v, depth + 1) for k, v in value.items() if v is not False and v is not None}
    if isinstance(value, (list, tuple)):
        return [_flags_on(v, depth + 1) for v in value]
    return value


def _routed(step: Step, ctx: DiagnoseContext) -> Evidence | None:
    """A model that handed the conversation to an agent whose name none of its input's words name, while the
    input names another agent it could hand to (``shift my stay`` sent to ``cancellations``, not
    ``stay_changes``; ``domain=medical`` sent to ``general_desk``, not ``medical_desk``): it routed the
    request away from the agent its words point at.  Words the names share (``desk``) tell none apart, and
    the instructions, which name every agent, are not read.
    """
    calls = [c.get("name") for c in tool_calls(step.output)]
    called = calls[0].casefold() if len(calls) == 1 and isinstance(calls[0], str) else ""
    options = _handoffs(step, ctx) if called else []
    # The Agents SDK names a hand-off's tool after the agent, spaces as underscores
    # ("Billing Desk" is called as ``transfer_to_billing_desk``).
    mine = max((o for o in options if called.endswith(_tool_name(o))), key=len, default=None)
    if mine is None:
        return None
    names = {o: _stems(o.replace("_", " ")) for o in options}
    shared = set.intersection(*names.values())
    # One-sided: any word of the request clears the agent chosen, a switched-off field's name included
    # (``delivered: False`` is the topic of a request handed to the delivery desk); only the words that are
    # on may name another agent (``urgent: False`` says the visit is not the urgent desk's).
    if (names[mine] - shared) & _stems(content.text_of(_request(step.input))):
        return None
    heard = _stems(content.text_of(_flags_on(_request(step.input))))
    for o in sorted(options):
        said = (names[o] - shared) & heard
        if o != mine and said:
            return Evidence(
                step.step_id,
                0.5,
                f"handed off to {mine!r}, which its input does not name, where it names {o!r}",
                "option-choice",
            )
    return _routed_against_failure(step, ctx, mine, options)


def _tool_name(agent: str) -> str:
    return re.sub(r"\W+", "_", agent.casefold()).strip("_")


def _routed_against_failure(step: Step, ctx: DiagnoseContext, mine: str, options: list[str]) -> Evidence | None:
    """A hand-off its input decided nothing about, where a later failure names another agent it could have
    handed to by that agent's own words and not the one chosen ("refunds are handled by billing" after a
    hand-off to ``Technical Support``): the environment says where the request belonged.
    Whole words only: a stem would take "shipment" for the ``shipping`` desk."""
    words = {o: set(_TOKEN.findall(o.lower())) for o in options}
    # A word counts only when it is one agent's own: not in another agent's name, not a function word
    # ("Sales and Returns"), not a kind of step ("Billing Agent" beside a wrapper's "Error in agent run").
    common = ctx.lexicon.stopwords | ctx.lexicon.short_stopwords | {s.kind for s in ctx.run.steps}
    names = {o: ws - common - set().union(*(words[p] for p in options if p != o)) for o, ws in words.items()}
    for f in ctx.failures:
        failing = ctx.graph.steps.get(f.step_id)
        if failing is None or failing.start_ns < step.start_ns:
            continue
        told = set(_TOKEN.findall(f.message.lower())) - set(_TOKEN.findall(failing.name.lower()))
        if names[mine] & told:
            continue
        for o in sorted(names):
            if o != mine and names[o] & told:
                return Evidence(
                    step.step_id,
                    0.5,
                    f"handed off to {mine!r}, where the failure at {failing.name} names {o!r}",
                    "option-choice",
                )
    return None


def _data_values(value: Any, depth: int = 0) -> Iterable[tuple[str, str]]:
    """(field, text) pairs of the data a value holds, JSON written in its strings read."""
    for path, v in content.leaves(value):
        if not isinstance(v, str):
            continue
        parsed = content.embedded_json(v) if depth < 3 and ("{" in v or "[" in v) else None
        if parsed is not None:
            yield from _data_values(parsed, depth + 1)
        elif len(v) <= 60:
            yield path.rsplit(".", 1)[-1], v


# -- sub-agents ---------------------------------------------------------------------------


@reading(Reads(kinds=frozenset({"agent"}), statuses=OK))
def delegated_result(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A sub-agent (``agent`` step) whose output states a value that contradicts its own children's outputs."""
    if step.kind != "agent" or step.status != "ok" or not isinstance(step.output, (Mapping, list)):
        return
    kids = [c for c in ctx.children(step.step_id) if c.status == "ok" and c.output is not None]
    if not kids:
        return
    mine = content.keyed_values(step.output)
    common = ctx.lexicon.stopwords | ctx.lexicon.short_stopwords
    latest = [(c, content.keyed_values(c.output)) for c in reversed(kids)]
    every: dict[str, list[Any]] = {}
    for path, leaf in content.leaves(step.output):
        every.setdefault(path.rsplit(".", 1)[-1].split("[", 1)[0], []).append(leaf)
    for k, v in mine.items():
        if isinstance(v, bool) or k in GENERIC_FIELDS:
            continue  # (an envelope's content, a status: not a value a child worked out)
        # The child that worked the value out last is the one to agree with.
        c, w = next(((c, t[k]) for c, t in latest if k in t), (None, None))
        if w in every.get(k, ()):
            continue  # a loop's records, one per child: the last child's is among them
        if c is not None and _picked(c.output, k, v, content.text_of(step.input), common):
            continue  # the child listed records (candidates) and the agent returned one of them: a pick, not the first
        if c is not None and w is not None and type(v) is type(w) and v != w:
            yield Evidence(
                step.step_id,
                0.5,
                f"returned {k}={v!r}, but its own step {c.name} produced {w!r}",
                "sub-agent",
            )
            return


def _picked(value: Any, key: str, v: Any, said: str, common: frozenset[str]) -> bool:
    """Whether a sub-agent returning ``key=v`` picked one of the records its child listed (``v`` is one
    record's value under ``key``, in any of the lists holding it), and its input names no other listed record
    instead.  A record is named by
    a word only it holds (``Mia`` of ``Mia Berger`` beside ``Leo Berger``; ``Berger`` is every record's and
    names none): an agent asked for Mia that returned Leo's id contradicts its child's list, unless its
    input names Leo's record too."""
    leaves = list(content.leaves(value))
    # The records are the list items holding the field; a record's words are its other texts, nested ones included.
    words = {p[: p.rindex("]") + 1]: set[str]() for p, _ in leaves if "]" in p and p.rsplit(".", 1)[-1].lower() == key}
    hits = {p[: p.rindex("]") + 1] for p, x in leaves if "]" in p and p.rsplit(".", 1)[-1].lower() == key
            and type(x) is type(v) and x == v}
    for p, x in leaves:
        if not isinstance(x, str) or p.rsplit(".", 1)[-1].lower() == key:
            continue
        rec = next((p[: i + 1] for i, ch in enumerate(p) if ch == "]" and p[: i + 1] in words), None)
        if rec is not None:
            words[rec].update(_WORD.findall(x.lower()))
    if not hits:
        return False
    heard = set(_WORD.findall(said.lower())) - common

    def own(rec: str) -> set[str]:
        return words[rec] - set().union(*(ws for r, ws in words.items() if r != rec))

    # The value may sit in several lists (a fleet's kart and the allocation that took it): any of them named is a pick.
    if any(own(r) & heard for r in hits):
        return True
    return not any(own(r) & heard for r in words if r not in hits)


def _name_lists(value: Any, depth: int = 0) -> Iterable[list[str]]:
    """Lists of three or more distinct short names in a value (JSON written in its strings read too)."""
    if depth > 5:
        return
    if isinstance(value, str):
        parsed = content.embedded_json(value)
        if parsed is not None:
            yield from _name_lists(parsed, depth + 1)
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _name_lists(v, depth + 1)
    elif isinstance(value, list):
        names = [v.strip().lower() for v in value if isinstance(v, str) and 2 <= len(v.strip()) <= 60]
        if len(names) == len(value) >= 3 and len(set(names)) == len(names):
            yield names
        else:
            for v in value[:200]:
                yield from _name_lists(v, depth + 1)


@reading(Reads(kinds=frozenset({"llm"}), statuses=OK, failures=True))
def repeated_option(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A model given a list of names to arrange (teams to pair, rooms to fill) whose answer uses one twice
    and leaves another out, when the failure names the one it repeated: its plan broke the list's
    one-each rule, whatever later steps did with it.  A name inside a longer name (``Rovers`` in
    ``Rovers II``) is counted once, for the longer."""
    if step.kind != "llm" or step.status != "ok" or not ctx.failures:
        return
    named = " ".join(f.message.lower() for f in ctx.failures)
    # The answer's own strings (JSON text escapes its line breaks, which would glue words together).
    said = "\n".join(v for _, v in content.leaves(step.output) if isinstance(v, str)).lower()
    for names in _name_lists(step.input):
        rest, counts = said, {}
        for n in sorted(names, key=len, reverse=True):
            counts[n] = len(re.findall(rf"(?<!\w){re.escape(n)}(?!\w)", rest))
            rest = rest.replace(n, "\x00")
        twice = [n for n in names if counts[n] >= 2 and n in named]
        never = [n for n in names if counts[n] == 0]
        if twice and never and sum(counts.values()) == len(names):
            yield Evidence(
                step.step_id,
                0.45,
                f"named {twice[0]!r} {counts[twice[0]]} times and left out {never[0]!r} of the {len(names)} it was given",
                "repeated-option",
            )
            return


__all__ = ["decision", "delegated_result", "lost_update", "option_choice", "repeated_option"]
