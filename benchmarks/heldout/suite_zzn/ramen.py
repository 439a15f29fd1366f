"""Ramen shop: closes an evening's orders, stock and restock order (sdk route)."""
from __future__ import annotations

import json

import kit
import trajdebug
from common import block, client, last_user, parse_block

NAME = "ramen-orders-stock"
ROUTE = "sdk"
DOMAIN = "a ramen shop's orders and stock"
SHAPE = "input; load_stock (retried); plan_prep llm + parse_plan; per order: price_order, record_sale; per dish: fetch_recipe, consume_ingredients; restock sub-agent (check_low, build_po_prompt, supplier_quote, draft_po llm, parse_po); summarize llm; validate_close"

MENU = {"tonkotsu": 13.5, "shoyu": 12.0, "miso": 12.5}
RECIPES = {
    "tonkotsu": {"noodles": 1, "pork_bones_kg": 0.3, "chashu_kg": 0.08, "egg": 1, "nori": 2},
    "shoyu": {"noodles": 1, "chicken_kg": 0.25, "chashu_kg": 0.06, "egg": 1, "nori": 1},
    "miso": {"noodles": 1, "miso_kg": 0.05, "pork_bones_kg": 0.2, "corn_kg": 0.04, "nori": 1},
}
OPENING = {"noodles": 80, "pork_bones_kg": 5.5, "chashu_kg": 1.2, "egg": 60, "nori": 90,
           "chicken_kg": 8.0, "miso_kg": 2.0, "corn_kg": 3.0}
PAR = {"noodles": 30, "pork_bones_kg": 5.0, "chashu_kg": 2.0, "egg": 24, "nori": 40,
       "chicken_kg": 3.0, "miso_kg": 0.5, "corn_kg": 1.0}
CAPACITY = {"pork_bones_kg": 25, "chashu_kg": 6, "noodles": 120, "egg": 120}
PRICES = {"pork_bones_kg": 2.1, "chashu_kg": 14.0, "noodles": 0.45, "egg": 0.3, "nori": 0.1,
          "chicken_kg": 4.2, "miso_kg": 6.0, "corn_kg": 2.5}
HANDOVER = ["Fri: pork_bones standing order 40 kg for the Leeds central kitchen",
            "Sat: dishwasher serviced", "Sun: new noodle supplier from next week"]


def _orders(spec):
    return [{"order": f"R-{i + 1:03d}", "items": items} for i, items in enumerate(spec)]


CASES = [
    {"id": "zzn_ramen_01", "kind": "plan_error",
     "input": {"date": "2026-02-06", "orders": _orders([[["tonkotsu", 2]], [["shoyu", 1], ["miso", 1]], [["tonkotsu", 1]], [["miso", 2]]])},
     "root": ("plan_prep", 1), "failure": ("validate_close", 1),
     "desc": "The prep plan from the model leaves out the last order (2 miso), so the kitchen preps 2 miso bowls fewer than were ordered."},
    {"id": "zzn_ramen_02", "kind": "truncated_result",
     "input": {"date": "2026-02-07", "orders": _orders([[["shoyu", 2]], [["tonkotsu", 2]], [["shoyu", 1], ["tonkotsu", 1]]])},
     "root": ("fetch_recipe", 2), "failure": ("validate_close", 1),
     "desc": "The recipe lookup for tonkotsu returns only its first three ingredients, so egg and nori are never deducted for those bowls."},
    {"id": "zzn_ramen_03", "kind": "bad_memory_write",
     "input": {"date": "2026-02-08", "orders": _orders([[["miso", 1]], [["tonkotsu", 3]], [["shoyu", 2]], [["miso", 1], ["shoyu", 1]]])},
     "root": ("record_sale", 4), "failure": ("validate_close", 1),
     "desc": "record_sale for R-004 stores the previous order's total (24.00) instead of its own 24.50."},
    {"id": "zzn_ramen_04", "kind": "swallowed_error",
     "input": {"date": "2026-02-09", "orders": _orders([[["tonkotsu", 2]], [["shoyu", 2]], [["miso", 1]]])},
     "root": ("supplier_quote", 1), "failure": ("validate_close", 1),
     "desc": "supplier_quote catches the meat supplier's timeout and returns the quote without chashu, so no chashu is reordered."},
    {"id": "zzn_ramen_05", "kind": "context_pollution",
     "input": {"date": "2026-02-10", "orders": _orders([[["miso", 2]], [["tonkotsu", 1]], [["shoyu", 1], ["miso", 1]]])},
     "root": ("build_po_prompt", 1), "failure": ("validate_close", 1),
     "desc": "build_po_prompt pastes the whole handover log, including the Leeds kitchen's 40 kg standing order, into the purchase-order prompt."},
]
REFS = [{"date": "2026-01-30", "orders": _orders([[["tonkotsu", 1]], [["shoyu", 2]], [["miso", 1]], [["tonkotsu", 2]]])},
        {"date": "2026-01-31", "orders": _orders([[["miso", 1], ["shoyu", 1]], [["tonkotsu", 3]], [["shoyu", 1]]])},
        {"date": "2026-02-01", "orders": _orders([[["shoyu", 3]], [["miso", 2]], [["tonkotsu", 1]]])},
        {"date": "2026-02-02", "orders": _orders([[["tonkotsu", 2], ["miso", 1]], [["shoyu", 1]], [["tonkotsu", 1]], [["miso", 1]]])}]


