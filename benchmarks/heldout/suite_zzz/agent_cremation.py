"""Crematorium service scheduling (sdk route): a planner and three sub-agents sharing a case-file memory.

Shape: model plan -> parser -> memory write, then the plan's tasks run as sub-agents (paperwork, chapel,
cremator), each reading and writing the case file through memory tools; a chapel slot chosen by the model,
a hold, a cremator booking, and a confirmation that checks the bookings fit together; ~20 steps.
"""
from __future__ import annotations

import json
import re

from openai import OpenAI

import trajdebug
from suite_common import last_user, system_text

NAME = "service-scheduler"
ROUTE = "sdk"
DOMAIN = "a crematorium's service scheduling"
SHAPE = "model plan + parser, then plan-driven sub-agents (paperwork, chapel, cremator) over a memory tool (case file), model slot choice, hold and booking tools, final confirmation; 14-22 steps"
SWITCH = None

DOCS = {
    "D-4471": {"deceased": "D-4471", "name": "Edith Marr", "form": "Cremation 4", "referee_signed": True},
    "D-4417": {"deceased": "D-4417", "name": "Ronald Pike", "form": "Cremation 4", "referee_signed": False},
    "D-5102": {"deceased": "D-5102", "name": "Walter Ings", "form": "Cremation 4", "referee_signed": True},
    "D-5120": {"deceased": "D-5120", "name": "Agnes Tully", "form": "Cremation 4", "referee_signed": False},
    "D-6038": {"deceased": "D-6038", "name": "Mary Okafor", "form": "Cremation 4", "referee_signed": True},
    "D-6211": {"deceased": "D-6211", "name": "Leonard Hale", "form": "Cremation 4", "referee_signed": True},
    "D-7390": {"deceased": "D-7390", "name": "Ivy Brennan", "form": "Cremation 4", "referee_signed": True},
}
DIARY = {
    "East Chapel": ["09:30", "11:00", "13:30", "15:00"],
    "West Chapel": ["10:00", "12:30", "14:00"],
}
OPEN_FROM, OPEN_TO = "09:00", "17:00"
_holds: dict = {}  # the chapel booking system's own record of each hold

INPUTS = [
    {"ref": "D-4471", "date": "2026-12-14", "chapel": "East Chapel", "minutes": 45, "after": "11:00", "family": "Joan Marr"},
    {"ref": "D-5102", "date": "2026-12-15", "chapel": "West Chapel", "minutes": 30, "after": "12:00", "family": "Peter Ings"},
    {"ref": "D-6038", "date": "2026-12-16", "chapel": "East Chapel", "minutes": 60, "after": "13:00", "family": "Grace Okafor"},
    {"ref": "D-6211", "date": "2026-12-17", "chapel": "West Chapel", "minutes": 45, "after": "13:00", "family": "Sam Hale"},
    {"ref": "D-7390", "date": "2026-12-18", "chapel": "East Chapel", "minutes": 40, "after": "13:00", "family": "Rose Brennan"},
]

CASES = [
    {"id": "zzz-crem-1", "switch": "plan_skip", "input": 0, "kind": "plan_error",
     "root": ("plan_service", 1), "failure": ("book_cremator", 1),
     "description": "The service plan leaves out the paperwork check, so no medical referee authorisation is on the case file when the cremator is booked."},
    {"id": "zzz-crem-2", "switch": "ref_swap", "input": 1, "kind": "subagent_wrong_entity",
     "root": ("paperwork_agent", 1), "failure": ("book_cremator", 1),
     "description": "The paperwork sub-agent checks the forms of D-5120 instead of D-5102 and files that authorisation under this service."},
    {"id": "zzz-crem-3", "switch": "memory_hour", "input": 2, "kind": "bad_memory_write",
     "root": ("memory_write", 3), "failure": ("confirm_service", 1),
     "description": "The case-file memory stores the chapel hold's start as 13:00, dropping the minutes of the 13:30 slot, and the family letter is written from it."},
    {"id": "zzz-crem-4", "switch": "diary_east", "input": 3, "kind": "tool_ignores_argument",
     "root": ("chapel_diary", 1), "failure": ("hold_chapel", 1),
     "description": "The chapel diary lookup ignores the chapel it is given and returns the East Chapel's free times for the West Chapel."},
    {"id": "zzz-crem-5", "switch": "slot_ampm", "input": 4, "kind": "format_drift",
     "root": ("choose_slot", 1), "failure": ("hold_chapel", 1),
     "description": "The slot choice answers in twelve-hour form (1:30 PM) instead of 24-hour time, and the slot parser reads it as 01:30."},
]

