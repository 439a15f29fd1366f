"""A yoga retreat's stays (route: openai_agents, Chat Completions API, TrajdebugProcessor)."""

from __future__ import annotations

import asyncio
import json
from datetime import date, datetime, timedelta

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.exceptions import AgentsException
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

import kit
from common import Reply, chat_outputs, chat_system_and_user, tool_call
from trajdebug.integrations.openai_agents import TrajdebugProcessor

NAME = "yoga-retreat-stays"
ROUTE = "openai_agents"
DOMAIN = "yoga retreat: stays"
SHAPE = "Agents SDK (Chat Completions): planner agent, guest profile, class-schedule sub-agent (as tool), room search, guest notes, menu retrieval, quote, deposit, hold, validator tool"

GUESTS = {
    "G-31": {"guest": "G-31", "name": "Imogen Reyes", "diet": "gluten-free", "level": "beginner"},
    "G-32": {"guest": "G-32", "name": "Farid Haddad", "diet": "vegetarian", "level": "intermediate"},
    "G-33": {"guest": "G-33", "name": "Sunniva Berg", "diet": "dairy-free", "level": "advanced"},
    "G-34": {"guest": "G-34", "name": "Tom Achterberg", "diet": "none", "level": "beginner"},
    "G-35": {"guest": "G-35", "name": "Priya Menon", "diet": "vegan", "level": "intermediate"},
    "G-36": {"guest": "G-36", "name": "Colm Deasy", "diet": "gluten-free", "level": "advanced"},
}
ROOMS = [{"room": "D-1", "type": "dorm", "rate": 45.0}, {"room": "T-3", "type": "twin", "rate": 85.0},
         {"room": "G-2", "type": "garden suite", "rate": 160.0}, {"room": "L-1", "type": "loft", "rate": 120.0}]
MENUS = {"gluten-free": 32.0, "dairy-free": 30.0, "vegetarian": 28.0, "vegan": 28.0, "none": 28.0}
TIMETABLE = {"beginner": ["07:00 Hatha", "17:30 Yin"], "intermediate": ["07:00 Vinyasa", "17:30 Yin"], "advanced": ["06:30 Ashtanga", "18:00 Pranayama"]}
DEPOSIT = 0.2

INPUTS = [
    {"guest": "G-31", "arrival": "2026-05-12", "nights": 5, "room_type": "garden suite"},
    {"guest": "G-32", "arrival": "2026-06-02", "nights": 3, "room_type": "twin"},
    {"guest": "G-33", "arrival": "2026-06-20", "nights": 7, "room_type": "loft"},
    {"guest": "G-34", "arrival": "2026-07-08", "nights": 4, "room_type": "dorm"},
    {"guest": "G-35", "arrival": "2026-08-03", "nights": 6, "room_type": "twin"},
    {"guest": "G-36", "arrival": "2026-09-11", "nights": 4, "room_type": "garden suite"},
]

C = "zzr_yoga_"
CASES = [
    {"id": C + "01", "input": 0, "fault_kind": "tool_ignores_argument", "root": ("search_rooms", 1), "failure": ("validate_stay", 1),
     "description": "The room search ignores the requested room type and returns the cheapest free room, a dorm bed, which is held for a garden-suite booking."},
    {"id": C + "02", "input": 2, "fault_kind": "wrong_retrieval", "root": ("get_menu_plan", 1), "failure": ("validate_stay", 1),
     "description": "The menu retrieval matches dairy-free to the closest indexed plan and returns the vegetarian plan, which still serves dairy."},
    {"id": C + "03", "input": 1, "fault_kind": "context_pollution", "root": ("guest_notes", 1), "failure": ("validate_stay", 1),
     "description": "The guest-notes tool returns the previous guest's note (vegan) ahead of Farid's own, and the planner orders the vegan menu for a vegetarian guest."},
    {"id": C + "04", "input": 3, "fault_kind": "format_drift", "root": ("generation fake-model", "before", ("hold_room", 1)), "failure": ("validate_stay", 1),
     "description": "The planner model writes the hold's arrival as 08/07/2026 instead of an ISO date, and the hold tool reads it month-first as 7 August."},
    {"id": C + "05", "input": 5, "fault_kind": "unit_error", "root": ("take_deposit", 1), "failure": ("validate_stay", 1),
     "description": "The deposit tool returns the payment gateway's amount in pence labelled as pounds, a deposit one hundred times too large."},
]

