"""Sign language interpreting bookings desk (otlp route: OpenTelemetry SDK + OpenInference attributes)."""

from __future__ import annotations

import json
from pathlib import Path

import kit
from harness import CheckFailed, Otlp, chat_policy
from openai import OpenAI


NAME = "interpreting-bookings"
ROUTE = "otlp"
DOMAIN = "sign language interpreting bookings"
SHAPE = ("OTel spans: inbox tool -> LLM extraction (instrumented openai client) + parse -> routing guardrail -> "
         "interpreter retrieval -> certification tool per candidate -> LLM staffing plan + parse -> calendar tool "
         "per team member (replacing busy ones) -> travel sub-agent (geocode x2, travel time, LLM note) -> rate "
         "card -> invoice -> validator -> LLM confirmation")

INTERPRETERS = [
    {"id": "I-01", "name": "Dana Whitfield", "languages": ["ASL"], "pools": ["general", "medical"],
     "certs": ["NIC", "CHI"], "base": "Midtown"},
    {"id": "I-02", "name": "Marcus Lee", "languages": ["ASL"], "pools": ["general", "legal"],
     "certs": ["NIC", "SC:L"], "base": "Eastside"},
    {"id": "I-03", "name": "Rosa Delgado", "languages": ["ASL", "LSM"], "pools": ["general"],
     "certs": ["NIC"], "base": "Southgate"},
    {"id": "I-04", "name": "Hannah Ostrowski", "languages": ["ASL"], "pools": ["legal", "medical"],
     "certs": ["NIC", "SC:L", "CHI"], "base": "Midtown"},
    {"id": "I-05", "name": "Theo Grant", "languages": ["ASL"], "pools": ["general", "medical"],
     "certs": ["NIC", "CHI"], "base": "Northfield"},
    {"id": "I-06", "name": "Amara Eze", "languages": ["ASL"], "pools": ["legal", "general"],
     "certs": ["NIC", "SC:L"], "base": "Eastside"},
    {"id": "I-07", "name": "Luis Romero", "languages": ["LSM", "ASL"], "pools": ["general", "medical"],
     "certs": ["NIC", "CHI"], "base": "Southgate"},
]
REQUIRED_CERT = {"legal": "SC:L", "medical": "CHI", "general": "NIC"}
CALENDAR = {("I-01", "2027-04-12"): ("10:00", "14:00"), ("I-02", "2027-05-03"): ("13:00", "17:00"),
            ("I-07", "2027-04-20"): ("08:30", "11:00")}
PLACES = {"Midtown": (0.0, 0.0), "Eastside": (6.0, 1.0), "Southgate": (-1.0, -7.0), "Northfield": (2.0, 9.0),
          "County Courthouse": (5.0, 2.0), "St. Luke's Hospital": (1.0, 8.0), "Convention Center": (-2.0, -4.0),
          "Harbor Law Offices": (7.0, -1.0), "Riverside Clinic": (-3.0, 5.0), "City Library": (0.5, 1.5)}
RATES = {"general": 65.0, "medical": 80.0, "legal": 95.0}
TRAVEL_RATE_HR = 40.0
TRAVEL_CAP = 120.0

INPUTS = [
    {"client": "Harbor Law Offices", "purpose": "deposition of a Deaf witness", "language": "ASL",
     "date": "2027-05-03", "start": "14:30", "hours": 3.0, "venue": "Harbor Law Offices"},
    {"client": "St. Luke's Hospital", "purpose": "oncology consultation", "language": "ASL", "date": "2027-04-12",
     "start": "10:00", "hours": 1.5, "venue": "St. Luke's Hospital"},
    {"client": "Tech Forward Expo", "purpose": "keynote and panel at the expo", "language": "ASL",
     "date": "2027-04-20", "start": "09:00", "hours": 4.0, "venue": "Convention Center"},
    {"client": "County Courthouse", "purpose": "court hearing, family division", "language": "ASL",
     "date": "2027-05-10", "start": "13:15", "hours": 2.5, "venue": "County Courthouse"},
    {"client": "Riverside Clinic", "purpose": "physiotherapy intake appointment", "language": "LSM",
     "date": "2027-04-27", "start": "09:30", "hours": 1.0, "venue": "Riverside Clinic"},
    {"client": "City Library", "purpose": "storytime for Deaf families", "language": "ASL", "date": "2027-04-12",
     "start": "10:30", "hours": 3.0, "venue": "City Library"},
    {"client": "Harbor Law Offices", "purpose": "attorney meeting with a Deaf client", "language": "ASL",
     "date": "2027-06-01", "start": "11:00", "hours": 1.5, "venue": "Harbor Law Offices"},
]

