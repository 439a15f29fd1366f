"""A state writer's values against what it was given: numbers restated, scaled or stored under another name.

Split from `trajdebug.analysis.diagnosers._dataflow` (which holds the other data-flow diagnosers); registered by
`trajdebug.analysis.diagnosers._steps` like them.  A state write is a step's output that later steps read without
a data edge, so its values are traced to the step's input and the earlier outputs it closed over.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis import _numerals as numerals
from trajdebug.analysis.diagnosers._context import _QUOTED, DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._reads import OK, Reads, reading
from trajdebug.analysis.lineage import derivation
from trajdebug.core.model import REPR_KEY, TRUNCATED_KEY, Dependency, Step
from trajdebug.core.values import atoms, is_year


_NAMED_NUMBER = re.compile(r"(?<![\w.,])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])")
_WORDLIKE = re.compile(r"^[a-z]+$")
_NAMED_IDENT = re.compile(r"[A-Za-z0-9][\w./:-]{5,}[A-Za-z0-9]")


def _named_values(ctx: DiagnoseContext) -> list[tuple[str, str]]:
    """What the failures name, as ``(kind, value)``: quoted values, identifiers, decimal or long numbers."""

    def compute() -> list[tuple[str, str]]:
        out: dict[tuple[str, str], None] = {}
        for f in ctx.failures:
            for m in _QUOTED.finditer(f.message):
                v = (m.group(1) or m.group(2) or "").strip().lower()
                # Values, not prose: a sentence a model wrote is always its own.
                if len(v) >= 2 and len(v.split()) <= 3:
                    out[("label" if _WORDLIKE.match(v) else "text", v)] = None
            for m in _NAMED_IDENT.finditer(f.message):
                v = m.group(0).lower()
                if re.search(r"[_/:.]", v) and re.search(r"[a-z]", v) and not v.endswith("error"):
                    out[("text", v)] = None
            for m in _NAMED_NUMBER.finditer(f.message):
                raw = m.group(0)
                n = numerals.norm_number(raw)
                if n is not None and ("." in raw or _significant(float(n)) >= 3):
                    out[("number", n)] = None
        return list(out)

    found: list[tuple[str, str]] = ctx.memo("named-values", compute)
    return found


def _significant(n: float) -> int:
    """Significant digits of a number (``7.5``: 2, ``676847.0``: 6, ``1200``: 2)."""
    digits = f"{abs(n):.10g}".replace(".", "").lstrip("0").rstrip("0")
    return len(digits)


def _numbers(value: Any) -> list[float]:
    out: list[float] = []
    for _, v in content.leaves(value):
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(float(v))
        elif isinstance(v, str):
            out.extend(float(n) for n in numerals.stated_numbers(v))
    return out


def _restated(x: float, forms: set[str]) -> bool:
    for d in (0, 1, 2):
        r = round(x, d)
        if (repr(int(r)) if float(r).is_integer() else repr(r)) in forms:
            return True
    return False


def _scaling(x: float, given: list[float]) -> tuple[float, int] | None:
    """An input number ``y`` with ``x == y * 10**k`` (k in +-1..3), that is not a fraction/percent conversion."""
    for y in given:
        if y == 0:
            continue
        for k in (1, 2, 3, -1, -2, -3):
            z = y * 10.0**k
            if abs(z - x) <= 1e-6 * max(abs(x), 1.0) or round(z, 2) == round(x, 2) != 0:
                # A fraction restated as a percentage (0.226 -> 22.6) and back is no slip.
                if (k == 2 and abs(y) <= 1.0) or (k == -2 and abs(x) <= 1.0):
                    continue
                return y, k
    return None


def _state_before(step: Step, ctx: DiagnoseContext) -> frozenset[tuple[str, str]]:
    """The leaves ``(path, repr)`` the state keys a step writes held before it, as the last earlier write of
    each key recorded them: a writer records the whole value of a key (every employee's payslip so far), and
    what an earlier write left there is kept, not written, by this one."""

    def compute() -> dict[str, frozenset[tuple[str, str]]]:
        last: dict[str, Any] = {}
        out: dict[str, frozenset[tuple[str, str]]] = {}
        for s in ctx.run.steps:
            vals = s.attributes.get("state_values")
            if not isinstance(vals, Mapping) or not vals:
                continue
            before = {k: last[k] for k in vals if k in last}
            out[s.step_id] = frozenset((p, r) for p, _, r in _state_leaves(before, ctx))
            last.update(vals)
        return out

    index: dict[str, frozenset[tuple[str, str]]] = ctx.memo("state-before", compute)
    return index.get(step.step_id, frozenset())


def _state_leaves(values: Mapping[str, Any], ctx: DiagnoseContext) -> list[tuple[str, Any, str]]:
    """``(path, leaf, repr(leaf))`` of `content.leaves` of the state values a step wrote (or held before it).

    Read key by key, and each key's value once per run: the value one write stores is the one the next
    write of that key finds there (`_state_before`), and a long ledger is read once, not twice.
    """
    if TRUNCATED_KEY in values or REPR_KEY in values:
        return []  # a marker: `content.leaves` reads nothing of it
    # By key and the identity of its value (kept alive in the entry, so the identity is never reused).
    memo: dict[tuple[str, int], tuple[Any, list[tuple[str, Any, str]]]] = ctx.memo("state-leaves", dict)
    out: list[tuple[str, Any, str]] = []
    for k, v in values.items():
        hit = memo.get((k, id(v)))
        if hit is None or hit[0] is not v:
            hit = memo[(k, id(v))] = (v, [(p, leaf, repr(leaf)) for p, leaf in content.leaves({k: v})])
        out.extend(hit[1])
    return out


def _stored_under(step: Step) -> Iterable[Evidence]:
    """A state step that stored a record under an id none of its inputs holds, while it was given an
    id of the same shape (``ZK-0121`` for the ``ZK-0112`` it was given): the key it wrote is its own,
    and readers asking for the given id find nothing."""
    keys = [k for k in step.output if isinstance(k, str) and content.ID_TOKEN.fullmatch(k)] if isinstance(step.output, Mapping) else []
    if step.kind != "state" or step.status != "ok" or not keys:
        return
    given = content.unmarked_text(step.input)
    ids = {m.group(0) for m in content.ID_TOKEN.finditer(given)}
    for k in keys:
        if k in ids:
            continue
        like = sorted(i for i in ids if content.char_shape(i) == content.char_shape(k))
        if like:
            yield Evidence(
                step.step_id,
                0.45,
                f"stored under {k!r}, an id none of its inputs holds (it was given {like[0]!r})",
                "state-values",
                values=(k,),
            )
            return


def _computed_date(step: Step, value: str, ctx: DiagnoseContext) -> bool:
    """Whether a date or time a writer stored is one it computed from a given date or time and a given count
    (a clock advanced by a leg's minutes, a due date a term after an issue date): derived, not invented."""
    if ctx.lineage is None:
        return False
    found = [a for a in atoms(value) if a.kind == "date"]
    if len(found) != 1 or found[0].raw.strip() != value.strip():
        return False
    return derivation(ctx.lineage.view(step.step_id), found[0]) is not None


def _state_deps(step: Step, ctx: DiagnoseContext) -> list[Dependency]:
    """The step's recorded ``state`` edges whose writer is in the run and names the key it read, but for the
    keys it writes itself: what they held before it is kept, not a source (`lineage.state_reads`)."""
    written = step.attributes.get("state_values")
    mine = set(written) if isinstance(written, Mapping) else set()
    return [d for d in step.deps if d.kind == "state" and d.key and d.key not in mine and d.step_id in ctx.graph.steps]


_CLOSED_OVER = 200
"""Earlier outputs a write that recorded no input is judged against (as many as a chat log's window)."""


def _earlier_text(step: Step, ctx: DiagnoseContext) -> str:
    """What a write that recorded no input (a block storing the program's variables) could have stored: the
    outputs of the steps before it (any of them may be in a variable), its parents' and the task's text."""
    pos = ctx.graph.position(step.step_id)
    earlier = [ctx.text(s.step_id) for s in ctx.run.steps[max(0, pos - _CLOSED_OVER) : pos] if s.kind != "agent"]
    return "\n".join([*earlier, ctx.upstream_text(step, own_input=False)])


_MIN_KEYED = 3
"""Entries a map needs before the field its keys repeat says how it is keyed: of two, one disagreeing is chance."""


def miskeyed(step: Step, written: Mapping[str, Any], given: str) -> Iterable[Evidence]:
    """A map the step wrote whose entries are records keyed by one of their fields (``findings["bag"]`` holds
    ``component="bag"``), but for one entry, whose record names another (``findings["reeds"]`` holds
    ``component="hemp"``): the record it was given stored under another item's key, overwriting that item's.
    ``given``: the step's input as lower-case text (the misfiled record must be what the step was handed)."""
    for name, m in written.items():
        if not isinstance(m, Mapping) or len(m) < _MIN_KEYED or not all(isinstance(v, Mapping) for v in m.values()):
            continue
        # (The records' own keys, whatever their type: an in-process recording may key a record by numbers.)
        fields: set[Any] = set.intersection(*(set(v) for v in m.values()))
        for f in sorted(fields, key=str):
            odd = [(k, v[f]) for k, v in m.items() if str(v[f]).strip().lower() != str(k).strip().lower()]
            if len(odd) != 1 or not isinstance(odd[0][1], str):
                continue
            key, own = odd[0]
            if len(own.strip()) >= 2 and own.strip().lower() in given and str(key).strip().lower() not in given:
                yield Evidence(
                    step.step_id,
                    0.5,
                    f"wrote the record of {f}={own!r} under {name}[{str(key)!r}], where every other entry is keyed "
                    f"by its {f}",
                    "state-values",
                )
                return


@reading(Reads(statuses=OK))
def state_values(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A state write storing values found in none of its inputs (where a wrong shared value is born)."""
    yield from _stored_under(step)
    written = step.attributes.get("state_values")
    if not isinstance(written, Mapping) or not written or step.status != "ok":
        return
    yield from miskeyed(step, written, ctx.input_text(step).lower() if step.input is not None else "")
    hay = ctx.input_text(step) if step.input is not None else _earlier_text(step, ctx)
    # What it read from the shared state was given to it as much as its arguments (a record read by its id).
    hay += "".join("\n" + ctx.written_text(d.step_id, d.key or "") for d in _state_deps(step, ctx))
    if step.kind in ("tool", "retrieval"):
        # A tool that stores what it fetched writes the world's answer: its own output is one of its inputs.
        hay += "\n" + ctx.text(step.step_id)
    forms = numerals.plain_number_forms(hay)  # stored values are not restated as percentages
    kept = _state_before(step, ctx)
    checked, missing = 0, []
    for path, v, r in _state_leaves(dict(written), ctx):
        if isinstance(v, bool) or v is None or (path, r) in kept:
            continue
        if isinstance(v, (int, float)):
            n = numerals.norm_number(r)
            # (`is_year` holds of 1900 to 2100 alone: a ledger's amounts are not asked, one call per leaf.)
            if n is None or (1900 <= v <= 2100 and is_year(v, step.start_ns)):
                continue
            seen = n in forms
        elif isinstance(v, str):
            t = v.strip().lower()
            if not 2 <= len(t) <= 60 or len(t.split()) > 3:
                continue
            seen = t in hay or _computed_date(step, v, ctx)
        else:
            continue
        checked += 1
        if not seen:
            missing.append(f"{path}={v!r}"[:50])
    if missing:
        frac = len(missing) / checked
        yield Evidence(
            step.step_id,
            0.05 + 0.2 * frac,
            f"wrote {', '.join(missing[:3])}, found in none of its inputs",
            "state-values",
            values=tuple(missing),
        )
    elif checked:
        yield Evidence(
            step.step_id, 0.0, "the values it wrote all come from its inputs", "state-values", sound=True
        )


__all__ = ["miskeyed", "state_values"]
