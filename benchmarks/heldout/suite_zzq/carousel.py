"""Fairground carousel operator: books the carousel for an event (OpenAI Agents SDK route, Chat Completions)."""

from __future__ import annotations

import json
import re

from agents import Agent, function_tool

import kit
from _common import run_agent, tool_calls_made, tool_outputs

NAME = "gallopers-carousel-bookings"
ROUTE = "openai_agents"
DOMAIN = "fairground carousel operator: event bookings"
SHAPE = ("triage agent hands off to a public-fairs or private-events agent (Chat Completions); the specialist "
         "reads the enquiry thread, prices the event, files paperwork, has the day scheduled by a scheduler "
         "sub-agent (as a tool), checks site access and ground (parallel), creates the booking, validator tool")
EXT = "jsonl"

SITES = {
    "Ashton Court Meadow": {"gate_ft": 9.0, "slope_pct": 2},
    "Harbourside Green": {"gate_ft": 12.0, "slope_pct": 1},
    "Old Rectory Lawn": {"gate_ft": 11.0, "slope_pct": 4},
    "Castle School Field": {"gate_ft": 14.0, "slope_pct": 2},
    "Millbrook Farm": {"gate_ft": 16.0, "slope_pct": 1},
}
EVENTS = [
    dict(ref="EV-501", kind="public", name="Harbour Festival", site="Harbourside Green", date="2026-08-01",
         gates="10:00", close="18:00", contact="festival@harbour.example", access="service gate"),
    dict(ref="EV-502", kind="private", name="Hughes wedding", site="Old Rectory Lawn", date="2026-08-08",
         gates="14:00", close="20:00", contact="sam.hughes@example.com", access="main gate"),
    dict(ref="EV-503", kind="public", name="Castle School summer fair", site="Castle School Field",
         date="2026-07-11", gates="11:00", close="16:00", contact="pta@castleschool.example", access="main gate"),
    dict(ref="EV-504", kind="public", name="Ashton Court vintage day", site="Ashton Court Meadow",
         date="2026-08-15", gates="10:00", close="17:00", contact="vintage@ashton.example", access="main gate"),
    dict(ref="EV-505", kind="public", name="Millbrook Farm open day", site="Millbrook Farm", date="2026-09-05",
         gates="12:00", close="17:00", contact="office@millbrook.example", access="main gate"),
]
BY_REF = {e["ref"]: e for e in EVENTS}
RATE_PER_RIDE = 2.50
RIDES_PER_HOUR = 120
PRIVATE_FLAT, PRIVATE_HOURLY = 650.0, 120.0
LORRY_WIDTH_M = 3.0

INPUTS = [{"ref": e["ref"], "message": "Booking enquiry %s: %s (%s event) at %s on %s, gates %s to %s. Contact %s." % (
    e["ref"], e["name"], e["kind"], e["site"], e["date"], e["gates"], e["close"], e["contact"])} for e in EVENTS]

C_PLAN, C_ROUTE, C_SWALLOW, C_UNIT, C_POLL = "zzq-car-1", "zzq-car-2", "zzq-car-3", "zzq-car-4", "zzq-car-5"
CASES = [
    dict(id=C_PLAN, input=2, kind="plan_error", root=("generation fake-model", 6, "llm"), failure=("validate_booking", 1),
         description="the scheduler sub-agent starts the build-up 3.5 hours before the gates, leaving no room for "
                     "the 30-minute margin, so the safety inspection ends as the gates open"),
    dict(id=C_ROUTE, input=4, kind="wrong_routing", root=("generation fake-model", 1, "llm"), failure=("validate_booking", 1),
         description="the triage model hands the public Millbrook Farm open day to the private-events agent, "
                     "which files no event licence"),
    dict(id=C_SWALLOW, input=1, kind="swallowed_error", root=("create_booking", 1, "tool"),
         failure=("validate_booking", 1),
         description="create_booking catches the roster service's rejection and returns the booking with no crew "
                     "as a normal answer"),
    dict(id=C_UNIT, input=3, kind="unit_error", root=("check_site_access", 1, "tool"),
         failure=("validate_booking", 1),
         description="check_site_access reports the main gate's width in feet under the metres field, so the "
                     "9 ft (2.74 m) gate at Ashton Court reads as 9 m and the lorry is routed through it"),
    dict(id=C_POLL, input=0, kind="context_pollution", root=("fetch_enquiry_thread", 1, "tool"),
         failure=("validate_booking", 1),
         description="fetch_enquiry_thread appends an old 2024 thread quoting GBP 1.80 a ride, and the model "
                     "prices the festival at that rate"),
]

BOOKINGS: dict = {}


