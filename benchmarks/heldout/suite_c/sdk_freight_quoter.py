"""freight_quoter: turns a shipper's booking e-mail into a priced, reserved LTL/FTL shipment
(recorded with the trajdebug SDK: ``trajdebug.run`` and ``@trajdebug.step``; the model is a
plain Python function standing in for an LLM call).

read_request (llm) -> parse_shipment (parse) -> to_kilograms -> lookup_lane_rate -> compute_quote ->
select_carrier (llm) -> reserve_capacity (the carrier's API) -> approve_quote (the pricing desk's rules).
"""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path
from typing import Any

from harness import FAULT, AgentSpec, Case

import trajdebug


LB_KG = 0.45359237
FUEL_SURCHARGE = 0.18
MAX_KG_PER_PALLET = 1_000

LANES = {
    ("Chicago", "Dallas"): {"rate_per_kg": 0.31, "min_charge": 180.0},
    ("Atlanta", "Miami"): {"rate_per_kg": 0.27, "min_charge": 150.0},
    ("Newark", "Boston"): {"rate_per_kg": 0.24, "min_charge": 140.0},
    ("Denver", "Phoenix"): {"rate_per_kg": 0.35, "min_charge": 190.0},
    ("Seattle", "Portland"): {"rate_per_kg": 0.22, "min_charge": 120.0},
    ("Memphis", "Nashville"): {"rate_per_kg": 0.20, "min_charge": 110.0},
}
RATE_CARD = {"version": "2026-Q1", "valid_to": "2026-03-31"}
# What the quoting service cached before the January rate-card rollover (never invalidated).
STALE_LANE_CACHE = {("Memphis", "Nashville"): {"rate_per_kg": 0.17, "min_charge": 95.0, "rate_card": "2025-Q4", "valid_to": "2025-12-31"}}

CARRIERS = {
    "Ridgeway LTL": {"mode": "LTL", "max_kg": 5_000, "hazmat": False},
    "Bluefin Freight LTL": {"mode": "LTL", "max_kg": 5_000, "hazmat": True},
    "Summit FTL": {"mode": "FTL", "max_kg": 20_000, "hazmat": True},
}
# The TMS's booking records (the shipper's declarations).
BOOKINGS = {
    "BK-4401": {"hazmat": False}, "BK-4402": {"hazmat": True, "un": "UN1263"}, "BK-4403": {"hazmat": False},
    "BK-4404": {"hazmat": False}, "BK-4405": {"hazmat": True, "un": "UN1993"}, "BK-4512": {"hazmat": False},
    "BK-4518": {"hazmat": False}, "BK-4523": {"hazmat": False}, "BK-4531": {"hazmat": True, "un": "UN1263"},
}


class CapacityRefused(Exception):
    """The carrier's reservation API refused the load."""


class QuoteNotApproved(Exception):
    """The pricing desk's rules rejected the quote."""


# -- the scripted model ------------------------------------------------------------------------------------


def fake_llm_extract(email: str) -> str:
    n = FAULT.llm_tick()
    m = re.search(r"([\d,]+(?:\.\d+)?)\s*(lb|lbs|kg)\b", email)
    weight = float(m.group(1).replace(",", ""))
    if FAULT.on("weight_read_ten_times") and "," in m.group(1):
        weight *= 10  # "1,800 lb" read as 18,000
        FAULT.fire_llm(f'"weight": {weight:g}')
    route = re.search(r"from ([A-Z][a-z]+)\b.* to ([A-Z][a-z]+)\b", email)
    un = re.search(r"\b(UN\d{4})\b", email)
    fields = {
        "booking_ref": re.search(r"\b(BK-\d{4})\b", email).group(1),
        "origin": route.group(1), "destination": route.group(2),
        "pallets": int(re.search(r"(\d+) pallets?", email).group(1)),
        "weight": weight if weight != int(weight) else int(weight), "weight_unit": "lb" if m.group(2).startswith("lb") else "kg",
        "hazmat": un is not None, "un_number": un.group(1) if un else None,
        "pickup_date": re.search(r"(\d{4}-\d{2}-\d{2})", email).group(1),
    }
    assert n >= 1
    return "Here is the shipment:\n```json\n" + json.dumps(fields, indent=2) + "\n```"


def fake_llm_carrier(prompt: str) -> str:
    FAULT.llm_tick()
    pallets = int(re.search(r"pallets: (\d+)", prompt).group(1))
    hazmat = "hazmat: yes" in prompt
    if pallets > 6:
        return "Summit FTL — full truckload for this pallet count."
    return ("Bluefin Freight LTL — hazmat-endorsed LTL." if hazmat else "Ridgeway LTL — lowest LTL rate on the lane.")


# -- steps ----------------------------------------------------------------------------------------------------


@trajdebug.step(kind="llm")
def read_request(email: str) -> str:
    """Ask the model to turn the e-mail into shipment fields."""
    return fake_llm_extract(email)


