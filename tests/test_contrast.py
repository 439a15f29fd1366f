"""Contrast with passing runs: a diagnoser's finding that the agent's passing runs show as often weighs
nothing, one they do not show keeps its weight, and without passing runs every finding stands."""

from __future__ import annotations

from trajdebug.analysis import analyze
from trajdebug.analysis.diagnosers import registered_diagnosers
from trajdebug.analysis.diagnosers._context import Evidence
from trajdebug.analysis.reference import Contrast
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step


def _shipper(rid: str, weights: list[float], *, start: int) -> Run:
    """A shipping agent: parse parcel weights, pick a carrier by the total (a label its input never names),
    book it; the van refuses small orders."""
    steps = []
    for i, kg in enumerate(weights):
        steps.append(
            Step(f"p{i}", "parse_weight", "parse", input={"reply": f"weight: {kg} kg"}, output=kg,
                 start_ns=start + 10 * i, end_ns=start + 10 * i + 1)
        )
    total = sum(weights)
    carrier = "van" if total > 30 else "courier"
    t = start + 100
    steps.append(
        Step("c", "choose_carrier", "condition", input={"total_kg": total}, output=carrier,
             deps=tuple(Dependency(f"p{i}") for i in range(len(weights))), start_ns=t, end_ns=t + 1)
    )
    fail = carrier == "van"
    steps.append(
        Step("b", "book", "tool", input={"carrier": carrier, "parcels": len(weights)},
             output=None if fail else "BK-1", status="error" if fail else "ok",
             error=ErrorInfo("BookingRefused", "van bookings need at least 6 parcels") if fail else None,
             deps=(Dependency("c"),), start_ns=t + 2, end_ns=t + 3)
    )
    return Run(rid, "shipper", start, t + 4, outcome="failure" if fail else "success", steps=tuple(steps))


def _passing() -> list[Run]:
    return [_shipper(f"ok{i}", [5.4, 3.0, 8.2, 9.0], start=1000 * (i + 1)) for i in range(3)]


def _router(run: Run, references: list[Run]) -> tuple[float, tuple[str, ...]]:
    """The router's score and reasons in the analysis of ``run``."""
    a = analyze(run, references=references, top=10)
    (c,) = [c for c in a.localization.ranked_all if a.run.step_map()[c.step_id].name == "choose_carrier"]
    return c.score, c.reasons


def test_a_finding_every_passing_run_shows_weighs_nothing() -> None:
    """The router's choice is never named by its input, in the failing run and in every passing run alike:
    with the passing runs as references that finding no longer counts against the router."""
    failing = _shipper("bad", [12.0, 3.0, 18.0, 9.0], start=10_000)
    score_alone, reasons_alone = _router(failing, [])
    assert any("nothing in its input mentions" in r for r in reasons_alone)
    score, reasons = _router(failing, _passing())
    assert not any("nothing in its input mentions" in r for r in reasons)
    assert score < score_alone


def test_a_finding_the_passing_runs_do_not_show_keeps_its_weight() -> None:
    """A finding that none of the counterparts in passing runs shows is evidence as before."""
    failing = _shipper("bad", [12.0, 3.0, 18.0, 9.0], start=10_000)
    step = failing.step_map()["c"]
    finding = Evidence("c", 0.45, "chose 'van', which nothing in its input mentions", "decision")

    def quiet(step: Step, ctx: object) -> list[Evidence]:
        return []

    contrast = Contrast(_passing(), [("decision", quiet)])
    assert contrast.apply(step, [finding]) == [finding]
    # The same finding, once the built-in rules read the passing runs (which show it), weighs nothing.
    builtin = Contrast(_passing(), list(registered_diagnosers().items()))
    (weighed,) = builtin.apply(step, [finding])
    assert weighed.suspicion == 0 and weighed.reason.startswith(finding.reason)