@function_tool
def fetch_enquiry_thread(ref: str) -> str:
    """The e-mail thread of an enquiry, oldest first."""
    e = BY_REF[ref]
    msgs = ["From %s: we'd love the gallopers at %s on %s." % (e["contact"], e["name"], e["date"]),
            "From bookings: thanks! Our 2026 rate for public events is GBP %.2f a ride; private hire is GBP %.0f for "
            "up to 4 hours plus GBP %.0f an hour after." % (RATE_PER_RIDE, PRIVATE_FLAT, PRIVATE_HOURLY)]
    if kit.on(C_POLL):
        msgs.append("From bookings (2024, Quayside Regatta): confirmed at GBP 1.80 a ride, crew of three.")
    return "\n".join(msgs)


@function_tool
def check_site_access(site: str) -> dict:
    """Width of a site's main gate, in metres."""
    ft = SITES[site]["gate_ft"]
    width = ft if kit.on(C_UNIT) else round(ft * 0.3048, 2)
    return {"site": site, "main_gate_width_m": width, "service_gate_width_m": 4.2 if site == "Harbourside Green" else None}


@function_tool
def check_ground(site: str) -> dict:
    """Ground survey of a site: slope and surface."""
    return {"site": site, "slope_pct": SITES[site]["slope_pct"], "surface": "grass"}


@function_tool
def price_event(event_type: str, open_hours: float, price_per_ride: float) -> dict:
    """Prices an event: public events by expected rides, private events by the hour."""
    if event_type == "public":
        rides = int(open_hours * RIDES_PER_HOUR * 0.6)
        return {"basis": "per ride", "price_per_ride": price_per_ride, "expected_rides": rides,
                "guarantee": round(rides * price_per_ride * 0.5, 2)}
    fee = PRIVATE_FLAT + max(0.0, open_hours - 4) * PRIVATE_HOURLY
    return {"basis": "private hire", "fee": fee}


@function_tool
def apply_event_licence(ref: str, site: str, date: str) -> dict:
    """Files the operator's part of a public event's licence (ride certificate, insurance)."""
    return {"ref": ref, "licence": "TEL-%s" % ref[-3:], "site": site, "date": date}


@function_tool
def notify_landowner(ref: str, site: str) -> dict:
    """Sends the landowner the ride's insurance and risk assessment for a private event."""
    return {"ref": ref, "site": site, "sent": True}


def _roster(ref: str) -> list:
    if ref == "EV-502":
        raise RuntimeError("roster service: crew calendar locked for August")
    return ["Dan (ride boss)", "Kez", "Lou"]


@function_tool
def create_booking(ref: str, schedule: str, pricing: str, paperwork: str, access_route: str) -> dict:
    """Creates the booking with its crew roster. `schedule`, `pricing`, `paperwork` are JSON texts."""
    if kit.on(C_SWALLOW):
        try:
            crew = _roster(ref)
        except RuntimeError:
            crew = []
    else:
        try:
            crew = _roster(ref)
        except RuntimeError:
            crew = ["Dan (ride boss)", "agency crew", "agency crew"]
    BOOKINGS[ref] = dict(schedule=json.loads(schedule), pricing=json.loads(pricing), paperwork=json.loads(paperwork),
                         access_route=access_route, crew=crew)
    return {"booking": "BK-%s" % ref[-3:], "crew": crew}


def _mins(t: str) -> int:
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def validate_booking(ref: str) -> dict:
    """Checks a booking against the enquiry and the operator's rules."""
    b, e = BOOKINGS[ref], BY_REF[ref]
    if e["kind"] == "public" and not b["paperwork"].get("licence"):
        raise ValueError("%s is a public event and booking BK-%s has no event licence" % (e["name"], ref[-3:]))
    s = b["schedule"]
    if _mins(s["inspection_done"]) > _mins(e["gates"]) - 30:
        raise ValueError("inspection done at %s; the gates open at %s and the ride must be signed off 30 minutes "
                         "before" % (s["inspection_done"], e["gates"]))
    width_m = round(SITES[e["site"]]["gate_ft"] * 0.3048, 2)
    if b["access_route"] == "main gate" and width_m < LORRY_WIDTH_M:
        raise ValueError("main gate at %s is %.2f m wide; the ride lorry needs %.1f m" % (e["site"], width_m, LORRY_WIDTH_M))
    p = b["pricing"]
    if p["basis"] == "per ride" and p["price_per_ride"] != RATE_PER_RIDE:
        raise ValueError("booking priced at GBP %.2f a ride; the 2026 rate is GBP %.2f" % (p["price_per_ride"], RATE_PER_RIDE))
    if len(b["crew"]) < 3:
        raise ValueError("booking BK-%s has %d crew rostered; the ride needs 3" % (ref[-3:], len(b["crew"])))
    return {"booking": "BK-%s" % ref[-3:], "status": "ready to confirm"}


