"""A bell-ringing society's peal bookings (route: sdk, recorded with trajdebug's own recorder)."""

from __future__ import annotations

import json

import trajdebug
from openai import OpenAI

import kit
from common import chat_policy, task_prompt

NAME = "peal-bookings"
ROUTE = "sdk"
DOMAIN = "bell-ringing society: peal bookings"
SHAPE = "extract request, tower + calendar lookups, composition plan, per-ringer lookup/seat loop, duration, notice, validator"

TOWERS = {
    "St Mary, Ely": {"tower": "St Mary, Ely", "bells": 8, "tenor_cwt": 17.5, "evensong": "18:00"},
    "St Mary, Eye": {"tower": "St Mary, Eye", "bells": 6, "tenor_cwt": 12.0, "evensong": "17:30"},
    "All Saints, Leek": {"tower": "All Saints, Leek", "bells": 8, "tenor_cwt": 21.25, "evensong": "18:30"},
    "St Giles, Ashby": {"tower": "St Giles, Ashby", "bells": 8, "tenor_cwt": 14.0, "evensong": "18:00"},
    "St Peter, Wem": {"tower": "St Peter, Wem", "bells": 6, "tenor_cwt": 9.5, "evensong": "17:00"},
    "Holy Trinity, Hull": {"tower": "Holy Trinity, Hull", "bells": 8, "tenor_cwt": 24.0, "evensong": "18:30"},
}
RINGERS = {n: {"name": n, "member_until": 2026, "peals": 40 + 7 * i} for i, n in enumerate(
    ["A. Catt", "B. Hale", "C. Dunn", "D. Ives", "E. Pryce", "F. Orme", "G. Lusk", "H. Venn", "J. Quill"])}
METHODS = {6: "Cambridge Surprise Minor", 8: "Yorkshire Surprise Major"}

INPUTS = [
    {"tower": "St Mary, Ely", "date": "2026-05-09", "start": "10:00", "band": ["A. Catt", "B. Hale", "C. Dunn", "D. Ives", "E. Pryce", "F. Orme", "G. Lusk", "H. Venn"]},
    {"tower": "All Saints, Leek", "date": "2026-06-13", "start": "13:30", "band": ["J. Quill", "B. Hale", "C. Dunn", "D. Ives", "E. Pryce", "F. Orme", "G. Lusk", "H. Venn"]},
    {"tower": "St Peter, Wem", "date": "2026-07-04", "start": "13:00", "band": ["A. Catt", "B. Hale", "C. Dunn", "D. Ives", "E. Pryce", "F. Orme"]},
    {"tower": "Holy Trinity, Hull", "date": "2026-08-22", "start": "10:30", "band": ["A. Catt", "J. Quill", "C. Dunn", "D. Ives", "E. Pryce", "F. Orme", "G. Lusk", "H. Venn"]},
    {"tower": "St Giles, Ashby", "date": "2026-09-19", "start": "13:00", "band": ["A. Catt", "B. Hale", "J. Quill", "D. Ives", "E. Pryce", "F. Orme", "G. Lusk", "H. Venn"]},
    {"tower": "St Mary, Eye", "date": "2026-10-10", "start": "10:00", "band": ["J. Quill", "B. Hale", "C. Dunn", "D. Ives", "E. Pryce", "F. Orme"]},
]

C = "zzr_peal_"
CASES = [
    {"id": C + "01", "input": 0, "fault_kind": "wrong_retrieval", "root": ("lookup_tower", 1), "failure": ("validate_booking", 1),
     "description": "The tower lookup matches on the dedication only and returns St Mary, Eye (6 bells) for St Mary, Ely, so an 8-ringer band is booked on a 6-bell tower."},
    {"id": C + "02", "input": 1, "fault_kind": "stale_data", "root": ("lookup_ringer", 7), "failure": ("validate_booking", 1),
     "description": "The ringer lookup serves G. Lusk's record from last season's cache, whose guild membership ended in 2025."},
    {"id": C + "03", "input": 3, "fault_kind": "off_by_one", "root": ("seat_band", 1), "failure": ("validate_booking", 1),
     "description": "Seating the band stops one ringer short (range end excluded twice), so the tenor is left without a ringer."},
    {"id": C + "04", "input": 4, "fault_kind": "bad_memory_write", "root": ("remember_booking", 1), "failure": ("validate_booking", 1),
     "description": "The booking memo stores the tower's default afternoon slot 15:30 instead of the requested 13:00 start, so the peal overruns evensong."},
    {"id": C + "05", "input": 2, "fault_kind": "plan_error", "root": ("plan_composition", 1), "failure": ("validate_booking", 1),
     "description": "The composition planner plans a quarter peal of 1260 changes for a peal booking, short of the 5000 a peal needs."},
]


def brain(inp):
    def extract(p):
        return {"tower": inp["tower"], "date": inp["date"], "start": inp["start"], "band_size": len(inp["band"])}

    def plan(p):
        stage = p["bells"]
        changes = 5040 if stage == 6 else 5056
        if kit.on(C + "05"):
            changes = 1260
        return {"method": METHODS[stage], "changes": changes, "steps": ["confirm tower", "seat band", "ring", "publish"]}

    def notice(p):
        return f"Peal notice: {p['method']} ({p['changes']} changes) at {p['tower']} on {p['date']} from {p['start']}."

    return chat_policy({"extract_booking": extract, "plan_composition": plan, "compose_notice": notice})


def _ask(client, model, name, task, payload):
    messages = [{"role": "system", "content": "You are the peal secretary's assistant. Answer in JSON when asked for data."},
                {"role": "user", "content": task_prompt(task, payload)}]
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        reply = client.chat.completions.create(model=model, messages=messages)
        text = reply.choices[0].message.content
        s.usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens if reply.usage else 0,
                completion_tokens=reply.usage.completion_tokens if reply.usage else 0)
        s.output = {"role": "assistant", "content": text}
    return s.output


