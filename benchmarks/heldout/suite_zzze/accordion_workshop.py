"""Accordion repair workshop: estimates a repair from a customer's ticket (trajdebug SDK route).

Shape: intake -> model triage (JSON) -> parse -> customer history into run.state -> a loop over the
reeds (meter reading, retune minutes) -> work lines -> supplier quote with a retry -> pricing ->
parts order (tool) -> customer letter (model) -> estimate check (final condition).
"""

from __future__ import annotations

import json

from common import chat, last_user

import trajdebug


NAME = "accordion-workshop-estimator"
ROUTE = "sdk"
DOMAIN = "accordion repairer's workshop"
SHAPE = "linear pipeline + per-reed loop, supplier retry, run.state, final validator (~20-26 steps)"

SW = dict.fromkeys(("meter_hz", "old_catalog", "skip_first_reed", "quiet_price_gap", "extra_reed"), False)

INPUTS = [
    {
        "ticket": "AC-101",
        "instrument": "Hohner Morino IV",
        "complaint": "A4 and C5 sound sour, bellows leak at the corner",
        "reeds": ["A4", "C5"],
        "budget_eur": 420,
    },
    {
        "ticket": "AC-102",
        "instrument": "Paolo Soprani 72",
        "complaint": "E5 buzzes, D4 is flat, G4 slow to speak",
        "reeds": ["E5", "D4", "G4"],
        "budget_eur": 520,
    },
    {
        "ticket": "AC-103",
        "instrument": "Weltmeister Stella",
        "complaint": "F4 silent",
        "reeds": ["F4"],
        "budget_eur": 260,
    },
    {
        "ticket": "AC-104",
        "instrument": "Scandalli Super VI",
        "complaint": "B4, C5, A5 and D5 all out of tune after a flight",
        "reeds": ["B4", "C5", "A5", "D5"],
        "budget_eur": 640,
    },
    {
        "ticket": "AC-105",
        "instrument": "Castagnari Tommy",
        "complaint": "G5 squeaks and E4 is sharp",
        "reeds": ["G5", "E4"],
        "budget_eur": 380,
    },
]

METER = {
    "A4": -18,
    "C5": 12,
    "E5": 22,
    "D4": -15,
    "G4": 9,
    "F4": -30,
    "B4": 14,
    "A5": -11,
    "D5": 17,
    "G5": 25,
    "E4": 13,
}
REED_HZ = {
    "A4": 440.0,
    "C5": 523.25,
    "E5": 659.25,
    "D4": 293.66,
    "G4": 392.0,
    "F4": 349.23,
    "B4": 493.88,
    "A5": 880.0,
    "D5": 587.33,
    "G5": 783.99,
    "E4": 329.63,
}
HISTORY = {
    "AC-101": [{"date": "2025-04-02", "work": "reseal bass valves"}],
    "AC-102": [],
    "AC-103": [{"date": "2024-11-19", "work": "strap rivets"}],
    "AC-104": [],
    "AC-105": [],
}
LABOUR_EUR_PER_MIN = 1.1


def policy(request):
    prompt = last_user(request)
    if prompt.startswith("TRIAGE"):
        job = json.loads(prompt.split("\n", 1)[1])
        reeds = list(job["reeds"])
        if SW["extra_reed"]:
            reeds = [*reeds, "G#5"]
        work = ["retune"] + (["reseal"] if "leak" in job["complaint"] else [])
        return json.dumps({"work": work, "reeds": reeds, "valves_needed": len(reeds) * 2})
    if prompt.startswith("LETTER"):
        data = json.loads(prompt.split("\n", 1)[1])
        return (
            f"Dear customer, your {data['instrument']} ({data['ticket']}) needs {', '.join(data['work'])}. "
            f"The estimate is {data['total_eur']:.2f} EUR, ready in {data['days']} days."
        )
    return "I can only help with workshop tickets."


@trajdebug.step(kind="input")
def take_ticket(ticket: dict) -> dict:
    return dict(ticket)


