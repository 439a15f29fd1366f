"""Cobbler's workshop tickets (route sdk): a repair-bench agent recorded with trajdebug's own SDK.

The model calls are scripted functions recorded as `llm` steps with chat messages in and out.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.heldout.suite_q import kit
from benchmarks.heldout.suite_q.kit import Agent, Case

import trajdebug


NAME = "cobbler-bench"

CUSTOMERS = {
    "Ines Varga": {"account": "AC-5140", "card": "4417"},
    "Tom Ashdown": {"account": "AC-2207", "card": "9902"},
    "Priya Nair": {"account": "AC-6318", "card": "1286"},
    "Olu Bankole": {"account": "AC-7751", "card": "3054"},
    "Mari Kask": {"account": "AC-8023", "card": "6671"},
    "Dev Rathore": {"account": "AC-1189", "card": "2245"},
}
PRICES = {"full resole": 62.0, "half sole": 38.0, "heel block": 24.0, "welt restitch": 30.0, "stretch": 12.0,
          "zip replace": 45.0, "patch": 18.0, "dye": 35.0, "toe plate": 15.0}
WELTED = {"Oxford brogues", "Derby boots", "Chelsea boots"}


class Declined(RuntimeError):
    pass


Declined.__module__ = "workshop.till"


def ticket_text(num: int, customer: str, items: list[tuple[str, int, str]], collect: str) -> str:
    parts = [f"{style}{' x' + str(q) if q > 1 else ''} - {svc}" for style, q, svc in items]
    return f"Ticket {num} for {customer}: " + "; ".join(parts) + f". Collect {collect}."


@trajdebug.step(kind="parse")
def parse_ticket(text: str) -> dict:
    head, body = text.split(": ", 1)
    customer = head.split(" for ")[1]
    body, collect = body.rsplit(". Collect ", 1)
    items = []
    for part in body.split("; "):
        label, svc = part.split(" - ")
        qty = 1
        if " x" in label:
            label, q = label.rsplit(" x", 1)
            if not kit.active("cb_lossy"):
                qty = int(q)
        items.append({"style": label, "qty": qty, "service": svc})
    pairs = sum(i["qty"] for i in items)
    return {"ticket": int(head.split()[1]), "customer": customer, "items": items,
            "summary": f"{pairs} pairs", "collect": collect.rstrip(".")}


@trajdebug.step(kind="tool")
def lookup_customer(name: str) -> dict:
    return {"customer": name, **CUSTOMERS[name]}


@trajdebug.step(kind="state")
def remember_customer(record: dict) -> dict:
    account = record["account"]
    if kit.active("cb_memory"):
        account = "AC-2207" if account != "AC-2207" else "AC-5140"  # the previous ticket's holder
    entry = {"customer": record["customer"], "account": account, "card": record["card"]}
    trajdebug.current_run().state["customer"] = entry
    return entry


@trajdebug.step(kind="tool")
def fetch_price_list(shop: str) -> dict:
    services = list(PRICES.items())
    if kit.active("cb_trunc"):
        services = services[:4]  # first page of the price book API
    return {"shop": shop, "services": [{"service": s, "gbp": p} for s, p in services],
            "listed": f"{len(services)} services"}


@trajdebug.step(kind="llm")
def plan_jobs(messages: list[dict]) -> dict:
    ticket = json.loads(messages[-1]["content"])
    ops = []
    for it in ticket["items"]:
        steps = [it["service"]]
        if it["service"] in ("full resole", "half sole") and it["style"] in WELTED:
            steps = ["welt restitch" if not kit.active("cb_plan") else "glued sole", it["service"]]
        ops.append({"style": it["style"], "bench_ops": steps})
    return {"role": "assistant", "content": json.dumps({"jobs": ops})}


@trajdebug.step(kind="llm")
def compose_order_call(messages: list[dict]) -> dict:
    need = json.loads(messages[-1]["content"])
    hide = "chrome-tan 2.5mm" if kit.active("cb_args") else "oak-bark 5.5mm"
    args = {"hide": hide, "soles": need["soles"]}
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": "call_leather", "type": "function",
                            "function": {"name": "order_leather", "arguments": json.dumps(args)}}]}


@trajdebug.step(kind="tool")
def order_leather(hide: str, soles: int) -> dict:
    return {"supplier": "J&FJ Baker", "hide": hide, "soles": soles, "status": "dispatched"}


@trajdebug.step(kind="tool")
def reserve_material(style: str, service: str) -> dict:
    return {"style": style, "service": service, "bin": f"B{(len(style) * 3 + len(service)) % 40:02d}"}


@trajdebug.step(kind="other")
def price_item(item: dict, price_list: dict) -> dict:
    book = {s["service"]: s["gbp"] for s in price_list["services"]}
    return {"style": item["style"], "service": item["service"], "qty": item["qty"],
            "line_gbp": round(book.get(item["service"], 0.0) * item["qty"], 2)}


@trajdebug.step(kind="state")
def log_job(line: dict) -> None:
    trajdebug.current_run().state.setdefault("lines", []).append(line)


@trajdebug.step(kind="condition")
def qa_inspect(plan: dict, leather: dict) -> dict:
    for job in plan["jobs"]:
        if "glued sole" in job["bench_ops"]:
            raise Declined(f"QA: {job['style']} fails bench standard W-2 (welt integrity)")
    if leather["soles"] and float(leather["hide"].split()[-1][:-2]) < 4.0:
        raise Declined("QA: sole stock rejected at the press, gauge below workshop minimum")
    return {"passed": True}


@trajdebug.step(kind="tool")
def issue_quote(ticket: dict, tags_scanned: int) -> dict:
    lines = trajdebug.current_run().state["lines"]
    if sum(line["qty"] for line in lines) != tags_scanned:
        raise Declined(f"Till: quote for ticket {ticket['ticket']} blocked, bag tags scanned ({tags_scanned}) "
                       "do not match quote lines")
    if any(line["line_gbp"] <= 0 for line in lines):
        raise Declined(f"Till: quote for ticket {ticket['ticket']} blocked, line below price book minimum")
    return {"quote": f"TQ-{ticket['ticket']}", "total_gbp": round(sum(line["line_gbp"] for line in lines), 2)}


@trajdebug.step(kind="tool")
def take_deposit(quote: dict) -> dict:
    cust = trajdebug.current_run().state["customer"]
    real = CUSTOMERS[cust["customer"]]
    if cust["account"] != real["account"]:
        raise Declined(f"Card terminal: card ending {cust['card']} declined for account {cust['account']} (code 57)")
    return {"deposit_gbp": round(quote["total_gbp"] * 0.3, 2), "auth": f"A{cust['card']}"}


@trajdebug.step(kind="output")
def receipt(quote: dict, deposit: dict) -> str:
    return f"Quote {quote['quote']}: GBP {quote['total_gbp']}, deposit {deposit['deposit_gbp']} taken."


def agent(inp: dict, path: Path) -> None:
    text = ticket_text(inp["num"], inp["customer"], inp["items"], inp["collect"])
    try:
        with trajdebug.run(NAME, path=str(path), task=f"quote and start ticket {inp['num']}"):
            with trajdebug.step("intake_ticket", kind="input") as s:
                s.output = text
            ticket = parse_ticket(s.output)
            cust = lookup_customer(ticket["customer"])
            remember_customer(cust)
            prices = fetch_price_list("Rye Lane workshop")
            plan = plan_jobs([{"role": "system", "content": "Plan the bench operations for each item."},
                              {"role": "user", "content": json.dumps(ticket)}])
            plan_data = json.loads(plan["content"])
            soles = sum(i["qty"] for i in ticket["items"] if "sole" in i["service"])
            call = compose_order_call([{"role": "system", "content": "Order sole leather for the ticket."},
                                       {"role": "user", "content": json.dumps({"soles": soles})}])
            leather = order_leather(**json.loads(call["tool_calls"][0]["function"]["arguments"]))
            for item in ticket["items"]:
                reserve_material(item["style"], item["service"])
                log_job(price_item(item, prices))
            qa_inspect(plan_data, leather)
            quote = issue_quote(ticket, sum(q for _, q, _ in inp["items"]))
            deposit = take_deposit(quote)
            receipt(quote, deposit)
    except Declined:
        pass


def _t(num, customer, items, collect="Friday"):
    return {"num": num, "customer": customer, "items": items, "collect": collect}


CASES = [
    Case("cobbler_lossy", NAME, "sdk", "lossy_parsing", "cb_lossy",
         _t(4471, "Ines Varga", [("Oxford brogues", 2, "full resole"), ("Court shoes", 1, "heel block"),
                                 ("Walking boots", 3, "patch"), ("Loafers", 1, "stretch")]), "parse_ticket", "4 pairs"),
    Case("cobbler_memory", NAME, "sdk", "bad_memory_write", "cb_memory",
         _t(4480, "Priya Nair", [("Derby boots", 1, "half sole"), ("Sandals", 2, "patch"), ("Trainers", 1, "dye"),
                                 ("Court shoes", 1, "heel block"), ("Riding boots", 1, "zip replace"),
                                 ("Loafers", 2, "stretch")]), "remember_customer", "AC-2207"),
    Case("cobbler_plan", NAME, "sdk", "plan_error", "cb_plan",
         _t(4492, "Olu Bankole", [("Chelsea boots", 1, "full resole"), ("Trainers", 2, "patch"),
                                  ("Brogues", 1, "toe plate")]), None, "glued sole"),
    Case("cobbler_truncated", NAME, "sdk", "truncated_result", "cb_trunc",
         _t(4503, "Mari Kask", [("Riding boots", 1, "zip replace"), ("Oxford brogues", 1, "half sole"),
                                ("Loafers", 1, "heel block"), ("Court shoes", 2, "dye"), ("Mules", 1, "stretch"),
                                ("Derby boots", 1, "full resole"), ("Sandals", 1, "patch")]),
         "fetch_price_list", "4 services"),
    Case("cobbler_args", NAME, "sdk", "wrong_tool_args", "cb_args",
         _t(4517, "Dev Rathore", [("Derby boots", 2, "full resole"), ("Trainers", 1, "patch"),
                                  ("Mules", 1, "heel block"), ("Court shoes", 1, "stretch"),
                                  ("Walking boots", 1, "half sole")]), None, "chrome-tan"),
]
REFS = [
    _t(4460, "Tom Ashdown", [("Oxford brogues", 1, "full resole"), ("Loafers", 1, "heel block")]),
    _t(4466, "Ines Varga", [("Derby boots", 2, "welt restitch"), ("Sandals", 1, "patch"), ("Trainers", 1, "dye")]),
    _t(4475, "Olu Bankole", [("Chelsea boots", 1, "half sole"), ("Court shoes", 2, "heel block"),
                             ("Riding boots", 1, "zip replace"), ("Mules", 1, "toe plate")]),
    _t(4488, "Mari Kask", [("Walking boots", 1, "patch"), ("Loafers", 3, "stretch")]),
]

AGENT = Agent(NAME, "sdk", "jsonl", agent, CASES, REFS)
