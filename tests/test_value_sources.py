"""Values the failure names, traced to the steps that introduced or dropped them (`_value_sources`)."""

from __future__ import annotations

from trajdebug.analysis._value_sources import _own_word
from trajdebug.analysis.lexicon import ENGLISH
from trajdebug.analysis.lineage import Lineage
from trajdebug.core.model import Run, Step


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
