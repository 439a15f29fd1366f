"""CRM agent: handles a renewal ticket, looks up the customer, prices and sends the offer."""

from __future__ import annotations

import json

import trajdebug

from .common import llm_meta, mark_failure, mark_flow, mark_root, on


NAME = "crm-renewals"
SUMMARY = "Turns a support ticket into a renewal offer: customer lookup, tier pricing, letter, mailing, billing audit."
FAULTS = {
    "stale_cache": "the customer lookup tool serves a stale cached record (old address and tier) instead of the live CRM row",
}


class TierAuditFailed(Exception):
    """The offer was priced for a tier the customer no longer has."""


LIVE = {
    "C-2231": {
        "name": "Helix Biotech",
        "tier": "gold",
        "address": "Av. da Liberdade 190, 1250-147 Lisboa",
        "seats": 40,
    },
    "C-1187": {
        "name": "Marlin Logistics",
        "tier": "platinum",
        "address": "Rua do Ouro 3, 4000-001 Porto",
        "seats": 120,
    },
    "C-3054": {
        "name": "Quinta Nova Wines",
        "tier": "silver",
        "address": "Estrada N222 km 14, 5120 Tabuaco",
        "seats": 8,
    },
    "C-0412": {
        "name": "Atlas Dental",
        "tier": "silver",
        "address": "Rua Augusta 77, 1100-048 Lisboa",
        "seats": 15,
    },
    "C-0977": {
        "name": "Brisa Surf Co",
        "tier": "bronze",
        "address": "Praia do Norte, 2450 Nazare",
        "seats": 3,
    },
    "C-1500": {
        "name": "Ventura Legal",
        "tier": "gold",
        "address": "Rua Castilho 50, 1250-071 Lisboa",
        "seats": 55,
    },
    "C-2718": {
        "name": "Orbital Games",
        "tier": "platinum",
        "address": "Rua Sa da Bandeira 400, 4000-427 Porto",
        "seats": 210,
    },
    "C-3141": {
        "name": "Pastelaria Belem",
        "tier": "bronze",
        "address": "Rua de Belem 84, 1300-085 Lisboa",
        "seats": 2,
    },
}
STALE_CACHE = {
    "C-2231": {
        "name": "Helix Biotech",
        "tier": "silver",
        "address": "Rua Tomas Ribeiro 12, 1050-227 Lisboa",
        "seats": 40,
    },
    "C-1187": {
        "name": "Marlin Logistics",
        "tier": "gold",
        "address": "Rua do Ouro 3, 4000-001 Porto",
        "seats": 120,
    },
    "C-3054": {
        "name": "Quinta Nova Wines",
        "tier": "bronze",
        "address": "Rua Direita 5, 5120 Tabuaco",
        "seats": 8,
    },
}
DISCOUNT = {"bronze": 0.0, "silver": 0.10, "gold": 0.20, "platinum": 0.30}
SEAT_PRICE = 18.0 * 12

TICKETS = {
    "T-5581": "C-2231",
    "T-5590": "C-1187",
    "T-5602": "C-3054",
    "T-5610": "C-0412",
    "T-5611": "C-0977",
    "T-5620": "C-1500",
    "T-5633": "C-2718",
    "T-5640": "C-3141",
}

FAILING = [
    {
        "fault": "stale_cache",
        "description": "Helix Biotech was upgraded to gold and moved; the lookup serves the cached silver record, the renewal is priced at 10% off and the billing audit fails.",
        "input": {
            "id": "T-5581",
            "message": "Ticket T-5581: Helix Biotech (C-2231) asks for their renewal quote for next year.",
        },
    },
    {
        "fault": "stale_cache",
        "description": "Marlin Logistics (now platinum) is priced at the cached gold discount; the offer letter goes out and the audit against billing raises.",
        "input": {
            "id": "T-5590",
            "message": "Ticket T-5590 - customer C-1187 wants the renewal offer before Friday.",
        },
    },
    {
        "fault": "stale_cache",
        "description": "Quinta Nova Wines (silver) is treated as bronze from the stale cache; no discount is applied; the billing audit fails.",
        "input": {
            "id": "T-5602",
            "message": "T-5602: please send Quinta Nova (C-3054) their renewal pricing.",
        },
    },
]

