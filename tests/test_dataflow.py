"""Tests for `trajdebug.analysis.diagnosers._dataflow`: the values a step was given and did not pass on."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trajdebug.analysis import _numerals as numerals
from trajdebug.analysis._detect import Failure
from trajdebug.analysis.diagnosers import DiagnoseContext, Evidence, registered_diagnosers
from trajdebug.analysis.diagnosers._dataflow import _NUMERAL, _lost
from trajdebug.core.model import Run, Step
from trajdebug.core.values import atoms


def _eager(values: list[Any], text: str) -> list[Any]:
    """The reading `_lost` replaced (the text's number forms read first, every value tested), kept as the reference."""
    forms = numerals.number_forms(text)
    lost = []
    for v in values:
        if isinstance(v, str):
            n = numerals.norm_number(v.strip()) if _NUMERAL.fullmatch(v.strip()) else None
            if v.strip().lower() not in text and (n is None or n not in forms):
                lost.append(v)
        elif numerals.norm_number(repr(v)) not in forms:
            lost.append(v)
    return lost


_VALUES = st.lists(
    st.one_of(
        st.sampled_from(["kiln 4", "glaze", " 1,429.00 ", "12.5", "0.0226", "-3", "ash"]),
        st.integers(-2000, 2000),
        st.floats(-1e4, 1e4, allow_nan=False),
    ),
    max_size=6,
)
_TEXTS = st.sampled_from(
    ["", "kiln 4 fired at 1429 with glaze", "ash 12.50 and 2.26 per cent", "-3 cones, 1,429 degrees", "glaze"]
)


@settings(max_examples=400, deadline=None)
@given(_VALUES, _TEXTS, _TEXTS)
def test_lost_values_are_those_the_eager_reading_found(values: list[Any], text: str, other: str) -> None:
    """Values are found lost in a text exactly as when the text's numbers were read first, whatever text was read before."""
    _lost(values, other)
    assert _lost(values, text) == _eager(values, text)
    assert _lost(values, "".join(text)) == _eager(values, text)  # an equal text, another object


def _parser_verdict(*steps: Step, failures: tuple[Failure, ...] = ()) -> list[Evidence]:
    run = Run("r", "test", steps=steps)
    ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers(), failures=failures)
    return [e for e in ctx.verdict(steps[-1].step_id).evidence if e.diagnoser == "parse-dropped"]


def test_labels_of_lines_a_parser_turned_into_fields_are_no_cut_words() -> None:
    """A parser of 'label: value' lines that keeps every value under the label's name cut nothing, though each
    label is written on one line only; a word cut out of a value is still found."""
    answer = "hive: North 4\nqueen status: seen laying\nframes: 8 brood\nmite count: 3 per 100"
    msg = {"input": {"role": "assistant", "content": answer}}
    failed = (Failure("x", "step-error", "inspection for North 4 refused: queen status unknown", "x"),)
    kept = {"hive": "North 4", "queen_status": "seen laying", "frames": "8 brood", "mite_count": "3 per 100"}
    found = _parser_verdict(Step("p", "InspectionParser", "parse", input=msg, output=kept), failures=failed)
    assert found and not [e for e in found if e.suspicion > 0]
    cut = dict(kept, queen_status="seen")
    [e] = [e for e in _parser_verdict(Step("p", "InspectionParser", "parse", input=msg, output=cut), failures=failed)
           if e.suspicion > 0]
    assert "laying" in e.reason


def test_a_code_step_reading_a_model_answer_that_leaves_one_field_out_is_a_lossy_parser() -> None:
    """A plain code step run right after a model call and handed its answer is judged as a parser: copying every
    field of the answer's record but one (a flag) is losing that one; copying them all loses nothing."""
    record = {"boat": "Heron", "crew": 4, "date": "2026-05-02", "harbour": "Kiel", "night_sail": True}
    answer = {"role": "assistant", "content": json.dumps(record)}

    failed = (Failure("x", "step-error", "charter of Heron refused: no night sailing cover", "x"),)

    def found(out: dict[str, Any]) -> list[Evidence]:
        return _parser_verdict(
            Step("m", "ChatModel", "llm", input={"messages": [{"role": "user", "content": "Heron, 4 crew"}]}, output=answer),
            Step("p", "read_charter", "other", input={"role": "assistant", "content": answer["content"]}, output=out),
            failures=failed,
        )

    [e] = [e for e in found({k: v for k, v in record.items() if k != "night_sail"}) if e.suspicion > 0]
    assert "night_sail" in e.reason
    assert not [e for e in found(dict(record)) if e.suspicion > 0]


