"""Sushi counter supply (openai_agents route): plan tomorrow's fish and dry goods, then place the market order."""

from __future__ import annotations

import json
import math
from datetime import date, timedelta
from pathlib import Path

from agents import Agent, function_tool
from trajdebug.testing import Reply, tool_call

from .common import Case, agents_model, last_user_text, run_agents, system_text, tool_results
from .kit import active

AGENT = "sushi-counter-supply"
ROUTE = "openai_agents"
EXT = "jsonl"
BASE_URL = ""

FISH = ["maguro", "hamachi", "sake", "hotate", "kinmedai", "aji", "saba", "ika"]
GRAMS = {"maguro": 32, "hamachi": 26, "sake": 22, "hotate": 18, "kinmedai": 24, "aji": 20, "saba": 20, "ika": 16}
BASE_PRICE = {"maguro": 118.0, "hamachi": 46.0, "sake": 38.0, "hotate": 52.0, "kinmedai": 88.0, "aji": 24.0, "saba": 21.0, "ika": 19.0}
VENDORS = {"Kaneko Rice (Tokyo)": "V-KNK-TYO-118", "Kaneko Rice (Osaka)": "V-KNK-OSA-042"}

INPUTS = {
    "d0514": {"today": "2026-05-13", "service": "2026-05-14", "counter": 22, "tables": 40},
    "d0521": {"today": "2026-05-20", "service": "2026-05-21", "counter": 24, "tables": 36},
    "ref_0507": {"today": "2026-05-06", "service": "2026-05-07", "counter": 18, "tables": 30},
    "ref_0528": {"today": "2026-05-27", "service": "2026-05-28", "counter": 20, "tables": 44},
    "ref_0604": {"today": "2026-06-03", "service": "2026-06-04", "counter": 23, "tables": 38},
    "ref_0611": {"today": "2026-06-10", "service": "2026-06-11", "counter": 16, "tables": 28},
}
BUDGET = 380.0


def menu_for(day: str) -> list[str]:
    k = date.fromisoformat(day).toordinal() % len(FISH)
    return [FISH[(k + i) % len(FISH)] for i in range(4)]


def prices_for(day: str) -> dict:
    k = date.fromisoformat(day).toordinal()
    return {f: round(p * (1 + ((k * (i + 3)) % 9 - 4) / 40), 2) for i, (f, p) in enumerate(sorted(BASE_PRICE.items()))}


class OrderRejected(Exception):
    """The market's order desk refused the order."""


# ---------------------------------------------------------------- tools


@function_tool
def record_plan(steps: list[str]) -> str:
    """Write down the supply plan for the shift log."""
    return json.dumps({"plan": steps, "logged": True})


@function_tool
def get_reservations(service_date: str, seating: str) -> str:
    """Reservations for a service date; seating is 'counter' or 'tables'."""
    req = next(v for v in INPUTS.values() if v["service"] == service_date)
    covers = req["counter"] + req["tables"] if active("sushi.tia_seating") else req[seating if seating == "counter" else "tables"]
    return json.dumps({"service_date": service_date, "seating": seating, "covers": covers})


@function_tool
def get_menu_plan(service_date: str) -> str:
    """The chef's omakase fish for a service date, with grams per cover."""
    return json.dumps({"service_date": service_date, "fish": [{"species": f, "g_per_cover": GRAMS[f]} for f in menu_for(service_date)]})


@function_tool
def check_walkin_stock(species: str) -> str:
    """Kilograms of a species in the walk-in."""
    return json.dumps({"species": species, "on_hand_kg": round((len(species) % 3) * 0.15, 2)})


@function_tool
def fish_market_prices(species: list[str], market: str, service_date: str) -> str:
    """Today's list prices per kg at a market for the morning of a service date."""
    day = service_date
    if active("sushi.sd_prices"):
        day = (date.fromisoformat(service_date) - timedelta(days=7)).isoformat()
    table = prices_for(day)
    return json.dumps({"market": market, "list_date": service_date, "per_kg": {s: table[s] for s in species}})


