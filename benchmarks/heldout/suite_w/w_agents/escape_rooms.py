"""Escape-room group bookings (route: sdk).

The model extracts the booking from the customer's message; the agent parses it, reads each room's
spec into run state, splits the party into teams, schedules back-to-back sessions, remembers the
booking, prices it from the tariff, holds the slots in the venue system (with one retry on a busy
answer), drafts the confirmation and takes the deposit through the payment API.
"""

from __future__ import annotations

import json
import math
from contextlib import contextmanager

import trajdebug
from openai import OpenAI
from trajdebug.testing import FakeModelServer

import kit

AGENT = "escape-room-bookings"
ROUTE = "sdk"
DOMAIN = "escape-room venue bookings"
SHAPE = "extract (llm) -> parse -> per room: spec tool + state write -> team split -> schedule -> booking state -> tariff retrieval -> quote -> hold slots (retry) -> confirmation (llm) -> own check -> deposit API"

ROOMS = {
    "Clockwork Vault": {"capacity": 5, "duration_min": 60, "reset_min": 15, "code": "CV"},
    "Alchemist's Study": {"capacity": 6, "duration_min": 75, "reset_min": 15, "code": "AS"},
    "Submarine 9": {"capacity": 4, "duration_min": 60, "reset_min": 20, "code": "S9"},
    "Pharaoh's Tomb": {"capacity": 8, "duration_min": 90, "reset_min": 20, "code": "PT"},
    "Midnight Express": {"capacity": 6, "duration_min": 60, "reset_min": 15, "code": "ME"},
}
PRICE = {"weekday": 22.0, "weekend": 27.5}


def _inp(name: str, party: int, date: str, start: str, rooms: list[str]) -> dict:
    return {"customer": name, "message": f"Hi, we are {party} people and would like to do "
            f"{' and then '.join(rooms)} on {date}, starting {start}. Thanks, {name}"}


REFS = [
    _inp("Ailsa Grant", 5, "2026-12-12", "18:30", ["Clockwork Vault"]),
    _inp("Jamie Kerr", 9, "2026-12-19", "14:00", ["Alchemist's Study", "Midnight Express"]),
    _inp("Leah Boyd", 4, "2026-12-10", "19:15", ["Submarine 9"]),
    _inp("Hamish Todd", 12, "2026-12-20", "11:00", ["Pharaoh's Tomb", "Alchemist's Study"]),
]


def _to12(hhmm: str) -> str:
    h, m = map(int, hhmm.split(":"))
    return f"{(h - 1) % 12 + 1}:{m:02d}{'pm' if h >= 12 else 'am'}"


# ---------------------------------------------------------------- the scripted model

def brain(request):
    messages = request.body["messages"]
    system, msg = messages[0]["content"], json.loads(messages[-1]["content"])
    if system.startswith("EXTRACT"):
        text = msg["message"]
        party = int(text.split("we are ")[1].split()[0])
        rooms = text.split("like to do ")[1].split(" on ")[0].split(" and then ")
        date = text.split(" on ")[1].split(",")[0]
        start = text.split("starting ")[1].split(".")[0]
        return f"party={party}; date={date}; start={_to12(start)}; rooms={' | '.join(rooms)}"
    if system.startswith("CONFIRM"):
        b = msg["booking"]
        return (f"Dear {b['customer']}, your {len(b['sessions'])} session(s) on {b['date']} are held for "
                f"{b['party']} players. Total {msg['quote']['total']:.2f} GBP, deposit {msg['quote']['deposit']:.2f} GBP.")
    raise ValueError("unknown prompt")


def _ask(client: OpenAI, name: str, system: str, payload: dict) -> str:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}]
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        reply = client.chat.completions.create(model="desk-model", messages=messages)
        text = reply.choices[0].message.content
        s.output = {"role": "assistant", "content": text, "tool_calls": []}
        s.usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens, completion_tokens=reply.usage.completion_tokens)
    return text


# ---------------------------------------------------------------- steps

