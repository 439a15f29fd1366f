"""Canoe portage outfitter: a front desk hands the trip to a planner that reads the route, checks the
campsites night by night, quotes the canoes, has a permit clerk (an agent used as a tool) reserve the
entry and then issues the trip permit (OpenAI Agents SDK, chat-completions model on the fake server)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, UserError, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor

from .common import ApiError, Case, last_user_json
from .kit import active

NAME = "portage-outfitter"
ROUTE = "openai_agents"
DOMAIN = "canoe portage trips"
SHAPE = "front desk -> hand-off to trip planner: route tool, campsite tool per night, rental quote, permit clerk agent-as-tool (quota, reserve), issue permit"

INPUTS: dict[str, dict[str, Any]] = {
    "birch": {"party": "P-2231", "leader": "Ines Laroche", "people": 4, "route": "R-41", "entry": "2027-07-08", "nights": 3, "boat": "kevlar"},
    "loon": {"party": "P-2240", "leader": "Sam Whitford", "people": 2, "route": "R-17", "entry": "2027-07-15", "nights": 2, "boat": "kevlar"},
    "otter": {"party": "P-2252", "leader": "Mei Tanaka", "people": 3, "route": "R-17", "entry": "2027-08-02", "nights": 2, "boat": "kevlar"},
    "heron": {"party": "P-2260", "leader": "Olu Bankole", "people": 6, "route": "R-41", "entry": "2027-08-11", "nights": 3, "boat": "kevlar"},
    "pike": {"party": "P-2268", "leader": "Ana Ruiz", "people": 2, "route": "R-09", "entry": "2027-06-20", "nights": 1, "boat": "aluminium"},
    "cedar": {"party": "P-2275", "leader": "Ravi Nair", "people": 4, "route": "R-09", "entry": "2027-09-03", "nights": 2, "boat": "kevlar"},
}
MAIN = ("birch", "loon")
REFS = ("otter", "heron", "pike", "cedar")

CASES = [
    Case("cpt-1", "hallucinated_value", "birch", ("generation gpt-4o-mini", 11), ("issue_trip_permit", 1),
         "When it issues the permit the planner states a campsite number for the last night that no campsite check returned."),
    Case("cpt-2", "subagent_wrong_entity", "loon", ("generation gpt-4o-mini", 8), ("issue_trip_permit", 1),
         "The permit clerk reserves the entry for the party in its worked example instead of the party it was asked about."),
    Case("cpt-3", "wrong_tool_args", "birch", ("generation gpt-4o-mini", 6), ("issue_trip_permit", 1),
         "The planner asks for a rental quote with the number of canoes as the party size, so the quote covers half the paddlers."),
    Case("cpt-4", "stale_data", "loon", ("check_campsite", 2), ("issue_trip_permit", 1),
         "The campsite check answers from last week's cached availability, so the planner picks a site that is now reserved."),
    Case("cpt-5", "tool_ignores_argument", "birch", ("quote_canoe_rental", 1), ("issue_trip_permit", 1),
         "The rental quote ignores the requested boat material and quotes aluminium canoes, too heavy for the route's long portages."),
]

ROUTES = {
    "R-41": {"name": "Kawnipi loop", "entry_point": "EP-25", "lakes": ["Pickerel", "Kawnipi", "Kenny"], "portages_m": [420, 1850, 2900, 640]},
    "R-17": {"name": "Sturgeon run", "entry_point": "EP-11", "lakes": ["Sturgeon", "Jean"], "portages_m": [300, 980]},
    "R-09": {"name": "Basswood day loop", "entry_point": "EP-04", "lakes": ["Basswood"], "portages_m": [150]},
}
SITES = {"Pickerel": ["CS-101", "CS-104"], "Kawnipi": ["CS-112", "CS-115"], "Kenny": ["CS-120"], "Sturgeon": ["CS-030", "CS-033"],
         "Jean": ["CS-041", "CS-044"], "Basswood": ["CS-002"]}
RESERVED_NOW = {("CS-041", "2027-07-16")}
BOAT_KG = {"kevlar": 20, "aluminium": 34}


def _date(entry: str, night: int) -> str:
    return (dt.date.fromisoformat(entry) + dt.timedelta(days=night)).isoformat()


def _calls(body: dict) -> list[tuple[str, dict, str | None]]:
    """(tool name, args, result) for every tool call in the conversation so far."""
    results = {m.get("tool_call_id"): m.get("content") for m in body["messages"] if m.get("role") == "tool"}
    out = []
    for m in body["messages"]:
        for c in m.get("tool_calls") or []:
            out.append((c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"), results.get(c["id"])))
    return out


def _request(body: dict) -> dict:
    for m in body["messages"]:
        if m.get("role") == "user":
            try:
                return json.loads(m["content"] if isinstance(m["content"], str) else m["content"][0]["text"])
            except (ValueError, KeyError, TypeError):
                continue
    return {}


def policy(req: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    body = req.body
    system = body["messages"][0].get("content", "")
    calls = _calls(body)
    done = [c[0] for c in calls]
    if "front desk" in system:
        if "transfer_to_trip_planner" not in done:
            return Reply(tool_calls=(tool_call("transfer_to_trip_planner", {}),))
        return "Handed over."
    if "permit clerk" in system:
        p = last_user_json(body)
        if "lookup_entry_quota" not in done:
            return Reply(tool_calls=(tool_call("lookup_entry_quota", {"entry_point": p["entry_point"], "date": p["date"]}),))
        if "reserve_entry" not in done:
            party = p["party"]
            if active("cpt-2"):
                party = "P-2210"  # the party in the clerk's worked example
            return Reply(tool_calls=(tool_call("reserve_entry", {"party": party, "entry_point": p["entry_point"], "date": p["date"], "people": p["people"]}),))
        return next(c[2] for c in calls if c[0] == "reserve_entry")
    r = _request(body)
    if "get_route_segments" not in done:
        return Reply(tool_calls=(tool_call("get_route_segments", {"route": r["route"]}),))
    route = json.loads(next(c[2] for c in calls if c[0] == "get_route_segments"))
    checks = [c for c in calls if c[0] == "check_campsite"]
    if len(checks) < r["nights"]:
        night = len(checks)
        lake = route["lakes"][min(night, len(route["lakes"]) - 1)]
        return Reply(tool_calls=(tool_call("check_campsite", {"lake": lake, "date": _date(r["entry"], night)}),))
    if "quote_canoe_rental" not in done:
        party_size = r["people"]
        if active("cpt-3"):
            party_size = (r["people"] + 1) // 2
        return Reply(tool_calls=(tool_call("quote_canoe_rental", {"party_size": party_size, "days": r["nights"] + 1, "boat": r["boat"]}),))
    if "permit_clerk" not in done:
        ask = json.dumps({"party": r["party"], "entry_point": route["entry_point"], "date": r["entry"], "people": r["people"]})
        return Reply(tool_calls=(tool_call("permit_clerk", {"input": ask}),))
    if "issue_trip_permit" not in done:
        sites = [json.loads(c[2])["free"][0] for c in checks]
        if active("cpt-1"):
            sites[-1] = "CS-118"
        quote = json.loads(next(c[2] for c in calls if c[0] == "quote_canoe_rental"))
        res = json.loads(next(c[2] for c in calls if c[0] == "permit_clerk"))
        return Reply(tool_calls=(tool_call("issue_trip_permit", {"party": r["party"], "route": r["route"], "entry": r["entry"], "people": r["people"],
                                                                  "campsites": sites, "quote": quote["quote"], "reservation": res["reservation"]}),))
    return "Permit issued; the party can collect the canoes at the outfitter's dock."


@function_tool
def get_route_segments(route: str) -> str:
    """The lakes and portages of a canoe route."""
    return json.dumps({"route": route, **ROUTES[route]})


@function_tool
def check_campsite(lake: str, date: str) -> str:
    """Campsites free on a lake for a night."""
    taken = {("CS-041", "2027-07-16")} if not active("cpt-4") else set()  # last week's cache knew no reservation
    free = [s for s in SITES[lake] if (s, date) not in taken]
    return json.dumps({"lake": lake, "date": date, "free": free})


@function_tool
def quote_canoe_rental(party_size: int, days: int, boat: str) -> str:
    """Quote canoes, paddles and packs for a party."""
    material = "aluminium" if active("cpt-5") else boat
    canoes = (party_size + 1) // 2
    return json.dumps({"quote": f"Q-{material[:3].upper()}-{party_size}-{days}", "canoes": canoes, "paddlers": party_size,
                       "boat": material, "boat_kg": BOAT_KG[material], "cad": canoes * days * 55})


@function_tool
def lookup_entry_quota(entry_point: str, date: str) -> str:
    """Remaining entry permits at an entry point on a date."""
    return json.dumps({"entry_point": entry_point, "date": date, "remaining": 3})


@function_tool
def reserve_entry(party: str, entry_point: str, date: str, people: int) -> str:
    """Reserve an entry permit for a party."""
    return json.dumps({"reservation": f"RSV-{entry_point}-{date}-{party}", "party": party, "people": people})


@function_tool(failure_error_function=None)
def issue_trip_permit(party: str, route: str, entry: str, people: int, campsites: list[str], quote: str, reservation: str) -> str:
    """Issue the trip permit: the registry validates campsites, boats and the entry reservation."""
    info = ROUTES[route]
    for night, site in enumerate(campsites):
        date = _date(entry, night)
        if not any(site in s for s in SITES.values()):
            raise ApiError(404, {"error": "unknown_campsite", "detail": f"campsite {site} does not exist in the park register"})
        if (site, date) in RESERVED_NOW:
            raise ApiError(409, {"error": "campsite_reserved", "detail": f"campsite {site} is reserved on {date}"})
    _, material, paddlers, _ = quote.split("-")
    if int(paddlers) != people:
        raise ApiError(422, {"error": "rental_mismatch", "detail": f"rental {quote} covers {paddlers} paddlers; party {party} has {people}"})
    if max(info["portages_m"]) > 2000 and material != "KEV":
        raise ApiError(422, {"error": "portage_weight", "detail": f"route {route} has a {max(info['portages_m'])} m portage; rental {quote} is not a lightweight canoe"})
    if not reservation.endswith(party):
        raise ApiError(409, {"error": "reservation_party", "detail": f"entry reservation {reservation} is not held by party {party}"})
    return json.dumps({"permit": f"TP-{party}-{route}", "campsites": campsites})


def record(inp_id: str, out: Path, base_url: str) -> None:
    r = INPUTS[inp_id]
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0))
    clerk = Agent(name="permit_clerk", instructions="You are the park permit clerk. Example: party P-2210 at EP-25. Check the quota, then reserve.",
                  tools=[lookup_entry_quota, reserve_entry], model=model)
    planner = Agent(name="trip_planner", instructions="You plan canoe portage trips night by night and issue the trip permit.",
                    tools=[get_route_segments, check_campsite, quote_canoe_rental,
                           clerk.as_tool(tool_name="permit_clerk", tool_description="Reserve an entry permit for a party."),
                           issue_trip_permit], model=model)
    desk = Agent(name="front_desk", instructions="You are the outfitter's front desk: hand trip requests to the trip planner.",
                 handoffs=[planner], model=model)
    proc = TrajdebugProcessor(path=str(out), name=NAME, task=f"plan and permit trip for {r['party']}")
    set_trace_processors([proc])
    try:
        Runner.run_sync(desk, json.dumps(r), run_config=RunConfig(workflow_name=NAME), max_turns=20)
    except UserError as exc:
        if not isinstance(exc.__cause__, ApiError):
            raise
    finally:
        set_trace_processors([])
