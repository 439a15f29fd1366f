"""Karaoke bar bookings (OpenAI Agents SDK, agent as a tool): the host plans the booking, asks the room scout sub-agent for a room, adds a song pack, quotes and confirms."""

from __future__ import annotations

import json
import re

from agents import Agent, function_tool

from . import common, kit

NAME = "karaoke-bookings"
ROUTE = "openai_agents"
DOMAIN = "karaoke bar bookings"
EXT = "jsonl"
DESK = "karaoke"
SHAPE = "Agents SDK: booking_host (plan tool, enquiry, room_scout agent-as-tool with list_rooms + room_calendar, song pack, deposit, quote) -> confirm_booking"
GEN = "generation gpt-4o-mini"

ENQUIRIES = {
    "KE-410": {"enquiry": "KE-410", "name": "Okafor", "party": 10, "date": "2026-06-12", "start": "20:00", "hours": 3, "previous": "KE-377"},
    "KE-377": {"enquiry": "KE-377", "name": "Okafor", "party": 5, "date": "2026-05-02", "start": "21:00", "hours": 2, "previous": None},
    "KE-415": {"enquiry": "KE-415", "name": "Lindqvist", "party": 14, "date": "2026-06-13", "start": "19:00", "hours": 4, "previous": "KE-366"},
    "KE-366": {"enquiry": "KE-366", "name": "Lindqvist", "party": 4, "date": "2026-04-18", "start": "22:00", "hours": 2, "previous": None},
    "KE-401": {"enquiry": "KE-401", "name": "Haddad", "party": 6, "date": "2026-06-05", "start": "19:30", "hours": 2, "previous": None},
    "KE-403": {"enquiry": "KE-403", "name": "Moreau", "party": 16, "date": "2026-06-06", "start": "21:00", "hours": 3, "previous": None},
    "KE-406": {"enquiry": "KE-406", "name": "Ito", "party": 3, "date": "2026-06-10", "start": "18:30", "hours": 2, "previous": None},
    "KE-408": {"enquiry": "KE-408", "name": "Baptiste", "party": 9, "date": "2026-06-11", "start": "22:00", "hours": 3, "previous": None},
}
ROOMS = [{"room": "Booth 2", "capacity": 6, "rate": 30.0}, {"room": "Neon", "capacity": 10, "rate": 45.0},
         {"room": "Disco", "capacity": 12, "rate": 55.0}, {"room": "Grand", "capacity": 20, "rate": 80.0}]
TAKEN = {("Neon", "2026-06-13"), ("Disco", "2026-06-12")}

INPUTS = {"A": "KE-410", "B": "KE-415", "R1": "KE-401", "R2": "KE-403", "R3": "KE-406", "R4": "KE-408"}
REFS = ["R1", "R2", "R3", "R4"]

CASES = [
    common.Case("zj-karaoke-01", "subagent_wrong_entity", "A", GEN, 4, "confirm_booking", 1,
                "The host asks the room scout about the customer's previous enquiry KE-377, so the scout finds a room for a party of five on another date.", "room_scout"),
    common.Case("zj-karaoke-02", "tool_ignores_argument", "A", "list_rooms", 1, "confirm_booking", 1,
                "The room list ignores the minimum capacity and returns every room, and the scout takes the first, a booth for six."),
    common.Case("zj-karaoke-03", "off_by_one", "B", "price_quote", 1, "confirm_booking", 1,
                "The quote counts the hours of the slot inclusively and bills one hour more than the booking."),
    common.Case("zj-karaoke-04", "plan_error", "B", GEN, 1, "confirm_booking", 1,
                "The host's plan leaves out the deposit hold that a party of more than twelve needs, and the host follows its plan.", "save_plan"),
    common.Case("zj-karaoke-05", "format_drift", "A", GEN, 10, "confirm_booking", 1,
                "The host writes the start time in a 12-hour format when it confirms, which the booking system reads as a morning slot.", "PM"),
]


@function_tool
def save_plan(steps: list[str]) -> str:
    """Record the booking plan."""
    return "plan saved: " + " -> ".join(steps)


@function_tool
def get_enquiry(enquiry_id: str) -> dict:
    """Read a booking enquiry."""
    return dict(ENQUIRIES[enquiry_id])


@function_tool
def list_rooms(date: str, min_capacity: int) -> list:
    """Rooms that hold at least `min_capacity` guests."""
    if kit.active("karaoke.tool_ignores_argument"):
        return [dict(r) for r in ROOMS]
    return [dict(r) for r in ROOMS if r["capacity"] >= min_capacity]


@function_tool
def room_calendar(room: str, date: str) -> dict:
    """Whether a room is free on a date."""
    return {"room": room, "date": date, "free": (room, date) not in TAKEN}


@function_tool
def add_song_pack(enquiry_id: str, pack: str) -> dict:
    """Add a song pack to the booking."""
    return {"enquiry": enquiry_id, "pack": pack, "songs": 1200 if pack == "party" else 600}


@function_tool
def hold_deposit(enquiry_id: str, amount: float) -> dict:
    """Hold a deposit on the customer's card."""
    _HELD.add(enquiry_id)
    return {"enquiry": enquiry_id, "held": amount}


@function_tool
def price_quote(room: str, start: str, end: str) -> dict:
    """Quote a room for a time slot."""
    rate = next(r["rate"] for r in ROOMS if r["room"] == room)
    h0, h1 = int(start[:2]), int(end[:2])
    h1 = h1 + 24 if h1 < h0 else h1
    hours = len(range(h0, h1 + 1)) if kit.active("karaoke.off_by_one") else len(range(h0, h1))
    return {"room": room, "hours": hours, "total": rate * hours}