def test_a_code_step_leaving_out_a_field_the_failure_does_not_speak_of_is_no_lossy_parser() -> None:
    """A code step that copies a model's answer but its free-text rationale, which the failure does not speak of
    (it names a number the rationale mentions), left out what it did not need."""
    record = {"kiln": "K-2", "cone": 6, "pieces": 14, "rationale": "Glaze needs cone 6 and the 14 mugs fit K-2."}
    answer = {"role": "assistant", "content": json.dumps(record)}
    failed = (Failure("x", "step-error", "kiln K-2 holds 12 pieces, 14 were loaded", "x"),)
    found = _parser_verdict(
        Step("m", "ChatModel", "llm", input={"messages": [{"role": "user", "content": "fire 14 mugs"}]}, output=answer),
        Step("p", "read_firing", "other", input={"role": "assistant", "content": answer["content"]},
             output={k: v for k, v in record.items() if k != "rationale"}),
        failures=failed,
    )
    assert not [e for e in found if e.suspicion > 0]


def test_a_code_step_started_after_a_model_call_recorded_later_reads_its_answer() -> None:
    """A code step is judged by the model call that started just before it, though a source wrote the steps in
    the order they ended (the code step first)."""
    record = {"boat": "Heron", "crew": 4, "date": "2026-05-02", "harbour": "Kiel", "night_sail": True}
    answer = {"role": "assistant", "content": json.dumps(record)}
    failed = (Failure("x", "step-error", "charter of Heron refused: no night sailing cover", "x"),)
    steps = (
        Step("o", "log_charter", "tool", input={"boat": "Heron"}, output={"logged": "Heron"}, start_ns=5),
        Step("p", "read_charter", "other", input={"role": "assistant", "content": answer["content"]},
             output={k: v for k, v in record.items() if k != "night_sail"}, start_ns=30),
        Step("m", "ChatModel", "llm", input={"messages": [{"role": "user", "content": "Heron, 4 crew"}]}, output=answer,
             start_ns=10),
    )
    ctx = DiagnoseContext.build(Run("r", "test", steps=steps), diagnosers=registered_diagnosers(), failures=failed)
    found = [e for e in ctx.verdict("p").evidence if e.diagnoser == "parse-dropped"]
    assert [e for e in found if e.suspicion > 0 and "night_sail" in e.reason]


def test_a_code_step_not_handed_a_model_answer_is_no_parser() -> None:
    """A code step that reshapes a record no model answered (a tool's) is not judged as a parser."""
    record = {"boat": "Heron", "crew": 4, "date": "2026-05-02", "harbour": "Kiel", "night_sail": True}
    assert _parser_verdict(
        Step("t", "charter_lookup", "tool", input={"boat": "Heron"}, output={"record": json.dumps(record)}),
        Step("p", "summarize", "other", input={"record": json.dumps(record)}, output={"boat": "Heron", "crew": 4, "date": "x", "harbour": "Kiel"}),
    ) == []


def test_a_labelled_line_a_parser_kept_nothing_of_is_a_lost_line() -> None:
    """A parser of 'label=value' lines that kept nothing of one line's value (the hull answered by a default)
    lost that line, strongly when the failure names its value; a one-letter value it kept is no loss."""
    answer = "Haul-out sheet:\nhull=carbon fibre\ndate=2026-09-03\nyard=Y\nberth=B-12\nwork=antifoul, anodes"
    msg = {"input": {"role": "assistant", "content": answer}}
    failed = (Failure("x", "step-error", "grit blasting is not approved for carbon fibre hulls", "x"),)
    out = {"hull": "steel", "date": "2026-09-03", "yard": "Y", "berth": "B-12", "work": ["antifoul", "anodes"]}
    [e] = [e for e in _parser_verdict(Step("p", "HaulOutParser", "parse", input=msg, output=out), failures=failed)
           if e.suspicion > 0]
    assert "hull=carbon fibre" in e.reason and e.suspicion >= 0.6
    kept = dict(out, hull="carbon fibre")
    found = _parser_verdict(Step("p", "HaulOutParser", "parse", input=msg, output=kept), failures=failed)
    assert not [e for e in found if e.suspicion > 0]


