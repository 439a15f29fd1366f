"""Kazoo factory orders (sdk route): a short desk pipeline. An e-mail is read by the model, its lines
parsed, the draft kept in run.state, stock checked in parallel threads, priced, converted, and the
invoice document checked against the order schema before it is sent."""

from __future__ import annotations

import json
import re
import time

import trajdebug
from openai import OpenAI

NAME = "kazoo-order-desk"
ROUTE = "sdk"
DOMAIN = "a kazoo factory's orders"
SHAPE = "short linear desk: model extraction, line parser, memory lookup + run.state draft, parallel stock checks in threads, price + FX tools, invoice schema check"
SWITCH = None

CATALOGUE = {  # list prices per kazoo, GBP and EUR
    "KZ-CLASSIC": (0.42, 0.49), "KZ-BRASS": (1.85, 2.16), "KZ-WOOD": (1.10, 1.28), "KZ-BASS": (2.40, 2.80),
    "KZ-MINI": (0.30, 0.35),
}
STOCK = {"Sheffield": {"KZ-CLASSIC": 50000, "KZ-BRASS": 4000, "KZ-WOOD": 6000, "KZ-BASS": 900, "KZ-MINI": 80000},
         "Rotterdam": {"KZ-CLASSIC": 20000, "KZ-BRASS": 2500, "KZ-WOOD": 3000, "KZ-BASS": 1200, "KZ-MINI": 30000}}
GBP_EUR = 1.167
MEMORY = {
    "buyer@partyhaus.de": {"customer": "Partyhaus Köln", "account_currency": "EUR", "warehouse": "Rotterdam",
                           "last_order": {"ref": "PO-7710", "currency": "GBP"}},
    "orders@brightonjokes.co.uk": {"customer": "Brighton Joke Shop", "account_currency": "GBP", "warehouse": "Sheffield",
                                   "last_order": {"ref": "BJ-330", "currency": "GBP"}},
    "inkoop@feestwinkel.nl": {"customer": "Feestwinkel Utrecht", "account_currency": "EUR", "warehouse": "Rotterdam",
                              "last_order": {"ref": "FW-1902", "currency": "EUR"}},
    "stores@kazooclub.ie": {"customer": "Dublin Kazoo Club", "account_currency": "EUR", "warehouse": "Sheffield",
                            "last_order": {"ref": "DKC-77", "currency": "GBP"}},
    "band@marchingleeds.uk": {"customer": "Leeds Marching Kazoos", "account_currency": "GBP", "warehouse": "Sheffield",
                              "last_order": {"ref": "LMK-12", "currency": "GBP"}},
}

INPUTS = [
    {"from": "buyer@partyhaus.de", "subject": "Karneval order",
     "body": "Please send:\n- 1,200 x KZ-CLASSIC\n- 150 x KZ-BRASS\nto Köln by 20 Jan."},
    {"from": "orders@brightonjokes.co.uk", "subject": "restock",
     "body": "Restock please:\n- 300 x KZ-WOOD\n- 2,500 x KZ-MINI\n- 40 x KZ-BASS"},
    {"from": "inkoop@feestwinkel.nl", "subject": "bestelling",
     "body": "Order:\n- 600 x KZ-BRASS\n- 1,000 x KZ-CLASSIC"},
    {"from": "stores@kazooclub.ie", "subject": "club kit",
     "body": "For the club:\n- 80 x KZ-BASS\n- 120 x KZ-WOOD"},
    {"from": "band@marchingleeds.uk", "subject": "parade",
     "body": "Parade order:\n- 3,400 x KZ-CLASSIC\n- 60 x KZ-BRASS"},
]

CASES = [
    {"id": "zzzk-kazoo-1", "input": 0, "switch": "thousands_cut", "kind": "lossy_parsing",
     "root": ("parse_order_lines", 1), "failure": ("check_invoice_schema", 1),
     "description": "The line parser reads the quantity '1,200' as 1, dropping everything after the thousands separator."},
    {"id": "zzzk-kazoo-2", "input": 3, "switch": "previous_order_currency", "kind": "bad_memory_write",
     "root": ("remember_draft", 1), "failure": ("check_invoice_schema", 1),
     "description": "The order draft is saved with the currency of the customer's previous order (GBP) instead of the account's EUR."},
    {"id": "zzzk-kazoo-3", "input": 2, "switch": "gold_kazoo", "kind": "hallucinated_value",
     "root": ("extract_order", 1), "failure": ("price_lines", 1),
     "description": "The model's extraction names a product code KZ-GOLD that the e-mail never mentions, in place of KZ-BRASS."},
    {"id": "zzzk-kazoo-4", "input": 4, "switch": "first_qty_everywhere", "kind": "wrong_tool_args",
     "root": ("reserve_stock", 2), "failure": ("check_invoice_schema", 1),
     "description": "The second stock reservation is called with the first line's quantity (3400) rather than its own 60."},
    {"id": "zzzk-kazoo-5", "input": 1, "switch": "rate_service_down", "kind": "swallowed_error",
     "root": ("fx_rate", 1), "failure": ("check_invoice_schema", 1),
     "description": "The exchange-rate lookup hides a rate service timeout and answers a rate of 1.0 as if it were the day's rate."},
]


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    lines = [{"sku": sku, "qty": qty} for qty, sku in re.findall(r"- ([\d,]+) x (KZ-[A-Z]+)", prompt)]
    if SWITCH == "gold_kazoo":
        for line in lines:
            if line["sku"] == "KZ-BRASS":
                line["sku"] = "KZ-GOLD"
    return json.dumps({"lines": lines, "notes": "none"})


