"""Helicopter charter quoting desk (openai_agents route, Chat Completions endpoint)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import kit
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from harness import CheckFailed, record_agents, tool_history
from openai import AsyncOpenAI


NAME = "heli-charter-quotes"
ROUTE = "openai_agents"
DOMAIN = "helicopter charter quotes"
SHAPE = ("Agents SDK Agent + Runner (Chat Completions): helipad lookups, route distance, weather, fleet "
         "availability, crew roster, permit-desk sub-agent (Agent.as_tool: airspace check, landing permit), "
         "quote computation tool, validator tool; one tool call per model turn")

PADS = {
    "EGLW": {"name": "London Heliport", "lat": 51.4700, "lon": -0.1790, "permit": False},
    "EGHO": {"name": "Thruxton", "lat": 51.2106, "lon": -1.6000, "permit": False},
    "EGTB": {"name": "Wycombe Air Park", "lat": 51.6117, "lon": -0.8083, "permit": False},
    "XGOO": {"name": "Goodwood Estate Pad", "lat": 50.8594, "lon": -0.7592, "permit": True},
    "XSTA": {"name": "St Andrews Links Pad", "lat": 56.3430, "lon": -2.8027, "permit": True},
    "XCHL": {"name": "Cheltenham Racecourse Pad", "lat": 51.9170, "lon": -2.0650, "permit": True},
    "XBLN": {"name": "Blenheim Palace Pad", "lat": 51.8413, "lon": -1.3612, "permit": True},
    "XSIL": {"name": "Silverstone Circuit Pad", "lat": 52.0786, "lon": -1.0169, "permit": True},
}
FLEET = [  # page order of the operator's availability API
    {"tail": "G-HLCA", "type": "R44", "seats": 3, "range_nm": 300, "rate_hr": 640, "kts": 110},
    {"tail": "G-HLCB", "type": "H125", "seats": 5, "range_nm": 330, "rate_hr": 1450, "kts": 125},
    {"tail": "G-HLCC", "type": "AW109", "seats": 6, "range_nm": 250, "rate_hr": 2350, "kts": 150},
    {"tail": "G-HLCD", "type": "AW109", "seats": 6, "range_nm": 500, "rate_hr": 2500, "kts": 150},
    {"tail": "G-HLCE", "type": "S-76", "seats": 8, "range_nm": 400, "rate_hr": 3400, "kts": 145},
    {"tail": "G-HLCF", "type": "H135", "seats": 6, "range_nm": 340, "rate_hr": 1900, "kts": 130},
]
MAINTENANCE = {"G-HLCF": ["2027-07-03", "2027-07-04"], "G-HLCB": ["2027-06-20"]}
PILOTS = [
    {"pilot": "Capt. L. Byrne", "ratings": ["AW109", "S-76"]},
    {"pilot": "Capt. R. Osei", "ratings": ["R44", "H125"]},
    {"pilot": "Capt. M. Sato", "ratings": ["H135", "H125", "AW109"]},
]
LANDING_FEE = {"XGOO": 180.0, "XSTA": 240.0, "XCHL": 210.0, "XBLN": 260.0, "XSIL": 195.0}
QUOTES: dict[str, dict] = {}
PERMITS: dict[tuple[str, str], str] = {}

INPUTS = [
    {"client": "Marlow Events", "pax": 4, "origin": "EGLW", "destination": "XGOO", "date": "2027-07-03",
     "received": "2027-06-20", "return": True},
    {"client": "Fairway Travel", "pax": 6, "origin": "EGTB", "destination": "XSTA", "date": "2027-07-10",
     "received": "2027-06-28", "return": False},
    {"client": "Cotswold Hospitality", "pax": 5, "origin": "EGLW", "destination": "XCHL", "date": "2027-03-16",
     "received": "2027-03-01", "return": True},
    {"client": "Oxford Alumni Office", "pax": 3, "origin": "EGLW", "destination": "XBLN", "date": "2027-07-04",
     "received": "2027-06-20", "return": False},
    {"client": "Apex Motorsport", "pax": 6, "origin": "EGHO", "destination": "XSIL", "date": "2027-07-03",
     "received": "2027-06-20", "return": True},
    {"client": "Northern Links Club", "pax": 5, "origin": "EGHO", "destination": "XSTA", "date": "2027-05-21",
     "received": "2027-05-02", "return": False},
    {"client": "Downs Racing Club", "pax": 2, "origin": "EGTB", "destination": "XGOO", "date": "2027-08-14",
     "received": "2027-08-01", "return": True},
]

CASES = [
    {"id": "zzl_heli_1", "input": 0, "kind": "wrong_tool_args", "root": ("generation fake-model", 9),
     "failure": ("validate_quote", 1),
     "description": "The model asks fleet availability for the enquiry's received date instead of the flight "
                    "date, and books an aircraft that is in maintenance on the day."},
    {"id": "zzl_heli_2", "input": 1, "kind": "truncated_result", "root": ("fleet_availability", 1),
     "failure": ("validate_quote", 1),
     "description": "Fleet availability returns only its first page of three aircraft, none with the range for "
                    "the leg, and the model picks the longest-range one it saw."},
    {"id": "zzl_heli_3", "input": 2, "kind": "tool_ignores_argument", "root": ("crew_roster", 1),
     "failure": ("validate_quote", 1),
     "description": "The crew roster ignores the type_rating filter and returns the first pilot on duty, who is "
                    "not rated on the booked aircraft."},
    {"id": "zzl_heli_4", "input": 3, "kind": "subagent_wrong_entity", "root": ("generation fake-model", 6),
     "failure": ("validate_quote", 1),
     "description": "The permit-desk sub-agent takes the first pad code of its brief (the origin) and arranges "
                    "the landing permit there, not at Blenheim."},
    {"id": "zzl_heli_5", "input": 5, "kind": "hallucinated_value", "root": ("generation fake-model", 11),
     "failure": ("validate_quote", 1),
     "description": "When calling compute_quote the model states a leg distance of its own instead of the one "
                    "route_distance returned."},
]

MAIN_INSTRUCTIONS = ("You are the charter desk of a helicopter operator. Quote the client's flight: look up both "
                     "pads, the route distance, the weather, an aircraft that seats everyone and has the range, "
                     "a rated pilot, the landing permit (ask the permit desk), then compute and validate the quote.")
PERMIT_INSTRUCTIONS = ("You are the permit desk. For the flight in the brief, check the airspace at the landing "
                       "pad and obtain its landing permit for the date. Answer with the permit as JSON.")


def _nm(a: str, b: str) -> int:
    p, q = PADS[a], PADS[b]
    dlat = math.radians(q["lat"] - p["lat"])
    dlon = math.radians(q["lon"] - p["lon"]) * math.cos(math.radians((p["lat"] + q["lat"]) / 2))
    return int(round(math.hypot(dlat, dlon) * 3440.1))


def _call(name: str, args: dict):
    from trajdebug.testing import Reply, tool_call

    return Reply(tool_calls=(tool_call(name, args),))


def _brain(inp: dict):
    def policy(request):
        instr, done = tool_history(request)
        res = {name: json.loads(out) if out.startswith("{") else out for name, _, out in done}
        if instr.startswith("You are the permit desk"):
            brief = instr.split("\n", 1)[1]
            codes = [w.strip(".,:") for w in brief.split() if w.strip(".,:") in PADS]
            pad = codes[0] if kit.on("zzl_heli_4") else codes[-1]
            if not done:
                return _call("airspace_check", {"pad": pad})
            if len(done) == 1:
                return _call("landing_permit", {"pad": done[0][1]["pad"], "date": inp["date"]})
            return "Permit obtained.\n" + done[1][2]
        n = len(done)
        if n == 0:
            return _call("lookup_helipad", {"code": inp["origin"]})
        if n == 1:
            return _call("lookup_helipad", {"code": inp["destination"]})
        if n == 2:
            return _call("route_distance", {"origin": inp["origin"], "destination": inp["destination"]})
        if n == 3:
            return _call("weather_brief", {"origin": inp["origin"], "destination": inp["destination"],
                                           "date": inp["date"]})
        if n == 4:
            brief = (f"Flight {inp['origin']} to {inp['destination']} on {inp['date']} with {inp['pax']} "
                     f"passengers: arrange the landing permit at the destination.")
            return _call("permit_desk", {"input": brief})
        if n == 5:
            day = inp["received"] if kit.on("zzl_heli_1") else inp["date"]
            return _call("fleet_availability", {"date": day, "min_seats": inp["pax"]})
        dist = res["route_distance"]["nm"]
        if n == 6:
            fleet = res["fleet_availability"]["aircraft"]
            ok = [a for a in fleet if a["seats"] >= inp["pax"] and a["range_nm"] >= dist]
            pick = min(ok, key=lambda a: a["rate_hr"]) if ok else max(fleet, key=lambda a: a["range_nm"])
            return _call("crew_roster", {"date": inp["date"], "type_rating": pick["type"], "tail": pick["tail"]})
        if n == 7:
            tail = done[6][1]["tail"]
            permit = json.loads(res["permit_desk"].split("\n", 1)[1])
            legs = dist
            if kit.on("zzl_heli_5"):
                legs = int(str(dist)[::-1]) if str(dist)[::-1][0] != "0" else dist + 40
            return _call("compute_quote", {"tail": tail, "distance_nm": legs, "pax": inp["pax"],
                                           "landing_fee": permit["fee"], "permit_ref": permit["permit_ref"],
                                           "pilot": res["crew_roster"]["pilot"], "return_trip": inp["return"],
                                           "date": inp["date"], "destination": inp["destination"],
                                           "origin": inp["origin"]})
        if n == 8:
            return _call("validate_quote", {"quote_id": res["compute_quote"]["quote_id"]})
        q = res["compute_quote"]
        return f"Quote {q['quote_id']} for {inp['client']}: GBP {q['total']:.2f} including landing fees."

    return policy


@function_tool
def lookup_helipad(code: str) -> str:
    """Look up a helipad or aerodrome by its code."""
    return json.dumps({"code": code, **PADS[code]})


@function_tool
def route_distance(origin: str, destination: str) -> str:
    """Great-circle distance between two pads, nautical miles."""
    return json.dumps({"origin": origin, "destination": destination, "nm": _nm(origin, destination)})


@function_tool
def weather_brief(origin: str, destination: str, date: str) -> str:
    """Forecast summary for the route on the date."""
    return json.dumps({"date": date, "summary": "VMC, wind 240/12, cloud base 2500 ft", "go": True})


@function_tool
def fleet_availability(date: str, min_seats: int) -> str:
    """Aircraft free on a date with at least min_seats passenger seats."""
    page = FLEET[:3] if kit.on("zzl_heli_2") else FLEET
    free = [dict(a) for a in page if date not in MAINTENANCE.get(a["tail"], []) and a["seats"] >= min_seats]
    return json.dumps({"date": date, "aircraft": free})


@function_tool
def crew_roster(date: str, type_rating: str, tail: str) -> str:
    """A pilot on duty on the date holding the type rating."""
    pool = PILOTS if kit.on("zzl_heli_3") else [p for p in PILOTS if type_rating in p["ratings"]]
    p = pool[0]
    return json.dumps({"date": date, "tail": tail, "pilot": p["pilot"], "ratings": p["ratings"]})


@function_tool
def airspace_check(pad: str) -> str:
    """Airspace restrictions around a landing pad."""
    return json.dumps({"pad": pad, "restrictions": [], "notam": "none active"})


@function_tool
def landing_permit(pad: str, date: str) -> str:
    """Obtain the landing permit for a pad on a date."""
    ref = f"LP-{pad}-{date.replace('-', '')}"
    PERMITS[(pad, date)] = ref
    return json.dumps({"pad": pad, "date": date, "permit_ref": ref, "fee": LANDING_FEE.get(pad, 0.0)})


@function_tool
def compute_quote(tail: str, distance_nm: int, pax: int, landing_fee: float, permit_ref: str, pilot: str,
                  return_trip: bool, date: str, destination: str, origin: str) -> str:
    """Price the charter: flight hours at the aircraft's rate, positioning and landing fees."""
    ac = next(a for a in FLEET if a["tail"] == tail)
    legs = 2 if return_trip else 1
    hours = round(distance_nm * legs / ac["kts"] + 0.3, 2)
    total = round(hours * ac["rate_hr"] + landing_fee * legs, 2)
    qid = f"Q-{tail[-2:]}-{date.replace('-', '')}-{destination}"
    QUOTES[qid] = {"quote_id": qid, "tail": tail, "type": ac["type"], "distance_nm": distance_nm, "pax": pax,
                   "pilot": pilot, "permit_ref": permit_ref, "date": date, "destination": destination,
                   "origin": origin, "hours": hours, "total": total}
    return json.dumps(QUOTES[qid])


