"""Orienteering event setup (langgraph): request -> map -> entries -> per-class routing and course-design sub-graph -> start list -> publish."""

from __future__ import annotations

import json
import re
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from .common import last_user
from .kit import active

NAME = "orienteering-event-setup"
ROUTE = "langgraph"
INPUTS = {
    "hollin": "Middle distance at Hollin Woods on 2026-12-13, map 1:10000, classes M21E W21E M45 W16, 120 entries, first start 10:00",
    "crag": "Sprint at Crag Park on 2026-12-20, map 1:4000, classes M21E W21E W16 M16, 80 entries, first start 11:00",
    "ref1": "Middle distance at Ashby Forest on 2026-11-29, map 1:10000, classes M21E W21E M45 W16, 90 entries, first start 10:30",
    "ref2": "Sprint at Riverside Campus on 2026-11-22, map 1:4000, classes M21E W21E W16 M16, 60 entries, first start 11:00",
    "ref3": "Middle distance at Black Fell on 2026-12-06, map 1:10000, classes M21E W21E M45 W16, 110 entries, first start 10:00",
    "ref4": "Sprint at Old Town on 2026-12-27, map 1:4000, classes M21E W21E W16 M16, 70 entries, first start 11:30",
}
JUNIOR = {"W16", "M16"}
ELITE_KM = {"M21E": 6.2, "W21E": 5.1}


def policy(request: Any) -> str:
    text = last_user(request)
    if text.startswith("CONTROLS"):
        d = json.loads(text[8:])
        area = d["area"]
        if active("or_args") and d["class"] == "M45":
            area = area.split()[0] + " Moor"
        return json.dumps({"tool": "lookup_controls", "args": {"area": area, "count": d["count"]}})
    if text.startswith("STARTS"):
        d = json.loads(text[6:])
        h, m = d["first"].split(":")
        out = {}
        for i, c in enumerate(d["classes"]):
            mm = int(m) + 2 * i
            out[c] = f"{h}.{mm:02d}" if (active("or_format") and c == d["classes"][-1]) else f"{h}:{mm:02d}"
        return json.dumps(out)
    return "{}"


@tool
def get_map_tile(area: str, scale: str) -> dict:
    """Fetch the printed map tile for an area at a scale."""
    served = "1:15000" if active("or_ignores") else scale
    return {"area": area, "scale": served, "tile": f"{area[:3].upper()}-{served.replace(':', '')}"}


@tool
def fetch_entries(event: str, expected: int) -> dict:
    """Fetch paid entries for an event."""
    n = expected
    if active("or_trunc"):
        n = min(expected, 100)
    return {"event": event, "entries": [{"bib": 100 + i} for i in range(n)], "page": 1}


@tool
def lookup_controls(area: str, count: int) -> dict:
    """Look up permitted control sites in an area."""
    base = 100 if "Moor" not in area else 300
    return {"area": area, "controls": [base + i for i in range(1, count + 1)]}


class S(TypedDict, total=False):
    request: str
    event: dict
    map: dict
    entries: list
    todo: list
    current: str
    track: str
    courses: dict
    starts: dict


class C(TypedDict, total=False):
    event: dict
    current: str
    track: str
    courses: dict


