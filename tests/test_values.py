"""Reading values out of step inputs and outputs: numbers, dates, ids, tables."""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajdebug.core import mentions as mentions_module
from trajdebug.core import values
from trajdebug.core.values import (
    NUMBER_WORDS,
    atoms,
    date_forms,
    date_keys,
    is_year,
    mentions,
    number_key,
    parse_number,
)


class TestNumbers:
    @pytest.mark.parametrize(
        ("text", "value"),
        [
            ("1,250.00", 1250.0),
            ("1.250,00", 1250.0),
            ("12,5", 12.5),
            ("-42.50", -42.5),
            ("−42.50", -42.5),
            ("-$1,250.50", -1250.5),
            ("3e2", 300.0),
            ("12%", 12.0),
            ("1 250", 1250.0),
            ("abc", None),
        ],
    )
    def test_parse_number_reads_signs_separators_and_symbols(self, text: str, value: float | None) -> None:
        """Signs (ASCII and the minus sign), thousands separators, decimal commas and currency symbols are read."""
        assert parse_number(text) == value

    def test_a_bullet_is_not_a_minus_sign(self) -> None:
        """A list bullet before a number ("- 24 eggs") does not make it negative; an attached minus does."""
        assert [m.value for m in mentions("- 24 eggs, -5 C")] == [24.0, -5.0]

    def test_a_hyphen_joining_a_number_to_an_identifier_is_no_minus_sign(self) -> None:
        """A form code read as an identifier (``1099-INT`` of ``1099-INT-2025-4402``) leaves the year after it
        unsigned: the hyphen joins it to the code; a minus after a space still signs its number."""
        assert [m.value for m in mentions("form 1099-INT-2025-4402, balance -40.5", words=False)] == [2025.0, 4402.0, -40.5]
        assert [m.raw for m in mentions("form 1099-INT-2025-4402", words=False)] == ["2025", "4402"]

    def test_units_and_currencies_stay_with_their_numbers(self) -> None:
        """The word or symbol next to a number is kept as its unit."""
        found = {m.value: m.unit for m in mentions("250 ha, €1,200 and four nights")}
        assert found == {250.0: "ha", 1200.0: "eur", 4.0: "nights"}

    def test_dates_times_and_ids_are_not_numbers(self) -> None:
        """The digits of a date, a time or an identifier are not read as numbers."""
        assert mentions("on 2025-03-04 at 14:30 for order ORD-7781", words=False) == []

    def test_a_range_within_one_month_holds_both_days(self) -> None:
        """ "3 to 7 November" and "Nov 3-7" hold both days; a range across months is not misread."""
        assert {"d:11-03", "d:11-07"} <= date_forms("leave from 3 to 7 November 2025")
        assert {"d:11-03", "d:11-07"} <= date_forms("Nov 3-7, 2025")
        assert date_forms("from March 30th through 2 April") == {"d:03-30", "d:04-02"}

    def test_a_word_that_starts_like_a_month_is_no_date(self) -> None:
        """ "deck 7" and "octane 95" are a label and its number, while "Dec 7" and "7 Sept" stay dates."""
        assert [m.value for m in mentions("deck 7, market 5, octane 95", words=False)] == [7.0, 5.0, 95.0]
        assert date_forms("deck 7 and junction 4") == set()
        assert date_forms("Dec 7, then 7 Sept and December 8th") == {"d:12-07", "d:09-07", "d:12-08"}

    def test_a_number_is_never_read_from_its_digits_before_the_point(self) -> None:
        """ "2.5kg" and "4.25x5.5" mention no 2 and no 4 (the reading cannot stop inside the decimals); "2.5 kg" is 2.5 in kg."""
        assert mentions("weighs 2.5kg, trim 4.25x5.5 in", words=False) == []
        [m] = mentions("weighs 2.5 kg", words=False)
        assert (m.value, m.unit) == (2.5, "kg")

    def test_a_code_in_capitals_is_an_identifier(self) -> None:
        """A hyphenated code in capitals is an id even without a digit; followed by a number it heads a longer value."""
        found = {
            (a.kind, a.raw) for a in atoms("the plan NR-SAVER replaced rate BAR-NOV-A for guest Ann-Marie")
        }
        assert {("id", "NR-SAVER"), ("id", "BAR-NOV-A")} <= found
        assert ("id", "Ann-Marie") not in found
        assert [a.kind for a in atoms("KA-MR 482")] == ["text", "number"]

    @given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12))
    def test_number_key_round_trips_through_text(self, x: float) -> None:
        """A number written with its canonical key reads back as the same key."""
        key = number_key(x)
        parsed = parse_number(key)
        assert parsed is not None and number_key(parsed) == key

    def test_number_key_names_infinities_and_nan_without_raising(self) -> None:
        """A non-finite number (JSON's Infinity or NaN from an importer) gets a key of its own instead of a crash."""
        assert number_key(float("inf")) == "inf"
        assert number_key(float("-inf")) == "-inf"
        assert number_key(float("nan")) == "nan"


