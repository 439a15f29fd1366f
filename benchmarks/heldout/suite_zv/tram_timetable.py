"""Tram timetable planning: build one line's service day and publish it to the passenger information system (LangGraph)."""
from __future__ import annotations

import json
import math
import re
from datetime import date
from pathlib import Path
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case
from .kit import active

AGENT = "tram-timetable-planner"
ROUTE = "langgraph"
CAPACITY = 150
BANDS = [("early", 5, 7), ("am_peak", 7, 10), ("interpeak", 10, 16), ("pm_peak", 16, 19)]
LINES = {
    "4": {"segments_s": [240, 310, 275, 330, 225], "loads": [420, 1180, 640, 1090], "depot": "Kelvin"},
    "11": {"segments_s": [300, 280, 355, 260], "loads": [380, 1320, 700, 1240], "depot": "Kelvin"},
    "2": {"segments_s": [210, 290, 250, 305, 280], "loads": [350, 990, 560, 1020], "depot": "Parkhead"},
    "6": {"segments_s": [330, 295, 310, 345], "loads": [610, 2100, 980, 1870], "depot": "Parkhead"},
    "9": {"segments_s": [260, 240, 300], "loads": [300, 870, 450, 910], "depot": "Kelvin"},
    "15": {"segments_s": [280, 320, 265, 300, 290], "loads": [400, 1150, 620, 1130], "depot": "Parkhead"},
}
FLEET = {"Kelvin": ["T03", "T05", "T08", "T09", "T12", "T14", "T15", "T18", "T21", "T22", "T24", "T26", "T27", "T30"],
         "Parkhead": ["T31", "T33", "T34", "T36", "T38", "T40", "T41", "T43", "T44", "T47", "T48", "T50", "T52", "T55"]}
WORKSHOP = {"T07": "W-311", "T39": "W-318"}


class Day(TypedDict, total=False):
    request: str
    line: str
    service_date: str
    depot: str
    day_type: str
    pattern: dict
    ridership: dict
    segment_times: list
    forecast_text: str
    forecast: dict
    fleet: list
    cycle: dict
    band_index: int
    blocks: list
    roster: dict
    night: dict


class PublishRejected(Exception):
    pass


@tool
def get_ridership(line: str, day_type: str) -> dict:
    """Average boardings per hour by band for a line and day type (automatic passenger counters)."""
    loads = LINES[line]["loads"]
    if day_type == "sunday":
        loads = [round(x * 0.6) for x in loads]
    return {"line": line, "day_type": day_type, "bands": {b[0]: n for b, n in zip(BANDS, loads)}}


@tool
def get_segment_times(line: str) -> dict:
    """Scheduled running time of each segment of a line, in seconds."""
    return {"line": line, "segments_s": LINES[line]["segments_s"], "layover_min": 6}


@tool
def get_fleet_status(depot: str) -> dict:
    """Trams available for service at a depot."""
    trams = list(FLEET[depot])
    if active("tram-02") and depot == "Kelvin":
        trams = ["T07"] + trams[:-1]  # answered from the cached 06:00 snapshot of yesterday
    return {"depot": depot, "in_service": trams}


def policy(request):
    msgs = request.body["messages"]
    if msgs[0]["content"].startswith("You forecast"):
        nums = [int(x) for x in re.findall(r'"(?:early|am_peak|interpeak|pm_peak)": (\d+)', msgs[-1]["content"])]
        names = re.findall(r'"(early|am_peak|interpeak|pm_peak)": \d+', msgs[-1]["content"])
        top = max(range(len(nums)), key=lambda i: nums[i])
        return f"Peak band: {names[top]}. Peak load: {nums[top]} passengers per hour."
    if msgs[0]["content"].startswith("You roster"):
        m = re.search(r"(\d+) blocks", msgs[-1]["content"])
        return json.dumps({"drivers": int(m.group(1)) * 2, "spare": 2})
    return "OK"


