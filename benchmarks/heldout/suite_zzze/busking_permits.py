"""Busking pitch permit office: reviews a performer's application pitch by pitch and issues one permit
(trajdebug SDK route, async).

Shape: application text -> model extraction -> parser -> for each requested pitch a review sub-agent
(kind agent) that runs three register look-ups in parallel (asyncio.gather), asks the model for a
decision, parses it and writes it to run.state -> permit draft from run.state -> schema check ->
council register (tool that refuses a permit at odds with its records).
"""

from __future__ import annotations

import asyncio
import json
import re

from common import chat, last_user

import trajdebug


NAME = "busking-permit-office"
ROUTE = "sdk"
DOMAIN = "busking pitch permit office"
SHAPE = "async sdk agent: extraction + parser, per-pitch review sub-agents with 3 parallel look-ups each, run.state notes, schema check, register tool (~25-45 steps)"

SW = dict.fromkeys(("neighbour_pitch", "date_key", "shared_notes", "first_page", "hour_only"), False)

REGISTER = {
    "P-03": {
        "street": "Market Cross",
        "max_db": 75,
        "bookings": {
            "2027-05-08": [
                "09:00-10:00",
                "10:00-11:00",
                "11:00-12:00",
                "12:00-13:00",
                "13:00-14:00",
                "16:00-17:00",
            ]
        },
    },
    "P-07": {"street": "Abbey Steps", "max_db": 85, "bookings": {"2027-05-08": ["15:00-16:00"]}},
    "P-14": {"street": "Library Square", "max_db": 80, "bookings": {}},
    "P-18": {
        "street": "Bridge Foot",
        "max_db": 75,
        "bookings": {"2027-06-12": ["12:00-13:00", "13:00-14:00"]},
    },
    "P-21": {"street": "Station Forecourt", "max_db": 90, "bookings": {"2027-06-12": ["16:00-17:00"]}},
    "P-11": {"street": "Quay Arch", "max_db": 70, "bookings": {"2027-05-09": ["10:00-11:00"]}},
}
FOOTFALL = {
    "P-03": "busy",
    "P-07": "steady",
    "P-11": "quiet",
    "P-14": "busy",
    "P-18": "steady",
    "P-21": "busy",
}

INPUTS = [
    "Performer: Kettle & Bow (fiddle duo). Pitches: P-03 on 2027-05-08 14:00-16:30; P-07 on 2027-05-08 11:00-12:00; P-11 on 2027-05-09 15:00-17:00. Amplified: no.",
    "Performer: Dara Quinn (loop guitar). Pitches: P-14 on 2027-05-20 12:00-13:30; P-21 on 2027-06-12 18:00-19:00. Amplified: yes.",
    "Performer: The Tin Whistlers (trio). Pitches: P-18 on 2027-06-12 15:00-16:45; P-03 on 2027-06-12 10:00-11:00; P-21 on 2027-06-12 12:00-13:00; P-07 on 2027-06-13 14:00-15:00. Amplified: no.",
    "Performer: Marco Bellini (accordion). Pitches: P-07 on 2027-05-08 09:00-10:30. Amplified: no.",
    "Performer: Sunny Ade Steel (steel pan). Pitches: P-14 on 2027-05-09 12:00-13:00; P-11 on 2027-05-09 12:00-13:00; P-18 on 2027-06-12 10:00-11:30. Amplified: yes.",
]


def policy(request):
    prompt = last_user(request)
    if prompt.startswith("EXTRACT"):
        text = prompt.split("\n", 1)[1]
        performer = re.search(r"Performer: (.+?)\. Pitches", text).group(1)
        reqs = [
            {"pitch": p, "date": d, "slot": s}
            for p, d, s in re.findall(r"(P-\d+) on (\S+) (\d\d:\d\d-\d\d:\d\d)", text)
        ]
        return json.dumps({"performer": performer, "requests": reqs, "amplified": "Amplified: yes" in text})
    if prompt.startswith("REVIEW"):
        job = json.loads(prompt.split("\n", 1)[1])
        noise = next(r for r in job["notes"] if r["source"] == "noise_register")
        limit = noise["max_db"] - (5 if job["amplified"] else 0)
        return json.dumps(
            {
                "pitch": job["pitch"],
                "decision": "approve",
                "max_db": limit,
                "conditions": ["no amplification after 18:00"] if job["amplified"] else [],
            }
        )
    return "Unrecognised request."


