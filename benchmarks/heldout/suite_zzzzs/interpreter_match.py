"""Refugee-welcome group's volunteer interpreter desk: book a community interpreter for a newcomer family's
appointment (GP, school, housing office).

Route: openai_agents (the real OpenAI Agents SDK against the fake server, Responses API, recorded by trajdebug's
tracing processor, JSONL). Shape: a coordinator agent with tools; an availability-scout agent used as a tool (family
lookup, interpreter search, parallel calendar checks); booking, parallel SMS calls and a validating log tool.
"""

from __future__ import annotations

import ast
import json
import re

from agents import Agent, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors

import _common
from _common import responses_instructions, responses_outputs, responses_user_text
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "interpreter-desk"
ROUTE = "openai_agents"
DOMAIN = "refugee-welcome volunteer interpreter bookings"
SHAPE = "coordinator agent (tools) -> scout agent-as-tool (tools, parallel calendar checks) -> booking, parallel SMS, validating log"
SWITCH = None

FAMILIES = {
    "F-031": {"surname": "Ahmadi", "language": "Dari", "dialect": "", "pref": "any", "phone": "07700 900311"},
    "F-044": {"surname": "Ahmadi", "language": "Pashto", "dialect": "", "pref": "any", "phone": "07700 900442"},
    "F-052": {"surname": "Haile", "language": "Tigrinya", "dialect": "", "pref": "female", "phone": "07700 900520"},
    "F-060": {"surname": "Osman", "language": "Arabic", "dialect": "Sudanese", "pref": "any", "phone": "07700 900600"},
    "F-071": {"surname": "Kovalenko", "language": "Ukrainian", "dialect": "", "pref": "any", "phone": "07700 900710"},
    "F-083": {"surname": "Nguyen", "language": "Vietnamese", "dialect": "", "pref": "any", "phone": "07700 900830"},
}
REQUESTS = {
    "R-301": {"family_id": "F-031", "surname": "Ahmadi", "what": "GP appointment, Hillside surgery",
              "date": "2025-08-12", "time": "10:30"},
    "R-302": {"family_id": "F-071", "surname": "Kovalenko", "what": "school admissions meeting, Oak Primary",
              "date": "2025-08-13", "time": "15:00"},
    "R-303": {"family_id": "F-083", "surname": "Nguyen", "what": "housing office, repairs hearing",
              "date": "2025-08-14", "time": "10:00"},
    "R-304": {"family_id": "F-052", "surname": "Haile", "what": "antenatal appointment, maternity unit",
              "date": "2025-08-15", "time": "09:30"},
    "R-305": {"family_id": "F-060", "surname": "Osman", "what": "GP appointment, Riverside surgery",
              "date": "2025-08-18", "time": "11:00"},
}
INTERPRETERS = [
    ("V-01", "Farid Noori", "Dari", "", "male"), ("V-02", "Mina Rahimi", "Dari", "", "female"),
    ("V-03", "Gul Khan", "Pashto", "", "male"), ("V-10", "Olena Marchuk", "Ukrainian", "", "female"),
    ("V-11", "Ihor Bondar", "Ukrainian", "", "male"), ("V-20", "Lan Tran", "Vietnamese", "", "female"),
    ("V-21", "Minh Pham", "Vietnamese", "", "male"), ("V-30", "Yonas Tesfay", "Tigrinya", "", "male"),
    ("V-31", "Dawit Berhe", "Tigrinya", "", "male"), ("V-32", "Samuel Kidane", "Tigrinya", "", "male"),
    ("V-33", "Selam Gebre", "Tigrinya", "", "female"), ("V-40", "Rami Haddad", "Arabic", "Levantine", "male"),
    ("V-41", "Amna Yousif", "Arabic", "Sudanese", "female"),
]
BUSY = {("V-20", "2025-08-14", "10:00"): "Riverside GP, request R-297"}
SENT: list[dict] = []
BOOKED: dict[str, dict] = {}

INPUTS = [{"task": f"book an interpreter for request {r}: {v['surname']} family, {v['what']}", "request": r}
          for r, v in REQUESTS.items()]