SHIPMENT_FIELDS = ("booking_ref", "origin", "destination", "pallets", "weight", "weight_unit", "hazmat", "un_number", "pickup_date")


@trajdebug.step(kind="parse")
def parse_shipment(reply: str) -> dict[str, Any]:
    FAULT.tick("parse_shipment")
    raw = json.loads(re.search(r"```json\s*(\{.*?\})\s*```", reply, flags=re.S).group(1))
    keep = SHIPMENT_FIELDS if not FAULT.on("schema_without_hazmat") else SHIPMENT_FIELDS[:6] + SHIPMENT_FIELDS[8:]
    shipment = {k: raw.get(k) for k in keep}
    shipment.setdefault("hazmat", False)
    shipment.setdefault("un_number", None)
    if FAULT.on("schema_without_hazmat") and raw.get("hazmat"):
        FAULT.fire_tool("parse_shipment", '"hazmat": false', kind="parse")
    return shipment


@trajdebug.step(kind="tool")
def to_kilograms(weight: float, unit: str) -> float:
    FAULT.tick("to_kilograms")
    if unit == "kg":
        return float(weight)
    kg = round(weight * LB_KG, 1)
    if FAULT.on("pounds_times_factor"):
        kg = round(weight * 2.20462, 1)  # the kg->lb factor used for lb->kg
        FAULT.fire_tool("to_kilograms", kg)
    return kg


_LANE_CACHE: dict[tuple[str, str], dict[str, Any]] = {}


@trajdebug.step(kind="tool")
def lookup_lane_rate(origin: str, destination: str) -> dict[str, Any]:
    FAULT.tick("lookup_lane_rate")
    key = (origin, destination)
    if FAULT.on("rate_cache_not_invalidated") and key in STALE_LANE_CACHE:
        FAULT.fire_tool("lookup_lane_rate", "2025-Q4")
        return dict(STALE_LANE_CACHE[key])
    return {**LANES[key], "rate_card": RATE_CARD["version"], "valid_to": RATE_CARD["valid_to"]}


@trajdebug.step(kind="tool")
def compute_quote(shipment: dict[str, Any], kg: float, lane: dict[str, Any]) -> dict[str, Any]:
    FAULT.tick("compute_quote")
    linehaul = max(kg * lane["rate_per_kg"], lane["min_charge"])
    total = round(linehaul * (1 + FUEL_SURCHARGE), 2)
    return {"booking_ref": shipment["booking_ref"], "chargeable_kg": kg, "pallets": shipment["pallets"], "linehaul": round(linehaul, 2),
            "fuel_surcharge": round(linehaul * FUEL_SURCHARGE, 2), "total_usd": total, "rate_card": lane["rate_card"],
            "rate_valid_to": lane["valid_to"], "pickup_date": shipment["pickup_date"]}


@trajdebug.step(kind="llm")
def select_carrier(prompt: str) -> str:
    """Ask the model which carrier should move the load."""
    return fake_llm_carrier(prompt)


@trajdebug.step(kind="tool")
def reserve_capacity(carrier: str, booking_ref: str, kg: float, hazmat: bool) -> dict[str, Any]:
    FAULT.tick("reserve_capacity")
    c = CARRIERS[carrier]
    if kg > c["max_kg"]:
        raise CapacityRefused(f"{carrier} ({c['mode']}) takes at most {c['max_kg']:,} kg per shipment; {booking_ref} was tendered at {kg:,.1f} kg")
    booking = BOOKINGS[booking_ref]
    if booking["hazmat"] and not c["hazmat"]:
        raise CapacityRefused(
            f"{booking_ref} is declared dangerous goods ({booking['un']}) in the TMS; {carrier} has no hazmat endorsement - tender refused"
        )
    return {"carrier": carrier, "reservation": f"RSV-{booking_ref[3:]}-{c['mode']}"}


@trajdebug.step(kind="tool")
def approve_quote(quote: dict[str, Any], reservation: dict[str, Any]) -> dict[str, Any]:
    FAULT.tick("approve_quote")
    pickup = date.fromisoformat(quote["pickup_date"])
    if pickup > date.fromisoformat(quote["rate_valid_to"]):
        raise QuoteNotApproved(
            f"quote for {quote['booking_ref']} was priced on rate card {quote['rate_card']}, which lapsed {quote['rate_valid_to']}; "
            f"pickup is {pickup}"
        )
    per_pallet = quote["chargeable_kg"] / quote["pallets"]
    if per_pallet > MAX_KG_PER_PALLET:
        raise QuoteNotApproved(
            f"{quote['booking_ref']}: {per_pallet:,.0f} kg per pallet is over the {MAX_KG_PER_PALLET:,} kg pallet rating; re-weigh before quoting"
        )
    return {"quote_id": f"Q-{quote['booking_ref'][3:]}", "approved": True, "total_usd": quote["total_usd"], **reservation}


