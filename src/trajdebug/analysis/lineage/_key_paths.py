"""Key paths into an enclosing step's input: which field, or which part of it, a data edge's key names.

A recorded or inferred edge into a step enclosing others carries a key path (``window``, ``lenders[0]``,
``data.offers[0].sqft``); `Lineage.handed_down_edges` reads it here to tell which part of the input its
producer wrote, and so which children read what that producer handed down.
"""

from __future__ import annotations

import re
from typing import Any

from trajdebug.core.graph import WHOLE_INPUT_KEY
from trajdebug.core.model import Dependency


_FIELD = re.compile(r"[A-Za-z_][\w-]*")


def field_of(dep: Dependency, given: dict[str, Any]) -> str | None:
    """The top-level field of the enclosing step's input a data edge's key names (``window``,
    ``lenders[0]``, ``messages[2].content``), None for keys that name no path (``value:...``)."""
    if dep.kind != "data" or dep.run_id is not None or not dep.key:
        return None
    if dep.key == WHOLE_INPUT_KEY:
        return WHOLE_INPUT_KEY  # (every field of the input came from the edge's producer)
    m = _FIELD.match(dep.key)
    if m is None or (m.end() < len(dep.key) and dep.key[m.end()] not in ".["):
        return None
    return m.group(0) if m.group(0) in given else None


_STEP = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]")


def part_of(key: str, given: dict[str, Any]) -> str:
    """The longest prefix of an edge's key path (``data.offers[0].sqft``) that names a container of the
    enclosing step's input (``data.offers[0]``): the part its producer wrote.  A leaf is read as the container
    that holds it (a record's ``sqft`` was written with the record), so a leaf's edge never narrows below the
    record; the top-level field when nothing deeper resolves."""
    m = _FIELD.match(key)
    if m is None:
        return key
    value: Any = given.get(m.group(0))
    end = m.end()
    while end < len(key) and isinstance(value, (dict, list)):
        step = _STEP.match(key, end)
        if step is None:
            break
        name, index = step.group(1), step.group(2)
        if name is not None and isinstance(value, dict) and name in value and isinstance(value[name], (dict, list)):
            value = value[name]
        elif index is not None and isinstance(value, list) and int(index) < len(value) and isinstance(value[int(index)], (dict, list)):
            value = value[int(index)]
        else:
            break
        end = step.end()
    return key[:end]


def value_at(path: str, given: dict[str, Any]) -> Any:
    """The value a path `part_of` returned names in the enclosing step's input."""
    m = _FIELD.match(path)
    if m is None:
        return None
    value: Any = given.get(m.group(0))
    for step in _STEP.finditer(path, m.end()):
        name, index = step.group(1), step.group(2)
        value = value[name] if name is not None else value[int(index)]
    return value


def last_name(key: str) -> str:
    """The field an edge's key names last (``value:slot`` and ``orders[0].slot`` name ``slot``), lower case."""
    return re.split(r"[:.\[\]]+", key.strip(":.[]"))[-1].lower()
