"""Run ids shortened for the screen as git shortens commits: the shortest prefix of at least 12 characters
that no other id of the source starts with.

Cutting every id to 12 characters made two imported runs (``support-lena-march`` and
``support-lena-march-ok``) both read ``support-lena``, and the commands printed with that prefix failed as
ambiguous (newuser65).  An id that another id starts with is shown whole: ``--run`` takes an exact id first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


SHORT = 12
"""The fewest characters of a run id shown (git's default abbreviation is as long)."""


def unique_prefixes(ids: Iterable[str], minimum: int = SHORT) -> dict[str, str]:
    """Each id's shortest prefix of at least ``minimum`` characters that no other of ``ids`` starts with.

    Sorted, the ids sharing the longest prefix with an id are its neighbours, so one pass finds each length.
    """
    order = sorted(set(ids))
    out: dict[str, str] = {}
    for i, rid in enumerate(order):
        shared = max(_common(rid, order[i - 1]) if i else 0, _common(rid, order[i + 1]) if i + 1 < len(order) else 0)
        out[rid] = rid[: max(minimum, shared + 1)]
    return out


def shortener(ids: Iterable[str], minimum: int = SHORT) -> Callable[[str], str]:
    """A function that shortens a run id against ``ids`` (the source's run ids); an id not among them is
    shortened against them too, so it never reads as one of theirs."""
    known = unique_prefixes(ids, minimum)

    def short(rid: str) -> str:
        got = known.get(rid)
        return got if got is not None else unique_prefixes([*known, rid], minimum)[rid]

    return short


def short_id(rid: str, ids: Iterable[str], minimum: int = SHORT) -> str:
    """``rid`` shortened against ``ids`` (see `unique_prefixes`)."""
    return unique_prefixes([*ids, rid], minimum)[rid]


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


__all__ = ["SHORT", "short_id", "shortener", "unique_prefixes"]
