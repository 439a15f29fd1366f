"""Zeppelin sightseeing operator: booking desk for scheduled sightseeing flights (trajdebug recording API).

Shape: request -> model extraction -> parser -> route retrieval -> fleet board -> leg loop (winds aloft with a
gateway retry, state write per leg) -> envelope check -> model-written flight brief -> brief parser -> lift
margin -> fare -> slot hold -> flight plan filing -> manifest reconciliation -> confirmation.
"""
from __future__ import annotations

import datetime
import json
import re

import trajdebug
from suitecommon import chat_text, prompt, read_prompt

RUN_NAME = "zeppelin-booking-desk"
ROUTE = "sdk"
DOMAIN = "zeppelin sightseeing operator"
SHAPE = "linear pipeline with a per-leg loop (tool + retry + run.state write), two model calls, checks in tools"

ACTIVE = ""  # the one switch this module reads; set by the generator

ROUTES = {
    "Lake Constance Loop": {"field": "Friedrichshafen", "stops": ["Meersburg", "Mainau", "Lindau"],
                            "slots": ["09:30", "11:45", "16:10"], "fare_eur": 395},
    "Rhine Falls Crossing": {"field": "Friedrichshafen", "stops": ["Konstanz", "Stein am Rhein", "Schaffhausen"],
                             "slots": ["08:15", "13:20"], "fare_eur": 545},
    "Hegau Volcano Circuit": {"field": "Friedrichshafen", "stops": ["Radolfzell", "Hohentwiel", "Singen", "Ueberlingen"],
                              "slots": ["10:05", "15:40"], "fare_eur": 470},
}
LANDING_FIELDS = {"Friedrichshafen"}
WIND_KN = {"Meersburg": 9, "Mainau": 12, "Lindau": 14, "Konstanz": 11, "Stein am Rhein": 13, "Schaffhausen": 15,
           "Radolfzell": 8, "Hohentwiel": 17, "Singen": 12, "Ueberlingen": 10, "Friedrichshafen": 7}
HANGAR_BOARD = {"2026-06-14": ["D-LZFO"], "2026-06-20": [], "2026-07-02": [], "2026-07-05": ["D-LZFN"], "2026-07-11": []}
RESERVATIONS = {
    "ZB-3301": ["Hanna Keller", "Lukas Keller", "Mia Keller"],
    "ZB-3302": ["Oskar Brandt", "Ida Brandt"],
    "ZB-3303": ["Sophie Marchetti", "Paolo Marchetti", "Giulia Marchetti", "Enzo Marchetti"],
    "ZB-3304": ["Arne Lindqvist"],
    "ZB-3305": ["Clara Wendt", "Jonas Wendt", "Emil Wendt"],
}
INPUTS = [
    {"reservation": "ZB-3301", "date": "2026-06-14",
     "message": "Hello, we'd like the Lake Constance Loop on 2026-06-14 at 11:45 for 2 adults and 1 child."},
    {"reservation": "ZB-3302", "date": "2026-06-20",
     "message": "Two of us, 2 adults, Rhine Falls Crossing, 2026-06-20, the 13:20 departure please."},
    {"reservation": "ZB-3303", "date": "2026-07-02",
     "message": "Family trip: Hegau Volcano Circuit on 2026-07-02 at 10:05, 2 adults and 2 children."},
    {"reservation": "ZB-3304", "date": "2026-07-05",
     "message": "One seat (1 adult) on the Lake Constance Loop, 2026-07-05, 16:10 if possible."},
    {"reservation": "ZB-3305", "date": "2026-07-11",
     "message": "Rhine Falls Crossing on 2026-07-11, 08:15 flight, 2 adults and 1 child."},
]
CASES = [
    {"id": "zep_brief_departure", "input": 0, "switch": "brief_time", "kind": "hallucinated_value",
     "root": ("write_flight_brief", 1), "failure": ("hold_slot", 1),
     "description": "The model's flight brief states a 12:10 departure that is in neither the request nor the route's timetable."},
    {"id": "zep_wind_units", "input": 2, "switch": "winds_kmh", "kind": "unit_error",
     "root": ("winds_aloft", 3), "failure": ("check_flight_envelope", 1),
     "description": "The winds-aloft service answers the Hohentwiel leg in km/h while the field says knots."},
    {"id": "zep_last_leg", "input": 1, "switch": "legs_short", "kind": "off_by_one",
     "root": ("plan_legs", 1), "failure": ("file_flight_plan", 1),
     "description": "Leg planning stops one leg early, so the plan never returns to the landing field."},
    {"id": "zep_child_seats", "input": 4, "switch": "drop_children", "kind": "lossy_parsing",
     "root": ("parse_booking", 1), "failure": ("reconcile_manifest", 1),
     "description": "The booking parser keeps the adults and loses the child count, so too few seats are booked."},
    {"id": "zep_fleet_board", "input": 3, "switch": "board_yesterday", "kind": "stale_data",
     "root": ("fleet_status", 1), "failure": ("hold_slot", 1),
     "description": "The fleet board returns the previous day's snapshot, assigning an airship that is in the hangar that day."},
]

