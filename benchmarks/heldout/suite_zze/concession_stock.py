"""Stadium concession stock (openai_agents route): a match-day planner routes a restock request to a desk,
which forecasts demand, counts stands, asks a supplier desk agent (as a tool) for the catalogue and orders."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

from . import kit
from .common import Agent, Case
from .crypto_tax import _history, _user

VENUE = "Eastfield Stadium"
RATES = {"PIE-STEAK": 0.12, "HOTDOG-BUN": 0.15, "LAGER-CAN": 0.35, "WATER-500": 0.20}
CATALOGS = {
    "Eastfield Stadium": "sku,description,case_size,price_gbp\nPIE-STEAK,Steak pie 220 g,12,21.60\n"
                         "HOTDOG-BUN,Hot dog buns,8,3.20\nLAGER-CAN,Lager 440 ml,24,26.40\nWATER-500,Still water 500 ml,24,7.20",
    "Riverside Arena": "sku,description,case_size,price_gbp\nRA-PIE-STEAK,Steak pie 200 g,10,19.00\n"
                       "RA-HOTDOG-BUN,Hot dog buns,12,4.10\nRA-LAGER-CAN,Lager 330 ml,24,22.80\nRA-WATER-500,Water,12,3.90",
}
SHARE = {"N1": 0.22, "N2": 0.18, "E1": 0.27, "W1": 0.33, "FZ1": 0.05, "FZ2": 0.05, "FZ3": 0.04}
FIXTURES = {
    "F-0412": {"opponent": "Kingsport Rovers", "kickoff": "2026-04-18T15:00", "forecast": 31200, "last_season": 24800},
    "F-0419": {"opponent": "Millbrook Athletic", "kickoff": "2026-04-25T19:45", "forecast": 27400, "last_season": 26100},
    "F-0426": {"opponent": "Ashdown City", "kickoff": "2026-05-02T15:00", "forecast": 33900, "last_season": 30500},
    "F-0433": {"opponent": "Portvale United", "kickoff": "2026-05-09T12:30", "forecast": 22600, "last_season": 21000},
    "F-0440": {"opponent": "Greyfield Town", "kickoff": "2026-05-16T15:00", "forecast": 29800, "last_season": 27700},
    "F-0447": {"opponent": "Holloway FC", "kickoff": "2026-05-23T17:30", "forecast": 25500, "last_season": 23900},
}


def _on_hand(match: str, stand: str) -> dict[str, int]:
    seed = sum(ord(c) for c in match + stand)
    return {sku: (seed * (i + 3)) % 180 + 20 for i, sku in enumerate(RATES)}


PREVIOUS_NOTES = {"fixture": "F-0398", "counted_at": "2026-04-04T18:10", "author": "night supervisor",
                  "on_hand": {"N1": {"PIE-STEAK": 1450, "HOTDOG-BUN": 1600, "LAGER-CAN": 2900, "WATER-500": 1700},
                              "E1": {"PIE-STEAK": 1900, "HOTDOG-BUN": 2100, "LAGER-CAN": 3600, "WATER-500": 2300}}}


class OrderRejected(Exception):
    """The supplier ordering portal's error answer."""


def _parse_catalog(text: str) -> list[dict]:
    lines = text.splitlines()
    head = lines[0].split(",")
    rows = []
    for line in lines[1:]:
        r = dict(zip(head, line.split(",")))
        rows.append({"sku": r["sku"], "description": r["description"], "case_size": int(r["case_size"]),
                     "price_gbp": float(r["price_gbp"])})
    return rows


