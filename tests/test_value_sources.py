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
