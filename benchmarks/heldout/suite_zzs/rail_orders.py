"""A model railway shop's orders (sdk route): parse an order e-mail, price, pick, ship, confirm, validate."""
import json

import trajdebug
from openai import OpenAI

import kit
from common import brain_from, chat

NAME, ROUTE, DOMAIN = "railway-shop-orders", "sdk", "model railway shop orders"
SHAPE = "LLM extraction, parse, per-line catalogue retrieval + stock tool with retry, pick plan, shipping sub-agent, state, confirmation LLM, validator"

CATALOGUE = {
    "R3412": {"sku": "R3412", "name": "Class 47 diesel, BR green", "scale": "OO", "pence": 18950, "grams": 420},
    "R3421": {"sku": "R3421", "name": "Class 47 diesel, Network SE", "scale": "OO", "pence": 17950, "grams": 420},
    "N2105": {"sku": "N2105", "name": "Mk1 coach, maroon", "scale": "N", "pence": 3450, "grams": 60},
    "OO771": {"sku": "OO771", "name": "Signal box kit", "scale": "OO", "pence": 2299, "grams": 180},
    "OO772": {"sku": "OO772", "name": "Level crossing kit", "scale": "OO", "pence": 1899, "grams": 150},
    "T0090": {"sku": "T0090", "name": "Flexitrack 914mm", "scale": "OO", "pence": 499, "grams": 95},
    "N4410": {"sku": "N4410", "name": "Tank wagon, Esso", "scale": "N", "pence": 2150, "grams": 45},
    "C0012": {"sku": "C0012", "name": "DCC controller", "scale": "any", "pence": 12900, "grams": 650},
}
CUSTOMERS = {
    "C-101": {"id": "C-101", "tier": "club", "billing_country": "GB", "delivery_country": "GB"},
    "C-202": {"id": "C-202", "tier": "standard", "billing_country": "GB", "delivery_country": "IE"},
    "C-303": {"id": "C-303", "tier": "club", "billing_country": "IE", "delivery_country": "GB"},
    "C-404": {"id": "C-404", "tier": "standard", "billing_country": "DE", "delivery_country": "DE"},
}
RATES = {"GB": [(1.0, 395), (2.0, 695), (5.0, 995)], "IE": [(1.0, 1250), (2.0, 1650), (5.0, 2200)],
         "DE": [(1.0, 1450), (2.0, 1850), (5.0, 2600)]}


def _order(oid, cust, lines):
    return {"order_id": oid, "customer": cust,
            "email": f"Order {oid} from {cust}: " + "; ".join(f"{q} x {s}" for s, q in lines), "lines": lines}


INPUTS = {
    "o1": _order("MR-5101", "C-101", [("OO771", 2), ("T0090", 6), ("OO772", 1), ("R3412", 1)]),
    "o2": _order("MR-5102", "C-202", [("N2105", 3), ("N4410", 2), ("C0012", 1)]),
    "o3": _order("MR-5103", "C-303", [("OO771", 1), ("R3421", 1), ("T0090", 4)]),
    "o4": _order("MR-5104", "C-101", [("C0012", 1), ("N2105", 2), ("N4410", 4), ("T0090", 2)]),
    "o5": _order("MR-5105", "C-202", [("R3412", 1), ("N4410", 1), ("OO772", 2)]),
    "r1": _order("MR-5090", "C-404", [("OO772", 2), ("T0090", 3)]),
    "r2": _order("MR-5091", "C-101", [("N2105", 1), ("N4410", 2), ("OO771", 1)]),
    "r3": _order("MR-5092", "C-303", [("C0012", 1), ("R3421", 1)]),
    "r4": _order("MR-5093", "C-202", [("T0090", 8), ("OO771", 1), ("N2105", 2)]),
}
REFS = ["r1", "r2", "r3", "r4"]
CASES = [
    {"id": "zzs_rail_catalogue_match", "kind": "wrong_retrieval", "input": "o1", "root": ("lookup_catalogue", 4),
     "failure": ("validate_order", 1),
     "description": "The catalogue search for R3412 returns the near-identical R3421 livery, which is priced and confirmed in its place."},
    {"id": "zzs_rail_parcel_weight", "kind": "unit_error", "input": "o2", "root": ("total_weight", 1),
     "failure": ("validate_order", 1),
     "description": "The parcel weight is summed in grams and divided by 100 instead of 1000, so the courier band quoted is too high."},
    {"id": "zzs_rail_pick_list", "kind": "off_by_one", "input": "o4", "root": ("build_pick_list", 1),
     "failure": ("validate_order", 1),
     "description": "The pick list starts at the second order line, leaving the DCC controller off the warehouse picks."},
    {"id": "zzs_rail_customer_memory", "kind": "bad_memory_write", "input": "o3", "root": ("remember_customer", 1),
     "failure": ("validate_order", 1),
     "description": "The customer record kept in run state takes the billing country instead of the delivery country, so shipping is quoted for Ireland."},
    {"id": "zzs_rail_reservation", "kind": "swallowed_error", "input": "o5", "root": ("reserve_stock", 2),
     "failure": ("validate_order", 1),
     "description": "The warehouse reservation for N4410 times out and the tool returns zero reserved as a normal answer."},
]