@trajdebug.step(kind="input")
def receive_application(text: str) -> str:
    return text


@trajdebug.step(kind="llm")
def extract_application(messages: list) -> str:
    return chat(_server, messages)


@trajdebug.step(kind="parse")
def parse_application(text: str) -> dict:
    d = json.loads(text)
    lines = []
    for r in d["requests"]:
        start, end = r["slot"].split("-")
        if SW["hour_only"]:
            start, end = start[:2] + ":00", end[:2] + ":00"
        lines.append({"pitch": r["pitch"], "date": r["date"], "start": start, "end": end})
    return {"performer": d["performer"], "amplified": bool(d["amplified"]), "requests": lines}


@trajdebug.step(kind="tool")
async def noise_register(pitch: str) -> dict:
    await asyncio.sleep(0)
    return {
        "source": "noise_register",
        "pitch": pitch,
        "max_db": REGISTER[pitch]["max_db"],
        "street": REGISTER[pitch]["street"],
    }


@trajdebug.step(kind="tool")
async def footfall_survey(pitch: str, date: str) -> dict:
    await asyncio.sleep(0)
    return {"source": "footfall_survey", "pitch": pitch, "date": date, "level": FOOTFALL[pitch]}


@trajdebug.step(kind="tool")
async def pitch_bookings(pitch: str, date: str) -> dict:
    await asyncio.sleep(0)
    slots = list(REGISTER[pitch]["bookings"].get(date, []))
    if SW["first_page"]:
        slots = slots[:5]
    return {"source": "pitch_bookings", "pitch": pitch, "date": date, "booked": slots}


@trajdebug.step(kind="llm")
def review_pitch(messages: list) -> str:
    return chat(_server, messages)


@trajdebug.step(kind="parse")
def read_review(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="state")
def file_review(line: dict, review: dict, booked: list) -> dict:
    key = f"review:{line['date']}" if SW["date_key"] else f"review:{line['pitch']}:{line['date']}"
    trajdebug.current_run().state[key] = {
        **line,
        "decision": review["decision"],
        "max_db": review["max_db"],
        "conditions": review["conditions"],
        "booked": booked,
    }
    return {"filed": key, "decision": review["decision"]}


def _clash(a: tuple, b: str) -> bool:
    s, e = b.split("-")
    return a[0] < e and s < a[1]


_shared: list = []


@trajdebug.step(kind="agent")
async def pitch_review(line: dict, amplified: bool) -> dict:
    pitch = line["pitch"]
    if SW["neighbour_pitch"]:
        pitch = next(k for k in REGISTER if k[-1] == line["pitch"][-1])
    noise, foot, book = await asyncio.gather(
        noise_register(pitch), footfall_survey(pitch, line["date"]), pitch_bookings(pitch, line["date"])
    )
    notes = _shared if SW["shared_notes"] else []
    notes.extend([noise, foot, book])
    text = review_pitch(
        [
            {
                "role": "system",
                "content": "You review busking pitch requests for the permit office. Answer JSON.",
            },
            {
                "role": "user",
                "content": "REVIEW\n"
                + json.dumps(
                    {
                        "pitch": line["pitch"],
                        "date": line["date"],
                        "start": line["start"],
                        "end": line["end"],
                        "amplified": amplified,
                        "notes": notes,
                    }
                ),
            },
        ]
    )
    review = read_review(text)
    clashes = [b for b in book["booked"] if _clash((line["start"], line["end"]), b)]
    if clashes:
        review = {**review, "decision": "refuse"}
    file_review(line, review, book["booked"])
    return {"pitch": pitch, "decision": review["decision"], "max_db": review["max_db"]}


@trajdebug.step(kind="other")
def draft_permit(application: dict) -> dict:
    state = trajdebug.current_run().state
    lines = [
        state[k]
        for k in sorted(state.keys())
        if k.startswith("review:") and state[k]["decision"] == "approve"
    ]
    return {
        "performer": application["performer"],
        "lines": [
            {k: ln[k] for k in ("pitch", "date", "start", "end", "max_db", "conditions")} for ln in lines
        ],
    }


