"""Glacier guiding trips (openai_agents route): a trip desk agent with tools, a safety-officer sub-agent
called as a tool, and a hand-off to the gear room, on the real Agents SDK."""

from __future__ import annotations

import json
from pathlib import Path

from agents import (
    Agent,
    AgentsException,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
    set_trace_processors,
)
from benchmarks.heldout.suite_s import kit
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call


AGENT = "glacier-desk"
ROUTE = "openai_agents"
EXT = "jsonl"
DOMAIN = "guided glacier hikes (permits, guides, gear)"
SHAPE = "desk agent: booking, weather, safety-officer sub-agent via as_tool (one record lookup per guest), guide, permit, insurer; hand-off to gear-room agent: gear reservation and trip confirmation"

BOOKINGS = {
    "GB-204": {"site": "Falljokull", "date": "2026-02-03", "made": "2026-01-20", "guests": [["P-5501", "Ana Ruiz", 38], ["P-5502", "Tom Berg", 44], ["P-5503", "Lea Holm", 40]]},
    "GB-118": {"site": "Solheimajokull", "date": "2026-02-07", "made": "2026-01-11", "guests": [["P-5512", "Ana Ruiz", 41], ["P-5513", "Ivo Sand", 45]]},
    "GB-231": {"site": "Svinafellsjokull", "date": "2026-02-10", "made": "2026-01-22", "guests": [["P-5521", "Mia Lund", 39], ["P-5522", "Olle Rask", 43]]},
    "GB-240": {"site": "Falljokull", "date": "2026-02-12", "made": "2026-01-25", "guests": [["P-5531", "Kai Dahl", 42], ["P-5532", "Rut Vik", 37], ["P-5533", "Jon Ek", 46], ["P-5534", "Siv Alm", 39]]},
    "GB-252": {"site": "Solheimajokull", "date": "2026-02-14", "made": "2026-01-30", "guests": [["P-5541", "Eva Nord", 38]]},
    "GB-260": {"site": "Svinafellsjokull", "date": "2026-02-17", "made": "2026-02-01", "guests": [["P-5551", "Leo Strand", 44], ["P-5552", "Ada Fors", 40]]},
    "GB-266": {"site": "Falljokull", "date": "2026-02-19", "made": "2026-02-02", "guests": [["P-5561", "Nils Ask", 45], ["P-5562", "Ina Berg", 38]]},
    "GB-271": {"site": "Solheimajokull", "date": "2026-02-21", "made": "2026-02-04", "guests": [["P-5571", "Bo Lind", 42], ["P-5572", "Ulla Hed", 39], ["P-5573", "Per Sjo", 43]]},
    "GB-283": {"site": "Svinafellsjokull", "date": "2026-02-24", "made": "2026-02-06", "guests": [["P-5581", "Alma Ros", 37], ["P-5582", "Vera Ek", 41]]},
}
GUIDES = {"Falljokull": ("Hekla Sig", "GL-4471"), "Solheimajokull": ("Orri Finn", "GL-4519"), "Svinafellsjokull": ("Dagny Stef", "GL-4603")}
GEAR_DAY = "2026-01-05"

CASES = [
    {"case": "glacier_guide_licence", "fault": "gd1", "kind": "hallucinated_value", "root": "generation desk-model",
     "fail": "issue_permit", "marker": "GL-4417", "input": "GB-204"},
    {"case": "glacier_medical_namesake", "fault": "gd2", "kind": "subagent_wrong_entity", "root": "generation desk-model",
     "fail": "insure_group", "marker": "P-5512", "input": "GB-204"},
    {"case": "glacier_weather_date", "fault": "gd3", "kind": "wrong_tool_args", "root": "generation desk-model",
     "fail": "issue_permit", "marker": '"date": "2026-01-22"', "input": "GB-231"},
    {"case": "glacier_booking_dates", "fault": "gd4", "kind": "format_drift", "root": "lookup_booking",
     "fail": "issue_permit", "marker": "12/02/2026", "input": "GB-240"},
    {"case": "glacier_gear_day", "fault": "gd5", "kind": "tool_ignores_argument", "root": "reserve_gear",
     "fail": "confirm_trip", "marker": GEAR_DAY, "input": "GB-252"},
]
REFS = ["GB-260", "GB-266", "GB-271", "GB-283"]


class DeskError(RuntimeError):
    pass


# ---- tools --------------------------------------------------------------------------------------

