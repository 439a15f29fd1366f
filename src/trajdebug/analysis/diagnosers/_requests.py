"""Diagnosers of requests: a tool or a retrieval that did not answer what it was asked.

A faulty tool rarely says so.  What it was asked is recorded beside what it
answered, though, and these mismatches between the two show in the run alone,
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
  and a later step used that first record: the wrong record ranked first
  (a search's answer only: a list, bare or under at most three fields; an
  entity listing its parts, an order's items, ranks none of them first).
  Or (`request_variant`) the first record is named by the start of the
  query and the rest of the query (``lemon tart (gluten-free)``) is nowhere
  in the answer: the plain item returned for a qualified one.
* **Another of the series** (`request_series`): asked about a code
  (``TRV-BASIC``, unit ``4D``), answered with text that never names it and
  names another code of its series (``TRV-PREMIUM``, ``4B``): the
  neighbouring record.
* **Let through** (`request_flag`): a flag that keeps a kind of item out
  (``include_cancelled=false``, ``exclude_expired=true``) and an answer
  listing an item of that kind (``status: cancelled``): an ignored argument.
* **Short codes** (`request_code`): a field given a code of one or two
  characters (a blood type ``A-``, a grade) and answered with another code
  under the same name; the value index (`trajdebug.analysis.lineage`) leaves
  such short strings out, so its conflict rule cannot see them.

Two more read a step's own input and output, whatever its kind: records
under the keys of a mapping that name another key of it as their own
(`misaligned`: shifted by one against their keys), and numbers that added up
in the input and no longer do under the same names in the output
(`broken_sum`: ``scored + remaining == total`` broken by an update).

Like every diagnoser they rank, they do not prove.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._partial import _field_lists
from trajdebug.analysis.diagnosers._reads import OK, TOOLS, Reads, reading
from trajdebug.analysis.diagnosers._request_parts import (
    _ASKED,
    _CAMEL,
    _answer,
    _answer_records,
    _asked,
    _given,
    _later_calls,
    _mapping,
    _records,
    _within,
    name_words,
)
from trajdebug.analysis.lexicon import Lexicon
from trajdebug.analysis.lineage._anomalies import GENERIC_FIELDS
from trajdebug.core.model import CONTAINER_KINDS, Step


COUNT = 0.45
MORE = 0.4
RECORD = 0.45
FLAG = 0.5
CODE = 0.45
MISALIGNED = 0.5
BROKEN_SUM = 0.45
VARIANT = 0.4
SERIES = 0.45


# -- how many ----------------------------------------------------------------------


def _asked_count(args: Mapping[str, Any], lexicon: Lexicon) -> tuple[str, int] | None:
    for k, v in args.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            continue
        words = name_words(k)
        if words and words <= lexicon.count_words and words & lexicon.count_core:
            return str(k), v
    return None


@reading(Reads(skips_kinds=frozenset({"llm", *CONTAINER_KINDS}), statuses=OK))
def request_count(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A tool asked for N items that answered with more than N; a step that picked fewer than N of more than N
    records it was given (a selector off by one)."""
    if step.kind == "llm" or step.kind in CONTAINER_KINDS or step.status != "ok":
        return
    args = _given(step, ctx)
    asked = _asked_count(args, ctx.lexicon) if args is not None else None
    if asked is None:
        return
    rows = _answer_records(step, ctx)
    if rows is None:
        return
    if step.kind in _ASKED and len(rows) > asked[1]:
        yield Evidence(
            step.step_id,
            COUNT,
            f"was asked for {asked[0]}={asked[1]} but answered with {len(rows)} items",
            "request-count",
        )
    elif args is not None and len(rows) < asked[1] and _exact_pick(args, asked[0], ctx.lexicon) and _picked_from(rows, _records(args), asked[1]):
        yield Evidence(
            step.step_id,
            COUNT,
            f"was asked for {asked[0]}={asked[1]} of the {len(_records(args) or ())} records it was given "
            f"but kept {len(rows)}",
            "request-count",
        )


