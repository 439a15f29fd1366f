"""Sign-language interpreter agency: a booking request becomes a team, a rota, a quote and confirmations (sdk)."""

from __future__ import annotations

import trajdebug
from trajdebug.testing import deterministic

from .. import kit


AGENT = "interpreter-bookings"
ROUTE = "sdk"
EXT = "jsonl"

REQUESTS = {
    "q1": "BSL interpretation + deafblind manual for Riverside Council public meeting, 2026-05-19 18:00-21:00, venue Corn Exchange Hall, client RC-8841",
    "q2": "BSL interpretation for Harbour Trust AGM, 2026-05-14 10:00-11:30, venue Pilot House, client HT-2210",
    "q3": "BSL interpretation for Meadowbank School parents evening, 2026-05-19 16:00-19:00, venue Meadowbank School, client MS-5102",
    "q4": "BSL interpretation + lipspeaking for Northgate Clinic patient forum, 2026-05-20 13:00-14:00, venue Northgate Clinic, client NC-7719",
    "q5": "BSL interpretation for Kiln Street Theatre captioned talk, 2026-05-22 19:00-21:00, venue Kiln Street Theatre, client KS-3306",
    "q6": "BSL interpretation for Eastfield job fair, 2026-05-23 09:00-12:00, venue Eastfield Hub, client EF-4420",
    "q7": "BSL interpretation + deafblind manual for Orchard Lane church service, 2026-05-24 10:00-11:00, venue Orchard Lane Chapel, client OL-1187",
    "q8": "BSL interpretation for Quayside Museum tour, 2026-05-26 14:00-15:30, venue Quayside Museum, client QM-6023",
    "q9": "BSL interpretation for Tenants Union assembly, 2026-05-28 18:30-21:30, venue Brook Street Hall, client TU-9954",
}
INTERPRETERS = [
    {"id": "INT-2291", "name": "Corinne Baptiste", "skills": ["BSL", "deafblind manual"], "off": ["2026-05-19"]},
    {"id": "INT-2304", "name": "Dev Ramaswamy", "skills": ["BSL"], "off": ["2026-05-28"]},
    {"id": "INT-2317", "name": "Aoife Brennan", "skills": ["BSL", "lipspeaking"], "off": []},
    {"id": "INT-2342", "name": "Marcus Lindqvist", "skills": ["BSL", "deafblind manual"], "off": ["2026-05-26"]},
    {"id": "INT-2356", "name": "Yetunde Afolabi", "skills": ["BSL"], "off": ["2026-05-12"]},
    {"id": "INT-2378", "name": "Hollis Grant", "skills": ["BSL", "lipspeaking"], "off": ["2026-05-22"]},
]
RATES_2026 = {"hourly": 52.0, "travel": 18.0}

FAULTS = [
    {"id": "in-a", "kind": "lossy_parsing", "order": "q1", "root": "parse_request", "marker": "\"skills\": [\"BSL\"]"},
    {"id": "in-b", "kind": "plan_error", "order": "q9", "root": "plan_team", "marker": "team_size=1;"},
    {"id": "in-c", "kind": "bad_memory_write", "order": "q3", "root": "remember_assignment", "marker": "INT-2291"},
    {"id": "in-d", "kind": "off_by_one", "order": "q6", "root": "build_rota", "marker": "\"rota_end\": \"11:40\""},
    {"id": "in-e", "kind": "stale_data", "order": "q5", "root": "get_rates", "marker": "2025-04-01"},
]
REFS = ["q2", "q4", "q7", "q8"]


class BookingRefused(RuntimeError):
    pass


BookingRefused.__module__ = "agency_api"


def _min(hhmm: str) -> int:
    return int(hhmm[:2]) * 60 + int(hhmm[3:])


def _hhmm(m: int) -> str:
    return f"{m // 60:02d}:{m % 60:02d}"


@trajdebug.step(kind="input")
def receive_request(text: str) -> dict:
    return {"role": "user", "content": text}


@trajdebug.step(kind="parse")
def parse_request(msg: dict) -> dict:
    text = msg["content"]
    head = text.split(" for ")[0]
    skills = [s.strip().replace(" interpretation", "") for s in head.split("+")]
    if kit.active("in-a"):
        skills = skills[:1]
    when = text.split(", ")[1]
    date, span = when.split(" ")
    start, end = span.split("-")
    return {"event": text.split(" for ")[1].split(",")[0], "skills": skills, "date": date, "start": start, "end": end,
            "venue": text.split("venue ")[1].split(",")[0], "client": text.split("client ")[1]}


@trajdebug.step(kind="tool")
def lookup_client(client: str, raw: str) -> dict:
    needs = [s.strip().replace(" interpretation", "") for s in raw.split(" for ")[0].split("+")]
    return {"client": client, "po_required": True, "attendee_needs": needs, "billing": "accounts@" + client.lower() + ".example"}


@trajdebug.step(kind="llm")
def plan_team(req: dict) -> dict:
    hours = (_min(req["end"]) - _min(req["start"])) / 60
    size = 2 if hours > 2 else 1
    if kit.active("in-b"):
        size = 1
    swap = "20-min swaps" if size > 1 else "none"
    return {"role": "assistant", "content": f"team_size={size}; swap={swap}; skills={'+'.join(req['skills'])}; brief=venue walk-through 30 min before"}


@trajdebug.step(kind="tool")
def search_interpreters(skill: str) -> list:
    return [dict(i) for i in INTERPRETERS if skill in i["skills"]]


