"""Edges from a failure to where the values its message names came from (trajdebug.analysis.inference._named)."""

from __future__ import annotations

from typing import Any

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


# -- a failing OpenTelemetry span that recorded nothing of what it read -----------------------------------


def _dispatch(tracer: Any, message: str, given: Any = None) -> None:
    """A parcel dispatcher instrumented by hand with OpenInference attributes, each span's attributes set after
    its work (a common way to write them): the final check raises first, so its span records no input, or only
    what it was ``given`` when its span was started."""
    import json

    def span(name: str, kind: str, inp: Any, out: Any) -> None:
        with tracer.start_as_current_span(name) as sp:
            sp.set_attribute("openinference.span.kind", kind)
            sp.set_attribute("input.value", json.dumps(inp))
            sp.set_attribute("input.mime_type", "application/json")
            sp.set_attribute("output.value", json.dumps(out))
            sp.set_attribute("output.mime_type", "application/json")

    plan = {"parcel": "P-12", "route": "standard van", "crates": 2}
    with tracer.start_as_current_span("dispatch") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        span("lookup_parcel", "TOOL", {"parcel": "P-12"}, {"parcel": "P-12", "weight_kg": 14.5, "fragile": True})
        span("count_crates", "CHAIN", {"weight_kg": 14.5}, {"crates": 3})
        span("route_parcel", "CHAIN", {"weight_kg": 14.5}, "standard van")
        span("save_plan", "CHAIN", {"parcel": "P-12"}, plan)
        span("load_plan", "CHAIN", {"key": "plan"}, plan)
        attrs = {} if given is None else {"input.value": json.dumps(given), "input.mime_type": "application/json"}
        with tracer.start_as_current_span("check_plan", attributes=attrs):
            raise ValueError(message)


def _imported(message: str, given: Any = None) -> tuple[Run, Failure]:
    """The dispatcher's trace, exported by the OpenTelemetry SDK and imported as OTLP/JSON."""
    import pytest

    pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk is needed for real SDK output")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from tests.test_formats_otlp import encode_hex

    from trajdebug.sources.formats.otlp import runs_from_otlp

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with pytest.raises(ValueError):
        _dispatch(provider.get_tracer("dispatcher"), message, given)
    provider.shutdown()
    [run] = runs_from_otlp([encode_hex(exporter.get_finished_spans())]).runs
    check = next(s for s in run.steps if s.name == "check_plan")
    assert check.input == given and check.status == "error"
    return run, Failure(check.step_id, "step-error", message, "x", "step")


def _linked(run: Run, failure: Failure) -> list[str]:
    names = {s.step_id: s.name for s in run.steps}
    return sorted(names[d.step_id] for d in named_edges(run, [failure]).step(failure.step_id).deps)


def test_a_failing_span_that_recorded_no_input_reads_the_values_its_message_states_where_they_were_produced() -> None:
    """An OpenTelemetry check that raised before its span's attributes were set recorded nothing of what it read;
    its message is the only record.  A value it states that the router produced and the plan then saved and read
    back (``standard van``: three holders) links none of them, since which copy was read is not recorded; a value
    one earlier step held (``crates`` 3, the crate count's, named beside its field) links that step."""
    run, failure = _imported("fragile parcel planned on the standard van")
    assert _linked(run, failure) == []
    run, failure = _imported("fragile parcel planned on the standard van, needs 3 crates")
    assert _linked(run, failure) == ["count_crates"]


def test_a_small_count_in_the_message_links_only_the_step_that_held_it_under_the_field_the_message_names() -> None:
    """``plan lists 2 crates, the parcel needs 3`` names two small counts beside the field they are counts of:
    the crate count alone held crates=3 and links; crates=2, held by the plan saved and by the plan read back,
    links neither; a count the message writes without its field's name beside it (``2 of them``) links nothing,
    a small number being no telling value alone."""
    run, failure = _imported("plan lists 2 crates, the parcel needs 3 crates")
    assert _linked(run, failure) == ["count_crates"]
    run, failure = _imported("2 of them are wrong")
    assert _linked(run, failure) == []


def test_a_failing_span_that_recorded_any_input_links_nothing_by_the_values_its_message_states() -> None:
    """A span that recorded an input (even one argument of several) is read by that input's own edges: its
    message's values (``the standard van``, held by the router) link nothing more, whatever the input lacks."""
    run, failure = _imported("2 crates do not fit the standard van", given={"crates": 2})
    assert _linked(run, failure) == []
    run, failure = _imported("2 crates do not fit the standard van", given={"crates": 2, "route": "standard van"})
    assert _linked(run, failure) == []


def _bare(message: str, *earlier: Step, given: Any = None, task: str | None = None) -> list[str]:
    """The steps `named_edges` links to a check (after ``earlier``) that failed with ``message`` and recorded
    ``given`` as its input, in a run whose root step recorded ``task`` as its input."""
    root = step("root", "desk", "agent", 0, task, None)
    steps = (
        root,
        *(Step(s.step_id, s.name, s.kind, input=s.input, output=s.output, start_ns=s.start_ns, end_ns=s.end_ns,
               parent_id="root") for s in earlier),
        Step("c", "check", "other", input=given, start_ns=90, end_ns=91, parent_id="root", status="error",
             error=ErrorInfo("Refused", message)),
    )
    run = Run("r", "desk", outcome="failure", steps=steps)
    return [d.step_id for d in named_edges(run, [Failure("c", "step-error", message, "x", "step")]).step("c").deps]


