"""Ice-cream van routes (openai_agents route): a dispatcher plans a van's trading day with a route-planner agent."""

from __future__ import annotations

import json

from agents.exceptions import UserError
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import Case
from .kit import active

AGENT = "icecream-van-routes"
ROUTE = "openai_agents"
EXT = "jsonl"

INPUTS = {
    "porthkerry": {"depot": "Porthkerry", "van": "V-3", "date": "2027-07-10"},
    "alnmouth": {"depot": "Alnmouth", "van": "V-8", "date": "2027-08-14"},
}
REFS = [
    {"depot": "Porthkerry", "van": "V-4", "date": "2027-07-17"},
    {"depot": "Alnmouth", "van": "V-9", "date": "2027-08-21"},
    {"depot": "Porthkerry", "van": "V-3", "date": "2027-07-24"},
    {"depot": "Alnmouth", "van": "V-8", "date": "2027-08-28"},
]

CASES = [
    Case("zc21", "zc-ic-1", "subagent_wrong_entity", "porthkerry", ("generation fake-model", 4), ("publish_route", 1),
         "The dispatcher asks the route planner to plan for the depot's other van, so the route uses that van's trading consents."),
    Case("zc22", "zc-ic-2", "wrong_tool_args", "alnmouth", ("generation fake-model", 7), ("publish_route", 1),
         "The model calls publish_route for the day after the trading day whose pitches were reserved."),
    Case("zc23", "zc-ic-3", "tool_ignores_argument", "alnmouth", ("pitch_consents", 1), ("publish_route", 1),
         "pitch_consents ignores van_id and returns the depot-wide consent list, so the planner keeps a pitch this van may not trade on."),
    Case("zc24", "zc-ic-4", "truncated_result", "porthkerry", ("list_pitches", 1), ("publish_route", 1),
         "list_pitches returns only the first three pitches of the council list, so the planned route has too few stops."),
    Case("zc25", "zc-ic-5", "swallowed_error", "porthkerry", ("check_van", 1), ("publish_route", 1),
         "check_van catches the telemetry gateway's first timeout and returns a placeholder reading with no reading_id instead of asking again."),
]

VANS = {"Porthkerry": ["V-3", "V-4"], "Alnmouth": ["V-8", "V-9"]}
FREEZER = {"V-3": -20.0, "V-4": -21.0, "V-8": -20.0, "V-9": -22.0}
PITCHES = {
    "Porthkerry": [{"pitch": "PK-1", "name": "Beach car park", "footfall": 900},
                   {"pitch": "PK-2", "name": "Country park gate", "footfall": 450},
                   {"pitch": "PK-3", "name": "Cliff lay-by", "footfall": 80},
                   {"pitch": "PK-4", "name": "Rhoose green", "footfall": 320},
                   {"pitch": "PK-5", "name": "Marina steps", "footfall": 610},
                   {"pitch": "PK-6", "name": "Station forecourt", "footfall": 260},
                   {"pitch": "PK-7", "name": "Leisure centre", "footfall": 380},
                   {"pitch": "PK-8", "name": "Pier head", "footfall": 540}],
    "Alnmouth": [{"pitch": "AL-1", "name": "Dune path", "footfall": 700},
                 {"pitch": "AL-2", "name": "Golf club lane", "footfall": 40},
                 {"pitch": "AL-3", "name": "Village green", "footfall": 520},
                 {"pitch": "AL-4", "name": "Estuary lay-by", "footfall": 60},
                 {"pitch": "AL-5", "name": "Station road", "footfall": 300},
                 {"pitch": "AL-6", "name": "Boat club", "footfall": 410},
                 {"pitch": "AL-7", "name": "Harbour wall", "footfall": 230}],
}
CONSENTS = {"V-3": ["PK-1", "PK-2", "PK-4", "PK-5", "PK-6", "PK-7"], "V-4": ["PK-1", "PK-3", "PK-5", "PK-8", "PK-6", "PK-7"],
            "V-8": ["AL-1", "AL-3", "AL-4", "AL-5", "AL-7"], "V-9": ["AL-1", "AL-2", "AL-3", "AL-4", "AL-5", "AL-6", "AL-7"]}


RESERVED: set[tuple[str, str]] = set()  # pitch lists the council holds for a depot and day


class TradingPortalError(Exception):
    pass


def _telemetry(van_id: str, attempt: int) -> dict:
    if van_id == "V-3" and attempt == 1:  # this van's modem answers the gateway late
        raise TimeoutError("telemetry gateway timed out after 5.0 s")
    return {"van": van_id, "freezer_c": FREEZER[van_id], "fuel_pct": 74, "reading_id": f"TLM-{van_id}-0712"}


@function_tool
def check_van(van_id: str) -> str:
    """Read the van's telemetry: freezer temperature and fuel."""
    for attempt in (1, 2, 3):
        try:
            return json.dumps(_telemetry(van_id, attempt))
        except TimeoutError:
            if active("zc-ic-5"):
                return json.dumps({"van": van_id, "freezer_c": -18.0, "fuel_pct": None, "reading_id": None})
    raise TimeoutError("telemetry gateway unreachable")


