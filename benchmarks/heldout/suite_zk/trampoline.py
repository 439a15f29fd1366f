"""Trampoline park party booker (recording SDK): request -> waivers -> slot -> safety sub-agent -> price -> book."""

from __future__ import annotations

import json
from pathlib import Path

import trajdebug
from openai import OpenAI

from .common import Case
from .kit import active

AGENT, ROUTE, DOMAIN = "bounce-party-booker", "sdk", "trampoline park"
SHAPE = "extract+parse, waiver loop (7-13 calls), slot pick by LLM, safety sub-agent, pricing, booking"

INPUTS = {
    "sat_party": "Birthday party for Maya on Sat 14 June, 9 jumpers (3 under six), 90 minutes, member M-4471",
    "school_trip": "Year 4 trip from Hill Lane School on Tue 17 June, 12 jumpers (0 under six), 60 minutes, member M-0902",
    "teen_night": "Teen night group on Fri 13 June, 7 jumpers (0 under six), 60 minutes, member M-1188",
    "toddler_am": "Toddler morning for Ivy on Wed 18 June, 6 jumpers (4 under six), 60 minutes, member M-3310",
    "club_training": "Gym club practice on Thu 19 June, 10 jumpers (1 under six), 90 minutes, member M-5025",
    "cousins": "Cousins meet-up on Sun 15 June, 8 jumpers (2 under six), 60 minutes, member M-2207",
}
REFS = ["teen_night", "toddler_am", "club_training", "cousins"]

CASES = [
    Case("zk_tramp_1", "lossy_parsing", ("parse_booking", 1), ("submit_booking", 1), "sat_party",
         "parse_booking reads the under-six count as 0, so no toddler zone is reserved and the booking API rejects it."),
    Case("zk_tramp_2", "unit_error", ("price_party", 1), ("submit_booking", 1), "school_trip",
         "price_party multiplies the per-hour rate by minutes, so the deposit is far above the card pre-authorisation."),
    Case("zk_tramp_3", "off_by_one", ("plan_waiver_checks", 1), ("submit_booking", 1), "sat_party",
         "plan_waiver_checks starts at the second jumper, so jumper J-01's missing waiver is never caught."),
    Case("zk_tramp_4", "stale_data", ("fetch_slots", 1), ("submit_booking", 1), "school_trip",
         "fetch_slots serves the morning cache of court availability, and the slot it offers is already held."),
    Case("zk_tramp_5", "hallucinated_value", ("compose_confirmation", 1), ("submit_booking", 1), "sat_party",
         "compose_confirmation names a party room the venue does not have, which the booking API refuses."),
]

ROOMS = ["Rocket Room", "Comet Room", "Orbit Lounge"]


def _parse_request(text: str) -> dict:
    import re

    m = re.search(r"(\d+) jumpers \((\d+) under six\), (\d+) minutes, member (M-\d+)", text)
    day = re.search(r"on (\w+ \d+ \w+)", text).group(1)
    return {"day": day, "jumpers": int(m.group(1)), "under_six": int(m.group(2)), "minutes": int(m.group(3)),
            "member": m.group(4)}


def policy(req) -> str:
    msgs = req.body["messages"]
    prompt = msgs[-1]["content"]
    if prompt.startswith("Extract"):
        f = _parse_request(prompt)
        return json.dumps({"date": f["day"], "party_size": f["jumpers"], "kids_under_6": f["under_six"],
                           "duration": f"{f['minutes']} min", "member_id": f["member"]})
    if prompt.startswith("Pick a slot"):
        slots = json.loads(prompt.split("\n", 1)[1])
        free = [s for s in slots if s["free_places"] >= 0]
        best = max(free, key=lambda s: (s["free_places"], s["time"]))
        return f"SLOT {best['time']} court {best['court']}"
    if prompt.startswith("Write the confirmation"):
        room = json.loads(prompt.split("\n", 1)[1])["room"]
        if active("zk_tramp_5"):
            room = "Galaxy Room"
        return json.dumps({"room": room, "message": f"Your party is booked in the {room}. Grip socks required."})
    return "OK"


