"""Dry cleaner's order intake agent (sdk route): ticket -> garments -> care -> prices -> batches -> pickup."""
from __future__ import annotations

import datetime as dt
import json

import trajdebug

import common
import kit

NAME = "dry-cleaner-orders"
ROUTE = "sdk"
DOMAIN = "a dry cleaner's orders"
SHAPE = "intake, customer lookup, LLM garment extraction + parse, per-garment care LLM + price tool (with retry), batch-planner sub-agent, pickup scheduler, state writes, receipt LLM, validator"
EXT = "jsonl"

PRICES = {"shirt": 3.5, "suit": 14.0, "blouse": 7.5, "dress": 12.0, "coat": 18.0, "trousers": 6.5, "duvet": 22.0, "scarf": 5.0}
CARE = {"cotton": "launder_press", "wool": "dry_clean", "silk": "dry_clean", "linen": "wet_clean", "down": "wet_clean", "polyester": "wet_clean"}
DAYS = {"launder_press": 1, "wet_clean": 2, "dry_clean": 3}
CUSTOMERS = {
    "C-311": {"name": "Ines Varga", "tier": "gold", "discount": 0.10, "household": ["C-311", "C-312"]},
    "C-312": {"name": "Tomas Varga", "tier": "gold", "discount": 0.10, "household": ["C-311", "C-312"]},
    "C-204": {"name": "Maeve Dunne", "tier": "standard", "discount": 0.0, "household": ["C-204"]},
    "C-118": {"name": "Rafael Ortiz", "tier": "silver", "discount": 0.05, "household": ["C-117", "C-118"]},
    "C-117": {"name": "Lucia Ortiz", "tier": "silver", "discount": 0.05, "household": ["C-117", "C-118"]},
    "C-402": {"name": "Oskar Lind", "tier": "standard", "discount": 0.0, "household": ["C-402"]},
}


def _t(tid, cust, dropoff, express, items):
    text = "; ".join(f"{q}x {f} {g}" for g, q, f in items)
    return {"ticket": tid, "customer_id": cust, "dropoff": dropoff, "express": express,
            "pieces": sum(q for _, q, _ in items), "text": f"Drop-off {tid}: {text}.",
            "_items": [{"garment": g, "qty": q, "fabric": f} for g, q, f in items]}


INPUTS = {
    "T-1041": _t("T-1041", "C-311", "2026-11-02", False, [("shirt", 3, "cotton"), ("suit", 1, "wool"), ("blouse", 1, "silk")]),
    "T-1042": _t("T-1042", "C-204", "2026-11-03", True, [("dress", 1, "silk"), ("coat", 1, "wool"), ("scarf", 2, "silk")]),
    "T-1043": _t("T-1043", "C-118", "2026-11-04", False, [("duvet", 1, "down"), ("shirt", 4, "cotton"), ("trousers", 2, "linen")]),
    "T-1044": _t("T-1044", "C-118", "2026-11-05", False, [("suit", 2, "wool"), ("shirt", 2, "cotton"), ("dress", 1, "polyester")]),
    "T-1045": _t("T-1045", "C-117", "2026-11-06", True, [("blouse", 2, "silk"), ("trousers", 1, "wool"), ("shirt", 2, "cotton"), ("scarf", 1, "silk")]),
    "T-1046": _t("T-1046", "C-312", "2026-11-09", False, [("coat", 1, "wool"), ("shirt", 5, "cotton")]),
    "T-1047": _t("T-1047", "C-204", "2026-11-10", False, [("trousers", 3, "linen"), ("blouse", 1, "silk"), ("duvet", 1, "down")]),
    "T-1048": _t("T-1048", "C-118", "2026-11-11", True, [("dress", 2, "polyester"), ("suit", 1, "wool")]),
    "T-1049": _t("T-1049", "C-402", "2026-11-12", False, [("shirt", 2, "cotton"), ("scarf", 1, "silk"), ("coat", 1, "wool")]),
}
REFS = ["T-1046", "T-1047", "T-1048", "T-1049"]

