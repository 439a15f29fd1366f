"""Hotel booking agent: reads a guest's message, searches, books, checks the reservation."""

from __future__ import annotations

import datetime as dt
import json

import trajdebug

from .common import llm_meta, mark_failure, mark_flow, mark_root, on


NAME = "hotel-booking"
SUMMARY = "Books a hotel room from a free-text guest request; the final check compares the reservation with the guest's stay."
FAULTS = {
    "nights_misread": "the request-understanding LLM writes one night fewer than the guest asked for (e.g. 3 for 'four nights')",
}


class ReservationMismatch(Exception):
    """The reservation does not match what the guest asked for."""


INVENTORY = {
    "Lisbon": [
        {"hotel": "Casa do Rio", "room": "double", "per_night": 128.0, "rating": 4.6},
        {"hotel": "Alfama Terrace", "room": "double", "per_night": 149.0, "rating": 4.8},
        {"hotel": "Hotel Tejo", "room": "single", "per_night": 92.0, "rating": 4.1},
        {"hotel": "Baixa Lofts", "room": "twin", "per_night": 118.0, "rating": 4.3},
    ],
    "Porto": [
        {"hotel": "Ribeira Guesthouse", "room": "twin", "per_night": 104.0, "rating": 4.4},
        {"hotel": "Foz Palace", "room": "twin", "per_night": 171.0, "rating": 4.7},
        {"hotel": "Bolhao Rooms", "room": "double", "per_night": 88.0, "rating": 4.0},
        {"hotel": "Cedofeita House", "room": "single", "per_night": 69.0, "rating": 4.2},
    ],
    "Seville": [
        {"hotel": "Patio de la Luna", "room": "double", "per_night": 112.0, "rating": 4.5},
        {"hotel": "Triana Suites", "room": "double", "per_night": 135.0, "rating": 4.6},
        {"hotel": "Hostal Giralda", "room": "single", "per_night": 61.0, "rating": 3.9},
    ],
    "Madrid": [
        {"hotel": "Gran Via 12", "room": "double", "per_night": 159.0, "rating": 4.4},
        {"hotel": "Hotel Retiro", "room": "twin", "per_night": 131.0, "rating": 4.3},
        {"hotel": "Lavapies Inn", "room": "single", "per_night": 74.0, "rating": 4.0},
    ],
}

# What the (scripted) model answers for each guest message.
SCRIPT = {
    "b-lis-4": {"city": "Lisbon", "check_in": "2025-05-12", "nights": 4, "room": "double", "budget_eur": 700},
    "b-opo-5": {"city": "Porto", "check_in": "2025-06-03", "nights": 5, "room": "twin", "budget_eur": 900},
    "b-sev-7": {
        "city": "Seville",
        "check_in": "2025-09-20",
        "nights": 7,
        "room": "double",
        "budget_eur": 1000,
    },
    "b-mad-2": {"city": "Madrid", "check_in": "2025-03-14", "nights": 2, "room": "double", "budget_eur": 400},
    "b-lis-1": {"city": "Lisbon", "check_in": "2025-02-08", "nights": 1, "room": "single", "budget_eur": 120},
    "b-opo-3": {"city": "Porto", "check_in": "2025-10-17", "nights": 3, "room": "single", "budget_eur": 250},
    "b-sev-6": {
        "city": "Seville",
        "check_in": "2025-04-01",
        "nights": 6,
        "room": "double",
        "budget_eur": 900,
    },
    "b-mad-10": {
        "city": "Madrid",
        "check_in": "2025-11-03",
        "nights": 10,
        "room": "twin",
        "budget_eur": 1500,
    },
    "b-lis-3t": {"city": "Lisbon", "check_in": "2025-07-21", "nights": 3, "room": "twin", "budget_eur": 400},
}

FAILING = [
    {
        "fault": "nights_misread",
        "description": "The guest asks for four nights in Lisbon; the LLM writes nights=3, the search quotes and the hotel books 3 nights, and the reservation check fails.",
        "input": {
            "id": "b-lis-4",
            "message": "Hi! Could you book me a double room in Lisbon for four nights starting 12 May? I'd like to keep it under 700 EUR in total.",
            "expect": {"nights": 4, "check_out": "2025-05-16"},
        },
    },
    {
        "fault": "nights_misread",
        "description": "Five nights in Porto read as four; the booking is one night short and the reservation check fails.",
        "input": {
            "id": "b-opo-5",
            "message": "We need a twin room in Porto, arriving June 3rd and staying five nights. Max 900 for the whole stay please.",
            "expect": {"nights": 5, "check_out": "2025-06-08"},
        },
    },
    {
        "fault": "nights_misread",
        "description": "'a week (seven nights)' in Seville read as six nights; the reservation ends a day early and the check fails.",
        "input": {
            "id": "b-sev-7",
            "message": "Book something quiet in Seville from the 20th of September for a week (seven nights), double room, ~1000 EUR budget.",
            "expect": {"nights": 7, "check_out": "2025-09-27"},
        },
    },
]

