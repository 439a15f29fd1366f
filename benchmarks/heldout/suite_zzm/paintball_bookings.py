"""A paintball venue's group bookings (openai_agents route, Chat Completions): enquiry -> plan -> field, price,
safety sub-agent, paint, hold -> validator tool."""

from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OPENAI_API_KEY", "not-needed")

import kit  # noqa: E402
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from trajdebug.integrations.openai_agents import TrajdebugProcessor  # noqa: E402
from trajdebug.testing import Reply, tool_call  # noqa: E402

AGENT = "paintball-bookings"
ROUTE = "openai_agents"
DOMAIN = "paintball venue's group bookings"
SHAPE = "Agent + Runner (Chat Completions): enquiry, plan, field availability, package price, safety officer sub-agent (as tool: members, waivers), paint quote, hold (retry on lock), validator function tool"

FIELDS = {"Woodland": 16, "Village": 30, "Bunker Hill": 24}
PACKAGES = {"classic": 29.0, "combat": 39.0, "junior": 22.0}
WEEKEND_UPLIFT = 5.0
PAINT_PER_100 = 6.0

ENQUIRIES = {}
for k, (ref, name, players, youngest, date, weekend, pkg, balls) in enumerate([
    ("PB-0311", "Harlow stag party", 22, 24, "2026-08-08", True, "combat", 500),
    ("PB-0312", "Nettle Lane FC", 18, 16, "2026-08-09", True, "classic", 300),
    ("PB-0313", "Orbis Tech away day", 14, 23, "2026-08-12", False, "classic", 400),
    ("PB-0314", "Riverside Scouts", 20, 12, "2026-08-15", True, "junior", 200),
    ("PB-0315", "Kowalski birthday", 12, 18, "2026-08-19", False, "combat", 500),
    ("PB-0316", "Brightwater hen party", 16, 25, "2026-07-25", True, "classic", 300),
    ("PB-0317", "Copperfield sixth form", 24, 17, "2026-07-28", False, "classic", 300),
    ("PB-0318", "Denholm rugby club", 28, 19, "2026-08-01", True, "combat", 600),
    ("PB-0319", "Foxglove cub pack", 10, 11, "2026-08-04", False, "junior", 200),
]):
    ENQUIRIES[ref] = {"ref": ref, "group": name, "players": players, "youngest": youngest, "date": date,
                      "weekend": weekend, "package": pkg, "balls_per_player": balls}

INPUTS = {f"paint_0{i}": {"enquiry": f"PB-031{i}"} for i in range(1, 6)}
REFS = [{"enquiry": r} for r in ("PB-0316", "PB-0317", "PB-0318", "PB-0319")]
CASES = [
    {"case": "paint_01", "kind": "plan_error", "root": {"name": "generation fake-model", "occurrence": 2},
     "failure": {"name": "validate_booking"},
     "description": "The coordinator's plan for the 22-player stag party books a single marshal where the venue's rule needs one per 10 players."},
    {"case": "paint_02", "kind": "subagent_wrong_entity", "root": {"name": "generation fake-model", "occurrence": 6},
     "failure": {"name": "validate_booking"},
     "description": "The safety officer sub-agent looks up the members and waivers of enquiry PB-0311 instead of PB-0312 and clears the other group."},
    {"case": "paint_03", "kind": "wrong_tool_args", "root": {"name": "generation fake-model", "occurrence": 4},
     "failure": {"name": "validate_booking"},
     "description": "The coordinator prices the package for 13 players, leaving out the guest the enquiry note mentions, instead of the group's 14."},
    {"case": "paint_04", "kind": "unit_error", "root": {"name": "paint_quote"}, "failure": {"name": "validate_booking"},
     "description": "The paint quote tool returns the cost in pence (32400) and the booking adds it as pounds."},
    {"case": "paint_05", "kind": "swallowed_error", "root": {"name": "hold_booking"}, "failure": {"name": "validate_booking"},
     "description": "The hold tool swallows the booking system's lock timeout and reports the slot as held without a hold reference."},
]

_state: dict = {}


@function_tool
def get_enquiry(enquiry_id: str) -> str:
    """Read a group enquiry."""
    e = ENQUIRIES[enquiry_id]
    note = f"{e['players']} players including one guest joining on the day, youngest {e['youngest']}."
    return json.dumps({**e, "note": note})


