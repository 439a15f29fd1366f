"""Hand-offs no content shows (trajdebug.analysis.inference._handoffs), on traces the OpenTelemetry SDK writes:
a check's yes/no that kept an item in a later list, a sub-agent span that set no output, an empty result handed on
by position."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.builders import step

from trajdebug.core.model import Dependency, ErrorInfo, Run, Step


_s = step


def _run(*steps: Step) -> Run:
    return Run("r", "t", outcome="failure", steps=steps)


def _slice(run: Run) -> set[str]:
    """The failures' backward slice over the edges the analysis used (the steps a search can reach)."""
    from trajdebug.analysis import analyze
    from trajdebug.core.graph import DependencyGraph

    a = analyze(run, top=50)
    return DependencyGraph(a.run).backward_slice([f.step_id for f in a.failures])



def _otel_run(program: Callable[[Any], None]) -> Run:
    """The run `trajdebug import --from otlp` reads from the spans ``program`` writes with the OpenTelemetry SDK
    (OpenInference attributes, the OTLP exporter's own JSON encoding); a ``ValueError`` it raises ends the run."""
    pytest.importorskip("opentelemetry.sdk.trace")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.common")
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from trajdebug.sources.formats.otlp import runs_from_otlp

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with contextlib.suppress(ValueError):
        program(provider.get_tracer("agent-under-test"))
    provider.shutdown()
    [run] = runs_from_otlp([MessageToDict(encode_spans(exporter.get_finished_spans()))]).runs
    return run


@contextlib.contextmanager
def _span(tracer: Any, name: str, kind: str, given: Any = None, out: Any = None) -> Iterator[Any]:
    """An OpenInference span with its input and (when ``out`` is not None) output as JSON."""
    attrs = {"openinference.span.kind": kind}
    if given is not None:
        attrs |= {"input.value": json.dumps(given), "input.mime_type": "application/json"}
    with tracer.start_as_current_span(name, attributes=attrs) as sp:
        yield sp
        if out is not None:
            sp.set_attribute("output.value", json.dumps(out))
            sp.set_attribute("output.mime_type", "application/json")


def _ids(run: Run, name: str) -> list[str]:
    return [s.step_id for s in run.steps if s.name == name]


CATALOGUE = {"Nimrod Variations": (48, 79, True), "Lament for Bells": (48, 84, False), "Summer Fantasy": (48, 87, False)}


def _recital(tracer: Any, *, kept_filter: bool = True) -> None:
    """A carillon programme: a model picks candidates from the repertoire, each is checked against the bell range
    and recent recitals, the ones that pass are ordered, and the validator finds a piece played recently (the
    history check cleared it).  Each title is held by five outputs (search, model, parser, both checks): too many
    for a shared value to say which one the ordering step read."""
    with _span(tracer, "recital-agent", "AGENT", {"recital": "CR-721"}):
        with _span(tracer, "repertoire_search", "RETRIEVER", {"occasion": "remembrance"},
                   [{"title": t, "lowest": lo, "highest": hi} for t, (lo, hi, _) in CATALOGUE.items()]):
            pass
        picked = json.dumps(list(CATALOGUE))
        with _span(tracer, "select_pieces", "LLM", {"messages": [{"role": "user", "content": "Pick in order."}]},
                   {"role": "assistant", "content": picked}):
            pass
        with _span(tracer, "parse_selection", "CHAIN", {"text": picked}, list(CATALOGUE)):
            pass
        kept = []
        for title, (lo, hi, played) in CATALOGUE.items():
            fits = hi <= 86
            with _span(tracer, "check_range", "TOOL", {"title": title, "lowest": lo, "highest": hi},
                       {"title": title, "fits": fits}):
                pass
            cleared = played and title == "Nimrod Variations"  # the fault: a recent recital is not looked at
            with _span(tracer, "check_history", "TOOL", {"title": title, "recitals": 3},
                       {"title": title, "played_recently": played and not cleared}):
                pass
            if fits and (cleared or not played):
                kept.append(title)
        programme = [{"title": t, "minutes": 6} for t in kept]
        with _span(tracer, "order_programme", "CHAIN", {"pieces": kept if kept_filter else []}, programme):
            pass
        with _span(tracer, "validate_programme", "CHAIN", {"recital": "CR-721", "programme": programme}):
            raise ValueError("CR-721: Nimrod Variations was played in one of the last 3 recitals")


