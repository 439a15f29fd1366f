"""Kayak rental desk (recording SDK): a booking request becomes a river hire with boats, rates and a return time."""

from __future__ import annotations

import json
from pathlib import Path

import trajdebug

from . import common
from .common import Case
from .kit import active

NAME = "kayak-rental-desk"
ROUTE = "sdk"
DOMAIN = "kayak rental"
SHAPE = "extract (llm) -> parse -> tariff, river gauge (retry), conditions -> per boat: fleet check, assign (state), fit paddlers -> price -> confirmation (llm) -> return time -> submit_rental"
MODEL = "kayak-desk-1"

INPUTS = [
    {"ref": "KY-1042", "route": "Upper Wye", "date": "2025-07-12", "start": "09:30", "duration": "2h30",
     "boats": [["tandem", 2], ["solo", 1]], "weights": [82, 64, 90, 71, 77], "hold_gbp": 87.5, "gauge_cm": 62,
     "gauge_flaky": True},
    {"ref": "KY-1077", "route": "Lower Severn", "date": "2025-08-03", "start": "10:30", "duration": "3h30",
     "boats": [["tandem", 1], ["solo", 2], ["sit-on-top", 1]], "weights": [70, 58, 88, 93, 66], "hold_gbp": 168.0,
     "gauge_cm": 41, "gauge_flaky": False},
    {"ref": "KY-1101", "route": "Upper Wye", "date": "2025-07-19", "start": "13:00", "duration": "2h",
     "boats": [["solo", 2]], "weights": [75, 68], "hold_gbp": 56.0, "gauge_cm": 55, "gauge_flaky": False},
    {"ref": "KY-1113", "route": "Lower Severn", "date": "2025-08-10", "start": "09:30", "duration": "1h30",
     "boats": [["tandem", 1], ["sit-on-top", 2]], "weights": [81, 60, 72, 79], "hold_gbp": 67.5, "gauge_cm": 38,
     "gauge_flaky": True},
    {"ref": "KY-1120", "route": "Upper Wye", "date": "2025-07-26", "start": "08:30", "duration": "3h",
     "boats": [["tandem", 3]], "weights": [84, 66, 73, 70, 95, 62], "hold_gbp": 126.0, "gauge_cm": 70,
     "gauge_flaky": False},
    {"ref": "KY-1138", "route": "Lower Severn", "date": "2025-08-17", "start": "11:00", "duration": "2h30",
     "boats": [["solo", 1], ["tandem", 1]], "weights": [69, 88, 57], "hold_gbp": 60.0, "gauge_cm": 44,
     "gauge_flaky": False},
]

CASES = [
    Case("zn_kayak_1", "lossy_parsing", 0, "parse_booking", 1, "submit_rental",
         "parse_booking reads the duration '2h30' as 2 hours, dropping the minutes, so the quoted total falls short of the card hold."),
    Case("zn_kayak_2", "unit_error", 1, "convert_gauge_level", 1, "submit_rental",
         "convert_gauge_level divides the gauge reading in centimetres by 1000 instead of 100, so the declared river level disagrees with the gauge."),
    Case("zn_kayak_3", "bad_memory_write", 0, "assign_boat", 2, "submit_rental",
         "the second assign_boat writes the boat id it assigned before into the assignments instead of the free boat it picked."),
    Case("zn_kayak_4", "stale_data", 1, "fetch_tariff", 1, "submit_rental",
         "fetch_tariff answers from a cached copy of last season's tariff, so the hourly rates are out of date."),
    Case("zn_kayak_5", "off_by_one", 0, "plan_return_time", 1, "submit_rental",
         "plan_return_time counts the half-hour slots inclusively and adds one slot, returning the boats 30 minutes late."),
]

TARIFFS = {
    "2025-S": {"tandem": 16.0, "solo": 11.0, "sit-on-top": 9.0},
    "2024-S": {"tandem": 14.0, "solo": 10.0, "sit-on-top": 8.0},
}
def _hold(inp: dict) -> float:
    h, _, m = inp["duration"].partition("h")
    hours = int(h) + (int(m) if m else 0) / 60
    return round(sum(n * TARIFFS["2025-S"][t] * hours for t, n in inp["boats"]), 2)


for _inp in INPUTS:
    _inp["hold_gbp"] = _hold(_inp)

CLOSING = {"Upper Wye": "12:00", "Lower Severn": "17:00"}
LIMIT_CM = {"Upper Wye": 120, "Lower Severn": 90}
FLEET = {"tandem": ["K-211", "K-214", "K-218", "K-220"], "solo": ["S-102", "S-105", "S-109"],
         "sit-on-top": ["T-301", "T-304"]}
