"""Clown school workshops: a planner model writes the term plan, a workshop sub-agent per item books rooms
(parallel availability checks), orders props and writes a blurb; a timetable validator ends the run (sdk)."""
from __future__ import annotations

import asyncio
import json

import trajdebug
from openai import OpenAI

NAME = "clown-workshop-planner"
ROUTE = "sdk"
DOMAIN = "clown school's workshops"
SHAPE = "planner model call + plan parser, then one sub-agent per workshop (instructor memory read, parallel room checks via asyncio, props model call + props tool, notes gathering + blurb model call), term calendar tool, timetable validator step"
SWITCH = None

CATALOGUE = {
    "Juggling I": {"prereq": None, "age": "8-12", "props": "juggling balls", "instructor": "Pip Larkin"},
    "Juggling II": {"prereq": "Juggling I", "age": "10-14", "props": "juggling clubs", "instructor": "Pip Larkin"},
    "Stilt Walking": {"prereq": None, "age": "12-16", "props": "stilts", "instructor": "Greta Fumble"},
    "Clown Mime": {"prereq": None, "age": "6-10", "props": "white gloves", "instructor": "Otto Bellows"},
    "Unicycling": {"prereq": None, "age": "10-16", "props": "unicycles", "instructor": "Rosa Wobble"},
    "Slapstick": {"prereq": "Clown Mime", "age": "8-12", "props": "slapsticks", "instructor": "Otto Bellows"},
}
ROOMS = {"Big Top": 30, "Studio B": 14, "Gym Hall": 20}

INPUTS = [
    {"term": "Spring 2027", "weeks": 6, "enrolment": {"Juggling I": 12, "Juggling II": 8}},
    {"term": "Summer 2027", "weeks": 5, "enrolment": {"Clown Mime": 10, "Slapstick": 9, "Unicycling": 6}},
    {"term": "Autumn 2027", "weeks": 8, "enrolment": {"Stilt Walking": 7, "Juggling I": 14, "Juggling II": 11, "Clown Mime": 9}},
    {"term": "Winter 2027", "weeks": 4, "enrolment": {"Unicycling": 5, "Stilt Walking": 8}},
    {"term": "Spring 2028", "weeks": 5, "enrolment": {"Clown Mime": 12, "Slapstick": 10, "Juggling I": 9, "Unicycling": 7, "Stilt Walking": 6}},
]

CASES = [
    {"id": "zzzh-clown-01", "input": 2, "switch": "order", "fault_kind": "plan_error",
     "root": "plan_term", "root_occurrence": 1, "failure": "validate_timetable",
     "description": "The term plan put Juggling II in week 1, ahead of its prerequisite Juggling I."},
    {"id": "zzzh-clown-02", "input": 1, "switch": "entity", "fault_kind": "subagent_wrong_entity",
     "root": "workshop_agent", "root_occurrence": 2, "failure": "validate_timetable",
     "description": "The workshop sub-agent for Slapstick returned the booking it had made for Clown Mime, so Slapstick had no room of its own."},
    {"id": "zzzh-clown-03", "input": 4, "switch": "weeks", "fault_kind": "off_by_one",
     "root": "term_calendar", "root_occurrence": 1, "failure": "validate_timetable",
     "description": "The term calendar listed weeks 1 to 4 for a five-week term, leaving the last workshop without a week."},
    {"id": "zzzh-clown-04", "input": 0, "switch": "notes", "fault_kind": "context_pollution",
     "root": "gather_notes", "root_occurrence": 2, "failure": "validate_timetable",
     "description": "The notes gathered for the Juggling II blurb still held the Juggling I notes, so the blurb advertised ages 8-12 instead of 10-14."},
    {"id": "zzzh-clown-05", "input": 3, "switch": "props", "fault_kind": "wrong_tool_args",
     "root": "choose_props", "root_occurrence": 2, "failure": "validate_timetable",
     "description": "The props request for Stilt Walking asked for 2 pairs of stilts for 8 students."},
]


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Plan the term"):
        data = json.loads(user)
        names = list(data["enrolment"])
        order = sorted(names, key=lambda n: (CATALOGUE[n]["prereq"] is not None, names.index(n)))
        if SWITCH == "order" and "Juggling II" in order:
            order.remove("Juggling II")
            order.insert(0, "Juggling II")
        return json.dumps({"sequence": order})
    if system.startswith("Props order"):
        data = json.loads(user)
        qty = data["students"]
        if SWITCH == "props" and data["workshop"] == "Stilt Walking":
            qty = 2
        return json.dumps({"item": CATALOGUE[data["workshop"]]["props"], "qty": qty})
    if system.startswith("Write a blurb"):
        data = json.loads(user)
        ages = data["notes"][0]["age"]
        return f"{data['workshop']} with {data['notes'][0]['instructor']}: ages {ages}, {data['students']} places."
    return "Sorry, I only plan workshops."


