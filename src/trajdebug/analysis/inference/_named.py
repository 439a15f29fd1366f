"""Edges from a failure to where the values its message names came from (origin tracking from the message).

A failure that says ``still degraded after 'rollback'`` names a value; a debugger
reads an assertion's message to find who set the bad value.  `named_edges` links
the failing step to the step that produced each value its message quotes, to the
steps that acted on an identifier it names, to where each value it names was
born, to the step that wrote the run's shared-state record of a code it
names but was not given (a row missing from a report), and, when the failing
step recorded nothing of what it read (an OpenTelemetry span that raised
before its attributes were set), to the step that first held each telling value
its message states.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis import _numerals as numerals
from trajdebug.analysis._detect import Failure
from trajdebug.analysis.inference._edges import _with_deps
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.model import CONTAINER_KINDS, Dependency, Run, Step


NAMED_KEY = "(named by the failure)"

UNRECORDED_KEY = "(read as the failure states it)"
"""The key of an edge `_unrecorded_reads` infers: the failing step recorded nothing it read, and its message is
the only record that it read this step's value.  Of that step's output it read only what the message states."""

_IDENT = re.compile(r"(?<![\w./:-])(?=[\w./:-]*[_/:.])(?=[\w./:-]*[a-zA-Z])[\w./:-]{8,200}(?<![.:,])")
"""Identifiers in a failure message: a path, a test id, a URL, a file name (8+ characters, with ``_ / : .``)."""

_QUOTED_TEXT = re.compile(r"^[\d.,:/-]+$")
_SEPARATOR = re.compile(r"[_/:.]")
_NUMBER_TEXT = re.compile(r"(?<![\w.,])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])")
"""The ``key`` of an edge from a failure to the step that produced a value its message quotes."""


def named_edges(run: Run, failures: Sequence[Failure], *, confidence: float = 0.6) -> Run:
    """Link each failure to the step that produced a value its message quotes.

    A failure that says ``still degraded after 'rollback'`` names a value; the
    latest earlier step whose output *is* that value (or, for a longer value,
    contains it) produced it, whether or not the value's flow was recorded
    (short strings are not tracked by identity and too short to infer from
    content).  Origin tracking from the failure message, as a debugger reads
    an assertion's message to find who set the bad value.
    """
    pos = {s.step_id: i for i, s in enumerate(run.steps)}
    added: dict[str, list[Dependency]] = {}
    texts = _Texts()
    task = _task_text(run)
    for f in failures:
        if f.step_id not in pos:
            continue
        fstep = run.steps[pos[f.step_id]]
        have = {d.step_id for d in fstep.deps} | {d.step_id for d in added.get(f.step_id, [])}
        ancestors: set[str] = set()
        cur = fstep.parent_id
        while cur is not None and cur in pos and cur not in ancestors:
            ancestors.add(cur)
            cur = run.steps[pos[cur]].parent_id
        before = run.steps[: pos[f.step_id]]
        new = _quoted_producers(f.message, before, ancestors, have, confidence)
        new += _identifier_users(f.message, before, ancestors, have, confidence * 0.8)
        new += _births(f.message, before, ancestors, have, confidence * 0.8, texts, fstep)
        new += _state_writers(f.message, fstep, before, have, confidence * 0.8)
        # (An enclosing step's failure is what its children raised, and what it read its children read.)
        if fstep.kind not in CONTAINER_KINDS and _recorded_nothing(fstep):
            new += _unrecorded_reads(f.message, task, before, ancestors, have, confidence * 0.8)
        if new:
            added.setdefault(f.step_id, []).extend(new)
    return _with_deps(run, added)


def _quoted_producers(
    message: str, before: Sequence[Step], ancestors: set[str], have: set[str], confidence: float
) -> list[Dependency]:
    """The latest earlier step whose output is (or, for a longer value, contains) each value the message quotes."""
    from trajdebug.analysis.diagnosers._context import _QUOTED

    out: list[Dependency] = []
    for m in _QUOTED.finditer(message):
        v = (m.group(1) or m.group(2) or "").strip().lower()
        if len(v) < 2:
            continue
        for st in reversed(before):
            if st.step_id in ancestors or st.kind == "agent" or st.output is None:
                continue
            o = st.output
            text = o.strip().lower() if isinstance(o, str) else None
            hit = text == v or (len(v) >= 8 and v in content.text_of(o).lower())
            if hit:
                if st.step_id not in have:
                    have.add(st.step_id)
                    out.append(Dependency(st.step_id, "data", "inferred", confidence, NAMED_KEY))
                break
    return out


def _identifier_users(
    message: str, before: Sequence[Step], ancestors: set[str], have: set[str], confidence: float
) -> list[Dependency]:
    """An identifier the message names (a test id, a file, a URL): the steps that acted on it, the latest of
    each kind of step, linked more weakly; the diagnosers tell which of them went wrong."""
    out: list[Dependency] = []
    for ident in dict.fromkeys(m.group(0).lower() for m in _IDENT.finditer(message)):
        if _QUOTED_TEXT.search(ident) or not _SEPARATOR.search(ident):
            continue
        names: set[str] = set()
        for st in reversed(before):
            if len(out) >= 12:
                break
            if st.step_id in ancestors or st.kind == "agent" or st.name in names:
                continue
            if ident in content.text_of(st.input).lower() or ident in content.text_of(st.output).lower():
                names.add(st.name)
                if st.step_id not in have:
                    have.add(st.step_id)
                    out.append(Dependency(st.step_id, "data", "inferred", confidence, NAMED_KEY))
    return out


def _births(
    message: str,
    before: Sequence[Step],
    ancestors: set[str],
    have: set[str],
    confidence: float,
    texts: _Texts,
    fstep: Step,
) -> list[Dependency]:
    """Where each value the message names was born: the earliest steps whose output holds it while their own
    input does not (origin tracking)."""
    out: list[Dependency] = []
    for value in _named(message, repr(fstep.input).lower()):
        births = 0
        for i, st in enumerate(before):
            if births >= 2:
                break
            if st.step_id in ancestors or st.kind in ("agent", "input") or st.output is None:
                continue
            if texts.holds(i, st.output, value) and not texts.holds(~i, st.input, value):
                births += 1
                if st.step_id not in have:
                    have.add(st.step_id)
                    out.append(Dependency(st.step_id, "data", "inferred", confidence, NAMED_KEY))
    return out


def _recorded_nothing(st: Step) -> bool:
    """Whether a step recorded no input at all (None, or an empty text, mapping or list) and no edge: an
    OpenTelemetry span that raised before its attributes were set, a function the SDK saw called with nothing.
    A step that recorded any input is read by that input's own edges, not by the words of its message."""
    v = st.input
    empty = v is None or (isinstance(v, str) and not v.strip()) or (isinstance(v, (dict, list)) and not v)
    return empty and not st.deps


