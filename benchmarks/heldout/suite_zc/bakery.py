"""Bakery wholesale orders (sdk route): a café or hotel e-mails a purchase order; the agent books it."""

from __future__ import annotations

import json
import re

import trajdebug
from openai import OpenAI

from .common import Case
from .kit import active

AGENT = "bakery-wholesale"
ROUTE = "sdk"
EXT = "jsonl"

INPUTS = {
    "lune": {"customer": "C-118", "email": "PO 5512 from Cafe Lune: 4 dz rye-loaf, 6 dz croissant, "
             "3 dz pain-au-chocolat, 2 dz seeded-bap. Total 15 dz. Deliver Thu before 07:00."},
    "marlowe": {"customer": "C-204", "email": "PO 7730 from Hotel Marlowe: 10 dz brioche-bun, 5 dz croissant, "
                "2 dz sourdough-boule. Total 17 dz. Deliver Fri before 06:30."},
}
REFS = [
    {"customer": "C-031", "email": "PO 1204 from Deli Rosa: 3 dz sourdough-boule, 2 dz rye-loaf. Total 5 dz. Deliver Mon before 08:00."},
    {"customer": "C-077", "email": "PO 3390 from Kiosk Nord: 8 dz croissant, 4 dz brioche-bun. Total 12 dz. Deliver Tue before 07:30."},
    {"customer": "C-150", "email": "PO 4471 from Canteen Ostra: 6 dz seeded-bap, 6 dz rye-loaf, 2 dz croissant. Total 14 dz. Deliver Wed before 07:00."},
    {"customer": "C-212", "email": "PO 8802 from Hotel Vane: 5 dz brioche-bun, 3 dz pain-au-chocolat. Total 8 dz. Deliver Sat before 06:30."},
]

CASES = [
    Case("zc01", "zc-bk-1", "lossy_parsing", "lune", ("parse_order_lines", 1), ("submit_wholesale_order", 1),
         "The order-line parser's pattern skips the three-part product name pain-au-chocolat, so the booked lines sum to 12 dozen against a 15-dozen PO."),
    Case("zc02", "zc-bk-2", "unit_error", "lune", ("price_line", 2), ("submit_wholesale_order", 1),
         "Croissants are priced per piece but price_line multiplies the per-piece price by dozens, so the croissant line total is twelve times too small."),
    Case("zc03", "zc-bk-3", "swallowed_error", "lune", ("fetch_price_list", 1), ("submit_wholesale_order", 1),
         "A 503 from the price service is caught and an empty price list returned instead of retrying, so every line is priced at zero."),
    Case("zc04", "zc-bk-4", "stale_data", "marlowe", ("check_stock", 1), ("submit_wholesale_order", 1),
         "check_stock answers from yesterday's cached batch table, so the brioche-bun line reserves the closed batch B-1203 instead of the open B-1204."),
    Case("zc05", "zc-bk-5", "off_by_one", "marlowe", ("choose_slot", 1), ("submit_wholesale_order", 1),
         "choose_slot takes the slot one past the last one before the deadline, booking a van after the requested window."),
]

CUSTOMERS = {
    "C-118": {"name": "Cafe Lune", "tier": "gold", "zone": "north", "credit_limit": 900.0},
    "C-204": {"name": "Hotel Marlowe", "tier": "gold", "zone": "harbourside", "credit_limit": 1500.0},
    "C-031": {"name": "Deli Rosa", "tier": "standard", "zone": "centre", "credit_limit": 400.0},
    "C-077": {"name": "Kiosk Nord", "tier": "standard", "zone": "north", "credit_limit": 600.0},
    "C-150": {"name": "Canteen Ostra", "tier": "gold", "zone": "east", "credit_limit": 800.0},
    "C-212": {"name": "Hotel Vane", "tier": "gold", "zone": "centre", "credit_limit": 700.0},
}
PRICES = {  # unit price per dozen, except pieces marked "each"
    "rye-loaf": (21.0, "dozen"), "croissant": (1.35, "each"), "pain-au-chocolat": (1.6, "each"),
    "seeded-bap": (7.8, "dozen"), "brioche-bun": (9.6, "dozen"), "sourdough-boule": (33.0, "dozen"),
}
LIVE_STOCK = {"rye-loaf": 30, "croissant": 20, "pain-au-chocolat": 10, "seeded-bap": 12,
              "brioche-bun": 12, "sourdough-boule": 8}