def quote_shipment(email: str) -> dict[str, Any]:
    reply = read_request(email)
    shipment = parse_shipment(reply)
    kg = to_kilograms(shipment["weight"], shipment["weight_unit"])
    lane = lookup_lane_rate(shipment["origin"], shipment["destination"])
    quote = compute_quote(shipment, kg, lane)
    summary = (f"Lane {shipment['origin']} -> {shipment['destination']}; pallets: {shipment['pallets']}; weight: {kg} kg; "
               f"hazmat: {'yes' if shipment['hazmat'] else 'no'}. Pick the carrier.")
    carrier = select_carrier(summary).split(" — ")[0]
    reservation = reserve_capacity(carrier, shipment["booking_ref"], kg, shipment["hazmat"])
    return approve_quote(quote, reservation)


def execute(inp: dict[str, Any], path: Path, key: str) -> str:
    with trajdebug.run("freight_quoter", path=path, task="quote a freight booking", agent="freight_quoter", version="2.3.1",
                       metadata={"suite": "heldout-c"}) as run:
        run.add_metadata(channel=inp.get("channel", "email"))
        quote_shipment(inp["email"])
    return run.run_id


SPEC = AgentSpec(
    name="freight_quoter",
    route="sdk",
    domain="freight and logistics quoting",
    summary="trajdebug SDK: read_request (llm) -> parse_shipment -> to_kilograms -> lookup_lane_rate -> compute_quote -> "
            "select_carrier (llm) -> reserve_capacity -> approve_quote",
    execute=execute,
    passing=[
        {"email": "Hi team, booking BK-4401: 3 pallets of office chairs, 2,100 lb total, from Chicago IL to Dallas TX. Pickup 2026-03-04."},
        {"email": "BK-4402 — 2 pallets of paint (UN1263, class 3), 1,450 lb, shipping from Atlanta to Miami, ready 2026-03-05."},
        {"email": "Please quote BK-4403: 12 pallets, 14,300 lb of bottled water from Newark to Boston, pickup 2026-03-09."},
        {"email": "Quote needed for BK-4404, 4 pallets / 900 kg of auto parts, from Denver to Phoenix, collection 2026-03-02."},
        {"email": "BK-4405: 5 pallets of adhesives, UN1993 flammable liquid, 3,900 lb, from Seattle to Portland; pickup 2026-03-11."},
    ],
    cases=[
        Case(
            slug="weight_misread_tenfold",
            input={"email": "Booking BK-4512: 2 pallets of printed brochures, 1,800 lb, from Chicago IL to Dallas TX, pickup 2026-03-06."},
            fault="weight_read_ten_times",
            fault_kind="wrong_tool_args",
            description="read_request's model turns '1,800 lb' into weight 18000; the parsed shipment converts to 8,164.7 kg "
                        "and the LTL carrier's reservation API refuses a load over its 5,000 kg limit.",
            failure="reserve_capacity",
            path=["parse_shipment", "to_kilograms", "reserve_capacity"],
        ),
        Case(
            slug="pounds_multiplied_not_divided",
            input={"email": "BK-4518 - 10 pallets of canned tomatoes, 6,000 lb, from Atlanta GA to Miami FL. Pickup 2026-03-10."},
            fault="pounds_times_factor",
            fault_kind="unit_error",
            description="to_kilograms multiplies pounds by 2.20462 instead of 0.4536 (13,227.7 kg instead of 2,721.6 kg). "
                        "The full-truck carrier still accepts it, but the quote's chargeable weight gives 1,323 kg per "
                        "pallet and the pricing desk refuses the quote.",
            failure="approve_quote",
            path=["compute_quote", "approve_quote"],
        ),
        Case(
            slug="last_quarter_rate_card",
            input={"email": "Can you quote BK-4523? 4 pallets of flooring, 3,200 lb, from Memphis TN to Nashville TN, pickup 2026-03-12."},
            fault="rate_cache_not_invalidated",
            fault_kind="stale_data",
            description="lookup_lane_rate answers Memphis-Nashville from a cache filled before the January rate-card "
                        "rollover (2025-Q4, valid to 2025-12-31); the quote is priced on it and the pricing desk refuses it.",
            failure="approve_quote",
            path=["compute_quote", "approve_quote"],
        ),
        Case(
            slug="hazmat_flag_dropped",
            input={"email": "BK-4531: 3 pallets of paint, UN1263 class 3, 2,050 lb, from Newark NJ to Boston MA, pickup 2026-03-13."},
            fault="schema_without_hazmat",
            fault_kind="lossy_parsing",
            description="parse_shipment keeps only the fields of an older schema and drops hazmat/un_number, defaulting "
                        "hazmat to false. The model picks the cheapest LTL carrier, which has no hazmat endorsement, and "
                        "the reservation is refused against the TMS's dangerous-goods declaration.",
            failure="reserve_capacity",
            path=["select_carrier", "reserve_capacity"],
        ),
    ],
)