_HELD: set = set()


def _clock(text: str) -> int:
    m = re.match(r"(\d{1,2}):(\d{2})", text)
    return int(m.group(1))


@function_tool(failure_error_function=None)
def confirm_booking(enquiry_id: str, room: str, date: str, start: str, hours: int, total: float) -> dict:
    """Confirm the booking in the bar's system."""
    e = ENQUIRIES[enquiry_id]
    r = next(x for x in ROOMS if x["room"] == room)
    errs = []
    if r["capacity"] < e["party"]:
        errs.append(f"room {room} holds {r['capacity']}, party is {e['party']}")
    if date != e["date"]:
        errs.append(f"date {date} differs from the enquiry date {e['date']}")
    if (room, date) in TAKEN:
        errs.append(f"room {room} is taken on {date}")
    h = _clock(start)
    if not (h >= 18 or h < 2):
        errs.append(f"start {h:02d}:00 is outside opening hours 18:00-02:00")
    if abs(total - r["rate"] * e["hours"]) > 0.01:
        errs.append(f"total {total:.2f} does not match {e['hours']} h at {r['rate']:.2f}")
    if e["party"] > 12 and enquiry_id not in _HELD:
        errs.append("parties over 12 need a deposit hold")
    if errs:
        raise ValueError(f"booking system 409 for {enquiry_id}: " + "; ".join(errs))
    return {"confirmed": enquiry_id, "room": room}


def _scout_policy(messages: list[dict]):
    ask = json.loads(next(m["content"] for m in messages if m.get("role") == "user"))
    rooms = common.tool_json(messages, "list_rooms")
    if rooms is None:
        return common.reply(("list_rooms", {"date": ask["date"], "min_capacity": ask["party"]}))
    cal = [common.decode(m["content"]) for m in messages if m.get("role") == "tool"][1:]
    for c in cal:
        if c["free"]:
            return json.dumps({"room": c["room"], "date": ask["date"]})
    nxt = rooms[len(cal)]
    return common.reply(("room_calendar", {"room": nxt["room"], "date": ask["date"]}))


def _host_policy(messages: list[dict]):
    eid = re.search(r"KE-\d+", next(m["content"] for m in messages if m.get("role") == "user")).group(0)
    done = common.called(messages)
    if "save_plan" not in done:
        steps = ["read enquiry", "find room", "song pack", "hold deposit if party over 12", "quote", "confirm"]
        if kit.active("karaoke.plan_error"):
            steps.remove("hold deposit if party over 12")
        return common.reply(("save_plan", {"steps": steps}))
    plan = common.tool_json(messages, "save_plan")
    e = common.tool_json(messages, "get_enquiry")
    if e is None:
        return common.reply(("get_enquiry", {"enquiry_id": eid}))
    if "get_enquiry" in done and done.count("get_enquiry") == 1 and e.get("previous") and "room_scout" not in done:
        return common.reply(("get_enquiry", {"enquiry_id": e["previous"]}))
    mine = next(common.decode(m["content"]) for m in messages if m.get("role") == "tool" and "'enquiry': '" + eid + "'" in m["content"])
    scout = common.tool_json(messages, "room_scout")
    if scout is None:
        target = e if kit.active("karaoke.subagent_wrong_entity") and e["enquiry"] != eid else mine
        return common.reply(("room_scout", {"input": json.dumps({"enquiry": target["enquiry"], "party": target["party"], "date": target["date"]})}))
    room = scout["room"]
    if "add_song_pack" not in done:
        return common.reply(("add_song_pack", {"enquiry_id": eid, "pack": "party" if mine["party"] >= 8 else "classic"}))
    if "deposit" in str(plan) and mine["party"] > 12 and "hold_deposit" not in done:
        return common.reply(("hold_deposit", {"enquiry_id": eid, "amount": 100.0}))
    h0 = int(mine["start"][:2])
    end = f"{(h0 + mine['hours']) % 24:02d}{mine['start'][2:]}"
    quote = common.tool_json(messages, "price_quote")
    if quote is None:
        return common.reply(("price_quote", {"room": room, "start": mine["start"], "end": end}))
    if "confirm_booking" not in done:
        start = mine["start"]
        if kit.active("karaoke.format_drift"):
            start = f"{h0 - 12}:{mine['start'][3:]} PM"
        return common.reply(("confirm_booking", {"enquiry_id": eid, "room": room, "date": scout["date"], "start": start,
                                                  "hours": quote["hours"], "total": quote["total"]}))
    return f"Booked {room} for {mine['name']}."


@common.policy(DESK)
def _policy(messages: list[dict]):
    if "room scout" in messages[0]["content"]:
        return _scout_policy(messages)
    return _host_policy(messages)


def build() -> Agent:
    model = common.agents_model()
    scout = Agent(name="room_scout", model=model, tools=[list_rooms, room_calendar],
                  instructions=f"[desk:{DESK}] You are the room scout: find a free room for the party and date. Answer JSON {{room, date}}.")
    return Agent(name="booking_host", model=model,
                 tools=[save_plan, get_enquiry, scout.as_tool(tool_name="room_scout", tool_description="Find a free room."),
                        add_song_pack, hold_deposit, price_quote, confirm_booking],
                 instructions=f"[desk:{DESK}] You are the booking host of a karaoke bar: plan, find a room, add songs, quote, confirm.")


def run_once(inp: str, path) -> None:
    _HELD.clear()
    common.agents_run(NAME, f"book karaoke enquiry {inp}", path, build(), f"New karaoke enquiry {inp}, please book it.")