class TestDates:
    @pytest.mark.parametrize(
        "text", ["2025-03-11T09:00:00Z", "11 Mar", "March 11, 2025", "3/11/2025", "the 11th of March"]
    )
    def test_one_day_written_many_ways_has_one_key(self, text: str) -> None:
        """ISO, day-month, month-day and US forms of a day share the key d:MM-DD."""
        assert "d:03-11" in [k for a in atoms(text) for k in [a.key]] + date_keys(text)

    @pytest.mark.parametrize("text", ["9am", "09:00", "9:00 a.m."])
    def test_one_time_written_many_ways_has_one_key(self, text: str) -> None:
        """A time of day in 12- or 24-hour form shares the key t:HH:MM."""
        assert date_keys(text) == ["t:09:00"]


class TestAtoms:
    def test_structured_leaves_keep_their_field(self) -> None:
        """A value under a key is an atom of that field; JSON written as a string is read as structure."""
        found = {(a.field, a.raw) for a in atoms({"city": "Paris", "args": '{"nights": 3}'})}
        assert {("city", "Paris"), ("nights", "3")} <= found

    def test_a_dict_printed_by_python_is_read_as_structure(self) -> None:
        """A tool's dict printed by ``str`` (as the OpenAI Agents SDK records a function tool's result) is read as
        the record it prints, each value under its field, as the same record written as JSON is."""
        found = {(a.field, a.raw) for a in atoms("{'unit_id': 'V-212', 'odometer_mi': 98471, 'active': True}")}
        assert {("unit_id", "V-212"), ("odometer_mi", "98471")} <= found

    def test_a_table_in_text_becomes_records(self) -> None:
        """CSV text is read as records: each cell is an atom of its column, a comma is no decimal point."""
        found = [(a.field, a.raw) for a in atoms("warehouse,on_hand,reserved\nLIS,50,30\nOPO,12,4\n")]
        assert ("reserved", "30") in found and ("on_hand", "12") in found

    def test_a_quoted_value_with_json_escapes_is_the_same_value_unescaped(self) -> None:
        """A prompt quoting JSON written with ASCII escapes ("Mus\\u00e9e") holds the value an answer read as
        JSON holds ("Musée"): one key, so the answer introduces nothing."""
        prompt = 'Terms: {"borrower": "Mus\\u00e9e des Confluences", "mark": "\\ud83d\\ude00 ok"}'
        keys = {a.key for a in atoms(prompt)}
        assert {a.key for a in atoms({"borrower": "Musée des Confluences"})} <= keys
        assert {a.key for a in atoms({"mark": "\U0001f600 ok"})} <= keys

    def test_markers_are_not_values(self) -> None:
        """A truncation or repr marker of the recorder is not read as the value's content."""
        assert atoms({"x": {"__trajdebug_truncated__": 10_000, "head": "1234"}}) == []

    def test_reading_is_bounded(self) -> None:
        """A huge or deeply nested value yields at most MAX_ATOMS atoms and never recurses without end."""
        deep: object = 1
        for _ in range(10_000):
            deep = [deep]
        assert atoms(deep) == []
        assert len(atoms(list(range(100_000)))) <= 400


class TestYears:
    def test_only_the_run_s_own_year_is_context(self) -> None:
        """The year a run happened in is context; another year is a claim; without a time, any year is context."""
        ns_2025 = 1_750_000_000 * 10**9  # June 2025
        assert is_year(2025, ns_2025) and not is_year(2021, ns_2025)
        assert is_year(1999) and not is_year(2025.5) and not is_year(True) and not is_year("2025")
        assert not is_year(2025, 0)  # a run without a time proves nothing


