"""Orienteering event: the finish-tent results officer reads a competitor's SI card, checks the punches
against the course with a course-checker sub-agent and posts the result (route: openai_agents)."""

from __future__ import annotations

import json

from agents import Agent, function_tool

from _sdkagents import calls_and_results, first_user, model_for, run_recorded
from trajdebug.testing import Reply, tool_call

NAME = "orienteering-results"
ROUTE = "openai_agents"
SWITCH = None

COURSES = {
    "Brown": [31, 45, 47, 52, 38, 60, 33, 41, 56, 100],
    "Blue": [31, 44, 47, 53, 39, 61, 35, 100],
    "Green": [32, 36, 48, 51, 100],
    "Short Green": [32, 36, 49, 100],
    "Orange": [34, 37, 42, 100],
}
ENTRIES = {
    "2091342": {"name": "K. Lind", "club": "SYO", "course": "Brown", "start": "10:31:00", "finish": "11:42:07"},
    "2091432": {"name": "A. Berg", "club": "EBOR", "course": "Green", "start": "10:40:00", "finish": "11:21:40"},
    "8123344": {"name": "M. Okoro", "club": "AIRE", "course": "Blue", "start": "10:12:00", "finish": "11:05:33"},
    "7750031": {"name": "J. Pryor", "club": "CLARO", "course": "Orange", "start": "11:02:00", "finish": "11:39:58"},
    "2213857": {"name": "S. Varga", "club": "LOC", "course": "Short Green", "start": "10:55:00", "finish": "11:28:14"},
    "8123434": {"name": "R. Hale", "club": "EPOC", "course": "Green", "start": "10:48:00", "finish": "11:30:51"},
    "6402219": {"name": "T. Nash", "club": "SYO", "course": "Blue", "start": "10:20:00", "finish": "11:19:02"},
}
LATE_ENTRIES = {"6402219"}  # entered on the day: only in the late-entries list

INPUTS = [
    {"task": "card 2091342 download, Ilkley Moor Middle", "card": "2091342"},
    {"task": "card 8123344 download, Ilkley Moor Middle", "card": "8123344"},
    {"task": "card 7750031 download, Ilkley Moor Middle", "card": "7750031"},
    {"task": "card 2213857 download, Ilkley Moor Middle", "card": "2213857"},
    {"task": "card 6402219 download, Ilkley Moor Middle", "card": "6402219"},
]

CASES = [
    {"id": "orienteering_short_read", "input": 0, "switch": "short_read", "fault_kind": "truncated_result",
     "root": ("download_si_card", 1, "tool"), "failure": ("post_result", 1),
     "description": "the SI station returns only the first eight records of the card, without the last "
                    "controls and the finish, so the posted time disagrees with the finish unit"},
    {"id": "orienteering_checker_blue", "input": 0, "switch": "checker_blue", "fault_kind": "subagent_wrong_entity",
     "root": ("course_checker", 1, "agent"), "failure": ("post_result", 1),
     "description": "the course-checker sub-agent checks K. Lind's punches against the Blue course instead of "
                    "Brown and reports missing controls that Brown does not have"},
    {"id": "orienteering_card_transposed", "input": 1, "switch": "card_transposed", "fault_kind": "wrong_tool_args",
     "root": ("generation fake-model", 2, "llm"), "failure": ("post_result", 1),
     "description": "the results officer looks up the entry for card 8123434 (two digits swapped) and posts "
                    "the card under another competitor's name"},
    {"id": "orienteering_minutes_seconds", "input": 2, "switch": "minutes_seconds", "fault_kind": "format_drift",
     "root": ("generation fake-model", 6, "llm"), "failure": ("post_result", 1),
     "description": "the results officer writes the run time as MM:SS (37:58) instead of H:MM:SS, which the "
                    "results service reads as 37 hours"},
    {"id": "orienteering_late_entry_blank", "input": 4, "switch": "late_entry_blank", "fault_kind": "swallowed_error",
     "root": ("lookup_entry", 1, "tool"), "failure": ("post_result", 1),
     "description": "the entry lookup hides the missing pre-entry behind a blank competitor instead of "
                    "reading the late-entries list, and the results service refuses a nameless result"},
]


def _hms(start: str, finish: str) -> str:
    def sec(t):
        h, m, s = map(int, t.split(":"))
        return h * 3600 + m * 60 + s
    d = sec(finish) - sec(start)
    return f"{d // 3600}:{d % 3600 // 60:02d}:{d % 60:02d}"


@function_tool
def lookup_entry(card: str) -> dict:
    """Entry list row for an SI card: name, club, course, start time."""
    try:
        if card in LATE_ENTRIES:
            raise KeyError(card)
        row = ENTRIES[card]
    except KeyError:
        if SWITCH == "late_entry_blank":
            return {"card": card, "name": "", "club": "", "course": "", "start": ""}
        row = ENTRIES[card]  # the late-entries list
    return {"card": card, "name": row["name"], "club": row["club"], "course": row["course"], "start": row["start"]}


