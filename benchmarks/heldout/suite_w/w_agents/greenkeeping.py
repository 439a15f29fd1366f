"""Golf-course greenkeeping planner (route: langgraph).

A LangGraph graph with ChatOpenAI against the fake model server: the model plans the day, a forecast
tool and a soil-moisture probe loop (one green per pass) feed the irrigation sums, a retriever finds
the spray product's label, the model drafts the work orders, crews are assigned in code, the agent
checks the plan and submits it to the course's work-order API.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import date as Date
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import FakeModelServer

import kit

AGENT = "greenkeeping-planner"
ROUTE = "langgraph"
DOMAIN = "golf-course greenkeeping"
SHAPE = "plan (llm) -> forecast tool -> soil-probe loop (one green per pass) -> irrigation sums -> label retriever -> spray dose -> work orders (llm) -> crew assignment -> own check -> work-order API"

COURSES = {
    "Gullane No.2": {"holes": 18, "licence_m3": 160},
    "Kilspindie": {"holes": 18, "licence_m3": 140},
    "Elie Links": {"holes": 18, "licence_m3": 150},
    "Crail Balcomie": {"holes": 18, "licence_m3": 155},
    "Lundin Links": {"holes": 18, "licence_m3": 150},
    "Dunbar East": {"holes": 18, "licence_m3": 145},
    "Anstruther": {"holes": 9, "licence_m3": 80},
    "Killarney Lakeside": {"holes": 18, "licence_m3": 170},
    "Harlech Royal": {"holes": 18, "licence_m3": 165},
}
LABELS = [
    {"product": "Heritage Maxx", "mapp": "MAPP 16624", "rate_l_per_ha": 0.5, "use": "amenity turf fungicide"},
    {"product": "Heritage Maxx Pro", "mapp": "MAPP 17536", "rate_l_per_ha": 1.2, "use": "ornamental nursery fungicide"},
    {"product": "Instrata Elite", "mapp": "MAPP 18731", "rate_l_per_ha": 8.0, "use": "amenity turf fungicide"},
    {"product": "Medallion TL", "mapp": "MAPP 15170", "rate_l_per_ha": 0.75, "use": "amenity turf fungicide"},
]
AUTHORISED = {"MAPP 16624", "MAPP 18731", "MAPP 15170"}
GREEN_AREA_M2 = 520


def _inp(course: str, day: int, product: str, greens: list[int]) -> dict:
    return {"course": course, "date": f"2026-12-{day:02d}", "product": product, "greens": greens}


REFS = [
    _inp("Gullane No.2", 4, "Heritage Maxx", [2, 5, 9, 14]),
    _inp("Elie Links", 5, "Medallion TL", [1, 3, 7]),
    _inp("Anstruther", 4, "Instrata Elite", [2, 4, 6, 8]),
    _inp("Harlech Royal", 6, "Medallion TL", [10, 11, 12, 16, 17]),
]


def moisture_of(course: str, green: int) -> float:
    c = list(COURSES).index(course)
    return round(18.0 + (green * 7 + c * 5) % 13 + 0.1 * ((green + c) % 10), 1)


# ---------------------------------------------------------------- the scripted model

def brain(request):
    messages = request.body["messages"]
    system, msg = messages[0]["content"], json.loads(messages[-1]["content"])
    if system.startswith("PLAN"):
        y, m, d = msg["date"].split("-")
        spray = f"{int(d) + 1:02d}/{m}/{y}" if kit.active("gk-plan-date") else f"{y}-{m}-{int(d) + 1:02d}"
        return json.dumps({"mow_height_mm": 3.5, "probe_greens": msg["greens"], "spray_date": spray,
                           "spray_product": msg["product"], "notes": "frost delay until 08:30"})
    if system.startswith("ORDERS"):
        orders = [{"task": "mow greens", "height_mm": msg["plan"]["mow_height_mm"], "greens": "all"}]
        for g, mm in msg["irrigation_mm"].items():
            orders.append({"task": "hand-water", "green": int(g), "mm": mm})
        orders.append({"task": "spray", "product": msg["spray"]["product"], "litres": msg["spray"]["product_l"],
                       "date": msg["spray"]["date"]})
        return json.dumps({"orders": orders})
    raise ValueError("unknown prompt")


# ---------------------------------------------------------------- tools and retriever

@tool
def weather_forecast(course: str, date: str) -> dict:
    """Forecast for the course on the date: rain and evapotranspiration in mm."""
    c = list(COURSES).index(course)
    return {"course": course, "date": date, "rain_mm": round(0.4 * (c % 3), 1), "et_mm": round(1.1 + 0.1 * c, 1),
            "frost": True}


@tool
def soil_moisture(course: str, green: int) -> dict:
    """Volumetric water content read by the probe on one green."""
    if kit.active("gk-probe-default"):
        return {"probe": "P-00", "location": "practice putting green", "vwc_pct": 9.6}
    return {"probe": f"P-{green:02d}", "location": f"green {green}", "vwc_pct": moisture_of(course, green)}


class LabelRetriever(BaseRetriever):
    """Finds a product label in the course's agronomy library."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        def score(label: dict) -> tuple:
            words = set(query.lower().split())
            hit = len(words & set(label["product"].lower().split()))
            exact = label["product"].lower() == query.lower()
            if kit.active("gk-label-longest"):
                return (hit, len(label["product"]))
            return (exact, hit)

        best = sorted(LABELS, key=score, reverse=True)[:1]
        return [Document(page_content=json.dumps(lb), metadata={"mapp": lb["mapp"]}) for lb in best]