def _haul_out(answer: str, out: dict[str, Any], message: str) -> list[Evidence]:
    msg = {"input": {"role": "assistant", "content": answer}}
    failed = (Failure("x", "step-error", message, "x"),)
    found = _parser_verdict(Step("p", "HaulOutParser", "parse", input=msg, output=out), failures=failed)
    return [e for e in found if e.suspicion > 0]


def test_lines_read_into_their_labels_field_or_as_numbers_flags_or_dates_are_no_lost_lines() -> None:
    """A parser that read each line's value as a type (a number of days, a yes/no as a flag, a date written
    another way) kept those lines, whether or not the label names the field it filled."""
    answer = ("Haul-out sheet:\nhull=steel\nyard=Yard 7\nberth=B-12\nstay=4 days\n"
              "antifoul=yes\nlaunch=3 March 2027")
    base = {"hull": "steel", "yard": "Yard 7", "berth": "B-12"}
    message = "berth B-12 is too short for a 4 days stay of a steel hull"
    assert _haul_out(answer, dict(base, stay=4, antifoul=True, launch="2027-03-03"), message) == []
    assert _haul_out(answer, dict(base, days=4, paint=True, relaunch="2027-03-03"), message) == []


def test_a_skipped_line_sharing_only_function_words_or_parts_of_words_with_the_failure_is_no_named_line() -> None:
    """A free note the parser rightly skipped is not a line the failure names because both use a function word
    (``was``) or the note's word is part of a longer word of the failure (``wash`` in ``washer``)."""
    answer = "Haul-out sheet:\nhull=steel\nyard=Yard 7\nberth=B-12\nnote=owner was here for the wash"
    out = {"hull": "steel", "yard": "Yard 7", "berth": "B-12"}
    [e] = _haul_out(answer, out, "berth B-12 was booked for a pressure washer on a steel hull")
    assert e.suspicion < 0.6
    [named] = _haul_out(answer, out, "the owner asked for a wash of the steel hull at berth B-12")
    assert named.suspicion >= 0.6


def test_a_line_whose_label_the_failure_names_and_no_field_took_is_lost_whatever_its_value() -> None:
    """A parser turning each 'label: scores' line of a cheese judging card into a field lost the 'rind' line
    whole when the failure says the card misses rind: digits alone give no word to find cut, but the label
    is named; a failure naming no label of a lost line finds nothing."""
    answer = "aroma: 4,5,3\ntexture: 3,4,4\nflavour: 5,5,4\nrind: 2,3,3"
    msg = {"input": {"role": "assistant", "content": answer}}
    out = {"aroma": [4, 5, 3], "texture": [3, 4, 4], "flavour": [5, 5, 4]}

    def found(message: str) -> list[Evidence]:
        failed = (Failure("x", "step-error", message, "x"),)
        step = Step("p", "CardParser", "parse", input=msg, output=out)
        return [e for e in _parser_verdict(step, failures=failed) if e.suspicion > 0]

    [e] = found("card for 'Old Tom' does not follow the rubric (missing rind)")
    assert "rind: 2,3,3" in e.reason and e.suspicion >= 0.6
    assert not found("card for 'Old Tom' was filed after the judging closed")

def test_a_parser_that_kept_some_numbers_of_a_series_its_text_lists_cut_it() -> None:
    """A parser read '4 bales: 21.5 kg, 19.0 kg, 23.5 kg, 20.0 kg' into three weights: it left the last bale out;
    a parser that kept all four, or a list of another quantity, cut nothing."""
    from trajdebug.analysis.diagnosers._parsed_lines import series_cut

    text = "4 bales: 21.5 kg, 19.0 kg, 23.5 kg, 20.0 kg"
    cut = Step("p", "parse_bales", "parse", input={"text": text}, output={"bales": 4, "kg": [21.5, 19.0, 23.5]})
    [e] = series_cut(cut, text, cut.output)
    assert e.diagnoser == "parse-dropped" and "left out 20.0" in e.reason
    assert list(series_cut(cut, text, {"bales": 4, "kg": [21.5, 19.0, 23.5, 20.0]})) == []
    assert list(series_cut(cut, text, {"bales": 4, "lots": [7, 9]})) == []


