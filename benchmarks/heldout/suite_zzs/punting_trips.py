"""A punting company's river trips (openai_agents route, Chat Completions): book a chauffeured punt trip."""
import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

import kit
from common import Reply, tool_call, tool_outputs
from trajdebug.integrations.openai_agents import TrajdebugProcessor

NAME, ROUTE, DOMAIN = "punting-trips", "openai_agents", "a punting company's river trips"
SHAPE = "Agents SDK agent (Chat Completions) with 8 function tools in a plan loop, a chauffeur-desk sub-agent as a tool (its own model turns and rota tool), booking, validator tool"

LEVELS = {"2027-07-03": "normal", "2027-07-04": "high", "2027-07-10": "normal", "2027-07-11": "normal",
          "2027-07-17": "normal", "2027-07-18": "normal", "2027-07-24": "normal", "2027-07-25": "normal",
          "2027-07-31": "normal"}
FLEET = [{"punt": "P-6", "seats": 6}, {"punt": "P-8", "seats": 8}, {"punt": "P-12", "seats": 12}]
ROTA = {"2027-07-03": "Hattie", "2027-07-04": "Rufus", "2027-07-10": "Jonty", "2027-07-11": "Hattie",
        "2027-07-17": "Rufus", "2027-07-18": "Jonty", "2027-07-24": "Hattie", "2027-07-25": "Rufus", "2027-07-31": "Jonty"}
BOOKINGS = {}


def tariff(guests, minutes, private):
    base = 22 * guests * minutes / 45
    return round(base * (1.5 if private else 1.0), 2)


def _req(ref, date, adults, children, minutes, private):
    party = f"{adults} adults" + (f" + {children} children" if children else "")
    return {"ref": ref, "date": date, "adults": adults, "children": children, "minutes": minutes, "private": private,
            "text": f"Enquiry {ref}: {party}, {minutes}-minute {'private ' if private else ''}chauffeured punt on {date}"}


INPUTS = {
    "p1": _req("E-301", "2027-07-03", 4, 0, 75, False), "p2": _req("E-302", "2027-07-10", 5, 2, 45, True),
    "p3": _req("E-303", "2027-07-11", 6, 3, 60, False), "p4": _req("E-304", "2027-07-04", 3, 1, 45, False),
    "p5": _req("E-305", "2027-07-17", 7, 0, 60, False),
    "r1": _req("E-290", "2027-07-18", 2, 2, 45, False), "r2": _req("E-291", "2027-07-24", 6, 0, 75, True),
    "r3": _req("E-292", "2027-07-25", 3, 0, 60, False), "r4": _req("E-293", "2027-07-31", 8, 2, 45, False),
}
REFS = ["r1", "r2", "r3", "r4"]
CASES = [
    {"id": "zzs_punt_slot_length", "kind": "wrong_tool_args", "input": "p1", "root": ("generation fake-model", 7),
     "failure": ("validate_booking", 1),
     "description": "The model asks the slot search for 45-minute slots on a 75-minute enquiry, and the trip is booked at the shorter length."},
    {"id": "zzs_punt_private_rate", "kind": "tool_ignores_argument", "input": "p2", "root": ("quote_trip", 1),
     "failure": ("validate_booking", 1),
     "description": "The quote tool ignores private=True and prices the trip at the shared rate."},
    {"id": "zzs_punt_booking_price", "kind": "hallucinated_value", "input": "p5", "root": ("generation fake-model", 9),
     "failure": ("validate_booking", 1),
     "description": "The model books the trip at GBP 190.00, a price no quote gave."},
    {"id": "zzs_punt_river_level", "kind": "swallowed_error", "input": "p4", "root": ("check_river_level", 1),
     "failure": ("validate_booking", 1),
     "description": "The river level check hits an Environment Agency API error and answers 'normal', so a trip is booked on a closed high-water day."},
    {"id": "zzs_punt_party_size", "kind": "lossy_parsing", "input": "p3", "root": ("parse_party", 1),
     "failure": ("validate_booking", 1),
     "description": "The party parser keeps the adults and drops '+ 3 children', so a 6-seat punt is booked for nine people."},
]


@function_tool
def parse_party(text: str) -> dict:
    """Count the party in an enquiry."""
    import re
    adults = int(re.search(r"(\d+) adults", text).group(1))
    m = re.search(r"\+ (\d+) children", text)
    children = int(m.group(1)) if m and not kit.on("zzs_punt_party_size") else 0
    return {"adults": adults, "children": children, "guests": adults + children}


@function_tool
def find_slots(date: str, duration_min: int) -> list:
    """Free slots on a date for a trip length."""
    return [{"date": date, "start": s, "duration_min": duration_min} for s in ("11:00", "14:30", "16:00")]


@function_tool
def get_punt_fleet(date: str, guests: int) -> list:
    """Punts free on a date that seat the party."""
    return [p for p in FLEET if p["seats"] >= guests]


@function_tool
def quote_trip(guests: int, duration_min: int, private: bool) -> dict:
    """Price a trip."""
    use_private = False if kit.on("zzs_punt_private_rate") else private
    return {"guests": guests, "duration_min": duration_min, "price_gbp": tariff(guests, duration_min, use_private)}


@function_tool
def check_river_level(date: str) -> dict:
    """Environment Agency river level for the Cam at the date."""
    level = LEVELS[date]
    if kit.on("zzs_punt_river_level"):
        try:
            raise ConnectionError("EA flood API returned 503")
        except ConnectionError:
            level = "normal"
    return {"date": date, "level": level, "punting": level == "normal"}


@function_tool
def rota(date: str) -> dict:
    """Chauffeur on the rota for a date."""
    return {"date": date, "chauffeur": ROTA[date]}


