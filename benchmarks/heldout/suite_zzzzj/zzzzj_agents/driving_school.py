"""A driving school's booking assistant: a learner asks for a block of lessons before the practical test.

Route: trajdebug's own recorder (JSONL). Shape: input -> model extraction -> parse -> learner record
(retrieval) -> run.state write -> theory check -> instructor roster -> free slots fetched concurrently
(asyncio) -> model plans the lessons as parallel tool calls -> car -> one booking per call -> price ->
deposit -> test slot reservation -> final check -> confirmation message.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import date, datetime, timedelta

import trajdebug
from trajdebug.testing import Reply, tool_call

from . import common

NAME = "driving-lesson-booker"
ROUTE = "sdk"
DOMAIN = "driving school: lesson blocks before a practical test"
SHAPE = "extract+parse, retrieval, run.state, async fan-out of slot lookups, parallel tool calls, deposit, final check"
SWITCH = None

TODAY = date(2025, 6, 9)

LEARNERS = {
    "L-201": {"name": "Priya Nair", "gearbox": "automatic", "theory_cert": "TC-88213", "test_date": "2025-06-18",
              "test_centre": "Cardington", "hours_logged": 18},
    "L-202": {"name": "Tom Okafor", "gearbox": "manual", "theory_cert": "TC-77120", "test_date": "2025-06-20",
              "test_centre": "Chertsey", "hours_logged": 31},
    "L-203": {"name": "Sofia Rossi", "gearbox": "manual", "theory_cert": "TC-66510", "test_date": "2025-06-24",
              "test_centre": "Cardington", "hours_logged": 22},
    "L-204": {"name": "Ewan McLeod", "gearbox": "automatic", "theory_cert": "TC-90041", "test_date": "2025-06-19",
              "test_centre": "Bedford", "hours_logged": 40},
    "L-205": {"name": "Hana Sato", "gearbox": "manual", "theory_cert": "TC-51237", "test_date": "2025-06-27",
              "test_centre": "Chertsey", "hours_logged": 12},
}
THEORY = {"TC-88213": "2026-03-01", "TC-77120": "2025-11-14", "TC-66510": "2026-01-30",
          "TC-90041": "2025-09-02", "TC-51237": "2026-05-18"}
INSTRUCTORS = [
    {"instructor_id": "INS-01", "name": "Dave Price", "teaches": ["manual", "automatic"]},
    {"instructor_id": "INS-02", "name": "Aisha Khan", "teaches": ["automatic"]},
    {"instructor_id": "INS-03", "name": "Gareth Lewis", "teaches": ["manual"]},
    {"instructor_id": "INS-04", "name": "Mei Chen", "teaches": ["manual"]},
]
CARS = {"manual": {"reg": "MN21 KLO", "gearbox": "manual"}, "automatic": {"reg": "YK21 ABC", "gearbox": "automatic"}}
CANCELLATIONS = {"INS-02": ["2025-06-18T19:00"], "INS-03": ["2025-06-24T18:00"]}
TEST_BOOKINGS = {lid: rec["gearbox"] for lid, rec in LEARNERS.items()}  # the exam centre's record

INPUTS = [
    {"request_id": "web-5521", "learner_id": "L-201",
     "message": "Hi, Priya here (L-201). Could you book me 3 lessons before my test? Evenings please."},
    {"request_id": "web-5522", "learner_id": "L-202",
     "message": "Tom Okafor, learner L-202. I'd like 2 more lessons ahead of the test, evenings if possible."},
    {"request_id": "web-5523", "learner_id": "L-203",
     "message": "This is Sofia (L-203): please book 4 lessons before my practical, mornings suit me best."},
    {"request_id": "web-5524", "learner_id": "L-204",
     "message": "Ewan McLeod L-204 - can I get 3 lessons in the evenings before the test day?"},
    {"request_id": "web-5525", "learner_id": "L-205",
     "message": "Hana Sato (L-205). Two lessons before my test please, mornings."},
]

CASES = [
    {"id": "A1", "input": 1, "fault_kind": "unit_error",
     "root": ("quote_package", 1), "failure": ("take_deposit", 1),
     "description": "The pricing service quoted the lesson rate in pence (3800) where the school reads pounds, "
                    "so the deposit came to 3800.00 GBP and the card authorisation refused it."},
    {"id": "A2", "input": 0, "fault_kind": "off_by_one",
     "root": ("list_free_slots", 2), "failure": ("final_check", 1),
     "description": "The free-slot lookup searched up to and including the test date instead of the day before, "
                    "so a lesson was booked on the evening of the practical test and the final check rejected it."},
    {"id": "A3", "input": 3, "fault_kind": "bad_memory_write",
     "root": ("remember_learner", 1), "failure": ("reserve_test_slot", 1),
     "description": "The learner profile written to run.state read a 'transmission' key the record does not have "
                    "and defaulted to manual for an automatic learner, so the test vehicle did not match the booking."},
    {"id": "A4", "input": 2, "fault_kind": "hallucinated_value",
     "root": ("plan_lessons", 1), "failure": ("book_lesson", 4),
     "description": "The planning model called book_lesson with instructor INS-05, an id that is on no roster it was "
                    "shown, and the booking system rejected that lesson."},
    {"id": "A5", "input": 4, "fault_kind": "swallowed_error",
     "root": ("check_theory_certificate", 1), "failure": ("reserve_test_slot", 1),
     "description": "The theory-certificate check timed out and the step caught it, returning an unverified "
                    "certificate with no expiry instead of failing, so the test slot could not be confirmed."},
]


# -- the model -----------------------------------------------------------------------------------

WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def brain(request):
    system = common.system_text(request)
    user = common.user_text(request)
    if system.startswith("Extract"):
        lid = re.search(r"L-\d{3}", user).group(0)
        count = re.search(r"\b(\d|one|two|three|four|five)\b", user.lower()).group(1)
        when = "morning" if "morning" in user.lower() else "evening"
        return json.dumps({"learner_id": lid, "lessons": int(WORDS.get(count, count)), "time_of_day": when})
    if system.startswith("You schedule"):
        if common.tool_results(request):
            return "All lessons booked."
        brief = json.loads(user)
        slots = sorted(brief["free_slots"], key=lambda s: s["start"])
        chosen = slots[-brief["lessons"]:]  # as close to the test as possible
        calls = []
        for s in chosen:
            instructor = s["instructor_id"]
            if SWITCH == "A4" and len(calls) == len(chosen) - 1:
                instructor = "INS-05"
            calls.append(tool_call("book_lesson", {"instructor_id": instructor, "start": s["start"]}))
        return Reply(tool_calls=tuple(calls))
    if system.startswith("Write"):
        brief = json.loads(user)
        times = ", ".join(b["start"].replace("T", " ") for b in brief["bookings"])
        return (f"Hi {brief['name'].split()[0]}, your lessons are booked for {times}. "
                f"A deposit of {brief['deposit']:.2f} GBP has been taken. Good luck on {brief['test_date']}!")
    return "Sorry, I can't help with that."


# -- steps ---------------------------------------------------------------------------------------


@trajdebug.step(kind="input")
def read_request(request: dict) -> dict:
    return {"learner_id": request["learner_id"], "message": request["message"]}


@trajdebug.step(kind="llm")
def extract_booking(messages: list[dict]) -> dict:
    return common.complete(messages)


@trajdebug.step(kind="parse")
def parse_booking(answer: dict) -> dict:
    data = json.loads(answer["content"])
    return {"learner_id": data["learner_id"].strip().upper(), "lessons": int(data["lessons"]),
            "time_of_day": data["time_of_day"]}


@trajdebug.step(kind="retrieval")
def fetch_learner_record(learner_id: str) -> dict:
    return {"learner_id": learner_id, **LEARNERS[learner_id]}


@trajdebug.step(kind="state")
def remember_learner(record: dict) -> dict:
    if SWITCH == "A3":
        transmission = record.get("transmission", "manual")
    else:
        transmission = record["gearbox"]
    profile = {"learner_id": record["learner_id"], "name": record["name"], "transmission": transmission,
               "test_date": record["test_date"], "test_centre": record["test_centre"]}
    trajdebug.current_run().state["learner"] = profile
    return profile


def _theory_register(cert: str) -> dict:
    if SWITCH == "A5":
        raise TimeoutError(f"theory register did not answer for {cert} within 5 s")
    return {"certificate": cert, "status": "pass", "expires": THEORY[cert]}


@trajdebug.step(kind="tool")
def check_theory_certificate(cert: str) -> dict:
    try:
        return _theory_register(cert)
    except Exception:  # the register is flaky; carry on with what we know
        return {"certificate": cert, "status": "unverified", "expires": None}


@trajdebug.step(kind="tool")
def list_instructors() -> list[dict]:
    transmission = trajdebug.current_run().state["learner"]["transmission"]
    return [i for i in INSTRUCTORS if transmission in i["teaches"]]


def _diary(instructor_id: str) -> list[datetime]:
    n = int(instructor_id[-1])
    out = []
    for day in range(0, 30):
        d = TODAY + timedelta(days=day)
        if (day + n) % 3 == 0:
            out.append(datetime(d.year, d.month, d.day, 18 if n % 2 else 19, 0))
        if (day + n) % 4 == 1:
            out.append(datetime(d.year, d.month, d.day, 9 if n % 2 else 10, 30))
    out += [datetime.fromisoformat(x) for x in CANCELLATIONS.get(instructor_id, [])]
    return sorted(out)


@trajdebug.step(kind="tool")
async def list_free_slots(instructor_id: str, start: str, end: str, time_of_day: str) -> list[dict]:
    await asyncio.sleep(0)
    lo, hi = date.fromisoformat(start), date.fromisoformat(end)
    out = []
    for slot in _diary(instructor_id):
        if lo <= slot.date() <= hi and (slot.hour >= 17) == (time_of_day == "evening"):
            out.append({"instructor_id": instructor_id, "start": slot.isoformat(timespec="minutes")})
    return out


async def _all_slots(instructors: list[dict], test_date: str, time_of_day: str) -> list[list[dict]]:
    last = date.fromisoformat(test_date) - timedelta(days=1)
    if SWITCH == "A2":
        last = date.fromisoformat(test_date)
    return list(await asyncio.gather(*(
        list_free_slots(i["instructor_id"], TODAY.isoformat(), last.isoformat(), time_of_day) for i in instructors)))


@trajdebug.step(kind="agent")
def gather_slots(instructors: list[dict], test_date: str, time_of_day: str) -> list[dict]:
    per = asyncio.run(_all_slots(instructors, test_date, time_of_day))
    return [s for lst in per for s in lst]


@trajdebug.step(kind="llm")
def plan_lessons(messages: list[dict], tools: list[dict]) -> dict:
    return common.complete(messages, tools)


@trajdebug.step(kind="tool")
def assign_car() -> dict:
    return dict(CARS[trajdebug.current_run().state["learner"]["transmission"]])


def book_lesson(call: dict, learner_id: str, car: dict) -> dict:
    with trajdebug.step("book_lesson", kind="tool", input=call) as s:
        args = call["arguments"]
        if args["instructor_id"] not in {i["instructor_id"] for i in INSTRUCTORS}:
            raise LookupError(f"instructor {args['instructor_id']} is not on the school roster")
        s.output = {"booking": f"BK-{learner_id[-3:]}-{args['start'][5:10].replace('-', '')}",
                    "instructor_id": args["instructor_id"], "start": args["start"], "car": car["reg"]}
    return s.output


@trajdebug.step(kind="tool")
def quote_package(learner_id: str, lessons: int) -> dict:
    if SWITCH == "A1":
        return {"learner_id": learner_id, "lessons": lessons, "lesson_rate": 3800, "currency": "GBP"}
    return {"learner_id": learner_id, "lessons": lessons, "lesson_rate": 38.0, "currency": "GBP"}


@trajdebug.step(kind="other")
def compute_deposit(quote: dict) -> dict:
    total = quote["lesson_rate"] * quote["lessons"]
    return {"total": round(total, 2), "deposit": round(total / 2, 2), "currency": quote["currency"]}


@trajdebug.step(kind="tool")
def take_deposit(learner_id: str, amount: dict) -> dict:
    if amount["deposit"] > 300:
        raise RuntimeError(f"deposit of {amount['deposit']:.2f} {amount['currency']} is above the card "
                           f"authorisation limit of 300.00 GBP for {learner_id}")
    return {"receipt": f"RC-{learner_id[-3:]}-{int(amount['deposit'] * 100)}", "charged": amount["deposit"]}


@trajdebug.step(kind="tool")
def reserve_test_slot(theory: dict) -> dict:
    learner = trajdebug.current_run().state["learner"]
    booked = TEST_BOOKINGS[learner["learner_id"]]
    if learner["transmission"] != booked:
        raise ValueError(f"test vehicle for {learner['learner_id']} is {learner['transmission']} but the practical "
                         f"test at {learner['test_centre']} is booked as {booked}")
    if not theory.get("expires"):
        raise ValueError(f"theory certificate {theory['certificate']} has no expiry date on file; "
                         f"the practical test on {learner['test_date']} cannot be confirmed")
    return {"learner_id": learner["learner_id"], "test_date": learner["test_date"], "vehicle": learner["transmission"],
            "status": "confirmed"}


@trajdebug.step(kind="condition")
def final_check(bookings: list[dict], test: dict) -> bool:
    for b in bookings:
        if b["start"][:10] >= test["test_date"]:
            raise AssertionError(f"lesson {b['booking']} with {b['instructor_id']} at {b['start']} is not before "
                                 f"the practical test on {test['test_date']}")
    return True


@trajdebug.step(kind="llm")
def write_confirmation(messages: list[dict]) -> dict:
    return common.complete(messages)


@trajdebug.step(kind="output")
def send_confirmation(text: str, learner_id: str) -> dict:
    return {"to": learner_id, "sms": text}


BOOK_TOOL = common.tool_spec("book_lesson", "Book one driving lesson.", {"instructor_id": "string", "start": "string"})


def record(inp: dict, path: str) -> None:
    with trajdebug.run(NAME, task=inp["message"], path=path, metadata={"request_id": inp["request_id"]}):
        req = read_request(inp)
        answer = extract_booking([
            {"role": "system", "content": "Extract the booking request as JSON with keys learner_id, lessons, "
                                          "time_of_day (morning or evening)."},
            {"role": "user", "content": req["message"]}])
        booking = parse_booking(answer)
        record_ = fetch_learner_record(booking["learner_id"])
        learner = remember_learner(record_)
        theory = check_theory_certificate(record_["theory_cert"])
        instructors = list_instructors()
        slots = gather_slots(instructors, learner["test_date"], booking["time_of_day"])
        brief = {"learner": learner["name"], "test_date": learner["test_date"], "lessons": booking["lessons"],
                 "free_slots": slots}
        msgs = [{"role": "system", "content": "You schedule driving lessons. Pick the lessons closest before the "
                                              "test and call book_lesson once per lesson."},
                {"role": "user", "content": json.dumps(brief)}]
        plan = plan_lessons(msgs, [BOOK_TOOL])
        car = assign_car()
        bookings = [book_lesson(call, learner["learner_id"], car) for call in plan["tool_calls"]]
        quote = quote_package(learner["learner_id"], len(bookings))
        amount = compute_deposit(quote)
        take_deposit(learner["learner_id"], amount)
        test = reserve_test_slot(theory)
        final_check(bookings, test)
        text = write_confirmation([
            {"role": "system", "content": "Write a short SMS confirming the lessons."},
            {"role": "user", "content": json.dumps({"name": learner["name"], "bookings": bookings,
                                                    "deposit": amount["deposit"], "test_date": test["test_date"]})}])
        send_confirmation(text["content"], learner["learner_id"])