@function_tool
def get_event_info() -> dict:
    """Today's event: name, courses on offer and when the courses close."""
    return {"event": "Ilkley Moor Middle", "courses": sorted(COURSES), "courses_close": "14:30", "date": "2025-05-18"}


@function_tool
def download_si_card(card: str) -> dict:
    """Read the punches from the SI card in the download station."""
    e = ENTRIES[card]
    records = [{"code": c, "time": f"punch {i + 1}"} for i, c in enumerate(COURSES[e["course"]][:-1])]
    records.append({"code": "F", "time": e["finish"]})
    if SWITCH == "short_read":
        records = records[:8]
    return {"card": card, "start": e["start"], "records": records}


@function_tool
def get_course(course: str) -> dict:
    """Control codes of a course, in order."""
    return {"course": course, "controls": [c for c in COURSES[course] if c != 100]}


@function_tool(failure_error_function=None)
def post_result(card: str, name: str, course: str, time: str, status: str, missing: list[int]) -> str:
    """Post a competitor's result to the live results service (time as H:MM:SS)."""
    if not name:
        raise ValueError(f"results service: result for card {card} has no competitor name")
    owner = ENTRIES.get(card, {})
    if owner.get("name") != name:
        raise ValueError(f"results service: card {card} is registered to {owner.get('name')}, not {name}")
    h, m, s = (int(x) for x in time.split(":")) if time.count(":") == 2 else (int(time.split(":")[0]), int(time.split(":")[1]), 0)
    if h >= 3:
        raise ValueError(f"results service: time {h}:{m:02d}:{s:02d} for card {card} is past the 3 h course closure")
    expected = _hms(owner["start"], owner["finish"])
    if time != expected:
        raise ValueError(f"results service: finish unit has card {card} at {owner['finish']}; posted time {time} "
                         f"does not match {expected}")
    off = [c for c in missing if c not in COURSES[course]]
    if off:
        raise ValueError(f"results service: missing controls {off} are not on course {course}")
    return f"posted {name} {course} {time} {status}"


def brain(request):
    system = next((m["content"] for m in request.body.get("messages") or [] if m.get("role") == "system"), "")
    done = calls_and_results(request)
    got = {name: value for name, _, value in done}
    if "course checker" in system:
        ask = json.loads(first_user(request))
        if "get_course" not in got:
            course = "Blue" if SWITCH == "checker_blue" else ask["course"]
            return Reply(tool_calls=(tool_call("get_course", {"course": course}),))
        controls = got["get_course"]["controls"]
        punched = ask["punches"]
        missing, pos = [], 0
        for c in controls:
            if c in punched[pos:]:
                pos = punched.index(c, pos) + 1
            else:
                missing.append(c)
        return json.dumps({"course": got["get_course"]["course"], "status": "MP" if missing else "OK",
                           "missing": missing})
    # the results officer
    card = first_user(request).split()[1]
    if "get_event_info" not in got:
        return Reply(tool_calls=(tool_call("get_event_info", {}),))
    if "lookup_entry" not in got:
        asked = card[:4] + card[5] + card[4] + card[6:] if SWITCH == "card_transposed" else card
        return Reply(tool_calls=(tool_call("lookup_entry", {"card": asked}),
                                 tool_call("download_si_card", {"card": card})))
    entry, dl = got["lookup_entry"], got["download_si_card"]
    if "check_course" not in got and entry["course"]:
        punches = [r["code"] for r in dl["records"] if r["code"] != "F"]
        return Reply(tool_calls=(tool_call("check_course", {"input": json.dumps(
            {"course": entry["course"], "punches": punches})}),))
    check = got.get("check_course", {"status": "OK", "missing": []})
    check = json.loads(check) if isinstance(check, str) else check
    if "post_result" not in got:
        finish = next((r["time"] for r in dl["records"] if r["code"] == "F"), None)
        last_time = finish or ENTRIES[card]["finish"][:3] + "21:40"
        t = _hms(entry["start"] or dl["start"], last_time)
        if SWITCH == "minutes_seconds":
            h, m, s = t.split(":")
            t = f"{int(h) * 60 + int(m)}:{s}"
        return Reply(tool_calls=(tool_call("post_result", {
            "card": card, "name": entry["name"], "course": entry["course"], "time": t,
            "status": check["status"], "missing": check["missing"]}),))
    return f"Posted: {got['post_result']}"


def record(inp: dict, out: str, client, model: str) -> None:
    m = model_for(client, model)
    checker = Agent(name="course_checker", model=m, tools=[get_course],
                    instructions="You are the course checker. Fetch the course and compare the punches in order; "
                                 "answer JSON: course, status (OK or MP), missing.")
    officer = Agent(name="results_officer", model=m,
                    instructions="You are the results officer at the finish tent. Look up the entry, download the "
                                 "card, have the course checked, then post the result.",
                    tools=[get_event_info, lookup_entry, download_si_card,
                           checker.as_tool("check_course", "Check a card's punches against a course."), post_result])
    run_recorded(officer, f"Card {inp['card']} is in the download station.", out, NAME, inp["task"])