def _validate(quote_id: str) -> str:
    q = QUOTES[quote_id]
    ac = next(a for a in FLEET if a["tail"] == q["tail"])
    route = _nm(q["origin"], q["destination"])
    if q["distance_nm"] != route:
        raise CheckFailed(f"quote {quote_id} prices {q['distance_nm']} nm, route {q['origin']}-{q['destination']} "
                          f"is {route} nm")
    if q["date"] in MAINTENANCE.get(q["tail"], []):
        raise CheckFailed(f"{q['tail']} is in maintenance on {q['date']}")
    if ac["seats"] < q["pax"] or ac["range_nm"] < route:
        raise CheckFailed(f"{q['tail']} ({ac['type']}) has {ac['seats']} seats / {ac['range_nm']} nm range for "
                          f"{q['pax']} pax over {route} nm")
    ratings = next(p["ratings"] for p in PILOTS if p["pilot"] == q["pilot"])
    if q["type"] not in ratings:
        raise CheckFailed(f"{q['pilot']} holds no {q['type']} type rating")
    if PERMITS.get((q["destination"], q["date"])) != q["permit_ref"]:
        raise CheckFailed(f"permit {q['permit_ref']} does not cover landing at {q['destination']} on {q['date']}")
    return json.dumps({"quote_id": quote_id, "valid": True})


