"""Ticket exchange desk (route b: OpenAI Agents SDK, Chat Completions model; recorded with TrajdebugProcessor).

A fan asks to buy resale seats. The box-office agent searches listings, checks with the primary issuer that
the cheapest listing can be transferred, holds seats, and hands off to the payments desk, which charges the
card and asks the exchange to issue the transfer; the exchange validates the hold against the seller's
inventory, the issuer's locks and what was paid.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents import Agent, function_tool

from .common import AgentSpec, Case, Reply, Req, active, agents_model, brain, run_agents_sdk, table, tool_call


AGENT = "ticket-exchange-desk"

LISTINGS = table(
    "listing event section row first count price",
    [
        ('L-201', 'E-551', 'Balcony', 'B', 11, 4, 62.0),
        ('L-202', 'E-551', 'Balcony', 'C', 3, 2, 58.0),
        ('L-203', 'E-551', 'Balcony', 'D', 7, 1, 49.0),
        ('L-204', 'E-551', 'Orchestra', 'F', 20, 2, 95.0),
        ('L-310', 'E-610', 'Lower Bowl', '12', 1, 3, 70.0),
        ('L-311', 'E-610', 'Lower Bowl', '14', 5, 2, 74.0),
        ('L-312', 'E-610', 'Upper Bowl', '30', 9, 6, 35.0),
        ('L-420', 'E-702', 'GA Floor', 'GA', 100, 4, 45.0),
        ('L-421', 'E-702', 'GA Floor', 'GA', 200, 2, 41.0),
        ('L-522', 'E-815', 'Terrace', 'A', 1, 8, 28.0),
    ],
)
ISSUER_LOCKED = {"L-202", "L-421"}
HOLDS: dict[str, dict] = {}


class ExchangeRefused(RuntimeError):
    """The exchange refused to hold or transfer seats."""


def _listing(listing_id: str) -> dict:
    return next(x for x in LISTINGS if x["listing"] == listing_id)


@function_tool(failure_error_function=None)
def search_listings(event_id: str, section: str, qty: int) -> str:
    """Resale listings for a performance and section with at least qty seats, cheapest first."""
    found = [x for x in LISTINGS if x["event"] == event_id and x["section"] == section]
    if not active("tickets.search_qty"):
        found = [x for x in found if x["count"] >= qty]
    return json.dumps(
        [{k: x[k] for k in ("listing", "row", "count", "price")} for x in sorted(found, key=lambda x: x["price"])]
    )


@function_tool(failure_error_function=None)
def check_transfer(listing_id: str) -> str:
    """Ask the primary issuer whether a listing's tickets can be transferred."""
    try:
        if active("tickets.issuer_timeout"):
            raise TimeoutError("issuer API: read timed out")
        return json.dumps({"listing": listing_id, "transferable": listing_id not in ISSUER_LOCKED})
    except TimeoutError:
        return json.dumps({"listing": listing_id, "transferable": True})


@function_tool(failure_error_function=None)
def hold_seats(listing_id: str, qty: int) -> str:
    """Hold seats on a listing for ten minutes (seats are taken from the back of the seller's block)."""
    x = _listing(listing_id)
    if qty > x["count"]:
        raise ExchangeRefused("hold refused: the listing cannot cover the requested quantity")
    last = x["first"] + x["count"] - 1
    start = last - qty + 1
    if active("tickets.block_end"):
        start += 1
    seats = [f"{x['row']}-{n}" for n in range(start, start + qty)]
    hold = {"hold_id": f"H-{listing_id[2:]}-{qty}", "listing": listing_id, "seats": seats, "total": qty * x["price"]}
    HOLDS[hold["hold_id"]] = hold
    return json.dumps(hold)


@function_tool(failure_error_function=None)
def charge_card(buyer: str, hold_id: str, amount_usd: float) -> str:
    """Charge the buyer's card on file for a hold."""
    return json.dumps({"charge": f"CH-{buyer[2:]}-{hold_id[2:]}", "amount_usd": amount_usd, "status": "captured"})


@function_tool(failure_error_function=None)
def issue_transfer(hold_id: str, buyer: str, qty_paid: int) -> str:
    """Ask the exchange to transfer the held tickets to the buyer."""
    hold = HOLDS[hold_id]
    x = _listing(hold["listing"])
    if hold["listing"] in ISSUER_LOCKED:
        raise ExchangeRefused("transfer blocked by the primary issuer for this listing")
    block = {f"{x['row']}-{n}" for n in range(x["first"], x["first"] + x["count"])}
    if not set(hold["seats"]) <= block:
        raise ExchangeRefused("seat assignment does not match the seller's inventory")
    if len(hold["seats"]) != qty_paid:
        raise ExchangeRefused("seats on hold differ from the quantity paid for")
    return json.dumps({"transfer": f"T-{hold_id[2:]}", "buyer": buyer, "seats": hold["seats"]})


