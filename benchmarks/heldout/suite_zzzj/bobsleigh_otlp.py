"""Bobsleigh track bookings: guest-ride desk traced with OpenInference + the OpenTelemetry SDK (OTLP JSON).

Shape (short, 12-14 spans): booking e-mail -> model extraction (instrumented openai call) -> parser -> guest
notes lookup -> session router -> licence retriever -> track calendar -> pricing -> slot hold -> model-written
confirmation -> deposit -> send.
"""
from __future__ import annotations

import json
import re

from suitecommon import Spans, otel, read_prompt, write_otlp

RUN_NAME = "bobsleigh-guest-rides"
ROUTE = "otlp"
DOMAIN = "bobsleigh track's bookings"
SHAPE = "short linear trace (12-14 spans): two instrumented model calls, a router, a retriever, tools; failures in tools or an API refusal"

ACTIVE = ""

GUEST_NOTES = {
    "BT-880": [{"guest": "Freya Olsen", "note": "returning guest, prefers morning"}],
    "BT-881": [{"guest": "Marco Ricci", "note": "ice licence B, 14 self-drive runs"}],
    "BT-882": [{"guest": "Anke Vos", "note": "first ride"}, {"guest": "Pieter Vos", "note": "first ride"}],
    "BT-883": [{"guest": "Liam Byrne", "note": "first ride, aged 15"}],
    "BT-884": [{"guest": "Chen Yu", "note": "corporate group lead"}],
}
GROUP_FILE_NOTES = [{"guest": "Sandra Kiel", "note": "medical waiver: spinal surgery 2025, cardiologist letter on file"}]
LICENCES = {"Marco Ricci": "B"}
CALENDAR = {("2027-01-09", "guest start"): ["09:00", "09:40", "10:20"], ("2027-01-09", "top start"): ["13:00"],
            ("2027-01-16", "guest start"): ["09:20", "11:00"], ("2027-01-16", "top start"): ["14:00", "14:40"],
            ("2027-01-23", "guest start"): ["10:00", "10:40"], ("2027-01-23", "top start"): ["13:30"]}
TARIFF_CHF = {"taxi": 175.0, "self-drive": 255.0}
EUR_PER_CHF = 0.94

INPUTS = [
    {"booking": "BT-880", "email": "Hi! Freya Olsen here: 1 guest, passenger taxi ride on 2027-01-09, morning please. Card pre-authorised for 200 EUR."},
    {"booking": "BT-881", "email": "Marco Ricci, licensed (B) pilot: self-drive run for 1 guest on 2027-01-16 from the top start. Pre-authorised 300 EUR."},
    {"booking": "BT-882", "email": "Anke and Pieter Vos: 2 guests, passenger taxi ride on 2027-01-23. Pre-authorised 400 EUR."},
    {"booking": "BT-883", "email": "Booking for my son Liam Byrne (15): 1 guest, passenger taxi ride on 2027-01-16, guest start. Pre-authorised 200 EUR."},
    {"booking": "BT-884", "email": "Chen Yu for the team: 1 guest to start, passenger taxi ride on 2027-01-09, guest start. Pre-authorised 170 EUR."},
]
CASES = [
    {"id": "bob_group_notes", "input": 2, "switch": "group_file", "kind": "context_pollution",
     "root": ("guest_notes", 1), "failure": ("ChatCompletion", 2),
     "description": "The guest notes lookup also returns another booking's group file, so a third party's medical waiver is pasted into the confirmation prompt and the API refuses it."},
    {"id": "bob_taxi_route", "input": 0, "switch": "route_self_drive", "kind": "wrong_routing",
     "root": ("choose_session", 1), "failure": ("check_licences", 1),
     "description": "The session router sends a passenger taxi ride to the self-drive desk, which needs a pilot licence the guest does not hold."},
    {"id": "bob_start_position", "input": 3, "switch": "start_ignored", "kind": "tool_ignores_argument",
     "root": ("track_calendar", 1), "failure": ("hold_run", 1),
     "description": "The track calendar ignores the start position it is asked for and returns top-start times for a guest-start ride."},
    {"id": "bob_price_currency", "input": 4, "switch": "price_chf", "kind": "unit_error",
     "root": ("price_session", 1), "failure": ("take_deposit", 1),
     "description": "The pricing service returns the taxi ride's Swiss-franc tariff as if it were euros."},
    {"id": "bob_confirm_time", "input": 1, "switch": "confirm_time", "kind": "hallucinated_value",
     "root": ("ChatCompletion", 2), "failure": ("send_confirmation", 1),
     "description": "The confirmation model writes a 14:20 run time that the calendar never offered."},
]