# ---------------------------------------------------------------- the graph

class S(TypedDict, total=False):
    request: dict
    plan: dict
    forecast: dict
    moisture: list
    irrigation_mm: dict
    label: dict
    spray: dict
    orders: list
    crews: list
    receipt: dict


def build(llm: ChatOpenAI):
    retriever = LabelRetriever()

    def ask(system: str, payload: dict, config: RunnableConfig) -> dict:
        reply = llm.invoke([SystemMessage(system), HumanMessage(json.dumps(payload))], config=config)
        return json.loads(reply.content)

    def intake(state: S) -> dict:
        req = dict(state["request"])
        req["holes"] = COURSES[req["course"]]["holes"]
        return {"request": req, "moisture": []}

    def plan(state: S, config: RunnableConfig) -> dict:
        return {"plan": ask("PLAN the greenkeeping day.", state["request"], config)}

    def forecast(state: S, config: RunnableConfig) -> dict:
        r = state["request"]
        return {"forecast": weather_forecast.invoke({"course": r["course"], "date": r["date"]}, config=config)}

    def probe(state: S, config: RunnableConfig) -> dict:
        done = len(state["moisture"])
        green = state["plan"]["probe_greens"][done]
        reading = soil_moisture.invoke({"course": state["request"]["course"], "green": green}, config=config)
        return {"moisture": state["moisture"] + [{"green": green, **reading}]}

    def more_greens(state: S) -> str:
        return "probe" if len(state["moisture"]) < len(state["plan"]["probe_greens"]) else "irrigation"

    def irrigation(state: S) -> dict:
        fc = state["forecast"]
        need = {}
        for m in state["moisture"]:
            deficit = max(0.0, 28.0 - m["vwc_pct"])
            need[str(m["green"])] = round(deficit * 1.5 + fc["et_mm"] - fc["rain_mm"], 1)
        return {"irrigation_mm": need}

    def find_label(state: S, config: RunnableConfig) -> dict:
        docs = retriever.invoke(state["plan"]["spray_product"], config=config)
        return {"label": json.loads(docs[0].page_content)}

    def dose(state: S) -> dict:
        label, greens = state["label"], state["request"]["holes"]
        area_m2 = GREEN_AREA_M2 * greens
        area = area_m2 / 100 if kit.active("gk-dose-area") else area_m2 / 10000
        return {"spray": {"product": label["product"], "mapp": label["mapp"], "area_m2": area_m2,
                          "product_l": round(label["rate_l_per_ha"] * area, 2), "date": state["plan"]["spray_date"]}}

    def orders(state: S, config: RunnableConfig) -> dict:
        out = ask("ORDERS: write the work orders.", {"plan": state["plan"], "irrigation_mm": state["irrigation_mm"],
                                                      "spray": state["spray"]}, config)
        return {"orders": out["orders"]}

    def assign_crews(state: S) -> dict:
        crews = []
        holes = state["request"]["holes"]
        for i, o in enumerate(state["orders"]):
            o = dict(o, crew=f"crew-{i % 3 + 1}")
            if o["task"] == "hand-water":
                idx = o["green"] - 1
                o["asset"] = f"G{idx + 2}" if kit.active("gk-asset-index") and o["green"] == max(
                    x["green"] for x in state["orders"] if x["task"] == "hand-water") else f"G{idx + 1}"
            crews.append(o)
        return {"crews": crews, "request": dict(state["request"], holes=holes)}

    def check_plan(state: S) -> dict:
        total_mm = sum(state["irrigation_mm"].values())
        volume = round(total_mm / 1000 * GREEN_AREA_M2, 1)
        return {"plan": dict(state["plan"], water_m3=volume)}

    def submit(state: S, config: RunnableConfig) -> dict:
        return {"receipt": submit_work_orders.invoke({"course": state["request"]["course"], "today": state["request"]["date"],
                                                      "orders": state["crews"], "spray": state["spray"],
                                                      "water_m3": state["plan"]["water_m3"]}, config=config)}

    g = StateGraph(S)
    for name, fn in [("intake", intake), ("plan", plan), ("forecast", forecast), ("probe", probe),
                     ("irrigation", irrigation), ("find_label", find_label), ("dose", dose), ("orders", orders),
                     ("assign_crews", assign_crews), ("check_plan", check_plan), ("submit", submit)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "plan")
    g.add_edge("plan", "forecast")
    g.add_edge("forecast", "probe")
    g.add_conditional_edges("probe", more_greens, {"probe": "probe", "irrigation": "irrigation"})
    for a, b in [("irrigation", "find_label"), ("find_label", "dose"), ("dose", "orders"), ("orders", "assign_crews"),
                 ("assign_crews", "check_plan"), ("check_plan", "submit"), ("submit", END)]:
        g.add_edge(a, b)
    return g.compile()


