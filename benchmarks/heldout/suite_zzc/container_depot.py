"""Shipping container repair depot: survey intake, damage loop, tariff lookup, estimate sub-graph, repair order (langgraph)."""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, brain, last_user
from .kit import active

NAME = "container-repair-depot"
ROUTE = "langgraph"
DOMAIN = "shipping container repair depot"
SHAPE = "survey LLM, parse node, panel inspection loop, tariff lookup, routing, estimate sub-graph, repair order tool"

INPUTS = {
    "msku": {"unit": "MSKU4471203", "owner": "MAEU", "panels": ["door", "roof", "left"], "size": "40HC"},
    "tgh": {"unit": "TGHU9902114", "owner": "TGHU", "panels": ["floor", "right"], "size": "20GP"},
    "r1": {"unit": "CAIU5521870", "owner": "CAIU", "panels": ["roof", "floor"], "size": "40HC"},
    "r2": {"unit": "SEGU3318405", "owner": "SEGU", "panels": ["door"], "size": "20GP"},
    "r3": {"unit": "TRHU6640912", "owner": "TRHU", "panels": ["left", "right", "roof"], "size": "40GP"},
    "r4": {"unit": "FCIU2207783", "owner": "FCIU", "panels": ["door", "floor"], "size": "20GP"},
}
REFS = ["r1", "r2", "r3", "r4"]

DAMAGE = {"door": ("dent", 35), "roof": ("hole", 12), "left": ("dent", 60), "right": ("scratch", 80),
          "floor": ("delam", 45)}
TARIFF = {"MAEU": {"dent": 42.0, "hole": 118.0, "scratch": 9.0, "delam": 75.0},
          "TGHU": {"dent": 38.0, "hole": 110.0, "scratch": 8.0, "delam": 70.0},
          "CAIU": {"dent": 40.0, "hole": 115.0, "scratch": 9.5, "delam": 72.0},
          "SEGU": {"dent": 41.0, "hole": 112.0, "scratch": 8.5, "delam": 71.0},
          "TRHU": {"dent": 39.0, "hole": 109.0, "scratch": 8.0, "delam": 69.0},
          "FCIU": {"dent": 43.0, "hole": 120.0, "scratch": 9.0, "delam": 76.0}}

CASES = [
    Case("depot_inspect_other_unit", "dep1", "wrong_tool_args", "msku", ("ChatOpenAI", 2, "llm"),
         ("create_repair_order", 1),
         "The model asks the panel inspector for the previous unit's number, so the damage lines belong to another container."),
    Case("depot_size_code_shape", "dep2", "format_drift", "tgh", ("read_csc_plate", 1, "tool"),
         ("create_repair_order", 1),
         "The CSC plate service answers the size as a length in feet instead of the ISO code, which the order rejects."),
    Case("depot_estimate_for_other", "dep3", "subagent_wrong_entity", "msku", ("assign_estimate_job", 1, "other"),
         ("create_repair_order", 1),
         "The estimate sub-graph is started for the owner's previous container, so the priced unit differs from the surveyed one."),
    Case("depot_routed_to_scrap", "dep4", "wrong_routing", "tgh", ("route_after_inspection", 1, "other"),
         ("create_repair_order", 1),
         "The router sends a repairable unit to the scrap path, so no repair estimate reaches the order."),
    Case("depot_tariff_other_owner", "dep5", "wrong_retrieval", "msku", ("lookup_tariff", 1, "tool"),
         ("create_repair_order", 1),
         "The tariff lookup returns another lessor's rate card, so the line prices disagree with the owner's contract."),
]


@brain("depot")
def _brain(body: dict) -> str:
    req = json.loads(last_user(body))
    if req["ask"] == "survey":
        return json.dumps({"unit": req["unit"], "owner": req["owner"], "panels": req["panels"]})
    if req["ask"] == "pick":
        unit = req["unit"]
        if active("dep1"):
            unit = req["previous_unit"]
        return json.dumps({"unit": unit, "panel": req["panel"]})
    if req["ask"] == "estimate":
        lines = [{"panel": d["panel"], "code": d["code"], "price": req["tariff"][d["code"]]} for d in req["damage"]]
        return json.dumps({"lines": lines, "total": round(sum(x["price"] for x in lines), 2)})
    return "{}"


def _ask(llm: ChatOpenAI, payload: dict, config) -> dict:
    msg = llm.invoke([SystemMessage("[agent:depot] You are a depot surveyor. Answer JSON."),
                      HumanMessage(json.dumps(payload))], config=config)
    return json.loads(msg.content)


@tool
def read_csc_plate(unit: str) -> dict:
    """Read a container's CSC safety plate."""
    size = INPUTS_BY_UNIT[unit]["size"]
    if active("dep2"):
        size = "40ft" if size.startswith("40") else "20ft"
    return {"unit": unit, "size": size, "csc_valid": True}


@tool
def inspect_panel(unit: str, panel: str) -> dict:
    """Inspect one panel of a container."""
    code, mm = DAMAGE[panel]
    return {"unit": unit, "panel": panel, "code": code, "size_mm": mm}


@tool
def lookup_tariff(owner: str) -> dict:
    """Get a lessor's repair rate card."""
    key = owner
    if active("dep5"):
        key = "TGHU" if owner != "TGHU" else "MAEU"
    return {"owner": owner, "rates": TARIFF[key], "card": f"RC-{key}-2026"}


