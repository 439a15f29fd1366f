"""The one tool-error check: a result that flags itself as failed is an error for the recorder, the importers and the analysis."""

from __future__ import annotations

from typing import Any

import pytest

from trajdebug.analysis import _content as content
from trajdebug.core.payloads import error_payload
from trajdebug.sources.formats.convert import error_text


FLAGGED: list[dict[str, Any]] = [
    {"isError": True, "content": [{"type": "text", "text": "rate limited"}]},
    {"is_error": True, "message": "quota exceeded"},
    {"success": False, "detail": "no such order"},
    {"ok": False},
    {"status": "failed", "message": "upstream down"},
    {"error": {"code": 7}},
]


@pytest.mark.parametrize("result", FLAGGED)
def test_a_flagged_result_is_an_error_for_every_reader(result: dict[str, Any]) -> None:
    """The recorder's check, the importers' and the analysis's all read a self-flagged result as failed."""
    assert error_payload(result) is not None
    assert error_text(result) is not None
    assert content.error_text(result) is not None


@pytest.mark.parametrize(
    "result",
    [{"status": "cancelled"}, {"error": "stale", "result": [1]}, {"ok": True, "data": []}, ["error"], "Error: x"],
)
def test_a_result_with_data_or_a_plain_status_is_not_flagged(result: Any) -> None:
    """An ``error`` beside a result, a status that is not a failure, or a non-object is not a flagged failure."""
    assert error_payload(result) is None


def test_the_message_is_the_results_own_or_a_placeholder() -> None:
    """The message comes from ``error``, ``message`` or ``detail``; a bare flag says the tool reported an error."""
    assert error_payload({"success": 0, "message": "m"}) == "m"
    assert error_payload({"ok": False}) == "tool reported an error"


def test_the_readers_keep_their_own_text_reading() -> None:
    """Text that reads as an error is the importers' and the analysis's business, not the protocol check's."""
    assert error_payload({"out": "Error: disk full"}) is None
    assert error_text("Error: disk full") == "Error: disk full"
    assert content.error_text({"out": "Error: disk full"}) == "Error: disk full"


def test_a_word_of_its_own_is_not_a_piece_of_a_longer_word_or_id() -> None:
    """`has_word` finds a value standing alone, never inside a longer word, number, id or hyphenated name."""
    assert content.has_word("crew team 1 is ready", "team 1")
    assert not content.has_word("crew team 10 is ready", "team 1")
    assert not content.has_word("follow the instructions", "ns")
    assert not content.has_word("order ab-12 shipped", "ab")
    assert content.has_word("équipe 9 a quitté", "équipe 9")
