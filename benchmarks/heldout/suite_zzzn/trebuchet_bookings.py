"""Trebuchet reenactment troupe: show bookings (route: sdk, trajdebug's own recording API)."""
import json
import re

from openai import OpenAI

import trajdebug

NAME = "trebuchet-show-bookings"
ROUTE = "sdk"
DOMAIN = "trebuchet reenactment troupe's bookings"
SHAPE = "linear pipeline with a loop over siege engines; run.state plan; safety review validator then booking API"
SWITCH = None
SERVER = None

HANDBOOKS = {
    "Castle Acre": {"venue": "Castle Acre", "field_m": 180, "stand_seats": 300, "margin_m": 25},
    "Castle Rising": {"venue": "Castle Rising", "field_m": 95, "stand_seats": 120, "margin_m": 20},
    "Framlingham Meadow": {"venue": "Framlingham Meadow", "field_m": 240, "stand_seats": 500, "margin_m": 30},
    "Orford Green": {"venue": "Orford Green", "field_m": 150, "stand_seats": 200, "margin_m": 25},
    "Kenilworth Lawn": {"venue": "Kenilworth Lawn", "field_m": 210, "stand_seats": 450, "margin_m": 30},
}
ENGINES = {
    "Warwolf": {"range_ft": 394, "crew": 6},
    "Bricole": {"range_ft": 197, "crew": 3},
    "Couillard": {"range_ft": 262, "crew": 4},
    "Mangonel": {"range_ft": 164, "crew": 3},
    "Onager": {"range_ft": 131, "crew": 2},
}
BOOKED = {"2027-05-14", "2027-06-05", "2027-07-09", "2027-08-20", "2027-09-11"}
INPUTS = [
    {"task": "Castle Acre, 15 May 2027, Warwolf and Bricole", "venue": "Castle Acre", "date": "2027-05-15",
     "engines": ["Warwolf", "Bricole"], "audience": 240, "crew_on_hand": 11},
    {"task": "Orford Green, 6 June 2027, Couillard", "venue": "Orford Green", "date": "2027-06-06",
     "engines": ["Couillard", "Onager"], "audience": 150, "crew_on_hand": 7},
    {"task": "Kenilworth Lawn, 10 July 2027, three engines", "venue": "Kenilworth Lawn", "date": "2027-07-10",
     "engines": ["Mangonel", "Couillard", "Bricole"], "audience": 380, "crew_on_hand": 12},
    {"task": "Framlingham Meadow, 20 August 2027, Warwolf", "venue": "Framlingham Meadow", "date": "2027-08-20",
     "engines": ["Warwolf", "Mangonel"], "audience": 420, "crew_on_hand": 10},
    {"task": "Castle Acre, 12 September 2027, Onager pair", "venue": "Castle Acre", "date": "2027-09-12",
     "engines": ["Onager", "Bricole"], "audience": 90, "crew_on_hand": 9},
]
CASES = [
    dict(id="zn01", input=0, switch="handbook", kind="wrong_retrieval",
         root=("venue_handbook", 1), failure=None,
         desc="The handbook search matched a similarly named castle and returned its much shorter throwing field."),
    dict(id="zn02", input=2, switch="feet", kind="unit_error",
         root=("throw_range", 2), failure=None,
         desc="The second engine's range was taken from the catalogue in feet and used as metres."),
    dict(id="zn03", input=1, switch="audience", kind="hallucinated_value",
         root=("read_request", 1), failure=None,
         desc="The model's reading of the request gave an audience of 260, a number the request never states."),
    dict(id="zn04", input=3, switch="calendar", kind="off_by_one",
         root=("check_calendar", 1), failure=None,
         desc="The calendar lookup shifted each booked day by one, so the day already taken looked free."),
    dict(id="zn05", input=4, switch="crew", kind="bad_memory_write",
         root=("save_plan", 1), failure=None,
         desc="The saved plan recorded the crew as the number of engines instead of the crew they need."),
]


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    req = json.loads(prompt.split("REQUEST:", 1)[1])
    audience = req["audience"]
    if SWITCH == "audience":
        audience = 260
    return json.dumps({"venue": req["venue"], "date": req["date"], "engines": req["engines"], "audience": audience})


def _client():
    return OpenAI(base_url=SERVER.base_url, api_key="not-needed", max_retries=0)


@trajdebug.step(kind="input")
def receive_booking(booking: dict) -> dict:
    return dict(booking)


@trajdebug.step(kind="retrieval")
def venue_handbook(venue: str) -> dict:
    if SWITCH == "handbook" and venue.startswith("Castle"):
        hits = sorted(HANDBOOKS, key=lambda k: (not k.startswith("Castle"), k != "Castle Rising"))
        return dict(HANDBOOKS[hits[0]])
    return dict(HANDBOOKS[venue])


