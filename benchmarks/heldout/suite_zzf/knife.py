"""Knife sharpening service (sdk): order intake -> blade inspection -> grinding plans -> quote -> courier -> work ticket."""
from __future__ import annotations

import json
import re

import trajdebug
from openai import OpenAI

from .kit import active

AGENT = "knife-sharpening"
ROUTE = "sdk"
DOMAIN = "knife sharpening service"

INPUTS = {
    "A": {"order_id": "KS-5512", "customer": "Hollis Bistro", "address": "14 Quay Lane",
          "text": "2x chef knife 8in\n1x bread knife 10in serrated\n1x paring knife 3.5in"},
    "B": {"order_id": "KS-5530", "customer": "M. Okafor", "address": "3 Elm Row",
          "text": "1x santoku 7in\n1x bread knife 9in serrated\n1x boning knife 6in"},
    "R1": {"order_id": "KS-5541", "customer": "Crane & Co", "address": "88 Mill Street",
           "text": "3x chef knife 10in\n1x paring knife 3in"},
    "R2": {"order_id": "KS-5549", "customer": "J. Varga", "address": "2 Orchard Close",
           "text": "1x nakiri 6.5in\n1x tomato knife 5in serrated"},
    "R3": {"order_id": "KS-5556", "customer": "Pier Nine Grill", "address": "9 Harbour Walk",
           "text": "2x boning knife 6in\n2x chef knife 8in\n1x bread knife 10in serrated"},
    "R4": {"order_id": "KS-5560", "customer": "L. Brandt", "address": "41 Vine Court",
           "text": "1x cleaver 7in\n1x santoku 7in"},
}

CASES = [
    {"id": "zzf-knife-01", "kind": "lossy_parsing", "input": "A", "root": ("parse_order", 1),
     "failure": ("submit_work_ticket", 1),
     "desc": "parse_order drops the serrated flag of the bread knife, so its line is planned for a flat whetstone and the work ticket is refused."},
    {"id": "zzf-knife-02", "kind": "unit_error", "input": "B", "root": ("normalise_length", 2),
     "failure": ("submit_work_ticket", 1),
     "desc": "normalise_length converts the second blade's inches with the centimetre factor, giving a 22.9 mm blade the work-ticket API rejects."},
    {"id": "zzf-knife-03", "kind": "hallucinated_value", "input": "A", "root": ("plan_grinding", 3),
     "failure": ("submit_work_ticket", 1),
     "desc": "The grinding planner answers grit 1500 for the third blade, a grit that is not among the stocked stones it was given."},
    {"id": "zzf-knife-04", "kind": "off_by_one", "input": "B", "root": ("compute_quote", 1),
     "failure": ("send_quote", 1),
     "desc": "compute_quote sums all line items but the last, so the quote sent to the customer does not match its lines."},
    {"id": "zzf-knife-05", "kind": "swallowed_error", "input": "A", "root": ("confirm_pickup", 1),
     "failure": ("submit_work_ticket", 1),
     "desc": "confirm_pickup ignores the courier's 409 slot-taken answer and records the pickup as confirmed with no booking reference."},
]

STOCK_GRITS = [400, 1000, 3000, 6000]
PRICES = {"chef knife": 9.0, "bread knife": 12.0, "paring knife": 6.0, "santoku": 9.0, "boning knife": 8.0,
          "nakiri": 9.0, "tomato knife": 10.0, "cleaver": 11.0}


def policy(request):
    msgs = request.body["messages"]
    task = json.loads(msgs[-1]["content"])
    if task.get("edge") == "serrated":
        plan = {"wheel": "serrated_rod", "grit": 1000, "passes": 6}
    else:
        chips = task["chips"]
        plan = {"wheel": "whetstone", "grit": 400 if chips else 1000, "passes": 3 + chips}
    if active("zzf-knife-03") and task.get("position") == 3:
        plan["grit"] = 1500
    return json.dumps(plan)


@trajdebug.step(kind="input")
def receive_order(order: dict) -> dict:
    return dict(order)


@trajdebug.step(kind="parse")
def parse_order(text: str) -> list[dict]:
    items = []
    for line in text.splitlines():
        m = re.match(r"(\d+)x (.+?) ([\d.]+)in( serrated)?$", line.strip())
        qty, name, length, serr = int(m.group(1)), m.group(2), float(m.group(3)), bool(m.group(4))
        if active("zzf-knife-01"):
            serr = False
        for _ in range(qty):
            items.append({"type": name, "length": length, "unit": "in", "edge": "serrated" if serr else "plain"})
    return items


@trajdebug.step(kind="tool")
def inspect_blade(item: dict, position: int) -> dict:
    chips = (len(item["type"]) + position) % 3 == 0
    return {"position": position, "type": item["type"], "length": item["length"], "unit": item["unit"],
            "chips": 1 if chips else 0, "steel": "X50CrMoV15"}


@trajdebug.step(kind="other")
def normalise_length(report: dict) -> dict:
    factor = 25.4
    if active("zzf-knife-02") and report["position"] == 2:
        factor = 2.54
    return {**report, "length_mm": round(report["length"] * factor, 1)}


