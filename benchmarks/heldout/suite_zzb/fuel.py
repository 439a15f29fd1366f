"""Farm fuel deliveries (sdk route): plan a red-diesel drop to a farm's tanks and book it with the depot."""

from __future__ import annotations

import json
import math

import trajdebug

from .common import Case, chat, policy, last_user_json
from .kit import active

NAME = "farm-fuel-dispatch"
ROUTE = "sdk"
DELIVERY_DATE = "2026-12-08"

INPUTS = {
    "ord_hollins": {"order": "FO-5521", "farm": "Hollins Farm", "depot": "north", "tanks": [
        {"id": "T1", "capacity_l": 2500, "ullage": 1450, "unit": "l", "read": "2026-12-07T06:00Z"},
        {"id": "T2", "capacity_l": 1800, "ullage": 400, "unit": "gal", "read": "2026-12-07T06:10Z"},
        {"id": "T3", "capacity_l": 1300, "ullage": 900, "unit": "l", "read": "2026-12-07T06:20Z"}]},
    "ord_braeside": {"order": "FO-5534", "farm": "Braeside Mains", "depot": "north", "tanks": [
        {"id": "T1", "capacity_l": 3000, "ullage": 1800, "unit": "l", "read": "2026-12-07T05:40Z"},
        {"id": "T2", "capacity_l": 2200, "ullage": 310, "unit": "gal", "read": "2026-12-07T05:45Z"},
        {"id": "T3", "capacity_l": 1500, "ullage": 1100, "unit": "l", "read": "2026-12-07T05:50Z"}]},
    "ord_ref_a": {"order": "FO-5490", "farm": "Low Moor", "depot": "south", "tanks": [
        {"id": "T1", "capacity_l": 2000, "ullage": 1200, "unit": "l", "read": "2026-12-07T07:00Z"},
        {"id": "T2", "capacity_l": 1500, "ullage": 250, "unit": "gal", "read": "2026-12-07T07:05Z"}]},
    "ord_ref_b": {"order": "FO-5497", "farm": "Greyfield", "depot": "north", "tanks": [
        {"id": "T1", "capacity_l": 2700, "ullage": 2000, "unit": "l", "read": "2026-12-07T06:30Z"},
        {"id": "T2", "capacity_l": 1000, "ullage": 700, "unit": "l", "read": "2026-12-07T06:35Z"},
        {"id": "T3", "capacity_l": 1900, "ullage": 350, "unit": "gal", "read": "2026-12-07T06:40Z"}]},
    "ord_ref_c": {"order": "FO-5503", "farm": "Tarn End", "depot": "south", "tanks": [
        {"id": "T1", "capacity_l": 2200, "ullage": 1500, "unit": "l", "read": "2026-12-07T08:00Z"},
        {"id": "T2", "capacity_l": 2200, "ullage": 1650, "unit": "l", "read": "2026-12-07T08:02Z"},
        {"id": "T3", "capacity_l": 900, "ullage": 600, "unit": "l", "read": "2026-12-07T08:04Z"}]},
    "ord_ref_d": {"order": "FO-5511", "farm": "Kirkby Grange", "depot": "north", "tanks": [
        {"id": "T1", "capacity_l": 1600, "ullage": 220, "unit": "gal", "read": "2026-12-07T06:50Z"},
        {"id": "T2", "capacity_l": 2400, "ullage": 1700, "unit": "l", "read": "2026-12-07T06:55Z"}]},
}
REFS = ["ord_ref_a", "ord_ref_b", "ord_ref_c", "ord_ref_d"]
PRICES = {"gas_oil_red": 0.71, "gas_oil_road": 1.42}
ROSTER = {"north": [{"driver_id": "DRV-14", "adr": True, "hours_left": 6.5, "truck_l": 9000}],
          "south": [{"driver_id": "DRV-22", "adr": True, "hours_left": 7.0, "truck_l": 7000}]}