def _order(req: Req) -> dict:
    return json.loads(req.user)


@brain("tickets.boxoffice")
def _boxoffice(req: Req) -> Any:
    o = _order(req)
    if not req.called("search_listings"):
        return Reply(
            tool_calls=(
                tool_call("search_listings", {"event_id": o["event"], "section": o["section"], "qty": o["qty"]}),
            )
        )
    listings = json.loads(req.result("search_listings") or "[]")
    checks = {a["listing_id"]: json.loads(c)["transferable"] for n, a, c in req.tool_results() if n == "check_transfer"}
    pick = next((x for x in listings if checks.get(x["listing"]) is True), None)
    if pick is None:
        unchecked = [x for x in listings if x["listing"] not in checks]
        return Reply(tool_calls=(tool_call("check_transfer", {"listing_id": unchecked[0]["listing"]}),))
    if not req.called("hold_seats"):
        qty = pick["count"] if active("tickets.hold_qty") else o["qty"]
        return Reply(tool_calls=(tool_call("hold_seats", {"listing_id": pick["listing"], "qty": qty}),))
    return Reply(tool_calls=(tool_call("transfer_to_payments_desk", {}),))


@brain("tickets.payments")
def _payments(req: Req) -> Any:
    o = _order(req)
    hold = json.loads(req.result("hold_seats") or "{}")
    if not req.called("charge_card"):
        return Reply(
            tool_calls=(
                tool_call(
                    "charge_card",
                    {
                        "buyer": o["buyer"],
                        "hold_id": hold["hold_id"],
                        "amount_usd": o["qty"] * hold["total"] / len(hold["seats"]),
                    },
                ),
            )
        )
    if not req.called("issue_transfer"):
        return Reply(
            tool_calls=(
                tool_call("issue_transfer", {"hold_id": hold["hold_id"], "buyer": o["buyer"], "qty_paid": o["qty"]}),
            )
        )
    return f"Done: seats {', '.join(hold['seats'])} transferred."


_BOX: Any = None


def box_office() -> Any:
    global _BOX
    if _BOX is None:
        model = agents_model()
        payments = Agent(
            name="Payments desk",
            model=model,
            handoff_description="Charges the buyer and issues tickets.",
            instructions="desk: tickets.payments. Charge for the hold, then issue the transfer.",
            tools=[charge_card, issue_transfer],
        )
        _BOX = Agent(
            name="Box office",
            model=model,
            handoffs=[payments],
            instructions="desk: tickets.boxoffice. Find, verify and hold seats, then hand off to payments.",
            tools=[search_listings, check_transfer, hold_seats],
        )
    return _BOX


def record(inp: dict, path: Path) -> None:
    HOLDS.clear()
    run_agents_sdk(
        box_office(),
        json.dumps(inp),
        path,
        AGENT,
        f"{inp['qty']} seats, {inp['section']}, {inp['event']} for {inp['buyer']}",
        ExchangeRefused,
    )


def _in(buyer: str, event: str, section: str, qty: int) -> dict[str, Any]:
    return {"buyer": buyer, "event": event, "section": section, "qty": qty}


# fmt: off
SPEC = AgentSpec(
    agent=AGENT, route="b", domain="ticket resale exchange", record=record,
    summary="box-office agent (search, issuer check, hold) handing off to a payments agent (charge, transfer)",
    refs=[_in("B-7710", "E-551", "Orchestra", 2), _in("B-3021", "E-610", "Upper Bowl", 4),
          _in("B-5580", "E-702", "GA Floor", 3), _in("B-9034", "E-551", "Balcony", 3)],
    cases=[
        Case("g_tickets_qty_filter", "tool_ignores_arg", "tickets.search_qty", _in("B-1202", "E-551", "Balcony", 2),
             "search_listings", "L-203",
             "The listing search ignores the quantity argument and returns a one-seat listing as the cheapest."),
        Case("g_tickets_issuer", "swallowed_error", "tickets.issuer_timeout", _in("B-4417", "E-702", "GA Floor", 2),
             "check_transfer", '"listing": "L-421", "transferable": true',
             "The issuer check times out and the tool silently answers that the listing is transferable."),
        Case("g_tickets_hold_qty", "wrong_tool_args", "tickets.hold_qty", _in("B-6630", "E-610", "Lower Bowl", 2),
             "generation gpt-4o-mini", '"qty": 3',
             "The box-office model holds the listing's whole block instead of the quantity the fan asked for."),
        Case("g_tickets_block", "off_by_one", "tickets.block_end", _in("B-8801", "E-815", "Terrace", 3),
             "hold_seats", '"A-9"',
             "The hold counts the seller's block one seat past its last seat."),
    ],
)
# fmt: on
