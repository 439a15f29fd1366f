"""Bagpipe maker's reed orders: trajdebug SDK, linear pipeline with a per-line loop and run.state ledger."""
from __future__ import annotations

import json
import re

import trajdebug

from common import chat, last_user

NAME = "reed-order-desk"
ROUTE = "sdk"
DOMAIN = "bagpipe maker's reed orders"
SHAPE = "email -> model extraction -> parser -> per line (cane stock, gauge, reserve in run.state) -> pricing -> order check; 10-16 steps"
SWITCH = None
_SERVER = [None]

CANE = {"Highland A": {"cane": "Arundo-Var", "stock": 60, "bore_mm": 4.9, "staple_mm": 47.0, "unit": 14.0},
        "Highland Bb": {"cane": "Arundo-Var", "stock": 40, "bore_mm": 4.6, "staple_mm": 46.0, "unit": 15.5},
        "Smallpipe D": {"cane": "Arundo-Fine", "stock": 25, "bore_mm": 3.8, "staple_mm": 38.5, "unit": 18.0},
        "Uilleann D": {"cane": "Arundo-Fine", "stock": 18, "bore_mm": 4.1, "staple_mm": 41.0, "unit": 24.0},
        "Border A": {"cane": "Arundo-Var", "stock": 30, "bore_mm": 4.4, "staple_mm": 44.0, "unit": 16.0}}
LAST_SEASON = {"Highland A": 60, "Highland Bb": 40, "Smallpipe D": 25, "Uilleann D": 30, "Border A": 30}

INPUTS = [
    {"order_no": "RO-3101", "piper": "Morag Innes", "email": "Please send 6 Highland A chanter reeds, 4 Border A reeds. Medium strength."},
    {"order_no": "RO-3102", "piper": "Calum Reid", "email": "Order: 3 Smallpipe D reeds and 2 Highland Bb reeds, hard."},
    {"order_no": "RO-3103", "piper": "Aoife Byrne", "email": "I need 5 Uilleann D reeds, soft please."},
    {"order_no": "RO-3104", "piper": "Ewan Baird", "email": "10 Highland A reeds medium, 2 Smallpipe D reeds medium, 3 Border A reeds easy."},
    {"order_no": "RO-3105", "piper": "Isla Munro", "email": "Could you make 4 Highland Bb reeds, medium-hard."},
]

CASES = [
    {"id": "zzzy-reeds-1", "input": 3, "switch": "parse", "fault_kind": "lossy_parsing",
     "root": ("parse_order_lines", 1), "failure": ("check_order", 1),
     "description": "The line parser keeps only the first word of each chanter name, so the Smallpipe D line is gauged as a Highland reed."},
    {"id": "zzzy-reeds-2", "input": 1, "switch": "gauge", "fault_kind": "unit_error",
     "root": ("gauge_reed", 2), "failure": ("check_order", 1),
     "description": "The gauge step gives the Highland Bb staple length in inches instead of millimetres."},
    {"id": "zzzy-reeds-3", "input": 2, "switch": "model", "fault_kind": "hallucinated_value",
     "root": ("extract_order", 1), "failure": ("reserve_cane", 1),
     "description": "The extraction model reports 50 Uilleann D reeds where the email asks for 5, and the cane reservation cannot cover it."},
    {"id": "zzzy-reeds-4", "input": 0, "switch": "stock", "fault_kind": "stale_data",
     "root": ("fetch_cane_stock", 2), "failure": ("price_order", 1),
     "description": "The cane stock lookup answers from last season's cached price sheet for Border A, whose list price has since risen."},
    {"id": "zzzy-reeds-5", "input": 4, "switch": "ledger", "fault_kind": "bad_memory_write",
     "root": ("reserve_cane", 1), "failure": ("check_order", 1),
     "description": "The reservation is written to the order ledger under the cane name instead of the order line, so the line shows no reserved cane."},
]


def policy(request):
    text = last_user(request)
    lines = []
    for qty, name in re.findall(r"(\d+) ((?:Highland|Smallpipe|Uilleann|Border) (?:A|Bb|D))", text):
        q = int(qty)
        if SWITCH == "model" and name == "Uilleann D":
            q = q * 10
        lines.append({"chanter": name, "quantity": q})
    strength = re.search(r"(easy|soft|medium-hard|medium|hard)", text)
    return json.dumps({"lines": lines, "strength": strength.group(1) if strength else "medium"})


@trajdebug.step(kind="input")
def read_order(order: dict) -> dict:
    return order


@trajdebug.step(kind="llm")
def extract_order(email: str) -> str:
    return chat(_SERVER[0], "Extract reed order lines as JSON {lines:[{chanter, quantity}], strength}.", email)


