"""Gin distillery: allocates bottled batches to trade orders and invoices them (sdk route, JSONL)."""

from __future__ import annotations

import json
import re

import kit
from common import ask, chat_brain, client_for

import trajdebug

NAME, ROUTE, DOMAIN = "gin-trade-orders", "sdk", "a gin distillery's batches and trade orders"
SHAPE = "extract+parse, customer lookup (retried), state, per-line spec retrieval and stock loop, batch-allocator sub-agent (llm, parse, reserve loop), duty, pricing, invoice llm, store, validator"

PRODUCTS = {
    "Navy Strength": {"abv": 57.0, "ml": 700, "trade": 24.50},
    "Rhubarb": {"abv": 38.0, "ml": 700, "trade": 17.00},
    "London Dry": {"abv": 42.0, "ml": 700, "trade": 18.50},
    "Sloe": {"abv": 26.0, "ml": 500, "trade": 14.00},
}
RETAIL_MARKUP = 1.4
DUTY_PER_LPA = 32.79
BATCHES = {  # batch -> (product, bottles on hand)
    "NS-2611": ("Navy Strength", 30), "NS-2614": ("Navy Strength", 40),
    "RH-2603": ("Rhubarb", 10), "RH-2609": ("Rhubarb", 20), "RH-2612": ("Rhubarb", 18),
    "LD-2607": ("London Dry", 24), "LD-2613": ("London Dry", 60),
    "SL-2602": ("Sloe", 15), "SL-2610": ("Sloe", 22),
}
CUSTOMERS = {
    "C-11": {"name": "The Copper Still", "price_tier": "trade", "credit_limit": 3000},
    "C-12": {"name": "Harbour Deli", "price_tier": "trade", "credit_limit": 1500},
    "C-13": {"name": "Quayside Hotel", "price_tier": "trade", "credit_limit": 5000},
    "C-14": {"name": "Fenwick Wines", "price_tier": "trade", "credit_limit": 4000},
    "C-15": {"name": "Old Mill Bistro", "price_tier": "trade", "credit_limit": 1200},
}
ORDERS = {
    "GO-201": {"customer": "C-11", "lines": [["Navy Strength", 24], ["Rhubarb", 12]]},
    "GO-202": {"customer": "C-12", "lines": [["London Dry", "3 cases"], ["Sloe", 6]]},
    "GO-203": {"customer": "C-13", "lines": [["London Dry", 12], ["Rhubarb", 36]]},
    "GO-204": {"customer": "C-14", "lines": [["Navy Strength", 18], ["Sloe", 10], ["London Dry", 6]]},
    "GO-205": {"customer": "C-15", "lines": [["Rhubarb", 6], ["London Dry", 6]]},
}
CASE_SIZE = 6
INPUTS = [
    "Trade order GO-201 from The Copper Still (C-11): 24 x Navy Strength, 12 x Rhubarb.",
    "Trade order GO-202 from Harbour Deli (C-12): 3 cases of London Dry and 6 bottles of Sloe.",
    "Trade order GO-203 from Quayside Hotel (C-13): London Dry 12, Rhubarb 36 for the summer terrace.",
    "Trade order GO-204 from Fenwick Wines (C-14): Navy Strength 18, Sloe 10, London Dry 6.",
    "Trade order GO-205 from Old Mill Bistro (C-15): Rhubarb 6, London Dry 6.",
]
CASES = [
    {"case": "zzp_gin_1", "input": 3, "kind": "bad_memory_write", "root": ("remember_customer", 1),
     "failure": ("validate_trade_order", 1),
     "description": "The customer memory reads the tier under a key the account record does not use and stores the retail default."},
    {"case": "zzp_gin_2", "input": 1, "kind": "lossy_parsing", "root": ("parse_order", 1),
     "failure": ("validate_trade_order", 1),
     "description": "The order parser reads '3 cases' as 3 bottles, dropping the case size."},
    {"case": "zzp_gin_3", "input": 2, "kind": "truncated_result", "root": ("check_stock", 2),
     "failure": ("validate_trade_order", 1),
     "description": "The Rhubarb stock query returns only its first page of batches, so the allocation comes up short."},
    {"case": "zzp_gin_4", "input": 0, "kind": "subagent_wrong_entity", "root": ("plan_allocation", 1),
     "failure": ("validate_trade_order", 1),
     "description": "The batch allocator sub-agent assigns a London Dry batch to the Navy Strength line."},
    {"case": "zzp_gin_5", "input": 4, "kind": "hallucinated_value", "root": ("write_invoice", 1),
     "failure": ("validate_trade_order", 1),
     "description": "The invoice model adds a 5% loyalty discount nobody granted and states the reduced total."},
]