CLIENT = None
MODEL = "fake-model"
_GATEWAY = {"calls": 0}


def policy(request):
    system, data = read_prompt(request)
    if system.startswith("Extract the booking"):
        text = data["message"]
        route = next(r for r in ROUTES if r in text)
        adults = int(re.search(r"(\d+) adults?", text).group(1))
        kids = re.search(r"(\d+) child(?:ren)?", text)
        return json.dumps({"route": route, "date": re.search(r"\d{4}-\d\d-\d\d", text).group(0),
                           "time": re.search(r"\b\d\d:\d\d\b", text).group(0),
                           "passengers": {"adults": adults, "children": int(kids.group(1)) if kids else 0}})
    if system.startswith("Write the flight brief"):
        dep = data["requested_time"]
        if ACTIVE == "brief_time":
            dep = "12:10"
        stops = ", ".join(leg["to"] for leg in data["legs"])
        return (f"Departure {dep} from {data['field']} aboard {data['airship']}. Route: {stops}. "
                f"{data['seats']} guests; highest wind on the way {data['max_wind_kn']} kn.")
    raise ValueError(f"no answer for {system[:40]}")


@trajdebug.step(kind="input")
def take_request(request: dict) -> dict:
    return request


@trajdebug.step(kind="tool")
def fetch_reservation(reservation: str) -> dict:
    return {"reservation": reservation, "passengers": list(RESERVATIONS[reservation])}


@trajdebug.step(kind="llm")
def extract_booking(messages: list[dict]) -> str:
    return chat_text(CLIENT, MODEL, messages)


@trajdebug.step(kind="parse")
def parse_booking(text: str) -> dict:
    data = json.loads(text)
    pax = data["passengers"]
    seats = pax["adults"] + pax.get("children", 0)
    if ACTIVE == "drop_children":
        seats = pax["adults"]
    return {"route": data["route"], "date": data["date"], "time": data["time"], "seats": seats}


@trajdebug.step(kind="retrieval")
def find_route(route: str) -> dict:
    return {"name": route, **ROUTES[route]}


@trajdebug.step(kind="tool")
def fleet_status(date: str) -> dict:
    board_date = date
    if ACTIVE == "board_yesterday":
        board_date = (datetime.date.fromisoformat(date) - datetime.timedelta(days=1)).isoformat()
    in_hangar = HANGAR_BOARD.get(board_date, [])
    return {"date": date, "ready": [a for a in ("D-LZFN", "D-LZFO", "D-LZZF") if a not in in_hangar]}


@trajdebug.step(kind="other")
def plan_legs(route: dict) -> list[dict]:
    points = [route["field"], *route["stops"], route["field"]]
    legs = [{"from": a, "to": b} for a, b in zip(points, points[1:])]
    if ACTIVE == "legs_short":
        legs = legs[:-1]
    return legs


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def winds_aloft(leg: dict) -> dict:
    _GATEWAY["calls"] += 1
    if _GATEWAY["calls"] == 1:
        raise ConnectionError("met gateway did not answer within 2 s")
    speed = WIND_KN[leg["to"]]
    unit = "kn"
    if ACTIVE == "winds_kmh" and leg["to"] == "Hohentwiel":
        speed = round(speed * 1.852)
    return {"leg": f"{leg['from']}-{leg['to']}", "wind": speed, "unit": unit, "gust_factor": 1.4}


@trajdebug.step(kind="state")
def log_leg(index: int, leg: dict, wind: dict) -> None:
    trajdebug.current_run().state[f"leg:{index}"] = {**leg, "wind_kn": wind["wind"], "gust_kn": round(wind["wind"] * wind["gust_factor"])}


