"""Button maker's wholesale quotes (sdk route): model extraction, per-line loop, retried stock API, run.state terms."""
import json

from openai import OpenAI

import trajdebug

NAME = "button-wholesale-quotes"
ROUTE = "sdk"
DOMAIN = "button maker's wholesale"
SHAPE = "llm extract -> parse -> per line: catalogue, stock (retried), price -> terms in run.state -> approve"
SWITCH = set()

CATALOGUE = {
    "CR-18": {"desc": "corozo 18L four-hole", "price_per_gross": 21.60, "colours": ["natural", "slate"]},
    "HN-24": {"desc": "horn 24L shank", "price_per_gross": 64.80, "colours": ["dark", "blonde"]},
    "MP-14": {"desc": "mother of pearl 14L", "price_per_gross": 43.20, "colours": ["white"]},
    "BR-30": {"desc": "brass 30L blazer", "price_per_gross": 86.40, "colours": ["gilt", "antique"]},
    "PL-16": {"desc": "polyester 16L shirt", "price_per_gross": 5.76, "colours": ["white", "navy", "black"]},
}
STOCK = {"CR-18": 90, "HN-24": 40, "MP-14": 25, "BR-30": 30, "PL-16": 600}
TIERS = [("trade", 0.0), ("bronze", 0.05), ("silver", 0.08), ("gold", 0.12)]
ACCOUNTS = {"Larkin Tailoring": "silver", "Okafor Shirts": "bronze", "Veldt Outerwear": "bronze",
            "Mireille Couture": "trade", "Haskett Uniforms": "silver"}
INPUTS = [
    {"buyer": "Larkin Tailoring", "po_ceiling": 2400.0,
     "email": "Please quote 12 gross CR-18 natural and 6 gross HN-24 dark.",
     "lines": [["CR-18", "natural", 12], ["HN-24", "dark", 6]]},
    {"buyer": "Okafor Shirts", "po_ceiling": 1150.0,
     "email": "We need 120 gross PL-16 white, 40 gross PL-16 navy and 4 gross MP-14 white.",
     "lines": [["PL-16", "white", 120], ["PL-16", "navy", 40], ["MP-14", "white", 4]]},
    {"buyer": "Veldt Outerwear", "po_ceiling": 3100.0,
     "email": "Quote 20 gross BR-30 antique, 10 gross HN-24 blonde, 8 gross CR-18 slate.",
     "lines": [["BR-30", "antique", 20], ["HN-24", "blonde", 10], ["CR-18", "slate", 8]]},
    {"buyer": "Mireille Couture", "po_ceiling": 4000.0,
     "email": "Kindly quote 15 gross MP-14 white and 36 gross BR-30 gilt; ship what you hold, backorder the rest.",
     "lines": [["MP-14", "white", 15], ["BR-30", "gilt", 36]]},
    {"buyer": "Haskett Uniforms", "po_ceiling": 3600.0,
     "email": "Quote 25 gross BR-30 gilt, 30 gross CR-18 natural, 60 gross PL-16 black, 5 gross HN-24 dark.",
     "lines": [["BR-30", "gilt", 25], ["CR-18", "natural", 30], ["PL-16", "black", 60], ["HN-24", "dark", 5]]},
]
CASES = [
    {"id": "zzzu_buttons_quantity", "input": 0, "switch": "model_quantity", "kind": "hallucinated_value",
     "root": ("extract_order_lines", 1), "failure": "approve_quote",
     "desc": "The model read 6 gross of HN-24 as 60 gross, a quantity the buyer never wrote, and the quote then broke the PO ceiling."},
    {"id": "zzzu_buttons_perpiece", "input": 2, "switch": "per_dozen", "kind": "unit_error",
     "root": ("price_line", 1), "failure": "approve_quote",
     "desc": "The brass line was priced per dozen from a per-gross price, twelve times over, so the quote broke the PO ceiling."},
    {"id": "zzzu_buttons_colour", "input": 1, "switch": "drop_colour", "kind": "lossy_parsing",
     "root": ("parse_order_lines", 1), "failure": "catalogue_lookup",
     "desc": "Parsing dropped the colour of the second line, so the catalogue had no entry for a blank colour."},
    {"id": "zzzu_buttons_tier", "input": 4, "switch": "tier_shift", "kind": "bad_memory_write",
     "root": ("record_account_terms", 1), "failure": "approve_quote",
     "desc": "The account terms were saved with the next tier's discount (gold 12% for a silver account), pushing the margin under the floor."},
    {"id": "zzzu_buttons_gateway", "input": 3, "switch": "swallow_gateway", "kind": "swallowed_error",
     "root": ("stock_level", 2), "failure": "reserve_stock",
     "desc": "The stock step caught the warehouse gateway's timeout and answered from last month's count, so the reservation found too few."},
]

LAST_MONTH = {"CR-18": 200, "HN-24": 90, "MP-14": 60, "BR-30": 45, "PL-16": 900}


def policy(request):
    msgs = request.body["messages"]
    text = msgs[-1]["content"]
    req = json.loads(text.split("\n", 1)[1])
    lines = [list(x) for x in req["lines"]]
    if "model_quantity" in SWITCH and len(lines) > 1:
        lines[1][2] = lines[1][2] * 10
    return "\n".join(f"{sku} | {colour} | {qty} gross" for sku, colour, qty in lines)


_calls = {"n": 0}