@trajdebug.step(kind="parse")
def parse_request(text: str) -> dict:
    fields = dict(part.strip().split("=", 1) for part in text.split(";"))
    clock = fields["start"]
    hh, rest = clock.split(":")
    mm, ampm = rest[:2], rest[2:]
    h = int(hh) % 12 + (12 if ampm == "pm" else 0)
    if kit.active("er-parse-minutes"):
        h = int(hh) % 12
    return {"party": int(fields["party"]), "date": fields["date"], "start": f"{h:02d}:{mm}",
            "rooms": [r.strip() for r in fields["rooms"].split("|")]}


@trajdebug.step(kind="tool")
def room_spec(room: str) -> dict:
    return {"room": room, **ROOMS[room]}


@trajdebug.step(kind="state")
def remember_room(spec: dict) -> None:
    trajdebug.current_run().state[f"room:{spec['code']}"] = spec


@trajdebug.step(kind="other")
def split_party(party: int, capacity: int) -> dict:
    teams = math.ceil(party / capacity)
    base, extra = divmod(party, teams)
    sizes = [base + (1 if i < extra else 0) for i in range(teams)]
    if kit.active("er-split-range") and teams > 1:
        sizes[-1] -= 1
    return {"teams": teams, "players": sizes}


@trajdebug.step(kind="other")
def schedule_sessions(start: str, codes: list[str], teams: int) -> list[dict]:
    state = trajdebug.current_run().state
    h, m = map(int, start.split(":"))
    t = h * 60 + m
    sessions = []
    for code in codes:
        spec = state[f"room:{code}"]
        for k in range(teams):
            sessions.append({"room": code, "team": k + 1, "start": f"{t // 60:02d}:{t % 60:02d}"})
        reset = spec["reset_min"] * 60 if kit.active("er-reset-hours") else spec["reset_min"]
        t += spec["duration_min"] + reset
    return sessions


@trajdebug.step(kind="state")
def remember_booking(req: dict, customer: str, sessions: list, players: list) -> dict:
    booking = {"customer": customer, "date": req["date"], "party": req["party"], "players": players,
               "sessions": sessions}
    if kit.active("er-booking-date"):
        booking["date"] = "2026-12-03"
    trajdebug.current_run().state["booking"] = booking
    return booking


@trajdebug.step(kind="retrieval")
def load_tariff(date: str) -> dict:
    weekday = date in {"2026-12-07", "2026-12-08", "2026-12-09", "2026-12-10", "2026-12-11", "2026-12-14",
                       "2026-12-15", "2026-12-16", "2026-12-17", "2026-12-18"}
    band = "weekday" if weekday else "weekend"
    if kit.active("er-tariff-year"):
        return {"valid_from": "2025-01-06", "band": band, "per_player": PRICE[band] - 2.5}
    return {"valid_from": "2026-03-02", "band": band, "per_player": PRICE[band]}


@trajdebug.step(kind="other")
def quote(players: list, rooms: int, tariff: dict) -> dict:
    total = sum(players) * rooms * tariff["per_player"]
    return {"total": round(total, 2), "deposit": round(total * 0.25, 2), "per_player": tariff["per_player"]}


_HOLD_CALLS = {"n": 0}


@trajdebug.step(kind="tool")
def hold_slots(date: str, sessions: list) -> dict:
    _HOLD_CALLS["n"] += 1
    if _HOLD_CALLS["n"] % 3 == 1:
        return {"status": 503, "message": "venue system busy, retry"}
    if date <= "2026-12-04":
        raise RuntimeError(f"409 Conflict: no bookable sessions on {date} (online booking closes 24 h ahead)")
    for s in sessions:
        h, m = map(int, s["start"].split(":"))
        if m % 5 or not 10 <= h <= 21:
            raise RuntimeError(f"422 Unprocessable Entity: session start {s['start']} is not a timetable slot")
    return {"status": 200, "hold": f"H-{date[-2:]}{len(sessions):02d}", "expires_min": 30}


@trajdebug.step(kind="condition")
def check_booking(booking: dict, q: dict) -> dict:
    if not booking["sessions"]:
        raise ValueError("booking has no sessions")
    if q["deposit"] <= 0:
        raise ValueError("deposit must be positive")
    return {"ok": True}