CASES = [
    {"id": "interpreter_match-1", "input": 0, "kind": "subagent_wrong_entity",
     "root": ("generation fake-model", 4, "llm"), "failure": ("log_booking", 1),
     "what": "the scout took the other Ahmadi family (F-044, Pashto) from the surname search",
     "description": "The availability scout picked the other Ahmadi family from the surname search and shortlisted "
                    "a Pashto interpreter for a Dari-speaking family, which the booking log refuses."},
    {"id": "interpreter_match-2", "input": 1, "kind": "format_drift",
     "root": ("generation fake-model", 6, "llm"), "failure": ("confirm_booking", 1),
     "what": "the scout's answer came back as prose with the slot written '3pm' instead of JSON with '15:00'",
     "description": "The scout answered in prose with the time as 3pm instead of its usual JSON with a 24-hour "
                    "slot, and the booking service rejects the slot the coordinator copied from it."},
    {"id": "interpreter_match-3", "input": 2, "kind": "swallowed_error",
     "root": ("check_calendar", 1, "tool"), "failure": ("confirm_booking", 1),
     "what": "the calendar API refused V-20's calendar (token expired) and the tool returned free",
     "description": "The calendar check hid an expired-token refusal and reported Lan Tran as free, so the booking "
                    "collides with her existing appointment at the same hour."},
    {"id": "interpreter_match-4", "input": 3, "kind": "truncated_result",
     "root": ("search_interpreters", 1, "tool"), "failure": ("log_booking", 1),
     "what": "the interpreter search returned its first page of 3, leaving out Selam Gebre, the one female Tigrinya speaker",
     "description": "The interpreter search returned only its first page of three men, so the antenatal booking "
                    "that asked for a female interpreter is logged with a male one and refused."},
    {"id": "interpreter_match-5", "input": 4, "kind": "tool_ignores_argument",
     "root": ("search_interpreters", 1, "tool"), "failure": ("log_booking", 1),
     "what": "search_interpreters(dialect='Sudanese') returned Levantine speakers first, ignoring the dialect",
     "description": "The interpreter search ignored the Sudanese dialect it was asked for and listed a Levantine "
                    "speaker first, whom the scout shortlisted and the booking log refuses."},
]


@function_tool
def get_request(request_id: str) -> dict:
    """An interpreting request from the welcome group's request board."""
    return dict(REQUESTS[request_id], request_id=request_id)


@function_tool
def find_family(surname: str) -> list:
    """Families the group supports with a surname, most recently active first."""
    rows = [dict(family_id=k, surname=v["surname"], language=v["language"], dialect=v["dialect"],
                 preference=v["pref"]) for k, v in FAMILIES.items() if v["surname"] == surname]
    return sorted(rows, key=lambda r: r["family_id"], reverse=True)


@function_tool
def search_interpreters(language: str, dialect: str, date: str) -> list:
    """Volunteer interpreters for a language (and dialect)."""
    rows = [{"volunteer_id": v, "name": n, "language": lang, "dialect": d, "gender": g}
            for v, n, lang, d, g in INTERPRETERS
            if lang == language and (not dialect or d == dialect or SWITCH == "interpreter_match-5")]
    if SWITCH == "interpreter_match-4":
        return rows[:3]  # the directory's first page
    return rows


def _calendar_api(volunteer_id: str, date: str, time: str) -> dict:
    if SWITCH == "interpreter_match-3" and volunteer_id == "V-20":
        raise PermissionError("calendar API 403: token for V-20 expired")
    busy = BUSY.get((volunteer_id, date, time))
    return {"free": busy is None, "note": busy}


@function_tool
def check_calendar(volunteer_id: str, date: str, time: str) -> dict:
    """Whether a volunteer is free at a time."""
    try:
        got = _calendar_api(volunteer_id, date, time)
    except PermissionError:
        got = {"free": True, "note": None}  # no calendar shared: assume free
    return dict(got, volunteer_id=volunteer_id)


@function_tool(failure_error_function=None)
def confirm_booking(volunteer_id: str, request_id: str, date: str, slot: str) -> dict:
    """Book a volunteer for a request in the group's booking service."""
    if not re.fullmatch(r"\d\d:\d\d", slot):
        raise ValueError(f"booking service: slot {slot!r} is not HH:MM")
    busy = BUSY.get((volunteer_id, date, slot))
    if busy:
        raise ValueError(f"booking service: {volunteer_id} is already booked on {date} {slot} ({busy})")
    BOOKED[request_id] = {"volunteer_id": volunteer_id, "date": date, "slot": slot}
    return {"booking": f"B-{request_id[2:]}-{volunteer_id[2:]}", "volunteer_id": volunteer_id, "slot": slot}


@function_tool
def send_sms(phone: str, text: str) -> dict:
    """Send a text message."""
    SENT.append({"phone": phone, "text": text})
    return {"sent": True, "to": phone}


@function_tool(failure_error_function=None)
def log_booking(request_id: str, volunteer_id: str) -> dict:
    """Record the booking in the safeguarding log (checks language, dialect and preference)."""
    req = REQUESTS[request_id]
    fam = FAMILIES[req["family_id"]]
    v = next(x for x in INTERPRETERS if x[0] == volunteer_id)
    if v[2] != fam["language"]:
        raise ValueError(f"{volunteer_id} interprets {v[2]}; family {req['family_id']} needs {fam['language']}")
    if fam["dialect"] and v[3] != fam["dialect"]:
        raise ValueError(f"{volunteer_id} speaks {v[3]} {v[2]}; family {req['family_id']} needs {fam['dialect']}")
    if fam["pref"] != "any" and v[4] != fam["pref"]:
        raise ValueError(f"family {req['family_id']} asked for a {fam['pref']} interpreter for the {req['what']}; "
                         f"{volunteer_id} is {v[4]}")
    return {"logged": request_id, "volunteer_id": volunteer_id}