def _task_text(run: Run) -> str:
    """The run's own input (its root step's input and its ``task``), lower-case: a value in it is the user's, so
    a step that only echoes it (restates the city, the date) produced nothing the failure could have read."""
    root = next((s for s in run.steps if s.parent_id is None), None)
    task = run.metadata.get("task")
    return f"{content.text_of(root.input) if root is not None else ''} {content.text_of(task) if task else ''}".lower()


def _unrecorded_reads(
    message: str, task: str, before: Sequence[Step], ancestors: set[str], have: set[str], confidence: float
) -> list[Dependency]:
    """For a failing step that recorded no input and no edge (`_recorded_nothing`), the one earlier step whose
    output holds each telling value its message states (`_leaf_key`) and whose own input does not: the message is
    the only record of what the step read.  Skipped: a value of the run's own input (``task``, `_task_text`), a
    value several earlier steps hold (a relay's copy, a value produced again, an id every step carries: which one
    was read is not recorded), and a value whose one holder was given it (`_Given`): it relayed what an earlier
    step produced, whose output was not captured or states it in prose, and it is no producer to link."""
    low = message.lower()
    numbers = _numbers(low)
    words = set(_KEY_WORDS.findall(low))
    echoed = _numbers(task)
    holders: dict[str, set[str]] = {}
    relayed: set[tuple[str, str]] = set()  # (value, step): the step's own input holds the value its output does
    for st in before:
        if st.step_id in ancestors or st.kind == "agent" or st.output is None:
            continue
        given = _Given(st.input)
        for path, v in content.leaves(st.output):
            key = _leaf_key(v, path, low, numbers, words)
            if key is None or _echoed(v, key, task, echoed):
                continue
            holders.setdefault(key, set()).add(st.step_id)
            # A tool that returns its request (``{"request": {...}}``), a model restating its prompt.
            if given.holds(v, key):
                relayed.add((key, st.step_id))
    out: list[Dependency] = []
    for key, held in holders.items():
        if len(out) >= _UNRECORDED_LIMIT:
            break
        # Only a value one earlier step holds: held by several, it is a relay's copy, a value produced again, or a
        # subject every step carries (an id, a status), and the message cannot say which of them it was read from.
        if len(held) > 1:
            continue
        (sid,) = held
        if sid in have or (key, sid) in relayed:
            continue
        have.add(sid)
        out.append(Dependency(sid, "data", "inferred", confidence, UNRECORDED_KEY))
    return out