def policy(request):
    from trajdebug.testing import Reply

    system, data = read_prompt(request)
    if system.startswith("Extract the ride booking"):
        text = data["email"]
        start = "top start" if "top start" in text else "guest start"
        return json.dumps({"guests": int(re.search(r"(\d+) guests?", text).group(1)),
                           "ride": "self-drive" if "self-drive" in text else "taxi",
                           "date": re.search(r"\d{4}-\d\d-\d\d", text).group(0), "start": start,
                           "preauth_eur": float(re.search(r"(\d+) EUR", text).group(1))})
    if system.startswith("Write the ride confirmation"):
        for note in data["notes"]:
            if "medical" in note["note"] and note["guest"] not in data["guests"]:
                return Reply(status=400, error="This request was rejected: it contains health information about a person who is not a party to this booking.")
        time = data["slot"]
        if ACTIVE == "confirm_time":
            time = "14:20"
        return f"Dear {data['guests'][0]}, your {data['ride']} on {data['date']} starts at {time} from the {data['start']}. Total {data['total_eur']:.2f} EUR."
    raise ValueError(f"no answer for {system[:40]}")


def record(server, inp: dict, path: str) -> None:
    from openai import OpenAI

    provider, exporter = otel()
    exporter.clear()
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    sp = Spans(provider.get_tracer("bobsleigh-desk"))

    def chat(messages):
        return client.chat.completions.create(model=server.model, messages=messages).choices[0].message.content

    try:
        with sp.step(RUN_NAME, "AGENT", inp) as done:
            text = chat([{"role": "system", "content": "Extract the ride booking as JSON."},
                         {"role": "user", "content": json.dumps({"email": inp["email"]})}])
            with sp.step("parse_booking", "CHAIN", {"text": text}) as out:
                booking = out(json.loads(text))
            with sp.step("guest_notes", "TOOL", {"booking": inp["booking"]}) as out:
                notes = list(GUEST_NOTES[inp["booking"]])
                if ACTIVE == "group_file":
                    notes += GROUP_FILE_NOTES
                out(notes)
            guests = [n["guest"] for n in GUEST_NOTES[inp["booking"]]]
            with sp.step("choose_session", "CHAIN", {"ride": booking["ride"], "guests": booking["guests"]}) as out:
                desk = "pilot desk" if booking["ride"] == "self-drive" else "taxi desk"
                if ACTIVE == "route_self_drive":
                    desk = "pilot desk"
                out({"desk": desk})
            with sp.step("check_licences", "RETRIEVER", {"desk": desk, "guests": guests}) as out:
                if desk == "pilot desk":
                    missing = [g for g in guests if g not in LICENCES]
                    if missing:
                        raise PermissionError(f"self-drive needs an ice licence: none on file for {', '.join(missing)}")
                out([{"guest": g, "licence": LICENCES.get(g, "passenger")} for g in guests])
            with sp.step("track_calendar", "TOOL", {"date": booking["date"], "start": booking["start"]}) as out:
                start = booking["start"]
                if ACTIVE == "start_ignored":
                    start = "top start"
                slots = out(CALENDAR[(booking["date"], start)])
            with sp.step("price_session", "TOOL", {"ride": booking["ride"], "guests": booking["guests"]}) as out:
                each = round(TARIFF_CHF[booking["ride"]] * EUR_PER_CHF, 2)
                if ACTIVE == "price_chf":
                    each = TARIFF_CHF[booking["ride"]]
                price = out({"per_guest": each, "currency": "EUR", "total": round(each * booking["guests"], 2)})
            with sp.step("hold_run", "TOOL", {"date": booking["date"], "time": slots[0], "start": booking["start"], "guests": guests}) as out:
                if booking["start"] == "guest start" and slots[0] in CALENDAR.get((booking["date"], "top start"), []):
                    raise ValueError(f"{slots[0]} on {booking['date']} is a top-start run, closed to passenger rides booked from the guest start")
                held = out({"held": f"{booking['date']} {slots[0]}", "start": booking["start"]})
            confirmation = chat([{"role": "system", "content": "Write the ride confirmation e-mail."},
                                 {"role": "user", "content": json.dumps({"guests": guests, "ride": booking["ride"], "date": booking["date"],
                                                                         "start": booking["start"], "slot": slots[0], "total_eur": price["total"],
                                                                         "notes": notes})}])
            with sp.step("take_deposit", "TOOL", {"amount_eur": price["total"], "preauth_eur": booking["preauth_eur"]}) as out:
                if price["total"] > booking["preauth_eur"]:
                    raise ValueError(f"deposit {price['total']:.2f} EUR exceeds the card pre-authorisation of {booking['preauth_eur']:.2f} EUR")
                out({"captured_eur": price["total"]})
            with sp.step("send_confirmation", "TOOL", {"to": guests[0], "body": confirmation, "held": held}) as out:
                stated = re.search(r"starts at (\d\d:\d\d)", confirmation).group(1)
                if stated != held["held"].split()[1]:
                    raise ValueError(f"confirmation states {stated}, the held run is {held['held']}")
                out({"sent": True})
            done({"booking": inp["booking"], "held": held["held"]})
    except Exception:
        pass
    write_otlp(exporter, path)
