"""Acrobat troupe's touring schedule: a LangGraph StateGraph that loops over the tour's cities.

Shape: load_tour -> plan_legs (ChatOpenAI writes the legs as JSON) -> read_legs (parser node) -> a
conditional edge routes each leg to venue_rigging_check (indoor, tool venue_rigging) or
open_air_permit (outdoor, tool site_permit) -> book_transport (tool book_truck) -> back to the router;
then compile_itinerary (ChatOpenAI) -> validate_itinerary (the production manager's checks, raises).
"""

from __future__ import annotations

import datetime as dt
import json
import operator
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "acrobat-touring"
ROUTE = "langgraph"
DOMAIN = "acrobat troupe's touring schedule"
SHAPE = "StateGraph loop over 4-9 cities, 27-52 steps: llm plan -> parser node -> (router -> rigging|permit tool node -> transport tool node) per city -> llm summary -> validator node raises"
SWITCH = None

INPUTS = [
    {"troupe": "Cirque Halyard", "start": "2027-03-14", "gap_days": 3, "cities": [
        {"city": "Lyon", "venue": "Halle Tony Garnier", "setting": "indoor"},
        {"city": "Ghent", "venue": "Citadelpark field", "setting": "outdoor"},
        {"city": "Utrecht", "venue": "TivoliVredenburg", "setting": "indoor"},
        {"city": "Bremen", "venue": "Buergerweide", "setting": "outdoor"},
        {"city": "Aarhus", "venue": "Train", "setting": "indoor"}]},
    {"troupe": "Cirque Halyard", "start": "2027-05-02", "gap_days": 2, "cities": [
        {"city": "Porto", "venue": "Coliseu Porto", "setting": "indoor"},
        {"city": "Braga", "venue": "Parque da Ponte", "setting": "outdoor"},
        {"city": "Vigo", "venue": "Auditorio Mar de Vigo", "setting": "indoor"},
        {"city": "Leon", "venue": "Palacio de Exposiciones", "setting": "indoor"}]},
    {"troupe": "Cirque Halyard", "start": "2027-06-20", "gap_days": 4, "cities": [
        {"city": "Graz", "venue": "Stadthalle Graz", "setting": "indoor"},
        {"city": "Ljubljana", "venue": "Tivoli Park meadow", "setting": "outdoor"},
        {"city": "Zagreb", "venue": "Dom sportova", "setting": "indoor"},
        {"city": "Pecs", "venue": "Zsolnay quarter yard", "setting": "outdoor"},
        {"city": "Szeged", "venue": "Pick Arena", "setting": "indoor"},
        {"city": "Timisoara", "venue": "Sala Constantin Jude", "setting": "indoor"},
        {"city": "Novi Sad", "venue": "Petrovaradin glacis", "setting": "outdoor"},
        {"city": "Belgrade", "venue": "Stark Arena", "setting": "indoor"},
        {"city": "Sofia", "venue": "Borisova Garden", "setting": "outdoor"}]},
    {"troupe": "Cirque Halyard", "start": "2027-08-07", "gap_days": 3, "cities": [
        {"city": "Galway", "venue": "South Park", "setting": "outdoor"},
        {"city": "Limerick", "venue": "University Arena", "setting": "indoor"},
        {"city": "Cork", "venue": "Live at the Marquee", "setting": "outdoor"},
        {"city": "Waterford", "venue": "WIT Arena", "setting": "indoor"}]},
    {"troupe": "Cirque Halyard", "start": "2027-09-18", "gap_days": 2, "cities": [
        {"city": "Turin", "venue": "Pala Alpitour", "setting": "indoor"},
        {"city": "Genoa", "venue": "Porto Antico square", "setting": "outdoor"},
        {"city": "Nice", "venue": "Palais Nikaia", "setting": "indoor"},
        {"city": "Marseille", "venue": "Le Dome", "setting": "indoor"},
        {"city": "Montpellier", "venue": "Sud de France Arena", "setting": "indoor"},
        {"city": "Nimes", "venue": "Jardins de la Fontaine", "setting": "outdoor"}]},
]