def _tools() -> dict[str, Any]:
    from agents import function_tool

    @function_tool
    def get_fixture(match_id: str) -> str:
        """Fixture details."""
        f = FIXTURES[match_id]
        return json.dumps({"match_id": match_id, "opponent": f["opponent"], "kickoff": f["kickoff"], "venue": VENUE})

    @function_tool
    def get_attendance_forecast(match_id: str) -> str:
        """The ticketing team's attendance forecast for a fixture."""
        f = FIXTURES[match_id]
        if kit.active("con.stale_data"):
            return json.dumps({"match_id": match_id, "forecast": f["last_season"], "issued": "2025-04-11"})
        return json.dumps({"match_id": match_id, "forecast": f["forecast"], "issued": "2026-04-14"})

    @function_tool
    def get_stand_inventory(match_id: str, stand: str) -> str:
        """Units on hand at a stand's concessions, counted after the last fixture."""
        return json.dumps({"stand": stand, "on_hand": _on_hand(match_id, stand), "counted_at": "2026-04-16T09:00"})

    @function_tool
    def load_shift_notes(match_id: str) -> str:
        """Handover notes of the concessions supervisors."""
        if kit.active("con.context_pollution"):
            return json.dumps({"notes": [PREVIOUS_NOTES]})
        return json.dumps({"notes": [{"fixture": match_id, "author": "duty manager",
                                      "text": "Card reader at E1 kiosk 3 replaced; gates open 90 minutes early."}]})

    @function_tool
    def get_supplier_catalog(venue: str) -> str:
        """The supplier's catalogue for a venue (SKU, case size, price)."""
        return json.dumps({"venue": venue, "items": _parse_catalog(CATALOGS[venue])})

    def _place(match_id: str, request_id: str, stands: list[str], lines_json: str) -> str:
        """Place the restock order with the supplier portal."""
        req = next(r for r in INPUTS.values() if r["request_id"] == request_id)
        lines = json.loads(lines_json)
        cat = {r["sku"]: r for r in _parse_catalog(CATALOGS[VENUE])}
        errors = []
        if sorted(stands) != sorted(req["stands"]):
            errors.append(f"stands {', '.join(stands)} are not the stands of request {request_id} "
                          f"({', '.join(req['stands'])})")
        for ln in lines:
            if ln["sku"] not in cat:
                errors.append(f"SKU {ln['sku']} is not in the {VENUE} catalogue")
            elif ln["quantity"] % cat[ln["sku"]]["case_size"]:
                errors.append(f"{ln['sku']} quantity {ln['quantity']} is not a multiple of the case size "
                              f"{cat[ln['sku']]['case_size']}")
        att = FIXTURES[match_id]["forecast"]
        got = {ln["sku"]: ln["quantity"] for ln in lines}
        for sku, rate in RATES.items():
            need = sum(att * SHARE[s] * rate - _on_hand(match_id, s)[sku] for s in req["stands"])
            if need > 0 and got.get(sku, 0) < 0.95 * need and sku in {ln["sku"] for ln in lines} | set(RATES):
                if any(ln["sku"] in cat for ln in lines):
                    errors.append(f"{sku} ordered {got.get(sku, 0)} covers {100 * got.get(sku, 0) / need:.0f}% of "
                                  f"the forecast shortfall {need:.0f} (minimum 95%)")
        if errors:
            raise OrderRejected("HTTP 400 Bad Request: " + json.dumps({"request": request_id, "errors": errors}))
        return json.dumps({"status": "placed", "order": f"EF-{request_id[3:]}-{match_id[2:]}"})

    place = function_tool(_place, name_override="place_restock_order", failure_error_function=None)
    return {f.name: f for f in (get_fixture, get_attendance_forecast, get_stand_inventory, load_shift_notes,
                                get_supplier_catalog, place)}