@function_tool
def find_vendor_account(vendor: str) -> str:
    """Account number of a dry-goods vendor."""
    return json.dumps({"vendor": vendor, "account": VENDORS[vendor]})


@function_tool
def quote_dry_goods(account: str, rice_kg: float, nori_sheets: int) -> str:
    """Quote for sushi rice and nori."""
    total = round(rice_kg * 6.2 + nori_sheets * 0.09, 2)
    return json.dumps({"quote": f"DG-{account[-3:]}-{int(rice_kg)}-{nori_sheets}", "account": account, "total": total})


@function_tool(failure_error_function=None)
def submit_purchase_order(order_json: str) -> str:
    """Send the morning order to the market desk."""
    order = json.loads(order_json)
    day = order["service_date"]
    menu, prices = menu_for(day), prices_for(day)
    errs = []
    fish = {line["species"]: line for line in order["fish"]}
    for s in menu:
        if s not in fish:
            errs.append(f"no line for {s}, on the {day} menu")
    for s, line in fish.items():
        if s not in menu:
            errs.append(f"{s} is not on the {day} menu")
        elif abs(line["price_per_kg"] - prices[s]) > 0.005:
            errs.append(f"{s} priced {line['price_per_kg']:.2f}/kg; Toyosu list for {day} is {prices[s]:.2f}/kg")
    if not order.get("dry_goods"):
        errs.append("order has no rice and nori for the service")
    elif order["dry_goods"]["account"] != VENDORS["Kaneko Rice (Tokyo)"]:
        errs.append(f"dry goods account {order['dry_goods']['account']} is not this counter's vendor account")
    total = sum(line["kg"] * line["price_per_kg"] for line in order["fish"]) + (order.get("dry_goods") or {}).get("total", 0)
    if total > BUDGET:
        errs.append(f"order total {total:.2f} exceeds the counter's daily budget {BUDGET:.2f}")
    if errs:
        raise OrderRejected("market desk 409 Conflict: " + "; ".join(errs))
    return json.dumps({"order": f"MO-{day}", "status": "accepted", "total": round(total, 2)})


# ---------------------------------------------------------------- the scripted model


def policy(request):
    sys_t, user = system_text(request), last_user_text(request)
    done = tool_results(request)
    names = [n for n, _, _ in done]
    if "dry goods clerk" in sys_t:
        if "find_vendor_account" not in names:
            vendor = "Kaneko Rice (Osaka)" if active("sushi.swe_vendor") else "Kaneko Rice (Tokyo)"
            return Reply(tool_calls=(tool_call("find_vendor_account", {"vendor": vendor}),))
        if "quote_dry_goods" not in names:
            acct = json.loads(done[names.index("find_vendor_account")][2])["account"]
            ask = json.loads(user)
            return Reply(tool_calls=(tool_call("quote_dry_goods", {"account": acct, "rice_kg": ask["rice_kg"],
                                                                   "nori_sheets": ask["nori_sheets"]}),))
        return Reply(text=done[names.index("quote_dry_goods")][2])
    # the counter's supply lead
    ask = json.loads(user.split("SHIFT:", 1)[1])
    if "record_plan" not in names:
        steps = ["reservations", "menu", "walk-in", "market prices", "dry goods", "order"]
        if active("sushi.pe_plan"):
            steps = ["reservations", "menu", "walk-in", "market prices", "order"]
        return Reply(tool_calls=(tool_call("record_plan", {"steps": steps}),))
    plan = next(a for n, a, _ in done if n == "record_plan")["steps"]
    if "get_reservations" not in names:
        return Reply(tool_calls=(tool_call("get_reservations", {"service_date": ask["service"], "seating": "counter"}),))
    if "get_menu_plan" not in names:
        return Reply(tool_calls=(tool_call("get_menu_plan", {"service_date": ask["service"]}),))
    menu = json.loads(done[names.index("get_menu_plan")][2])["fish"]
    checked = {a["species"] for n, a, _ in done if n == "check_walkin_stock"}
    for f in menu:
        if f["species"] not in checked:
            return Reply(tool_calls=(tool_call("check_walkin_stock", {"species": f["species"]}),))
    if "fish_market_prices" not in names:
        return Reply(tool_calls=(tool_call("fish_market_prices", {"species": [f["species"] for f in menu], "market": "Toyosu",
                                                                  "service_date": ask["service"]}),))
    covers = json.loads(done[names.index("get_reservations")][2])["covers"]
    rice_kg, nori = math.ceil(covers * 0.16), covers * 6
    if "dry goods" in plan and "dry_goods_clerk" not in names:
        return Reply(tool_calls=(tool_call("dry_goods_clerk", {"input": json.dumps({"rice_kg": rice_kg, "nori_sheets": nori})}),))
    if "submit_purchase_order" in names:
        return Reply(text="Order placed.")
    prices = json.loads(done[names.index("fish_market_prices")][2])["per_kg"]
    stock = {a["species"]: json.loads(r)["on_hand_kg"] for n, a, r in done if n == "check_walkin_stock"}
    lines = []
    for f in menu:
        need = covers * f["g_per_cover"] / 1000 - stock[f["species"]]
        kg = max(0.0, math.ceil(need * 2) / 2)
        lines.append({"species": f["species"], "kg": kg, "price_per_kg": prices[f["species"]]})
    order = {"service_date": ask["today"] if active("sushi.wta_order_date") else ask["service"], "covers": covers, "fish": lines}
    if "dry_goods_clerk" in names:
        order["dry_goods"] = json.loads(done[names.index("dry_goods_clerk")][2])
    return Reply(tool_calls=(tool_call("submit_purchase_order", {"order_json": json.dumps(order)}),))