@function_tool
def record_plan(field: str, start: str, marshals: int, package: str) -> str:
    """Record the session plan."""
    return json.dumps({"plan": {"field": field, "start": start, "marshals": marshals, "package": package}, "saved": True})


@function_tool
def check_field_availability(field: str, date: str) -> str:
    """List the free start times of a field on a date."""
    return json.dumps({"field": field, "date": date, "capacity": FIELDS[field], "free": ["10:00", "13:30"]})


@function_tool
def price_package(package: str, players: int, weekend: bool) -> str:
    """Price a package for a number of players."""
    per_head = PACKAGES[package] + (WEEKEND_UPLIFT if weekend else 0.0)
    return json.dumps({"package": package, "players": players, "per_head": per_head, "total": kit.money(per_head * players),
                       "currency": "GBP"})


@function_tool
def lookup_group_members(group_ref: str) -> str:
    """List a group's registered players with their ages."""
    e = ENQUIRIES[group_ref]
    ages = [e["youngest"] + (i * 7) % 11 for i in range(e["players"])]
    return json.dumps({"group_ref": group_ref, "players": len(ages), "ages": ages})


@function_tool
def waiver_status(group_ref: str) -> str:
    """Report which players have signed the safety waiver."""
    e = ENQUIRIES[group_ref]
    return json.dumps({"group_ref": group_ref, "signed": e["players"], "missing": 0})


@function_tool
def paint_quote(balls_per_player: int, players: int) -> str:
    """Quote the paint for the group."""
    balls = balls_per_player * players
    cost = balls / 100 * PAINT_PER_100
    if kit.on("paint_04"):
        cost = int(round(cost * 100))
    return json.dumps({"balls": balls, "cost": cost})


class LockBusy(Exception):
    pass


def _booking_system_hold(field, date, start, attempt):
    if attempt == 1:
        raise LockBusy("booking calendar lock held by another desk")
    return f"H-{field[:3].upper()}-{date[5:7]}{date[8:]}-{start.replace(':', '')}"


@function_tool
def hold_booking(field: str, date: str, start: str, players: int) -> str:
    """Hold a field and start time for the group."""
    try:
        ref = _booking_system_hold(field, date, start, 1)
    except LockBusy:
        ref = None if kit.on("paint_05") else _booking_system_hold(field, date, start, 2)
    return json.dumps({"field": field, "date": date, "start": start, "players": players, "hold_ref": ref, "status": "held"})


@function_tool(failure_error_function=None)
def validate_booking(booking_json: str) -> str:
    """Check the booking against the venue's rules before it is confirmed."""
    b = json.loads(booking_json)
    e = ENQUIRIES[b["enquiry"]]
    n = e["players"]
    if b["plan"]["marshals"] < math.ceil(n / 10):
        raise ValueError(f"{b['enquiry']}: {n} players need {math.ceil(n / 10)} marshals, plan has {b['plan']['marshals']}")
    if FIELDS[b["plan"]["field"]] < n:
        raise ValueError(f"{b['enquiry']}: field {b['plan']['field']} holds {FIELDS[b['plan']['field']]}, group has {n}")
    s = b["safety"]
    if s["group_ref"] != b["enquiry"] or s["players"] != n:
        raise ValueError(f"{b['enquiry']}: safety check covers {s['group_ref']} ({s['players']} players), booking is {b['enquiry']} ({n} players)")
    if b["price"]["players"] != n:
        raise ValueError(f"{b['enquiry']}: package priced for {b['price']['players']} players, group has {n}")
    if not b["hold"].get("hold_ref"):
        raise ValueError(f"{b['enquiry']}: no hold reference for {b['hold']['field']} at {b['hold']['start']} on {b['hold']['date']}")
    total = b["price"]["total"] + b["paint"]["cost"]
    if total / n > 120:
        raise ValueError(f"{b['enquiry']}: total {total:.2f} GBP is {total / n:.2f} GBP a head (cap 120.00)")
    return json.dumps({"enquiry": b["enquiry"], "status": "ready to confirm", "total": kit.money(total)})