@trajdebug.step(kind="tool")
def take_deposit(customer: str, amount: float, waivers: int, players: list, date: str, per_player: float) -> dict:
    if sum(players) != waivers:
        raise RuntimeError(f"402 Payment Required: deposit covers {sum(players)} players but {waivers} waivers are on file")
    current = PRICE["weekday"] if per_player in (PRICE["weekday"], PRICE["weekday"] - 2.5) else PRICE["weekend"]
    if per_player != current:
        raise RuntimeError(f"402 Payment Required: amount {amount:.2f} GBP rejected, price per player {per_player:.2f} is not the published rate")
    return {"status": "captured", "amount": amount, "receipt": f"R-{customer.split()[-1].upper()}-{date[-2:]}"}


def run_agent(client: OpenAI, inp: dict) -> dict:
    with trajdebug.step("receive_message", kind="input") as s:
        s.output = dict(inp)
    text = _ask(client, "extract_booking", "EXTRACT the booking from the customer's message.", inp)
    req = parse_request(text)
    codes = []
    for room in req["rooms"]:
        spec = room_spec(room)
        remember_room(spec)
        codes.append(spec["code"])
    split = split_party(req["party"], min(ROOMS[r]["capacity"] for r in req["rooms"]))
    sessions = schedule_sessions(req["start"], codes, split["teams"])
    booking = remember_booking(req, inp["customer"], sessions, split["players"])
    tariff = load_tariff(req["date"])
    q = quote(split["players"], len(codes), tariff)
    with trajdebug.step("hold_with_retry", kind="agent"):
        for _ in range(3):
            with trajdebug.step("read_booking", kind="state") as s:
                held = trajdebug.current_run().state["booking"]
                s.output = {"date": held["date"], "sessions": len(held["sessions"])}
            hold = hold_slots(held["date"], held["sessions"])
            if hold["status"] == 200:
                break
    _ask(client, "draft_confirmation", "CONFIRM the booking to the customer.", {"booking": booking, "quote": q})
    check_booking(booking, q)
    return take_deposit(inp["customer"], q["deposit"], req["party"], booking["players"], req["date"], q["per_player"])


@contextmanager
def session():
    with FakeModelServer(brain, model="desk-model") as server:
        yield OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def record(client, inp: dict, path) -> None:
    _HOLD_CALLS["n"] = 0
    try:
        with trajdebug.run(AGENT, task=f"book escape rooms for {inp['customer']}", path=str(path)):
            run_agent(client, inp)
    except Exception:
        pass


CASES = [
    {"case": "w_escape_rooms_1", "fault": "er-parse-minutes", "kind": "lossy_parsing",
     "input": _inp("Morven Shaw", 6, "2026-12-13", "17:45", ["Midnight Express"]),
     "root": "parse_request", "marker": "05:45"},
    {"case": "w_escape_rooms_2", "fault": "er-split-range", "kind": "off_by_one",
     "input": _inp("Rory Dunn", 7, "2026-12-16", "15:30", ["Clockwork Vault", "Submarine 9"]),
     "root": "split_party", "marker": "[4, 2]"},
    {"case": "w_escape_rooms_3", "fault": "er-booking-date", "kind": "bad_memory_write",
     "input": _inp("Isla Munro", 8, "2026-12-27", "12:15", ["Pharaoh's Tomb", "Midnight Express"]),
     "root": "remember_booking", "marker": "2026-12-03"},
    {"case": "w_escape_rooms_4", "fault": "er-tariff-year", "kind": "stale_data",
     "input": _inp("Calum Rae", 10, "2026-12-15", "19:00", ["Alchemist's Study", "Clockwork Vault"]),
     "root": "load_tariff", "marker": "2025-01-06"},
    {"case": "w_escape_rooms_5", "fault": "er-reset-hours", "kind": "unit_error",
     "input": _inp("Eilidh Ross", 5, "2026-12-18", "14:15", ["Clockwork Vault", "Alchemist's Study"]),
     "root": "schedule_sessions", "marker": "30:15"},
]