CURRENT_BATCH = {k: "B-1204" for k in LIVE_STOCK}
SNAPSHOT_BATCH = {**CURRENT_BATCH, "brioche-bun": "B-1203"}
ROUTES = {"north": ["N1 depot", "Lune St", "Nord Sq"], "harbourside": ["H1 depot", "Quay Rd"],
          "centre": ["C1 depot", "Market St"], "east": ["E1 depot", "Ostra Way"]}
SLOTS = ["05:00", "05:30", "06:00", "06:30", "07:00", "07:30", "08:00"]


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    if prompt.startswith("Extract the order lines"):
        email = prompt.split("\n", 1)[1]
        lines = re.findall(r"(\d+) dz ([a-z-]+)", email)
        return "\n".join(f"- {product}: {qty} dozen" for qty, product in lines)
    if prompt.startswith("Plan oven batches"):
        lines = json.loads(prompt.split("\n", 1)[1])
        start = 2
        batches = []
        for line in lines:
            batches.append({"product": line["product"], "start": f"0{start}:00", "trays": line["dozen"]})
            start += 1 if line["dozen"] > 4 else 0
        return json.dumps({"batches": batches, "ready_by": f"0{start + 1}:30"})
    return "I cannot help with that."


class WholesaleAPIError(Exception):
    pass


