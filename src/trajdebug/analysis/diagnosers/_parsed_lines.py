"""Parsers of a model's answer: a code step that reads it into a record, and the lines of a text a parse step read.

Helpers of `trajdebug.analysis.diagnosers._dataflow.parse_dropped`: what a parser left out of a record it
copied, a word it cut from a line, a line it lost whole.  Each finding is weighed by whether the failure
names what was lost (its whole words, function words left out), since leaving out what no later step needed
(a model's reasoning, a free note) is what parsers are for.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from itertools import pairwise
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.model import Step
from trajdebug.core.values import atoms


def left_out_field(src: Any, out: Any) -> tuple[str, Any, str] | None:
    """A field a parser left out of the one record it copied: the record it was given (or the record inside the
    message it was given) and its output share every field but one, of three or more, which held a value.
    Picking some fields is what a parser may be for; copying all of them but one is losing that one (a flag, a
    value no check counts among the values it lost)."""
    if not isinstance(out, Mapping):
        return None
    records = [src] + (list(src.values()) if isinstance(src, Mapping) else [])
    records = [r for r in records if isinstance(r, Mapping)]
    if not records:
        return None
    rec = max(records, key=lambda r: sum(k in out for k in r))
    kept = [k for k in rec if k in out]
    missing = [k for k in rec if k not in out and not content.is_empty(rec[k])]
    if len(missing) != 1 or len(kept) < 3 or len(out) != len(kept):
        return None
    field, value = missing[0], rec[missing[0]]
    return field, value, f"left out the field {field!r} ({value!r}) of the record it copied, keeping its other {len(kept)}"


def _same_stem(word: str, said: frozenset[str]) -> bool:
    """Whether a word, or one of its forms, is among a failure's words: the same word, or one of five letters
    or more that begins the other (a field ``accessible`` the failure calls ``access``)."""
    if word in said:
        return True
    return any(min(len(w), len(word)) >= 5 and (w.startswith(word) or word.startswith(w)) for w in said)


def failure_names(ctx: DiagnoseContext, field: str, value: Any) -> bool:
    """Whether a failure speaks of a field (a word of its name) or of its value (a value it names)."""
    said = ctx.failure_words()
    if any(_same_stem(ctx.lexicon.singular(w), said) for w in _LABEL_WORD.findall(field.lower())):
        return True
    # (A free text of several words, a model's `reasoning`, is no one value a later step needed: a number
    # it mentions that the failure names says nothing of the field left out.)
    if isinstance(value, bool) or value is None or not isinstance(value, (str, int, float)) or len(str(value).split()) > 3:
        return False
    named = ctx.memo("failure-atom-keys", lambda: {a.key for f in ctx.failures for a in atoms(f.message)})
    return any(a.key in named for a in atoms(value))


def reads_answer(step: Step, ctx: DiagnoseContext) -> bool:
    """Whether a plain code step is a parser: with no steps inside, it runs right after a model call and is
    handed that call's answer text (a graph node's helper that reads the model's JSON into a record).  Not
    recorded as ``parse``, it is one all the same, and what it leaves out of the answer was lost there."""
    if step.kind != "other" or not isinstance(step.output, (Mapping, list)):
        return False
    before = ctx.memo("step-before-and-parents", lambda: _before_and_parents(ctx))
    prev_id = before[0].get(step.step_id)
    if prev_id is None or step.step_id in before[1]:
        return False
    prev = ctx.graph.steps[prev_id]
    if prev.kind != "llm":
        return False
    answers = {v for _, v in content.leaves(prev.output) if isinstance(v, str) and len(v) >= 20}
    return any(isinstance(v, str) and v in answers for _, v in content.leaves(step.input))


def _before_and_parents(ctx: DiagnoseContext) -> tuple[dict[str, str], set[str]]:
    """Each step's predecessor by start time (run order among equal starts: a source may write steps as they
    end), and the steps that enclose others."""
    steps = sorted(ctx.run.steps, key=lambda s: s.start_ns)  # (stable: unrecorded starts keep run order)
    return {b.step_id: a.step_id for a, b in pairwise(steps)}, {s.parent_id for s in steps if s.parent_id}


_WORD = re.compile(r"[^\W\d_]\w*")
"""A word of a line's residue (digits alone are left out: a number the parse normalized is no loss)."""