class TestHandoffs:
    def test_a_check_whose_yes_or_no_let_an_item_into_a_later_list_is_on_the_failures_path(self) -> None:
        """The history check that cleared a piece played recently (its output echoes the title beside a yes/no)
        is in the failing validator's slice, through the ordering step handed the kept titles as a list."""
        run = _otel_run(_recital)
        [bad] = [s.step_id for s in run.steps if s.name == "check_history" and "Nimrod" in json.dumps(s.input)]
        assert bad in _slice(run)

    def test_each_kept_item_depends_on_the_checks_of_that_item_only(self) -> None:
        """The ordering step gets a control edge to both checks of each title it was given, none to the checks of
        the title left out (its verdict kept nothing in that list)."""
        from trajdebug.analysis.inference import KEPT_KEY, kept_edges

        run = _otel_run(_recital)
        [order] = _ids(run, "order_programme")
        by_id = {s.step_id: s for s in run.steps}
        edges = kept_edges(run)[order]
        assert {(by_id[d.step_id].name, d.kind, d.key) for d in edges} == {
            ("check_range", "control", KEPT_KEY + "nimrod variations"),
            ("check_history", "control", KEPT_KEY + "nimrod variations"),
            ("check_range", "control", KEPT_KEY + "lament for bells"),
            ("check_history", "control", KEPT_KEY + "lament for bells"),
        }

    def test_a_check_step_given_the_item_itself_is_no_list_the_verdict_kept(self) -> None:
        """The history check is handed the title the range check answered about, as a field, not in a list: it
        does not depend on the range check's verdict."""
        from trajdebug.analysis.inference import kept_edges

        run = _otel_run(_recital)
        edges = kept_edges(run)
        assert not any(sid in edges for sid in _ids(run, "check_history"))

    def test_a_sub_agent_span_that_recorded_no_output_is_on_the_path_of_what_it_returned(self) -> None:
        """A liaison sub-agent span run for the wrong guest (its input names a guest no earlier step returned)
        set no output; the step that read its parsed answer depends on it, so it is in the validator's slice."""

        def program(tracer: Any) -> None:
            with _span(tracer, "recital-agent", "AGENT", {"recital": "CR-722"}):
                with _span(tracer, "get_recital", "TOOL", {"recital": "CR-722"},
                           {"recital": "CR-722", "guest": "Liesbeth Maes", "slot_min": 40}):
                    pass
                with _span(tracer, "guest_liaison", "AGENT", {"guest": "Anna Kessler", "recital": "CR-722"}):
                    with _span(tracer, "guest_repertoire", "TOOL", {"guest": "Anna Kessler"},
                               {"pieces": ["Fantasia on Greensleeves", "Little Suite"], "minutes": [6, 7]}):
                        pass
                    with _span(tracer, "parse_guest", "CHAIN", {"text": "Confirmed: Fantasia on Greensleeves"},
                               {"title": "Fantasia on Greensleeves", "minutes": 6}):
                        pass
                with _span(tracer, "order_programme", "CHAIN", {"guest": {"title": "Fantasia on Greensleeves",
                                                                          "minutes": 6}, "pieces": ["Sarabande"]},
                           [{"title": "Sarabande", "minutes": 5}, {"title": "Fantasia on Greensleeves", "minutes": 6}]):
                    pass
                with _span(tracer, "validate_programme", "CHAIN", {"programme": ["Sarabande",
                                                                                 "Fantasia on Greensleeves"]}):
                    raise ValueError("CR-722: guest piece Fantasia on Greensleeves is not in Liesbeth Maes's repertoire")

        run = _otel_run(program)
        [liaison] = _ids(run, "guest_liaison")
        assert liaison in _slice(run)

    def test_an_enclosing_step_that_recorded_its_output_gets_no_returned_edge(self) -> None:
        """A sub-agent that recorded what it returned is linked by its output's content like any step: no step
        depends on it only because it read one of its steps."""
        from trajdebug.analysis.inference import returned_edges

        run = _run(
            Step("sub", "liaison", "agent", input={"guest": "Anna"}, output={"title": "Pavane"}, start_ns=0, end_ns=5),
            _s("t", "repertoire", "tool", 1, {"guest": "Anna"}, {"title": "Pavane"}, parent_id="sub"),
            _s("use", "order", "other", 6, {"guest": {"title": "Pavane"}}, ["Pavane"], "t"),
        )
        assert returned_edges(run, {s.step_id: list(s.deps) for s in run.steps}) == {}

    def test_an_empty_result_handed_on_by_position_later_is_on_the_failures_path(self) -> None:
        """A pad check that found nothing (``[]``, read by no step) is handed on as a positional argument three steps
        later: the assembler depends on it, and the limits lookup that made it find nothing is in the slice."""

        def program(tracer: Any) -> None:
            days = [{"date": "2027-03-11", "car_b": 5.4}, {"date": "2027-03-12", "car_b": 7.5}]
            with _span(tracer, "maintenance", "AGENT", ["week 2027-03-08"]):
                with _span(tracer, "fetch_log", "TOOL", ["2027-03-08"], {"week": "2027-03-08", "days": days}):
                    pass
                limit = {"component": "brake pads", "min_mm": 4.0}
                with _span(tracer, "component_limits", "RETRIEVER", ["brake pads"], limit):
                    pass
                with _span(tracer, "flag_pads", "CHAIN", [days, limit], []):
                    pass
                with _span(tracer, "rope_record", "TOOL", ["north"], {"line": "north", "tested": "2027-03-01"}):
                    pass
                with _span(tracer, "next_test", "CHAIN", ["2027-03-14"], {"next_brake_test": "2027-03-16"}):
                    pass
                report = {"days": days, "flags": [], "rope": "2027-03-01", "next": "2027-03-16"}
                with _span(tracer, "assemble_report", "CHAIN", [days, [], "2027-03-01", "2027-03-16"], report):
                    pass
                with _span(tracer, "validate_report", "CHAIN", [report]):
                    raise ValueError("car B pads at 5.4 mm on 2027-03-11 not flagged (limit 6.0 mm)")

        run = _otel_run(program)
        assert {_ids(run, "flag_pads")[0], _ids(run, "component_limits")[0]} <= _slice(run)

    def test_an_empty_result_a_step_already_read_is_no_later_steps_argument(self) -> None:
        """An empty search result the next step read is not also the source of an empty list a later step is
        given (that list is the later step's own default)."""
        from trajdebug.analysis.inference import unread_empty_edges

        run = _run(
            _s("search", "search", "tool", 0, ["pads"], []),
            _s("read", "summarise", "other", 2, [[]], {"found": 0}, "search"),
            _s("later", "assemble", "other", 4, ["x", []], {"ok": True}),
        )
        assert unread_empty_edges(run, {s.step_id: list(s.deps) for s in run.steps}) == {}

    def test_a_parsed_yes_or_no_handed_into_a_prompt_under_its_field_is_on_the_failures_path(self) -> None:
        """A permit parser's ``{"licence": false}`` written into the report model's prompt as ``"licence": false``
        links the report to the parser, so the stale rules lookup behind the parser's answer is in the slice."""

        def program(tracer: Any) -> None:
            with _span(tracer, "survey-agent", "AGENT", {"survey": "WS-514"}):
                with _span(tracer, "abstraction_rules", "TOOL", {"use": "irrigation"}, {"licence_over_m3_day": 20}):
                    pass
                prompt = 'Is a licence needed?\nDATA: {"demand_m3_day": 16.0, "rules": {"licence_over_m3_day": 20}}'
                with _span(tracer, "permit", "LLM", {"messages": [{"role": "user", "content": prompt}]},
                           {"role": "assistant", "content": "licence_required=no; threshold=20 m3/day"}):
                    pass
                with _span(tracer, "parse_permit", "CHAIN", {"text": "licence_required=no; threshold=20 m3/day"},
                           {"licence": False}):
                    pass
                data = json.dumps({"survey": "WS-514", "depth_m": 47.3, "licence": False})
                summary = "Survey WS-514: drill to about 47.3 m; licence not required."
                with _span(tracer, "report", "LLM", {"messages": [{"role": "user", "content": f"Write it.\nDATA: {data}"}]},
                           {"role": "assistant", "content": summary}):
                    pass
                with _span(tracer, "validate_survey", "CHAIN", {"survey": "WS-514", "report": summary}):
                    raise ValueError("WS-514: 16.0 m3/day abstraction, licence marked not required")

        run = _otel_run(program)
        assert {_ids(run, "parse_permit")[0], _ids(run, "abstraction_rules")[0]} <= _slice(run)

    def test_a_yes_or_no_field_several_steps_answer_alike_links_none(self) -> None:
        """Two calls answering ``{"sent": true}`` acknowledge; a later step given ``sent: true`` is linked to neither,
        while one given the field only one step answered is linked to it."""
        from trajdebug.analysis.inference import ANSWERED_KEY, yes_no_edges

        run = _run(
            _s("a", "notify", "tool", 0, {"to": "ana"}, {"sent": True}),
            _s("b", "notify", "tool", 2, {"to": "bo"}, {"sent": True}),
            _s("p", "parse_permit", "parse", 4, {"text": "no"}, {"licence": False}),
            _s("c", "report", "other", 6, {"sent": True, "licence": False}, "ok"),
        )
        edges = yes_no_edges(run)
        assert {sid: [(d.step_id, d.key) for d in ds] for sid, ds in edges.items()} == {"c": [("p", ANSWERED_KEY + "licence")]}

    def test_a_recorded_step_with_no_output_returned_nothing_only_an_imported_span_is_linked(self) -> None:
        """The same sub-agent with no output gets the returned edge in an imported OTLP run, not in a recorded run:
        the recorder writes what a step returned (an agent step with none is a loop's frame)."""
        from trajdebug.analysis import analyze
        from trajdebug.analysis.inference import RETURNED_KEY

        def returned(metadata: dict[str, Any]) -> set[str]:
            run = Run("r", "t", outcome="failure", metadata=metadata, steps=(
                Step("sub", "liaison", "agent", input={"guest": "Anna Kessler"}, start_ns=0, end_ns=5),
                _s("t", "repertoire", "tool", 1, {"guest": "Anna Kessler"}, {"title": "Greensleeves Fantasia"},
                   parent_id="sub"),
                _s("use", "order_programme", "other", 6, {"guest": {"title": "Greensleeves Fantasia"}},
                   ["Greensleeves Fantasia"]),
                _s("v", "validate", "other", 8, {"programme": ["Greensleeves Fantasia"]}, None, "use",
                   status="error", error=ErrorInfo("ValueError", "Greensleeves Fantasia is not the guest's piece")),
            ))
            a = analyze(run, top=10)
            return {d.step_id for s in a.run.steps for d in s.deps if (d.key or "").startswith(RETURNED_KEY)}

        assert returned({"source_format": "otlp"}) == {"sub"}
        assert returned({}) == set()