def test_a_parser_that_kept_the_name_of_each_numbered_line_dropped_nothing() -> None:
    """A parser of roster lines '0;Ines Varga' that kept each name and left the row number read every line (no
    parse-dropped finding); a line none of whose parts shows in its output was dropped."""
    from trajdebug.analysis.diagnosers._dataflow import _split_read

    rows = {"rows": [{"line": "0;Ines Varga"}, {"line": "1;Tomas Ekberg"}, {"line": "2;Maren Holt"}]}
    parser = Step("p", "parse_roster", "parse", input=rows, output=["Ines Varga", "Tomas Ekberg", "Maren Holt"])
    assert [e for e in _parser_verdict(parser) if not e.sound] == []
    out_text = '["ines varga", "tomas ek"]'
    assert _split_read("1 | Tomas Ek", out_text)
    assert not _split_read("2;Maren Holt", out_text)
    assert not _split_read("Ines Varga", out_text)


def test_a_parser_that_selected_some_numbers_of_a_series_the_run_did_not_want_cut_nothing() -> None:
    """A parser keeping the two weekend tide heights of a week's list ('Mon 3.1 m, ..., Sun 2.8 m') selected
    them: no count is declared and the failure names no height left out.  A word after a number that is no unit
    of measure ('berths 12 and 14 are free') makes no series."""
    from trajdebug.analysis.diagnosers._parsed_lines import series_cut

    text = "Highs: Mon 3.1 m, Tue 3.4 m, Wed 2.9 m, Thu 3.3 m, Fri 3.0 m. Weekend: Sat 3.2 m, Sun 2.8 m."
    weekend = Step("p", "parse_weekend", "parse", input={"text": text}, output={"weekend": [3.2, 2.8]})
    assert list(series_cut(weekend, text, weekend.output)) == []
    named = {a.key for a in atoms("the 3.4 m high of Tuesday is missing")}
    [e] = series_cut(weekend, text, weekend.output, named)
    assert "left out" in e.reason and "3.4" in e.reason
    berths = "berths 12 and 14 are free, 16 and 18 are taken"
    free = Step("p", "parse_berths", "parse", input={"text": berths}, output={"free": [12]})
    assert list(series_cut(free, berths, free.output, {a.key for a in atoms("berth 14 asked")})) == []


def test_a_line_sharing_only_a_common_column_with_the_kept_lines_was_dropped() -> None:
    """Of four ringer lines 'n;Name;active', the line whose name shows nowhere in the output was dropped though
    its status 'active' does (every line holds it), and a name that is part of a longer word ('ana' in
    'banana') reads no line; a failure naming the lost ringer leaves the drop standing whatever the output holds."""
    from trajdebug.analysis.diagnosers._dataflow import _split_read

    lines = ["1;Ole Berg;active", "2;Ida Lunde;active", "3;Ana;active", "4;Siv Dahl;active"]
    out_text = '[{"name": "ole berg", "status": "active"}, {"name": "ida lunde", "status": "active"}, {"fruit": "banana"}]'
    assert _split_read("1;Ole Berg;active", out_text, lines)
    assert not _split_read("4;Siv Dahl;active", out_text, lines)
    assert not _split_read("3;Ana;active", out_text, lines)
    parser = Step("p", "parse_ringers", "parse", input={"lines": lines[:2] + lines[3:], "club": "bells"},
                  output={"club": "bells", "status": {"Ole Berg": "active", "Ida Lunde": "active"}})
    failed = (Failure("x", "step-error", "ringer 'Siv Dahl' has no tower", "x"),)
    assert any(e.suspicion > 0 and "Siv Dahl" in e.reason for e in _parser_verdict(parser, failures=failed))


