"""Falconry mews day planner (LangGraph + langchain-openai, recorded by TrajdebugTracer).

A keeper agent (model + ToolNode loop: parallel weighings, keeper notes, field forecast), then plain
nodes: record the weights, check flying weights, a planner model writes the day's JSON plan, parse it,
the welfare check, booking field slots and logging rations through tools, and the ration-log check.
"""

from __future__ import annotations

import itertools
import json
import operator
import zlib
from typing import Annotated, Any, TypedDict

from benchmarks.heldout.suite_o import kit
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.testing import Reply, tool_call


NAME = "falconry-mews"
ROUTE = "langgraph"
DOMAIN = "falconry mews: weighing, flying and feeding birds of prey"
SHAPE = "LangGraph: intake, keeper model <-> ToolNode loop (parallel weighings), 2 check nodes, planner model, parse node, welfare node, booking and ration nodes calling tools per bird"

OZ = 28.3495

INPUTS = {
    "ashdown": {
        "mews": "Ashdown Mews",
        "site": "Hollow Down",
        "date": "2026-03-06",
        "gusty": "11:00",
        "birds": [
            {"bird": "Juno", "species": "Harris hawk", "min_g": 760, "weight_g": 812, "ration_g": 45},
            {"bird": "Pip", "species": "barn owl", "min_g": 300, "weight_g": 331, "ration_g": 30},
            {"bird": "Ash", "species": "kestrel", "min_g": 180, "weight_g": 196, "ration_g": 25},
        ],
    },
    "wold": {
        "mews": "Wold Falconry",
        "site": "Beacon Hill",
        "date": "2026-03-12",
        "gusty": "15:00",
        "birds": [
            {"bird": "Sable", "species": "peregrine", "min_g": 620, "weight_g": 655, "ration_g": 50},
            {"bird": "Moth", "species": "little owl", "min_g": 150, "weight_g": 166, "ration_g": 15},
            {"bird": "Rook", "species": "Harris hawk", "min_g": 700, "weight_g": 744, "ration_g": 45},
        ],
    },
    "fenmarsh": {
        "mews": "Fenmarsh Raptors",
        "site": "Long Meadow",
        "date": "2026-03-14",
        "gusty": "11:00",
        "birds": [
            {"bird": "Tansy", "species": "barn owl", "min_g": 290, "weight_g": 318, "ration_g": 30},
            {"bird": "Flint", "species": "saker falcon", "min_g": 880, "weight_g": 931, "ration_g": 60},
            {"bird": "Wren", "species": "kestrel", "min_g": 170, "weight_g": 188, "ration_g": 25},
        ],
    },
    "highcroft": {
        "mews": "Highcroft Birds",
        "site": "Windy Knoll",
        "date": "2026-03-18",
        "gusty": "15:00",
        "birds": [
            {"bird": "Ember", "species": "red-tailed hawk", "min_g": 1050, "weight_g": 1112, "ration_g": 70},
            {"bird": "Bramble", "species": "tawny owl", "min_g": 420, "weight_g": 447, "ration_g": 35},
            {"bird": "Kit", "species": "merlin", "min_g": 160, "weight_g": 173, "ration_g": 20},
        ],
    },
    "marden": {
        "mews": "Marden Hawks",
        "site": "Chalk Pit",
        "date": "2026-03-21",
        "gusty": "11:00",
        "birds": [
            {"bird": "Vesper", "species": "lanner", "min_g": 520, "weight_g": 561, "ration_g": 45},
            {"bird": "Pip", "species": "little owl", "min_g": 145, "weight_g": 160, "ration_g": 15},
            {"bird": "Saffron", "species": "Harris hawk", "min_g": 690, "weight_g": 733, "ration_g": 45},
        ],
    },
    "tor": {
        "mews": "Tor Falconry Centre",
        "site": "Brent Tor",
        "date": "2026-03-25",
        "gusty": "15:00",
        "birds": [
            {"bird": "Cinder", "species": "gyr hybrid", "min_g": 1010, "weight_g": 1068, "ration_g": 70},
            {"bird": "Hazel", "species": "barn owl", "min_g": 300, "weight_g": 322, "ration_g": 30},
            {"bird": "Quill", "species": "kestrel", "min_g": 175, "weight_g": 190, "ration_g": 25},
        ],
    },
}

FAULTS = [
    {
        "id": "falc.scale_units",
        "kind": "unit_error",
        "input": "wold",
        "root": "weigh_bird",
        "marker": "5.86",
        "note": "the second perch scale answers in ounces under grams",
    },
    {
        "id": "falc.forecast_date",
        "kind": "wrong_tool_args",
        "input": "ashdown",
        "root": "ChatOpenAI",
        "marker": "2026-03-05",
        "note": "the keeper model asks the forecast for the day before",
    },
    {
        "id": "falc.plan_keys",
        "kind": "format_drift",
        "input": "highcroft",
        "root": "ChatOpenAI",
        "marker": "rations",
        "note": "the planner model names the feed list 'rations' with amounts as text",
    },
    {
        "id": "falc.notes_mixed",
        "kind": "context_pollution",
        "input": "marden",
        "root": "load_keeper_notes",
        "marker": "bumblefoot",
        "note": "the notes service mixes in a sister mews' note about another bird of the same name",
    },
    {
        "id": "falc.forecast_cache",
        "kind": "stale_data",
        "input": "fenmarsh",
        "root": "get_field_weather",
        "marker": "2026-03-13T18:00",
        "note": "the forecast service answers with the previous evening's issue",
    },
]

