"""Drops: the steps that were given a value a failure names and did not pass it on (an omission).

The value lineage (`_value_sources.py`) traces the values a failure names back to the steps that introduced
them; a value the failure expects and the run lost is traced to the steps that held it and handed it on to
no one.  Most such steps did not lose it: they chose between given values, passed on a record of another key,
carried it on in a later turn of their conversation, made it inside themselves, or relayed it through a
descendant.  What is left after those is weighed here (`dropped`), in run order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trajdebug.analysis._chooser import handed_to_choice
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis._omissions import choice_share, lost_here, misfiled, replaced, swapped
from trajdebug.analysis._selection import not_its_own
from trajdebug.analysis._sources import (
    NAMING_FIELDS,
    Found,
    Slice,
    _conversation,
    _shape,
    carried_by_state,
    kept_by_state,
)
from trajdebug.analysis._spoken import (
    _task_text,
)
from trajdebug.analysis.diagnosers._conversation import SYSTEM_ROLES
from trajdebug.analysis.lexicon import Lexicon
from trajdebug.analysis.lineage import StepView
from trajdebug.core.model import CONTAINER_KINDS, Step
from trajdebug.core.values import Atom, atoms


def _about_another_key(sl: Slice, a: Atom, lost: list[str]) -> tuple[list[str], dict[str, Atom]]:
    """The droppers of a key (an id, a date) that did lose it, and what a lookup's answer is about instead.

    A lookup is given a key to find a record by: its answer need not repeat the
    key, so not repeating it is no loss, unless the answer is about another key
    of the same shape (another customer's record, another day's slots).
    """
    keep: list[str] = []
    substitute: dict[str, Atom] = {}
    for sid in lost:
        if sl.g.steps[sid].kind != "tool":
            keep.append(sid)
            continue
        view = sl.lin.view(sid)
        other = next(
            (b for b in view.outputs if b.kind == a.kind and _shape(b.raw) == _shape(a.raw) and not view.given(b)),
            None,
        )
        if other is not None:
            keep.append(sid)
            substitute[sid] = other
    return keep, substitute


def _own_word(view: StepView, lexicon: Lexicon) -> Atom | None:
    """A word a step wrote into a field that none of its inputs has (a planner's word in place of the task's).
    A flag (``accessible=true``) is no word: a model reading a request into fields writes flags for its words."""
    return next(
        (
            b
            for b in view.outputs
            if b.kind == "text"
            and b.field
            and b.field not in NAMING_FIELDS
            and b.raw.strip().isalpha()
            and b.raw.strip().casefold() not in lexicon.boolean_words
            and 3 <= len(b.raw.strip()) <= 20
            and not view.given(b)
        ),
        None,
    )


def _carried_on_later(sl: Slice, sid: str, a: Atom, pos: int) -> str | None:
    """A later turn of the same model conversation that passed the value on, if any.

    A model called turn after turn is given the conversation again each time (the
    later call's messages begin with the earlier call's): a turn that did something
    else first (looked the customer up before refunding the order) lost nothing when
    a later turn carried the value on.  Instructions are left out of the comparison: an
    agent handed the conversation (a hand-off) has its own system prompt over the same
    history.  A model given another conversation (a sub-agent told its own task) does
    not speak for it.  A later step of
    any kind handed the conversation under ``messages`` where the run failed (a
    state graph's check, given the state whose message list keeps every turn)
    was handed the value in it: the turn lost nothing.
    """
    mine = _history(_messages(sl.g.steps[sid]))
    if not mine:
        return None
    start = sl.g.position(sid)
    for later in sl.run.steps:
        model = later.kind == "llm"
        theirs = _history(_messages(later) if model else _handed_messages(later))
        if (
            theirs is not None
            and len(theirs) > len(mine)
            and (start < sl.g.position(later.step_id) < pos if model else sl.g.position(later.step_id) == pos)
            and theirs[: len(mine)] == mine
            # A model's turn passes it on in its answer; the failing step handed the conversation was given
            # it in the turns it was handed (a step between that was handed it too may have lost it there).
            and (sl.lin.view(later.step_id).holds(a) if model else sl.lin.view(later.step_id).given(a))
        ):
            return later.step_id
    return None


def _history(msgs: list[Any] | None) -> list[Any] | None:
    """A conversation without its instructions: a hand-off gives the next agent its own system prompt
    and the same history (the OpenAI Agents SDK, a supervisor graph), so the history is what carries on."""
    if msgs is None:
        return None
    return [m for m in msgs if not (isinstance(m, Mapping) and isinstance(m.get("role"), str) and m.get("role") in SYSTEM_ROLES)]


def _messages(step: Step) -> list[Any] | None:
    """The messages a model call was given (a conversation so far), None for any other step."""
    if step.kind != "llm":
        return None
    msgs = step.input.get("messages") if isinstance(step.input, Mapping) else step.input
    return msgs if isinstance(msgs, list) else None


def _handed_messages(step: Step) -> list[Any] | None:
    """The conversation a step other than a model call was handed under ``messages`` (a graph's state)."""
    msgs = step.input.get("messages") if isinstance(step.input, Mapping) else None
    return msgs if isinstance(msgs, list) else None


def dropped(
    sl: Slice,
    a: Atom,
    pos: int,
    within: set[str],
    where: str,
    named: Sequence[Atom],
    share: float = 1.0,
    *,
    task_word: bool = False,
) -> list[Found]:
    """Steps that were given a value the failure names and did not pass it on (an omission).

    A step that passed on another value the failure names, which it was also
    given, chose between given values rather than lost one: weak evidence.
    """
    out: list[Found] = []
    # In run order: the losses are weighed in the order found (a set of step ids is read in an order that
    # follows the hash seed).
    cands = sorted((sid for sid in within if sl.g.position(sid) < pos), key=sl.g.position)
    lost = sl.lin.droppers(a, _told_the_task(sl, cands) if task_word else cands)
    if task_word and len(lost) > 2:
        # Every turn of a conversation is given the task and rewords it: a loss shared by
        # that many models tells none of them apart.
        return out
    substitute: dict[str, Atom] = {}
    if a.kind in ("id", "date"):
        lost, substitute = _about_another_key(sl, a, lost)
    lost = [sid for sid in lost if _carried_on_later(sl, sid, a, pos) is None]
    lost = [sid for sid in lost if a.kind not in ("id", "text") or not not_its_own(sl.g.steps[sid], a.raw)]
    # A step that put another value of the failure's in its place (`replaced`) made the failure's contrast:
    # the state carrying the original past it does not clear it, as it clears a node that left it alone.
    swaps = {sid for sid in lost if replaced(sl, sid, a, named)}
    lost = [sid for sid in lost if sid in swaps or carried_by_state(sl, sid, a, pos) is None]
    first = pos
    if not task_word:
        lost, first = lost_here(sl, lost, a, named, pos, within)
    # A router, a node that only relayed its children's result, and a node that left the value in the
    # state it was handed keep their place (the loss is judged around them as before) but get no finding.
    held = [s for s in lost[:4] if s not in swaps and kept_by_state(sl, s, a)]
    quiet = [s for s in lost[:4] if s in held or handed_to_choice(sl, s, a) or _relayed(sl, s, a)]
    for sid in [s for s in lost[:4] if s not in quiet]:
        view = sl.lin.view(sid)
        chose = swapped(sl, sid, a, named)
        weight = share * sl.w["dropped"]
        if _made_inside(sl, sid, a):
            # A code span whose children made the value may have returned a count of what they made, or lost
            # it: the two look alike from outside, so the finding stays, halved, for the maker to lead on
            # other evidence when it has any.
            weight *= 0.5
        if chose is not None:
            weight *= choice_share(sl, sid, a, chose, first)
        reason = f"was given {a.raw!r}, which the failure at {where} names, and did not pass it on"
        if sid in substitute:
            reason += f"; its answer is about {substitute[sid].raw!r} instead"
        if task_word:
            # A planner rephrases: losing a task word says little, unless it put a word of
            # its own in its place.
            instead = _own_word(view, sl.lexicon)
            weight *= 0.9 if instead is not None else 0.25
            reason = f"was given {a.raw!r}, a word of the task the failure at {where} says is missing, and did not carry it on"
            if instead is not None:
                reason += (
                    f"; it says {instead.field}={instead.raw!r} instead, a word none of its inputs has"
                )
        elif _conversation(sl.g.steps[sid]):
            # A model given a whole conversation passes on a small part of it by design:
            # losing one value says less than a parser, a tool, or a model given one
            # request (write this query from this plan) losing it.
            weight *= sl.w["llm_dropped"]
        if chose is not None and misfiled(sl, sid, a, chose):
            reason += f" (it put {chose.raw!r}, given under another field, where it was given {a.raw!r})"
        elif chose is not None:
            reason += f" (it passed on {chose.raw!r}, also given: a choice between given values)"
        out.append(Evidence(sid, weight, reason, "lineage:dropped"))
    return out


def _told_the_task(sl: Slice, cands: list[str]) -> list[str]:
    """The models among ``cands`` given the task itself: a task word is traced only through them (code reshapes
    data and drops words; a planner told the task must keep it)."""
    task = _task_text(sl)[:200]
    return [sid for sid in cands if sl.g.steps[sid].kind == "llm" and task and task in sl.lin.view(sid).in_text]


def _made_inside(sl: Slice, sid: str, a: Atom) -> bool:
    """Whether a step's code span was "given" the value only by the steps it ran (a per-item span around a
    lookup and a numbering step, returning a count): the value was made inside it, and where it went from
    there is its maker's and its readers' business, not a loss of the wrapper's.  An agent's span is judged
    as before (its answer is the composition of its children's), and so is a value its own input held.  Its
    dropped finding is lowered, not silenced: "returned a count of what its children made" and "lost its child's
    value" both leave no child value in its output."""
    step = sl.g.steps[sid]
    if step.kind in CONTAINER_KINDS or step.kind == "llm" or not any(s.parent_id == sid for s in sl.g.steps.values()):
        return False
    return not any(x.key == a.key for x in atoms(step.input)) and a.raw.casefold() not in str(step.input).casefold()


def _relayed(sl: Slice, sid: str, a: Atom) -> bool:
    """Whether a step only ran its children and returned what they made, none of them given the value.

    A graph framework records the whole state as a node's input when no sub-step was handed a key
    whole; the node's answer is its tool's result (in a message naming the call it answers).  It "was given" every value of the state and
    passed on none, yet what it did with them was hand its children something else: not a loss.
    """
    kids = [k for k, s in sl.g.steps.items() if s.parent_id == sid]
    if kids and _passes_on_descendant(sl, sid):
        return True
    if not kids or any(sl.lin.view(k).given(a) for k in kids):
        return False
    made = {key for k in kids for key in sl.lin.view(k).out_keys}
    view = sl.lin.view(sid)
    # (The message it wraps the result in repeats what it was given: the call's id, the tool's name.)
    return any(o.key in made for o in view.outputs) and all(o.key in made or view.given(o) for o in view.outputs)


def _passes_on_descendant(sl: Slice, sid: str) -> bool:
    """Whether an enclosing step returned what one of the steps inside it returned, no value added (a sub-agent's
    answer is its last model turn's): what that step left out, it left out, and it is judged there."""
    out = sl.lin.view(sid).out_keys
    if not out or sl.g.steps[sid].kind not in CONTAINER_KINDS:
        return False
    kids: dict[str, list[Step]] = {}
    for s in sl.run.steps:
        if s.parent_id is not None:
            kids.setdefault(s.parent_id, []).append(s)
    inside, seen = [sid], 0
    while inside and seen < 512:
        for s in kids.get(inside.pop(), ()):
            seen += 1
            if s.kind not in CONTAINER_KINDS and out <= sl.lin.view(s.step_id).out_keys:
                return True
            inside.append(s.step_id)
    return False


__all__ = ["dropped"]