@trajdebug.step(kind="tool")
async def room_free(room: str, workshop: str, students: int) -> dict:
    await asyncio.sleep(0)
    return {"room": room, "capacity": ROOMS[room], "free": ROOMS[room] >= students}


@trajdebug.step(kind="tool")
def order_props(item: str, qty: int) -> dict:
    return {"item": item, "qty": qty, "order": f"PR-{len(item)}{qty:02d}"}


@trajdebug.step(kind="tool")
def term_calendar(term: str, weeks: int) -> list:
    last = weeks if SWITCH == "weeks" else weeks + 1
    return list(range(1, last))


@trajdebug.step(kind="tool")
def instructor_memory(workshop: str) -> dict:
    return {"workshop": workshop, "instructor": CATALOGUE[workshop]["instructor"], "age": CATALOGUE[workshop]["age"]}


def record(server, inp, path):
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)

    def chat(messages):
        return client.chat.completions.create(model=server.model, messages=messages).choices[0].message.content

    @trajdebug.step(kind="llm")
    def plan_term(messages: list) -> str:
        return chat(messages)

    @trajdebug.step(kind="llm")
    def choose_props(messages: list) -> str:
        return chat(messages)

    @trajdebug.step(kind="llm")
    def write_blurb(messages: list) -> str:
        return chat(messages)

    @trajdebug.step(kind="other")
    def gather_notes(workshop: str, memory: dict) -> list:
        notes = trajdebug.current_run().state.setdefault("notes", [])
        if SWITCH == "notes" and notes:
            return [notes[-1], memory]
        notes.append(memory)
        return [memory]

    @trajdebug.step(kind="agent")
    def workshop_agent(workshop: str, students: int) -> dict:
        memory = instructor_memory(workshop)

        async def rooms():
            return await asyncio.gather(*(room_free(r, workshop, students) for r in ROOMS))

        checks = asyncio.run(rooms())
        room = min((c for c in checks if c["free"]), key=lambda c: c["capacity"])
        props_text = choose_props([{"role": "system", "content": "Props order: item and quantity as JSON."},
                                   {"role": "user", "content": json.dumps({"workshop": workshop, "students": students})}])
        wanted = json.loads(props_text)
        props = order_props(wanted["item"], wanted["qty"])
        notes = gather_notes(workshop, memory)
        blurb = write_blurb([{"role": "system", "content": "Write a blurb for the workshop from the notes."},
                             {"role": "user", "content": json.dumps({"workshop": workshop, "students": students, "notes": notes})}])
        result = {"workshop": workshop, "room": room["room"], "props": props, "blurb": blurb,
                  "instructor": memory["instructor"]}
        board = trajdebug.current_run().state.setdefault("bookings", {})
        if SWITCH == "entity" and board:
            return dict(list(board.values())[-1])
        board[workshop] = result
        return result

    @trajdebug.step(kind="condition")
    def validate_timetable(term: str, enrolment: dict, sequence: list, weeks: list, bookings: list) -> dict:
        seen = set()
        slots = {}
        for i, name in enumerate(sequence):
            pre = CATALOGUE[name]["prereq"]
            if pre and pre in enrolment and pre not in seen:
                raise AssertionError(f"{term}: {name} is scheduled before its prerequisite {pre}")
            seen.add(name)
            if i >= len(weeks):
                raise AssertionError(f"{term}: {name} has no week in a {len(weeks)}-week calendar")
            slots[name] = weeks[i]
        booked = {b["workshop"]: b for b in bookings}
        for name, students in enrolment.items():
            b = booked.get(name)
            if b is None or b is not bookings[sequence.index(name)]:
                raise AssertionError(f"{term}: {name} has no room booking of its own")
            if b["props"]["qty"] < students:
                raise AssertionError(f"{term}: {name} has {b['props']['qty']} {b['props']['item']} for {students} students")
            if f"ages {CATALOGUE[name]['age']}" not in b["blurb"]:
                raise AssertionError(f"{term}: the {name} blurb does not state the ages {CATALOGUE[name]['age']}")
        return {"term": term, "weeks": slots}

    with trajdebug.run(NAME, path=path, task=f"plan the {inp['term']} workshops"):
        plan = plan_term([{"role": "system", "content": "Plan the term: order the workshops."},
                          {"role": "user", "content": json.dumps({"term": inp["term"], "enrolment": inp["enrolment"]})}])
        with trajdebug.step("read_plan", kind="parse", input=plan) as s:
            sequence = json.loads(plan)["sequence"]
            s.output = sequence
        bookings = [workshop_agent(name, inp["enrolment"][name]) for name in sequence]
        weeks = term_calendar(inp["term"], inp["weeks"])
        validate_timetable(inp["term"], inp["enrolment"], sequence, weeks, bookings)
