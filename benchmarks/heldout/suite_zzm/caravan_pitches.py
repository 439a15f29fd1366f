"""A caravan park's pitch bookings (openai_agents route, Responses API): booking -> tariff clerk sub-agent ->
email thread -> park rules -> pitch search -> availability -> hold -> validator tool."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OPENAI_API_KEY", "not-needed")

import kit  # noqa: E402
from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool, set_trace_processors  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from trajdebug.integrations.openai_agents import TrajdebugProcessor  # noqa: E402
from trajdebug.testing import Reply, tool_call  # noqa: E402

AGENT = "caravan-pitches"
ROUTE = "openai_agents"
DOMAIN = "caravan park's pitch bookings"
SHAPE = "Agent + Runner (Responses API): booking form, tariff clerk sub-agent (as tool: season rates, extras), email thread, park rules search, pitch search, availability, hold, validator function tool"

PITCHES = {f"P{n:02d}": {"length_m": 9.0 + (n * 7) % 6, "width_m": 5.5 + (n % 4) * 0.75, "hookup_amps": 16 if n % 5 else 10,
                         "zone": "touring"} for n in range(1, 17)}
RULES = {
    "touring": {"sheet": "Touring caravans: pitch sizes and services", "car_space_m": 4.0, "side_gap_m": 3.0, "hookup_amps": 16},
    "tents": {"sheet": "Tent field: pitch sizes", "car_space_m": 0.0, "side_gap_m": 1.0, "hookup_amps": 0},
}
SEASON = [("2026-07-01", "2026-08-31", 34.0), ("2026-09-01", "2026-10-31", 26.0)]
EXTRAS = {"dog": 3.0, "awning": 4.0, "hookup": 5.5}
OCCUPIED = {"P01": ["2026-09-06"], "P02": ["2026-09-06"], "P05": ["2026-08-14"], "P07": ["2026-09-21", "2026-09-22"], "P11": ["2026-08-02"],
            "P03": ["2026-09-09"], "P13": ["2026-08-27"]}

BOOKINGS = {}
for ref, guest, length, awning, dog, arrival, nights in [
    ("CP-5101", "Mr and Mrs Ellery", 7.0, 2.5, True, "2026-08-10", 5),
    ("CP-5102", "The Oduyas", 6.5, 2.0, False, "2026-09-18", 6),
    ("CP-5103", "J. Pryce", 7.5, 2.5, True, "2026-08-24", 4),
    ("CP-5104", "The Lindqvists", 6.0, 3.0, False, "2026-09-02", 7),
    ("CP-5105", "R. and T. Mistry", 7.0, 2.0, True, "2026-08-30", 3),
    ("CP-5106", "The Harcourts", 6.0, 2.5, False, "2026-07-20", 4),
    ("CP-5107", "S. Abara", 7.5, 2.0, True, "2026-09-12", 3),
    ("CP-5108", "The Quigleys", 6.5, 3.0, True, "2026-08-05", 6),
    ("CP-5109", "M. Fontaine", 5.5, 2.5, False, "2026-10-02", 4),
]:
    BOOKINGS[ref] = {"ref": ref, "guest": guest, "caravan_length_m": length, "awning_depth_m": awning, "dog": dog,
                     "arrival": arrival, "nights": nights, "hookup": True}

INPUTS = {f"caravan_0{i}": {"booking": f"CP-510{i}"} for i in range(1, 6)}
REFS = [{"booking": r} for r in ("CP-5106", "CP-5107", "CP-5108", "CP-5109")]
CASES = [
    {"case": "caravan_01", "kind": "format_drift", "root": {"name": "response", "occurrence": 5},
     "failure": {"name": "validate_allocation"},
     "description": "The tariff clerk answers its total as '232,50' with a decimal comma, and the allocator carries it on as 23250."},
    {"case": "caravan_02", "kind": "context_pollution", "root": {"name": "fetch_email_thread"},
     "failure": {"name": "validate_allocation"},
     "description": "The email thread pulled for the booking also holds a forwarded message from another guest, and the awning depth of 4.5 m is taken from it."},
    {"case": "caravan_03", "kind": "wrong_retrieval", "root": {"name": "search_park_rules"},
     "failure": {"name": "validate_allocation"},
     "description": "The rules search returns the tent field's sheet (no car space, 1 m side gap) for a touring caravan, so the pitch search asks for too small a pitch."},
    {"case": "caravan_04", "kind": "truncated_result", "root": {"name": "get_availability"},
     "failure": {"name": "validate_allocation"},
     "description": "The availability tool returns only the first three nights of each pitch, so a pitch taken on the fourth night looks free."},
    {"case": "caravan_05", "kind": "tool_ignores_argument", "root": {"name": "hold_pitch"},
     "failure": {"name": "validate_allocation"},
     "description": "The hold tool ignores its nights argument and holds the pitch for one night of the three booked."},
]


def _nights(arrival: str, nights: int) -> list:
    d = dt.date.fromisoformat(arrival)
    return [(d + dt.timedelta(days=i)).isoformat() for i in range(nights)]


def _rate(night: str) -> float:
    return next(r for a, b, r in SEASON if a <= night <= b)


@function_tool
def get_booking_request(booking_ref: str) -> str:
    """Read a pitch booking form."""
    return json.dumps(BOOKINGS[booking_ref])


@function_tool
def fetch_email_thread(booking_ref: str) -> str:
    """Fetch the email thread of a booking."""
    b = BOOKINGS[booking_ref]
    msgs = [{"from": b["guest"], "text": f"Looking forward to it. Our awning is {b['awning_depth_m']} m deep."}]
    if kit.on("caravan_02"):
        msgs.append({"from": "Reception (fwd)", "text": "Fwd from G. Hale: our new awning is 4.5 m deep, please note it."})
    return json.dumps({"booking_ref": booking_ref, "messages": msgs})


@function_tool
def search_park_rules(query: str) -> str:
    """Search the park's rule sheets."""
    key = "tents" if kit.on("caravan_03") else ("touring" if "caravan" in query else "tents")
    return json.dumps(RULES[key])


