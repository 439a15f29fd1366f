"""Surf school lesson booking, recorded with the trajdebug SDK."""

from __future__ import annotations

import json
from pathlib import Path

import trajdebug
from openai import OpenAI

from .kit import active

AGENT = "surf-lessons"
ROUTE = "sdk"
DOMAIN = "surf school lessons"
SHAPE = "forecast per spot (retry) -> parse -> pick spot (LLM) -> tide -> per-student lookup + level (LLM) -> roster state -> boards -> instructor sub-agent -> price -> book"
EXT = "jsonl"

SPOTS = {
    "north-reef": "swell 3.9 ft @ 9s, wind 6 kn offshore",
    "harbour-beach": "swell 2.6 ft @ 7s, wind 9 kn cross-shore",
    "point-break": "swell 6.2 ft @ 12s, wind 4 kn offshore",
    "sand-bay": "swell 3.0 ft @ 8s, wind 11 kn onshore",
}
STUDENTS = {
    "S-11": {"name": "Mara Quint", "weight_kg": 58, "level": "beginner", "waiver": "W-5101"},
    "S-12": {"name": "Olu Bakare", "weight_kg": 94, "level": "beginner", "waiver": "W-5513"},
    "S-13": {"name": "Pia Lund", "weight_kg": 71, "level": "beginner", "waiver": "W-5520"},
    "S-14": {"name": "Tom Ferry", "weight_kg": 82, "level": "beginner", "waiver": "W-5532"},
    "S-15": {"name": "Ines Soto", "weight_kg": 49, "level": "beginner", "waiver": "W-5540"},
    "S-16": {"name": "Kai Moana", "weight_kg": 66, "level": "beginner", "waiver": "W-5544"},
}
INSTRUCTORS = [
    {"id": "I-3", "name": "Rui", "spots": ["north-reef", "harbour-beach"], "max_group": 6},
    {"id": "I-5", "name": "Jess", "spots": ["harbour-beach", "sand-bay"], "max_group": 4},
    {"id": "I-8", "name": "Noa", "spots": ["point-break", "sand-bay"], "max_group": 5},
]
INPUTS = {
    "a": {"booking": "SL-2041", "date": "2026-07-11", "spots": ["north-reef", "harbour-beach", "point-break"],
          "students": ["S-11", "S-12", "S-13", "S-14"]},
    "b": {"booking": "SL-2077", "date": "2026-07-12", "spots": ["sand-bay", "harbour-beach"],
          "students": ["S-12", "S-15", "S-16"]},
    "r1": {"booking": "SL-1990", "date": "2026-06-30", "spots": ["harbour-beach", "sand-bay"],
           "students": ["S-13", "S-15"]},
    "r2": {"booking": "SL-2003", "date": "2026-07-02", "spots": ["north-reef", "sand-bay", "harbour-beach"],
           "students": ["S-11", "S-14", "S-16"]},
    "r3": {"booking": "SL-2010", "date": "2026-07-04", "spots": ["point-break", "harbour-beach"],
           "students": ["S-12", "S-13"]},
    "r4": {"booking": "SL-2022", "date": "2026-07-06", "spots": ["sand-bay", "north-reef"],
           "students": ["S-11", "S-15", "S-16", "S-13"]},
}
REFS = ["r1", "r2", "r3", "r4"]


def policy(request):
    msgs = request.body["messages"]
    task = msgs[0]["content"].split(":", 1)[0]
    data = json.loads(msgs[-1]["content"])
    if task == "PICK_SPOT":
        ok = [f for f in data["forecasts"] if f["wave_m"] <= 1.2 and f["wind_dir"] != "onshore"]
        ok = ok or data["forecasts"]
        best = min(ok, key=lambda f: (f["wave_m"], f["wind_kn"]))
        return json.dumps({"spot": best["spot"], "reason": f"smallest clean swell ({best['wave_m']} m)"})
    if task == "ASSESS":
        st = data["student"]
        board = 9.0 if st["weight_kg"] >= 80 else 8.0
        waiver = st["waiver"]
        if st["id"] == "S-12" and active("surf-5"):
            waiver = "W-5531"
        return json.dumps({"id": st["id"], "level": st["level"], "board_ft": board, "waiver": waiver})
    if task == "RANK":
        cands = [i for i in data["instructors"] if i["max_group"] >= data["group"]]
        return json.dumps({"instructor": cands[0]["id"] if cands else data["instructors"][0]["id"]})
    return "{}"