_client = None
_memory: dict = {}


def policy(request):
    sysmsg = system_text(request)
    text = last_user(request)
    data = json.loads(text.split("DATA:", 1)[1])
    if "plan" in sysmsg:
        tasks = ["check_paperwork", "find_chapel_slot", "book_cremator", "confirm_family"]
        if SWITCH == "plan_skip":
            tasks = tasks[1:]
        return json.dumps({"tasks": tasks, "date": data["date"], "chapel": data["chapel"]})
    if "slot" in sysmsg:
        free = [t for t in data["free"] if t >= data["after"]]
        pick = free[0]
        minutes = data["minutes"]
        if SWITCH == "slot_ampm":
            h, m = map(int, pick.split(":"))
            pick = f"{h - 12 if h > 12 else h}:{m:02d} {'PM' if h >= 12 else 'AM'}"
        return json.dumps({"tool": "hold_chapel", "args": {"chapel": data["chapel"], "date": data["date"], "start": pick, "minutes": minutes}})
    if "letter" in sysmsg:
        return (f"Dear {data['family']}, the service for {data['name']} is in the {data['chapel']} on {data['date']} "
                f"at {data['start']}, for {data['minutes']} minutes. The committal follows at {data['cremator']}.")
    raise ValueError("unexpected prompt")


def _ask(system: str, payload: dict) -> str:
    reply = _client.chat.completions.create(
        model="fake-model", temperature=0,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": "DATA:" + json.dumps(payload)}])
    trajdebug.current_step().usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                                   completion_tokens=reply.usage.completion_tokens)
    return reply.choices[0].message.content


def _mins(t: str) -> int:
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def _hhmm(n: int) -> str:
    return f"{n // 60:02d}:{n % 60:02d}"


@trajdebug.step(kind="input")
def arrangement_request(req: dict) -> dict:
    return dict(req)


@trajdebug.step(kind="llm")
def plan_service(req: dict) -> str:
    return _ask("You plan crematorium services. Return the tasks to run as JSON.", req)


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="tool")
def memory_write(key: str, value: dict) -> dict:
    stored = json.loads(json.dumps(value))
    if SWITCH == "memory_hour" and key == "chapel_hold":
        stored["start"] = stored["start"][:2] + ":00"
    _memory[key] = stored
    return {"stored": key, "value": stored}


@trajdebug.step(kind="tool")
def memory_read(key: str) -> dict:
    return _memory.get(key, {})


@trajdebug.step(kind="retrieval")
def fetch_documents(ref: str) -> list:
    return [dict(DOCS[ref], doc="application"), {"deceased": ref, "doc": "register entry", "registered": True}]


@trajdebug.step(kind="condition")
def check_forms(docs: list) -> dict:
    app = docs[0]
    return {"deceased": app["deceased"], "name": app["name"], "authorised": bool(app["referee_signed"] and docs[1]["registered"])}


@trajdebug.step(kind="agent")
def paperwork_agent(ref: str) -> dict:
    lookup = ref
    if SWITCH == "ref_swap":
        lookup = ref[:-2] + ref[-1] + ref[-2]
    verdict = check_forms(fetch_documents(lookup))
    memory_write("authorisation", verdict)
    return verdict


@trajdebug.step(kind="tool")
def chapel_diary(chapel: str, date: str) -> dict:
    use = "East Chapel" if SWITCH == "diary_east" else chapel
    return {"chapel": chapel, "date": date, "free": list(DIARY[use])}


@trajdebug.step(kind="llm")
def choose_slot(request: dict) -> str:
    return _ask("You choose a chapel slot for the service and answer with the hold_chapel call as JSON.", request)