_UNIT_WORD = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?\s*([^\W\d_]\w*)")
"""The word written right after a number (``14 spots``, ``9 cm``, but also ``berth 17 North``): its unit, when
`_units_left_out` finds it one."""

_LABEL_WORD = re.compile(r"[^\W\d_]+")
"""A word of an output field's path (``previous_vehicle`` is two: a label may be written ``previous vehicle:``)."""


def text_dropped(step: Step, ctx: DiagnoseContext, texts: list[str], out: Any) -> Iterable[Evidence]:
    """Words a parse of a text of lines left behind: in a line that gave a record, the words no output
    value holds that are not the line format's own.

    A parser reading lines of one format (``home vs away | day time``) leaves the format's words
    (``vs``) in every line; a word left in one line only (a team's ``II``) was part of a value it
    cut.  Lines giving no value (a heading) are skipped; fewer than three record lines tell no format.
    """
    found = sorted(
        {str(v).lower() for _, v in content.leaves(out) if isinstance(v, (str, int, float)) and not isinstance(v, bool)},
        key=len,
        reverse=True,
    )
    found = [v for v in found if len(v) >= 2]
    # A line's label (``zone:`` before its value) that names a field of the output became that field's name:
    # the parser moved it, it did not cut it from a value.  Each label is written on one line only, so the
    # spread test below would take it for a cut word.
    labels = {w for path, _ in content.leaves(out) for w in _LABEL_WORD.findall(path.lower())}
    named = " ".join(f.message.lower() for f in ctx.failures)
    rows: list[tuple[str, list[str], bool]] = []
    for text in texts:
        for line in text.splitlines():
            rest, hits = line.lower(), []
            for v in found:
                if v in rest:
                    hits.append(v)
                    rest = rest.replace(v, "\x00")
            if hits:
                words = [w for w in _WORD.findall(rest) if w not in labels]
                rows.append((line, words, any(len(h) >= 3 and h in named for h in hits)))
    rows = _units_left_out(rows, ctx.lexicon)
    if (gone := _lost_label(texts, (labels, out), ctx.failure_words(), ctx.lexicon)) is not None:
        yield Evidence(step.step_id, 0.6, f"dropped the line {gone.strip()[:60]!r} it parsed, whose label the failure names", "parse-dropped")
        return
    if len(rows) < 3:
        return
    lost = _lost_lines(texts, rows, ctx.failure_words(), (labels, out), ctx.lexicon)
    if lost is not None and lost[1] >= 0.6:
        yield Evidence(step.step_id, lost[1], lost[0], "parse-dropped")
        return
    spread: dict[str, int] = {}
    for _, words, _ in rows:
        for w in set(words):
            spread[w] = spread.get(w, 0) + 1
    cut = [(line, w, hit) for line, words, hit in rows for w in words if spread[w] * 2 < len(rows)]
    if not cut:
        if lost is not None:
            yield Evidence(step.step_id, lost[1], lost[0], "parse-dropped")
            return
        yield Evidence(step.step_id, 0.0, "kept every value of the lines it parsed", "parse-dropped", sound=True)
        return
    near = [c for c in cut if c[2]]
    line, word, _ = (near or cut)[0]
    yield Evidence(
        step.step_id,
        0.6 if near else 0.1 + 0.2 * min(1.0, len(cut) / len(rows)),
        f"dropped {word!r} from the line {line.strip()[:60]!r} it parsed"
        + (", a line whose values the failure names" if near else ""),
        "parse-dropped",
    )