@function_tool
def lookup_booking(booking_id: str) -> str:
    """Read a booking from the reservations system."""
    b = BOOKINGS[booking_id]
    date = b["date"]
    if kit.active("gd4"):
        y, m, d = date.split("-")
        date = f"{d}/{m}/{y}"
    return json.dumps({"booking_id": booking_id, "site": b["site"], "date": date, "made": b["made"],
                       "guests": [{"id": g[0], "name": g[1]} for g in b["guests"]]})


@function_tool
def weather_outlook(site: str, date: str) -> str:
    """Glacier weather outlook for a site and date."""
    return json.dumps({"site": site, "date": date, "wind_ms": 7, "outlook": "go", "clearance": f"WX-{site[:3].upper()}-{date}"})


@function_tool
def guest_record(guest_id: str) -> str:
    """A guest's medical declaration and boot size."""
    for b_id, b in BOOKINGS.items():
        for g in b["guests"]:
            if g[0] == guest_id:
                return json.dumps({"guest_id": guest_id, "name": g[1], "booking_id": b_id, "boot_eu": g[2], "declaration": "fit"})
    return json.dumps({"guest_id": guest_id, "found": False})


@function_tool
def guest_search(name: str) -> str:
    """Find guest records by name."""
    hits = [{"guest_id": g[0], "booking_id": b_id} for b_id, b in BOOKINGS.items() for g in b["guests"] if g[1] == name]
    return json.dumps(hits)


@function_tool
def assign_guide(site: str, date: str, group_size: int) -> str:
    """Assign a certified guide for a site and date."""
    name, licence = GUIDES[site]
    return json.dumps({"guide": name, "licence": licence, "site": site, "date": date, "ratio": f"1:{group_size}"})


@function_tool(failure_error_function=None)
def issue_permit(site: str, date: str, licence: str, clearance: str, group_size: int) -> str:
    """Request the national park's glacier access permit."""
    if len(date) != 10 or date[4] != "-":
        raise DeskError(f"park permit API 400: field 'date' must be YYYY-MM-DD, got {date!r}")
    if licence not in {lic for _, lic in GUIDES.values()}:
        raise DeskError(f"park permit API 403: guide licence {licence} is not registered")
    if not clearance.endswith(date):
        raise DeskError(f"park permit API 409: weather clearance {clearance} does not cover {date}")
    return json.dumps({"permit": f"NP-{site[:3].upper()}-{date.replace('-', '')}", "group_size": group_size})


@function_tool(failure_error_function=None)
def insure_group(booking_id: str, guest_ids: list[str]) -> str:
    """Buy the group's trip insurance."""
    members = {g[0] for g in BOOKINGS[booking_id]["guests"]}
    for gid in guest_ids:
        if gid not in members:
            raise DeskError(f"insurer declined policy for {booking_id}: insured person {gid} is not on the booking")
    return json.dumps({"policy": f"INS-{booking_id}", "insured": len(guest_ids)})


@function_tool
def reserve_gear(boot_sizes: list[int], date: str) -> str:
    """Reserve crampons and harnesses in the gear room for a date."""
    day = GEAR_DAY if kit.active("gd5") else date
    return json.dumps({"reservation": f"GR-{len(boot_sizes)}-{sum(boot_sizes)}", "date": day, "items": len(boot_sizes) * 2})


@function_tool(failure_error_function=None)
def confirm_trip(booking_id: str, permit: str, reservation: str, reservation_date: str) -> str:
    """Confirm the trip with operations."""
    trip = BOOKINGS[booking_id]["date"]
    if reservation_date != trip:
        raise DeskError(f"operations cannot confirm {booking_id}: gear reservation {reservation} is for {reservation_date}, trip is {trip}")
    return json.dumps({"booking_id": booking_id, "status": "confirmed", "permit": permit})


# ---- the model ----------------------------------------------------------------------------------

def _history(msgs):
    names = {}
    results = {}
    for m in msgs:
        for c in m.get("tool_calls") or ():
            names[c["id"]] = c["function"]["name"]
        if m["role"] == "tool":
            results.setdefault(names.get(m["tool_call_id"]), []).append(m["content"])
    return results


def _call(name, args):
    return Reply(tool_calls=(tool_call(name, args),))