CASES = [
    {"id": "zzl_interpreting_1", "input": 0, "kind": "wrong_routing", "root": ("route_request", 1),
     "failure": ("validate_booking", 1),
     "description": "The router's legal keyword list lacks 'deposition', so a legal deposition is sent to the "
                    "general interpreter pool."},
    {"id": "zzl_interpreting_2", "input": 3, "kind": "format_drift", "root": ("ChatCompletion", 1),
     "failure": ("validate_booking", 1),
     "description": "The extraction model gives the start time in 12-hour form ('1:15 PM'), and the parser "
                    "reads it as 01:15."},
    {"id": "zzl_interpreting_3", "input": 2, "kind": "plan_error", "root": ("ChatCompletion", 2),
     "failure": ("validate_booking", 1),
     "description": "The staffing model plans a single interpreter for a four-hour keynote that needs a team "
                    "of two."},
    {"id": "zzl_interpreting_4", "input": 5, "kind": "swallowed_error", "root": ("check_calendar", 1),
     "failure": ("validate_booking", 1),
     "description": "The calendar check for Dana Whitfield times out and the tool reports her free instead of "
                    "raising, so she is booked over another assignment."},
    {"id": "zzl_interpreting_5", "input": 6, "kind": "unit_error", "root": ("travel_time", 1),
     "failure": ("validate_booking", 1),
     "description": "The travel-time tool returns the routing API's seconds under its minutes key, so the travel "
                    "charge is sixty times too high."},
]


def _brain(inp: dict):
    def answer(system: str, user: str, messages: list[dict]):
        if system.startswith("Extract"):
            start = inp["start"]
            if kit.on("zzl_interpreting_2"):
                h, m = map(int, start.split(":"))
                start = f"{h - 12 if h > 12 else h}:{m:02d} {'PM' if h >= 12 else 'AM'}"
            return json.dumps({"client": inp["client"], "purpose": inp["purpose"], "language": inp["language"],
                               "date": inp["date"], "start": start, "hours": inp["hours"], "venue": inp["venue"]})
        if system.startswith("Plan the team"):
            data = json.loads(user)
            size = 2 if data["hours"] > 2 else 1
            if kit.on("zzl_interpreting_3"):
                size = 1
            team = [c["id"] for c in data["candidates"]][:size]
            return "Staffing plan:\n" + json.dumps({"team": team, "bench": [c["id"] for c in data["candidates"]][size:]})
        if system.startswith("Write a travel note"):
            return "Leave 20 minutes early; parking is behind the building."
        if system.startswith("Write the confirmation"):
            return "Your interpreters are confirmed. Thank you for booking with us."
        return "OK"

    return chat_policy(answer)


def _policy_cert(purpose: str) -> str:
    p = purpose.lower()
    if any(w in p for w in ("court", "attorney", "deposition", "hearing")):
        return "SC:L"
    if any(w in p for w in ("hospital", "consultation", "clinic", "physio", "oncology")):
        return "CHI"
    return "NIC"


def _busy(iid: str, date: str, start: str, hours: float) -> bool:
    slot = CALENDAR.get((iid, date))
    if not slot:
        return False
    h, m = map(int, start.split(":"))
    end_min = h * 60 + m + int(hours * 60)
    end = f"{end_min // 60:02d}:{end_min % 60:02d}"
    return start < slot[1] and slot[0] < end