CASES = [
    {"id": "zzzg_acr_01", "input": 0, "switch": 1, "kind": "wrong_routing",
     "root": ("route_leg", 3), "failure": ("validate_itinerary", 1),
     "description": "The leg router sends Utrecht, an indoor hall, down the open-air permit branch, so no "
                    "rigging grid is checked for it."},
    {"id": "zzzg_acr_02", "input": 2, "switch": 2, "kind": "stale_data",
     "root": ("venue_rigging", 3), "failure": ("validate_itinerary", 1),
     "description": "The rigging register answers for Szeged's Pick Arena with last season's 7.2 m grid, "
                    "from before the roof was re-rigged to 9.5 m."},
    {"id": "zzzg_acr_03", "input": 4, "switch": 3, "kind": "off_by_one",
     "root": ("read_legs", 1), "failure": ("validate_itinerary", 1),
     "description": "The leg reader stops one leg short, so Nimes is never scheduled."},
    {"id": "zzzg_acr_04", "input": 1, "switch": 4, "kind": "format_drift",
     "root": ("ChatOpenAI", 1), "failure": ("book_truck", 3),
     "description": "The planning model writes the later legs' dates as day/month/year instead of ISO "
                    "dates, and the haulage booking cannot read 06/05/2027."},
    {"id": "zzzg_acr_05", "input": 3, "switch": 5, "kind": "tool_ignores_argument",
     "root": ("book_truck", 2), "failure": ("validate_itinerary", 1),
     "description": "The haulage booking tool ignores the date it is given for the Limerick leg and books "
                    "the truck for the tour's opening date."},
]

RIG_HEIGHT_M = 8.0
RIG_LOAD_KG = 750
GRIDS = {"Halle Tony Garnier": (11.0, 1200), "TivoliVredenburg": (9.0, 800), "Train": (8.5, 780),
         "Coliseu Porto": (10.5, 900), "Auditorio Mar de Vigo": (9.2, 850), "Palacio de Exposiciones": (12.0, 1500),
         "Stadthalle Graz": (14.0, 2000), "Dom sportova": (13.0, 1600), "Pick Arena": (9.5, 1100),
         "Sala Constantin Jude": (8.8, 760), "Stark Arena": (21.0, 4000), "University Arena": (9.0, 900), "WIT Arena": (8.2, 800),
         "Pala Alpitour": (18.0, 3000), "Palais Nikaia": (15.0, 2400), "Le Dome": (16.0, 2500),
         "Sud de France Arena": (17.0, 2600)}
OPEN_AIR = {"Citadelpark field", "Buergerweide", "Parque da Ponte", "Tivoli Park meadow", "Zsolnay quarter yard",
            "Petrovaradin glacis", "South Park", "Live at the Marquee", "Porto Antico square",
            "Jardins de la Fontaine", "Borisova Garden"}


class ItineraryRejected(Exception):
    pass


# ---------------------------------------------------------------- model policy

def policy(request):
    messages = request.body["messages"]
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("Plan"):
        req = json.loads(user)
        start = dt.date.fromisoformat(req["start"])
        legs = []
        for i, c in enumerate(req["cities"]):
            day = start + dt.timedelta(days=i * req["gap_days"])
            text = day.isoformat()
            if SWITCH == 4 and i >= 2:
                text = day.strftime("%d/%m/%Y")
            legs.append({"leg": i + 1, "city": c["city"], "venue": c["venue"], "setting": c["setting"], "date": text})
        return json.dumps({"legs": legs})
    if system.startswith("Summarise"):
        legs = json.loads(user)
        return "Tour: " + "; ".join(f"{leg['city']} {leg['date']}" for leg in legs["legs"]) + "."
    return "No answer."


# ---------------------------------------------------------------- tools

@tool
def venue_rigging(venue: str, city: str) -> dict:
    """Rigging grid height and working load of an indoor venue, from the rigging register."""
    height, load = GRIDS[venue]
    if SWITCH == 2 and venue == "Pick Arena":
        height = 7.2
    return {"venue": venue, "city": city, "grid_height_m": height, "load_kg": load}


@tool
def site_permit(venue: str, city: str, date: str) -> dict:
    """Open-air performance permit for a site on a date."""
    if venue not in OPEN_AIR:
        return {"venue": venue, "city": city, "permit_id": None, "note": "no open-air site registered"}
    return {"venue": venue, "city": city, "permit_id": f"OA-{city[:3].upper()}-{date.replace('-', '')}",
            "mast_height_m": 12.0}


@tool
def book_truck(from_city: str, to_city: str, date: str, opening: str) -> dict:
    """Book the rigging truck so it reaches the city the day before the show."""
    show = dt.date.fromisoformat(date)
    if SWITCH == 5 and to_city == "Limerick":
        show = dt.date.fromisoformat(opening)
    arrive = show - dt.timedelta(days=1)
    return {"from": from_city, "to": to_city, "arrive": arrive.isoformat(), "truck": "HX-2"}


# ---------------------------------------------------------------- graph

class Tour(TypedDict, total=False):
    request: dict
    plan_text: str
    legs: list
    cursor: int
    checks: Annotated[list, operator.add]
    transport: Annotated[list, operator.add]
    summary: str


