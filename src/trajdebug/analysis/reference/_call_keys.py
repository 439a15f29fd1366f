"""A call's request and answer as keys compared across runs: what a step was asked, and what it answered, as text.

Two runs' calls are alike when they were asked the same (`asked_of`: the input without a model call's envelope,
with the shared state it read) and answered the same (`answer_key`: canonical JSON with the ids a framework mints
per run masked).  `keyed_parts` cuts an answer into its sizeable parts.  The profile (`_profile.py`), the
same-input check (`_answers.py`), enclosing steps (`_enclosing.py`) and the reach of a difference (`_reach.py`)
all compare calls by these keys, so they live apart from any one of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from trajdebug.analysis.lineage import semantic
from trajdebug.core.model import Step


def keyed_parts(value: Any) -> list[tuple[str | None, str]]:
    """The sizeable parts of an answer (the whole, and its top-level values of 40+ characters), canonical, with
    the key each top-level value sits under (None for the whole answer)."""
    out: list[tuple[str | None, str]] = []
    whole = _canon(value)
    if len(whole) >= 40:
        out.append((None, whole))
    if isinstance(value, Mapping):
        for k, v in value.items():
            c = _canon(v)
            if len(c) >= 40:
                out.append((str(k), c))
    return out[:20]


_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)
"""A UUID: an identity minted per run (a message id, a trace id), never what a step was asked or answered."""


def answer_key(value: Any) -> str:
    """A request or an answer as `_canon` text with its UUIDs masked, for asking whether two runs' calls were alike.

    Frameworks mint fresh ids on every run (a message's id, a tool call's run id, inside the repr of an
    object a router returns): two answers that differ only there are the same answer.
    """
    return _UUID.sub("<uuid>", _canon(value))


def asked_of(step: Step, steps: Mapping[str, Step] | None = None) -> Any:
    """What a step was asked: its input (a model call's without the envelope), with the shared state it read.

    A step reading a key of ``run.state`` answers from its arguments and from that value: two calls given
    the same arguments over different state were not asked the same thing (a planner reading a table that
    an earlier step filled).  The value read is what the key's writer wrote (its ``state_values``).
    """
    asked = semantic(step, step.input)
    if not steps:
        return asked
    read: dict[str, Any] = {}
    for d in step.deps:
        writer = steps.get(d.step_id) if d.kind == "state" and d.key else None
        written = writer.attributes.get("state_values") if writer is not None else None
        if isinstance(written, Mapping) and d.key in written:
            read[str(d.key)] = written[d.key]
    return {"input": asked, "state": read} if read else asked


def _canon(value: Any) -> str:
    """A value as canonical JSON (sorted keys), for comparing requests and answers across runs."""
    import json

    try:
        return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)[:20_000]
    except (TypeError, ValueError):
        return repr(value)[:20_000]


__all__ = [
    "keyed_parts",
    "answer_key",
    "asked_of",
]
