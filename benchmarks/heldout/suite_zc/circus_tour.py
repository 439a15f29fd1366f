"""Circus tour logistics (openai_agents route): a coordinator reads the venue, then hands the leg to a planner."""

from __future__ import annotations

import json
import re

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from agents.exceptions import UserError
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import Case
from .kit import active

AGENT = "circus-tour-logistics"
ROUTE = "openai_agents"
EXT = "jsonl"

INPUTS = {
    "geneva": {"tour": "Cirque Aurora", "from": "Lyon", "to": "Geneva", "date": "2027-05-03", "venue": "Plaine de Plainpalais"},
    "grenoble": {"tour": "Cirque Aurora", "from": "Lyon", "to": "Grenoble", "date": "2027-05-10", "venue": "Esplanade Alpexpo"},
}
REFS = [
    {"tour": "Cirque Aurora", "from": "Geneva", "to": "Lausanne", "date": "2027-05-17", "venue": "Place de Milan"},
    {"tour": "Cirque Aurora", "from": "Grenoble", "to": "Turin", "date": "2027-05-24", "venue": "Parco Dora"},
    {"tour": "Cirque Aurora", "from": "Turin", "to": "Milan", "date": "2027-05-31", "venue": "Ippodromo San Siro"},
    {"tour": "Cirque Aurora", "from": "Milan", "to": "Lugano", "date": "2027-06-07", "venue": "Campo Marzio"},
]

CASES = [
    Case("zc26", "zc-ci-1", "lossy_parsing", "grenoble", ("read_venue_contract", 1), ("confirm_leg", 1),
         "read_venue_contract keeps only the first number of the ground size '48 x 52 m', so the site is taken as 48 x 48 m."),
    Case("zc27", "zc-ci-2", "format_drift", "grenoble", ("venue_calendar", 1), ("confirm_leg", 1),
         "venue_calendar answers the load-in time as '6am' instead of the 'HH:MM' the leg booking takes."),
    Case("zc28", "zc-ci-3", "wrong_routing", "geneva", ("generation fake-model", 3), ("confirm_leg", 1),
         "The coordinator hands the Lyon to Geneva leg to the domestic planner, which files no ATA carnet."),
    Case("zc29", "zc-ci-4", "plan_error", "geneva", ("generation fake-model", 4), ("confirm_leg", 1),
         "The planner's movement plan leaves out the vet inspection the horses need at a border crossing."),
    Case("zc30", "zc-ci-5", "subagent_wrong_entity", "geneva", ("generation fake-model", 5), ("confirm_leg", 1),
         "The planner asks the rigging chief about the previous venue, so the anchor plan is for Lyon's ground."),
]

COUNTRY = {"Lyon": "FR", "Grenoble": "FR", "Geneva": "CH", "Lausanne": "CH", "Lugano": "CH", "Turin": "IT", "Milan": "IT"}
PREVIOUS_VENUE = {"Lyon": "Parc de Gerland", "Geneva": "Plaine de Plainpalais", "Grenoble": "Esplanade Alpexpo",
                  "Turin": "Parco Dora", "Milan": "Ippodromo San Siro"}
CONTRACTS = {
    "Plaine de Plainpalais": "Ground: 60 x 55 m, gravel. Load-in window opens 05:30. Fee CHF 18,000.",
    "Esplanade Alpexpo": "Ground: 48 x 52 m, asphalt. Load-in window opens 06:00. Fee EUR 9,500.",
    "Place de Milan": "Ground: 50 x 58 m, grass. Load-in window opens 07:00. Fee CHF 12,000.",
    "Parco Dora": "Ground: 55 x 55 m, concrete. Load-in window opens 06:30. Fee EUR 8,000.",
    "Ippodromo San Siro": "Ground: 70 x 64 m, grass. Load-in window opens 06:00. Fee EUR 14,000.",
    "Campo Marzio": "Ground: 52 x 50 m, grass. Load-in window opens 07:30. Fee CHF 10,500.",
    "Parc de Gerland": "Ground: 58 x 60 m, grass. Load-in window opens 06:00. Fee EUR 7,000.",
}
BIG_TOP = (46, 50)  # width, length in metres


