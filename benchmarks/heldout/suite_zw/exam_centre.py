"""Language exam centre: a speaking-test roster builder recorded with the trajdebug SDK."""

from __future__ import annotations

import json

import trajdebug
from openai import OpenAI

from .common import Case, last_user_json
from .kit import active

NAME = "exam-centre-roster"
ROUTE = "sdk"
DOMAIN = "language exam centre"
EXT = "jsonl"
SHAPE = ("batch -> per-candidate record/payment/ID loop -> allocation context -> LLM room allocation -> parse -> "
         "examiner sub-agent (pool retrieval, LLM pick, assign loop) -> roster state -> seat numbers -> publish")

ROOMS = {"Room A": 4, "Room B": 4, "Room C": 3}


def _cands(start: int, n: int) -> list:
    return [f"CND-{start + i:04d}" for i in range(n)]


INPUTS = {
    "b2_dec12": {"session": "B2 Speaking", "date": "2026-12-12", "candidates": _cands(410, 8)},
    "c1_dec13": {"session": "C1 Speaking", "date": "2026-12-13", "candidates": _cands(520, 7)},
    "a2_dec14": {"session": "A2 Speaking", "date": "2026-12-14", "candidates": _cands(610, 5)},
    "b1_dec15": {"session": "B1 Speaking", "date": "2026-12-15", "candidates": _cands(700, 6)},
    "b2_dec16": {"session": "B2 Speaking", "date": "2026-12-16", "candidates": _cands(800, 9)},
    "c2_dec17": {"session": "C2 Speaking", "date": "2026-12-17", "candidates": _cands(900, 4)},
}
REFS = ["a2_dec14", "b1_dec15", "b2_dec16", "c2_dec17"]
WAITLIST = {"previous": "B2 Speaking 2026-12-05", "waitlisted": ["CND-0388", "CND-0391"]}

EXAMINERS = [
    {"id": "E-31", "levels": ["B2", "C1"], "skill": "Speaking"},
    {"id": "E-44", "levels": ["B2"], "skill": "Writing"},
    {"id": "E-52", "levels": ["A2", "B1", "B2"], "skill": "Speaking"},
    {"id": "E-77", "levels": ["C1", "C2"], "skill": "Speaking"},
    {"id": "E-80", "levels": ["A2", "B1"], "skill": "Speaking"},
    {"id": "E-91", "levels": ["B1", "B2", "C1", "C2"], "skill": "Speaking"},
]

CASES = [
    Case("zw_exam_seats", "off_by_one", "b2_dec12", "number_seats", 1, "other", "publish_roster", 1,
         "Seat numbering starts one too high, so the last candidate in Room A gets seat 5 in a four-seat room."),
    Case("zw_exam_idformat", "format_drift", "c1_dec13", "fetch_candidate_record", 4, "tool", "publish_roster", 1,
         "The registry starts returning a candidate id without its CND- prefix and dash, which flows unchanged "
         "into the roster."),
    Case("zw_exam_examiner", "subagent_wrong_entity", "b2_dec12", "pick_examiner", 2, "llm", "publish_roster", 1,
         "The examiner sub-agent picks an examiner for the B2 Writing paper for Room B instead of B2 Speaking."),
    Case("zw_exam_payment", "swallowed_error", "c1_dec13", "verify_payment", 3, "tool", "publish_roster", 1,
         "A payment-gateway timeout is caught and reported as a cleared payment for the third candidate."),
    Case("zw_exam_waitlist", "context_pollution", "b2_dec12", "build_allocation_context", 1, "other",
         "publish_roster", 1,
         "The allocation context carries the previous session's waitlist, and the model seats a waitlisted "
         "candidate from it."),
]


class RosterRejected(RuntimeError):
    pass


def _policy(req):
    data = last_user_json(req.body or {})
    if data.get("request") == "allocate":
        people = list(data["candidates"])
        for extra in data.get("notes", {}).get("waitlisted", [])[:1]:
            people.append(extra)
        rooms, i = [], 0
        for room, cap in data["rooms"].items():
            if i >= len(people):
                break
            rooms.append({"room": room, "candidates": people[i:i + cap]})
            i += cap
        return json.dumps({"rooms": rooms})
    if data.get("request") == "pick_examiner":
        level, skill = data["session"].split()
        if data["room"] == "Room B" and active("zw_exam_examiner"):
            skill = "Writing"
        taken = set(data["taken"])
        for e in data["pool"]:
            if level in e["levels"] and e["skill"] == skill and e["id"] not in taken:
                return json.dumps({"examiner": e["id"]})
        return json.dumps({"examiner": None})
    return "{}"


@trajdebug.step(kind="input")
def read_registration_batch(batch: dict) -> dict:
    return dict(batch)


@trajdebug.step(kind="tool")
def fetch_candidate_record(candidate_id: str) -> dict:
    num = int(candidate_id.split("-")[1])
    cid = candidate_id
    if active("zw_exam_idformat") and num == 523:
        cid = f"cnd{num:04d}"
    return {"candidate_id": cid, "name": f"Candidate {num}", "id_document": f"P{num * 7919 % 1000000:06d}"}


_GATEWAY = {"n": 0}


@trajdebug.step(kind="tool")
def verify_payment(candidate_id: str) -> dict:
    _GATEWAY["n"] += 1
    try:
        if _GATEWAY["n"] == 3 and candidate_id in ("CND-0522",):
            if active("zw_exam_payment"):
                raise TimeoutError("payments API read timeout after 10 s")
            return {"candidate_id": candidate_id, "status": "pending"}
        return {"candidate_id": candidate_id, "status": "cleared"}
    except TimeoutError:
        return {"candidate_id": candidate_id, "status": "cleared"}


