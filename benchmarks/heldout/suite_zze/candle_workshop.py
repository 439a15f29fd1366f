"""Candle making workshop (langgraph route): plan a group session, stock the studio, schedule and book it."""

from __future__ import annotations

import json
import math
from datetime import date, timedelta
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from . import kit
from .common import Agent, Case, last_user_json

RECIPES = {
    "soy container": "style: soy container\nwax: soy 464\ndensity_g_per_ml: 0.86\nfragrance_pct: 8\n"
                     "melt_c: 85\npour_c: 60\nwick: CD-10 for 70-80 mm vessels\ncure_hours: 48",
    "coconut apricot": "style: coconut apricot\nwax: coco-apricot blend\ndensity_g_per_ml: 0.88\n"
                       "fragrance_pct: 10\nmelt_c: 80\npour_c: 55\nwick: ECO-8\ncure_hours: 72",
    "beeswax pillar": "style: beeswax pillar\nwax: yellow beeswax\ndensity_g_per_ml: 0.96\nfragrance_pct: 0\n"
                      "melt_c: 75\npour_c: 70\nwick: square braid 2/0\ncure_hours: 24",
}
VESSEL_FL_OZ = {"8 oz tin": 8, "6 oz jar": 6, "4 oz tin": 4, "pillar 3x4": 12}
STOCK0 = {
    "Leeds": {"wax": 1200.0, "fragrance": 300.0, "wicks": 40.0},
    "York": {"wax": 9000.0, "fragrance": 900.0, "wicks": 200.0},
    "Sheffield": {"wax": 800.0, "fragrance": 60.0, "wicks": 50.0},
}
STOCK: dict[str, dict[str, float]] = {}
RESERVATIONS: list[dict] = []
FL_OZ_ML = 29.5735


class BookingError(Exception):
    """The booking service's error answer."""


