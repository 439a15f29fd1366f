"""Diagnosers of observations: what a tool, a retrieval or the environment handed the agent.

An agent takes what the outside world returns as given.  Three ways that
goes wrong without any error being raised, each read off the recorded run:

* **Truncated output** (`truncated_output`): a result cut short, by an
  explicit marker (``[truncated]``, a trailing ``...``), by text that stops
  mid-word, by fewer items than the result itself announces, by a last group
  of records smaller than every other group (a page limit cut the tail), by
  lacking a part that every other result of the same tool has, or by
  stopping on a word where every other, longer, result of the tool ends cleanly.
* **A retry that masked a failure with stale data** (`stale_retry`): the
  attempt after a failed one succeeded with a cached or aged value, or with
  data for another period than the one asked for.
* **A cached answer** (`cached_answer`): a result that says it came from a
  cache (``cached_at``, ``fetched: cache``), retry or not.
* **A stale copy among fresh ones** (`stale_sibling`): an answer whose
  freshness field (a version, an ``as_of`` time, named by its words) is older
  than the one value every other call of the same tool answered with.
* **A format unlike its siblings'** (`format_sibling`): an answer writing a
  field (a time, a date, a code) in another format than the one every other
  call of the same tool wrote it in.
* **Environment drift** (`environment_read`): a value read from the
  environment (``attributes["env_reads"]``) that differs from the same read
  in an earlier turn of the conversation or from the run's environment
  snapshot, or that the failure itself names.

Like every diagnoser they rank, they do not prove (`trajdebug.analysis.diagnosers._context`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._reads import OK, TOOLS, Reads, reading
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.model import Run, Step


_OBSERVERS = ("tool", "retrieval")

# -- truncation --------------------------------------------------------------------

_TERMINAL = frozenset(".!?;:)]}\"'`>|")


def _texts(value: Any) -> list[tuple[str, str]]:
    """The text leaves of a value with their paths (a string value is its own leaf)."""
    if isinstance(value, str):
        return [("", value)]
    return [(p, v) for p, v in content.leaves(value) if isinstance(v, str)]


def _cut_mid_word(text: str, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a longer text stops in the middle of a word (no closing punctuation, last word glued to the end)."""
    t = text.rstrip("\n")
    if len(t) < 60 or t != t.rstrip() or t[-1:] in _TERMINAL or "\n" in t[-40:]:
        return False
    # Prose ends with punctuation; a line-oriented output (logs, code) does not.
    return t.count(". ") >= 2 and t[-1].isalnum() and not _signed(t, lexicon)


_LAST_SENTENCE_END = re.compile(r"[.!?]\s+(?=[^.!?]*$)")
"""The end of a text's last full sentence, before what follows it."""
_SIGNATURE = re.compile(r"([^\W\d_]+(?:\s+[^\W\d_]+)?),\s*([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)")
"""A sign-off: one or two words, a comma, then a name of one or two capitalised words (``Regards, Ana Silva``)."""


