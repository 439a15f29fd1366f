"""Switches for suite P's planted cases, and the small helpers the agents share."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


_ON: str | None = None


@contextmanager
def planted(fault_id: str) -> Iterator[None]:
    """Turn one switch on for the block (one run)."""
    global _ON
    saved, _ON = _ON, fault_id
    try:
        yield
    finally:
        _ON = saved


def active(fault_id: str) -> bool:
    """Whether the switch `fault_id` is on; each switch is read at exactly one place."""
    return _ON == fault_id


@dataclass(frozen=True)
class Case:
    fid: str  # the switch
    kind: str  # the fault kind
    root: str  # the name of the step whose output first holds the wrong value
    marker: str  # text of the wrong value, as it appears in that step's JSON output
    input: str  # the input the case runs on (failed and control)


def dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True)