class Park:
    def __init__(self, inp: str) -> None:
        self.inp = inp
        f = _parse_request(INPUTS[inp])
        self.f = f
        self.ages = [4 + (i * 5) % 9 if i < f["under_six"] else 7 + i for i in range(f["jumpers"])]
        for i in range(f["under_six"]):
            self.ages[i] = 3 + i % 3
        self.unsigned = {"J-01"} if inp == "sat_party" else set()


def record(server, inp: str, out: Path) -> None:
    park = Park(inp)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)

    def chat(name: str, prompt: str) -> str:
        with trajdebug.step(name, kind="llm", input=[{"role": "user", "content": prompt}]) as s:
            r = client.chat.completions.create(model=server.model, messages=[{"role": "user", "content": prompt}])
            s.usage(model=r.model, prompt_tokens=r.usage.prompt_tokens, completion_tokens=r.usage.completion_tokens)
            s.output = {"role": "assistant", "content": r.choices[0].message.content}
        return r.choices[0].message.content

    @trajdebug.step(kind="parse")
    def parse_booking(text: str) -> dict:
        raw = json.loads(text)
        kids = raw["kids_under_6"]
        if active("zk_tramp_1"):
            kids = int(str(raw.get("under_six", 0)))
        return {"date": raw["date"], "size": raw["party_size"], "under_six": kids,
                "minutes": int(raw["duration"].split()[0]), "member": raw["member_id"]}

    @trajdebug.step(kind="tool")
    def load_member(member: str) -> dict:
        return {"member": member, "tier": "gold" if member.endswith(("71", "02")) else "standard",
                "jumpers": [f"J-{i + 1:02d}" for i in range(park.f["jumpers"])]}

    @trajdebug.step(kind="state")
    def remember_group(booking: dict, member: dict) -> None:
        trajdebug.current_run().state["group"] = {"size": booking["size"], "under_six": booking["under_six"],
                                                  "tier": member["tier"], "jumpers": member["jumpers"]}

    @trajdebug.step(kind="other")
    def plan_waiver_checks(jumpers: list) -> list:
        start = 1 if active("zk_tramp_3") else 0
        return list(jumpers[start:])

    @trajdebug.step(kind="tool")
    def check_waiver(jumper: str) -> dict:
        idx = int(jumper[2:]) - 1
        return {"jumper": jumper, "age": park.ages[idx], "signed": jumper not in park.unsigned}

    @trajdebug.step(kind="tool")
    def request_guardian_signature(jumper: str) -> dict:
        park.unsigned.discard(jumper)
        return {"jumper": jumper, "signed": True, "via": "sms link"}

    @trajdebug.step(kind="tool")
    def fetch_slots(day: str, minutes: int) -> list:
        courts = [{"time": "10:00", "court": "A", "free_places": 14}, {"time": "14:30", "court": "B", "free_places": 16},
                  {"time": "16:00", "court": "A", "free_places": 12}]
        if not active("zk_tramp_4"):
            courts[1]["free_places"] = 0 if park.inp == "school_trip" else 16
        return courts

    @trajdebug.step(kind="parse")
    def parse_slot(answer: str) -> dict:
        _, time, _, court = answer.split()
        return {"time": time, "court": court}

    @trajdebug.step(kind="other")
    def count_by_zone(ages: list) -> dict:
        return {"toddler": sum(a < 6 for a in ages), "main": sum(a >= 6 for a in ages)}

    @trajdebug.step(kind="tool")
    def zone_capacity(court: str, time: str) -> dict:
        return {"court": court, "time": time, "toddler": 6, "main": 16}

    @trajdebug.step(kind="condition")
    def staff_ratio(zones: dict, cap: dict) -> dict:
        return {"marshals": 1 + (zones["main"] // 8) + (1 if zones["toddler"] else 0), "ok": zones["main"] <= cap["main"]}

    @trajdebug.step(kind="other")
    def price_party(group: dict, minutes: int) -> dict:
        rate_per_hour = 14.0
        per_jumper = rate_per_hour * minutes if active("zk_tramp_2") else rate_per_hour * minutes / 60
        total = round(per_jumper * group["size"] * (0.9 if group["tier"] == "gold" else 1.0), 2)
        return {"total": total, "deposit": round(total * 0.3, 2)}

    @trajdebug.step(kind="tool")
    def reserve_room(day: str) -> dict:
        return {"room": ROOMS[len(day) % 3], "day": day}

    @trajdebug.step(kind="tool")
    def submit_booking(payload: dict) -> dict:
        if payload["room"] not in ROOMS:
            raise RuntimeError(f"HTTP 400 Bad Request: {{\"error\": \"unknown_room\", \"detail\": \"room '{payload['room']}' is not bookable at this site\"}}")
        if payload["deposit"] > 1000:
            raise RuntimeError(f"HTTP 402 Payment Required: deposit {payload['deposit']:.2f} exceeds card pre-authorisation limit 1000.00")
        missing = [c["jumper"] for c in payload["waivers"] if not c["signed"]]
        listed = {c["jumper"] for c in payload["waivers"]}
        absent = [j for j in payload["jumpers"] if j not in listed] + missing
        if absent:
            raise RuntimeError(f"HTTP 409 Conflict: jumper {absent[0]} has no signed waiver on file")
        if park.inp == "school_trip" and (payload["time"], payload["court"]) == ("14:30", "B"):
            raise RuntimeError("HTTP 409 Conflict: slot 14:30 court B is held by booking BK-88120")
        true_kids = sum(a < 6 for a in park.ages)
        if payload["toddler_zone_places"] != true_kids:
            raise RuntimeError(f"HTTP 422 Unprocessable Entity: toddler zone places {payload['toddler_zone_places']} "
                               f"do not match {true_kids} signed waivers for jumpers under six")
        return {"booking": "BK-" + str(90000 + len(payload["jumpers"])), "status": "confirmed"}

    with trajdebug.run(AGENT, path=str(out), task=INPUTS[inp]) as run:
        run.state["group"] = None
        with trajdebug.step("read_request", kind="input") as s:
            s.output = INPUTS[inp]
        text = chat("extract_booking", "Extract the booking as JSON: " + INPUTS[inp])
        booking = parse_booking(text)
        member = load_member(booking["member"])
        remember_group(booking, member)
        checks = []
        for j in plan_waiver_checks(member["jumpers"]):
            c = check_waiver(j)
            if not c["signed"]:
                c = request_guardian_signature(j)
                c["age"] = park.ages[int(j[2:]) - 1]
            checks.append(c)
        slots = fetch_slots(booking["date"], booking["minutes"])
        slot = parse_slot(chat("pick_slot", "Pick a slot with room for the group\n" + json.dumps(slots)))
        with trajdebug.step("safety_officer", kind="agent", input=slot):
            zones = count_by_zone([c["age"] for c in checks])
            cap = zone_capacity(slot["court"], slot["time"])
            ratio = staff_ratio(zones, cap)
        with trajdebug.step("read_group", kind="other") as s:
            s.output = group = dict(run.state["group"])
        price = price_party(group, booking["minutes"])
        room = reserve_room(booking["date"])
        conf = json.loads(chat("compose_confirmation", "Write the confirmation\n" + json.dumps(room)))
        payload = {"member": booking["member"], "date": booking["date"], **slot, "room": conf["room"],
                   "deposit": price["deposit"], "marshals": ratio["marshals"], "jumpers": member["jumpers"],
                   "waivers": checks, "toddler_zone_places": group["under_six"]}
        submit_booking(payload)