@trajdebug.step(kind="input")
def receive_enquiry(buyer: str, email: str) -> dict:
    return {"buyer": buyer, "email": email}


_llm = {}


@trajdebug.step(kind="llm")
def extract_order_lines(messages: list) -> str:
    r = _llm["client"].chat.completions.create(model=_llm["model"], messages=messages)
    return r.choices[0].message.content


def ask_for_lines(enquiry, lines):
    prompt = "List the order lines as SKU | colour | quantity.\n" + json.dumps({"email": enquiry["email"], "lines": lines})
    return extract_order_lines([{"role": "system", "content": "You take wholesale button enquiries."},
                 {"role": "user", "content": prompt}])


@trajdebug.step(kind="parse")
def parse_order_lines(text: str) -> list:
    out = []
    for i, row in enumerate(text.splitlines()):
        sku, colour, qty = [p.strip() for p in row.split("|")]
        if "drop_colour" in SWITCH and i == 1:
            colour = ""
        out.append({"sku": sku, "colour": colour, "gross": int(qty.split()[0])})
    return out


@trajdebug.step(kind="tool")
def catalogue_lookup(sku: str, colour: str) -> dict:
    item = CATALOGUE[sku]
    if colour not in item["colours"]:
        raise KeyError(f"no catalogue entry for {sku} in colour '{colour}'")
    return {"sku": sku, **item}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def warehouse_gateway(sku: str) -> dict:
    _calls["n"] += 1
    if "swallow_gateway" in SWITCH and sku == "BR-30":
        raise TimeoutError("warehouse gateway timed out after 10 s")
    if _calls["n"] == 1 and sku in ("BR-30", "PL-16"):
        raise ConnectionError("warehouse gateway did not answer")
    return {"sku": sku, "on_hand_gross": STOCK[sku]}


@trajdebug.step(kind="other")
def stock_level(sku: str) -> dict:
    try:
        return warehouse_gateway(sku)
    except TimeoutError:
        return {"sku": sku, "on_hand_gross": LAST_MONTH[sku]}


@trajdebug.step(kind="other")
def price_line(item: dict, gross: int) -> dict:
    unit = item["price_per_gross"]
    if "per_dozen" in SWITCH and item["sku"] == "BR-30":
        unit = unit * 12
    return {"sku": item["sku"], "gross": gross, "line_total": round(unit * gross, 2)}


@trajdebug.step(kind="state")
def record_account_terms(buyer: str) -> dict:
    tier = ACCOUNTS[buyer]
    names = [t[0] for t in TIERS]
    i = names.index(tier)
    if "tier_shift" in SWITCH:
        i = i + 1
    terms = {"tier": tier, "discount": TIERS[i][1], "net_days": 30}
    trajdebug.current_run().state["terms"] = terms
    return terms


@trajdebug.step(kind="tool")
def reserve_stock(sku: str, gross: int, on_hand_gross: int) -> dict:
    if gross > STOCK[sku]:
        raise RuntimeError(f"warehouse holds {STOCK[sku]} gross of {sku}; cannot reserve {gross}")
    return {"sku": sku, "reserved": gross}


@trajdebug.step(kind="tool")
def backorder(sku: str, gross: int) -> dict:
    return {"sku": sku, "backordered": gross, "weeks": 6}


@trajdebug.step(kind="other")
def quote_total(priced: list) -> dict:
    terms = trajdebug.current_run().state["terms"]
    gross_total = round(sum(p["line_total"] for p in priced), 2)
    net = round(gross_total * (1 - terms["discount"]), 2)
    cost = round(sum(p["line_total"] for p in priced) * 0.885, 2)
    return {"list": gross_total, "net": net, "cost": cost, "discount": terms["discount"]}


@trajdebug.step(kind="condition")
def approve_quote(quote: dict, po_ceiling: float) -> dict:
    if quote["net"] > po_ceiling:
        raise ValueError(f"quote {quote['net']:.2f} is above the PO ceiling {po_ceiling:.2f}")
    if quote["net"] - quote["cost"] < 0:
        raise ValueError(f"net {quote['net']:.2f} is under the cost floor {quote['cost']:.2f}")
    return {"approved": True, "net": quote["net"]}


@trajdebug.step(kind="output")
def send_quote(buyer: str, quote: dict) -> str:
    return f"Quote for {buyer}: {quote['net']:.2f} GBP net, {quote['discount'] * 100:.0f}% account discount."


def run_one(server, inp, path):
    _calls["n"] = 0
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with trajdebug.run(NAME, task=f"quote for {inp['buyer']}", path=path):
            enq = receive_enquiry(inp["buyer"], inp["email"])
            _llm.update(client=client, model=server.model)
            text = ask_for_lines(enq, inp["lines"])
            lines = parse_order_lines(text)
            priced = []
            for ln in lines:
                item = catalogue_lookup(ln["sku"], ln["colour"])
                stock = stock_level(ln["sku"])
                take = min(ln["gross"], stock["on_hand_gross"])
                reserve_stock(ln["sku"], take, stock["on_hand_gross"])
                if take < ln["gross"]:
                    backorder(ln["sku"], ln["gross"] - take)
                priced.append(price_line(item, ln["gross"]))
            record_account_terms(inp["buyer"])
            q = quote_total(priced)
            approve_quote(q, inp["po_ceiling"])
            send_quote(inp["buyer"], q)
    except Exception as e:
        import os
        if os.environ.get("ZU_DEBUG"):
            print("raised:", repr(e))
