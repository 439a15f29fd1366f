"""Brewster's small-batch ale orders: the trajdebug recording SDK, a loop over order lines."""
from __future__ import annotations

import json
import re

from openai import OpenAI

import trajdebug

NAME, ROUTE, EXT = "alehouse-orders", "sdk", "jsonl"
DOMAIN = "brewster's small-batch ale orders"
SHAPE = "linear: intake, model reads order, parse, per line (recipe lookup, cask volume, cellar stock with retry, price), state write, reservation, excise return, model invoice, validator, confirmation (12-26 steps)"
SWITCH = None

CASK_LITRES = {"firkin": 40.9, "pin": 20.5, "kilderkin": 81.8}
RECIPES = {
    "Harvest Mild": {"abv": 3.6, "rate": 3.10}, "Bramble & Oat Stout": {"abv": 5.2, "rate": 4.05},
    "Copper Bitter": {"abv": 4.1, "rate": 3.40}, "Hedgerow Pale": {"abv": 4.4, "rate": 3.55},
}
CELLAR = {"Harvest Mild": 9, "Bramble & Oat Stout": 5, "Copper Bitter": 7, "Hedgerow Pale": 6}

INPUTS = [
    {"key": "billet", "customer": "The Crooked Billet", "text": "The Crooked Billet asks for 3 firkin of Harvest Mild and 2 pin of Bramble & Oat Stout, delivery Friday."},
    {"key": "plough", "customer": "The Plough", "text": "The Plough asks for 2 kilderkin of Copper Bitter, 1 firkin of Hedgerow Pale and 1 pin of Harvest Mild, delivery Tuesday."},
    {"key": "anchor", "customer": "The Anchor", "text": "The Anchor asks for 2 firkin of Copper Bitter and 2 pin of Copper Bitter, delivery Wednesday."},
    {"key": "swan", "customer": "The Swan", "text": "The Swan asks for 1 firkin of Bramble & Oat Stout, 2 firkin of Hedgerow Pale, 1 pin of Harvest Mild and 1 kilderkin of Harvest Mild, delivery Thursday."},
    {"key": "bell", "customer": "The Bell", "text": "The Bell asks for 4 pin of Hedgerow Pale, delivery Monday."},
]

CASES = [
    {"id": "zzzw_ale_01", "input": 0, "switch": "parse_amp", "fault_kind": "lossy_parsing",
     "root": {"name": "parse_order_lines", "occurrence": 1}, "failure": {"name": "validate_invoice", "occurrence": 1},
     "description": "The order-line parser drops any beer whose name holds an ampersand, so the stout line never reaches the invoice."},
    {"id": "zzzw_ale_02", "input": 1, "switch": "cask_gallons", "fault_kind": "unit_error",
     "root": {"name": "cask_volume", "occurrence": 2}, "failure": {"name": "excise_return", "occurrence": 1},
     "description": "The cask volume lookup answers the firkin in imperial gallons (9) where litres (40.9) are expected."},
    {"id": "zzzw_ale_03", "input": 3, "switch": "model_qty", "fault_kind": "hallucinated_value",
     "root": {"name": "read_order", "occurrence": 1}, "failure": {"name": "validate_invoice", "occurrence": 1},
     "description": "The model reading the order states 3 firkins of Hedgerow Pale where the customer asked for 2."},
    {"id": "zzzw_ale_04", "input": 0, "switch": "ledger_locked", "fault_kind": "swallowed_error",
     "root": {"name": "check_cellar_stock", "occurrence": 3}, "failure": {"name": "reserve_casks", "occurrence": 1},
     "description": "The cellar stock check meets a locked ledger for the stout and answers zero casks on hand instead of reporting it."},
    {"id": "zzzw_ale_05", "input": 2, "switch": "lines_by_beer", "fault_kind": "bad_memory_write",
     "root": {"name": "record_lines", "occurrence": 1}, "failure": {"name": "validate_invoice", "occurrence": 1},
     "description": "The order book keys its lines by beer alone, so the pin line of Copper Bitter overwrites the firkin line."},
]

_server = None
_client = None
_flaky = {"n": 0}


def policy(request):
    msgs = request.body["messages"]
    prompt = msgs[-1]["content"]
    if prompt.startswith("Read this ale order"):
        text = prompt.split("\n", 1)[1]
        lines = [{"beer": b.strip(), "cask": c, "qty": int(q)}
                 for q, c, b in re.findall(r"(\d+) (firkin|pin|kilderkin) of ([A-Z][A-Za-z& ]+?)(?=,| and |\.)", text)]
        if SWITCH == "model_qty":
            for ln in lines:
                if ln["beer"] == "Hedgerow Pale":
                    ln["qty"] += 1
        day = re.search(r"delivery (\w+)", text).group(1)
        return "Here is the order:\n```json\n" + json.dumps({"lines": lines, "delivery": day}) + "\n```"
    if prompt.startswith("Write the invoice"):
        data = json.loads(prompt.split("\n", 1)[1])
        rows = [f"{ln['qty']} x {ln['cask']} {ln['beer']}: {ln['price']:.2f}" for ln in data["lines"]]
        total = sum(ln["price"] for ln in data["lines"])
        return "INVOICE for " + data["customer"] + "\n" + "\n".join(rows) + f"\nTOTAL {total:.2f} GBP"
    return "I can only read ale orders."


@trajdebug.step(kind="input")
def receive_order(customer: str, text: str) -> dict:
    return {"customer": customer, "text": text}


@trajdebug.step(kind="llm")
def read_order(messages: list[dict]) -> str:
    r = _client.chat.completions.create(model=_server.model, messages=messages)
    return r.choices[0].message.content