CAPACITY = {"tandem": 180, "solo": 110, "sit-on-top": 120}


def _by_ref(text: str) -> dict:
    return next(i for i in INPUTS if i["ref"] in text)


@common.policy(MODEL)
def _policy(body: dict) -> str:
    system = body["messages"][0]["content"]
    inp = _by_ref(common.first_user(body))
    if "extract" in system:
        return json.dumps({"ref": inp["ref"], "route": inp["route"], "date": inp["date"], "start": inp["start"],
                           "duration": inp["duration"],
                           "boats": [{"type": t, "count": n} for t, n in inp["boats"]],
                           "paddler_weights_kg": inp["weights"], "card_hold": f"{inp['hold_gbp']:.2f} GBP"})
    data = common.data_block(body)
    return (f"Hi! Your {inp['route']} hire {inp['ref']} on {inp['date']} from {inp['start']} is held: "
            f"{len(data['boats'])} boat(s), total {data['total_gbp']:.2f} GBP. Please arrive 20 minutes early.")


def _minutes(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


@trajdebug.step(kind="input")
def read_request(inp: dict) -> str:
    boats = ", ".join(f"{n} x {t}" for t, n in inp["boats"])
    return (f"Booking ref {inp['ref']}: we'd like {boats} on the {inp['route']} on {inp['date']}, starting "
            f"{inp['start']} for {inp['duration']}. Paddlers weigh {', '.join(map(str, inp['weights']))} kg. "
            f"Card hold of {inp['hold_gbp']:.2f} GBP already placed.")


@trajdebug.step(kind="llm")
def extract_booking(request: str) -> str:
    reply = common.chat(MODEL, "You extract kayak hire bookings as JSON.", request)
    trajdebug.current_step().usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                                   completion_tokens=reply.usage.completion_tokens)
    return reply.choices[0].message.content


@trajdebug.step(kind="parse")
def parse_booking(text: str) -> dict:
    raw = json.loads(text)
    dur = raw["duration"].lower().replace(" ", "")
    hours, _, mins = dur.partition("h")
    if active("zn_kayak_1"):
        duration_h = float(int(hours))
    else:
        duration_h = int(hours) + (int(mins) if mins else 0) / 60
    return {"ref": raw["ref"], "route": raw["route"], "date": raw["date"], "start": raw["start"],
            "duration_h": duration_h, "boats": [(b["type"], b["count"]) for b in raw["boats"]],
            "weights": raw["paddler_weights_kg"], "hold_gbp": float(raw["card_hold"].split()[0])}


@trajdebug.step(kind="tool")
def fetch_tariff(season: str) -> dict:
    code = "2024-S" if active("zn_kayak_4") else season
    return {"season": code, "currency": "GBP", "per_hour": dict(TARIFFS[code])}


_gauge_calls: dict[str, int] = {}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def read_river_gauge(route: str, ref: str) -> dict:
    inp = next(i for i in INPUTS if i["ref"] == ref)
    _gauge_calls[ref] = _gauge_calls.get(ref, 0) + 1
    if inp["gauge_flaky"] and _gauge_calls[ref] % 2 == 1:
        raise ConnectionError("gauge station did not answer within 5 s")
    return {"station": "WYE-04" if route == "Upper Wye" else "SEV-11", "level_cm": inp["gauge_cm"]}


@trajdebug.step(kind="other")
def convert_gauge_level(reading: dict) -> dict:
    divisor = 1000 if active("zn_kayak_2") else 100
    return {"station": reading["station"], "level_m": round(reading["level_cm"] / divisor, 3)}


@trajdebug.step(kind="condition")
def assess_conditions(level: dict, route: str) -> str:
    return "open" if level["level_m"] * 100 <= LIMIT_CM[route] else "closed"


@trajdebug.step(kind="tool")
def check_fleet(boat_type: str, date: str, start: str) -> list[str]:
    return list(FLEET[boat_type])


@trajdebug.step(kind="state")
def assign_boat(boat_type: str, free: list[str]) -> str:
    state = trajdebug.current_run().state
    taken = state.setdefault("assignments", [])
    pick = next(b for b in free if b not in taken)
    if active("zn_kayak_3") and taken:
        taken.append(taken[-1])
    else:
        taken.append(pick)
    return pick


@trajdebug.step(kind="other")
def fit_paddlers(boat_type: str, weights: list[int]) -> dict:
    load = sum(weights)
    return {"boat_type": boat_type, "load_kg": load, "within_capacity": load <= CAPACITY[boat_type]}