def brain(request):
    title, p = parse_block(last_user(request))
    if title == "PLAN":
        orders = p["orders"]
        if kit.on("zzn_ramen_01"):
            orders = orders[:-1]
        bowls = {}
        for o in orders:
            for dish, n in o["items"]:
                bowls[dish] = bowls.get(dish, 0) + n
        return json.dumps({"bowls": bowls, "orders_covered": len(orders)})
    if title == "PO":
        lines = []
        for item in p["low"]:
            if item not in p["quote"]["prices"]:
                continue
            qty = round(PAR[item] * 2 - p["closing"][item], 2)
            for note in p.get("notes", []):
                if f"{item.rsplit('_', 1)[0]} standing order" in note:
                    qty = float(note.split("order ")[1].split(" ")[0])
            lines.append({"item": item, "qty": qty, "unit_price": p["quote"]["prices"][item]})
        return json.dumps({"lines": lines})
    if title == "SUMMARY":
        return f"Closed {p['date']}: revenue {p['revenue']:.2f} GBP, {len(p['po'])} purchase lines."
    raise ValueError(title)


_calls = {"stock": 0}


@trajdebug.step(kind="input")
def read_orders(batch: dict) -> dict:
    return batch


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def load_stock(store: str) -> dict:
    _calls["stock"] += 1
    if _calls["stock"] == 1:
        raise ConnectionError("stock service 503 on first request after idle")
    return dict(OPENING)


@trajdebug.step(kind="llm")
def plan_prep(messages: list) -> str:
    return plan_prep.cli.chat.completions.create(model="fake-model", messages=messages).choices[0].message.content


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> dict:
    return json.loads(text)["bowls"]


@trajdebug.step(kind="tool")
def price_order(order: dict) -> dict:
    total = round(sum(MENU[d] * n for d, n in order["items"]), 2)
    return {"order": order["order"], "total": total}


@trajdebug.step(kind="state")
def record_sale(priced: dict) -> float:
    state = trajdebug.current_run().state
    total = priced["total"]
    if kit.on("zzn_ramen_03") and priced["order"] == "R-004":
        total = state["last_total"]
    state[f"sale:{priced['order']}"] = total
    state["last_total"] = priced["total"]
    return total


@trajdebug.step(kind="tool")
def fetch_recipe(dish: str) -> dict:
    items = list(RECIPES[dish].items())
    if kit.on("zzn_ramen_02") and dish == "tonkotsu":
        items = items[:3]
    return {"dish": dish, "ingredients": dict(items)}


@trajdebug.step(kind="state")
def consume_ingredients(recipe: dict, bowls: int) -> dict:
    state = trajdebug.current_run().state
    stock = dict(state["stock"])
    for item, qty in recipe["ingredients"].items():
        stock[item] = round(stock[item] - qty * bowls, 3)
    state["stock"] = stock
    return stock


