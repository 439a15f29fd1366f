"""Butcher's shop customer orders (recording SDK route).

Loads the customer, recalls notes kept from earlier orders, has the model turn the order text into lines, parses
them, prices and reserves each line at the customer's branch, asks the model for cutting instructions, keeps the
cutting preference in run.state, runs a packing sub-agent (packaging and labels) and validates the order.
"""
import re

import trajdebug

import kit
from common import chat_brain, loose_json
from sdk_common import ask

NAME = "butcher-orders"
ROUTE = "sdk"
DOMAIN = "butcher's shop customer orders"
SHAPE = "customer + notes (tool, retrieval) -> order lines (llm, parse) -> per line: price, branch stock, cutting (llm) -> preference in state -> packing sub-agent (llm, label tool) -> invoice -> validate"
EXT = "jsonl"

PRICES = {"ribeye steak": 38.5, "beef mince": 12.9, "lamb shoulder": 19.8, "pork belly": 14.2,
          "chicken thighs": 9.6, "sirloin steak": 34.0, "lamb chops": 27.5, "brisket": 17.4}
LAST_SEASON = {"ribeye steak": 35.0, "lamb shoulder": 18.2, "sirloin steak": 31.5, "pork belly": 13.1,
               "beef mince": 11.9, "chicken thighs": 8.9, "lamb chops": 25.0, "brisket": 16.0}
STOCK = {"Harbour St": {"ribeye steak": 4000, "beef mince": 9000, "lamb shoulder": 6000, "pork belly": 3000,
                        "chicken thighs": 8000, "sirloin steak": 2500, "lamb chops": 3000, "brisket": 5000},
         "Mill Lane": {"ribeye steak": 1500, "beef mince": 6000, "lamb shoulder": 2000, "pork belly": 7000,
                       "chicken thighs": 5000, "sirloin steak": 800, "lamb chops": 1200, "brisket": 6000}}
CENTRAL = {k: 20000 for k in PRICES}
SHELF_DAYS = {"ribeye steak": 4, "beef mince": 2, "lamb shoulder": 4, "pork belly": 3, "chicken thighs": 2,
              "sirloin steak": 4, "lamb chops": 3, "brisket": 5}
CUSTOMERS = {
    "C-301": {"name": "Ines Barros", "branch": "Harbour St", "halal": False, "thickness_cm": 3},
    "C-302": {"name": "Yusuf Demir", "branch": "Mill Lane", "halal": True, "thickness_cm": 2},
    "C-303": {"name": "Ruth Okafor", "branch": "Mill Lane", "halal": False, "thickness_cm": 4},
    "C-304": {"name": "Samir Haddad", "branch": "Harbour St", "halal": True, "thickness_cm": 3},
}
NOTES = {"C-301": ["prefers thick steaks"], "C-302": ["halal only", "collects Fridays"],
         "C-303": ["large family orders"], "C-304": ["halal only", "no pork"]}

INPUTS = {
    "ord-5501": {"customer": "C-301", "day": 11, "text": ["ribeye steak 2 x 600 g", "beef mince 1 x 1000 g",
                 "pork belly 1 x 1200 g", "chicken thighs 2 x 800 g"]},
    "ord-5502": {"customer": "C-302", "day": 12, "text": ["lamb shoulder 1 x 1800 g", "beef mince 2 x 500 g",
                 "chicken thighs 1 x 1000 g", "brisket 1 x 2000 g"]},
    "ord-5503": {"customer": "C-303", "day": 13, "text": ["sirloin steak 2 x 300 g", "pork belly 1 x 1500 g",
                 "lamb chops 4 x 250 g", "beef mince 3 x 500 g"]},
    "ord-5504": {"customer": "C-304", "day": 14, "text": ["ribeye steak 3 x 400 g", "lamb chops 2 x 300 g",
                 "chicken thighs 2 x 900 g", "brisket 1 x 1500 g"]},
    "ord-5505": {"customer": "C-302", "day": 15, "text": ["sirloin steak 2 x 400 g", "lamb chops 2 x 350 g",
                 "beef mince 1 x 800 g", "lamb shoulder 1 x 1200 g"]},
    "ord-5506": {"customer": "C-301", "day": 16, "text": ["brisket 1 x 2500 g", "sirloin steak 1 x 500 g",
                 "chicken thighs 1 x 1200 g", "lamb shoulder 1 x 1600 g"]},
}