@function_tool
def book_trip(ref: str, date: str, start: str, duration_min: int, guests: int, punt: str, chauffeur: str,
              price_gbp: float) -> dict:
    """Book the trip."""
    booking = {"booking": f"BK-{ref[2:]}", "ref": ref, "date": date, "start": start, "duration_min": duration_min,
               "guests": guests, "punt": punt, "chauffeur": chauffeur, "price_gbp": price_gbp}
    BOOKINGS[booking["booking"]] = booking
    return booking


def _validate(booking: str, enquiry_ref: str) -> dict:
    b = BOOKINGS[booking]
    req = next(v for v in INPUTS.values() if v["ref"] == enquiry_ref)
    party = req["adults"] + req["children"]
    seats = next(p["seats"] for p in FLEET if p["punt"] == b["punt"])
    if party > seats:
        raise ValueError(f"{booking}: party of {party} on {b['punt']} seating {seats}")
    if b["duration_min"] != req["minutes"]:
        raise ValueError(f"{booking}: {b['duration_min']} minutes booked, enquiry {enquiry_ref} asks {req['minutes']}")
    if LEVELS[b["date"]] != "normal":
        raise ValueError(f"{booking}: river level {LEVELS[b['date']]} on {b['date']}, no punting")
    price = tariff(party, req["minutes"], req["private"])
    if abs(b["price_gbp"] - price) > 0.01:
        raise ValueError(f"{booking}: GBP {b['price_gbp']:.2f} charged, tariff is GBP {price:.2f}")
    return {"booking": booking, "valid": True}


validate_booking = function_tool(_validate, name_override="validate_booking",
                                 description_override="Check a booking against the company's rules.",
                                 failure_error_function=None)


def brain(inp):
    def policy(request):
        body = request.body
        system = body["messages"][0]["content"]
        done = tool_outputs(request)
        got = {n: v for n, v in done}
        if system.startswith("#desk"):
            if "rota" not in got:
                return Reply(tool_calls=(tool_call("rota", {"date": inp["date"]}),))
            return json.dumps({"chauffeur": got["rota"]["chauffeur"]})
        steps = ["parse_party", "chauffeur_desk", "get_punt_fleet", "check_river_level", "find_slots", "quote_trip",
                 "book_trip", "validate_booking"]
        nxt = steps[len(done)] if len(done) < len(steps) else None
        if "check_river_level" in got and not got["check_river_level"]["punting"]:
            return f"No trips on {inp['date']}: the river is high. Enquiry {inp['ref']} offered another date."
        if nxt == "parse_party":
            return Reply(tool_calls=(tool_call("parse_party", {"text": inp["text"]}),))
        if nxt == "find_slots":
            minutes = 45 if kit.on("zzs_punt_slot_length") else inp["minutes"]
            return Reply(tool_calls=(tool_call("find_slots", {"date": inp["date"], "duration_min": minutes}),))
        guests = got["parse_party"]["guests"]
        if nxt == "get_punt_fleet":
            return Reply(tool_calls=(tool_call("get_punt_fleet", {"date": inp["date"], "guests": guests}),))
        if nxt == "quote_trip":
            slot = got["find_slots"][0]
            return Reply(tool_calls=(tool_call("quote_trip", {"guests": guests, "duration_min": slot["duration_min"],
                                                              "private": inp["private"]}),))
        if nxt == "chauffeur_desk":
            return Reply(tool_calls=(tool_call("chauffeur_desk", {"input": f"Chauffeur for {inp['date']}"}),))
        if nxt == "check_river_level":
            return Reply(tool_calls=(tool_call("check_river_level", {"date": inp["date"]}),))
        if nxt == "book_trip":
            slot = got["find_slots"][0]
            price = got["quote_trip"]["price_gbp"]
            if kit.on("zzs_punt_booking_price"):
                price = 190.0
            desk = got["chauffeur_desk"]
            desk = json.loads(desk) if isinstance(desk, str) else desk
            return Reply(tool_calls=(tool_call("book_trip", {
                "ref": inp["ref"], "date": inp["date"], "start": slot["start"], "duration_min": slot["duration_min"],
                "guests": guests, "punt": got["get_punt_fleet"][0]["punt"], "chauffeur": desk["chauffeur"],
                "price_gbp": price}),))
        if nxt == "validate_booking":
            return Reply(tool_calls=(tool_call("validate_booking", {"booking": got["book_trip"]["booking"],
                                                                    "enquiry_ref": inp["ref"]}),))
        b = got["book_trip"]
        return f"Booked {b['booking']}: {b['date']} {b['start']}, {b['punt']} with {b['chauffeur']}, GBP {b['price_gbp']:.2f}."

    return policy


def record(server, inp, path):
    server.use(brain(inp))
    BOOKINGS.clear()
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, task=f"book enquiry {inp['ref']}")])
    desk = Agent(name="chauffeur_desk", instructions="#desk Find the chauffeur on the rota.", model=server.model,
                 tools=[rota])
    agent = Agent(name="punt_booker", instructions="#punt Book chauffeured punt trips. Use the tools in order.",
                  model=server.model,
                  tools=[parse_party, find_slots, get_punt_fleet, quote_trip,
                         desk.as_tool(tool_name="chauffeur_desk", tool_description="Ask the chauffeur desk."),
                         check_river_level, book_trip, validate_booking])
    async def go():
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client)
        try:
            await Runner.run(agent, json.dumps({"enquiry": inp["text"]}), max_turns=20,
                             run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()

    try:
        asyncio.run(go())
    finally:
        set_trace_processors([])