def _exact_pick(args: Mapping[str, Any], key: str, lexicon: Lexicon) -> bool:
    """Whether a step was asked to keep exactly so many of its records: the count's name asks for that many
    (``top``, ``n``; ``limit`` or ``max`` is a cap a filter may stay under), and nothing else it was given
    is a criterion that could leave fewer (every other argument is a list of records)."""
    words = name_words(key)
    if not words & lexicon.exact_count_words or words & (lexicon.count_core - lexicon.exact_count_words):
        return False
    return all(isinstance(v, list) for k, v in args.items() if k != key)


def _picked_from(rows: list[Mapping[str, Any]], given: list[Mapping[str, Any]] | None, n: int) -> bool:
    """Whether every record of ``rows`` is one of ``given`` (unchanged), and ``given`` held more than ``n``:
    the step chose among records it had, enough of them to keep ``n``."""
    if not rows or given is None or len(given) <= n:
        return False
    keys = {json.dumps(r, sort_keys=True, default=str) for r in given}
    return all(json.dumps(r, sort_keys=True, default=str) in keys for r in rows)


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


@reading(Reads(kinds=TOOLS, statuses=OK))
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


@reading(Reads(kinds=TOOLS, statuses=OK))
def request_record(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A first record that disagrees with the request where a later record agrees, used by a later step."""
    if step.kind not in _ASKED or step.status != "ok":
        return
    asked = _asked(step, ctx)
    rows = _answer_records(step, ctx)
    if not asked or rows is None or len(rows) < 2:
        return
    envelope = _answer(step, ctx)
    if envelope is not None and len(envelope) > 3:
        return  # an entity that lists its parts (an order's items) ranks none of them first: no search result
    first = _field_lists(rows[0])
    for later in rows[1:]:
        theirs = _field_lists(later)
        off = [  # (a list holding the asked value anywhere agrees with the request)
            f
            for f, vs in first.items()
            if f in theirs and not any(_within(v, asked) for v in vs) and any(_within(v, asked) for v in theirs[f])
        ]
        if not off:
            continue
        f = off[0]
        mine, wanted = first[f][0], next(v for v in theirs[f] if _within(v, asked))
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
            f"its first record has {f}={mine!r} where the request asks for {wanted!r}, which a later record "
            f"has; the agent went on with the first ({used})",
            "request-record",
        )
        return


@reading(Reads(kinds=TOOLS, statuses=OK))
def request_variant(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A first record named by the start of the query, where the rest of the query (a variant: ``lemon tart
    (gluten-free)``) is nowhere in the answer: the plain item returned for a qualified one."""
    if step.kind not in _ASKED or step.status != "ok":
        return
    args = _given(step, ctx)
    texts = [v for _, v in content.leaves(args) if isinstance(v, str)] if args is not None else [step.input]
    if len(texts) != 1 or not isinstance(texts[0], str):
        return  # a query is one text: several arguments are a request's fields, not a query's words
    asked = texts[0].casefold().strip()
    out = _answer(step, ctx)
    rows = _answer_records(step, ctx) or ([out] if out is not None else None)
    if len(asked) < 8 or not rows:
        return
    answer = content.text_of(step.output).casefold()
    stop = ctx.lexicon.stopwords | ctx.lexicon.short_stopwords
    # (Any field may name the record here, ``title`` and ``name`` first among them.)
    for f, v in ((p.rsplit(".", 1)[-1], v) for p, v in content.leaves(rows[0]) if isinstance(v, str)):
        named = v.casefold().strip()
        if (
            len(named) < 4
            or not asked.startswith(named)
            or len(asked) <= len(named) + 3
            or asked[len(named)].isalnum()
        ):
            continue
        rest = [
            w for w in re.findall(r"[a-z][a-z-]*[a-z]", asked[len(named) :]) if len(w) >= 3 and w not in stop
        ]
        if rest and not any(w in answer for w in rest):
            yield Evidence(
                step.step_id,
                VARIANT,
                f"was asked for {asked!r} and answered with {f}={v!r}: the {' '.join(rest)!r} of the request is "
                "nowhere in its answer",
                "request-variant",
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


@reading(Reads(kinds=TOOLS, statuses=OK))
def request_flag(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """An answer listing an item of the kind a flag of the request keeps out."""
    if step.kind not in _ASKED or step.status != "ok":
        return
    args = _given(step, ctx)
    kept = _kept_out(args, ctx.lexicon) if args is not None else None
    rows = _answer_records(step, ctx)
    if args is None or kept is None or rows is None:
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


@reading(Reads(kinds=TOOLS, statuses=OK))
def request_code(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A field given a code of one or two characters, answered with another code under the same name."""
    if step.kind not in _ASKED or step.status != "ok":
        return
    args = _given(step, ctx)
    if args is None:
        return
    codes = {
        str(k).lower(): v
        for k, v in args.items()
        if isinstance(v, str) and 1 <= len(v.strip()) <= 2 and str(k).lower() not in GENERIC_FIELDS
    }
    if not codes:
        return
    answer = _answer(step, ctx)
    for path, v in content.leaves(step.output if answer is None else answer):
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


# -- a code asked for, a sibling code answered ------------------------------------------

_TOKEN = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")
_LAST_RUN = re.compile(r"(?:[A-Za-z]+|[0-9]+)$")


def _codes(text: str) -> list[str]:
    """The codes written in a text: tokens with a digit, or capitals joined by a hyphen (``4D``, ``TRV-BASIC``)."""
    # (A token is ASCII letters and digits joined by hyphens: without its hyphens it holds a digit exactly when
    # it is not all letters, and a letter when it is not all digits; two string tests, not a scan per character.)
    return [
        t
        for t in _TOKEN.findall(text)
        if 2 <= len(t) <= 30
        and ((not (bare := t.replace("-", "")).isalpha() and not bare.isdigit()) or ("-" in t and t.isupper()))
    ]


def _sibling_code(code: str, answer: list[str]) -> str | None:
    """A code of the answer that shares the asked code's stem and differs in its last part (``TRV-PREMIUM``
    for ``TRV-BASIC``, ``4B`` for ``4D``): another member of the same series."""
    last = _LAST_RUN.search(code)
    if last is None or last.start() == 0:
        return None
    stem, tail = code[: last.start()], last.group(0)
    for other in answer:
        rest = other[len(stem) :]
        if (
            other.startswith(stem)
            and rest
            and rest != tail
            and rest.isalpha() == tail.isalpha()
            and rest.isalnum()
        ):
            return other
    return None


def _excluding(path: str, lexicon: Lexicon) -> bool:
    """Whether a leaf's path (`content.leaves`) lies under an argument whose name keeps items out
    (`Lexicon.exclude_argument_words`: ``exclude``, ``skip_ids``, ``not_in``, ``blacklist``).  ``no`` only
    leads such a name (``no_fish``): after another word it is a number's (``order_no``)."""
    for part in re.split(r"[.\[\]]", path):
        words = name_words(part) & lexicon.exclude_argument_words
        if words - {"no"} or ("no" in words and _CAMEL.sub("_", part).lower().startswith("no_")):
            return True
    return False


@reading(Reads(kinds=TOOLS, statuses=OK))
def request_series(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """An answer that never names the code it was asked about and names another of its series instead."""
    if step.kind not in _ASKED or step.status != "ok" or step.output is None:
        return
    args = _given(step, ctx)
    # A code given under an argument that keeps items out (``exclude=["R-101"]``, ``not_in``) is one the
    # answer should not name (nu29): no code asked about.
    asked = (
        " ".join(v for p, v in content.leaves(args) if isinstance(v, str) and not _excluding(p, ctx.lexicon))
        if args is not None
        else step.input
    )
    if not isinstance(asked, str):
        return
    codes = _codes(asked)
    if not codes:
        return  # (asked about no code: the answer is not read)
    # A code given under a field the answer also has is `lineage:conflict`'s to judge (given employee=E104,
    # answered employee=E117): counted twice, one mismatch would outrank the step that chose the code.
    answered = _answer(step, ctx)
    named = {p.rsplit(".", 1)[-1] for p, _ in content.leaves(answered)} if answered is not None else set()
    shared = (
        [v for p, v in content.leaves(args) if isinstance(v, str) and p.rsplit(".", 1)[-1] in named]
        if args
        else []
    )
    text = content.text_of(step.output)
    folded = text.casefold()
    answer = _codes(text)
    # A code written inside a compound one names it too (``M1`` in ``RT-Q12-M1``).
    answer += [p for c in answer if "-" in c for p in _codes(c.replace("-", " "))]
    # Codes given to be left out still make the request a filter over their series (``near=R-104``,
    # ``exclude=[R-101]``: alternatives, which name neither), as on main (review rev57f).
    given = _codes(" ".join(v for _, v in content.leaves(args) if isinstance(v, str))) if args is not None else codes
    stems = [c[: m.start()] for c in given if (m := _LAST_RUN.search(c)) is not None]
    for code in codes:
        last = _LAST_RUN.search(code)
        if (
            last is None
            or stems.count(code[: last.start()]) != 1
            or _within(code, folded)
            or any(code in v for v in shared)
        ):
            continue  # (several codes of one series asked: a filter over the series, not one record)
        other = _sibling_code(code, answer)
        if other is not None:
            yield Evidence(
                step.step_id,
                SERIES,
                f"was asked about {code!r}; its answer never names it and names {other!r} instead: another record?",
                "request-series",
            )
            return


# -- records under another's key, totals that no longer add up -------------------------


@reading(Reads(skips_kinds=frozenset({"llm"}), statuses=OK))
def misaligned(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A mapping of records keyed by ids where a record names another key of the mapping as its own (the
    records shifted by one against their keys: an off-by-one zip)."""
    if step.kind == "llm" or step.status != "ok":
        return
    out = _answer(step, ctx)
    if out is None or len(out) < 2 or not all(isinstance(v, Mapping) for v in out.values()):
        return
    keys = {str(k) for k in out}
    wrong = []
    for k, rec in out.items():
        named = [str(v) for v in rec.values() if isinstance(v, str) and str(v) in keys]
        if named and str(k) not in named:
            wrong.append((str(k), named[0]))
    if len(wrong) >= 2:
        (k, other), *_ = wrong
        yield Evidence(
            step.step_id,
            MISALIGNED,
            f"its record under {k!r} is {other!r}'s ({len(wrong)} of {len(out)} records sit under another's "
            "key): the records are shifted against their keys",
            "request-misaligned",
        )


def _numbers(value: Any) -> dict[str, float]:
    m = _mapping(value)
    if m is None:
        return {}
    return {str(k): float(v) for k, v in m.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


@reading(Reads(skips_kinds=frozenset({"llm"}), statuses=OK))
def broken_sum(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """Fields that added up in the step's input (``scored + remaining == total``) and no longer do in its
    output, under the same names: an update that moved one and not the other."""
    if step.kind == "llm" or step.status != "ok":
        return
    ins, outs = _numbers(step.input), _numbers(step.output)
    common = sorted(set(ins) & set(outs))
    if len(common) < 3 or len(common) > 12:
        return
    for total in common:
        parts = [f for f in common if f != total]
        for i, a in enumerate(parts):
            for b in parts[i + 1 :]:
                if ins[a] + ins[b] == ins[total] and ins[total] and outs[a] + outs[b] != outs[total]:
                    yield Evidence(
                        step.step_id,
                        BROKEN_SUM,
                        f"was given {a} + {b} = {total} ({ins[a]:g} + {ins[b]:g} = {ins[total]:g}) but answered "
                        f"{outs[a]:g} + {outs[b]:g} against {outs[total]:g}",
                        "request-sum",
                    )
                    return


REQUEST_DIAGNOSERS = {
    "request-count": request_count,
    "request-more": request_more,
    "request-record": request_record,
    "request-flag": request_flag,
    "request-code": request_code,
    "request-misaligned": misaligned,
    "request-sum": broken_sum,
    "request-variant": request_variant,
    "request-series": request_series,
}
"""The request diagnosers by name (registered in `trajdebug.analysis.diagnosers.BUILTIN_DIAGNOSERS`)."""

__all__ = [
    "REQUEST_DIAGNOSERS", "broken_sum", "misaligned", "request_code", "request_count", "request_flag",
    "request_more", "request_record", "request_series", "request_variant",
]
