"""Ready-mix pour desk: plans and books a concrete pour (a LangGraph graph, recorded by TrajdebugTracer).

A contractor's pour request (element, volume, mix, date, start, pump boom) is parsed, the mix design is
retrieved, then a model with tools checks the plant's capacity, the trucks free that day and the hourly
weather (three calls at once), books the pump and the trucks, and answers the dispatch schedule as JSON.
A parser node reads the schedule and the dispatcher's QA node checks it before it goes to the plant.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import ToolMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from suite_agents._common import system_of


NAME = "rmx-pour-desk"
ROUTE = "langgraph"
DOMAIN = "ready-mix concrete pour booking and truck dispatch"
SHAPE = "intake node -> mix-design retriever node -> model/tool loop (three parallel lookups, then pump and truck bookings) -> JSON parser node -> dispatcher QA node"

SWITCH: str | None = None


def switched(name: str) -> bool:
    """Whether the case ``name`` is on (the only place SWITCH is read)."""
    return SWITCH == name


TODAY = "2026-03-10"  # the desk's working day: every request below came in today
M3_PER_LOAD = 8.0
YD3_TO_M3 = 0.764555

MIXES = {
    "C32/40-S3": {"set_hours_20c": 4.5, "min_place_c": 5, "accelerator": False, "max_slump_mm": 120},
    "C32/40-S3-ACC": {"set_hours_20c": 3.0, "min_place_c": 0, "accelerator": True, "max_slump_mm": 120},
    "C40/50-S4": {"set_hours_20c": 4.0, "min_place_c": 5, "accelerator": False, "max_slump_mm": 160},
    "C25/30-S3": {"set_hours_20c": 5.0, "min_place_c": 5, "accelerator": False, "max_slump_mm": 120},
    "C30/37-S4-PT": {"set_hours_20c": 4.0, "min_place_c": 5, "accelerator": False, "max_slump_mm": 150},
}
PLANTS = {"North": {"daily_m3": 240}, "Quay": {"daily_m3": 200}}
PLANT_BOOKED = {("North", "2026-03-12"): 120, ("North", "2026-03-13"): 160, ("Quay", "2026-03-11"): 60,
                ("Quay", "2026-03-16"): 90, ("North", "2026-03-16"): 40}
FLEET = {
    "North": ["T-101", "T-104", "T-107", "T-110", "T-112", "T-115", "T-118", "T-121"],
    "Quay": ["T-201", "T-203", "T-206", "T-208", "T-211", "T-214", "T-217"],
}
ROUND_TRIP_MIN = {("North", "Dock St"): 70, ("North", "Mill Ln"): 55, ("Quay", "Harbour Rd"): 60, ("Quay", "Dock St"): 65}
WEATHER = {  # (site, date) -> temperature C by hour from 06:00
    ("Dock St", TODAY): [1, 2, 3, 4, 6, 7, 8, 8],
    ("Mill Ln", TODAY): [2, 2, 3, 5, 6, 7, 8, 8],
    ("Harbour Rd", TODAY): [2, 3, 4, 5, 6, 7, 7, 7],
    ("Dock St", "2026-03-12"): [8, 9, 10, 12, 13, 14, 15, 15],
    ("Dock St", "2026-03-13"): [7, 8, 10, 11, 12, 13, 13, 12],
    ("Mill Ln", "2026-03-16"): [9, 10, 11, 12, 14, 15, 15, 14],
    ("Harbour Rd", "2026-03-11"): [6, 7, 8, 10, 11, 12, 12, 11],
    ("Dock St", "2026-03-16"): [8, 9, 11, 12, 13, 14, 14, 13],
}
PUMPS = {"P-36": 36, "P-42": 42, "P-47": 47}
PUMP_RATE_M3H = 40.0

INPUTS = [
    {"key": "dock-l3", "task": "pour request: Dock St level 3 slab, 2026-03-12",
     "text": "Element: level 3 transfer slab\nSite: Dock St\nVolume: 72 m3\nMix: C40/50-S4\nPour date: 2026-03-12\nStart: 07:30\nPump boom: 42 m\nPlant: North"},
    {"key": "dock-l4", "task": "pour request: Dock St level 4 columns and walls, 2026-03-13",
     "text": "Element: level 4 core walls\nSite: Dock St\nVolume: 86 yd3\nMix: C32/40-S3\nPour date: 2026-03-13\nStart: 07:00\nPump boom: 36 m\nPlant: North"},
    {"key": "harbour-raft", "task": "pour request: Harbour Rd raft bay 2, 2026-03-11",
     "text": "Element: raft bay 2\nSite: Harbour Rd\nVolume: 64 m3\nMix: C32/40-S3\nPour date: 2026-03-11\nStart: 07:00\nPump boom: 36 m\nPlant: Quay"},
    {"key": "mill-podium", "task": "pour request: Mill Ln podium deck, 2026-03-16",
     "text": "Element: podium deck pour 1\nSite: Mill Ln\nVolume: 48 m3\nMix: C30/37-S4-PT\nPour date: 2026-03-16\nStart: 08:00\nPump boom: 47 m\nPlant: North"},
    {"key": "dock-ramp", "task": "pour request: Dock St ramp and kerbs, 2026-03-16",
     "text": "Element: car park ramp\nSite: Dock St\nVolume: 40 m3\nMix: C25/30-S3\nPour date: 2026-03-16\nStart: 07:30\nPump boom: 36 m\nPlant: Quay"},
]

CASES = [
    {
        "case": "zzzzm_pour_clock_format", "input": "mill-podium", "switch": "twelve_hour", "fault_kind": "format_drift",
        "root": {"name": "ChatOpenAI", "occurrence": 3, "kind": "llm"},
        "failure": {"name": "schedule", "occurrence": 1},
        "description": "The model's final schedule gives its times as '8:00 AM' and '9:45 AM' instead of the 24-hour 'HH:MM' the desk's schedule format uses, and the schedule node cannot read them.",
    },
    {
        "case": "zzzzm_pour_pump_date", "input": "dock-l3", "switch": "pump_on_request_date", "fault_kind": "wrong_tool_args",
        "root": {"name": "ChatOpenAI", "occurrence": 2, "kind": "llm"},
        "failure": {"name": "qa", "occurrence": 1},
        "description": "The model books pump P-42 for 2026-03-10, the day the request came in, instead of the pour date 2026-03-12, and the dispatcher's QA finds the pump booked for another day.",
    },
    {
        "case": "zzzzm_pour_forecast_today", "input": "harbour-raft", "switch": "forecast_today", "fault_kind": "tool_ignores_argument",
        "root": {"name": "weather_hourly", "occurrence": 1, "kind": "tool"},
        "failure": {"name": "qa", "occurrence": 1},
        "description": "The weather tool drops its date argument and answers today's forecast for Harbour Rd (3 C at 07:00) instead of 2026-03-11's, so QA refuses a non-accelerated mix below its 5 C placing minimum.",
    },
    {
        "case": "zzzzm_pour_cubic_yards", "input": "dock-l4", "switch": "volume_number_only", "fault_kind": "unit_error",
        "root": {"name": "intake", "occurrence": 1, "kind": "other"},
        "failure": {"name": "book_trucks", "occurrence": 1},
        "description": "Intake reads the volume '86 yd3' as 86 m3 (65.8 m3 is right), so the truck order of 96 m3 is over the North plant's remaining 80 m3 for 2026-03-13 and the booking is refused.",
    },
    {
        "case": "zzzzm_pour_first_page", "input": "dock-ramp", "switch": "one_page", "fault_kind": "truncated_result",
        "root": {"name": "truck_availability", "occurrence": 1, "kind": "tool"},
        "failure": {"name": "qa", "occurrence": 1},
        "description": "The fleet lookup returns only the first page of Quay's free trucks (5 of 7), so five trucks on a 65-minute round trip are booked and QA finds a load every 13.0 min where the pump needs one every 12.0 min.",
    },
]


class PourRejected(Exception):
    pass


# -- tools and retriever ---------------------------------------------------------------------------

@tool
def plant_capacity(plant: str, date: str) -> str:
    """Remaining ready-mix capacity of a batching plant on a date, in m3."""
    left = PLANTS[plant]["daily_m3"] - PLANT_BOOKED.get((plant, date), 0)
    return json.dumps({"plant": plant, "date": date, "remaining_m3": left})


def _fleet_page(plant: str, date: str, page: int) -> dict:
    trucks = FLEET[plant]
    return {"trucks": trucks[(page - 1) * 5: page * 5], "page": page, "pages": math.ceil(len(trucks) / 5)}


@tool
def truck_availability(plant: str, date: str) -> str:
    """Mixer trucks of a plant free on a date."""
    first = _fleet_page(plant, date, 1)
    trucks = list(first["trucks"])
    page = 1
    while page < first["pages"] and not switched("one_page"):
        page += 1
        trucks += _fleet_page(plant, date, page)["trucks"]
    return json.dumps({"plant": plant, "date": date, "trucks": trucks, "m3_per_load": M3_PER_LOAD})


@tool
def weather_hourly(site: str, date: str) -> str:
    """Hourly air temperature (C) at a site from 06:00 on a date."""
    day = TODAY if switched("forecast_today") else date
    temps = WEATHER[(site, day)]
    return json.dumps({"site": site, "date": date, "from": "06:00", "temp_c": temps})


@tool
def book_pump(pump: str, date: str, start: str, site: str) -> str:
    """Book a concrete pump for a date, start time and site."""
    return json.dumps({"booking": f"PB-{pump}-{date.replace('-', '')}", "pump": pump, "boom_m": PUMPS[pump],
                       "date": date, "start": start, "site": site, "rate_m3h": PUMP_RATE_M3H})


@tool
def book_trucks(plant: str, date: str, trucks: list[str], loads: int, first_arrival: str) -> str:
    """Book mixer trucks and the plant's batching for a pour."""
    ordered = loads * M3_PER_LOAD
    left = PLANTS[plant]["daily_m3"] - PLANT_BOOKED.get((plant, date), 0)
    if ordered > left:
        raise ValueError(f"order of {ordered:.0f} m3 exceeds {plant} plant's remaining {left} m3 on {date}")
    return json.dumps({"order": f"RMX-{plant[0]}{date[5:].replace('-', '')}-{loads:02d}", "plant": plant, "date": date,
                       "trucks": trucks, "loads": loads, "m3": ordered, "first_arrival": first_arrival})