def test_an_empty_recorded_input_counts_as_no_input_and_links_the_producer_of_a_stated_code() -> None:
    """The recording SDK stores ``{}`` for a function called with nothing: a check recorded so, whose message
    states a code (``bay-7``), reads it from the step that produced it."""
    assert _bare("no slot left at bay-7", step("a", "assign", "tool", 2, {"n": 1}, {"bay": "bay-7"}), given={}) == [
        "a"
    ]


def test_status_words_roles_and_null_spellings_link_nothing() -> None:
    """A lone word (``active``, ``error``, ``user``, ``none``, ``true``) recurs in every run's outputs; a
    message that states such words links no step that held them, though it would link a telling value."""
    held = {"state": "active", "result": "error", "role": "user", "note": "none", "flag": "true"}
    message = "error: user account is active but flag true and payment none"
    assert _bare(message, step("a", "get_user", "tool", 2, {"uid": 5}, held)) == []


def test_a_text_held_under_two_different_fields_links_nothing() -> None:
    """A value two earlier steps hold (``north dock`` as one's ``origin``, another's ``target``, or both as
    ``origin``: a relay's copy or a value produced again) tells no one producer and links neither; held by one
    step, it links that step."""
    message = "no slot at the north dock for this order"
    a = step("a", "open_order", "tool", 2, {"n": 1}, {"origin": "north dock"})
    b = step("b", "plan_order", "tool", 4, {"n": 1}, {"target": "north dock"})
    assert _bare(message, a, b) == []
    b2 = step("b", "plan_order", "tool", 4, {"n": 1}, {"origin": "north dock"})
    assert _bare(message, a, b2) == []
    assert _bare(message, a) == ["a"]


def test_a_value_an_earlier_step_held_rightly_and_the_culprit_produced_again_links_neither() -> None:
    """The customer's old address (``elm road``), right when looked up, is put on the label again by the step
    that should have used the new one: the check's message states it, and linking the first holder would blame
    the correct lookup; two holders, so nothing is linked (review rev51o2, H1)."""
    message = "label goes to elm road, not the current address"
    a = step("a", "get_customer", "tool", 2, {"id": 7}, {"address": "elm road"})
    b = step("b", "update_address", "tool", 4, {"id": 7}, {"address": "oak street"})
    c = step("c", "make_label", "tool", 6, {"id": 7}, {"address": "elm road"})
    assert _bare(message, a, b, c) == []


def test_a_round_integer_links_only_beside_its_field_and_a_precise_number_by_its_value() -> None:
    """``expected 60 items, got 50`` states two round numbers that limits and sizes hold everywhere: they link
    no step holding ``timeout_s`` 60 or ``page_size`` 50; ``timeout 60`` (its field named) links the config,
    and a number with a fraction (``14.5``) links its producer by value alone."""
    cfg = step("a", "config", "tool", 2, {"n": 1}, {"timeout_s": 60, "page_size": 50})
    assert _bare("expected 60 items, got 50", cfg) == []
    assert _bare("gave up after timeout 60", cfg) == ["a"]
    weigh = step("w", "weigh", "tool", 4, {"n": 1}, {"kg": 14.5})
    assert _bare("14.5 is over the van's limit", cfg, weigh) == ["w"]


def test_a_value_of_the_runs_own_input_links_no_step_that_echoed_it() -> None:
    """The user asked for ``a room in new york``: a step that restated the city produced nothing the failure
    read, so ``sold out in new york`` links no step; a city the run's input does not state links its producer."""
    echo = step("a", "parse_request", "other", 2, {"n": 1}, {"city": "new york"})
    assert _bare("sold out in new york", echo, task="book a room in new york") == []
    assert _bare("sold out in new york", echo, task="book a room") == ["a"]


def test_an_enclosing_step_that_failed_with_no_input_links_nothing_by_the_values_its_message_states() -> None:
    """An agent step records no input of its own, and its failure is what one of its children raised: the values
    that message states were read by the child, so the agent step is not linked to where they were last held."""
    message = "refund refused for the standard van"
    steps = (
        step("a", "route_parcel", "other", 0, {"kg": 14.5}, "standard van"),
        step("g", "desk", "agent", 2, None, None, status="error", error=ErrorInfo("Refused", message)),
    )
    run = Run("r", "desk", outcome="failure", steps=steps)
    assert named_edges(run, [Failure("g", "step-error", message, "x", "step")]).step("g").deps == ()


def test_a_value_whose_one_holder_was_given_it_links_no_step() -> None:
    """A tool that returns its request (``{"request": {"region": "eu-west-9"}}``) holds the region a planner
    chose and answered in prose (``ok``): the tool relayed what it was given and produced nothing, so a check
    that states the region links no step (review rev51o3, M1); a tool that holds the region without being given
    it produced it, and is linked."""
    message = "region eu-west-9 does not exist"
    plan = step("p", "choose_region", "llm", 2, {"q": "where to deploy"}, "ok")
    echo = step("v", "provision", "tool", 4, {"region": "eu-west-9"}, {"request": {"region": "eu-west-9"}, "ok": True})
    assert _bare(message, plan, echo) == []
    made = step("v", "provision", "tool", 4, {"size": "small"}, {"request": {"region": "eu-west-9"}, "ok": True})
    assert _bare(message, plan, made) == ["v"]