PASSING = [
    {"id": "T-5610", "message": "T-5610 Atlas Dental (C-0412) renewal quote please."},
    {"id": "T-5611", "message": "Ticket T-5611: Brisa Surf Co, C-0977, renewal."},
    {"id": "T-5620", "message": "T-5620 - Ventura Legal would like their renewal offer (acct C-1500)."},
    {"id": "T-5633", "message": "Orbital Games (C-2718) asks about renewing; ticket T-5633."},
    {"id": "T-5640", "message": "T-5640: renewal for Pastelaria Belem, C-3141."},
]

_CURRENT: dict = {}


@trajdebug.step(kind="llm")
def chat_completion(system: str, user: str) -> str:
    """Scripted chat model used for triage and for letter writing."""
    llm_meta()
    if system.startswith("Triage"):
        return json.dumps(
            {"customer_id": TICKETS[_CURRENT["id"]], "intent": "renewal_quote", "urgency": "normal"}
        )
    data = json.loads(user.split("DATA:", 1)[1])
    return (
        f"{data['name']}\n{data['address']}\n\nDear customer,\n\nThank you for another year with us. "
        f"Your {data['tier']} renewal for {data['seats']} seats comes to {data['price']:,.2f} EUR "
        f"({int(data['discount'] * 100)}% loyalty discount).\n\nKind regards,\nCustomer Success"
    )


@trajdebug.step(kind="parse")
def parse_triage(completion: str) -> dict:
    t = json.loads(completion)
    if t["intent"] != "renewal_quote":
        raise ValueError(f"unsupported intent {t['intent']}")
    return t


@trajdebug.step(kind="tool")
def lookup_customer(customer_id: str) -> dict:
    if on("stale_cache") and customer_id in STALE_CACHE:
        mark_root()
        return {"id": customer_id, **STALE_CACHE[customer_id], "source": "cache"}
    return {"id": customer_id, **LIVE[customer_id], "source": "cache"}


@trajdebug.step(kind="other")
def price_renewal(customer: dict) -> dict:
    discount = DISCOUNT[customer["tier"]]
    list_price = customer["seats"] * SEAT_PRICE
    mark_flow()
    return {
        "customer_id": customer["id"],
        "tier": customer["tier"],
        "seats": customer["seats"],
        "list_price": list_price,
        "discount": discount,
        "price": round(list_price * (1 - discount), 2),
    }


@trajdebug.step(kind="tool")
def send_letter(letter: str, address: str) -> dict:
    return {"queued": True, "channel": "post", "to": address, "chars": len(letter)}


@trajdebug.step(kind="tool")
def billing_account(customer_id: str) -> dict:
    live = LIVE[customer_id]
    return {"customer_id": customer_id, "tier": live["tier"], "billing_address": live["address"]}


@trajdebug.step(kind="condition")
def audit_offer(quote: dict, billing: dict) -> bool:
    if quote["tier"] != billing["tier"]:
        mark_failure()
        raise TierAuditFailed(
            f"renewal for {quote['customer_id']} priced as {quote['tier']} ({quote['price']:,.2f} EUR); "
            f"billing lists the account as {billing['tier']}"
        )
    return True


def run_agent(inp: dict, run) -> str:
    _CURRENT.clear()
    _CURRENT.update(inp)
    triage = parse_triage(
        chat_completion("Triage the ticket. Reply JSON {customer_id, intent, urgency}.", inp["message"])
    )
    customer = lookup_customer(triage["customer_id"])
    quote = price_renewal(customer)
    letter = chat_completion(
        "Write a renewal offer letter.",
        "DATA:" + json.dumps({"name": customer["name"], "address": customer["address"], **quote}),
    )
    send_letter(letter, customer["address"])
    audit_offer(quote, billing_account(customer["id"]))
    return letter