def brain(inp):
    ref = inp["enquiry"]

    def outs(req):
        return [json.loads(o) if o.lstrip().startswith("{") else o for o in kit.tool_outputs(req)]

    def plan(req):
        e = outs(req)[0]
        n = e["players"]
        field = "Woodland" if n <= 16 else "Village"
        marshals = 1 if kit.on("paint_01") else math.ceil(n / 10)
        return Reply(text=f"Plan: {field}, {marshals} marshals.", tool_calls=(tool_call("record_plan", {
            "field": field, "start": "10:00", "marshals": marshals, "package": e["package"]}),))

    def availability(req):
        o = outs(req)
        return Reply(tool_calls=(tool_call("check_field_availability", {"field": o[1]["plan"]["field"], "date": o[0]["date"]}),))

    def price(req):
        e = outs(req)[0]
        players = e["players"]
        if kit.on("paint_03"):
            players = e["players"] - 1  # leaves out the guest joining on the day
        return Reply(tool_calls=(tool_call("price_package", {"package": e["package"], "players": players, "weekend": e["weekend"]}),))

    def safety(req):
        e = outs(req)[0]
        return Reply(tool_calls=(tool_call("safety_officer", {"input": f"Safety check for group {e['ref']} ({e['players']} players) on {e['date']}."}),))

    def paint(req):
        e = outs(req)[0]
        return Reply(tool_calls=(tool_call("paint_quote", {"balls_per_player": e["balls_per_player"], "players": e["players"]}),))

    def hold(req):
        o = outs(req)
        return Reply(tool_calls=(tool_call("hold_booking", {"field": o[1]["plan"]["field"], "date": o[0]["date"],
                                                            "start": o[2]["free"][0], "players": o[0]["players"]}),))

    def validate(req):
        o = outs(req)
        booking = {"enquiry": o[0]["ref"], "plan": o[1]["plan"], "availability": o[2], "price": o[3],
                   "safety": o[4] if isinstance(o[4], dict) else json.loads(o[4]), "paint": o[5], "hold": o[6]}
        return Reply(tool_calls=(tool_call("validate_booking", {"booking_json": json.dumps(booking)}),))

    def done(req):
        v = outs(req)[-1]
        return f"Booking {v['enquiry']} is ready to confirm: {v['total']:.2f} GBP."

    def s_members(req):
        text = kit.last_user(req)
        g = re.search(r"group (PB-\d+)", text).group(1)
        if kit.on("paint_02"):
            g = f"PB-{int(g[3:]) - 1:04d}"
        return Reply(tool_calls=(tool_call("lookup_group_members", {"group_ref": g}),))

    def s_waivers(req):
        m = outs(req)[0]
        return Reply(tool_calls=(tool_call("waiver_status", {"group_ref": m["group_ref"]}),))

    def s_answer(req):
        m, w = outs(req)[:2]
        return json.dumps({"group_ref": m["group_ref"], "players": m["players"], "youngest": min(m["ages"]),
                           "waivers_missing": w["missing"], "cleared": min(m["ages"]) >= 10 and w["missing"] == 0})

    return kit.Brain({
        "coordinator": [lambda req: Reply(tool_calls=(tool_call("get_enquiry", {"enquiry_id": ref}),)),
                        plan, availability, price, safety, paint, hold, validate, done],
        "safety": [s_members, s_waivers, s_answer],
    })


def record(inp: dict, server, path: Path) -> None:
    server.use(brain(inp))
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    officer = Agent(name="safety_officer", model=model, tools=[lookup_group_members, waiver_status],
                    instructions="[safety] Check the group's ages and waivers; answer JSON with group_ref, players, youngest, waivers_missing, cleared.")
    coordinator = Agent(
        name="booking_coordinator", model=model,
        instructions="[coordinator] Turn a group enquiry into a held paintball booking: plan it, check the field, price it, "
                     "get the safety officer's check, quote the paint, hold the slot and validate before confirming.",
        tools=[get_enquiry, record_plan, check_field_availability, price_package,
               officer.as_tool(tool_name="safety_officer", tool_description="Safety check of a group (ages, waivers)."),
               paint_quote, hold_booking, validate_booking])
    proc = TrajdebugProcessor(path=str(path), name=AGENT, task=f"book enquiry {inp['enquiry']}")
    set_trace_processors([proc])
    try:
        Runner.run_sync(coordinator, f"Please book enquiry {inp['enquiry']}.", run_config=RunConfig(workflow_name=AGENT))
    except Exception as exc:  # the validator's rejection ends the run (the SDK re-raises it as a UserError)
        if "validate_booking" not in str(exc):
            raise
    finally:
        set_trace_processors([])
