"""Yodelling choir festival (openai_agents route): one office agent works through a long sequential
tool loop (brief, choir list, a profile per choir with one lookup that times out and is asked again,
a running-order draft, one stage booking per choir), then publishes the day's programme, whose
checks have the last word."""

from __future__ import annotations

import ast
import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "yodel-festival-office"
ROUTE = "openai_agents"
DOMAIN = "a yodelling choir's festival"
SHAPE = "single agent, long sequential loop: brief, choir list, per-choir profiles (one timed-out lookup asked again), running-order draft tool, per-choir stage bookings, publish tool"
SWITCH = None

CHOIRS = {
    "CH-01": {"name": "Jodlerklub Alpenrösli", "minutes": 35, "youth": False, "stage": "Main"},
    "CH-02": {"name": "Kinderchor Lenk", "minutes": 20, "youth": True, "stage": "Chapel"},
    "CH-03": {"name": "Echo vom Pilatus", "minutes": 30, "youth": False, "stage": "Main"},
    "CH-04": {"name": "Jodelgruppe Bärgblueme", "minutes": 25, "youth": False, "stage": "Chapel"},
    "CH-05": {"name": "Jugendjodler Toggenburg", "minutes": 20, "youth": True, "stage": "Main"},
    "CH-06": {"name": "Tiroler Jodlerinnen", "minutes": 30, "youth": False, "stage": "Chapel"},
    "CH-07": {"name": "Appenzeller Naturjodel", "minutes": 40, "youth": False, "stage": "Main"},
    "CH-08": {"name": "Chor Edelweiss Bern", "minutes": 25, "youth": False, "stage": "Chapel"},
}
DAYS = {
    "2027-07-02": ["CH-01", "CH-02", "CH-03", "CH-04"],
    "2027-07-03": ["CH-05", "CH-06", "CH-07", "CH-08", "CH-01"],
    "2027-07-04": ["CH-02", "CH-03", "CH-06", "CH-07"],
    "2027-07-05": ["CH-04", "CH-05", "CH-08", "CH-03", "CH-06"],
    "2027-07-06": ["CH-07", "CH-01", "CH-05", "CH-02"],
}
STAGES = {"Main": {"opens": "17:00", "closes": "19:00"}, "Chapel": {"opens": "19:00", "closes": "21:00"}}
CURFEW = "19:30"
CHANGEOVER = 10

INPUTS = [{"day": d, "brief": f"Build and publish the programme for {d}"} for d in DAYS]

CASES = [
    {"id": "zzzk-yodel-1", "input": 0, "switch": "youth_last", "kind": "plan_error",
     "root": ("generation fake-model", 8), "failure": ("publish_programme", 1),
     "description": "The running order the model drafts puts Kinderchor Lenk after the adult choir on the Chapel stage, so it ends at 19:55, past the 19:30 limit for youth choirs."},
    {"id": "zzzk-yodel-2", "input": 1, "switch": "start_from_one", "kind": "off_by_one",
     "root": ("draft_running_order", 1), "failure": ("publish_programme", 1),
     "description": "The running-order tool counts positions from one when working out start times, so every act starts a slot late and the last one runs past closing."},
    {"id": "zzzk-yodel-3", "input": 2, "switch": "twelve_hour_clock", "kind": "format_drift",
     "root": ("generation fake-model", 11), "failure": ("publish_programme", 1),
     "description": "In the booking call for Tiroler Jodlerinnen the model writes the start as '7:30 PM' instead of the 24-hour '19:30' used everywhere else."},
    {"id": "zzzk-yodel-4", "input": 3, "switch": "short_set", "kind": "hallucinated_value",
     "root": ("generation fake-model", 14), "failure": ("publish_programme", 1),
     "description": "The model books Echo vom Pilatus for 20 minutes, a length no profile gave, instead of its registered 30."},
    {"id": "zzzk-yodel-5", "input": 4, "switch": "repeat_profile_id", "kind": "wrong_tool_args",
     "root": ("generation fake-model", 5), "failure": ("publish_programme", 1),
     "description": "Asking for the third profile, the model passes the previous choir's id CH-01 again instead of CH-05, and CH-05 is never profiled or booked."},
]

