"""warehouse-picker: a pick-wave assistant on the OpenAI Agents SDK.  For one customer order the wave picker
goes through the order lines one by one: locate the SKU's bins in the wave's warehouse, reserve the pick and
write it to the pick ledger; a line with no stock is handed off to a backorder desk.  Then the packing slip
is printed from the ledger and the wave is closed in the WMS, which checks everything.  Chat Completions
model on a fake server."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Any

from agents import Agent as SDKAgent
from agents import RunConfig, Runner, function_tool, trace
from agents_route import models, record_trace
from suite_common import FAULT, Agent, Case, Loc, called_tools, messages_of, results_of, system_text, text_of

from trajdebug.testing import FakeModelServer, Reply, tool_call


NAME = "warehouse-picker"
MODEL = "gpt-4o-mini-2024-07-18"

ORDERS = {
    "SO-44120": {"warehouse": "DC-EAST", "lines": [(1, "TS-BLK-M", 12), (2, "MUG-11", 6), (3, "CAP-NVY", 4)]},
    "SO-44188": {"warehouse": "DC-EAST", "lines": [(1, "BAG-TOTE", 10), (2, "BOT-750", 8)]},
    "SO-44230": {"warehouse": "DC-WEST", "lines": [(1, "TS-WHT-M", 5), (2, "TS-WHT-L", 3), (3, "SOCK-3PK", 10)]},
    "SO-44301": {"warehouse": "DC-EAST", "lines": [(1, "NOTE-A5", 20), (2, "PEN-BLU", 50)]},
    "SO-45001": {"warehouse": "DC-EAST", "lines": [(1, "MUG-11", 2), (2, "CAP-NVY", 1)]},
    "SO-45002": {"warehouse": "DC-WEST", "lines": [(1, "TS-BLK-L", 4), (2, "TS-BLK-M", 4)]},
    "SO-45003": {"warehouse": "DC-EAST", "lines": [(1, "PEN-BLU", 30), (2, "NOTE-A5", 5)]},
    "SO-45004": {"warehouse": "DC-EAST", "lines": [(1, "BAG-TOTE", 3), (2, "LAMP-DSK", 1)]},
    "SO-45005": {"warehouse": "DC-WEST", "lines": [(1, "BOT-750", 6), (2, "SOCK-3PK", 12), (3, "CAP-NVY", 2)]},
}

BINS = [  # the stock table, in storage order
    {"bin": "E-01-1", "warehouse": "DC-EAST", "sku": "TS-BLK-M", "on_hand": 40},
    {"bin": "W-01-1", "warehouse": "DC-WEST", "sku": "TS-BLK-M", "on_hand": 25},
    {"bin": "W-01-2", "warehouse": "DC-WEST", "sku": "TS-BLK-L", "on_hand": 30},
    {"bin": "E-03-4", "warehouse": "DC-EAST", "sku": "MUG-11", "on_hand": 60},
    {"bin": "W-05-1", "warehouse": "DC-WEST", "sku": "MUG-11", "on_hand": 10},
    {"bin": "E-04-2", "warehouse": "DC-EAST", "sku": "CAP-NVY", "on_hand": 15},
    {"bin": "W-04-2", "warehouse": "DC-WEST", "sku": "CAP-NVY", "on_hand": 20},
    {"bin": "E-05-1", "warehouse": "DC-EAST", "sku": "BAG-TOTE", "on_hand": 25},
    {"bin": "W-02-5", "warehouse": "DC-WEST", "sku": "BOT-750", "on_hand": 120},
    {"bin": "E-09-2", "warehouse": "DC-EAST", "sku": "BOT-750", "on_hand": 30},
    {"bin": "W-01-5", "warehouse": "DC-WEST", "sku": "TS-WHT-M", "on_hand": 18},
    {"bin": "W-01-6", "warehouse": "DC-WEST", "sku": "TS-WHT-L", "on_hand": 14},
    {"bin": "W-06-3", "warehouse": "DC-WEST", "sku": "SOCK-3PK", "on_hand": 200},
    {"bin": "E-06-3", "warehouse": "DC-EAST", "sku": "SOCK-3PK", "on_hand": 50},
    {"bin": "E-08-1", "warehouse": "DC-EAST", "sku": "NOTE-A5", "on_hand": 70},
    {"bin": "E-02-1", "warehouse": "DC-EAST", "sku": "PEN-BLU", "on_hand": 0},
    {"bin": "E-07-3", "warehouse": "DC-EAST", "sku": "PEN-BLU", "on_hand": 80},
    {"bin": "W-09-9", "warehouse": "DC-WEST", "sku": "LAMP-DSK", "on_hand": 6},
]

WMS: dict[str, Any] = {}


def _reset(order_id: str) -> None:
    WMS.clear()
    WMS.update({"order": order_id, "reservations": [], "ledger": {}, "backorders": [], "slip": None})


class WaveCloseBlocked(RuntimeError):
    pass


# -- tools ----------------------------------------------------------------------------------------


@function_tool(failure_error_function=None)
def get_order(order_id: str) -> str:
    """A customer order: its warehouse and its lines (line number, SKU, quantity)."""
    o = ORDERS[order_id]
    return json.dumps({"order_id": order_id, "warehouse": o["warehouse"],
                       "lines": [{"line": n, "sku": s, "qty": q} for n, s, q in o["lines"]]})


@function_tool(failure_error_function=None)
def locate_sku(sku: str, warehouse: str) -> str:
    """Bins holding a SKU in a warehouse, in pick-path order, with the quantity on hand."""
    found = [b for b in BINS if b["sku"] == sku]
    if not FAULT.on("locate_any_warehouse"):
        found = [b for b in found if b["warehouse"] == warehouse]
    return json.dumps([{"bin": b["bin"], "on_hand": b["on_hand"]} for b in found])


@function_tool(failure_error_function=None)
def reserve_pick(order_id: str, line: int, sku: str, bin: str, qty: int) -> str:
    """Reserve a quantity of a SKU in a bin for an order line (a soft reservation, confirmed at wave close)."""
    WMS["reservations"].append({"line": line, "sku": sku, "bin": bin, "qty": qty})
    return json.dumps({"reservation": f"RSV-{order_id[3:]}-{line}", "bin": bin, "qty": qty})


@function_tool(failure_error_function=None)
def record_pick(order_id: str, line: int, sku: str, qty: int) -> str:
    """Write a pick to the pick ledger (the packing slip is printed from it)."""
    key = sku
    if FAULT.on("ledger_style_key"):
        key = sku.rsplit("-", 1)[0] if re.search(r"-(XS|S|M|L|XL)$", sku) else sku  # one row per style
    WMS["ledger"][key] = {"line": line, "sku": sku, "qty": qty}
    return json.dumps({"ledger_rows": len(WMS["ledger"]), "written": {"key": key, "qty": qty}})


@function_tool(failure_error_function=None)
def create_backorder(order_id: str, line: int, sku: str, qty: int) -> str:
    """Backorder an order line that cannot be picked now."""
    WMS["backorders"].append({"line": line, "sku": sku, "qty": qty})
    return json.dumps({"backorder": f"BO-{order_id[3:]}-{line}", "status": "open"})


@function_tool(failure_error_function=None)
def print_packing_slip(order_id: str) -> str:
    """Print the packing slip of an order from the pick ledger."""
    WMS["slip"] = [dict(r) for r in WMS["ledger"].values()]
    return json.dumps({"order_id": order_id, "slip_lines": WMS["slip"]})


@function_tool(failure_error_function=None)
def close_wave(order_id: str) -> str:
    """Close the pick wave of an order; the WMS checks reservations, backorders and the packing slip."""
    order = ORDERS[order_id]
    by_line: dict[int, int] = {}
    for r in WMS["reservations"]:
        by_line[r["line"]] = by_line.get(r["line"], 0) + r["qty"]
    backordered = {b["line"] for b in WMS["backorders"]}
    for n, _sku, q in order["lines"]:
        if n not in backordered and by_line.get(n) != q:
            raise WaveCloseBlocked("WMS: wave cannot close, picked quantity differs from the order")
    home = {b["bin"] for b in BINS if b["warehouse"] == order["warehouse"]}
    if any(r["bin"] not in home for r in WMS["reservations"]):
        raise WaveCloseBlocked("WMS: wave cannot close, a reservation points at a bin outside this wave's warehouse")
    for b in WMS["backorders"]:
        stock = sum(x["on_hand"] for x in BINS if x["sku"] == b["sku"] and x["warehouse"] == order["warehouse"])
        if stock >= b["qty"]:
            raise WaveCloseBlocked("WMS: wave cannot close, a line was backordered while stock was on hand")
    slip = {(s["sku"], s["qty"]) for s in WMS["slip"] or []}
    picks = {(r["sku"], r["qty"]) for r in WMS["reservations"]}
    if slip != picks:
        raise WaveCloseBlocked("WMS: wave cannot close, the packing slip does not match the picks")
    return json.dumps({"order_id": order_id, "wave": "closed", "picks": len(picks), "backorders": len(backordered)})


# -- the fake model --------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    msgs = messages_of(request)
    system = system_text(msgs)
    ask = [text_of(m) for m in msgs if m.get("role") == "user"][-1]
    order_id = re.search(r"SO-\d{5}", ask).group(0)
    calls = called_tools(msgs)
    done = {name for name, _a, r in calls if r is not None}
    order = results_of(msgs, "get_order")[-1] if "get_order" in done else None
    located = {args["sku"]: json.loads(r) for name, args, r in calls if name == "locate_sku" and r is not None}
    handled = {args["line"] for name, args, _r in calls if name in ("reserve_pick", "create_backorder")}
    if "You are the backorder desk" in system:
        if "create_backorder" not in done:
            line = next(ln for ln in order["lines"] if ln["sku"] in located and ln["line"] not in handled)
            return Reply(tool_calls=(tool_call("create_backorder", {"order_id": order_id, "line": line["line"],
                                                                    "sku": line["sku"], "qty": line["qty"]}),))
    else:
        if order is None:
            return Reply(tool_calls=(tool_call("get_order", {"order_id": order_id}),))
        for ln in order["lines"]:
            if ln["line"] in handled:
                continue
            if ln["sku"] not in located:
                return Reply(tool_calls=(tool_call("locate_sku", {"sku": ln["sku"], "warehouse": order["warehouse"]}),))
            bins = located[ln["sku"]]
            if FAULT.on("empty_bin_backorder") and bins and bins[0]["on_hand"] == 0:
                return Reply(tool_calls=(tool_call("transfer_to_backorder_desk", {}),))
            pick = next((b for b in bins if b["on_hand"] >= ln["qty"]), None)
            if pick is None:
                return Reply(tool_calls=(tool_call("transfer_to_backorder_desk", {}),))
            qty = ln["qty"]
            if FAULT.on("qty_transposed") and order_id == "SO-44120" and ln["line"] == 1:
                qty = int(str(qty)[::-1])  # 12 read as 21
            args = {"order_id": order_id, "line": ln["line"], "sku": ln["sku"]}
            return Reply(tool_calls=(tool_call("reserve_pick", {**args, "bin": pick["bin"], "qty": qty}),
                                     tool_call("record_pick", {**args, "qty": qty})))
    if "print_packing_slip" not in done:
        return Reply(tool_calls=(tool_call("print_packing_slip", {"order_id": order_id}),))
    if "close_wave" not in done:
        return Reply(tool_calls=(tool_call("close_wave", {"order_id": order_id}),))
    closed = results_of(msgs, "close_wave")[-1]
    return f"Wave for {order_id} closed: {closed['picks']} picks, {closed['backorders']} backorder(s)."


def build(chat_model: Any) -> SDKAgent:
    backorder = SDKAgent(
        name="backorder_desk",
        instructions="You are the backorder desk. Backorder the order line the picker could not fill, print the "
                     "packing slip and close the wave.",
        tools=[create_backorder, print_packing_slip, close_wave],
        model=chat_model,
    )
    return SDKAgent(
        name="wave_picker",
        instructions="You are the wave picker. Get the order; for each line in turn locate the SKU in the order's "
                     "warehouse, reserve the quantity from a bin that holds enough and record it in the pick ledger. "
                     "If a line cannot be filled from the warehouse, hand off to the backorder desk. When every line "
                     "is done, print the packing slip and close the wave.",
        tools=[get_order, locate_sku, reserve_pick, record_pick, print_packing_slip, close_wave],
        handoffs=[backorder],
        model=chat_model,
    )


@contextmanager
def session():
    with FakeModelServer(brain, model=MODEL) as server:

        def record(order_id: str, path: str) -> BaseException | None:
            ask = f"Pick order {order_id} in this wave."

            async def main() -> None:
                _reset(order_id)
                chat_model, _, client = models(server.base_url, MODEL)
                try:
                    with trace(NAME, metadata={"task": ask}):
                        await Runner.run(build(chat_model), ask, run_config=RunConfig(workflow_name=NAME), max_turns=25)
                finally:
                    await client.close()

            return record_trace(NAME, ask, main, path)

        yield record


AGENT = Agent(
    name=NAME,
    route="openai_agents",
    domain="warehouse picking",
    summary="the wave picker gets the order and loops over its lines (locate SKU, reserve pick, write the pick "
    "ledger), hands lines without stock to a backorder desk, prints the packing slip from the ledger and closes "
    "the wave in a WMS that checks it all",
    features=["loop over order lines", "handoff"],
    passing=["SO-45001", "SO-45002", "SO-45003", "SO-45004", "SO-45005"],
    session=session,
    cases=[
        Case(
            "d-pick-qty-transposed",
            "SO-44120",
            "qty_transposed",
            "wrong_tool_args",
            "The picker model reserves and records 21 T-shirts for line 1, which orders 12; everything downstream "
            "agrees with itself until the WMS refuses to close the wave.",
            [Loc("generation " + MODEL, 3, '"qty": 21'), Loc("reserve_pick", 1, "21"), Loc("close_wave")],
        ),
        Case(
            "d-pick-wrong-warehouse",
            "SO-44188",
            "locate_any_warehouse",
            "tool_ignores_argument",
            "The bin lookup ignores the warehouse argument; for the water bottles it lists DC-WEST's W-02-5 first, "
            "the picker reserves there for a DC-EAST wave and the WMS blocks the wave close.",
            [Loc("locate_sku", 2, "W-02-5"), Loc("generation " + MODEL, 5, "W-02-5"), Loc("reserve_pick", 2),
             Loc("close_wave")],
        ),
        Case(
            "d-pick-ledger-style-key",
            "SO-44230",
            "ledger_style_key",
            "bad_memory_write",
            "The pick ledger keys rows by style (size suffix stripped), so recording the size-L white T-shirts "
            "overwrites the size-M row; the packing slip printed from the ledger misses 5 shirts and the wave "
            "cannot close.",
            [Loc("record_pick", 2, "TS-WHT"), Loc("print_packing_slip"), Loc("close_wave")],
        ),
        Case(
            "d-pick-premature-backorder",
            "SO-44301",
            "empty_bin_backorder",
            "wrong_routing",
            "The first bin listed for blue pens is empty and the picker hands the line to the backorder desk "
            "instead of picking from the second bin (80 on hand); the line is backordered and the WMS refuses "
            "to close the wave.",
            [Loc("generation " + MODEL, 5, "transfer_to_backorder_desk"),
             Loc("handoff wave_picker -> backorder_desk"), Loc("generation " + MODEL, 6), Loc("create_backorder"),
             Loc("close_wave")],
        ),
    ],
)