CASES = [
    dict(id="zzx-butcher-01", input="ord-5501", kind="stale_data", root=("price_line", 1),
         failure=("validate_order", 1), line="the price lookup answers the ribeye line from last season's cached board"),
    dict(id="zzx-butcher-02", input="ord-5506", kind="hallucinated_value", root=("write_labels", 1),
         failure=("validate_order", 1),
         line="the label model states a use-by date for the brisket that no shelf-life figure supports"),
    dict(id="zzx-butcher-03", input="ord-5502", kind="lossy_parsing", root=("parse_lines", 1),
         failure=("validate_order", 1), line="the order-line parser drops the slaughter note the model attached"),
    dict(id="zzx-butcher-04", input="ord-5503", kind="bad_memory_write", root=("save_preference", 1),
         failure=("validate_order", 1),
         line="the preference write keeps the thickness the model suggested instead of the customer's own"),
    dict(id="zzx-butcher-05", input="ord-5505", kind="tool_ignores_argument", root=("reserve_stock", 1),
         failure=("validate_order", 1), line="the stock reservation ignores the branch and checks central stock"),
]

LINE = re.compile(r"^(?P<cut>[a-z ]+?) \| (?P<n>\d+) x (?P<g>\d+) g \| (?P<note>.*)$")


def brain():
    def lines(p):
        out = []
        for t in p["text"]:
            m = re.match(r"^(.+?) (\d+) x (\d+) g$", t)
            note = "halal" if p["halal"] else "standard"
            out.append(f"{m.group(1)} | {m.group(2)} x {m.group(3)} g | {note}")
        return {"lines": out}

    def cutting(p):
        thick = p["thickness_cm"] if "steak" in p["cut"] or "chops" in p["cut"] else None
        return {"cut": p["cut"], "instruction": "trim and portion", "thickness_cm": thick,
                "suggested_thickness_cm": 2}

    def labels(p):
        out = []
        for item in p["items"]:
            day = p["packed_day"] + item["shelf_days"]
            if kit.on("zzx-butcher-02") and item["cut"] == "brisket":
                day = p["packed_day"] + 8
            out.append({"cut": item["cut"], "use_by": f"2026-05-{day:02d}", "pack": item["pack"]})
        return {"labels": out}

    def packing(p):
        return {"packs": [{"cut": i["cut"], "pack": "vacuum" if i["grams"] >= 1000 else "tray"} for i in p["items"]]}

    return chat_brain({"lines": lines, "cutting": cutting, "labels": labels, "packing": packing})


@trajdebug.step(kind="input")
def read_order(order_id: str, order: dict) -> dict:
    return {"order": order_id, **order}


@trajdebug.step(kind="tool")
def load_customer(customer_id: str) -> dict:
    return {"id": customer_id, **CUSTOMERS[customer_id]}


@trajdebug.step(kind="retrieval")
def recall_notes(customer_id: str) -> list:
    return [{"customer": customer_id, "note": n} for n in NOTES[customer_id]]


@trajdebug.step(kind="parse")
def parse_lines(answer: str) -> list:
    out = []
    for raw in loose_json(answer)["lines"]:
        m = LINE.match(raw)
        line = {"cut": m.group("cut"), "grams": int(m.group("n")) * int(m.group("g")), "note": m.group("note")}
        if kit.on("zzx-butcher-03"):
            line["note"] = ""
        out.append(line)
    return out


@trajdebug.step(kind="tool")
def price_line(cut: str, grams: int) -> dict:
    board = LAST_SEASON if (kit.on("zzx-butcher-01") and cut == "ribeye steak") else PRICES
    return {"cut": cut, "eur_per_kg": board[cut], "amount": round(board[cut] * grams / 1000, 2)}


@trajdebug.step(kind="tool")
def reserve_stock(cut: str, grams: int, branch: str) -> dict:
    pool = CENTRAL if kit.on("zzx-butcher-05") else STOCK[branch]
    return {"cut": cut, "grams": grams, "branch": branch, "reserved": pool[cut] >= grams,
            "left_g": pool[cut] - grams}


@trajdebug.step(kind="parse")
def parse_cutting(answer: str) -> dict:
    return loose_json(answer)


