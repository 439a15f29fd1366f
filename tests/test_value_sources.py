"""Values the failure names, traced to the steps that introduced or dropped them (`_value_sources`)."""

from __future__ import annotations

import pytest

from trajdebug.analysis._drops import _own_word
from trajdebug.analysis.lexicon import ENGLISH
from trajdebug.analysis.lineage import Lineage
from trajdebug.core.model import ErrorInfo, Run, Step


def _model_reading(out: dict[str, object]) -> Run:
    request = "Kayak for two on Sunday morning, life jackets for a child, name Okafor."
    return Run(
        "r",
        "test",
        steps=(Step("m", "ChatModel", "llm", input={"messages": [{"role": "user", "content": request}]}, output=out),),
    )


def test_a_flag_a_model_read_a_request_into_is_no_word_of_its_own() -> None:
    """A model reading a request into fields writes flags (child_jacket=true) for its words: a flag is no word it
    put in place of the task's; a word no input holds (a boat class) still is."""
    flagged = _model_reading({"boat": "kayak", "seats": 2, "child_jacket": True, "name": "Okafor"})
    assert _own_word(Lineage(flagged).view("m"), ENGLISH) is None
    worded = _model_reading({"boat": "kayak", "seats": 2, "hull": "touring", "name": "Okafor"})
    word = _own_word(Lineage(worded).view("m"), ENGLISH)
    assert word is not None and word.raw == "touring"


def test_a_failure_placed_on_a_step_enclosing_others_traces_the_values_it_names_to_the_step_inside_that_made_them() -> None:
    """A run failed after the fact (a check on its answer) is placed on its top step, which encloses every other
    and starts first: the values its reason names are traced to the inner step that introduced them."""
    from trajdebug.analysis import analyze

    run = Run(
        "r-kiln",
        "kiln-planner",
        steps=(
            Step("top", "kiln-planner", "agent", input="fire the celadon batch", output="peak 1287 C, hold 20 min"),
            Step("clay", "read_clay", "tool", parent_id="top", input={"batch": "celadon"}, output={"cone": "6", "body": "porcelain"}),
            Step("curve", "plan_curve", "other", parent_id="top", input={"cone": "6"}, output={"peak_c": 1287, "hold_min": 20}),
            Step("say", "write_plan", "llm", parent_id="top", input={"peak_c": 1287}, output="peak 1287 C, hold 20 min"),
        ),
        outcome="failure",
        failure_reason="peak 1287 C is above the glaze's limit",
    )
    reasons = {c.step_id: " ".join(c.reasons) for c in analyze(run, model=None).root_causes}
    assert "introduced '1287', which the failure at kiln-planner names" in reasons["curve"]


def _enclosed_run(beside: tuple[Step, ...], top_out: object, reason: str) -> Run:
    steps = (
        Step("top", "loom-planner", "agent", input="weave the indigo runner", output=top_out, attributes={"final": True}),
        Step("yarn", "read_yarn", "tool", parent_id="top", input={"dye": "indigo"}, output={"ply": "4", "wpi": 14}),
        *beside,
        Step("draft", "write_draft", "llm", parent_id="top", input={"wpi": 14}, output="sett 14 epi, 3 m warp"),
    )
    return Run("r-loom", "loom-planner", steps=steps, outcome="failure", failure_reason=reason)


def test_a_failure_read_past_the_inner_steps_of_the_step_it_is_placed_on_never_names_that_step_as_an_origin() -> None:
    """A run's failure placed on its top step names a value no inner step holds, only the top's own answer: the
    top is where the failure showed, not a step that introduced the value (as a failing step read at its place)."""
    from trajdebug.analysis import analyze

    run = _enclosed_run((), {"sett": "14 epi", "warp_m": 83}, "a warp of 83 m is far too long")
    reasons = {c.step_id: " ".join(c.reasons) for c in analyze(run, model=None).root_causes}
    assert "introduced" not in reasons.get("top", "")


def test_a_root_span_beside_the_step_a_run_failure_is_placed_on_that_fed_a_step_inside_stays_an_origin() -> None:
    """Read after the last inner step of the step it is placed on, a run's failure may trace a value to another
    root span that started while that step ran, when the span fed a step inside it (it made the value)."""
    from trajdebug.analysis import analyze
    from trajdebug.core.model import Dependency

    other = Step("side", "size_warp", "tool", input={"runner_m": 2}, output={"warp_m": 83})
    run = _enclosed_run((other,), "sett 14 epi", "a warp of 83 m is far too long")
    draft = Step("draft", "write_draft", "llm", parent_id="top", input={"wpi": 14, "warp_m": 83}, output="sett 14 epi, 83 m warp",
                 deps=(Dependency("side"),))
    run = Run(run.run_id, run.name, steps=(*run.steps[:-1], draft), outcome="failure", failure_reason=run.failure_reason)
    reasons = {c.step_id: " ".join(c.reasons) for c in analyze(run, model=None).root_causes}
    assert "introduced '83', which the failure at loom-planner names" in reasons["side"]


