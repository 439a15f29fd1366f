"""A wholesale bakery's order desk (trajdebug's own recorder): e-mailed cafe orders to a bake plan,
ingredient reservations, a van booking and an invoice."""

from __future__ import annotations

import datetime as dt
import json
import re

import trajdebug

from . import common

NAME = "crumb-and-co-wholesale"
ROUTE = "sdk"
DOMAIN = "wholesale bakery: cafe orders to bake plan, pantry, van and invoice"
SHAPE = "email -> llm extract -> parse -> date -> customer tool -> state -> loop(retrieve recipe, scale) -> pantry -> reserve -> llm plan -> parse -> prices -> invoice -> van -> final check -> send"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


INPUTS = {
    "juniper": {"received": "2025-05-12", "email": "Hello Crumb & Co, Juniper Cafe here (account JC-204). For Friday please: 24 sourdough, 36 croissant, 12 rye. Thanks, Mia"},
    "harbour": {"received": "2025-05-12", "email": "Hi! Harbour Deli, account HD-118. Wednesday delivery: 18 baguette, 20 croissant, 10 focaccia. Cheers, Tom"},
    "tallow": {"received": "2025-05-13", "email": "Order from Tallow & Thyme (TT-330): 30 sourdough and 16 rye, delivered Saturday. - Priya"},
    "parkside": {"received": "2025-05-14", "email": "Parkside School kitchen, account PS-052. Monday: 48 bun, 12 focaccia, 20 baguette, 24 croissant, 10 rye, 16 sourdough. Regards, Mr Okafor"},
    "ferry": {"received": "2025-05-14", "email": "Ferry Kiosk FK-411 - Friday please: 40 croissant, 24 pain_au_chocolat, 10 baguette. Ana"},
}

CASES = [
    {"id": "bakery_pantry_units", "input": "juniper", "switch": "pantry_units", "fault_kind": "unit_error",
     "root": ("check_pantry", 1), "failure": ("reserve_ingredients", 1),
     "description": "The pantry service reported the butter stock in kilograms under its grams field (9.0 instead of 9000), so the butter reservation for 36 croissants failed."},
    {"id": "bakery_next_weekday", "input": "tallow", "switch": "weekday_offset", "fault_kind": "off_by_one",
     "root": ("resolve_delivery_date", 1), "failure": ("book_van", 1),
     "description": "Resolving 'Saturday' counted one day short and gave Friday 2025-05-16, a day the zone-3 van does not run."},
    {"id": "bakery_account_digits", "input": "harbour", "switch": "account_digits", "fault_kind": "hallucinated_value",
     "root": ("extract_order", 1), "failure": ("load_customer", 1),
     "description": "The extraction model returned account HD-181 where the e-mail says HD-118, and the customer lookup found no such account."},
    {"id": "bakery_tier_memory", "input": "parkside", "switch": "tier_key", "fault_kind": "bad_memory_write",
     "root": ("remember_customer", 1), "failure": ("final_check", 1),
     "description": "Remembering the customer read a missing key and stored price tier 'retail' for a wholesale school account, so the invoice went over its credit limit."},
    {"id": "bakery_dough_card", "input": "ferry", "switch": "dough_card", "fault_kind": "wrong_retrieval",
     "root": ("lookup_recipe", 1), "failure": ("reserve_ingredients", 1),
     "description": "The recipe search for croissant returned the 1 kg laminated-dough batch card instead of the per-piece card, so the croissants' flour and butter needs came out per kilogram batch and the butter reservation failed."},
]