class _Given:
    """A step's recorded input as `_echoed` reads it (lower-case text and its numbers), read once it is asked."""

    __slots__ = ("_input", "_read")

    def __init__(self, value: Any) -> None:
        self._input = value
        self._read: tuple[str, set[str]] | None = None

    def holds(self, v: Any, key: str) -> bool:
        """Whether the input holds a leaf ``v`` (claimed as ``key`` by `_leaf_key`) as the output does."""
        if self._input is None:
            return False
        if self._read is None:
            text = content.text_of(self._input).lower()
            self._read = (text, _numbers(text))
        return _echoed(v, key, *self._read)


def _echoed(v: Any, key: str, text: str, numbers: set[str]) -> bool:
    """Whether a leaf's value (claimed as ``key`` by `_leaf_key`) is written in a lower-case ``text`` whose numbers
    are ``numbers``: the run's own input, or a step's own input."""
    if isinstance(v, str):
        return _written(key, text)
    return key.rsplit("=", 1)[-1] in numbers


def _numbers(text: str) -> set[str]:
    """The numbers a text writes, each as `_number_key` gives it."""
    return {n for m in _NUMBER_TEXT.finditer(text) if (n := _number_key(m.group(0))) is not None}


def _field(path: str) -> str:
    """A leaf's field name (the last segment of its dotted path, without a list index), lower-case."""
    return path.rsplit(".", 1)[-1].split("[", 1)[0].lower()


def _written(text: str, where: str) -> bool:
    """Whether ``text`` is written in ``where`` as words of its own (not inside a longer word or code)."""
    return text in where and re.search(rf"(?<![\w-]){re.escape(text)}(?![\w-])", where) is not None


_UNRECORDED_LIMIT = 8
"""At most this many steps linked for one failure by `_unrecorded_reads` (a message states a few values)."""

_TELLING_TEXT = re.compile(r"\d|\S\s+\S|[a-z][-_]|[-_][a-z]")
"""A text value telling enough to link by alone: it has a digit, two or more words, or letters joined by ``-``
or ``_`` (an id such as ``bay_north``); a lone word (a status, a role, ``none``, ``true``) recurs everywhere."""


def _number_key(text: str) -> str | None:
    """A number's comparable text (``1,264.0`` and ``1264`` alike), None for what is no number."""
    try:
        f = float(text.replace(",", ""))
    except ValueError:
        return None
    return repr(int(f)) if f.is_integer() else repr(f)


def _telling_number(n: str) -> bool:
    """Whether a number (`_number_key` text) is telling alone: it has a fraction or 4+ significant digits
    (``14.5``, ``1264``); a round or short integer (60, 250, 404) is a limit, a status or a count anywhere."""
    if "." in n:
        return True
    return len(n.lstrip("-").strip("0")) >= 4


def _leaf_key(v: Any, path: str, message: str, numbers: set[str], words: set[str]) -> str | None:
    """The value an output leaf holds that the (lower-case) message states, as `_unrecorded_reads` claims it: a
    telling number (`_telling_number`) by its value, any other integer only when the message also names its
    field (``plan lists 2 crates`` after ``{"crates": 2}``), a telling text (`_TELLING_TEXT`) the message writes
    as words of its own.  A True, False or None leaf is no number nor text (`_number_key` reads no number in
    ``True``), so it links nothing: compared by its type, never by the word a message writes for it."""
    if isinstance(v, (int, float)):
        n = _number_key(repr(v))
        if n is None or n not in numbers:
            return None
        if _telling_number(n):
            return n
        field = _field(path)
        if not field or not words.intersection(_KEY_WORDS.findall(field.replace("_", " "))):
            return None
        return f"{field}={n}"
    if isinstance(v, str):
        t = v.strip().lower()
        if len(t) < 3 or len(t) > 200 or _number_key(t) is not None or not _TELLING_TEXT.search(t):
            return None
        if _written(t, message):
            return t
    return None


_CODE_WORD = re.compile(r"(?<![\w\\.-])[A-Za-z][\w-]*\d[\w-]*(?![\w\\])")
"""A code a message writes as a word: a letter, then letters and digits (``R3``, ``bay-7``), no quantity
(``3.5m``); not a segment of a Windows path (beside a backslash), nor of a dotted name."""


def message_codes(message: str, *, lexicon: Lexicon = ENGLISH) -> list[str]:
    """The codes a message names (`_CODE_WORD`, trailing hyphens dropped), those that name a format (``utf-8``,
    ``sha256``: the lexicon's ``format_codes``, compared as written) left out, and those beside a slash in a
    URL or path (`_in_path`) too: ``T5/T6`` names two tanks, ``/v1/orders`` no code.  Case kept: callers ask
    for a capital letter when nothing else says the word is a record's code."""
    out: dict[str, None] = {}
    for m in _CODE_WORD.finditer(message):
        code = m.group(0).strip("-")
        if not code or code in lexicon.format_codes:
            continue
        beside = message[m.start() - 1 : m.start()] == "/" or message[m.end() : m.end() + 1] == "/"
        if not (beside and _in_path(message, m.start(), m.end())):
            out[code] = None
    return list(out)