def make_graph(llm: ChatOpenAI):
    def parse_request(state: S) -> dict:
        t = state["request"]
        m = re.search(r"(\w[\w ]*?) at ([\w ]+?) on (\S+), map (\S+), classes ([\w ]+?), (\d+) entries, first start (\S+)", t)
        ev = {"format": m.group(1), "area": m.group(2), "date": m.group(3), "scale": m.group(4),
              "classes": m.group(5).split(), "entries": int(m.group(6)), "first": m.group(7)}
        return {"event": ev, "todo": list(ev["classes"]), "courses": {}}

    def get_map(state: S) -> dict:
        ev = state["event"]
        return {"map": get_map_tile.invoke({"area": ev["area"], "scale": ev["scale"]})}

    def get_entries(state: S) -> dict:
        ev = state["event"]
        return {"entries": fetch_entries.invoke({"event": f"{ev['area']} {ev['date']}", "expected": ev["entries"]})["entries"]}

    def route_class(state: S) -> dict:
        cls = state["todo"][0]
        track = "junior" if cls in JUNIOR else ("elite" if cls in ELITE_KM else "masters")
        if active("or_routing") and cls == "W16":
            track = "elite"
        return {"current": cls, "track": track, "todo": state["todo"][1:]}

    def pick_controls(cs: C) -> dict:
        ev, cls = cs["event"], cs["current"]
        n = {"elite": 14, "masters": 11, "junior": 8}[cs["track"]]
        msg = llm.invoke([SystemMessage("You are an orienteering course planner."),
                          HumanMessage("CONTROLS" + json.dumps({"class": cls, "area": ev["area"], "count": n}))])
        call = json.loads(msg.content)
        got = lookup_controls.invoke(call["args"])
        return {"courses": {**cs["courses"], cls: {"controls": got["controls"], "area": got["area"]}}}

    def measure_course(cs: C) -> dict:
        cls = cs["current"]
        course = dict(cs["courses"][cls])
        km = {"elite": ELITE_KM.get(cls, 6.0), "masters": 4.6, "junior": 3.2}[cs["track"]]
        course["length_km"] = km if cs["event"]["format"].startswith("Middle") else round(km * 0.55, 1)
        return {"courses": {**cs["courses"], cls: course}}

    sub = StateGraph(C)
    sub.add_node("pick_controls", pick_controls)
    sub.add_node("measure_course", measure_course)
    sub.add_edge(START, "pick_controls")
    sub.add_edge("pick_controls", "measure_course")
    sub.add_edge("measure_course", END)
    designer = sub.compile()

    def course_designer(state: S) -> dict:
        out = designer.invoke({"event": state["event"], "current": state["current"], "track": state["track"], "courses": state["courses"]})
        return {"courses": out["courses"]}

    def start_times(state: S) -> dict:
        ev = state["event"]
        msg = llm.invoke([HumanMessage("STARTS" + json.dumps({"first": ev["first"], "classes": ev["classes"]}))])
        return {"starts": json.loads(msg.content)}

    def publish_event(state: S) -> dict:
        ev, errs = state["event"], []
        if state["map"]["scale"] != ev["scale"]:
            errs.append(f"map tile {state['map']['tile']} is {state['map']['scale']}, event is declared at {ev['scale']}")
        if len(state["entries"]) != ev["entries"]:
            errs.append(f"start list has {len(state['entries'])} of {ev['entries']} paid entries")
        for c, course in state["courses"].items():
            if course["area"] != ev["area"]:
                errs.append(f"{c}: controls {course['controls'][:3]} lie outside the permitted area {ev['area']}")
            if c in JUNIOR and course["length_km"] > 4.0:
                errs.append(f"{c}: course length {course['length_km']} km exceeds the junior maximum 4.0 km")
        for c, t in state["starts"].items():
            if not re.fullmatch(r"\d{2}:\d{2}", t):
                errs.append(f"{c}: start time {t!r} is not HH:MM")
            elif t < ev["first"]:
                errs.append(f"{c}: first start {t} is before the event opens at {ev['first']}")
        if errs:
            raise ValueError("EventValidationError: " + "; ".join(errs))
        return {}

    g = StateGraph(S)
    for name, fn in [("parse_request", parse_request), ("get_map", get_map), ("get_entries", get_entries),
                     ("route_class", route_class), ("course_designer", course_designer), ("start_times", start_times),
                     ("publish_event", publish_event)]:
        g.add_node(name, fn)
    g.add_edge(START, "parse_request")
    g.add_edge("parse_request", "get_map")
    g.add_edge("get_map", "get_entries")
    g.add_edge("get_entries", "route_class")
    g.add_edge("route_class", "course_designer")
    g.add_conditional_edges("course_designer", lambda s: "route_class" if s["todo"] else "start_times", ["route_class", "start_times"])
    g.add_edge("start_times", "publish_event")
    g.add_edge("publish_event", END)
    return g.compile()


def run_case(ctx: dict, inp: str, path: str) -> None:
    llm = ChatOpenAI(model="fake-model", base_url=ctx["base_url"], api_key="test", max_retries=0, temperature=0)
    graph = make_graph(llm)
    tracer = TrajdebugTracer(path=path, name=NAME, task=INPUTS[inp])
    try:
        graph.invoke({"request": INPUTS[inp]}, config={"callbacks": [tracer], "recursion_limit": 80})
    except ValueError:
        pass


CASES = [
    ("or_args", "wrong_tool_args", "hollin", "ChatOpenAI", 3, "llm", "publish_event", 1,
     "For the M45 course the planner model calls the control lookup with the neighbouring moor as the area."),
    ("or_ignores", "tool_ignores_argument", "crag", "get_map_tile", 1, "tool", "publish_event", 1,
     "The map tile service ignores the requested scale and serves its 1:15000 default tile."),
    ("or_trunc", "truncated_result", "hollin", "fetch_entries", 1, "tool", "publish_event", 1,
     "The entries service returns only its first page of 100 entries of the 120 paid."),
    ("or_format", "format_drift", "crag", "ChatOpenAI", 5, "llm", "publish_event", 1,
     "The start-time model writes the last class's start as 11.06 instead of 11:06, which the event validator rejects."),
    ("or_routing", "wrong_routing", "hollin", "route_class", 4, "other", "publish_event", 1,
     "The class router sends W16 down the elite track, so the juniors get an elite-length course."),
]
REFS = ["ref1", "ref2", "ref3", "ref4"]
