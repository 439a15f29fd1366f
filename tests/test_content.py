"""Tests for `trajdebug.analysis._content`: the per-analysis readings of values and restated numbers."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajdebug.analysis import _content as content
from trajdebug.analysis import _numerals as numerals


def _counting_dumps(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    real = content.json.dumps

    def dumps(value: object, **kw: object) -> str:
        calls.append(value)
        return real(value, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(content.json, "dumps", dumps)
    return calls


def test_text_of_writes_a_value_once_within_an_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within `text_memo`, asking the text of one value again writes no JSON again; outside it, every ask writes it."""
    calls = _counting_dumps(monkeypatch)
    value = {"order": "A-1", "total": 12.5}
    with content.text_memo():
        texts = [content.text_of(value) for _ in range(3)]
    assert len(calls) == 1
    assert texts == ['{"order":"A-1","total":12.5}'] * 3
    content.text_of(value)
    content.text_of(value)
    assert len(calls) == 3


def test_text_memo_tells_values_apart_and_honours_other_limits() -> None:
    """Two values with the same content and different ones each get their own text; another limit cuts its own text."""
    a, b, c = {"k": [1, 2]}, {"k": [1, 2]}, {"k": "other"}
    with content.text_memo():
        assert content.text_of(a) == content.text_of(b) == '{"k":[1,2]}'
        assert content.text_of(c) == '{"k":"other"}'
        assert content.text_of(c, limit=4) == '{"k"'
        assert content.text_of(c) == '{"k":"other"}'


def test_text_memo_starts_over_past_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `READINGS_KEPT` characters the memo drops what it kept, and reads stay right."""
    monkeypatch.setattr(content, "READINGS_KEPT", 3 * (content._ENTRY + 20))
    values = [{"n": i, "pad": "x" * 8} for i in range(50)]
    with content.text_memo():
        for v in values:
            assert content.text_of(v) == f'{{"n":{v["n"]},"pad":"xxxxxxxx"}}'
        memo = content._READINGS.get()
        assert memo is not None and 0 < len(memo.texts) <= 3
    assert content._READINGS.get() is None


def test_leaves_are_read_once_within_an_analysis_and_stay_the_same() -> None:
    """`leaves` of one value inside `text_memo` is the same list as outside it, read once however often asked."""
    value = {"a": {"b": [1, "two"]}, "c": None}
    plain = list(content.leaves(value))
    with content.text_memo():
        first = list(content.leaves(value))
        second = list(content.leaves(value))
        memo = content._READINGS.get()
        assert memo is not None and id(value) in memo.leaves
        assert list(content.leaves(value, "top")) == list(content.leaves(value, "top", 0))
    assert first == second == plain == [("a.b[0]", 1), ("a.b[1]", "two"), ("c", None)]


def test_whole_numbers_restate_as_the_rounding_does() -> None:
    """The restated forms of a whole number are those the general rounding gives, per cent or not."""
    rng = random.Random(7)
    numbers = ["0", "00", "7", "0012", "4148", "9" * 299, *(str(rng.randrange(10 ** rng.randint(1, 25))) for _ in range(2000))]
    for n in numbers:
        for percent in (True, False):
            numerals._FORMS.clear()
            numerals._PLAIN_FORMS.clear()
            assert set(numerals._forms(n, percent=percent)) == set(numerals._rounded_forms(n, percent=percent) or ())


def test_number_forms_of_a_text_mix_whole_and_decimal_numbers() -> None:
    """A text's whole and decimal numbers both restate: 25 as 2500 per cent, 0.0226 as 2.26 and 2."""
    forms = numerals.number_forms("25 items at 0.0226")
    assert {"25", "2500", "0.0226", "2.26", "2.3", "2"} <= forms


def test_json_text_nested_past_the_parser_stack_reads_as_no_json() -> None:
    """parse_json and json_problem treat JSON text nested too deeply to parse as plain text, not a crash."""
    deep = "{\"a\": " * 3000 + "1" + "}" * 3000
    assert content.parse_json(deep) is None
    assert content.json_problem(deep) is not None


def test_numbers_after_a_comma_in_a_compact_list_are_read() -> None:
    """Compact JSON's ``[508.0,711.2]`` and ``[3,4]`` hold two numbers each; ``1,234.5`` and ``1,234,567`` are one number each."""
    assert {"508", "711.2"} <= numerals.plain_number_forms('{"blank_mm":[508.0,711.2]}')
    assert {"3", "4"} <= numerals.plain_number_forms("[3,4]")
    forms = numerals.plain_number_forms("paid 1,234.5 of 1,234,567")
    assert "234" not in forms and "567" not in forms and "1234.5" in forms


_NUMBER_TEXT = st.text(alphabet="0123456789,.-xX aé_×\n", max_size=30)


@settings(max_examples=500, deadline=None)
@given(_NUMBER_TEXT)
def test_number_pattern_finds_what_it_found_without_its_look_ahead(text: str) -> None:
    """The number pattern's leading look-ahead (a number starts with a digit or a minus) changes no match."""
    plain = re.compile(numerals._NUMBER.pattern.removeprefix(r"(?=-?\d)"))
    assert plain.pattern != numerals._NUMBER.pattern
    assert [m.span() for m in numerals._NUMBER.finditer(text)] == [m.span() for m in plain.finditer(text)]


def test_keyed_values_read_again_in_one_analysis_are_a_fresh_copy_each_time() -> None:
    """Within `text_memo` an upstream output is keyed once, and each reader gets its own dict: a caller that
    deletes or adds keys in its copy (`contradictions` does) leaves the next reader's untouched."""
    record = {"order": {"id": "A-1", "qty": 3}, "items": [{"sku": "X"}], "Note": "ok"}
    with content.text_memo():
        first = content.keyed_values(record)
        first.pop("qty")
        first["extra"] = 1
        second = content.keyed_values(record)
        second.clear()
        third = content.keyed_values(record)
    assert third == {"id": "A-1", "qty": 3, "sku": "X", "note": "ok"} == content.keyed_values(record)
    assert third is not first and third is not second


def test_unmarked_text_is_the_text_of_the_value_without_markers_read_once_per_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """`unmarked_text` is `text_of(without_markers(value))`, markers left out, and within one analysis a value
    given to many steps (an enclosing step's input) is written out once, not once per reader."""
    value: dict[str, object] = {"task": "Book 3 rooms", "items": [1, 2.5, ("a", None)]}
    value["client"] = {content.REPR_KEY: "<Client>"}
    expected = content.text_of(content.without_markers(value))
    assert "Client" not in expected and content.unmarked_text(value) == expected
    calls = _counting_dumps(monkeypatch)
    with content.text_memo():
        assert [content.unmarked_text(value) for _ in range(5)] == [expected] * 5
    assert len(calls) == 1
    assert content.unmarked_text("as is") == "as is" and content.unmarked_text(None) == ""
