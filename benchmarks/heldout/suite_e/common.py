"""Shared pieces of suite E: the agent and case descriptions, and the file helpers."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Case:
    """One failing case.

    ``root_at`` locates the faulty step among the steps named ``root``: an int is its
    1-based occurrence (in start order); a string is a marker that appears in the
    faulty step's recorded output (the first such occurrence is the root) and must
    not appear in the output of any step of that name in the fault-free twin.
    """

    cid: str
    fault: str
    fault_kind: str
    inp: Any
    description: str
    root: str
    root_kind: str
    root_at: int | str
    fail: str
    hops: int
    fail_at: int | None = None  # occurrence of the failing step; default: the first of that name with an error


@dataclass
class Agent:
    name: str
    route: str
    domain: str
    ext: str  # "jsonl" or "json"
    record: Callable[[Any, str | None, Path], None]
    passing: list[Any]
    cases: list[Case] = field(default_factory=list)
    notes: str = ""


def append_otlp(path: Path, envelope: dict[str, Any]) -> None:
    """Add an OTLP/JSON envelope's resourceSpans to the file at ``path`` (one document)."""
    if path.exists():
        doc = json.loads(path.read_text())
        doc["resourceSpans"].extend(envelope.get("resourceSpans", []))
    else:
        doc = {"resourceSpans": list(envelope.get("resourceSpans", []))}
    path.write_text(json.dumps(doc))


def merge_files(ext: str, sources: list[Path], target: Path) -> None:
    if ext == "jsonl":
        with target.open("wb") as out:
            for s in sources:
                data = s.read_bytes()
                out.write(data if data.endswith(b"\n") or not data else data + b"\n")
    else:
        spans: list[Any] = []
        for s in sources:
            spans.extend(json.loads(s.read_text())["resourceSpans"])
        target.write_text(json.dumps({"resourceSpans": spans}))
