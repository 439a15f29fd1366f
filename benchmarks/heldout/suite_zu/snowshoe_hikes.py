"""Snowshoe hikes (langgraph): a guided-hike desk picks a trail with a tool-calling scout loop and books it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from .common import Case, register_policy
from .kit import active
from .lgutil import invoke, model

AGENT, ROUTE, DOMAIN, EXT = "snowshoe_hike_desk", "langgraph", "snowshoe hikes", "jsonl"
SHAPE = "intake -> level router -> scout loop (LLM <-> trail_info / snow_report tools) -> parse itinerary -> guide subgraph (roster, pick) -> gear -> LLM booking draft -> submit"

INPUTS = {
    "mansfield": "Group of 7, level intermediate, date 2026-01-24, rent 3 pairs",
    "sterling": "Group of 5, level beginner, date 2026-01-31, rent 5 pairs",
    "r1": "Group of 4, level advanced, date 2026-02-07, rent 0 pairs",
    "r2": "Group of 9, level beginner, date 2026-02-14, rent 6 pairs",
    "r3": "Group of 6, level intermediate, date 2026-02-21, rent 2 pairs",
    "r4": "Group of 3, level advanced, date 2026-02-28, rent 1 pairs",
}
REFS = ["r1", "r2", "r3", "r4"]
LEVELS = ["beginner", "intermediate", "advanced"]
TRAILS = {
    "beginner": [("Lake Loop", 3.1), ("Birch Meadow", 4.6), ("Moss Glen Flats", 2.7)],
    "intermediate": [("Sterling Pond", 8.4), ("Smugglers Notch Rim", 6.9), ("Nebraska Valley", 7.3)],
    "advanced": [("Hellbrook Ridge", 11.2), ("Chin Summit", 9.8), ("Forehead Traverse", 10.5)],
}
SNOW_CM = {"Lake Loop": 35, "Birch Meadow": 41, "Moss Glen Flats": 28, "Sterling Pond": 33, "Smugglers Notch Rim": 6,
           "Nebraska Valley": 29, "Hellbrook Ridge": 52, "Chin Summit": 47, "Forehead Traverse": 44}
ROSTER = [{"guide": "Ines Clark", "permit": "GP-1184", "max_level": "advanced", "free": ["2026-01-24", "2026-02-07", "2026-02-21"]},
          {"guide": "Tom Weller", "permit": "GP-1190", "max_level": "intermediate", "free": ["2026-01-24", "2026-01-31", "2026-02-14", "2026-02-28"]},
          {"guide": "Ruth Amos", "permit": "GP-1203", "max_level": "advanced", "free": ["2026-01-31", "2026-02-14", "2026-02-28"]}]

CASES = [
    Case("zu_snow_01", "snow.route_level", "wrong_routing", "mansfield", "route_level", 1, "other", "submit_hike_booking", 1,
         "The level router sends an intermediate group to the advanced trail catalogue."),
    Case("zu_snow_02", "snow.last_week", "stale_data", "mansfield", "snow_report", 2, "tool", "submit_hike_booking", 1,
         "The snow report for Smugglers Notch Rim serves last week's depth, so the scout picks a trail that has melted out."),
    Case("zu_snow_03", "snow.gear_count", "off_by_one", "sterling", "gear", 1, "other", "submit_hike_booking", 1,
         "The gear node counts rental pairs from one, so the rental manifest is one pair short."),
    Case("zu_snow_04", "snow.distance_int", "lossy_parsing", "sterling", "parse_itinerary", 1, "other", "submit_hike_booking", 1,
         "The itinerary parser truncates the route length to whole kilometres."),
    Case("zu_snow_05", "snow.permit_invent", "hallucinated_value", "mansfield", "ChatOpenAI", 6, "llm", "submit_hike_booking", 1,
         "The booking draft model writes a guide permit number that the roster never gave."),
]


def _policy(body: dict) -> Any:
    from trajdebug.testing import Reply, tool_call

    msgs = body["messages"]
    system = msgs[0]["content"]
    if "Draft" in system:
        d = json.loads(msgs[-1]["content"])
        permit = "GP-2231" if active("snow.permit_invent") else d["guide"]["permit"]
        return json.dumps({"trail": d["itinerary"]["trail"], "distance_km": d["itinerary"]["distance_km"],
                           "guide": d["guide"]["guide"], "permit": permit, "pairs": d["gear"]["pairs"], "date": d["date"]})
    tools = [m for m in msgs if m.get("role") == "tool"]
    if not tools:
        track = json.loads(msgs[1]["content"])["track"]
        return Reply(tool_calls=(tool_call("trail_info", {"track": track}),))
    trails = json.loads(tools[0]["content"])
    reports = [json.loads(t["content"]) for t in tools[1:]]
    if len(reports) < len(trails):
        return Reply(tool_calls=(tool_call("snow_report", {"trail": trails[len(reports)]["trail"]}),))
    ok = [r for r in reports if r["depth_cm"] >= 20]
    best = max(ok, key=lambda r: (r["depth_cm"], r["trail"]))
    km = next(t["km"] for t in trails if t["trail"] == best["trail"])
    return json.dumps({"trail": best["trail"], "distance_km": km, "depth_cm": best["depth_cm"], "start": "08:30"})


register_policy("snowshoe", _policy)


@tool
def trail_info(track: str) -> str:
    """Trails of a difficulty track."""
    return json.dumps([{"trail": t, "km": km, "level": track} for t, km in TRAILS[track]])


@tool
def snow_report(trail: str) -> str:
    """Today's snow depth on a trail."""
    depth = SNOW_CM[trail]
    if trail == "Smugglers Notch Rim" and active("snow.last_week"):
        depth = 58
    return json.dumps({"trail": trail, "depth_cm": depth})


