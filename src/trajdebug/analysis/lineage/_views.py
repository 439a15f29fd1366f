"""What each step was given and what it produced, as sets of values (atoms).

A `StepView` holds one step's input and output atoms and the text of its input
(for "does the input mention this value" questions).  For an LLM step the
semantic content counts: the messages it was given and the message it
answered with, tool-call arguments included; the envelope (model name, token
counts, ids, timestamps, finish reasons) does not.  A step whose input was
not recorded (an imported span with only an output) is read as having been
given the outputs of the steps it depends on.

Values nobody would trace are left out of the index: booleans, empty strings,
small integers without a field name or a unit, and strings of one or two
characters.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.chat import normalize_llm_step
from trajdebug.core.model import Run, Step
from trajdebug.core.values import Atom, atoms, is_mapping, iter_text, mentions, number_key


ENVELOPE_KEYS = frozenset(
    {
        "model",
        "model_name",
        "usage",
        "id",
        "object",
        "created",
        "system_fingerprint",
        "finish_reason",
        "logprobs",
        "index",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "response_id",
        "service_tier",
        "stop_reason",
        "stop_sequence",
        "token_usage",
        "response_metadata",
        "usage_metadata",
        "invocation_params",
        "type",
        "role",
    }
)
"""Fields of an LLM call's envelope: about the call, not what was said (never read as content)."""

_TEXT_LIMIT = 60_000
_SPOKEN_TEXT = 2_000
"""Input texts up to this long keep their number keys for the next step given the same text (`build_view`)."""


def semantic(step: Step, value: Any, depth: int = 0) -> Any:
    """The content of an LLM step's input or output without its envelope (other steps: the value)."""
    if step.kind != "llm" or depth > 8:
        return value
    if is_mapping(value):
        out: dict[str, Any] = {}
        choices = value.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
            # A chat-completions response: the first choice's message is the answer.
            msg = choices[0].get("message") or choices[0].get("delta") or {}
            return semantic(step, msg, depth + 1)
        for k, v in value.items():
            if str(k).lower() in ENVELOPE_KEYS:
                continue
            if k == "function" and isinstance(v, Mapping):
                # A tool call: {"name": ..., "arguments": "<json>"}; the name is a choice, the arguments content.
                out["arguments"] = v.get("arguments")
                out["tool"] = v.get("name")
                continue
            out[str(k)] = semantic(step, v, depth + 1)
        return out
    if isinstance(value, list):
        return [semantic(step, v, depth + 1) for v in value[:200]]
    return value


@dataclass(slots=True)
class StepView:
    """One step's input and output as values."""

    step_id: str
    """The step."""
    inputs: list[Atom]
    """The values it was given."""
    outputs: list[Atom]
    """The values it produced."""
    in_text: str
    """Its input as case-folded text (bounded)."""
    in_keys: set[str] = field(default_factory=set)
    """The keys of its input atoms, plus the numbers its input text mentions (number words included)."""
    out_keys: set[str] = field(default_factory=set)
    """The keys of its output atoms."""
    out_text: str = ""
    """Its output as case-folded text (bounded)."""
    given_by_parents: bool = False
    """True when the step's input was not recorded and its parents' outputs stand in for it."""
    in_spans: frozenset[str] = frozenset()
    """The numbers of spans of time its input writes against their unit (``60m``: `span_keys`)."""
    out_spans: frozenset[str] = frozenset()
    """The numbers of spans of time its output writes against their unit."""

    def holds(self, atom: Atom) -> bool:
        """Whether the step's output holds this value (as a value, or written in its text)."""
        if atom.key in self.out_keys:
            return True
        if atom.kind == "number":
            return atom.key in self.out_spans and _timely(atom)
        raw = atom.raw.casefold()
        return len(raw) >= 3 and raw in self.out_text

    def given(self, atom: Atom) -> bool:
        """Whether the step's input holds this value (as a value, or written in its text)."""
        if atom.key in self.in_keys:
            return True
        if atom.kind == "number":
            return atom.key in self.in_spans and _timely(atom)
        raw = atom.raw.casefold()
        return len(raw) >= 3 and raw in self.in_text