CASES = [
    Case("zzb_fuel_01", NAME, ROUTE, "unit_error", "fuel_unit", "ord_hollins", "parse_telemetry", 2, "parse",
         "book_delivery", "parse_telemetry converts the T2 US-gallon ullage with the imperial factor, so the planned drop overfills T2."),
    Case("zzb_fuel_02", NAME, ROUTE, "off_by_one", "fuel_skip", "ord_hollins", "select_tanks", 1, "other",
         "book_delivery", "select_tanks starts its loop at the second tank, so T1 never gets a drop although the order lists it."),
    Case("zzb_fuel_03", NAME, ROUTE, "wrong_tool_args", "fuel_args", "ord_braeside", "build_quote_request", 1, "other",
         "book_delivery", "build_quote_request asks the price API for road diesel instead of rebated red diesel."),
    Case("zzb_fuel_04", NAME, ROUTE, "stale_data", "fuel_cache", "ord_braeside", "fetch_tank_telemetry", 3, "tool",
         "book_delivery", "the telemetry gateway answers T3 from a six-day-old cached reading."),
    Case("zzb_fuel_05", NAME, ROUTE, "swallowed_error", "fuel_roster", "ord_hollins", "get_driver_roster", 1, "tool",
         "book_delivery", "get_driver_roster swallows the roster service timeout and returns an empty roster."),
]


@policy("fuel-planner")
def _plan(request):
    p = last_user_json(request)
    drops = [{"tank": t["tank"], "litres": int(math.floor(t["ullage_l"] * 0.95 / 100) * 100), "reading_at": t["reading_at"]}
             for t in p["tanks"]]
    return json.dumps({"order": p["order"], "drops": drops, "product": "red diesel"})


@policy("fuel-dispatcher")
def _dispatch(request):
    p = last_user_json(request)
    fit = [d for d in p["roster"] if d["adr"] and d["hours_left"] >= 4 and d["truck_l"] >= p["litres"]]
    if not fit:
        return json.dumps({"driver_id": None, "note": "no roster entries to choose from"})
    return json.dumps({"driver_id": fit[0]["driver_id"], "truck_l": fit[0]["truck_l"]})


@trajdebug.step(kind="input")
def receive_order(order: dict) -> dict:
    return {"order": order["order"], "farm": order["farm"], "depot": order["depot"],
            "tanks": [t["id"] for t in order["tanks"]], "delivery_date": DELIVERY_DATE}


@trajdebug.step(kind="tool")
def fetch_tank_telemetry(order_ref: str, tank_id: str) -> dict:
    t = next(x for x in _CURRENT["tanks"] if x["id"] == tank_id)
    if tank_id == "T3" and active("fuel_cache"):
        return {"tank": tank_id, "ullage": t["ullage"] - 450, "unit": t["unit"], "reading_at": "2026-12-01T06:20Z",
                "source": "gateway"}
    return {"tank": tank_id, "ullage": t["ullage"], "unit": t["unit"], "reading_at": t["read"], "source": "gateway"}


@trajdebug.step(kind="parse")
def parse_telemetry(raw: dict) -> dict:
    factor = 4.546 if active("fuel_unit") else 3.785
    ullage_l = raw["ullage"] * factor if raw["unit"] == "gal" else float(raw["ullage"])
    return {"tank": raw["tank"], "ullage_l": round(ullage_l, 1), "reading_at": raw["reading_at"]}


@trajdebug.step(kind="state")
def save_tank_state(readings: list) -> int:
    trajdebug.current_run().state["tanks"] = {r["tank"]: r for r in readings}
    return len(readings)


@trajdebug.step(kind="other")
def select_tanks(min_ullage_l: float) -> list:
    tanks = list(trajdebug.current_run().state["tanks"].values())
    start = 1 if active("fuel_skip") else 0
    chosen = []
    for i in range(start, len(tanks)):
        if tanks[i]["ullage_l"] >= min_ullage_l:
            chosen.append(tanks[i])
    return chosen


@trajdebug.step(kind="llm")
def plan_delivery(order_ref: str, tanks: list) -> str:
    return chat("fuel-planner", "Plan a red diesel drop: 95% of each tank's ullage, rounded down to 100 l.",
                {"order": order_ref, "tanks": tanks})


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> dict:
    plan = json.loads(text)
    plan["total_l"] = sum(d["litres"] for d in plan["drops"])
    return plan


@trajdebug.step(kind="other")
def build_quote_request(plan: dict) -> dict:
    product = "gas_oil_road" if active("fuel_args") else "gas_oil_red"
    return {"product": product, "litres": plan["total_l"], "date": DELIVERY_DATE}