_BOOKED: list = []
_ASKED: dict = {}


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _mins(text: str) -> int:
    h, m = text.split(":")
    return int(h) * 60 + int(m)


def festival_brief(day: str) -> dict:
    """Stages, opening hours and rules for a festival day."""
    return {"day": day, "stages": STAGES, "youth_curfew": CURFEW, "changeover_minutes": CHANGEOVER}


def list_choirs(day: str) -> dict:
    """Choirs registered to sing on a day."""
    return {"day": day, "choirs": DAYS[day]}


def choir_profile(choir_id: str) -> dict:
    """A choir's name, registered set length, youth flag and stage request."""
    _ASKED[choir_id] = _ASKED.get(choir_id, 0) + 1
    if _ASKED[choir_id] == 1 and choir_id in ("CH-03", "CH-08"):
        raise TimeoutError("registration database timed out")
    return {"choir_id": choir_id, **CHOIRS[choir_id]}


def draft_running_order(day: str, order: list[str]) -> dict:
    """Turn an ordered list of choir ids into stage positions and start times."""
    lanes: dict = {}
    out = []
    for cid in order:
        stage = CHOIRS[cid]["stage"]
        lane = lanes.setdefault(stage, [])
        lane.append(cid)
        before = len(lane) if SWITCH == "start_from_one" else len(lane) - 1
        start = _mins(STAGES[stage]["opens"]) + sum(CHOIRS[c]["minutes"] + CHANGEOVER for c in lane[:before])
        out.append({"choir_id": cid, "stage": stage, "position": len(lane), "start": _hhmm(start)})
    return {"day": day, "running_order": out}


def book_stage_slot(choir_id: str, stage: str, start: str, minutes: int) -> dict:
    """Book a choir's slot on a stage."""
    _BOOKED.append({"choir_id": choir_id, "stage": stage, "start": start, "minutes": minutes})
    return {"booked": choir_id, "stage": stage, "start": start, "minutes": minutes}


def publish_programme(day: str) -> dict:
    """Check the day's bookings and publish the programme."""
    ids = [b["choir_id"] for b in _BOOKED]
    missing = [c for c in DAYS[day] if c not in ids]
    if missing or len(set(ids)) != len(ids):
        raise ValueError(f"programme for {day} lacks {missing or 'none'} and books {sorted(ids)}")
    rows = []
    for b in _BOOKED:
        start = b["start"]
        if len(start) != 5 or start[2] != ":" or not (start[:2] + start[3:]).isdigit():
            raise ValueError(f"{CHOIRS[b['choir_id']]['name']}: start '{start}' is not HH:MM")
        c = CHOIRS[b["choir_id"]]
        if b["minutes"] != c["minutes"]:
            raise ValueError(f"{c['name']} booked {b['minutes']} min, registered set is {c['minutes']} min")
        end = _mins(start) + b["minutes"]
        if end > _mins(STAGES[b["stage"]]["closes"]):
            raise ValueError(f"{c['name']} ends {_hhmm(end)}, after {b['stage']} closes at {STAGES[b['stage']]['closes']}")
        if c["youth"] and end > _mins(CURFEW):
            raise ValueError(f"youth choir {c['name']} ends {_hhmm(end)}, after the {CURFEW} limit")
        rows.append((b["stage"], _mins(start), end, c["name"]))
    rows.sort()
    for a, b in zip(rows, rows[1:]):
        if a[0] == b[0] and b[1] < a[2]:
            raise ValueError(f"{a[3]} and {b[3]} overlap on {a[0]}")
    return {"published": day, "acts": len(rows)}