def _units_left_out(rows: list[tuple[str, list[str], bool]], lexicon: Lexicon) -> list[tuple[str, list[str], bool]]:
    """The record lines' words without the units of their numbers: a word right after a number ("14 spots"
    parsed as 14) that follows a number in most record lines (the format's unit) or that the lexicon knows as a
    measure or a span of time (``cm``, ``days``) was read with its number, no cut of a value.  A word after a
    number in one line only (``berth 17 North``) may be the part of the value the parser cut, and stays."""
    after = [set(_UNIT_WORD.findall(line.lower())) for line, _, _ in rows]
    spread = Counter(w for ws in after for w in ws)
    units = {
        w
        for w, n in spread.items()
        if n * 2 > len(rows) or w in lexicon.measure_suffixes or lexicon.duration_value.match(f"1 {w}")
    }
    return [(line, [w for w in words if w not in units & ws], hit) for (line, words, hit), ws in zip(rows, after)]


_LABELLED = re.compile(r"^\s*[^\W\d_][\w ]{0,30}?\s*([:=])\s*(\S.*)$")
"""A line of the ``label: value`` (or ``label=value``) form, its separator and its value."""


def _lost_label(texts: list[str], found: tuple[set[str], Any], said: frozenset[str], lexicon: Lexicon) -> str | None:
    """A ``label: value`` line whose label became no field and whose value the output does not hold, when three
    or more lines' labels did become fields and the failure names its label ("scorecard missing glaze" for a
    lost ``glaze: 4,5``): a parser that turns each line's label into a field lost that line whole, whatever
    its value looks like (digits alone give `text_dropped`'s word test nothing to read)."""
    labels, out = found
    lines = [(line, m) for text in texts for line in text.splitlines() if (m := _LABELLED.match(line))]
    words = [_LABEL_WORD.findall(line[: m.start(1)].lower()) for line, m in lines]
    if sum(bool(ws) and all(w in labels for w in ws) for ws in words) < 3:
        return None
    return next(
        (
            line
            for (line, m), ws in zip(lines, words)
            if ws
            and not all(w in labels for w in ws)
            and any(lexicon.singular(w) in said or w in said for w in ws)
            and not _value_kept(m.group(2), out, lexicon)
        ),
        None,
    )


def _value_kept(value: str, out: Any, lexicon: Lexicon) -> bool:
    """Whether the output holds a line's value: as written, read as a type (`_kept_leniently`), or, for a run
    of several numbers (``7,5,8``), as one list of those numbers in that order (the numbers alone are found
    in nearly any table of scores)."""
    numbers = [int(d) for d in _DIGITS.findall(value)]
    if len(numbers) < 2:
        kept = {str(v).strip().lower() for _, v in content.leaves(out) if v is not None}
        return value.strip().lower() in kept or _kept_leniently(value, out, lexicon)
    stack: list[Any] = [out]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            stack.extend(node.values())
        elif isinstance(node, list):
            scalars = [x for x in node if isinstance(x, (str, int, float)) and not isinstance(x, bool)]
            if len(scalars) == len(node) and [int(d) for x in scalars for d in _DIGITS.findall(str(x))] == numbers:
                return True
            stack.extend(node)
    return False


def _lost_lines(
    texts: list[str], rows: list[tuple[str, list[str], bool]], said: frozenset[str], found: tuple[set[str], Any], lexicon: Lexicon
) -> tuple[str, float] | None:
    """A line of the record lines' own ``label: value`` form that gave no value at all (``carpet=wool blend``
    beside ``date=2026-12-14``, the fibre answered as a default): the parser lost the whole line, which the
    words left in lines that gave a value cannot show.  Strong when the failure names a word of its value
    (a whole word, function words left out).  A line whose label names an output field was read into that
    field, and one whose value the output holds under a lenient reading (`_kept_leniently`) was normalized:
    neither is lost."""
    seps = [m.group(1) for line, _, _ in rows if (m := _LABELLED.match(line))]
    if len(seps) < 3:
        return None
    sep = max(set(seps), key=seps.count)
    given = {line for line, _, _ in rows}
    labels, out = found
    kept = {str(v).strip().lower() for _, v in content.leaves(out) if v is not None}
    lost = [
        (line, m.group(2), all(w in labels for w in _LABEL_WORD.findall(line[: m.start(1)].lower())))
        for text in texts
        for line in text.splitlines()
        if line not in given
        and (m := _LABELLED.match(line))
        and m.group(1) == sep
        and _WORD.search(m.group(2))
        and m.group(2).strip().lower() not in kept  # (a one-letter value, `zone: D`, is kept but never searched)
        and not _kept_leniently(m.group(2), out, lexicon)
    ]

    def named(value: str) -> bool:
        return any(lexicon.singular(w) in said for w in _WORD.findall(value.lower()))

    # A line whose label names an output field was read into that field (a room type mapped to its code): lost
    # only when the failure names its value (`hull=carbon fibre` read as the default `hull: steel`).
    lost = [x for x in lost if not x[2] or named(x[1])]
    if not lost:
        return None
    near = [x for x in lost if named(x[1])]
    line = (near or lost)[0][0]
    weight = 0.6 if near else 0.1 + 0.2 * min(1.0, len(lost) / len(rows))
    return f"dropped the line {line.strip()[:60]!r} it parsed, none of its value kept" + (
        ", a value the failure names" if near else ""
    ), weight


