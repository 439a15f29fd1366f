"""Scheduling agent: books a call at the attendee's local time."""

from __future__ import annotations

import datetime as dt
import json
from zoneinfo import ZoneInfo

import trajdebug

from .common import llm_meta, mark_failure, mark_flow, mark_root, on


NAME = "meeting-scheduler"
SUMMARY = "Books a call at a time given in the attendee's local time; the attendee's time zone is kept in run state."
FAULTS = {
    "tz_state_wrong": "the step that stores the attendee's time zone in run state writes the organizer's zone (Europe/Lisbon)",
}


class InviteTimeWrong(Exception):
    """The invite lands at the wrong local time for the attendee."""


ORGANIZER_TZ = "Europe/Lisbon"
CONTACTS = {
    "Priya Raman": {"email": "priya.raman@example.sg", "tz": "Asia/Singapore"},
    "Dan Whitaker": {"email": "dan.w@example.com", "tz": "America/New_York"},
    "Yuki Sato": {"email": "y.sato@example.jp", "tz": "Asia/Tokyo"},
    "Emma Clarke": {"email": "emma@example.co.uk", "tz": "Europe/London"},
    "Lukas Becker": {"email": "lukas.becker@example.de", "tz": "Europe/Berlin"},
    "Rita Gomes": {"email": "rita.gomes@example.pt", "tz": "Europe/Lisbon"},
    "Bruno Souza": {"email": "bruno@example.com.br", "tz": "America/Sao_Paulo"},
    "Chloe Nguyen": {"email": "chloe.n@example.au", "tz": "Australia/Sydney"},
}
REQUESTS = {
    "m-priya": {"attendee": "Priya Raman", "date": "2025-03-11", "local_time": "09:00", "minutes": 30},
    "m-dan": {"attendee": "Dan Whitaker", "date": "2025-04-02", "local_time": "10:30", "minutes": 45},
    "m-yuki": {"attendee": "Yuki Sato", "date": "2025-05-20", "local_time": "17:00", "minutes": 30},
    "m-emma": {"attendee": "Emma Clarke", "date": "2025-03-12", "local_time": "14:00", "minutes": 60},
    "m-lukas": {"attendee": "Lukas Becker", "date": "2025-06-05", "local_time": "08:30", "minutes": 30},
    "m-rita": {"attendee": "Rita Gomes", "date": "2025-02-18", "local_time": "11:00", "minutes": 25},
    "m-bruno": {"attendee": "Bruno Souza", "date": "2025-07-09", "local_time": "09:00", "minutes": 30},
    "m-chloe": {"attendee": "Chloe Nguyen", "date": "2025-08-14", "local_time": "08:00", "minutes": 45},
}

FAILING = [
    {
        "fault": "tz_state_wrong",
        "description": "Priya (Singapore) wants 09:00 her time; the state write keeps Europe/Lisbon, the UTC conversion two steps later uses it, the invite lands at 17:00 in Singapore and the verification raises.",
        "input": {
            "id": "m-priya",
            "message": "Set up a 30-min call with Priya Raman next Tuesday (11 March) at 9am her time.",
        },
    },
    {
        "fault": "tz_state_wrong",
        "description": "Dan (New York) asked for 10:30 local; the stored zone is Lisbon; the event is created for 05:30 New York time and verification fails.",
        "input": {
            "id": "m-dan",
            "message": "Can you book 45 minutes with Dan Whitaker on April 2nd, 10:30 in New York?",
        },
    },
    {
        "fault": "tz_state_wrong",
        "description": "Yuki (Tokyo) wants a 17:00 slot; with the Lisbon zone in state the invite is at 01:00 the next day in Tokyo; the check raises.",
        "input": {
            "id": "m-yuki",
            "message": "Please schedule a half-hour sync with Yuki Sato on 20 May at 5pm Tokyo time.",
        },
    },
]