@trajdebug.step(kind="tool")
def price_quote(request: dict) -> dict:
    return {"product": request["product"], "pence_per_litre": round(PRICES[request["product"]] * 100, 1),
            "valid_until": "2026-12-09"}


@trajdebug.step(kind="other")
def convert_price(quote: dict, litres: int) -> dict:
    unit = quote["pence_per_litre"] / 100
    return {"unit_gbp": round(unit, 3), "total_gbp": round(unit * litres, 2)}


@trajdebug.step(kind="tool")
def get_driver_roster(depot: str) -> dict:
    try:
        if active("fuel_roster"):
            raise TimeoutError("roster service did not answer within 5 s")
        return {"depot": depot, "drivers": ROSTER[depot]}
    except TimeoutError:
        return {"depot": depot, "drivers": []}


@trajdebug.step(kind="llm")
def pick_driver(roster: dict, litres: int) -> str:
    return chat("fuel-dispatcher", "Pick an ADR driver with 4 h left and a truck large enough.",
                {"roster": roster["drivers"], "litres": litres})


@trajdebug.step(kind="agent")
def assign_driver(depot: str, litres: int) -> dict:
    roster = get_driver_roster(depot)
    return json.loads(pick_driver(roster, litres))


@trajdebug.step(kind="condition")
def check_truck_capacity(driver: dict, litres: int) -> str:
    return "single_drop" if (driver.get("truck_l") or 0) >= litres else "split_drop"


class DepotAPIError(RuntimeError):
    pass


@trajdebug.step(kind="tool")
def book_delivery(booking: dict) -> dict:
    order = _CURRENT
    if not booking.get("driver_id"):
        raise DepotAPIError('HTTP 422 {"error":"validation","field":"driver_id","detail":"driver_id is required"}')
    truth = {t["id"]: (t["ullage"] * 3.785 if t["unit"] == "gal" else t["ullage"]) for t in order["tanks"]}
    booked = {d["tank"] for d in booking["drops"]}
    for tid, ull in truth.items():
        if ull >= 600 and tid not in booked:
            raise DepotAPIError(f'HTTP 422 {{"error":"incomplete_order","order":"{order["order"]}","missing_tank":"{tid}"}}')
    for d in booking["drops"]:
        if d["litres"] > truth[d["tank"]]:
            raise DepotAPIError(f'HTTP 422 {{"error":"over_fill","tank":"{d["tank"]}","ordered_l":{d["litres"]},'
                                f'"gauge_ullage_l":{truth[d["tank"]]:.0f}}}')
        if d["reading_at"][:10] < "2026-12-05":
            raise DepotAPIError(f'HTTP 409 {{"error":"reading_too_old","tank":"{d["tank"]}","reading_at":"{d["reading_at"]}",'
                                f'"max_age_h":72}}')
    if not 0.62 <= booking["unit_gbp"] <= 0.80:
        raise DepotAPIError(f'HTTP 409 {{"error":"price_out_of_band","unit_gbp":{booking["unit_gbp"]},"band":"0.62-0.80",'
                            f'"product":"red diesel"}}')
    return {"booking": "BK-" + order["order"][3:], "status": "confirmed"}


_CURRENT: dict = {}


def agent(order: dict) -> dict:
    head = receive_order(order)
    readings = []
    for tid in head["tanks"]:
        raw = fetch_tank_telemetry(head["order"], tid)
        readings.append(parse_telemetry(raw))
    save_tank_state(readings)
    chosen = select_tanks(500.0)
    plan = parse_plan(plan_delivery(head["order"], chosen))
    quote = price_quote(build_quote_request(plan))
    price = convert_price(quote, plan["total_l"])
    driver = assign_driver(head["depot"], plan["total_l"])
    mode = check_truck_capacity(driver, plan["total_l"])
    booking = {"order": head["order"], "drops": plan["drops"], "driver_id": driver.get("driver_id"), "mode": mode,
               "unit_gbp": price["unit_gbp"], "total_gbp": price["total_gbp"]}
    return book_delivery(booking)


def record(input_key: str, path: str) -> None:
    order = INPUTS[input_key]
    _CURRENT.clear()
    _CURRENT.update(order)
    try:
        with trajdebug.run(NAME, task=f"deliver red diesel for order {order['order']}", path=path):
            agent(order)
    except DepotAPIError:
        pass
