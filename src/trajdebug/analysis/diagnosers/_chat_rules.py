"""Diagnosers of tool-calling conversations (the rules; the conversation model is in `conversation`).

A chat agent fails in a few recognisable ways (AgentRx, arXiv 2602.02475,
whose nine categories these rules follow): it misreads a tool's output
(states a count or a price the result does not support), invokes a tool
invalidly (an error comes back), acts against the plan it announced or
without the user's confirmation (plan adherence, guardrails), orders its
calls so that one write blocks the next (intent-plan misalignment), or gives
up on what the user asked and confirmed.  Each rule below is one such sign,
read off the conversation alone: no task id, product or policy text is
consulted.  Like every diagnoser they rank, they do not prove.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._conversation import (
    Call,
    Conversation,
    chat_turn,
    is_write,
)
from trajdebug.analysis.diagnosers._reads import Reads, reading
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.model import Step


# -- misinterpretation of tool output ---------------------------------------------------

_AVAILABLE_KEYS = ("available", "in_stock", "instock", "is_available", "availability")


def _records(value: Any, depth: int = 0) -> list[list[Mapping[str, Any]]]:
    """The collections of records (lists, or mappings of id -> object) inside a tool result."""
    if depth > 4:
        return []
    out: list[list[Mapping[str, Any]]] = []
    items: list[Any] = []
    if isinstance(value, list):
        items = value
    elif isinstance(value, Mapping):
        items = list(value.values())
    recs = [v for v in items if isinstance(v, Mapping)]
    if len(recs) >= 2 and len(recs) == len(items):
        out.append(recs)
    for v in items:
        if isinstance(v, (Mapping, list)):
            out.extend(_records(v, depth + 1))
    return out


def _counts(value: Any) -> tuple[set[int], set[int]]:
    """Counts a statement could truthfully make of a result: collection sizes, and records flagged available."""
    sizes: set[int] = set()
    flagged: set[int] = set()
    for recs in _records(value):
        sizes.add(len(recs))
        for k in _AVAILABLE_KEYS:
            flags = [r.get(k) for r in recs if isinstance(r.get(k), bool)]
            if flags:
                flagged.add(sum(1 for f in flags if f))
                flagged.add(sum(1 for f in flags if not f))
    return sizes, flagged


_PRICE = re.compile(r"\$\s?(\d{1,3}(?:,\d{3})*(?:\.\d{1,2})?|\d+(?:\.\d{1,2})?)")


def _prices(recs: list[Mapping[str, Any]], only_available: bool) -> list[float]:
    out = []
    for r in recs:
        p = r.get("price")
        if isinstance(p, (int, float)) and not isinstance(p, bool):
            avail = next((r[k] for k in _AVAILABLE_KEYS if isinstance(r.get(k), bool)), True)
            if avail or not only_available:
                out.append(float(p))
    return out


@reading(Reads(attribute="role"))
def stated_counts(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """An assistant message whose count or extreme price contradicts the tool results it just read.

    "There are 11 available options" after a result listing 10 records marked
    available, or "the cheapest is $46.66" when a cheaper available record is
    listed: misinterpretation of tool output.
    """
    found = chat_turn(step, ctx, "assistant")
    if found is None:
        return
    conv, turn = found
    if not turn.text:
        return
    results = [r.result for r in conv.results_since_user(step.step_id) if r.result is not None]
    if not results:
        return
    sizes: set[int] = set()
    flagged: set[int] = set()
    for r in results:
        s, f = _counts(r)
        sizes |= s
        flagged |= f
    if flagged:
        for m in ctx.lexicon.option_count.finditer(turn.text):
            n = int(m.group(1))
            # "N available ..." counts the flagged records; a bare count may also be a collection's size.
            allowed = flagged if ctx.lexicon.available.search(m.group(0)) else flagged | sizes
            if n not in allowed:
                yield Evidence(
                    step.step_id,
                    0.6,
                    f"states {m.group(0)!r}, but the result it read lists {', '.join(map(str, sorted(flagged)))} by availability",
                    "stated-counts",
                )
                return
    recs = [rec for r in results for rec in _records(r)]
    for pat, pick, word in ((ctx.lexicon.lowest, min, "lowest"), (ctx.lexicon.highest, max, "highest")):
        sup = pat.search(turn.text)
        if sup is None:
            continue
        stated = [
            float(p.replace(",", "")) for p in _PRICE.findall(turn.text[sup.start() : sup.start() + 300])
        ]
        prices = [p for rs in recs for p in _prices(rs, True)]
        if stated and prices and abs(stated[0] - pick(prices)) > 0.005:
            yield Evidence(
                step.step_id,
                0.55,
                f"calls ${stated[0]:.2f} the {word} price, but the result it read lists ${pick(prices):.2f}",
                "stated-counts",
            )
            return


# -- invocations -----------------------------------------------------------------------


def _ids(args: Mapping[str, Any]) -> set[str]:
    """The identifier values among a call's arguments."""
    out = set()
    for _path, v in content.leaves(args):
        if isinstance(v, str) and 3 <= len(v) <= 60 and " " not in v.strip() and any(c.isdigit() for c in v):
            out.add(v.strip().lower())
    return out