@function_tool(failure_error_function=None)
def validate_quote(quote_id: str) -> str:
    """Check the quote against the operator's rules before it is sent."""
    return _validate(quote_id)


def record(server, inp: dict, path: Path) -> None:
    server.use(_brain(inp))
    QUOTES.clear()
    PERMITS.clear()
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model="fake-model", openai_client=client)
    permit_agent = Agent(name="permit_desk_agent", instructions=PERMIT_INSTRUCTIONS, model=model,
                         tools=[airspace_check, landing_permit])
    desk = Agent(name="charter_desk", instructions=MAIN_INSTRUCTIONS, model=model,
                 tools=[lookup_helipad, route_distance, weather_brief, fleet_availability, crew_roster,
                        permit_agent.as_tool(tool_name="permit_desk",
                                             tool_description="Arrange the landing permit for a flight."),
                        compute_quote, validate_quote])
    request = (f"{inp['client']} asks for a quote: {inp['pax']} passengers from {inp['origin']} to "
               f"{inp['destination']} on {inp['date']}{' and back' if inp['return'] else ''}.")

    def go():
        Runner.run_sync(desk, request, max_turns=20,
                        run_config=RunConfig(workflow_name=NAME, tracing_disabled=False))

    record_agents(go, NAME, f"charter quote for {inp['client']}", path)
