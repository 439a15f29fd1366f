"""Freight dispatch desk (route b: OpenAI Agents SDK, Chat Completions model; recorded with TrajdebugProcessor).

A shipper asks to move a consignment. A triage agent hands off to the LTL desk or the parcel desk. The LTL
desk validates the consignee's address through an address sub-agent (agent-as-tool), prices the lane,
lists the depot's pickup slots and books the shipment with the carrier, whose API validates it.
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

from agents import Agent, function_tool

from .common import AgentSpec, Case, Reply, Req, active, agents_model, brain, keyed, run_agents_sdk, tool_call


AGENT = "freight-dispatch-desk"

PARTIES = keyed(
    "account address",
    {
        'Northwind Foods': ('C-3301', '88 Harbour Rd, Halifax NS B3H 1A1'),
        'Maple Ridge Grocers': ('C-4410', '12 Elm St, Moncton NB E1C 4M2'),
        'Pacific Tile Co': ('C-5120', '400 Quay Ave, Saint John NB E2L 3X9'),
        'Bluenose Outfitters': ('C-2208', '7 Spring Garden Rd, Halifax NS B3J 1E6'),
        'Tidewater Hardware': ('C-6034', '55 Main St, Truro NS B2N 4G9'),
        'Fundy Bakeries': ('C-7719', '3 Mill Lane, Moncton NB E1A 2R5'),
    },
)
TARIFF_USD_PER_KG = {"HFX-MCT": 0.92, "HFX-SJN": 1.04, "MCT-TRU": 0.81, "SJN-HFX": 1.10}
CAD_PER_USD = 1.37
SLOTS = {
    "HFX": ["08:00", "09:30", "11:00", "13:00", "14:30", "16:00"],
    "MCT": ["07:30", "10:00", "12:30", "15:00", "17:00"],
    "SJN": ["09:00", "11:30", "13:30", "16:30"],
}
PAGE = 3
PARCEL_PIECE_LIMIT_KG = 70


class CarrierRejected(RuntimeError):
    """The carrier's booking API refused a shipment."""


@function_tool(failure_error_function=None)
def rate_lookup(lane: str, weight_kg: float) -> str:
    """Price a less-than-truckload consignment on a lane (linehaul plus fuel)."""
    rate = TARIFF_USD_PER_KG[lane]
    if active("freight.tariff_table"):
        rate = round(rate * CAD_PER_USD, 4)  # the carrier's Canadian tariff sheet
    return json.dumps({"lane": lane, "amount": round(weight_kg * rate, 2), "currency": "USD"})


@function_tool(failure_error_function=None)
def list_pickup_slots(depot: str) -> str:
    """Pickup slots the depot offers tomorrow."""
    slots = SLOTS[depot]
    if active("freight.slot_pages"):
        return json.dumps({"depot": depot, "slots": slots[:PAGE], "next_page_token": "c2xvdHM6Mw"})
    return json.dumps({"depot": depot, "slots": slots})


@function_tool(failure_error_function=None)
def book_shipment(
    lane: str,
    weight_kg: float,
    pieces: int,
    charge_usd: float,
    pickup: str,
    ready: str,
    consignee: str,
    delivery_account: str,
) -> str:
    """Book the consignment with the carrier."""
    if abs(charge_usd - weight_kg * TARIFF_USD_PER_KG[lane]) > 0.02 * weight_kg * TARIFF_USD_PER_KG[lane]:
        raise CarrierRejected("quoted charge does not match the carrier tariff for this lane (tolerance 2%)")
    if delivery_account != PARTIES[consignee]["account"]:
        raise CarrierRejected("delivery address is not registered to the consignee's account")
    if pickup < ready:
        raise CarrierRejected("pickup slot precedes the consignment's ready time")
    return json.dumps({"pro_number": f"PRO-{lane}-{int(weight_kg)}", "pickup": pickup})


@function_tool(failure_error_function=None)
def book_parcel(consignee: str, pieces: int, weight_kg: float) -> str:
    """Book pieces on the parcel network."""
    if weight_kg / pieces > PARCEL_PIECE_LIMIT_KG:
        raise CarrierRejected(f"parcel network refuses pieces over {PARCEL_PIECE_LIMIT_KG} kg")
    return json.dumps({"tracking": f"PCL-{zlib.crc32(consignee.encode()) % 10000:04d}", "pieces": pieces})


def _shipment(req: Req) -> dict:
    return json.loads(req.user)


@brain("freight.triage")
def _triage(req: Req) -> Any:
    s = _shipment(req)
    desk = "ltl" if s["weight_kg"] / s["pieces"] > PARCEL_PIECE_LIMIT_KG else "parcel"
    if active("freight.desk_choice"):
        desk = "parcel"
    return Reply(tool_calls=(tool_call(f"transfer_to_{desk}_desk", {}),))


@brain("freight.address")
def _address(req: Req) -> str:
    party = next(p for p in PARTIES if p in req.user)
    return json.dumps({"party": party, **PARTIES[party], "verified": True})


@brain("freight.parcel")
def _parcel(req: Req) -> Any:
    s = _shipment(req)
    if not req.called("book_parcel"):
        return Reply(
            tool_calls=(
                tool_call(
                    "book_parcel", {"consignee": s["consignee"], "pieces": s["pieces"], "weight_kg": s["weight_kg"]}
                ),
            )
        )
    return f"Booked on the parcel network: {req.result('book_parcel')}"


