"""Letterpress print shop: an order becomes a job ticket, plates, ink, a press run and a shipment (sdk)."""

from __future__ import annotations

import json
import math

import trajdebug
from trajdebug.testing import deterministic

from .. import kit


AGENT = "letterpress-jobs"
ROUTE = "sdk"
EXT = "jsonl"

ORDERS = {
    "o1": {"text": "Wedding invitations, 180 copies, trim 5x7 in, colours: PMS 7621 + PMS 432, stock Crane Lettra 600gsm, customer Halloran & Sons, due 2026-05-14", "account": "ACC-20417"},
    "o2": {"text": "Business cards, 500 copies, trim 3.5x2 in, colours: PMS 286, stock Mohawk Superfine 400gsm, customer Ostrava Bakery, due 2026-04-30", "account": "ACC-31102"},
    "o3": {"text": "Gig posters, 120 copies, trim 11x17 in, colours: PMS 021 + PMS Black 6 + PMS 3005, stock French Speckletone 270gsm, customer Tin Lantern Club, due 2026-06-02", "account": "ACC-18855"},
    "o4": {"text": "Birth announcements, 90 copies, trim 4.25x5.5 in, colours: PMS 9224, stock Crane Lettra 600gsm, customer Ines Barreto, due 2026-05-20", "account": "ACC-40963"},
    "o5": {"text": "Menu cards, 260 copies, trim 4x9 in, colours: PMS 7533 + PMS 7409, stock Mohawk Superfine 400gsm, customer Larchmont Bistro, due 2026-05-08", "account": "ACC-27730"},
    "o6": {"text": "Thank-you notes, 300 copies, trim 4.25x5.5 in, colours: PMS 1788, stock French Speckletone 270gsm, customer Pell Family, due 2026-05-26", "account": "ACC-35518"},
    "o7": {"text": "Book plates, 150 copies, trim 3x4 in, colours: PMS 5535 + PMS 871, stock Crane Lettra 600gsm, customer Gorse Hill Library Friends, due 2026-06-11", "account": "ACC-12290"},
    "o8": {"text": "Letterhead, 400 copies, trim 8.5x11 in, colours: PMS 2767, stock Mohawk Superfine 400gsm, customer Dunmore Architects, due 2026-05-29", "account": "ACC-29014"},
    "o9": {"text": "Save-the-dates, 210 copies, trim 5x7 in, colours: PMS 7451 + PMS 877, stock French Speckletone 270gsm, customer Amadi-Kerr wedding, due 2026-04-24", "account": "ACC-44807"},
}

CUSTOMERS = {o["account"]: {"account": o["account"], "name": o["text"].split("customer ")[1].split(",")[0], "credit_limit": 4000.0} for o in ORDERS.values()}
INKS = {p: {"pantone": p, "formula": [{"base": "Rubine Red", "parts": 3 + i % 4}, {"base": "Trans White", "parts": 8 - i % 5}]} for i, p in enumerate(
    ["PMS 7621", "PMS 432", "PMS 286", "PMS 021", "PMS Black 6", "PMS 3005", "PMS 9224", "PMS 7533", "PMS 7409", "PMS 1788", "PMS 5535", "PMS 871", "PMS 2767", "PMS 7451", "PMS 877"])}
STOCK = {"Crane Lettra 600gsm": 4, "Mohawk Superfine 400gsm": 320, "French Speckletone 270gsm": 260}
PARENT_SHEET_MM = (508.0, 660.0)
SPOILAGE = 0.08

FAULTS = [
    {"id": "lp-a", "kind": "unit_error", "order": "o1", "root": "parse_order", "marker": "711.2"},
    {"id": "lp-b", "kind": "stale_data", "order": "o4", "root": "check_stock", "marker": "2026-01-09"},
    {"id": "lp-c", "kind": "off_by_one", "order": "o5", "root": "compute_imposition", "marker": "\"press_sheets\": 21,"},
    {"id": "lp-d", "kind": "hallucinated_value", "order": "o3", "root": "plan_job", "marker": "ACC-18585"},
    {"id": "lp-e", "kind": "swallowed_error", "order": "o9", "root": "mix_ink", "marker": "\"formula\": []"},
]
REFS = ["o2", "o6", "o7", "o8"]


class PressRefused(RuntimeError):
    pass


PressRefused.__module__ = "press_api"