@function_tool
def list_pitches(zone: str, min_length_m: float, min_width_m: float, hookup_amps: int) -> str:
    """List pitches of a zone that meet the size and hookup needs."""
    hits = [{"pitch": p, **v} for p, v in sorted(PITCHES.items())
            if v["zone"] == zone and v["length_m"] >= min_length_m and v["width_m"] >= min_width_m and v["hookup_amps"] >= hookup_amps]
    return json.dumps({"pitches": hits[:6]})


@function_tool
def get_availability(pitch_ids: list[str], arrival: str, nights: int) -> str:
    """Report which nights each pitch is free."""
    shown = _nights(arrival, nights)
    if kit.on("caravan_04"):
        shown = shown[:3]
    return json.dumps({p: [{"night": n, "free": n not in OCCUPIED.get(p, [])} for n in shown] for p in pitch_ids})


@function_tool
def hold_pitch(pitch_id: str, arrival: str, nights: int) -> str:
    """Hold a pitch for the booking's nights."""
    held = 1 if kit.on("caravan_05") else nights
    return json.dumps({"pitch": pitch_id, "arrival": arrival, "nights_held": held, "hold_ref": f"HP-{pitch_id}-{arrival[5:]}"})


@function_tool
def get_season_rates(arrival: str, nights: int) -> str:
    """Nightly pitch rates for a stay."""
    return json.dumps({"nightly": [{"night": n, "rate": _rate(n)} for n in _nights(arrival, nights)]})


@function_tool
def get_extras(dog: bool, awning: bool, hookup: bool) -> str:
    """Nightly extras for a stay."""
    return json.dumps({"dog": EXTRAS["dog"] if dog else 0.0, "awning": EXTRAS["awning"] if awning else 0.0,
                       "hookup": EXTRAS["hookup"] if hookup else 0.0})


@function_tool(failure_error_function=None)
def validate_allocation(allocation_json: str) -> str:
    """Check a pitch allocation against the booking and the park's rules."""
    a = json.loads(allocation_json)
    b = BOOKINGS[a["booking"]]
    rules = RULES["touring"]
    p = PITCHES[a["pitch"]]
    if a["awning_depth_m"] != b["awning_depth_m"]:
        raise ValueError(f"{b['ref']}: allocation uses awning depth {a['awning_depth_m']} m, booking form says {b['awning_depth_m']} m")
    if p["length_m"] < b["caravan_length_m"] + rules["car_space_m"] or p["width_m"] < b["awning_depth_m"] + rules["side_gap_m"]:
        raise ValueError(f"{b['ref']}: pitch {a['pitch']} ({p['length_m']} x {p['width_m']} m) too small for a "
                         f"{b['caravan_length_m']} m caravan with car and {b['awning_depth_m']} m awning")
    for n in _nights(b["arrival"], b["nights"]):
        if n in OCCUPIED.get(a["pitch"], []):
            raise ValueError(f"{b['ref']}: pitch {a['pitch']} is already taken on {n}")
    if a["hold"]["nights_held"] != b["nights"]:
        raise ValueError(f"{b['ref']}: hold {a['hold']['hold_ref']} covers {a['hold']['nights_held']} nights, booking has {b['nights']}")
    nightly = sum(_rate(n) for n in _nights(b["arrival"], b["nights"]))
    extras = b["nights"] * (EXTRAS["hookup"] + EXTRAS["awning"] + (EXTRAS["dog"] if b["dog"] else 0.0))
    if abs(a["total"] - (nightly + extras)) > 0.005:
        raise ValueError(f"{b['ref']}: allocation total {a['total']:.2f} GBP, rates and extras come to {nightly + extras:.2f} GBP")
    return json.dumps({"booking": b["ref"], "pitch": a["pitch"], "status": "allocated", "total": a["total"]})