PASSING = [
    {
        "id": "b-mad-2",
        "message": "Two nights in Madrid from March 14, double room, 400 euros tops.",
        "expect": {"nights": 2, "check_out": "2025-03-16"},
    },
    {
        "id": "b-lis-1",
        "message": "just one night in lisbon on feb 8, a single is fine, cheap as possible (<120)",
        "expect": {"nights": 1, "check_out": "2025-02-09"},
    },
    {
        "id": "b-opo-3",
        "message": "Porto, 3 nights starting 17 October, single room. Budget 250 EUR.",
        "expect": {"nights": 3, "check_out": "2025-10-20"},
    },
    {
        "id": "b-sev-6",
        "message": "Could you find us a double in Seville for six nights, check-in April 1st? We can spend up to 900.",
        "expect": {"nights": 6, "check_out": "2025-04-07"},
    },
    {
        "id": "b-mad-10",
        "message": "Ten nights in Madrid for a work trip from 3 Nov, twin room, company cap is 1500 EUR.",
        "expect": {"nights": 10, "check_out": "2025-11-13"},
    },
    {
        "id": "b-lis-3t",
        "message": "Twin room in Lisbon, three nights from July 21. Under 400 total if you can.",
        "expect": {"nights": 3, "check_out": "2025-07-24"},
    },
]

_CURRENT: dict = {}


@trajdebug.step(kind="llm")
def understand_request(message: str, today: str) -> str:
    """Scripted stand-in for the model call that turns the guest's message into booking fields."""
    llm_meta()
    fields = dict(SCRIPT[_CURRENT["id"]])
    if on("nights_misread"):
        fields["nights"] -= 1
        mark_root()
    return json.dumps(fields)


@trajdebug.step(kind="parse")
def parse_booking(completion: str) -> dict:
    data = json.loads(completion)
    booking = {
        "city": data["city"].strip().title(),
        "check_in": dt.date.fromisoformat(data["check_in"]).isoformat(),
        "nights": int(data["nights"]),
        "room": data.get("room", "double"),
        "budget_eur": float(data.get("budget_eur") or 0),
    }
    mark_flow()
    return booking


@trajdebug.step(kind="tool")
def search_hotels(city: str, check_in: str, nights: int, room: str) -> list:
    offers = []
    for h in INVENTORY.get(city, []):
        if h["room"] == room or (room == "double" and h["room"] == "twin"):
            offers.append(
                {
                    **h,
                    "city": city,
                    "check_in": check_in,
                    "nights": nights,
                    "total": round(h["per_night"] * nights, 2),
                }
            )
    return offers


@trajdebug.step(kind="other")
def pick_offer(offers: list, budget_eur: float) -> dict:
    affordable = [o for o in offers if not budget_eur or o["total"] <= budget_eur]
    pool = affordable or sorted(offers, key=lambda o: o["total"])[:1]
    return max(pool, key=lambda o: (o["rating"], -o["total"]))


@trajdebug.step(kind="tool")
def reserve_room(offer: dict, booking: dict) -> dict:
    check_in = dt.date.fromisoformat(booking["check_in"])
    check_out = check_in + dt.timedelta(days=booking["nights"])
    mark_flow()
    return {
        "confirmation": "HB-" + offer["hotel"][:3].upper() + booking["check_in"].replace("-", "")[2:],
        "hotel": offer["hotel"],
        "room": offer["room"],
        "check_in": check_in.isoformat(),
        "check_out": check_out.isoformat(),
        "nights": booking["nights"],
        "total_eur": round(offer["per_night"] * booking["nights"], 2),
    }


@trajdebug.step(kind="output")
def format_confirmation(reservation: dict) -> str:
    return (
        f"You're booked at {reservation['hotel']} ({reservation['room']} room) from {reservation['check_in']} "
        f"to {reservation['check_out']}, {reservation['nights']} nights, {reservation['total_eur']:.2f} EUR in total. "
        f"Confirmation {reservation['confirmation']}."
    )


@trajdebug.step(kind="condition")
def check_reservation(reservation: dict, expect: dict) -> bool:
    if reservation["nights"] != expect["nights"] or reservation["check_out"] != expect["check_out"]:
        mark_failure()
        raise ReservationMismatch(
            f"reservation {reservation['confirmation']} runs {reservation['check_in']} to {reservation['check_out']} "
            f"({reservation['nights']} nights) but the guest is staying until {expect['check_out']}"
        )
    return True


def run_agent(inp: dict, run) -> str:
    _CURRENT.clear()
    _CURRENT.update(inp)
    completion = understand_request(inp["message"], today="2025-01-15")
    booking = parse_booking(completion)
    offers = search_hotels(booking["city"], booking["check_in"], booking["nights"], booking["room"])
    offer = pick_offer(offers, booking["budget_eur"])
    reservation = reserve_room(offer, booking)
    text = format_confirmation(reservation)
    check_reservation(reservation, inp["expect"])
    return text