CASES = [
    dict(case="zzv_dry_01", fault_kind="unit_error", input="T-1041", root=("price_item", 2), failure=("validate_order", 1),
         description="The price tool answers the suit line in cents (1400) instead of euros for one garment; the validator finds a unit price far outside the suit band."),
    dict(case="zzv_dry_02", fault_kind="hallucinated_value", input="T-1042", root=("extract_items", 1), failure=("validate_order", 1),
         description="The extraction model adds a silk tie the ticket never lists; the piece count no longer matches the bag tag at validation."),
    dict(case="zzv_dry_03", fault_kind="off_by_one", input="T-1043", root=("schedule_pickup", 1), failure=("validate_order", 1),
         description="The pickup scheduler counts the drop-off day as a working day, so the ready date is one day short of the slowest process."),
    dict(case="zzv_dry_04", fault_kind="bad_memory_write", input="T-1044", root=("save_order", 1), failure=("validate_order", 1),
         description="The order is saved to run state under the first household member's name instead of the ticket's customer, and the receipt carries that name."),
    dict(case="zzv_dry_05", fault_kind="plan_error", input="T-1045", root=("propose_batches", 1), failure=("validate_order", 1),
         description="The batch planner model leaves the last line (the scarf) out of every machine batch; the validator finds a garment with no batch."),
]

CLI = None


def brain(request):
    prompt = common.last_user(request)
    data = common.payload(prompt)
    if prompt.startswith("Extract the garments"):
        items = [dict(i) for i in INPUTS[data["ticket"]]["_items"]]
        if kit.on("zzv_dry_02"):
            items.insert(1, {"garment": "tie", "qty": 1, "fabric": "silk"})
        return json.dumps({"items": items})
    if prompt.startswith("Give the care process"):
        return CARE[data["fabric"]]
    if prompt.startswith("Group these lines"):
        groups: dict = {}
        for i, ln in enumerate(data["lines"]):
            groups.setdefault(ln["care"], []).append(i)
        if kit.on("zzv_dry_05"):
            last = len(data["lines"]) - 1
            groups = {k: [i for i in v if i != last] for k, v in groups.items()}
        return json.dumps({"batches": [{"process": k, "lines": v} for k, v in groups.items() if v]})
    if prompt.startswith("Write the customer receipt"):
        return f"Thank you {data['customer_name']}: {data['pieces']} pieces, total EUR {data['total']:.2f}, ready {data['ready']}."
    return "I cannot help with that."


def _ask(task, data):
    return common.ask(CLI, "You are the counter assistant of Pressed & Fresh dry cleaners.", task, data)


@trajdebug.step(kind="input")
def receive_ticket(ticket: dict) -> dict:
    return {k: v for k, v in ticket.items() if not k.startswith("_")}


@trajdebug.step(kind="tool")
def lookup_customer(customer_id: str) -> dict:
    return {"id": customer_id, **CUSTOMERS[customer_id]}


@trajdebug.step(kind="state")
def remember_customer(customer: dict) -> None:
    trajdebug.current_run().state["customer"] = customer


@trajdebug.step(kind="llm")
def extract_items(ticket_id: str, text: str) -> str:
    return _ask("Extract the garments from this drop-off ticket as JSON.", {"ticket": ticket_id, "text": text})


@trajdebug.step(kind="parse")
def parse_items(raw: str) -> list:
    return [{"garment": i["garment"], "qty": int(i["qty"]), "fabric": i["fabric"]} for i in json.loads(raw)["items"]]


@trajdebug.step(kind="llm")
def classify_care(item: dict) -> str:
    return _ask("Give the care process for this garment.", item)


_BUSY = {"T-1043": 1, "T-1047": 0}


@trajdebug.step(kind="tool")
def price_item(garment: str, qty: int, care: str, attempt: int = 1) -> dict:
    unit = PRICES.get(garment, 8.0)
    if care == "dry_clean" and garment in ("shirt", "trousers"):
        unit += 1.0
    if kit.on("zzv_dry_01") and garment == "suit":
        unit = unit * 100
    return {"garment": garment, "qty": qty, "unit": unit, "amount": round(unit * qty, 2), "currency": "EUR"}


@trajdebug.step(kind="tool")
def price_service_status(ticket_id: str, call: int) -> dict:
    busy = _BUSY.get(ticket_id)
    return {"ok": not (busy is not None and call == busy)}


@trajdebug.step(kind="llm")
def propose_batches(lines: list) -> str:
    return _ask("Group these lines into machine batches.", {"lines": lines})


@trajdebug.step(kind="parse")
def parse_plan(raw: str) -> dict:
    return json.loads(raw)


@trajdebug.step(kind="tool")
def check_machine_capacity(process: str, pieces: int) -> dict:
    return {"process": process, "pieces": pieces, "free_slots": 40 - pieces}


def plan_batches(lines: list) -> dict:
    with trajdebug.step("batch_planner", kind="agent", input={"lines": lines}) as s:
        plan = parse_plan(propose_batches(lines))
        for b in plan["batches"]:
            b["capacity"] = check_machine_capacity(b["process"], sum(lines[i]["qty"] for i in b["lines"]))
        s.output = plan
    return plan


