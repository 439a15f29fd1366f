"""Tandem skydiving: manifest a tandem booking onto a load (LangGraph + ChatOpenAI + trajdebug tracer)."""
from __future__ import annotations

import json
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, last_user, policy, server
from .kit import active, planted

AGENT, ROUTE, DOMAIN = "tandem-manifest", "langgraph", "tandem skydiving"
SHAPE = "booking -> per-jumper weigh-in loop -> lane router -> winds + loads -> LLM load plan -> instructor -> file manifest"
MODEL = "zt-skydive"

BOOKINGS = {
    "BK-5512": {"jumpers": ["J-101", "J-102"], "video": True, "date": "2026-12-05"},
    "BK-6020": {"jumpers": ["J-201", "J-202", "J-203"], "video": False, "date": "2026-12-05"},
    "BK-4101": {"jumpers": ["J-301"], "video": False, "date": "2026-12-05"},
    "BK-4388": {"jumpers": ["J-401", "J-402"], "video": True, "date": "2026-12-05"},
    "BK-5007": {"jumpers": ["J-501", "J-502"], "video": False, "date": "2026-12-05"},
    "BK-6233": {"jumpers": ["J-601"], "video": True, "date": "2026-12-05"},
}
REFS = ["BK-4101", "BK-4388", "BK-5007", "BK-6233"]
INSTRUCTORS = [{"id": "I-03", "ratings": ["tandem"]}, {"id": "I-05", "ratings": ["tandem", "video"]},
               {"id": "I-07", "ratings": ["tandem"]}, {"id": "I-09", "ratings": ["tandem", "video"]}]


@policy(MODEL)
def _model(msgs):
    req = json.loads(last_user(msgs))
    load = req["open_loads"][0]
    alt = "13,500 ft" if active("sky_format") else 13500
    return json.dumps({"load": load["load"], "exit_altitude": alt, "pairs": len(req["jumpers"])})


@tool
def weigh_jumper(jumper_id: str) -> dict:
    """Read the jumper's weigh-in record from the front desk scale."""
    return {"jumper": jumper_id, "weight": 150 + (sum(map(ord, jumper_id)) % 60), "unit": "lb"}


@tool
def fetch_open_loads(date: str) -> list:
    """List today's loads with free seats."""
    loads = [{"load": "L5", "free": 6, "time": "11:40"}, {"load": "L6", "free": 10, "time": "12:20"}]
    if active("sky_cache"):
        loads = [{"load": "L4", "free": 4, "time": "11:00", "cached_at": "07:30"}] + loads
    return loads


@tool
def fetch_winds(date: str) -> dict:
    """Current surface and upper winds at the drop zone."""
    return {"surface_kt": 9, "gust_kt": 14, "upper_kt": 31}


@tool
def find_instructor(rating: str, count: int) -> list:
    """Free tandem instructors holding the given rating."""
    pool = INSTRUCTORS if active("sky_ignore") else [i for i in INSTRUCTORS if rating in i["ratings"]]
    return [i["id"] for i in pool[:count]]


def file_manifest(manifest: dict) -> dict:
    """File the load manifest with the drop zone's manifest system (its HTTP API, not a model tool)."""
    if manifest["load"] == "L4":
        raise ValueError("manifest system: load L4 is closed (boarding call issued at 10:45, 14/14 seats)")
    if not isinstance(manifest["exit_altitude"], int):
        raise ValueError(f"manifest system: exit_altitude must be integer feet, got {manifest['exit_altitude']!r}")
    for p in manifest["pairs"]:
        if p["weight_kg"] > 104:
            raise ValueError(f"manifest system: student {p['jumper']} at {p['weight_kg']} kg exceeds the "
                             "tandem student limit of 104 kg")
        if manifest["video"] and p["instructor"] not in ("I-05", "I-09"):
            raise ValueError(f"manifest system: instructor {p['instructor']} holds no video rating for a video booking")
    if not manifest["pairs"]:
        raise ValueError(f"manifest system: booking {manifest['booking']} is paid but has no tandem pairs")
    return {"filed": True, "slip": f"MS-{manifest['booking'][-4:]}"}


class S(TypedDict, total=False):
    booking: dict
    idx: int
    weights: list
    lane: str
    loads: list
    winds: dict
    plan: dict
    instructors: list
    manifest: dict
    receipt: dict


def intake(state: S) -> dict:
    return {"idx": 0, "weights": []}


def weigh_in(state: S) -> dict:
    j = state["booking"]["jumpers"][state["idx"]]
    rec = weigh_jumper.invoke({"jumper_id": j})
    return {"weights": state["weights"] + [rec], "idx": state["idx"] + 1}