def build(llm):
    def load_tour(state: Tour) -> dict:
        req = state["request"]
        return {"cursor": 0, "request": {**req, "cities": [dict(c) for c in req["cities"]]}}

    def plan_legs(state: Tour) -> dict:
        reply = llm.invoke([SystemMessage("Plan the tour legs as JSON, one leg per city in order."),
                            HumanMessage(json.dumps(state["request"]))])
        return {"plan_text": reply.content}

    def read_legs(state: Tour) -> dict:
        raw = json.loads(state["plan_text"])["legs"]
        count = len(raw) - 1 if SWITCH == 3 else len(raw)
        return {"legs": [raw[i] for i in range(count)]}

    def route_leg(state: Tour) -> str:
        if state["cursor"] >= len(state["legs"]):
            return "compile_itinerary"
        leg = state["legs"][state["cursor"]]
        setting = leg["setting"]
        if SWITCH == 1 and leg["city"] == "Utrecht":
            setting = "outdoor"
        return "venue_rigging_check" if setting == "indoor" else "open_air_permit"

    def venue_rigging_check(state: Tour) -> dict:
        leg = state["legs"][state["cursor"]]
        grid = venue_rigging.invoke({"venue": leg["venue"], "city": leg["city"]})
        return {"checks": [{"leg": leg["leg"], "kind": "rigging", **grid}]}

    def open_air_permit(state: Tour) -> dict:
        leg = state["legs"][state["cursor"]]
        permit = site_permit.invoke({"venue": leg["venue"], "city": leg["city"], "date": leg["date"]})
        return {"checks": [{"leg": leg["leg"], "kind": "permit", **permit}]}

    def book_transport(state: Tour) -> dict:
        i = state["cursor"]
        leg = state["legs"][i]
        before = state["legs"][i - 1]["city"] if i else "Depot Calais"
        booking = book_truck.invoke({"from_city": before, "to_city": leg["city"], "date": leg["date"],
                                     "opening": state["request"]["start"]})
        return {"transport": [{"leg": leg["leg"], **booking}], "cursor": i + 1}

    def compile_itinerary(state: Tour) -> dict:
        reply = llm.invoke([SystemMessage("Summarise the itinerary for the company in one line."),
                            HumanMessage(json.dumps({"legs": state["legs"]}))])
        return {"summary": reply.content}

    def validate_itinerary(state: Tour) -> dict:
        req, legs = state["request"], state["legs"]
        planned = [leg["city"] for leg in legs]
        for c in req["cities"]:
            if c["city"] not in planned:
                raise ItineraryRejected(f"{c['city']} ({c['venue']}) is on the tour but has no scheduled leg")
        for leg in legs:
            checks = [c for c in state["checks"] if c["leg"] == leg["leg"]]
            if leg["setting"] == "indoor":
                grid = next((c for c in checks if c["kind"] == "rigging"), None)
                if grid is None:
                    raise ItineraryRejected(f"no rigging grid check for {leg['city']} ({leg['venue']})")
                if grid["grid_height_m"] < RIG_HEIGHT_M or grid["load_kg"] < RIG_LOAD_KG:
                    raise ItineraryRejected(f"{leg['venue']} grid {grid['grid_height_m']} m / {grid['load_kg']} kg "
                                            f"is below the {RIG_HEIGHT_M} m / {RIG_LOAD_KG} kg the aerial straps need")
            elif not any(c.get("permit_id") for c in checks):
                raise ItineraryRejected(f"no open-air permit for {leg['city']} ({leg['venue']})")
            truck = next(t for t in state["transport"] if t["leg"] == leg["leg"])
            due = (dt.date.fromisoformat(leg["date"]) - dt.timedelta(days=1)).isoformat()
            if truck["arrive"] != due:
                raise ItineraryRejected(f"truck reaches {leg['city']} on {truck['arrive']}; the show is on "
                                        f"{leg['date']}, so it is due {due}")
        return {"summary": state["summary"] + " Approved."}

    g = StateGraph(Tour)
    for fn in (load_tour, plan_legs, read_legs, venue_rigging_check, open_air_permit, book_transport,
               compile_itinerary, validate_itinerary):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "load_tour")
    g.add_edge("load_tour", "plan_legs")
    g.add_edge("plan_legs", "read_legs")
    targets = ["venue_rigging_check", "open_air_permit", "compile_itinerary"]
    g.add_conditional_edges("read_legs", route_leg, targets)
    g.add_conditional_edges("book_transport", route_leg, targets)
    g.add_edge("venue_rigging_check", "book_transport")
    g.add_edge("open_air_permit", "book_transport")
    g.add_edge("compile_itinerary", "validate_itinerary")
    g.add_edge("validate_itinerary", END)
    return g.compile()


def record(inp: dict, path: str, server) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"schedule the tour from {inp['start']}")
    build(llm).invoke({"request": inp, "checks": [], "transport": []},
                      config={"callbacks": [tracer], "recursion_limit": 100})