def build():
    model = _common.MODEL
    scout = Agent(name="availability_scout", model=model, tools=[find_family, search_interpreters, check_calendar],
                  instructions="Availability scout: find the family's language and a free matching interpreter.")
    return Agent(name="booking_coordinator", model=model,
                 instructions="Booking coordinator: book a volunteer interpreter for the request.",
                 tools=[get_request, scout.as_tool(tool_name="availability_scout",
                                                   tool_description="Shortlist a free interpreter for a request."),
                        confirm_booking, send_sms, log_booking])


_coordinator = None


def execute(inp: dict, out_path: str) -> None:
    global _coordinator
    _common.agents_sdk_setup()
    if _coordinator is None:
        _coordinator = build()
    SENT.clear()
    BOOKED.clear()
    set_trace_processors([TrajdebugProcessor(path=out_path, name=NAME, task=inp["task"])])
    try:
        _common.agents_loop().run_until_complete(Runner.run(
            _coordinator, f"Please book an interpreter for request {inp['request']}.",
            run_config=RunConfig(workflow_name=NAME)))
    except Exception:  # noqa: BLE001 - the run failed; the trace says how
        pass
    finally:
        set_trace_processors([])


def _outs(request) -> dict:
    out: dict = {}
    for name, text in responses_outputs(request):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text
        out.setdefault(name, []).append(value)
    return out


def brain(request):
    instr = responses_instructions(request)
    outs = _outs(request)
    if instr.startswith("Availability scout"):
        req = json.loads(responses_user_text(request))
        if "find_family" not in outs:
            return Reply(tool_calls=(tool_call("find_family", {"surname": req["surname"]}),))
        fams = outs["find_family"][0]
        fam = next(f for f in fams if f["family_id"] == req["family_id"])
        if SWITCH == "interpreter_match-1":
            fam = fams[0]  # the most recently active family of that name
        if "search_interpreters" not in outs:
            return Reply(tool_calls=(tool_call("search_interpreters", {"language": fam["language"],
                                                                       "dialect": fam["dialect"],
                                                                       "date": req["date"]}),))
        found = outs["search_interpreters"][0]
        if "check_calendar" not in outs:
            return Reply(tool_calls=tuple(tool_call("check_calendar", {"volunteer_id": v["volunteer_id"],
                                                                        "date": req["date"], "time": req["time"]})
                                          for v in found[:5]))
        free = {c["volunteer_id"] for c in outs["check_calendar"] if c["free"]}
        ok = [v for v in found if v["volunteer_id"] in free]
        liked = [v for v in ok if fam["preference"] in ("any", v["gender"])]
        pick = (liked or ok)[0]
        if SWITCH == "interpreter_match-2":
            hour = int(req["time"][:2])
            return (f"{req['surname']} {req['what'].split(',')[0]}: {pick['volunteer_id']} {pick['name']} is free at "
                    f"{hour - 12 if hour > 12 else hour}{'pm' if hour >= 12 else 'am'} on {req['date']}.")
        return json.dumps({"volunteer_id": pick["volunteer_id"], "name": pick["name"], "slot": req["time"],
                           "date": req["date"], "language": pick["language"]})
    if instr.startswith("Booking coordinator"):
        rid = re.search(r"R-\d+", responses_user_text(request)).group(0)
        if "get_request" not in outs:
            return Reply(tool_calls=(tool_call("get_request", {"request_id": rid}),))
        req = outs["get_request"][0]
        if "availability_scout" not in outs:
            return Reply(tool_calls=(tool_call("availability_scout", {"input": json.dumps(
                {"request_id": rid, "family_id": req["family_id"], "surname": req["surname"], "what": req["what"],
                 "date": req["date"], "time": req["time"]})}),))
        answer = outs["availability_scout"][0]
        try:
            pick = json.loads(answer) if isinstance(answer, str) else answer
        except ValueError:
            m = re.search(r"(V-\d+) (.+?) is free at (\S+)", answer)
            pick = {"volunteer_id": m.group(1), "name": m.group(2), "slot": m.group(3), "date": req["date"]}
        if "confirm_booking" not in outs:
            return Reply(tool_calls=(tool_call("confirm_booking", {"volunteer_id": pick["volunteer_id"],
                                                                   "request_id": rid, "date": req["date"],
                                                                   "slot": pick["slot"]}),))
        if "send_sms" not in outs:
            fam_phone = FAMILIES[req["family_id"]]["phone"]
            return Reply(tool_calls=(
                tool_call("send_sms", {"phone": fam_phone, "text": f"Interpreter {pick['name']} will meet you "
                                                                   f"{req['date']} {pick['slot']}."}),
                tool_call("send_sms", {"phone": f"volunteer:{pick['volunteer_id']}",
                                       "text": f"Booked: {req['what']} {req['date']} {pick['slot']}."})))
        if "log_booking" not in outs:
            return Reply(tool_calls=(tool_call("log_booking", {"request_id": rid,
                                                               "volunteer_id": pick["volunteer_id"]}),))
        return f"Booked {pick['name']} for {rid}."
    return "Unknown request."