def _extract(text: str) -> str:
    ref = re.search(r"GO-\d+", text).group(0)
    o = ORDERS[ref]
    total = sum(q if isinstance(q, int) else int(q.split()[0]) * CASE_SIZE for _, q in o["lines"])
    return json.dumps({"ref": ref, "customer_id": o["customer"], "total_bottles": total,
                       "lines": [{"product": p, "qty": q} for p, q in o["lines"]]})


def _allocate(text: str) -> str:
    ask_ = json.loads(text)
    out = []
    for line in ask_["lines"]:
        need = line["qty"]
        for b in ask_["stock"][line["product"]]:
            if need <= 0:
                break
            take = min(need, b["bottles"])
            batch = b["batch"]
            if kit.on("zzp_gin_4") and line["product"] == "Navy Strength":
                batch = "LD-2613"
            out.append({"product": line["product"], "batch": batch, "bottles": take})
            need -= take
    return json.dumps({"allocations": out})


def _invoice(text: str) -> str:
    f = json.loads(text)
    total = f["gross"]
    extra = ""
    if kit.on("zzp_gin_5"):
        total = round(total * 0.95, 2)
        extra = " A 5% loyalty discount has been applied."
    return (f"Invoice for {f['customer']} ({f['ref']}): goods GBP {f['net']:.2f}, spirit duty GBP {f['duty']:.2f}, "
            f"VAT GBP {f['vat']:.2f}.{extra} Total: GBP {total:.2f}")


BRAIN = chat_brain({"Extract": _extract, "Allocate": _allocate, "Invoice": _invoice})


def _ask(client, name, system, user):
    with trajdebug.step(name, kind="llm", input={"messages": [
            {"role": "system", "content": system}, {"role": "user", "content": user}]}) as s:
        s.output = ask(client, "fake-model", system, user)
    return s.output


@trajdebug.step(kind="input")
def receive_order(text: str) -> str:
    return text


@trajdebug.step(kind="parse")
def parse_order(answer: str) -> dict:
    data = json.loads(answer)
    lines = []
    for line in data["lines"]:
        qty = line["qty"]
        if isinstance(qty, str):
            n = int(re.match(r"\s*(\d+)", qty).group(1))
            if "case" in qty and not kit.on("zzp_gin_2"):
                n *= CASE_SIZE
            qty = n
        lines.append({"product": line["product"], "qty": qty})
    return {"ref": data["ref"], "customer_id": data["customer_id"], "total_bottles": data["total_bottles"],
            "lines": lines}