class MixDesignRetriever(BaseRetriever):
    """The plant's register of approved mix designs."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        hits = [k for k in MIXES if k == query] or [k for k in MIXES if k.startswith(query.split("-")[0])]
        docs = []
        for k in hits:
            v = MIXES[k]
            docs.append(Document(
                page_content=f"Mix {k}: initial set {v['set_hours_20c']} h at 20 C, min placing {v['min_place_c']} C, "
                             f"accelerator {'yes' if v['accelerator'] else 'no'}, max slump {v['max_slump_mm']} mm",
                metadata={"mix": k, **v}))
        return docs


TOOLS = [plant_capacity, truck_availability, weather_hourly, book_pump, book_trucks]


# -- the graph ------------------------------------------------------------------------------------

class PourState(TypedDict, total=False):
    request: str
    pour: dict
    mix: dict
    messages: Annotated[list, add_messages]
    schedule: dict
    checks: dict


PLANNER_SYSTEM = (
    "You are the pour desk's dispatcher. Check the plant's capacity, the free trucks and the hourly weather for the "
    "pour date (all at once), then book the pump and the trucks, then answer only JSON: {\"pour_date\", \"start\", "
    "\"finish\", \"pump\", \"trucks\": [ids], \"loads\", \"interval_min\"} with times as HH:MM (24 h)."
)


def intake(state: PourState) -> dict:
    fields = dict(re.findall(r"^([A-Za-z ]+):\s*(.+)$", state["request"], re.M))
    amount, unit = re.match(r"([\d.]+)\s*(m3|yd3)", fields["Volume"]).groups()
    volume = float(amount)
    if unit == "yd3" and not switched("volume_number_only"):
        volume = round(volume * YD3_TO_M3, 1)
    return {"pour": {"element": fields["Element"], "site": fields["Site"], "volume_m3": volume, "mix": fields["Mix"],
                     "pour_date": fields["Pour date"], "start": fields["Start"], "boom_m": int(fields["Pump boom"].split()[0]),
                     "plant": fields["Plant"], "requested_on": TODAY}}


def _graph(llm: ChatOpenAI):
    retriever = MixDesignRetriever()
    model = llm.bind_tools(TOOLS)

    def mix_lookup(state: PourState) -> dict:
        docs = retriever.invoke(state["pour"]["mix"])
        return {"mix": docs[0].metadata}

    def planner(state: PourState) -> dict:
        msgs = state.get("messages") or []
        if not msgs:
            msgs = [("system", PLANNER_SYSTEM), ("user", json.dumps({"pour": state["pour"], "mix": state["mix"]}))]
            return {"messages": msgs + [model.invoke(msgs)]}
        return {"messages": [model.invoke(msgs)]}

    def schedule(state: PourState) -> dict:
        plan = JsonOutputParser().invoke(state["messages"][-1])
        start = datetime.strptime(plan["start"], "%H:%M")
        finish = datetime.strptime(plan["finish"], "%H:%M")
        return {"schedule": {**plan, "duration_min": int((finish - start).total_seconds() // 60)}}

    def qa(state: PourState) -> dict:
        pour, mix, plan = state["pour"], state["mix"], state["schedule"]
        results = {}
        for m in state["messages"]:
            if isinstance(m, ToolMessage):
                results[m.name] = json.loads(m.content)
        pump = results["book_pump"]
        if pump["date"] != pour["pour_date"]:
            raise PourRejected(f"pump {pump['pump']} booked for {pump['date']}; the pour is on {pour['pour_date']}")
        if pump["boom_m"] < pour["boom_m"]:
            raise PourRejected(f"pump {pump['pump']} boom {pump['boom_m']} m is short of the {pour['boom_m']} m asked")
        round_trip = ROUND_TRIP_MIN[(pour["plant"], pour["site"])]
        need_every = M3_PER_LOAD / pump["rate_m3h"] * 60
        every = round_trip / len(plan["trucks"])
        if every > need_every + 0.01:
            raise PourRejected(f"{len(plan['trucks'])} trucks on a {round_trip} min round trip arrive every {every:.1f} min; "
                               f"the pump needs a load every {need_every:.1f} min")
        wx = results["weather_hourly"]
        first = int(plan["start"][:2]) - 6
        hours = max(1, math.ceil(plan["duration_min"] / 60))
        coldest = min(wx["temp_c"][first:first + hours])
        if coldest < mix["min_place_c"]:
            raise PourRejected(f"forecast {coldest} C during placing at {pour['site']}; {pour['mix']} needs at least "
                               f"{mix['min_place_c']} C without accelerator")
        return {"checks": {"pump": "ok", "trucks": f"every {every:.1f} min", "coldest_c": coldest}}

    g = StateGraph(PourState)
    g.add_node("intake", intake)
    g.add_node("mix_lookup", mix_lookup)
    g.add_node("planner", planner)
    g.add_node("tools", ToolNode(TOOLS, handle_tool_errors=False))
    g.add_node("schedule", schedule)
    g.add_node("qa", qa)
    g.add_edge(START, "intake")
    g.add_edge("intake", "mix_lookup")
    g.add_edge("mix_lookup", "planner")
    g.add_conditional_edges("planner", tools_condition, {"tools": "tools", END: "schedule"})
    g.add_edge("tools", "planner")
    g.add_edge("schedule", "qa")
    g.add_edge("qa", END)
    return g.compile(name=NAME)


_app = None


def setup(env: dict) -> None:
    global _app
    llm = ChatOpenAI(model=env["server"].model, base_url=env["server"].base_url, api_key="not-needed", max_retries=0)
    _app = _graph(llm)


def record(inp: dict, dest: Path, env: dict) -> None:
    tracer = TrajdebugTracer(path=str(dest), name=NAME)
    try:
        _app.invoke({"request": inp["text"]}, config={"callbacks": [tracer], "metadata": {"task": inp["task"]}})
    except (PourRejected, ValueError):
        pass


# -- the model ------------------------------------------------------------------------------------

def _hhmm(t: datetime) -> str:
    return t.strftime("%-I:%M %p") if switched("twelve_hour") else t.strftime("%H:%M")


def brain(request) -> Any:
    messages = request.body["messages"]
    if system_of(messages) != PLANNER_SYSTEM:
        return "I only plan pours."
    data = json.loads(messages[1]["content"])
    pour = data["pour"]
    results = {}
    for m in messages:
        if m["role"] == "tool":
            c = json.loads(m["content"])
            results["booking" if "booking" in c else "order" if "order" in c else
                    "trucks" if "trucks" in c else "temp" if "temp_c" in c else "capacity"] = c
    plant, date = pour["plant"], pour["pour_date"]
    loads = math.ceil(pour["volume_m3"] * 1.05 / M3_PER_LOAD)
    if "capacity" not in results:
        return Reply(tool_calls=(
            tool_call("plant_capacity", {"plant": plant, "date": date}),
            tool_call("truck_availability", {"plant": plant, "date": date}),
            tool_call("weather_hourly", {"site": pour["site"], "date": date}),
        ))
    free = results["trucks"]["trucks"]
    pump = next(p for p, boom in sorted(PUMPS.items(), key=lambda x: x[1]) if boom >= pour["boom_m"])
    if "booking" not in results:
        pump_date = pour["requested_on"] if switched("pump_on_request_date") else date
        return Reply(tool_calls=(
            tool_call("book_pump", {"pump": pump, "date": pump_date, "start": pour["start"], "site": pour["site"]}),
            tool_call("book_trucks", {"plant": plant, "date": date, "trucks": free[:loads], "loads": loads,
                                      "first_arrival": pour["start"]}),
        ))
    start = datetime.strptime(pour["start"], "%H:%M")
    trucks = results["order"]["trucks"]
    minutes = loads * M3_PER_LOAD / PUMP_RATE_M3H * 60 + 20
    finish = start + timedelta(minutes=5 * round(minutes / 5))
    return json.dumps({"pour_date": date, "start": _hhmm(start), "finish": _hhmm(finish), "pump": pump,
                       "trucks": trucks, "loads": loads, "interval_min": round(60 * M3_PER_LOAD / PUMP_RATE_M3H)})