@trajdebug.step(kind="parse")
def parse_order_lines(text: str) -> list[dict]:
    data = json.loads(text)
    out = []
    for line in data["lines"]:
        chanter = line["chanter"]
        if SWITCH == "parse":
            chanter = chanter.split()[0] + " A" if chanter.split()[0] + " A" in CANE else "Highland A"
        out.append({"chanter": chanter, "quantity": int(line["quantity"]), "strength": data["strength"]})
    return out


@trajdebug.step(kind="tool")
def fetch_cane_stock(chanter: str) -> dict:
    row = dict(CANE[chanter])
    if SWITCH == "stock" and chanter == "Border A":
        row["unit"] = 12.5
        row["sheet"] = "2025-autumn"
    else:
        row["sheet"] = "2026-autumn"
    row["chanter"] = chanter
    return row


@trajdebug.step(kind="other")
def gauge_reed(line: dict, stock: dict) -> dict:
    staple = stock["staple_mm"]
    if SWITCH == "gauge" and line["chanter"] == "Highland Bb":
        staple = round(staple / 25.4, 2)
    hardness = {"easy": 1, "soft": 1, "medium": 2, "medium-hard": 3, "hard": 4}[line["strength"]]
    return {"chanter": line["chanter"], "bore_mm": stock["bore_mm"], "staple_mm": staple,
            "blade_mm": round(0.55 + 0.05 * hardness, 2)}


@trajdebug.step(kind="state")
def reserve_cane(line_no: int, line: dict, stock: dict) -> dict:
    run = trajdebug.current_run()
    ledger = run.state.setdefault("cane_ledger", {})
    used = sum(v["canes"] for v in ledger.values() if v["cane"] == stock["cane"])
    canes = line["quantity"] * 2
    if used + canes > CANE[line["chanter"]]["stock"] * 2:
        raise RuntimeError(f"cane {stock['cane']}: {canes} canes needed, only {CANE[line['chanter']]['stock'] * 2 - used} seasoned canes on the rack")
    key = stock["cane"] if SWITCH == "ledger" else f"line-{line_no}"
    ledger[key] = {"cane": stock["cane"], "canes": canes}
    return {"line": line_no, "canes": canes}


@trajdebug.step(kind="tool")
def current_price_list() -> dict:
    return {k: v["unit"] for k, v in CANE.items()}


@trajdebug.step(kind="other")
def price_order(lines: list[dict], stocks: list[dict], prices: dict) -> dict:
    total = 0.0
    for line, stock in zip(lines, stocks):
        if abs(stock["unit"] - prices[line["chanter"]]) > 0.01:
            raise ValueError(f"{line['chanter']}: quoted {stock['unit']:.2f} GBP per reed, price list says {prices[line['chanter']]:.2f} GBP")
        total += stock["unit"] * line["quantity"]
    return {"total_gbp": round(total, 2)}


@trajdebug.step(kind="other")
def check_order(order: dict, lines: list[dict], gauges: list[dict]) -> dict:
    run = trajdebug.current_run()
    ledger = run.state.get("cane_ledger", {})
    for i, (line, g) in enumerate(zip(lines, gauges)):
        spec = CANE[line["chanter"]]
        if f"{line['quantity']} {line['chanter']}" not in order["email"]:
            raise AssertionError(f"line {i + 1}: {line['chanter']} reeds are not what {order['piper']} asked for")
        if not 30 <= g["staple_mm"] <= 55:
            raise AssertionError(f"line {i + 1}: staple {g['staple_mm']} mm is outside the 30-55 mm range")
        if f"line-{i}" not in ledger:
            raise AssertionError(f"line {i + 1}: no cane reserved for {line['quantity']} {line['chanter']} reeds")
        if abs(g["bore_mm"] - spec["bore_mm"]) > 0.01:
            raise AssertionError(f"line {i + 1}: bore {g['bore_mm']} mm does not fit the chanter")
    return {"ok": True, "lines": len(lines)}


@trajdebug.step(kind="output")
def confirm(order: dict, price: dict) -> str:
    return f"{order['order_no']} for {order['piper']}: {price['total_gbp']:.2f} GBP, ready in 10 days"


def run_one(inp, server, path):
    _SERVER[0] = server
    with trajdebug.run(NAME, path=path, task=f"reed order {inp['order_no']}"):
        order = read_order(inp)
        text = extract_order(order["email"])
        lines = parse_order_lines(text)
        stocks, gauges = [], []
        for i, line in enumerate(lines):
            stock = fetch_cane_stock(line["chanter"])
            stocks.append(stock)
            gauges.append(gauge_reed(line, stock))
            reserve_cane(i, line, stock)
        prices = current_price_list()
        price = price_order(lines, stocks, prices)
        check_order(order, lines, gauges)
        confirm(order, price)
