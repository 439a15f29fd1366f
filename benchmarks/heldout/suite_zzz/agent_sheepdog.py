"""Sheepdog trial entries (openai_agents route): a desk agent hands off to the secretary of the trial's region,
who looks up the handler and the dog in parallel, checks class eligibility and enters the run.
"""
from __future__ import annotations

import ast
import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

import trajdebug
from suite_common import system_text, tool_results
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "trial-entries"
ROUTE = "openai_agents"
DOMAIN = "sheepdog trial entries"
SHAPE = "Agents SDK: desk agent -> hand-off to one of two regional trial secretaries; parallel handler and dog lookups, eligibility tool, entry tool that refuses (raises); 15-18 steps"
SWITCH = None

HANDLERS = {"H-204": "Aled Pryce", "H-118": "Morag Quinn", "H-330": "Tom Ellery", "H-412": "Siân Rowlands", "H-257": "Dougie Fell"}
DOGS = {
    "ISDS-331207": {"dog": "Fly", "handler": "H-204", "points": {2025: 11, 2026: 14}},
    "ISDS-329884": {"dog": "Moss", "handler": "H-118", "points": {2025: 10, 2026: 7}},
    "ISDS-335012": {"dog": "Nell", "handler": "H-330", "points": {2025: 12, 2026: 11}},
    "ISDS-327761": {"dog": "Cap", "handler": "H-412", "points": {2025: 4, 2026: 8}},
    "ISDS-333410": {"dog": "Jess", "handler": "H-257", "points": {2025: 6, 2026: 2}},
}
PREVIOUS_KEEPER = {"ISDS-335012": "H-118"}
OPEN_MIN, NOVICE_MAX = 10, 5

INPUTS = [
    {"handler": "H-204", "dog_reg": "ISDS-331207", "class": "open", "trial": "Longshaw 2026"},
    {"handler": "H-118", "dog_reg": "ISDS-329884", "class": "open", "trial": "Longshaw 2026"},
    {"handler": "H-330", "dog_reg": "ISDS-335012", "class": "open", "trial": "Bala 2026"},
    {"handler": "H-412", "dog_reg": "ISDS-327761", "class": "open", "trial": "Bala 2026"},
    {"handler": "H-257", "dog_reg": "ISDS-333410", "class": "novice", "trial": "Hope Valley 2026"},
]

CASES = [
    {"id": "zzz-dog-1", "switch": "desk_region", "input": 0, "kind": "wrong_routing",
     "root": ("generation fake-model", 1), "failure": ("enter_run", 1),
     "description": "The entries desk hands the Longshaw entry to the Wales secretary, whose entry book does not hold that trial."},
    {"id": "zzz-dog-2", "switch": "register_cache", "input": 2, "kind": "stale_data",
     "root": ("dog_register", 1), "failure": ("enter_run", 1),
     "description": "The dog register answers from a cached copy that still lists Nell's previous keeper H-118, so the entry goes in under that keeper."},
    {"id": "zzz-dog-3", "switch": "reg_digits", "input": 4, "kind": "hallucinated_value",
     "root": ("generation fake-model", 4), "failure": ("enter_run", 1),
     "description": "The secretary's entry call gives Jess's registration as ISDS-333401, a number no lookup returned."},
    {"id": "zzz-dog-4", "switch": "points_window", "input": 3, "kind": "off_by_one",
     "root": ("class_eligibility", 1), "failure": ("enter_run", 1),
     "description": "The eligibility tool counts one season too many and adds last season's 4 points to Cap's 8, passing him for the open class."},
    {"id": "zzz-dog-5", "switch": "year_last", "input": 1, "kind": "wrong_tool_args",
     "root": ("generation fake-model", 3), "failure": ("enter_run", 1),
     "description": "The secretary asks class eligibility for the 2025 season instead of the 2026 season of the trial, where Moss has 7 points."},
]


@function_tool
def handler_lookup(handler: str) -> dict:
    """The society's record of a handler."""
    return {"handler": handler, "name": HANDLERS[handler], "member": True}


@function_tool
def dog_register(dog_reg: str) -> dict:
    """The stud book record of a registered dog: name and keeper."""
    d = DOGS[dog_reg]
    keeper = d["handler"]
    if SWITCH == "register_cache" and dog_reg in PREVIOUS_KEEPER:
        keeper = PREVIOUS_KEEPER[dog_reg]
    return {"dog_reg": dog_reg, "dog": d["dog"], "keeper": keeper}


@function_tool
def class_eligibility(dog_reg: str, trial_class: str, season: int) -> dict:
    """Points a dog won in the season and whether they allow the class."""
    pts = DOGS[dog_reg]["points"].get(season, 0)
    if SWITCH == "points_window":
        pts += DOGS[dog_reg]["points"].get(season - 1, 0)
    ok = pts >= OPEN_MIN if trial_class == "open" else pts <= NOVICE_MAX
    return {"dog_reg": dog_reg, "class": trial_class, "season": season, "points": pts, "eligible": ok}


