"""Saffron grower's harvest and sales (sdk route): dries and grades harvest lots, allocates stock to buyers, invoices."""
from __future__ import annotations

import json

import trajdebug

import _rt
import kit

NAME, ROUTE, DOMAIN = "saffron-harvest-sales", "sdk", "a saffron grower's harvest and sales"
SHAPE = "fetch lots, per-lot dry/grade/store loop, fetch prices and orders, per-order allocation loop, invoice sub-agent per order, totals, validator"

PRICES = {"2025": {"I": 11.37, "II": 7.83, "III": 5.41}, "2024": {"I": 9.62, "II": 6.94, "III": 4.58}}
BUYERS = ["Casa Alvarez", "Spice Route Ltd", "Maison Poivre", "Kashan Traders", "Nordic Pantry", "Gulf Gourmet"]


def _grade(crocin: int) -> str:
    return "I" if crocin >= 200 else ("II" if crocin >= 170 else "III")


def _input(i: int) -> dict:
    lots = [{"lot": f"L{i}{k}", "fresh_g": 900 + 150 * ((i + k) % 5), "crocin": 180 + 20 * ((i * 2 + k) % 6)} for k in range(4)]
    orders = [{"order": f"SO-{i}{k}", "buyer": BUYERS[(i + k) % 6], "grade": _grade(lots[k]["crocin"]), "grams": 60 + 10 * k}
              for k in range(3)]
    return {"season": "2025", "field": f"plot-{i + 1}", "lots": lots, "orders": orders}


INPUTS = [_input(i) for i in range(5)]
CASES = [
    {"id": "sf_c1", "input": 0, "fault_kind": "stale_data", "root": "fetch_prices", "occ": 1, "failure": "validate_sales",
     "description": "fetch_prices serves last season's cached price list, so invoices are priced below the 2025 contract."},
    {"id": "sf_c2", "input": 1, "fault_kind": "truncated_result", "root": "fetch_harvest", "occ": 1, "failure": "validate_sales",
     "description": "fetch_harvest returns only the first page of lots, so the stocked weight no longer balances the field's harvest register."},
    {"id": "sf_c3", "input": 2, "fault_kind": "off_by_one", "root": "allocate", "occ": 3, "failure": "validate_sales",
     "description": "allocate fills the third order from the lot after the one it matched, a lot of another grade."},
    {"id": "sf_c4", "input": 3, "fault_kind": "lossy_parsing", "root": "parse_invoice", "occ": 3, "failure": "validate_sales",
     "description": "parse_invoice reads the third invoice's amount as a whole number, dropping the cents."},
    {"id": "sf_c5", "input": 4, "fault_kind": "subagent_wrong_entity", "root": "draft_invoice", "occ": 2, "failure": "validate_sales",
     "description": "The invoice model addresses the second invoice to the first order's buyer."},
]


def _policy(inp: dict):
    seen: list[str] = []

    def brain(request):
        text = _rt.last_user(request)
        if text.startswith("Draft the invoice"):
            o = json.loads(text.split("\n", 1)[1])
            buyer = o["buyer"]
            if kit.on("sf_c5") and seen:
                buyer = seen[0]
            seen.append(o["buyer"])
            return f"INVOICE {o['order']}\nBuyer: {buyer}\nGrade {o['grade']} saffron, {o['grams']} g at {o['price']:.2f} EUR/g\nAmount: {o['grams'] * o['price']:.2f} EUR"
        if text.startswith("Summarise the harvest"):
            return "Harvest summary: lots dried and graded; grade I share is good this season."
        return "OK"
    return brain


@trajdebug.step(kind="input")
def read_request(inp: dict) -> dict:
    return {"season": inp["season"], "field": inp["field"], "orders": [dict(o) for o in inp["orders"]]}


@trajdebug.step(kind="tool")
def fetch_harvest(field: str, page_size: int = 10) -> list[dict]:
    lots = [dict(x) for x in _CUR["inp"]["lots"]]
    if kit.on("sf_c2"):
        lots = lots[:2]
    return lots


@trajdebug.step(kind="other")
def dry_weight(lot: dict) -> dict:
    return {"lot": lot["lot"], "dry_g": round(lot["fresh_g"] / 5.0, 1)}


@trajdebug.step(kind="tool")
def lab_grade(lot: dict) -> dict:
    return {"lot": lot["lot"], "crocin": lot["crocin"], "grade": _grade(lot["crocin"])}


@trajdebug.step(kind="state")
def store_lot(dry: dict, graded: dict) -> dict:
    run = trajdebug.current_run()
    rec = {"lot": dry["lot"], "grade": graded["grade"], "stock_g": dry["dry_g"]}
    run.state[f"lot:{dry['lot']}"] = rec
    return rec


@trajdebug.step(kind="llm")
def summarise_harvest(client, stock: list[dict]) -> str:
    return _rt.complete(client, "You write harvest notes.", "Summarise the harvest:\n" + json.dumps(stock))


