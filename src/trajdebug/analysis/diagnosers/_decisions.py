"""Diagnosers of decisions, shared state and sub-agents: choices, lost updates, delegated results.

* **Decisions** (`decision`): a ``condition`` step chooses a branch.  Its
  choice is suspect when alike decisions of the same run went the other way
  (the same kind of input, another answer), or when nothing in its input
  mentions what it chose (a label not grounded in the facts it was given).
* **Races** (`lost_update`): two steps that read and wrote the same state key
  while both were running (parallel branches overlapping in time); the one
  that wrote last overwrote the other's update without seeing it.  The write
  that won is blamed, with the pair as evidence.
* **Sub-agents** (`delegated_result`): an ``agent`` step whose output states
  a value that contradicts what its own children produced.

They rank, they do not prove (`trajdebug.analysis.diagnosers._context`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.model import Step


_TOKEN = re.compile(r"[a-z]{3,}")
_STEM = 4
"""Letters compared when matching a choice's words to its input (``monthly`` ~ ``month``, ``growth`` ~ ``growing``)."""


def _choice(step: Step) -> str | None:
    out = step.output
    if isinstance(out, bool):
        return str(out).lower()
    if isinstance(out, str) and 0 < len(out.strip()) <= 40 and len(out.split()) <= 3:
        return out.strip()
    return None


def _words(text: str) -> set[str]:
    return set(_TOKEN.findall(text.lower()))


def _similar(a: set[str], b: set[str]) -> bool:
    return bool(a and b) and len(a & b) / len(a | b) >= 0.6


def decision(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A decision (``condition`` step) whose choice differs from alike decisions, or that its input does not ground."""
    if step.kind != "condition" or step.status != "ok":
        return
    choice = _choice(step)
    if choice is None:
        return
    mine = _words(content.text_of(step.input))
    alike = [
        s
        for s in ctx.run.steps
        if s.kind == "condition"
        and s.name == step.name
        and s.step_id != step.step_id
        and s.status == "ok"
        and _choice(s) is not None
        and _similar(mine, _words(content.text_of(s.input)))
    ]
    if alike:
        others = [_choice(s) for s in alike]
        differ = [c for c in others if c != choice]
        if len(differ) * 2 <= len(others):
            yield Evidence(
                step.step_id,
                0.0,
                f"chose {choice!r} like {len(others) - len(differ)} of {len(others)} alike decisions of this run (or its earlier turns)",
                "decision",
                sound=True,
            )
            return
        if len(differ) * 2 > len(others):
            usual = max(set(differ), key=differ.count)
            yield Evidence(
                step.step_id,
                0.5,
                f"chose {choice!r} where {len(differ)} of {len(others)} alike decisions of this run (or its earlier turns) "
                f"(inputs of the same kind) chose {usual!r}",
                "decision",
            )
            return
    said = _TOKEN.findall(choice.lower().replace("_", " "))
    if not said:
        return
    stems = {w[:_STEM] for w in mine}
    if not any(w[:_STEM] in stems for w in said):
        yield Evidence(
            step.step_id,
            0.45,
            f"chose {choice!r}, which nothing in its input mentions: the choice is not grounded in what it was given",
            "decision",
        )
    else:
        yield Evidence(
            step.step_id, 0.0, f"its choice {choice!r} is named in its input", "decision", sound=True
        )


# -- races on shared state -------------------------------------------------------------


def _keys(step: Step, attr: str) -> set[str]:
    v = step.attributes.get(attr)
    return {str(k) for k in v} if isinstance(v, (list, tuple, Mapping)) else set()


def _overlap(a: Step, b: Step) -> bool:
    if not (a.start_ns and b.start_ns and a.end_ns and b.end_ns):
        return False
    return a.start_ns < b.end_ns and b.start_ns < a.end_ns


def _lost(theirs: Any, mine: Any) -> list[str]:
    """The string values the other write held that this one does not."""
    text = content.text_of(mine).lower()
    return [
        v for _, v in content.leaves(theirs) if isinstance(v, str) and len(v) >= 3 and v.lower() not in text
    ]


def lost_update(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A state write that overwrote a parallel step's update of the same key (both read, then wrote, overlapping in time)."""
    writes = _keys(step, "state_writes")
    if not writes or step.end_ns is None:
        return
    reads = _keys(step, "state_reads")
    values = step.attributes.get("state_values")
    for other in ctx.run.steps:
        if other.step_id == step.step_id or not _overlap(step, other):
            continue
        if other.end_ns is None or other.end_ns > step.end_ns:
            continue  # this write came first: the other one won
        shared = writes & _keys(other, "state_writes")
        for key in sorted(shared):
            if key not in reads and key not in _keys(other, "state_reads"):
                continue
            lost: list[str] = []
            theirs = other.attributes.get("state_values")
            if (
                isinstance(theirs, Mapping)
                and isinstance(values, Mapping)
                and key in theirs
                and key in values
            ):
                lost = _lost(theirs[key], values[key])
                if not lost:
                    continue  # its value carries the other's update: no update was lost
            what = f" (e.g. {lost[0][:40]!r} is gone)" if lost else ""
            yield Evidence(
                step.step_id,
                0.6,
                f"wrote {key!r} while {other.name} was also updating it in parallel; this later write "
                f"overwrote the other's update{what}: a lost update (race)",
                "race",
            )
            return


# -- sub-agents ---------------------------------------------------------------------------


def delegated_result(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A sub-agent (``agent`` step) whose output states a value that contradicts its own children's outputs."""
    if step.kind != "agent" or step.status != "ok" or not isinstance(step.output, (Mapping, list)):
        return
    kids = [c for c in ctx.run.children(step.step_id) if c.status == "ok" and c.output is not None]
    if not kids:
        return
    mine = content.keyed_values(step.output)
    for c in reversed(kids):
        theirs = content.keyed_values(c.output)
        for k, v in mine.items():
            w = theirs.get(k)
            if (
                w is not None
                and type(v) is type(w)
                and not isinstance(v, bool)
                and v != w
                and k not in ("id", "name", "type", "role", "status")
            ):
                yield Evidence(
                    step.step_id,
                    0.5,
                    f"returned {k}={v!r}, but its own step {c.name} produced {w!r}",
                    "sub-agent",
                )
                return


__all__ = ["decision", "delegated_result", "lost_update"]