def build(llm):
    def load_request(state: Day) -> dict:
        line, day = state["request"].split("@")
        return {"line": line, "service_date": day, "depot": LINES[line]["depot"]}

    def classify_day(state: Day) -> dict:
        d = date.fromisoformat(state["service_date"])
        day_type = "sunday" if d.weekday() == 6 else ("saturday" if d.weekday() == 5 else "weekday")
        return {"day_type": day_type}

    def route_day(state: Day) -> str:
        weekday_types = ("weekday", "sunday") if active("tram-04") else ("weekday",)
        return "weekday_pattern" if state["day_type"] in weekday_types else "weekend_pattern"

    def weekday_pattern(state: Day) -> dict:
        return {"pattern": {"first": "05:30", "last": "23:45", "school_trips": ["S-07:42", "S-15:20"]}}

    def weekend_pattern(state: Day) -> dict:
        return {"pattern": {"first": "07:00", "last": "23:00", "school_trips": []}}

    def fetch_ridership(state: Day) -> dict:
        r = get_ridership.invoke({"line": state["line"], "day_type": state["day_type"]})
        seg = get_segment_times.invoke({"line": state["line"]})
        return {"ridership": r, "segment_times": seg["segments_s"]}

    def forecast_peaks(state: Day) -> dict:
        text = json.dumps(state["ridership"]["bands"])
        if active("tram-03"):
            notes = {"line": "6", "service_date": "2026-11-28", "bands": {"early": 610, "am_peak": 3100, "interpeak": 980, "pm_peak": 2870}}
            text = text + "\nEarlier notes: " + json.dumps(notes["bands"])  # the planner's scratchpad from the last run
        reply = llm.invoke([SystemMessage("You forecast peak tram loads from counter data."),
                            HumanMessage(f"Line {state['line']} counts per band: {text}")])
        return {"forecast_text": reply.content}

    def parse_forecast(state: Day) -> dict:
        m = re.search(r"Peak band: (\w+)\. Peak load: (\d+)", state["forecast_text"])
        return {"forecast": {"peak_band": m.group(1), "peak_load": int(m.group(2))}}

    def fetch_fleet(state: Day) -> dict:
        return {"fleet": get_fleet_status.invoke({"depot": state["depot"]})["in_service"]}

    def compute_cycle(state: Day) -> dict:
        run_s = sum(state["segment_times"])
        run_min = run_s if active("tram-01") else math.ceil(run_s / 60)
        return {"cycle": {"one_way_min": run_min, "cycle_min": 2 * run_min + 6}, "band_index": 0, "blocks": []}

    def build_band(state: Day) -> dict:
        name, start, end = BANDS[state["band_index"]]
        load = state["ridership"]["bands"][name]
        if name == state["forecast"]["peak_band"]:
            load = state["forecast"]["peak_load"]
        headway = max(3, min(15, math.floor(60 * CAPACITY / max(load, 1))))
        trams = math.ceil(state["cycle"]["cycle_min"] / headway)
        block = {"band": name, "from": f"{start:02d}:00", "to": f"{end:02d}:00", "headway_min": headway,
                 "vehicles": state["fleet"][:trams], "needed": trams}
        return {"blocks": state["blocks"] + [block], "band_index": state["band_index"] + 1}

    def more_bands(state: Day) -> str:
        return "build_band" if state["band_index"] < len(BANDS) else "roster_agent"

    def roster(state: Day) -> dict:
        n = sum(len(b["vehicles"]) for b in state["blocks"])
        reply = llm.invoke([SystemMessage("You roster tram drivers for a service day."),
                            HumanMessage(f"Line {state['line']}: {n} blocks to cover on {state['service_date']}.")])
        return {"roster": json.loads(reply.content)}

    sub = StateGraph(Day)
    sub.add_node("roster_drivers", roster)
    sub.add_edge(START, "roster_drivers")
    sub.add_edge("roster_drivers", END)
    roster_agent = sub.compile()

    def extend_night_service(state: Day) -> dict:
        last_h, last_m = (int(x) for x in state["pattern"]["last"].split(":"))
        end = last_h * 60 + last_m
        stop = end if active("tram-05") else end + 1
        deps = [f"{t // 60:02d}:{t % 60:02d}" for t in range(19 * 60, stop, 15)]
        return {"night": {"headway_min": 15, "departures": deps}}

    def publish_timetable(state: Day) -> dict:
        d = date.fromisoformat(state["service_date"])
        line = state["line"]
        if d.weekday() >= 5 and state["pattern"]["school_trips"]:
            raise PublishRejected(f"PIS import rejected: {d:%A} timetable for line {line} contains school-day trips ({', '.join(state['pattern']['school_trips'])})")
        cyc = state["cycle"]["cycle_min"]
        if not 30 <= cyc <= 120:
            raise PublishRejected(f"PIS import rejected: cycle time {cyc} min for line {line} is outside 30-120 min")
        for b in state["blocks"]:
            if b["needed"] > len(state["fleet"]):
                raise PublishRejected(f"PIS import rejected: band {b['band']} needs {b['needed']} trams at {b['headway_min']} min headway, depot {state['depot']} has {len(state['fleet'])}")
            for v in b["vehicles"]:
                if v in WORKSHOP:
                    raise PublishRejected(f"PIS import rejected: vehicle {v} in band {b['band']} is in the workshop (ticket {WORKSHOP[v]})")
        deps = state["night"]["departures"]
        if deps[-1] != state["pattern"]["last"]:
            raise PublishRejected(f"PIS import rejected: last departure {state['pattern']['last']} required by the service agreement, timetable for line {line} ends {deps[-1]}")
        return {}

    g = StateGraph(Day)
    for name, fn in [("load_request", load_request), ("classify_day", classify_day), ("weekday_pattern", weekday_pattern),
                     ("weekend_pattern", weekend_pattern), ("fetch_ridership", fetch_ridership), ("forecast_peaks", forecast_peaks),
                     ("parse_forecast", parse_forecast), ("fetch_fleet", fetch_fleet), ("compute_cycle", compute_cycle),
                     ("build_band", build_band), ("roster_agent", roster_agent), ("extend_night_service", extend_night_service),
                     ("publish_timetable", publish_timetable)]:
        g.add_node(name, fn)
    g.add_edge(START, "load_request")
    g.add_edge("load_request", "classify_day")
    g.add_conditional_edges("classify_day", route_day, ["weekday_pattern", "weekend_pattern"])
    g.add_edge("weekday_pattern", "fetch_ridership")
    g.add_edge("weekend_pattern", "fetch_ridership")
    g.add_edge("fetch_ridership", "forecast_peaks")
    g.add_edge("forecast_peaks", "parse_forecast")
    g.add_edge("parse_forecast", "fetch_fleet")
    g.add_edge("fetch_fleet", "compute_cycle")
    g.add_edge("compute_cycle", "build_band")
    g.add_conditional_edges("build_band", more_bands, ["build_band", "roster_agent"])
    g.add_edge("roster_agent", "extend_night_service")
    g.add_edge("extend_night_service", "publish_timetable")
    g.add_edge("publish_timetable", END)
    return g.compile()


