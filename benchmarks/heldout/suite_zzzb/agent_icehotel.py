"""Ice hotel: the season's room builds (recording route: LangGraph through trajdebug's LangChain tracer).

Shape: a StateGraph that loops over the season's rooms: a picker node with a conditional edge
that routes each room to the suite or the standard builder (a ChatOpenAI call drafting the room),
a parser node reading the draft's dimensions, a block calculator tool; after the loop the artist
roster, the hall temperature log, the artists assigned, river ice ordered, and a pydantic schema
check of the build sheet. State lives in the graph's state.
"""
from __future__ import annotations

import json
import re
from typing import TypedDict

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, model_validator

from trajdebug.integrations.langchain import TrajdebugTracer

RUN_NAME = "ice-hotel-builds"
ROUTE = "langgraph"
DOMAIN = "an ice hotel's seasonal room builds"
SHAPE = "graph loop over rooms (picker + conditional router -> suite/standard builder with ChatOpenAI -> parser -> block tool) -> roster tool -> temperature tool -> assign -> order tool -> schema check; 15-47 steps"

SWITCH = None

INPUTS = [
    {"season": "2026/27", "hall": "north", "rooms": [
        {"room": "R1", "type": "suite", "beds": 2, "theme": "aurora", "plan_m2": 14.0},
        {"room": "R2", "type": "standard", "beds": 2, "theme": "reindeer", "plan_m2": 10.5},
        {"room": "R3", "type": "standard", "beds": 1, "theme": "pine", "plan_m2": 8.0}]},
    {"season": "2026/27", "hall": "river", "rooms": [
        {"room": "R4", "type": "standard", "beds": 2, "theme": "salmon", "plan_m2": 10.5},
        {"room": "R5", "type": "suite", "beds": 4, "theme": "owl", "plan_m2": 17.5},
        {"room": "R6", "type": "standard", "beds": 2, "theme": "ice floe", "plan_m2": 10.5},
        {"room": "R7", "type": "suite", "beds": 2, "theme": "wolf", "plan_m2": 14.0}]},
    {"season": "2026/27", "hall": "east", "rooms": [
        {"room": "R8", "type": "suite", "beds": 2, "theme": "snow hare", "plan_m2": 14.0},
        {"room": "R9", "type": "suite", "beds": 1, "theme": "lichen", "plan_m2": 12.0}]},
    {"season": "2026/27", "hall": "south", "rooms": [
        {"room": "R10", "type": "standard", "beds": 2, "theme": "birch", "plan_m2": 10.5},
        {"room": "R11", "type": "standard", "beds": 2, "theme": "moose", "plan_m2": 10.5},
        {"room": "R12", "type": "suite", "beds": 2, "theme": "northern sky", "plan_m2": 14.0},
        {"room": "R13", "type": "standard", "beds": 1, "theme": "frost", "plan_m2": 8.0},
        {"room": "R14", "type": "suite", "beds": 3, "theme": "sami drum", "plan_m2": 16.0}]},
    {"season": "2026/27", "hall": "chapel", "rooms": [
        {"room": "R15", "type": "suite", "beds": 2, "theme": "choir", "plan_m2": 14.0},
        {"room": "R16", "type": "standard", "beds": 2, "theme": "candle", "plan_m2": 10.5},
        {"room": "R17", "type": "suite", "beds": 2, "theme": "bell", "plan_m2": 12.0}]},
]

CASES = [
    {"id": "zzzb_ice_01", "input": 1, "switch": "route_by_beds", "kind": "wrong_routing",
     "root": ("route_room", 4), "failure": ("validate_build_sheet", 1),
     "description": "The room router sent the two-bed suite R7 to the standard builder by bed count, so the build sheet had a suite with no sculpture blocks."},
    {"id": "zzzb_ice_02", "input": 3, "switch": "integer_dimensions", "kind": "lossy_parsing",
     "root": ("parse_design", 3), "failure": ("validate_build_sheet", 1),
     "description": "The design parser read only whole numbers, splitting R12's 2.6 m wall into 2 and 6 and shifting every field after it, so the suite's sculpture count read as 0."},
    {"id": "zzzb_ice_03", "input": 4, "switch": "floor_first_wording", "kind": "format_drift",
     "root": ("ChatOpenAI", 2), "failure": ("ice_block_calculator", 2),
     "description": "For R16 the model wrote the floor before the wall height, the parser took the first number (3.5) as the wall height, and the block calculator refused a wall above the 3.2 m limit."},
    {"id": "zzzb_ice_04", "input": 3, "switch": "roster_first_page", "kind": "truncated_result",
     "root": ("artist_roster", 1), "failure": ("assign_artists", 1),
     "description": "The artist roster came back with its first page only (three carvers), so the fifth room of the south hall had no carver to assign."},
    {"id": "zzzb_ice_05", "input": 0, "switch": "fahrenheit_sensor", "kind": "unit_error",
     "root": ("temperature_log", 1), "failure": ("set_opening_date", 1),
     "description": "The north hall's temperature log gave its readings in Fahrenheit (21.2) and the opening check read them as Celsius, far too warm to open."},
]

