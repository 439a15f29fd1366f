"""A piano tuner's booking desk (the OpenAI Agents SDK over the Responses API, trajdebug's tracing
processor): an intake agent with a history clerk run as a tool, a hand-off to a scheduler that
calls tools in parallel, and the booking."""

from __future__ import annotations

import ast
import json
import re

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from . import common

NAME = "tuneful-piano-visits"
ROUTE = "openai_agents"
DOMAIN = "piano tuner: client and piano history to a visit slot and booking"
SHAPE = "Agents SDK: intake agent (lookup tool, history clerk agent-as-tool with its own tool) -> hand-off -> scheduler (parallel find_slots + travel_time) -> book_visit"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


INPUTS = {
    "marsh": "Hi, this is client C-104 (Helen Marsh). Please book a tuning for the grand piano P-22 at the school hall.",
    "ibarra": "Client C-117 here, Luis Ibarra. My upright P-31 needs its regular tuning.",
    "novak": "Client C-125, Petra Novak: please tune the baby grand P-40, it's been a while.",
    "osei": "Hello, C-133 (Kwame Osei). Tuning for the upright P-51 at my flat, please.",
    "lund": "C-140, Greta Lund. Spring tuning for the upright P-60 please.",
}

CASES = [
    {"id": "piano_clerk_first_piano", "input": "marsh", "switch": "first_piano", "fault_kind": "subagent_wrong_entity",
     "root": ("history_clerk", 2), "failure": ("book_visit", 1),
     "description": "The history clerk sub-agent read the history of the client's first piano (the home upright P-21, last tuned 2021) instead of the grand P-22, so the scheduler asked for a 120-minute pitch raise the hall's window cannot hold."},
    {"id": "piano_slot_snapshot", "input": "ibarra", "switch": "slot_snapshot", "fault_kind": "stale_data",
     "root": ("find_slots", 1), "failure": ("book_visit", 1),
     "description": "The slot search answered from yesterday's calendar snapshot, offering 2025-05-20 09:00, which had since been booked."},
    {"id": "piano_invented_slot", "input": "novak", "switch": "invented_slot", "fault_kind": "hallucinated_value",
     "root": ("response", 7), "failure": ("book_visit", 1),
     "description": "The scheduler model booked 2025-05-22 14:30, a time that none of the offered slots holds."},
    {"id": "piano_short_slot", "input": "osei", "switch": "short_slot", "fault_kind": "wrong_tool_args",
     "root": ("response", 6), "failure": ("book_visit", 1),
     "description": "The scheduler model searched slots of 60 minutes although the history called for a 120-minute pitch raise, then booked the pitch raise into a 60-minute slot."},
    {"id": "piano_history_page", "input": "lund", "switch": "history_page", "fault_kind": "truncated_result",
     "root": ("piano_history", 1), "failure": ("book_visit", 1),
     "description": "The piano history service returned only its first three entries, oldest first, so the clerk reported the last tuning as 2019 and the visit grew to a pitch raise too long for the client's window."},
]

CLIENTS = {
    "C-104": {"client": "C-104", "name": "Helen Marsh", "pianos": ["P-21", "P-22"], "district": "north", "window_min": 90},
    "C-117": {"client": "C-117", "name": "Luis Ibarra", "pianos": ["P-31"], "district": "harbour", "window_min": 120},
    "C-125": {"client": "C-125", "name": "Petra Novak", "pianos": ["P-40"], "district": "old town", "window_min": 150},
    "C-133": {"client": "C-133", "name": "Kwame Osei", "pianos": ["P-51"], "district": "east", "window_min": 150},
    "C-140": {"client": "C-140", "name": "Greta Lund", "pianos": ["P-60"], "district": "north", "window_min": 90},
}
HISTORY = {
    "P-21": [{"date": "2018-04-02", "work": "tuning"}, {"date": "2021-03-15", "work": "tuning"}],
    "P-22": [{"date": "2022-10-01", "work": "tuning"}, {"date": "2024-10-12", "work": "tuning"}],
    "P-31": [{"date": "2023-09-01", "work": "tuning"}, {"date": "2024-09-20", "work": "tuning"}],
    "P-40": [{"date": "2020-01-10", "work": "tuning"}, {"date": "2022-02-02", "work": "regulation"}],
    "P-51": [{"date": "2021-06-01", "work": "tuning"}],
    "P-60": [{"date": "2017-03-01", "work": "tuning"}, {"date": "2018-03-05", "work": "tuning"}, {"date": "2019-03-11", "work": "tuning"},
             {"date": "2023-04-02", "work": "tuning"}, {"date": "2024-04-08", "work": "tuning"}],
}
FREE = {  # district -> free slots (start, minutes)
    "north": [("2025-05-20 10:00", 90), ("2025-05-21 13:00", 120)],
    "harbour": [("2025-05-20 11:00", 120), ("2025-05-22 09:00", 120)],
    "old town": [("2025-05-21 09:00", 150), ("2025-05-23 10:00", 120)],
    "east": [("2025-05-20 14:00", 60), ("2025-05-22 09:00", 150)],
}
SNAPSHOT = {"harbour": [("2025-05-20 09:00", 120), ("2025-05-20 11:00", 120)]}

INTAKE = "You are the intake desk of a piano tuner. Look up the client, ask the history clerk about the piano, then hand off to the scheduler."
CLERK = "You are the history clerk. Read the piano's service history and answer JSON: piano, last_tuned, visit_min (60 if tuned in the last two years, else 120 for a pitch raise)."
SCHEDULER = "You are the scheduler. Find slots for the visit length and the travel time in parallel, then book the first slot that fits."


