"""A write filed under the previous item's key (`misfiled_write`): a step about one item closes another's entry.

A loop over items that keeps each item's record under a state key named by the item's id (``lot:T-477``) can
write the current item's record under the key of the one before (a stale cursor, a key computed from the
previous pass).  The item whose entry was overwritten loses it, and the current item gets none: a later step
that reads either finds the wrong record.  Split from `_decisions`, whose state-writer index it shares.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._decisions import _keys, _Writers, _writers
from trajdebug.analysis.diagnosers._reads import Reads, reading
from trajdebug.core.model import Run, Step
from trajdebug.core.values import atoms


def _item_ids(step: Step) -> set[tuple[str, str]]:
    """The (field, id) pairs a step was given: the items it is about (``lot='T-410'``)."""
    return {(a.field, a.raw) for a in atoms(step.input) if a.kind == "id" and a.field and a.raw}


def _same(v: Any) -> str:
    """A scalar as compared across writes: a number by its value (``3`` is ``3.0``), anything else as written."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return repr(float(v))
    return repr(v)


def _carries(old: Any, new: Any) -> bool:
    """Whether a new value holds every scalar of an old one (a thread the note was appended to, a record merged
    into): each of the old value's leaves is one of the new value's (a number by its value), or a string
    written in its text."""
    before = [v for _, v in content.leaves(old) if v is not None and v != ""]
    if not before:
        return False
    after = {_same(v) for _, v in content.leaves(new)}
    text = content.text_of(new).casefold()
    return all(_same(v) in after or (isinstance(v, str) and v.casefold() in text) for v in before)


def _updated(old: Any, new: Any) -> bool:
    """Whether a new value is the old record with some of its fields changed (a status escalated, a counter
    lowered): every field kept, at least half of the old values kept, and every id the old record held kept
    (a record of another item, same fields, different id and values, is a loss, not an update)."""
    if not (isinstance(old, Mapping) and isinstance(new, Mapping)) or not old or not set(old) <= set(new):
        return False
    before = dict(content.leaves(old))
    after = {path: _same(v) for path, v in content.leaves(new)}
    if not before:
        return False
    kept = [p for p, v in before.items() if after.get(p) == _same(v)]
    ids = [p for p, v in before.items() if isinstance(v, str) and any(a.kind == "id" for a in atoms(v))]
    return 2 * len(kept) >= len(before) and all(p in kept for p in ids)


def _merged(step: Step, key: str, entry: tuple[list[int], list[tuple[int, int, Step]]] | None) -> bool:
    """Whether a write of ``key`` carries the value the last write before it left there: a deliberate merge
    (a duplicate's note appended to the original's thread) or an update of that record (`_updated`), not
    another item's entry overwritten."""
    mine = step.attributes.get("state_values")
    if entry is None or not isinstance(mine, Mapping) or key not in mine:
        return False
    assert step.start_ns
    ends, rows = entry
    i = bisect.bisect_right(ends, step.start_ns) - 1
    while i >= 0 and rows[i][2].step_id == step.step_id:
        i -= 1
    theirs = rows[i][2].attributes.get("state_values") if i >= 0 else None
    return (
        isinstance(theirs, Mapping)
        and key in theirs
        and (_carries(theirs[key], mine[key]) or _updated(theirs[key], mine[key]))
    )


_KEY_TOKEN = re.compile(r"[\w-]+")


def _key_ids(run: Run) -> tuple[set[str], list[str]]:
    """Every state key a step of the run wrote, as the set of its whole tokens (``lot:T-477`` gives ``lot`` and
    ``T-477``) and the keys themselves (for an id that is no single token)."""
    keys = sorted({k for s in run.steps for k in _keys(s, "state_writes")})
    return {t for k in keys for t in _KEY_TOKEN.findall(k)}, keys