def test_a_value_traced_from_the_failing_steps_field_is_named_as_its_origin_wrote_it() -> None:
    """A lookup that answered a plain list of moorings introduced the mooring a failing check holds under its own
    field (``blocked_berths``): the reason names the value, not that field, which the lookup never wrote."""
    from trajdebug.analysis import analyze

    berths = ["Pontoon East", "Slipway North", "Crane Quay"]
    run = Run(
        "r-marina",
        "marina-planner",
        steps=(
            Step("list", "list_berths", "tool", input={"marina": "Port Ellen"}, output=berths, start_ns=1, end_ns=2),
            Step("plan", "plan_moves", "other", input={"berths": berths}, output={"order": list(berths)}, start_ns=3, end_ns=4),
            Step("check", "check_moves", "condition", input={"blocked_berths": ["Slipway North"], "ok": False},
                 output={"ok": False}, start_ns=5, end_ns=6),
        ),
        outcome="failure",
        failure_reason="the crane is sent to a blocked berth, Slipway North",
    )
    reasons = [r for c in analyze(run, model=None).root_causes if c.step_id == "list" for r in c.reasons]
    assert "introduced 'Slipway North', which check_moves, where the run failed, was given" in reasons
    assert not any("blocked_berths=" in r for r in reasons)


def _rental(message: str) -> list[tuple[str, float]]:
    """The dropped findings of a car rental whose model, given the rental's 122 days, books by dates alone and
    whose booking tool fails with ``message``: (reason, weight) of each."""
    from trajdebug.analysis._localize import collect_evidence
    from trajdebug.core.model import Dependency, ErrorInfo

    conversation = [{"role": "user", "content": "car in Porto"}, {"role": "tool", "content": '{"days": 122}'},
                    {"role": "tool", "content": '{"fleet": "compact"}'}, {"role": "tool", "content": "rates"}]
    steps = (
        Step("d", "parse_dates", "tool", input={"pickup": "2025-03-04"}, output={"pickup": "2025-03-04", "days": 122}),
        Step("m", "model", "llm", input={"messages": conversation}, output={"pickup": "2025-03-04", "dropoff": "2025-07-04"},
             deps=(Dependency("d", "data"),)),
        Step("r", "reserve", "tool", input={"pickup": "2025-03-04", "dropoff": "2025-07-04"}, status="error",
             error=ErrorInfo("ValueError", message), deps=(Dependency("m", "data"),)),
    )
    r = collect_evidence(Run("r1", "car-rental", steps=steps, outcome="failure"))
    return [(e.reason, e.suspicion) for e in r.verdict("m").evidence if e.diagnoser == "lineage:dropped"]


def test_a_number_the_failure_holds_against_a_limit_is_named_not_expected_and_its_loss_weighs_less() -> None:
    """A model given the 122 days that the booking tool then rejects ("is 122 days, above the 30-day maximum")
    did not lose a value the failure expects (issue 23, nu22): the finding says the failure names it, at half
    the weight it has when the failure states the number without holding it against a limit."""
    [(checked, w_checked)] = _rental("rental 2025-03-04 to 2025-07-04 is 122 days, above the 30-day maximum")
    [(stated, w_stated)] = _rental("rental 2025-03-04 to 2025-07-04 needs 122 days of cover")
    assert checked == "was given '122', which the failure at reserve names, and did not pass it on"
    assert "expects" not in stated and w_checked == pytest.approx(w_stated / 2)


_CLAUSES = "either party may end this agreement with written notice and the supplier keeps its liability for the goods "


def _word_quote(counter: str, words: int | None = None) -> Run:
    """A fetch tool's document, a word counter (``counter``: its name) answering ``words`` (its text's count when
    None), and a quote billing the count, failing against the portal's 90."""
    from trajdebug.core.model import Dependency

    text = _CLAUSES * 3
    counted = len(text.split()) if words is None else words
    steps = (
        Step("f", "fetch_document", "tool", input={"doc_id": "D-2"}, output={"doc_id": "D-2", "text": text}, start_ns=1, end_ns=2),
        Step("c", counter, "tool", input={"text": text}, output={"words": counted}, start_ns=3, end_ns=4,
             deps=(Dependency("f", "data"),)),
        Step("q", "quote", "output", input={"words": counted}, output={"billed_words": counted}, start_ns=5, end_ns=6,
             deps=(Dependency("c", "data"),)),
        Step("m", "check", "other", input={"billed_words": counted}, output=None, status="error", start_ns=7, end_ns=8,
             error=ErrorInfo("ValueError", f"quote bills {counted} words but the portal counts 90"), deps=(Dependency("q", "data"),)),
    )
    return Run("r", "quotes", outcome="failure", steps=steps)