_previous_notes = ["G-30: vegan, no honey; prefers the top floor"]


def brain(inp):
    guest = GUESTS[inp["guest"]]

    def planner(outs):
        got = {}
        for name, val in outs:
            got.setdefault(name, []).append(val)
        if "find_guest" not in got:
            return tool_call("find_guest", {"guest_id": inp["guest"]})
        if "schedule_builder" not in got:
            return tool_call("schedule_builder", {"input": f"Build the class schedule for a {guest['level']} guest, {inp['nights']} days from {inp['arrival']}."})
        if "search_rooms" not in got:
            return tool_call("search_rooms", {"arrival": inp["arrival"], "nights": inp["nights"], "room_type": inp["room_type"]})
        if "guest_notes" not in got:
            return tool_call("guest_notes", {"guest_id": inp["guest"]})
        if "get_menu_plan" not in got:
            notes = got["guest_notes"][0]["notes"]
            diet = notes[0].split(": ", 1)[1].split(",")[0] if notes else got["find_guest"][0]["diet"]
            return tool_call("get_menu_plan", {"diet": diet})
        room = got["search_rooms"][0]["rooms"][0]
        menu = got["get_menu_plan"][0]
        if "quote_stay" not in got:
            return tool_call("quote_stay", {"nightly_rate": room["rate"], "nights": inp["nights"], "meals_per_day": menu["per_day"]})
        total = got["quote_stay"][0]["total"]
        if "take_deposit" not in got:
            return tool_call("take_deposit", {"guest_id": inp["guest"], "total": total})
        if "hold_room" not in got:
            arrival = inp["arrival"]
            if kit.on(C + "04"):
                arrival = f"{arrival[8:10]}/{arrival[5:7]}/{arrival[0:4]}"
            return tool_call("hold_room", {"room": room["room"], "arrival": arrival, "nights": inp["nights"]})
        if "validate_stay" not in got:
            summary = {"guest": inp["guest"], "room": room, "hold": got["hold_room"][0], "menu": menu,
                       "schedule": got["schedule_builder"][0], "total": total, "deposit": got["take_deposit"][0]}
            return tool_call("validate_stay", {"summary_json": json.dumps(summary)})
        return f"{guest['name']} is booked from {inp['arrival']} for {inp['nights']} nights."

    def scheduler(user, outs):
        got = dict(outs)
        level = user.split("for a ")[1].split(" ")[0]
        if "get_timetable" not in got:
            return tool_call("get_timetable", {"level": level})
        if "book_classes" not in got:
            return tool_call("book_classes", {"guest_id": inp["guest"], "classes": got["get_timetable"]["classes"], "days": inp["nights"]})
        return json.dumps(got["book_classes"])

    def policy(request):
        system, user = chat_system_and_user(request.body)
        outs = chat_outputs(request.body)
        ans = scheduler(user, outs) if "class schedules" in system else planner(outs)
        return Reply(tool_calls=(ans,)) if isinstance(ans, tuple) else ans

    return policy


@function_tool
def find_guest(guest_id: str) -> dict:
    """The guest's profile: name, dietary needs, practice level."""
    return dict(GUESTS[guest_id])


@function_tool
def get_timetable(level: str) -> dict:
    """Daily classes for a practice level."""
    return {"level": level, "classes": list(TIMETABLE[level])}


@function_tool
def book_classes(guest_id: str, classes: list[str], days: int) -> dict:
    """Book a guest into the same classes every day of the stay."""
    return {"guest": guest_id, "classes": classes, "sessions": len(classes) * days}


@function_tool
def search_rooms(arrival: str, nights: int, room_type: str) -> dict:
    """Free rooms of a type for the stay, cheapest first."""
    free = sorted(ROOMS, key=lambda r: r["rate"])
    if not kit.on(C + "01"):
        free = [r for r in free if r["type"] == room_type]
    return {"arrival": arrival, "nights": nights, "rooms": [dict(r) for r in free]}