@trajdebug.step(kind="llm")
def triage_complaint(messages: list) -> str:
    return chat(_server, messages)


@trajdebug.step(kind="parse")
def read_triage(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="tool")
def load_customer_history(ticket: str) -> list:
    return [dict(h) for h in HISTORY[ticket]]


@trajdebug.step(kind="state")
def note_history(history: list) -> None:
    trajdebug.current_run().state["history"] = {
        "visits": len(history),
        "last": history[-1] if history else None,
    }


@trajdebug.step(kind="tool")
def read_tuning_meter(reed: str) -> dict:
    if reed not in METER:
        raise KeyError(f"no reed {reed} on this instrument's treble block")
    cents = METER[reed]
    if SW["meter_hz"] and reed == _job["reeds"][0]:
        # the bench meter's display mode was left on Hz deviation
        return {"reed": reed, "offset": round(REED_HZ[reed] * (2 ** (cents / 1200) - 1) * 100, 1)}
    return {"reed": reed, "offset": cents}


@trajdebug.step(kind="other")
def retune_minutes(reading: dict) -> dict:
    return {"reed": reading["reed"], "minutes": round(abs(reading["offset"]) * 1.5 + 10)}


@trajdebug.step(kind="other")
def list_work_lines(triage: dict, minutes: list) -> list:
    lines = []
    start = 1 if SW["skip_first_reed"] else 0
    for m in minutes[start:]:
        lines.append({"item": f"retune {m['reed']}", "minutes": m["minutes"]})
    if "reseal" in triage["work"]:
        lines.append({"item": "reseal bellows corner", "minutes": 45})
    return lines


_calls = {"supplier": 0}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def supplier_quote(part: str, qty: int) -> dict:
    _calls["supplier"] += 1
    if _calls["supplier"] % 2 == 1:
        raise ConnectionError("supplier catalogue gateway did not answer")
    if SW["old_catalog"]:
        return {"quote": "Q-2291", "part": part, "qty": qty, "unit_eur": 3.4, "valid_until": "2025-11-30"}
    return {"quote": "Q-3107", "part": part, "qty": qty, "unit_eur": 3.9, "valid_until": "2027-01-31"}


@trajdebug.step(kind="tool")
def parts_price(part: str, qty: int, quote: dict) -> float:
    if SW["quiet_price_gap"]:
        raise LookupError(f"price list has no row for {part}")
    return round(quote["unit_eur"] * qty, 2)


@trajdebug.step(kind="other")
def price_job(lines: list, quote: dict) -> dict:
    labour = round(sum(line["minutes"] for line in lines) * LABOUR_EUR_PER_MIN, 2)
    try:
        parts = parts_price(quote["part"], quote["qty"], quote)
    except LookupError:
        parts = 0.0
    return {"labour_eur": labour, "parts_eur": parts, "total_eur": round(labour + parts, 2)}


@trajdebug.step(kind="state")
def write_estimate(price: dict, lines: list) -> None:
    trajdebug.current_run().state["estimate"] = {**price, "lines": [line["item"] for line in lines]}


@trajdebug.step(kind="tool")
def order_parts(quote: dict, price: dict) -> dict:
    if quote["valid_until"] < "2026-12-01":
        raise RuntimeError(
            f"supplier rejected order: quote {quote['quote']} expired on {quote['valid_until']}"
        )
    if price["parts_eur"] <= 0:
        raise RuntimeError(
            f"supplier rejected order: {quote['qty']} x {quote['part']} at a total of {price['parts_eur']:.2f} EUR"
        )
    return {"order": f"PO-{quote['quote'][2:]}", "eta_days": 4}


@trajdebug.step(kind="llm")
def compose_letter(messages: list) -> str:
    return chat(_server, messages)


