"""Evidence sources over the backward slice: a model's calls in one run are not held to one item count."""

from __future__ import annotations

from tests.builders import step

from trajdebug.analysis._localize import localize
from trajdebug.analysis._spoken import unnamed_records
from trajdebug.core.model import Dependency as D
from trajdebug.core.model import ErrorInfo, Run, Step


def _chat(sid: str, start: int, turns: int, calls: int, *deps: str) -> Step:
    msgs = [{"role": "user", "content": f"turn {i}"} for i in range(turns)]
    out = {
        "role": "assistant",
        "content": None if calls else "done",
        "tool_calls": [
            {"id": f"c{sid}{i}", "name": "publish", "arguments": {"week": "W15"}} for i in range(calls)
        ],
    }
    return step(sid, "ChatCompletion", "llm", start, {"messages": msgs}, out, *deps)


def test_a_model_call_making_a_tool_call_among_calls_that_made_none_is_no_size_deviation() -> None:
    """Tool calls per message of a conversation differ by construction between a model's calls in one run: no `sibling:size`."""
    steps = (
        _chat("m1", 1, 2, 0),
        _chat("m2", 3, 3, 0, "m1"),
        _chat("m3", 5, 4, 0, "m2"),
        _chat("m4", 7, 5, 0, "m3"),
        _chat("m5", 9, 2, 1, "m4"),
        step(
            "p",
            "publish",
            "tool",
            11,
            {"week": "W15"},
            None,
            "m5",
            status="error",
            error=ErrorInfo("PublishRejected", "W15: a price breaks the .99 rule"),
        ),
    )
    loc = localize(Run("r", "promo", outcome="failure", steps=steps))
    assert all("sibling:size" not in c.signals for c in loc.ranked_all)


def test_a_record_let_through_that_went_no_further_than_its_reader_is_no_finding() -> None:
    """A search given region=north that lets one south team through among north teams is suspect only when a later
    step carried that team on; a planner given the list that picked other teams left it behind."""

    def run_of(picked: str) -> Run:
        teams = [
            {"team_id": "Team 1", "region": "north"},
            {"team_id": "Team 2", "region": "north"},
            {"team_id": "Team 9", "region": "south"},
        ]
        steps = (
            step("s", "search_teams", "retrieval", 1, {"region": "north", "skill": "rescue"}, teams),
            step("p", "plan", "llm", 3, {"teams": teams}, {"teams": [picked], "site": "Hill Road"}, "s"),
            Step("o", "order", "tool", input={"teams": [picked], "site": "Hill Road"}, status="error",
                 error=ErrorInfo("ToolError", "no access to Hill Road"), start_ns=5, end_ns=6,
                 deps=(D("p"),)),
        )
        return Run("r", "site", outcome="failure", steps=steps)

    def admitted(run: Run) -> bool:
        return any("lineage:admitted" in c.signals for c in localize(run, top=10).candidates if c.step_id == "s")

    assert not admitted(run_of("Team 1"))
    assert admitted(run_of("Team 9"))


def test_a_record_carried_on_is_found_by_its_label_as_written() -> None:
    """A label with accents carried on by a later step is found (the text is read as written, not escaped), and
    "Team 1" is not found inside "Team 10"."""

    def admitted(label: str, picked: str) -> bool:
        teams = [
            {"team_id": "Crew 1", "region": "north"},
            {"team_id": "Crew 2", "region": "north"},
            {"team_id": label, "region": "south"},
        ]
        steps = (
            step("s", "search_teams", "retrieval", 1, {"region": "north", "skill": "rescue"}, teams),
            step("p", "plan", "llm", 3, {"teams": teams}, {"teams": [picked], "site": "Hill Road"}, "s"),
            Step("o", "order", "tool", input={"teams": [picked], "site": "Hill Road"}, status="error",
                 error=ErrorInfo("ToolError", "no access to Hill Road"), start_ns=5, end_ns=6,
                 deps=(D("p"),)),
        )
        run = Run("r", "site", outcome="failure", steps=steps)
        return any("lineage:admitted" in c.signals for c in localize(run, top=10).candidates if c.step_id == "s")

    assert admitted("Équipe 9", "Équipe 9")
    assert not admitted("Crew 9", "Crew 90")


