"""Order-fulfilment agent: checks stock across warehouses and reserves it."""

from __future__ import annotations

import csv
import io
import json

import trajdebug

from .common import llm_meta, mark_failure, mark_flow, mark_root, on


NAME = "inventory-fulfilment"
SUMMARY = "Reads a customer order, checks warehouse stock (CSV export), plans an allocation and reserves it in the WMS."
FAULTS = {
    "reserved_dropped": "the stock-CSV parser maps columns by a stale header and drops `reserved`, so available stock = on hand",
}


class InsufficientStock(Exception):
    """The WMS refuses a reservation above the free quantity."""


class PromiseMismatch(Exception):
    """The reply promises a different quantity than the WMS holds for the customer."""


STOCK = {
    "A-113": [("LIS", 50, 30, 0), ("OPO", 12, 4, 20)],
    "B-220": [("LIS", 80, 75, 0), ("MAD", 40, 10, 0)],
    "C-907": [("OPO", 25, 18, 10), ("MAD", 9, 0, 0)],
    "D-015": [("LIS", 200, 20, 0), ("OPO", 60, 10, 0)],
    "E-301": [("MAD", 18, 2, 0)],
    "F-444": [("LIS", 35, 35, 0), ("OPO", 70, 5, 0)],
    "G-512": [("OPO", 10, 1, 0), ("MAD", 10, 1, 0)],
    "H-600": [("LIS", 5, 0, 50)],
}
ORDERS = {
    "o-9001": {"sku": "A-113", "qty": 40, "ship_by": "2025-03-07"},
    "o-9002": {"sku": "B-220", "qty": 30, "ship_by": "2025-03-10"},
    "o-9003": {"sku": "C-907", "qty": 15, "ship_by": "2025-03-12"},
    "o-9010": {"sku": "D-015", "qty": 150, "ship_by": "2025-03-14"},
    "o-9011": {"sku": "E-301", "qty": 12, "ship_by": "2025-03-14"},
    "o-9012": {"sku": "F-444", "qty": 60, "ship_by": "2025-03-18"},
    "o-9013": {"sku": "G-512", "qty": 25, "ship_by": "2025-03-18"},
    "o-9014": {"sku": "H-600", "qty": 5, "ship_by": "2025-03-20"},
}


def free_units(sku: str) -> int:
    return sum(h - r for _, h, r, _ in STOCK[sku])


FAILING = [
    {
        "fault": "reserved_dropped",
        "description": "40 x A-113: the parser reports 50 free in LIS (30 are reserved); the allocation takes 40 from LIS and the WMS reservation raises.",
        "input": {
            "id": "o-9001",
            "message": "Hi, can you ship 40 units of A-113 to us by Friday 7 March? PO 4471.",
            "expect_promised": 28,
        },
    },
    {
        "fault": "reserved_dropped",
        "description": "30 x B-220: LIS looks like it has 80 free but 75 are reserved; the plan reserves 30 in LIS and the WMS refuses.",
        "input": {
            "id": "o-9002",
            "message": "Order: 30 pcs B-220, needed by 10/03. Thanks!",
            "expect_promised": 30,
        },
    },
    {
        "fault": "reserved_dropped",
        "description": "15 x C-907: OPO shows 25 instead of 7 free; the WMS rejects the reservation two steps after the parse.",
        "input": {
            "id": "o-9003",
            "message": "Could we get fifteen C-907 controllers by the 12th?",
            "expect_promised": 15,
        },
    },
]

PASSING = [
    {"id": "o-9010", "message": "Please ship 150 units D-015 before March 14.", "expect_promised": 150},
    {"id": "o-9011", "message": "12x E-301, ship by 14 March please", "expect_promised": 12},
    {
        "id": "o-9012",
        "message": "We'd like 60 F-444 by the 18th, partial shipments OK.",
        "expect_promised": 60,
    },
    {"id": "o-9013", "message": "Need 25 of G-512 by 18/03 - whatever you have.", "expect_promised": 18},
    {"id": "o-9014", "message": "Five H-600 please, by 20 March.", "expect_promised": 5},
]

