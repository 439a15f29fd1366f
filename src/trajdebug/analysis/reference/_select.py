"""Which recorded runs can serve as references for a failing run: passing runs of the same agent.

A reference is a run of the same agent (same run name, and the same ``agent``
metadata when both runs state one) that succeeded, recorded before or after
the failing run, that is neither a replay (``replay_of``) nor a run recorded to
verify another (``reference_for``: it answered the failing run's own input
with the fault removed, a luxury real users do not have).  The most recent
come first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.model import Run


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


MAX_REFERENCES = 50
"""At most this many references are used (the most recent)."""


def is_original(run: Run) -> bool:
    """Whether a run is one the agent made (not a replay, not a run recorded to verify another)."""
    md = run.metadata
    return not md.get("replay_of") and not md.get("reference_for")


def same_agent(a: Run, b: Run) -> bool:
    """Whether two runs are runs of the same agent."""
    if a.name != b.name:
        return False
    x, y = a.metadata.get("agent"), b.metadata.get("agent")
    return x is None or y is None or x == y


def references(run: Run, pool: Iterable[Run], limit: int = MAX_REFERENCES) -> tuple[Run, ...]:
    """The passing runs of the same agent in ``pool`` that can stand as references for ``run``."""
    found = [
        r
        for r in pool
        if r.run_id != run.run_id and r.outcome == "success" and is_original(r) and same_agent(r, run)
    ]
    found.sort(key=lambda r: r.start_ns, reverse=True)
    return tuple(found[:limit])


def stated(value: Any) -> bool:
    """Whether ``value`` states an input: None, a blank text, and an empty mapping or list state none (a first
    step that takes no argument records ``{}`` whatever ticket it then pops from a queue: review rev51u M1)."""
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    return not isinstance(value, (dict, list, tuple)) or bool(value)


def given_input(run: Run) -> tuple[str, Any] | None:
    """What a run was asked, as ``(where, value)``: its metadata's ``task`` (or ``task_id``, ``input``, ``args``),
    else its first step's input (``first``); None for a run that states neither (`stated`: an empty one is
    none, so two runs given nothing are never the same input, whatever each was asked)."""
    for key in ("task", "task_id", "input", "args"):
        if stated(run.metadata.get(key)):
            return (key, run.metadata[key])
    return ("first", run.steps[0].input) if run.steps and stated(run.steps[0].input) else None


def input_key(run: Run) -> tuple[str, str] | None:
    """What a run was given (`given_input`) as a key: where it was read, and the value written as JSON (keys
    sorted; where they do not sort, an int beside a str, as given).  None for a run given nothing, or a value
    too deep to write: it is the same input as no other run's.  Runs are indexed by it (`same_request`)."""
    given = given_input(run)
    if given is None:
        return None
    where, value = given
    try:
        return where, json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        pass
    except RecursionError:
        return None
    try:
        return where, json.dumps(value, default=str)
    except (TypeError, ValueError, RecursionError):
        return None


def _stamp(name: Any, lexicon: Lexicon) -> bool:
    """Whether an input field's name says it stamps the request (an id, a time it was received, a session)."""
    words = {w for w in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", str(name)).lower()) if w}
    return bool(words & (lexicon.identifier_words | lexicon.timing_words | lexicon.request_stamp_words))


def _unstamped(value: Any, lexicon: Lexicon, depth: int = 0) -> Any:
    """An input without the fields that stamp the request (`_stamp`), in its mappings at any depth."""
    if depth > 20:
        return value
    if isinstance(value, dict):
        return {k: _unstamped(v, lexicon, depth + 1) for k, v in value.items() if not _stamp(k, lexicon)}
    if isinstance(value, (list, tuple)):
        return [_unstamped(v, lexicon, depth + 1) for v in value]
    return value


def first_input_key(run: Run, lexicon: Lexicon = ENGLISH) -> str | None:
    """The first step's input as `same_request` compares it when a metadata key says what the run was asked:
    without the fields that stamp one request (`_stamp`: ``request_id``, ``received_at``), written as JSON
    (keys sorted where they sort).  None when the first step states no input (`stated`) or cannot be written,
    and for an enclosing step (kind ``agent``): what it was handed is the agent's code's, which a regression of
    that code changes under one request (a diff then names where the request was changed, not another input)."""
    if not run.steps or not stated(run.steps[0].input) or run.steps[0].kind == "agent":
        return None
    value = _unstamped(run.steps[0].input, lexicon)
    for keys in (True, False):
        try:
            return json.dumps(value, sort_keys=keys, default=str)
        except (TypeError, ValueError):
            continue
        except RecursionError:
            return None
    return None


def same_request(a: Run, b: Run) -> bool:
    """Whether two runs of the same agent were given the same input: the same ``task`` (or the same first input,
    as `input_key` writes it) and, when that was read from the metadata and both runs' first steps state an
    input, the same first input too (`first_input_key`).  A passing one is then a same-input reference of the
    other, and ``trajdebug diff`` says their inputs differ exactly when this is False
    (`trajdebug.replay.input_difference` calls it: one rule).

    The metadata alone is not enough: an agent may record one constant ``task`` (``"expense report"``) while
    each run is given other receipts (nu29).  A retry of one request may carry a per-run request id or the
    time it came in: fields named so (`_stamp`: ``request_id``, ``received_at``, ``session``) are left out of
    the first inputs compared.  Inputs that differ otherwise are other inputs, even under one task id (a
    tau-style task whose user simulator words its first message afresh each run): the two runs then did not
    start from the same request, and calling them the same input would send the reader to a diff that
    differs from the first step on, the worse error of the two."""
    x = input_key(a)
    if x is None or x != input_key(b):
        return False
    if x[0] == "first":
        return True
    return first_inputs_agree(first_input_key(a), first_input_key(b))


def first_inputs_agree(a: str | None, b: str | None) -> bool:
    """Whether two runs' first inputs (`first_input_key`) leave them the same input: equal, or one not stated."""
    return a is None or b is None or a == b


__all__ = [
    "MAX_REFERENCES",
    "first_input_key",
    "first_inputs_agree",
    "given_input",
    "input_key",
    "is_original",
    "references",
    "same_agent",
    "same_request",
    "stated",
]
