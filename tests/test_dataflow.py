"""Tests for `trajdebug.analysis.diagnosers._dataflow`: the values a step was given and did not pass on."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers._dataflow import _NUMERAL, _lost


def _eager(values: list[Any], text: str) -> list[Any]:
    """The reading `_lost` replaced (the text's number forms read first, every value tested), kept as the reference."""
    forms = content.number_forms(text)
    lost = []
    for v in values:
        if isinstance(v, str):
            n = content.norm_number(v.strip()) if _NUMERAL.fullmatch(v.strip()) else None
            if v.strip().lower() not in text and (n is None or n not in forms):
                lost.append(v)
        elif content.norm_number(repr(v)) not in forms:
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
