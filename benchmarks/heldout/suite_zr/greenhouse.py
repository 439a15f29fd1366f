"""Hydroponic greenhouse (LangGraph): read each grow bay, dose nutrients per bay, send one dosing order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from . import common
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "hydro-doser", "langgraph", "hydroponic greenhouse", "jsonl"

HOUSES = {
    "GH-North": {"crop": "butterhead lettuce", "bays": ["B1", "B2", "B3", "B4"], "tank_l": 400},
    "GH-South": {"crop": "genovese basil", "bays": ["S1", "S2", "S3", "S4", "S5"], "tank_l": 250},
    "GH-East": {"crop": "pak choi", "bays": ["E1", "E2", "E3"], "tank_l": 300},
    "GH-West": {"crop": "rocket", "bays": ["W1", "W2", "W3", "W4"], "tank_l": 350},
    "GH-Prop": {"crop": "basil seedlings", "bays": ["P1", "P2"], "tank_l": 120},
    "GH-Trial": {"crop": "strawberry", "bays": ["T1", "T2", "T3"], "tank_l": 500},
}
REFS = ["GH-East", "GH-West", "GH-Prop", "GH-Trial"]
RECIPES = {"butterhead lettuce": 1.4, "genovese basil": 1.8, "pak choi": 1.6, "rocket": 1.5, "basil seedlings": 1.2, "strawberry": 2.0}


def _ec(bay: str) -> float:
    return round(0.7 + (sum(map(ord, bay)) % 7) * 0.06, 2)


@common.handler("gh:dose")
def _dose(msgs, tools):
    d = json.loads(common.last_user(msgs))
    ml = max(0.0, (d["target_ec"] - d["ec"]) * d["tank_l"] * 0.8)
    return json.dumps({"bay": d["bay"], "stock_a_ml": round(ml, 1), "stock_b_ml": round(ml, 1)})


def _llm() -> ChatOpenAI:
    return ChatOpenAI(model="gpt-4o-mini", base_url=common.server().base_url, api_key="test-key", max_retries=0, temperature=0)


@tool
def fetch_recipe(crop: str) -> dict:
    """Fetch the current nutrient recipe for a crop."""
    if active("gh_recipe_old"):
        return {"crop": crop, "recipe": f"R-{crop.split()[-1].upper()}-v2", "target_ec": RECIPES[crop] - 0.2, "valid_until": "2026-11-30"}
    return {"crop": crop, "recipe": f"R-{crop.split()[-1].upper()}-v3", "target_ec": RECIPES[crop], "valid_until": "2027-03-31"}


@tool
def read_sensors(house: str, bay: str) -> dict:
    """Read EC and pH sensors of one bay."""
    if active("gh_sensor_bay"):
        bay = HOUSES[house]["bays"][0]
    return {"bay": bay, "sensor": f"SN-{bay}", "ec": _ec(bay), "ph": 6.0}


class S(TypedDict, total=False):
    house: str
    recipe: dict
    bays: list
    idx: int
    reading: dict
    dose: dict
    log: dict
    order: dict
    controller_order: dict


def load_recipe(s: S) -> dict:
    return {"recipe": fetch_recipe.invoke({"crop": HOUSES[s["house"]]["crop"]}), "idx": 0, "log": {}}


def plan_bays(s: S) -> dict:
    bays = HOUSES[s["house"]]["bays"]
    n = len(bays)
    return {"bays": [bays[i] for i in range(1, n)] if active("gh_bay_range") else list(bays)}


def read_bay(s: S) -> dict:
    return {"reading": read_sensors.invoke({"house": s["house"], "bay": s["bays"][s["idx"]]})}


def dose_model(s: S) -> dict:
    r = s["reading"]
    ask = {"bay": s["bays"][s["idx"]], "ec": r["ec"], "target_ec": s["recipe"]["target_ec"], "tank_l": HOUSES[s["house"]]["tank_l"]}
    out = _llm().invoke([SystemMessage("[gh:dose] You size nutrient doses. Answer JSON."), HumanMessage(json.dumps(ask))])
    return {"dose": json.loads(out.content)}


def log_bay(s: S) -> dict:
    log = dict(s["log"])
    bay = s["bays"][s["idx"]]
    key = s["bays"][s["idx"] - 1] if active("gh_log_key") and s["idx"] > 0 else bay
    log[key] = {**s["dose"], "sensor": s["reading"]["sensor"]}
    return {"log": log, "idx": s["idx"] + 1}


def more_bays(s: S) -> str:
    return "read_bay" if s["idx"] < len(s["bays"]) else "compile_order"


def compile_order(s: S) -> dict:
    lines = [{"bay": b, **v} for b, v in sorted(s["log"].items())]
    return {"order": {"house": s["house"], "recipe": s["recipe"]["recipe"], "lines": lines,
                      "total_ml": round(sum(l["stock_a_ml"] + l["stock_b_ml"] for l in lines), 1)}}


def to_controller_units(s: S) -> dict:
    o = s["order"]
    div = 100.0 if active("gh_units") else 1000.0
    return {"controller_order": {**o, "lines": [{"bay": l["bay"], "sensor": l["sensor"], "stock_a_l": round(l["stock_a_ml"] / div, 3),
                                                  "stock_b_l": round(l["stock_b_ml"] / div, 3)} for l in o["lines"]]}}


def submit_dosing(s: S) -> dict:
    o = s["controller_order"]
    house = HOUSES[s["house"]]
    if o["recipe"].endswith("-v2"):
        raise ValueError(f"fertigation controller 409: recipe {o['recipe']} was retired on 2026-11-30; current revision is v3")
    got = [l["bay"] for l in o["lines"]]
    if got != house["bays"]:
        missing = [b for b in house["bays"] if b not in got]
        raise ValueError(f"fertigation controller 422: dosing order for {s['house']} has no line for bay(s) {', '.join(missing)}")
    for l in o["lines"]:
        if l["sensor"] != f"SN-{l['bay']}":
            raise ValueError(f"fertigation controller 422: line {l['bay']} cites sensor {l['sensor']}, which is not installed in that bay")
        if l["stock_a_l"] > house["tank_l"] * 0.004:
            raise ValueError(f"fertigation controller 422: bay {l['bay']} stock A {l['stock_a_l']} L exceeds the dosing pump limit {house['tank_l'] * 0.004:.2f} L")
    return {"accepted": True}


def _graph():
    g = StateGraph(S)
    for n in ("load_recipe", "plan_bays", "read_bay", "dose_model", "log_bay", "compile_order", "to_controller_units", "submit_dosing"):
        g.add_node(n, globals()[n])
    g.add_edge(START, "load_recipe")
    g.add_edge("load_recipe", "plan_bays")
    g.add_edge("plan_bays", "read_bay")
    g.add_edge("read_bay", "dose_model")
    g.add_edge("dose_model", "log_bay")
    g.add_conditional_edges("log_bay", more_bays, ["read_bay", "compile_order"])
    g.add_edge("compile_order", "to_controller_units")
    g.add_edge("to_controller_units", "submit_dosing")
    g.add_edge("submit_dosing", END)
    return g.compile()


GRAPH = None


def record(house: str, path: Path) -> None:
    global GRAPH
    if GRAPH is None:
        GRAPH = _graph()
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"nutrient dosing for {house}")
    try:
        GRAPH.invoke({"house": house}, config={"callbacks": [tracer], "run_name": AGENT, "recursion_limit": 100})
    except ValueError:
        pass


CASES = [
    dict(case="zr_gh_01", fault_id="gh_units", kind="unit_error", input="GH-North", root=("to_controller_units", 1),
         failure=("submit_dosing", 1), description="the controller conversion divides millilitres by 100 instead of 1000, so every line is ten times too large."),
    dict(case="zr_gh_02", fault_id="gh_sensor_bay", kind="tool_ignores_argument", input="GH-South", root=("read_sensors", 2),
         failure=("submit_dosing", 1), description="the sensor tool ignores the bay argument and returns the first bay's sensor for every bay."),
    dict(case="zr_gh_03", fault_id="gh_log_key", kind="bad_memory_write", input="GH-North", root=("log_bay", 2),
         failure=("submit_dosing", 1), description="the bay log writes the second bay's dose under the first bay's key, overwriting it."),
    dict(case="zr_gh_04", fault_id="gh_recipe_old", kind="stale_data", input="GH-South", root=("fetch_recipe", 1),
         failure=("submit_dosing", 1), description="the recipe service returns last season's retired recipe revision."),
    dict(case="zr_gh_05", fault_id="gh_bay_range", kind="off_by_one", input="GH-North", root=("plan_bays", 1),
         failure=("submit_dosing", 1), description="bay planning starts its range at 1 and leaves out the first bay."),
]