_DAY: dict[str, Any] = {}


def task(inp: dict) -> str:
    return f"Plan flying and feeding for {len(inp['birds'])} birds at {inp['mews']} on {inp['date']}"


def _gusts(date: str) -> dict:
    inp = _DAY["inp"]
    if date != inp["date"]:
        return {"11:00": 19, "15:00": 22}
    return {"11:00": 52 if inp["gusty"] == "11:00" else 21, "15:00": 55 if inp["gusty"] == "15:00" else 18}


@tool
def weigh_bird(bird: str) -> str:
    """Weigh one bird on its perch scale; grams."""
    b = next(x for x in _DAY["inp"]["birds"] if x["bird"] == bird)
    grams = b["weight_g"]
    if b is _DAY["inp"]["birds"][1] and kit.active("falc.scale_units"):
        grams = round(grams / OZ, 2)
    return json.dumps({"bird": bird, "grams": grams, "scale": f"perch-{_DAY['inp']['birds'].index(b) + 1}"})


@tool
def load_keeper_notes(mews: str) -> str:
    """Yesterday's keeper notes for the mews."""
    inp = _DAY["inp"]
    notes = [f"{b['bird']} ({b['species']}): keen on the lure, cast clean" for b in inp["birds"]]
    if kit.active("falc.notes_mixed"):
        notes.append(
            "Ridgeway Mews / Pip (barn owl): grounded, bumblefoot on left foot, vet review next week"
        )
    return json.dumps({"mews": mews, "notes": notes})


@tool
def get_field_weather(site: str, date: str) -> str:
    """Hourly gust forecast for a flying field on a date."""
    if kit.active("falc.forecast_cache"):
        return json.dumps(
            {"site": site, "date": date, "issued": "2026-03-13T18:00", "gust_kmh": {"11:00": 17, "15:00": 20}}
        )
    return json.dumps({"site": site, "date": date, "issued": f"{date}T06:00", "gust_kmh": _gusts(date)})


@tool
def book_field_slot(site: str, bird: str, slot: str) -> str:
    """Book a flying slot at a field with the field office."""
    gust = _gusts(_DAY["inp"]["date"])[slot]
    if gust > 40:
        raise RuntimeError(
            f"field office: 409 {site} closed at {slot}, gusts {gust} km/h over the 40 km/h limit"
        )
    return json.dumps(
        {
            "site": site,
            "bird": bird,
            "slot": slot,
            "booking": f"FB-{zlib.crc32((site + slot + bird).encode()) % 9000 + 1000}",
        }
    )


@tool
def log_feed(bird: str, grams: int, food: str) -> str:
    """Log one ration in the daily feed log."""
    return json.dumps({"bird": bird, "grams": grams, "food": food, "logged": True})


KEEPER_SYS = (
    "You are the mews keeper's assistant. Weigh every bird, read yesterday's notes, get the field forecast."
)
PLANNER_SYS = "You plan the falconry day. Answer JSON with flights and feeds."


def policy(request: Any) -> Any:
    c = kit.Convo(request)
    if c.system.startswith("You are the mews keeper"):
        req = json.loads(c.user)
        if not c.called("weigh_bird"):
            return Reply(tool_calls=tuple(tool_call("weigh_bird", {"bird": b}) for b in req["birds"]))
        if not c.called("load_keeper_notes"):
            return Reply(tool_calls=(tool_call("load_keeper_notes", {"mews": req["mews"]}),))
        if not c.called("get_field_weather"):
            date = req["date"]
            if kit.active("falc.forecast_date"):
                date = f"{date[:8]}{int(date[8:]) - 1:02d}"
            return Reply(tool_calls=(tool_call("get_field_weather", {"site": req["site"], "date": date}),))
        return "Weighed all birds, read the notes and fetched the field forecast."
    facts = json.loads(c.last.get("content") or "{}")
    grounded = {b for b in facts["birds"] if any(b in n and "grounded" in n for n in facts["notes"])}
    slot = next(s for s, g in sorted(facts["gust_kmh"].items()) if g <= 40)
    flights = [{"bird": b, "slot": slot} for b in facts["birds"] if b not in grounded]
    if kit.active("falc.plan_keys"):
        return json.dumps(
            {
                "flights": flights,
                "rations": [f"{b}: {g} g day-old chick" for b, g in facts["rations"].items()],
            }
        )
    return json.dumps(
        {
            "flights": flights,
            "feeds": [{"bird": b, "grams": g, "food": "day-old chick"} for b, g in facts["rations"].items()],
        }
    )


