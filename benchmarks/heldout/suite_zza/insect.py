"""Insect protein farm (LangGraph): larvae harvest order, sensors, LLM harvest plan, drying sub-graph, quote, certificate, dispatch."""



import json
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from .common import request_text
from .kit import active

AGENT = "insect-protein-harvest"
ROUTE = "langgraph"
DOMAIN = "insect protein farm"
SHAPE = "StateGraph: intake -> sensor node (tool loop) -> LLM harvest plan -> parse -> drying sub-graph (LLM + dryer tools) -> LLM cold-room booking -> certificate -> price quote -> dispatch"

ORDERS = {
    "A": {"order": "IP-7702", "buyer": "Nordfeed", "species": "BSF larvae", "grade": "food", "lot": "LOT-31", "crates": ["C11", "C12", "C13"]},
    "B": {"order": "IP-7719", "buyer": "AquaPro", "species": "mealworm", "grade": "food", "lot": "LOT-34", "crates": ["C21", "C22"]},
    "R1": {"order": "IP-7650", "buyer": "PetNova", "species": "BSF larvae", "grade": "feed", "lot": "LOT-25", "crates": ["C01", "C02"]},
    "R2": {"order": "IP-7661", "buyer": "Nordfeed", "species": "mealworm", "grade": "food", "lot": "LOT-27", "crates": ["C05", "C06", "C07"]},
    "R3": {"order": "IP-7673", "buyer": "FishFirst", "species": "BSF larvae", "grade": "feed", "lot": "LOT-28", "crates": ["C08"]},
    "R4": {"order": "IP-7688", "buyer": "AquaPro", "species": "BSF larvae", "grade": "food", "lot": "LOT-29", "crates": ["C09", "C10"]},
}
INPUTS = ORDERS
REFS = ["R1", "R2", "R3", "R4"]
TODAY = "2026-12-05"
PRICE = {("BSF larvae", "food"): 7.9, ("BSF larvae", "feed"): 3.1, ("mealworm", "food"): 11.4, ("mealworm", "feed"): 4.6}


def crate_mass(c: str) -> float:
    return round(10 + (int(c[1:]) % 7) * 1.3, 1)


@tool
def crate_sensors(crate: str) -> dict:
    """Read the latest moisture and mass for a larvae crate."""
    day = "2026-12-03" if (active("insect_01") and crate.endswith("2")) else TODAY
    return {"crate": crate, "mass_kg": crate_mass(crate), "moisture_pct": 61.0, "read_on": day}


@tool
def dryer_log(lot: str, program: str) -> dict:
    """Start a drying program for a lot and return the dryer log."""
    return {"lot": lot, "program": program, "residual_moisture_pct": 7.5, "dryer": "DR-2"}


@tool
def reserve_cold_room(room: str, kg: float) -> dict:
    """Reserve space in a cold room for dried product."""
    return {"room": room, "reserved_kg": kg, "slot": "R-" + room}


@tool
def quote_price(species: str, grade: str, kg: float) -> dict:
    """Price a product for a species and grade per kilogram."""
    g = "feed" if active("insect_04") else grade
    return {"species": species, "grade": grade, "eur_per_kg": PRICE[(species, g)], "total_eur": round(PRICE[(species, g)] * kg, 2)}


class S(TypedDict, total=False):
    order: dict
    readings: list
    plan_text: str
    plan: dict
    drying: dict
    cold_room: dict
    quote: dict
    certificate: dict
    receipt: dict


class D(TypedDict, total=False):
    lot: str
    kg: float
    log: dict


def policy(request: Any) -> Any:
    system, text = request_text(request)
    if "harvest planner" in system:
        readings = json.loads(re.search(r"READINGS (\[.*\])", text).group(1))
        kg = round(sum(r["mass_kg"] for r in readings) * 0.3, 1)
        if active("insect_03"):
            return json.dumps({"crates": [r["crate"] for r in readings], "dry_kg": f"{kg}".replace(".", ",")})
        return json.dumps({"crates": [r["crate"] for r in readings], "dry_kg": kg})
    if "drying operator" in system:
        lot = re.search(r"LOT (\S+)", text).group(1)
        return Reply(tool_calls=(tool_call("dryer_log", {"lot": lot, "program": "P-low-temp"}),))
    if "cold store clerk" in system:
        kg = float(re.search(r"KG ([0-9.]+)", text).group(1))
        if active("insect_02"):
            kg = round(kg / 10, 1)
        return Reply(tool_calls=(tool_call("reserve_cold_room", {"room": "CR1", "kg": kg}),))
    return "ok"


