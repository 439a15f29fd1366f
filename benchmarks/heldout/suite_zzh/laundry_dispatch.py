"""Commercial laundry (recording SDK): plans a plant's wash batches, machines, dosing and delivery run for a day.

Shape: intake -> paged order book (retried on a timeout) -> order lines per order -> weights -> model plans
batches -> parse -> machine board in ``run.state`` -> per batch: weight, machine assignment, board write,
chemical dosing -> `route_deliveries` sub-agent (stops, model orders the run, parse, van check) -> model
writes the dispatch note -> `validate_dispatch` (the plant's rules).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit
from common import chat_messages, sdk_chat, system_text, text_of

import trajdebug


NAME = "laundry-dispatch"
ROUTE = "sdk"
DOMAIN = "commercial laundry"
EXT = "jsonl"
SHAPE = ("intake, paged order book with retry, order lines per order, weights, LLM batch plan + parse, "
         "machine board in run.state, per batch weigh/assign/board write/dose, route_deliveries sub-agent "
         "(LLM route), LLM dispatch note, validator; 29-50 steps")

ITEMS = {
    "flat sheet": 0.6, "duvet cover": 0.9, "pillowcase": 0.15, "bath towel": 0.55, "hand towel": 0.2,
    "bath mat": 0.35, "scrubs set": 0.45, "patient gown": 0.3, "blanket": 1.2, "tablecloth": 0.5,
    "napkin": 0.06, "chef jacket": 0.4, "apron": 0.25,
}
CLIENTS = {
    "St. Mary's Hospital": {"linen": "infection-control", "area": "north", "due": "07:30"},
    "Riverside Care Home": {"linen": "infection-control", "area": "east", "due": "09:00"},
    "Harbour Hotel": {"linen": "hotel", "area": "harbour", "due": "09:30"},
    "Quayside Suites": {"linen": "hotel", "area": "harbour", "due": "10:00"},
    "Fitness Hub": {"linen": "hotel", "area": "east", "due": "11:00"},
    "Bistro Lune": {"linen": "kitchen", "area": "old town", "due": "10:30"},
    "Canal Brasserie": {"linen": "kitchen", "area": "old town", "due": "10:30"},
}
AREA_ORDER = ["north", "east", "harbour", "old town"]
PROGRAM_OF = {"infection-control": "thermal-71", "kitchen": "heavy-75", "hotel": "standard-60"}
DOSE_ML_PER_KG = {"thermal-71": 9, "heavy-75": 12, "standard-60": 7}
MACHINES = [("W1", 220), ("W2", 220), ("W3", 120), ("W4", 120)]
BATCH_MAX_KG = 110
VAN_KG = 700

# day -> orders: (order id, client, {item: count})
DAYS: dict[str, dict[str, Any]] = {
    "2024-11-18": {"hiccup_page": 2, "orders": [
        ("ORD-5101", "St. Mary's Hospital", {"flat sheet": 60, "patient gown": 80, "pillowcase": 60}),
        ("ORD-5102", "Harbour Hotel", {"flat sheet": 50, "duvet cover": 30, "bath towel": 40}),
        ("ORD-5103", "Bistro Lune", {"tablecloth": 40, "napkin": 200, "chef jacket": 20}),
        ("ORD-5104", "Quayside Suites", {"duvet cover": 25, "bath towel": 40, "hand towel": 40}),
        ("ORD-5105", "Riverside Care Home", {"blanket": 15, "patient gown": 40, "flat sheet": 30}),
        ("ORD-5106", "Fitness Hub", {"bath towel": 70, "hand towel": 60}),
        ("ORD-5107", "Canal Brasserie", {"tablecloth": 30, "apron": 30, "napkin": 150}),
        ("ORD-5108", "St. Mary's Hospital", {"scrubs set": 60, "pillowcase": 40}),
        ("ORD-5109", "Harbour Hotel", {"bath mat": 40, "hand towel": 50}),
    ]},
    "2024-11-19": {"hiccup_page": None, "orders": [
        ("ORD-5201", "St. Mary's Hospital", {"flat sheet": 80, "patient gown": 90, "pillowcase": 70}),
        ("ORD-5202", "Riverside Care Home", {"blanket": 20, "flat sheet": 50, "patient gown": 40}),
        ("ORD-5203", "Harbour Hotel", {"flat sheet": 70, "duvet cover": 40, "bath towel": 56}),
        ("ORD-5204", "Quayside Suites", {"duvet cover": 30, "bath towel": 50, "hand towel": 30}),
        ("ORD-5205", "Fitness Hub", {"bath towel": 60, "hand towel": 50}),
        ("ORD-5206", "Bistro Lune", {"tablecloth": 30, "napkin": 150, "chef jacket": 15}),
    ]},
    "2024-11-20": {"hiccup_page": 1, "orders": [
        ("ORD-5301", "Harbour Hotel", {"flat sheet": 40, "duvet cover": 20, "pillowcase": 50, "bath towel": 35,
                                       "hand towel": 40, "bath mat": 20, "blanket": 6}),
        ("ORD-5302", "St. Mary's Hospital", {"flat sheet": 50, "patient gown": 60}),
        ("ORD-5303", "Canal Brasserie", {"tablecloth": 35, "napkin": 120}),
        ("ORD-5304", "Quayside Suites", {"bath towel": 30, "hand towel": 30}),
        ("ORD-5305", "Riverside Care Home", {"blanket": 10, "patient gown": 30}),
    ]},
    "2024-11-21": {"hiccup_page": None, "orders": [
        ("ORD-5401", "St. Mary's Hospital", {"flat sheet": 70, "scrubs set": 50}),
        ("ORD-5402", "Harbour Hotel", {"duvet cover": 35, "bath towel": 50}),
        ("ORD-5403", "Bistro Lune", {"tablecloth": 45, "chef jacket": 25, "apron": 20}),
        ("ORD-5404", "Fitness Hub", {"bath towel": 50, "hand towel": 40}),
    ]},
    "2024-11-22": {"hiccup_page": 2, "orders": [
        ("ORD-5501", "Riverside Care Home", {"blanket": 12, "patient gown": 50, "flat sheet": 20}),
        ("ORD-5502", "Harbour Hotel", {"flat sheet": 60, "duvet cover": 30, "bath towel": 50}),
        ("ORD-5503", "Quayside Suites", {"bath towel": 40, "hand towel": 50, "bath mat": 20}),
        ("ORD-5504", "St. Mary's Hospital", {"flat sheet": 60, "pillowcase": 60, "patient gown": 50}),
        ("ORD-5505", "Canal Brasserie", {"tablecloth": 40, "napkin": 100}),
    ]},
    # reference days
    "2024-11-11": {"hiccup_page": None, "orders": [
        ("ORD-4401", "St. Mary's Hospital", {"flat sheet": 50, "patient gown": 60}),
        ("ORD-4402", "Harbour Hotel", {"flat sheet": 40, "duvet cover": 20, "bath towel": 30}),
        ("ORD-4403", "Canal Brasserie", {"tablecloth": 25, "napkin": 120, "apron": 15}),
        ("ORD-4404", "Fitness Hub", {"bath towel": 45, "hand towel": 45}),
    ]},
    "2024-11-12": {"hiccup_page": 2, "orders": [
        ("ORD-4501", "Riverside Care Home", {"blanket": 10, "patient gown": 45}),
        ("ORD-4502", "Quayside Suites", {"duvet cover": 25, "bath towel": 35, "hand towel": 25}),
        ("ORD-4503", "St. Mary's Hospital", {"flat sheet": 60, "scrubs set": 40, "pillowcase": 50}),
        ("ORD-4504", "Bistro Lune", {"tablecloth": 35, "napkin": 180}),
        ("ORD-4505", "Harbour Hotel", {"flat sheet": 55, "bath towel": 45, "bath mat": 25}),
        ("ORD-4506", "Fitness Hub", {"bath towel": 40}),
    ]},
    "2024-11-13": {"hiccup_page": None, "orders": [
        ("ORD-4601", "Harbour Hotel", {"flat sheet": 45, "duvet cover": 25, "pillowcase": 40, "bath towel": 30,
                                       "hand towel": 30, "bath mat": 15}),
        ("ORD-4602", "St. Mary's Hospital", {"flat sheet": 40, "patient gown": 50, "pillowcase": 30}),
        ("ORD-4603", "Bistro Lune", {"tablecloth": 30, "chef jacket": 20}),
    ]},
    "2024-11-14": {"hiccup_page": 1, "orders": [
        ("ORD-4701", "St. Mary's Hospital", {"flat sheet": 75, "patient gown": 70}),
        ("ORD-4702", "Riverside Care Home", {"blanket": 18, "flat sheet": 40}),
        ("ORD-4703", "Harbour Hotel", {"flat sheet": 50, "duvet cover": 30}),
        ("ORD-4704", "Quayside Suites", {"bath towel": 55, "hand towel": 35}),
        ("ORD-4705", "Canal Brasserie", {"tablecloth": 35, "napkin": 140, "apron": 20}),
        ("ORD-4706", "Fitness Hub", {"bath towel": 40, "hand towel": 40}),
        ("ORD-4707", "Bistro Lune", {"napkin": 120, "chef jacket": 18}),
    ]},
}
PAGE_SIZE = 4
LINES_PAGE = 5

CASES = [
    {"case": "zzh_laun_01", "switch": "laundry.page_timeout", "input": "2024-11-18", "fault_kind": "swallowed_error",
     "root": ("fetch_orders", 2), "failure": ("validate_dispatch", 1),
     "description": "The order-book client catches the timeout on page 2 and returns an empty last page, so the "
                    "plan covers only the four orders of page 1 of the day's nine."},
    {"case": "zzh_laun_02", "switch": "laundry.board_capacity", "input": "2024-11-19", "fault_kind": "bad_memory_write",
     "root": ("record_machine_load", 2), "failure": ("validate_dispatch", 1),
     "description": "After the second batch on W1 the machine board in run.state is written as the machine's shift "
                    "capacity minus that batch, forgetting the first batch, so the later batches are all put on the full W1."},
    {"case": "zzh_laun_03", "switch": "laundry.lines_limit", "input": "2024-11-20", "fault_kind": "truncated_result",
     "root": ("load_order_lines", 1), "failure": ("validate_dispatch", 1),
     "description": "The order-lines call omits its limit, so the API's first page of five lines comes back for "
                    "Harbour Hotel's seven-line order and its weight is short by the two lines left off."},
    {"case": "zzh_laun_04", "switch": "laundry.dose_basis", "input": "2024-11-21", "fault_kind": "wrong_tool_args",
     "root": ("dose_chemicals", 1), "failure": ("validate_dispatch", 1),
     "description": "Chemical dosing is called with the machine's shift capacity as the kilograms to dose instead "
                    "of the batch's load."},
    {"case": "zzh_laun_05", "switch": "laundry.plan_mix", "input": "2024-11-22", "fault_kind": "plan_error",
     "root": ("plan_batches", 1), "failure": ("validate_dispatch", 1),
     "description": "The batch plan from the model puts Riverside Care Home's infection-control order into a "
                    "standard-60 batch with hotel linen."},
]
REFS = ["2024-11-11", "2024-11-12", "2024-11-13", "2024-11-14"]


class DispatchRejected(Exception):
    """The day's plan breaks a plant rule."""