def _outputs(request) -> dict:
    got: dict = {}
    for name, text in common.tool_results(request):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            try:
                value = json.loads(text)
            except ValueError:
                value = text
        got.setdefault(name, []).append(value)
    return got


def _first_user(request) -> str:
    for m in common.messages_of(request):
        if m.get("role") == "user":
            return common._text(m.get("content"))
    return ""


def brain(request):
    system = common.system_of(request)
    got = _outputs(request)
    user = _first_user(request)
    if system.startswith("You are the intake"):
        if "lookup_client" not in got:
            return Reply(tool_calls=(tool_call("lookup_client", {"client_id": re.search(r"C-\d+", user).group(0)}),))
        if "history_clerk" not in got:
            piano = re.search(r"P-\d+", user).group(0)
            return Reply(tool_calls=(tool_call("history_clerk", {"input": f"Service history for piano {piano} of client {got['lookup_client'][0]['client']}"}),))
        return Reply(tool_calls=(tool_call("transfer_to_scheduler", {}),))
    if system.startswith("You are the history clerk"):
        if "piano_history" not in got:
            piano = re.search(r"P-\d+", user).group(0)
            client = re.search(r"C-\d+", user).group(0)
            if _on("first_piano"):
                piano = CLIENTS[client]["pianos"][0]
            return Reply(tool_calls=(tool_call("piano_history", {"piano_id": piano}),))
        h = got["piano_history"][0]
        last = max(e["date"] for e in h["entries"] if e["work"] == "tuning")
        return json.dumps({"piano": h["piano_id"], "last_tuned": last, "visit_min": 60 if last >= "2023-05-19" else 120})
    if system.startswith("You are the scheduler"):
        client = got["lookup_client"][0]
        hist = got["history_clerk"][0]
        if "find_slots" not in got:
            minutes = 60 if _on("short_slot") else hist["visit_min"]
            return Reply(tool_calls=(tool_call("find_slots", {"district": client["district"], "minutes": minutes}),
                                     tool_call("travel_time", {"district": client["district"]})))
        if "book_visit" not in got:
            slots = got["find_slots"][0]["slots"]
            slot = slots[0]["start"]
            if _on("invented_slot"):
                slot = "2025-05-22 14:30"
            return Reply(tool_calls=(tool_call("book_visit", {"client_id": client["client"], "piano_id": hist["piano"],
                                                              "start": slot, "minutes": hist["visit_min"]}),))
        b = got["book_visit"][0]
        return f"Booked {b['piano_id']} on {b['start']} for {b['minutes']} minutes."
    return "How can I help?"


@function_tool
def lookup_client(client_id: str) -> dict:
    """Client record: pianos, district and the longest visit the client allows."""
    return dict(CLIENTS[client_id])


@function_tool
def piano_history(piano_id: str) -> dict:
    """Service history of a piano."""
    entries = list(HISTORY[piano_id])
    if _on("history_page"):
        entries = entries[:3]
    return {"piano_id": piano_id, "entries": entries}


@function_tool
def find_slots(district: str, minutes: int) -> dict:
    """Free slots in a district at least `minutes` long."""
    source = SNAPSHOT if _on("slot_snapshot") and district in SNAPSHOT else FREE
    return {"district": district, "slots": [{"start": s, "minutes": m} for s, m in source[district] if m >= minutes]}


@function_tool
def travel_time(district: str) -> dict:
    """Travel time from the workshop to a district."""
    return {"district": district, "minutes": {"north": 25, "harbour": 15, "old town": 10, "east": 30}[district]}


@function_tool(failure_error_function=None)
def book_visit(client_id: str, piano_id: str, start: str, minutes: int) -> dict:
    """Book the visit in the calendar."""
    client = CLIENTS[client_id]
    if piano_id not in client["pianos"]:
        raise ValueError(f"piano {piano_id} is not registered to {client_id}")
    if minutes > client["window_min"]:
        raise ValueError(f"a {minutes}-minute visit exceeds {client_id}'s {client['window_min']}-minute window")
    free = dict(FREE[client["district"]])
    if start not in free:
        raise ValueError(f"no free slot at {start} in {client['district']}")
    if free[start] < minutes:
        raise ValueError(f"slot {start} is {free[start]} minutes, the visit needs {minutes}")
    return {"client_id": client_id, "piano_id": piano_id, "start": start, "minutes": minutes, "visit": f"V-{start[5:10]}-{piano_id}"}


_AGENT: dict = {}


def _agents():
    if _AGENT.get("url") != common.SERVER.base_url:
        set_default_openai_client(AsyncOpenAI(base_url=common.SERVER.base_url, api_key="not-needed", max_retries=0))
        set_default_openai_api("responses")
        m = common.SERVER.model
        clerk = Agent(name="history_clerk", instructions=CLERK, model=m, tools=[piano_history])
        scheduler = Agent(name="scheduler", instructions=SCHEDULER, model=m, tools=[find_slots, travel_time, book_visit])
        intake = Agent(name="intake", instructions=INTAKE, model=m, handoffs=[scheduler],
                       tools=[lookup_client, clerk.as_tool(tool_name="history_clerk", tool_description="Ask the history clerk about a piano.")])
        _AGENT.update(url=common.SERVER.base_url, intake=intake)
    return _AGENT["intake"]


def record(key: str, path: str) -> None:
    text = INPUTS[key]
    intake = _agents()
    set_default_openai_api("responses")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=text)])
    try:
        common.LOOP.run_until_complete(Runner.run(intake, text, run_config=RunConfig(workflow_name=NAME)))
    except Exception:
        pass
    finally:
        set_trace_processors([])