@function_tool
def list_vans(depot: str) -> str:
    """The vans based at a depot."""
    return json.dumps(VANS[depot])


@function_tool
def list_pitches(depot: str, date: str, min_footfall: int) -> str:
    """Council-listed trading pitches near a depot with at least min_footfall expected visitors."""
    RESERVED.add((depot, date))
    rows = [p for p in PITCHES[depot] if p["footfall"] >= min_footfall]
    if active("zc-ic-4"):
        rows = rows[:3]
    return json.dumps(rows)


@function_tool
def pitch_consents(van_id: str, depot: str) -> str:
    """Street-trading consents held by one van."""
    if active("zc-ic-3"):
        return json.dumps(sorted({p for v in VANS[depot] for p in CONSENTS[v]}))
    return json.dumps(CONSENTS[van_id])


@function_tool(failure_error_function=None)
def publish_route(van_id: str, date: str, stops: list[str], freezer_c: float, reading_id: str | None) -> str:
    """Publish the van's route to the council trading portal."""
    errors = []
    if not reading_id:
        errors.append(f"van {van_id}: no telemetry reading_id for {date}; a route needs a freezer reading taken that day")
    elif freezer_c > -18.0:
        errors.append(f"van {van_id}: freezer reading {freezer_c} C is above the -18 C trading limit")
    depot = next(d for d, vans in VANS.items() if van_id in vans)
    if (depot, date) not in RESERVED:
        errors.append(f"no pitch reservation held for {depot} on {date}")
    footfall = {p["pitch"]: p["footfall"] for p in PITCHES[depot]}
    for s in stops:
        if s not in CONSENTS[van_id]:
            errors.append(f"van {van_id} holds no street-trading consent for pitch {s}")
        elif footfall[s] < 200:
            errors.append(f"pitch {s} is a restricted lay-by (footfall {footfall[s]}); not bookable for vans")
    if len(stops) < 4:
        errors.append(f"a full trading day needs at least 4 stops, got {len(stops)}")
    if errors:
        raise TradingPortalError("403 Forbidden " + json.dumps({"errors": errors}))
    return json.dumps({"route_id": f"R-{van_id}-{date}", "stops": stops})


def _tool_results(messages) -> list:
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
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    user = next(m["content"] for m in messages if m["role"] == "user")
    results = _tool_results(messages)
    if system.startswith("You plan one van"):
        job = json.loads(user)
        if not results:
            return Reply(tool_calls=(tool_call("pitch_consents", {"van_id": job["van"], "depot": job["depot"]}),))
        consents = results[0]
        stops = [p["pitch"] for p in job["pitches"] if p["pitch"] in consents][:5]
        return json.dumps({"van": job["van"], "stops": stops})
    job = json.loads(user)
    step = len(results)
    if step == 0:
        return Reply(tool_calls=(tool_call("list_vans", {"depot": job["depot"]}),))
    if step == 1:
        return Reply(tool_calls=(tool_call("check_van", {"van_id": job["van"]}),))
    if step == 2:
        floor = 200
        return Reply(tool_calls=(tool_call("list_pitches", {"depot": job["depot"], "date": job["date"], "min_footfall": floor}),))
    if step == 3:
        vans = results[0]
        van = next(v for v in vans if v != job["van"]) if active("zc-ic-1") else job["van"]
        brief = json.dumps({"van": van, "depot": job["depot"], "pitches": results[2]})
        return Reply(tool_calls=(tool_call("route_planner", {"input": brief}),))
    if step == 4:
        plan = json.loads(results[3]) if isinstance(results[3], str) else results[3]
        day = job["date"]
        if active("zc-ic-2"):
            day = day[:-2] + f"{int(day[-2:]) + 1:02d}"
        return Reply(tool_calls=(tool_call("publish_route", {"van_id": job["van"], "date": day, "stops": plan["stops"],
                                                             "freezer_c": results[1]["freezer_c"],
                                                             "reading_id": results[1]["reading_id"]}),))
    return f"Route published for {job['van']} on {job['date']}."


def record(inp: dict, path: str, server) -> None:
    RESERVED.clear()
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    planner = Agent(name="route_planner_agent", model=model,
                    instructions="You plan one van's stops from the pitches given, keeping only pitches the van holds consent for.",
                    tools=[pitch_consents])
    dispatcher = Agent(
        name="dispatcher", model=model,
        instructions="You dispatch ice-cream vans: check the van, list pitches, have the route planner plan, then publish.",
        tools=[list_vans, check_van, list_pitches,
               planner.as_tool(tool_name="route_planner", tool_description="Plan a van's stops."), publish_route],
    )
    set_trace_processors([TrajdebugProcessor(path=path, name=AGENT, task=f"route {inp['van']} on {inp['date']}")])
    try:
        Runner.run_sync(dispatcher, json.dumps(inp), run_config=RunConfig(workflow_name=AGENT))
    except (TradingPortalError, UserError):
        pass