@trajdebug.step(kind="parse")
def parse_id_document(record: dict) -> dict:
    doc = record["id_document"]
    return {"candidate_id": record["candidate_id"], "doc_type": "passport" if doc.startswith("P") else "other",
            "doc_number": doc[1:]}


@trajdebug.step(kind="condition")
def payment_cleared(payment: dict) -> bool:
    return payment["status"] == "cleared"


@trajdebug.step(kind="other")
def build_allocation_context(batch: dict, admitted: list) -> dict:
    notes = {"session": f"{batch['session']} {batch['date']}"}
    if active("zw_exam_waitlist"):
        notes.update(WAITLIST)
    return {"request": "allocate", "session": batch["session"], "candidates": admitted, "rooms": ROOMS,
            "notes": notes}


@trajdebug.step(kind="llm")
def allocate_rooms(client: OpenAI, context: dict) -> str:
    r = client.chat.completions.create(model="roster-model", messages=[
        {"role": "system", "content": "Allocate candidates to rooms. Answer JSON."},
        {"role": "user", "content": json.dumps(context)}])
    return r.choices[0].message.content


@trajdebug.step(kind="parse")
def parse_allocation(text: str) -> list:
    return json.loads(text)["rooms"]


@trajdebug.step(kind="retrieval")
def query_examiner_pool(session: str, date: str) -> list:
    return [dict(e) for e in EXAMINERS]


@trajdebug.step(kind="llm")
def pick_examiner(client: OpenAI, session: str, room: str, pool: list, taken: list) -> str:
    r = client.chat.completions.create(model="roster-model", messages=[
        {"role": "user", "content": json.dumps({"request": "pick_examiner", "session": session, "room": room,
                                                "pool": pool, "taken": taken})}])
    return r.choices[0].message.content


@trajdebug.step(kind="tool")
def assign_examiner(room: str, examiner: str, date: str) -> dict:
    return {"room": room, "examiner": examiner, "date": date, "confirmed": True}


@trajdebug.step(kind="agent")
def examiner_scheduler(client: OpenAI, session: str, date: str, rooms: list) -> list:
    pool = query_examiner_pool(session, date)
    out, taken = [], []
    for room in rooms:
        pick = json.loads(pick_examiner(client, session, room["room"], pool, taken))
        taken.append(pick["examiner"])
        out.append(assign_examiner(room["room"], pick["examiner"], date))
    return out


@trajdebug.step(kind="state")
def store_roster(rooms: list, examiners: list) -> dict:
    roster = {r["room"]: {"candidates": r["candidates"], "examiner": e["examiner"]} for r, e in zip(rooms, examiners)}
    trajdebug.current_run().state["roster"] = roster
    return roster


@trajdebug.step(kind="other")
def number_seats(roster: dict) -> dict:
    start = 2 if active("zw_exam_seats") else 1
    return {room: [{"candidate": c, "seat": start + i} for i, c in enumerate(v["candidates"])]
            for room, v in roster.items()}


def _check(batch: dict, roster: dict, seats: dict, payments: dict) -> None:
    level = batch["session"].split()[0]
    registered = set(batch["candidates"])
    for room, entry in roster.items():
        ex = next((e for e in EXAMINERS if e["id"] == entry["examiner"]), None)
        if ex is None or level not in ex["levels"] or ex["skill"] != "Speaking":
            raise RosterRejected(f"HTTP 409 Conflict: examiner {entry['examiner']} in {room} is not certified "
                                 f"for {batch['session']}")
        for c in entry["candidates"]:
            if c not in registered:
                raise RosterRejected(f"HTTP 422: candidate id '{c}' is not registered for {batch['session']} "
                                     f"on {batch['date']}")
    for room, rows in seats.items():
        for row in rows:
            if row["seat"] > ROOMS[room]:
                raise RosterRejected(f"HTTP 422: seat {row['seat']} for {row['candidate']} exceeds the capacity "
                                     f"of {room} ({ROOMS[room]} seats)")
    ledger = {cid: ("pending" if cid == "CND-0522" else "cleared") for cid in registered}
    for cid, status in payments.items():
        if status == "cleared" and ledger.get(cid) != "cleared":
            raise RosterRejected(f"HTTP 402 Payment Required: candidate {cid} has no cleared payment in the "
                                 "ledger")


@trajdebug.step(kind="tool")
def publish_roster(batch: dict, roster: dict, seats: dict, payments: dict) -> dict:
    _check(batch, roster, seats, payments)
    return {"status": 200, "published": sum(len(v) for v in seats.values())}


def record(inp_id: str, path: str, server) -> None:
    server.use(_policy)
    _GATEWAY["n"] = 0
    client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    try:
        with trajdebug.run(NAME, path=path, task=f"roster for {INPUTS[inp_id]['session']}") as run:
            batch = read_registration_batch(INPUTS[inp_id])
            admitted, payments = [], {}
            for cid in batch["candidates"]:
                rec = fetch_candidate_record(cid)
                pay = verify_payment(cid)
                parse_id_document(rec)
                if payment_cleared(pay):
                    admitted.append(rec["candidate_id"])
                    payments[rec["candidate_id"]] = pay["status"]
            context = build_allocation_context(batch, admitted)
            rooms = parse_allocation(allocate_rooms(client, context))
            examiners = examiner_scheduler(client, batch["session"], batch["date"], rooms)
            roster = store_roster(rooms, examiners)
            seats = number_seats(roster)
            publish_roster(batch, roster, seats, payments)
            run.state["published"] = True
    except RosterRejected:
        pass