def policy(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    body = request.body
    system, done = _history(body)
    names = [n for n, _, _ in done]
    out = {n: o for n, _, o in done}
    if system.startswith("SUPPLIER DESK"):
        ask = json.loads(_user(body))
        if "get_supplier_catalog" not in names:
            venue = "Riverside Arena" if kit.active("con.subagent_wrong_entity") else ask["venue"]
            return Reply(tool_calls=(tool_call("get_supplier_catalog", {"venue": venue}),))
        return json.dumps({"venue": out["get_supplier_catalog"]["venue"], "items": out["get_supplier_catalog"]["items"]})
    req = json.loads(_user(body))
    if system.startswith("MATCH-DAY PLANNER"):
        if "get_fixture" not in names:
            return Reply(tool_calls=(tool_call("get_fixture", {"match_id": req["match_id"]}),))
        if not any(n.startswith("transfer_to") for n in names):
            desk = "fan_zone" if req["area"] == "fan zone" else "bowl"
            if kit.active("con.wrong_routing"):
                desk = "fan_zone"
            return Reply(tool_calls=(tool_call(f"transfer_to_{desk}_desk", {}),))
        return "Routed."
    stands = ["FZ1", "FZ2", "FZ3"] if system.startswith("FAN ZONE DESK") else req["stands"]
    match = req["match_id"]
    if "get_attendance_forecast" not in names:
        return Reply(tool_calls=(tool_call("get_attendance_forecast", {"match_id": match}),))
    counted = {a["stand"]: o for n, a, o in done if n == "get_stand_inventory"}
    for s in stands:
        if s not in counted:
            return Reply(tool_calls=(tool_call("get_stand_inventory", {"match_id": match, "stand": s}),))
    if "load_shift_notes" not in names:
        return Reply(tool_calls=(tool_call("load_shift_notes", {"match_id": match}),))
    if "supplier_desk" not in names:
        return Reply(tool_calls=(tool_call("supplier_desk", {"input": json.dumps(
            {"venue": out["get_fixture"]["venue"], "skus": sorted(RATES)})}),))
    if "place_restock_order" not in names:
        cat = out["supplier_desk"]
        cat = json.loads(cat) if isinstance(cat, str) else cat
        att = out["get_attendance_forecast"]["forecast"]
        on_hand = {s: dict(counted[s]["on_hand"]) for s in stands}
        for note in out["load_shift_notes"]["notes"]:
            for s, counts in note.get("on_hand", {}).items():
                if s in on_hand:
                    on_hand[s].update(counts)
        lines = []
        for item in cat["items"]:
            base = item["sku"].removeprefix("RA-")
            need = sum(att * SHARE[s] * RATES[base] - on_hand[s][base] for s in stands)
            if need > 0:
                qty = math.ceil(need / item["case_size"]) * item["case_size"]
                lines.append({"sku": item["sku"], "quantity": qty})
        sent = stands[:-1] if kit.active("con.wrong_tool_args") else stands
        return Reply(tool_calls=(tool_call("place_restock_order", {"match_id": match, "request_id": req["request_id"],
                                                                   "stands": sent, "lines_json": json.dumps(lines)}),))
    return "Order placed."


def record(inp: dict, out: Path, base_url: str) -> None:
    from agents import Agent as SdkAgent
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner, set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    out.unlink(missing_ok=True)
    set_trace_processors([TrajdebugProcessor(path=str(out), name="stadium-concessions",
                                             task=f"restock {inp['request_id']}")])
    client = AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    t = _tools()
    supplier = SdkAgent(name="Supplier desk", model=model, tools=[t["get_supplier_catalog"]],
                        instructions="SUPPLIER DESK. Fetch the venue's supplier catalogue and answer it as JSON.")
    desk_tools = [t["get_attendance_forecast"], t["get_stand_inventory"], t["load_shift_notes"],
                  supplier.as_tool(tool_name="supplier_desk", tool_description="Catalogue and case sizes."),
                  t["place_restock_order"]]
    bowl = SdkAgent(name="Bowl desk", model=model, tools=desk_tools,
                    instructions="BOWL DESK. Restock the bowl stands of the request for the fixture.")
    fan = SdkAgent(name="Fan zone desk", model=model, tools=desk_tools,
                   instructions="FAN ZONE DESK. Restock the fan zone kiosks FZ1-FZ3 for the fixture.")
    planner = SdkAgent(name="Match-day planner", model=model, tools=[t["get_fixture"]], handoffs=[bowl, fan],
                       instructions="MATCH-DAY PLANNER. Look up the fixture and route the request to the desk "
                                    "of its area.")

    async def main() -> None:
        try:
            await Runner.run(planner, json.dumps(inp), max_turns=40,
                             run_config=RunConfig(workflow_name="stadium-concessions"))
        finally:
            await client.close()

    try:
        asyncio.run(main())
    except OrderRejected:
        pass
    except Exception as e:
        if "HTTP 400" not in str(e):
            raise


def _r(rid: str, match: str, stands: list[str]) -> dict:
    return {"request_id": rid, "match_id": match, "area": "bowl", "stands": stands}


INPUTS = {
    "A": _r("RS-771", "F-0412", ["N1", "N2", "E1"]),
    "B": _r("RS-779", "F-0419", ["E1", "W1", "N1"]),
    "C": _r("RS-784", "F-0426", ["W1", "N2"]),
    "D": _r("RS-790", "F-0433", ["N1", "E1"]),
    "E": _r("RS-796", "F-0440", ["N2", "W1", "E1"]),
    "F": _r("RS-803", "F-0447", ["W1"]),
}

AGENT = Agent(
    name="concession_stock", module="concession_stock.py", route="openai_agents", domain="stadium concession stock",
    shape="Agents SDK: match-day planner (fixture tool) -> hand-off to the bowl or fan zone desk -> forecast, "
          "per-stand inventory loop, shift notes, supplier desk agent-as-tool (catalogue tool) -> place_restock_order",
    inputs=INPUTS, refs=("C", "D", "E", "F"), policy=policy, record=record,
    cases=(
        Case("zze_con_01", "con.wrong_routing", "wrong_routing", "A", ("generation gpt-4o-mini", 2, "llm"),
             ("place_restock_order", 1), "The planner hands a bowl restock to the fan zone desk."),
        Case("zze_con_02", "con.subagent_wrong_entity", "subagent_wrong_entity", "B",
             ("generation gpt-4o-mini", 9, "llm"), ("place_restock_order", 1),
             "The supplier desk sub-agent fetches another venue's catalogue."),
        Case("zze_con_03", "con.stale_data", "stale_data", "A", ("get_attendance_forecast", 1, "tool"),
             ("place_restock_order", 1), "The forecast tool serves last season's attendance forecast."),
        Case("zze_con_04", "con.context_pollution", "context_pollution", "B", ("load_shift_notes", 1, "tool"),
             ("place_restock_order", 1), "The shift notes carry an earlier fixture's stock counts into the order."),
        Case("zze_con_05", "con.wrong_tool_args", "wrong_tool_args", "A", ("generation gpt-4o-mini", 11, "llm"),
             ("place_restock_order", 1), "The order call leaves the last stand out of its stands argument."),
    ),
)