_CURRENT: dict = {}
_WMS_HELD: dict = {}


@trajdebug.step(kind="llm")
def interpret_order(message: str) -> str:
    llm_meta()
    return json.dumps(ORDERS[_CURRENT["id"]])


@trajdebug.step(kind="parse")
def parse_order(completion: str) -> dict:
    o = json.loads(completion)
    return {"sku": o["sku"].upper(), "qty": int(o["qty"]), "ship_by": o["ship_by"]}


@trajdebug.step(kind="tool")
def export_stock(sku: str) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["warehouse", "sku", "on_hand", "reserved", "incoming"])
    for wh, hand, res, inc in STOCK[sku]:
        w.writerow([wh, sku, hand, res, inc])
    return out.getvalue()


@trajdebug.step(kind="parse")
def parse_stock_csv(csv_text: str) -> list:
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    out = []
    for r in rows:
        reserved = 0 if on("reserved_dropped") else int(r["reserved"])
        if on("reserved_dropped") and int(r["reserved"]):
            mark_root()
        out.append(
            {
                "warehouse": r["warehouse"],
                "on_hand": int(r["on_hand"]),
                "available": int(r["on_hand"]) - reserved,
            }
        )
    return out


@trajdebug.step(kind="other")
def plan_allocation(stock: list, qty: int) -> dict:
    lines, left = [], qty
    for row in sorted(stock, key=lambda r: -r["available"]):
        take = min(left, row["available"])
        if take > 0:
            lines.append({"warehouse": row["warehouse"], "qty": take})
            left -= take
    mark_flow()
    return {"lines": lines, "backorder": left}


@trajdebug.step(kind="tool")
def reserve_stock(sku: str, allocation: dict, order_ref: str) -> dict:
    held = []
    for line in allocation["lines"]:
        wh = line["warehouse"]
        free = next(h - r for w, h, r, _ in STOCK[sku] if w == wh)
        if line["qty"] > free:
            mark_failure()
            raise InsufficientStock(
                f"WMS: {wh} has {free} unreserved {sku}, cannot hold {line['qty']} for {order_ref}"
            )
        held.append({"warehouse": wh, "qty": line["qty"], "hold_id": f"H-{order_ref[2:]}-{wh}"})
    _WMS_HELD[order_ref] = sum(h["qty"] for h in held)
    return {"order": order_ref, "holds": held, "backorder": allocation["backorder"]}


@trajdebug.step(kind="llm")
def draft_customer_reply(prompt: str) -> str:
    llm_meta()
    held = int(prompt.split("HELD=")[1].split()[0])
    back = int(prompt.split("BACKORDER=")[1].split()[0])
    text = f"We can ship {held} units by the requested date."
    if back:
        text += f" The remaining {back} are on backorder; we'll confirm a date shortly."
    return text


@trajdebug.step(kind="condition")
def check_promise(reply: str, order_ref: str, expected: int) -> bool:
    promised = int(reply.split("ship ")[1].split()[0])
    if promised != _WMS_HELD.get(order_ref) or promised != expected:
        raise PromiseMismatch(f"reply promises {promised} units, WMS holds {_WMS_HELD.get(order_ref)}")
    return True


def run_agent(inp: dict, run) -> str:
    _CURRENT.clear()
    _CURRENT.update(inp)
    order = parse_order(interpret_order(inp["message"]))
    stock = parse_stock_csv(export_stock(order["sku"]))
    allocation = plan_allocation(stock, order["qty"])
    res = reserve_stock(order["sku"], allocation, inp["id"])
    reply = draft_customer_reply(
        f"Write a short reply to: {inp['message']}\nHELD={sum(h['qty'] for h in res['holds'])} BACKORDER={res['backorder']}"
    )
    check_promise(reply, inp["id"], inp["expect_promised"])
    return reply