def _named_by_a_key(raw: str, ctx: DiagnoseContext) -> bool:
    """Whether a state key written in the run names an id (`_names`), by a token lookup when the id is one."""
    tokens, keys = ctx.memo("state-key-tokens", lambda: _key_ids(ctx.run))
    if _KEY_TOKEN.fullmatch(raw):
        return raw in tokens
    return any(content.has_word(k, raw) for k in keys)


def _ids_of(step: Step, ctx: DiagnoseContext) -> set[tuple[str, str]]:
    """`_item_ids`, read once per step."""
    memo: dict[str, set[tuple[str, str]]] = ctx.memo("item-ids", dict)
    out = memo.get(step.step_id)
    if out is None:
        out = memo[step.step_id] = _item_ids(step)
    return out


def _key_items(key: str, rows: list[tuple[int, int, Step]], ctx: DiagnoseContext) -> list[tuple[int, Step, str, str]]:
    """The writers of ``key`` given an id the key names, as (end, writer, field, id) in the index's order: the
    only writers `misfiled_write` can say an entry was filed for (read once per key, so a key every pass of a
    loop writes, a cursor, costs one scan, not one per pass)."""
    memo: dict[str, list[tuple[int, Step, str, str]]] = ctx.memo("key-items", dict)
    out = memo.get(key)
    if out is None:
        out = memo[key] = [
            (end, s, fld, raw)
            for end, _, s in rows
            for fld, raw in sorted(_ids_of(s, ctx))
            if content.has_word(key, raw)
        ]
    return out


def _about(value: Any, raws: Iterable[str]) -> bool:
    """Whether a written value names one of these ids (the record is about that item)."""
    text = content.text_of(value)
    return any(content.has_word(text, r) for r in raws)


@reading(Reads(attribute="state_writes"))
def misfiled_write(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A state write filed under another item's key: it wrote a key an earlier step wrote for the item that
    step was given (``lot:T-477``, written before by the step given ``lot='T-477'``), while it was given
    another item of that field (``lot='T-410'``) that no key written in the run names.  The earlier entry
    is overwritten and its own item has none (a hand-off that closes the previous item's entry on purpose
    while another step files its own is no such write, nor is a write whose value holds the one it replaced: a
    duplicate's note appended to the original's thread, nor one that changes some fields of the record it
    replaced: a status escalated; nor a write whose step was given the key's item under any field,
    ``original='T-501'``, unless what it wrote names its own item instead): a store keyed by the previous loop
    pass's item.  Only a write that ended before this one began counts (a parallel one is the `lost_update`
    rule's).  Ids are read once per step and writers indexed by the ids their keys name, so a loop of a thousand
    items stays linear."""
    writes = _keys(step, "state_writes")
    if not writes or not (step.start_ns and step.end_ns):
        return
    mine = _ids_of(step, ctx)
    if not mine:
        return
    raws = {r for _, r in mine}
    values = step.attributes.get("state_values")
    index: _Writers = ctx.memo("state-writers", lambda: _writers(ctx.run))
    for key in sorted(writes):
        entry = index.get(key)
        if entry is None:
            continue
        given = {r for r in raws if content.has_word(key, r)}
        if given and not (
            isinstance(values, Mapping) and key in values and _about(values[key], raws - given)
        ):
            continue  # the step was given the key's item (``original='T-501'``): an update of that item's entry
        merged: bool | None = None
        for end, other, fld, raw in _key_items(key, entry[1], ctx):
            if other.step_id == step.step_id or not other.end_ns or end > step.start_ns:
                continue
            if (fld, raw) in mine:
                continue
            own = sorted(r for f, r in mine if f == fld and r != raw)
            if not own or any(_named_by_a_key(r, ctx) for r in own):
                continue  # given no other item of that field, or its own item has an entry (by any step)
            if merged is None:
                merged = _merged(step, key, entry)
            if merged:
                break
            yield Evidence(
                step.step_id,
                0.6,
                f"wrote {key!r}, the key {other.name} wrote for {fld}={raw!r}, while it was given "
                f"{fld}={own[0]!r}, which no key of the run names: that item's entry overwritten",
                "misfiled-write",
            )
            return