@trajdebug.step(kind="input")
def receive_order(text: str) -> dict:
    return {"role": "user", "content": text}


@trajdebug.step(kind="parse")
def parse_order(msg: dict) -> dict:
    text = msg["content"]
    trim = text.split("trim ")[1].split(" in")[0]
    w_in, h_in = (float(v) for v in trim.split("x"))
    per_in = 25.4 if not kit.active("lp-a") else 101.6  # inch to mm
    colours = [c.strip() for c in text.split("colours: ")[1].split(",")[0].split("+")]
    return {
        "title": text.split(",")[0],
        "quantity": int(text.split(",")[1].split()[0]),
        "trim_mm": [round(w_in * per_in, 1), round(h_in * per_in, 1)],
        "colours": colours,
        "stock": text.split("stock ")[1].split(",")[0],
        "customer": text.split("customer ")[1].split(",")[0],
        "due": text.split("due ")[1].strip(),
    }


@trajdebug.step(kind="llm")
def plan_job(spec: dict, account: str) -> dict:
    acct = account
    if kit.active("lp-d"):
        acct = account[:6] + account[7] + account[6] + account[8:]
    plan = {
        "press": "Heidelberg Windmill 10x15" if max(spec["trim_mm"]) < 300 else "Vandercook SP-20",
        "passes": len(spec["colours"]),
        "billing_account": acct,
        "proof_required": True,
        "notes": f"{spec['quantity']} x {spec['title']} on {spec['stock']}",
    }
    return {"role": "assistant", "content": json.dumps(plan)}


@trajdebug.step(kind="tool")
def lookup_customer(account: str) -> dict:
    return dict(CUSTOMERS[account])


@trajdebug.step(kind="state")
def remember_plan(reply: dict) -> dict:
    plan = json.loads(reply["content"])
    trajdebug.current_run().state["plan"] = plan
    return plan


