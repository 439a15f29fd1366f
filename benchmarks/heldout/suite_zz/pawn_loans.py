"""Pawn shop loans (recording SDK): appraise a pledged item with a sub-agent, draft terms, issue the loan."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import trajdebug
from openai import OpenAI

from .common import Case, sdk_chat, user_json
from .kit import active

AGENT = "pawn_loans"
ROUTE = "sdk"
DOMAIN = "pawn shop loans"
SYSTEM = "[pawn-desk] You assist a licensed pawnbroker. Reply with JSON only."

INPUTS = {
    "omega": {"ticket": "PT-5120", "customer": "C-1182", "item": "Omega Seamaster 300", "category": "watch",
              "condition": "good", "requested_eur": 1500},
    "guitar": {"ticket": "PT-5121", "customer": "C-2047", "item": "Gibson Les Paul Studio", "category": "guitar",
               "condition": "fair", "requested_eur": 600},
    "ring": {"ticket": "PT-5122", "customer": "C-0935", "item": "18k gold band 6g", "category": "jewel",
             "condition": "good", "requested_eur": 200},
    "camera": {"ticket": "PT-5123", "customer": "C-3310", "item": "Leica M6", "category": "camera",
               "condition": "good", "requested_eur": 900},
    "laptop": {"ticket": "PT-5124", "customer": "C-1450", "item": "MacBook Pro 14 M3", "category": "laptop",
               "condition": "fair", "requested_eur": 500},
    "drill": {"ticket": "PT-5125", "customer": "C-2718", "item": "Hilti TE 30 hammer drill", "category": "tool",
              "condition": "good", "requested_eur": 150},
}
REFS = ["ring", "camera", "laptop", "drill"]

COMPS = {
    "Omega Seamaster 300": [1950, 2010, 1980], "Omega Seamaster Aqua Terra": [3900, 4100, 4050],
    "Gibson Les Paul Studio": [890, 940, 910], "Gibson Les Paul Custom": [2600, 2750],
    "18k gold band 6g": [330, 345, 340], "Leica M6": [2300, 2450, 2380], "Leica M10": [5200],
    "MacBook Pro 14 M3": [1150, 1200, 1180], "Hilti TE 30 hammer drill": [260, 280, 270],
}
LEDGER_REF = {k: statistics.median(v) for k, v in COMPS.items()}
CUSTOMERS = {
    "C-1182": {"id": "C-1182", "tier": "regular", "id_checked": True, "prior": [{"ticket": "PT-4011", "cosigner": "C-0771"}]},
    "C-2047": {"id": "C-2047", "tier": "new", "id_checked": True, "prior": [{"ticket": "PT-3307", "cosigner": "C-0610"}]},
    "C-0935": {"id": "C-0935", "tier": "regular", "id_checked": True, "prior": []},
    "C-3310": {"id": "C-3310", "tier": "gold", "id_checked": True, "prior": []},
    "C-1450": {"id": "C-1450", "tier": "new", "id_checked": True, "prior": []},
    "C-2718": {"id": "C-2718", "tier": "regular", "id_checked": True, "prior": []},
    "C-0771": {"id": "C-0771", "tier": "new", "id_checked": False, "prior": []},
    "C-0610": {"id": "C-0610", "tier": "regular", "id_checked": True, "prior": []},
}
DESK_NOTES = [
    {"ticket": "PT-5119", "note": "Les Paul Custom appraised at 2,650 EUR, offered 55%"},
]

CASES = [
    Case("pw_ret", AGENT, "wrong_retrieval", "search_comparables", 1, "issue_loan",
         "the comparables search dropped the model name and returned Aqua Terra sales for a Seamaster 300", "omega"),
    Case("pw_hal", AGENT, "hallucinated_value", "estimate_value", 1, "issue_loan",
         "the appraisal model stated a market value no comparable sale supports", "omega"),
    Case("pw_parse", AGENT, "lossy_parsing", "parse_estimate", 1, "issue_loan",
         "parse_estimate read the thousands comma as a decimal point, shrinking the value a thousandfold", "omega"),
    Case("pw_mem", AGENT, "bad_memory_write", "remember_customer", 1, "issue_loan",
         "remember_customer stored the cosigner of an earlier loan as the borrower", "guitar"),
    Case("pw_ctx", AGENT, "context_pollution", "gather_desk_notes", 1, "issue_loan",
         "desk notes from the previous ticket were put into the terms prompt and the model priced from them",
         "guitar"),
]


class LedgerError(Exception):
    pass


def policy(body: dict) -> str:
    ask = user_json(body)
    if ask.get("ask") == "appraise":
        prices = [c["price_eur"] for c in ask["comparables"]]
        value = statistics.median(prices)
        if ask["condition"] == "fair":
            value *= 0.9
        if active("pw_hal"):
            value = 2750
        return json.dumps({"item": ask["item"], "market_value": f"{value:,.0f} EUR", "basis": f"{len(prices)} sales"})
    if ask.get("ask") == "terms":
        value = ask["value_eur"]
        for n in ask.get("notes", []):
            m = re.search(r"appraised at ([\d,]+) EUR", n["note"])
            if m:
                value = float(m.group(1).replace(",", ""))
        principal = round(min(ask["requested_eur"], 0.55 * value), 2)
        return json.dumps({"principal_eur": principal, "monthly_rate": 0.04, "term_days": 90})
    return "{}"


@trajdebug.step(kind="input")
def read_ticket(ticket: dict) -> dict:
    return dict(ticket)


@trajdebug.step(kind="tool")
def lookup_customer(customer_id: str) -> dict:
    return json.loads(json.dumps(CUSTOMERS[customer_id]))


@trajdebug.step(kind="state")
def remember_customer(history: dict) -> dict:
    borrower = history["prior"][0]["cosigner"] if active("pw_mem") and history["prior"] else history["id"]
    mem = {"borrower": borrower, "tier": history["tier"], "loans_seen": len(history["prior"])}
    trajdebug.current_run().state["customer"] = mem
    return mem


@trajdebug.step(kind="retrieval")
def search_comparables(item: str, category: str) -> list[dict]:
    key = item
    if active("pw_ret"):
        key = max((k for k in COMPS if k.split()[0] == item.split()[0]), key=lambda k: statistics.median(COMPS[k]))
    return [{"model": key, "price_eur": p, "sold": f"2027-01-{10 + i:02d}"} for i, p in enumerate(COMPS[key])]


@trajdebug.step(kind="parse")
def parse_estimate(text: str) -> dict:
    data = json.loads(text)
    raw = data["market_value"].split()[0]
    value = float(raw.replace(",", ".")) if active("pw_parse") else float(raw.replace(",", ""))
    return {"item": data["item"], "value_eur": value}


@trajdebug.step(kind="agent")
def appraise_item(ticket: dict, client: OpenAI) -> dict:
    comps = search_comparables(ticket["item"], ticket["category"])
    with trajdebug.step("filter_comparables", kind="other", input={"comparables": comps}) as f:
        recent = [c for c in comps if c["sold"] >= "2027-01-01"]
        f.output = recent
    text = sdk_chat(client, "estimate_value", SYSTEM, json.dumps(
        {"ask": "appraise", "item": ticket["item"], "condition": ticket["condition"], "comparables": recent}))
    return parse_estimate(text)


@trajdebug.step(kind="other")
def gather_desk_notes(ticket: dict) -> list[dict]:
    notes = [{"ticket": ticket["ticket"], "note": f"customer asked for {ticket['requested_eur']} EUR, 90 days"}]
    if active("pw_ctx"):
        notes = DESK_NOTES + notes
    return notes


@trajdebug.step(kind="parse")
def parse_terms(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="tool")
def check_id_document(customer_id: str) -> dict:
    return {"customer": customer_id, "document": "national id", "checked": CUSTOMERS[customer_id]["id_checked"]}


@trajdebug.step(kind="other")
def compute_repayment(terms: dict) -> dict:
    months = terms["term_days"] / 30
    return {"repay_eur": round(terms["principal_eur"] * (1 + terms["monthly_rate"] * months), 2)}


@trajdebug.step(kind="tool")
def issue_loan(ticket: dict, borrower: str, terms: dict, repayment: dict) -> dict:
    if borrower != ticket["customer"]:
        raise LedgerError(f"HTTP 409 pawn ledger: borrower {borrower} does not match the pledge holder "
                          f"{ticket['customer']} on {ticket['ticket']}")
    ref = LEDGER_REF[ticket["item"]]
    if terms["principal_eur"] < 50:
        raise LedgerError(f"HTTP 422 pawn ledger: principal {terms['principal_eur']:.2f} EUR is below the 50 EUR minimum")
    if terms["principal_eur"] > 0.6 * ref:
        raise LedgerError(f"HTTP 422 pawn ledger: principal {terms['principal_eur']:.2f} EUR exceeds 60% of the "
                          f"reference value {ref:,.0f} EUR for {ticket['item']}")
    return {"loan": f"LN-{ticket['ticket'][3:]}", "principal_eur": terms["principal_eur"], **repayment}


def record(key: str, out: Path, base_url: str) -> None:
    client = OpenAI(base_url=base_url, api_key="local", max_retries=0)
    try:
        with trajdebug.run("pawn-loan-desk", path=str(out), task=f"loan against {INPUTS[key]['item']}") as run:
            ticket = read_ticket(INPUTS[key])
            history = lookup_customer(ticket["customer"])
            remember_customer(history)
            estimate = appraise_item(ticket, client)
            notes = gather_desk_notes(ticket)
            text = sdk_chat(client, "draft_terms", SYSTEM, json.dumps(
                {"ask": "terms", "item": ticket["item"], "value_eur": estimate["value_eur"],
                 "requested_eur": ticket["requested_eur"], "notes": notes}))
            terms = parse_terms(text)
            with trajdebug.step("confirm_borrower", kind="other") as s:
                borrower = run.state["customer"]["borrower"]
                s.output = {"borrower": borrower}
            check_id_document(borrower)
            repayment = compute_repayment(terms)
            issue_loan(ticket, borrower, terms, repayment)
    except LedgerError:
        pass
