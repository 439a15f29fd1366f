"""The wrong record: a step that picked one record of a list it was given while another matches better.

A step whose output names one record's id, where another record of the same list matches more of the
values the rest of its input asks about (the order, the item, the patient), chose the wrong entity
(`wrong_record`, one of `trajdebug.analysis.lineage._anomalies`' local signals).  In a conversation, what
is asked is what the user or the instructions said, and the one record a tool answered a lookup of it
with.  Also here: `record_lists`, the lists of records inside a value, which other signals read too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.analysis.lineage._views import StepView, semantic
from trajdebug.core.chat import normalize_messages
from trajdebug.core.model import Step
from trajdebug.core.values import Atom, atoms, is_mapping, iter_text


WRONG_RECORD = 0.5
"""As strong as an altered sign: the input itself says which record fit better."""


def wrong_record(step: Step, view: StepView, *, lexicon: Lexicon = ENGLISH) -> Iterator[Evidence]:
    """The record a step picked where another of its list matches more of what its input asks about."""
    out_ids = {a.key: a for a in view.outputs if a.kind == "id"}
    if not out_ids:
        return
    msgs = _messages(step.input)
    # A conversation is no list of records to pick from: the records are inside its messages.
    parts = [semantic(step, m) for m in msgs] if msgs is not None else [semantic(step, step.input)]
    for records in (r for part in parts for r in record_lists(part)):
        keyed = [{a.key: a for a in atoms(r) if a.kind in ("id", "text", "date")} for r in records]
        picked = [i for i, r in enumerate(keyed) if set(r) & set(out_ids) and any(a.kind == "id" for a in r.values())]
        if len(picked) != 1:
            continue
        i = picked[0]
        # The values the rest of the input asks about: the input's values outside the records
        # (written more often in the whole input than in the records themselves).
        listed = set().union(*keyed)
        inside = json.dumps(records, default=str).casefold()
        # In a conversation, what is asked is what the user (or the instructions) said: the
        # model's own earlier calls walk the records one by one and ask about none of them.
        asking = _asking_text(step.input)
        text = view.in_text if asking is None else asking
        # Records written inside the user's own message (a prompt holding the list as JSON) are no
        # question about themselves: there too, only what is written more often than in the records asks.
        own = asking is not None and any(a.kind == "id" and _count(asking, k) > 0 for k, a in keyed[i].items())
        asked = {
            a.key
            for a in view.inputs
            if a.kind in ("id", "text", "date")
            and a.key not in out_ids
            and a.key not in listed
            and a.raw.casefold() not in lexicon.boolean_words
            and (asking is None or _count(asking, a.key) > 0)
        }
        asked |= {
            k
            for k in _mentioned(text, listed)
            # (The user's words hold no records, unless they hold the list itself: any mention there is a question.)
            if ((asking is not None and not own) or _count(text, k) > _count(inside, k))
            and k.split(":", 1)[-1] not in lexicon.boolean_words
        }

        scores = [sum(1 for k in r if k in asked and k not in out_ids) for r in keyed]
        best = max(range(len(keyed)), key=lambda j: (scores[j], -j))
        if best == i or scores[best] <= scores[i]:
            continue
        chosen = next(a for a in keyed[i].values() if a.key in out_ids)
        if _count(view.in_text, chosen.key) > _count(inside, chosen.key):
            continue  # chosen before it (its input already acts on that record): it passes the choice on
        other = next((a for a in keyed[best].values() if a.kind == "id" and a.key not in asked), None)
        matches = [a.raw for a in keyed[best].values() if a.key in asked][:2]
        yield Evidence(
            step.step_id,
            WRONG_RECORD,
            f"picked {chosen.raw} from the {len(records)} records it was given, where "
            f"{other.raw if other else 'another'} matches the {', '.join(matches)} its input asks about",
            "lineage:wrong-record",
        )
        return


_ASKING_ROLES = frozenset({"user", "human", "system", "developer"})


def _messages(value: Any) -> list[dict[str, Any]] | None:
    """The messages of a conversation, bare or under ``messages``, in any shape `trajdebug.core.chat` reads
    (None: not a conversation)."""
    return normalize_messages(value.get("messages") if isinstance(value, Mapping) else value)


def _asking_text(value: Any) -> str | None:
    """The text of the user's and the instructions' messages of a conversation (None: not a conversation),
    and of the one record a tool answered a lookup of what they name with (the patient, the account asked about)."""
    msgs = _messages(value)
    if msgs is None:
        return None
    said = "\n".join(t for m in msgs if str(m.get("role", "")).lower() in _ASKING_ROLES for t in iter_text(m.get("content")))
    asked = {c.get("id"): c for m in msgs for c in m.get("tool_calls") or () if isinstance(c, Mapping)}
    looked = [t for m in msgs if _one_record(m, asked.get(m.get("tool_call_id")), said) for t in iter_text(m.get("content"))]
    return "\n".join([said, *looked]).casefold()


def _one_record(m: dict[str, Any], call: Mapping[str, Any] | None, said: str) -> bool:
    args = call.get("arguments") if call else None  # (decoded by `normalize_messages`)
    named = [v for v in args.values() if isinstance(v, str) and len(v) >= 3] if isinstance(args, Mapping) else []
    body = str(m.get("content")).strip()
    try:
        return bool(named) and all(v in said for v in named) and body[:1] == "{" and is_mapping(json.loads(body))
    except (ValueError, RecursionError):  # (too deeply nested to parse: no record)
        return False


_YEAR_BEFORE = re.compile(r"\d{4}-")


def _count(text: str, key: str) -> int:
    """How often a value is written as a whole word (``(?<![\\w-])value(?![\\w-])``, non-overlapping)."""
    raw = key.split(":", 1)[-1]
    if not raw:
        return len(re.findall(r"(?<![\w-])(?![\w-])", text))
    n, at = 0, text.find(raw)
    date = key.startswith("d:")
    while at >= 0:
        if _whole(text, at, at + len(raw), date=date):
            n += 1
            at = text.find(raw, at + len(raw))
        else:
            at = text.find(raw, at + 1)
    return n


def _whole(text: str, start: int, end: int, *, date: bool = False) -> bool:
    """Whether text[start:end] stands alone: neither side touches a word character or a hyphen.

    ``date``: the month and day a date's key keeps (``09-30``) stand alone after a year too (``1991-09-30``).
    """
    # (As the regex \w reads it: letters, digits, numerals of any script, and "_".)
    if date and start >= 5 and _YEAR_BEFORE.fullmatch(text, start - 5, start):
        start -= 5
    before = text[start - 1] if start else ""
    after = text[end] if end < len(text) else ""
    return not (before and (before.isalnum() or before in "_-")) and not (after and (after.isalnum() or after in "_-"))


def _mentioned(text: str, keys: set[str]) -> set[str]:
    """The record values (keys) the input's text writes out, inside longer text (a question, a request)."""
    out = set()
    for k in keys:
        raw = k.split(":", 1)[-1]
        if len(raw) >= 3:
            at = text.find(raw)
            while at >= 0 and not _whole(text, at, at + len(raw), date=k.startswith("d:")):
                at = text.find(raw, at + 1)
            if at >= 0:
                out.add(k)
    return out