REGIONS = {"peak_secretary": ("Longshaw 2026", "Hope Valley 2026"), "wales_secretary": ("Bala 2026",)}


def _enter(trial: str, handler: str, dog_reg: str, trial_class: str, book=()) -> dict:
    if trial not in book:
        raise ValueError(f"{trial} is not in this secretary's entry book ({', '.join(book)})")
    if dog_reg not in DOGS:
        raise ValueError(f"{trial}: {dog_reg} is not in the stud book")
    d = DOGS[dog_reg]
    if d["handler"] != handler:
        raise ValueError(f"{trial}: {d['dog']} ({dog_reg}) is kept by {d['handler']}, not {handler}")
    pts = d["points"][2026]
    if trial_class == "open" and pts < OPEN_MIN:
        raise ValueError(f"{trial}: {d['dog']} has {pts} points this season, open class needs {OPEN_MIN}")
    if trial_class == "novice" and pts > NOVICE_MAX:
        raise ValueError(f"{trial}: {d['dog']} has {pts} points this season, novice class allows {NOVICE_MAX}")
    return {"trial": trial, "run_no": 10 + len(handler) + int(dog_reg[-2:]) % 40, "dog": d["dog"], "class": trial_class}


def _entry_tool(book):
    def enter_run(trial: str, handler: str, dog_reg: str, trial_class: str) -> dict:
        return _enter(trial, handler, dog_reg, trial_class, book)
    return function_tool(enter_run, description_override="Enter a dog in a trial class in the secretary's entry book.",
                         failure_error_function=None)


def policy(request):
    sysmsg = system_text(request)
    msgs = request.body["messages"]
    entry = json.loads(next(m["content"] for m in msgs if m["role"] == "user").split("ENTRY:", 1)[1])
    res = {}
    for r in tool_results(request):
        if r["name"] and not r["name"].startswith("transfer_"):
            res[r["name"]] = ast.literal_eval(r["content"])
    if "entries desk" in sysmsg:
        target = "wales_secretary" if entry["trial"].startswith("Bala") else "peak_secretary"
        if SWITCH == "desk_region":
            target = "wales_secretary"
        return Reply(tool_calls=(tool_call(f"transfer_to_{target}", {}),))
    klass = entry["class"]
    if "dog_register" not in res:
        return Reply(tool_calls=(tool_call("handler_lookup", {"handler": entry["handler"]}),
                                 tool_call("dog_register", {"dog_reg": entry["dog_reg"]})))
    if "class_eligibility" not in res:
        season = 2025 if SWITCH == "year_last" else int(entry["trial"][-4:])
        return Reply(tool_calls=(tool_call("class_eligibility", {"dog_reg": res["dog_register"]["dog_reg"], "trial_class": klass, "season": season}),))
    if "enter_run" not in res:
        if not res["class_eligibility"]["eligible"]:
            return f"{res['dog_register']['dog']} is not eligible for the {klass} class."
        reg = res["dog_register"]["dog_reg"]
        if SWITCH == "reg_digits":
            reg = reg[:-2] + reg[-1] + reg[-2]
        return Reply(tool_calls=(tool_call("enter_run", {"trial": entry["trial"], "handler": res["dog_register"]["keeper"],
                                                         "dog_reg": reg, "trial_class": klass}),))
    e = res["enter_run"]
    return f"Entered {e['dog']} in the {e['class']} class at {e['trial']}, run {e['run_no']}."


def _agents(model):
    secretaries = [
        Agent(name=name, model=model, tools=[handler_lookup, dog_register, class_eligibility, _entry_tool(book)],
              instructions=f"You are the trial secretary for {', '.join(book)}. Check the handler and dog, check class eligibility, enter the run.")
        for name, book in REGIONS.items()]
    desk = Agent(name="entries_desk", model=model, handoffs=secretaries,
                 instructions="You are the entries desk of the trial society. Hand each entry to the secretary of its trial.")
    return desk


async def _main(inp, server):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client)
    set_default_openai_api("chat_completions")
    try:
        return await Runner.run(_agents("fake-model"), "Please enter this dog. ENTRY:" + json.dumps(inp),
                                run_config=RunConfig(workflow_name=NAME))
    finally:
        await client.close()


def record(inp, path, server):
    processor = TrajdebugProcessor(path=path, name=NAME, task=f"enter {inp['dog_reg']} in the {inp['class']} class at {inp['trial']}")
    set_trace_processors([processor])
    try:
        asyncio.run(_main(inp, server))
    except Exception as exc:
        # the app's own record of a run the SDK raised out of, when the trace does not already say it failed
        run = processor.to_run()
        if run is not None and run.outcome != "failure":
            trajdebug.mark(path, run.run_id, failed=f"the entry stopped: {exc}")
        raise
    finally:
        set_trace_processors([])