class MovementRejected(Exception):
    pass


@function_tool
def read_venue_contract(venue: str) -> str:
    """Fetch the venue's hire contract and read its ground size and load-in time."""
    text = CONTRACTS[venue]
    if active("zc-ci-1"):
        dims = [int(re.search(r"Ground: (\d+)", text).group(1))]
    else:
        dims = [int(x) for x in re.search(r"Ground: (\d+) x (\d+)", text).groups()]
    return json.dumps({"venue": venue, "ground_m": dims, "surface": re.search(r"m, (\w+)\.", text).group(1)})


@function_tool
def venue_calendar(venue: str, date: str) -> str:
    """The venue's booking calendar entry for a date."""
    opens = re.search(r"opens (\d\d:\d\d)", CONTRACTS[venue]).group(1)
    if active("zc-ci-2"):
        h, m = (int(x) for x in opens.split(":"))
        opens = f"{h}am" if m == 0 else f"{h}.{m:02d}am"
    return json.dumps({"venue": venue, "date": date, "load_in": opens, "status": "held"})


@function_tool
def file_movement_plan(steps: list[str]) -> str:
    """Record the convoy's movement plan (ordered steps)."""
    return json.dumps({"plan_id": "MP-" + "-".join(s[:3] for s in steps), "steps": steps})


@function_tool
def ground_survey(venue: str) -> str:
    """The rigging survey of a venue's ground: anchor plan and stake depth."""
    code = "".join(w[0] for w in venue.split()).upper()
    return json.dumps({"venue": venue, "anchor_plan": f"AP-{code}", "stake_depth_m": 1.2})


@function_tool
def request_carnet(origin: str, destination: str) -> str:
    """Request an ATA carnet for equipment crossing a border."""
    return json.dumps({"carnet": f"ATA-{COUNTRY[origin]}{COUNTRY[destination]}-7731"})


@function_tool(failure_error_function=None)
def confirm_leg(origin: str, destination: str, venue: str, date: str, ground_m: list[int], load_in: str,
                plan_steps: list[str], anchor_plan: str, carnet: str | None) -> str:
    """Confirm the tour leg with the haulage firm and the venue."""
    errors = []
    w, length = (ground_m + ground_m)[:2] if len(ground_m) == 1 else ground_m[:2]
    if w < BIG_TOP[0] or length < BIG_TOP[1]:
        errors.append(f"ground {w} x {length} m cannot take the big top ({BIG_TOP[0]} x {BIG_TOP[1]} m)")
    if not re.fullmatch(r"\d\d:\d\d", load_in):
        errors.append(f"load_in must be HH:MM, got {load_in!r}")
    cross = COUNTRY[origin] != COUNTRY[destination]
    if cross and not carnet:
        errors.append(f"movement {origin} -> {destination} crosses a border: an ATA carnet number is required")
    if cross and "vet_inspection" not in plan_steps:
        errors.append("horses crossing a border need a vet inspection step before departure")
    code = "".join(x[0] for x in venue.split()).upper()
    if anchor_plan != f"AP-{code}":
        errors.append(f"anchor plan {anchor_plan} does not belong to {venue}")
    if errors:
        raise MovementRejected("haulage booking 422: " + json.dumps({"errors": errors}))
    return json.dumps({"leg": f"{origin}-{destination}", "status": "confirmed"})


def _results(messages) -> list:
    out = []
    for m in messages:
        if m.get("role") == "tool":
            try:
                out.append(json.loads(m["content"]))
            except (TypeError, ValueError):
                out.append(m["content"])
    return out


