"""Bagel bakery wholesale orders (langgraph route): takes the day's wholesale orders, prices and clears them, plans the bake."""
from __future__ import annotations

import json
import re
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

import _rt
import kit

NAME, ROUTE, DOMAIN = "bagel-wholesale-orders", "langgraph", "a bagel bakery's wholesale orders"
SHAPE = "StateGraph: intake, orders tool, per-order quote/credit/record loop, LLM bake plan, parse, flour sub-graph (stock tool + LLM), route tool, invoices, validator"

PRICE_EACH = {"plain": 0.62, "sesame": 0.68, "everything": 0.74, "rye": 0.71}
CUSTOMERS = {
    "Corner Cafe": {"days": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat"], "hold": False},
    "Uni Canteen": {"days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "hold": False},
    "Deli Nord": {"days": ["Mon", "Wed", "Fri", "Sat"], "hold": False},
    "Hotel Azur": {"days": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat"], "hold": False},
    "Gym Bar": {"days": ["Mon", "Tue", "Thu"], "hold": True},
    "Park Kiosk": {"days": ["Tue", "Wed", "Thu", "Fri", "Sat"], "hold": False},
}
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
FLOUR_G_PER_BAGEL = 95


def _standing(day: str) -> list[dict]:
    out = []
    for k, (c, info) in enumerate(CUSTOMERS.items()):
        if day in info["days"] and not info["hold"]:
            kinds = list(PRICE_EACH)
            out.append({"customer": c, "kind": kinds[(k + DAYS.index(day)) % 4], "dozens": 2 + (k * 3 + DAYS.index(day)) % 5})
    return out


INPUTS = [{"day": d, "date": f"2025-11-{10 + DAYS.index(d):02d}"} for d in ["Tue", "Wed", "Sat", "Fri", "Thu"]]
CASES = [
    {"id": "bk_c1", "input": 0, "fault_kind": "unit_error", "root": "quote_order", "occ": 4, "failure": "validate_day",
     "description": "quote_order prices the fourth order per dozen while the line is billed per bagel, so that invoice is twelve times too high."},
    {"id": "bk_c2", "input": 1, "fault_kind": "swallowed_error", "root": "check_credit", "occ": 5, "failure": "validate_day",
     "description": "check_credit catches the ledger's timeout for a customer and answers clear, so an account on hold is delivered."},
    {"id": "bk_c3", "input": 2, "fault_kind": "tool_ignores_argument", "root": "fetch_orders", "occ": 1, "failure": "validate_day",
     "description": "fetch_orders ignores the day and returns Monday's standing orders, including a customer closed on Saturdays."},
    {"id": "bk_c4", "input": 3, "fault_kind": "stale_data", "root": "fetch_flour_stock", "occ": 1, "failure": "validate_day",
     "description": "fetch_flour_stock serves the count from before yesterday's bake, so the plan uses more flour than the store holds."},
    {"id": "bk_c5", "input": 4, "fault_kind": "bad_memory_write", "root": "record_order", "occ": 4, "failure": "validate_day",
     "description": "record_order writes the fourth order's dozens onto the third customer's ledger line."},
]


def _stock(inp: dict) -> float:
    need = sum(o["dozens"] * 12 for o in _standing(inp["day"])) * FLOUR_G_PER_BAGEL / 1000
    return round(need + 6.5, 1)


_CUR: dict = {}


@tool
def fetch_orders(day: str, route: str) -> list:
    """Wholesale standing orders for a delivery day and route."""
    return _standing("Mon" if kit.on("bk_c3") else day)


@tool
def quote_order(customer: str, kind: str, dozens: int) -> dict:
    """Price a wholesale order from the price list (price per bagel)."""
    unit = PRICE_EACH[kind]
    if kit.on("bk_c1") and _CUR.get("quoted", 0) == 3:
        unit = round(unit * 12, 2)
    _CUR["quoted"] = _CUR.get("quoted", 0) + 1
    return {"customer": customer, "unit_price": unit, "bagels": dozens * 12}


@tool
def check_credit(customer: str) -> dict:
    """Account standing from the ledger."""
    hold = CUSTOMERS[customer]["hold"]
    if kit.on("bk_c2") and _CUR.get("checked", 0) == 4:
        hold = True
        _CUR["ledger_hold"] = customer
        try:
            raise TimeoutError("ledger did not answer in 2 s")
        except TimeoutError:
            hold = False
    _CUR["checked"] = _CUR.get("checked", 0) + 1
    return {"customer": customer, "status": "hold" if hold else "clear"}


@tool
def fetch_flour_stock(store: str) -> dict:
    """Flour in the store, kg."""
    kg = _stock(_CUR["inp"])
    if kit.on("bk_c4"):
        kg = round(kg + 40.0, 1)
    return {"store": store, "flour_kg": kg}


@tool
def plan_route(stops: list) -> dict:
    """Delivery route for the van."""
    return {"van": "VAN-2", "stops": list(stops)}


class S(TypedDict, total=False):
    day: str
    date: str
    orders: list
    i: int
    quote: dict
    credit: dict
    ledger: dict
    plan_text: str
    batches: list
    flour: dict
    flour_note: str
    route: dict
    invoices: list


def _policy(inp: dict):
    def brain(request):
        text = _rt.last_user(request)
        if text.startswith("Plan the bake"):
            ledger = json.loads(text.split("\n", 1)[1])
            by_kind: dict = {}
            for line in ledger.values():
                by_kind[line["kind"]] = by_kind.get(line["kind"], 0) + line["dozens"] * 12
            return "\n".join(f"{k}: {n} bagels" for k, n in sorted(by_kind.items()))
        if text.startswith("Check the flour"):
            return "Flour is sufficient for today's bake." if "flour_kg" in text else "Unknown"
        return "OK"
    return brain


def build(llm):
    def intake(s: S) -> dict:
        return {"i": 0, "ledger": {}, "invoices": []}

    def load_orders(s: S) -> dict:
        return {"orders": fetch_orders.invoke({"day": s["day"], "route": "north"})}

    def process_order(s: S) -> dict:
        o = s["orders"][s["i"]]
        q = quote_order.invoke({"customer": o["customer"], "kind": o["kind"], "dozens": o["dozens"]})
        c = check_credit.invoke({"customer": o["customer"]})
        return {"quote": q, "credit": c}

    def record_order(s: S) -> dict:
        o, q, c = s["orders"][s["i"]], s["quote"], s["credit"]
        ledger = dict(s["ledger"])
        invoices = list(s["invoices"])
        if c["status"] == "clear":
            key = o["customer"]
            if kit.on("bk_c5") and s["i"] == 3:
                key = s["orders"][2]["customer"]
            ledger[key] = {"kind": o["kind"], "dozens": o["dozens"]}
            invoices.append({"customer": o["customer"], "amount": round(q["unit_price"] * q["bagels"], 2)})
        return {"ledger": ledger, "invoices": invoices, "i": s["i"] + 1}

    def more(s: S) -> str:
        return "process_order" if s["i"] < len(s["orders"]) else "bake_plan"

    def bake_plan(s: S) -> dict:
        msg = llm.invoke([SystemMessage("You plan a bagel bake by kind."), HumanMessage("Plan the bake\n" + json.dumps(s["ledger"]))])
        return {"plan_text": msg.content}

    def parse_bake_plan(s: S) -> dict:
        rows = [re.match(r"(\w+): (\d+) bagels", line) for line in s["plan_text"].splitlines()]
        return {"batches": [{"kind": m.group(1), "bagels": int(m.group(2))} for m in rows if m]}

    def stock(fs: dict) -> dict:
        return {"flour": fetch_flour_stock.invoke({"store": "mill-room"})}

    def flour_note(fs: dict) -> dict:
        msg = llm.invoke([SystemMessage("You check bakery stock."), HumanMessage("Check the flour\n" + json.dumps(fs["flour"]))])
        return {"flour_note": msg.content}

    sub = StateGraph(S)
    sub.add_node("read_stock", stock)
    sub.add_node("flour_note", flour_note)
    sub.add_edge(START, "read_stock")
    sub.add_edge("read_stock", "flour_note")
    sub.add_edge("flour_note", END)

    def route(s: S) -> dict:
        return {"route": plan_route.invoke({"stops": sorted(s["ledger"])})}

    def validate_day(s: S) -> dict:
        for c in s["ledger"]:
            info = CUSTOMERS[c]
            if s["day"] not in info["days"]:
                raise ValueError(f"{c} is closed on {s['day']} but has a delivery")
            if info["hold"] or _CUR.get("ledger_hold") == c:
                raise ValueError(f"{c} is on credit hold and cannot be delivered")
        for o in s["orders"]:
            line = s["ledger"].get(o["customer"])
            if line and line["dozens"] != o["dozens"]:
                raise ValueError(f"{o['customer']} ordered {o['dozens']} dozen, delivery sheet says {line['dozens']}")
        for inv in s["invoices"]:
            o = next(x for x in s["orders"] if x["customer"] == inv["customer"])
            due = round(PRICE_EACH[o["kind"]] * o["dozens"] * 12, 2)
            if abs(inv["amount"] - due) > 0.005:
                raise ValueError(f"invoice for {inv['customer']} is {inv['amount']:.2f} EUR, price list gives {due:.2f} EUR")
        flour = sum(b["bagels"] for b in s["batches"]) * FLOUR_G_PER_BAGEL / 1000
        real = _stock(_CUR["inp"]) if not kit.on("bk_c4") else round(_stock(_CUR["inp"]) - 9.0, 1)
        if flour > real:
            raise ValueError(f"bake needs {flour:.1f} kg flour, the mill room holds {real} kg")
        return {"ok": True}

    g = StateGraph(S)
    for n, fn in [("intake", intake), ("load_orders", load_orders), ("process_order", process_order),
                  ("record_order", record_order), ("bake_plan", bake_plan), ("parse_bake_plan", parse_bake_plan),
                  ("flour_check", sub.compile()), ("route", route), ("validate_day", validate_day)]:
        g.add_node(n, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "load_orders")
    g.add_edge("load_orders", "process_order")
    g.add_edge("process_order", "record_order")
    g.add_conditional_edges("record_order", more, ["process_order", "bake_plan"])
    g.add_edge("bake_plan", "parse_bake_plan")
    g.add_edge("parse_bake_plan", "flour_check")
    g.add_edge("flour_check", "route")
    g.add_edge("route", "validate_day")
    g.add_edge("validate_day", END)
    return g.compile()


def record(inp: dict, path: str) -> None:
    _rt.SERVER.use(_policy(inp))
    _CUR.clear()
    _CUR["inp"] = inp
    _rt.lg_run(build(_rt.chat_model()), dict(inp), NAME, f"wholesale orders for {inp['day']} {inp['date']}", path)