def test_a_counter_answering_the_characters_of_its_text_keeps_the_blame_and_hands_none_to_the_texts_writer() -> None:
    """A word counter whose bug is counting characters (``len(text)``) is where its number came from: it is
    not said to have counted it in the text it was given, and the step that wrote the text is not marked for
    it (review rev52u H1: the hand-off made a wrong answer confident)."""
    from trajdebug.analysis import analyze

    bad = _word_quote("count_words", words=len(_CLAUSES * 3))
    causes = analyze(bad, top=6).root_causes
    reasons = {c.step_id: c.reasons for c in causes}
    assert not any(r.startswith("counted") for r in reasons.get("c", []))
    assert not any(r.startswith("wrote the text") for r in reasons.get("f", []))
    assert causes[0].step_id != "f"


def test_a_failing_step_linked_only_by_what_its_message_states_is_said_to_name_that_value_and_given_no_other() -> None:
    """A check that recorded nothing it read is linked to the bay assignment by the route its message states
    (``the standard van``): the assignment introduced a value the failure names, not one the check was given,
    and the assignment's other values (its bay, its status), which the message never states, are no values the
    failure involves (review rev51o3, M2)."""
    from trajdebug.analysis import analyze
    from trajdebug.core.model import ErrorInfo

    message = "no slot left for the standard van"
    steps = (
        Step("root", "desk", "agent", input="plan order 7", start_ns=0, end_ns=100),
        Step("a", "assign_bay", "tool", input={"order": 7}, parent_id="root", start_ns=2, end_ns=3,
             output={"bay": "bay-7", "route": "standard van", "status": "accepted"}),
        Step("c", "check_slot", "other", parent_id="root", start_ns=90, end_ns=91, status="error",
             error=ErrorInfo("Refused", message)),
    )
    causes = analyze(Run("r", "desk", outcome="failure", steps=steps), model=None).root_causes
    reasons = [r for c in causes for r in c.reasons]
    assert "introduced route=standard van, which the failure at check_slot names" in reasons
    assert not any("where the run failed, was given" in r or "bay=" in r or "accepted" in r for r in reasons)


def _recorded_check(given: dict[str, object], looked_up: dict[str, object], made: dict[str, object], message: str) -> Run:
    """A run recorded by the recorder: a request (``given``, the run's input), a lookup answering ``looked_up``, a
    tool answering ``made`` (later, asked for nothing it returns), and a check, handed all three, that fails with
    ``message``."""
    import trajdebug
    from trajdebug.testing import capture_runs

    with capture_runs() as runs:
        try:
            with trajdebug.run("order-check"):
                with trajdebug.step("request", kind="input", input=given) as req:
                    req.output = given
                with trajdebug.step("get_order_form", kind="tool", input={"order": "W-303"}, deps=[req]) as form:
                    form.output = looked_up
                with trajdebug.step("make", kind="tool", input={"order": "W-303"}, deps=[form]) as tool:
                    tool.output = made
                with trajdebug.step("validate", kind="condition", input={**given, **looked_up, **made}, deps=[form, tool]):
                    raise ValueError(message)
        except ValueError:
            pass
    return runs[0]


def _thin(run: Run) -> dict[str, tuple[float, str]]:
    """The thin slice of a run's failure by step name: (strength, reason) of each step on it."""
    from trajdebug.analysis._localize import collect_evidence

    names = {s.step_id: s.name for s in run.steps}
    return {names[sid]: (w, why) for sid, (w, why) in collect_evidence(run).thin.items()}


def _reasons(run: Run) -> dict[str, list[str]]:
    """The reasons of each ranked step by name."""
    from trajdebug.analysis import analyze

    names = {s.step_id: s.name for s in run.steps}
    return {names[c.step_id]: list(c.reasons) for c in analyze(run, model=None).localization.ranked_all}