def _signed(text: str, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a text ends the way a letter is signed: after its last full sentence, a closing word of
    `Lexicon.sign_offs`, a comma and a name ("... 42.50 EUR. Thanks, Ana", "... Regards, Ana Silva").  A cut
    falls anywhere, mostly inside a sentence's words: a few capitalised words after a full stop ("... EUR.
    Refund to Maria") are a sentence cut short, not a signature."""
    m = _LAST_SENTENCE_END.search(text)
    if m is None:
        return False
    sign = _SIGNATURE.fullmatch(text[m.end() :].strip())
    return sign is not None and " ".join(sign.group(1).lower().split()) in lexicon.sign_offs


def _ragged_tail(rows: list[Any]) -> tuple[str, int, int] | None:
    """A list of records grouped by a field whose last group is smaller than every other group."""
    if len(rows) < 4 or not all(isinstance(r, Mapping) for r in rows):
        return None
    keys = [k for k, v in rows[0].items() if isinstance(v, str)]
    for k in keys:
        groups: list[tuple[Any, int]] = []
        for r in rows:
            v = r.get(k)
            if groups and groups[-1][0] == v:
                groups[-1] = (v, groups[-1][1] + 1)
            else:
                groups.append((v, 1))
        values = [g for g, _ in groups]
        if len(groups) < 3 or len(set(values)) != len(values):
            continue  # not grouped by this field
        sizes = [n for _, n in groups[:-1]]
        # Pairs then a single one is any odd number of records (a trip's last day with one
        # charge): only groups of three or more make a short last group unlikely by chance.
        if len(set(sizes)) == 1 and sizes[0] > 2 and groups[-1][1] < sizes[0]:
            return str(k), groups[-1][1], sizes[0]
    return None


_SENTENCE = re.compile(r"[^.!?\n]+[.!?]")
_WORDS = re.compile(r"[a-z]{3,}")


def _skeletons(text: str) -> list[frozenset[str]]:
    """Each sentence of a text as its set of plain words (numbers and names vary between results)."""
    out = []
    for m in _SENTENCE.finditer(text):
        words = frozenset(_WORDS.findall(m.group(0).lower()))
        if len(words) >= 3:
            out.append(words)
    return out


def _text_results(run: Run) -> dict[str, tuple[list[Step], list[tuple[int, str]], dict[str, int]]]:
    """Per step name: its text results (ok, string output) in run order, their lengths shortest first,
    and how many carry each step id."""
    out: dict[str, tuple[list[Step], list[tuple[int, str]], dict[str, int]]] = {}
    for s in run.steps:
        if isinstance(s.output, str) and s.status == "ok":
            steps, _, ids = out.setdefault(s.name, ([], [], {}))
            steps.append(s)
            ids[s.step_id] = ids.get(s.step_id, 0) + 1
    for steps, lengths, _ in out.values():
        lengths.extend(sorted((len(s.output), s.step_id) for s in steps))
    return out


def _missing_part(step: Step, ctx: DiagnoseContext) -> str | None:
    """A sentence every other text result of the same tool has (by its words), and this one lacks."""
    if not isinstance(step.output, str):
        return None
    # Only a result shorter than every other result of the same step can lack their part: the
    # step's results by length, indexed once per run, tell without reading them all.
    steps, lengths, ids = ctx.memo("text-results", lambda: _text_results(ctx.run)).get(
        step.name, ([], [], {})
    )
    if len(lengths) - ids.get(step.step_id, 0) < 2:
        return None
    shortest = next(n for n, sid in lengths if sid != step.step_id)
    if shortest <= len(step.output):
        return None
    siblings = [s for s in steps if s.step_id != step.step_id]
    mine = _skeletons(step.output)
    theirs = [_skeletons(s.output) for s in siblings]
    missing = []
    for sent in theirs[0]:
        common = [next((o for o in other if len(sent & o) >= 0.8 * len(sent)), None) for other in theirs[1:]]
        if all(c is not None for c in common) and not any(len(sent & m) >= 0.8 * len(sent) for m in mine):
            missing.append(" ".join(sorted(sent))[:60])
    # One missing sentence may be a variant of the document; a cut tail loses several.
    return missing[0] if len(missing) >= 2 else None


@reading(Reads(kinds=TOOLS, statuses=OK))
def truncated_output(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A tool or retrieval result that was cut short (a marker, text stopping mid-word, a ragged last group...)."""
    if step.kind not in _OBSERVERS or step.status != "ok" or step.output is None:
        return
    if content.is_marker(step.output):
        return  # the recorder's own truncation of a large value is not the tool's
    texts = _texts(step.output)
    for path, text in texts:
        m = ctx.lexicon.truncation.search(text[-200:])
        if m:
            where = f" in {path}" if path else ""
            yield Evidence(
                step.step_id,
                0.55,
                f"its output{where} is marked as cut short ({m.group(0).strip()!r}): the agent saw part of the result",
                "truncated-output",
            )
            return
    for path, text in texts:
        if _cut_mid_word(text, ctx.lexicon):
            where = f" {path}" if path else ""
            yield Evidence(
                step.step_id,
                0.4,
                f"its output{where} stops mid-sentence ({text[-30:]!r}): the result looks cut short",
                "truncated-output",
            )
            return
    text = content.text_of(step.output)
    rows = content.largest_list(step.output)
    for m in ctx.lexicon.result_count.finditer(text):
        n = int(m.group(1))
        listed = len(rows) if rows is not None else None
        if (
            listed is not None
            and 0 < listed < n
            and m.group(0)
            .split()[-1]
            .lower()
            .startswith(("result", "item", "row", "record", "match", "hit", "entr"))
        ):
            yield Evidence(
                step.step_id,
                0.45,
                f"its output announces {m.group(0)!r} but lists {listed}: the result looks cut short",
                "truncated-output",
            )
            return
    if rows is not None:
        tail = _ragged_tail(rows)
        if tail is not None:
            k, last, size = tail
            yield Evidence(
                step.step_id,
                0.4,
                f"its records come in groups of {size} by {k!r}, but the last group has only {last}: "
                "the tail looks cut off (a page or size limit)",
                "truncated-output",
            )
            return
    part = _missing_part(step, ctx)
    if part is not None:
        yield Evidence(
            step.step_id,
            0.45,
            f"shorter than every other result of {step.name}, and lacks the part they all have ({part!r}): cut short?",
            "truncated-output",
        )
        return
    cut = _cut_unlike_siblings(step, ctx)
    if cut is not None:
        yield Evidence(
            step.step_id,
            0.45,
            f"shorter than every other result of {step.name}, and stops on a word ({cut!r}) where they all end "
            "with punctuation or a line break: cut short?",
            "truncated-output",
        )


def _cut_unlike_siblings(step: Step, ctx: DiagnoseContext) -> str | None:
    """The tail of a text result that stops on a letter or digit where every other, longer, result of the
    same tool ends cleanly (a short last line escapes `_cut_mid_word`, which reads prose only)."""
    text = step.output
    if not isinstance(text, str) or not text[-1:].isalnum():
        return None
    steps, _, _ = ctx.memo("text-results", lambda: _text_results(ctx.run)).get(step.name, ([], [], {}))
    siblings = [s.output for s in steps if s.step_id != step.step_id]
    if not siblings or any(len(o) <= len(text) for o in siblings):
        return None
    if not all(o.endswith("\n") or o.rstrip()[-1:] in _TERMINAL for o in siblings):
        return None
    # The last line must be the start of a line every sibling carries in full (by its label or its first
    # two words): a log's last line ("2 failed, 10 passed") is no line the others cut.
    last = text.rsplit("\n", 1)[-1]
    head = last.split(":", 1)[0] + ":" if ":" in last[:40] else " ".join(last.split()[:2])
    if len(head) < 4 or len(last) <= len(head):
        return None
    for o in siblings:
        lines = o.splitlines()
        at = next((i for i, ln in enumerate(lines) if ln.startswith(head) and len(ln) > len(last)), None)
        if at is None:
            return None
    return text[-30:]


# -- retries that masked a failure --------------------------------------------------

_YEAR = re.compile(r"\b(?:19|20)\d\d\b")


def _stale_marker(value: Any, *, lexicon: Lexicon = ENGLISH) -> str | None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            if lexicon.stale_keys.match(str(k)) and v not in (None, False, "false", "False", 0, ""):
                return f"{k}={v!r}"
    return None


@reading(Reads(statuses=OK, retries=True))
def stale_retry(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A retry, after a failed attempt, that succeeded with cached or aged data, or data for another period.

    A retry policy that falls back to a cache turns an outage into a wrong
    value nobody sees: the error is "recovered" and the stale result flows on.
    """
    if step.retry_of is None or step.status != "ok" or step.retry_of not in ctx.graph.steps:
        return
    prev = ctx.step(step.retry_of)
    if prev.status != "error":
        return
    why = f"{prev.error.type}" if prev.error is not None else "an error"
    marker = _stale_marker(step.output)
    if marker is not None:
        yield Evidence(
            step.step_id,
            0.65,
            f"attempt {step.attempt} after {why} returned cached or aged data ({marker}): the failure was masked with a stale value",
            "stale-retry",
        )
        return
    asked = set(_YEAR.findall(content.text_of(step.input)))
    got = set(_YEAR.findall(content.text_of(step.output)))
    if asked and got and not asked & got:
        yield Evidence(
            step.step_id,
            0.55,
            f"attempt {step.attempt} after {why} returned data for {', '.join(sorted(got))} when asked for "
            f"{', '.join(sorted(asked))}: a stale copy served by the retry?",
            "stale-retry",
        )


@reading(Reads(kinds=TOOLS, statuses=OK))
def cached_answer(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A tool or retrieval answer that says it came from a cache (a ``cached_at`` field, ``fetched: cache``)."""
    if step.kind not in _OBSERVERS or step.status != "ok" or step.retry_of is not None:
        return  # (a retry's cache is `stale_retry`'s)
    out = step.output
    if isinstance(out, str) and out.lstrip()[:1] == "{" and len(out) < 100_000:
        try:
            out = json.loads(out)
        except (ValueError, RecursionError):
            return
    if not isinstance(out, Mapping):
        return
    marker = _stale_marker(out, lexicon=ctx.lexicon)
    if marker is None:
        marker = next(
            (
                f"{k}={v!r}"
                for k, v in out.items()
                if _fresh_field(str(k), ctx.lexicon)
                and isinstance(v, str)
                and v.casefold() in ctx.lexicon.cache_values
            ),
            None,
        )
    if marker is not None:
        yield Evidence(
            step.step_id,
            0.4,
            f"its answer says it came from a cache ({marker}): a stale copy?",
            "stale-cache",
        )


# -- an answer older than its siblings' ---------------------------------------------


def _fresh_field(name: str, lexicon: Lexicon) -> bool:
    words = frozenset(w for w in re.split(r"[^a-z0-9]+", str(name).lower()) if w)
    return bool(words & lexicon.fresh_words) or {"as", "of"} <= words


def _older(mine: Any, theirs: Any) -> bool:
    """Whether a freshness value is older than another of the same shape (a lower version, an earlier time)."""
    if isinstance(mine, bool) or isinstance(theirs, bool):
        return False
    if isinstance(mine, (int, float)) and isinstance(theirs, (int, float)):
        return mine < theirs
    if isinstance(mine, str) and isinstance(theirs, str) and len(mine) == len(theirs):
        shape = re.sub(r"\d", "0", mine)
        return shape == re.sub(r"\d", "0", theirs) and any(c.isdigit() for c in shape) and mine < theirs
    return False


def _fresh_values(ctx: DiagnoseContext) -> dict[str, tuple[int, dict[Any, dict[str, tuple[int, Any]]]]]:
    """Per step name: how many calls answered a mapping, and per freshness field the values they answered
    (``repr`` -> how many, one of them).  Built once per run: asking each step about every other call of its
    name was quadratic in a tool's calls."""
    out: dict[str, tuple[int, dict[Any, dict[str, tuple[int, Any]]]]] = {}
    for s in ctx.run.steps:
        if s.status != "ok" or not isinstance(s.output, Mapping):
            continue
        n, fields = out.get(s.name, (0, {}))
        for k, v in s.output.items():
            if _fresh_field(str(k), ctx.lexicon):
                seen = fields.setdefault(k, {})
                r = repr(v)
                seen[r] = (seen[r][0] + 1, seen[r][1]) if r in seen else (1, v)
        out[s.name] = (n + 1, fields)
    return out


@reading(Reads(kinds=TOOLS, statuses=OK))
def stale_sibling(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """An answer whose freshness field (a version, an ``as_of`` time) is older than the one value every other
    call of the same tool answered with: a stale copy among fresh ones."""
    if step.kind not in _OBSERVERS or step.status != "ok" or not isinstance(step.output, Mapping):
        return
    calls, fields = ctx.memo("stale-sibling", lambda: _fresh_values(ctx)).get(step.name, (0, {}))
    others = calls - 1
    if others < 2:
        return
    asked = content.text_of(step.input)
    for k, mine in step.output.items():
        if k not in fields or re.search(rf"(?<![\w.-]){re.escape(str(mine))}(?![\w.-])", asked):
            continue
        theirs = dict(fields[k])
        n, _ = theirs[repr(mine)]
        if n == 1:
            del theirs[repr(mine)]
        else:
            theirs[repr(mine)] = (n - 1, mine)
        # Every other call answered the field, and all with one value.
        if len(theirs) != 1 or sum(c for c, _ in theirs.values()) != others:
            continue
        [(_, value)] = theirs.values()
        if not _older(mine, value):
            continue
        yield Evidence(
            step.step_id,
            0.5,
            f"answered {k}={mine!r} where the {others} other calls of {step.name} all answered "
            f"{k}={value!r}: a stale copy?",
            "stale-sibling",
        )
        return


# -- an answer written unlike its siblings' ---------------------------------------

FORMAT_DRIFT = 0.5
"""The suspicion of an answer writing a field unlike every other call of its tool: as strong as a stale copy
among fresh ones (`stale_sibling`), the same kind of sign (one answer unlike all its siblings)."""
_MIN_SIBLINGS = 3
"""Other calls that must agree on a field's format before one written otherwise stands out."""


def _format(value: Any) -> str | None:
    """A code-like text's format: each run of digits a ``9`` (``06:40`` -> ``9:9``; ``2026-12-02T06:40`` ->
    ``9-9-9T9:9``); None for anything else (numbers, words, sentences: their formats vary by nature)."""
    if not isinstance(value, str) or len(value) > 40 or not any(c.isdigit() for c in value):
        return None
    if any(c.isspace() for c in value.strip()):
        return None
    return re.sub(r"\d+", "9", value.strip())


def _answer(step: Step) -> Mapping[str, Any] | None:
    """A tool's answer as a mapping: as recorded, or read from the JSON text a framework recorded it as (a
    LangChain tool's result is the string its function returned)."""
    out = step.output
    if isinstance(out, str) and content.looks_like_json(out):
        out = content.parse_json(out)
    return out if isinstance(out, Mapping) else None


_Formats = dict[str, tuple[int, dict[str, dict[str, tuple[int, str]]]]]


def _formats(ctx: DiagnoseContext) -> _Formats:
    """Per step name: how many calls answered a mapping, and per field the formats they wrote it in (format ->
    how many, one value so written).  Built once per run, as `_fresh_values`."""
    out: _Formats = {}
    for s in ctx.run.steps:
        answer = _answer(s) if s.kind in _OBSERVERS and s.status == "ok" else None
        if answer is None:
            continue
        n, fields = out.get(s.name, (0, {}))
        for k, v in answer.items():
            f = _format(v)
            if f is not None:
                seen = fields.setdefault(str(k), {})
                seen[f] = (seen[f][0] + 1, seen[f][1]) if f in seen else (1, str(v))
        out[s.name] = (n + 1, fields)
    return out


@reading(Reads(kinds=TOOLS, statuses=OK))
def format_sibling(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """An answer writing a field (a time, a date, a code) in another format than the one every other call of
    the same tool wrote it in: the producer drifted on this call, and a consumer reading the usual format
    misreads it.  A value the call was asked for is the caller's, not the tool's."""
    answer = _answer(step) if step.kind in _OBSERVERS and step.status == "ok" else None
    if answer is None:
        return
    calls, fields = ctx.memo("format-sibling", lambda: _formats(ctx)).get(step.name, (0, {}))
    others = calls - 1
    if others < _MIN_SIBLINGS:
        return
    asked = content.text_of(step.input)
    for k, mine in answer.items():
        f = _format(mine)
        if f is None or str(mine) in asked:
            continue
        theirs = [seen for g, seen in fields.get(str(k), {}).items() if g != f]
        # Every other call wrote the field, all in one format, and none in this one.
        if len(theirs) != 1 or theirs[0][0] != others:
            continue
        usual = theirs[0][1]
        yield Evidence(
            step.step_id,
            FORMAT_DRIFT,
            f"answered {k}={mine!r}; its {others} sibling calls of {step.name} all wrote {k} like {usual!r}: "
            "its format drifted",
            "format-sibling",
        )
        return


# -- environment reads ---------------------------------------------------------------


def _snapshot_value(snapshot: Any, key: str) -> Any:
    """The value the run's environment snapshot holds for a read key (``config:X``, ``env:X``, ``X``), if any."""
    if not isinstance(snapshot, Mapping):
        return None
    name = key.split(":", 1)[-1]
    for where in (snapshot, snapshot.get("env"), snapshot.get("config")):
        if isinstance(where, Mapping):
            for k in (key, name):
                if k in where and not isinstance(where[k], Mapping):
                    return where[k]
    return None


def _earlier_reads(ctx: DiagnoseContext, key: str, step: Step) -> list[Any]:
    """The values earlier steps read for the same key (this run's, and earlier turns' when the search spans them)."""
    out = []
    for s in ctx.run.steps:
        if s.step_id == step.step_id:
            break
        reads = s.attributes.get("env_reads")
        if isinstance(reads, Mapping) and key in reads:
            out.append(reads[key])
    return out


@reading(Reads(attribute="env_reads"))
def environment_read(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """An environment read whose value changed since an earlier turn, differs from the snapshot, or is named by the failure."""
    reads = step.attributes.get("env_reads")
    if not isinstance(reads, Mapping) or not reads:
        return
    env_steps = [ctx.step(d.step_id) for d in ctx.graph.parents(step.step_id) if d.kind == "env"]
    snapshot = env_steps[0].output if env_steps else ctx.run.metadata.get("env")
    failures = " ".join(f.message for f in ctx.failures).lower()
    for key, value in reads.items():
        shown = content.text_of(value, 60)
        before = [v for v in _earlier_reads(ctx, str(key), step) if v != value]
        if before:
            yield Evidence(
                step.step_id,
                0.6,
                f"read {key}={shown!r}, but an earlier read (this run or an earlier turn) got {content.text_of(before[-1], 60)!r}: the environment changed",
                "environment",
            )
            return
        snap = _snapshot_value(snapshot, str(key))
        if snap is not None and str(snap) != str(value):
            yield Evidence(
                step.step_id,
                0.55,
                f"read {key}={shown!r}, but the run's environment snapshot has {content.text_of(snap, 60)!r}",
                "environment",
            )
            return
        text = str(value).lower()
        if len(text) >= 4 and text in failures:
            yield Evidence(
                step.step_id,
                0.5,
                f"the failure names {shown!r}, a value this step read from the environment ({key})",
                "environment",
            )
            return


__all__ = [
    "cached_answer",
    "environment_read",
    "format_sibling",
    "stale_retry",
    "stale_sibling",
    "truncated_output",
]