validate_booking_tool = function_tool(validate_booking, failure_error_function=None)


def _hhmm(m: int) -> str:
    return "%02d:%02d" % (m // 60, m % 60)


def _text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def brain(request):
    from trajdebug.testing import Reply, tool_call

    msgs = request.body.get("messages", [])
    system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
    text = json.dumps(msgs)
    e = BY_REF[re.search(r"EV-\d{3}", text).group(0)]
    if system.startswith("You triage"):
        target = e["kind"]
        if kit.on(C_ROUTE):
            target = "private" if "open day" in e["name"] else "public"
        return Reply(tool_calls=(tool_call("transfer_to_%s_events" % target, {}),))
    if system.startswith("You schedule"):
        gates = _mins(e["gates"])
        build_start = gates - 240
        if kit.on(C_PLAN):
            build_start = gates - 210
        return json.dumps({"arrive": _hhmm(build_start - 30), "build": [_hhmm(build_start), _hhmm(build_start + 180)],
                           "inspection_done": _hhmm(build_start + 210), "open": [e["gates"], e["close"]],
                           "pull_down": [e["close"], _hhmm(_mins(e["close"]) + 120)]})
    made = [n for n in tool_calls_made(request) if not n.startswith("transfer_to")]
    outs = tool_outputs(request)[-len(made):] if made else []
    got = dict(zip(made, outs))
    step = len(made)
    hours = (_mins(e["close"]) - _mins(e["gates"])) / 60
    if step == 0:
        return Reply(tool_calls=(tool_call("fetch_enquiry_thread", {"ref": e["ref"]}),))
    if step == 1:
        rates = re.findall(r"GBP (\d+\.\d\d) a ride", got["fetch_enquiry_thread"])
        kind = "private" if system.startswith("You handle private") else "public"
        return Reply(tool_calls=(tool_call("price_event", {"event_type": kind, "open_hours": hours,
                                                           "price_per_ride": float(rates[-1])}),))
    if step == 2:
        if system.startswith("You handle private"):
            return Reply(tool_calls=(tool_call("notify_landowner", {"ref": e["ref"], "site": e["site"]}),))
        return Reply(tool_calls=(tool_call("apply_event_licence", {"ref": e["ref"], "site": e["site"],
                                                                   "date": e["date"]}),))
    if step == 3:
        return Reply(tool_calls=(tool_call("schedule_day", {"input": "Schedule %s: gates %s to %s." % (
            e["ref"], e["gates"], e["close"])}),))
    if step == 4:
        return Reply(tool_calls=(tool_call("check_site_access", {"site": e["site"]}),
                                 tool_call("check_ground", {"site": e["site"]})))
    if step == 6:
        access = got["check_site_access"]
        route = "main gate" if access["main_gate_width_m"] >= LORRY_WIDTH_M else "service gate"
        paper = got.get("apply_event_licence") or got.get("notify_landowner")
        return Reply(tool_calls=(tool_call("create_booking", {
            "ref": e["ref"], "schedule": _text(got["schedule_day"]), "pricing": json.dumps(got["price_event"]),
            "paperwork": json.dumps(paper), "access_route": route}),))
    if step == 7:
        return Reply(tool_calls=(tool_call("validate_booking", {"ref": e["ref"]}),))
    return "Booking %s is ready to confirm with %s." % (got["create_booking"]["booking"], e["contact"])


def build():
    scheduler = Agent(name="scheduler", model="fake-model",
                      instructions="You schedule a carousel's event day: arrival, 3-hour build-up, a 30-minute safety "
                                   "inspection before the gates open, opening, 2-hour pull-down. Answer JSON.")
    common = [fetch_enquiry_thread, scheduler.as_tool(tool_name="schedule_day", tool_description="Schedules the day."),
              price_event, check_site_access, check_ground, create_booking, validate_booking_tool]
    public = Agent(name="public_events", model="fake-model", handoff_description="Public fairs and festivals.",
                   instructions="You handle public fairs and festivals for the carousel: read the thread, schedule, "
                                "price, file the event licence, check access and ground, book, validate.",
                   tools=common + [apply_event_licence])
    private = Agent(name="private_events", model="fake-model", handoff_description="Weddings and private parties.",
                    instructions="You handle private events for the carousel: read the thread, schedule, price, "
                                 "notify the landowner, check access and ground, book, validate.",
                    tools=common + [notify_landowner])
    return Agent(name="triage", model="fake-model", handoffs=[public, private],
                 instructions="You triage carousel booking enquiries to the public or private events desk.")


def record(server, inp: dict, path: str) -> None:
    server.use(brain)
    BOOKINGS.clear()
    run_agent(server, build(), inp["message"], path, NAME, "book the carousel for %s" % inp["ref"],
              api="chat_completions")