@trajdebug.step(kind="parse")
def parse_slot(text: str) -> dict:
    call = json.loads(text)
    args = dict(call["args"])
    m = re.match(r"(\d{1,2})[:.](\d{2})", args["start"])
    args["start"] = f"{int(m.group(1)):02d}:{m.group(2)}"
    return args


@trajdebug.step(kind="tool")
def hold_chapel(chapel: str, date: str, start: str, minutes: int) -> dict:
    if not OPEN_FROM <= start <= OPEN_TO:
        raise RuntimeError(f"{chapel} is closed at {start} on {date}")
    if start not in DIARY[chapel]:
        raise RuntimeError(f"{chapel} has no free slot at {start} on {date}")
    hold = {"hold": f"H-{chapel[0]}{date[-2:]}{start.replace(':', '')}", "chapel": chapel, "date": date,
            "start": start, "end": _hhmm(_mins(start) + minutes)}
    _holds[hold["hold"]] = dict(hold)
    return hold


@trajdebug.step(kind="agent")
def chapel_agent(req: dict) -> dict:
    plan = memory_read("plan")
    diary = chapel_diary(plan["chapel"], plan["date"])
    args = parse_slot(choose_slot({"chapel": plan["chapel"], "date": plan["date"], "free": diary["free"],
                                   "after": req["after"], "minutes": req["minutes"]}))
    hold = hold_chapel(**args)
    memory_write("chapel_hold", hold)
    return hold


@trajdebug.step(kind="tool")
def book_cremator(ref: str, date: str, not_before: str) -> dict:
    auth = _memory.get("authorisation")
    if not auth or not auth.get("authorised"):
        raise PermissionError(f"no medical referee authorisation on file for {ref}; cremator 2 cannot be booked on {date}")
    if auth["deceased"] != ref:
        raise PermissionError(f"authorisation on file is for {auth['deceased']}, not {ref}")
    return {"cremator": 2, "ref": ref, "date": date, "start": _hhmm(_mins(not_before) + 30)}


@trajdebug.step(kind="agent")
def cremator_agent(ref: str) -> dict:
    hold = memory_read("chapel_hold")
    booking = book_cremator(ref, hold["date"], hold["end"])
    memory_write("cremator", booking)
    return booking


@trajdebug.step(kind="llm")
def family_letter(details: dict) -> str:
    return _ask("You write the family's confirmation letter.", details)


@trajdebug.step(kind="output")
def confirm_service(req: dict, letter: str) -> dict:
    hold, crem = _memory["chapel_hold"], _memory["cremator"]
    booked = _mins(hold["end"]) - _mins(hold["start"])
    if booked < req["minutes"]:
        raise ValueError(f"chapel hold {hold['hold']} covers {booked} minutes, the family asked for {req['minutes']}")
    booked_hold = _holds[hold["hold"]]
    if f"at {booked_hold['start']}" not in letter:
        raise ValueError(f"letter gives the service time as {letter.split(' at ')[1].split(',')[0]}; chapel hold {hold['hold']} starts at {booked_hold['start']}")
    if crem["start"] not in letter:
        raise ValueError(f"letter does not give the committal time {crem['start']}")
    return {"ref": req["ref"], "hold": hold["hold"], "cremator_start": crem["start"], "letter": letter}


def record(inp, path, server):
    global _client
    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _memory.clear()
    _holds.clear()
    with trajdebug.run(NAME, path=path, task=f"arrange the service for {inp['ref']} on {inp['date']}"):
        req = arrangement_request(inp)
        plan = parse_plan(plan_service(req))
        memory_write("plan", plan)
        for task in plan["tasks"]:
            if task == "check_paperwork":
                paperwork_agent(req["ref"])
            elif task == "find_chapel_slot":
                chapel_agent(req)
            elif task == "book_cremator":
                cremator_agent(req["ref"])
            elif task == "confirm_family":
                hold = memory_read("chapel_hold")
                letter = family_letter({"family": req["family"], "name": _memory.get("authorisation", {}).get("name", req["ref"]),
                                        "chapel": hold["chapel"], "date": hold["date"], "start": hold["start"],
                                        "minutes": _mins(hold["end"]) - _mins(hold["start"]),
                                        "cremator": _memory["cremator"]["start"]})
                confirm_service(req, letter)