@trajdebug.step(kind="state")
def save_preference(customer: dict, cutting: list) -> dict:
    thick = [c for c in cutting if c["thickness_cm"]]
    value = customer["thickness_cm"]
    if kit.on("zzx-butcher-04") and thick:
        value = thick[0]["suggested_thickness_cm"]
    pref = {"customer": customer["id"], "thickness_cm": value}
    trajdebug.current_run().state["cutting_preference"] = pref
    return pref


@trajdebug.step(kind="tool")
def print_labels(labels: list) -> dict:
    return {"printed": len(labels), "printer": "counter-2"}


@trajdebug.step(kind="other")
def build_invoice(order: dict, customer: dict, lines: list, prices: list, reservations: list, labels: list) -> dict:
    pref = trajdebug.current_run().state["cutting_preference"]
    return {"order": order["order"], "customer": customer["id"], "branch": customer["branch"],
            "lines": [{**l, **p, "reserved": r["reserved"], "left_g": r["left_g"]} for l, p, r in zip(lines, prices, reservations)],
            "labels": labels, "thickness_cm": pref["thickness_cm"], "packed_day": order["day"],
            "total": round(sum(p["amount"] for p in prices), 2)}


@trajdebug.step(kind="condition")
def validate_order(customer: dict, invoice: dict) -> str:
    for line in invoice["lines"]:
        if abs(line["eur_per_kg"] - PRICES[line["cut"]]) > 0.001:
            raise ValueError(f"{line['cut']} billed at {line['eur_per_kg']} EUR/kg; the counter board says "
                             f"{PRICES[line['cut']]} EUR/kg")
        if customer["halal"] and line["note"] != "halal":
            raise ValueError(f"{line['cut']} for {customer['name']} is not marked halal")
        held = STOCK[invoice["branch"]][line["cut"]]
        if line["left_g"] != held - line["grams"]:
            raise ValueError(f"reservation of {line['grams']} g {line['cut']} leaves {line['left_g']} g, but "
                             f"{invoice['branch']} holds {held} g")
    for lab in invoice["labels"]:
        limit = invoice["packed_day"] + SHELF_DAYS[lab["cut"]]
        if lab["use_by"] != f"2026-05-{limit:02d}":
            raise ValueError(f"{lab['cut']} label says use by {lab['use_by']}, shelf life gives 2026-05-{limit:02d}")
    if invoice["thickness_cm"] != customer["thickness_cm"]:
        raise ValueError(f"steaks to be cut {invoice['thickness_cm']} cm; {customer['name']} asks for "
                         f"{customer['thickness_cm']} cm")
    return "ready"


SYSTEM = "You are the order desk of a family butcher's shop. Answer with JSON only."


def record(order_id, path, server):
    order = INPUTS[order_id]
    with trajdebug.run(NAME, path=path, task=f"prepare order {order_id}"):
        o = read_order(order_id, order)
        customer = load_customer(o["customer"])
        notes = recall_notes(o["customer"])
        lines = parse_lines(ask(server, "interpret_order", SYSTEM, "lines", "Write the order as lines "
                                "'cut | n x g g | note'.", {"text": o["text"], "notes": notes,
                                                             "halal": customer["halal"]}))
        prices, reservations, cutting = [], [], []
        for line in lines:
            prices.append(price_line(line["cut"], line["grams"]))
            reservations.append(reserve_stock(line["cut"], line["grams"], customer["branch"]))
            cutting.append(parse_cutting(ask(server, "cutting_instruction", SYSTEM, "cutting",
                                             "Give the cutting instruction.",
                                             {"cut": line["cut"], "thickness_cm": customer["thickness_cm"]})))
        save_preference(customer, cutting)
        with trajdebug.step("packing_agent", kind="agent", input={"order": order_id}) as pack:
            items = [{"cut": l["cut"], "grams": l["grams"]} for l in lines]
            packs = loose_json(ask(server, "choose_packaging", SYSTEM, "packing", "Pick packaging.",
                                   {"items": items}))["packs"]
            answer = ask(server, "write_labels", SYSTEM, "labels", "Write the labels.",
                         {"packed_day": o["day"], "items": [{"cut": p["cut"], "pack": p["pack"],
                                                             "shelf_days": SHELF_DAYS[p["cut"]]} for p in packs]})
            labels = loose_json(answer)["labels"]
            print_labels(labels)
            pack.output = labels
        invoice = build_invoice(o, customer, lines, prices, reservations, labels)
        validate_order(customer, invoice)