@reading(Reads(attribute="role"))
def failed_calls(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """An assistant turn whose tool call came back with an error (invalid invocation), or whose write blocked a later one.

    A write that made a later call on the same object fail (an object "already
    closed" or "locked" by the write) is the misordered step when the later call was planned
    in the same stretch of turns (no user message in between): the plan could
    have put it first.  When the user asked for the later call only after the
    write, the later call is the invalid one: it acted against state the agent
    itself had just changed.
    """
    found = chat_turn(step, ctx, "assistant")
    if found is None:
        return
    conv, turn = found
    # Did one of my writes block a later call?
    for call in turn.calls:
        if call.error is not None or not is_write(call.name, ctx.run):
            continue
        mine = _ids(call.arguments)
        if not mine:
            continue
        user_between = False
        for t in conv.after(step.step_id):
            if t.role == "user":
                user_between = True
            for later in t.calls:
                if (
                    not user_between
                    and later.error
                    and ctx.lexicon.state_error.search(later.error)
                    and mine & _ids(later.arguments)
                ):
                    yield Evidence(
                        step.step_id,
                        0.55,
                        f"its {call.name} changed the state that made the {later.name} it planned next fail "
                        f"({later.error[:80]}): the calls are misordered",
                        "failed-calls",
                    )
                    return
    for call in turn.calls:
        if call.error is None:
            continue
        earlier = _earlier_write(conv, step.step_id, call)
        user_text = " ".join(t.text.lower() for t in conv.before(step.step_id) if t.role == "user")
        own_values = sorted(v for v in _ids(call.arguments) if v in user_text)
        if earlier is not None and earlier[1]:
            # The earlier write was made in the same stretch, with this call already
            # asked for: the misordering is the deviation, this failure its consequence.
            susp, why = 0.15, f"a consequence of its earlier {earlier[0]}, made first in the same plan"
        elif earlier is not None:
            susp, why = 0.5, f"acted against the state its own earlier {earlier[0]} had set"
        elif own_values and not is_write(call.name, ctx.run):
            # A lookup with a value the user gave: the user's value, not the call, missed.
            susp, why = 0.1, f"looked up {own_values[0]!r} as the user gave it"
        elif is_write(call.name, ctx.run):
            susp, why = 0.45, "a consequential call the tool rejected"
        else:
            susp, why = 0.3, "a call the tool rejected"
        yield Evidence(
            step.step_id, susp, f"its {call.name} call failed ({call.error[:100]}): {why}", "failed-calls"
        )
        return


def _earlier_write(conv: Conversation, step_id: str, call: Call, *, lexicon: Lexicon = ENGLISH) -> tuple[str, bool] | None:
    """An earlier successful write on the same object, when the call failed on state.

    Returns its name and whether it was made in the same stretch of turns (no
    user message between it and this call).
    """
    if call.error is None or not lexicon.state_error.search(call.error):
        return None
    mine = _ids(call.arguments)
    same_stretch = True
    for t in reversed(conv.before(step_id)):
        if t.role == "user":
            same_stretch = False
        for c in t.calls:
            if c.error is None and is_write(c.name) and mine & _ids(c.arguments):
                return c.name, same_stretch
    return None


# -- confirmation, plans and hand-offs -------------------------------------------------


def _confirmed(text: str, *, lexicon: Lexicon = ENGLISH) -> bool:
    return bool(lexicon.yes.search(text))


@reading(Reads(attribute="role"))
def unconfirmed_writes(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A consequential call made without the user's explicit confirmation of it.

    Agents are expected to state what a write will do and wait for a yes
    (guardrails, plan adherence); a write made right after a user message
    that carries no confirmation acts on an intent the user never approved.
    """
    found = chat_turn(step, ctx, "assistant")
    if found is None:
        return
    conv, turn = found
    writes = [c for c in turn.calls if is_write(c.name, ctx.run) and not ctx.lexicon.handoff_tool.search(c.name)]
    if not writes:
        return
    user = conv.last_user(step.step_id)
    if user is None:
        return
    proposed = any(
        t.role == "assistant" and t.text.strip()
        for t in conv.before(step.step_id)[conv.position[user.step_id] - 1 : conv.position[user.step_id]]
    )
    if _confirmed(user.text) and proposed:
        yield Evidence(
            step.step_id,
            0.0,
            f"the user confirmed before its {writes[0].name}",
            "unconfirmed-writes",
            sound=True,
        )
        return
    why = (
        "the user's last message confirms nothing"
        if not _confirmed(user.text)
        else "nothing was proposed for the user to confirm"
    )
    yield Evidence(
        step.step_id,
        0.35,
        f"made the consequential call {writes[0].name} without an explicit confirmation ({why})",
        "unconfirmed-writes",
    )


@reading(Reads(attribute="role"))
def abandoned_requests(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A hand-off to a human (or an end of the session) while an action the user confirmed was never carried out.

    The user said yes to a proposal and no consequential call followed: the
    agent gave up on a supported intent (intent not supported / plan adherence).
    """
    found = chat_turn(step, ctx, "assistant")
    if found is None:
        return
    conv, turn = found
    if not any(ctx.lexicon.handoff_tool.search(c.name) for c in turn.calls):
        return
    pending = False
    for t in conv.before(step.step_id):
        if t.role == "assistant" and any(is_write(c.name, ctx.run) and c.error is None for c in t.calls):
            pending = False
        elif t.role == "user" and _confirmed(t.text) and not ctx.lexicon.no.search(t.text[:40]):
            # A yes to the hand-off itself is not a yes to an action left undone.
            pending = not ctx.lexicon.handoff_words.search(t.text)
    if pending:
        yield Evidence(
            step.step_id,
            0.55,
            "handed the user off although they had confirmed an action that was never carried out",
            "abandoned-requests",
        )


@reading(Reads(attribute="role"))
def unverified_refusals(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """An assistant that declares it cannot do what the user asked without having consulted any tool for it.

    A capability claim made from belief rather than from a tool's answer
    (intent-plan misalignment): the agent refuses a request it never tried.
    """
    found = chat_turn(step, ctx, "assistant")
    if found is None:
        return
    conv, turn = found
    if turn.calls or not ctx.lexicon.cannot.search(turn.text):
        return
    since = []
    for t in reversed(conv.before(step.step_id)):
        if t.role == "user":
            break
        since.append(t)
    if any(t.role == "tool" for t in since):
        return
    if not any(t.role == "tool" for t in conv.turns):
        return  # an agent without tools can only answer from belief
    yield Evidence(
        step.step_id,
        0.35,
        "declares it cannot do what was asked without consulting a tool first",
        "unverified-refusals",
    )


# -- arguments against the announced plan ------------------------------------------------

_ID_LIKE = re.compile(r"^[A-Za-z_#-]*\d[\w#-]*$")


def _record_for(
    value: str, results: Sequence[Any]
) -> tuple[Mapping[str, Any], dict[str, Mapping[str, Any]]] | None:
    """The record a tool result keys by this id, with its sibling records by key."""

    def walk(v: Any, depth: int) -> tuple[Mapping[str, Any], dict[str, Mapping[str, Any]]] | None:
        if depth > 5:
            return None
        if isinstance(v, list):
            return next((r for x in v if (r := walk(x, depth + 1)) is not None), None)
        if not isinstance(v, Mapping):
            return None
        if value in v and isinstance(v[value], Mapping):
            sibs = {str(k): x for k, x in v.items() if k != value and isinstance(x, Mapping)}
            return v[value], sibs
        return next((r for x in v.values() if (r := walk(x, depth + 1)) is not None), None)

    for res in reversed(results):
        r = walk(res, 0)
        if r is not None:
            return r
    return None


def _distinct(rec: Mapping[str, Any], others: Sequence[Mapping[str, Any]]) -> set[str]:
    """The telling values of a record that none of its siblings share (a card's last four digits)."""

    def vals(r: Mapping[str, Any]) -> set[str]:
        return {
            str(v).lower()
            for p, v in content.leaves(r)
            if isinstance(v, (str, int)) and not isinstance(v, bool) and len(str(v)) >= 3
        }

    mine = vals(rec)
    for o in others:
        mine -= vals(o)
    return {m for m in mine if not _ID_LIKE.match(m) or m.isdigit()}


def plan_mismatch(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A consequential call whose object is not the one the assistant announced to the user.

    For each id argument of a write, the record a tool result holds under that
    id is compared with its siblings (the user's other cards, other variants):
    when the assistant's messages since the user's request name a value only a
    sibling has, and none only this record has, the call acts on another
    object than the plan said (plan adherence; invention when no tool named it).
    """
    found = chat_turn(step, ctx, "assistant")
    if found is None:
        return
    conv, turn = found
    writes = [c for c in turn.calls if is_write(c.name, ctx.run)]
    if not writes:
        return
    before = conv.before(step.step_id)
    results = [t.result for t in before if t.role == "tool" and t.result is not None]
    said = " ".join(t.text.lower() for t in before[-12:] if t.role in ("assistant", "user"))
    if not said:
        return
    for call in writes:
        for _, v in content.leaves(call.arguments):
            if not isinstance(v, str) or not _ID_LIKE.match(v):
                continue
            found_rec = _record_for(v, results)
            if found_rec is None:
                continue
            rec, by_key = found_rec
            given = {str(x) for _, x in content.leaves(call.arguments)}
            if not by_key or given & set(by_key):
                continue  # the call names several records of the collection (a swap): not a single choice
            sibs = list(by_key.values())
            mine = _distinct(rec, sibs)
            if not mine:
                continue  # nothing tells this record apart: the plan could not have named it
            for s in sibs:
                theirs = _distinct(s, [rec, *[x for x in sibs if x is not s]])
                named = sorted(x for x in theirs if re.search(rf"\b{re.escape(x)}\b", said))
                if named and not any(re.search(rf"\b{re.escape(x)}\b", said) for x in mine):
                    yield Evidence(
                        step.step_id,
                        0.55,
                        f"its {call.name} uses {v!r}, but the conversation named {named[0]!r}, which belongs to another record",
                        "plan-mismatch",
                    )
                    return


# -- claims of completion --------------------------------------------------------------------

_ID_KEY = re.compile(r"(?:^|_)id$")


def _objects(result: Any) -> list[tuple[str, str, str]]:
    """``(id key, id, status)`` of a tool result that is one object with an id and a status."""
    if not isinstance(result, Mapping) or not isinstance(result.get("status"), str):
        return []
    keys = [k for k in result if isinstance(k, str) and _ID_KEY.search(k) and isinstance(result[k], str)]
    return [(keys[0], str(result[keys[0]]), str(result["status"]))] if keys else []


@reading(Reads(attribute="role"))
def completion_claims(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """An assistant that reports everything done while an object like those it changed was left untouched.

    The agent changed some objects (orders in one status) and says all of it
    is done; another object it had read, of the same kind and in the same
    status, got no call (plan adherence: an incomplete plan reported complete).
    """
    found = chat_turn(step, ctx, "assistant")
    if found is None:
        return
    conv, turn = found
    if not ctx.lexicon.all_done.search(turn.text):
        return
    first_seen: dict[str, tuple[str, str]] = {}  # id -> (id key, status when first read)
    written: set[str] = set()
    for t in conv.before(step.step_id):
        if t.role == "tool":
            for key, oid, status in _objects(t.result):
                first_seen.setdefault(oid, (key, status))
        for c in t.calls:
            if c.error is None and is_write(c.name, ctx.run) and not ctx.lexicon.handoff_tool.search(c.name):
                written |= {str(v) for _, v in content.leaves(c.arguments) if isinstance(v, str)}
    done = {first_seen[w] for w in written if w in first_seen}
    if not done:
        return
    left = [oid for oid, ks in first_seen.items() if ks in done and oid not in written]
    if left:
        yield Evidence(
            step.step_id,
            0.5,
            f"reports everything done, but {left[0]} ({first_seen[left[0]][1]}, like those it changed) got no call",
            "completion-claims",
        )


# -- the user's side: under-specified intent ------------------------------------------------

_OPTION_LINE = re.compile(r"(?m)^\s*(?:\d+[.)]|[-*•])\s+\S")


@reading(Reads(attribute="role"))
def user_decisions(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A user message that decides what the agent will do: a pick among offered options, or a change of request.

    When the agent then acts soundly, the outcome hangs on this decision; a
    decision the conversation left open (several options offered, a request
    changed midway) is where an under-specified intent enters the run.  Weak
    evidence: it makes the user's turn a candidate, it does not outrank a
    faulty agent turn.
    """
    found = chat_turn(step, ctx, "user")
    if found is None:
        return
    conv, turn = found
    prev = next(
        (t for t in reversed(conv.before(step.step_id)) if t.role == "assistant" and t.text.strip()), None
    )
    if prev is None:
        return
    acted = any(
        is_write(c.name, ctx.run) and not ctx.lexicon.handoff_tool.search(c.name)
        for t in conv.after(step.step_id)
        for c in t.calls
    )
    if ctx.lexicon.reversal.search(turn.text):
        yield Evidence(step.step_id, 0.3, "changes or withdraws what the user asked for", "user-decisions")
    elif len(_OPTION_LINE.findall(prev.text)) >= 2 and acted and not _plain_yes(turn.text):
        yield Evidence(
            step.step_id,
            0.3,
            "picks one of several options the assistant offered, and the agent acted on the pick",
            "user-decisions",
        )


def _plain_yes(text: str, *, lexicon: Lexicon = ENGLISH) -> bool:
    return bool(lexicon.yes.match(text.strip())) and len(text.split()) <= 8


CONVERSATION_DIAGNOSERS = {
    "stated-counts": stated_counts,
    "failed-calls": failed_calls,
    "unconfirmed-writes": unconfirmed_writes,
    "abandoned-requests": abandoned_requests,
    "unverified-refusals": unverified_refusals,
    "completion-claims": completion_claims,
    "user-decisions": user_decisions,
}
"""The conversation diagnosers by name (registered with the built-ins).

`plan_mismatch` is not among them: it never fired on the development half of
the tau-bench runs, so its worth is unmeasured; pass it in ``diagnosers=`` to use it."""


__all__ = [
    "CONVERSATION_DIAGNOSERS",
    "abandoned_requests",
    "failed_calls",
    "plan_mismatch",
    "stated_counts",
    "unconfirmed_writes",
    "unverified_refusals",
]