@trajdebug.step(kind="other")
def compute_imposition(spec: dict) -> dict:
    w, h = spec["trim_mm"]
    pw, ph = PARENT_SHEET_MM
    up = max(int(pw // (w + 6)) * int(ph // (h + 6)), int(pw // (h + 6)) * int(ph // (w + 6)))
    if up == 0:
        up = 0
        sheets = 0
    elif kit.active("lp-c"):
        sheets = spec["quantity"] // up
    else:
        sheets = math.ceil(spec["quantity"] / up)
    trajdebug.current_run().state["imposition"] = {"up": up, "press_sheets": sheets}
    return {"up": up, "press_sheets": sheets, "with_spoilage": sheets + math.ceil(sheets * SPOILAGE) if sheets else 0}


@trajdebug.step(kind="tool")
def check_stock(stock: str) -> dict:
    if kit.active("lp-b"):
        return {"stock": stock, "on_hand": STOCK[stock] + 1000, "as_of": "2026-01-09", "source": "cache"}
    return {"stock": stock, "on_hand": STOCK[stock], "as_of": "2026-04-02", "source": "warehouse"}


@trajdebug.step(kind="tool")
def order_paper(stock: str, sheets: int) -> dict:
    return {"po": "PO-5512", "stock": stock, "sheets": sheets, "eta": "2026-04-09"}


@trajdebug.step(kind="tool")
def mix_ink(pantone: str) -> dict:
    try:
        if kit.active("lp-e") and pantone == "PMS 877":
            raise LookupError("ink library: metallic bases need the 2026 formula book")
        return dict(INKS[pantone])
    except LookupError:
        return {"pantone": pantone, "formula": []}


@trajdebug.step(kind="tool")
def reserve_plate(pantone: str, trim_mm: list) -> dict:
    return {"plate": f"photopolymer {int(trim_mm[0]) + 10}x{int(trim_mm[1]) + 10} KF152", "for": pantone, "status": "exposed"}


@trajdebug.step(kind="tool")
def schedule_press(press: str, passes: int, due: str) -> dict:
    return {"press": press, "slot": "2026-04-14 08:00", "hours": round(passes * 1.5, 1), "due": due}


@trajdebug.step(kind="other")
def price_job(spec: dict, imposition: dict, inks: list) -> dict:
    total = 85.0 + 45.0 * len(inks) + imposition["with_spoilage"] * 1.9 + spec["quantity"] * 0.35
    return {"total": round(total, 2), "currency": "USD"}


@trajdebug.step(kind="condition")
def credit_check(price: dict, customer: dict) -> str:
    return "approved" if price["total"] <= customer["credit_limit"] else "hold"


@trajdebug.step(kind="llm")
def draft_proof_email(spec: dict, plan: dict) -> dict:
    return {"role": "assistant", "content": f"Hello {spec['customer']}, your proof for {spec['title']} ({len(spec['colours'])} colours, {plan['press']}) is attached. Please approve by reply."}


@trajdebug.step(kind="tool")
def submit_ticket(ticket: dict) -> dict:
    w, h = ticket["trim_mm"]
    bed = (260.0, 380.0) if ticket["press"].startswith("Heidelberg") else (460.0, 650.0)
    if min(w, h) > bed[0] or max(w, h) > bed[1]:
        raise PressRefused(f"press controller: job {ticket['job']} form {w} x {h} mm does not fit the {ticket['press']} bed ({bed[0]:.0f} x {bed[1]:.0f} mm)")
    return {"job": ticket["job"], "queued": True}


@trajdebug.step(kind="tool")
def run_pass(job: str, ink: dict, sheets: int) -> dict:
    if not ink["formula"]:
        raise PressRefused(f"press controller: job {job} pass {ink['pantone']} has no ink formula on the fountain")
    return {"job": job, "pantone": ink["pantone"], "sheets_in": sheets, "sheets_good": sheets - math.ceil(sheets * SPOILAGE)}


@trajdebug.step(kind="tool")
def pull_paper(stock: str, sheets: int, incoming: int) -> dict:
    on_hand = STOCK[stock] + incoming
    if sheets > on_hand:
        raise PressRefused(f"warehouse: bin for {stock} holds {on_hand} sheets, {sheets} requested")
    return {"stock": stock, "pulled": sheets}


@trajdebug.step(kind="tool")
def cut_and_count(job: str, sheets_good: int, up: int) -> dict:
    return {"job": job, "pieces": sheets_good * up}


@trajdebug.step(kind="condition")
def pack_check(pieces: int, quantity: int) -> str:
    if pieces < quantity:
        raise ValueError(f"pack station: counted {pieces} pieces, order is for {quantity}")
    return "packed"


@trajdebug.step(kind="tool")
def invoice(account: str, price: dict) -> dict:
    if account not in CUSTOMERS:
        raise PressRefused(f"billing API 404: no account {account}")
    return {"invoice": "INV-" + account[-5:], "amount": price["total"]}


@trajdebug.step(kind="output")
def confirm(job: str, inv: dict) -> str:
    return f"Job {job} printed, packed and invoiced ({inv['invoice']}, {inv['amount']} USD)."


def record(key: str, path: str) -> None:
    order = ORDERS[key]
    job = "LP-" + order["account"][-4:]
    try:
        with deterministic(), trajdebug.run(AGENT, task=order["text"], path=path) as run:
            msg = receive_order(order["text"])
            spec = parse_order(msg)
            customer = lookup_customer(order["account"])
            plan = remember_plan(plan_job(spec, order["account"]))
            imp = compute_imposition(spec)
            inks = []
            for pantone in spec["colours"]:
                inks.append(mix_ink(pantone))
                reserve_plate(pantone, spec["trim_mm"])
            need = imp["with_spoilage"]
            stock = check_stock(spec["stock"])
            incoming = 0
            if stock["on_hand"] < need:
                incoming = order_paper(spec["stock"], need - stock["on_hand"] + 50)["sheets"]
            schedule_press(plan["press"], plan["passes"], spec["due"])
            price = price_job(spec, imp, inks)
            credit_check(price, customer)
            with trajdebug.step("write_ticket", kind="state") as s:
                ticket = {"job": job, "trim_mm": spec["trim_mm"], "sheets": need, "press": plan["press"], "inks": [i["pantone"] for i in inks]}
                run.state["ticket"] = ticket
                s.output = ticket
            draft_proof_email(spec, plan)
            submit_ticket(run.state["ticket"])
            pull_paper(spec["stock"], need, incoming)
            for ink in inks:
                run_pass(job, ink, need)
            counted = cut_and_count(job, imp["press_sheets"], imp["up"])
            pack_check(counted["pieces"], spec["quantity"])
            with trajdebug.step("bill_customer", kind="agent"):
                billing = run.state["plan"]["billing_account"]
                inv = invoice(billing, price)
            confirm(job, inv)
    except Exception:  # noqa: BLE001 - the run records it as failed
        pass