@trajdebug.step(kind="condition")
def permit_schema_check(permit: dict, application_text: str, approved: list) -> dict:
    asked = {
        (p, d): (s, e)
        for p, d, s, e in re.findall(r"(P-\d+) on (\S+) (\d\d:\d\d)-(\d\d:\d\d)", application_text)
    }
    if len(permit["lines"]) != len(approved):
        raise ValueError(
            f"permit for {permit['performer']} has {len(permit['lines'])} pitch lines, {len(approved)} pitches were approved"
        )
    for ln in permit["lines"]:
        for field in ("pitch", "date", "start", "end", "max_db"):
            if field not in ln:
                raise ValueError(f"permit line lacks {field}")
        p, d = ln["pitch"], ln["date"]
        s, e = asked[(p, d)]
        if (ln["start"], ln["end"]) != (s, e):
            raise ValueError(
                f"permit slot {ln['start']}-{ln['end']} for {p} on {d} is not the requested {s}-{e}"
            )
    return {"lines": len(permit["lines"]), "schema": "permit-v2"}


@trajdebug.step(kind="tool")
def council_register(permit: dict) -> str:
    for ln in permit["lines"]:
        reg = REGISTER[ln["pitch"]]
        if ln["max_db"] > reg["max_db"]:
            raise RuntimeError(
                f"register refuses {ln['pitch']}: {ln['max_db']} dB above the {reg['max_db']} dB limit for {reg['street']}"
            )
        for b in reg["bookings"].get(ln["date"], []):
            if _clash((ln["start"], ln["end"]), b):
                raise RuntimeError(
                    f"register refuses {ln['pitch']} {ln['date']} {ln['start']}-{ln['end']}: already booked {b}"
                )
    return f"permit BP-{sum(map(ord, permit['performer'])) % 9000 + 1000} registered"


_server = None


async def _reviews(app: dict) -> list:
    out = []
    for line in app["requests"]:
        out.append(await pitch_review(line, app["amplified"]))
    return out


def record(inp: str, server, dest: str) -> None:
    global _server
    _server = server
    _shared.clear()
    try:
        with trajdebug.run(NAME, task=inp, path=dest):
            text = receive_application(inp)
            raw = extract_application(
                [
                    {"role": "system", "content": "Extract the permit application as JSON."},
                    {"role": "user", "content": "EXTRACT\n" + text},
                ]
            )
            app = parse_application(raw)
            reviews = asyncio.run(_reviews(app))
            approved = [
                r for r in reviews if r["decision"] == "approve"
            ]  # refused pitches are dropped from the permit
            permit = draft_permit(app)
            permit_schema_check(permit, text, approved)
            council_register(permit)
    except Exception:  # noqa: BLE001  (the recorded run keeps the failure; the generator checks it)
        pass


CASES = [
    {
        "id": "busk_neighbour",
        "input": 0,
        "switch": "neighbour_pitch",
        "fault_kind": "subagent_wrong_entity",
        "root": ("pitch_review", 3, "agent"),
        "failure": ("council_register", 1),
        "description": "The review sub-agent for Quay Arch (P-11) resolves the pitch to Station Forecourt (P-21), and its 90 dB limit goes on the permit line for P-11.",
    },
    {
        "id": "busk_date_key",
        "input": 2,
        "switch": "date_key",
        "fault_kind": "bad_memory_write",
        "root": ("file_review", 2, "state"),
        "failure": ("permit_schema_check", 1),
        "description": "Reviews are filed under the date alone, so the second pitch on 2027-06-12 replaces the first in the run's notes.",
    },
    {
        "id": "busk_shared_notes",
        "input": 4,
        "switch": "shared_notes",
        "fault_kind": "context_pollution",
        "root": ("review_pitch", 2, "llm"),
        "failure": ("council_register", 1),
        "description": "The review notes are shared across pitches, so the model reads Library Square's 80 dB noise record when reviewing Quay Arch.",
    },
    {
        "id": "busk_first_page",
        "input": 0,
        "switch": "first_page",
        "fault_kind": "truncated_result",
        "root": ("pitch_bookings", 1, "tool"),
        "failure": ("council_register", 1),
        "description": "The bookings look-up returns only its first page of five slots, hiding the 16:00-17:00 booking at Market Cross.",
    },
    {
        "id": "busk_hour_only",
        "input": 1,
        "switch": "hour_only",
        "fault_kind": "lossy_parsing",
        "root": ("parse_application", 1, "parse"),
        "failure": ("permit_schema_check", 1),
        "description": "Parsing the application keeps only the hour of each slot, so 12:00-13:30 becomes 12:00-13:00.",
    },
]
