"""escape-room-desk: the booking desk of an escape-room venue (recorded with trajdebug's own SDK).

A booking e-mail comes in; the model extracts the request, a parser normalises it, the room index is
searched, each candidate room's slots are checked in parallel, a room is picked, the game-master roster
is fetched (retried once when the roster service drops the connection), a game master is assigned, the
booking is kept in run.state, priced, a deposit taken, the slot held, the game master confirmed, the
model drafts the confirmation and a final check compares it with the e-mail.
"""

from __future__ import annotations

import json
import re
from typing import Any

import trajdebug

from .common import chat_call, json_in, system_text, user_texts


NAME = "escape-room-desk"
ROUTE = "sdk"
DOMAIN = "escape-room venue: group bookings, rooms, game masters"
SHAPE = "input, LLM extraction, parser, retriever, parallel availability checks, retried roster call, state write, deposit, LLM draft, final check"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


ROOMS = [
    {"room_id": "RS-PHARAOH", "name": "The Pharaoh's Vault", "branch": "Riverside", "theme": "egypt",
     "text": "ancient egypt pyramid tomb hieroglyphs pharaoh", "min_players": 3, "max_players": 7, "min_age": 10, "rating": 4.6},
    {"room_id": "RS-SCARAB", "name": "Scarab Chamber", "branch": "Riverside", "theme": "egypt",
     "text": "egypt scarab temple family friendly", "min_players": 2, "max_players": 5, "min_age": 8, "rating": 4.4},
    {"room_id": "RS-HEIST", "name": "Midnight Heist", "branch": "Riverside", "theme": "heist",
     "text": "bank heist vault lasers safe cracking", "min_players": 4, "max_players": 8, "min_age": 14, "rating": 4.7},
    {"room_id": "RS-LAB", "name": "Dr. Voss's Laboratory", "branch": "Riverside", "theme": "science",
     "text": "science laboratory chemistry experiment antidote", "min_players": 2, "max_players": 6, "min_age": 12, "rating": 4.5},
    {"room_id": "RS-CABIN", "name": "Cabin in the Pines", "branch": "Riverside", "theme": "horror",
     "text": "horror cabin woods dark scary", "min_players": 3, "max_players": 6, "min_age": 16, "rating": 4.3},
    {"room_id": "NS-TOMB", "name": "Tomb of Nefertari", "branch": "Northside", "theme": "egypt",
     "text": "ancient egypt tomb nefertari queen pharaoh hieroglyphs pyramid", "min_players": 3, "max_players": 7, "min_age": 10, "rating": 4.9},
    {"room_id": "NS-SUB", "name": "Sub 47", "branch": "Northside", "theme": "submarine",
     "text": "submarine depth torpedo science", "min_players": 2, "max_players": 6, "min_age": 12, "rating": 4.2},
]

SLOTS = {
    "RS-PHARAOH": ["16:00", "17:30", "19:00", "19:30", "21:00"],
    "RS-SCARAB": ["14:30", "16:00", "17:30"],
    "RS-HEIST": ["17:00", "18:00", "18:30", "20:00"],
    "RS-LAB": ["15:00", "17:00", "18:30"],
    "RS-CABIN": ["19:30", "21:00", "22:30"],
    "NS-TOMB": ["17:00", "19:30", "21:00"],
    "NS-SUB": ["16:00", "18:00"],
}

ROSTER = {
    "Riverside": [
        {"gm": "Tomas", "languages": ["en"], "themes": ["heist", "horror"]},
        {"gm": "Aylin", "languages": ["en", "tr"], "themes": ["egypt", "heist"]},
        {"gm": "Jonas", "languages": ["en", "de"], "themes": ["science", "egypt"]},
        {"gm": "Mireille", "languages": ["en", "fr"], "themes": ["horror", "science", "egypt"]},
    ],
}

TARIFF = {  # EUR per player, by branch
    "Riverside": {"RS-PHARAOH": 29.0, "RS-SCARAB": 24.0, "RS-HEIST": 31.0, "RS-LAB": 27.0, "RS-CABIN": 33.0},
}
DEPOSIT_SHARE = 0.5
DEPOSIT_CAP_EUR = 300.0