@trajdebug.step(kind="tool")
def check_availability(interpreter_id: str, date: str) -> dict:
    i = next(x for x in INTERPRETERS if x["id"] == interpreter_id)
    return {"id": interpreter_id, "date": date, "available": date not in i["off"]}


@trajdebug.step(kind="condition")
def select_team(plan: dict, req: dict, candidates: list, avail: list) -> list:
    size = int(plan["content"].split("team_size=")[1].split(";")[0])
    ok = {a["id"] for a in avail if a["available"]}
    team: list = []
    for skill in reversed(req["skills"]):
        for c in candidates:
            if c["id"] in ok and skill in c["skills"] and c["id"] not in team:
                team.append(c["id"])
                break
    for c in candidates:
        if len(team) >= size:
            break
        if c["id"] in ok and c["id"] not in team:
            team.append(c["id"])
    return team


@trajdebug.step(kind="state")
def remember_assignment(team: list, candidates: list) -> dict:
    stored = list(team)
    if kit.active("in-c"):
        stored[0] = candidates[0]["id"]
    trajdebug.current_run().state["assignment"] = {"team": stored}
    return {"team": stored}


@trajdebug.step(kind="other")
def build_rota(req: dict, team: list) -> dict:
    start, end = _min(req["start"]), _min(req["end"])
    n = -(-(end - start) // 20)
    if kit.active("in-d"):
        n -= 1
    slots = [{"at": _hhmm(start + 20 * k), "on": team[k % len(team)]} for k in range(n)]
    return {"slots": slots, "rota_end": _hhmm(min(start + 20 * n, end))}


@trajdebug.step(kind="tool")
def get_rates(date: str) -> dict:
    if kit.active("in-e"):
        return {"card": "standard", "effective": "2025-04-01", "hourly": 46.0, "travel": 15.0}
    return {"card": "standard", "effective": "2026-04-01", **RATES_2026}


@trajdebug.step(kind="other")
def price_quote(req: dict, team: list, rates: dict) -> dict:
    hours = (_min(req["end"]) - _min(req["start"])) / 60
    total = len(team) * (max(hours, 2) * rates["hourly"] + rates["travel"])
    return {"interpreters": len(team), "hours": hours, "hourly": rates["hourly"], "total": round(total, 2)}


@trajdebug.step(kind="llm")
def draft_client_email(req: dict, quote: dict) -> dict:
    return {"role": "assistant", "content": f"Dear client, for {req['event']} on {req['date']} we can provide {quote['interpreters']} interpreter(s); the quote is {quote['total']:.2f} GBP."}


@trajdebug.step(kind="condition")
def team_rules_check(req: dict, client: dict, team: list) -> str:
    hours = (_min(req["end"]) - _min(req["start"])) / 60
    if hours > 2 and len(team) < 2:
        raise BookingRefused(f"booking desk: {req['event']} runs {hours:g} h, co-working required, team has {len(team)}")
    have = {s for t in team for s in next(i for i in INTERPRETERS if i["id"] == t)["skills"]}
    missing = [n for n in client["attendee_needs"] if n not in have]
    if missing:
        raise BookingRefused(f"booking desk: attendee registration asks for {', '.join(missing)}; no one on the team holds it")
    return "ok"


@trajdebug.step(kind="tool")
def send_quote(client: str, quote: dict) -> dict:
    if quote["hourly"] != RATES_2026["hourly"]:
        raise BookingRefused(f"client PO system: quote at {quote['hourly']:.2f}/h does not match the framework rate {RATES_2026['hourly']:.2f}/h")
    return {"client": client, "po": "PO-" + client[-4:], "status": "approved"}


@trajdebug.step(kind="tool")
def confirm_interpreter(interpreter_id: str, date: str) -> dict:
    i = next(x for x in INTERPRETERS if x["id"] == interpreter_id)
    if date in i["off"]:
        raise BookingRefused(f"roster API 409: {interpreter_id} is marked unavailable on {date}")
    return {"id": interpreter_id, "confirmed": True}


@trajdebug.step(kind="tool")
def publish_rota(req: dict, rota: dict) -> dict:
    if rota["rota_end"] != req["end"]:
        raise BookingRefused(f"venue portal: rota for {req['venue']} ends {rota['rota_end']}, room booked until {req['end']}")
    return {"published": True, "slots": len(rota["slots"])}


@trajdebug.step(kind="output")
def summary(req: dict, team: list, po: dict) -> str:
    return f"{req['event']}: {', '.join(team)} booked, {po['po']} approved."


def record(key: str, path) -> None:
    text = REQUESTS[key]
    try:
        with deterministic(), trajdebug.run(AGENT, task=text, path=str(path)) as run:
            req = parse_request(receive_request(text))
            client = lookup_client(req["client"], text)
            plan = plan_team(req)
            candidates: list = []
            for skill in req["skills"]:
                for c in search_interpreters(skill):
                    if c["id"] not in [x["id"] for x in candidates]:
                        candidates.append(c)
            avail = [check_availability(c["id"], req["date"]) for c in candidates]
            team = select_team(plan, req, candidates, avail)
            remember_assignment(team, candidates)
            rota = build_rota(req, team)
            rates = get_rates(req["date"])
            quote = price_quote(req, team, rates)
            draft_client_email(req, quote)
            team_rules_check(req, client, team)
            po = send_quote(req["client"], quote)
            with trajdebug.step("confirm_team", kind="agent"):
                for iid in run.state["assignment"]["team"]:
                    confirm_interpreter(iid, req["date"])
            publish_rota(req, rota)
            summary(req, team, po)
    except Exception:  # noqa: BLE001 - the run records it as failed
        pass