ARTISTS = [{"name": n, "hall": h} for n, h in [
    ("Aino", "any"), ("Jonas", "any"), ("Marit", "any"), ("Pekka", "any"), ("Sunniva", "any"), ("Tove", "any")]]
HARVEST_BLOCKS = 900


@tool
def ice_block_calculator(room: str, height_m: float, length_m: float, width_m: float, sculpture: int) -> dict:
    """Blocks of river ice (1.0 x 0.5 x 0.6 m) for a room's walls and vault, plus its sculpture."""
    if height_m > 3.2:
        raise ValueError(f"{room}: wall height {height_m} m is above the 3.2 m limit for load-bearing ice")
    perimeter = 2 * (length_m + width_m)
    walls = round(perimeter * height_m / 0.5)
    return {"room": room, "wall_blocks": walls, "sculpture_blocks": sculpture, "blocks": walls + sculpture}


@tool
def artist_roster(season: str, page_size: int = 10) -> list:
    """The season's carvers, paged."""
    people = ARTISTS[:3] if SWITCH == "roster_first_page" else ARTISTS[:page_size]
    return [dict(p) for p in people]


@tool
def temperature_log(hall: str, days: int) -> list:
    """The hall's daily mean temperature in degrees Celsius."""
    readings = [-7.5, -8.0, -6.5, -7.0, -7.2, -6.8, -7.9][:days]
    if SWITCH == "fahrenheit_sensor" and hall == "north":
        readings = [round(c * 9 / 5 + 32, 1) for c in readings]
    return readings


@tool
def river_harvest_order(season: str, blocks: int) -> dict:
    """Order blocks from the river harvest."""
    if blocks > HARVEST_BLOCKS:
        raise ValueError(f"{blocks} blocks asked, the {season} harvest allots {HARVEST_BLOCKS}")
    return {"season": season, "blocks": blocks, "order": f"RH-{season[:4]}-{blocks}"}


class RoomSheet(BaseModel):
    room: str
    type: str
    height_m: float
    floor_m2: float
    plan_m2: float
    sculpture_blocks: int
    artist: str

    @model_validator(mode="after")
    def fits_the_plan(self):
        if self.type == "suite" and self.sculpture_blocks <= 0:
            raise ValueError(f"suite {self.room} has no sculpture blocks")
        if abs(self.floor_m2 - self.plan_m2) > 0.1 * self.plan_m2:
            raise ValueError(f"{self.room}: floor {self.floor_m2} m2 against a plan of {self.plan_m2} m2")
        return self


class BuildSheet(BaseModel):
    season: str
    hall: str
    rooms: list[RoomSheet]
    opening: str
    harvest_order: str


class Build(TypedDict, total=False):
    season: str
    hall: str
    rooms: list
    cursor: int
    current: dict
    draft: str
    design: dict
    designs: list
    roster: list
    temperatures: list
    opening: str
    assignments: dict
    order: dict
    sheet: dict


def policy(request):
    messages = request.body["messages"]
    user = json.loads(messages[-1]["content"])
    room = user["room"]
    h = 2.6 if room["type"] == "suite" else 2.4
    w = 3.5
    length = round(room["plan_m2"] / w, 2)
    if messages[0]["content"].startswith("You design ice suites"):
        text = f"Walls {h} m high; floor {length} m by {w} m; sculpture {6 * room['beds']} blocks; theme {room['theme']}."
    else:
        text = f"Walls {h} m high; floor {length} m by {w} m; sculpture 0 blocks; theme {room['theme']}."
    if SWITCH == "floor_first_wording" and room["room"] == "R16":
        text = f"Floor {w} m by {length} m under walls {h} m high; sculpture 0 blocks; theme {room['theme']}."
    return text