INPUTS = [
    {"request_id": "BK-3101", "branch": "Riverside",
     "email": "Hi! We are 6 friends and would love the ancient Egypt room on 2025-03-14 at 19:30. "
              "The youngest of us is 12. Thanks, Priya"},
    {"request_id": "BK-3102", "branch": "Riverside",
     "email": "Hello, booking for a team outing: 5 people, heist theme, Saturday 2025-03-15 at 18:30. "
              "Everyone is an adult, youngest 16 (our intern). Regards, Marcus"},
    {"request_id": "BK-3103", "branch": "Riverside",
     "email": "Guten Tag, wir sind 4 Personen (youngest 13) and would like the science lab room on "
              "2025-03-19 at 17:00, with a German-speaking game master please. Danke, Heike"},
    {"request_id": "BK-3104", "branch": "Riverside",
     "email": "Hey, 3 of us want the scariest room you have: horror, 2025-03-21 at 21:00. All over 18. - Dev"},
    {"request_id": "BK-3105", "branch": "Riverside",
     "email": "Hello, a family of 4 with our youngest aged 8: Egypt theme, 2025-03-22 at 16:00 if possible. "
              "Best, Olu"},
]

CASES = [
    {"id": "escape_room_1", "switch": "start_minutes", "input": 1, "kind": "lossy_parsing",
     "root": ("parse_booking", 1), "failure": ("validate_confirmation", 1),
     "description": "parse_booking reads the start time 18:30 as a decimal hour and keeps 18:00, so the room "
                    "is held and confirmed for 18:00 and the final check finds the e-mail asked for 18:30."},
    {"id": "escape_room_2", "switch": "room_index", "input": 0, "kind": "wrong_retrieval",
     "root": ("lookup_rooms", 1), "failure": ("price_quote", 1),
     "description": "lookup_rooms ranks the whole chain's index and returns Northside's Tomb of Nefertari "
                    "first for a Riverside booking; it is picked, and pricing finds no Riverside tariff for it."},
    {"id": "escape_room_3", "switch": "roster_timeout", "input": 2, "kind": "swallowed_error",
     "root": ("fetch_roster", 1), "failure": ("assign_game_master", 1),
     "description": "the roster service times out and fetch_roster returns an empty shift list instead of "
                    "raising, so assign_game_master finds no German-speaking game master on shift."},
    {"id": "escape_room_4", "switch": "tariff_cents", "input": 3, "kind": "unit_error",
     "root": ("price_quote", 1), "failure": ("take_deposit", 1),
     "description": "the tariff service answers the horror room's price in cents (3300) and price_quote "
                    "totals it as euros, so the deposit of 4950.00 EUR exceeds the 300 EUR card limit."},
    {"id": "escape_room_5", "switch": "booking_gm", "input": 4, "kind": "bad_memory_write",
     "root": ("remember_booking", 1), "failure": ("confirm_game_master", 1),
     "description": "remember_booking stores the first game master of the shift (Tomas) instead of the "
                    "one assigned (Aylin), and the roster rejects Tomas for the Egypt room."},
]


# --------------------------------------------------------------------------- the model's behaviour

def brain(request: Any) -> Any:
    system = system_text(request)
    user = user_texts(request)[-1]
    if system.startswith("You extract escape-room bookings"):
        text = user
        m = re.search(r"(\d+) (?:friends|people|Personen|of us)", text) or re.search(r"family of (\d+)", text)
        players = int(m.group(1))
        theme = next(t for t in ("egypt", "heist", "science", "horror") if t in text.lower())
        date = re.search(r"\d{4}-\d{2}-\d{2}", text).group(0)
        start = re.search(r"at (\d{1,2}:\d{2})", text).group(1)
        young = re.search(r"youngest (?:of us is |aged |)(\d+)", text)
        youngest = int(young.group(1)) if young else 18
        language = "de" if "German" in text else "en"
        return json.dumps({"players": players, "theme": theme, "date": date, "start": start,
                           "youngest_age": youngest, "language": language, "contact": text.split()[-1]})
    if system.startswith("You write booking confirmations"):
        b = json_in(user)
        return (f"Dear {b['contact']},\n\nyour booking of {b['room_name']} is confirmed for {b['players']} players "
                f"on {b['date']} at {b['start']}. Your game master will be {b['game_master']}. "
                f"We have taken a deposit of {b['deposit_eur']:.2f} EUR; the rest ({b['balance_eur']:.2f} EUR) "
                f"is paid on the day.\n\nSee you soon,\nthe front desk")
    return "I can only help with bookings."


# --------------------------------------------------------------------------- the agent

CLIENT: Any = None
MODEL = "fake-model"


@trajdebug.step(kind="input")
def receive_request(request: dict) -> dict:
    return request


@trajdebug.step(kind="llm")
def extract_booking(messages: list) -> dict:
    return chat_call(CLIENT, MODEL, messages)