def test_one_counterpart_is_not_enough_to_contrast_a_finding_away() -> None:
    """With a single passing counterpart (it could be chance), the finding stands."""
    failing = _shipper("bad", [12.0, 3.0, 18.0, 9.0], start=10_000)
    finding = Evidence("c", 0.45, "chose 'van', which nothing in its input mentions", "decision")
    contrast = Contrast(_passing()[:1], list(registered_diagnosers().items()))
    assert contrast.apply(failing.step_map()["c"], [finding]) == [finding]


def test_a_value_finding_is_contrasted_by_the_shapes_of_its_values() -> None:
    """A model call that states a confidence of its own in every run loses that finding only while the values
    it states are of shapes passing runs state too: an identifier it was never given keeps the finding."""
    from trajdebug.analysis.reference._contrast import shape

    def model_steps(rid: str, stated: str, start: int) -> Run:
        s = Step("m", "extract_ref", "llm", input={"text": "claim for E104"}, output=stated, start_ns=start,
                 end_ns=start + 1)
        return Run(rid, "claims", start, start + 2, outcome="success", steps=(s,))

    def states(step: Step, ctx: object) -> list[Evidence]:
        words = str(step.output).split()
        return [Evidence(step.step_id, 0.4, f"states {words}", "llm-output", values=tuple(words))]

    passing = [model_steps(f"ok{i}", f"0.9{i}", 1000 * (i + 1)) for i in range(3)]
    contrast = Contrast(passing, [("llm-output", states)])
    confident = Evidence("m", 0.4, "states 0.95", "llm-output", values=("0.95",))
    ident = Evidence("m", 0.4, "states 0.95 'CLM-2219'", "llm-output", values=("0.95", "'CLM-2219'"))
    step = model_steps("bad", "x", 9000).steps[0]
    (a,) = contrast.apply(step, [confident])
    (b,) = contrast.apply(step, [ident])
    assert a.suspicion == 0 and b == ident
    assert shape("'CLM-2219'") == shape("'INV-7'") != shape("0.93") == shape("0.5")


def test_a_model_turn_is_contrasted_with_the_turns_that_called_the_same_tools() -> None:
    """One model name serves every turn of a conversation: a turn making up a tool call's arguments, which
    the passing runs' turns calling that tool make up too, loses the finding, though their other turns (a
    first lookup, a closing sentence) state nothing; the turns in words alone would have kept it."""

    def turn(sid: str, calls: list[str], start: int) -> Step:
        out = {"role": "assistant", "content": None if calls else "Done.",
               "tool_calls": [{"id": f"c{i}", "name": n, "arguments": {"unit": "U-1"}} for i, n in enumerate(calls)]}
        return Step(sid, "ChatModel", "llm", input={"messages": [{"role": "user", "content": "go"}]},
                    output=out, start_ns=start, end_ns=start + 1)

    def convo(rid: str, start: int) -> Run:
        steps = (turn("a", ["list_jobs"], start), turn("b", ["refer"], start + 2), turn("c", [], start + 4))
        return Run(rid, "crew", start, start + 6, outcome="success", steps=steps)

    def states(step: Step, ctx: object) -> list[Evidence]:
        calls = step.output.get("tool_calls") if isinstance(step.output, dict) else None
        if calls and calls[0]["name"] == "refer":
            return [Evidence(step.step_id, 0.3, "states 'U-1'", "llm-output", values=("'U-1'",))]
        return []

    passing = [convo(f"ok{i}", 1000 * (i + 1)) for i in range(3)]
    finding = Evidence("b", 0.3, "states 'U-1'", "llm-output", values=("'U-1'",))
    step = convo("bad", 9000).step_map()["b"]
    (weighed,) = Contrast(passing, [("llm-output", states)]).apply(step, [finding])
    assert weighed.suspicion == 0
    # Passing runs whose only turns answer in words say nothing about a turn that calls a tool.
    closing = [Run(f"w{i}", "crew", 0, 1, outcome="success", steps=(turn("c", [], 1000 * (i + 1)),)) for i in range(3)]
    assert Contrast(closing, [("llm-output", states)]).apply(step, [finding]) == [finding]


