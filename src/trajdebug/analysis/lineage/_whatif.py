"""What-if arithmetic: which one slip upstream turns the run's number into the one the failure expected.

A failure that states two numbers ("report totals 1,202.05 but finance computes
1,082.51") says what the run computed and what it should have.  The value
lineage knows how the run's number was computed (its derivation tree: a sum
of lines, a line an amount times a rate, the rate looked up).  Replaying that
tree with one common numeric slip at one place (a rate inverted, a power of ten
off, a sign lost, a product that should have been a quotient) and getting the
expected number back names the place: counterfactual reasoning in the manner of
delta debugging (Zeller 2002), done on recorded arithmetic instead of by
re-running the agent.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from trajdebug.analysis.lineage._trace import Lineage, derivation
from trajdebug.core.values import Atom


MAX_DEPTH = 4
"""How far up a derivation the search follows operands."""
MAX_LEAVES = 40
"""The numbers a tree may rest on before the search gives up (a large total says little)."""

SLIPS: tuple[tuple[str, Callable[[float], float | None]], ...] = (
    ("inverted", lambda x: 1.0 / x if x else None),
    ("100x too large", lambda x: x / 100.0),
    ("100x too small", lambda x: x * 100.0),
    ("1000x too large", lambda x: x / 1000.0),
    ("1000x too small", lambda x: x * 1000.0),
    ("10x too large", lambda x: x / 10.0),
    ("10x too small", lambda x: x * 10.0),
    ("sign lost", lambda x: -x),
)
"""Slips of one number, by the name a reason gives them: what the value would have been."""

SWAPS: dict[str, str] = {"mul": "div", "div": "mul", "add": "sub", "sub": "add"}
"""Slips of one computation: the operation it should have done instead."""


@dataclass(slots=True)
class _Node:
    value: float
    step_id: str | None
    atom: Atom
    op: str | None = None
    kids: list[_Node] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Slip:
    """One slip that turns the run's number into the expected one."""

    step_id: str
    """The step where the slip is (it produced the number, or computed with it)."""
    atom: Atom
    """The number it produced (or computed)."""
    what: str
    """The slip, in words: ``inverted``, ``100x too large``, ``computed by mul where div fits``."""
    fixed: float
    """The value the number would have had."""


def slips(
    lin: Lineage, atom: Atom, pos: int, target: float, target_raw: str = "", within: set[str] | None = None
) -> list[Slip]:
    """The single slips upstream of a run's number that would make it ``target``.

    Args:
        lin: The run's value lineage.
        atom: The run's number (as a step at position ``pos`` held it).
        pos: The position of the step holding it (the failing step).
        target: The number the failure says it should have been.
        target_raw: How the failure wrote it (its precision bounds the match).
        within: The failure's backward slice (origins inside it preferred).
    """
    tol = _tolerance(target, target_raw)
    if atom.number is None or abs(atom.number - target) <= tol:
        return []
    root = _tree(lin, atom, pos, within, 0, [0])
    if root is not None and root.step_id is None and pos < len(lin.steps):
        # No step before it held the number: the failing step computed it (a check adding
        # up what it was given), from its own inputs.
        here = lin.steps[pos]
        d = derivation(lin.view(here.step_id), atom)
        if d is not None and d.op != "copy":
            root = _Node(atom.number, here.step_id, atom, d.op)
            budget = [0]
            for a in d.operands:
                kid = _tree(lin, a, pos, within, 1, budget)
                if kid is None:
                    return []
                root.kids.append(kid)
    if root is None or not root.kids:
        return []
    out: list[Slip] = []
    parents = {id(k): n for n in _nodes(root) for k in n.kids}
    for node, alt in _variants(root):
        got = _eval(root, {id(node): alt[1]})
        if got is not None and abs(got - target) <= tol and node.step_id is not None:
            # A slip that works by making its number vanish (a large amount inverted to almost
            # nothing) says only that the other terms already give the target: no slip found.
            gone = _eval(root, {id(node): 0.0})
            if gone is not None and abs(gone - target) <= tol:
                continue
            out.append(_divided(node, parents, Slip(node.step_id, node.atom, alt[0], alt[1])))
    if out:
        return list(dict.fromkeys(out))
    out = _substitutions(lin, root, parents, target, tol)
    if out:
        return out
    # A step called once per item (a converter, a lookup) repeats its slip in every call:
    # the same slip in all the numbers one step name produced.
    groups: dict[str, list[_Node]] = {}
    for n in _nodes(root):
        if n is not root and n.step_id is not None:
            groups.setdefault(_name(lin, n.step_id), []).append(n)
    for nodes in groups.values():
        if len(nodes) < 2:
            continue
        for name, f in SLIPS:
            alts = {id(n): f(n.value) for n in nodes}
            if any(v is None or not math.isfinite(v) for v in alts.values()):
                continue
            got = _eval(root, {k: v for k, v in alts.items() if v is not None})
            if got is not None and abs(got - target) <= tol:
                out.extend(
                    _divided(n, parents, Slip(n.step_id, n.atom, name, alts[id(n)] or 0.0))
                    for n in nodes
                    if n.step_id is not None
                )
                return list(dict.fromkeys(out))
    return out