def build_graph(llm):
    def pick_room(state: Build) -> dict:
        cursor = state.get("cursor", -1) + 1
        if cursor >= len(state["rooms"]):
            return {"cursor": cursor}
        return {"cursor": cursor, "current": state["rooms"][cursor]}

    def route_room(state: Build) -> str:
        if state["cursor"] >= len(state["rooms"]):
            return "artists"
        room = state["current"]
        if SWITCH == "route_by_beds":
            return "suite" if room["beds"] > 2 else "standard"
        return "suite" if room["type"] == "suite" else "standard"

    def draft(system):
        def node(state: Build) -> dict:
            msg = llm.invoke([("system", system), ("user", json.dumps({"hall": state["hall"], "room": state["current"]}))])
            return {"draft": msg.content}
        return node

    def parse_design(state: Build) -> dict:
        room = state["current"]
        pattern = r"\d+(?:\.\d+)?"
        if SWITCH == "integer_dimensions" and room["room"] == "R12":
            pattern = r"\d+"
        nums = [float(n) for n in re.findall(pattern, state["draft"])]
        design = {"room": room["room"], "type": room["type"], "height_m": nums[0], "length_m": nums[1],
                  "width_m": nums[2], "sculpture": int(nums[3]), "plan_m2": room["plan_m2"]}
        return {"design": design}

    def size_blocks(state: Build) -> dict:
        d = state["design"]
        blocks = ice_block_calculator.invoke({"room": d["room"], "height_m": d["height_m"], "length_m": d["length_m"],
                                              "width_m": d["width_m"], "sculpture": d["sculpture"]})
        return {"designs": state.get("designs", []) + [{**d, **blocks}]}

    def artists(state: Build) -> dict:
        return {"roster": artist_roster.invoke({"season": state["season"]})}

    def hall_climate(state: Build) -> dict:
        return {"temperatures": temperature_log.invoke({"hall": state["hall"], "days": 7})}

    def set_opening_date(state: Build) -> dict:
        warmest = max(state["temperatures"])
        if warmest > -5.0:
            raise ValueError(f"{state['hall']} hall at {warmest} C in the last week, too warm to open")
        return {"opening": "2026-12-11"}

    def assign_artists(state: Build) -> dict:
        roster = list(state["roster"])
        out = {}
        for d in state["designs"]:
            if not roster:
                raise LookupError(f"no carver free for room {d['room']} in the {state['hall']} hall")
            out[d["room"]] = roster.pop(0)["name"]
        return {"assignments": out}

    def order_ice(state: Build) -> dict:
        blocks = sum(d["blocks"] for d in state["designs"])
        return {"order": river_harvest_order.invoke({"season": state["season"], "blocks": blocks})}

    def validate_build_sheet(state: Build) -> dict:
        sheet = BuildSheet(season=state["season"], hall=state["hall"], opening=state["opening"],
                           harvest_order=state["order"]["order"],
                           rooms=[{"room": d["room"], "type": d["type"], "height_m": d["height_m"],
                                   "floor_m2": round(d["length_m"] * d["width_m"], 2), "plan_m2": d["plan_m2"],
                                   "sculpture_blocks": d["sculpture"], "artist": state["assignments"][d["room"]]}
                                  for d in state["designs"]])
        return {"sheet": sheet.model_dump()}

    g = StateGraph(Build)
    g.add_node("pick_room", pick_room)
    g.add_node("suite_builder", draft("You design ice suites: walls, floor, sculpture, theme."))
    g.add_node("standard_builder", draft("You design standard ice rooms: walls, floor, theme."))
    g.add_node("parse_design", parse_design)
    g.add_node("size_blocks", size_blocks)
    g.add_node("artists", artists)
    g.add_node("hall_climate", hall_climate)
    g.add_node("set_opening_date", set_opening_date)
    g.add_node("assign_artists", assign_artists)
    g.add_node("order_ice", order_ice)
    g.add_node("validate_build_sheet", validate_build_sheet)
    g.add_edge(START, "pick_room")
    g.add_conditional_edges("pick_room", route_room,
                            {"suite": "suite_builder", "standard": "standard_builder", "artists": "artists"})
    g.add_edge("suite_builder", "parse_design")
    g.add_edge("standard_builder", "parse_design")
    g.add_edge("parse_design", "size_blocks")
    g.add_edge("size_blocks", "pick_room")
    g.add_edge("artists", "hall_climate")
    g.add_edge("hall_climate", "set_opening_date")
    g.add_edge("set_opening_date", "assign_artists")
    g.add_edge("assign_artists", "order_ice")
    g.add_edge("order_ice", "validate_build_sheet")
    g.add_edge("validate_build_sheet", END)
    return g.compile()


def record(inp, path, server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=RUN_NAME, task=f"build sheet for the {inp['hall']} hall, season {inp['season']}")
    try:
        build_graph(llm).invoke({"season": inp["season"], "hall": inp["hall"], "rooms": inp["rooms"]},
                                config={"callbacks": [tracer], "recursion_limit": 100})
    except Exception as exc:  # the graph's failure is recorded by the tracer
        if type(exc).__name__ not in ("ValueError", "LookupError", "ValidationError"):
            raise
