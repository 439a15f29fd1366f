"""Values the failure expects, traced to the steps that lost them (`trajdebug.analysis._value_sources`)."""

from __future__ import annotations

from tests.builders import step

from trajdebug.analysis._localize import localize
from trajdebug.core.model import ErrorInfo, Run


def _finds(around: bool) -> Run:
    """A typology look-up answers a type id; a model writes the find's description from it without the id; the
    register is handed the id by the look-up itself (``around``) or by a second look-up the model never read."""
    typed = {"type": "WX-12", "ware": "grey sandy ware", "region": "north"}
    steps = [
        step("c", "context_sheet", "tool", 1, {"context": 1082}, {"context": 1082, "soil": "dark silt"}),
        step("t", "pottery_typology", "tool", 3, {"fabric": "grey sandy", "context": 1082}, typed, "c"),
        step("m", "describe_find", "llm", 5, {"prompt": f"Describe the find. Typology: {typed}"},
             "A grey sandy ware sherd from context 1082, north series.", "t"),
    ]
    source = "t"
    if not around:
        steps.append(step("x", "series_lookup", "tool", 6, {"context": 1082}, {"series": "north", "type": "WX-12"}, "c"))
        source = "x"
    steps.append(
        step("f", "finds_register", "tool", 9, {"type": "WX-12", "text": "A grey sandy ware sherd from context 1082"},
             None, source, "m", status="error",
             error=ErrorInfo("Refused", "register: type WX-12 is not in the series of context 1082"))
    )
    return Run("r", "finds", outcome="failure", steps=tuple(steps))


def _model_dropped(run: Run) -> bool:
    return any(c.step_id == "m" and "lineage:dropped" in c.signals for c in localize(run).ranked_all)


def test_an_id_that_went_around_a_step_from_its_own_source_was_not_lost_there() -> None:
    """The model did not pass on ``WX-12``, but the look-up it read it from handed the register the id too: no omission."""
    assert not _model_dropped(_finds(around=True))


def test_an_id_the_failing_step_got_from_elsewhere_is_still_an_omission() -> None:
    """When the register got the id from a look-up the model never read, the model's not passing it on stays a finding."""
    assert _model_dropped(_finds(around=False))
