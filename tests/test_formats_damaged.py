"""Damaged foreign files: one bad value never costs the good spans or messages around it.

Each case is a real file imported through the real command line: every span (or
message list) that can be read is kept, each bad one is reported with its
location (file, line or span index, field), and no traceback is ever printed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trajdebug.core.jsonl import read_jsonl
from trajdebug.sources.formats import import_path


_TRACE = "0" * 31 + "1"


def _span(i: int, attrs: Any = None, **extra: Any) -> dict[str, Any]:
    span = {
        "traceId": _TRACE,
        "spanId": f"{i + 1:016x}",
        "name": f"s{i}",
        "startTimeUnixNano": str(1000 + i),
        "endTimeUnixNano": str(2000 + i),
        "attributes": attrs if attrs is not None else [{"key": "a", "value": {"intValue": "5"}}],
    }
    span.update(extra)
    return span


def _envelope(spans: list[dict[str, Any]], resource: Any = None) -> dict[str, Any]:
    rs: dict[str, Any] = {"scopeSpans": [{"spans": spans}]}
    if resource is not None:
        rs["resource"] = {"attributes": resource}
    return {"resourceSpans": [rs]}


def _with_bad(bad: dict[str, Any]) -> dict[str, Any]:
    good = [_span(i) for i in range(4)]
    return _envelope([*good[:2], bad, *good[2:]])


BAD_SPANS = {
    "intValue": (_with_bad(_span(9, [{"key": "n", "value": {"intValue": "abc"}}])), "attributes[0].value.intValue"),
    "doubleValue": (_with_bad(_span(9, [{"key": "n", "value": {"doubleValue": "x1"}}])), "attributes[0].value.doubleValue"),
    "events": (_with_bad(_span(9, events=[{"name": "e"}, 5, "x"])), "events[1]"),
    "event list": (_with_bad(_span(9, events={"not": "a list"})), "events"),
    "own attribute": (_with_bad(_span(9, [{"key": "trajdebug.step.attempt", "value": {"intValue": "abc"}}])), "intValue"),
    "resource": (_envelope([_span(i) for i in range(4)], [{"key": "r", "value": {"intValue": "abc"}}]), "resource.attributes[0]"),
}


@pytest.mark.parametrize("case", sorted(BAD_SPANS))
def test_one_bad_value_keeps_every_span(case: str, tmp_path: Path, cli_run: Any) -> None:
    """A span with one bad field is kept (the field as given), the others load, and the problem names the span
    and field, without a traceback."""
    doc, field = BAD_SPANS[case]
    src = tmp_path / "bad.json"
    src.write_text(json.dumps(doc))
    spans = sum(len(ss["spans"]) for rs in doc["resourceSpans"] for ss in rs["scopeSpans"])
    got = cli_run("import", str(src), "-o", str(tmp_path / "out.jsonl"))
    err = got.stderr.decode()
    assert got.returncode == 0, err
    assert "Traceback" not in err
    assert f"{src}:" in err and field in err
    runs = read_jsonl(tmp_path / "out.jsonl").runs
    assert sum(len(r.steps) for r in runs) == spans


def test_truncated_document_keeps_the_spans_before_the_cut(tmp_path: Path) -> None:
    """An OTLP file cut short keeps every span that was complete before the cut, with a problem naming the file."""
    text = json.dumps(_envelope([_span(i) for i in range(6)]))
    src = tmp_path / "cut.json"
    src.write_text(text[: text.index('"s5"')])
    got = import_path(src, "otlp")
    assert sum(len(r.steps) for r in got.runs) >= 5
    assert any("truncated" in str(p) and str(src) in str(p) for p in got.problems)


def test_truncated_jsonl_tail_keeps_the_lines_before(tmp_path: Path) -> None:
    """A line-delimited OTLP file whose last line is cut keeps every whole line; the cut line is named."""
    lines = [json.dumps(_envelope([_span(i)])) for i in range(4)]
    src = tmp_path / "cut.jsonl"
    src.write_text("\n".join(lines) + "\n" + json.dumps(_envelope([_span(7)]))[:50])
    got = import_path(src, "otlp")
    assert sum(len(r.steps) for r in got.runs) == 4
    assert any(p.line == 5 for p in got.problems)


_MESSAGES = [{"role": "user", "name": "u", "content": "hi"}, {"role": "assistant", "name": "a", "content": "ok"}]


@pytest.mark.parametrize(
    ("doc", "steps"),
    [
        ({"r1": _MESSAGES, "r2": {"messages": _MESSAGES}}, 4),
        ({"messages": {"0": _MESSAGES[0], "1": _MESSAGES[1]}}, 2),
        (_MESSAGES[0], 1),
        ([{"messages": _MESSAGES}, 5, {"messages": _MESSAGES}], 4),
    ],
    ids=["runs keyed by id", "messages keyed by position", "one message", "a bad item among runs"],
)
def test_transcript_whose_top_level_is_not_a_list_is_read(doc: Any, steps: int, tmp_path: Path, cli_run: Any) -> None:
    """A transcript whose top level is an object (runs or messages keyed by name) or holds one bad item is read."""
    src = tmp_path / "t.json"
    src.write_text(json.dumps(doc))
    got = cli_run("import", str(src), "--from", "transcript", "-o", str(tmp_path / "out.jsonl"))
    assert got.returncode == 0 and b"Traceback" not in got.stderr, got.stderr
    assert sum(len(r.steps) for r in read_jsonl(tmp_path / "out.jsonl").runs) == steps