PASSING = [
    {"id": "m-emma", "message": "Book an hour with Emma Clarke on 12 March, 2pm London."},
    {"id": "m-lukas", "message": "30 minutes with Lukas Becker, 5 June, 08:30 his time."},
    {"id": "m-rita", "message": "Quick 25-min catch-up with Rita Gomes on Feb 18 at 11."},
    {"id": "m-bruno", "message": "Schedule Bruno Souza 9 July 9am Sao Paulo time, 30 mins."},
    {"id": "m-chloe", "message": "Set a 45 minute call with Chloe Nguyen, 14 Aug, 8am Sydney."},
]

_CURRENT: dict = {}


@trajdebug.step(kind="llm")
def understand_meeting(message: str) -> str:
    llm_meta()
    return json.dumps(REQUESTS[_CURRENT["id"]])


@trajdebug.step(kind="parse")
def parse_meeting(completion: str) -> dict:
    m = json.loads(completion)
    dt.date.fromisoformat(m["date"])
    return {
        "attendee": m["attendee"],
        "date": m["date"],
        "local_time": m["local_time"],
        "minutes": int(m["minutes"]),
    }


@trajdebug.step(kind="tool")
def lookup_contact(name: str) -> dict:
    return {"name": name, **CONTACTS[name]}


@trajdebug.step(kind="state")
def remember_attendee_tz(contact: dict) -> str:
    tz = contact["tz"]
    if on("tz_state_wrong") and tz != ORGANIZER_TZ:
        tz = ORGANIZER_TZ
        mark_root()
    trajdebug.current_run().state["attendee_tz"] = tz
    return tz


@trajdebug.step(kind="tool")
def organizer_busy(date: str) -> list:
    return [{"start": f"{date}T12:00:00Z", "end": f"{date}T13:00:00Z", "title": "Lunch"}]


@trajdebug.step(kind="other")
def to_utc(meeting: dict) -> dict:
    tz = ZoneInfo(trajdebug.current_run().state["attendee_tz"])
    local = dt.datetime.fromisoformat(f"{meeting['date']}T{meeting['local_time']}").replace(tzinfo=tz)
    start = local.astimezone(dt.UTC)
    end = start + dt.timedelta(minutes=meeting["minutes"])
    mark_flow()
    return {"start_utc": start.isoformat(), "end_utc": end.isoformat()}


@trajdebug.step(kind="tool")
def create_event(slot: dict, attendee_email: str, title: str) -> dict:
    mark_flow()
    return {
        "event_id": "evt_" + slot["start_utc"][:16].replace("-", "").replace(":", ""),
        "attendees": [attendee_email],
        "title": title,
        **slot,
    }


@trajdebug.step(kind="condition")
def verify_invite(event: dict, contact: dict, meeting: dict) -> bool:
    start = dt.datetime.fromisoformat(event["start_utc"]).astimezone(ZoneInfo(contact["tz"]))
    if start.strftime("%Y-%m-%d %H:%M") != f"{meeting['date']} {meeting['local_time']}":
        mark_failure()
        raise InviteTimeWrong(
            f"{contact['name']} would see the invite at {start:%a %d %b %H:%M} ({contact['tz']}), "
            f"not {meeting['date']} {meeting['local_time']}"
        )
    return True


def run_agent(inp: dict, run) -> str:
    _CURRENT.clear()
    _CURRENT.update(inp)
    meeting = parse_meeting(understand_meeting(inp["message"]))
    contact = lookup_contact(meeting["attendee"])
    remember_attendee_tz(contact)
    busy = organizer_busy(meeting["date"])
    slot = to_utc(meeting)
    for b in busy:
        if b["start"] <= slot["start_utc"].replace("+00:00", "Z") < b["end"]:
            slot["note"] = "overlaps organizer lunch"
    event = create_event(slot, contact["email"], f"Call with {meeting['attendee']}")
    verify_invite(event, contact, meeting)
    return event["event_id"]