def _lit(x):
    try:
        return ast.literal_eval(x)
    except (ValueError, SyntaxError):
        return x


def policy(request):
    msgs = request.body["messages"]
    names, done = {}, []
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}"))
        if m.get("role") == "tool":
            name, args = names[m["tool_call_id"]]
            done.append((name, args, _lit(m["content"])))
    day = json.loads(msgs[-1]["content"])["day"] if not done else next(a for n, a, r in done if n == "festival_brief")["day"]
    results = {}
    for n, a, r in done:
        if isinstance(r, dict):
            results.setdefault(n, []).append(r)
    if "festival_brief" not in results:
        return Reply(tool_calls=(tool_call("festival_brief", {"day": day}),))
    if "list_choirs" not in results:
        return Reply(tool_calls=(tool_call("list_choirs", {"day": day}),))
    choirs = results["list_choirs"][0]["choirs"]
    profiles = {p["choir_id"]: p for p in results.get("choir_profile", [])}
    asked = [a["choir_id"] for n, a, r in done if n == "choir_profile"]  # in the order asked
    last = done[-1]
    if last[0] == "choir_profile" and not isinstance(last[2], dict):
        return Reply(tool_calls=(tool_call("choir_profile", {"choir_id": last[1]["choir_id"]}),))
    answered = len(results.get("choir_profile", []))
    if answered < len(choirs) and "draft_running_order" not in results:
        nxt = choirs[answered]
        if SWITCH == "repeat_profile_id" and nxt == "CH-05":
            nxt = asked[-1]
        return Reply(tool_calls=(tool_call("choir_profile", {"choir_id": nxt}),))
    if "draft_running_order" not in results:
        known = [c for c in choirs if c in profiles]
        order = sorted(known, key=lambda c: (not profiles[c]["youth"], choirs.index(c)))
        if SWITCH == "youth_last":
            order = [c for c in order if not profiles[c]["youth"]] + [c for c in order if profiles[c]["youth"]]
        return Reply(tool_calls=(tool_call("draft_running_order", {"day": day, "order": order}),))
    plan = results["draft_running_order"][0]["running_order"]
    booked = [r["booked"] for r in results.get("book_stage_slot", [])]
    for row in plan:
        if row["choir_id"] not in booked:
            p = profiles[row["choir_id"]]
            minutes, start = p["minutes"], row["start"]
            if SWITCH == "twelve_hour_clock" and row["choir_id"] == "CH-06":
                h, m = start.split(":")
                start = f"{int(h) - 12}:{m} PM"
            if SWITCH == "short_set" and row["choir_id"] == "CH-03":
                minutes = 20
            return Reply(tool_calls=(tool_call("book_stage_slot", {"choir_id": row["choir_id"], "stage": row["stage"],
                                                                   "start": start, "minutes": minutes}),))
    if "publish_programme" not in results:
        return Reply(tool_calls=(tool_call("publish_programme", {"day": day}),))
    return f"Programme for {day} published with {results['publish_programme'][0]['acts']} acts."


def record(inp, path, server):
    _BOOKED.clear()
    _ASKED.clear()
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["brief"])])
    strict = dict(failure_error_function=None)
    tools = [function_tool(festival_brief, **strict), function_tool(list_choirs, **strict), function_tool(choir_profile),
             function_tool(draft_running_order, **strict), function_tool(book_stage_slot, **strict),
             function_tool(publish_programme, **strict)]

    async def go():
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client)
        agent = Agent(name="festival_office", model=server.model, tools=tools,
                      instructions="Festival office: gather the brief, choirs and profiles, draft the running order, book every choir, publish.")
        try:
            return await Runner.run(agent, json.dumps(inp), max_turns=40, run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()

    try:
        asyncio.run(go())
    except Exception as exc:
        if type(exc).__name__ not in ("UserError", "ModelBehaviorError", "AgentsException"):
            raise
    finally:
        set_trace_processors([])