@tool
def create_repair_order(order: dict) -> dict:
    """File the repair order with the lessor's M&R system."""
    unit = INPUTS_BY_UNIT.get(order["unit"])
    errs = []
    if order.get("size") not in ("20GP", "40GP", "40HC", "45HC"):
        errs.append(f"size '{order.get('size')}' is not an ISO 6346 size-type code")
    if order.get("disposition") != "repair":
        errs.append(f"disposition '{order.get('disposition')}' has no repair lines for {order['unit']}")
    else:
        if order["estimate_unit"] != order["unit"]:
            errs.append(f"estimate references {order['estimate_unit']}, order is for {order['unit']}")
        card = TARIFF[unit["owner"]]
        for ln in order["lines"]:
            if card[ln["code"]] != ln["price"]:
                errs.append(f"line {ln['panel']} {ln['code']} priced {ln['price']} but contract rate is {card[ln['code']]}")
        if any(d["unit"] != order["unit"] for d in order["damage"]):
            errs.append(f"damage record for another unit in order {order['unit']}")
    if errs:
        raise ValueError("M&R API 400 Bad Request: " + "; ".join(errs))
    return {"order": f"RO-{order['unit']}", "status": "approved"}


INPUTS_BY_UNIT = {v["unit"]: v for v in INPUTS.values()}
PREVIOUS = {v["unit"]: INPUTS[k]["unit"] for k, v in zip(["r4", "r1", "r2", "r3", "msku", "tgh"], INPUTS.values())}


class Estimate(TypedDict, total=False):
    unit: str
    owner: str
    damage: list
    tariff: dict
    estimate: dict


class Depot(TypedDict, total=False):
    request: dict
    survey: dict
    plate: dict
    damage: Annotated[list, operator.add]
    todo: list
    disposition: str
    job: dict
    estimate: dict
    result: dict


def build(llm: ChatOpenAI):
    def price(state: Estimate, config) -> dict:
        t = lookup_tariff.invoke({"owner": state["owner"]}, config=config)
        est = _ask(llm, {"ask": "estimate", "damage": state["damage"], "tariff": t["rates"]}, config)
        return {"tariff": t, "estimate": {**est, "unit": state["unit"]}}

    sub = StateGraph(Estimate)
    sub.add_node("price_lines", price)
    sub.add_edge(START, "price_lines")
    sub.add_edge("price_lines", END)
    estimator = sub.compile()

    def survey(state: Depot, config) -> dict:
        r = state["request"]
        s = _ask(llm, {"ask": "survey", **r}, config)
        plate = read_csc_plate.invoke({"unit": s["unit"]}, config=config)
        return {"survey": s, "plate": plate, "todo": list(s["panels"])}

    def inspect(state: Depot, config) -> dict:
        panel = state["todo"][0]
        unit = state["survey"]["unit"]
        pick = _ask(llm, {"ask": "pick", "unit": unit, "panel": panel, "previous_unit": PREVIOUS[unit]}, config)
        d = inspect_panel.invoke(pick, config=config)
        return {"damage": [d], "todo": state["todo"][1:]}

    def more(state: Depot) -> str:
        return "inspect" if state["todo"] else "triage"

    def triage(state: Depot) -> dict:
        worst = max(d["size_mm"] for d in state["damage"])
        return {"disposition": "repair" if worst < 200 else "scrap"}

    def route_after_inspection(state: Depot) -> str:
        choice = state["disposition"]
        if active("dep4"):
            choice = "scrap"
        return "assign_estimate_job" if choice == "repair" else "file_order"

    def assign_estimate_job(state: Depot) -> dict:
        unit = state["survey"]["unit"]
        if active("dep3"):
            unit = PREVIOUS[unit]
        return {"job": {"unit": unit, "owner": state["survey"]["owner"], "damage": state["damage"]}}

    def dispatch_estimate(state: Depot, config) -> dict:
        out = estimator.invoke(state["job"], config=config)
        return {"estimate": out["estimate"]}

    def file_order(state: Depot, config) -> dict:
        est = state.get("estimate") or {}
        disp = "repair" if est else "scrap"
        order = {"unit": state["survey"]["unit"], "size": state["plate"]["size"], "disposition": disp,
                 "estimate_unit": est.get("unit"), "lines": est.get("lines", []), "damage": state["damage"]}
        return {"result": create_repair_order.invoke({"order": order}, config=config)}

    g = StateGraph(Depot)
    g.add_node("survey", survey)
    g.add_node("inspect", inspect)
    g.add_node("triage", triage)
    g.add_node("assign_estimate_job", assign_estimate_job)
    g.add_node("dispatch_estimate", dispatch_estimate)
    g.add_node("file_order", file_order)
    g.add_edge(START, "survey")
    g.add_edge("survey", "inspect")
    g.add_conditional_edges("inspect", more, ["inspect", "triage"])
    g.add_conditional_edges("triage", route_after_inspection, ["assign_estimate_job", "file_order"])
    g.add_edge("assign_estimate_job", "dispatch_estimate")
    g.add_edge("dispatch_estimate", "file_order")
    g.add_edge("file_order", END)
    return g.compile()


def record(inp: dict, path: Path, server) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"repair survey {inp['unit']}")
    try:
        build(llm).invoke({"request": inp, "damage": []}, config={"callbacks": [tracer]})
    except ValueError:
        pass
