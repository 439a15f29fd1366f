"""Clock repair workshop (sdk route): diagnoses a clock, reserves parts, prices labour via a sub-agent, issues a quote."""
from __future__ import annotations

import json

import trajdebug
from openai import OpenAI

from . import fakellm
from .kit import active

AGENT = "clock-repair-quoter"
ROUTE = "sdk"

CATALOG = {
    "mainspring": {"part_no": "MS-220", "price_gbp": 38.0},
    "click spring": {"part_no": "CS-014", "price_gbp": 6.5},
    "suspension spring": {"part_no": "SS-102", "price_gbp": 11.0},
    "pivot bush": {"part_no": "BR-114", "price_gbp": 4.2},
    "crutch pin": {"part_no": "CP-031", "price_gbp": 3.0},
}
STOCK = {"MS-220": 4, "CS-014": 9, "SS-102": 3, "BR-114": 0, "CP-031": 12}
SYMPTOMS = {
    "C-221": ("longcase", "stops after two days; strike train slips", ["1x mainspring", "2x click spring", "1x suspension spring"]),
    "C-222": ("bracket", "loses ten minutes a day", ["1x suspension spring", "1x crutch pin"]),
    "C-223": ("carriage", "will not wind", ["1x mainspring", "1x click spring"]),
    "C-224": ("wall", "pendulum stops", ["1x crutch pin", "2x suspension spring"]),
    "C-225": ("longcase", "strike out of sequence", ["2x click spring", "1x crutch pin"]),
}
LABOUR_MIN = {"longcase": 150, "bracket": 90, "carriage": 120, "wall": 60}
INPUTS = {
    "main": {"ticket": "C-221", "limit_gbp": 400.0, "previous_ticket": "C-219"},
    "ref1": {"ticket": "C-222", "limit_gbp": 300.0, "previous_ticket": "C-221"},
    "ref2": {"ticket": "C-223", "limit_gbp": 350.0, "previous_ticket": "C-222"},
    "ref3": {"ticket": "C-224", "limit_gbp": 250.0, "previous_ticket": "C-223"},
    "ref4": {"ticket": "C-225", "limit_gbp": 400.0, "previous_ticket": "C-224"},
}
RATE_GBP_PER_H = 60.0

FAULTS = {
    "clock_lossy": dict(kind="lossy_parsing", root=("parse_diagnosis", 1), failure=("issue_quote", 1), hops=4,
                        description="parse_diagnosis drops the quantity prefix, so only one click spring is "
                                    "reserved and the work order check finds the reservation short."),
    "clock_swallow": dict(kind="swallowed_error", root=("check_stock", 2), failure=("issue_quote", 1), hops=3,
                          description="check_stock catches the warehouse timeout and returns zero units "
                                      "instead of retrying, so the click springs are never reserved and the work order check fails."),
    "clock_unit": dict(kind="unit_error", root=("price_quote", 1), failure=("issue_quote", 1), hops=2,
                       description="price_quote multiplies labour minutes by the hourly rate, so the quote "
                                   "total exceeds the customer's limit."),
    "clock_sub": dict(kind="subagent_wrong_entity", root=("brief_specialist", 1), failure=("issue_quote", 1), hops=4,
                      description="brief_specialist hands the movement specialist the previous ticket, so the "
                                  "labour line names another job and the quote is refused."),
    "clock_drift": dict(kind="format_drift", root=("format_quote", 1), failure=("issue_quote", 1), hops=1,
                        description="format_quote writes the amount with a pound sign instead of a decimal "
                                    "string, and the quoting API rejects the field."),
}

def policy(messages, tools):
    system = messages[0]["content"]
    req = json.loads(fakellm.last_user(messages))
    if "diagnose" in system:
        _, _, parts = SYMPTOMS[req["ticket"]]
        return "Likely work:\n" + "\n".join(f"- {p}" for p in parts)
    ticket = req["ticket"]
    clock = SYMPTOMS[ticket][0] if ticket in SYMPTOMS else "bracket"
    return json.dumps({"ticket": ticket, "clock": clock, "labour_minutes": LABOUR_MIN[clock]})