@trajdebug.step(kind="llm")
def read_request(messages: list) -> str:
    reply = _client().chat.completions.create(model=SERVER.model, messages=messages)
    return reply.choices[0].message.content


@trajdebug.step(kind="parse")
def parse_request(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="tool")
def check_calendar(month: str) -> list:
    days = sorted(d for d in BOOKED if d.startswith(month))
    if SWITCH == "calendar":
        days = [d[:-2] + f"{int(d[-2:]) + 1:02d}" for d in days]
    return days


@trajdebug.step(kind="condition")
def pick_date(wanted: str, booked: list) -> str:
    return wanted if wanted not in booked else wanted[:-2] + f"{int(wanted[-2:]) + 1:02d}"


@trajdebug.step(kind="tool")
def engine_specs(engine: str) -> dict:
    return {"engine": engine, **ENGINES[engine]}


@trajdebug.step(kind="other")
def throw_range(spec: dict) -> dict:
    metres = spec["range_ft"] if SWITCH == "feet" and spec["engine"] == "Couillard" else round(spec["range_ft"] * 0.3048)
    return {"engine": spec["engine"], "range_m": metres, "crew": spec["crew"]}


@trajdebug.step(kind="state")
def save_plan(request: dict, ranges: list, date: str) -> dict:
    crew = len(ranges) if SWITCH == "crew" else sum(r["crew"] for r in ranges)
    plan = {"date": date, "audience": request["audience"], "crew_needed": crew,
            "longest_throw_m": max(r["range_m"] for r in ranges)}
    trajdebug.current_run().state["plan"] = plan
    return plan


@trajdebug.step(kind="tool")
def seating_chart(venue: str, audience: int) -> dict:
    seats = HANDBOOKS[venue]["stand_seats"]
    return {"rows": -(-audience // 20), "seats_left": seats - audience}


@trajdebug.step(kind="tool")
def crew_roster(on_hand: int) -> dict:
    need = trajdebug.current_run().state["plan"]["crew_needed"]
    return {"crew_on_hand": on_hand, "crew_needed": need, "spare": on_hand - need}


@trajdebug.step(kind="tool")
def price_quote(plan: dict, engines: list) -> dict:
    fee = 450 + 120 * len(engines) + 2 * plan["audience"]
    return {"fee_gbp": fee, "deposit_gbp": round(fee * 0.3)}


@trajdebug.step(kind="condition")
def safety_review(handbook: dict, ranges: list, seating: dict) -> dict:
    for r in ranges:
        if r["range_m"] + handbook["margin_m"] > handbook["field_m"]:
            raise ValueError(f"{r['engine']} throws {r['range_m']} m; with the {handbook['margin_m']} m margin "
                             f"it overruns the {handbook['field_m']} m field at {handbook['venue']}")
    if seating["seats_left"] < 0:
        raise ValueError(f"stand short by {-seating['seats_left']} seats")
    return {"cleared": True}


@trajdebug.step(kind="tool")
def confirm_booking(venue: str, date: str, quote: dict, roster: dict) -> dict:
    if date in BOOKED:
        raise RuntimeError(f"booking system: {date} is already taken by another show")
    if roster["spare"] > 6:
        raise RuntimeError(f"booking system: {roster['crew_on_hand']} crew for a show needing "
                           f"{roster['crew_needed']}; insurer caps the field crew at need + 6")
    return {"booking": f"{venue[:3].upper()}-{date}", "deposit_gbp": quote["deposit_gbp"]}


@trajdebug.step(kind="output")
def booking_letter(confirmation: dict, plan: dict) -> str:
    return f"Booked {confirmation['booking']}; deposit {confirmation['deposit_gbp']} GBP; crew {plan['crew_needed']}."


def run_one(inp, path):
    try:
        with trajdebug.run(NAME, task=inp["task"], path=path):
            booking = receive_booking(inp)
            handbook = venue_handbook(booking["venue"])
            messages = [
                {"role": "system", "content": "Read the booking request and return JSON with venue, date, engines, audience."},
                {"role": "user", "content": "HANDBOOK: " + json.dumps(handbook) + "\nREQUEST:" + json.dumps(booking)},
            ]
            request = parse_request(read_request(messages))
            booked = check_calendar(request["date"][:7])
            date = pick_date(request["date"], booked)
            ranges = []
            for engine in request["engines"]:
                ranges.append(throw_range(engine_specs(engine)))
            plan = save_plan(request, ranges, date)
            seating = seating_chart(handbook["venue"], plan["audience"])
            roster = crew_roster(booking["crew_on_hand"])
            quote = price_quote(plan, request["engines"])
            safety_review(handbook, ranges, seating)
            confirmation = confirm_booking(booking["venue"], date, quote, roster)
            booking_letter(confirmation, plan)
    except (ValueError, RuntimeError):
        pass