@trajdebug.step(kind="parse")
def parse_booking(model_text: str) -> dict:
    data = json.loads(model_text)
    start = str(data["start"]).strip()
    if _on("start_minutes"):
        hour = int(float(start.replace(":", ".")))  # "18:30" -> 18.3 -> 18
        minutes = hour * 60
    else:
        hh, mm = start.split(":")
        minutes = int(hh) * 60 + int(mm)
    return {
        "players": int(data["players"]),
        "theme": str(data["theme"]).lower(),
        "date": data["date"],
        "start": f"{minutes // 60:02d}:{minutes % 60:02d}",
        "youngest_age": int(data["youngest_age"]),
        "language": data.get("language", "en"),
        "contact": data.get("contact", "guest"),
    }


GUESTS = {"Marcus": {"visits": 4, "tier": "regular"}, "Dev": {"visits": 1, "tier": "new"}}


@trajdebug.step(kind="tool")
def lookup_guest(contact: str, email: str) -> dict:
    known = GUESTS.get(contact, {"visits": 0, "tier": "new"})
    return {"contact": contact, **known, "discount": 0.1 if known["tier"] == "regular" else 0.0}


@trajdebug.step(kind="retrieval")
def lookup_rooms(query: str, branch: str, k: int = 3) -> list:
    words = set(re.sub(r"[^a-z0-9 ]", " ", query.lower()).split())
    scored = []
    for room in ROOMS:
        if room["branch"] != branch and not _on("room_index"):
            continue
        score = len(words & set(room["text"].split())) + (2 if room["theme"] in words else 0)
        score = score and score + room["rating"]
        if score:
            scored.append((score, room))
    scored.sort(key=lambda sr: -sr[0])
    return [dict(room, score=score) for score, room in scored[:k]]


@trajdebug.step(kind="tool")
def check_availability(room_id: str, date: str) -> dict:
    return {"room_id": room_id, "date": date, "free": list(SLOTS[room_id])}


@trajdebug.step(kind="condition")
def pick_room(booking: dict, candidates: list, availability: list) -> dict:
    free = {a["room_id"]: a["free"] for a in availability}
    for room in candidates:
        if not room["min_players"] <= booking["players"] <= room["max_players"]:
            continue
        if booking["youngest_age"] < room["min_age"]:
            continue
        if booking["start"] in free.get(room["room_id"], []):
            return room
    raise LookupError(f"no room free for {booking['players']} players at {booking['start']} on {booking['date']}")


_ROSTER_CALLS = {"n": 0}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_roster(branch: str, date: str) -> dict:
    _ROSTER_CALLS["n"] += 1
    if date == "2025-03-21" and _ROSTER_CALLS["n"] == 1:
        raise ConnectionError("roster service closed the connection")
    try:
        if _on("roster_timeout"):
            raise TimeoutError("roster service did not answer within 2.0 s")
        shift = [dict(g) for g in ROSTER[branch]]
    except TimeoutError:
        shift = []
    return {"branch": branch, "date": date, "on_shift": shift}


@trajdebug.step(kind="tool")
def assign_game_master(roster: dict, room: dict, language: str, start: str) -> dict:
    for gm in roster["on_shift"]:
        if room["theme"] in gm["themes"] and language in gm["languages"]:
            return {"gm": gm["gm"], "room_id": room["room_id"], "start": start}
    raise LookupError(f"no game master on shift on {roster['date']} at {start} for {room['name']} "
                      f"who speaks '{language}'")


@trajdebug.step(kind="state")
def remember_booking(request_id: str, booking: dict, room: dict, assignment: dict, roster: dict) -> dict:
    gm = roster["on_shift"][0]["gm"] if _on("booking_gm") else assignment["gm"]
    record = {"request_id": request_id, "room_id": room["room_id"], "room_name": room["name"],
              "theme": room["theme"], "date": booking["date"], "start": booking["start"],
              "players": booking["players"], "game_master": gm, "contact": booking["contact"]}
    trajdebug.current_run().state["booking"] = record
    return record


@trajdebug.step(kind="tool")
def price_quote(branch: str, room_id: str, players: int, date: str, discount: float) -> dict:
    table = TARIFF[branch]
    if room_id not in table:
        raise LookupError(f"{branch} tariff has no entry for room {room_id}")
    per_player = table[room_id]
    if _on("tariff_cents") and room_id == "RS-CABIN":
        per_player = int(per_player * 100)  # the tariff service's v2 answer for this room
    total = round(per_player * players * (1 - discount), 2)
    return {"room_id": room_id, "players": players, "per_player": per_player, "discount": discount,
            "total": total, "currency": "EUR"}


