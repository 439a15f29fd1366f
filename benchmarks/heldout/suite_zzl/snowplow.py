"""Snow plowing contract builder for business parks (langgraph route)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TypedDict

import kit
from harness import CheckFailed, chat_policy, record_graph
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph


NAME = "snowplow-contracts"
ROUTE = "langgraph"
DOMAIN = "snow plowing contracts for business parks"
SHAPE = ("StateGraph: LLM RFP extraction node -> parcel-area tool per lot -> route-planning sub-graph (LLM "
         "clustering, truck assignment tool, hours) -> pricing router (conditional edge) -> seasonal or per-push "
         "pricing node (rate-card tool per service) -> salt tool -> LLM contract draft -> parse node -> validator")

PARCELS = {"A1": 4200, "A2": 3100, "A3": 2600, "B1": 5200, "B2": 1800, "B3": 2400, "C1": 3900, "C2": 2800,
           "D1": 6100, "D2": 2200, "E1": 3300, "E2": 1500}
TRUCKS = ["PL-01", "PL-02", "PL-03", "PL-04", "PL-05"]
RATES = {"lot_plowing": 0.021, "sidewalk": 0.34, "salting": 96.0}
PLOW_M2_PER_H = 6000.0

INPUTS = [
    {"park": "Riverside Commerce Park", "lots": ["A1", "A2", "B1", "B2"], "sidewalk_m": 1400, "window_h": 4.0,
     "contract": "seasonal", "pushes": 18},
    {"park": "Northgate Business Centre", "lots": ["C1", "C2", "A3"], "sidewalk_m": 900, "window_h": 3.0,
     "contract": "per_push", "pushes": 14},
    {"park": "Elm Court Offices", "lots": ["D1", "D2", "E1", "E2"], "sidewalk_m": 1750, "window_h": 4.0,
     "contract": "per_push", "pushes": 20},
    {"park": "Lakeshore Tech Campus", "lots": ["B1", "B3", "C1", "C2", "E1"], "sidewalk_m": 2100, "window_h": 3.0,
     "contract": "seasonal", "pushes": 22},
    {"park": "Harbor Point Park", "lots": ["A1", "A3", "D2"], "sidewalk_m": 800, "window_h": 3.0,
     "contract": "seasonal", "pushes": 16},
    {"park": "Cedar Ridge Plaza", "lots": ["B2", "B3", "E2", "C2"], "sidewalk_m": 1100, "window_h": 2.5,
     "contract": "per_push", "pushes": 15},
    {"park": "Summit Gateway", "lots": ["D1", "A2", "C1"], "sidewalk_m": 1300, "window_h": 3.0,
     "contract": "seasonal", "pushes": 19},
]

CASES = [
    {"id": "zzl_snowplow_1", "input": 0, "kind": "wrong_routing", "root": ("route_pricing", 1),
     "failure": ("validate_contract", 1),
     "description": "The pricing router reads a contract-type key the extraction never writes and sends a "
                    "seasonal RFP down the per-push pricing branch."},
    {"id": "zzl_snowplow_2", "input": 2, "kind": "truncated_result", "root": ("assign_trucks", 1),
     "failure": ("validate_contract", 1),
     "description": "The truck-assignment service returns only its first page of three lot assignments, so "
                    "lot E2 is left without a truck."},
    {"id": "zzl_snowplow_3", "input": 3, "kind": "swallowed_error", "root": ("get_rate_card", 2),
     "failure": ("validate_contract", 1),
     "description": "The rate-card lookup for sidewalk clearing hits a lookup error and returns a zero rate "
                    "instead of raising, so sidewalks are priced at nothing."},
    {"id": "zzl_snowplow_4", "input": 5, "kind": "format_drift", "root": ("draft_contract_model", 1),
     "failure": ("validate_contract", 1),
     "description": "The contract-drafting model switches to comma-decimal amounts (1.234,56), which the table "
                    "parser misreads, so the contract's stated total no longer matches the priced lines."},
    {"id": "zzl_snowplow_5", "input": 6, "kind": "plan_error", "root": ("cluster_lots_model", 1),
     "failure": ("validate_contract", 1),
     "description": "The route-planning model puts every lot on one route, so a single truck needs longer than "
                    "the clearing window."},
]


class PlowState(TypedDict, total=False):
    rfp_text: str
    rfp: dict
    areas: dict
    routes: list
    assignments: list
    route_hours: dict
    pricing_model: str
    lines: list
    salt: dict
    contract_text: str
    contract: dict


def _fmt(x: float, comma_decimal: bool) -> str:
    s = f"{x:,.2f}"
    if comma_decimal:
        s = s.replace(",", "_").replace(".", ",").replace("_", ".")
    return s


def _brain(inp: dict):
    def answer(system: str, user: str, messages: list[dict]):
        if system.startswith("Extract"):
            return json.dumps({"park": inp["park"], "lots": inp["lots"], "sidewalk_m": inp["sidewalk_m"],
                               "window_h": inp["window_h"], "contract_type": inp["contract"],
                               "expected_pushes": inp["pushes"]})
        if system.startswith("Cluster"):
            areas = json.loads(user)["areas"]
            if kit.on("zzl_snowplow_5"):
                return json.dumps({"routes": [{"route": "R1", "lots": sorted(areas)}]})
            zones: dict[str, list] = {}
            for lot in sorted(areas):
                zones.setdefault(lot[0], []).append(lot)
            return json.dumps({"routes": [{"route": f"R{i + 1}", "lots": v}
                                          for i, (_, v) in enumerate(sorted(zones.items()))]})
        if system.startswith("Draft"):
            data = json.loads(user)
            drift = kit.on("zzl_snowplow_4")
            rows = "\n".join(f"| {ln['service']} | {_fmt(ln['amount'], drift)} |" for ln in data["lines"])
            total = sum(ln["amount"] for ln in data["lines"])
            return (f"SNOW AND ICE SERVICES AGREEMENT - {data['park']}\nPricing model: {data['pricing_model']}\n"
                    f"| service | amount (USD) |\n{rows}\n| total | {_fmt(total, drift)} |\n"
                    f"Trigger depth 5 cm; clearing window {data['window_h']} h.")
        return "OK"

    return chat_policy(answer)


@tool
def lookup_parcel_area(lot_id: str) -> dict:
    """Paved area of a parking lot from the county parcel registry."""
    return {"lot_id": lot_id, "area_m2": PARCELS[lot_id]}


@tool
def assign_trucks(routes: list) -> dict:
    """Assign a plow truck to every lot of the planned routes."""
    out = []
    for i, r in enumerate(routes):
        for lot in r["lots"]:
            out.append({"lot_id": lot, "route": r["route"], "truck": TRUCKS[i % len(TRUCKS)]})
    if kit.on("zzl_snowplow_2"):
        return {"assignments": out[:3], "page": 1}
    return {"assignments": out, "page": 1}


@tool
def get_rate_card(service: str) -> dict:
    """Unit rate of a service from the rate card."""
    try:
        if service == "sidewalk" and kit.on("zzl_snowplow_3"):
            raise KeyError("sidewalk_2027")
        return {"service": service, "rate": RATES[service]}
    except KeyError:
        return {"service": service, "rate": 0.0}


@tool
def salt_usage_table(area_m2: float) -> dict:
    """Tonnes of rock salt per application for a paved area."""
    return {"tonnes_per_application": round(area_m2 * 0.000035, 2)}


def build(llm):
    extract_llm = llm.with_config(run_name="extract_rfp_model")
    cluster_llm = llm.with_config(run_name="cluster_lots_model")
    draft_llm = llm.with_config(run_name="draft_contract_model")

    def extract_rfp(state: PlowState) -> dict:
        msg = extract_llm.invoke([SystemMessage("Extract the snow-clearing RFP as JSON."),
                                  HumanMessage(state["rfp_text"])])
        return {"rfp": json.loads(msg.content)}

    def measure_lots(state: PlowState) -> dict:
        areas = {}
        for lot in state["rfp"]["lots"]:
            areas[lot] = lookup_parcel_area.invoke({"lot_id": lot})["area_m2"]
        return {"areas": areas}

    def cluster_lots(state: PlowState) -> dict:
        msg = cluster_llm.invoke([SystemMessage("Cluster the lots into plow routes by zone, as JSON."),
                                  HumanMessage(json.dumps({"areas": state["areas"]}))])
        return {"routes": json.loads(msg.content)["routes"]}

    def dispatch_trucks(state: PlowState) -> dict:
        return {"assignments": assign_trucks.invoke({"routes": state["routes"]})["assignments"]}

    def estimate_hours(state: PlowState) -> dict:
        hours: dict[str, float] = {}
        for a in state["assignments"]:
            hours[a["route"]] = round(hours.get(a["route"], 0.0) + state["areas"][a["lot_id"]] / PLOW_M2_PER_H
                                      + 0.3, 2)
        return {"route_hours": hours}

    sub = StateGraph(PlowState)
    sub.add_node("cluster_lots", cluster_lots)
    sub.add_node("dispatch_trucks", dispatch_trucks)
    sub.add_node("estimate_hours", estimate_hours)
    sub.add_edge(START, "cluster_lots")
    sub.add_edge("cluster_lots", "dispatch_trucks")
    sub.add_edge("dispatch_trucks", "estimate_hours")
    sub.add_edge("estimate_hours", END)
    plan_routes = sub.compile()

    def choose_pricing(state: PlowState) -> dict:
        return {}

    def route_pricing(state: PlowState) -> str:
        rfp = state["rfp"]
        key = "contract" if kit.on("zzl_snowplow_1") else "contract_type"
        return "seasonal_pricing" if rfp.get(key) == "seasonal" else "per_push_pricing"

    def _lines(state: PlowState) -> list:
        area = sum(state["areas"].values())
        lot = get_rate_card.invoke({"service": "lot_plowing"})["rate"] * area
        walk = get_rate_card.invoke({"service": "sidewalk"})["rate"] * state["rfp"]["sidewalk_m"]
        salt_rate = get_rate_card.invoke({"service": "salting"})["rate"]
        return [("lot_plowing", lot), ("sidewalk", walk), ("salting_per_tonne", salt_rate)]

    def seasonal_pricing(state: PlowState) -> dict:
        n = state["rfp"]["expected_pushes"]
        lines = [{"service": s, "amount": round(v * n * 0.9, 2)} for s, v in _lines(state)[:2]]
        return {"pricing_model": "seasonal", "lines": lines}

    def per_push_pricing(state: PlowState) -> dict:
        lines = [{"service": s, "amount": round(v, 2)} for s, v in _lines(state)[:2]]
        return {"pricing_model": "per_push", "lines": lines}

    def salt_estimate(state: PlowState) -> dict:
        t = salt_usage_table.invoke({"area_m2": sum(state["areas"].values())})["tonnes_per_application"]
        rate = get_rate_card.invoke({"service": "salting"})["rate"]
        pushes = state["rfp"]["expected_pushes"] if state["pricing_model"] == "seasonal" else 1
        amount = round(t * rate * pushes, 2)
        return {"salt": {"tonnes": t}, "lines": state["lines"] + [{"service": "salting", "amount": amount}]}

    def draft_contract(state: PlowState) -> dict:
        msg = draft_llm.invoke([SystemMessage("Draft the contract with a price table."),
                                HumanMessage(json.dumps({"park": state["rfp"]["park"], "lines": state["lines"],
                                                         "pricing_model": state["pricing_model"],
                                                         "window_h": state["rfp"]["window_h"]}))])
        return {"contract_text": msg.content}

    def parse_contract(state: PlowState) -> dict:
        rows = re.findall(r"^\| ([a-z_]+) \| ([\d.,]+) \|$", state["contract_text"], re.M)
        table = {k: float(v.replace(",", "")) for k, v in rows}
        model = re.search(r"Pricing model: (\w+)", state["contract_text"]).group(1)
        return {"contract": {"lines": {k: v for k, v in table.items() if k != "total"}, "total": table["total"],
                             "pricing_model": model}}

    def validate_contract(state: PlowState) -> dict:
        rfp, c = state["rfp"], state["contract"]
        assigned = {a["lot_id"] for a in state["assignments"]}
        for lot in rfp["lots"]:
            if lot not in assigned:
                raise CheckFailed(f"lot {lot} of {rfp['park']} has no truck assigned")
        for route, h in state["route_hours"].items():
            if h > rfp["window_h"]:
                raise CheckFailed(f"route {route} needs {h} h, the clearing window is {rfp['window_h']} h")
        if c["pricing_model"] != rfp["contract_type"]:
            raise CheckFailed(f"contract priced {c['pricing_model']}, RFP requires {rfp['contract_type']}")
        for ln in state["lines"]:
            if ln["amount"] <= 0:
                raise CheckFailed(f"{ln['service']} priced at {ln['amount']:.2f}")
        priced = round(sum(ln["amount"] for ln in state["lines"]), 2)
        if abs(c["total"] - priced) > 0.01:
            raise CheckFailed(f"contract states total {c['total']:.2f}, priced lines sum to {priced:.2f}")
        return {}

    g = StateGraph(PlowState)
    for name, fn in [("extract_rfp", extract_rfp), ("measure_lots", measure_lots), ("plan_routes", plan_routes),
                     ("choose_pricing", choose_pricing), ("seasonal_pricing", seasonal_pricing),
                     ("per_push_pricing", per_push_pricing), ("salt_estimate", salt_estimate),
                     ("draft_contract", draft_contract), ("parse_contract", parse_contract),
                     ("validate_contract", validate_contract)]:
        g.add_node(name, fn)
    g.add_edge(START, "extract_rfp")
    g.add_edge("extract_rfp", "measure_lots")
    g.add_edge("measure_lots", "plan_routes")
    g.add_edge("plan_routes", "choose_pricing")
    g.add_conditional_edges("choose_pricing", route_pricing, ["seasonal_pricing", "per_push_pricing"])
    g.add_edge("seasonal_pricing", "salt_estimate")
    g.add_edge("per_push_pricing", "salt_estimate")
    g.add_edge("salt_estimate", "draft_contract")
    g.add_edge("draft_contract", "parse_contract")
    g.add_edge("parse_contract", "validate_contract")
    g.add_edge("validate_contract", END)
    return g.compile()


def record(server, inp: dict, path: Path) -> None:
    server.use(_brain(inp))
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    text = (f"RFP from {inp['park']}: snow and ice clearing for lots {', '.join(inp['lots'])} and "
            f"{inp['sidewalk_m']} m of sidewalks, clear within {inp['window_h']} h of a 5 cm trigger, "
            f"{inp['contract'].replace('_', '-')} contract, about {inp['pushes']} pushes per season.")
    record_graph(build(llm), {"rfp_text": text}, NAME, f"contract for {inp['park']}", path)