def build(base_url: str) -> Any:
    llm = ChatOpenAI(model="fake-model", base_url=base_url, api_key="sk-local-test", max_retries=0)

    def intake(state: S) -> S:
        return {"order": dict(state["order"])}

    def read_sensors(state: S, config: RunnableConfig) -> S:
        return {"readings": [crate_sensors.invoke({"crate": c}, config) for c in state["order"]["crates"]]}

    def plan_harvest(state: S, config: RunnableConfig) -> S:
        msg = llm.invoke([SystemMessage("You are the harvest planner. Answer JSON."),
                          HumanMessage(f"ORDER {state['order']['order']} READINGS {json.dumps(state['readings'])}")], config)
        return {"plan_text": msg.content}

    def parse_plan(state: S) -> S:
        raw = json.loads(state["plan_text"])
        kg = raw["dry_kg"]
        kg = float(kg.replace(",", "")) if isinstance(kg, str) else float(kg)
        return {"plan": {"crates": raw["crates"], "dry_kg": kg}}

    def dry_operator(d: D, config: RunnableConfig) -> D:
        msg = llm.invoke([SystemMessage("You are the drying operator."), HumanMessage(f"LOT {d['lot']} KG {d['kg']}")], config)
        call = msg.tool_calls[0]
        return {"log": dryer_log.invoke(call["args"], config)}

    sub = StateGraph(D)
    sub.add_node("dry_operator", dry_operator)
    sub.add_edge(START, "dry_operator")
    sub.add_edge("dry_operator", END)
    drying_graph = sub.compile()

    def delegate_drying(state: S, config: RunnableConfig) -> S:
        lot = state["order"]["lot"]
        if active("insect_05"):
            lot = f"LOT-{int(lot[4:]) - 1}"
        out = drying_graph.invoke({"lot": lot, "kg": state["plan"]["dry_kg"]}, config)
        return {"drying": out["log"]}

    def book_cold_room(state: S, config: RunnableConfig) -> S:
        msg = llm.invoke([SystemMessage("You are the cold store clerk."), HumanMessage(f"LOT {state['order']['lot']} KG {state['plan']['dry_kg']}")], config)
        return {"cold_room": reserve_cold_room.invoke(msg.tool_calls[0]["args"], config)}

    def price(state: S, config: RunnableConfig) -> S:
        o = state["order"]
        return {"quote": quote_price.invoke({"species": o["species"], "grade": o["grade"], "kg": state["plan"]["dry_kg"]}, config)}

    def certify(state: S) -> S:
        o = state["order"]
        for r in state["readings"]:
            if r["read_on"] != TODAY:
                raise ValueError(f"certificate check: crate {r['crate']} moisture reading from {r['read_on']} is older than 24 h")
        if state["drying"]["lot"] != o["lot"]:
            raise ValueError(f"certificate check: dryer log is for {state['drying']['lot']}, order {o['order']} ships {o['lot']}")
        return {"certificate": {"lot": o["lot"], "residual_moisture_pct": state["drying"]["residual_moisture_pct"], "grade": o["grade"]}}

    def dispatch(state: S) -> S:
        o, q, p = state["order"], state["quote"], state["plan"]
        total_crate = sum(crate_mass(c) for c in o["crates"])
        if p["dry_kg"] > total_crate:
            raise RuntimeError(f"dispatch API 422: {p['dry_kg']} kg dried product exceeds harvested mass {round(total_crate, 1)} kg")
        if state["cold_room"]["reserved_kg"] < p["dry_kg"]:
            raise RuntimeError(f"dispatch API 409: cold room CR1 holds {state['cold_room']['reserved_kg']} kg, pallet needs {p['dry_kg']} kg")
        floor = PRICE[(o["species"], o["grade"])]
        if q["eur_per_kg"] < floor:
            raise RuntimeError(f"dispatch API 422: invoice price {q['eur_per_kg']} EUR/kg below {o['grade']}-grade floor {floor} EUR/kg")
        return {"receipt": {"status": 201, "order": o["order"], "kg": p["dry_kg"]}}

    g = StateGraph(S)
    for name, fn in [("intake", intake), ("read_sensors", read_sensors), ("plan_harvest", plan_harvest), ("parse_plan", parse_plan),
                     ("delegate_drying", delegate_drying), ("book_cold_room", book_cold_room), ("certify", certify),
                     ("price", price), ("dispatch", dispatch)]:
        g.add_node(name, fn)
    order = ["intake", "read_sensors", "plan_harvest", "parse_plan", "delegate_drying", "book_cold_room", "certify", "price", "dispatch"]
    g.add_edge(START, order[0])
    for a, b in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge(order[-1], END)
    return g.compile()


def record(key: str, path: Path, base_url: str) -> None:
    graph = build(base_url)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"harvest and ship order {ORDERS[key]['order']}")
    try:
        graph.invoke({"order": ORDERS[key]}, config={"callbacks": [tracer]})
    except (ValueError, RuntimeError):
        pass


CASES = [
    dict(case="insect_01", fault_kind="stale_data", input="A", root=("crate_sensors", 2, "tool"), failure=("certify", 1),
         description="The crate sensor tool answers crate C12 from a two-day-old cache, and the certificate check rejects the reading date."),
    dict(case="insect_02", fault_kind="wrong_tool_args", input="B", root=("ChatOpenAI", 3, "llm"), failure=("dispatch", 1),
         description="The cold-store clerk model calls the reservation tool with a tenth of the dried mass, so the cold room is too small at dispatch."),
    dict(case="insect_03", fault_kind="format_drift", input="A", root=("ChatOpenAI", 1, "llm"), failure=("dispatch", 1),
         description="The harvest planner switches to a decimal comma for the dried mass, the plan parser reads it as a number ten times larger and dispatch refuses it."),
    dict(case="insect_04", fault_kind="tool_ignores_argument", input="B", root=("quote_price", 1, "tool"), failure=("dispatch", 1),
         description="The price tool ignores the grade it is given and quotes the feed-grade price for a food-grade order, which dispatch rejects."),
    dict(case="insect_05", fault_kind="subagent_wrong_entity", input="A", root=("delegate_drying", 1, "agent"), failure=("certify", 1),
         description="The drying hand-off sends the previous lot number to the drying sub-graph, which dries and logs that lot, and the certificate check finds a different lot."),
]