class _Api:
    """The lesson back office: forecast, tides, students, instructors, bookings."""

    def __init__(self) -> None:
        self.forecast_calls = 0

    def forecast(self, spot: str, date: str) -> str:
        self.forecast_calls += 1
        if self.forecast_calls == 1:
            raise ConnectionError("forecast feed reset the connection")
        return SPOTS[spot]

    def tide(self, spot: str, date: str) -> dict:
        day = int(date[-2:])
        return {"spot": spot, "windows": [f"{7 + day % 3:02d}:00-{9 + day % 3:02d}:00", "15:00-17:00"]}


def record(server, inp: dict, out: Path) -> None:
    client = OpenAI(base_url=server.base_url, api_key="local", max_retries=0)
    api = _Api()

    def chat(name: str, system: str, payload: dict) -> dict:
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}]
        with trajdebug.step(name, kind="llm", input={"messages": msgs}) as s:
            reply = client.chat.completions.create(model=server.model, messages=msgs)
            text = reply.choices[0].message.content
            s.output = {"role": "assistant", "content": text}
        return json.loads(text)

    @trajdebug.retry(attempts=2, on=(ConnectionError,))
    @trajdebug.step(kind="tool")
    def fetch_forecast(spot: str, date: str) -> dict:
        return {"spot": spot, "date": date, "text": api.forecast(spot, date)}

    @trajdebug.step(kind="parse")
    def parse_forecast(raw: dict) -> dict:
        swell, wind = raw["text"].split(", ")
        feet = float(swell.split()[1])
        wave_m = feet if active("surf-1") else round(feet * 0.3048, 2)
        period = int(swell.split("@ ")[1].rstrip("s"))
        return {"spot": raw["spot"], "wave_m": wave_m, "period_s": period,
                "wind_kn": int(wind.split()[1]), "wind_dir": wind.split()[3]}

    @trajdebug.step(kind="tool")
    def fetch_tide(spot: str, date: str) -> dict:
        try:
            if active("surf-4"):
                raise TimeoutError("tide station did not answer")
            return api.tide(spot, date)
        except TimeoutError:
            return {"spot": spot, "windows": []}

    @trajdebug.step(kind="other")
    def plan_slot(tide: dict) -> dict:
        return {"spot": tide["spot"], "slot": tide["windows"][0] if tide["windows"] else None}

    @trajdebug.step(kind="tool")
    def lookup_student(student_id: str) -> dict:
        return {"id": student_id, **STUDENTS[student_id]}

    @trajdebug.step(kind="state")
    def save_roster(assessed: list) -> list:
        roster = []
        for a in assessed:
            board = assessed[0]["board_ft"] if active("surf-2") else a["board_ft"]
            roster.append({"id": a["id"], "board_ft": board, "waiver": a["waiver"]})
        trajdebug.current_run().state["roster"] = roster
        return roster

    @trajdebug.step(kind="other")
    def allocate_boards(inventory: dict) -> dict:
        roster = trajdebug.current_run().state["roster"]
        start = 1 if active("surf-3") else 0
        alloc = {}
        for i in range(start, len(roster)):
            size = roster[i]["board_ft"]
            alloc[roster[i]["id"]] = f"{inventory[size].pop(0)} ({size} ft)"
        return alloc

    @trajdebug.step(kind="tool")
    def list_instructors(spot: str) -> list:
        return [i for i in INSTRUCTORS if spot in i["spots"]]

    @trajdebug.step(kind="agent")
    def match_instructor(spot: str, group: int) -> dict:
        cands = list_instructors(spot)
        return chat("rank_instructors", "RANK: choose an instructor who can take the whole group",
                    {"spot": spot, "group": group, "instructors": cands})

    @trajdebug.step(kind="other")
    def price_lesson(group: int, slot: dict) -> dict:
        per_head = 45.0 if slot["slot"] and slot["slot"].startswith("0") else 52.0
        return {"per_head_eur": per_head, "total_eur": per_head * group}

    @trajdebug.step(kind="tool")
    def book_lesson(request: dict) -> dict:
        if not request["slot"]:
            raise RuntimeError("HTTP 422 from bookings API: {\"field\": \"slot.start\", \"error\": \"required\"}")
        if request["wave_m"] > 1.5:
            raise RuntimeError(f"booking rejected: wave height {request['wave_m']} m at {request['spot']} "
                               "exceeds beginner limit 1.5 m")
        for sid in request["students"]:
            rec = STUDENTS[sid]
            entry = next(r for r in request["roster"] if r["id"] == sid)
            if entry["waiver"] != rec["waiver"]:
                raise RuntimeError(f"booking rejected: waiver {entry['waiver']} not on file for student {sid}")
            if sid not in request["boards"]:
                raise RuntimeError(f"booking rejected: student {sid} has no board assigned")
            need = 9.0 if rec["weight_kg"] >= 80 else 8.0
            if entry["board_ft"] < need:
                raise RuntimeError(f"booking rejected: {entry['board_ft']} ft board for {sid} "
                                   f"({rec['weight_kg']} kg) under the {need} ft minimum")
        return {"booking": request["booking"], "status": "confirmed"}

    with trajdebug.run(AGENT, path=str(out), task=f"book surf lesson {inp['booking']}") as run:
        with trajdebug.step("read_request", kind="input") as s:
            s.output = dict(inp)
        forecasts = [parse_forecast(fetch_forecast(spot, inp["date"])) for spot in inp["spots"]]
        pick = chat("pick_spot", "PICK_SPOT: choose the safest spot for a beginner group",
                    {"date": inp["date"], "forecasts": forecasts})
        chosen = next(f for f in forecasts if f["spot"] == pick["spot"])
        slot = plan_slot(fetch_tide(pick["spot"], inp["date"]))
        assessed = []
        for sid in inp["students"]:
            st = lookup_student(sid)
            assessed.append(chat("assess_level", "ASSESS: pick board size and confirm the waiver", {"student": st}))
        roster = save_roster(assessed)
        boards = allocate_boards({8.0: ["B8-1", "B8-2", "B8-3", "B8-4"], 9.0: ["B9-1", "B9-2", "B9-3"]})
        coach = match_instructor(pick["spot"], len(roster))
        price = price_lesson(len(roster), slot)
        book_lesson({"booking": inp["booking"], "spot": pick["spot"], "wave_m": chosen["wave_m"], "slot": slot["slot"],
                     "students": inp["students"], "roster": roster, "boards": boards,
                     "instructor": coach["instructor"], "price": price})
        run.state["status"] = "booked"


CASES_SPEC = [
    ("surf-1", "unit_error", "a", "parse_forecast", '"spot": "harbour-beach"', "book_lesson",
     "The forecast parser keeps the swell in feet but labels it metres, so the spot picked carries a wave height the booking API rejects."),
    ("surf-2", "bad_memory_write", "a", "save_roster", "board_ft", "book_lesson",
     "The roster write gives every student the first student's board size, so a heavier student ends up under the board minimum."),
    ("surf-3", "off_by_one", "b", "allocate_boards", "B", "book_lesson",
     "The board allocation loop starts at index 1 and skips the first student on the roster."),
    ("surf-4", "swallowed_error", "b", "fetch_tide", '"windows": []', "book_lesson",
     "The tide lookup times out and the tool hides it behind an empty window list, so no lesson slot is planned."),
    ("surf-5", "hallucinated_value", "a", "assess_level", "W-5531", "book_lesson",
     "The level assessment answers a waiver number for S-12 that is not in the student record it was given."),
]