def _timely(atom: Atom, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a number can be a span's (`span_keys`): written bare or with a unit of time (``60 min``), not
    a share or a weight (``15%`` is no ``15m`` window)."""
    return atom.unit is None or lexicon.duration_value.match(f"1 {atom.unit}") is not None


def trivial(atom: Atom) -> bool:
    """Whether a value is too common to trace (small counts without a name, one- or two-letter strings)."""
    if atom.kind == "number":
        n = atom.number if atom.number is not None else 0.0
        return atom.field is None and atom.unit is None and n == int(n) and -10 <= n <= 10
    if atom.kind == "text":
        return len(atom.raw.strip()) <= 2
    return False


_LEADING_NUMBER = re.compile(r"\s*(\d+(?:\.\d+)?)")


def span_keys(values: Iterable[Atom], lexicon: Lexicon = ENGLISH) -> set[str]:
    """The number keys of whole values that are a span of time written against its unit (``60m``, ``24h``):
    values read such a token as a word (``12b`` is a seat), yet a tool given ``interval="60m"`` that
    returns ``period_min=60`` was given that 60, and the model that wrote ``60m`` produced it.  Spans
    written apart (``60 min``) are numbers already.  Kept beside the keys, for numbers of time alone
    (`StepView.given`): a ``15%`` is no ``15m`` window."""
    out: set[str] = set()
    for a in values:
        if a.kind == "text" and len(a.raw) <= 12 and lexicon.duration_value.match(a.raw):
            m = _LEADING_NUMBER.match(a.raw)
            if m is not None:
                out.add("n:" + number_key(float(m.group(1))))
    return out


def build_view(
    step: Step, parent_outputs: Iterable[Any] = (), spoken: dict[str, frozenset[str]] | None = None
) -> StepView:
    """The view of one step (``parent_outputs`` stand in for an input that was not recorded).

    ``spoken``: the number keys of input texts read before (one run's, filled here): many steps are given
    the same text (a request handed to every sub-agent, one prompt per item).
    """
    given_by_parents = False
    raw_in = step.input
    if raw_in is None or raw_in == {} or raw_in == "":
        raw_in = list(parent_outputs)
        given_by_parents = bool(raw_in)
    raw_out = step.output
    if step.kind == "llm":
        # Runs recorded before the LLM-step convention: read them through it.
        raw_in, raw_out, _ = normalize_llm_step(raw_in, raw_out, step.attributes)
    content_in = semantic(step, raw_in)
    content_out = semantic(step, raw_out)
    ins = [a for a in atoms(content_in) if not trivial(a)]
    outs = [a for a in atoms(content_out) if not trivial(a)]
    text = "\n".join(iter_text(content_in))[:_TEXT_LIMIT]
    out_text = "\n".join(iter_text(content_out))[:_TEXT_LIMIT]
    keys = {a.key for a in ins}
    said = spoken.get(text) if spoken is not None else None
    if said is None:
        said = frozenset("n:" + number_key(m.value) for m in mentions(text))
        if spoken is not None and len(text) <= _SPOKEN_TEXT:
            spoken[text] = said
    keys |= said
    return StepView(
        step.step_id,
        ins,
        outs,
        text.casefold(),
        keys,
        {a.key for a in outs},
        out_text.casefold(),
        given_by_parents,
        frozenset(span_keys(ins)),
        frozenset(span_keys(outs)),
    )


def step_views(run: Run, children: dict[str, list[str]] | None = None) -> dict[str, StepView]:
    """What each step of a run was given and returned (`build_view`), by step id: its recorded input, or,
    for an enclosing step, its children's outputs (`_made_of`) too, and what it read from shared state
    (`state_reads`).  A state value is read once per (writer, key): every step reading the catalog one step
    stored is given the same view of it, and reading it again per reader made analyze grow with
    readers x size."""
    by_id = {s.step_id: s for s in run.steps}
    kids = children if children is not None else _children(run)
    spoken: dict[str, frozenset[str]] = {}  # input text -> the numbers it says (`build_view`)
    stored: dict[tuple[str, str], StepView] = {}  # (writer step id, key) -> the view of what it stored
    views: dict[str, StepView] = {}
    for s in run.steps:
        given = _made_of(s.step_id, kids, by_id)
        parents = [by_id[d.step_id].output for d in s.deps if d.step_id in by_id] if not given else []
        view = build_view(s, parents, spoken)
        # What it read from the shared state it was given, as its recorded input (a record read by its id).
        for (writer, key), value in state_reads(s, by_id).items():
            if (writer, key) not in stored:
                stored[writer, key] = build_view(Step(writer, "", "other", input={key: value}), spoken=spoken)
            add_given(view, stored[writer, key])
        # What the children produced is what the enclosing step was made of (read 50 at a
        # time: one reading of them all would stop at the atom cap, losing the last children).
        for i in range(0, len(given), 50):
            extra = build_view(Step(s.step_id, s.name, "other", input=given[i : i + 50]), spoken=spoken)
            view.in_keys |= extra.in_keys
            if len(view.in_text) < _TEXT_LIMIT:
                view.in_text += "\n" + extra.in_text
        views[s.step_id] = view
    return views


def state_reads(step: Step, steps: Mapping[str, Step]) -> dict[tuple[str, str], Any]:
    """The values a step read through shared state (``run.state``, a declared resource), by (writer step id,
    key): what the writer at the other end of each recorded ``state`` edge stored under that key (its
    ``state_values``).

    A step handed only an id (``tree_id="T3"``) that reads the record from the state was given that
    record as much as its arguments: leaving it out makes every value it copied from the record look
    made up by it.  A key whose writer recorded no value (an external resource) gives nothing, nor does a key
    the step writes itself: what a ledger held before the step added an entry it keeps, and is no source of
    the new entry's values (another hive's ``action="monitor"`` copied into this one's is the slip)."""
    own = step.attributes.get("state_values")
    mine = set(own) if isinstance(own, Mapping) else set()
    out: dict[tuple[str, str], Any] = {}
    keys: set[str] = set()
    for d in step.deps:
        if d.kind != "state" or not d.key or d.key in keys or d.key in mine:
            continue
        writer = steps.get(d.step_id)
        written = writer.attributes.get("state_values") if writer is not None else None
        if isinstance(written, Mapping) and d.key in written:
            out[d.step_id, d.key] = written[d.key]
            keys.add(d.key)
    return out


def add_given(view: StepView, extra: StepView) -> None:
    """Count what ``extra`` views (values the step read without their being in its recorded input) as given
    to the step (`StepView.given`): their keys, the numbers their text says, and their text.  Not among its
    input atoms, whose fields say what the step was asked about: a ledger it read to add one entry holds every
    other entry's ``net``, and the one it was handed is the one it should keep."""
    view.in_keys |= extra.in_keys
    view.in_spans |= extra.in_spans
    if len(view.in_text) < _TEXT_LIMIT:
        view.in_text += "\n" + extra.in_text


def _made_of(step_id: str, kids: dict[str, list[str]], by_id: dict[str, Step]) -> list[Any]:
    """The outputs an enclosing step was made of: its children's, or, for a child that returned
    nothing itself (a wrapper, a framework's agent span), that child's own children's."""
    out: list[Any] = []
    stack = [c for c in reversed(kids.get(step_id, ())) if c in by_id]
    descents = 0  # (only the walk through children that returned nothing is bounded)
    while stack:
        child = by_id[stack.pop()]
        if child.output is not None:
            out.append(child.output)
        elif descents < 256:
            descents += 1
            stack.extend(g for g in reversed(kids.get(child.step_id, ())) if g in by_id)
    return out


def _children(run: Run) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for s in run.steps:
        if s.parent_id is not None:
            out.setdefault(s.parent_id, []).append(s.step_id)
    return out


def _has_word(text: str, raw: str) -> bool:
    """Whether ``raw`` occurs in ``text`` with no word character or hyphen on either side.

    The test of the regex ``(?<![\\w-])raw(?![\\w-])`` (``\\w``: alphanumeric or underscore), without
    compiling one pattern per value: a run has thousands of distinct values, more than `re`'s cache holds.
    """
    n = len(raw)
    at = text.find(raw)
    while at >= 0:
        before = text[at - 1] if at else ""
        after = text[at + n] if at + n < len(text) else ""
        if not _word_char(before) and not _word_char(after):
            return True
        at = text.find(raw, at + 1)
    return False


def _word_char(c: str) -> bool:
    return bool(c) and (c.isalnum() or c == "_" or c == "-")


def message_atoms(message: str) -> list[Atom]:
    """The values a failure's message names.  A message that embeds a JSON body (an HTTP error's
    ``{"detail": "room 'Aurora Hall' is not bookable"}``) is read as JSON, each string whole: the values its
    sentences quote or name are read from each sentence too, as from a message written out."""
    found = atoms(message)
    start = min((i for i in (message.find("{"), message.find("[")) if i >= 0), default=-1)
    if start < 0:
        return found
    try:
        body, _ = json.JSONDecoder().raw_decode(message[start:])
    except (ValueError, RecursionError):
        return found
    seen = {a.key for a in found}
    for text in _sentences(body):
        for b in atoms(text):
            if b.key not in seen:
                seen.add(b.key)
                found.append(b)
    return found


def _sentences(body: Any, depth: int = 0) -> Iterable[str]:
    """The strings of several words a JSON body holds, three levels deep."""
    if isinstance(body, str):
        if " " in body.strip():
            yield body
    elif depth < 3 and isinstance(body, (dict, list)):
        for v in body.values() if isinstance(body, dict) else body[:64]:
            yield from _sentences(v, depth + 1)


def failure_atoms(step: Step, message: str | None) -> list[tuple[Atom, bool]]:
    """The values a failure involves: those its message names (``True``), then the failing step's inputs."""
    out: list[tuple[Atom, bool]] = []
    seen: set[str] = set()
    if message:
        for a in message_atoms(message):
            if a.key not in seen and not (a.kind == "text" and len(a.raw) <= 2):
                seen.add(a.key)
                out.append((a, True))
    return out


def holds_untraced(step: Step, f: str) -> bool:
    """Whether the step's output does hold field ``f``, with a value too small to trace (a two-letter code
    such as ``"SA"``, a count of 3): the lineage leaves such values out, so the field looks absent when it
    is not.  Read only when the field seems missing (rare), so the output is walked again only then."""
    return any(a.field == f for a in atoms(semantic(step, step.output)))


def _blank(v: Any) -> bool:
    """A value that holds nothing: null, a text of blanks, an empty container."""
    return v is None or (isinstance(v, str) and not v.strip()) or (isinstance(v, (Mapping, list, tuple)) and not v)


def holds_empty(value: Any, f: str) -> bool:
    """Whether the output ``value`` holds field ``f`` (lower-cased, as the lineage names fields) with no value:
    ``None``, a blank text or an empty container (read only when the field seems missing, so rarely).

    Looked up where the output's own fields are, its top level (or the top level of each record of a list it
    returned): a field missing there that a nested record holds as null is another record's field, and the
    output does lack it.  A tool's answer given as JSON text (a framework's tool returns a string) is read as
    the record it encodes, as the lineage reads its fields."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # (not JSON, or nested deeper than the parser goes)
            return False
    records = value[:200] if isinstance(value, (list, tuple)) else [value]
    return any(
        str(k).lower() == f and _blank(v) for r in records if isinstance(r, Mapping) for k, v in r.items()
    )


def seen_index(views: Iterable[StepView]) -> dict[str, list[int]]:
    """Value key -> the positions of the steps (in start order) whose input or output holds it as a value."""
    out: dict[str, list[int]] = {}
    for i, v in enumerate(views):
        for k in {a.key for a in v.inputs} | v.out_keys:
            out.setdefault(k, []).append(i)
    return out


def labelled(text: str, name: str | None, raw: str) -> bool:
    """Whether ``text`` writes field ``name`` (its last dotted part, ``_`` or ``-`` read as any of them or a
    blank) right in front of the number ``raw``: "age 14", "age: 14", "(age=14)" for ``age``; matched as the
    field's own name, never as a word of some language."""
    if not name or not raw:
        return False
    parts = [re.escape(w) for w in re.split(r"[_\-\s]+", name.rsplit(".", 1)[-1]) if w]
    if not parts:
        return False
    pat = r"(?<![\w])" + r"[\s_\-]+".join(parts) + r"\s*[:=]?\s*" + re.escape(raw) + r"(?![\w.]\d)"
    return re.search(pat, text, re.IGNORECASE) is not None


def held_before(
    atom: Atom, produced: Atom, at: int, seen: Mapping[str, list[int]], enclosing: set[str], steps: Sequence[Step],
    consumer: StepView | None, consumer_at: int = -1,
) -> bool:
    """Whether the number a ``consumer`` holds as ``atom``, which the step at ``at`` wrote as ``produced``, was
    already given to or held by a step before it (by `seen_index`; not one ``enclosing`` it, which was given what
    its children made), and reached the consumer from there too: the step at ``at`` then wrote it again, by
    chance (a kart's ballast of 14 kg after the booking's age 14, both handed to the check), it did not
    introduce it.  Only when the consumer holds it by no name (a number of a failure's message) and was also
    given it under another name than that step wrote: a consumer that got it from that step alone (a rate the
    pricing tool wrote, equal to some earlier step's hours) names its origin.  Only numbers, never a small
    whole number (a count recurs in any run by chance); a date the run held before (a superseded one) may be
    exactly what a step wrongly took up again.  And only when the consumer's error message writes that other
    name right in front of the number ("age 14" for the booking's ``age``): a wrong charge of 250 that equals an
    order id, or of 15 that equals a quantity, is the most ordinary wrong value, and "charged 250" names the
    producer's number, not the id (rev53l)."""
    if atom.kind != "number" or atom.field is not None or consumer is None or at >= len(steps):
        return False
    if trivial(Atom(atom.key, atom.kind, None, None, atom.raw, atom.number)):
        return False  # (whatever it counts: "2 servers" is as common a number as a bare 2)
    error = steps[consumer_at].error if 0 <= consumer_at < len(steps) else None
    said = error.message if error is not None else ""
    if not any(
        b.key == atom.key and b.field not in (None, produced.field) and labelled(said, b.field, atom.raw)
        for b in consumer.inputs
    ):
        return False
    found = seen.get(atom.key, [])
    return any(steps[q].step_id not in enclosing for q in found[: bisect.bisect_left(found, at)])


__all__ = [
    "held_before",
    "labelled",
    "seen_index",
    "holds_empty",
    "holds_untraced",
    "ENVELOPE_KEYS",
    "StepView",
    "build_view",
    "failure_atoms",
    "message_atoms",
    "semantic",
    "add_given",
    "state_reads",
    "trivial",
    ]