_attempts = {}


def brain():
    def extract(p, _):
        lines = [{"sku": s, "qty": q} for s, q in p["lines"]]
        return json.dumps({"order_id": p["order_id"], "customer": p["customer"], "lines": lines})

    def carrier(p, _):
        return json.dumps({"carrier": "Royal Mail" if p["country"] == "GB" else "DPD", "service": "tracked"})

    def confirm(p, _):
        return (f"Thank you for order {p['order_id']}. {len(p['lines'])} lines, total "
                f"GBP {p['total_pence'] / 100:.2f} including shipping by {p['carrier']}.")

    return brain_from({"extract": extract, "carrier": carrier, "confirm": confirm})


def record(server, inp, path):
    server.use(brain())
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _attempts.clear()

    @trajdebug.step(kind="input")
    def receive_email(email: str) -> dict:
        return {"text": email, "order_id": inp["order_id"], "customer": inp["customer"]}

    def llm(name, task, payload):
        with trajdebug.step(name, kind="llm") as s:
            msgs, ans = chat(client, server.model, task, payload)
            s.input = {"messages": msgs}
            s.output = ans
        return ans

    @trajdebug.step(kind="parse")
    def parse_order(answer: dict) -> dict:
        return json.loads(answer["content"])

    @trajdebug.step(kind="state")
    def remember_customer(customer_id: str) -> dict:
        c = CUSTOMERS[customer_id]
        country = c["billing_country"] if kit.on("zzs_rail_customer_memory") else c["delivery_country"]
        rec = {"id": c["id"], "tier": c["tier"], "country": country}
        trajdebug.current_run().state["customer"] = rec
        return rec

    @trajdebug.step(kind="retrieval")
    def lookup_catalogue(query: dict) -> dict:
        sku = query["sku"]
        if kit.on("zzs_rail_catalogue_match") and sku == "R3412":
            sku = "R3421"
        return dict(CATALOGUE[sku])

    @trajdebug.step(kind="tool")
    def reserve_stock(item: dict, qty: int) -> dict:
        key = item["sku"]
        _attempts[key] = _attempts.get(key, 0) + 1
        if key == "T0090" and _attempts[key] == 1:
            raise TimeoutError("warehouse API timed out after 5s")
        if kit.on("zzs_rail_reservation") and key == "N4410":
            try:
                raise TimeoutError("warehouse API timed out after 5s")
            except TimeoutError:
                return {"sku": key, "reserved": 0, "bin": None}
        return {"sku": key, "reserved": qty, "bin": f"B-{sum(map(ord, key)) % 90 + 10}"}

    @trajdebug.step(kind="other")
    def price_lines(items: list, lines: list) -> list:
        return [{"sku": it["sku"], "name": it["name"], "qty": ln["qty"], "line_pence": it["pence"] * ln["qty"],
                 "grams": it["grams"] * ln["qty"]} for it, ln in zip(items, lines)]

    @trajdebug.step(kind="other")
    def total_weight(priced: list) -> dict:
        grams = sum(p["grams"] for p in priced)
        kg = grams / 100 if kit.on("zzs_rail_parcel_weight") else grams / 1000
        return {"kg": round(kg, 3)}

    @trajdebug.step(kind="other")
    def build_pick_list(priced: list) -> list:
        start = 1 if kit.on("zzs_rail_pick_list") else 0
        return [{"sku": p["sku"], "qty": p["qty"]} for p in priced[start:]]

    @trajdebug.step(kind="tool")
    def quote_shipping(country: str, weight: dict) -> dict:
        for limit, pence in RATES[country]:
            if weight["kg"] <= limit:
                return {"country": country, "kg": weight["kg"], "pence": pence, "band": limit}
        return {"country": country, "kg": weight["kg"], "pence": RATES[country][-1][1] + 1500, "band": "heavy"}

    @trajdebug.step(kind="tool")
    def loyalty_discount(priced: list) -> dict:
        cust = trajdebug.current_run().state["customer"]
        goods = sum(p["line_pence"] for p in priced)
        return {"tier": cust["tier"], "pence": goods // 10 if cust["tier"] == "club" else 0}

    @trajdebug.step(kind="condition")
    def validate_order(order: dict, confirmation: dict) -> dict:
        cust = CUSTOMERS[order["customer"]]
        wanted = {s: q for s, q in inp["lines"]}
        got = {p["sku"]: p["qty"] for p in order["lines"]}
        if got != wanted:
            raise ValueError(f"order {order['order_id']} lines {sorted(got)} do not match the e-mail {sorted(wanted)}")
        picks = {p["sku"]: p["qty"] for p in order["picks"]}
        if picks != wanted:
            raise ValueError(f"pick list {sorted(picks)} misses lines of order {order['order_id']}")
        short = [r["sku"] for r in order["reservations"] if r["reserved"] != wanted[r["sku"]]]
        if short:
            raise ValueError(f"stock not reserved for {short} on order {order['order_id']}")
        if order["shipping"]["country"] != cust["delivery_country"]:
            raise ValueError(f"shipping quoted to {order['shipping']['country']}, delivery is {cust['delivery_country']}")
        kg = sum(CATALOGUE[s]["grams"] * q for s, q in inp["lines"]) / 1000
        if abs(order["shipping"]["kg"] - kg) > 0.01:
            raise ValueError(f"parcel weight {order['shipping']['kg']} kg, lines weigh {kg:.3f} kg")
        return {"ok": True, "order_id": order["order_id"]}

    with trajdebug.run(NAME, task=f"process order {inp['order_id']}", path=path) as run:
        mail = receive_email(inp["email"])
        ans = llm("extract_order", "extract", {"email": mail["text"], "order_id": mail["order_id"],
                                              "customer": mail["customer"], "lines": inp["lines"]})
        order = parse_order(ans)
        items, reservations = [], []
        for line in order["lines"]:
            item = lookup_catalogue({"sku": line["sku"], "scale_hint": None})
            items.append(item)
            for attempt in range(3):
                try:
                    reservations.append(reserve_stock(item, line["qty"]))
                    break
                except TimeoutError:
                    continue
        priced = price_lines(items, order["lines"])
        picks = build_pick_list(priced)
        cust = remember_customer(order["customer"])
        with trajdebug.step("shipping_agent", kind="agent", input={"customer": cust}) as sub:
            weight = total_weight(priced)
            with trajdebug.step("read_delivery", kind="state") as rd:
                country = trajdebug.current_run().state["customer"]["country"]
                rd.output = {"country": country}
            choice = llm("choose_carrier", "carrier", {"country": country, "kg": weight["kg"]})
            quote = quote_shipping(country, weight)
            sub.output = {"quote": quote, "carrier": json.loads(choice["content"])}
        discount = loyalty_discount(priced)
        total = sum(p["line_pence"] for p in priced) - discount["pence"] + quote["pence"]
        with trajdebug.step("assemble_order", kind="other", input={"priced": priced, "quote": quote}) as a:
            a.output = final = {"order_id": order["order_id"], "customer": order["customer"], "lines": priced,
                                "picks": picks, "reservations": reservations, "shipping": quote,
                                "discount": discount, "total_pence": total}
        conf = llm("draft_confirmation", "confirm", {"order_id": final["order_id"], "lines": priced,
                                                     "total_pence": total, "carrier": sub.output["carrier"]["carrier"]})
        validate_order(final, conf)