def test_a_parser_that_rewrote_dates_converted_them_and_one_read_either_way_is_said_so() -> None:
    """A date parser that rewrote '03/04/2025' as '2025-03-04' dropped nothing (issue 23, nu22's car rental):
    it converted the date, and since the date reads either way round and the failure names the reading it
    chose, the finding says that, weaker than a value dropped; an unambiguous date rewritten is no finding."""
    failed = (Failure("x", "step-error", "rental 2025-03-04 to 2025-07-04 is 122 days, above the maximum", "x"),)

    def parse(pickup: str, dropoff: str, out: dict[str, Any]) -> list[Evidence]:
        step = Step("p", "parse_dates", "parse", input={"pickup": pickup, "dropoff": dropoff}, output=out)
        return [e for e in _parser_verdict(step, failures=failed) if e.suspicion > 0]

    [e] = parse("03/04/2025", "07/04/2025", {"pickup": "2025-03-04", "dropoff": "2025-07-04", "days": 122})
    assert e.reason.startswith("read '03/04/2025', a date whose day and month may be either way round, as '2025-03-04'")
    assert "dropped" not in e.reason and e.suspicion < 0.6
    assert not parse("25/04/2025", "29/04/2025", {"pickup": "2025-04-25", "dropoff": "2025-04-29", "days": 4})
    lost = [e.reason for e in parse("03/04/2025", "07/04/2025", {"pickup": "2025-03-04", "days": 122})]
    assert any(r.startswith("dropped 1 of the") and "'07/04/2025'" in r for r in lost)


def test_a_date_rewritten_in_another_year_was_dropped_not_converted() -> None:
    """A policy parser that took the start's year from the end date (2024-06-15 written as 2025-06-15) dropped
    the start (review of issue 23): dates match by month and day only when the years agree, and nothing
    says it "kept every value of its input"."""
    failed = (Failure("x", "step-error", "policy 2025-06-15 to 2025-06-15 covers 0 days, below the minimum", "x"),)
    step = Step("p", "parse_policy", "parse", input={"from": "2024-06-15", "to": "2025-06-15"},
                output={"start": "2025-06-15", "end": "2025-06-15"})
    found = list(_parser_verdict(step, failures=failed))
    assert any(e.reason.startswith("dropped 1 of the 2 values") and "'2024-06-15'" in e.reason for e in found)
    assert not any(e.reason == "kept every value of its input" for e in found)


def test_a_number_written_as_text_and_read_as_a_number_was_converted_not_dropped() -> None:
    """A parser given a catalogue line as text fields ({"qty": "2", "price": "10.00"}) returning them as numbers
    (2, 10.0) kept them, a small whole number too ("10.00" is 10.0: no drop); the call given a "discount" it
    did not return dropped that one, and says so (nu27, finding 2)."""
    line = {"sku": "SKU-7", "qty": "2", "price": "10.00"}
    kept = _parser_verdict(Step("p", "parse", "parse", input={"raw": line}, output={"sku": "SKU-7", "qty": 2, "price": 10.0}))
    assert not [e for e in kept if e.suspicion > 0]
    lost = dict(line, discount="10%")
    found = _parser_verdict(Step("p", "parse", "parse", input={"raw": lost}, output={"sku": "SKU-7", "qty": 2, "price": 10.0}))
    assert [e.reason for e in found if e.suspicion > 0] == ["dropped 1 of the 3 values of its input (e.g. '10%')"]


def test_a_small_number_the_output_holds_under_another_field_is_still_dropped() -> None:
    """A parser given {"qty": "10", "discount_pct": "10.00"} returning qty 10 and no discount dropped the
    discount: the 10 it holds is the quantity's, under another field (rev54b, p5)."""
    line = {"sku": "S-1", "qty": "10", "discount_pct": "10.00", "unit": "49.90"}
    found = _parser_verdict(Step("p", "parse", "parse", input={"raw": line}, output={"sku": "S-1", "qty": 10, "unit": 49.9}))
    assert [e.reason for e in found if e.suspicion > 0] == ["dropped 1 of the 4 values of its input (e.g. '10.00')"]


def test_small_numbers_of_records_in_a_list_are_read_in_their_place() -> None:
    """A parser given a list of records as text ({"qty": "10", "discount_pct": "10.00"} and another) is judged
    record by record: the first record's discount, dropped, is not kept by the second record's qty 10."""
    given = [{"sku": "S-1", "qty": "2", "discount_pct": "10.00"}, {"sku": "S-2", "qty": "10", "discount_pct": "5.00"}]
    out = [{"sku": "S-1", "qty": 2}, {"sku": "S-2", "qty": 10, "discount_pct": 5.0}]
    found = _parser_verdict(Step("p", "parse", "parse", input={"rows": given}, output=out))
    assert any("'10.00'" in e.reason for e in found if e.suspicion > 0)


