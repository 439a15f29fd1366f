"""escape-room-evening: an escape room venue's evening prep (trajdebug's own recorder, JSONL).

The agent lists the evening's bookings, checks each group against its room, asks the model for hint packs
(JSON, parsed, loaded on the room tablets), recalls game-master notes, lets the model book game masters
(parallel tool calls, run one by one), keeps the evening in run memory, hands the room resets to a reset-crew
sub-agent (checklist retrieval + a model tool call per room), sends confirmations in parallel and checks
the evening.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trajdebug

from ._common import Env, between, called, last_user, messages, openai_client, system_text, tool_results

NAME = "escape-room-evening"
ROUTE = "sdk"
DOMAIN = "escape room venue: evening game prep"
SHAPE = "paged booking tool, per-booking room lookup + fit check loop, LLM JSON + parser + tablet loader, notes retriever, LLM parallel tool calls (game masters), run.state, reset-crew sub-agent (retrieval + LLM tool call per room), parallel confirmations, final check"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


ROOMS = [
    {"id": "KW-VAULT", "branch": "Kingsway", "name": "The Vault", "capacity": 6, "min_age": 12, "reset_minutes": 20, "code": "VAULT"},
    {"id": "KW-TOMB", "branch": "Kingsway", "name": "Pharaoh's Tomb", "capacity": 8, "min_age": 8, "reset_minutes": 25, "code": "TOMB"},
    {"id": "KW-LAB7", "branch": "Kingsway", "name": "Lab 7", "capacity": 5, "min_age": 14, "reset_minutes": 15, "code": "LAB7"},
    {"id": "KW-TRAIN", "branch": "Kingsway", "name": "Night Train", "capacity": 6, "min_age": 10, "reset_minutes": 20, "code": "TRAIN"},
    {"id": "HB-LAB7", "branch": "Harbour", "name": "Lab 7", "capacity": 6, "min_age": 14, "reset_minutes": 15, "code": "LAB7"},
    {"id": "HB-SHIP", "branch": "Harbour", "name": "Sunken Ship", "capacity": 8, "min_age": 8, "reset_minutes": 30, "code": "SHIP"},
    {"id": "HB-VAULT", "branch": "Harbour", "name": "The Vault", "capacity": 6, "min_age": 12, "reset_minutes": 20, "code": "VAULT"},
]

HINT_PACKS = {f"{code}-{lang}-{lvl}" for code in ("VAULT", "TOMB", "LAB7", "TRAIN", "SHIP")
              for lang in ("EN", "DE", "ES", "PL") for lvl in ("EASY", "STD", "HARD")}


def _b(ref: str, room: str, slot: str, size: int, lang: str, youngest: int, lead: str, note: str = "") -> dict:
    return {"ref": ref, "room": room, "slot": slot, "group_size": size, "lang": lang, "youngest_age": youngest,
            "lead": lead, "note": note}


BOOKINGS: dict[tuple[str, str], list[dict]] = {
    ("Kingsway", "2025-06-13"): [
        _b("ESC-4461", "The Vault", "18:00", 5, "EN", 16, "Hannah Price", "work social"),
        _b("ESC-4462", "Pharaoh's Tomb", "18:15", 7, "EN", 9, "Colm Byrne", "kid's birthday"),
        _b("ESC-4464", "Night Train", "19:00", 4, "DE", 30, "Jana Vogel", "tourists"),
        _b("ESC-4466", "The Vault", "19:30", 6, "EN", 18, "Ola Nowak", "experienced: 40+ rooms"),
        _b("ESC-4467", "Lab 7", "20:00", 4, "PL", 21, "Piotr Zielinski"),
    ],
    ("Kingsway", "2025-06-14"): [
        _b("ESC-4471", "Pharaoh's Tomb", "17:45", 8, "EN", 11, "Rhea Shah", "family"),
        _b("ESC-4472", "The Vault", "18:00", 4, "ES", 25, "Diego Marin"),
        _b("ESC-4474", "Lab 7", "18:30", 5, "EN", 19, "Kofi Mensah", "experienced: 25 rooms"),
        _b("ESC-4475", "Night Train", "19:15", 6, "EN", 15, "Amy Frost", "hen party"),
        _b("ESC-4477", "The Vault", "19:30", 3, "DE", 40, "Uwe Brandt"),
        _b("ESC-4478", "Pharaoh's Tomb", "19:45", 6, "EN", 12, "Tilly Moore"),
    ],
    ("Harbour", "2025-06-13"): [
        _b("ESC-5101", "Sunken Ship", "18:00", 8, "EN", 10, "Ben Carter", "school leavers"),
        _b("ESC-5103", "Lab 7", "18:30", 5, "ES", 22, "Lucia Gomez"),
        _b("ESC-5104", "The Vault", "19:00", 6, "EN", 17, "Sam Reid", "experienced: 30 rooms"),
        _b("ESC-5106", "Sunken Ship", "19:45", 7, "PL", 13, "Ewa Kowal"),
    ],
    ("Kingsway", "2025-06-15"): [
        _b("ESC-4481", "Night Train", "16:00", 5, "EN", 11, "Mark Hale"),
        _b("ESC-4482", "Lab 7", "16:30", 4, "EN", 20, "Zoe Lin", "experienced: 50+ rooms"),
        _b("ESC-4484", "Pharaoh's Tomb", "17:00", 8, "DE", 9, "Lena Roth", "family"),
        _b("ESC-4486", "Lab 7", "18:00", 5, "ES", 27, "Pablo Ruiz"),
    ],
    ("Harbour", "2025-06-14"): [
        _b("ESC-5111", "The Vault", "17:30", 4, "EN", 14, "Nia Evans"),
        _b("ESC-5112", "Sunken Ship", "18:00", 8, "DE", 9, "Karl Weber", "kid's birthday"),
        _b("ESC-5114", "Lab 7", "18:45", 6, "EN", 24, "Omar Haddad", "experienced: 20 rooms"),
        _b("ESC-5116", "The Vault", "19:15", 5, "ES", 31, "Ines Sala"),
        _b("ESC-5117", "Sunken Ship", "20:00", 6, "EN", 16, "Ruth Cole"),
    ],
}

ROTA: dict[tuple[str, str], list[dict]] = {
    ("Kingsway", "2025-06-13"): [
        {"gm": "Priya Das", "trained": ["The Vault", "Lab 7", "Night Train"], "shift": "17:00-22:00"},
        {"gm": "Jonas Berg", "trained": ["Pharaoh's Tomb", "Night Train", "The Vault"], "shift": "17:00-22:00"},
        {"gm": "Mei Chen", "trained": ["Lab 7", "Pharaoh's Tomb", "The Vault"], "shift": "17:30-22:30"},
    ],
    ("Kingsway", "2025-06-14"): [
        {"gm": "Priya Das", "trained": ["The Vault", "Lab 7", "Night Train"], "shift": "16:30-22:00"},
        {"gm": "Jonas Berg", "trained": ["Pharaoh's Tomb", "Night Train", "The Vault"], "shift": "16:30-22:00"},
        {"gm": "Mei Chen", "trained": ["Lab 7", "Pharaoh's Tomb", "The Vault"], "shift": "17:00-22:30"},
        {"gm": "Arlo Grant", "trained": ["Night Train", "Pharaoh's Tomb"], "shift": "18:00-22:30"},
    ],
    ("Harbour", "2025-06-13"): [
        {"gm": "Tomasz Wilk", "trained": ["The Vault", "Sunken Ship"], "shift": "17:00-22:00"},
        {"gm": "Ruby Okoro", "trained": ["Lab 7", "Sunken Ship", "The Vault"], "shift": "17:00-22:00"},
        {"gm": "Dan Fox", "trained": ["Sunken Ship", "Lab 7"], "shift": "18:00-23:00"},
    ],
    ("Kingsway", "2025-06-15"): [
        {"gm": "Mei Chen", "trained": ["Lab 7", "Pharaoh's Tomb", "The Vault"], "shift": "15:00-20:00"},
        {"gm": "Arlo Grant", "trained": ["Night Train", "Pharaoh's Tomb"], "shift": "15:00-20:00"},
        {"gm": "Jonas Berg", "trained": ["Pharaoh's Tomb", "Night Train", "The Vault"], "shift": "15:00-20:00"},
        {"gm": "Priya Das", "trained": ["The Vault", "Lab 7", "Night Train"], "shift": "15:30-20:00"},
    ],
    ("Harbour", "2025-06-14"): [
        {"gm": "Tomasz Wilk", "trained": ["The Vault", "Sunken Ship"], "shift": "16:30-22:00"},
        {"gm": "Ruby Okoro", "trained": ["Lab 7", "Sunken Ship", "The Vault"], "shift": "16:30-22:00"},
        {"gm": "Dan Fox", "trained": ["Sunken Ship", "Lab 7"], "shift": "17:00-23:00"},
    ],
}

GM_NOTES = [
    {"id": "N-112", "branch": "Kingsway", "text": "Priya Das prefers The Vault on weekend evenings; she wrote half its puzzles."},
    {"id": "N-118", "branch": "Kingsway", "text": "Jonas Berg leads Pharaoh's Tomb for birthday and family groups."},
    {"id": "N-131", "branch": "Harbour", "text": "Tomasz Wilk runs The Vault for experienced groups; he keeps the hard hint script."},
    {"id": "N-140", "branch": "Harbour", "text": "Ruby Okoro covers Lab 7 for Spanish-speaking groups."},
    {"id": "N-152", "branch": "Kingsway", "text": "Mei Chen runs Lab 7 for experienced groups."},
]

CHECKLISTS = {
    "VAULT": ["relock safe (code 4-1-7-7)", "reset laser grid", "return gold bars to crate"],
    "TOMB": ["re-seal sarcophagus magnets", "reset hieroglyph dials", "refill sand timer"],
    "LAB7": ["re-rack test tubes", "reset UV panel", "re-arm keypad to 0000"],
    "TRAIN": ["reset carriage clock", "restock luggage props", "relock conductor's box"],
    "SHIP": ["drain porthole mist", "reset compass puzzle", "rehang captain's log"],
}

INPUTS: list[dict[str, Any]] = [
    {"request_id": "EV-0613-KW", "branch": "Kingsway", "date": "2025-06-13"},
    {"request_id": "EV-0614-KW", "branch": "Kingsway", "date": "2025-06-14"},
    {"request_id": "EV-0613-HB", "branch": "Harbour", "date": "2025-06-13"},
    {"request_id": "EV-0615-KW", "branch": "Kingsway", "date": "2025-06-15"},
    {"request_id": "EV-0614-HB", "branch": "Harbour", "date": "2025-06-14"},
]

_env: Env | None = None


def _mins(t: str) -> int:
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def _hhmm(m: int) -> str:
    return f"{m // 60:02d}:{m % 60:02d}"


def _chat(msgs: list, tools: list | None = None) -> dict:
    assert _env is not None
    kwargs: dict[str, Any] = {"model": _env.model, "messages": msgs, "temperature": 0}
    if tools:
        kwargs["tools"] = tools
    msg = openai_client(_env).chat.completions.create(**kwargs).choices[0].message
    return {"role": "assistant", "content": msg.content, "tool_calls": [
        {"id": c.id, "name": c.function.name, "args": json.loads(c.function.arguments)} for c in msg.tool_calls or ()]}


def _wire(answer: dict) -> dict:
    return {"role": "assistant", "content": answer["content"], "tool_calls": [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}
        for c in answer["tool_calls"]]}


# --- steps --------------------------------------------------------------------------------------------


@trajdebug.step(kind="input")
def receive_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="tool")
def list_bookings(branch: str, date: str, page_size: int = 20) -> dict:
    rows = BOOKINGS[(branch, date)]
    limit = min(page_size, 4 if _on("page_cap") else 50)
    page = [dict(r) for r in rows[:limit]]
    return {"branch": branch, "date": date, "bookings": page, "total": len(rows),
            "next_page": "2" if len(rows) > limit else None}


@trajdebug.step(kind="tool")
def lookup_room(name: str, branch: str) -> dict:
    return dict(next(r for r in ROOMS if r["name"] == name and r["branch"] == branch))


@trajdebug.step(kind="condition")
def check_group_fit(booking: dict, room: dict) -> dict:
    if booking["group_size"] > room["capacity"]:
        raise ValueError(f"{booking['ref']}: {booking['group_size']} players for {room['name']} (max {room['capacity']})")
    return {"ref": booking["ref"], "fits": True, "needs_adult": booking["youngest_age"] < room["min_age"]}


@trajdebug.step(kind="llm")
def choose_hint_packs(messages: list) -> str:
    return _chat(messages)["content"] or ""


@trajdebug.step(kind="parse")
def parse_hint_choices(text: str) -> dict:
    data = json.loads(text[text.index("{"): text.rindex("}") + 1])
    return {row["ref"]: str(row["pack"]).strip() for row in data["packs"]}


@trajdebug.step(kind="tool")
def load_hint_packs(packs: dict, rooms: dict) -> dict:
    loaded = {}
    for ref, pack in packs.items():
        if pack.upper() not in HINT_PACKS:
            raise LookupError(f"hint tablet {rooms[ref]}: no hint pack {pack!r} in the catalogue")
        loaded[ref] = {"tablet": rooms[ref], "pack": pack.upper()}
    return loaded


@trajdebug.step(kind="retrieval")
def recall_gm_notes(branch: str, query: str, k: int = 4) -> list:
    pool = GM_NOTES if _on("notes_scope") else [n for n in GM_NOTES if n["branch"] == branch]
    words = set(query.lower().split())
    scored = [(len(words & set(re.findall(r"[a-z0-9']+", n["text"].lower()))), n) for n in pool]
    return [dict(n, score=s) for s, n in sorted(scored, key=lambda p: -p[0])[:k]]


@trajdebug.step(kind="tool")
def gm_rota(branch: str, date: str) -> list:
    return [dict(r) for r in ROTA[(branch, date)]]


@trajdebug.step(kind="llm")
def assign_game_masters(messages: list, tools: list) -> dict:
    return _chat(messages, tools)


def _book_gm(args: dict, branch: str, date: str, booked: dict) -> dict:
    rota = {r["gm"]: r for r in ROTA[(branch, date)]}
    gm = args["gm"]
    if gm not in rota:
        raise LookupError(f"{gm} is not on the {branch} rota for {date}")
    if args["room"] not in rota[gm]["trained"]:
        raise PermissionError(f"{gm} is not signed off on {args['room']}")
    start = _mins(args["slot"])
    for other in booked.get(gm, []):
        if abs(_mins(other) - start) < 60:
            raise ValueError(f"{gm} already runs a game at {other}")
    booked.setdefault(gm, []).append(args["slot"])
    return {"gm": gm, "room": args["room"], "slot": args["slot"], "ref": args["ref"], "status": "booked"}


@trajdebug.step(kind="state")
def remember_evening(request: dict, bookings: list, gms: list, packs: dict) -> dict:
    evening = {"request_id": request["request_id"],
               "games": [{"ref": b["ref"], "room": b["room"], "slot": b["slot"],
                          "gm": next(g["gm"] for g in gms if g["ref"] == b["ref"]), "pack": packs[b["ref"]]["pack"]}
                         for b in bookings]}
    trajdebug.current_run().state["evening"] = evening
    return evening


@trajdebug.step(kind="retrieval")
def fetch_reset_checklist(room_id: str) -> dict:
    code = next(r["code"] for r in ROOMS if r["id"] == room_id)
    return {"room_id": room_id, "steps": list(CHECKLISTS[code]), "source": f"ops-wiki/resets/{code.lower()}"}


@trajdebug.step(kind="llm")
def plan_reset(messages: list, tools: list) -> dict:
    return _chat(messages, tools)


RESET_TOOLS = [{"type": "function", "function": {
    "name": "schedule_reset", "description": "Book the reset crew into a room before its first game.",
    "parameters": {"type": "object", "properties": {
        "room_id": {"type": "string"}, "start": {"type": "string", "description": "HH:MM"},
        "minutes": {"type": "integer"}}, "required": ["room_id", "start", "minutes"]}}}]

GM_TOOLS = [{"type": "function", "function": {
    "name": "book_gm", "description": "Book a game master for one game.",
    "parameters": {"type": "object", "properties": {
        "ref": {"type": "string"}, "gm": {"type": "string"}, "room": {"type": "string"}, "slot": {"type": "string"}},
        "required": ["ref", "gm", "room", "slot"]}}}]


@trajdebug.step(kind="agent")
def reset_crew(branch: str, rooms: list, first_games: dict) -> list:
    if _on("crew_rooms"):
        index = {r["name"]: r for r in ROOMS}
    else:
        index = {r["name"]: r for r in ROOMS if r["branch"] == branch}
    jobs = []
    for name in rooms:
        room = index[name]
        checklist = fetch_reset_checklist(room["id"])
        answer = plan_reset([
            {"role": "system", "content": "You schedule the reset crew. Book each room's reset so it ends at "
             "least 10 minutes before the room's first game, with schedule_reset."},
            {"role": "user", "content": f"Room: {room['id']} ({name})\nFirst game: {first_games[name]}\n"
             f"Reset takes: {room['reset_minutes']} min\nChecklist: {json.dumps(checklist['steps'])}"},
        ], RESET_TOOLS)
        for call in answer["tool_calls"]:
            with trajdebug.step("schedule_reset", kind="tool", input=call["args"]) as s:
                a = call["args"]
                s.output = {"room_id": a["room_id"], "start": a["start"],
                            "end": _hhmm(_mins(a["start"]) + int(a["minutes"])), "crew": "reset crew B", "status": "booked"}
            jobs.append(s.output)
    return jobs


@trajdebug.step(kind="tool")
def send_confirmation(booking: dict, gm: str) -> dict:
    return {"ref": booking["ref"], "to": booking["lead"], "channel": "sms",
            "text": f"See you at {booking['slot']} for {booking['room']}! Your game master: {gm}."}


@trajdebug.step(kind="condition")
def final_check(request: dict, listing: dict, games: list, resets: list, confirmations: list) -> dict:
    if len(games) != listing["total"]:
        have = {g["ref"] for g in games}
        missing = [b["ref"] for b in BOOKINGS[(request["branch"], request["date"])] if b["ref"] not in have]
        raise ValueError(f"{listing['total']} bookings on {request['date']} at {request['branch']}, "
                         f"{len(games)} prepared; no game master or reset for {', '.join(missing)}")
    ids = {r["name"]: r["id"] for r in ROOMS if r["branch"] == request["branch"]}
    by_room = {r["room_id"]: r for r in resets}
    for g in games:
        reset = by_room.get(ids[g["room"]])
        if reset is None:
            raise ValueError(f"{g['room']} ({ids[g['room']]}) has games tonight and no reset booked")
        if _mins(reset["start"]) <= _mins(g["slot"]) < _mins(reset["end"]) or \
                _mins(g["slot"]) <= _mins(reset["start"]) < _mins(g["slot"]) + 60:
            raise ValueError(f"reset of {g['room']} {reset['start']}-{reset['end']} overlaps game {g['ref']} at {g['slot']}")
    return {"request_id": request["request_id"], "games": len(games), "resets": len(resets),
            "confirmations": len(confirmations), "status": "ready"}


# --- the agent ----------------------------------------------------------------------------------------


def _agent(req: dict) -> dict:
    branch, date = req["branch"], req["date"]
    listing = list_bookings(branch, date, page_size=20)
    bookings = listing["bookings"]
    room_of: dict[str, str] = {}
    for b in bookings:
        room = lookup_room(b["room"], branch)
        check_group_fit(b, room)
        room_of[b["ref"]] = room["id"]
    hint_text = choose_hint_packs([
        {"role": "system", "content": "Pick a hint pack for each group. Packs are ROOMCODE-LANG-LEVEL "
         "(LEVEL: EASY for groups with children under 12, HARD for experienced groups, else STD). "
         "Answer JSON: {\"packs\": [{\"ref\": ..., \"pack\": ...}]}."},
        {"role": "user", "content": "Groups: " + json.dumps([
            {"ref": b["ref"], "room_code": room_of[b["ref"]].split("-")[1], "lang": b["lang"],
             "youngest_age": b["youngest_age"], "note": b["note"]} for b in bookings])},
    ])
    packs = load_hint_packs(parse_hint_choices(hint_text), room_of)
    notes = recall_gm_notes(branch, f"game master preferences rooms groups {branch}")
    rota = gm_rota(branch, date)
    convo: list[dict] = [
        {"role": "system", "content": "You book game masters for tonight's games with book_gm, one call per "
         "game; respect the notes, training and one game at a time per person. Then say done."},
        {"role": "user", "content": f"Games: {json.dumps(bookings)}\nRota: {json.dumps(rota)}\nNotes: {json.dumps(notes)}"},
    ]
    booked: dict[str, list] = {}
    gms: list[dict] = []
    for _ in range(3):
        answer = assign_game_masters(list(convo), GM_TOOLS)
        if not answer["tool_calls"]:
            break
        convo.append(_wire(answer))
        for call in answer["tool_calls"]:
            with trajdebug.step("book_gm", kind="tool", input=call["args"]) as s:
                s.output = _book_gm(call["args"], branch, date, booked)
            gms.append(s.output)
            convo.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(s.output)})
    evening = remember_evening(req, bookings, gms, packs)
    first: dict[str, str] = {}
    for g in sorted(evening["games"], key=lambda g: _mins(g["slot"])):
        first.setdefault(g["room"], g["slot"])
    resets = reset_crew(branch, list(first), first)
    with trajdebug.ContextThreadPoolExecutor(max_workers=3) as pool:
        confirmations = list(pool.map(lambda b: send_confirmation(b, next(g["gm"] for g in gms if g["ref"] == b["ref"])), bookings))
    return final_check(req, listing, evening["games"], resets, confirmations)


def run(inp: dict, out: Path, env: Env) -> None:
    global _env
    _env = env
    with trajdebug.run(NAME, task=f"evening prep {inp['branch']} {inp['date']}", path=str(out)):
        req = receive_request(inp)
        _agent(req)


# --- the model ----------------------------------------------------------------------------------------


def _level(g: dict) -> str:
    if g["youngest_age"] < 12:
        return "EASY"
    if "experienced" in g.get("note", ""):
        return "HARD"
    return "STD"


def brain(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    system = system_text(request)
    user = last_user(request)
    if system.startswith("Pick a hint pack"):
        groups = json.loads(between(user, "Groups: "))
        if _on("hint_labels"):
            names = {"VAULT": "The Vault", "TOMB": "Pharaoh's Tomb", "LAB7": "Lab 7", "TRAIN": "Night Train", "SHIP": "Sunken Ship"}
            langs = {"EN": "English", "DE": "German", "ES": "Spanish", "PL": "Polish"}
            packs = [{"ref": g["ref"], "pack": f"{names[g['room_code']]} ({langs[g['lang']]}, {_level(g).lower()})"} for g in groups]
        else:
            packs = [{"ref": g["ref"], "pack": f"{g['room_code']}-{g['lang']}-{_level(g)}"} for g in groups]
        return json.dumps({"packs": packs})
    if system.startswith("You book game masters"):
        if tool_results(request):
            return "Done: every game has a game master."
        games = json.loads(between(user, "Games: "))
        rota = json.loads(between(user, "Rota: "))
        notes = json.loads(between(user, "Notes: "))
        busy: dict[str, list[int]] = {}
        calls = []
        for g in sorted(games, key=lambda g: _mins(g["slot"])):
            start = _mins(g["slot"])

            def free(name: str) -> bool:
                return all(abs(s - start) >= 60 for s in busy.get(name, []))

            pick = None
            for n in notes:
                who = " ".join(n["text"].split()[:2])
                if g["room"] in n["text"] and free(who):
                    experienced = "experienced" in n["text"]
                    if experienced and "experienced" not in g["note"]:
                        continue
                    pick = who
                    break
            if pick is None:
                pick = next(r["gm"] for r in rota if g["room"] in r["trained"] and free(r["gm"]))
            busy.setdefault(pick, []).append(start)
            calls.append(tool_call("book_gm", {"ref": g["ref"], "gm": pick, "room": g["room"], "slot": g["slot"]}))
        return Reply(tool_calls=tuple(calls))
    if system.startswith("You schedule the reset crew"):
        if tool_results(request):
            return "Reset booked."
        room_id = between(user, "Room: ", " ")
        first = _mins(between(user, "First game: "))
        minutes = int(between(user, "Reset takes: ", " "))
        start = first if _on("reset_start") and room_id.endswith("SHIP") else first - minutes - 10
        return Reply(tool_calls=(tool_call("schedule_reset", {"room_id": room_id, "start": _hhmm(start), "minutes": minutes}),))
    return "Sorry, I can't help with that."
