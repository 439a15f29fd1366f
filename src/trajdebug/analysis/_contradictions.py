"""Where the failure's message disagrees with the run: numbers stated against a field some step introduced
(`lineage:contradicted`, units and limits told apart), what-if repairs of a named value, and sources that
disagree with each other about a value the failing step was given."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from trajdebug.analysis import _content as content
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis._sources import (
    _TERM,
    NAMING_FIELDS,
    Found,
    Mark,
    Slice,
    _field_words,
    _short,
    _terms,
    _written_as,
)
from trajdebug.analysis._stated import HTTP_ERRORS, is_piece, states_no_value
from trajdebug.analysis._unfilled import empty_fields as _empty_fields
from trajdebug.analysis.lexicon import Lexicon
from trajdebug.analysis.lineage import StepView, counted_collection, derivation, slips
from trajdebug.core.model import CONTAINER_KINDS
from trajdebug.core.values import Atom, Mention, atoms, mentions


def contradicted(sl: Slice, message: str, pos: int, within: set[str], where: str) -> list[Found]:
    """Steps whose output a failure contradicts: it states another value for the quantity they named.

    An environment that refuses an action often says what is true ("has 2 days
    left", "the re-price says 111.08"): a number next to the words of a field
    some step introduced with another value (``paid_days_left=7``) points at
    that step (a stale cache, a wrong conversion), not at the steps that
    merely carried its value on.
    """
    out: list[Found] = []
    nums = mentions(message, words=False)
    # Each word of the message belongs to the number nearest to it (a message may
    # state several quantities: "total 1,224 exceeds budget 1,200"), in its own clause when that clause states
    # one: "silo C has 2.5 t free; 3.76 t ordered" says ``free`` of the 2.5, though the 3.76 stands nearer.
    breaks = _clause_breaks(message, sl.lexicon)
    clause = [bisect.bisect_right(breaks, n.start) for n in nums]
    near: dict[int, set[str]] = {}
    for w in _TERM.finditer(message.lower()):
        if nums:
            mid = (w.start() + w.end()) / 2
            own = bisect.bisect_right(breaks, w.start())
            pool = [k for k in range(len(nums)) if clause[k] == own] or range(len(nums))
            i = min(pool, key=lambda k: min(abs(mid - nums[k].start), abs(mid - nums[k].end)))
            if min(abs(mid - nums[i].start), abs(mid - nums[i].end)) <= 48:
                near.setdefault(i, set()).add(w.group(0))
    failing = sl.lin.view(sl.run.steps[pos].step_id) if pos < len(sl.run.steps) else None
    subjects = {a.key for a in atoms(message) if a.kind == "id"}
    for i, m in enumerate(nums):
        window = near.get(i, set())
        window |= {sl.lexicon.singular(w) for w in window}
        if failing is not None and _quoted(failing.inputs, m, window, sl):
            continue
        if _status(message, m, sl):
            continue
        found: list[tuple[str, Atom]] = []
        held = False
        # Whether the words beside this number name a field, once per field name (the steps of a loop repeat theirs).
        near_field: dict[str, bool] = {}
        for sid in sorted(within, key=sl.g.position):
            if sl.g.position(sid) >= pos or sl.g.steps[sid].kind in CONTAINER_KINDS:
                continue
            view = sl.lin.view(sid)
            named = [
                a
                for a in view.outputs
                if a.kind == "number"
                and a.number is not None
                and a.field
                and _near(a.field, window, m, sl, near_field)
                and not _names_unit(a.field, _unit_code(message, m), sl)
                and not states_no_value(message, m, _field_words(a.field, sl.lexicon), sl.lexicon)
            ]
            if any(_written_as(a.number, m) for a in named if a.number is not None):
                held = True  # the run had the value the failure states: it restates, not corrects
                break
            named = [a for a in named if not view.given(a)]
            if len({a.key for a in named}) != 1:
                continue  # none, or a table of them (which row the failure means is unknown)
            if any(_written_as(a.number, x) for a in named for x in nums if a.number is not None):
                # The failure states this value too: it compares it with another
                # (a limit, a second source), it does not correct it.
                continue
            found.append((sid, named[0]))
        if held or not found or len(found) > 2:
            continue  # restated, no step, or a quantity too common to tell which step it means
        # (Counted above with the others: a quantity several records hold is too common whichever one is named.)
        for sid, a in [(sid, a) for sid, a in found if not _about_another(sl.lin.view(sid), subjects)]:
            out.append(
                Evidence(
                    sid,
                    sl.w["contradicted"],
                    f"the failure at {where} says {m.raw.strip()} where it said {a.field}={a.raw}",
                    "lineage:contradicted",
                )
            )
    return out


_CLAUSE_STOP = re.compile(r";|[.!?](?=\s|$)|\n")
"""What may end a clause of a message, for the words a number is read with: a semicolon, a full stop (not a
decimal point), a question or exclamation mark, a line break (``_clause_breaks`` says which do)."""

_LAST_WORD = re.compile(r"(?<![A-Za-z.])[A-Za-z]+(?:\.[A-Za-z]+)*$")
"""The word a full stop closes (``approx``, ``e.g``), searched for in the 16 characters before it."""


def _clause_breaks(message: str, lexicon: Lexicon) -> list[int]:
    """Where the clauses of a message end.  A full stop after an abbreviation ("stock approx. 2 units",
    ``Lexicon.abbreviations``) ends none, and a line break ends one only after a sentence's end (``.;:!?``): a
    line wrapped inside a sentence ("free beds\\n2") stays one clause."""
    out: list[int] = []
    for b in _CLAUSE_STOP.finditer(message):
        if b.group(0) == ".":
            word = _LAST_WORD.search(message, max(0, b.start() - 16), b.start())
            if word and word.group(0).lower() in lexicon.abbreviations:
                continue
        elif b.group(0) == "\n" and not message[max(0, b.start() - 64) : b.start()].rstrip().endswith(":"):
            continue  # a wrapped line, or one whose stop already ended the clause or, an abbreviation's, none
        out.append(b.start())
    return out


def emptied(sl: Slice, message: str, pos: int, within: set[str], where: str) -> list[Found]:
    """The step that first returned a field empty that the failure says is empty, when it shows a swallowed error.

    A step that swallows an error answers with a default: a booking with ``date: None``, a slot id ``""``.
    The failure downstream then says so ("visit_date None is not a date", "field slot_ref is empty"), but an
    empty value names nothing, so no value's lineage leads back to where it was born.  A field the message
    calls empty (an empty word beside the field's words, `_said_empty`), empty in a step's output though the
    step was not handed it empty, is that birth: the earliest such step (its consumers were handed the empty
    field and passed it on).  An empty answer is also what an honest lookup gives when asked the wrong thing
    (no slot on a day the model made up), so the step must show the error it swallowed (`_swallowed`)."""
    windows = _said_empty(message, sl.lexicon)
    if not windows:
        return []
    for sid in sorted(within, key=sl.g.position):
        step = sl.g.steps[sid]
        if sl.g.position(sid) >= pos or step.kind in CONTAINER_KINDS:
            continue
        fields = {f for f in _empty_fields(step.output) if any(_spoken(f, w, sl) for w in windows)}
        fields -= set(_empty_fields(step.input))
        if fields and _swallowed(sl, sid, fields):
            shown = ", ".join(sorted(fields)[:2])
            return [Evidence(sid, sl.w["emptied"], f"returned {shown} empty, which the failure at {where} says is empty", "lineage:emptied")]
    return []


_RECORD = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_NEAR = 3
"""How many words from an empty word a field's words may stand ("kiln_slot None", "the pickup date is empty")."""


def _said_empty(message: str, lexicon: Lexicon) -> list[set[str]]:
    """The words beside each empty word of a message (`Lexicon.empty_words`), as `_terms` reads them.

    A record the message prints (``{'coupon': None, ...}``) is left out: it shows what was rejected, and an
    optional field of it may rightly be None; the message's own words say which field it finds empty."""
    text = message
    for _ in range(4):  # nested records, innermost first
        text = _RECORD.sub(" ", text)
    words = [w.lower() for w in _WORD.findall(text.replace("_", " "))]
    return [
        _terms(" ".join(words[max(0, i - _NEAR) : i + _NEAR + 1]), lexicon)
        for i, w in enumerate(words)
        if w in lexicon.empty_words
    ]


def _swallowed(sl: Slice, sid: str, fields: set[str]) -> bool:
    """Whether a step that answered ``fields`` empty shows an error it swallowed: it is a tool called for its
    effect (not named as a read, `Lexicon.read_tool`: a booking that answers no booking did nothing, where a
    lookup answering nothing may rightly have found nothing), another call of the same step answered one of
    them filled (the empty one is no normal answer of it), or its own data (its output, its attributes, the
    steps inside it) carries an error's words."""
    step = sl.g.steps[sid]
    if step.kind == "tool" and not sl.lexicon.read_tool.match(step.name):
        return True
    for other in sl.g.steps.values():
        same = other.step_id != sid and other.name == step.name and other.kind == step.kind
        if same and set(_empty_fields(other.output, filled=True)) & fields:
            return True
    inner = [step.output, dict(step.attributes)]
    inner += [c.output for c in sl.g.steps.values() if c.parent_id == sid]
    if any(c.status != "ok" for c in sl.g.steps.values() if c.parent_id == sid):
        return True
    text = " ".join(content.text_of(v)[:20_000] for v in inner)
    return bool(sl.lexicon.environment.search(text) or sl.lexicon.error_line.search(text))


def _spoken(field: str, said: set[str], sl: Slice) -> bool:
    words = _field_words(field, sl.lexicon)
    return words != ["\0"] and all(sl.lexicon.singular(w) in said or w in said for w in words)


def _near(field: str, window: set[str], m: Mention, sl: Slice, memo: dict[str, bool]) -> bool:
    """`_named_near`, kept in ``memo`` by field name (one memo per number and window)."""
    hit = memo.get(field)
    if hit is None:
        hit = memo[field] = _named_near(field, window, m, sl)
    return hit


def _named_near(field: str, window: set[str], m: Mention, sl: Slice) -> bool:
    """Whether the words beside a number of the failure name a field: each of its words is there, but the unit
    closing a name of several words (``charge_pct``, ``load_kg``) may be written as the number's unit instead
    ("charge 22%", "load 410 kg"), which is how a message writes a reading of that measure."""
    words = _field_words(field, sl.lexicon)
    unit = (m.unit or "").lower()

    def written(w: str, last: bool) -> bool:
        if w in window or sl.lexicon.singular(w) in window:
            return True
        measure = last and len(words) > 1 and w in sl.lexicon.measure_suffixes
        return measure and bool(unit) and (unit == w or (unit == "%" and w in sl.lexicon.percent_words))

    return all(written(w, i == len(words) - 1) for i, w in enumerate(words))


def _about_another(view: StepView, subjects: set[str]) -> bool:
    """Whether a step's answer is about records the failure does not name, when it names one ("DP-121 has 2
    canoes racked" beside a status of DP-125 with canoes=19): the failure's number is the named record's, no
    correction of another's field.  An answer naming no id, or the failure's, stays comparable."""
    if not subjects:
        return False
    ids = {a.key for a in view.outputs if a.kind == "id"}
    return bool(ids) and not ids & subjects


def _quoted(given: Sequence[Atom], m: Mention, window: set[str], sl: Slice) -> bool:
    """Whether the failing step was handed the number under a name the message does not give it: it quotes the
    value it refuses (``NZD 3139.07`` it was to pay as ``amount``, ``418.0 kg`` it was to reserve), which
    corrects no other step's field.  Handed under the name the message gives it ("10 servings" for
    ``servings=10``), it is the step's own figure for that quantity, which may correct another's."""
    held = [a for a in given if a.kind == "number" and a.number is not None and _written_as(a.number, m)]
    return bool(held) and not any(
        a.field and any(w in window or sl.lexicon.singular(w) in window for w in _field_words(a.field, sl.lexicon))
        for a in held
    )


_STATUS = re.compile(r"(?<![\w.-])([45]\d\d):")
"""An error status closing a service's name (``register 422: ...``, ``billing gateway 400: ...``); not an id's
number (``APP-503:``)."""


_WHOLE = re.compile(r"(?<![\w.:/-])(?<!\d,)(\d{1,4})(?![\w:/-]|[.,]\d)")
"""A whole number as a message writes it, no part of a date, a time, a code, a decimal or a number written with
thousands separators (``3,000 m3`` is no 3)."""


_WORD = re.compile(r"[^\W\d_]+")


def _beside(message: str, a: re.Match[str], b: re.Match[str], lexicon: Lexicon) -> bool:
    """Whether a larger number ``b`` stands beside a count ``a`` as a bare count too: at most six words and no
    other number apart, no unit, currency or % on it, no span of time ("5 hours"), and no bound word before or
    after it ("limit 30", "a 30 kg maximum"): a stated limit or a measure counts other things than the items."""
    lo, hi = (a, b) if a.start() < b.start() else (b, a)
    between = message[lo.end() : hi.start()]
    # Another number between them ("4 dishes need 95 minutes, kitchen closes in 60") is what the larger one answers.
    if len(_WORD.findall(between)) > 6 or any(c.isdigit() for c in between):
        return False
    before = [w.lower() for w in _WORD.findall(message[max(0, b.start() - 40) : b.start()])][-3:]
    after = (_next_words(message, b.end()) or [""])[0]
    sign = message[b.end() : b.end() + 1] == "%" or message[max(0, b.start() - 1) : b.start()] in "$€£¥"
    unit = after.isupper() or after.lower() in lexicon.measure_suffixes or after.lower() in lexicon.bound_nouns
    span = bool(after) and lexicon.duration_value.match(f"{b.group(1)} {after}") is not None
    return not sign and not unit and not span and not set(before) & lexicon.bound_words


def _nouns(message: str, m: re.Match[str], lexicon: Lexicon) -> set[str]:
    """The two words right after a number ("16 players", "120 paid entries"), in the singular: what it counts."""
    return {lexicon.singular(w.lower()) for w in _next_words(message, m.end())}


def _next_words(message: str, end: int) -> list[str]:
    """The (at most two) words that follow position ``end``, separated by spaces only: a comma ends a phrase."""
    found = re.match(r" *([^\W\d_]+)(?: ([^\W\d_]+))?", message[end:])
    return [w for w in found.groups() if w] if found is not None else []


def _of(message: str, a: re.Match[str], b: re.Match[str]) -> bool:
    """Whether two numbers are written "N of M"."""
    return message[a.end() : b.start()].strip().lower() == "of"


def short_collection(sl: Slice, message: str, pos: int, within: set[str], where: str) -> list[Found]:
    """The step that answered a collection the failure counts short: the message names the size of the one
    collection of that many items the failing step was given ("bracket has 16 players", `counted_collection`),
    a larger bare count beside it (`_beside`: "20 checked in"), and the word after one of the two names the
    collection (its field or its records' fields), and the items all came from one step (a page cut short, a
    parse that lost lines), which no value the failure names leads back to."""
    if pos >= len(sl.run.steps):
        return []
    step = sl.run.steps[pos]
    codes = status_codes(message, sl.lexicon)
    named = [m for m in _WHOLE.finditer(message) if m.group(1) not in codes]
    out: list[Found] = []
    for a in named:
        n = int(a.group(1))
        more = [b for b in named if n < int(b.group(1)) <= 20 * n and _beside(message, a, b, sl.lexicon)]
        items, names = counted_collection(step.input, Atom(f"n:{n}", "number", None, None, str(n), float(n))) if more else ([], frozenset())
        # One of the two names the items ("16 players"); in "N of M" the larger one must ("100 of 120 entries"):
        # "attempt 3 of 5" counts attempts.
        nouns = _nouns(message, a, sl.lexicon)
        more = [b for b in more if (_nouns(message, b, sl.lexicon) | (set() if _of(message, a, b) else nouns)) & names]
        makers = {sl.lin.origin(x, pos, within).step_id for x in items}
        sid = makers.pop() if len(makers) == 1 else None
        if more and len(items) >= 2 and sid is not None:
            larger = min(more, key=lambda b: abs(b.start() - a.start())).group(1)
            out.append(Evidence(sid, sl.w["short"], f"answered the {n} items the failure at {where} counts, where it names {larger}", "lineage:short"))
    return out


def status_codes(message: str, lexicon: Lexicon) -> frozenset[str]:
    """The error statuses a message reports (``register 422:``, ``HTTP/1.1 404``, ``status code: 503``), as
    written: a service's answer, no quantity of the run, whatever field words stand beside it."""
    found = {m.group(1) for m in _STATUS.finditer(message)}
    found |= {m.group(1) for m in lexicon.status_text.finditer(message) if m.group(1)[0] in "45"}
    # Only the statuses HTTP defines (`_stated.HTTP_ERRORS`): "bay 450: over the limit" names a bay.
    return frozenset(c for c in found if int(c) in HTTP_ERRORS)


def _status(message: str, m: Mention, sl: Slice) -> bool:
    """Whether a number of the message is its error status (`status_codes`)."""
    return m.unit is None and m.raw.strip() in status_codes(message, sl.lexicon)


_CODE = re.compile(r" ?([A-Z]{2,5})\b")
"""A code in capitals right after a number (``EUR``, ``USD``, ``GB``)."""


def _unit_code(message: str, m: Mention) -> str | None:
    """The currency or unit code a number is written with: its symbol (``€12``), or a word in capitals right after it (``304.40 EUR``).

    A lower-case word after a number names what it counts ("6 replicas", "2
    days left") and is left to the field words; a code in capitals is a unit.
    """
    if m.unit and not m.raw[:1].isdigit() and m.raw[:1] not in "+-.":
        return m.unit  # a currency symbol before the digits
    w = _CODE.match(message, m.end)
    return w.group(1).lower() if w is not None else None


def _names_unit(field: str, unit: str | None, sl: Slice) -> bool:
    """Whether a field's only word is the unit code a number is written with.

    A failure gives a value its name ("total 304.40", "total=304.40",
    "6 replicas"); a currency or unit code (``304.40 EUR``, ``$12``) says what
    it is measured in, and a field named like that code (a rate table's
    ``eur``) is not the quantity stated.  A name of several words still counts.
    """
    words = _field_words(field, sl.lexicon)
    return unit is not None and len(words) == 1 and words[0] in (unit, sl.lexicon.singular(unit))


def whatif_found(sl: Slice, message: str, named: Sequence[Atom], pos: int, within: set[str], where: str) -> list[Found]:
    """The one numeric slip upstream that turns the run's number into the one the failure expected."""
    out: list[Found] = []
    fview = sl.lin.view(sl.run.steps[pos].step_id) if pos < len(sl.run.steps) else None
    # A small integer the failure states ("a 1 ml syringe", "2 retries") is held by some step of
    # nearly any run by coincidence, and a derivation for it is found among almost any inputs: it
    # is no run's number to repair (small integers say little, as `numerals.norm_number` has it).
    ours = [
        a
        for a in named
        if a.kind == "number"
        and a.number is not None
        and not _small_integer(a.number)
        and (sl.lin.holders(a.key, pos) or (fview is not None and derivation(fview, a) is not None))
    ]
    # The ends of a range the failure checks against ("outside 0.03-0.09", "between 2 and 8"; `Lexicon.range_`)
    # are its limits, and a number joined to other digits with no space (the year of "2024-03", a piece of an
    # id) is a piece of another token (`_stated.is_piece`; `lineage:contradicted` leaves them out alike): neither
    # is a quantity the run computed nor one it should have had.
    said = mentions(message, words=False)
    spans = [m.span() for m in sl.lexicon.range_.finditer(message)]
    whole = [t for t in said if not is_piece(message, t) and not any(a <= t.start < b for a, b in spans)]
    ours = [a for a in ours if a.number is None or not any(_written_as(a.number, t) for t in said) or any(_written_as(a.number, t) for t in whole)]
    if not ours:
        return out
    # Nor is a small whole number the failure states a value the run should have had: written to the unit, it
    # is reached by a power-of-ten slip of almost any number near it ("7911.79 would be the 8"), and a failure
    # names counts beside its quantities ("4 on hand covers 0.4 days"; `numerals.norm_number` skips them too).
    targets = [t for t in whole if not (_small_integer(t.value) and "." not in t.raw)]
    for t in targets:
        for a in ours:
            if a.number is None or _written_as(a.number, t):
                continue  # the run's own number
            found = slips(sl.lin, a, pos, t.value, t.raw, within)
            # (One slip repeated in every call of one step counts once.)
            ways = len({sl.g.steps[slip.step_id].name for slip in found})
            if not found or ways > 3:
                continue  # none, or too many ways to get there to say which
            for slip in found:
                label = f"{slip.atom.field}={slip.atom.raw}" if slip.atom.field else slip.atom.raw
                out.append(
                    Evidence(
                        slip.step_id,
                        sl.w["whatif"] / ways**0.5,
                        f"its {label} looks {slip.what}: at {_short(slip.fixed)}, the run's {a.raw.strip()} "
                        f"would be the {t.raw.strip()} the failure at {where} expects",
                        "lineage:whatif",
                    )
                )
            return out
    return out


def _small_integer(x: float) -> bool:
    """Whether a number is a small integer (-10..10), the counts and sizes `numerals.norm_number` skips too."""
    return x.is_integer() and -10 <= x <= 10


def disagreeing_sources(sl: Slice, fid: str, message: str, pos: int, within: set[str], where: str) -> list[Found]:
    """Two sources giving the failing check different values of one field for one entity.

    A check that cross-checks what the run acted on against a source it
    consults for itself (a billing record, a re-price) fails when they
    disagree; the source the run acted on, not the check's own witness,
    is the suspect (a stale cache, a wrong lookup).
    """
    out: list[Found] = []
    view = sl.lin.view(fid)
    said = message.casefold()
    by_field: dict[str, dict[str, Atom]] = {}
    for a in view.inputs:
        if a.field and a.kind in ("text", "id", "date") and a.field not in NAMING_FIELDS:
            by_field.setdefault(a.field, {}).setdefault(a.key, a)
    for fld, vals in by_field.items():
        if len(vals) != 2 or not any(len(a.raw) >= 2 and a.raw.casefold() in said for a in vals.values()):
            continue  # not two values, or not what the check complains about
        origins = [sl.lin.origin(a, pos, within) for a in vals.values()]
        if any(o.step_id is None for o in origins) or origins[0].step_id == origins[1].step_id:
            continue
        ids = [o.step_id for o in origins if o.step_id is not None]
        outs = [{b.key for b in sl.lin.view(sid).outputs if b.kind == "id"} for sid in ids]
        if not outs[0] & outs[1]:
            continue  # not the same entity
        witness = [_feeds_only(sl, sid, fid) for sid in ids]
        if witness.count(True) != 1:
            continue
        acted, told = (0, 1) if witness[1] else (1, 0)
        out.append(
            Evidence(
                ids[acted],
                sl.w["disagrees"],
                f"says {fld}={origins[acted].atom.raw} where {sl.g.steps[ids[told]].name}, "
                f"which the check at {where} consulted, says {origins[told].atom.raw}",
                "lineage:disagrees",
            )
        )
    return out

def _feeds_only(sl: Slice, sid: str, fid: str) -> bool:
    """Whether everything that consumed a step's output is the failing step (or encloses it)."""
    users = [c for c, _ in sl.g.children(sid) if c != sid]
    return bool(users) and all(c == fid or inside_of(sl, fid, c) for c in users)

def yardsticks(
    sl: Slice, named: Sequence[Atom], end: int, within: set[str], skip: frozenset[str], bounds: set[float]
) -> tuple[set[str], list[Found]]:
    """The side of a comparison a failure states that the run was measured against, by structure alone (its
    key), and a ``yardstick`` mark of the step that made the other side, naming the step that made this one: its
    lead may come from that share alone, and no verdict may rise on it (`Ranking.by_yardstick`).

    A check names two numbers of one comparison: "21 portions for 130 guests", "charged 31.0 a
    day, catalogue 62.0", "charged 15.0, quote 12.5".  When each was introduced by a step of its
    own, the one whose origin came first is the yardstick when a record stated it under a name (the order's
    ``guests``, the catalogue's ``eur_day``): the run held it before the step that made the number disagreeing
    with it.  Its origin is weaker evidence (the ``yardstick`` share) than the later one's.  A number an
    earlier text wrote in passing (a note's "raise the price to 25") is no record's value: it may be what
    misled the run.  A bound the message states ("above the 30-day maximum") is no side; a value computed
    from others passes its mark on and is left out.  Dates are no sides: a date taken up from an earlier
    message (the request's day, misread) is as often the wrong one as the record's.  A small whole number
    (-10..10, any unit) is no side, as the lineage's ``held_before`` leaves it out: a count recurs in any run
    by chance, so which step made it first says little ("sheet lists 3 riders, booking is for 4" has none).
    """
    out: tuple[set[str], list[Found]] = (set(), [])
    sides = [a for a in {a.key: a for a in named if a.kind == "number"}.values() if a.number not in bounds]
    if any(a.number is None or (a.number == int(a.number) and -10 <= a.number <= 10) for a in sides):
        return out
    if len(sides) != 2:
        return out
    origins = [(sl.lin.origin(a, end, within, skip), a.key) for a in sides]
    made = [(sl.g.position(o.step_id), key, o.atom.field, o.step_id) for o, key in origins if o.step_id and not o.derived_from]
    if len(made) == 2 and made[0][0] != made[1][0] and min(made)[2] is not None:
        out[0].add(min(made)[1])
        out[1].append(Mark(max(made)[3], "yardstick", sl.w["origin"], min(made)[3]))
    return out


def inside_of(sl: Slice, sid: str, outer: str) -> bool:
    """Whether step `sid` runs inside step `outer` (a descendant in the step tree)."""
    seen = 0
    parent = sl.g.steps[sid].parent_id
    while parent is not None and seen < 10_000:
        if parent == outer:
            return True
        step = sl.g.steps.get(parent)
        parent = step.parent_id if step is not None else None
        seen += 1
    return False