def test_a_failure_naming_one_record_is_not_about_the_values_of_the_others() -> None:
    """A manifest check naming hive H6 is about H6's record: the values only H2's and H9's records hold are no
    part of it, and a list whose records the message all names (or none) is left whole."""
    manifest = {
        "manifest": [
            {"hive": "H2", "kg": 3.86, "inspected": "2026-08-21"},
            {"hive": "H6", "kg": 1.935, "inspected": "2026-08-05"},
            {"hive": "H9", "kg": 2.57, "inspected": "2026-08-21"},
        ]
    }
    others = unnamed_records(manifest, "hive lot 318: inspection for H6 is older than 10 days")
    assert "n:3.86" in others and "n:2.57" in others
    assert "n:1.935" not in others and "d:08-05" not in others
    assert "d:08-21" in others  # (held by H2 and H9 alone)
    assert unnamed_records(manifest, "extraction closed for the winter") == set()



def test_a_common_word_names_no_record_of_a_failed_list() -> None:
    """A status word ("pending") or a short word ("no") in a failure's message names no record: the values of
    the record it is about are still traced."""
    lines = {"lines": [{"sku": "P-31", "status": "pending", "qty": 5}, {"sku": "P-32", "status": "shipped", "qty": 7}]}
    assert unnamed_records(lines, "cannot close the order while a line is pending (qty 7 over stock)") == set()
    seats = {"rows": [{"a": "no", "n": 22}, {"a": "yes", "n": 23}]}
    assert unnamed_records(seats, "ValueError: no seat for 22") == set()
    # A code names its record in any case, a capitalised name as written.
    assert "n:7" in unnamed_records(lines, "line p-31 is held")


def test_the_number_in_a_name_the_failure_quotes_is_no_value_to_pass_on() -> None:
    """A check failing on "Bay 12 loads 37.5 t" speaks of the bay named Bay 12: the lane planner given that
    name and answering lanes lost no value 12; a check saying "12 lanes load 37.5 t" names a 12."""

    def run(message: str) -> Run:
        steps = (
            step("p", "plan_lanes", "other", 1, {"bay": "Bay 12", "lanes": "L1-L6"}, ["L1", "L2", "L3"]),
            step("m", "weigh", "tool", 3, {"bay": "Bay 12", "lanes": ["L1", "L2", "L3"]},
                 {"Bay 12": 37.5}, "p"),
            Step("c", "check_load", "other", input={"walk": {"Bay 12": 37.5}, "limit_t": 35.0},
                 status="error", error=ErrorInfo("RuntimeError", message), deps=(D("m"),), start_ns=5, end_ns=6),
        )
        return Run("r", "loader", outcome="failure", steps=steps)

    def lost_twelve(message: str) -> bool:
        return any("was given '12'" in r for c in localize(run(message)).ranked_all for r in c.reasons)

    assert not lost_twelve("closing inspection: Bay 12 loads 37.5 t against 35.0 t")
    assert lost_twelve("closing inspection: 12 lanes load 37.5 t against 35.0 t")


def test_a_quoted_name_given_as_a_value_takes_its_numbers_place() -> None:
    """ "LH 2482 is sold out", for a confirmation given flight="LH 2482", speaks of that flight: the value traced
    is the name (the step that chose the flight introduced it), not a number 2482; a name given only as a
    map's key leaves nothing to trace."""
    from trajdebug.analysis._value_sources import _outside_names
    from trajdebug.core.values import atoms

    message = "PNR-H2ND5R: LH 2482 is sold out"
    named = list(atoms(message))
    read = _outside_names(list(atoms({"pnr": "PNR-H2ND5R", "flight": "LH 2482"})), message, named)
    assert "LH 2482" in [a.raw for a in read] and "2482" not in [a.raw for a in read]
    keyed = _outside_names(list(atoms({"walk": {"LH 2482": 3}})), message, named)
    assert [a.raw for a in keyed] == [a.raw for a in named if a.raw != "2482"]
