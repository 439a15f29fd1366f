"""Tests of the contradiction checks (`trajdebug.analysis.diagnosers._conflicts`)."""

from __future__ import annotations

from trajdebug.analysis.diagnosers._conflicts import contradictions


_PARCEL = {
    "parcel": "PC-301",
    "due": "2027-04-09",
    "related": {"parcel": "PC-277", "deadline": "2027-03-26", "surveyor": "R. Okafor"},
}


def test_a_field_of_a_nested_record_about_another_entity_is_no_contradiction() -> None:
    """A call about parcel PC-301 naming surveyor T. Lindqvist does not contradict the surveyor of the related
    earlier parcel PC-277 its input shows beside it."""
    call = {"parcel_id": "PC-301", "surveyor": "T. Lindqvist"}
    assert contradictions(call, [_PARCEL]) == []


def test_a_field_of_the_record_the_output_is_about_still_contradicts() -> None:
    """When the nested record is about the parcel the call names (its own id), or the call names no id of that
    shape, its surveyor still fixes the field."""
    same = {**_PARCEL, "related": {**_PARCEL["related"], "parcel": "PC-301"}}
    assert contradictions({"parcel_id": "PC-301", "surveyor": "T. Lindqvist"}, [same]) == [
        ("surveyor", "T. Lindqvist", "R. Okafor")
    ]
    assert contradictions({"surveyor": "T. Lindqvist"}, [_PARCEL]) == [("surveyor", "T. Lindqvist", "R. Okafor")]


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


def test_an_earlier_answer_of_the_same_step_is_no_fact_its_next_answer_contradicts() -> None:
    """A planner's last answer (glaze the pot) reaching its next one (fire the kiln) is that turn's decision:
    set apart as ``decided``, its fields fix nothing, while another upstream value still does."""
    last = {"action": "apply_glaze", "args": {"pot": "P-19"}}
    now = {"action": "fire_kiln", "args": {"pot": "P-19", "kiln": "K-2"}}
    assert contradictions(now, [last]) == [("action", "fire_kiln", "apply_glaze")]
    assert contradictions(now, [last], decided=[last]) == []
    booking = {"pot": "P-19", "kiln": "K-4"}
    assert contradictions(now, [last, booking], decided=[last]) == [("kiln", "K-2", "K-4")]


def test_a_message_whose_role_is_not_a_word_is_read_as_no_role_and_analysis_goes_on() -> None:
    """A recorded conversation whose messages give their role as a list or a map (a malformed export) is
    analysed like messages without a role: the run is still localized, nothing raises."""
    from trajdebug.analysis import analyze
    from trajdebug.core.model import Dependency, Run, Step

    quote = Step("a", "quote_fee", "llm", input={"messages": [{"role": {"name": "system"}, "content": "quote rinks"}]},
                 output={"role": ["assistant"], "content": "The fee for rink K-4 is 35."}, start_ns=0, end_ns=1)
    msgs = [{"role": ["system"], "content": "quote rinks"}, {"role": ["assistant"], "content": "The fee for rink K-4 is 35."},
            {"role": "user", "content": "confirm fee 53 for rink K-4"}]
    again = Step("b", "quote_fee", "llm", input={"messages": msgs}, output={"rink": "K-4", "fee": 35},
                 deps=(Dependency("a"),), start_ns=2, end_ns=3)
    run = Run("r", "rinks", 0, 4, "failure", "fee wrong", steps=(quote, again))
    assert analyze(run).localization.candidates


def test_an_instruction_whose_role_is_not_a_word_stays_in_the_request_and_the_history() -> None:
    """Stripping a conversation's instructions keeps a message whose role is a list (no word, so no system
    role) instead of raising, both for what a model was asked and for the history handed on."""
    from trajdebug.analysis._drops import _history
    from trajdebug.analysis.diagnosers._decisions import _request

    msgs = [{"role": ["system"], "content": "book lanes"}, {"role": "system", "content": "be brief"},
            {"role": "user", "content": "lane L-3 at noon"}]
    assert _history(msgs) == [msgs[0], msgs[2]]
    assert _request({"messages": msgs}) == [msgs[0], msgs[2]]
