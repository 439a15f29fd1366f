"""Edges from a failure to where the values its message names came from (trajdebug.analysis.inference._named)."""

from __future__ import annotations

from tests.builders import step

from trajdebug.analysis._detect import Failure
from trajdebug.analysis.inference import NAMED_KEY, named_edges
from trajdebug.core.model import ErrorInfo, Run, Step


def _memo(sid: str, start: int, bed: str) -> Step:
    """A state step that kept one flower bed's record under the shared key ``bed:<id>``."""
    s = step(sid, "note_bed", "state", start, {"bed": bed}, {"bed": bed, "status": "weeded"})
    return Step(s.step_id, s.name, s.kind, input=s.input, output=s.output, start_ns=s.start_ns, end_ns=s.end_ns,
                attributes={"state_writes": [f"bed:{bed}"]})


def _run(message: str, given: list[str]) -> tuple[Run, Failure]:
    steps = (
        _memo("b1", 0, "B4"),
        _memo("b2", 2, "B7"),
        _memo("b3", 4, "B9"),
        step("r", "submit_report", "tool", 10, {"beds": given}, None, status="error",
             error=ErrorInfo("Refused", message)),
    )
    return Run("r", "gardens", outcome="failure", steps=steps), Failure("r", "step-error", message, "x", "step")


def test_a_code_the_failure_names_and_was_not_given_links_the_state_write_of_its_record() -> None:
    """A report refused because bed `B7` is missing from it (the code between the steps read B7's record back
    and dropped it) depends on the step that wrote the shared-state record keyed by B7; a bed the report was
    given, or a code no state key names, links no writer."""
    run, failure = _run("beds B7 are due but missing from the report", ["B4", "B9"])
    deps = named_edges(run, [failure]).step("r").deps
    assert [(d.step_id, d.kind, d.key) for d in deps] == [("b2", "state", NAMED_KEY)]
    run, failure = _run("bed B4 listed twice", ["B4", "B4"])
    assert [d.step_id for d in named_edges(run, [failure]).step("r").deps if d.kind == "state"] == []
    run, failure = _run("bed C2 is unknown", ["B4"])
    assert [d.step_id for d in named_edges(run, [failure]).step("r").deps if d.kind == "state"] == []


def test_a_code_inside_a_url_path_links_no_state_write_keyed_by_it() -> None:
    """A report refused with ``url: /b7/report`` does not name bed B7 (a path segment is no code the failure is
    about), so the step that wrote bed B7's record is not linked; ``B7`` written as a word is."""
    run, failure = _run("upload failed, url: /b7/report", ["B4"])
    assert [d.step_id for d in named_edges(run, [failure]).step("r").deps if d.kind == "state"] == []
    run, failure = _run("upload failed for B7", ["B4"])
    assert [d.step_id for d in named_edges(run, [failure]).step("r").deps if d.kind == "state"] == ["b2"]


def test_a_capitalised_code_spelled_like_a_format_is_a_record_code_and_the_lower_case_format_is_not() -> None:
    """A failure naming kiln H2, crate S3 or booth MP3 names those records, while the same letters in lower
    case (``h2``, ``s3``) and formats written capitalised (``UTF-8``, ``SHA256``) name no record."""
    from trajdebug.analysis.inference._named import message_codes

    assert message_codes("kiln H2 too hot; crate S3 late; booth MP3 shut") == ["H2", "S3", "MP3"]
    assert message_codes("upload to s3 over h2 failed: bad utf-8, UTF-8 and SHA256 digest") == []


def test_codes_joined_by_one_slash_are_codes_and_a_path_or_url_segment_is_not() -> None:
    """``vats V2/V3`` names both vats; a segment of ``/api/v2/lots``, ``./runs/R9`` or ``https://h.io/B4``
    names none."""
    from trajdebug.analysis.inference._named import message_codes

    assert message_codes("vats V2/V3 overflowing") == ["V2", "V3"]
    assert message_codes("GET /api/v2/lots failed; read ./runs/R9 and https://h.io/B4 and data/runs/R8") == []


def _kiln_run(message: str, sent: dict[str, object] | None = None) -> tuple[Run, Failure]:
    """A pottery run whose glaze lookup returned a recipe code; the firing submission recorded only two of its
    arguments (a span that keeps one part of its input) and is refused naming what it was really sent."""
    steps = (
        step("o", "read_order", "tool", 0, {"order": "PT-88"}, {"order": "PT-88", "clay": "stoneware"}),
        step("g", "find_glaze", "retrieval", 2, {"query": "glaze for stoneware"},
             [{"glaze": "CEL-3", "cone": 10, "colour": "Celadon"}]),
        step("c", "count_pieces", "other", 4, {"order": "PT-88"}, {"pieces": 14}),
        step("k", "submit_firing", "tool", 10, sent or {"order": "PT-88", "pieces": 14}, None, status="error",
             error=ErrorInfo("Refused", message)),
    )
    return Run("r", "pottery", outcome="failure", steps=steps), Failure("k", "step-error", message, "x", "step")


def test_a_code_or_a_quoted_word_the_failure_names_links_the_step_it_was_born_in() -> None:
    """A firing refused for glaze ``CEL-3`` (or for a quoted ``'Celadon'``) it was not shown to be given depends
    on the glaze lookup that first returned it; a lower-case word with a digit names nothing, and neither does
    a code the failing step was given (the subject it checked)."""
    for message in ("kiln 2: glaze CEL-3 is not rated for this clay", "colour 'Celadon' is not rated for stoneware"):
        run, failure = _kiln_run(message)
        assert [(d.step_id, d.key) for d in named_edges(run, [failure]).step("k").deps] == [("g", NAMED_KEY)]
    run, failure = _kiln_run("kiln v2 queue is full")
    assert [d.step_id for d in named_edges(run, [failure]).step("k").deps] == []
    run, failure = _kiln_run("glaze CEL-3 is not rated for this clay", {"order": "PT-88", "glaze": "CEL-3"})
    assert [d.step_id for d in named_edges(run, [failure]).step("k").deps] == []