def test_a_small_number_the_output_does_not_hold_is_still_dropped() -> None:
    """The same parser returning no price: "10.00" is nowhere in its output (no 10 in any form), so it was dropped."""
    line = {"sku": "SKU-7", "qty": "2", "price": "10.00"}
    found = _parser_verdict(Step("p", "parse", "parse", input={"raw": line}, output={"sku": "SKU-7", "qty": 2}))
    assert [e.reason for e in found if e.suspicion > 0] == ["dropped 1 of the 2 values of its input (e.g. '10.00')"]


def _line_parser(lines: list[str], out: list[dict[str, Any]]) -> list[Step]:
    return [
        Step(f"p{i}", "parse_line", "parse", input={"raw": raw}, output=o, start_ns=i, end_ns=i + 1)
        for i, (raw, o) in enumerate(zip(lines, out))
    ]


def test_a_delimited_record_with_a_field_more_than_its_siblings_had_lost_it() -> None:
    """An invoice's lines read by one parser of fixed columns: the line that carries a sixth field
    (``disc=10%``) came back without it, where the other lines' five fields were all kept (nu27 a1)."""
    lines = ["SKU-100|Desk lamp|2|39.90|EUR", "SKU-220|Office chair|1|249.00|EUR|disc=10%", "SKU-310|USB hub|3|18.50|USD"]
    out = [
        {"sku": "SKU-100", "desc": "Desk lamp", "qty": 2, "unit_price": 39.9, "currency": "EUR"},
        {"sku": "SKU-220", "desc": "Office chair", "qty": 1, "unit_price": 249.0, "currency": "EUR"},
        {"sku": "SKU-310", "desc": "USB hub", "qty": 3, "unit_price": 18.5, "currency": "USD"},
    ]
    steps = _line_parser(lines, out)
    run = Run("r", "test", steps=tuple(steps))
    failed = (Failure("x", "step-error", "invoice total 346.70 does not match: the chair's 10% discount was not applied", "x"),)
    ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers(), failures=failed)
    [e] = [e for e in ctx.verdict("p1").evidence if e.diagnoser == "parse-dropped" and e.suspicion > 0]
    assert "dropped 'disc=10%', a field of the record it read (6 fields)" in e.reason
    assert not [e for e in ctx.verdict("p0").evidence if e.diagnoser == "parse-dropped" and e.suspicion > 0]


def test_an_extra_field_the_failure_never_names_was_no_loss() -> None:
    """A parser of fixed columns that leaves a line's optional note (``gift-wrap``) unread, where the failure is
    about stock ("cannot reserve SKU-202: stock 0"), dropped nothing the run needed (rev54b, p2b)."""
    lines = ["SKU-101|Office chair|2|149.00", "SKU-202|Desk lamp|1|39.00", "SKU-303|Monitor arm|3|59.00|gift-wrap"]
    out = [
        {"sku": "SKU-101", "name": "Office chair", "qty": 2, "price": 149.0},
        {"sku": "SKU-202", "name": "Desk lamp", "qty": 1, "price": 39.0},
        {"sku": "SKU-303", "name": "Monitor arm", "qty": 3, "price": 59.0},
    ]
    run = Run("r", "test", steps=tuple(_line_parser(lines, out)))
    failed = (Failure("x", "step-error", "cannot reserve SKU-202: stock 0", "x"),)
    ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers(), failures=failed)
    assert not [e for e in ctx.verdict("p2").evidence if "a field of the record it read" in e.reason]


def test_a_parser_that_reads_some_columns_of_every_record_drops_no_extra_field() -> None:
    """A parser that keeps the sku and the price of every line, each line carrying a note besides, selects
    columns: the longer line's note is no field it lost."""
    lines = ["SKU-100|Desk lamp|39.90", "SKU-220|Office chair|249.00|on sale", "SKU-310|USB hub|18.50"]
    out = [{"sku": "SKU-100", "price": 39.9}, {"sku": "SKU-220", "price": 249.0}, {"sku": "SKU-310", "price": 18.5}]
    run = Run("r", "test", steps=tuple(_line_parser(lines, out)))
    ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers())
    assert not [e for e in ctx.verdict("p1").evidence if "a field of the record it read" in e.reason]