def _in_path(message: str, start: int, end: int) -> bool:
    """Whether the whitespace-delimited chunk around ``message[start:end]`` is a URL or a path: it holds
    ``://``, starts at the root or the current folder, or has two slashes or more (``T5/T6`` has one)."""
    left = max(message.rfind(" ", 0, start), message.rfind("\n", 0, start), message.rfind("\t", 0, start)) + 1
    ends = [i for i in (message.find(c, end) for c in " \n\t") if i >= 0]
    chunk = message[left : min(ends) if ends else len(message)]
    return "://" in chunk or chunk.startswith(("/", "./")) or chunk.count("/") >= 2


_SHORT_QUOTE = re.compile(r"'([A-Z][A-Za-z0-9-]{2,15})'")
"""A short quoted word with a capital letter (``'BIF'``, ``'Granite'``)."""

_KEY_WORDS = re.compile(r"[^\W_]+(?:-[^\W_]+)*")


def _state_writers(
    message: str, fstep: Step, before: Sequence[Step], have: set[str], confidence: float
) -> list[Dependency]:
    """For each code the message names that the failing step was not given (a row missing from its report):
    the latest earlier step that wrote a shared-state key naming that code (``row:R3``).  The run kept the
    code's record there, and what the code between the steps read back from it decided whether it reached
    the failing step; no value of it did, so no value edge links them."""
    given = repr(fstep.input).lower()
    # (`message_codes`: no URL or path segment, no format word; a lower-case code is kept here, since
    # only a state key that names it links a writer.)
    wanted = {c.lower() for c in message_codes(message)}
    wanted = {w for w in wanted if not re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", given)}
    out: list[Dependency] = []
    for st in reversed(before) if wanted else ():
        keys = st.attributes.get("state_writes")
        if not isinstance(keys, list):
            continue
        hit = wanted & {w.lower() for k in keys if isinstance(k, str) for w in _KEY_WORDS.findall(k)}
        if hit:
            wanted -= hit
            if st.step_id not in have:
                have.add(st.step_id)
                out.append(Dependency(st.step_id, "state", "inferred", confidence, NAMED_KEY))
        if not wanted:
            break
    return out


def _named(message: str, given: str = "") -> list[str]:
    """Telling values a failure message names: decimals and long numbers (normalized), identifiers, codes
    with a capital letter (``CU-ICP4``: `message_codes`; a lower-case word with a digit, ``v2``, may be no
    record's) and short capitalised words it quotes, those two when the failing step was not ``given`` them."""
    out: dict[str, None] = {}
    # A code or a quoted word the failing step was ``given`` (its input's text) is the subject it checked (the
    # tower ``T3`` it staffs), which every step that handled it held: only one it was not given is traced.
    words = [c for c in message_codes(message) if any(ch.isupper() for ch in c)]
    words += [m.group(1) for m in _SHORT_QUOTE.finditer(message)]
    for w in words:
        low = w.lower()
        if not re.search(rf"(?<![\w-]){re.escape(low)}(?![\w-])", given):
            out[low] = None
    for m in _NUMBER_TEXT.finditer(message):
        n = numerals.norm_number(m.group(0))
        if n is not None and ("." in m.group(0) or len(n.strip("-").replace(".", "")) >= 4):
            out[n] = None
    for m in _IDENT.finditer(message):
        v = m.group(0).lower()
        if _SEPARATOR.search(v) and not _QUOTED_TEXT.search(v):
            out[v] = None
    return list(out)


class _Texts(dict[int, str]):
    """Lower-case texts of the steps' outputs (key ``i``) and inputs without markers (key ``~i``), each made once."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: dict[int, set[str]] = {}
        """The restated numbers (`numerals.number_forms`) of each text, made once: a failure naming
        several numbers asks each text for each of them."""

    def of(self, key: int, value: Any) -> str:
        text = self.get(key)
        if text is None:
            text = self[key] = (content.text_of(value) if key >= 0 else content.unmarked_text(value)).lower()
        return text

    def holds(self, key: int, value: Any, named: str) -> bool:
        """Whether the text of ``key`` holds a (lower-case) value, numbers in any restated form."""
        text = self.of(key, value)
        if named in text:
            return True
        if numerals.norm_number(named) is None:
            return False
        forms = self.forms.get(key)
        if forms is None:
            forms = self.forms[key] = numerals.number_forms(text)
        return named in forms


__all__ = ["NAMED_KEY", "UNRECORDED_KEY", "message_codes", "named_edges"]