class RecipeRetriever(BaseRetriever):
    """Recipe cards of the studio's handbook."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        text = RECIPES[query]
        if kit.active("cdl.truncated_result"):
            text = text[:120]
        return [Document(page_content=text, metadata={"source": f"handbook/{query.replace(' ', '-')}.txt"})]


@tool
def check_studio_stock(location: str, item: str) -> dict:
    """Grams (or pieces) of an item held at a studio."""
    return {"location": location, "item": item, "on_hand": STOCK[location][item]}


@tool
def order_supplies(location: str, item: str, quantity: float) -> dict:
    """Order supplies delivered to a studio before the session."""
    STOCK[location][item] += quantity
    return {"order": f"PO-{location[:3].upper()}-{item[:3].upper()}-{int(quantity)}", "delivered": quantity}


@tool
def reserve_bench(location: str, session_date: str, seats: int) -> dict:
    """Reserve pouring benches for the session."""
    where = "York" if kit.active("cdl.tool_ignores_argument") else location
    res = {"reservation": f"BR-{len(RESERVATIONS) + 101}", "location": where, "date": session_date, "seats": seats}
    RESERVATIONS.append(res)
    return res


@tool
def book_workshop(payload: dict) -> dict:
    """Confirm the workshop booking (the booking service validates it)."""
    b = payload["booking"]
    style = _card(RECIPES[b["style"]])
    need_wax = b["participants"] * 2 * VESSEL_FL_OZ[b["candle"]] * FL_OZ_ML * float(style["density_g_per_ml"])
    errors = []
    if payload["materials"]["wax_g"] < need_wax * 0.98:
        errors.append(f"wax allocated {payload['materials']['wax_g']:,.1f} g is short of the {need_wax:,.1f} g "
                      f"that {b['participants']} participants x 2 {b['candle']} need")
    for item in ("wax", "fragrance"):
        have = STOCK[b["location"]][item]
        want = payload["materials"][f"{item}_g"]
        if have < want:
            errors.append(f"studio {b['location']} holds {have:,.0f} g of {item}; the session needs {want:,.0f} g")
    pickup_min = date.fromisoformat(b["date"]) + timedelta(hours=float(style["cure_hours"]))
    if date.fromisoformat(payload["pickup"]) < pickup_min:
        errors.append(f"pickup {payload['pickup']} is before the end of the {style['cure_hours']} h cure "
                      f"({pickup_min.isoformat()})")
    if payload["bench"]["location"] != b["location"]:
        errors.append(f"bench reservation {payload['bench']['reservation']} is at {payload['bench']['location']}, "
                      f"not at {b['location']}")
    if errors:
        raise BookingError("HTTP 400 Bad Request: " + json.dumps({"booking": b["booking"], "errors": errors}))
    return {"status": "confirmed", "booking": b["booking"], "pickup": payload["pickup"]}


def _card(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if ": " in line:
            k, v = line.split(": ", 1)
            out[k.strip()] = v.strip()
    return out


class State(TypedDict, total=False):
    booking: dict
    recipe: dict
    plan: dict
    materials: dict
    shortfalls: dict
    orders: list
    rounds: int
    pickup: str
    slot: dict
    confirmation: dict


def _llm(base_url: str) -> ChatOpenAI:
    return ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="test", max_retries=0, temperature=0)


def build(base_url: str) -> Any:
    llm = _llm(base_url)
    parser = JsonOutputParser()
    retriever = RecipeRetriever()

    def intake(state: State) -> State:
        b = dict(state["booking"])
        b["location"] = b["location"].strip().title()
        return {"booking": b, "orders": [], "rounds": 0}

    def fetch_recipe(state: State) -> State:
        docs = retriever.invoke(state["booking"]["style"])
        return {"recipe": _card(docs[0].page_content)}

    def plan_session(state: State) -> State:
        b = state["booking"]
        msg = llm.invoke([("system", "Plan a candle making session. Answer JSON."),
                          ("user", json.dumps({"task": "plan", "booking": b,
                                               "fragrance_pct": state["recipe"].get("fragrance_pct")}))])
        raw = parser.invoke(msg)
        plan = {"participants": int(raw.get("participants", 1)), "candles_each": int(raw.get("candles_each", 1)),
                "vessel_fl_oz": float(raw.get("vessel_fl_oz", 4)), "fragrance_pct": float(raw.get("fragrance_pct", 6))}
        return {"plan": plan}

    def compute_materials(state: State) -> State:
        p, r = state["plan"], state["recipe"]
        candles = p["participants"] * p["candles_each"]
        per_candle_ml = p["vessel_fl_oz"] if kit.active("cdl.unit_error") else p["vessel_fl_oz"] * FL_OZ_ML
        wax = round(candles * per_candle_ml * float(r.get("density_g_per_ml", 0.9)), 1)
        return {"materials": {"candles": candles, "wax_g": wax,
                              "fragrance_g": round(wax * p["fragrance_pct"] / 100, 1), "wicks": candles}}

    def check_stock(state: State) -> State:
        loc, m = state["booking"]["location"], state["materials"]
        short = {}
        for item, want in (("wax", m["wax_g"]), ("fragrance", m["fragrance_g"]), ("wicks", m["wicks"])):
            have = check_studio_stock.invoke({"location": loc, "item": item})["on_hand"]
            if have < want:
                short[item] = round(want - have, 1)
        return {"shortfalls": short, "rounds": state.get("rounds", 0) + 1}

    def route_stock(state: State) -> str:
        if kit.active("cdl.wrong_routing"):
            return "reorder" if state["shortfalls"].get("wicks") else "scheduler"
        return "reorder" if state["shortfalls"] and state["rounds"] < 3 else "scheduler"

    def reorder(state: State) -> State:
        loc = state["booking"]["location"]
        orders = list(state.get("orders", []))
        for item, qty in sorted(state["shortfalls"].items()):
            orders.append(order_supplies.invoke({"location": loc, "item": item, "quantity": math.ceil(qty * 1.1)}))
        return {"orders": orders}

    def propose_slot(state: State) -> State:
        msg = llm.invoke([("system", "Pick the pouring slot and the pickup date. Answer JSON."),
                          ("user", json.dumps({"task": "slot", "date": state["booking"]["date"],
                                               "cure_hours": state["recipe"].get("cure_hours", "0")}))])
        return {"slot": json.loads(msg.content)}

    def set_pickup(state: State) -> State:
        return {"pickup": state["slot"]["pickup"]}

    sched = StateGraph(State)
    sched.add_node("propose_slot", propose_slot)
    sched.add_node("set_pickup", set_pickup)
    sched.add_edge(START, "propose_slot")
    sched.add_edge("propose_slot", "set_pickup")
    sched.add_edge("set_pickup", END)

    def finalize(state: State) -> State:
        b = state["booking"]
        bench = reserve_bench.invoke({"location": b["location"], "session_date": b["date"], "seats": b["participants"]})
        conf = book_workshop.invoke({"payload": {"booking": b, "materials": state["materials"],
                                                 "pickup": state["pickup"], "bench": bench}})
        return {"confirmation": conf}

    g = StateGraph(State)
    g.add_node("intake", intake)
    g.add_node("fetch_recipe", fetch_recipe)
    g.add_node("plan_session", plan_session)
    g.add_node("compute_materials", compute_materials)
    g.add_node("check_stock", check_stock)
    g.add_node("reorder", reorder)
    g.add_node("scheduler", sched.compile())
    g.add_node("finalize", finalize)
    g.add_edge(START, "intake")
    g.add_edge("intake", "fetch_recipe")
    g.add_edge("fetch_recipe", "plan_session")
    g.add_edge("plan_session", "compute_materials")
    g.add_edge("compute_materials", "check_stock")
    g.add_conditional_edges("check_stock", route_stock, {"reorder": "reorder", "scheduler": "scheduler"})
    g.add_edge("reorder", "check_stock")
    g.add_edge("scheduler", "finalize")
    g.add_edge("finalize", END)
    return g.compile()


def policy(request: Any) -> str:
    p = last_user_json(request.body)
    if p.get("task") == "plan":
        b = p["booking"]
        if kit.active("cdl.format_drift"):
            return json.dumps({"headcount": f"{b['participants']} guests", "candles_per_guest": 2,
                               "vessel": b["candle"], "fragrance": f"{p['fragrance_pct']}%"})
        return json.dumps({"participants": b["participants"], "candles_each": 2,
                           "vessel_fl_oz": VESSEL_FL_OZ[b["candle"]], "fragrance_pct": float(p["fragrance_pct"])})
    if p.get("task") == "slot":
        days = math.ceil(float(p["cure_hours"]) / 24)
        pickup = date.fromisoformat(p["date"]) + timedelta(days=days)
        return json.dumps({"pour": f"{p['date']}T10:30", "pickup": pickup.isoformat()})
    return "{}"


_GRAPHS: dict[str, Any] = {}


def record(booking: dict, out: Path, base_url: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    out.unlink(missing_ok=True)
    STOCK.clear()
    STOCK.update({k: dict(v) for k, v in STOCK0.items()})
    RESERVATIONS.clear()
    graph = _GRAPHS.get(base_url) or _GRAPHS.setdefault(base_url, build(base_url))
    tracer = TrajdebugTracer(path=str(out), name="candle-workshop", task=f"book {booking['booking']}")
    try:
        graph.invoke({"booking": booking}, config={"callbacks": [tracer]})
    except BookingError:
        pass


def _b(ref: str, location: str, day: str, n: int, candle: str, style: str) -> dict:
    return {"booking": ref, "location": location, "date": day, "participants": n, "candle": candle, "style": style}


INPUTS = {
    "A": _b("CW-3021", "leeds", "2026-04-11", 12, "8 oz tin", "soy container"),
    "B": _b("CW-3040", "Sheffield", "2026-04-18", 9, "6 oz jar", "coconut apricot"),
    "C": _b("CW-3052", "York", "2026-04-25", 6, "4 oz tin", "soy container"),
    "D": _b("CW-3060", "Leeds", "2026-05-02", 4, "pillar 3x4", "beeswax pillar"),
    "E": _b("CW-3071", "Sheffield", "2026-05-09", 10, "8 oz tin", "soy container"),
    "F": _b("CW-3085", "York", "2026-05-16", 15, "6 oz jar", "coconut apricot"),
}

AGENT = Agent(
    name="candle_workshop", module="candle_workshop.py", route="langgraph", domain="candle making workshop",
    shape="StateGraph: intake -> recipe retriever -> ChatOpenAI plan + JSON parser -> materials -> stock check "
          "<-> reorder loop (conditional edge) -> scheduler sub-graph (LLM slot) -> bench + booking tools",
    inputs=INPUTS, refs=("C", "D", "E", "F"), policy=policy, record=record,
    cases=(
        Case("zze_cdl_01", "cdl.unit_error", "unit_error", "A", ("compute_materials", 1, "other"),
             ("book_workshop", 1), "Vessel sizes in fluid ounces are used as millilitres when wax is computed."),
        Case("zze_cdl_02", "cdl.tool_ignores_argument", "tool_ignores_argument", "A", ("reserve_bench", 1, "tool"),
             ("book_workshop", 1), "The bench reservation tool books the York studio whatever location it is given."),
        Case("zze_cdl_03", "cdl.format_drift", "format_drift", "B", ("ChatOpenAI", 1, "llm"),
             ("book_workshop", 1), "The planning model answers with renamed keys and the node falls back to defaults."),
        Case("zze_cdl_04", "cdl.wrong_routing", "wrong_routing", "B", ("route_stock", 1, "other"),
             ("book_workshop", 1), "The stock router only looks at a wick shortfall and sends the session on to scheduling."),
        Case("zze_cdl_05", "cdl.truncated_result", "truncated_result", "A", ("RecipeRetriever", 1, "retrieval"),
             ("book_workshop", 1), "The recipe card comes back cut short, losing its cure time."),
    ),
)
