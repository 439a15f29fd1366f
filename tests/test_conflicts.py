"""Tests of the contradiction checks (`trajdebug.analysis.diagnosers._conflicts`)."""

from __future__ import annotations

from trajdebug.analysis.diagnosers._conflicts import contradictions


_JOB = {
    "job": "TJ-201",
    "due": "2026-12-18",
    "related": {"job": "TJ-188", "deadline": "2026-12-11", "translator": "K. Abe"},
}


def test_a_field_of_a_nested_record_about_another_entity_is_no_contradiction() -> None:
    """A call about job TJ-201 naming translator J. Brandt does not contradict the translator of the related
    earlier job TJ-188 its input shows beside it."""
    call = {"job_id": "TJ-201", "translator": "J. Brandt"}
    assert contradictions(call, [_JOB]) == []


def test_a_field_of_the_record_the_output_is_about_still_contradicts() -> None:
    """When the nested record is about the job the call names (its own id), or the call names no id of that
    shape, its translator still fixes the field."""
    same = {**_JOB, "related": {**_JOB["related"], "job": "TJ-201"}}
    assert contradictions({"job_id": "TJ-201", "translator": "J. Brandt"}, [same]) == [
        ("translator", "J. Brandt", "K. Abe")
    ]
    assert contradictions({"translator": "J. Brandt"}, [_JOB]) == [("translator", "J. Brandt", "K. Abe")]


def test_a_wide_record_is_walked_once_per_upstream_not_once_per_field(monkeypatch: object) -> None:
    """An output restating a record of 300 fields, each with another value, is set against it with a bounded
    number of walks of the upstream value (not two per field), and every field is still a contradiction."""
    import pytest

    from trajdebug.analysis import _content as content

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    walks = 0
    leaves = content.leaves

    def counted(*args: object, **kw: object) -> object:
        nonlocal walks
        walks += 1
        return leaves(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(content, "leaves", counted)
    up = {"job": "TJ-1", "rec": {f"field_{i}": f"before {i}" for i in range(300)}}
    out = contradictions({"job": "TJ-1", **{f"field_{i}": f"after {i}" for i in range(300)}}, [up])
    assert len(out) == 300
    assert walks < 10