_DIGITS = re.compile(r"\d+")


def _kept_leniently(value: str, out: Any, lexicon: Lexicon) -> bool:
    """Whether a parser's output holds a line's value read as a type: its numbers (``3 nights`` as 3, a date
    ``14 December 2026`` as ``2026-12-14``), or a yes/no word as a flag."""
    v = value.strip().lower()
    leaves = [x for _, x in content.leaves(out)]
    if v in lexicon.boolean_words and any(isinstance(x, bool) for x in leaves):
        return True
    numbers = {int(d) for d in _DIGITS.findall(v)}
    if not numbers:
        return False
    have = {int(d) for x in leaves if isinstance(x, (str, int, float)) and not isinstance(x, bool) for d in _DIGITS.findall(str(x))}
    return numbers <= have


_SERIES = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s?([A-Za-z]{1,4})(?!\w)")
"""A number and the short word written after it (``2.5 kg``, ``40cm``): an item of a series the text lists when
the word is a unit of measure (`Lexicon.measure_suffixes`)."""
_DECLARED = re.compile(r"(?<![\w.])(\d+)\s+[^\W\d]+\s*:")
"""A count a text declares before what it lists (``4 bales:``)."""


def _number_lists(out: Any) -> list[list[float]]:
    """The lists of numbers an output is or holds at its top level."""
    found = [out] if isinstance(out, list) else list(out.values()) if isinstance(out, Mapping) else []
    return [
        [float(x) for x in v]
        for v in found
        if isinstance(v, list) and v and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
    ]


def series_cut(
    step: Step, text: str, out: Any, named: Collection[str] = (), lexicon: Lexicon = ENGLISH
) -> Iterable[Evidence]:
    """A parser of a text that lists numbers in one unit (``2.5 kg, 1.2 kg, 4.0 kg``) whose output holds a list
    of some of them and not the rest: it cut the series short (the last item of a comma list lost, a page of
    a list read).  Selecting some values is what many parse steps are for (the weekend's two of a week's
    highs): only a cut the run shows is one, where the failure names a number left out (``named``: the keys of
    the failure's atoms) or the text declares a count of items the kept list falls short of (``4 bales:``).
    A list holding a number the series does not is another quantity, no cut."""
    series: dict[str, dict[float, str]] = {}
    for m in _SERIES.finditer(text):
        if m.group(2).lower() in lexicon.measure_suffixes:
            series.setdefault(m.group(2).lower(), {}).setdefault(float(m.group(1)), m.group(1))
    declared = {int(m.group(1)) for m in _DECLARED.finditer(text)}
    lists = _number_lists(out)
    for unit, given in series.items():
        for kept in lists if len(given) >= 2 else ():
            if len(kept) < len(given) and all(x in given for x in kept):
                left = [raw for x, raw in given.items() if x not in kept]
                if len(given) not in declared and not any(a.key in named for x in left for a in atoms(x)):
                    continue
                yield Evidence(
                    step.step_id,
                    0.55,
                    f"kept {len(kept)} of the {len(given)} numbers its text lists in {unit} (left out {', '.join(left)})",
                    "parse-dropped",
                )
                return


__all__ = ["failure_names", "left_out_field", "reads_answer", "series_cut", "text_dropped"]