def test_a_number_the_runs_input_held_is_introduced_by_no_later_step_that_writes_it_again() -> None:
    """The request gave Tolu's age 14; a kart tool later answered a ballast of 14 kg: when the failure names 14
    ("Tolu (age 14) ..."), the tool only wrote the number again, it did not introduce the value (issue 23)."""
    run = _recorded_check(
        {"driver": "Tolu", "age": 14}, {"order": "W-303"}, {"kart": "adult 270cc", "ballast_kg": 14},
        "Tolu (age 14) is allocated an adult 270cc kart",
    )
    assert not any("14" in r for r in _reasons(run)["make"])


def test_a_number_no_step_held_before_is_introduced_by_the_step_that_wrote_it() -> None:
    """The same run where the request gave age 12 and the failure names the tool's 14: the tool introduced it."""
    run = _recorded_check(
        {"driver": "Tolu", "age": 12}, {"order": "W-303"}, {"kart": "adult 270cc", "ballast_kg": 14},
        "Tolu is allocated an adult 270cc kart with 14 kg of ballast",
    )
    assert "introduced '14', which the failure at validate names" in _reasons(run)["make"]


def test_of_two_numbers_a_failure_compares_the_one_that_came_first_is_the_yardstick_and_weighs_half() -> None:
    """"21 portions for 130 guests": the order form's 130 came first, the tool that made 21 came later and
    disagrees with it; the form's finding weighs half the tool's (``yardstick``), and the tool leads (issue 23)."""
    run = _recorded_check({"ask": "check W-303"}, {"order": "W-303", "guests": 130}, {"portions": 21}, "W-303: 21 portions for 130 guests")
    thin = _thin(run)
    assert thin["get_order_form"][0] == pytest.approx(thin["make"][0] / 2)
    assert next(iter(_reasons(run))) == "make"


def test_a_bound_a_failure_states_is_no_side_of_a_comparison() -> None:
    """"21 portions, below the minimum of 130": 130 is the check's limit, not a side; the form keeps its full finding."""
    one = _thin(_recorded_check({"ask": "check W-303"}, {"order": "W-303", "guests": 130}, {"portions": 21}, "21 portions"))
    run = _recorded_check(
        {"ask": "check W-303"}, {"order": "W-303", "guests": 130}, {"portions": 21}, "21 portions, below the minimum of 130"
    )
    assert _thin(run)["get_order_form"][0] > one["make"][0] / 2


def test_a_wrong_number_equal_to_an_id_the_run_held_before_is_still_introduced_by_the_step_that_wrote_it() -> None:
    """The request's order id is 250 and the charge tool wrongly charged 250: "charged 250 is above the quoted
    price" writes no ``order_id`` in front of the number, so the tool still introduced it (rev53l HIGH 1)."""
    run = _recorded_check(
        {"order_id": 250, "item": "lamp"}, {"order": "W-303", "unit_price": 200}, {"charged": 250},
        "charged 250 is above the quoted price",
    )
    assert "introduced '250', which the failure at validate names" in _reasons(run)["make"]


def test_a_number_the_message_writes_under_the_earlier_field_is_not_introduced_again() -> None:
    """The same run where the message says "order_id 250 was charged twice": it names the request's field in
    front of the number, and the tool that wrote 250 again did not introduce it."""
    run = _recorded_check(
        {"order_id": 250, "item": "lamp"}, {"order": "W-303", "unit_price": 200}, {"charged": 250},
        "order_id 250 was charged twice",
    )
    assert not any("250" in r for r in _reasons(run)["make"])


def test_a_small_whole_number_is_no_side_of_a_comparison() -> None:
    """"21 portions for 8 guests": 8 is a count that recurs by chance, so the form that stated it first keeps its
    full finding (no ``yardstick`` share)."""
    thin = _thin(_recorded_check({"ask": "check W-303"}, {"order": "W-303", "guests": 8}, {"portions": 21}, "W-303: 21 portions for 8 guests"))
    assert thin["get_order_form"][0] == pytest.approx(thin["make"][0])


def test_a_lead_that_comes_only_from_the_yardstick_share_is_at_most_unsure() -> None:
    """"charged 120 but the quote says 100": the same recording is a wrong charge or a stale quote; the charge
    tool leads the quote only by the share the earlier side loses, so the verdict says unsure, and why (rev53l)."""
    from trajdebug.analysis import analyze

    run = _recorded_check({"ask": "buy a lamp"}, {"order": "W-303", "quote": 100}, {"charged": 120}, "charged 120 but the quote says 100")
    a = analyze(run, model="default")
    names = {s.step_id: s.name for s in run.steps}
    top = a.localization.ranked_all[0]
    assert names[top.step_id] == "make"
    assert a.ranking_verdict == "unsure"
    assert any("yardstick share" in r and "at most unsure" in r for r in top.reasons)