@trajdebug.step(kind="condition")
def check_flight_envelope(leg_count: int) -> str:
    state = trajdebug.current_run().state
    worst = max((state[f"leg:{i}"] for i in range(leg_count)), key=lambda leg: leg["gust_kn"])
    if worst["gust_kn"] > 25:
        raise RuntimeError(f"gusts of {worst['gust_kn']} kn on {worst['from']}-{worst['to']} exceed the 25 kn passenger limit")
    return "go"


@trajdebug.step(kind="llm")
def write_flight_brief(messages: list[dict]) -> str:
    return chat_text(CLIENT, MODEL, messages)


@trajdebug.step(kind="parse")
def read_brief(text: str) -> dict:
    m = re.search(r"Departure (\d\d:\d\d) from (\w+) aboard ([\w-]+)", text)
    return {"departure": m.group(1), "field": m.group(2), "airship": m.group(3)}


@trajdebug.step(kind="other")
def lift_margin(seats: int, airship: str) -> dict:
    payload = seats * 95 + 180
    return {"airship": airship, "payload_kg": payload, "margin_kg": 1900 - payload}


@trajdebug.step(kind="tool")
def quote_fare(route: str, seats: int) -> dict:
    return {"route": route, "seats": seats, "total_eur": seats * ROUTES[route]["fare_eur"]}


@trajdebug.step(kind="tool")
def hold_slot(route: str, date: str, departure: str, airship: str) -> dict:
    if departure not in ROUTES[route]["slots"]:
        raise LookupError(f"{route} has no {departure} departure on {date} (timetable {', '.join(ROUTES[route]['slots'])})")
    if airship in HANGAR_BOARD.get(date, []):
        raise LookupError(f"{airship} is booked into the maintenance hangar on {date}")
    return {"slot": f"{date} {departure}", "airship": airship, "held": True}


@trajdebug.step(kind="tool")
def file_flight_plan(airship: str, legs: list[dict]) -> dict:
    if legs[-1]["to"] not in LANDING_FIELDS:
        raise ValueError(f"flight plan for {airship} ends at {legs[-1]['to']}, which is not a licensed landing field")
    return {"plan": "filed", "legs": len(legs)}


@trajdebug.step(kind="condition")
def reconcile_manifest(reservation: dict, seats: int) -> str:
    if len(reservation["passengers"]) != seats:
        raise AssertionError(f"manifest for {reservation['reservation']} lists {len(reservation['passengers'])} passengers, the booking holds {seats} seats")
    return "manifest matches"


@trajdebug.step(kind="output")
def confirm_booking(slot: dict, fare: dict, brief: str) -> str:
    return f"Confirmed {slot['slot']} on {slot['airship']}, {fare['seats']} seats, {fare['total_eur']} EUR. {brief}"


def record(server, inp: dict, path: str) -> None:
    global CLIENT, MODEL
    from openai import OpenAI

    server.use(policy)
    CLIENT, MODEL = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0), server.model
    _GATEWAY["calls"] = 0
    try:
        with trajdebug.run(RUN_NAME, task=f"sightseeing booking {inp['reservation']}", path=path) as run:
            req = take_request(inp)
            reservation = fetch_reservation(req["reservation"])
            text = extract_booking(prompt("Extract the booking as JSON: route, date, time, passengers.", {"message": req["message"]}))
            booking = parse_booking(text)
            route = find_route(booking["route"])
            fleet = fleet_status(booking["date"])
            legs = plan_legs(route)
            for i, leg in enumerate(legs):
                wind = winds_aloft(leg)
                log_leg(i, leg, wind)
            check_flight_envelope(len(legs))
            max_wind = max(run.state[f"leg:{i}"]["gust_kn"] for i in range(len(legs)))
            brief = write_flight_brief(prompt("Write the flight brief for the passengers.", {
                "field": route["field"], "airship": fleet["ready"][0], "legs": legs, "seats": booking["seats"],
                "requested_time": booking["time"], "timetable": route["slots"], "max_wind_kn": max_wind}))
            plan = read_brief(brief)
            lift_margin(booking["seats"], plan["airship"])
            fare = quote_fare(route["name"], booking["seats"])
            slot = hold_slot(route["name"], booking["date"], plan["departure"], plan["airship"])
            file_flight_plan(plan["airship"], legs)
            reconcile_manifest(reservation, booking["seats"])
            confirm_booking(slot, fare, brief)
    except Exception:
        pass
