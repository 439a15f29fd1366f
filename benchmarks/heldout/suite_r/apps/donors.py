"""Mobile blood-donation sessions: an instrumented openai client plus OpenInference spans, exported as OTLP/JSON."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from .. import kit
from . import playout


AGENT = "donor-sessions"
ROUTE = "otlp"
EXT = "json"

VENUES = {
    "VEN-AIDAN-HALL": {"venue": "St Aidan's Hall", "chairs": 6, "ground_floor": True, "power": "3 x 16A"},
    "VEN-AIDAN-SCHOOL": {"venue": "St Aidan's School", "chairs": 10, "ground_floor": True, "power": "2 x 16A"},
    "VEN-MARKET-HALL": {"venue": "Corn Market Hall", "chairs": 8, "ground_floor": True, "power": "4 x 16A"},
    "VEN-RUGBY-CLUB": {"venue": "Trevenna Rugby Club", "chairs": 6, "ground_floor": True, "power": "2 x 16A"},
    "VEN-LIBRARY-ANNEX": {"venue": "Penrose Annex", "chairs": 4, "ground_floor": True, "power": "1 x 16A"},
    "VEN-SCOUT-HUT": {"venue": "Kellow Scout Hut", "chairs": 4, "ground_floor": True, "power": "1 x 16A"},
}
NURSES = [
    {"id": "RN-101", "name": "A. Pascoe", "band": 5}, {"id": "RN-102", "name": "B. Iqbal", "band": 5},
    {"id": "RN-103", "name": "C. Treloar", "band": 5}, {"id": "RN-104", "name": "D. Mensah", "band": 5},
    {"id": "RN-105", "name": "E. Rowe", "band": 5}, {"id": "RN-106", "name": "F. Kaur", "band": 5},
    {"id": "RN-201", "name": "G. Hocking", "band": 6}, {"id": "RN-202", "name": "H. Adeyemi", "band": 6},
]
REQUESTS = {
    "d1": "Session at St Aidan's Hall (VEN-AIDAN-HALL), 2026-07-08, 10:00-16:00, expected donors 60",
    "d2": "Session at Corn Market Hall (VEN-MARKET-HALL), 2026-07-09, 09:00-13:00, expected donors 36",
    "d3": "Session at Trevenna Rugby Club (VEN-RUGBY-CLUB), 2026-07-10, 12:00-18:00, expected donors 48",
    "d4": "Session at Penrose Annex (VEN-LIBRARY-ANNEX), 2026-07-11, 10:00-14:00, expected donors 24",
    "d5": "Session at Kellow Scout Hut (VEN-SCOUT-HUT), 2026-07-12, 13:00-17:00, expected donors 24",
    "d6": "Session at Corn Market Hall (VEN-MARKET-HALL), 2026-07-15, 10:00-15:00, expected donors 40",
    "d7": "Session at Trevenna Rugby Club (VEN-RUGBY-CLUB), 2026-07-16, 09:00-12:00, expected donors 30",
    "d8": "Session at St Aidan's Hall (VEN-AIDAN-HALL), 2026-07-17, 14:00-18:00, expected donors 36",
    "d9": "Session at Penrose Annex (VEN-LIBRARY-ANNEX), 2026-07-18, 09:00-15:00, expected donors 30",
}

FAULTS = [
    {"id": "do-a", "kind": "wrong_retrieval", "order": "d1", "root": "venue_rules", "marker": "VEN-AIDAN-SCHOOL"},
    {"id": "do-b", "kind": "plan_error", "order": "d3", "root": "ChatCompletion", "marker": "nurses=3;"},
    {"id": "do-c", "kind": "truncated_result", "order": "d6", "root": "staff_roster", "marker": "\"shown\": 6"},
    {"id": "do-d", "kind": "off_by_one", "order": "d9", "root": "compute_appointments", "marker": "\"slots\": 29"},
    {"id": "do-e", "kind": "format_drift", "order": "d8", "root": "cold_chain_probe", "marker": "39.2 F"},
]
REFS = ["d2", "d4", "d5", "d7"]


class SessionRefused(RuntimeError):
    pass


SessionRefused.__module__ = "donor_registry"
span = playout.span


def _mins(hhmm: str) -> int:
    return int(hhmm[:2]) * 60 + int(hhmm[3:])


def policy(request: Any):
    msgs = (request.body or {}).get("messages") or []
    system = str(msgs[0].get("content") or "")
    user = str(msgs[-1].get("content") or "")
    if system.startswith("Plan the session"):
        s = json.loads(user.split("SESSION: ")[1])
        nurses = -(-s["donors"] // 12)
        if kit.active("do-b"):
            nurses = s["donors"] // 16
        return f"nurses={nurses}; lead=1; chairs={min(s['chairs'], nurses + 1)}; refreshments=yes"
    if system.startswith("Write the donor text"):
        return "Thank you for booking to give blood at " + user.split("AT: ")[1] + ". Please drink plenty of water beforehand."
    raise ValueError("unexpected prompt")


def parse_request(text: str) -> dict:
    with span("parse_request", "CHAIN", {"text": text}) as box:
        start, end = text.split(", ")[2].split("-")
        box["out"] = {"venue": text.split("Session at ")[1].split(" (")[0], "venue_id": text.split("(")[1].split(")")[0],
                      "date": text.split(", ")[1], "start": start, "end": end, "donors": int(text.split("expected donors ")[1])}
        return box["out"]


def venue_rules(venue: str) -> list:
    with span("venue_rules", "RETRIEVER", {"query": venue}) as box:
        docs = [{"id": k, **v} for k, v in VENUES.items() if v["venue"] == venue]
        if kit.active("do-a"):
            docs = [{"id": "VEN-AIDAN-SCHOOL", **VENUES["VEN-AIDAN-SCHOOL"]}]
        box["out"] = docs
        return docs


def staff_roster(date: str) -> dict:
    with span("staff_roster", "TOOL", {"date": date}) as box:
        staff = [dict(n) for n in NURSES]
        if kit.active("do-c"):
            box["out"] = {"date": date, "staff": staff[:6], "shown": 6}
        else:
            box["out"] = {"date": date, "staff": staff, "shown": len(staff)}
        return box["out"]


def book_staff(nurse: str, date: str) -> dict:
    with span("book_staff", "TOOL", {"nurse": nurse, "date": date}) as box:
        box["out"] = {"nurse": nurse, "date": date, "booked": True}
        return box["out"]


def compute_appointments(req: dict, chairs: int) -> dict:
    with span("compute_appointments", "CHAIN", {"start": req["start"], "end": req["end"], "chairs": chairs}) as box:
        per_chair = (_mins(req["end"]) - _mins(req["start"]) - 30) // 15
        n = min(req["donors"], per_chair * chairs)
        first = 1 if kit.active("do-d") else 0
        times = [_mins(req["start"]) + 15 * (k // chairs) for k in range(first, n)]
        box["out"] = {"chairs": chairs, "per_chair": per_chair, "slots": len(times), "last": f"{times[-1] // 60:02d}:{times[-1] % 60:02d}"}
        return box["out"]


def cold_chain_probe(box_id: str) -> dict:
    with span("cold_chain_probe", "TOOL", {"box": box_id}) as box:
        if kit.active("do-e"):
            box["out"] = {"box": box_id, "reading": "39.2 F", "probe_fw": "2.4"}
        else:
            box["out"] = {"box": box_id, "reading": "4.0 C", "probe_fw": "2.3"}
        return box["out"]


def send_invites(req: dict, sms: str, appts: dict) -> dict:
    with span("send_invites", "TOOL", {"text": sms, "donors": req["donors"]}) as box:
        box["out"] = {"queued": req["donors"], "channel": "sms", "send_at": req["date"] + " 08:00"}
        return box["out"]


def transport_check(readings: list) -> dict:
    with span("transport_check", "CHAIN", {"boxes": len(readings)}) as box:
        for r in readings:
            value = float(r["reading"].split()[0])
            if not 2.0 <= value <= 6.0:
                raise SessionRefused(f"transport rule: cold box {r['box']} reads {value}, allowed 2.0-6.0 C")
        box["out"] = {"ok": True}
        return box["out"]


def session_check(req: dict, plan: dict, booked: list, appts: dict) -> dict:
    with span("session_check", "CHAIN", {"donors": req["donors"], "booked": booked}) as box:
        need = -(-req["donors"] // 12)
        nurses = [b for b in booked if b.startswith("RN-1")]
        if len(nurses) < need:
            raise SessionRefused(f"staffing rule: {req['donors']} donors need {need} donor-care nurses, {len(nurses)} booked")
        box["out"] = {"ok": True, "nurses": len(nurses)}
        return box["out"]


def submit_session(req: dict, venue: dict, booked: list, appts: dict) -> dict:
    with span("submit_session", "TOOL", {"venue_id": venue["id"], "staff": booked, "slots": appts["slots"]}) as box:
        if venue["id"] != req["venue_id"]:
            raise SessionRefused(f"session registry 422: venue {req['venue_id']} booked, risk assessment on file is for {venue['id']}")
        if not any(b.startswith("RN-2") for b in booked):
            raise SessionRefused(f"session registry 422: no band 6 session lead on the staff list for {req['date']}")
        if appts["slots"] < req["donors"]:
            raise SessionRefused(f"donor portal: {req['donors']} donors invited, {appts['slots']} appointments open")
        box["out"] = {"session": "S-" + req["date"].replace("-", "")[2:], "accepted": True}
        return box["out"]


_CTX = playout._CTX


def setup():
    server = playout.setup()
    server.use(policy)
    return server


def teardown(server) -> None:
    playout.teardown(server)


def record(key: str, path) -> None:
    _CTX["exporter"].clear()
    text = REQUESTS[key]
    try:
        with span(AGENT, "AGENT", {"request": text}) as top:
            req = parse_request(text)
            venue = venue_rules(req["venue"])[0]
            plan_text = playout.chat("Plan the session staffing.", "SESSION: " + json.dumps({**req, "chairs": venue["chairs"]})).choices[0].message.content
            plan = dict(kv.strip().split("=") for kv in plan_text.split(";"))
            roster = staff_roster(req["date"])
            band5 = [n for n in roster["staff"] if n["band"] == 5][: int(plan["nurses"])]
            band6 = [n for n in roster["staff"] if n["band"] == 6][: int(plan["lead"])]
            booked = [book_staff(n["id"], req["date"])["nurse"] for n in band5 + band6]
            appts = compute_appointments(req, int(plan["chairs"]))
            readings = [cold_chain_probe(f"CB-{k}") for k in (1, 2, 3)]
            sms = playout.chat("Write the donor text message.", "AT: " + req["venue"]).choices[0].message.content
            send_invites(req, sms, appts)
            transport_check(readings)
            session_check(req, plan, booked, appts)
            result = submit_session(req, venue, booked, appts)
            top["out"] = result
    except SessionRefused:
        pass
    _CTX["provider"].force_flush()
    doc = MessageToDict(encode_spans(_CTX["exporter"].get_finished_spans()))
    with open(path, "w") as f:
        json.dump(doc, f)