def record(request: str, path: Path, server) -> None:
    server.use(policy)
    llm = ChatOpenAI(base_url=server.base_url, api_key="local-key", model="gpt-4o-mini", max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"publish the timetable {request}")
    try:
        build(llm).invoke({"request": request}, config={"callbacks": [tracer]})
    except PublishRejected:
        pass


REF_INPUTS = ["2@2026-12-09", "6@2026-12-12", "9@2026-12-13", "15@2026-12-10"]
CASES = [
    Case("tram-01", "unit_error", "11@2026-12-08", ("compute_cycle", 1), ("publish_timetable", 1),
         "The cycle time adds segment running times in seconds as if they were minutes."),
    Case("tram-02", "stale_data", "4@2026-12-06", ("get_fleet_status", 1), ("publish_timetable", 1),
         "The fleet status comes from yesterday's cached snapshot and still lists T07, now in the workshop."),
    Case("tram-03", "context_pollution", "11@2026-12-08", ("ChatOpenAI", 1), ("publish_timetable", 1),
         "The forecast prompt carries another line's counts, and the model reads that line's peak as this line's."),
    Case("tram-04", "wrong_routing", "4@2026-12-06", ("route_day", 1), ("publish_timetable", 1),
         "The day router sends a service day classified as Sunday down the weekday pattern branch, which carries school trips."),
    Case("tram-05", "off_by_one", "4@2026-12-06", ("extend_night_service", 1), ("publish_timetable", 1),
         "The night departures range stops one step short and omits the last departure."),
]