def _client(server) -> OpenAI:
    return OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def record(inp: dict, path: str, server) -> None:
    client = _client(server)
    service_calls = {"n": 0}

    def ask(prompt: str) -> str:
        reply = client.chat.completions.create(model=server.model, messages=[{"role": "user", "content": prompt}])
        return reply.choices[0].message.content

    @trajdebug.step(kind="llm")
    def extract_order(email: str) -> str:
        return ask("Extract the order lines, one per line as '- product: N dozen':\n" + email)

    @trajdebug.step(kind="parse")
    def parse_order_lines(text: str) -> list[dict]:
        pattern = r"- ([a-z]+(?:-[a-z]+)?): (\d+) dozen$" if active("zc-bk-1") else r"- ([a-z-]+): (\d+) dozen$"
        out = []
        for row in text.splitlines():
            m = re.match(pattern, row.strip())
            if m:
                out.append({"product": m.group(1), "dozen": int(m.group(2))})
        return out

    @trajdebug.step(kind="tool")
    def lookup_customer(customer_id: str) -> dict:
        return {"id": customer_id, **CUSTOMERS[customer_id]}

    @trajdebug.step(kind="state")
    def remember_customer(customer: dict) -> None:
        trajdebug.current_run().state["customer"] = {"id": customer["id"], "tier": customer["tier"],
                                                     "zone": customer["zone"]}

    def price_service(tier: str) -> dict:
        service_calls["n"] += 1
        if service_calls["n"] == 1:
            return {"status": 503, "error": "price service warming up, retry later"}
        return {"status": 200, "tier": tier, "prices": {k: {"price": v[0], "per": v[1]} for k, v in PRICES.items()}}

    @trajdebug.retry(attempts=3, on=(ConnectionError,))
    @trajdebug.step(kind="tool")
    def fetch_price_list(tier: str) -> dict:
        answer = price_service(tier)
        if answer["status"] != 200:
            if active("zc-bk-3"):
                return {"tier": tier, "prices": {}}
            raise ConnectionError(f"price service answered {answer['status']}: {answer['error']}")
        return {"tier": tier, "prices": answer["prices"]}

    @trajdebug.step(kind="tool")
    def check_stock(product: str, dozen: int) -> dict:
        batches = SNAPSHOT_BATCH if active("zc-bk-4") else CURRENT_BATCH
        return {"product": product, "available_dozen": LIVE_STOCK[product], "batch": batches[product],
                "requested_dozen": dozen}

    @trajdebug.step(kind="other")
    def price_line(line: dict, prices: dict) -> dict:
        entry = prices.get(line["product"], {"price": 0.0, "per": "dozen"})
        pieces_factor = 12 if entry["per"] == "each" and not active("zc-bk-2") else 1
        total = round(entry["price"] * pieces_factor * line["dozen"], 2)
        return {**line, "unit_price": entry["price"], "per": entry["per"], "line_total": total}

    @trajdebug.step(kind="llm")
    def plan_bake_schedule(lines: list[dict]) -> dict:
        return json.loads(ask("Plan oven batches for these lines:\n" + json.dumps(lines)))

    @trajdebug.step(kind="retrieval")
    def lookup_route(zone: str) -> dict:
        return {"zone": zone, "stops": ROUTES[zone]}

    @trajdebug.step(kind="tool")
    def list_van_slots(zone: str, day: str) -> list[str]:
        return [s for s in SLOTS if not (zone == "east" and s == "05:00")]

    @trajdebug.step(kind="other")
    def choose_slot(slots: list[str], deadline: str) -> dict:
        fits = [i for i, s in enumerate(slots) if s <= deadline]
        i = fits[-1] + (1 if active("zc-bk-5") else 0)
        return {"slot": slots[i], "deadline": deadline}

    @trajdebug.step(kind="agent")
    def delivery_planner(zone: str, day: str, deadline: str) -> dict:
        route = lookup_route(zone)
        slots = list_van_slots(zone, day)
        return {"route": route, **choose_slot(slots, deadline)}

    @trajdebug.step(kind="other")
    def compute_invoice(priced: list[dict]) -> dict:
        return {"lines": priced, "total": round(sum(p["line_total"] for p in priced), 2)}

    @trajdebug.step(kind="tool")
    def submit_wholesale_order(po: dict, invoice: dict, delivery: dict, customer: dict) -> dict:
        problems = []
        dozens = sum(line["dozen"] for line in invoice["lines"])
        if dozens != po["total_dozen"]:
            problems.append(f"po_total_dozen {po['total_dozen']} does not match sum of lines {dozens}")
        for line in invoice["lines"]:
            unit, per = PRICES[line["product"]]
            expected = round(unit * (12 if per == "each" else 1) * line["dozen"], 2)
            if abs(expected - line["line_total"]) > 0.01:
                problems.append(f"line_total for {line['product']}: sent {line['line_total']:.2f}, expected {expected:.2f}")
            if line["batch"] != CURRENT_BATCH[line["product"]]:
                problems.append(f"batch {line['product']}/{line['batch']} is not open for reservation "
                                f"(open batch {CURRENT_BATCH[line['product']]})")
        if invoice["total"] < 40.0:
            problems.append(f"invoice total {invoice['total']:.2f} below minimum order value 40.00")
        if invoice["total"] > customer["credit_limit"]:
            problems.append(f"invoice total {invoice['total']:.2f} exceeds credit limit {customer['credit_limit']:.2f}")
        if delivery["slot"] > delivery["deadline"]:
            problems.append(f"delivery_slot {delivery['slot']} is after the requested window (before {delivery['deadline']})")
        if problems:
            raise WholesaleAPIError("HTTP 422 Unprocessable Entity: " + json.dumps({"errors": problems}))
        return {"status": 201, "order_ref": f"WH-{po['po']}"}

    email = inp["email"]
    po = {"po": re.search(r"PO (\d+)", email).group(1), "total_dozen": int(re.search(r"Total (\d+) dz", email).group(1))}
    day, deadline = re.search(r"Deliver (\w+) before (\d\d:\d\d)", email).groups()
    try:
        with trajdebug.run(AGENT, path=path, task=f"book wholesale PO {po['po']}") as run:
            with trajdebug.step("receive_email", kind="input") as s:
                s.output = email
            text = extract_order(email)
            lines = parse_order_lines(text)
            customer = lookup_customer(inp["customer"])
            remember_customer(customer)
            prices = fetch_price_list(run.state["customer"]["tier"])
            priced = []
            for line in lines:
                stock = check_stock(line["product"], line["dozen"])
                if stock["available_dozen"] < line["dozen"]:
                    raise WholesaleAPIError(f"cannot fill {line['product']}: only {stock['available_dozen']} dz")
                priced.append(price_line({**line, "batch": stock["batch"]}, prices["prices"]))
            bake = plan_bake_schedule(lines)
            invoice = compute_invoice(priced)
            with trajdebug.step("hold_oven_capacity", kind="tool", input=bake) as s:
                s.output = {"held": len(bake["batches"]), "ready_by": bake["ready_by"]}
            delivery = delivery_planner(run.state["customer"]["zone"], day, deadline)
            submit_wholesale_order(po, invoice, delivery, customer)
    except WholesaleAPIError:
        pass