CUSTOMERS = {
    "JC-204": {"account": "JC-204", "name": "Juniper Cafe", "tier": "wholesale", "zone": 2, "credit_limit": 400.0},
    "HD-118": {"account": "HD-118", "name": "Harbour Deli", "tier": "wholesale", "zone": 1, "credit_limit": 350.0},
    "TT-330": {"account": "TT-330", "name": "Tallow & Thyme", "tier": "wholesale", "zone": 3, "credit_limit": 300.0},
    "PS-052": {"account": "PS-052", "name": "Parkside School", "tier": "wholesale", "zone": 2, "credit_limit": 300.0},
    "FK-411": {"account": "FK-411", "name": "Ferry Kiosk", "tier": "wholesale", "zone": 1, "credit_limit": 400.0},
}
RECIPES = {
    "sourdough": {"card": "sourdough loaf 800 g", "per": "piece", "flour_g": 480, "rye_flour_g": 20, "butter_g": 0},
    "rye": {"card": "rye loaf 750 g", "per": "piece", "flour_g": 120, "rye_flour_g": 330, "butter_g": 0},
    "croissant": {"card": "croissant, per piece", "per": "piece", "flour_g": 55, "rye_flour_g": 0, "butter_g": 30},
    "croissant dough": {"card": "laminated croissant dough, 1 kg batch", "per": "batch", "flour_g": 560, "rye_flour_g": 0, "butter_g": 330},
    "pain_au_chocolat": {"card": "pain au chocolat, per piece", "per": "piece", "flour_g": 55, "rye_flour_g": 0, "butter_g": 30},
    "baguette": {"card": "baguette 250 g", "per": "piece", "flour_g": 165, "rye_flour_g": 0, "butter_g": 0},
    "focaccia": {"card": "focaccia tray", "per": "piece", "flour_g": 600, "rye_flour_g": 0, "butter_g": 0},
    "bun": {"card": "soft bun 80 g", "per": "piece", "flour_g": 50, "rye_flour_g": 0, "butter_g": 6},
}
PANTRY_G = {"flour": 26000.0, "rye_flour": 6000.0, "butter": 3000.0}
PRICES = {
    "wholesale": {"sourdough": 3.1, "rye": 3.4, "croissant": 1.05, "pain_au_chocolat": 1.2, "baguette": 1.3, "focaccia": 4.2, "bun": 0.55},
    "retail": {"sourdough": 5.5, "rye": 5.8, "croissant": 2.2, "pain_au_chocolat": 2.4, "baguette": 2.6, "focaccia": 7.5, "bun": 1.1},
}
VAN_DAYS = {1: {"Monday", "Wednesday", "Friday"}, 2: {"Monday", "Tuesday", "Friday"}, 3: {"Tuesday", "Saturday"}}
OVENS = ("deck-A", "deck-B", "rack-1")

EXTRACT_SYS = "You extract wholesale bakery orders. Answer with JSON: account, day, lines [{product, qty}]."
PLAN_SYS = "You plan a bakery's overnight bake across ovens deck-A, deck-B and rack-1. Answer with JSON: slots [{oven, start, product, qty}]."


# ---- the model's side -----------------------------------------------------------------------------

def brain(request):
    system = common.system_of(request)
    user = common.last_user(request)
    if system.startswith("You extract"):
        account = re.search(r"\b([A-Z]{2}-\d{3})\b", user).group(1)
        if _on("account_digits"):
            account = account[:3] + account[3] + account[5] + account[4]
        day = re.search(r"(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)", user).group(1)
        lines = [{"product": p, "qty": int(q)} for q, p in re.findall(r"(\d+) ([a-z_]+)", user)]
        return json.dumps({"account": account, "day": day, "lines": lines})
    if system.startswith("You plan"):
        lines = json.loads(user.split("\n", 1)[1])
        slots, hour = [], 2
        for i, line in enumerate(lines):
            slots.append({"oven": OVENS[i % 3], "start": f"{hour:02d}:30", "product": line["product"], "qty": line["qty"]})
            if i % 3 == 2:
                hour += 1
        return "Here is the bake plan:\n" + json.dumps({"slots": slots})
    return "I can only help with bakery orders."


# ---- the agent ------------------------------------------------------------------------------------

@trajdebug.step(kind="input")
def read_order_email(email: str, received: str) -> dict:
    return {"body": email, "received": received}


@trajdebug.step(kind="llm")
def extract_order(messages: list[dict]) -> dict:
    return common.chat(messages)


@trajdebug.step(kind="parse")
def parse_order(answer: dict) -> dict:
    data = json.loads(answer["content"])
    lines = [{"product": line["product"].strip().lower(), "qty": int(line["qty"])} for line in data["lines"]]
    return {"account": data["account"].strip(), "day": data["day"], "lines": lines}


@trajdebug.step(kind="parse")
def resolve_delivery_date(day: str, received: str) -> dict:
    names = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    start = dt.date.fromisoformat(received)
    ahead = (names.index(day) - start.weekday()) % 7 or 7
    if _on("weekday_offset"):
        ahead = (names.index(day) - start.weekday() - 1) % 7 or 7
    date = start + dt.timedelta(days=ahead)
    return {"date": date.isoformat(), "weekday": names[date.weekday()]}


@trajdebug.step(kind="tool")
def load_customer(account: str) -> dict:
    if account not in CUSTOMERS:
        raise KeyError(f"no wholesale account {account} in the ledger")
    return dict(CUSTOMERS[account])


@trajdebug.step(kind="state")
def remember_customer(customer: dict) -> dict:
    tier = customer.get("price_tier", "retail") if _on("tier_key") else customer["tier"]
    memo = {"account": customer["account"], "tier": tier, "zone": customer["zone"], "credit_limit": customer["credit_limit"]}
    trajdebug.current_run().state["customer"] = memo
    return memo


@trajdebug.step(kind="retrieval")
def lookup_recipe(product: str) -> dict:
    key = product
    if _on("dough_card") and product == "croissant":
        key = "croissant dough"
    return {"query": product, **RECIPES[key]}


