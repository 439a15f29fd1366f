"""Diagnosers of data flow: values lost on the way, parse steps, state writes, retries.

Plain callables ``(step, ctx) -> Iterable[Evidence]`` like those of
`trajdebug.analysis.diagnosers._steps` (which registers them).  They compare what a
step was given with what it passed on: an omission leaves no trace in a
dynamic slice (Agrawal et al. 1993 on relevant slicing), so the value a
failure misses is traced back to the step that received it and did not
pass it on.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis import _numerals as numerals
from trajdebug.analysis._selection import selections, unpicked
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._parsed_lines import (
    failure_names,
    left_out_field,
    reads_answer,
    series_cut,
    text_dropped,
)
from trajdebug.analysis.diagnosers._reads import ERROR, OK, Reads, reading
from trajdebug.analysis.diagnosers._write_losses import (
    _INDEX,
    _NUMERAL,
    _converted_in_place,
    _kept_field_lost,
    _lost,
    _needed_later,
    _overwritten,
    _with_json_read,
)
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.analysis.lineage import PROTOCOL_FIELDS
from trajdebug.core.mentions import date_year, same_year
from trajdebug.core.model import Dependency, Step
from trajdebug.core.values import atoms


def _values_of(
    value: Any, *, content_only: bool = False, lexicon: Lexicon = ENGLISH, envelope: frozenset[str] = frozenset()
) -> list[Any]:
    """The telling scalar values inside a value (strings of 2+ characters, numbers outside -10..10).

    ``content_only`` leaves out naming fields (a tool or agent name, an id, a type); ``envelope``, the
    fields of that last name (a message's ``role``).
    """
    out: list[Any] = []
    seen: set[str] = set()
    for path, v in content.leaves(value):
        if content_only and lexicon.naming_path.search(path):
            continue
        if envelope and path.rsplit(".", 1)[-1] in envelope:
            continue
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, str):
            if not 2 <= len(v.strip()) <= 200:
                continue
        elif not isinstance(v, (int, float)) or numerals.norm_number(repr(v)) is None:
            continue
        k = repr(v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


@reading(Reads(skips_statuses=ERROR))
def parse_dropped(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A parse step that dropped items, fields or values of its input."""
    if step.status == "error":
        return
    if step.kind != "parse":
        # A code step that reads a model's answer may select from it as it pleases (a node keeping the three
        # fields it needs): only a record copied whole but for one field is judged.
        # Leaving out one field is what a node does with a model's `reasoning`: it is a loss only when the
        # failure speaks of that field or its value.
        left = left_out_field(_with_json_read(step.input), step.output) if reads_answer(step, ctx) else None
        if left is not None and failure_names(ctx, left[0], left[1]):
            yield Evidence(step.step_id, 0.5, left[2], "parse-dropped")
        return
    src: Any = step.input
    if isinstance(src, Mapping) and len(src) == 1:
        src = next(iter(src.values()))
    src = _with_json_read(src)
    if src is None:
        return
    out = step.output
    if content.is_empty(out) and not content.is_empty(src):
        yield Evidence(step.step_id, 0.6, "parsed a non-empty input into nothing", "parse-dropped")
        return
    lin, lout = content.largest_list(src), content.largest_list(out)
    if lin is not None and lout is not None and len(lout) < len(lin):
        yield Evidence(
            step.step_id, 0.55, f"dropped {len(lin) - len(lout)} of {len(lin)} items", "parse-dropped"
        )
        return
    if isinstance(src, str) and isinstance(out, (Mapping, list)):
        # A text read into a record: a series of numbers it lists, of which the record kept some.
        named_keys = ctx.memo("failure-atom-keys", lambda: {a.key for f in ctx.failures for a in atoms(f.message)})
        yield from series_cut(step, src, out, named_keys, ctx.lexicon)
        yield from _extra_field_left(step, src, ctx)
    if isinstance(src, (Mapping, list)) and isinstance(out, (Mapping, list)):
        # (A parse step returning one scalar extracts a field: it keeps what it was asked for.)
        # A step that picked some records of a list it was given (one sample's rows) is judged
        # on those: the other records were not its to pass on.
        src = _consulted_left_out(unpicked(src, selections(src, out)), step, ctx)
        values = _values_of(src, content_only=True)
        lost = _converted_in_place(_lost(values, ctx.text(step.step_id)), src, out)
        # A text of several lines is what the step parses, not a value to pass on whole: it is
        # judged line by line on the words its records left behind (`text_dropped`).
        texts = [v for v in lost if isinstance(v, str) and _is_text(v)]
        if texts:
            yield from text_dropped(step, ctx, texts, out)
            values = [v for v in values if v not in texts]
            lost = [v for v in lost if v not in texts]
        named = ctx.memo("failure-atom-keys", lambda: {a.key for f in ctx.failures for a in atoms(f.message)})
        # A sentence its numbers were read out of ("6cm strips: 36 per quilt") was parsed, unless a value of
        # it the failure names is not among the parsed values (a request whose named quantity was lost).
        kept = {a.key for a in atoms(out)}
        lines = [v for v in values if isinstance(v, str)]
        read = [
            v for v in lost
            if isinstance(v, str)
            and not any(a.key in named and a.key not in kept for a in atoms(v))
            and (_split_read(v, ctx.text(step.step_id), lines) or content.read_out(v, out))
        ]
        values, lost = [v for v in values if v not in read], [v for v in lost if v not in read]
        yield from _lost_findings(step.step_id, values, lost, named, out)


def _record_parts(value: Any) -> list[str] | None:
    """The fields of a delimited record written on one line (``SKU-220|Office chair|1|249.00``, three or more,
    `_FIELD_SEPARATOR`), as a parse step is given it (alone or as its one argument); None for any other value."""
    if isinstance(value, Mapping) and len(value) == 1:
        value = next(iter(value.values()))
    if not isinstance(value, str) or "\n" in value.strip() or len(value) > 2000:
        return None
    parts = [p.strip() for p in _FIELD_SEPARATOR.split(value.strip())]
    return [p for p in parts if p] if len(parts) >= 3 else None


def _kept_width(step: Step, ctx: DiagnoseContext) -> int | None:
    """The number of fields of the delimited record a call read, when it kept every one (None otherwise)."""
    theirs = _record_parts(_with_json_read(step.input))
    if theirs is None or _converted_in_place(_lost(theirs, ctx.text(step.step_id)), theirs, step.output):
        return None
    return len(theirs)


def _extra_field_left(step: Step, src: str, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A delimited record read into a record that left out a field, where it has more fields than any record
    the step's other calls read, and each of those kept every field of its own: the parser reads a fixed set
    of columns, and this record carried one more (``...|EUR|disc=10%``), which it dropped unread."""
    mine = _record_parts(src)
    if mine is None:
        return
    lost = _converted_in_place(_lost(mine, ctx.text(step.step_id)), mine, step.output)
    # (As the other findings of a field left out: a loss only when the failure speaks of the field, by a word
    # of its name (``disc`` of ``disc=10%``) or its value; a parser rightly leaving a note column unread is not.)
    lost = [v for v in lost if failure_names(ctx, *_part_field(v))]
    if not lost:
        return
    # (Per step name, read once: each call's record width, None for a call given no such record or that
    # dropped a field of its own, which reads some columns.)
    calls: dict[str, int | None] = ctx.memo(
        f"record-widths:{step.kind}:{step.name}",
        lambda: {
            s.step_id: _kept_width(s, ctx)
            for s in ctx.run.steps
            if s.name == step.name and s.kind == step.kind and s.status == "ok"
        },
    )
    widths = [w for sid, w in calls.items() if sid != step.step_id]
    if len(widths) < 2 or any(w is None for w in widths) or len(mine) <= max(w or 0 for w in widths):
        return
    yield Evidence(
        step.step_id,
        0.45,
        f"dropped {lost[0]!r}, a field of the record it read ({len(mine)} fields), where its {len(widths)} other "
        f"calls read records of at most {max(w or 0 for w in widths)} fields and kept every one",
        "parse-dropped",
    )


_PART_LABEL = re.compile(r"\s*([^\W\d][\w ]{0,30}?)\s*[=:]\s*(\S.*)")
"""A delimited record's part written as a label and its value (``disc=10%``, ``note: gift``)."""


def _part_field(part: str) -> tuple[str, str]:
    """A delimited record's part as a field and its value (no field for a bare value)."""
    m = _PART_LABEL.fullmatch(part)
    return (m.group(1), m.group(2)) if m else ("", part)


def _lost_findings(sid: str, values: list[Any], lost: list[Any], named: set[str], out: Any) -> Iterable[Evidence]:
    """What a parse step lost of the ``values`` of its input: the ``lost`` ones, less those it wrote in another
    form (a date re-written: `_converted`), which it converted, not dropped.  A date that reads either way round
    (``03/04/2025``) converted into the one the failure names is said so."""
    converted = _converted(lost, out)
    lost = [v for v in lost if not any(v is c for c, _ in converted)]
    either = [(v, o) for v, o in converted if _either_way(str(v)) and any(a.key in named for a in atoms(o))]
    if either:
        v, o = either[0]
        yield Evidence(
            sid,
            0.45,
            f"read {v!r}, a date whose day and month may be either way round, as {o!r}, which the failure names",
            "parse-dropped",
        )
    if lost:
        # Selecting some values is what many parse steps are for: losing values says little unless the failure names one.
        missed = [v for v in lost if len(str(v)) <= 80 and any(a.key in named for a in atoms(v))]
        frac = len(lost) / len(values)
        shown = ", ".join(repr(v)[:30] for v in (missed or lost)[:3])
        yield Evidence(
            sid,
            0.6 if missed else 0.1 + 0.2 * frac,
            f"dropped {len(lost)} of the {len(values)} values of its input (e.g. {shown})"
            + (", which the failure names" if missed else ""),
            "parse-dropped",
        )
    elif values and not either and all(date_year(str(v)) == date_year(o) for v, o in converted):
        # (A date matched by month and day alone, one side naming no year, was not shown kept.)
        yield Evidence(sid, 0.0, "kept every value of its input", "parse-dropped", sound=True)


_TWO_NUMBERS = re.compile(r"\s*(\d{1,2})([/.-])(\d{1,2})\2\d{2,4}\s*")
"""A date written as two numbers and a year (``03/04/2025``)."""


def _either_way(raw: str) -> bool:
    """Whether a date reads as two different days, day first or month first: two different numbers up to
    12 and a year (``03/04/2025``: the 3rd of April or March the 4th)."""
    m = _TWO_NUMBERS.fullmatch(raw)
    return m is not None and m.group(1).lstrip("0") != m.group(3).lstrip("0") and all(
        1 <= int(m.group(i)) <= 12 for i in (1, 3)
    )


def _converted(lost: list[Any], out: Any) -> list[tuple[Any, str]]:
    """The ``lost`` values that are a date the output holds written otherwise (``03/04/2025`` as
    ``2025-03-04``: the same day by `trajdebug.core.values` keys, in the same year when both name one), each
    with its form in the output.  Keys name no year: a start of 2024-06-15 is not the 2025-06-15 written for
    it (a year taken from the end date), which dropped it."""
    written: dict[str, list[str]] = {}
    for a in atoms(out):
        if a.kind == "date":
            written.setdefault(a.key, []).append(a.raw)
    found = []
    for v in lost:
        mine = atoms(v) if isinstance(v, str) else []
        if len(mine) == 1 and mine[0].kind == "date" and mine[0].raw.strip() == v.strip():
            # (A date of two numbers is keyed month first; written day first, "25/04/2025", it is read both ways.)
            m = _TWO_NUMBERS.fullmatch(v)
            keys = [mine[0].key] + ([f"d:{int(m.group(3)):02d}-{int(m.group(1)):02d}"] if m else [])
            same = (o for k in keys for o in written.get(k, ()) if same_year(v, o))
            o = next(same, None)
            if o is not None:
                found.append((v, o))
    return found


_FIELD_SEPARATOR = re.compile(r"\s*[;|\t]\s*")
"""What separates the fields of a delimited record written on one line (``7;Ada Brook``), commas left out (a
comma also lists the items of one value)."""


def _split_read(value: str, out_text: str, lines: Sequence[str] = ()) -> bool:
    """Whether a delimited record (``7;Ada Brook``) was read into fields: a part of it that is its own (no bare
    number, and no part of another of the ``lines`` beside it: a status every line shares says nothing of this
    one) shows, as whole words, in the (lower-case) output.  A parser that keeps a line's name and leaves its row
    number kept the line."""
    parts = [p for p in _FIELD_SEPARATOR.split(value.strip().lower()) if p]
    shared = {q for x in lines if x != value for q in _FIELD_SEPARATOR.split(x.strip().lower())}
    return len(parts) >= 2 and any(
        len(p) >= 3
        and not _NUMERAL.fullmatch(p)
        and p not in shared
        and re.search(r"(?<!\w)" + re.escape(p) + r"(?!\w)", out_text) is not None
        for p in parts
    )


def _consulted_left_out(src: Any, step: Step, ctx: DiagnoseContext) -> Any:
    """The parts of a parse step's input it parsed: given a text of lines and, beside it, a record or a list
    none of whose values its output holds (the catalogue record of the map whose damage note it parsed), it
    consulted that part, not parsed it.  A part some of whose values came through, and a scalar, stay; so does
    a part a value of which a failure's message writes and no later step was handed: the failure says it was
    needed further on and the parse was its only way there (an address lost beside a note, the refusal quoting
    its postcode; a record whose id and material later steps were handed by another path was consulted)."""
    if not isinstance(src, Mapping) or not any(isinstance(v, str) and _is_text(v) for v in src.values()):
        return src
    out_text = ctx.text(step.step_id)
    return {
        k: v
        for k, v in src.items()
        if not isinstance(v, (Mapping, list))
        or not (vs := _values_of(v, content_only=True))
        or len(_lost(vs, out_text)) < len(vs)
        or _needed_on(vs, step, ctx)
    }


def _needed_on(values: list[Any], step: Step, ctx: DiagnoseContext) -> bool:
    """Whether a failure's message writes one of ``values`` (as a word of its own) that no step after ``step``
    was handed."""
    said = [f.message.casefold() for f in ctx.failures]
    named = [t for x in values if len(t := str(x).casefold()) >= 3 and any(content.has_word(m, t) for m in said)]
    if not named:
        return False
    pos = next(i for i, s in enumerate(ctx.run.steps) if s.step_id == step.step_id)
    later = [ctx.input_text(s) for s in ctx.run.steps[pos + 1 :]]
    return any(all(t not in text for text in later) for t in named)


def _is_text(v: str) -> bool:
    """Whether a string is a text of several lines (a model's answer a parse step reads), not one value."""
    return len([ln for ln in v.splitlines() if ln.strip()]) >= 3


def _failed_pre(step: Step) -> list[Mapping[str, Any]]:
    checks = step.attributes.get("checks")
    if not isinstance(checks, list):
        return []
    return [
        c for c in checks if isinstance(c, Mapping) and c.get("when") == "pre" and c.get("passed") is False
    ]


@reading(Reads(state=True))
def state_write(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A state write that its readers found invalid: a rejecting reader, or values given to the writer that no reader saw."""
    if not ctx.has_state_edges():
        return
    edges = [(cid, d) for cid, d in ctx.graph.children(step.step_id) if d.kind == "state"]
    readers = [ctx.step(cid) for cid, _ in edges]
    if not readers or _channel_writer(step, [d for _, d in edges]):
        return
    for r in readers:
        pre = _failed_pre(r)
        if pre:
            yield Evidence(
                step.step_id,
                0.55,
                f"{r.name} rejected the state it wrote (pre-condition {pre[0].get('name', '?')})",
                "state-write",
            )
            return
    # Values, not prose: a writer that derives a figure from a sentence keeps no word of it.  A writer
    # handed a model's message stores what the message says: its JSON content read as the values it
    # encodes, its envelope (who spoke) no value to store.
    given = _with_json_read(content.without_markers(step.input))
    values = [
        v
        for v in _values_of(given, envelope=PROTOCOL_FIELDS)
        if not (isinstance(v, str) and (len(v) > 60 or len(v.split()) > 6))
    ]
    if not values:
        return
    written = step.attributes.get("state_values")
    if isinstance(written, Mapping) and written:
        if all(content.is_empty(v) for v in written.values()) and not content.is_empty(step.output):
            # An empty container written by a step that answered with what it stored (a memory
            # created with `setdefault`, then filled in place): the record caught it before it
            # was filled, and says nothing of what the step stored.
            return
        if not _lost_as_siblings(step, ctx):
            yield from _stored_values(step, values, written, ctx)
        return
    # No record of what was written: what its readers were given or got back
    # (a reader of a database returns what was stored).
    seen = "\n".join(ctx.input_text(r) + "\n" + ctx.text(r.step_id) for r in readers)
    lost = _lost(values, seen)
    if lost:
        frac = len(lost) / len(values)
        shown = ", ".join(repr(v)[:30] for v in lost[:3])
        yield Evidence(
            step.step_id,
            0.2 + 0.4 * frac,
            f"the state it wrote lost {len(lost)} of the {len(values)} values it was given (e.g. {shown}); its readers never saw them",
            "state-write",
        )
    else:
        yield Evidence(
            step.step_id, 0.0, "its readers saw every value it was given", "state-write", sound=True
        )


def _channel_writer(step: Step, edges: list[Dependency]) -> bool:
    """Whether every state edge out of a step is a graph's channel: declared, keyed by the state key read, from a
    writer that recorded neither the values it wrote nor a resource it wrote to (a graph node's update, or the
    model call whose answer the node wrote).  Such a writer derives what it writes (an answer, a parse, an
    update of one key of many) and each reader takes one key of it: what it was given and did not write is
    no loss, unlike a recorded store's."""
    if step.attributes.get("state_values") or step.attributes.get("state_writes"):
        return False
    return all(d.origin == "declared" and d.key for d in edges)


def _lost_paths(step: Step) -> frozenset[str] | None:
    """The paths of a writer's input (list items as one) whose values are not in what it wrote
    (``attributes["state_values"]``); None when no write was recorded."""
    written = step.attributes.get("state_values")
    if not isinstance(written, Mapping) or not written:
        return None
    text = content.text_of(written).lower()
    return frozenset(
        _INDEX.sub("[]", path)
        for path, v in content.leaves(_with_json_read(content.without_markers(step.input)))
        if path.rsplit(".", 1)[-1] not in PROTOCOL_FIELDS and not (isinstance(v, str) and (len(v) > 60 or len(v.split()) > 6))
        and _values_of(v) and _lost([v], text)
    )


def _lost_as_siblings(step: Step, ctx: DiagnoseContext) -> bool:
    """Whether the writer's other calls in the run (two at least, half of them at least) left out the values of
    every input field this call left out: a writer that stores a summary of what it is given (a closing reading,
    not the notes it was measured on) leaves the same fields behind on every call, by design; a call that leaves
    out a field its other calls keep (the corrected reading) is the one that stored the wrong thing.  Each call's
    lost paths are read once per run and counted by set (a call compared with each distinct set, not each call)."""
    calls: dict[str, Step] = ctx.memo("state-writer-calls", lambda: _calls(ctx.run.steps)).get(key := (step.name, step.kind), {})
    if len(calls) - (inside := step.step_id in calls) < 2:  # (step ids are unique within a run)
        return False
    sets: dict[tuple[str, str], Any] = ctx.memo("state-lost-sets", dict)  # (paths by call, calls by paths)
    if key not in sets:
        lost = {sid: _lost_paths(s) for sid, s in calls.items()}
        sets[key] = (lost, Counter(p for p in lost.values() if p is not None))
    lost, counts = sets[key]
    mine: frozenset[str] | None = lost[step.step_id] if inside else _lost_paths(step)
    if not mine:
        return False
    theirs = sum(counts.values()) - inside  # a call's own set is counted among its writer's
    return bool(theirs >= 2 and 2 * (sum(n for p, n in counts.items() if mine <= p) - inside) >= theirs)


def _calls(steps: Iterable[Step]) -> dict[tuple[str, str], dict[str, Step]]:
    out: dict[tuple[str, str], dict[str, Step]] = {}
    for s in steps:
        if isinstance(s.attributes.get("state_values"), Mapping):
            out.setdefault((s.name, s.kind), {})[s.step_id] = s
    return out


def _stored_values(step: Step, values: list[Any], written: Mapping[str, Any], ctx: DiagnoseContext) -> Iterable[Evidence]:
    """Compare what a writer was given with what it wrote (``attributes["state_values"]``).

    A writer that stores what it was given (at least three values written, three
    quarters of them copied from its input) should not lose what the run needed of it;
    one that derives new values (an id, a severity) may rightly leave its input behind.
    A storing writer that kept a few fields of a record, dropping the others whole, every
    value of which later steps were handed anyway (a survey's address and faces, read from
    the survey itself), made a projection: it is said as one that leaves values out, not as
    one that lost them.
    """
    lost = _lost(values, content.text_of(written).lower())
    if not lost:
        yield Evidence(step.step_id, 0.0, "it stored every value it was given", "state-write", sound=True)
        return
    if step.kind == "condition" and _selects(step.input, written):
        # A check that writes some of the records it was given (the ones it flags), or none,
        # chose; a step declared a state writer (kind `state`) stores, and loses what it drops.
        return
    # (Read once something was lost: most writers store all they are given.)
    stored = _values_of(written)
    src = content.unmarked_text(step.input).lower()
    copied = len(stored) - len(_lost(stored, src))
    storing = len(stored) >= 3 and copied >= 0.75 * len(stored)
    frac = len(lost) / len(values)
    shown = ", ".join(repr(v)[:30] for v in lost[:3])
    swap = _overwritten(lost, step, written, ctx)
    if swap is not None:
        key, was, wrote = swap
        yield Evidence(
            step.step_id,
            0.45,
            f"it wrote {key}={wrote!r} where it was given {key}={was!r}, which the failure names",
            "state-write",
        )
    elif storing and (_kept_field_lost(lost, step, written) or _needed_later(lost, step, ctx)):
        yield Evidence(
            step.step_id,
            0.2 + 0.4 * frac,
            f"it stores what it is given, but {len(lost)} of the {len(values)} values it was given are not in what it wrote (e.g. {shown})",
            "state-write",
        )
    else:
        yield Evidence(
            step.step_id,
            0.05 + 0.1 * frac,
            f"what it wrote leaves out {len(lost)} of the {len(values)} values it was given (e.g. {shown})",
            "state-write",
        )


def _selects(given: Any, written: Mapping[str, Any]) -> bool:
    """Whether what a writer wrote is a selection of the records it was given: some of them, or none.

    A check that writes the items it flags (or an empty list: nothing flagged)
    leaves the other items out by design.  Every written value must come from
    the records it picked (at least half of a picked record's values written),
    and at least one record left out; a writer that wrote anything else stores.
    """
    rows = _records(given)
    stored = _values_of(written)
    if rows is None:
        return False
    if not stored:
        return True
    text = content.text_of(written).lower()
    picked: list[Mapping[str, Any]] = []
    for r in rows:
        vals = _values_of(r)
        if vals and len(vals) - len(_lost(vals, text)) >= max(1.0, len(vals) / 2):
            picked.append(r)
    if not 0 < len(picked) < len(rows):
        return False
    return not _lost(stored, content.text_of(picked).lower())


def _records(value: Any, depth: int = 0) -> list[Mapping[str, Any]] | None:
    """The first list of two or more records (mappings) in a value, two levels down at most."""
    if isinstance(value, list):
        return value if len(value) >= 2 and all(isinstance(r, Mapping) for r in value) else None
    if isinstance(value, Mapping) and depth < 2:
        for v in value.values():
            rows = _records(v, depth + 1)
            if rows is not None:
                return rows
    return None


@reading(Reads(statuses=OK, retries=True))
def retry_divergence(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A retry whose successful attempt returned different data from an earlier attempt."""
    if step.retry_of is None or step.status != "ok":
        return
    prev_id: str | None = step.retry_of
    hops = 0
    while prev_id is not None and prev_id in ctx.graph.steps and hops < 20:
        prev = ctx.step(prev_id)
        if prev.output is not None and not content.is_empty(prev.output) and prev.output != step.output:
            yield Evidence(
                step.step_id,
                0.4,
                f"attempt {step.attempt} returned different data from attempt {prev.attempt}: the result is not stable",
                "retry-divergence",
            )
            return
        prev_id, hops = prev.retry_of, hops + 1


__all__ = [
    "parse_dropped",
    "retry_divergence",
    "state_write",
]