class Day(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    request: dict
    weights: dict
    plan: dict
    bookings: Annotated[list, operator.add]


def build(base_url: str) -> Any:
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(
        base_url=base_url, api_key="not-needed", model="fake-model", max_retries=0, temperature=0
    )
    tools = [weigh_bird, load_keeper_notes, get_field_weather]
    keeper_llm = llm.bind_tools(tools)

    def intake(state: Day) -> dict:
        r = state["request"]
        ask = {
            "mews": r["mews"],
            "site": r["site"],
            "date": r["date"],
            "birds": [b["bird"] for b in r["birds"]],
        }
        return {"messages": [SystemMessage(KEEPER_SYS), HumanMessage(json.dumps(ask))]}

    def keeper(state: Day) -> dict:
        return {"messages": [keeper_llm.invoke(state["messages"])]}

    def route(state: Day) -> str:
        return "tools" if state["messages"][-1].tool_calls else "record_weights"

    def record_weights(state: Day) -> dict:
        weights = {}
        for m in state["messages"]:
            if isinstance(m, ToolMessage) and m.name == "weigh_bird":
                w = json.loads(m.content)
                weights[w["bird"]] = w["grams"]
        return {"weights": weights}

    def check_weights(state: Day) -> dict:
        for b in state["request"]["birds"]:
            g = state["weights"][b["bird"]]
            if g < b["min_g"] * 0.9:
                raise ValueError(
                    f"weight check: {b['bird']} at {g} g is far under flying weight {b['min_g']} g; bird stays on the perch"
                )
        return {}

    def planner(state: Day) -> dict:
        found = {m.name: json.loads(m.content) for m in state["messages"] if isinstance(m, ToolMessage)}
        facts = {
            "birds": list(state["weights"]),
            "notes": found["load_keeper_notes"]["notes"],
            "gust_kmh": found["get_field_weather"]["gust_kmh"],
            "rations": {b["bird"]: b["ration_g"] for b in state["request"]["birds"]},
        }
        reply = llm.invoke([SystemMessage(PLANNER_SYS), HumanMessage(json.dumps(facts))])
        return {"messages": [reply]}

    def parse_plan(state: Day) -> dict:
        raw = json.loads(state["messages"][-1].content)
        return {"plan": {"flights": raw.get("flights", []), "feeds": raw.get("feeds", [])}}

    def welfare_check(state: Day) -> dict:
        flying = {f["bird"] for f in state["plan"]["flights"]}
        for b in state["request"]["birds"]:
            if b["bird"] not in flying:
                raise ValueError(
                    f"welfare log: {b['bird']} has no flight booked today and no vet grounding on file"
                )
        return {}

    def book_flights(state: Day) -> dict:
        out = []
        for f in state["plan"]["flights"]:
            out.append(
                json.loads(
                    book_field_slot.invoke(
                        {"site": state["request"]["site"], "bird": f["bird"], "slot": f["slot"]}
                    )
                )
            )
        return {"bookings": out}

    def log_rations(state: Day) -> dict:
        for f in state["plan"]["feeds"]:
            log_feed.invoke({"bird": f["bird"], "grams": f["grams"], "food": f["food"]})
        return {}

    def check_feed_log(state: Day) -> dict:
        logged = {f["bird"] for f in state["plan"]["feeds"]}
        missing = [b["bird"] for b in state["request"]["birds"] if b["bird"] not in logged]
        if missing:
            raise ValueError(f"daily log incomplete: no ration logged for {', '.join(missing)}")
        return {}

    g = StateGraph(Day)
    for name, fn in [
        ("intake", intake),
        ("keeper", keeper),
        ("record_weights", record_weights),
        ("check_weights", check_weights),
        ("planner", planner),
        ("parse_plan", parse_plan),
        ("welfare_check", welfare_check),
        ("book_flights", book_flights),
        ("log_rations", log_rations),
        ("check_feed_log", check_feed_log),
    ]:
        g.add_node(name, fn)
    g.add_node("tools", ToolNode(tools))
    g.add_edge(START, "intake")
    g.add_edge("intake", "keeper")
    g.add_conditional_edges("keeper", route, ["tools", "record_weights"])
    g.add_edge("tools", "keeper")
    chain = [
        "record_weights",
        "check_weights",
        "planner",
        "parse_plan",
        "welfare_check",
        "book_flights",
        "log_rations",
        "check_feed_log",
    ]
    for a, b in itertools.pairwise(chain):
        g.add_edge(a, b)
    g.add_edge("check_feed_log", END)
    return g.compile()


def invoke(base_url: str, inp: dict, callbacks: list) -> None:
    _DAY.clear()
    _DAY["inp"] = inp
    build(base_url).invoke(
        {"request": inp, "bookings": []}, config={"callbacks": callbacks, "run_name": NAME}
    )