def normalise_weights(state: S) -> dict:
    factor = 1.0 if active("sky_unit") else 0.4536
    return {"weights": [{"jumper": w["jumper"], "kg": round(w["weight"] * factor, 1)} for w in state["weights"]]}


def choose_lane(state: S) -> dict:
    heavy = [w for w in state["weights"] if w["kg"] > 104]
    lane = "tandem" if not heavy else "review"
    if active("sky_route") and len(state["weights"]) > 2:
        lane = "review"
    return {"lane": lane}


def review_hold(state: S) -> dict:
    return {"plan": {"load": "HOLD", "exit_altitude": 0, "pairs": 0}, "instructors": []}


def conditions(state: S) -> dict:
    d = state["booking"]["date"]
    return {"winds": fetch_winds.invoke({"date": d}), "loads": fetch_open_loads.invoke({"date": d})}


def plan_load(state: S) -> dict:
    llm = ChatOpenAI(model=MODEL, base_url=server().base_url, api_key="test", max_retries=0)
    ask = {"jumpers": [w["jumper"] for w in state["weights"]], "winds": state["winds"], "open_loads": state["loads"]}
    reply = llm.invoke([SystemMessage("Pick the load and exit altitude for the tandem pairs. Answer JSON."),
                        HumanMessage(json.dumps(ask))], config={"run_name": "load_planner"})
    return {"plan": json.loads(reply.content)}


def build_manifest(state: S) -> dict:
    b = state["booking"]
    pairs = [{"jumper": w["jumper"], "weight_kg": w["kg"], "instructor": None}
             for w in state["weights"]] if state["plan"]["pairs"] else []
    return {"manifest": {"booking": b["id"], "load": state["plan"]["load"], "video": b["video"],
                         "exit_altitude": state["plan"]["exit_altitude"], "pairs": pairs}}


def assign_instructors(state: S) -> dict:
    rating = "video" if state["booking"]["video"] else "tandem"
    m = state["manifest"]
    ids = find_instructor.invoke({"rating": rating, "count": len(m["pairs"])})
    return {"manifest": dict(m, pairs=[dict(p, instructor=i) for p, i in zip(m["pairs"], ids)])}


def submit(state: S) -> dict:
    return {"receipt": file_manifest(state["manifest"])}


def _graph():
    g = StateGraph(S)
    for fn in (intake, weigh_in, normalise_weights, choose_lane, review_hold, conditions, plan_load,
               assign_instructors, build_manifest, submit):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "weigh_in")
    g.add_conditional_edges("weigh_in", lambda s: "more" if s["idx"] < len(s["booking"]["jumpers"]) else "done",
                            {"more": "weigh_in", "done": "normalise_weights"})
    g.add_edge("normalise_weights", "choose_lane")
    g.add_conditional_edges("choose_lane", lambda s: s["lane"], {"tandem": "conditions", "review": "review_hold"})
    g.add_edge("review_hold", "build_manifest")
    g.add_edge("conditions", "plan_load")
    g.add_edge("plan_load", "build_manifest")
    g.add_edge("build_manifest", "assign_instructors")
    g.add_edge("assign_instructors", "submit")
    g.add_edge("submit", END)
    return g.compile()


def record(path, bk: str, fault_id: str | None) -> None:
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"manifest tandem booking {bk}")
    booking: dict[str, Any] = dict(BOOKINGS[bk], id=bk)
    with planted(fault_id):
        try:
            _graph().invoke({"booking": booking}, config={"callbacks": [tracer]})
        except Exception:
            pass


CASES = [
    Case("zt_skydive_1", "sky_unit", "unit_error", "BK-5512", "normalise_weights", 1, "submit", 1,
         "Weights read in pounds are kept as kilograms when the weigh-ins are normalised."),
    Case("zt_skydive_2", "sky_route", "wrong_routing", "BK-6020", "choose_lane", 1, "submit", 1,
         "The lane router sends a three-jumper booking with normal weights to the review hold."),
    Case("zt_skydive_3", "sky_ignore", "tool_ignores_argument", "BK-5512", "find_instructor", 1, "submit", 1,
         "The instructor search ignores its rating argument and returns instructors without a video rating."),
    Case("zt_skydive_4", "sky_cache", "stale_data", "BK-6020", "fetch_open_loads", 1, "submit", 1,
         "The open-loads lookup serves a 07:30 cached list that still shows load L4 as open."),
    Case("zt_skydive_5", "sky_format", "format_drift", "BK-5512", "load_planner", 1, "submit", 1,
         "The load planner answers the exit altitude as the text '13,500 ft' instead of integer feet."),
]