@trajdebug.step(kind="other")
def quote_price(booking: dict, tariff: dict) -> dict:
    lines = [{"type": t, "count": n, "rate": tariff["per_hour"][t],
              "amount": round(n * tariff["per_hour"][t] * booking["duration_h"], 2)} for t, n in booking["boats"]]
    return {"lines": lines, "total_gbp": round(sum(x["amount"] for x in lines), 2), "season": tariff["season"]}


@trajdebug.step(kind="llm")
def draft_confirmation(booking: dict, quote: dict, boats: list[str]) -> str:
    data = {"boats": boats, "total_gbp": quote["total_gbp"]}
    reply = common.chat(MODEL, "You write short, friendly hire confirmations.",
                        f"Booking {booking['ref']}. DATA:{json.dumps(data)}")
    return reply.choices[0].message.content


@trajdebug.step(kind="other")
def plan_return_time(booking: dict) -> dict:
    slots = round(booking["duration_h"] * 2)
    if active("zn_kayak_5"):
        slots = len(range(0, slots + 1))
    return {"launch": booking["start"], "return": _hhmm(_minutes(booking["start"]) + 30 * slots)}


class BookingRejected(RuntimeError):
    pass


@trajdebug.step(kind="tool")
def submit_rental(payload: dict) -> dict:
    """The hire system's POST /bookings, which checks what it is sent against its own records."""
    inp = next(i for i in INPUTS if i["ref"] == payload["ref"])
    boats = payload["boats"]
    dupes = sorted({b for b in boats if boats.count(b) > 1})
    if dupes:
        raise BookingRejected(f"HTTP 409 Conflict: {{\"error\": \"boat {dupes[0]} appears twice in booking {payload['ref']}\"}}")
    for line in payload["lines"]:
        if line["rate"] != TARIFFS["2025-S"][line["type"]]:
            raise BookingRejected(
                f"HTTP 422: {{\"error\": \"rate {line['rate']:.2f} GBP/h for {line['type']} does not match tariff 2025-S "
                f"({TARIFFS['2025-S'][line['type']]:.2f} GBP/h)\"}}")
    gauge_m = inp["gauge_cm"] / 100
    if abs(payload["declared_level_m"] - gauge_m) > 0.05:
        raise BookingRejected(
            f"HTTP 422: {{\"error\": \"declared river level {payload['declared_level_m']:.2f} m disagrees with gauge "
            f"{payload['station']} ({gauge_m:.2f} m)\"}}")
    if abs(payload["total_gbp"] - inp["hold_gbp"]) > 0.01:
        raise BookingRejected(
            f"HTTP 402: {{\"error\": \"rental total {payload['total_gbp']:.2f} GBP does not match the card hold of "
            f"{inp['hold_gbp']:.2f} GBP\"}}")
    if _minutes(payload["return"]) > _minutes(CLOSING[payload["route"]]) and payload["route"] == "Upper Wye" and _minutes(payload["launch"]) < 720:
        raise BookingRejected(
            f"HTTP 409: {{\"error\": \"return {payload['return']} is after the morning launch window closes at "
            f"{CLOSING[payload['route']]} on {payload['route']}\"}}")
    if _minutes(payload["return"]) > _minutes("17:00"):
        raise BookingRejected(f"HTTP 409: {{\"error\": \"return {payload['return']} is after the 17:00 closing\"}}")
    return {"status": "confirmed", "booking": payload["ref"], "boats": boats}


def record(path: Path, inp: dict) -> None:
    with trajdebug.run(NAME, path=str(path), task=f"hire request {inp['ref']}") as run:
        text = read_request(inp)
        booking = parse_booking(extract_booking(text))
        tariff = fetch_tariff("2025-S")
        reading = read_river_gauge(booking["route"], booking["ref"])
        level = convert_gauge_level(reading)
        if assess_conditions(level, booking["route"]) != "open":
            run.fail(f"{booking['route']} closed at {level['level_m']} m")
            return
        boats: list[str] = []
        weights = list(booking["weights"])
        for boat_type, count in booking["boats"]:
            for _ in range(count):
                free = check_fleet(boat_type, booking["date"], booking["start"])
                boats.append(assign_boat(boat_type, free))
                seats = 2 if boat_type == "tandem" else 1
                crew, weights = weights[:seats], weights[seats:]
                fit_paddlers(boat_type, crew)
        with trajdebug.step("collect_assignments", kind="state") as s:
            s.output = assigned = list(run.state["assignments"])
        quote = quote_price(booking, tariff)
        draft_confirmation(booking, quote, assigned)
        times = plan_return_time(booking)
        submit_rental({"ref": booking["ref"], "route": booking["route"], "boats": assigned,
                       "lines": quote["lines"], "total_gbp": quote["total_gbp"],
                       "declared_level_m": level["level_m"], "station": level["station"], **times})