@trajdebug.step(kind="input")
def read_email(email: dict) -> dict:
    return email


@trajdebug.step(kind="tool")
def recall_customer(address: str) -> dict:
    return json.loads(json.dumps(MEMORY[address]))


@trajdebug.step(kind="llm")
def extract_order(messages: list) -> str:
    reply = _CLIENT.chat.completions.create(model=_MODEL, messages=messages)
    return reply.choices[0].message.content


@trajdebug.step(kind="parse")
def parse_order_lines(text: str) -> list:
    lines = []
    for line in json.loads(text)["lines"]:
        raw = line["qty"]
        qty = int(raw.split(",")[0]) if SWITCH == "thousands_cut" else int(raw.replace(",", ""))
        lines.append({"sku": line["sku"], "qty": qty})
    return lines


@trajdebug.step(kind="state")
def remember_draft(customer: dict, lines: list) -> dict:
    currency = customer["account_currency"]
    if SWITCH == "previous_order_currency":
        currency = customer["last_order"]["currency"]
    draft = {"customer": customer["customer"], "currency": currency, "warehouse": customer["warehouse"], "lines": lines}
    trajdebug.current_run().state["draft"] = draft
    return draft


@trajdebug.step(kind="tool")
def reserve_stock(warehouse: str, sku: str, qty: int) -> dict:
    time.sleep(0.02)
    have = STOCK[warehouse].get(sku, 0)
    return {"sku": sku, "reserved": min(qty, have), "warehouse": warehouse}


def _staggered(i, warehouse, sku, qty):
    time.sleep(0.004 * i)  # calls start in line order; each holds the warehouse API ~20 ms, so they overlap
    return reserve_stock(warehouse, sku, qty)


@trajdebug.step(kind="tool")
def price_lines(lines: list, currency: str) -> list:
    col = 0 if currency == "GBP" else 1
    out = []
    for line in lines:
        if line["sku"] not in CATALOGUE:
            raise KeyError(f"catalogue has no product {line['sku']}")
        out.append({**line, "unit": CATALOGUE[line["sku"]][col], "currency": currency})
    return out


@trajdebug.step(kind="tool")
def fx_rate(pair: str) -> dict:
    try:
        if SWITCH == "rate_service_down":
            raise TimeoutError("rate service did not answer in 2 s")
        rate = GBP_EUR
    except TimeoutError:
        rate = 1.0
    return {"pair": pair, "rate": rate}


@trajdebug.step(kind="other")
def build_invoice(draft: dict, priced: list, reserved: list, fx: dict) -> dict:
    total = round(sum(p["qty"] * p["unit"] for p in priced), 2)
    return {"customer": draft["customer"], "currency": draft["currency"], "lines": priced, "reserved": reserved,
            "total": total, "total_eur": round(total * (fx["rate"] if draft["currency"] == "GBP" else 1.0), 2)}


@trajdebug.step(kind="condition")
def check_invoice_schema(invoice: dict, account: dict, ordered: list) -> bool:
    if invoice["currency"] != account["account_currency"]:
        raise ValueError(f"invoice currency {invoice['currency']} differs from account currency {account['account_currency']}")
    if [line["qty"] for line in invoice["lines"]] != [r["reserved"] for r in invoice["reserved"]]:
        raise ValueError(f"reserved {[r['reserved'] for r in invoice['reserved']]} for ordered {[line['qty'] for line in invoice['lines']]}")
    for line in invoice["lines"]:
        if line["qty"] < 10:
            raise ValueError(f"{line['sku']}: quantity {line['qty']} below the trade minimum of 10")
    eur_list = round(sum(line["qty"] * CATALOGUE[line["sku"]][1] for line in invoice["lines"]), 2)
    if abs(invoice["total_eur"] - eur_list) > 0.05 * eur_list:
        raise ValueError(f"total {invoice['total_eur']} EUR is more than 5% off the EUR list total {eur_list}")
    return True


@trajdebug.step(kind="output")
def send_confirmation(invoice: dict) -> str:
    return f"Confirmed for {invoice['customer']}: {invoice['total']:.2f} {invoice['currency']}"


_CLIENT = None
_MODEL = "fake-model"


def record(inp, path, server):
    global _CLIENT, _MODEL
    _CLIENT = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _MODEL = server.model
    try:
        with trajdebug.run(NAME, task=f"order e-mail from {inp['from']}: {inp['subject']}", path=path):
            email = read_email(inp)
            customer = recall_customer(email["from"])
            messages = [{"role": "system", "content": "Extract order lines as JSON {\"lines\": [{\"sku\", \"qty\"}]}; keep quantities as written."},
                        {"role": "user", "content": email["body"]}]
            text = extract_order(messages)
            lines = parse_order_lines(text)
            draft = remember_draft(customer, lines)
            with trajdebug.ContextThreadPoolExecutor(max_workers=4) as pool:
                first_qty = draft["lines"][0]["qty"]
                futures = []
                for i, line in enumerate(draft["lines"]):
                    qty = first_qty if SWITCH == "first_qty_everywhere" else line["qty"]
                    futures.append(pool.submit(_staggered, i, draft["warehouse"], line["sku"], qty))
                reserved = [f.result() for f in futures]
            priced = price_lines(draft["lines"], draft["currency"])
            fx = fx_rate("GBP/EUR")
            invoice = build_invoice(draft, priced, reserved, fx)
            check_invoice_schema(invoice, customer, lines)
            send_confirmation(invoice)
    except (ValueError, KeyError):
        pass