def _loop_empty(tracer: Any) -> None:
    """Three items each looked up and reported by position; bravo's lookup found nothing (``[]``, the fault)
    and the batch's check names bravo, which it was not given."""
    with _span(tracer, "agent", "AGENT", {"batch": "B"}):
        for i, item in enumerate(["alpha", "bravo", "charlie"]):
            records = [] if i == 1 else [{"id": item, "n": i + 1}]
            with _span(tracer, "lookup", "TOOL", [item], records):
                pass
            with _span(tracer, "file_report", "TOOL", [item, records], {"ok": True}):
                pass
        with _span(tracer, "final", "CHAIN", {"batch": "B"}):
            raise ValueError("B: bravo has no records")


class TestHandoffNarrowings:
    """The narrowings review rev52o asked for: each rule links only what one hand-off can explain."""

    def test_an_acknowledgement_echoing_its_whole_input_is_no_verdict_that_kept_an_item(self) -> None:
        """A status write answering ``{"ticket", "status", "updated": true}`` for the ticket and status it was
        given echoes two of its input's texts: a later list holding the ticket gets no gate edge to it."""
        from trajdebug.analysis.inference import kept_edges

        run = _run(
            _s("w", "set_status", "tool", 0, {"ticket": "TK-100", "status": "resolved"},
               {"ticket": "TK-100", "status": "resolved", "updated": True}),
            _s("d", "digest", "other", 2, {"tickets": ["TK-100", "TK-200"]}, {"n": 2}),
        )
        assert kept_edges(run) == {}

    def test_a_write_echoing_the_payee_and_amount_it_was_given_is_no_verdict(self) -> None:
        """A scheduled payment answering ``{"scheduled": true, "payee", "amount"}`` for the payee and amount it
        was given is a record written back: the budget check given the payments in a list is not gated by it."""
        from trajdebug.analysis.inference import kept_edges

        run = _run(
            _s("w", "schedule_payment", "tool", 0, {"household": "hh-1", "payee": "GYM", "amount": 29.0},
               {"scheduled": True, "payee": "GYM", "amount": 29.0, "date": "2025-11-03"}),
            _s("b", "budget_check", "other", 2, {"scheduled": [{"payee": "GYM", "amount": 29.0}]}, None),
        )
        assert kept_edges(run) == {}

    def test_a_text_one_check_echoes_for_different_inputs_is_a_shared_setting_not_an_item(self) -> None:
        """Stock checks of two SKUs that each echo only their warehouse: the later list of lines in that
        warehouse is linked to neither check by the warehouse, while one check of one input still gates."""
        from trajdebug.analysis.inference import kept_edges

        run = _run(
            _s("c1", "check_stock", "tool", 0, {"sku": "sku-01", "warehouse": "north"},
               {"warehouse": "north", "in_stock": True}),
            _s("c2", "check_stock", "tool", 2, {"sku": "sku-02", "warehouse": "north"},
               {"warehouse": "north", "in_stock": True}),
            _s("r", "reserve", "other", 4, {"lines": [{"sku": "sku-01", "warehouse": "north"}]}, {"ok": True}),
        )
        assert kept_edges(run) == {}
        one = _run(run.steps[0], run.steps[2])
        assert [d.step_id for d in kept_edges(one)["r"]] == ["c1"]

    def test_past_the_cap_the_check_of_the_item_the_failure_names_keeps_its_edge(self) -> None:
        """Forty SKUs checked and all handed on: past the cap of gate edges, the check of the SKU the failure
        names is kept (not the first ones in sorted order)."""
        from trajdebug.analysis.inference import kept_edges

        skus = [f"sku-{i:02d}" for i in range(40)]
        checks = [_s(f"c{i}", "check_stock", "tool", 2 * i, {"sku": s, "qty": 2}, {"sku": s, "in_stock": True})
                  for i, s in enumerate(skus)]
        run = _run(*checks, _s("r", "reserve", "other", 100, {"lines": skus}, {"reserved": 40}))
        assert "c33" in {d.step_id for d in kept_edges(run, named="o-1: sku-33 has no stock")["r"]}
        assert "c33" in {d.step_id for d in kept_edges(run)["r"]}  # the latest checks, without a name

    def test_a_recorded_run_gets_no_gate_edges_only_an_imported_one(self) -> None:
        """The carillon programme's checks gate the ordering step in the imported run, not in the same run as
        the recorder would write it: there every field a lookup returned is recorded, so any lookup of one
        record beside a yes/no (a patient's screen) would read as a check that kept an item."""
        from dataclasses import replace

        from trajdebug.analysis import analyze
        from trajdebug.analysis.inference import KEPT_KEY

        def kept(run: Run) -> set[str]:
            a = analyze(run, top=10)
            return {d.step_id for s in a.run.steps for d in s.deps if (d.key or "").startswith(KEPT_KEY)}

        run = _otel_run(_recital)
        assert kept(run)
        assert kept(replace(run, metadata={})) == set()

    def test_a_yes_or_no_field_a_bigger_record_also_holds_links_no_one_field_answer(self) -> None:
        """A Slack ack ``{"sent": true}`` and an email record ``{"sent": true, "to": ...}``: a step given the
        email record's ``sent: true`` is not linked to the Slack ack."""
        from trajdebug.analysis.inference import yes_no_edges

        run = _run(
            _s("n", "notify_slack", "tool", 0, {"channel": "ops"}, {"sent": True}),
            _s("e", "send_email", "tool", 2, {"to": "ops@x.example"}, {"sent": True, "to": "ops@x.example"}),
            _s("c", "close_ticket", "other", 4, {"email": {"sent": True, "to": "ops@x.example"}}, None),
        )
        assert yes_no_edges(run) == {}

    def test_among_many_yes_or_no_fields_a_step_is_linked_to_the_one_it_was_given(self) -> None:
        """Forty parsers each answering their own field: a step given one field's answer is linked to its parser
        only (the answers are matched by token, not looked for one by one)."""
        from trajdebug.analysis.inference import ANSWERED_KEY, yes_no_edges

        words = [f"flag{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(40)]
        parsers = [_s(f"p{i}", "parse", "parse", 2 * i, {"text": w}, {w: i % 2 == 0}) for i, w in enumerate(words)]
        run = _run(*parsers, _s("u", "use", "other", 100, {"flagbn": False, "note": "x"}, None))
        edges = yes_no_edges(run)
        assert {sid: [(d.step_id, d.key) for d in ds] for sid, ds in edges.items()} == {
            "u": [("p39", ANSWERED_KEY + "flagbn")]}

    def test_two_unread_empty_results_waiting_link_neither_to_an_empty_argument(self) -> None:
        """An error search and a warning search both found nothing, unread: a report handed one empty list by
        position could have been handed either, so it is linked to neither."""
        from trajdebug.analysis.inference import unread_empty_edges

        run = _run(
            _s("e", "find_errors", "tool", 0, {"job": "J-2", "region": "eu-west"}, []),
            _s("w", "find_warnings", "tool", 2, {"job": "J-2"}, []),
            _s("r", "report", "other", 4, [["J-2"], []], {"errors": 0}),
        )
        assert unread_empty_edges(run, {s.step_id: [] for s in run.steps}) == {}
        assert unread_empty_edges(_run(run.steps[0], run.steps[2]), {})["r"][0].step_id == "e"

    def test_an_empty_named_argument_is_no_hand_off_of_an_unread_empty_result(self) -> None:
        """A model's plan ``{"team": ..., "exclude": []}`` after a duplicate search found nothing: the empty
        named argument is the model's (or a default), not the search's result."""
        from trajdebug.analysis.inference import unread_empty_edges

        run = _run(
            _s("s", "search_dupes", "tool", 0, {"query": "payments outage"}, []),
            _s("t", "create_ticket", "tool", 2, {"team": "billing", "exclude": []}, {"id": "T-1"}),
        )
        assert unread_empty_edges(run, {s.step_id: [] for s in run.steps}) == {}

    def test_a_lookup_that_found_nothing_stays_first_when_its_empty_result_is_handed_on(self) -> None:
        """bravo's lookup returned ``[]``, handed on to bravo's report by position; the summary names bravo, a
        record it was not given: the lookup keeps its edge as the world the summary read, and ranks first."""
        from trajdebug.analysis import analyze

        run = _otel_run(_loop_empty)
        a = analyze(run, top=3)
        by_id = {s.step_id: s for s in a.run.steps}
        top = a.localization.candidates[0]
        assert (by_id[top.step_id].name, by_id[top.step_id].input) == ("lookup", ["bravo"])

    def test_a_chain_span_around_a_loop_that_recorded_no_output_gets_no_returned_edge(self) -> None:
        """A span around a program's loop (``reserve_passes``, handed the passes, no output) is no sub-agent:
        the plan reading a reservation one of its calls made is linked to that call, not to the span, while the
        same span as an agent is linked."""
        from trajdebug.analysis.inference import returned_edges

        def linked(kind: str) -> set[str]:
            run = _run(
                Step("sub", "reserve_passes", kind, input={"passes": ["P-03"]}, start_ns=0, end_ns=5),  # type: ignore[arg-type]
                _s("r", "reserve_antenna", "tool", 1, {"pass_id": "P-03"}, {"reservation": "R-INU-03"},
                   parent_id="sub"),
                _s("p", "submit_plan", "tool", 6, {"reservation": "R-INU-03"}, None, "r"),
            )
            return {d.step_id for ds in returned_edges(run, {s.step_id: list(s.deps) for s in run.steps}).values()
                    for d in ds}

        assert linked("other") == set()
        assert linked("agent") == {"sub"}


def _top(program: Callable[[Any], None], n: int = 3) -> list[str]:
    """The names of the first ``n`` candidates the analysis ranks for the imported run ``program`` writes."""
    from trajdebug.analysis import analyze

    a = analyze(_otel_run(program), top=n)
    by_id = {s.step_id: s for s in a.run.steps}
    return [by_id[c.step_id].name for c in a.localization.candidates[:n]]


def _credit(tracer: Any) -> None:
    """A credit approval: a screen answers ``{"flagged": false}``; the customer record (fetched with the wrong
    limit, the fault) holds ``flagged: false`` too, and the approval is handed that record."""
    with _span(tracer, "agent", "AGENT", {"customer": "C-9"}):
        with _span(tracer, "screen", "TOOL", {"customer": "C-9"}, {"flagged": False}):
            pass
        customer = {"id": "C-9", "flagged": False, "limit": 50000}
        with _span(tracer, "fetch_customer", "TOOL", {"customer": "C-9"}, {"customer": customer}):
            pass
        with _span(tracer, "approve", "CHAIN", {"customer": customer, "amount": 20000}, {"approved": True}):
            pass
        with _span(tracer, "post", "CHAIN", {"approved": True, "amount": 20000}):
            raise ValueError("C-9 approved 20000 over its 5000 limit")


def _refund_notice(tracer: Any) -> None:
    """A notice: a notes search finds nothing (``[]``, read by no step), a template is picked (the wrong one, the
    fault) and rendered with a literal empty list of extras by position."""
    with _span(tracer, "agent", "AGENT", {"user": "U-1"}):
        with _span(tracer, "search_notes", "TOOL", ["U-1"], []):
            pass
        with _span(tracer, "pick_template", "TOOL", ["U-1"], "tpl_refund"):
            pass
        with _span(tracer, "render", "TOOL", ["tpl_refund", []], "Your refund is on its way"):
            pass
        with _span(tracer, "send", "CHAIN", {"text": "Your refund is on its way"}):
            raise ValueError("U-1 asked for an exchange, was sent a refund notice")


class TestHandoffNarrowingsRev52p:
    """The two narrowings review rev52p asked for: a hand-off another step's record could explain links none."""

    def test_a_yes_or_no_an_earlier_record_holds_inside_it_links_no_one_field_answer(self) -> None:
        """A screen's ``{"flagged": false}`` and a customer record holding ``flagged: false`` inside: the step
        given the record is not linked to the screen, while a step that started before the record ended is."""
        from trajdebug.analysis.inference import ANSWERED_KEY, yes_no_edges

        screen = _s("s", "screen", "tool", 0, {"customer": "C-9"}, {"flagged": False})
        record = {"customer": {"id": "C-9", "flagged": False, "limit": 50000}}
        run = _run(
            screen,
            _s("f", "fetch_customer", "tool", 2, {"customer": "C-9"}, record),
            _s("a", "approve", "other", 4, record, {"approved": True}),
        )
        assert yes_no_edges(run) == {}
        early = _run(screen, _s("a", "approve", "other", 2, record, None), _s("f", "fetch", "tool", 4, {}, record))
        assert {k: [(d.step_id, d.key) for d in v] for k, v in yes_no_edges(early).items()} == {
            "a": [("s", ANSWERED_KEY + "flagged")]}

    def test_an_innocent_screen_ranks_below_the_record_the_approval_was_handed(self) -> None:
        """The customer fetch that returned the wrong limit ranks above the screen whose ``flagged: false`` the
        record repeats (review rev52p's nested_flag: the screen was second, above the fetch)."""
        top = _top(_credit)
        assert "fetch_customer" in top
        assert "screen" not in top or top.index("fetch_customer") < top.index("screen")

    def test_an_empty_argument_beside_nothing_the_finder_was_given_is_no_hand_off(self) -> None:
        """A render given a template and a literal ``[]`` by position is not linked to an unread empty notes
        search for the user: the render was given nothing the search was given."""
        from trajdebug.analysis.inference import unread_empty_edges

        run = _run(
            _s("n", "search_notes", "tool", 0, ["U-1"], []),
            _s("p", "pick_template", "tool", 2, ["U-1"], "tpl_refund"),
            _s("r", "render", "tool", 4, ["tpl_refund", []], "Your refund is on its way"),
        )
        assert unread_empty_edges(run, {"r": [Dependency("p")]}) == {}
        handed = _run(*run.steps[:2], _s("r", "render", "tool", 4, ["tpl_refund", ["U-1"], []], "x"))
        assert [d.step_id for d in unread_empty_edges(handed, {})["r"]] == ["n"]

    def test_the_picked_template_ranks_above_a_search_whose_empty_result_no_one_read(self) -> None:
        """The wrong template's pick ranks above the notes search (review rev52p's positional_default: the
        search's unread ``[]`` was linked to the render's literal one and ranked second)."""
        top = _top(_refund_notice)
        assert "pick_template" in top
        assert "search_notes" not in top or top.index("pick_template") < top.index("search_notes")