@function_tool
def guest_notes(guest_id: str) -> dict:
    """Front-desk notes about a guest, newest first."""
    g = GUESTS[guest_id]
    own = [f"{guest_id}: {g['diet']}, {g['level']} level"]
    notes = (_previous_notes + own) if kit.on(C + "03") else own
    return {"guest": guest_id, "notes": notes}


@function_tool
def get_menu_plan(diet: str) -> dict:
    """Retrieve the kitchen's menu plan closest to a diet."""
    key = diet if diet in MENUS else "none"
    if kit.on(C + "02") and diet == "dairy-free":
        key = "vegetarian"
    return {"diet": key, "per_day": MENUS[key], "menu": f"{key} plan, three meals"}


@function_tool
def quote_stay(nightly_rate: float, nights: int, meals_per_day: float) -> dict:
    """Quote a stay: room and meals."""
    return {"room": nightly_rate * nights, "meals": meals_per_day * nights, "total": nightly_rate * nights + meals_per_day * nights}


@function_tool
def hold_room(room: str, arrival: str, nights: int) -> dict:
    """Hold a room for the stay (arrival as a date)."""
    try:
        start = date.fromisoformat(arrival)
    except ValueError:
        start = datetime.strptime(arrival, "%m/%d/%Y").date()
    return {"room": room, "from": start.isoformat(), "to": (start + timedelta(days=nights)).isoformat()}


@function_tool
def take_deposit(guest_id: str, total: float) -> dict:
    """Charge the 20 % deposit on the guest's card."""
    minor = round(total * DEPOSIT * 100)
    amount = minor if kit.on(C + "05") else minor / 100
    return {"guest": guest_id, "amount": amount, "currency": "GBP", "status": "captured"}


@function_tool(failure_error_function=None)
def validate_stay(summary_json: str) -> str:
    """Check the stay against the request, the guest's profile and the retreat's rules."""
    s = json.loads(summary_json)
    req = next(i for i in INPUTS if i["guest"] == s["guest"])
    g = GUESTS[s["guest"]]
    if s["room"]["type"] != req["room_type"]:
        raise ValueError(f"room {s['room']['room']} is a {s['room']['type']}, {g['name']} asked for a {req['room_type']}")
    if s["hold"]["from"] != req["arrival"]:
        raise ValueError(f"room held from {s['hold']['from']}, the stay starts {req['arrival']}")
    if s["menu"]["diet"] != g["diet"]:
        raise ValueError(f"menu plan {s['menu']['diet']} for a {g['diet']} guest")
    if abs(s["deposit"]["amount"] - s["total"] * DEPOSIT) > 0.01:
        raise ValueError(f"deposit of {s['deposit']['amount']} GBP is not 20 % of {s['total']} GBP")
    if s["schedule"]["sessions"] != 2 * req["nights"]:
        raise ValueError(f"{s['schedule']['sessions']} class sessions for {req['nights']} days")
    return "stay consistent"


async def _go(server, make_run):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client)
    try:
        return await make_run
    finally:
        await client.close()


def record(server, inp, path):
    server.use(brain(inp))
    set_default_openai_api("chat_completions")
    scheduler = Agent(name="class_scheduler", instructions="You build class schedules for retreat guests. Use the tools.",
                      model=server.model, tools=[get_timetable, book_classes])
    planner = Agent(name="stay_planner", instructions="You plan retreat stays. Use the tools, one at a time.", model=server.model,
                    tools=[find_guest, scheduler.as_tool(tool_name="schedule_builder", tool_description="Build and book the guest's class schedule."),
                           search_rooms, guest_notes, get_menu_plan, quote_stay, hold_room, take_deposit, validate_stay])
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"stay for {inp['guest']} from {inp['arrival']}")])
    try:
        asyncio.run(_go(server, Runner.run(planner, f"Book a {inp['nights']}-night stay in a {inp['room_type']} for guest {inp['guest']} arriving {inp['arrival']}.",
                               max_turns=30, run_config=RunConfig(workflow_name=NAME))))
    except (ValueError, AgentsException):
        pass
    finally:
        set_trace_processors([])
        set_default_openai_api("responses")