def record(server, inp: dict, path: Path, otlp: Otlp) -> None:
    server.use(_brain(inp))
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    sp = otlp.span

    def chat(system: str, user: str) -> str:
        r = client.chat.completions.create(model="fake-model", messages=[{"role": "system", "content": system},
                                                                         {"role": "user", "content": user}])
        return r.choices[0].message.content

    def body():
        text = (f"Booking request from {inp['client']}: {inp['language']} interpreting for {inp['purpose']} on "
                f"{inp['date']} at {inp['start']} for {inp['hours']} hours, at {inp['venue']}.")
        with sp(NAME, "AGENT", text, **{"agent.name": NAME}) as root:
            with sp("load_request", "TOOL", {"inbox": "bookings"}) as s:
                s.out({"request": text})
            extracted = chat("Extract the booking request as JSON.", text)
            with sp("parse_request", "CHAIN", extracted) as s:
                req = json.loads(extracted)
                t = req["start"].split()[0]
                h, m = t.split(":")
                req["start"] = f"{int(h):02d}:{m}"
                s.out(req)
            with sp("route_request", "GUARDRAIL", {"purpose": req["purpose"]}) as s:
                legal = ("court", "attorney") if kit.on("zzl_interpreting_1") else ("court", "attorney", "deposition")
                medical = ("hospital", "consultation", "clinic", "physio", "oncology")
                p = req["purpose"].lower()
                pool = "legal" if any(w in p for w in legal) else "medical" if any(w in p for w in medical) \
                    else "general"
                s.out({"pool": pool})
            with sp("search_interpreters", "RETRIEVER", {"pool": pool, "language": req["language"]}) as s:
                cands = [dict(i) for i in INTERPRETERS if pool in i["pools"] and req["language"] in i["languages"]]
                s.out({"candidates": [c["id"] for c in cands]})
            checked = []
            for c in cands:
                with sp("check_certification", "TOOL", {"interpreter": c["id"], "pool": pool}) as s:
                    ok = REQUIRED_CERT[pool] in c["certs"]
                    s.out({"interpreter": c["id"], "certs": c["certs"], "qualified": ok})
                if ok:
                    checked.append({"id": c["id"], "name": c["name"], "base": c["base"]})
            plan_text = chat("Plan the team of interpreters for the assignment, as JSON.",
                             json.dumps({"hours": req["hours"], "pool": pool, "candidates": checked}))
            with sp("parse_staffing", "CHAIN", plan_text) as s:
                plan = json.loads(plan_text[plan_text.index("{"):])
                s.out(plan)
            team, bench = [], list(plan["bench"])
            queue = list(plan["team"])
            while queue:
                iid = queue.pop(0)
                with sp("check_calendar", "TOOL", {"interpreter": iid, "date": req["date"], "start": req["start"],
                                                   "hours": req["hours"]}) as s:
                    try:
                        if kit.on("zzl_interpreting_4") and iid == "I-01":
                            raise TimeoutError("calendar service did not answer in 5s")
                        free = not _busy(iid, req["date"], req["start"], req["hours"])
                    except TimeoutError:
                        free = True
                    s.out({"interpreter": iid, "free": free})
                if free:
                    team.append(iid)
                elif bench:
                    queue.append(bench.pop(0))
            lead = next(i for i in INTERPRETERS if i["id"] == team[0])
            with sp("travel_planner", "AGENT", {"from": lead["base"], "to": req["venue"]},
                    **{"agent.name": "travel_planner"}) as tp:
                with sp("geocode", "TOOL", {"place": lead["base"]}) as s:
                    a = s.out({"place": lead["base"], "xy": list(PLACES[lead["base"]])})
                with sp("geocode", "TOOL", {"place": req["venue"]}) as s:
                    b = s.out({"place": req["venue"], "xy": list(PLACES[req["venue"]])})
                with sp("travel_time", "TOOL", {"from": a["xy"], "to": b["xy"]}) as s:
                    km = abs(a["xy"][0] - b["xy"][0]) + abs(a["xy"][1] - b["xy"][1])
                    seconds = int(km * 150)
                    minutes = seconds if kit.on("zzl_interpreting_5") else round(seconds / 60)
                    travel = s.out({"minutes": minutes, "km": km})
                note = chat("Write a travel note for the interpreter.", json.dumps(travel))
                tp.out({"travel": travel, "note": note})
            with sp("rate_card", "TOOL", {"pool": pool}) as s:
                rate = s.out({"pool": pool, "hourly": RATES[pool]})
            with sp("compute_invoice", "CHAIN", {"team": team, "hours": req["hours"], "rate": rate,
                                                  "travel": travel}) as s:
                inv = s.out({"team": team, "hours": req["hours"], "date": req["date"], "start": req["start"],
                             "interpreting": round(len(team) * req["hours"] * rate["hourly"], 2),
                             "travel": round(travel["minutes"] / 60 * TRAVEL_RATE_HR * len(team), 2)})
            with sp("validate_booking", "EVALUATOR", inv) as s:
                if inv["start"] != inp["start"]:
                    raise CheckFailed(f"booking starts at {inv['start']}, the client asked for {inp['start']}")
                need = _policy_cert(inp["purpose"])
                for iid in inv["team"]:
                    it = next(i for i in INTERPRETERS if i["id"] == iid)
                    if need not in it["certs"]:
                        raise CheckFailed(f"{it['name']} ({iid}) holds no {need} certification, required for "
                                          f"'{inp['purpose']}'")
                    if _busy(iid, inv["date"], inv["start"], inv["hours"]):
                        raise CheckFailed(f"{it['name']} ({iid}) is already booked on {inv['date']} "
                                          f"{CALENDAR[(iid, inv['date'])][0]}-{CALENDAR[(iid, inv['date'])][1]}")
                if inv["hours"] > 2 and len(inv["team"]) < 2:
                    raise CheckFailed(f"{inv['hours']} h assignment staffed by {len(inv['team'])} interpreter")
                if inv["travel"] > TRAVEL_CAP * len(inv["team"]):
                    raise CheckFailed(f"travel charge {inv['travel']:.2f} exceeds cap {TRAVEL_CAP:.2f} per interpreter")
                s.out({"valid": True})
            confirm = chat("Write the confirmation e-mail to the client.", json.dumps(inv))
            root.out({"invoice": inv, "confirmation": confirm})

    otlp.record(body, path)