@trajdebug.step(kind="condition", attributes={"final": True})
def check_estimate(job: dict, letter: str) -> str:
    est = trajdebug.current_run().state["estimate"]
    for reed in job["reeds"]:
        if not any(reed in item for item in est["lines"]):
            raise ValueError(f"estimate for {job['ticket']} has no work line for reed {reed}")
    if est["total_eur"] > job["budget_eur"]:
        raise ValueError(
            f"estimate {est['total_eur']:.2f} EUR is above the customer's approved {job['budget_eur']} EUR"
        )
    if f"{est['total_eur']:.2f}" not in letter:
        raise ValueError("letter does not state the estimate total")
    return "approved"


_server = None
_job: dict = {}


def record(inp: dict, server, dest: str) -> None:
    global _server, _job
    _server = server
    _job = inp
    _calls["supplier"] = 0
    try:
        with trajdebug.run(NAME, task=f"estimate repair {inp['ticket']}", path=dest):
            job = take_ticket(inp)
            tri_text = triage_complaint(
                [
                    {"role": "system", "content": "You triage accordion repair tickets. Answer JSON."},
                    {
                        "role": "user",
                        "content": "TRIAGE\n"
                        + json.dumps({k: job[k] for k in ("instrument", "complaint", "reeds")}),
                    },
                ]
            )
            triage = read_triage(tri_text)
            history = load_customer_history(job["ticket"])
            note_history(history)
            minutes = [retune_minutes(read_tuning_meter(reed)) for reed in triage["reeds"]]
            lines = list_work_lines(triage, minutes)
            quote = supplier_quote("valve leather", triage["valves_needed"])
            price = price_job(lines, quote)
            write_estimate(price, lines)
            order = order_parts(quote, price)
            days = 3 + order["eta_days"]
            letter = compose_letter(
                [
                    {"role": "system", "content": "Write a short estimate letter."},
                    {
                        "role": "user",
                        "content": "LETTER\n"
                        + json.dumps(
                            {
                                "instrument": job["instrument"],
                                "ticket": job["ticket"],
                                "work": triage["work"],
                                "total_eur": price["total_eur"],
                                "days": days,
                            }
                        ),
                    },
                ]
            )
            check_estimate(job, letter)
    except Exception:  # noqa: BLE001  (the recorded run keeps the failure; the generator checks it)
        pass


CASES = [
    {
        "id": "acc_meter_hz",
        "input": 1,
        "switch": "meter_hz",
        "fault_kind": "unit_error",
        "root": ("read_tuning_meter", 1, "tool"),
        "failure": ("check_estimate", 1),
        "description": "The tuning meter reports the first reed's deviation in hundredths of a hertz instead of cents, inflating its retune time and the estimate.",
    },
    {
        "id": "acc_old_catalog",
        "input": 0,
        "switch": "old_catalog",
        "fault_kind": "stale_data",
        "root": ("supplier_quote", 2, "tool"),
        "failure": ("order_parts", 1),
        "description": "The supplier quote comes from last year's catalogue, already expired when the parts are ordered.",
    },
    {
        "id": "acc_first_reed",
        "input": 3,
        "switch": "skip_first_reed",
        "fault_kind": "off_by_one",
        "root": ("list_work_lines", 1, "other"),
        "failure": ("check_estimate", 1),
        "description": "The work lines start from the second measured reed, so reed B4 gets no retune line.",
    },
    {
        "id": "acc_price_gap",
        "input": 2,
        "switch": "quiet_price_gap",
        "fault_kind": "swallowed_error",
        "root": ("price_job", 1, "other"),
        "failure": ("order_parts", 1),
        "description": "Pricing catches the missing price-list row and prices the valve leather at zero instead of stopping.",
    },
    {
        "id": "acc_extra_reed",
        "input": 4,
        "switch": "extra_reed",
        "fault_kind": "hallucinated_value",
        "root": ("triage_complaint", 1, "llm"),
        "failure": ("read_tuning_meter", 3),
        "description": "The triage answer adds a reed G#5 that the ticket never mentions, which the meter cannot find.",
    },
]
