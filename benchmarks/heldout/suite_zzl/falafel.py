"""Falafel food truck day planner (sdk route): pre-orders + walk-up forecast -> prep sheet and supplier order."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import kit
from harness import CheckFailed, chat_policy, record_sdk, sdk_chat
from openai import OpenAI

import trajdebug


NAME = "falafel-truck-ops"
ROUTE = "sdk"
DOMAIN = "a falafel food truck's daily orders and supplies"
SHAPE = ("day card -> pre-orders tool -> parse each order -> LLM walk-up forecast + parse -> demand state write -> "
         "recipe lookup per item -> ingredient totals -> inventory -> restock sub-agent (prices with retry, LLM "
         "purchase order, parse) -> prep context -> LLM prep sheet + parse -> validator")

ITEMS = ("falafel wrap", "hummus bowl", "falafel plate")
RECIPES = {
    "falafel wrap": {"chickpeas_kg": 0.12, "pita_pcs": 1.0, "tahini_l": 0.02},
    "hummus bowl": {"chickpeas_kg": 0.15, "pita_pcs": 0.5, "tahini_l": 0.04},
    "falafel plate": {"chickpeas_kg": 0.18, "pita_pcs": 1.0, "tahini_l": 0.03},
}
PRICES = {"chickpeas_kg": {"pack": 10.0, "price": 18.5}, "pita_pcs": {"pack": 50.0, "price": 11.0},
          "tahini_l": {"pack": 2.0, "price": 14.0}, "oil_l": {"pack": 10.0, "price": 21.0},
          "onions_kg": {"pack": 5.0, "price": 4.5}}
STAPLES = ("chickpeas_kg", "pita_pcs", "oil_l", "onions_kg")

INPUTS = [
    {"date": "2027-05-14", "site": "Canal Street", "weather": "sunny", "cap": 260.0,
     "orders": ["ORD-301: 12x falafel wrap, 4x hummus bowl", "ORD-302: 2 x hummus bowl, 6x falafel plate",
                "ORD-303: 20x falafel wrap", "ORD-304: 3x falafel plate, 5x hummus bowl"],
     "stock": {"chickpeas_kg": 6.0, "pita_pcs": 40.0, "tahini_l": 1.5},
     "yesterday": {"chickpeas_kg": 14.0, "pita_pcs": 55.0, "tahini_l": 2.5}},
    {"date": "2027-05-15", "site": "Market Square", "weather": "rain", "cap": 180.0,
     "orders": ["ORD-311: 8x falafel wrap", "ORD-312: 10x hummus bowl, 2 x falafel plate"],
     "stock": {"chickpeas_kg": 3.0, "pita_pcs": 20.0, "tahini_l": 0.5},
     "yesterday": {"chickpeas_kg": 6.0, "pita_pcs": 40.0, "tahini_l": 1.5}},
    {"date": "2027-05-16", "site": "Tech Park", "weather": "sunny", "cap": 300.0,
     "orders": ["ORD-321: 30x falafel wrap, 10x falafel plate", "ORD-322: 6x hummus bowl",
                "ORD-323: 4 x falafel wrap, 4x hummus bowl"],
     "stock": {"chickpeas_kg": 2.0, "pita_pcs": 15.0, "tahini_l": 0.4},
     "yesterday": {"chickpeas_kg": 12.0, "pita_pcs": 60.0, "tahini_l": 3.0}},
    {"date": "2027-05-17", "site": "Canal Street", "weather": "cloudy", "cap": 220.0,
     "orders": ["ORD-331: 15x falafel plate", "ORD-332: 9x falafel wrap, 3x hummus bowl"],
     "stock": {"chickpeas_kg": 5.0, "pita_pcs": 30.0, "tahini_l": 1.0},
     "yesterday": {"chickpeas_kg": 9.0, "pita_pcs": 35.0, "tahini_l": 1.2}},
    {"date": "2027-05-18", "site": "University Quad", "weather": "sunny", "cap": 280.0,
     "orders": ["ORD-341: 25x falafel wrap", "ORD-342: 12x hummus bowl, 6x falafel plate",
                "ORD-343: 7x falafel wrap"],
     "stock": {"chickpeas_kg": 4.0, "pita_pcs": 25.0, "tahini_l": 0.8},
     "yesterday": {"chickpeas_kg": 16.0, "pita_pcs": 70.0, "tahini_l": 3.2}},
    {"date": "2027-05-19", "site": "Market Square", "weather": "cloudy", "cap": 200.0,
     "orders": ["ORD-351: 10x hummus bowl", "ORD-352: 10x falafel wrap, 5x falafel plate"],
     "stock": {"chickpeas_kg": 4.5, "pita_pcs": 35.0, "tahini_l": 1.2},
     "yesterday": {"chickpeas_kg": 7.0, "pita_pcs": 30.0, "tahini_l": 1.0}},
    {"date": "2027-05-20", "site": "Tech Park", "weather": "rain", "cap": 170.0,
     "orders": ["ORD-361: 14x falafel wrap", "ORD-362: 3 x falafel plate, 6x hummus bowl"],
     "stock": {"chickpeas_kg": 3.5, "pita_pcs": 18.0, "tahini_l": 0.6},
     "yesterday": {"chickpeas_kg": 8.0, "pita_pcs": 44.0, "tahini_l": 1.6}},
]

CASES = [
    {"id": "zzl_falafel_1", "input": 0, "kind": "lossy_parsing", "root": ("parse_order", 2),
     "failure": ("validate_day_plan", 1),
     "description": "The order parser only accepts quantities written as '2x', so the '2 x hummus bowl' line of "
                    "ORD-302 is dropped from demand."},
    {"id": "zzl_falafel_2", "input": 2, "kind": "stale_data", "root": ("check_inventory", 1),
     "failure": ("validate_day_plan", 1),
     "description": "The inventory tool serves yesterday's cached stock count, so the restock order buys too "
                    "few chickpeas for the day."},
    {"id": "zzl_falafel_3", "input": 4, "kind": "unit_error", "root": ("recipe_lookup", 2),
     "failure": ("validate_day_plan", 1),
     "description": "The recipe book returns the hummus bowl's tahini in millilitres under a litres key, so the "
                    "supplier order explodes past the spend cap."},
    {"id": "zzl_falafel_4", "input": 3, "kind": "tool_ignores_argument", "root": ("get_supplier_prices", 2),
     "failure": ("validate_day_plan", 1),
     "description": "The supplier price tool ignores the requested item list and returns its staples list, so "
                    "tahini is never priced nor ordered."},
    {"id": "zzl_falafel_5", "input": 5, "kind": "context_pollution", "root": ("gather_prep_context", 1),
     "failure": ("validate_day_plan", 1),
     "description": "The prep-sheet context carries the previous day's sheet, and the model copies its counts "
                    "instead of the day's demand."},
]

_state = {"gateway_calls": 0}
_PREVIOUS_SHEET = {"falafel wrap": 38, "hummus bowl": 17, "falafel plate": 12}


def _walkups(weather: str) -> dict:
    base = {"falafel wrap": 30, "hummus bowl": 14, "falafel plate": 10}
    f = {"sunny": 1.0, "cloudy": 0.7, "rain": 0.4}[weather]
    return {k: int(round(v * f)) for k, v in base.items()}


def _brain(inp: dict):
    def answer(system: str, user: str, messages: list[dict]):
        if system.startswith("Forecast"):
            w = _walkups(inp["weather"])
            return "Walk-up estimate for the day:\n" + json.dumps({"walkups": w})
        if system.startswith("Draft"):
            data = json.loads(user)
            lines = []
            for ing, short in sorted(data["shortfall"].items()):
                p = data["prices"].get(ing)
                if p is None or short <= 0:
                    continue
                packs = math.ceil(short / p["pack"])
                lines.append({"ingredient": ing, "packs": packs, "pack": p["pack"], "unit_price": p["price"]})
            return "Purchase order:\n" + json.dumps({"lines": lines})
        if system.startswith("Write"):
            data = json.loads(user)
            counts = data.get("previous_sheet") or data["demand"]
            return "Prep sheet:\n" + json.dumps({"prep": {k: int(v) for k, v in counts.items()}})
        return "OK"

    return chat_policy(answer)


@trajdebug.step(kind="input")
def load_day(inp: dict) -> str:
    return f"Service day {inp['date']} at {inp['site']}, forecast {inp['weather']}; spend cap EUR {inp['cap']}."


@trajdebug.step(kind="tool")
def fetch_preorders(date: str, orders: list[str]) -> list[dict]:
    return [{"order_id": o.split(":")[0], "text": o.split(":", 1)[1].strip(), "date": date} for o in orders]


@trajdebug.step(kind="parse")
def parse_order(order: dict) -> dict:
    pattern = r"(\d+)x\s*([a-z ]+)" if kit.on("zzl_falafel_1") else r"(\d+)\s*x\s*([a-z ]+)"
    items: dict[str, int] = {}
    for part in order["text"].split(","):
        m = re.match(pattern, part.strip())
        if m:
            items[m.group(2).strip()] = items.get(m.group(2).strip(), 0) + int(m.group(1))
    return {"order_id": order["order_id"], "items": items}


@trajdebug.step(kind="parse")
def parse_forecast(text: str) -> dict:
    return json.loads(text[text.index("{"):])["walkups"]


@trajdebug.step(kind="state")
def compute_demand(parsed: list[dict], walkups: dict) -> dict:
    pre = dict.fromkeys(ITEMS, 0)
    for o in parsed:
        for item, q in o["items"].items():
            pre[item] += q
    demand = {k: pre[k] + walkups.get(k, 0) for k in ITEMS}
    run = trajdebug.current_run()
    run.state["preordered"] = pre
    run.state["demand"] = demand
    return demand


@trajdebug.step(kind="tool")
def recipe_lookup(item: str) -> dict:
    rec = dict(RECIPES[item])
    if item == "hummus bowl" and kit.on("zzl_falafel_3"):
        rec["tahini_l"] = rec["tahini_l"] * 1000
    return {"item": item, "per_unit": rec}


@trajdebug.step(kind="other")
def total_ingredients(demand: dict, recipes: list[dict]) -> dict:
    need: dict[str, float] = {}
    for r in recipes:
        for ing, q in r["per_unit"].items():
            need[ing] = round(need.get(ing, 0.0) + q * demand[r["item"]], 3)
    return need


@trajdebug.step(kind="tool")
def check_inventory(site: str, inp: dict) -> dict:
    snap = inp["yesterday"] if kit.on("zzl_falafel_2") else inp["stock"]
    return {"site": site, "on_hand": dict(snap)}


@trajdebug.retry(attempts=3, on=(TimeoutError,))
@trajdebug.step(kind="tool")
def get_supplier_prices(items: list[str]) -> dict:
    _state["gateway_calls"] += 1
    if _state["gateway_calls"] == 1:
        raise TimeoutError("wholesaler price API timed out after 10s")
    wanted = list(STAPLES) if kit.on("zzl_falafel_4") else items
    return {"supplier": "Levant Wholesale", "prices": {i: PRICES[i] for i in wanted}}


@trajdebug.step(kind="parse")
def parse_po(text: str) -> list[dict]:
    return json.loads(text[text.index("{"):])["lines"]


@trajdebug.step(kind="agent")
def restock(client, need: dict, stock: dict) -> dict:
    shortfall = {k: round(v - stock["on_hand"].get(k, 0.0), 3) for k, v in need.items()}
    prices = get_supplier_prices(sorted(need))
    text = sdk_chat(client, "draft_purchase_order", [
        {"role": "system", "content": "Draft the purchase order: whole packs covering each shortfall."},
        {"role": "user", "content": json.dumps({"shortfall": shortfall, "prices": prices["prices"]})}])
    lines = parse_po(text)
    return {"supplier": prices["supplier"], "lines": lines,
            "spend": round(sum(ln["packs"] * ln["unit_price"] for ln in lines), 2)}


@trajdebug.step(kind="other")
def gather_prep_context(demand: dict, inp: dict) -> dict:
    ctx = {"date": inp["date"], "site": inp["site"], "demand": demand}
    if kit.on("zzl_falafel_5"):
        ctx["previous_sheet"] = dict(_PREVIOUS_SHEET)
    return ctx


@trajdebug.step(kind="parse")
def parse_prep_sheet(text: str) -> dict:
    return json.loads(text[text.index("{"):])["prep"]


@trajdebug.step(kind="condition")
def validate_day_plan(orders: list[dict], need: dict, order: dict, prep: dict, inp: dict) -> dict:
    run = trajdebug.current_run()
    booked = dict.fromkeys(ITEMS, 0)
    for o in orders:
        for part in o["text"].split(","):
            q, item = re.match(r"(\d+)\s*x\s*([a-z ]+)", part.strip()).groups()
            booked[item.strip()] += int(q)
    for item in ITEMS:
        if run.state["preordered"][item] != booked[item]:
            raise CheckFailed(f"demand counts {run.state['preordered'][item]} pre-ordered {item}, "
                              f"order book holds {booked[item]}")
    if order["spend"] > inp["cap"]:
        raise CheckFailed(f"supplier order EUR {order['spend']:.2f} is over the day's cap EUR {inp['cap']:.2f}")
    bought = {ln["ingredient"]: ln["packs"] * ln["pack"] for ln in order["lines"]}
    for ing, q in need.items():
        have = inp["stock"].get(ing, 0.0) + bought.get(ing, 0.0)
        if have + 1e-9 < q:
            raise CheckFailed(f"{ing}: {inp['stock'].get(ing, 0.0)} on hand + {bought.get(ing, 0.0)} ordered "
                              f"< {q} needed")
    for item in ITEMS:
        if prep.get(item, 0) < run.state["demand"][item]:
            raise CheckFailed(f"prep sheet makes {prep.get(item, 0)} {item}, demand is {run.state['demand'][item]}")
    return {"ok": True, "spend": order["spend"]}


def record(server, inp: dict, path: Path) -> None:
    server.use(_brain(inp))
    _state["gateway_calls"] = 0
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)

    def body(run):
        card = load_day(inp)
        orders = fetch_preorders(inp["date"], inp["orders"])
        parsed = [parse_order(o) for o in orders]
        text = sdk_chat(client, "forecast_walkups", [
            {"role": "system", "content": "Forecast walk-up sales per menu item as JSON."},
            {"role": "user", "content": card}])
        demand = compute_demand(parsed, parse_forecast(text))
        recipes = [recipe_lookup(item) for item in ITEMS]
        need = total_ingredients(demand, recipes)
        stock = check_inventory(inp["site"], inp)
        order = restock(client, need, stock)
        ctx = gather_prep_context(demand, inp)
        sheet = sdk_chat(client, "write_prep_sheet", [
            {"role": "system", "content": "Write the prep sheet: portions to prepare per item, as JSON."},
            {"role": "user", "content": json.dumps(ctx)}])
        prep = parse_prep_sheet(sheet)
        validate_day_plan(orders, need, order, prep, inp)

    record_sdk(body, NAME, f"plan the {inp['date']} service at {inp['site']}", path)
