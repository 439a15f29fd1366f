"""Diagnosers of requests: a tool or a retrieval that did not answer what it was asked.

A faulty tool rarely says so.  What it was asked is recorded beside what it
answered, though, and four mismatches between the two show in the run alone,
each read by shape and by the words of a field's name (never by a list of
field names):

* **Count** (`request_count`): asked for N items (``n``, ``limit``,
  ``top_k``, ``page_size``: an argument every word of whose name asks how
  many) and answered with a list of more than N.  Fewer is no tell: a search
  may find less than it may return.
* **More follows** (`request_more`): the answer says a further page exists (a
  ``next_cursor``, a ``next_page_token``, ``has_more``) and the agent never
  called the tool again: it acted on the first page as if it were all.
* **Off the query** (`request_record`): the first record of a list answered
  disagrees with the request in a field where a later record agrees with it
  (asked for a title by its author, the first record is another author's),
  and a later step used that first record: the wrong record ranked first.
* **Let through** (`request_flag`): a flag that keeps a kind of item out
  (``include_cancelled=false``, ``exclude_expired=true``) and an answer
  listing an item of that kind (``status: cancelled``): an ignored argument.
* **Short codes** (`request_code`): a field given a code of one or two
  characters (a blood type ``A-``, a grade) and answered with another code
  under the same name; the value index (`trajdebug.analysis.lineage`) leaves
  such short strings out, so its conflict rule cannot see them.

Like every diagnoser they rank, they do not prove.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.lexicon import Lexicon
from trajdebug.analysis.lineage._anomalies import GENERIC_FIELDS
from trajdebug.core.model import Step


_ASKED = ("tool", "retrieval")
COUNT = 0.45
MORE = 0.4
RECORD = 0.45
FLAG = 0.5
CODE = 0.45

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def name_words(name: str) -> frozenset[str]:
    """The words of a field's name (``top_k`` -> {top, k}; ``pageSize`` -> {page, size})."""
    return frozenset(w for w in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", str(name)).lower()) if w)


def _mapping(value: Any) -> Mapping[str, Any] | None:
    """A value as a mapping (JSON text read), None when it is none."""
    if isinstance(value, str):
        t = value.strip()
        if t[:1] != "{" or len(t) > 100_000:
            return None
        try:
            value = json.loads(t)
        except ValueError:
            return None
    return value if isinstance(value, Mapping) else None


def _records(value: Any, depth: int = 0) -> list[Mapping[str, Any]] | None:
    """The largest list of records (mappings) inside an answer, JSON text read."""
    if isinstance(value, str):
        value = _mapping(value) if value.strip()[:1] == "{" else _json_list(value)
    rows = content.largest_list(value) if value is not None else None
    if not rows or not all(isinstance(r, Mapping) for r in rows):
        return None
    return rows


def _json_list(text: str) -> list[Any] | None:
    t = text.strip()
    if t[:1] != "[" or len(t) > 100_000:
        return None
    try:
        v = json.loads(t)
    except ValueError:
        return None
    return v if isinstance(v, list) else None


def _later_calls(step: Step, ctx: DiagnoseContext) -> Iterator[Step]:
    """The steps recorded after this one."""
    seen = False
    for s in ctx.run.steps:
        if seen:
            yield s
        elif s.step_id == step.step_id:
            seen = True


# -- how many ----------------------------------------------------------------------


def _asked_count(args: Mapping[str, Any], lexicon: Lexicon) -> tuple[str, int] | None:
    for k, v in args.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            continue
        words = name_words(k)
        if words and words <= lexicon.count_words and words & lexicon.count_core:
            return str(k), v
    return None


def request_count(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A tool asked for N items that answered with more than N."""
    if step.kind not in _ASKED or step.status != "ok":
        return
    args = _mapping(step.input)
    asked = _asked_count(args, ctx.lexicon) if args is not None else None
    if asked is None:
        return
    rows = _records(step.output)
    if rows is not None and len(rows) > asked[1]:
        yield Evidence(
            step.step_id,
            COUNT,
            f"was asked for {asked[0]}={asked[1]} but answered with {len(rows)} items",
            "request-count",
        )


# -- more follows ------------------------------------------------------------------


def _more_field(value: Any, lexicon: Lexicon) -> tuple[str, Any] | None:
    out = _mapping(value)
    if out is None:
        return None
    for k, v in out.items():
        words = name_words(k)
        if not (words & {"next", "more"}) or not words <= lexicon.more_words or len(words) < 2:
            continue
        if v is True or (isinstance(v, str) and v.strip() and v.casefold() not in lexicon.boolean_words):
            return str(k), v
    return None


def request_more(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """An answer that says more follows (a cursor, a next-page token) from a tool the agent never called again."""
    if step.kind not in _ASKED or step.status != "ok":
        return
    more = _more_field(step.output, ctx.lexicon)
    if more is None or any(s.name == step.name for s in _later_calls(step, ctx)):
        return
    yield Evidence(
        step.step_id,
        MORE,
        f"its answer says more follows ({more[0]}={content.text_of(more[1], 30)!r}) but {step.name} was never "
        "called for the rest: the agent acted on the first page",
        "request-more",
    )


# -- the wrong record first ----------------------------------------------------------


def _asked_text(value: Any) -> str:
    """The text a request asks with: its string arguments (a bare string is the query)."""
    if isinstance(value, str) and _mapping(value) is None:
        return value.casefold()
    args = _mapping(value)
    if args is None:
        return ""
    return " ".join(v for _, v in content.leaves(args) if isinstance(v, str)).casefold()


def _fields(record: Mapping[str, Any]) -> dict[str, str]:
    """A record's text fields by their last name (``metadata.author`` -> author), generic names left out."""
    out = {}
    for path, v in content.leaves(record):
        name = path.rsplit(".", 1)[-1].lower()
        if isinstance(v, str) and len(v) >= 3 and name not in GENERIC_FIELDS and not name.startswith("page_"):
            out.setdefault(name, v)
    return out


def _within(value: str, text: str) -> bool:
    at = text.find(value.casefold())
    return (
        at >= 0
        and not text[at - 1 : at].isalnum()
        and not text[at + len(value) : at + len(value) + 1].isalnum()
    )


def request_record(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A first record that disagrees with the request where a later record agrees, used by a later step."""
    if step.kind not in _ASKED or step.status != "ok":
        return
    asked = _asked_text(step.input)
    rows = _records(step.output)
    if not asked or rows is None or len(rows) < 2:
        return
    first = _fields(rows[0])
    for later in rows[1:]:
        theirs = _fields(later)
        off = [
            f for f, v in first.items() if f in theirs and not _within(v, asked) and _within(theirs[f], asked)
        ]
        if not off:
            continue
        f = off[0]
        own = _own_values(rows[0], rows)
        used = next(
            (
                v
                for v in own
                if any(_within(v, content.text_of(s.input).casefold()) for s in _later_calls(step, ctx))
            ),
            None,
        )
        if used is None:
            return
        yield Evidence(
            step.step_id,
            RECORD,
            f"its first record has {f}={first[f]!r} where the request asks for {theirs[f]!r}, which a later record "
            f"has; the agent went on with the first ({used})",
            "request-record",
        )
        return


def _own_values(record: Mapping[str, Any], rows: list[Mapping[str, Any]]) -> list[str]:
    """The values of a record (of three characters and up) that no other record of the list holds."""
    others = json.dumps([r for r in rows if r is not record], default=str).casefold()
    vals = [
        str(v)
        for _, v in content.leaves(record)
        if isinstance(v, (str, int, float)) and not isinstance(v, bool)
    ]
    return [v for v in vals if len(v) >= 3 and not _within(v, others)]


# -- a flag ignored ----------------------------------------------------------------


def _kept_out(args: Mapping[str, Any], lexicon: Lexicon) -> tuple[str, str] | None:
    """The kind of item a flag keeps out, by the flag's name (``include_cancelled=false`` -> cancelled)."""
    for k, v in args.items():
        if not isinstance(v, bool):
            continue
        words = name_words(k)
        rest = words - lexicon.include_words - lexicon.exclude_words
        if len(rest) != 1 or len(words) < 2:
            continue
        if (words & lexicon.include_words and v is False) or (words & lexicon.exclude_words and v is True):
            return str(k), next(iter(rest))
    return None


def request_flag(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """An answer listing an item of the kind a flag of the request keeps out."""
    if step.kind not in _ASKED or step.status != "ok":
        return
    args = _mapping(step.input)
    kept = _kept_out(args, ctx.lexicon) if args is not None else None
    rows = _records(step.output)
    if kept is None or rows is None:
        return
    flag, kind = kept
    for r in rows:
        hit = any(isinstance(v, str) and v.casefold() == kind for v in r.values()) or r.get(kind) is True
        if hit:
            yield Evidence(
                step.step_id,
                FLAG,
                f"was asked {flag}={args[flag]!r} but lists an item that is {kind}: the argument was ignored",
                "request-flag",
            )
            return


# -- short codes -----------------------------------------------------------------------


def request_code(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A field given a code of one or two characters, answered with another code under the same name."""
    if step.kind not in _ASKED or step.status != "ok":
        return
    args = _mapping(step.input)
    if args is None:
        return
    codes = {
        str(k).lower(): v
        for k, v in args.items()
        if isinstance(v, str) and 1 <= len(v.strip()) <= 2 and str(k).lower() not in GENERIC_FIELDS
    }
    if not codes:
        return
    for path, v in content.leaves(step.output if _mapping(step.output) is None else _mapping(step.output)):
        name = path.rsplit(".", 1)[-1].lower()
        if (
            name in codes
            and isinstance(v, str)
            and 1 <= len(v.strip()) <= 2
            and v.strip() != codes[name].strip()
        ):
            yield Evidence(
                step.step_id,
                CODE,
                f"was given {name}={codes[name]!r} but its answer says {name}={v!r}",
                "request-code",
            )
            return


REQUEST_DIAGNOSERS = {
    "request-count": request_count,
    "request-more": request_more,
    "request-record": request_record,
    "request-flag": request_flag,
    "request-code": request_code,
}
"""The request diagnosers by name (registered in `trajdebug.analysis.diagnosers.BUILTIN_DIAGNOSERS`)."""

__all__ = [
    "REQUEST_DIAGNOSERS",
    "name_words",
    "request_code",
    "request_count",
    "request_flag",
    "request_more",
    "request_record",
]
