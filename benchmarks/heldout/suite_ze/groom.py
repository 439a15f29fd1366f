"""Dog grooming salon front desk (recording SDK): reads a booking request, prices services, books a table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trajdebug

from .common import Case, chat, role_and_payload
from .kit import active

NAME = "groom-desk"
ROUTE = "sdk"
DOMAIN = "dog grooming salon"
SHAPE = "intake llm -> parse -> pet record -> breed rules -> price loop -> coat sub-agent -> slot plan -> book"

REQUESTS = {
    "biscuit": "Hi, this is Dana Ortiz (client C-88). Biscuit, our goldendoodle, needs a full groom: bath, haircut and nail trim, Saturday morning please.",
    "pepper": "Client C-41, Sam Lee. Pepper the schnauzer wants bath, hand strip and nail trim on Friday afternoon.",
    "luna": "C-17 here (Ana). Luna, husky, de-shed bath and nail trim, Sunday morning.",
    "rocco": "Client C-52 Rocco the poodle: bath, haircut, teeth brushing. Saturday afternoon.",
    "mochi": "C-88 again: Mochi the shih tzu, bath and haircut, Friday morning.",
    "otis": "Client C-63, Otis the beagle, bath and nail trim, Sunday afternoon.",
}
PETS = {
    "C-88": {"biscuit": {"pet_id": "P-2231", "breed": "goldendoodle", "weight_kg": 22.0}, "mochi": {"pet_id": "P-2232", "breed": "shih tzu", "weight_kg": 6.5}},
    "C-41": {"pepper": {"pet_id": "P-1410", "breed": "schnauzer", "weight_kg": 8.2}},
    "C-17": {"luna": {"pet_id": "P-0917", "breed": "husky", "weight_kg": 24.5}},
    "C-52": {"rocco": {"pet_id": "P-5120", "breed": "poodle", "weight_kg": 19.0}},
    "C-63": {"otis": {"pet_id": "P-6301", "breed": "beagle", "weight_kg": 11.0}},
}
SERVICE_MIN = {"bath": 30, "haircut": 45, "nail trim": 15, "hand strip": 60, "de-shed bath": 50, "teeth brushing": 10}
SIZE_FACTOR = {"S": 1.0, "M": 1.25, "L": 1.5}
GROOMERS = {"G-1": "Ines", "G-2": "Tomas", "G-3": "Priya"}

CASES = [
    Case("ze_groom_1", "groom_lb", "unit_error", "biscuit", ("lookup_pet_record", 1), ("book_table", 1),
         "The pet record tool answers the dog's weight in pounds under a kilogram field, so the booking's table limit check rejects it."),
    Case("ze_groom_2", "groom_drop", "lossy_parsing", "biscuit", ("parse_intake", 1), ("book_table", 1),
         "Parsing the intake model's answer keeps only the first two services, so the booking does not cover the full-groom package."),
    Case("ze_groom_3", "groom_pet", "bad_memory_write", "biscuit", ("remember_pet", 1), ("book_table", 1),
         "The pet memory stores the sibling dog's pet id for the client, which the booking API refuses for that dog."),
    Case("ze_groom_4", "groom_slots", "off_by_one", "pepper", ("compute_duration", 1), ("book_table", 1),
         "The duration rounding uses a range that stops one quarter-hour short, so the booked slot is shorter than the services."),
    Case("ze_groom_5", "groom_groomer", "hallucinated_value", "pepper", ("plan_slot", 1), ("check_calendar", 1),
         "The slot planner names a groomer id that is not on the roster it was given, and the calendar lookup fails."),
]
REF_INPUTS = ["luna", "rocco", "mochi", "otis"]


def policy(request: Any) -> str:
    role, p = role_and_payload(request)
    if role == "intake":
        text = p["request"]
        client = text.split("C-")[1][:2]
        names = [n for n in PETS["C-" + client] if n.title() in text]
        services = [s for s in sorted(SERVICE_MIN, key=lambda s: text.find(s)) if s in text and not (s == "bath" and "de-shed bath" in text)]
        day = next(d for d in ("Friday", "Saturday", "Sunday") if d in text)
        part = "morning" if "morning" in text else "afternoon"
        return "Here is the booking request:\n```json\n" + json.dumps({"client": "C-" + client, "dog": names[0], "services": services, "day": day, "part": part}) + "\n```"
    if role == "coat":
        breed = p["breed"]
        return json.dumps({"coat": "curly" if breed in ("goldendoodle", "poodle") else "double" if breed == "husky" else "wire" if breed == "schnauzer" else "short", "matting": breed == "goldendoodle"})
    if role == "slot":
        free = p["free_groomers"]
        gid = free[0]
        if active("groom_groomer"):
            gid = "G-" + str(len(GROOMERS) + 4)
        return json.dumps({"groomer": gid, "start": p["day"] + (" 09:00" if p["part"] == "morning" else " 14:00")})
    return "{}"


class BookingRejected(RuntimeError):
    pass


def _llm(name: str, system: str, payload: Any) -> str:
    with trajdebug.step(name, kind="llm", input={"messages": [{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload, sort_keys=True)}]}) as s:
        text = chat("groom-llm", system, payload)
        s.output = {"role": "assistant", "content": text}
    return text


@trajdebug.step(kind="parse")
def parse_intake(answer: str) -> dict:
    body = answer.split("```json", 1)[1].split("```", 1)[0]
    data = json.loads(body)
    if active("groom_drop"):
        data["services"] = data["services"][:2]
    return data


@trajdebug.step(kind="tool")
def lookup_pet_record(client: str, dog: str) -> dict:
    rec = dict(PETS[client][dog])
    if active("groom_lb"):
        rec["weight_kg"] = round(rec["weight_kg"] * 2.20462, 1)
    return {"client": client, "dog": dog, **rec}


@trajdebug.step(kind="state")
def remember_pet(record: dict) -> None:
    run = trajdebug.current_run()
    pet_id = record["pet_id"]
    if active("groom_pet"):
        others = [v["pet_id"] for k, v in PETS[record["client"]].items() if k != record["dog"]]
        pet_id = others[0] if others else pet_id
    run.state["pet"] = {"client": record["client"], "pet_id": pet_id, "weight_kg": record["weight_kg"], "breed": record["breed"]}


@trajdebug.step(kind="retrieval")
def find_breed_rules(breed: str) -> list[dict]:
    return [
        {"doc": f"handbook/{breed}.md", "text": f"{breed}: brush out before bath; size class by weight, S<10kg, M<23kg, L otherwise."},
        {"doc": "handbook/tables.md", "text": "Table T1 takes dogs up to 40 kg; T2 up to 20 kg."},
    ]


@trajdebug.step(kind="other")
def size_class() -> str:
    pet = trajdebug.current_run().state["pet"]
    w = pet["weight_kg"]
    return "S" if w < 10 else "M" if w < 23 else "L"


@trajdebug.step(kind="tool")
def price_service(service: str, size: str) -> dict:
    base = {"bath": 25, "haircut": 40, "nail trim": 12, "hand strip": 55, "de-shed bath": 45, "teeth brushing": 8}[service]
    return {"service": service, "size": size, "price_eur": round(base * SIZE_FACTOR[size], 2), "minutes": SERVICE_MIN[service]}


@trajdebug.step(kind="other")
def compute_duration(priced: list[dict], size: str) -> int:
    raw = sum(p["minutes"] for p in priced) * SIZE_FACTOR[size]
    quarters = list(range(0, int(raw) + 15, 15))
    if active("groom_slots"):
        quarters = list(range(0, int(raw), 15))
    return max(q for q in quarters if q < raw + 15) if quarters else 15


@trajdebug.step(kind="tool")
def list_free_groomers(day: str, part: str) -> list[str]:
    return sorted(GROOMERS)[1:] if part == "afternoon" else sorted(GROOMERS)


@trajdebug.step(kind="tool")
def check_calendar(groomer: str, start: str, minutes: int) -> dict:
    if groomer not in GROOMERS:
        raise BookingRejected(f"GET /calendar/{groomer}: 404 Not Found {{\"error\": \"no groomer with id {groomer}\"}}")
    return {"groomer": groomer, "start": start, "free_minutes": 240}


@trajdebug.step(kind="tool")
def book_table(booking: dict) -> dict:
    pet = trajdebug.current_run().state["pet"]
    known = {v["pet_id"]: k for v in PETS[booking["client"]].values() for k in [v["pet_id"]]}
    if pet["pet_id"] not in known or [k for k, v in PETS[booking["client"]].items() if v["pet_id"] == pet["pet_id"]] != [booking["dog"]]:
        raise BookingRejected(f"POST /bookings: 409 Conflict {{\"error\": \"pet {pet['pet_id']} is not {booking['dog'].title()} of client {booking['client']}\"}}")
    if pet["weight_kg"] > 40:
        raise BookingRejected(f"POST /bookings: 422 {{\"error\": \"weight_kg {pet['weight_kg']} over the 40 kg limit of table T1\"}}")
    need = sum(SERVICE_MIN[s] for s in booking["services"]) * SIZE_FACTOR[booking["size"]]
    if booking["minutes"] < need:
        raise BookingRejected(f"POST /bookings: 422 {{\"error\": \"slot of {booking['minutes']} min is shorter than the {need:.0f} min the services take\"}}")
    if booking["package"] == "full groom" and not {"bath", "haircut", "nail trim"} <= set(booking["services"]):
        raise BookingRejected("POST /bookings: 422 {\"error\": \"package 'full groom' needs bath, haircut and nail trim\"}")
    return {"booking": "B-" + booking["client"][2:] + booking["dog"][:3].upper(), "status": "confirmed"}


@trajdebug.step(kind="agent")
def coat_assessor(record: dict) -> dict:
    text = _llm("assess_coat", "ROLE: coat\nYou assess a dog's coat from its breed and answer JSON.", {"breed": record["breed"]})
    with trajdebug.step("read_coat", kind="parse", input=text) as s:
        coat = json.loads(text)
        s.output = coat
    return coat


def record(main_input: str, path: Path) -> None:
    request = REQUESTS[main_input]
    try:
        with trajdebug.run(NAME, path=str(path), task="book a grooming appointment") as run:
            with trajdebug.step("receive_request", kind="input") as s:
                s.output = {"channel": "web form", "text": request}
            answer = _llm("read_request", "ROLE: intake\nExtract client, dog, services, day and part of day as JSON in a fenced block.", {"request": request})
            intake = parse_intake(answer)
            rec = lookup_pet_record(intake["client"], intake["dog"])
            remember_pet(rec)
            rules = find_breed_rules(rec["breed"])
            size = size_class()
            priced = [price_service(svc, size) for svc in intake["services"]]
            coat = coat_assessor(rec)
            if coat.get("matting"):
                priced.append(price_service("bath", size) | {"service": "dematting", "minutes": 0, "price_eur": 15.0})
            free = list_free_groomers(intake["day"], intake["part"])
            plan = json.loads(_llm("plan_slot", "ROLE: slot\nPick a free groomer and start time; answer JSON.", {"free_groomers": free, "day": intake["day"], "part": intake["part"], "services": intake["services"], "rules": rules[0]["text"]}))
            cal = check_calendar(plan["groomer"], plan["start"], 60 * len(intake["services"]))
            minutes = compute_duration(priced, size)
            package = "full groom" if "full groom" in request else "custom"
            booking = {"client": intake["client"], "dog": intake["dog"], "services": intake["services"], "size": size,
                       "minutes": minutes, "groomer": cal["groomer"], "start": cal["start"], "package": package,
                       "total_eur": round(sum(p["price_eur"] for p in priced), 2)}
            confirmation = book_table(booking)
            with trajdebug.step("send_confirmation", kind="output") as s:
                s.output = f"Booked {intake['dog'].title()} with {GROOMERS[cal['groomer']]} {cal['start']} ({confirmation['booking']}), {booking['total_eur']} EUR"
    except BookingRejected:
        pass