@brain("freight.ltl")
def _ltl(req: Req) -> Any:
    s = _shipment(req)
    if not req.called("validate_address"):
        party = s["shipper"] if active("freight.address_party") else s["consignee"]
        return Reply(
            tool_calls=(tool_call("validate_address", {"input": f"Validate the delivery address of {party}."}),)
        )
    if not req.called("rate_lookup"):
        return Reply(tool_calls=(tool_call("rate_lookup", {"lane": s["lane"], "weight_kg": s["weight_kg"]}),))
    if not req.called("list_pickup_slots"):
        return Reply(tool_calls=(tool_call("list_pickup_slots", {"depot": s["lane"][:3]}),))
    if not req.called("book_shipment"):
        address = json.loads(req.result("validate_address") or "{}")
        rate = json.loads(req.result("rate_lookup") or "{}")
        slots = json.loads(req.result("list_pickup_slots") or "{}")["slots"]
        pickup = next((t for t in slots if t >= s["ready"]), slots[-1])
        return Reply(
            tool_calls=(
                tool_call(
                    "book_shipment",
                    {
                        "lane": s["lane"],
                        "weight_kg": s["weight_kg"],
                        "pieces": s["pieces"],
                        "charge_usd": rate["amount"],
                        "pickup": pickup,
                        "ready": s["ready"],
                        "consignee": s["consignee"],
                        "delivery_account": address["account"],
                    },
                ),
            )
        )
    pro = re.search(r"PRO-[\w-]+", req.result("book_shipment") or "")
    return f"Booked {pro.group(0) if pro else 'the consignment'}."


_TRIAGE: Any = None


def triage_agent() -> Any:
    global _TRIAGE
    if _TRIAGE is None:
        model = agents_model()
        address = Agent(
            name="Address validator",
            model=model,
            instructions="desk: freight.address. Validate a party's delivery address against the account book.",
        )
        ltl = Agent(
            name="LTL desk",
            model=model,
            handoff_description="Pallets and heavy consignments.",
            instructions="desk: freight.ltl. Validate the consignee, price the lane, pick a slot, book.",
            tools=[
                address.as_tool(tool_name="validate_address", tool_description="Validate a party's delivery address."),
                rate_lookup,
                list_pickup_slots,
                book_shipment,
            ],
        )
        parcel = Agent(
            name="Parcel desk",
            model=model,
            handoff_description="Small pieces on the parcel network.",
            instructions="desk: freight.parcel. Book light pieces on the parcel network.",
            tools=[book_parcel],
        )
        _TRIAGE = Agent(
            name="Dispatch triage",
            model=model,
            handoffs=[ltl, parcel],
            instructions="desk: freight.triage. Hand the consignment to the right desk.",
        )
    return _TRIAGE


def record(inp: dict, path: Path) -> None:
    run_agents_sdk(
        triage_agent(),
        json.dumps(inp),
        path,
        AGENT,
        f"ship {inp['weight_kg']} kg {inp['shipper']} -> {inp['consignee']}",
        CarrierRejected,
    )


def _in(shipper: str, consignee: str, lane: str, pieces: int, kg: float, ready: str) -> dict[str, Any]:
    return {"shipper": shipper, "consignee": consignee, "lane": lane, "pieces": pieces, "weight_kg": kg, "ready": ready}


# fmt: off
SPEC = AgentSpec(
    agent=AGENT, route="b", domain="freight dispatch", record=record,
    summary="triage agent with handoffs to LTL and parcel desks; address sub-agent as a tool; rate, slots, booking",
    refs=[_in("Northwind Foods", "Fundy Bakeries", "HFX-MCT", 3, 540.0, "09:00"), _in("Tidewater Hardware", "Bluenose Outfitters", "MCT-TRU", 2, 60.0, "10:00"),
          _in("Pacific Tile Co", "Northwind Foods", "SJN-HFX", 4, 1200.0, "12:00"), _in("Bluenose Outfitters", "Pacific Tile Co", "HFX-SJN", 1, 25.0, "08:00")],
    cases=[
        Case("g_freight_desk", "wrong_routing", "freight.desk_choice", _in("Fundy Bakeries", "Tidewater Hardware", "MCT-TRU", 2, 480.0, "10:00"),
             "generation gpt-4o-mini", "transfer_to_parcel_desk",
             "The triage model hands a 240 kg-per-pallet consignment to the parcel desk."),
        Case("g_freight_tariff", "currency_mixup", "freight.tariff_table", _in("Northwind Foods", "Maple Ridge Grocers", "HFX-MCT", 2, 400.0, "09:00"),
             "rate_lookup", '"amount": 504.16',
             "The rate tool prices the lane from the Canadian-dollar tariff but labels the amount USD."),
        Case("g_freight_address", "wrong_entity_subagent", "freight.address_party", _in("Pacific Tile Co", "Maple Ridge Grocers", "SJN-HFX", 3, 660.0, "11:00"),
             "generation gpt-4o-mini", "Validate the delivery address of Pacific Tile Co",
             "The LTL desk asks the address sub-agent to validate the shipper instead of the consignee."),
        Case("g_freight_slots", "truncated_result", "freight.slot_pages", _in("Bluenose Outfitters", "Fundy Bakeries", "HFX-MCT", 5, 900.0, "14:00"),
             "list_pickup_slots", "next_page_token",
             "The slot tool returns only the first page of the depot's pickup slots."),
    ],
)
# fmt: on