@trajdebug.step(kind="input")
def read_request(request: dict) -> str:
    band = ", ".join(request["band"])
    return f"Please book a peal at {request['tower']} on {request['date']} starting {request['start']}. Band: {band}."


@trajdebug.step(kind="parse")
def parse_booking(message: dict) -> dict:
    return json.loads(message["content"])


_calls: dict = {}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def lookup_tower(name: str) -> dict:
    _calls[name] = _calls.get(name, 0) + 1
    if name == "Holy Trinity, Hull" and _calls[name] % 2 == 1:
        raise ConnectionError("tower directory did not answer")
    if kit.on(C + "01"):
        dedication = name.split(",")[0]
        for key in sorted(TOWERS, reverse=True):
            if key.startswith(dedication):
                return dict(TOWERS[key])
    return dict(TOWERS[name])


@trajdebug.step(kind="tool")
def check_calendar(tower: dict, date: str) -> dict:
    return {"tower": tower["tower"], "date": date, "services": [{"name": "evensong", "at": tower["evensong"]}], "free": True}


@trajdebug.step(kind="state")
def remember_booking(booking: dict, tower: dict) -> dict:
    start = booking["start"]
    if kit.on(C + "04"):
        start = "15:30"
    memo = {"tower": tower["tower"], "bells": tower["bells"], "tenor_cwt": tower["tenor_cwt"], "date": booking["date"], "start": start}
    trajdebug.current_run().state["booking"] = memo
    return memo


@trajdebug.step(kind="parse")
def parse_plan(message: dict) -> dict:
    return json.loads(message["content"])


@trajdebug.step(kind="other")
def seat_band(band: list, bells: int) -> list:
    n = min(len(band), bells)
    stop = n - 1 if kit.on(C + "03") else n
    return [{"ringer": band[i], "bell": i + 1} for i in range(stop)]


@trajdebug.step(kind="tool")
def lookup_ringer(name: str) -> dict:
    rec = dict(RINGERS[name])
    if kit.on(C + "02") and name == "G. Lusk":
        rec = {"name": name, "member_until": 2025, "peals": rec["peals"] - 6}
    return rec


@trajdebug.step(kind="other")
def confirm_seat(seat: dict, ringer: dict) -> dict:
    return {"bell": seat["bell"], "ringer": ringer["name"], "member_until": ringer["member_until"], "peals": ringer["peals"]}


@trajdebug.step(kind="other")
def estimate_duration(changes: int, tenor_cwt: float) -> dict:
    per_change_s = 1.9 + tenor_cwt / 100.0
    minutes = round(changes * per_change_s / 60)
    return {"minutes": minutes}


@trajdebug.step(kind="other")
def end_time(start: str, minutes: int) -> str:
    h, m = map(int, start.split(":"))
    t = h * 60 + m + minutes
    return f"{t // 60:02d}:{t % 60:02d}"


@trajdebug.step(kind="condition")
def validate_booking(request: dict, memo: dict, plan: dict, seats: list, finish: str, services: dict) -> str:
    if memo["tower"] != request["tower"]:
        raise ValueError(f"booking is for {memo['tower']} but the request names {request['tower']}")
    if len(request["band"]) != memo["bells"]:
        raise ValueError(f"band of {len(request['band'])} ringers for a tower of {memo['bells']} bells")
    if plan["changes"] < 5000:
        raise ValueError(f"composition of {plan['changes']} changes is below the 5000 a peal needs")
    bells = sorted(s["bell"] for s in seats)
    if bells != list(range(1, memo["bells"] + 1)):
        missing = sorted(set(range(1, memo["bells"] + 1)) - set(bells))
        raise ValueError(f"bells {missing} have no ringer")
    year = int(memo["date"][:4])
    for s in seats:
        if s["member_until"] < year:
            raise ValueError(f"{s['ringer']} is not a guild member in {year} (membership ended {s['member_until']})")
    evensong = services["services"][0]["at"]
    if finish > evensong:
        raise ValueError(f"peal would end at {finish}, after evensong at {evensong}")
    return "ok"


def record(server, inp, path):
    _calls.clear()
    server.use(brain(inp))
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with trajdebug.run(NAME, task=f"book a peal at {inp['tower']} on {inp['date']}", path=path) as run:
            text = read_request(inp)
            msg = _ask(client, server.model, "extract_booking", "extract_booking", {"request": text})
            booking = parse_booking(msg)
            tower = lookup_tower(booking["tower"])
            with trajdebug.step("seat_ringers", kind="agent", input={"band": inp["band"]}) as sub:
                seats = seat_band(inp["band"], tower["bells"])
                confirmed = []
                for seat in seats:
                    ringer = lookup_ringer(seat["ringer"])
                    confirmed.append(confirm_seat(seat, ringer))
                sub.output = confirmed
            services = check_calendar(tower, booking["date"])
            memo = remember_booking(booking, tower)
            plan_msg = _ask(client, server.model, "plan_composition", "plan_composition",
                            {"bells": tower["bells"], "band": len(inp["band"])})
            plan = parse_plan(plan_msg)
            with trajdebug.step("timing", kind="state"):
                booked = run.state["booking"]
            dur = estimate_duration(plan["changes"], booked["tenor_cwt"])
            finish = end_time(booked["start"], dur["minutes"])
            _ask(client, server.model, "compose_notice", "compose_notice",
                 {"method": plan["method"], "changes": plan["changes"], "tower": booked["tower"], "date": booked["date"], "start": booked["start"]})
            validate_booking(inp, booked, plan, confirmed, finish, services)
    except ValueError:
        pass
