"""Diagnosers of data flow: values lost on the way, parse steps, state writes, retries.

Plain callables ``(step, ctx) -> Iterable[Evidence]`` like those of
`trajdebug.analysis.evidence` (which registers them).  They compare what a
step was given with what it passed on: an omission leaves no trace in a
dynamic slice (Agrawal et al. 1993 on relevant slicing), so the value a
failure misses is traced back to the step that received it and did not
pass it on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.analysis import content
from trajdebug.analysis.diagnose import DiagnoseContext, Evidence
from trajdebug.model import Step


def dropped_value(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A step that received a value the failure misses and did not pass it on (where the value was lost).

    Quoted values (``KeyError: '2025-Q2'``) are traced through every step; words
    of the failure message that come from the task only through LLM steps
    (code reshapes data and drops field names; a model drops content).
    """
    if step.kind in ("agent", "input", "output") or step.status != "ok":
        return
    out = step.output
    if out is None or isinstance(out, (bool, int, float)):
        return  # a count or a flag is not a transformation of the input
    values = ctx.failure_values()
    if not values:
        return
    src = content.text_of(step.input).lower()
    dst = ctx.text(step.step_id)
    for v, quoted, where in values:
        lv = v.lower()
        if quoted:
            lost = lv in src and lv not in dst
        elif step.kind != "llm":
            continue
        else:
            pat = re.compile(rf"\b{re.escape(lv)}\b")
            lost = bool(pat.search(src)) and not pat.search(dst)
        if lost:
            # A quoted value is what the failure misses; a task word only may be.
            yield Evidence(
                step.step_id,
                0.5 if quoted else 0.35,
                f"lost {v!r}: in its input but not in its output (the failure at {where} misses it)",
                "dropped-value",
            )
            return


def _values_of(value: Any) -> list[Any]:
    """The telling scalar values inside a value (strings of 2+ characters, numbers outside -10..10)."""
    out: list[Any] = []
    seen: set[str] = set()
    for _, v in content.leaves(value):
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, str):
            if not 2 <= len(v.strip()) <= 200:
                continue
        elif not isinstance(v, (int, float)) or content.norm_number(repr(v)) is None:
            continue
        k = repr(v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


def _lost(values: list[Any], text: str) -> list[Any]:
    """The values that do not show in a (lower-case) text, numbers in any restated form."""
    forms = content.number_forms(text)
    lost = []
    for v in values:
        if isinstance(v, str):
            if v.strip().lower() not in text:
                lost.append(v)
        elif content.norm_number(repr(v)) not in forms:
            lost.append(v)
    return lost


def parse_dropped(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A parse step that dropped items, fields or values of its input."""
    if step.kind != "parse" or step.status == "error":
        return
    src: Any = step.input
    if isinstance(src, Mapping) and len(src) == 1:
        src = next(iter(src.values()))
    if isinstance(src, str) and content.looks_like_json(src):
        src = content.parse_json(src)
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
    if isinstance(src, (Mapping, list)):
        values = _values_of(src)
        lost = _lost(values, ctx.text(step.step_id))
        if lost:
            frac = len(lost) / len(values)
            shown = ", ".join(repr(v)[:30] for v in lost[:3])
            yield Evidence(
                step.step_id,
                0.3 + 0.4 * frac,
                f"dropped {len(lost)} of the {len(values)} values of its input (e.g. {shown})",
                "parse-dropped",
            )
        elif values:
            yield Evidence(step.step_id, 0.0, "kept every value of its input", "parse-dropped", sound=True)


def _failed_pre(step: Step) -> list[Mapping[str, Any]]:
    checks = step.attributes.get("checks")
    if not isinstance(checks, list):
        return []
    return [
        c for c in checks if isinstance(c, Mapping) and c.get("when") == "pre" and c.get("passed") is False
    ]


def state_write(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A state write that its readers found invalid: a rejecting reader, or values given to the writer that no reader saw."""
    if not ctx.has_state_edges():
        return
    readers = [ctx.step(cid) for cid, d in ctx.graph.children(step.step_id) if d.kind == "state"]
    if not readers:
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
    values = _values_of(step.input)
    if not values:
        return
    seen = "\n".join(content.text_of(r.input).lower() for r in readers)
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


__all__ = ["dropped_value", "parse_dropped", "retry_divergence", "state_write"]