def brain(inp):
    ref = inp["booking"]

    def outs(req):
        out = []
        for o in kit.tool_outputs(req):
            try:
                out.append(json.loads(o))
            except ValueError:
                out.append(o)
        return out

    def to_clerk(req):
        b = outs(req)[0]
        return Reply(tool_calls=(tool_call("tariff_clerk", {"input": f"Price booking {b['ref']}: arrival {b['arrival']}, "
                                                                      f"{b['nights']} nights, dog {'yes' if b['dog'] else 'no'}, awning yes, hookup yes."}),))

    def thread(req):
        return Reply(tool_calls=(tool_call("fetch_email_thread", {"booking_ref": ref}),))

    def rules(req):
        return Reply(tool_calls=(tool_call("search_park_rules", {"query": "touring caravan pitch sizes and hookup"}),))

    def awning(o):
        depth = o[0]["awning_depth_m"]
        for m in o[2]["messages"]:
            hit = re.search(r"awning is ([\d.]+) m", m["text"])
            if hit:
                depth = float(hit.group(1))
        return depth

    def pitches(req):
        o = outs(req)
        b, r = o[0], o[3]
        return Reply(tool_calls=(tool_call("list_pitches", {
            "zone": "touring", "min_length_m": b["caravan_length_m"] + r["car_space_m"],
            "min_width_m": awning(o) + r["side_gap_m"], "hookup_amps": 16}),))

    def availability(req):
        o = outs(req)
        return Reply(tool_calls=(tool_call("get_availability", {"pitch_ids": [p["pitch"] for p in o[4]["pitches"]],
                                                                "arrival": o[0]["arrival"], "nights": o[0]["nights"]}),))

    def chosen(o):
        return next(p for p, nights in o[5].items() if all(n["free"] for n in nights))

    def hold(req):
        o = outs(req)
        return Reply(tool_calls=(tool_call("hold_pitch", {"pitch_id": chosen(o), "arrival": o[0]["arrival"], "nights": o[0]["nights"]}),))

    def validate(req):
        o = outs(req)
        price = o[1] if isinstance(o[1], dict) else json.loads(o[1])
        total = price["total"]
        if isinstance(total, str):
            total = float(total.replace(",", ""))
        alloc = {"booking": ref, "pitch": chosen(o), "awning_depth_m": awning(o), "total": total, "hold": o[6]}
        return Reply(tool_calls=(tool_call("validate_allocation", {"allocation_json": json.dumps(alloc)}),))

    def done(req):
        v = outs(req)[-1]
        return f"Booking {v['booking']} allocated to pitch {v['pitch']}, total {v['total']:.2f} GBP."

    def c_rates(req):
        text = kit.last_user(req)
        m = re.search(r"arrival (\S+), (\d+) nights", text)
        return Reply(tool_calls=(tool_call("get_season_rates", {"arrival": m.group(1), "nights": int(m.group(2))}),))

    def c_extras(req):
        text = kit.last_user(req)
        return Reply(tool_calls=(tool_call("get_extras", {"dog": "dog yes" in text, "awning": True, "hookup": True}),))

    def c_answer(req):
        rates, extras = outs(req)[:2]
        nights = len(rates["nightly"])
        total = kit.money(sum(n["rate"] for n in rates["nightly"]) + nights * sum(extras.values()))
        shown = f"{total:.2f}".replace(".", ",") if kit.on("caravan_01") else total
        return json.dumps({"nights": nights, "pitch_fees": sum(n["rate"] for n in rates["nightly"]),
                           "extras_per_night": sum(extras.values()), "total": shown, "currency": "GBP"})

    return kit.Brain({
        "allocator": [lambda req: Reply(tool_calls=(tool_call("get_booking_request", {"booking_ref": ref}),)),
                      to_clerk, thread, rules, pitches, availability, hold, validate, done],
        "clerk": [c_rates, c_extras, c_answer],
    })


def record(inp: dict, server, path: Path) -> None:
    server.use(brain(inp))
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIResponsesModel(model=server.model, openai_client=client)
    clerk = Agent(name="tariff_clerk", model=model, tools=[get_season_rates, get_extras],
                  instructions="[clerk] Price a stay from the season rates and nightly extras; answer JSON with the total.")
    allocator = Agent(
        name="pitch_allocator", model=model,
        instructions="[allocator] Allocate a touring pitch to a booking: read the form, get the tariff clerk's price, read the "
                     "email thread, look up the park rules, find fitting pitches, check availability, hold one and validate.",
        tools=[get_booking_request, clerk.as_tool(tool_name="tariff_clerk", tool_description="Price a stay."),
               fetch_email_thread, search_park_rules, list_pitches, get_availability, hold_pitch, validate_allocation])
    proc = TrajdebugProcessor(path=str(path), name=AGENT, task=f"allocate a pitch to booking {inp['booking']}")
    set_trace_processors([proc])
    try:
        Runner.run_sync(allocator, f"Allocate a pitch for booking {inp['booking']}.", run_config=RunConfig(workflow_name=AGENT))
    except Exception as exc:  # the validator's rejection ends the run (the SDK re-raises it as a UserError)
        if "validate_allocation" not in str(exc):
            raise
    finally:
        set_trace_processors([])