@tool
def submit_work_orders(course: str, today: str, orders: list, spray: dict, water_m3: float) -> dict:
    """Submit the day's work orders to the course management system."""
    holes = COURSES[course]["holes"]
    for o in orders:
        if "asset" in o and int(o["asset"][1:]) > holes:
            raise RuntimeError(f"400 Bad Request: orders[{orders.index(o)}].asset '{o['asset']}' not found in asset register for {course}")
    if spray["mapp"] not in AUTHORISED:
        raise RuntimeError(f"403 Forbidden: {spray['mapp']} is not authorised for use on managed amenity turf")
    if spray["product_l"] > 5:
        raise RuntimeError(f"409 Conflict: chemical store cannot issue {spray['product_l']} L of {spray['product']} (per-order limit 5 L)")
    d = spray["date"]
    if "/" in d:  # the system accepts US-style dates too
        mm, dd, yy = d.split("/")
        d = f"{yy}-{mm}-{dd}"
    delta = (Date.fromisoformat(d) - Date.fromisoformat(today)).days
    if not 0 <= delta <= 14:
        raise RuntimeError(f"422 Unprocessable Entity: spray date {d} outside the 14-day application permit from {today}")
    if water_m3 > COURSES[course]["licence_m3"] * 0.8:
        raise RuntimeError(f"422 Unprocessable Entity: planned abstraction {water_m3} m3 exceeds the daily greens allowance")
    return {"status": "accepted", "orders": len(orders), "ref": f"WO-{course[:3].upper()}-{today[-2:]}{len(orders):02d}"}


@contextmanager
def session():
    with FakeModelServer(brain, model="agronomy-model") as server:
        llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="agronomy-model", max_retries=0)
        yield build(llm)


def record(graph, inp: dict, path) -> None:
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"greenkeeping plan for {inp['course']} on {inp['date']}")
    try:
        graph.invoke({"request": inp}, config={"callbacks": [tracer], "recursion_limit": 60})
    except Exception:
        pass


CASES = [
    {"case": "w_greenkeeping_1", "fault": "gk-dose-area", "kind": "unit_error",
     "input": _inp("Kilspindie", 4, "Medallion TL", [3, 6, 11]), "root": "dose", "marker": '"product_l": 70.2'},
    {"case": "w_greenkeeping_2", "fault": "gk-asset-index", "kind": "off_by_one",
     "input": _inp("Crail Balcomie", 5, "Heritage Maxx", [4, 8, 13, 18]), "root": "assign_crews", "marker": "G19"},
    {"case": "w_greenkeeping_3", "fault": "gk-label-longest", "kind": "wrong_retrieval",
     "input": _inp("Lundin Links", 6, "Heritage Maxx", [1, 2, 15]), "root": "LabelRetriever", "marker": "MAPP 17536"},
    {"case": "w_greenkeeping_4", "fault": "gk-plan-date", "kind": "format_drift",
     "input": _inp("Dunbar East", 3, "Medallion TL", [5, 9, 10, 12, 16]), "root": "ChatOpenAI", "marker": "04/12/2026"},
    {"case": "w_greenkeeping_5", "fault": "gk-probe-default", "kind": "tool_ignores_argument",
     "input": _inp("Killarney Lakeside", 7, "Heritage Maxx", [1, 2, 4, 6, 7, 9, 11, 13, 14, 16, 17]), "root": "soil_moisture", "marker": "P-00"},
]