def _add_business_days(start: str, n: int) -> str:
    d = dt.date.fromisoformat(start)
    while n > 0:
        d += dt.timedelta(days=1)
        if d.weekday() < 5:
            n -= 1
    return d.isoformat()


@trajdebug.step(kind="tool")
def schedule_pickup(dropoff: str, processes: list, express: bool) -> dict:
    days = max(DAYS[p] for p in processes) - (1 if express else 0)
    days = max(days, 1)
    if kit.on("zzv_dry_03"):
        days -= 1
    return {"ready": _add_business_days(dropoff, days), "counter": "front"}


@trajdebug.step(kind="other")
def compute_total(lines: list, express: bool) -> dict:
    cust = trajdebug.current_run().state["customer"]
    sub = sum(ln["amount"] for ln in lines)
    total = sub * (1 - cust["discount"]) + (6.0 if express else 0.0)
    return {"subtotal": round(sub, 2), "discount": cust["discount"], "total": round(total, 2)}


@trajdebug.step(kind="state")
def save_order(ticket: dict, totals: dict, ready: dict) -> None:
    cust = trajdebug.current_run().state["customer"]
    owner = cust["household"][0] if kit.on("zzv_dry_04") else ticket["customer_id"]
    trajdebug.current_run().state["order"] = {
        "ticket": ticket["ticket"], "customer_id": owner, "customer_name": CUSTOMERS[owner]["name"],
        "total": totals["total"], "ready": ready["ready"], "pieces": ticket["pieces"]}


@trajdebug.step(kind="llm")
def compose_receipt() -> str:
    order = trajdebug.current_run().state["order"]
    return _ask("Write the customer receipt.", {"customer_name": order["customer_name"], "pieces": order["pieces"],
                                                 "total": order["total"], "ready": order["ready"]})


BANDS = {g: (p * 0.8, p * 1.6) for g, p in PRICES.items()}


@trajdebug.step(kind="condition")
def validate_order(ticket: dict, lines: list, plan: dict, ready: dict, receipt: str) -> dict:
    pieces = sum(ln["qty"] for ln in lines)
    if pieces != ticket["pieces"]:
        raise ValueError(f"ticket {ticket['ticket']}: {pieces} pieces priced, bag tag says {ticket['pieces']}")
    for ln in lines:
        lo, hi = BANDS.get(ln["garment"], (2.0, 30.0))
        if not lo <= ln["unit"] <= hi:
            raise ValueError(f"ticket {ticket['ticket']}: {ln['garment']} unit price {ln['unit']} EUR outside {lo:.2f}-{hi:.2f}")
    placed = sorted(i for b in plan["batches"] for i in b["lines"])
    if placed != list(range(len(lines))):
        missing = sorted(set(range(len(lines))) - set(placed))
        raise ValueError(f"ticket {ticket['ticket']}: lines {missing} in no machine batch")
    need = max(DAYS[ln["care"]] for ln in lines) - (1 if ticket["express"] else 0)
    earliest = _add_business_days(ticket["dropoff"], max(need, 1))
    if ready["ready"] < earliest:
        raise ValueError(f"ticket {ticket['ticket']}: ready {ready['ready']} before {earliest}")
    name = CUSTOMERS[ticket["customer_id"]]["name"]
    if name not in receipt:
        raise ValueError(f"ticket {ticket['ticket']}: receipt does not name {name}")
    return {"ok": True}


def record(server, key: str, out: str) -> None:
    global CLI
    CLI = common.client(server)
    server.use(brain)
    inp = INPUTS[key]
    try:
        with trajdebug.run(NAME, task=f"take in drop-off ticket {key}", path=out):
            ticket = receive_ticket(inp)
            remember_customer(lookup_customer(ticket["customer_id"]))
            items = parse_items(extract_items(ticket["ticket"], ticket["text"]))
            lines, calls = [], 0
            for it in items:
                care = classify_care(it)
                while True:
                    calls += 1
                    if price_service_status(ticket["ticket"], calls)["ok"]:
                        break
                line = price_item(it["garment"], it["qty"], care)
                lines.append({**line, "care": care})
            plan = plan_batches(lines)
            ready = schedule_pickup(ticket["dropoff"], [b["process"] for b in plan["batches"]], ticket["express"])
            totals = compute_total(lines, ticket["express"])
            save_order(ticket, totals, ready)
            receipt = compose_receipt()
            validate_order(ticket, lines, plan, ready, receipt)
    except ValueError:
        pass