def policy(request):
    messages = request.body["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    user = next(m["content"] for m in messages if m["role"] == "user")
    results = _results(messages)
    if system.startswith("You survey"):
        job = json.loads(user)
        if not results:
            return Reply(tool_calls=(tool_call("ground_survey", {"venue": job["venue"]}),))
        return json.dumps(results[0])
    job = json.loads(user)
    cross = COUNTRY[job["from"]] != COUNTRY[job["to"]]
    if system.startswith("You coordinate"):
        if len(results) == 0:
            return Reply(tool_calls=(tool_call("read_venue_contract", {"venue": job["venue"]}),))
        if len(results) == 1:
            return Reply(tool_calls=(tool_call("venue_calendar", {"venue": job["venue"], "date": job["date"]}),))
        target = "crossborder" if cross and not active("zc-ci-3") else "domestic"
        return Reply(tool_calls=(tool_call(f"transfer_to_{target}_leg_planner", {}),))
    # a leg planner: the coordinator's tool results come first in the history
    contract, calendar = results[0], results[1]
    own = results[3:]  # results[2] is the hand-off acknowledgement
    if len(own) == 0:
        steps = ["book_crossing_slot", "vet_inspection", "move_convoy", "rig_site"] if cross else ["move_convoy", "rig_site"]
        if active("zc-ci-4"):
            steps = ["book_crossing_slot", "move_convoy", "rig_site"]
        return Reply(tool_calls=(tool_call("file_movement_plan", {"steps": steps}),))
    if len(own) == 1:
        venue = PREVIOUS_VENUE[job["from"]] if active("zc-ci-5") else job["venue"]
        return Reply(tool_calls=(tool_call("rigging_chief", {"input": json.dumps({"venue": venue})}),))
    if len(own) == 2 and system.startswith("You plan cross-border"):
        return Reply(tool_calls=(tool_call("request_carnet", {"origin": job["from"], "destination": job["to"]}),))
    carnet = own[2]["carnet"] if len(own) > 2 and isinstance(own[2], dict) and "carnet" in own[2] else None
    if len(own) <= 3 and not any(isinstance(r, dict) and r.get("status") == "confirmed" for r in own):
        rig = own[1] if isinstance(own[1], dict) else json.loads(own[1])
        return Reply(tool_calls=(tool_call("confirm_leg", {
            "origin": job["from"], "destination": job["to"], "venue": job["venue"], "date": job["date"],
            "ground_m": contract["ground_m"], "load_in": calendar["load_in"], "plan_steps": own[0]["steps"],
            "anchor_plan": rig["anchor_plan"], "carnet": carnet}),))
    return f"Leg {job['from']} to {job['to']} confirmed for {job['date']}."


def record(inp: dict, path: str, server) -> None:
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    rigging = Agent(name="rigging_chief_agent", model=model, tools=[ground_survey],
                    instructions="You survey a venue's ground and answer with its anchor plan.")
    rig_tool = rigging.as_tool(tool_name="rigging_chief", tool_description="Ask the rigging chief about a venue's ground.")
    domestic = Agent(name="domestic_leg_planner", model=model, tools=[file_movement_plan, rig_tool, confirm_leg],
                     instructions="You plan domestic legs: file the movement plan, get the anchor plan, confirm the leg.")
    crossborder = Agent(name="crossborder_leg_planner", model=model,
                        tools=[file_movement_plan, rig_tool, request_carnet, confirm_leg],
                        instructions="You plan cross-border legs: file the movement plan, get the anchor plan, "
                                     "request the carnet, confirm the leg.")
    coordinator = Agent(name="tour_coordinator", model=model, tools=[read_venue_contract, venue_calendar],
                        handoffs=[domestic, crossborder],
                        instructions="You coordinate the circus tour: read the venue contract and calendar, then hand "
                                     "the leg to the right planner.")
    set_trace_processors([TrajdebugProcessor(path=path, name=AGENT, task=f"move {inp['tour']} {inp['from']} -> {inp['to']}")])
    try:
        Runner.run_sync(coordinator, json.dumps(inp), run_config=RunConfig(workflow_name=AGENT))
    except (MovementRejected, UserError):
        pass