def record_lists(value: Any, depth: int = 0) -> Iterator[list[Mapping[str, Any]]]:
    """Lists of 2 to 50 records (mappings) inside a value, JSON written in strings read."""
    if depth > 6:
        return
    if isinstance(value, str):
        t = value.strip()
        if len(t) >= 200_000:
            return
        # JSON as the whole string, or after a short heading ("RANK\n{...}").
        start = min((i for i in (t.find("{"), t.find("[")) if 0 <= i <= 200), default=-1)
        if start < 0:
            return
        try:
            parsed, _ = json.JSONDecoder().raw_decode(t[start:])
        except (ValueError, RecursionError):
            return
        yield from record_lists(parsed, depth + 1)
        return
    if is_mapping(value):
        for v in list(value.values())[:200]:
            yield from record_lists(v, depth + 1)
        return
    if isinstance(value, list):
        recs = [v for v in value if isinstance(v, Mapping)]
        if 2 <= len(recs) <= 50 and len(recs) == len(value):
            yield recs
        for v in value[:200]:
            yield from record_lists(v, depth + 1)


def keyed_first(atom: Atom, outputs: Sequence[Sequence[Atom]], cands: list[int]) -> list[int]:
    """The holders ``cands`` of a value kept in a map keyed by a name (``{"Ruth Bell": 2}``), those whose own
    record names the key (``{"name": "Ruth Bell", "bell": 2}``) first; ``outputs``: each holder's output atoms.
    A small number is held by many records (another one's ``years: 2``); the earliest holder is that record's by
    chance, the one naming the key is where the value was looked up.  Unchanged when no holder, or the
    earliest, names it."""
    key = atom.field or ""
    if len(cands) < 2 or len(key) < 3 or not any(c.isalpha() for c in key):
        return cands
    named = [p for p, out in zip(cands, outputs) if any(b.kind == "text" and b.raw.strip().casefold() == key for b in out)]
    if not named or named[0] == cands[0]:
        return cands
    return named + [p for p in cands if p not in named]


__all__ = ["WRONG_RECORD", "keyed_first", "record_lists", "wrong_record"]