@trajdebug.step(kind="tool")
def take_deposit(request_id: str, quote: dict) -> dict:
    amount = round(quote["total"] * DEPOSIT_SHARE, 2)
    if amount > DEPOSIT_CAP_EUR:
        raise ValueError(f"deposit {amount:.2f} EUR exceeds the {DEPOSIT_CAP_EUR:.0f} EUR limit per booking card payment")
    return {"request_id": request_id, "deposit_eur": amount, "balance_eur": round(quote["total"] - amount, 2),
            "payment_ref": f"PAY-{request_id[3:]}-1"}


@trajdebug.step(kind="tool")
def hold_slot(room_id: str, date: str, start: str, players: int) -> dict:
    if start not in SLOTS[room_id]:
        raise LookupError(f"slot {start} does not exist for {room_id}")
    return {"hold": f"H-{room_id}-{date}-{start}", "room_id": room_id, "players": players}


@trajdebug.step(kind="tool")
def confirm_game_master(booking: dict) -> dict:
    roster = {g["gm"]: g for g in ROSTER["Riverside"]}
    gm = roster[booking["game_master"]]
    if booking["theme"] not in gm["themes"]:
        raise PermissionError(f"roster rejects {gm['gm']} for {booking['room_name']} on {booking['date']} "
                              f"{booking['start']}: not trained on theme '{booking['theme']}'")
    return {"confirmed": gm["gm"], "room_id": booking["room_id"], "start": booking["start"]}


@trajdebug.step(kind="llm")
def draft_confirmation(messages: list) -> dict:
    return chat_call(CLIENT, MODEL, messages)


@trajdebug.step(kind="condition", attributes={"final": True})
def validate_confirmation(email_text: str, request: dict, deposit: dict) -> dict:
    asked = re.search(r"at (\d{1,2}:\d{2})", request["email"]).group(1)
    date = re.search(r"\d{4}-\d{2}-\d{2}", request["email"]).group(0)
    told = re.search(r" at (\d{2}:\d{2})\.", email_text).group(1)
    if date not in email_text:
        raise ValueError(f"confirmation does not give the requested date {date}")
    if told != asked:
        raise ValueError(f"confirmation gives the start time {told}, the guest asked for {asked}")
    if f"{deposit['deposit_eur']:.2f}" not in email_text:
        raise ValueError(f"confirmation does not state the deposit of {deposit['deposit_eur']:.2f} EUR")
    return {"ok": True, "start": told, "date": date}


def record(inp: dict, path: str, server: Any) -> None:
    global CLIENT, MODEL
    from openai import OpenAI

    CLIENT = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    MODEL = server.model
    _ROSTER_CALLS["n"] = 0
    try:
        with trajdebug.run(NAME, task=f"booking {inp['request_id']}", path=path) as run:
            run.state["booking"] = None
            request = receive_request(inp)
            answer = extract_booking([
                {"role": "system", "content": "You extract escape-room bookings as JSON: players, theme, date, "
                                              "start, youngest_age, language, contact."},
                {"role": "user", "content": request["email"]},
            ])
            booking = parse_booking(answer["content"])
            guest = lookup_guest(booking["contact"], request["email"])
            candidates = lookup_rooms(booking["theme"] + " " + request["email"], request["branch"])
            with trajdebug.step("check_rooms", kind="agent", input={"rooms": [c["room_id"] for c in candidates]}) as s:
                with trajdebug.ContextThreadPoolExecutor(max_workers=3) as pool:
                    availability = list(pool.map(lambda c: check_availability(c["room_id"], booking["date"]), candidates))
                s.output = availability
            room = pick_room(booking, candidates, availability)
            roster = fetch_roster(request["branch"], booking["date"])
            assignment = assign_game_master(roster, room, booking["language"], booking["start"])
            remember_booking(request["request_id"], booking, room, assignment, roster)
            stored = run.state["booking"]
            quote = price_quote(request["branch"], stored["room_id"], stored["players"], stored["date"],
                                guest["discount"])
            deposit = take_deposit(request["request_id"], quote)
            hold_slot(stored["room_id"], stored["date"], stored["start"], stored["players"])
            confirm_game_master(stored)
            letter = draft_confirmation([
                {"role": "system", "content": "You write booking confirmations for the front desk, friendly and short."},
                {"role": "user", "content": "Booking: " + json.dumps({**stored, **deposit})},
            ])
            validate_confirmation(letter["content"], request, deposit)
    except Exception:  # noqa: BLE001 - the run records the failure
        pass