# The patterns as first written (plain alternations, no lookahead): the readers' faster forms must match alike.
_PLAIN_NUM = re.compile(mentions_module._NUM.pattern.replace(r"(?=[-+−$€£¥₹₩₽\d])", ""))
_PLAIN_DATE = re.compile(mentions_module._DATE.pattern.replace(r"(?=[\dajfmsond])", ""), re.I)
_PLAIN_WORDNUM = re.compile(r"\b(" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\b", re.I)

# Texts made of the pieces the patterns care about, with the characters re.IGNORECASE folds
# onto ASCII letters (ſ, İ, ı, K) and separators that could join pieces.
_PIECES = st.sampled_from(
    [
        *NUMBER_WORDS, "FOUR", "Fifteen", "ſix", "nİne", "thırty", "Sept", "mar", "March", "11th", "of",
        "2025-03-11T09:00Z", "3/11/2025", "9:00", "a.m.", "pm", "KB-3471", "W2378156", "user@x.io",
        "$", "€", "-", "−", "+", "%", "1,250.50", "1.250,00", "12,5", "3e2", "42", "7", "0.395", "km2",
        " ", "  ", "\n", ".", ",", "'", '"', "_", "/", ":", "a", "x1",
    ]
)
_TEXTS = st.lists(_PIECES, max_size=40).map("".join)


class TestReaderPatterns:
    @settings(max_examples=500)
    @given(_TEXTS)
    def test_numbers_dates_and_number_words_are_found_as_the_plain_patterns_find_them(self, text: str) -> None:
        """The readers' patterns find the same spans and groups as their plain alternations."""
        for fast, plain in ((mentions_module._NUM, _PLAIN_NUM), (mentions_module._DATE, _PLAIN_DATE), (mentions_module._WORDNUM, _PLAIN_WORDNUM)):
            assert [(m.span(), m.groups()) for m in fast.finditer(text)] == [
                (m.span(), m.groups()) for m in plain.finditer(text)
            ]

    @settings(max_examples=300)
    @given(_TEXTS)
    def test_a_text_read_for_atoms_has_the_numbers_mentions_finds(self, text: str) -> None:
        """Reading a long text for atoms gives its numbers exactly as `mentions` reads them."""
        text = "Notes:\n" + text  # long-text reading (a newline), not a short value
        got = [(a.key, a.unit, a.raw) for a in atoms(text) if a.kind == "number"]
        want = [("n:" + number_key(m.value), m.unit, m.raw) for m in mentions(text)]
        assert got == want


class TestReadingOnce:
    @settings(max_examples=200)
    @given(st.integers(0, 9), st.sampled_from(["a", "b"]), st.integers(0, 12))
    def test_a_string_read_before_gives_the_atoms_a_fresh_reading_gives(self, nest: int, field: str, at: int) -> None:
        """A string read again (under the same field, at another depth) gives what reading it afresh gives,
        JSON nested near the depth limit included."""
        inner: object = {"amount": "EUR 1,250.50 due 2025-03-11", "id": "KB-3471", "flag": True}
        for _ in range(nest):
            inner = [json.dumps(inner)]
        text = json.dumps(inner)
        value: object = text
        for _ in range(at):
            value = {field: value} if at % 2 else [value]
        _forget()
        fresh = [(a.key, a.field, a.unit, a.raw) for a in atoms(value)]
        _forget()
        atoms([{field: text}, [text]])  # the same string read at other depths first
        again = [(a.key, a.field, a.unit, a.raw) for a in atoms(value)]
        assert again == fresh

    @settings(max_examples=300)
    @given(_TEXTS, st.sampled_from(["query", "title", None]), st.sampled_from(["customer", None]))
    def test_a_string_read_under_another_field_gives_the_atoms_a_fresh_reading_gives(
        self, text: str, before: str | None, field: str | None
    ) -> None:
        """A string read under one field and then under another (or none) gives, the second time, what
        reading it afresh under that field gives."""

        def under(name: str | None) -> object:
            return text if name is None else {name: text}

        _forget()
        fresh = [(a.key, a.kind, a.field, a.unit, a.raw, a.number) for a in atoms(under(field))]
        _forget()
        atoms(under(before))
        again = [(a.key, a.kind, a.field, a.unit, a.raw, a.number) for a in atoms(under(field))]
        assert again == fresh


def _forget() -> None:
    """Drop what the readers memoized, so the next reading is a fresh one."""
    values._TEXT_MEMO.clear()
    values._PLAIN_MEMO.clear()


class _Record(Mapping[str, int]):
    """A mapping that is no dict (a user's own record type)."""

    def __getitem__(self, key: str) -> int:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


@pytest.mark.parametrize(
    "value",
    [{}, {"a": 1}, OrderedDict(a=1), _Record(), MappingProxyType({"a": 1}), "x", "", 3, 2.5, True, None, [1], (1,), {1}, b"x"],
)
def test_is_mapping_answers_as_the_mapping_check_does(value: object) -> None:
    """`is_mapping` agrees with ``isinstance(value, Mapping)`` on dicts, other mappings and non-mappings alike."""
    assert values.is_mapping(value) is isinstance(value, Mapping)


_DEEP_JSON = "[" * 5000 + "]" * 5000  # nested past the parser's stack


def test_json_text_nested_too_deep_to_parse_is_read_as_plain_text() -> None:
    """Deeply nested JSON text yields its atoms as plain text instead of raising RecursionError."""
    assert isinstance(atoms({"input": _DEEP_JSON}), list)


def test_analysis_of_a_run_holding_deeply_nested_json_text_completes() -> None:
    """analyze() ranks the steps of a run whose step values hold JSON text nested past the parser's stack."""
    from trajdebug.api import analyze
    from trajdebug.core.model import Dependency, Run, Step

    steps = (
        Step("a", "plan", "llm", input={"q": "go"}, output={"city": "Lima"}, start_ns=0, end_ns=1),
        Step("b", "ask_sub", "tool", input={"input": _DEEP_JSON}, output={"input": _DEEP_JSON, "city": "Cusco"},
             deps=(Dependency("a"),), start_ns=2, end_ns=3),
        Step("c", "final", "llm", output="failed", deps=(Dependency("b"),), start_ns=4, end_ns=5),
    )
    result = analyze(Run("r", "x", 0, 6, "failure", "bad answer", steps=steps))
    assert set(result.localization.ranking) <= {"a", "b", "c"}
    assert result.localization.ranking


def test_a_piece_of_a_date_and_time_in_a_text_is_no_id() -> None:
    """"the tide table from 2031-07-09T05:30 is stale" names a date and a time, not the id ``07-09T05``; an id
    that holds a date (``LOG-2031-07-09-2``) is still an id."""
    raws = {a.raw for a in atoms("the tide table from 2031-07-09T05:30 is stale")}
    assert "07-09T05" not in raws and "2031-07-09T05:30" in raws
    assert "LOG-2031-07-09-2" in {a.raw for a in atoms("see LOG-2031-07-09-2 for 2031-07-09") if a.kind == "id"}


def test_a_code_of_six_or_more_capitals_before_digits_is_an_id() -> None:
    """A voucher ``HARVEST24`` or ``KITEFEST2031`` in a refusal is one code, read as an id as ``AB24`` is, so the
    step that made it up can be traced; a word in capitals with no digits stays a word."""
    found = {(a.kind, a.raw) for a in atoms("voucher HARVEST24 rejected; KITEFEST2031 expired; see NOTICE")}
    assert ("id", "HARVEST24") in found
    assert ("id", "KITEFEST2031") in found
    assert not any(a.kind == "id" and a.raw == "NOTICE" for a in atoms("see NOTICE"))


def test_a_numbers_writing_shows_its_separators_use_only_where_one_reading_fits() -> None:
    """ "2,4" shows a decimal comma and "1.250.000" a dot between thousands; "1,250" and "1.250" show nothing
    (a decimal mark in one locale, a thousands mark in another)."""
    from trajdebug.core.mentions import separator_marks

    assert separator_marks("2,4") == {",decimal"}
    assert separator_marks("0.9 kg") == {".decimal"}
    assert separator_marks("1.250.000") == {".thousands"}
    assert separator_marks("12,345.6") == {",thousands"}
    assert not separator_marks("1,250") and not separator_marks("1.250")


def test_two_dates_name_one_year_unless_both_name_a_year_and_they_differ() -> None:
    """`same_year` compares the years two dates are written with (what `date_keys` leaves out): a date with no
    year matches any; 2024-06-15 and 2025-06-15 share a day key but not a year."""
    from trajdebug.core.mentions import date_year, same_year

    assert date_year("2024-06-15") == "2024" and date_year("15 June") is None
    assert same_year("2024-06-15", "15/06/2024") and same_year("2024-06-15", "June 15")
    assert not same_year("2024-06-15", "2025-06-15")

