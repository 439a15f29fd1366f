"""Paragliding school bookings, recorded with the trajdebug SDK."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trajdebug
from openai import OpenAI

from .common import Case
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "glide-school-desk", "sdk", "paragliding school bookings", "jsonl"
SHAPE = "extract -> parse -> site rules -> forecast (retry) -> 8 slot checks -> window -> instructor sub-agent -> wings -> book"

INPUTS = {
    "ridge_intro": "Book the intro course at Ridge West on 2026-05-14 for Ana Ruiz 62 kg, Tom Berg 88 kg, Luc Ferrand 104 kg.",
    "dune_tandem": "Book tandem flights at Dune Crest on 2026-06-02 for Mia Holt 55 kg, Raj Pillai 97 kg.",
    "ridge_pair": "Book the intro course at Ridge West on 2026-05-21 for Eva Lind 70 kg, Omar Said 81 kg.",
    "valley_solo": "Book tandem flights at Valley Floor on 2026-07-09 for Ines Costa 66 kg.",
    "dune_trio": "Book tandem flights at Dune Crest on 2026-06-11 for Kai Wong 58 kg, Lea Brun 73 kg, Sam Ode 90 kg.",
    "valley_pair": "Book the intro course at Valley Floor on 2026-07-16 for Nils Aho 77 kg, Zoe Park 64 kg.",
}
REFS = ["ridge_pair", "valley_solo", "dune_trio", "valley_pair"]

SITES = {
    "Ridge West": {"max_gust_kt": 18, "open": 9, "close": 17},
    "Dune Crest": {"max_gust_kt": 20, "open": 10, "close": 18},
    "Valley Floor": {"max_gust_kt": 15, "open": 8, "close": 16},
}
DURATION_H = {"intro": 3, "tandem": 2}
ROSTER = {
    "Ridge West": [{"id": "INS-12", "name": "Pia Moser", "max_kg": 95}, {"id": "INS-14", "name": "Rolf Gantz", "max_kg": 110}],
    "Dune Crest": [{"id": "INS-21", "name": "Yara Selim", "max_kg": 90}, {"id": "INS-23", "name": "Jon Ekberg", "max_kg": 115}],
    "Valley Floor": [{"id": "INS-31", "name": "Ada Vance", "max_kg": 100}, {"id": "INS-33", "name": "Bo Lund", "max_kg": 105}],
}
GUSTS_KMH = {
    ("Ridge West", "2026-05-14"): [20, 26, 40, 44, 30, 28, 26, 22],
    ("Dune Crest", "2026-06-02"): [18, 22, 30, 34, 41, 45, 24, 20],
    ("Ridge West", "2026-05-21"): [15, 18, 22, 24, 28, 35, 38, 30],
    ("Valley Floor", "2026-07-09"): [12, 14, 20, 30, 33, 25, 18, 16],
    ("Dune Crest", "2026-06-11"): [20, 24, 28, 30, 33, 36, 40, 42],
    ("Valley Floor", "2026-07-16"): [10, 12, 16, 22, 26, 30, 33, 35],
}
DEPOSITS = {"ridge_intro": 3, "dune_tandem": 2, "ridge_pair": 2, "valley_solo": 1, "dune_trio": 3, "valley_pair": 2}

CASES = [
    Case("zf_pg_1", "unit_error", "ridge_intro", "normalize_wind", 1, "book_slots", 1,
         "normalize_wind divides the km/h gusts by 3.6 instead of 1.852, so the window includes an 11:00 slot over the site limit."),
    Case("zf_pg_2", "lossy_parsing", "ridge_intro", "parse_request", 1, "book_slots", 1,
         "parse_request only matches two-digit weights and drops the 104 kg student, so the party no longer matches the deposit."),
    Case("zf_pg_3", "hallucinated_value", "dune_tandem", "choose_instructor", 2, "book_slots", 1,
         "the model picks an instructor id that is not on the Dune Crest roster for the second passenger."),
    Case("zf_pg_4", "bad_memory_write", "ridge_intro", "assign_instructor", 3, "book_slots", 1,
         "assign_instructor files the third assignment under the previous student's name, leaving Luc Ferrand without an instructor."),
    Case("zf_pg_5", "off_by_one", "dune_tandem", "build_booking_payload", 1, "book_slots", 1,
         "build_booking_payload treats the window end as inclusive and books one hour more than the tandem slot."),
]


class BookingRejected(RuntimeError):
    pass


def policy(request: Any) -> str:
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Extract"):
        m = re.match(r"Book (?:the )?(intro course|tandem flights) at (.+?) on (\d{4}-\d\d-\d\d) for (.+)\.$", user)
        course = "intro" if m.group(1).startswith("intro") else "tandem"
        return json.dumps({"course": course, "site": m.group(2), "date": m.group(3), "people": m.group(4)})
    if system.startswith("Choose"):
        ask = json.loads(user)
        if active("zf_pg_3") and ask["position"] == 2:
            return json.dumps({"instructor": "INS-27", "reason": "experienced with heavier passengers"})
        load = ask["load"]
        for ins in ask["roster"]:
            if ins["max_kg"] >= ask["weight_kg"] and load.get(ins["id"], 0) < 2:
                return json.dumps({"instructor": ins["id"], "reason": f"rated to {ins['max_kg']} kg"})
        return json.dumps({"instructor": ask["roster"][-1]["id"], "reason": "last available"})
    return "Your flights are confirmed. Please arrive 30 minutes early with closed shoes."


def record(server: Any, key: str, path: Path) -> None:
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    calls = {"forecast": 0}

    def chat(system: str, user: str) -> str:
        r = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": system}, {"role": "user", "content": user}])
        return r.choices[0].message.content

    @trajdebug.step(kind="input")
    def intake(text: str) -> dict:
        return {"request": text, "channel": "web-form"}

    @trajdebug.step(kind="llm")
    def extract_request(req: dict) -> str:
        return chat("Extract course, site, date and people as JSON.", req["request"])

    @trajdebug.step(kind="parse")
    def parse_request(text: str) -> dict:
        data = json.loads(text)
        pattern = r"([A-Z]\w+ [A-Z]\w+) (\d{2}) kg" if active("zf_pg_2") else r"([A-Z]\w+ [A-Z]\w+) (\d{2,3}) kg"
        students = [{"name": n, "weight_kg": int(w)} for n, w in re.findall(pattern + r"(?:,|$)", data["people"])]
        return {"course": data["course"], "site": data["site"], "date": data["date"], "students": students}

    @trajdebug.step(kind="retrieval")
    def lookup_site_rules(site: str) -> dict:
        return {"site": site, **SITES[site], "doc": f"site-rules/{site.lower().replace(' ', '-')}.md"}

    @trajdebug.step(kind="tool")
    def fetch_deposit(booking_ref: str) -> dict:
        return {"ref": booking_ref, "paid_places": DEPOSITS[key], "currency": "EUR"}

    @trajdebug.retry(attempts=3, on=(ConnectionError,))
    @trajdebug.step(kind="tool")
    def fetch_forecast(site: str, date: str) -> dict:
        calls["forecast"] += 1
        if calls["forecast"] == 1:
            raise ConnectionError("forecast gateway timed out after 5 s")
        hours = list(range(SITES[site]["open"], SITES[site]["open"] + 8))
        return {"site": site, "date": date, "unit": "km/h", "hours": hours, "gust": GUSTS_KMH[(site, date)]}

    @trajdebug.step(kind="parse")
    def normalize_wind(forecast: dict) -> dict:
        factor = 3.6 if active("zf_pg_1") else 1.852
        return {"hours": forecast["hours"], "gust_kt": [round(g / factor, 1) for g in forecast["gust"]]}

    @trajdebug.step(kind="condition")
    def assess_slot(hour: int, gust_kt: float, limit: float) -> dict:
        return {"hour": hour, "flyable": gust_kt <= limit, "gust_kt": gust_kt}

    @trajdebug.step(kind="condition")
    def pick_window(slots: list, hours_needed: int) -> dict:
        for i in range(len(slots) - hours_needed + 1):
            if all(s["flyable"] for s in slots[i:i + hours_needed]):
                return {"start": slots[i]["hour"], "end": slots[i + hours_needed - 1]["hour"]}
        raise BookingRejected("no flyable window that day")

    @trajdebug.step(kind="tool")
    def list_instructors(site: str, date: str) -> list:
        return [dict(i) for i in ROSTER[site]]

    @trajdebug.step(kind="llm")
    def choose_instructor(ask: dict) -> str:
        return chat("Choose an instructor for this student; answer JSON.", json.dumps(ask))

    @trajdebug.step(kind="state")
    def assign_instructor(student: str, answer: str, previous: str | None) -> dict:
        choice = json.loads(answer)["instructor"]
        who = previous if (active("zf_pg_4") and previous is not None and student == "Luc Ferrand") else student
        trajdebug.current_run().state.setdefault("assignments", {})[who] = choice
        return {"student": who, "instructor": choice}

    @trajdebug.step(kind="agent")
    def instructor_matcher(site: str, date: str, students: list) -> dict:
        roster = list_instructors(site, date)
        load: dict[str, int] = {}
        previous = None
        for pos, st in enumerate(students, 1):
            ans = choose_instructor({"position": pos, "student": st["name"], "weight_kg": st["weight_kg"],
                                     "roster": roster, "load": dict(load)})
            rec = assign_instructor(st["name"], ans, previous)
            load[rec["instructor"]] = load.get(rec["instructor"], 0) + 1
            previous = st["name"]
        return dict(trajdebug.current_run().state["assignments"])

    @trajdebug.step(kind="tool")
    def check_wing_sizes(students: list) -> list:
        return [{"name": s["name"], "wing": "S" if s["weight_kg"] < 70 else "M" if s["weight_kg"] < 95 else "L"}
                for s in students]

    @trajdebug.step(kind="other")
    def build_booking_payload(req: dict, window: dict, assignments: dict, wings: list, deposit: dict) -> dict:
        end = window["end"] + (2 if active("zf_pg_5") else 1)
        return {"site": req["site"], "date": req["date"], "course": req["course"], "from_hour": window["start"],
                "to_hour": end, "deposit": deposit["ref"],
                "party": [{"name": w["name"], "wing": w["wing"], "instructor": assignments.get(w["name"])} for w in wings]}

    @trajdebug.step(kind="tool")
    def book_slots(payload: dict) -> dict:
        site = SITES[payload["site"]]
        gust = GUSTS_KMH[(payload["site"], payload["date"])]
        booked = payload["to_hour"] - payload["from_hour"]
        if booked != DURATION_H[payload["course"]]:
            raise BookingRejected(f"HTTP 422 {{\"error\": \"{payload['course']} slot is {DURATION_H[payload['course']]} h, "
                                  f"request books {booked} h ({payload['from_hour']}:00-{payload['to_hour']}:00)\"}}")
        for h in range(payload["from_hour"], payload["to_hour"]):
            kt = gust[h - site["open"]] / 1.852
            if kt > site["max_gust_kt"]:
                raise BookingRejected(f"HTTP 422 {{\"error\": \"slot {h}:00 forecast gust {kt:.0f} kt exceeds the "
                                      f"{site['max_gust_kt']} kt limit at {payload['site']}\"}}")
        if len(payload["party"]) != DEPOSITS[key]:
            raise BookingRejected(f"HTTP 409 {{\"error\": \"party of {len(payload['party'])} does not match "
                                  f"{DEPOSITS[key]} paid places on deposit {payload['deposit']}\"}}")
        ids = {i["id"]: i for i in ROSTER[payload["site"]]}
        for p in payload["party"]:
            if p["instructor"] is None:
                raise BookingRejected(f"HTTP 422 {{\"error\": \"student {p['name']} has no instructor assigned\"}}")
            if p["instructor"] not in ids:
                raise BookingRejected(f"HTTP 404 {{\"error\": \"instructor {p['instructor']} is not on the roster "
                                      f"for {payload['site']}\"}}")
        return {"booking": f"GLD-{payload['date'].replace('-', '')}-{payload['from_hour']}", "status": "confirmed"}

    @trajdebug.step(kind="llm")
    def draft_confirmation(booking: dict) -> str:
        return chat("Write a short confirmation for the students.", json.dumps(booking))

    try:
        with trajdebug.run(AGENT, path=str(path), task=INPUTS[key]) as run:
            req = intake(INPUTS[key])
            parsed = parse_request(extract_request(req))
            rules = lookup_site_rules(parsed["site"])
            deposit = fetch_deposit(f"DP-{key.upper()}")
            wind = normalize_wind(fetch_forecast(parsed["site"], parsed["date"]))
            slots = [assess_slot(h, g, rules["max_gust_kt"]) for h, g in zip(wind["hours"], wind["gust_kt"])]
            window = pick_window(slots, DURATION_H[parsed["course"]])
            run.state["window"] = window
            assignments = instructor_matcher(parsed["site"], parsed["date"], parsed["students"])
            wings = check_wing_sizes(parsed["students"])
            payload = build_booking_payload(parsed, window, assignments, wings, deposit)
            booking = book_slots(payload)
            draft_confirmation(booking)
    except BookingRejected:
        pass