def _substitutions(lin: Lineage, root: _Node, parents: dict[int, _Node], target: float, tol: float) -> list[Slip]:
    """A number taken where another number the same computation was given fits: the run's number with one
    operand replaced by another value its computing step had in hand (a reading taken from an older record
    where the recent one gives the amount the failure expects).  The slip is at the operand's origin
    (the source that offered the wrong number); only when exactly one such value fits the operand, and only
    a value of the same quantity: written under the operand's field or with its unit (another weight in kg)."""
    if float(target).is_integer() and abs(target) <= 10:
        return []  # a small count: too many operands give it (small integers say little, `numerals.numbers_in`)
    out: list[Slip] = []
    for node in _nodes(root):
        up = parents.get(id(node))
        mine = node.atom
        if up is None or up.step_id is None or node.step_id is None or node.kids or not _PLAIN.match(mine.raw):
            continue
        pool = {
            a.number: a.raw
            for a in lin.view(up.step_id).inputs
            if a.kind == "number"
            and a.number is not None
            and a.number not in (0.0, node.value)
            and _PLAIN.match(a.raw)
            and ((a.field is not None and a.field == mine.field) or (a.unit is not None and a.unit == mine.unit))
        }
        fits = [(v, raw) for v, raw in list(pool.items())[:200] if _close(_eval(root, {id(node): v}), target, tol)]
        if len(fits) == 1:
            v, raw = fits[0]
            out.append(Slip(node.step_id, node.atom, f"taken where the {raw.strip()} also given fits", v))
    return out if len(out) == 1 else []


_PLAIN = re.compile(r"^\s*\d+(?:\.\d+)?\s*$")
"""A number written as one (not a piece of an id such as ``-011`` of ``62010-LOWE-011``)."""


def _close(got: float | None, target: float, tol: float) -> bool:
    return got is not None and abs(got - target) <= tol


def _divided(node: _Node, parents: dict[int, _Node], slip: Slip) -> Slip:
    """Where an inverted number's slip is: at the step that divided by it, when one did.

    Dividing by a number is inverting it: a correct rate a later step divides by
    where it should multiply reads, at the rate, as "inverted", but the step that
    did the inverting is the one that divided.  A number a later step multiplies by
    (or adds) was already inverted where it came from: the slip stays there.
    """
    up = parents.get(id(node))
    if slip.what != SLIPS[0][0] or up is None or up.op != "div" or len(up.kids) != 2 or up.kids[1] is not node:
        return slip
    if up.step_id is None or up.step_id == node.step_id:
        return slip
    fixed = _apply(SWAPS["div"], [k.value for k in up.kids])
    if fixed is None:
        return slip
    return Slip(up.step_id, up.atom, f"computed by div where {SWAPS['div']} fits", fixed)


def _nodes(root: _Node) -> Iterator[_Node]:
    stack = [root]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.kids)


def _name(lin: Lineage, step_id: str) -> str:
    return lin.steps[lin.pos[step_id]].name


def _tree(
    lin: Lineage, atom: Atom, pos: int, within: set[str] | None, depth: int, budget: list[int]
) -> _Node | None:
    budget[0] += 1
    if budget[0] > MAX_LEAVES or atom.number is None:
        return None
    o = lin.origin(atom, pos, within)
    if o.step_id is None:
        return _Node(atom.number, None, atom)
    node = _Node(o.atom.number if o.atom.number is not None else atom.number, o.step_id, o.atom)
    if depth >= MAX_DEPTH or not o.derived_from:
        return node
    d = derivation(lin.view(o.step_id), o.atom)
    if d is None or d.op == "copy":
        return node
    node.op = d.op
    at = lin.pos[o.step_id]
    for a in d.operands:
        kid = _tree(lin, a, at, within, depth + 1, budget)
        if kid is None:
            return _Node(node.value, node.step_id, node.atom)  # too large: the step as a leaf
        node.kids.append(kid)
    return node


def _variants(root: _Node) -> Iterator[tuple[_Node, tuple[str, float]]]:
    stack = [root]
    while stack:
        n = stack.pop()
        stack.extend(n.kids)
        if n is not root or not n.kids:
            for name, f in SLIPS:
                v = f(n.value)
                if v is not None and math.isfinite(v):
                    yield n, (name, v)
        if n.op in SWAPS and len(n.kids) == 2:
            v = _apply(SWAPS[n.op], [k.value for k in n.kids])
            if v is not None:
                yield n, (f"computed by {n.op} where {SWAPS[n.op]} fits", v)


def _eval(n: _Node, alt: dict[int, float]) -> float | None:
    if id(n) in alt:
        return alt[id(n)]
    if not n.kids or n.op is None:
        return n.value
    vals = []
    for k in n.kids:
        v = _eval(k, alt)
        if v is None:
            return None
        vals.append(v)
    return _apply(n.op, vals)


def _apply(op: str, vals: list[float]) -> float | None:
    if op in ("sum", "run-sum"):
        return sum(vals)
    if op in ("max", "min"):
        return vals[0] if vals else None
    if len(vals) != 2:
        return None
    a, b = vals
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b if b else None
    if op == "pct":
        return a * b / 100.0
    return None


def _tolerance(target: float, raw: str) -> float:
    """How far a replayed number may land from the expected one: the expected number's written
    precision, or 0.05 % of it (intermediate values were rounded when written), whichever is larger."""
    text = raw.strip().rstrip("%").replace(",", "")
    decimals = len(text.rsplit(".", 1)[1]) if "." in text else 0
    return max(0.5 * 10.0**-decimals, 0.0005 * abs(target))


__all__ = ["SLIPS", "SWAPS", "Slip", "slips"]