@trajdebug.step(kind="parse")
def parse_order_lines(answer: str) -> dict:
    body = answer.split("```json", 1)[1].split("```", 1)[0]
    data = json.loads(body)
    if SWITCH == "parse_amp":
        data["lines"] = [ln for ln in data["lines"] if "&" not in ln["beer"]]
    return data


@trajdebug.step(kind="retrieval")
def lookup_recipe(beer: str) -> dict:
    return {"beer": beer, **RECIPES[beer]}


@trajdebug.step(kind="tool")
def cask_volume(cask: str) -> dict:
    if SWITCH == "cask_gallons" and cask == "firkin":
        return {"cask": cask, "volume": 9.0}
    return {"cask": cask, "volume": CASK_LITRES[cask]}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def check_cellar_stock(beer: str, cask: str) -> dict:
    _flaky["n"] += 1
    if _flaky["n"] == 2:
        raise ConnectionError("cellar ledger did not answer")
    if SWITCH == "ledger_locked" and "Stout" in beer:
        try:
            raise PermissionError("cellar ledger is locked by the night count")
        except PermissionError:
            return {"beer": beer, "cask": cask, "casks_on_hand": 0}
    return {"beer": beer, "cask": cask, "casks_on_hand": CELLAR[beer]}


@trajdebug.step(kind="other")
def price_line(line: dict, recipe: dict, volume: dict) -> dict:
    litres = round(line["qty"] * volume["volume"], 1)
    return {**line, "litres": litres, "abv": recipe["abv"], "price": round(litres * recipe["rate"], 2)}


@trajdebug.step(kind="state")
def record_lines(priced: list[dict]) -> int:
    run = trajdebug.current_run()
    if SWITCH == "lines_by_beer":
        book = {ln["beer"]: ln for ln in priced}
    else:
        book = {f"{ln['beer']}/{ln['cask']}": ln for ln in priced}
    run.state["order_book"] = book
    return len(book)


@trajdebug.step(kind="tool")
def reserve_casks(stock: list[dict], lines: list[dict]) -> dict:
    for s, ln in zip(stock, lines):
        if s["casks_on_hand"] < ln["qty"]:
            raise RuntimeError(f"cannot reserve {ln['qty']} {ln['cask']} of {ln['beer']}: {s['casks_on_hand']} on hand")
    return {"reserved": [f"{ln['qty']} {ln['cask']} {ln['beer']}" for ln in lines]}


@trajdebug.step(kind="tool")
def excise_return() -> dict:
    book = trajdebug.current_run().state["order_book"]
    rows = []
    for ln in book.values():
        floor = CASK_LITRES[ln["cask"]] * ln["qty"] * 0.98
        if ln["litres"] < floor:
            raise ValueError(f"excise office rejects return: {ln['litres']} l declared for {ln['qty']} {ln['cask']} of {ln['beer']}")
        rows.append({"beer": ln["beer"], "hl_pure_alcohol": round(ln["litres"] * ln["abv"] / 10000, 4)})
    return {"rows": rows, "litres": round(sum(ln["litres"] for ln in book.values()), 1)}


@trajdebug.step(kind="llm")
def compose_invoice(messages: list[dict]) -> str:
    r = _client.chat.completions.create(model=_server.model, messages=messages)
    return r.choices[0].message.content


@trajdebug.step(kind="condition")
def validate_invoice(invoice: str, order: dict, duty: dict) -> bool:
    asked = {(b.strip(), c): int(q) for q, c, b in
             re.findall(r"(\d+) (firkin|pin|kilderkin) of ([A-Z][A-Za-z& ]+?)(?=,| and |\.)", order["text"])}
    billed = {(b.strip(), c): int(q) for q, c, b in re.findall(r"(\d+) x (\w+) (.+?): ", invoice)}
    if billed != asked:
        raise AssertionError(f"invoice bills {billed} but {order['customer']} asked for {asked}")
    litres = sum(q * CASK_LITRES[c] for (b, c), q in asked.items())
    if abs(litres - duty["litres"]) > 0.5:
        raise AssertionError(f"excise return declares {duty['litres']} l but the order ships {litres:.1f} l")
    return True


@trajdebug.step(kind="output")
def send_confirmation(customer: str, invoice: str, delivery: str) -> str:
    return f"To {customer}: your ales go out {delivery}.\n{invoice}"


def record(server, inp, path):
    global _server, _client
    _server, _client = server, OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    server.use(policy)
    _flaky["n"] = 0
    try:
        with trajdebug.run(NAME, task=f"ale order: {inp['text']}", path=str(path)):
            order = receive_order(inp["customer"], inp["text"])
            answer = read_order([{"role": "system", "content": "You read brewery orders."},
                                 {"role": "user", "content": "Read this ale order as JSON lines.\n" + order["text"]}])
            data = parse_order_lines(answer)
            priced, stock = [], []
            for line in data["lines"]:
                recipe = lookup_recipe(line["beer"])
                vol = cask_volume(line["cask"])
                stock.append(check_cellar_stock(line["beer"], line["cask"]))
                priced.append(price_line(line, recipe, vol))
            record_lines(priced)
            reserve_casks(stock, data["lines"])
            duty = excise_return()
            invoice = compose_invoice([{"role": "user", "content": "Write the invoice.\n" + json.dumps(
                {"customer": order["customer"], "lines": priced})}])
            validate_invoice(invoice, order, duty)
            send_confirmation(order["customer"], invoice, data["delivery"])
    except Exception:
        pass