@tool
def guide_roster(date: str) -> str:
    """Guides free on a date."""
    return json.dumps([g for g in ROSTER if date in g["free"]])


@tool
def submit_hike_booking(booking: str) -> str:
    """Submit a hike booking to the outfitter's system."""
    b = json.loads(booking)
    req = INPUT_BY_DATE[b["date"]]
    m = re.match(r"Group of (\d+), level (\w+), date (\S+), rent (\d+) pairs", req)
    level = next(lv for lv, ts in TRAILS.items() if any(t == b["trail"] for t, _ in ts))
    if LEVELS.index(level) > LEVELS.index(m.group(2)):
        raise ValueError(f"booking rejected: trail {b['trail']} is graded {level}, group level is {m.group(2)}")
    if SNOW_CM[b["trail"]] < 20:
        raise ValueError(f"booking rejected: {b['trail']} closed to snowshoes, snow depth {SNOW_CM[b['trail']]} cm below 20 cm")
    km = dict(t for ts in TRAILS.values() for t in ts)[b["trail"]]
    if abs(b["distance_km"] - km) > 0.05:
        raise ValueError(f"booking rejected: declared route length {b['distance_km']} km differs from trail record {km} km (insurance)")
    if b["pairs"] != int(m.group(4)):
        raise ValueError(f"booking rejected: rental manifest has {b['pairs']} pairs, request asks {m.group(4)}")
    g = next((g for g in ROSTER if g["guide"] == b["guide"]), None)
    if g is None or g["permit"] != b["permit"]:
        raise ValueError(f"booking rejected: guide permit {b['permit']} not on file for {b['guide']}")
    return json.dumps({"status": "confirmed", "trail": b["trail"]})


INPUT_BY_DATE = {re.search(r"date (\S+),", t).group(1): t for t in INPUTS.values()}
TOOLS = [trail_info, snow_report]


class St(TypedDict, total=False):
    text: str
    req: dict
    track: str
    messages: Annotated[list, add_messages]
    itinerary: dict
    candidates: list
    guide: dict
    gear: dict
    result: dict


def intake(state: St) -> dict:
    m = re.match(r"Group of (\d+), level (\w+), date (\S+), rent (\d+) pairs", state["text"])
    return {"req": {"size": int(m.group(1)), "level": m.group(2), "date": m.group(3), "rent": int(m.group(4))}}


def route_level(state: St) -> dict:
    level = state["req"]["level"]
    if active("snow.route_level") and level == "intermediate":
        level = "advanced"
    return {"track": level}


def scout(state: St) -> dict:
    msgs = state.get("messages") or [SystemMessage("[snowshoe] Scout a trail with enough snow; call tools, then answer JSON."),
                                      HumanMessage(json.dumps({"track": state["track"], "date": state["req"]["date"]}))]
    reply = model().bind_tools(TOOLS).invoke(msgs)
    return {"messages": ([] if state.get("messages") else msgs) + [reply]}


def after_scout(state: St) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else "parse_itinerary"


def parse_itinerary(state: St) -> dict:
    d = json.loads(state["messages"][-1].content)
    km = float(int(d["distance_km"])) if active("snow.distance_int") else float(d["distance_km"])
    return {"itinerary": {"trail": d["trail"], "distance_km": km, "start": d["start"]}}


def fetch_roster(state: St) -> dict:
    return {"candidates": json.loads(guide_roster.invoke({"date": state["req"]["date"]}))}


def pick_guide(state: St) -> dict:
    need = LEVELS.index(state["req"]["level"])
    ok = [g for g in state["candidates"] if LEVELS.index(g["max_level"]) >= need]
    return {"guide": {"guide": ok[0]["guide"], "permit": ok[0]["permit"]}}


def _guides():
    g = StateGraph(St)
    g.add_node("fetch_roster", fetch_roster)
    g.add_node("pick_guide", pick_guide)
    g.add_edge(START, "fetch_roster")
    g.add_edge("fetch_roster", "pick_guide")
    g.add_edge("pick_guide", END)
    return g.compile()


def gear(state: St) -> dict:
    start = 1 if active("snow.gear_count") else 0
    pairs = [f"pair-{i + 1}" for i in range(start, state["req"]["rent"])]
    return {"gear": {"pairs": len(pairs), "items": pairs}}


def book(state: St) -> dict:
    draft = model().invoke([SystemMessage("[snowshoe] Draft the booking as JSON."),
                            HumanMessage(json.dumps({"itinerary": state["itinerary"], "guide": state["guide"],
                                                     "gear": {"pairs": state["gear"]["pairs"]}, "date": state["req"]["date"]}))])
    return {"result": json.loads(submit_hike_booking.invoke({"booking": draft.content}))}


def _graph():
    g = StateGraph(St)
    g.add_node("intake", intake)
    g.add_node("route_level", route_level)
    g.add_node("scout", scout)
    g.add_node("tools", ToolNode(TOOLS))
    g.add_node("parse_itinerary", parse_itinerary)
    g.add_node("guides", _guides())
    g.add_node("gear", gear)
    g.add_node("book", book)
    g.add_edge(START, "intake")
    g.add_edge("intake", "route_level")
    g.add_edge("route_level", "scout")
    g.add_conditional_edges("scout", after_scout, ["tools", "parse_itinerary"])
    g.add_edge("tools", "scout")
    g.add_edge("parse_itinerary", "guides")
    g.add_edge("guides", "gear")
    g.add_edge("gear", "book")
    g.add_edge("book", END)
    return g.compile()


_GRAPH = None


def record(key: str, path: Path) -> None:
    global _GRAPH
    _GRAPH = _GRAPH or _graph()
    text = INPUTS[key]
    invoke(_GRAPH, {"text": text}, path, AGENT, text, (ValueError,))
