"""What a failure's number states: a limit the run broke and a piece of a date are no value a step got wrong."""

from __future__ import annotations

from tests.builders import step

from trajdebug.analysis._localize import localize
from trajdebug.analysis._stated import (
    bound_word,
    checked_values,
    is_label,
    is_piece,
    is_status,
    states_no_value,
)
from trajdebug.core.mentions import Mention, mentions
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step


def _mention(text: str, raw: str) -> Mention:
    return next(m for m in mentions(text, words=False) if m.raw.strip() == raw)


def test_a_number_after_words_of_comparison_is_a_limit() -> None:
    """ "Exceeds the deferment limit of 2500.00", "above 80%", "over the $3,200 ceiling" state limits; "has 2 days left" does not."""
    t = "balance due exceeds the deferment limit of 2500.00"
    assert bound_word(t, _mention(t, "2500.00")) == "limit"
    t = "loan-to-value above 80% requires insurance"
    assert bound_word(t, _mention(t, "80%")) == "above"
    t = "payment $3,627.12/mo is over the $3,200 ceiling"
    assert bound_word(t, _mention(t, "$3,200")) is not None
    assert bound_word(t, _mention(t, "$3,627.12")) is None
    t = "E-1 has 2 paid days left"
    assert bound_word(t, _mention(t, "2")) is None


def test_a_number_joined_to_other_digits_is_a_piece() -> None:
    """The year and month of "2024-03" are pieces of a date; a number followed by "/mo" is not."""
    t = "INV-88310 covers 2024-03, the re-rate was run for 2024-02"
    assert all(is_piece(t, m) for m in mentions(t, words=False))
    t = "payment 3,627.12/mo"
    assert not is_piece(t, _mention(t, "3,627.12"))


def test_a_number_that_labels_an_item_states_no_count() -> None:
    """ "Week 3: dosing ..." and "week 3 dosing" against ``weeks`` name which week; "2 paid days left" counts them."""
    t = "week 3: dosing 0.0 mg/kg is below the minimum of 18 mg/kg"
    assert is_label(t, _mention(t, "3"))
    assert not is_label(t, _mention(t, "18"))
    t = "pharmacy desk: week 3 dosing 412.5 mg exceeds the ward maximum"
    assert is_label(t, _mention(t, "3"), ["weeks"])
    assert not is_label(t, _mention(t, "3"), ["dosing"])
    t = "E-1 has 2 paid days left"
    assert not is_label(t, _mention(t, "2"), ["paid", "days", "left"])
    t = "exceeded by 200: aborting"
    assert not is_label(t, _mention(t, "200"))


def test_a_failure_labelling_its_first_item_contradicts_no_count() -> None:
    """A refusal about "week 1" of a plan says nothing against the ``weeks=6`` a step asked for."""
    steps = (
        Step("p", "plan", "llm", input={"patient": "P-77"}, output={"weeks": 6, "dose": [2.5] * 6},
             start_ns=1, end_ns=2),
        Step("s", "submit", "tool", input={"weeks": 6, "dose": [2.5] * 6}, status="error",
             error=ErrorInfo("Rejected", "week 1: dose 2.5 is below the minimum of 4"),
             deps=(Dependency("p"),), start_ns=3, end_ns=4),
    )
    loc = localize(Run("r", "planner", outcome="failure", steps=steps))
    assert all("lineage:contradicted" not in c.signals for c in loc.ranked_all)


def test_an_error_status_heading_a_clause_is_no_quantity() -> None:
    """ "Print queue: 422 job ..." and "409 Conflict: ..." state the answer's status; "has 422 seats left" a count."""
    t = "print queue: 422 duplex job not accepted"
    assert is_status(t, _mention(t, "422"))
    t = "409 Conflict: slot taken"
    assert is_status(t, _mention(t, "409"))
    for t, raw in (("the hall has 422 seats left", "422"), ("depot: 4.22 t over", "4.22"), ("quota: 250 used", "250")):
        assert not is_status(t, _mention(t, raw))


def test_a_number_no_http_status_is_heading_a_clause_is_a_quantity() -> None:
    """ "Rejected: 480 guests ..." states a count: 480 and 450 are of a status's shape but no status HTTP defines."""
    for t, raw in (("Rejected: 480 guests exceed the hall's capacity", "480"), ("payload check: 450 kg over", "450")):
        assert not is_status(t, _mention(t, raw))
    t = "Gateway: 503 service unavailable"
    assert is_status(t, _mention(t, "503"))


def test_a_failure_stating_its_status_contradicts_no_count() -> None:
    """A refusal "tray feeder: 422 job ..." says nothing against the ``trays=5`` a lookup gave; "has 4 trays loaded" does."""

    def run(message: str) -> Run:
        steps = (
            Step("f", "get_printer", "tool", input={"printer": "PR-1"}, output={"printer": "PR-1", "trays": 5},
                 start_ns=1, end_ns=2),
            Step("s", "submit", "tool", input={"printer": "PR-1"}, status="error",
                 error=ErrorInfo("Rejected", message), deps=(Dependency("f"),), start_ns=3, end_ns=4),
        )
        return Run("r", "printing", outcome="failure", steps=steps)

    loc = localize(run("tray feeder: 422 job on PR-1 not accepted for this paper"))
    assert all("lineage:contradicted" not in c.signals for c in loc.ranked_all)
    told = localize(run("tray feeder: PR-1 has 4 trays loaded"))
    assert any("lineage:contradicted" in c.signals for c in told.ranked_all)