def run_agent(client: OpenAI, inp: dict, path: str) -> None:
    def chat(system, user):
        r = client.chat.completions.create(model="gpt-4o-mini", messages=[
            {"role": "system", "content": system}, {"role": "user", "content": user}])
        return r.choices[0].message.content

    calls = {"stock": 0}

    @trajdebug.step(kind="input")
    def receive_clock(ticket: dict) -> dict:
        clock, symptoms, _ = SYMPTOMS[ticket["ticket"]]
        return {**ticket, "clock": clock, "symptoms": symptoms}

    @trajdebug.step(kind="llm")
    def diagnose(job: dict) -> str:
        return chat("You diagnose clock movements and list the parts to replace.",
                    json.dumps({"ticket": job["ticket"], "clock": job["clock"], "symptoms": job["symptoms"]}))

    @trajdebug.step(kind="parse")
    def parse_diagnosis(text: str) -> list:
        out = []
        for line in text.splitlines():
            if not line.startswith("- "):
                continue
            qty, name = line[2:].split("x ", 1)
            out.append({"part": name, "qty": 1 if active("clock_lossy") else int(qty)})
        return out

    @trajdebug.step(kind="retrieval")
    def search_parts_catalog(part: str) -> dict:
        return {"part": part, **CATALOG[part]}

    @trajdebug.retry(attempts=3, on=(ConnectionError,))
    @trajdebug.step(kind="tool")
    def check_stock(part_no: str, qty: int) -> dict:
        calls["stock"] += 1
        try:
            if calls["stock"] == 2:
                raise ConnectionError("warehouse gateway did not answer")
        except ConnectionError:
            if active("clock_swallow"):
                return {"part_no": part_no, "available": 0}
            raise
        return {"part_no": part_no, "available": STOCK[part_no]}

    @trajdebug.step(kind="state")
    def reserve_part(part: dict, stock: dict, qty: int) -> dict:
        res = {"part_no": part["part_no"], "qty": qty, "price_gbp": part["price_gbp"], "part": part["part"]}
        trajdebug.current_run().state[f"reserved:{part['part_no']}"] = res
        return res

    @trajdebug.step(kind="other")
    def brief_specialist(job: dict) -> dict:
        ticket = job["previous_ticket"] if active("clock_sub") else job["ticket"]
        return {"ticket": ticket, "clock": job["clock"], "symptoms": job["symptoms"]}

    @trajdebug.step(kind="llm")
    def estimate_labour(brief: dict) -> str:
        return chat("You are the movement specialist; estimate bench labour in minutes.", json.dumps(brief))

    @trajdebug.step(kind="parse")
    def parse_labour(text: str) -> dict:
        return json.loads(text)

    @trajdebug.step(kind="agent")
    def movement_specialist(brief: dict) -> dict:
        return parse_labour(estimate_labour(brief))

    @trajdebug.step(kind="other")
    def price_quote(reserved: list, labour: dict) -> dict:
        parts = sum(r["qty"] * r["price_gbp"] for r in reserved)
        hours = labour["labour_minutes"] if active("clock_unit") else labour["labour_minutes"] / 60
        return {"parts_gbp": round(parts, 2), "labour_gbp": round(hours * RATE_GBP_PER_H, 2),
                "total_gbp": round(parts + hours * RATE_GBP_PER_H, 2), "labour_ticket": labour["ticket"]}

    @trajdebug.step(kind="other")
    def format_quote(job: dict, price: dict) -> dict:
        amount = f"£{price['total_gbp']:.2f}" if active("clock_drift") else f"{price['total_gbp']:.2f}"
        return {"ticket": job["ticket"], "amount_gbp": amount, "labour_ticket": price["labour_ticket"],
                "total_gbp": price["total_gbp"]}

    @trajdebug.step(kind="tool")
    def issue_quote(job: dict, quote: dict, reserved: list) -> dict:
        try:
            float(quote["amount_gbp"])
        except ValueError:
            raise RuntimeError(f'HTTP 400 {{"field": "amount_gbp", "error": "expected a decimal string, got '
                               f'{quote["amount_gbp"]!r}"}}') from None
        if quote["labour_ticket"] != job["ticket"]:
            raise RuntimeError(f'HTTP 409 {{"error": "labour line references ticket {quote["labour_ticket"]}, '
                               f'quote is for {job["ticket"]}"}}')
        need = {}
        for line in SYMPTOMS[job["ticket"]][2]:
            q, name = line.split("x ", 1)
            need[CATALOG[name]["part_no"]] = int(q)
        have = {r["part_no"]: r["qty"] for r in reserved}
        for pn, q in need.items():
            if have.get(pn, 0) < q:
                raise RuntimeError(f"work order {job['ticket']}: requires {q} x {pn}, {have.get(pn, 0)} reserved")
            if STOCK[pn] < q:
                raise RuntimeError(f'HTTP 409 {{"error": "part {pn} has {STOCK[pn]} units available, {q} needed"}}')
        if quote["total_gbp"] > job["limit_gbp"]:
            raise RuntimeError(f"quote total {quote['total_gbp']:.2f} GBP exceeds the customer's limit "
                               f"{job['limit_gbp']:.2f} GBP")
        return {"status": "issued", "ticket": job["ticket"]}

    with trajdebug.run(AGENT, task=f"quote repair {inp['ticket']}", path=path):
        job = receive_clock(inp)
        lines = parse_diagnosis(diagnose(job))
        reserved = []
        for line in lines:
            part = search_parts_catalog(line["part"])
            stock = check_stock(part["part_no"], line["qty"])
            with trajdebug.step("stock_gate", kind="condition") as gate:
                gate.output = "reserve" if stock["available"] >= line["qty"] else "skip"
            if gate.output == "reserve":
                reserved.append(reserve_part(part, stock, line["qty"]))
        labour = movement_specialist(brief_specialist(job))
        price = price_quote(reserved, labour)
        issue_quote(job, format_quote(job, price), reserved)


def record(base_url: str, inp: dict, path: str) -> None:
    client = OpenAI(base_url=base_url, api_key="sk-local-test", max_retries=0)
    try:
        run_agent(client, inp, path)
    except RuntimeError:
        pass