@trajdebug.step(kind="tool")
def fetch_prices(season: str) -> dict:
    return dict(PRICES["2024" if kit.on("sf_c1") else season])


@trajdebug.step(kind="condition")
def allocate(order: dict, stock: list[dict], index: int) -> dict:
    run = trajdebug.current_run()
    left = run.state.get("left") or {s["lot"]: s["stock_g"] for s in stock}
    cands = [k for k, s in enumerate(stock) if s["grade"] == order["grade"] and left[s["lot"]] >= order["grams"]]
    if not cands:
        cands = [k for k, s in enumerate(stock) if s["grade"] == order["grade"]] or [0]
    k = cands[0]
    if kit.on("sf_c3") and index == 2:
        k = (k + 1) % len(stock)
    lot = stock[k]["lot"]
    left[lot] = round(left[lot] - order["grams"], 1)
    run.state["left"] = left
    return {"order": order["order"], "lot": lot, "grams": order["grams"], "grade": stock[k]["grade"]}


@trajdebug.step(kind="llm")
def draft_invoice(client, order: dict) -> str:
    return _rt.complete(client, "You draft invoices.", "Draft the invoice:\n" + json.dumps(order))


@trajdebug.step(kind="parse")
def parse_invoice(text: str, index: int) -> dict:
    lines = text.splitlines()
    amount = float(lines[-1].split(":")[1].split()[0])
    if kit.on("sf_c4") and index == 2:
        amount = float(int(amount))
    return {"order": lines[0].split()[1], "buyer": lines[1].split(":", 1)[1].strip(), "amount": amount}


@trajdebug.step(kind="agent")
def invoice_agent(client, order: dict, price: float, index: int) -> dict:
    return parse_invoice(draft_invoice(client, dict(order, price=price)), index)


@trajdebug.step(kind="other")
def sales_totals(invoices: list[dict]) -> dict:
    return {"invoiced_eur": round(sum(i["amount"] for i in invoices), 2), "invoices": len(invoices)}


@trajdebug.step(kind="condition")
def validate_sales(orders, stock, allocations, invoices, totals, season) -> dict:
    contract = PRICES[season]
    register = round(sum(x["fresh_g"] for x in _CUR["inp"]["lots"]) / 5.0, 1)
    stocked = round(sum(s["stock_g"] for s in stock), 1)
    if abs(register - stocked) > 0.05:
        raise ValueError(f"stocked {stocked} g dry saffron, the harvest register of {_CUR['inp']['field']} gives {register} g")
    grade = {s["lot"]: s["grade"] for s in stock}
    avail = {s["lot"]: s["stock_g"] for s in stock}
    for a in allocations:
        if grade.get(a["lot"]) != a["grade"] or a["grade"] != next(o["grade"] for o in orders if o["order"] == a["order"]):
            raise ValueError(f"{a['order']} filled from lot {a['lot']} of grade {grade.get(a['lot'])}")
        avail[a["lot"]] = round(avail[a["lot"]] - a["grams"], 1)
    over = {k: v for k, v in avail.items() if v < 0}
    if over:
        raise ValueError(f"lots overdrawn: {over}")
    expected = 0.0
    for o, inv in zip(orders, invoices):
        due = round(o["grams"] * contract[o["grade"]], 2)
        expected += due
        if inv["buyer"] != o["buyer"]:
            raise ValueError(f"invoice {inv['order']} addressed to {inv['buyer']}, order placed by {o['buyer']}")
        if abs(inv["amount"] - due) > 0.005:
            raise ValueError(f"invoice {inv['order']} says {inv['amount']:.2f} EUR, contract price gives {due:.2f} EUR")
    if abs(totals["invoiced_eur"] - round(expected, 2)) > 0.005:
        raise ValueError(f"invoiced {totals['invoiced_eur']} EUR, expected {expected:.2f} EUR")
    return {"ok": True}


_CUR: dict = {}


def record(inp: dict, path: str) -> None:
    _rt.SERVER.use(_policy(inp))
    _CUR["inp"] = inp
    client = _rt.openai_client()

    def body(run):
        req = read_request(inp)
        lots = fetch_harvest(req["field"])
        stock = []
        for lot in lots:
            stock.append(store_lot(dry_weight(lot), lab_grade(lot)))
        summarise_harvest(client, stock)
        prices = fetch_prices(req["season"])
        allocations = [allocate(o, stock, i) for i, o in enumerate(req["orders"])]
        invoices = [invoice_agent(client, o, prices[o["grade"]], i) for i, o in enumerate(req["orders"])]
        totals = sales_totals(invoices)
        validate_sales(req["orders"], stock, allocations, invoices, totals, req["season"])

    _rt.sdk_run(NAME, f"sell the {inp['field']} harvest", body, path)