def desk_policy(msgs, user):
    got = _history(msgs)
    bid = user.split()[-1]
    if "lookup_booking" not in got:
        return _call("lookup_booking", {"booking_id": bid})
    booking = json.loads(got["lookup_booking"][0])
    date = booking["date"]
    if "weather_outlook" not in got:
        when = booking["made"] if kit.active("gd3") else date
        return _call("weather_outlook", {"site": booking["site"], "date": when})
    if "safety_review" not in got:
        guests = "; ".join(f"{g['name']}" for g in booking["guests"])
        return _call("safety_review", {"input": f"Booking {bid}. Check the declarations and boot sizes of: {guests}"})
    if "assign_guide" not in got:
        return _call("assign_guide", {"site": booking["site"], "date": date, "group_size": len(booking["guests"])})
    guide = json.loads(got["assign_guide"][0])
    weather = json.loads(got["weather_outlook"][0])
    if "issue_permit" not in got:
        licence = guide["licence"]
        if kit.active("gd1"):
            licence = "GL-" + licence[3:5] + licence[6] + licence[5]
        return _call("issue_permit", {"site": booking["site"], "date": date, "licence": licence,
                                      "clearance": weather["clearance"], "group_size": len(booking["guests"])})
    review = json.loads(got["safety_review"][0])
    if "insure_group" not in got:
        return _call("insure_group", {"booking_id": bid, "guest_ids": review["cleared"]})
    if "transfer_to_gear_room" not in got:
        return _call("transfer_to_gear_room", {})
    return "Handed over to the gear room."


def gear_policy(msgs, user):
    got = _history(msgs)
    bid = user.split()[-1]
    review = json.loads(got["safety_review"][0])
    booking = json.loads(got["lookup_booking"][0])
    if "reserve_gear" not in got:
        return _call("reserve_gear", {"boot_sizes": review["boot_sizes"], "date": booking["date"]})
    if "confirm_trip" not in got:
        res = json.loads(got["reserve_gear"][0])
        permit = json.loads(got["issue_permit"][0])["permit"]
        return _call("confirm_trip", {"booking_id": bid, "permit": permit, "reservation": res["reservation"],
                                      "reservation_date": res["date"]})
    return f"Trip {bid} confirmed; gear is packed."


def safety_policy(msgs):
    task = msgs[-1]["content"] if msgs[-1]["role"] == "user" else next(m["content"] for m in msgs if m["role"] == "user")
    bid = task.split()[1].rstrip(".")
    names = [n.strip() for n in task.split(": ", 1)[1].split(";")]
    got = _history(msgs)
    searches = [json.loads(r) for r in got.get("guest_search", [])]
    records = [json.loads(r) for r in got.get("guest_record", [])]
    if len(searches) < len(names):
        return _call("guest_search", {"name": names[len(searches)]})
    if len(records) < len(names):
        hits = searches[len(records)]
        pick = next((h for h in hits if h["booking_id"] == bid), hits[0])
        if kit.active("gd2") and len(hits) > 1:
            pick = next(h for h in hits if h["booking_id"] != bid)
        return _call("guest_record", {"guest_id": pick["guest_id"]})
    return json.dumps({"cleared": [r["guest_id"] for r in records], "boot_sizes": [r["boot_eu"] for r in records],
                       "restrictions": []})


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] in ("system", "developer") else ""
    user = next(m["content"] for m in msgs if m["role"] == "user")
    if system.startswith("You are the safety officer"):
        return safety_policy(msgs)
    if system.startswith("You run the gear room"):
        return gear_policy(msgs, user)
    return desk_policy(msgs, user)


def build(server):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model="desk-model", openai_client=client)
    safety = Agent(name="safety_officer", model=model, tools=[guest_search, guest_record],
                   instructions="You are the safety officer. Find each guest's record, check declarations, report boot sizes as JSON.")
    gear = Agent(name="gear_room", model=model, tools=[reserve_gear, confirm_trip],
                 instructions="You run the gear room: reserve crampons and harnesses, then confirm the trip.")
    desk = Agent(name="trip_desk", model=model, handoffs=[gear],
                 tools=[lookup_booking, weather_outlook,
                        safety.as_tool(tool_name="safety_review", tool_description="Ask the safety officer to review the guests."),
                        assign_guide, issue_permit, insure_group],
                 instructions="You are the glacier trip desk. Prepare the booking, then hand over to the gear room.")
    return desk


def record(booking_id: str, path: Path, server) -> None:
    server.use(policy)
    proc = TrajdebugProcessor(path=str(path), name=AGENT, task=f"prepare glacier trip {booking_id}")
    set_trace_processors([proc])
    try:
        Runner.run_sync(build(server), f"Prepare trip {booking_id}", max_turns=30,
                        run_config=RunConfig(workflow_name=AGENT, tracing_disabled=False))
    except (DeskError, AgentsException):
        pass
    finally:
        set_trace_processors([])