def test_a_limit_still_contradicts_a_field_named_for_it() -> None:
    """ "Below the minimum due 35.00" states the true ``minimum_due``; it states no ``balance``."""
    t = "card payment 9.21 is below the minimum due 35.00"
    m = _mention(t, "35.00")
    assert not states_no_value(t, m, ["minimum", "due"])
    assert states_no_value(t, m, ["balance"])


def _leave_run(message: str) -> Run:
    d = Dependency
    steps = (
        Step(
            "b",
            "get_balance",
            "tool",
            input={"employee": "E-1"},
            output={"paid_days_left": 7},
            start_ns=1,
            end_ns=2,
        ),
        Step(
            "p",
            "plan",
            "llm",
            input={"balance": 7},
            output={"book": 5, "type": "paid"},
            deps=(d("b"),),
            start_ns=3,
            end_ns=4,
        ),
        Step(
            "s",
            "submit",
            "tool",
            input={"book": 5, "type": "paid"},
            status="error",
            error=ErrorInfo("Rejected", message),
            deps=(d("p"),),
            start_ns=5,
            end_ns=6,
        ),
    )
    return Run("r", "leave", outcome="failure", steps=steps)


def test_a_failure_stating_a_limit_contradicts_no_step() -> None:
    """A refusal naming the limit the booking broke ("paid days left must stay above 2") says nothing of the 7 the lookup said."""
    loc = localize(_leave_run("E-1: paid days left must stay above 2; cannot book 5"))
    assert all("lineage:contradicted" not in c.signals for c in loc.candidates)
    told = localize(_leave_run("E-1 has 2 paid days left; cannot book 5"))
    assert "lineage:contradicted" in told.candidates[0].signals


def test_a_limit_the_failure_states_is_no_value_a_step_should_have_passed_on() -> None:
    """The planner given the 500 buffer the check refuses by ("is under the 500 buffer") lost nothing: the limit is the check's own."""

    def run_of(message: str) -> Run:
        steps = (
            step("m", "load_memory", "retrieval", 1, {"household": "H-1"}, {"buffer": 500, "payee": "CARD"}),
            step(
                "p",
                "plan",
                "llm",
                3,
                {"buffer": 500, "payee": "CARD", "balance": 1200},
                {"payee": "CARD", "amount": 1950},
                "m",
            ),
            step(
                "c",
                "budget_check",
                "tool",
                5,
                {"payee": "CARD", "amount": 1950},
                None,
                "p",
                status="error",
                error=ErrorInfo("BudgetCheckFailed", message),
            ),
        )
        return Run("r", "bills", outcome="failure", steps=steps)

    def dropped(run: Run) -> bool:
        return any(c.step_id == "p" and "lineage:dropped" in c.signals for c in localize(run).ranked_all)

    assert not dropped(run_of("H-1: projected balance -750.00 is under the 500 buffer"))
    assert dropped(run_of("H-1: projected balance -750.00; buffer 500 was not applied"))


def test_only_the_statuses_http_defines_head_a_message_as_its_service_s_answer() -> None:
    """"register 422:" and "HTTP/1.1 404" report a service's status; "bay 450:" names a bay (HTTP defines no 450)."""
    from trajdebug.analysis._contradictions import status_codes
    from trajdebug.analysis.lexicon import ENGLISH

    assert status_codes("register 422: the form is incomplete", ENGLISH) == {"422"}
    assert status_codes("bay 450: over the weight limit", ENGLISH) == frozenset()


def test_a_status_after_http_without_a_version_is_the_services_answer() -> None:
    """"HTTP 409 {...}" (no protocol version) reports a service's status as "HTTP/1.1 409" does, so 409 is no
    quantity the failure states."""
    from trajdebug.analysis._contradictions import status_codes
    from trajdebug.analysis.lexicon import ENGLISH

    assert status_codes('HTTP 409 {"error": "kiln K-4 has no firing slot"}', ENGLISH) == {"409"}


def test_a_number_a_word_of_comparison_follows_is_the_value_the_check_rejected() -> None:
    """ "Is 122 days, above the 30-day maximum" and "total 4500.50 exceeds the limit" hold 122 and 4500.50 against
    a limit; the limit itself, and a number with no comparison in its clause, are no value it rejected."""
    assert checked_values("rental 2025-03-04 to 2025-07-04 is 122 days, above the 30-day maximum") == {122.0}
    assert checked_values("order total 4500.50 exceeds the limit of 2500") == {4500.5}
    assert checked_values("quote covers 40 portions of lemon tart for 45 guests") == set()
    assert checked_values("batch 7 failed; above all, check the kiln") == set()


def test_a_number_compared_with_another_quantity_is_no_value_the_check_rejected() -> None:
    """ "45 guests exceed the 40 portions planned" compares two of the run's quantities (review of issue 23): the
    45 guests may be what the run should have planned for, so neither is a value the check rejected; a limit
    named as such later in the clause ("above the 30-day maximum") still says which one was rejected."""
    assert checked_values("45 guests exceed the 40 portions planned") == set()
    assert checked_values("the order of 45 guests is above the maximum of 40 for one kitchen") == {45.0}