_ATTEMPTS = {"crm": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def lookup_customer(customer_id: str) -> dict:
    _ATTEMPTS["crm"] += 1
    if _ATTEMPTS["crm"] == 1:
        raise ConnectionError("CRM connection reset by peer")
    return {"id": customer_id, **CUSTOMERS[customer_id]}


@trajdebug.step(kind="state")
def remember_customer(account: dict) -> dict:
    key = "tier" if kit.on("zzp_gin_1") else "price_tier"
    memo = {"id": account["id"], "name": account["name"], "tier": account.get(key, "retail")}
    trajdebug.current_run().state["customer"] = memo
    return memo


@trajdebug.step(kind="retrieval")
def fetch_product_spec(product: str) -> dict:
    return {"product": product, **PRODUCTS[product]}


@trajdebug.step(kind="tool")
def check_stock(product: str) -> list:
    batches = [{"batch": b, "bottles": n} for b, (p, n) in sorted(BATCHES.items()) if p == product]
    pages = [batches[i:i + 2] for i in range(0, len(batches), 2)]
    if kit.on("zzp_gin_3"):
        pages = pages[:1]  # the first page of the stock API's answer
    return [b for page in pages for b in page]


@trajdebug.step(kind="parse")
def parse_allocation(answer: str) -> list:
    return json.loads(answer)["allocations"]


@trajdebug.step(kind="tool")
def reserve_batch(batch: str, bottles: int, order_ref: str) -> dict:
    return {"batch": batch, "reserved": bottles, "order": order_ref}


@trajdebug.step(kind="other")
def allocation_summary(allocations: list, reservations: list) -> dict:
    per = {}
    for a in allocations:
        per[a["product"]] = per.get(a["product"], 0) + a["bottles"]
    return {"bottles_by_product": per, "batches": [r["batch"] for r in reservations]}


@trajdebug.step(kind="other")
def compute_duty(allocations: list, specs: dict) -> float:
    lpa = sum(a["bottles"] * specs[a["product"]]["ml"] / 1000 * specs[a["product"]]["abv"] / 100 for a in allocations)
    return round(lpa * DUTY_PER_LPA, 2)


@trajdebug.step(kind="other")
def price_order(summary: dict, specs: dict, duty: float) -> dict:
    tier = trajdebug.current_run().state["customer"]["tier"]
    factor = 1.0 if tier == "trade" else RETAIL_MARKUP
    net = round(sum(n * specs[p]["trade"] * factor for p, n in summary["bottles_by_product"].items()), 2)
    vat = round((net + duty) * 0.2, 2)
    return {"tier": tier, "net": net, "duty": duty, "vat": vat, "gross": round(net + duty + vat, 2)}


@trajdebug.step(kind="tool")
def store_invoice(ref: str, text: str) -> dict:
    total = float(re.search(r"Total: GBP ([\d.]+)", text).group(1))
    return {"invoice": f"INV-{ref[3:]}", "total": total, "status": "draft"}


@trajdebug.step(kind="condition")
def validate_trade_order(order: dict, summary: dict, price: dict, stored: dict) -> str:
    ordered = {}
    for line in order["lines"]:
        ordered[line["product"]] = ordered.get(line["product"], 0) + line["qty"]
    if sum(ordered.values()) != order["total_bottles"]:
        raise ValueError(f"order lines hold {sum(ordered.values())} bottles, the order states {order['total_bottles']}")
    for product, qty in ordered.items():
        got = summary["bottles_by_product"].get(product, 0)
        if got != qty:
            raise ValueError(f"{product}: {got} bottles allocated for {qty} ordered")
    for batch in summary["batches"]:
        if batch not in BATCHES:
            raise ValueError(f"batch {batch} is not in the bond register")
    products = {BATCHES[b][0] for b in summary["batches"]}
    if products != set(ordered):
        raise ValueError(f"reserved batches hold {sorted(products)}, the order is for {sorted(ordered)}")
    if price["tier"] != "trade":
        raise ValueError(f"trade account {order['customer_id']} priced at the {price['tier']} tier")
    if abs(stored["total"] - price["gross"]) > 0.01:
        raise ValueError(f"invoice {stored['invoice']} total GBP {stored['total']:.2f}, expected GBP {price['gross']:.2f}")
    return "ok"


def record(server, inp: str, path: str) -> None:
    server.use(BRAIN)
    client = client_for(server)
    _ATTEMPTS["crm"] = 0
    try:
        with trajdebug.run(NAME, path=path, task=inp[:60]):
            text = receive_order(inp)
            order = parse_order(_ask(client, "extract_order", "Extract: the trade order as JSON.", text))
            account = lookup_customer(order["customer_id"])
            remember_customer(account)
            specs, stock = {}, {}
            for line in order["lines"]:
                specs[line["product"]] = fetch_product_spec(line["product"])
                stock[line["product"]] = check_stock(line["product"])
            with trajdebug.step("batch_allocator", kind="agent", input={"lines": order["lines"]}) as sub:
                request = json.dumps({"ref": order["ref"], "lines": order["lines"], "stock": stock})
                allocations = parse_allocation(_ask(client, "plan_allocation",
                                                    "Allocate: bottles to batches, oldest batch first.", request))
                reservations = [reserve_batch(a["batch"], a["bottles"], order["ref"]) for a in allocations]
                summary = sub.output = allocation_summary(allocations, reservations)
            duty = compute_duty(allocations, specs)
            price = price_order(summary, specs, duty)
            facts = json.dumps({"customer": account["name"], "ref": order["ref"], **price})
            letter = _ask(client, "write_invoice", "Invoice: write the invoice text.", facts)
            stored = store_invoice(order["ref"], letter)
            validate_trade_order(order, summary, price, stored)
    except ValueError:
        pass