@trajdebug.step(kind="condition")
def check_low(closing: dict) -> list:
    return sorted(k for k, v in closing.items() if v < PAR[k])


@trajdebug.step(kind="other")
def build_po_prompt(low: list, closing: dict, handover: list) -> list:
    notes = [n for n in handover if "central kitchen" not in n]
    if kit.on("zzn_ramen_05"):
        notes = list(handover)
    return [{"role": "system", "content": "You draft purchase orders for the Camden branch."},
            {"role": "user", "content": block("PO", low=low, closing=closing, notes=notes, quote=supplier_quote(low))}]


@trajdebug.step(kind="tool")
def supplier_quote(items: list) -> dict:
    prices = {}
    for item in items:
        try:
            if item == "chashu_kg" and kit.on("zzn_ramen_04"):
                raise TimeoutError("meat supplier price list timed out")
            prices[item] = PRICES[item]
        except TimeoutError:
            continue
    return {"supplier": "Kanto Foods", "prices": prices}


@trajdebug.step(kind="llm")
def draft_po(messages: list) -> str:
    return draft_po.cli.chat.completions.create(model="fake-model", messages=messages).choices[0].message.content


@trajdebug.step(kind="parse")
def parse_po(text: str) -> list:
    return json.loads(text)["lines"]


@trajdebug.step(kind="agent")
def restock(closing: dict) -> list:
    low = check_low(closing)
    messages = build_po_prompt(low, closing, HANDOVER)
    return parse_po(draft_po(messages))


@trajdebug.step(kind="llm")
def summarize(messages: list) -> str:
    return summarize.cli.chat.completions.create(model="fake-model", messages=messages).choices[0].message.content


@trajdebug.step(kind="condition")
def validate_close(batch: dict, bowls: dict, closing: dict, po: list) -> dict:
    state = trajdebug.current_run().state
    need = {}
    for o in batch["orders"]:
        for d, n in o["items"]:
            need[d] = need.get(d, 0) + n
    for d, n in need.items():
        if bowls.get(d, 0) != n:
            raise ValueError(f"prep plan has {bowls.get(d, 0)} {d} bowls; the orders need {n}")
    for o in batch["orders"]:
        expect = round(sum(MENU[d] * n for d, n in o["items"]), 2)
        got = state[f"sale:{o['order']}"]
        if abs(got - expect) > 0.005:
            raise ValueError(f"sale {o['order']} recorded {got:.2f} GBP; its items come to {expect:.2f}")
    for item, start in OPENING.items():
        used = sum(RECIPES[d].get(item, 0) * n for d, n in need.items())
        if abs(closing[item] - (start - used)) > 0.001:
            raise ValueError(f"closing stock {item} {closing[item]} does not match {start - used:.3f} after {used:.3f} used")
    lines = {ln["item"]: ln for ln in po}
    for item, v in closing.items():
        if v < PAR[item] and item not in lines:
            raise ValueError(f"{item} closes at {v} below par {PAR[item]} and the purchase order has no line for it")
    for item, ln in lines.items():
        if item in CAPACITY and ln["qty"] + closing[item] > CAPACITY[item]:
            raise ValueError(f"purchase line {item} {ln['qty']} would exceed storage capacity {CAPACITY[item]}")
    return {"ok": True}


def record(inp, path, server):
    server.use(brain)
    plan_prep.cli = draft_po.cli = summarize.cli = client(server)
    _calls["stock"] = 0
    with trajdebug.run(NAME, path=str(path), task=f"close the evening of {inp['date']}") as run:
        batch = read_orders(inp)
        with trajdebug.step("open_day", kind="state"):
            run.state["stock"] = load_stock("camden")
        bowls = parse_plan(plan_prep([{"role": "user", "content": block("PLAN", orders=batch["orders"])}]))
        revenue = 0.0
        for order in batch["orders"]:
            revenue += record_sale(price_order(order))
        closing = None
        for dish in sorted(bowls):
            closing = consume_ingredients(fetch_recipe(dish), bowls[dish])
        po = restock(closing)
        summarize([{"role": "user", "content": block("SUMMARY", date=batch["date"], revenue=revenue, po=po)}])
        validate_close(batch, bowls, closing, po)
