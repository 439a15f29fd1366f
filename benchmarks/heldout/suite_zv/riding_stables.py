"""Riding stables lessons: a front desk hands a request to a booker that matches rider and horse (OpenAI Agents SDK)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from agents import Agent, RunConfig, Runner, function_tool
from agents.exceptions import AgentsException

from trajdebug.testing import Reply, tool_call

from .common import Case
from .kit import active
from .oa_common import model_for, processor_for, view

AGENT = "riding-stables-desk"
ROUTE = "openai_agents"

RIDERS = {
    "R-101": {"name": "Aoife Brennan", "level": "intermediate", "weight_kg": 68, "request": "jumping lesson", "slot": "Sat 10:00"},
    "R-117": {"name": "Callum Reyes", "level": "intermediate", "weight_kg": 72, "request": "jumping lesson", "slot": "Sun 11:00"},
    "R-120": {"name": "Mira Osei", "level": "novice", "weight_kg": 60, "request": "flatwork lesson", "slot": "Sat 09:00"},
    "R-133": {"name": "Jonas Wirth", "level": "advanced", "weight_kg": 75, "request": "cross-country lesson", "slot": "Sun 14:00"},
    "R-145": {"name": "Lily Ambrose", "level": "novice", "weight_kg": 50, "request": "flatwork lesson", "slot": "Sat 15:00"},
    "R-152": {"name": "Ravi Menon", "level": "intermediate", "weight_kg": 64, "request": "jumping lesson", "slot": "Sun 10:00"},
}
HORSES = [
    {"horse": "Pepper", "levels": ["novice"], "max_rider_kg": 80},
    {"horse": "Biscuit", "levels": ["novice", "intermediate"], "max_rider_kg": 55},
    {"horse": "Juniper", "levels": ["intermediate", "advanced"], "max_rider_kg": 95},
    {"horse": "Bramble", "levels": ["intermediate"], "max_rider_kg": 100},
    {"horse": "Solstice", "levels": ["advanced"], "max_rider_kg": 90},
    {"horse": "Maple", "levels": ["novice", "intermediate"], "max_rider_kg": 85},
]
WORKLOAD = {"Pepper": 4, "Biscuit": 1, "Juniper": 5, "Bramble": 2, "Solstice": 2, "Maple": 3}
LESSON_TYPES = {"novice": "novice flat", "intermediate": "intermediate jumping", "advanced": "advanced cross-country"}
ARENAS = {"Sat": "indoor school", "Sun": "outdoor arena"}
NOTES: dict = {}


class BookingRefused(Exception):
    pass


@function_tool
def get_rider_profile(rider_id: str) -> str:
    """Rider record: level, weight in kg, requested lesson and slot."""
    r = dict(RIDERS[rider_id], rider=rider_id)
    if active("ride-05"):
        r["weight_kg"] = round(r["weight_kg"] / 6.35, 1)  # the members app now stores stones
    return json.dumps(r)


@function_tool
def list_horses(level: str) -> str:
    """School horses cleared for a rider level."""
    if active("ride-01"):
        return json.dumps(HORSES)  # the yard system answers its whole list whatever level is asked
    return json.dumps([h for h in HORSES if level in h["levels"]])


@function_tool
def get_horse_workload(horse: str) -> str:
    """Lessons a horse already has this week (week 49)."""
    n = WORKLOAD[horse]
    if active("ride-04") and horse == "Juniper":
        n = 2  # served from the week 48 cache
    return json.dumps({"horse": horse, "week": 49, "lessons": n, "limit": 5})


@function_tool
def save_note(key: str, value: str) -> str:
    """Keep a note for later in this booking."""
    target = "rider_level" if active("ride-02") else key
    NOTES[target] = value
    return json.dumps({"saved": key})


@function_tool
def recall_note(key: str) -> str:
    """Read a note kept earlier in this booking."""
    return json.dumps({"key": key, "value": NOTES.get(key)})


@function_tool
def check_arena(slot: str) -> str:
    """Which arena is free for a slot."""
    return json.dumps({"slot": slot, "arena": ARENAS[slot.split()[0]]})


@function_tool(failure_error_function=None)
def book_lesson(rider_id: str, horse: str, lesson_type: str, slot: str, arena: str) -> str:
    """Book the lesson in the yard diary; the diary validates it."""
    r = RIDERS[rider_id]
    h = next(x for x in HORSES if x["horse"] == horse)
    if lesson_type != LESSON_TYPES[r["level"]]:
        raise BookingRefused(f"diary refused booking: lesson type '{lesson_type}' does not match rider {rider_id} graded {r['level']} (request: {r['request']})")
    if r["level"] not in h["levels"]:
        raise BookingRefused(f"diary refused booking: horse {horse} is not cleared for {r['level']} riders")
    if r["weight_kg"] > h["max_rider_kg"]:
        raise BookingRefused(f"diary refused booking: rider {rider_id} ({r['weight_kg']} kg on file) exceeds {horse}'s carrying limit of {h['max_rider_kg']} kg")
    if WORKLOAD[horse] >= 5:
        raise BookingRefused(f"diary refused booking: horse {horse} already has {WORKLOAD[horse]} lessons in week 49 (limit 5)")
    if arena != ARENAS[slot.split()[0]]:
        raise BookingRefused(f"diary refused booking: arena {arena} is not free at {slot}")
    return json.dumps({"booking": f"LSN-{rider_id[2:]}-{horse[:3].upper()}", "slot": slot})


def desk_policy(user: str, res: dict):
    target = "transfer_to_hack_booker" if active("ride-03") else "transfer_to_lesson_booker"
    return Reply(tool_calls=(tool_call(target, {}),))


def lesson_policy(user: str, res: dict):
    rid = re.search(r"R-\d+", user).group(0)
    if "get_rider_profile" not in res:
        return Reply(tool_calls=(tool_call("get_rider_profile", {"rider_id": rid}),))
    rider = res["get_rider_profile"][0]
    saved = res.get("save_note", [])
    if not saved:
        return Reply(tool_calls=(tool_call("save_note", {"key": "rider_level", "value": rider["level"]}),))
    if "list_horses" not in res:
        return Reply(tool_calls=(tool_call("list_horses", {"level": rider["level"]}),))
    eligible = [h["horse"] for h in res["list_horses"][0] if h["max_rider_kg"] >= rider["weight_kg"]]
    loads = {w["horse"]: w for w in res.get("get_horse_workload", [])}
    choice = next((h for h in eligible if h in loads and loads[h]["lessons"] < loads[h]["limit"]), None)
    if choice is None:
        nxt = next(h for h in eligible if h not in loads)
        return Reply(tool_calls=(tool_call("get_horse_workload", {"horse": nxt}),))
    if len(saved) == 1:
        return Reply(tool_calls=(tool_call("save_note", {"key": "horse_choice", "value": choice}),))
    if "recall_note" not in res:
        return Reply(tool_calls=(tool_call("recall_note", {"key": "rider_level"}),))
    if "check_arena" not in res:
        return Reply(tool_calls=(tool_call("check_arena", {"slot": rider["slot"]}),))
    if "book_lesson" not in res:
        level = res["recall_note"][0]["value"]
        return Reply(tool_calls=(tool_call("book_lesson", {"rider_id": rid, "horse": choice,
                                                           "lesson_type": LESSON_TYPES.get(level, "novice flat"),
                                                           "slot": rider["slot"], "arena": res["check_arena"][0]["arena"]}),))
    return f"Booked {res['book_lesson'][0]['booking']}."


def hack_policy(user: str, res: dict):
    rid = re.search(r"R-\d+", user).group(0)
    if "get_rider_profile" not in res:
        return Reply(tool_calls=(tool_call("get_rider_profile", {"rider_id": rid}),))
    rider = res["get_rider_profile"][0]
    if "book_lesson" not in res:
        return Reply(tool_calls=(tool_call("book_lesson", {"rider_id": rid, "horse": "Maple", "lesson_type": "escorted hack",
                                                           "slot": rider["slot"], "arena": "bridleway"}),))
    return "Hack booked."


def policy(request):
    system, user, res = view(request)
    if system.startswith("You book riding lessons"):
        return lesson_policy(user, res)
    if system.startswith("You book hacks"):
        return hack_policy(user, res)
    return desk_policy(user, res)


def record(rider_id: str, path: Path, server) -> None:
    server.use(policy)
    NOTES.clear()
    model = model_for(server)
    booker = Agent(name="lesson_booker", instructions="You book riding lessons: match rider, horse, arena.", model=model,
                   tools=[get_rider_profile, save_note, list_horses, get_horse_workload, recall_note, check_arena, book_lesson])
    hacks = Agent(name="hack_booker", instructions="You book hacks (escorted trail rides) on the bridleways.", model=model,
                  tools=[get_rider_profile, book_lesson])
    desk = Agent(name="front_desk", instructions="You are the stables front desk; hand each request to the right booker.",
                 model=model, handoffs=[booker, hacks])
    processor_for(path, AGENT, f"book the request of rider {rider_id}")
    r = RIDERS[rider_id]
    try:
        Runner.run_sync(desk, f"Rider {rider_id} asks for a {r['request']} on {r['slot']}.", run_config=RunConfig(workflow_name=AGENT), max_turns=20)
    except (BookingRefused, AgentsException):
        pass


REF_INPUTS = ["R-120", "R-133", "R-145", "R-152"]
CASES = [
    Case("ride-01", "tool_ignores_argument", "R-101", ("list_horses", 1), ("book_lesson", 1),
         "The horse list ignores the level it is asked for and returns every horse, so a novice-only pony is chosen."),
    Case("ride-02", "bad_memory_write", "R-101", ("save_note", 2), ("book_lesson", 1),
         "Saving the horse choice overwrites the rider_level note, so the lesson type falls back to novice."),
    Case("ride-03", "wrong_routing", "R-117", ("generation gpt-4o-mini", 1), ("book_lesson", 1),
         "The front desk hands a jumping lesson request to the hack booker."),
    Case("ride-04", "stale_data", "R-117", ("get_horse_workload", 1), ("book_lesson", 1),
         "Juniper's workload is read from last week's cache, so a horse at its weekly limit is chosen."),
    Case("ride-05", "unit_error", "R-101", ("get_rider_profile", 1), ("book_lesson", 1),
         "The rider profile gives the weight in stones under the kg field, so a pony too small is chosen."),
]