def _order(day: str, oid: str) -> dict:
    for o, client, lines in DAYS[day]["orders"]:
        if o == oid:
            kg = sum(ITEMS[i] * n for i, n in lines.items())
            return {"order_id": o, "client": client, "linen_class": CLIENTS[client]["linen"],
                    "declared_kg": round(kg, 1), "due": CLIENTS[client]["due"], "line_count": len(lines)}
    raise KeyError(oid)


# -- the model ------------------------------------------------------------------------------------------


def _plan(orders: list[dict]) -> list[dict]:
    groups: dict[str, list[dict]] = {}
    for o in orders:
        groups.setdefault(PROGRAM_OF[o["linen_class"]], []).append(o)
    if kit.on("laundry.plan_mix") and "thermal-71" in groups and "standard-60" in groups:
        moved = next((o for o in groups["thermal-71"] if o["client"] == "Riverside Care Home"), None)
        if moved is not None:
            groups["thermal-71"].remove(moved)
            groups["standard-60"].insert(0, moved)
    batches: list[dict] = []
    for program in ("thermal-71", "heavy-75", "standard-60"):
        current: list[dict] = []
        load = 0.0
        for o in groups.get(program, []):
            if current and load + o["kg"] > BATCH_MAX_KG:
                batches.append({"program": program, "orders": [x["order_id"] for x in current]})
                current, load = [], 0.0
            current.append(o)
            load += o["kg"]
        if current:
            batches.append({"program": program, "orders": [x["order_id"] for x in current]})
    for n, b in enumerate(batches, 1):
        b["batch"] = f"B{n}"
    return [{"batch": b["batch"], "program": b["program"], "orders": b["orders"]} for b in batches]