def test_a_model_call_is_contrasted_with_the_calls_of_the_same_tools() -> None:
    """An agent's model searches once with settings of its own, then books several times: the search's finding,
    which every passing search shows, weighs nothing, though most of the model's passing calls (bookings) do not
    show it; a finding of a booking, which no passing booking shows, keeps its weight."""

    def call(sid: str, tool: str, args: dict[str, object], start: int) -> Step:
        out = {"role": "assistant", "content": None, "tool_calls": [{"id": sid, "name": tool, "arguments": args}]}
        return Step(sid, "generation", "llm", input={"messages": [{"role": "user", "content": "plan"}]},
                    output=out, start_ns=start, end_ns=start + 1, agent="planner")

    def run(rid: str, start: int) -> Run:
        steps = [call("s", "search", {"min_score": 7.5}, start)]
        steps += [call(f"b{i}", "book", {"slot": f"S{i}"}, start + 10 * (i + 1)) for i in range(4)]
        return Run(rid, "planner", start, start + 100, outcome="success", steps=tuple(steps))

    def settings_of_search(step: Step, ctx: object) -> list[Evidence]:
        calls = step.output.get("tool_calls") if isinstance(step.output, dict) else None
        if calls and calls[0]["name"] == "search":
            return [Evidence(step.step_id, 0.35, "states 7.5", "llm-output", values=("7.5",))]
        return []

    passing = [run(f"ok{i}", 1000 * (i + 1)) for i in range(3)]
    contrast = Contrast(passing, [("llm-output", settings_of_search)])
    failing = run("bad", 9000)
    search, booking = failing.steps[0], failing.steps[1]
    (a,) = contrast.apply(search, [Evidence("s", 0.35, "states 7.5", "llm-output", values=("7.5",))])
    kept = Evidence("b0", 0.35, "states 7.5", "llm-output", values=("7.5",))
    assert a.suspicion == 0
    assert contrast.apply(booking, [kept]) == [kept]


def test_a_specialist_with_too_few_passing_turns_is_contrasted_with_the_others_of_its_part() -> None:
    """A hand-off sends each run to one desk: a desk's turn naming a clinician none of its inputs holds, which
    the other desks' turns calling the same tool do too, weighs nothing though this desk played one passing
    run; a finding of a turn calling a tool no other desk calls keeps its weight."""

    def call(sid: str, agent: str, tool: str, who: str, start: int) -> Step:
        out = {"role": "assistant", "content": None, "tool_calls": [{"id": sid, "name": tool, "arguments": {"who": who}}]}
        return Step(sid, "generation", "llm", input={"messages": [{"role": "user", "content": "referral"}]},
                    output=out, start_ns=start, end_ns=start + 1, agent=agent)

    def run(rid: str, desk: str, tool: str, start: int) -> Run:
        return Run(rid, "clinic", start, start + 10, outcome="success", steps=(call("a", desk, tool, "Dr. Iversen", start),))

    def names(step: Step, ctx: object) -> list[Evidence]:
        return [Evidence(step.step_id, 0.3, "states 'Dr. Iversen'", "llm-output", values=("'Dr. Iversen'",))]

    passing = [run("ok0", "cardio_desk", "refer", 1000), run("ok1", "derm_desk", "refer", 2000),
               run("ok2", "ortho_desk", "refer", 3000)]
    finding = Evidence("a", 0.3, "states 'Dr. Mbeki'", "llm-output", values=("'Dr. Mbeki'",))
    step = run("bad", "cardio_desk", "refer", 9000).steps[0]
    (weighed,) = Contrast(passing, [("llm-output", names)]).apply(step, [finding])
    assert weighed.suspicion == 0
    other = run("bad2", "cardio_desk", "discharge", 9000).steps[0]
    assert Contrast(passing, [("llm-output", names)]).apply(other, [finding]) == [finding]