@trajdebug.step(kind="other")
def scale_recipe(card: dict, qty: int) -> dict:
    return {"product": card["query"], "qty": qty,
            "flour_g": card["flour_g"] * qty, "rye_flour_g": card["rye_flour_g"] * qty, "butter_g": card["butter_g"] * qty}


@trajdebug.step(kind="tool")
def check_pantry(items: list[str]) -> dict:
    stock = {item: PANTRY_G[item] for item in items}
    if _on("pantry_units"):
        stock["butter"] = PANTRY_G["butter"] / 1000
    return {"unit": "g", "stock": stock}


@trajdebug.step(kind="tool")
def reserve_ingredients(needs: list[dict], pantry: dict) -> dict:
    reserved = {}
    for item in ("flour", "rye_flour", "butter"):
        need = sum(n[f"{item}_g"] for n in needs)
        have = pantry["stock"][item]
        if need > have:
            raise RuntimeError(f"insufficient {item}: need {need} g, on hand {have} g")
        reserved[item] = need
    return {"reserved_g": reserved, "hold_id": f"H-{int(sum(reserved.values())) % 9973}"}


@trajdebug.step(kind="llm")
def plan_bake(messages: list[dict]) -> dict:
    return common.chat(messages)


@trajdebug.step(kind="parse")
def parse_bake_plan(answer: dict) -> list[dict]:
    text = answer["content"]
    return json.loads(text[text.index("{"):])["slots"]


@trajdebug.step(kind="tool")
def get_price_list(account: str) -> dict:
    tier = trajdebug.current_run().state["customer"]["tier"]
    return {"account": account, "tier": tier, "prices": dict(PRICES[tier])}


@trajdebug.step(kind="other")
def price_order(lines: list[dict], price_list: dict) -> dict:
    rows = [{"product": l["product"], "qty": l["qty"], "amount": round(l["qty"] * price_list["prices"][l["product"]], 2)} for l in lines]
    return {"rows": rows, "total": round(sum(r["amount"] for r in rows), 2), "tier": price_list["tier"]}


@trajdebug.step(kind="tool")
def print_crate_label(account: str, slot: dict) -> str:
    return f"{account} | {slot['qty']} x {slot['product']} | {slot['oven']} {slot['start']}"


@trajdebug.step(kind="tool")
def book_van(zone: int, date: dict) -> dict:
    if date["weekday"] not in VAN_DAYS[zone]:
        raise RuntimeError(f"no van route to zone {zone} on {date['weekday']} {date['date']}")
    return {"route": f"Z{zone}-{date['weekday'][:3].upper()}", "date": date["date"]}


@trajdebug.step(kind="condition")
def final_check(order: dict, slots: list[dict], invoice: dict, memo: dict) -> str:
    planned = {(s["product"], s["qty"]) for s in slots}
    for line in order["lines"]:
        if (line["product"], line["qty"]) not in planned:
            raise ValueError(f"{line['qty']} {line['product']} missing from the bake plan")
    if invoice["total"] > memo["credit_limit"]:
        raise ValueError(f"invoice total {invoice['total']:.2f} exceeds the credit limit {memo['credit_limit']:.2f} of {memo['account']}")
    return "ok"


@trajdebug.step(kind="tool")
def send_confirmation(account: str, route: dict, invoice: dict) -> str:
    return f"Confirmed for {account}: {route['route']} on {route['date']}, total {invoice['total']:.2f}"


def record(key: str, path: str) -> None:
    inp = INPUTS[key]
    try:
        with trajdebug.run(NAME, task=f"wholesale order: {inp['email'][:60]}", path=path):
            email = read_order_email(inp["email"], inp["received"])
            answer = extract_order([{"role": "system", "content": EXTRACT_SYS}, {"role": "user", "content": email["body"]}])
            order = parse_order(answer)
            date = resolve_delivery_date(order["day"], email["received"])
            customer = load_customer(order["account"])
            memo = remember_customer(customer)
            needs = []
            for line in order["lines"]:
                card = lookup_recipe(line["product"])
                needs.append(scale_recipe(card, line["qty"]))
            pantry = check_pantry(["flour", "rye_flour", "butter"])
            reserve_ingredients(needs, pantry)
            plan = plan_bake([{"role": "system", "content": PLAN_SYS},
                              {"role": "user", "content": "Lines to bake:\n" + json.dumps(order["lines"])}])
            slots = parse_bake_plan(plan)
            for slot in slots:
                print_crate_label(order["account"], slot)
            prices = get_price_list(order["account"])
            invoice = price_order(order["lines"], prices)
            route = book_van(memo["zone"], date)
            final_check(order, slots, invoice, memo)
            send_confirmation(order["account"], route, invoice)
    except Exception:
        pass
