"""Wildfire crew-staging agent (OTLP): stages hand crews for an incident and orders their transport.

Reads the incident, searches the dispatch zone's available crews per crew type, reads each crew's roster,
the fire weather, then the model picks the staging area and crews; a logistics sub-agent (its own model
turn) books the crew camp; the model writes the crew briefing; the agent checks the manifest and the
staging area's safety itself, then places the resource order and orders transport.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.heldout.suite_l import otlp_route
from benchmarks.heldout.suite_l.kit import Case, active, openai_client
from benchmarks.heldout.suite_l.otlp_route import span, traced


AGENT = "crew-staging"
ROUTE = "otlp"
DOMAIN = "wildfire crew staging"

INCIDENTS = {
    "CA-SHF-004211": {
        "name": "Bear Creek Fire",
        "zone": "NOPS",
        "candidates": ["Big Meadow", "Pine Flat", "Hayfork Airport"],
        "closures": ["FR-24 (Pine Flat road)"],
        "upwind_of": {"SW": "Hayfork Airport", "NE": "Big Meadow"},
    },
    "CA-STF-002987": {
        "name": "Rim Ridge Fire",
        "zone": "SOPS",
        "candidates": ["Big Meadows", "Crane Flat", "Mather Station"],
        "closures": [],
        "upwind_of": {"SW": "Mather Station", "NE": "Crane Flat"},
    },
    "OR-UMF-000734": {
        "name": "Tollgate Fire",
        "zone": "NWCC",
        "candidates": ["Spout Springs", "Elgin Yard"],
        "closures": [],
        "upwind_of": {"SW": "Elgin Yard", "NE": "Spout Springs"},
    },
}
WIND = {"CA-SHF-004211": "NE", "CA-STF-002987": "SW", "OR-UMF-000734": "NE"}
ACCESS = {
    "Pine Flat": "FR-24",
    "Big Meadow": "SR-3",
    "Hayfork Airport": "SR-3",
    "Big Meadows": "SR-120",
    "Crane Flat": "SR-120",
    "Mather Station": "Evergreen Rd",
    "Spout Springs": "OR-204",
    "Elgin Yard": "OR-82",
}
CREWS = [
    {"crew_id": "Redding Hotshots", "type": "T1", "zone": "NOPS", "persons": 20},
    {"crew_id": "Trinity IHC", "type": "T1", "zone": "NOPS", "persons": 20},
    {"crew_id": "Tahoe Hotshots", "type": "T1", "zone": "NOPS", "persons": 20},
    {"crew_id": "Shasta Lake 7", "type": "T2IA", "zone": "NOPS", "persons": 20},
    {"crew_id": "Weaverville 2", "type": "T2IA", "zone": "NOPS", "persons": 18},
    {"crew_id": "Arrowhead IHC", "type": "T1", "zone": "SOPS", "persons": 20},
    {"crew_id": "Fulton IHC", "type": "T1", "zone": "SOPS", "persons": 20},
    {"crew_id": "Sonora 4", "type": "T2IA", "zone": "SOPS", "persons": 20},
    {"crew_id": "Mariposa 1", "type": "T2IA", "zone": "SOPS", "persons": 16},
    {"crew_id": "La Grande IHC", "type": "T1", "zone": "NWCC", "persons": 20},
    {"crew_id": "Union 3", "type": "T2IA", "zone": "NWCC", "persons": 20},
    {"crew_id": "Baker River 5", "type": "T2IA", "zone": "NWCC", "persons": 18},
]
_CAMPS: dict[str, str] = {}


@traced("TOOL")
def get_incident(incident_id: str) -> dict[str, Any]:
    inc = INCIDENTS[incident_id]
    return {"incident_id": incident_id, **{k: v for k, v in inc.items() if k != "upwind_of"}}


@traced("RETRIEVER")
def search_available_crews(zone: str, crew_type: str) -> list[dict[str, Any]]:
    hits = [c for c in CREWS if c["type"] == crew_type]
    # ranked by zone match, then by the dispatch priority order
    hits.sort(key=lambda c: (c["zone"] != zone, CREWS.index(c)))
    if active("wildfire.zone_boost"):
        hits.sort(key=lambda c: c["zone"] == zone)
    return [
        {"crew_id": c["crew_id"], "type": c["type"], "zone": c["zone"], "status": "available"}
        for c in hits[:3]
    ]


@traced("TOOL")
def get_crew_roster(crew_id: str) -> dict[str, Any]:
    crew = next(c for c in CREWS if c["crew_id"] == crew_id)
    members = [f"{crew_id.split()[0][:3].upper()}-{n:02d}" for n in range(1, crew["persons"] + 1)]
    if active("wildfire.roster_page") and crew["type"] == "T1":
        members = members[:15]
    return {"crew_id": crew_id, "members": members, "count": len(members)}


@traced("TOOL")
def fetch_fire_weather(incident_id: str, date: str) -> dict[str, Any]:
    if active("wildfire.weather_issue"):
        return {
            "incident_id": incident_id,
            "issued": "previous afternoon",
            "wind_from": "SW",
            "wind_mph": 6,
            "red_flag": False,
        }
    wind = WIND[incident_id]
    return {
        "incident_id": incident_id,
        "issued": f"{date} 06:00",
        "wind_from": wind,
        "wind_mph": 22 if wind == "NE" else 8,
        "red_flag": wind == "NE",
    }


@traced("TOOL")
def book_camp(staging_area: str, headcount: int) -> dict[str, Any]:
    booking = f"CB-{len(_CAMPS) + 4100}"
    _CAMPS[booking] = staging_area
    return {"booking": booking, "staging_area": staging_area, "headcount": headcount, "status": "booked"}


@traced("TOOL")
def fetch_spread_projection(incident_id: str) -> dict[str, Any]:
    inc = INCIDENTS[incident_id]
    downwind = inc["upwind_of"]["SW" if WIND[incident_id] == "NE" else "NE"]
    return {"incident_id": incident_id, "hours": 12, "areas_at_risk": [downwind]}


@traced("CHAIN")
def check_manifest(rosters: list[dict[str, Any]], crews: list[dict[str, Any]]) -> dict[str, Any]:
    listed = sum(r["count"] for r in rosters)
    declared = sum(next(c for c in CREWS if c["crew_id"] == x["crew_id"])["persons"] for x in crews)
    if listed != declared:
        raise ValueError(
            f"manifest lists {listed} firefighters, the crews' resource records declare {declared}"
        )
    return {"persons": listed}


@traced("CHAIN")
def check_staging_safety(incident_id: str, staging_area: str) -> dict[str, Any]:
    projection = fetch_spread_projection(incident_id)
    if staging_area in projection["areas_at_risk"]:
        raise ValueError(
            f"staging area {staging_area} lies inside the {projection['hours']} h fire spread projection"
        )
    return {"staging_area": staging_area, "safe": True}


@traced("TOOL")
def submit_resource_order(incident_id: str, crews: list[dict[str, Any]]) -> dict[str, Any]:
    zone = INCIDENTS[incident_id]["zone"]
    for x in crews:
        crew = next(c for c in CREWS if c["crew_id"] == x["crew_id"])
        if crew["zone"] != zone:
            raise ValueError(
                f"IROC 409: {crew['crew_id']} is a {crew['zone']} resource; {incident_id} orders from {zone} without a cross-zone agreement"
            )
    return {"order": f"O-{incident_id[-4:]}-{len(crews)}", "status": "placed"}


@traced("TOOL")
def order_transport(
    staging_area: str, camp_booking: str, headcount: int, closures: list[str]
) -> dict[str, Any]:
    road = ACCESS[staging_area]
    if any(c.startswith(road) for c in closures):
        raise ValueError(
            f"transport desk 422: no open road to {staging_area} ({road} is closed); buses cannot be dispatched"
        )
    if _CAMPS.get(camp_booking) != staging_area:
        raise ValueError(
            f"transport desk 409: camp booking {camp_booking} is at {_CAMPS.get(camp_booking)}, buses are ordered to {staging_area}"
        )
    return {"transport": f"T-{headcount}", "buses": -(-headcount // 40), "status": "dispatched"}


PLAN_SYS = "You are the incident's crew-staging planner. Pick a staging area upwind and reachable, and the crews. Answer JSON {staging_area, crews:[{crew_id, type}]}."
CAMP_SYS = "You are the logistics sub-agent. Name the camp to book for the staging area. Answer JSON {staging_area, headcount}."
BRIEF_SYS = "You write the crew briefing for the staging area."


def policy(request: Any) -> str:
    messages = request.body["messages"]
    system, user = messages[0]["content"], messages[-1]["content"]
    if system == PLAN_SYS:
        brief = json.loads(user)
        inc = INCIDENTS[brief["incident"]["incident_id"]]
        area = inc["upwind_of"][brief["weather"]["wind_from"]]
        if active("wildfire.shortest_drive") and "Pine Flat" in inc["candidates"]:
            area = "Pine Flat"
        crews = [
            {"crew_id": c["crew_id"], "type": c["type"]}
            for t, n in brief["needed"].items()
            for c in brief["available"][t][:n]
        ]
        return json.dumps({"staging_area": area, "crews": crews})
    if system == CAMP_SYS:
        task = json.loads(user)
        area = task["staging_area"]
        if active("wildfire.camp_name") and area == "Big Meadow":
            area = "Big Meadows"
        return json.dumps({"staging_area": area, "headcount": task["headcount"]})
    if system == BRIEF_SYS:
        plan = json.loads(user)
        return f"Crews {', '.join(c['crew_id'] for c in plan['crews'])} report to {plan['staging_area']} (camp {plan['camp']}) at 06:00."
    return "Unsupported request."


def _agent(client: Any, req: dict[str, Any]) -> None:
    with span("crew-staging", "AGENT", req):
        incident = get_incident(req["incident"])
        available = {t: search_available_crews(incident["zone"], t) for t in req["needed"]}
        weather = fetch_fire_weather(req["incident"], req["date"])
        brief = {"incident": incident, "needed": req["needed"], "available": available, "weather": weather}
        plan = json.loads(otlp_route.chat(client, "plan_staging", PLAN_SYS, json.dumps(brief)))
        rosters = [get_crew_roster(c["crew_id"]) for c in plan["crews"]]
        headcount = sum(r["count"] for r in rosters)
        with span(
            "logistics", "AGENT", {"staging_area": plan["staging_area"], "headcount": headcount}
        ) as sub:
            camp = json.loads(
                otlp_route.chat(
                    client,
                    "plan_camp",
                    CAMP_SYS,
                    json.dumps({"staging_area": plan["staging_area"], "headcount": headcount}),
                )
            )
            booking = book_camp(camp["staging_area"], camp["headcount"])
            sub.output = booking
        otlp_route.chat(client, "brief_crews", BRIEF_SYS, json.dumps({**plan, "camp": booking["booking"]}))
        check_manifest(rosters, plan["crews"])
        check_staging_safety(req["incident"], plan["staging_area"])
        submit_resource_order(req["incident"], plan["crews"])
        order_transport(plan["staging_area"], booking["booking"], headcount, incident["closures"])


def record(server: Any, path: Path, inp: dict[str, Any]) -> None:
    """Record one run of the agent on ``inp`` into ``path`` (a failure is recorded, not raised)."""
    client = openai_client(server)
    server.use(policy)
    otlp_route.begin()
    try:
        _agent(client, inp)
    except ValueError:
        pass
    otlp_route.write(path)


def _req(incident: str, date: str, **needed: int) -> dict[str, Any]:
    return {"incident": incident, "date": date, "needed": needed}


CASES = [
    Case(
        "wildfire_01",
        "wildfire.zone_boost",
        "wrong_retrieval",
        "search_available_crews",
        '[{"crew_id": "Redding Hotshots"',
        _req("CA-STF-002987", "2026-08-11", T1=1, T2IA=2),
    ),
    Case(
        "wildfire_02",
        "wildfire.weather_issue",
        "stale_data",
        "fetch_fire_weather",
        "previous afternoon",
        _req("CA-SHF-004211", "2026-08-12", T1=2, T2IA=1),
    ),
    Case(
        "wildfire_03",
        "wildfire.shortest_drive",
        "plan_error",
        "ChatCompletion",
        "Pine Flat",
        _req("CA-SHF-004211", "2026-08-13", T1=1, T2IA=2),
    ),
    Case(
        "wildfire_04",
        "wildfire.roster_page",
        "truncated_result",
        "get_crew_roster",
        '"count": 15',
        _req("OR-UMF-000734", "2026-08-14", T1=1, T2IA=1),
    ),
    Case(
        "wildfire_05",
        "wildfire.camp_name",
        "subagent_wrong_entity",
        "ChatCompletion",
        "Big Meadows",
        _req("CA-SHF-004211", "2026-08-15", T1=2, T2IA=2),
    ),
]
REFS = [
    _req("CA-STF-002987", "2026-09-01", T1=2, T2IA=1),
    _req("OR-UMF-000734", "2026-09-02", T1=1, T2IA=2),
    _req("CA-SHF-004211", "2026-09-03", T1=3, T2IA=1),
    _req("CA-STF-002987", "2026-09-04", T1=1, T2IA=1),
]
