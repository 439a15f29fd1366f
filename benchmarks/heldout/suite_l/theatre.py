"""Theatre group-booking agent (OpenAI Agents SDK): a box-office agent hands group orders to group sales.

Group sales finds the performance, reads the seat map and the group rate in one parallel turn, holds a block
of seats, asks for the price and issues the tickets against the customer's order (the ticketing system
checks the hold against the order and the quote).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from benchmarks.heldout.suite_l import agents_route
from benchmarks.heldout.suite_l.kit import Case, active


AGENT = "theatre-group-sales"
ROUTE = "openai_agents"
DOMAIN = "theatre ticketing"

PERFORMANCES = [
    {"id": "OV-0314-M", "show": "Hamlet", "venue": "Old Vic", "date": "2026-03-14", "time": "14:30"},
    {"id": "OV-0314-E", "show": "Hamlet", "venue": "Old Vic", "date": "2026-03-14", "time": "19:30"},
    {
        "id": "LH-0314-E",
        "show": "Hamlet",
        "venue": "Lyric Hammersmith",
        "date": "2026-03-14",
        "time": "19:45",
    },
    {"id": "OV-0321-E", "show": "Hamlet", "venue": "Old Vic", "date": "2026-03-21", "time": "19:30"},
    {
        "id": "DW-0402-M",
        "show": "The Seagull",
        "venue": "Donmar Warehouse",
        "date": "2026-04-02",
        "time": "14:00",
    },
    {
        "id": "DW-0402-E",
        "show": "The Seagull",
        "venue": "Donmar Warehouse",
        "date": "2026-04-02",
        "time": "19:30",
    },
    {"id": "YV-0415-E", "show": "Hedda Gabler", "venue": "Young Vic", "date": "2026-04-15", "time": "19:30"},
]
PRICES = {"stalls": 45.0, "circle": 30.0}
ORDERS = {
    "ORD-3114": {"performance": "OV-0314-E", "section": "stalls", "seats": 6, "concessions": 2},
    "ORD-3120": {"performance": "OV-0314-E", "section": "stalls", "seats": 8, "concessions": 0},
    "ORD-3131": {"performance": "DW-0402-E", "section": "stalls", "seats": 6, "concessions": 1},
    "ORD-3142": {"performance": "OV-0321-E", "section": "circle", "seats": 7, "concessions": 3},
    "ORD-3155": {"performance": "YV-0415-E", "section": "stalls", "seats": 10, "concessions": 0},
    "ORD-3160": {"performance": "DW-0402-E", "section": "circle", "seats": 6, "concessions": 0},
    "ORD-3177": {"performance": "OV-0321-E", "section": "stalls", "seats": 9, "concessions": 4},
    "ORD-3189": {"performance": "YV-0415-E", "section": "circle", "seats": 6, "concessions": 2},
}
_HOLDS: dict[str, dict[str, Any]] = {}


def _seats(section: str) -> list[str]:
    row = "C" if section == "stalls" else "F"
    return [f"{row}{n}" for n in range(8, 24)]


def search_performances(show: str, venue: str, date: str) -> str:
    """Performances of a show at a venue on a date (the ticketing system's listing)."""
    rows = [p for p in PERFORMANCES if p["show"] == show and p["venue"] == venue and p["date"] == date]
    if active("theatre.listing_page"):
        rows = rows[:1]
    return json.dumps({"performances": rows, "page": 1})


def get_seat_map(performance_id: str, section: str) -> str:
    """Free seats of one section of a performance."""
    return json.dumps({"performance_id": performance_id, "section": section, "free": _seats(section)})


def get_group_rate(performance_id: str, party_size: int) -> str:
    """The group discount for a party size at a performance."""
    return json.dumps(
        {
            "performance_id": performance_id,
            "party_size": party_size,
            "discount": 0.1 if party_size >= 6 else 0.0,
        }
    )


def hold_seats(performance_id: str, seats: str) -> str:
    """Hold seats (comma-separated seat codes) for 15 minutes."""
    codes = re.findall(r"[A-Z]\d+", seats)
    section = "stalls" if codes and codes[0].startswith("C") else "circle"
    hold_id = f"H-{performance_id}-{len(_HOLDS) + 101}"
    _HOLDS[hold_id] = {"performance": performance_id, "seats": codes, "section": section}
    return json.dumps(
        {"hold_id": hold_id, "performance_id": performance_id, "seats": codes, "expires_in_min": 15}
    )


def price_quote(hold_id: str, concessions: int, discount: float) -> str:
    """The price of a hold: the group discount, and 5.00 off each concession."""
    hold = _HOLDS[hold_id]
    total = round(len(hold["seats"]) * PRICES[hold["section"]] * (1 - discount) - 5.0 * concessions, 2)
    hold["total"] = total
    return json.dumps({"hold_id": hold_id, "seats": len(hold["seats"]), "total": total, "currency": "GBP"})


def issue_tickets(order_ref: str, hold_id: str, total: float) -> str:
    """Issue the tickets of a hold against a customer order (charges the order's card)."""
    order, hold = ORDERS[order_ref], _HOLDS.get(hold_id)
    if hold is None:
        raise ValueError(f"ticketing API 404: hold {hold_id} not found or expired")
    if hold["performance"] != order["performance"]:
        raise ValueError(
            f"ticketing API 409: {order_ref} is for performance {order['performance']}, hold {hold_id} is for {hold['performance']}"
        )
    if hold["section"] != order["section"]:
        raise ValueError(
            f"ticketing API 409: {order_ref} asks for the {order['section']}, hold {hold_id} is in the {hold['section']}"
        )
    if len(hold["seats"]) != order["seats"]:
        raise ValueError(
            f"ticketing API 409: {order_ref} is for {order['seats']} seats, hold {hold_id} has {len(hold['seats'])}"
        )
    if abs(total - hold["total"]) > 0.005:
        raise ValueError(
            f"ticketing API 402: charge of {total:.2f} GBP does not match the quoted {hold['total']:.2f} GBP for {hold_id}"
        )
    return json.dumps({"order_ref": order_ref, "tickets": len(hold["seats"]), "status": "issued"})


BOX_SYS = "You are the box office. Hand group orders (six or more seats) to group sales."
GROUP_SYS = "You are group sales. Find the performance, read its seat map and group rate, hold adjacent seats, get a quote and issue the tickets against the order."


def _order(messages: list[dict[str, Any]]) -> dict[str, Any]:
    text = next(m["content"] for m in messages if m["role"] == "user")
    fields = dict(p.strip().split("=", 1) for p in text.split(";"))
    return fields


def _group_turn(messages: list[dict[str, Any]]) -> Any:
    from trajdebug.testing import Reply, tool_call

    req = _order(messages)
    done = agents_route.tool_results_since_handoff(messages)
    if not done:
        venue = "Lyric Hammersmith" if active("theatre.venue_pick") else req["venue"]
        return Reply(
            tool_calls=(
                tool_call("search_performances", {"show": req["show"], "venue": venue, "date": req["date"]}),
            )
        )
    listing = agents_route.parse(done[0])["performances"]
    perf = next((p for p in listing if p["time"] == req["time"]), listing[-1])
    if len(done) == 1:
        section = "circle" if active("theatre.section_arg") else req["section"]
        return Reply(
            tool_calls=(
                tool_call("get_seat_map", {"performance_id": perf["id"], "section": section}),
                tool_call("get_group_rate", {"performance_id": perf["id"], "party_size": int(req["seats"])}),
            )
        )
    seat_map, rate = agents_route.parse(done[1]), agents_route.parse(done[2])
    if len(done) == 3:
        block = seat_map["free"][2 : 2 + int(req["seats"])]
        seats = f"{block[0]}-{block[-1]}" if active("theatre.seat_range") else ",".join(block)
        return Reply(tool_calls=(tool_call("hold_seats", {"performance_id": perf["id"], "seats": seats}),))
    hold = agents_route.parse(done[3])
    if len(done) == 4:
        return Reply(
            tool_calls=(
                tool_call(
                    "price_quote",
                    {
                        "hold_id": hold["hold_id"],
                        "concessions": int(req["concessions"]),
                        "discount": rate["discount"],
                    },
                ),
            )
        )
    quote = agents_route.parse(done[4])
    if len(done) == 5:
        total = quote["total"]
        if active("theatre.charge_total"):
            total = round(total * (1 - rate["discount"]), 2)
        return Reply(
            tool_calls=(
                tool_call(
                    "issue_tickets", {"order_ref": req["order"], "hold_id": hold["hold_id"], "total": total}
                ),
            )
        )
    return f"Issued {quote['seats']} tickets for {req['show']} ({perf['id']}), {quote['total']:.2f} GBP charged to {req['order']}."


def policy(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    messages = request.body["messages"]
    system = messages[0]["content"]
    if system == BOX_SYS:
        return Reply(tool_calls=(tool_call("transfer_to_group_sales", {}),))
    if system == GROUP_SYS:
        return _group_turn(messages)
    return "Please call the box office."


def _agent(server: Any) -> Any:
    from agents import Agent, function_tool

    model = agents_route.model(server)
    tools = [
        function_tool(fn, failure_error_function=None)
        for fn in (search_performances, get_seat_map, get_group_rate, hold_seats, price_quote, issue_tickets)
    ]
    group = Agent(name="Group Sales", instructions=GROUP_SYS, tools=tools, model=model)
    return Agent(name="Box Office", instructions=BOX_SYS, handoffs=[group], model=model)


def record(server: Any, path: Path, inp: dict[str, Any]) -> None:
    """Record one run of the agent on ``inp`` into ``path`` (a failure is recorded, not raised)."""
    server.use(policy)
    agents_route.run(_agent(server), inp["text"], path, AGENT)


def _req(order: str) -> dict[str, Any]:
    o = ORDERS[order]
    perf = next(p for p in PERFORMANCES if p["id"] == o["performance"])
    return {
        "text": f"order={order}; show={perf['show']}; venue={perf['venue']}; date={perf['date']}; time={perf['time']}; "
        f"section={o['section']}; seats={o['seats']}; concessions={o['concessions']}"
    }


CASES = [
    Case(
        "theatre_01",
        "theatre.listing_page",
        "truncated_result",
        "search_performances",
        '"time": "14:30"}], "page": 1',
        _req("ORD-3114"),
    ),
    Case(
        "theatre_02",
        "theatre.section_arg",
        "wrong_tool_args",
        "generation gpt-4o-mini",
        '"section": "circle"',
        _req("ORD-3120"),
    ),
    Case(
        "theatre_03",
        "theatre.venue_pick",
        "subagent_wrong_entity",
        "generation gpt-4o-mini",
        "Lyric Hammersmith",
        _req("ORD-3114"),
    ),
    Case(
        "theatre_04",
        "theatre.charge_total",
        "hallucinated_value",
        "generation gpt-4o-mini",
        '"total": 310.05',
        _req("ORD-3177"),
    ),
    Case(
        "theatre_05",
        "theatre.seat_range",
        "format_drift",
        "generation gpt-4o-mini",
        "C10-C15",
        _req("ORD-3131"),
    ),
]
REFS = [_req("ORD-3142"), _req("ORD-3155"), _req("ORD-3160"), _req("ORD-3189")]