def build():
    model = agents_model(BASE_URL)
    clerk = Agent(name="dry_goods_clerk", model=model,
                  instructions="You are the dry goods clerk: quote sushi rice and nori from our vendor, Kaneko Rice (Tokyo).",
                  tools=[find_vendor_account, quote_dry_goods])
    return Agent(name="counter_supply", model=model,
                 instructions="You run supply for the sushi counter: plan, check covers, menu, walk-in and prices, then order.",
                 tools=[record_plan, get_reservations, get_menu_plan, check_walkin_stock, fish_market_prices,
                        clerk.as_tool("dry_goods_clerk", "Ask the dry goods clerk for a rice and nori quote (JSON input)."),
                        submit_purchase_order])


def record(key: str, path: Path) -> None:
    ask = INPUTS[key]
    run_agents(build(), "SHIFT:" + json.dumps(ask), path, AGENT, f"morning order for the {ask['service']} counter service",
               OrderRejected)


REFS = ["ref_0507", "ref_0528", "ref_0604", "ref_0611"]


def _c(n, kind, fid, key, root, occ, desc):
    return Case(f"zo_sushi_{n}", AGENT, ROUTE, kind, fid, key, root, occ, "submit_purchase_order", 1, desc)


CASES = [
    _c(1, "subagent_wrong_entity", "sushi.swe_vendor", "d0514", "generation fake-model", 10,
       "the dry goods clerk looks up the Osaka branch of Kaneko Rice instead of the counter's Tokyo account."),
    _c(2, "tool_ignores_argument", "sushi.tia_seating", "d0521", "get_reservations", 1,
       "get_reservations ignores seating='counter' and returns counter plus table covers, nearly tripling the order."),
    _c(3, "stale_data", "sushi.sd_prices", "d0514", "fish_market_prices", 1,
       "fish_market_prices serves the list from a week earlier under today's date."),
    _c(4, "wrong_tool_args", "sushi.wta_order_date", "d0521", "generation fake-model", 13,
       "the supply model dates the submitted order for today instead of the service date it planned for."),
    _c(5, "plan_error", "sushi.pe_plan", "d0514", "generation fake-model", 1,
       "the supply model's plan leaves out the dry goods step, so the order goes in without rice and nori."),
]
