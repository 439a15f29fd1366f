"""Shared builders of recorded steps for tests of the analysis."""

from __future__ import annotations

from typing import Any

from trajdebug.core.model import Dependency, Step


def step(sid: str, name: str, kind: str, start: int, inp: Any, out: Any, *deps: str, **kw: Any) -> Step:
    """A step that ran for one nanosecond from ``start``, depending on the steps ``deps`` names."""
    return Step(
        sid,
        name,
        kind,  # type: ignore[arg-type]
        input=inp,
        output=out,
        start_ns=start,
        end_ns=start + 1,
        deps=tuple(Dependency(d) for d in deps),
        **kw,
    )