def brain(request: Any) -> str:
    messages = chat_messages(request)
    system = system_text(messages)
    user = json.loads(text_of(messages[-1]))
    if system.startswith("You plan wash batches"):
        return json.dumps({"batches": _plan(user["orders"])})
    if system.startswith("You order delivery stops"):
        stops = sorted(user["stops"], key=lambda s: (AREA_ORDER.index(s["area"]), s["client"]))
        minutes = 6 * 60 + 30
        out = []
        for s in stops:
            minutes += 25
            out.append({"client": s["client"], "eta": f"{minutes // 60:02d}:{minutes % 60:02d}"})
        return json.dumps({"route": out})
    if system.startswith("You write the dispatch note"):
        return (f"Plant plan for {user['date']}: {len(user['batches'])} batches over "
                f"{len({b['machine'] for b in user['batches']})} machines, {len(user['route'])} delivery stops.")
    return "Unknown request."


# -- steps -------------------------------------------------------------------------------------------------

_CALLS: dict[str, int] = {}


def _order_book_page(day: str, page: int) -> dict:
    """The plant's order-book API (one page of the day's orders)."""
    ids = [o[0] for o in DAYS[day]["orders"]]
    key = f"page{page}"
    _CALLS[key] = _CALLS.get(key, 0) + 1
    if DAYS[day]["hiccup_page"] == page and _CALLS[key] == 1:
        raise TimeoutError(f"order book API: read timed out on page {page}")
    chunk = ids[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
    more = page * PAGE_SIZE < len(ids)
    return {"page": page, "orders": [_order(day, o) for o in chunk], "total": len(ids),
            "next_page": page + 1 if more else None}


@trajdebug.retry(attempts=3, on=(TimeoutError,))
@trajdebug.step(kind="tool")
def fetch_orders(day: str, page: int) -> dict:
    try:
        return _order_book_page(day, page)
    except TimeoutError:
        if kit.on("laundry.page_timeout"):
            return {"page": page, "orders": [], "total": None, "next_page": None}
        raise


@trajdebug.step(kind="other")
def merge_orders(pages: list) -> dict:
    orders = [o for p in pages for o in p["orders"]]
    return {"orders": orders, "total_reported": pages[0]["total"]}


@trajdebug.step(kind="tool")
def load_order_lines(day: str, order_id: str, limit: int = LINES_PAGE) -> dict:
    lines = next(lines for o, _, lines in DAYS[day]["orders"] if o == order_id)
    rows = [{"item": i, "count": n, "kg_each": ITEMS[i]} for i, n in lines.items()]
    return {"order_id": order_id, "lines": rows[:limit], "has_more": len(rows) > limit}


@trajdebug.step(kind="other")
def weigh_orders(orders: list, lines: list) -> list:
    by_id = {entry["order_id"]: entry["lines"] for entry in lines}
    out = []
    for o in orders:
        kg = round(sum(r["count"] * r["kg_each"] for r in by_id[o["order_id"]]), 1)
        out.append({**o, "kg": kg})
    return out


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> list:
    return json.loads(text)["batches"]


@trajdebug.step(kind="state")
def init_machine_board() -> dict:
    board = dict(MACHINES)
    trajdebug.current_run().state["machine_free_kg"] = board
    return dict(board)


@trajdebug.step(kind="other")
def batch_weight(batch: dict, weighed: list) -> dict:
    kg = {o["order_id"]: o["kg"] for o in weighed}
    return {**batch, "load_kg": round(sum(kg[o] for o in batch["orders"]), 1)}


@trajdebug.step(kind="tool")
def assign_machine(batch: dict) -> dict:
    free = trajdebug.current_run().state["machine_free_kg"]
    for machine, capacity in MACHINES:
        if free[machine] >= batch["load_kg"]:
            return {"batch": batch["batch"], "machine": machine, "capacity_kg": capacity, "free_kg": free[machine]}
    return {"batch": batch["batch"], "machine": None, "capacity_kg": 0, "free_kg": 0}


@trajdebug.step(kind="state")
def record_machine_load(assignment: dict, batch: dict) -> None:
    board = dict(trajdebug.current_run().state["machine_free_kg"])
    if kit.on("laundry.board_capacity"):
        board[assignment["machine"]] = round(assignment["capacity_kg"] - batch["load_kg"], 1)
    else:
        board[assignment["machine"]] = round(assignment["free_kg"] - batch["load_kg"], 1)
    trajdebug.current_run().state["machine_free_kg"] = board


@trajdebug.step(kind="tool")
def dose_chemicals(program: str, kg: float) -> dict:
    return {"program": program, "kg": kg, "detergent_ml": round(kg * DOSE_ML_PER_KG[program])}


@trajdebug.step(kind="other")
def group_stops(weighed: list) -> list:
    stops: dict[str, dict] = {}
    for o in weighed:
        s = stops.setdefault(o["client"], {"client": o["client"], "area": CLIENTS[o["client"]]["area"],
                                           "due": o["due"], "kg": 0.0, "orders": []})
        s["kg"] = round(s["kg"] + o["kg"], 1)
        s["orders"].append(o["order_id"])
    return list(stops.values())


@trajdebug.step(kind="parse")
def parse_route(text: str) -> list:
    return json.loads(text)["route"]


@trajdebug.step(kind="tool")
def check_van(stops: list) -> dict:
    kg = round(sum(s["kg"] for s in stops), 1)
    return {"van": "V-2", "load_kg": kg, "capacity_kg": VAN_KG, "fits": kg <= VAN_KG}


@trajdebug.step(kind="agent")
def route_deliveries(client: Any, weighed: list) -> dict:
    stops = group_stops(weighed)
    text = sdk_chat(client, "plan_route", [
        {"role": "system", "content": "You order delivery stops for the laundry van, depot first, by area: "
                                      + " -> ".join(AREA_ORDER) + ". Answer JSON {route: [{client, eta}]}."},
        {"role": "user", "content": json.dumps({"stops": [{"client": s["client"], "area": s["area"], "due": s["due"]}
                                                          for s in stops]})},
    ])
    route = parse_route(text)
    van = check_van(stops)
    return {"route": route, "van": van}


@trajdebug.step(kind="condition")
def validate_dispatch(plan: dict) -> dict:
    batched = [o for b in plan["batches"] for o in b["orders"]]
    if len(batched) != plan["order_book_total"]:
        missing = plan["order_book_total"] - len(batched)
        raise DispatchRejected(f"plan batches {len(batched)} orders; the order book for {plan['date']} holds "
                               f"{plan['order_book_total']} ({missing} not planned)")
    orders = {o["order_id"]: o for o in plan["orders"]}
    for o in orders.values():
        if abs(o["kg"] - o["declared_kg"]) > 0.5:
            raise DispatchRejected(f"order {o['order_id']} ({o['client']}) lines weigh {o['kg']} kg; the order "
                                   f"declares {o['declared_kg']} kg")
    per_machine: dict[str, float] = {}
    for b in plan["batches"]:
        for oid in b["orders"]:
            need = PROGRAM_OF[orders[oid]["linen_class"]]
            if need != b["program"]:
                raise DispatchRejected(f"batch {b['batch']} ({b['program']}) holds {oid} of {orders[oid]['client']}: "
                                       f"{orders[oid]['linen_class']} linen needs {need}")
        per_machine[b["machine"]] = round(per_machine.get(b["machine"], 0.0) + b["load_kg"], 1)
        expected = round(b["load_kg"] * DOSE_ML_PER_KG[b["program"]])
        if abs(b["detergent_ml"] - expected) > 5:
            raise DispatchRejected(f"batch {b['batch']} dosed {b['detergent_ml']} ml for {b['dosed_kg']} kg; its load "
                                   f"is {b['load_kg']} kg ({expected} ml)")
    for machine, capacity in MACHINES:
        if per_machine.get(machine, 0.0) > capacity:
            on = [b["batch"] for b in plan["batches"] if b["machine"] == machine]
            raise DispatchRejected(f"machine {machine} holds batches {on} totalling {per_machine[machine]} kg; "
                                   f"shift capacity {capacity} kg")
    clients = {o["client"] for o in orders.values()}
    routed = {s["client"]: s["eta"] for s in plan["route"]}
    for c in sorted(clients):
        if c not in routed:
            raise DispatchRejected(f"{c} has orders but no delivery stop")
        if routed[c] > CLIENTS[c]["due"]:
            raise DispatchRejected(f"{c} delivery at {routed[c]} after its {CLIENTS[c]['due']} window")
    if not plan["van"]["fits"]:
        raise DispatchRejected(f"van load {plan['van']['load_kg']} kg over {VAN_KG} kg")
    return {"approved": True, "batches": len(plan["batches"])}


# -- the agent ---------------------------------------------------------------------------------------------


def record(day: str, path: Path, server: Any) -> None:
    from openai import OpenAI

    _CALLS.clear()
    client = OpenAI(base_url=server.base_url, api_key="plant-local", max_retries=0)
    try:
        with trajdebug.run(NAME, path=path, task=f"plan wash batches and deliveries for {day}",
                           metadata={"plant": "Harbourside"}) as run:
            with trajdebug.step("intake", kind="input") as s:
                s.output = {"plant": "Harbourside", "date": day, "shift": "early"}
            pages = []
            page: int | None = 1
            while page is not None:
                got = fetch_orders(day, page)
                pages.append(got)
                page = got["next_page"]
            book = merge_orders(pages)
            lines = []
            for o in book["orders"]:
                if kit.on("laundry.lines_limit"):
                    lines.append(load_order_lines(day, o["order_id"]))
                else:
                    lines.append(load_order_lines(day, o["order_id"], limit=50))
            weighed = weigh_orders(book["orders"], lines)
            text = sdk_chat(client, "plan_batches", [
                {"role": "system", "content": "You plan wash batches: one wash program per batch (infection-control "
                                              "linen thermal-71, kitchen linen heavy-75, hotel linen standard-60), "
                                              f"at most {BATCH_MAX_KG} kg a batch. Answer JSON {{batches: [{{batch, "
                                              "program, orders}}]}}."},
                {"role": "user", "content": json.dumps({"date": day, "orders": [
                    {"order_id": o["order_id"], "client": o["client"], "linen_class": o["linen_class"], "kg": o["kg"]}
                    for o in weighed]})},
            ])
            batches = parse_plan(text)
            init_machine_board()
            planned = []
            for b in batches:
                sized = batch_weight(b, weighed)
                assignment = assign_machine(sized)
                record_machine_load(assignment, sized)
                basis = assignment["capacity_kg"] if kit.on("laundry.dose_basis") else sized["load_kg"]
                dose = dose_chemicals(sized["program"], basis)
                planned.append({**sized, "machine": assignment["machine"], "detergent_ml": dose["detergent_ml"],
                                "dosed_kg": dose["kg"]})
            delivery = route_deliveries(client, weighed)
            note = sdk_chat(client, "dispatch_note", [
                {"role": "system", "content": "You write the dispatch note for the shift lead."},
                {"role": "user", "content": json.dumps({"date": day, "batches": planned, "route": delivery["route"]})},
            ])
            plan = {"date": day, "order_book_total": book["total_reported"], "orders": weighed, "batches": planned,
                    "route": delivery["route"], "van": delivery["van"], "note": note}
            validate_dispatch(plan)
            run.state["status"] = "dispatched"
    except DispatchRejected:
        pass