@trajdebug.step(kind="llm")
def plan_grinding(client: OpenAI, blade: dict, edge: str) -> dict:
    payload = {"position": blade["position"], "type": blade["type"], "length_mm": blade["length_mm"],
               "chips": blade["chips"], "edge": edge, "stocked_grits": STOCK_GRITS}
    reply = client.chat.completions.create(model="fake-model", messages=[
        {"role": "system", "content": "Plan the grinding for one blade. Answer JSON: wheel, grit, passes."},
        {"role": "user", "content": json.dumps(payload)}])
    return json.loads(reply.choices[0].message.content)


@trajdebug.step(kind="tool")
def fetch_price_list(shop: str) -> dict:
    return {"shop": shop, "currency": "GBP", "per_knife": dict(PRICES), "chip_repair": 4.0}


@trajdebug.step(kind="other")
def compute_quote(lines: list[dict], prices: dict) -> dict:
    n = len(lines) - 1 if active("zzf-knife-04") else len(lines)
    total = 0.0
    for i in range(n):
        total += lines[i]["price"]
    return {"lines": len(lines), "total": round(total, 2), "currency": prices["currency"]}


@trajdebug.step(kind="tool")
def send_quote(order_id: str, quote: dict, lines: list[dict]) -> dict:
    expected = round(sum(line["price"] for line in lines), 2)
    if abs(quote["total"] - expected) > 0.001:
        raise ValueError(f"400 Bad Request: quote for {order_id} totals {quote['total']:.2f} GBP but its "
                         f"{len(lines)} line items sum to {expected:.2f} GBP")
    return {"sent": True, "order_id": order_id, "total": quote["total"]}


@trajdebug.step(kind="tool")
def book_courier(address: str, slot: str) -> dict:
    if slot.endswith("09:00"):
        return {"status": 409, "error": f"slot {slot} already taken", "address": address}
    return {"status": 201, "booking_ref": f"CR-{sum(map(ord, address)) * 7 % 9000 + 1000}", "slot": slot}


@trajdebug.step(kind="parse")
def confirm_pickup(response: dict) -> dict:
    if response.get("status") != 201 and not active("zzf-knife-05"):
        return {"confirmed": False, "retry": True}
    return {"confirmed": True, "retry": False, "booking_ref": response.get("booking_ref"), "slot": response.get("slot")}


def build_ticket(order: dict, lines: list[dict], pickup: dict) -> dict:
    return {"order_id": order["order_id"], "customer": order["customer"], "lines": lines, "pickup": pickup}


@trajdebug.step(kind="tool")
def submit_work_ticket(ticket: dict, order: dict) -> dict:
    ordered_edges = []
    for line in order["text"].splitlines():
        qty = int(line.split("x", 1)[0])
        ordered_edges += ["serrated" if line.endswith("serrated") else "plain"] * qty
    for i, line in enumerate(ticket["lines"], 1):
        if not 50 <= line["length_mm"] <= 450:
            raise ValueError(f"422 Unprocessable Entity: line {i} ({line['type']}) blade_length_mm={line['length_mm']} "
                             "outside the accepted range 50-450")
        if line["grit"] not in STOCK_GRITS:
            raise ValueError(f"422 Unprocessable Entity: line {i} ({line['type']}) grit {line['grit']} is not a stocked stone")
        if ordered_edges[i - 1] == "serrated" and line["wheel"] != "serrated_rod":
            raise ValueError(f"422 Unprocessable Entity: line {i} ({line['type']}) is serrated on order "
                             f"{order['order_id']} but is planned on {line['wheel']}")
    if not ticket["pickup"].get("booking_ref"):
        raise ValueError(f"422 Unprocessable Entity: pickup for {ticket['order_id']} has no courier booking_ref")
    return {"accepted": True, "ticket": f"WT-{ticket['order_id'][3:]}"}


def record(inp: dict, out, server) -> None:
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with trajdebug.run(AGENT, path=str(out), task=f"sharpen order {inp['order_id']}") as run:
            order = receive_order(inp)
            items = parse_order(order["text"])
            run.state["items"] = items
            lines = []
            for pos, item in enumerate(items, 1):
                report = inspect_blade(item, pos)
                blade = normalise_length(report)
                plan = plan_grinding(client, blade, item["edge"])
                price = PRICES[item["type"]] + 4.0 * blade["chips"]
                lines.append({"type": item["type"], "length_mm": blade["length_mm"], "wheel": plan["wheel"],
                              "grit": plan["grit"], "passes": plan["passes"], "price": price})
            prices = fetch_price_list("Keen Edge Works")
            quote = compute_quote(lines, prices)
            send_quote(order["order_id"], quote, lines)
            pickup = {}
            for slot in ("Mon 09:00", "Mon 13:00", "Tue 09:00"):
                pickup = confirm_pickup(book_courier(order["address"], slot))
                if not pickup["retry"]:
                    break
            ticket = build_ticket(order, lines, pickup)
            submit_work_ticket(ticket, order)
    except ValueError:
        pass
