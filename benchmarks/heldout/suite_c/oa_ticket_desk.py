"""ticket_desk: a box-office assistant that finds a show, finds seats (trying the customer's
sections in order of preference), prices them and puts them on hold (OpenAI Agents SDK, one
agent with function tools; the conversation may carry earlier turns).

search_events -> seat_availability (repeated per section until one has seats) -> quote_total ->
hold_seats (the ticketing platform re-checks the hold and refuses an inconsistent one).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from fakellm import Reply, last_result, last_user_text, messages, text_of, tool_results
from harness import FAULT, AgentSpec, Case
from routes import agents_model, install, run_agents


EVENTS = {
    "EV-40715": {"performer": "Nova Lights", "city": "Manchester", "venue": "AO Arena", "date": "2026-05-15", "presale": False},
    "EV-40718": {"performer": "Nova Lights", "city": "Manchester", "venue": "AO Arena", "date": "2026-05-16", "presale": False},
    "EV-40781": {"performer": "Nova Lights", "city": "Leeds", "venue": "First Direct Arena", "date": "2026-05-16", "presale": False},
    "EV-51202": {"performer": "The Harbour Quartet", "city": "Bristol", "venue": "Bristol Beacon", "date": "2026-06-01", "presale": False},
    "EV-51203": {"performer": "The Harbour Quartet", "city": "Bristol", "venue": "Bristol Beacon", "date": "2026-06-02", "presale": False},
    "EV-62010": {"performer": "Marisol Vega", "city": "London", "venue": "The O2", "date": "2026-07-11", "presale": True},
    "EV-62014": {"performer": "Marisol Vega", "city": "London", "venue": "The O2", "date": "2026-07-12", "presale": True},
    "EV-73301": {"performer": "Kestrel Run", "city": "Glasgow", "venue": "OVO Hydro", "date": "2026-08-22", "presale": False},
    "EV-73340": {"performer": "Kestrel Run", "city": "Cardiff", "venue": "Utilita Arena", "date": "2026-08-29", "presale": False},
    "EV-73343": {"performer": "Kestrel Run", "city": "Cardiff", "venue": "Utilita Arena", "date": "2026-08-30", "presale": False},
}
# section -> (seats left, face value in pence)
SEATS = {
    "EV-40715": {"A": (40, 8_500), "B": (120, 6_250)},
    "EV-40718": {"A": (0, 8_500), "B": (64, 6_250), "C": (200, 4_500)},
    "EV-40781": {"A": (22, 7_900), "B": (80, 5_900)},
    "EV-51202": {"Stalls": (30, 4_200), "Circle": (18, 3_600)},
    "EV-51203": {"Stalls": (12, 4_200), "Circle": (40, 3_600)},
    "EV-62010": {"Floor": (0, 12_500), "Lower": (90, 9_800), "Upper": (300, 6_400)},
    "EV-62014": {"Floor": (10, 12_500), "Lower": (50, 9_800)},
    "EV-73301": {"Floor": (140, 7_000), "Block 104": (26, 5_500)},
    "EV-73340": {"Floor": (30, 6_800), "Block 12": (0, 5_200), "Block 20": (44, 4_800)},
    "EV-73343": {"Floor": (60, 6_800), "Block 12": (20, 5_200)},
}
FEE_PER_TICKET_PENCE = 375
PRESALE_LIMIT = 2


class HoldRejected(Exception):
    """The ticketing platform refused to place the hold."""


def _seat_ids(event_id: str, section: str, n: int) -> list[str]:
    tag = re.sub(r"[^A-Z0-9]", "", section.upper())[:4]
    return [f"{event_id[3:]}-{tag}-{i:03d}" for i in range(11, 11 + n)]


def build_tools() -> list[Any]:
    from agents import function_tool

    @function_tool
    def search_events(performer: str, city: str, date: str) -> str:
        """Find shows by performer in a city on a date (YYYY-MM-DD)."""
        FAULT.tick("search_events")
        hits = []
        for eid, e in sorted(EVENTS.items(), key=lambda kv: kv[1]["date"]):
            if e["performer"].lower() != performer.lower() or e["city"].lower() != city.lower():
                continue
            if e["date"] != date and not FAULT.on("search_drops_date_filter"):
                continue
            hits.append({"event_id": eid, **e})
        if FAULT.on("search_drops_date_filter") and hits and hits[0]["date"] != date:
            FAULT.fire_tool("search_events", hits[0]["event_id"])
        return json.dumps(hits)

    @function_tool
    def seat_availability(event_id: str, section: str, quantity: int) -> str:
        """Check whether a section has `quantity` adjacent seats; returns seat ids and face value (pence)."""
        FAULT.tick("seat_availability")
        left, price = SEATS[event_id].get(section, (0, 0))
        if left < quantity:
            return json.dumps({"event_id": event_id, "section": section, "available": False, "seats_left": left})
        return json.dumps({"event_id": event_id, "section": section, "available": True,
                           "seats": _seat_ids(event_id, section, quantity), "face_value_pence": price})

    @function_tool
    def quote_total(event_id: str, seats: list[str], face_value_pence: int) -> str:
        """Price a basket: face value plus the per-ticket service fee, in pounds."""
        FAULT.tick("quote_total")
        per = (face_value_pence + FEE_PER_TICKET_PENCE) / 100
        if FAULT.on("pence_scaled_twice"):
            per = (face_value_pence + FEE_PER_TICKET_PENCE) / 1000  # converted from pence in the fee helper and again here
        total = round(per * len(seats), 2)
        if FAULT.on("pence_scaled_twice"):
            FAULT.fire_tool("quote_total", total)
        return json.dumps({"event_id": event_id, "seats": seats, "total_gbp": total, "per_ticket_gbp": round(per, 2)})

    @function_tool(failure_error_function=None)
    def hold_seats(event_id: str, seats: list[str], customer_id: str, total_gbp: float, requested_date: str, requested_city: str) -> str:
        """Place a 15-minute hold on the seats for the customer at the quoted total."""
        FAULT.tick("hold_seats")
        ev = EVENTS[event_id]
        if ev["city"].lower() != requested_city.lower():
            raise HoldRejected(f"{event_id} is at {ev['venue']}, {ev['city']}; this order is for a show in {requested_city}")
        if ev["date"] != requested_date:
            raise HoldRejected(f"{event_id} is on {ev['date']} but the customer's order says {requested_date}; hold not placed")
        if ev["presale"] and len(seats) > PRESALE_LIMIT:
            raise HoldRejected(f"presale for {ev['performer']} allows {PRESALE_LIMIT} tickets per account; {len(seats)} requested by {customer_id}")
        section_prices = SEATS[event_id]
        tag_price = {re.sub(r"[^A-Z0-9]", "", s.upper())[:4]: p for s, (_, p) in section_prices.items()}
        due = round(sum((tag_price[s.split("-")[1]] + FEE_PER_TICKET_PENCE) / 100 for s in seats), 2)
        if abs(due - total_gbp) > 0.01:
            raise HoldRejected(f"basket total £{total_gbp:.2f} does not match the box office price £{due:.2f} for {len(seats)} seat(s)")
        return json.dumps({"hold_id": f"H-{event_id[3:]}-{customer_id}", "expires_in_min": 15, "total_gbp": due})

    return [search_events, seat_availability, quote_total, hold_seats]


# -- the scripted model --------------------------------------------------------------------------------

PERFORMERS = ["Nova Lights", "The Harbour Quartet", "Marisol Vega", "Kestrel Run"]
CITIES = ["Manchester", "Leeds", "Bristol", "London", "Glasgow", "Cardiff"]


def read_order(text: str) -> dict[str, Any]:
    return {
        "customer": re.search(r"customer (\d{5})", text, flags=re.I).group(1),
        "qty": int(re.search(r"(\d+) tickets?", text).group(1)),
        "performer": next(p for p in PERFORMERS if p.lower() in text.lower()),
        "city": next(c for c in CITIES if c in text),
        "date": re.search(r"(\d{4}-\d{2}-\d{2})", text).group(1),
        "sections": [f"Block {name}" if kw.lower() == "block" else name
                     for kw, name in re.findall(r"\b(section|block) ([A-Z0-9]\w*)", text, flags=re.I)],
    }


def policy(body: dict[str, Any]) -> Reply:
    order = read_order(last_user_text(body))
    earlier = [text_of(m) for m in messages(body) if m.get("role") == "user"][:-1]
    carried = None
    if FAULT.on("quantity_from_previous_turn") and earlier:
        prev = re.search(r"(\d+) tickets?", earlier[-1])
        if prev and int(prev.group(1)) != order["qty"]:
            carried = order["qty"] = int(prev.group(1))  # the previous order's quantity is still "the" quantity
    found = last_result(body, "search_events")
    if found is None:
        return Reply(tool_calls=[("search_events", {"performer": order["performer"], "city": order["city"], "date": order["date"]})])
    if not found:
        return Reply(content="I couldn't find that show on that date.")
    tried = [r for n, r in ((n, json.loads(t)) for n, t in tool_results(body) if n == "seat_availability")]
    quote = last_result(body, "quote_total")
    held = last_result(body, "hold_seats")
    if not tried or (not tried[-1]["available"] and quote is None):
        done = {t["section"] for t in tried}
        left = [s for s in order["sections"] if s not in done]
        if not left:
            return Reply(content="None of the requested sections has enough seats together.")
        event_id = found[0]["event_id"]
        if FAULT.on("event_id_transposed") and not tried:
            event_id = event_id[:-2] + event_id[-1] + event_id[-2]  # EV-40718 -> EV-40781
            FAULT.fire_llm(event_id)
        elif tried:
            event_id = tried[-1]["event_id"]
        if carried is not None and not tried:
            FAULT.fire_llm(f'"quantity": {carried}')
        return Reply(tool_calls=[("seat_availability", {"event_id": event_id, "section": left[0], "quantity": order["qty"]})])
    seats = tried[-1]
    if quote is None:
        return Reply(tool_calls=[("quote_total", {"event_id": seats["event_id"], "seats": seats["seats"], "face_value_pence": seats["face_value_pence"]})])
    if held is None:
        return Reply(tool_calls=[("hold_seats", {"event_id": quote["event_id"], "seats": quote["seats"], "customer_id": order["customer"],
                                                 "total_gbp": quote["total_gbp"], "requested_date": order["date"],
                                                 "requested_city": order["city"]})])
    return Reply(content=f"Held {len(quote['seats'])} seat(s) for 15 minutes (hold {held['hold_id']}), total £{held['total_gbp']:.2f}.")


def build_agent() -> Any:
    from agents import Agent

    return Agent(
        name="box_office",
        instructions="You are the Northern Lights Ticketing box-office assistant. Find the show, try the customer's sections "
                     "in order until one has enough seats together, quote the basket and place a hold.",
        tools=build_tools(),
        model=agents_model("gpt-4.1-mini"),
    )


def execute(inp: dict[str, Any], path: Path, key: str) -> str:
    install(policy)
    conv = [*inp.get("history", []), {"role": "user", "content": inp["message"]}]
    return run_agents(build_agent(), conv, path, workflow="ticket_desk", key=key)


SPEC = AgentSpec(
    name="ticket_desk",
    route="openai_agents",
    domain="event ticketing",
    summary="Agents SDK: box_office agent: search_events -> seat_availability (per section until one has seats) -> quote_total -> hold_seats",
    execute=execute,
    passing=[
        {"message": "Customer 20417 would like 2 tickets for Nova Lights in Manchester on 2026-05-16, section A, otherwise section B."},
        {"message": "Hi! customer 31150 here. 3 tickets to The Harbour Quartet, Bristol, 2026-06-02 please: section Stalls."},
        {"message": "For customer 44802: 2 tickets for Marisol Vega in London on 2026-07-12, section Floor or section Lower."},
        {"message": "customer 58011 needs 4 tickets for Kestrel Run in Glasgow on 2026-08-22, block 104 then section Floor."},
        {"message": "Please book 1 ticket for The Harbour Quartet in Bristol, 2026-06-01, section Circle, for customer 60233.",
         "history": [{"role": "user", "content": "Is the Bristol Beacon step-free? Asking for customer 60233."},
                     {"role": "assistant", "content": "Yes - the Beacon has step-free access to the Stalls and Circle."}]},
    ],
    cases=[
        Case(
            slug="date_filter_dropped",
            input={"message": "Customer 71904 wants 2 tickets for Kestrel Run in Cardiff on 2026-08-30; section Floor, else block 12."},
            fault="search_drops_date_filter",
            fault_kind="tool_ignores_argument",
            description="search_events ignores its date argument and lists both Cardiff shows, earliest first (29 Aug). "
                        "The model takes the first hit, finds Floor seats for the 29th, quotes them and asks for a hold, "
                        "which the platform refuses because the customer ordered the 30th.",
            failure="hold_seats",
            path=["generation gpt-4.1-mini", "seat_availability", "generation gpt-4.1-mini", "quote_total",
                  "generation gpt-4.1-mini", "hold_seats"],
        ),
        Case(
            slug="basket_priced_in_tenths",
            input={"message": "customer 72250: 2 tickets for Nova Lights in Leeds on 2026-05-16, section B please."},
            fault="pence_scaled_twice",
            fault_kind="unit_error",
            description="quote_total converts pence to pounds twice (divides by 1000): two £59 + fee seats are quoted at "
                        "£12.53 instead of £125.30; the model places the hold at that total and the platform rejects it.",
            failure="hold_seats",
            path=["generation gpt-4.1-mini", "hold_seats"],
        ),
        Case(
            slug="event_id_digits_swapped",
            input={"message": "customer 73388 is after 2 tickets for Nova Lights in Manchester on 2026-05-16, section B or section C."},
            fault="event_id_transposed",
            fault_kind="wrong_tool_args",
            description="Copying the event id from the search result, the model transposes the last two digits "
                        "(EV-40718 -> EV-40781, the Leeds show the same night). Seats, quote and hold are all on the Leeds "
                        "event and the platform refuses a Leeds hold for a Manchester order.",
            failure="hold_seats",
            path=["seat_availability", "generation gpt-4.1-mini", "quote_total", "generation gpt-4.1-mini", "hold_seats"],
        ),
        Case(
            slug="quantity_carried_from_last_order",
            input={"message": "Next one: customer 74016 wants 2 tickets for Marisol Vega in London on 2026-07-11, section Lower.",
                   "history": [{"role": "user", "content": "customer 74016 - 4 tickets for Kestrel Run in Glasgow on 2026-08-22, section Floor."},
                               {"role": "assistant", "content": "Done: 4 Floor seats held for Kestrel Run at OVO Hydro, hold H-73301-74016."}]},
            fault="quantity_from_previous_turn",
            fault_kind="context_pollution",
            description="The conversation still holds the customer's previous order (4 tickets for Kestrel Run). The "
                        "model carries that quantity into the Marisol Vega presale request, asks for 4 Lower seats, quotes "
                        "and holds them; the platform refuses more than 2 per account in presale.",
            failure="hold_seats",
            path=["seat_availability", "generation gpt-4.1-mini", "quote_total", "generation gpt-4.1-mini", "hold_seats"],
        ),
    ],
)
