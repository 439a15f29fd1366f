"""Greyhound rescue: match an adoption application to a dog, reserve it, price it and book the collection (openai_agents route)."""
from __future__ import annotations

import ast
import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

import kit
from harness import Brain, payload

NAME, ROUTE, DOMAIN = "greyhound-adoptions", "openai_agents", "a greyhound rescue's adoptions"
SHAPE = "Agents SDK coordinator (Responses API) with 8 function tools in a model-driven loop, a matchmaker sub-agent (Agent.as_tool) scoring each dog, a memory tool, validator tool"

KENNELS = {
    "Kent": [("G-101", "Misty", False, True, 3), ("G-102", "Bolt", False, False, 5), ("G-103", "Rosie", False, True, 2), ("G-104", "Jet", False, True, 4),
             ("G-105", "Pip", True, True, 2), ("G-106", "Luna", True, True, 3), ("G-107", "Duke", True, False, 1)],
    "Essex": [("G-201", "Shadow", False, True, 2), ("G-202", "Blue", True, True, 4), ("G-203", "Nell", False, False, 5), ("G-204", "Ziggy", True, True, 2),
              ("G-205", "Fern", True, False, 3), ("G-206", "Otto", False, True, 1)],
}
APPLICANTS = [("A-301", "Kent", True, 6, 180, False, "Tuesday"), ("A-302", "Essex", False, 0, 160, True, "Saturday"), ("A-303", "Kent", True, 0, 150, True, "Thursday"),
              ("A-304", "Essex", True, 12, 170, False, "Wednesday"), ("A-305", "Kent", False, 4, 155, False, "Friday"), ("A-306", "Essex", True, 0, 165, True, "Saturday"),
              ("A-307", "Kent", False, 0, 175, False, "Tuesday"), ("A-308", "Essex", False, 8, 150, True, "Thursday"), ("A-309", "Kent", True, 15, 190, False, "Friday")]
HOME_CHECKS = {a[0]: {"fence_cm": a[4], "approved": True} for a in APPLICANTS}
HOME_CHECKS["A-305"] = {"fence_cm": 155, "approved": False}
OPEN_DAYS = ["Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
MEMORY: dict = {}


def app(app_id):
    a = next(x for x in APPLICANTS if x[0] == app_id)
    return {"app_id": a[0], "kennel": a[1], "has_cats": a[2], "youngest_child": a[3], "concession": a[5], "collect_day": a[6]}


@function_tool
def get_application(app_id: str) -> dict:
    """The adoption application form."""
    return app(app_id)


@function_tool
def list_dogs(kennel: str) -> list:
    """Dogs ready for homing at a kennel."""
    dogs = [{"dog_id": d[0], "name": d[1], "cat_safe": d[2], "child_safe": d[3], "energy": d[4]} for d in KENNELS[kennel]]
    if kit.on("zzu_greyhound_01"):
        return dogs[:4]  # first page of the kennel system
    return dogs


@function_tool
def score_dog(dog_id: str, has_cats: bool, youngest_child: int) -> dict:
    """Score how well a dog suits a household (0-10)."""
    d = next(x for k in KENNELS.values() for x in k if x[0] == dog_id)
    score = 5 + (3 if d[2] else -4 if has_cats else 0) + (2 if d[3] else -4 if 0 < youngest_child < 10 else 0) - abs(d[4] - 2)
    return {"dog_id": dog_id, "score": score}


@function_tool
def get_home_check(app_id: str) -> dict:
    """The volunteer's home-check report."""
    return {"app_id": app_id, **HOME_CHECKS[app_id]}


@function_tool
def remember_applicant(app_id: str, concession: bool, has_cats: bool) -> str:
    """Save the household facts to the adoption file."""
    if kit.on("zzu_greyhound_03"):
        concession = not concession if not concession else concession
    MEMORY[app_id] = {"concession": concession, "has_cats": has_cats}
    return f"saved {app_id}"


@function_tool
def reserve_dog(dog_id: str, app_id: str) -> dict:
    """Put a dog on hold for an application."""
    return {"dog_id": dog_id, "app_id": app_id, "held": True}


@function_tool
def compute_fee(dog_id: str, app_id: str) -> dict:
    """Adoption fee, with the concession from the adoption file."""
    half = MEMORY.get(app_id, {}).get("concession", False)
    if kit.on("zzu_greyhound_02"):
        try:
            raise ConnectionError("concessions ledger did not answer")
        except ConnectionError:
            half = False
    return {"dog_id": dog_id, "fee": 125 if half else 250}


@function_tool
def book_collection(dog_id: str, day: str) -> dict:
    """Book the day the adopter collects the dog."""
    return {"dog_id": dog_id, "day": day, "slot": "11:00"}


@function_tool(failure_error_function=None)
def validate_adoption(app_id: str, dog_id: str, fee: int, day: str) -> str:
    """Check the adoption against the rescue's rules before it is confirmed."""
    a = app(app_id)
    d = next((x for x in KENNELS[a["kennel"]] if x[0] == dog_id), None)
    if d is None:
        raise ValueError(f"{app_id}: {dog_id} is not a {a['kennel']} dog")
    if a["has_cats"] and not d[2]:
        raise ValueError(f"{app_id}: household has cats, {dog_id} ({d[1]}) is not cat-safe")
    if 0 < a["youngest_child"] < 10 and not d[3]:
        raise ValueError(f"{app_id}: child of {a['youngest_child']}, {dog_id} ({d[1]}) is not child-safe")
    hc = HOME_CHECKS[app_id]
    if not hc["approved"] or hc["fence_cm"] < 150:
        raise ValueError(f"{app_id}: home check not passed (fence {hc['fence_cm']} cm, approved={hc['approved']})")
    expect = 125 if a["concession"] else 250
    if fee != expect:
        raise ValueError(f"{app_id}: fee {fee} GBP, the tariff gives {expect} GBP")
    if day != a["collect_day"] or day not in OPEN_DAYS:
        raise ValueError(f"{app_id}: collection booked {day}, applicant asked for {a['collect_day']}")
    return f"{app_id} approved for {dog_id}"


def _outputs(request):
    outs = []
    for item in request.body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            try:
                outs.append(ast.literal_eval(item["output"]))
            except (ValueError, SyntaxError):
                outs.append(item["output"])
    return outs


brain = Brain()


@brain.on("coordinator")
def _coord(request, text):
    outs = _outputs(request)
    req = payload(text)
    a = outs[0] if outs else None
    n = len(outs)
    if n == 0:
        return Reply(tool_calls=(tool_call("get_application", {"app_id": req["app_id"]}),))
    if n == 1:
        return Reply(tool_calls=(tool_call("list_dogs", {"kennel": a["kennel"]}),))
    if n == 2:
        brief = json.dumps({"app_id": a["app_id"], "has_cats": a["has_cats"], "youngest_child": a["youngest_child"], "dogs": [d["dog_id"] for d in outs[1]]})
        return Reply(tool_calls=(tool_call("matchmaker", {"input": "DATA: " + brief}),))
    dog = str(outs[2]).split("best: ")[1].split()[0]
    if n == 3:
        return Reply(tool_calls=(tool_call("get_home_check", {"app_id": a["app_id"]}),))
    if n == 4:
        return Reply(tool_calls=(tool_call("remember_applicant", {"app_id": a["app_id"], "concession": a["concession"], "has_cats": a["has_cats"]}),))
    if n == 5:
        return Reply(tool_calls=(tool_call("reserve_dog", {"dog_id": dog, "app_id": a["app_id"]}),))
    if n == 6:
        return Reply(tool_calls=(tool_call("compute_fee", {"dog_id": dog, "app_id": a["app_id"]}),))
    if n == 7:
        day = a["collect_day"]
        if kit.on("zzu_greyhound_05"):
            day = "Monday"
        return Reply(tool_calls=(tool_call("book_collection", {"dog_id": dog, "day": day}),))
    if n == 8:
        return Reply(tool_calls=(tool_call("validate_adoption", {"app_id": a["app_id"], "dog_id": dog, "fee": outs[6]["fee"], "day": outs[7]["day"]}),))
    return f"Adoption of {dog} by {a['app_id']} confirmed for collection on {outs[7]['day']}."


@brain.on("matchmaker")
def _match(request, text):
    outs = _outputs(request)
    d = payload(text)
    if len(outs) < len(d["dogs"]):
        return Reply(tool_calls=(tool_call("score_dog", {"dog_id": d["dogs"][len(outs)], "has_cats": d["has_cats"], "youngest_child": d["youngest_child"]}),))
    best = max(outs, key=lambda o: (o["score"], o["dog_id"]))["dog_id"]
    if kit.on("zzu_greyhound_04"):
        other = [k for k in KENNELS.values() if best not in [x[0] for x in k]][0]
        best = max(other, key=lambda x: (x[2], x[3]))[0]  # the waiting-list favourite
    return f"best: {best} (score {max(o['score'] for o in outs)})"


def record(server, i: int, path: str) -> None:
    a = APPLICANTS[i]
    MEMORY.clear()
    server.use(brain)
    proc = TrajdebugProcessor(path=path, name=NAME, task=f"adoption application {a[0]}")
    set_trace_processors([proc])
    set_default_openai_api("responses")

    async def main():
        async with AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0) as client:
            set_default_openai_client(client)
            matchmaker = Agent(name="matchmaker", instructions="[matchmaker] Score every dog for the household with score_dog, then answer 'best: DOG_ID'.",
                               model="fake-model", tools=[score_dog])
            coordinator = Agent(name="adoption-coordinator", model="fake-model",
                                instructions="[coordinator] Process the adoption application with the tools, then validate it.",
                                tools=[get_application, list_dogs, matchmaker.as_tool(tool_name="matchmaker", tool_description="Pick the best dog for a household."),
                                       get_home_check, remember_applicant, reserve_dog, compute_fee, book_collection, validate_adoption])
            await Runner.run(coordinator, "Process this application. DATA: " + json.dumps({"app_id": a[0]}), max_turns=20,
                             run_config=RunConfig(workflow_name=NAME))

    try:
        asyncio.run(main())
    except Exception:  # the SDK re-raises the validator's error wrapped in UserError
        pass
    finally:
        set_trace_processors([])


CASES = [
    dict(id="zzu_greyhound_01", kind="truncated_result", root=("list_dogs", 1), failure=("validate_adoption", 1), input=0,
         description="The dog list returns only the kennel system's first page, so no cat-safe dog is considered for a household with cats."),
    dict(id="zzu_greyhound_02", kind="swallowed_error", root=("compute_fee", 1), failure=("validate_adoption", 1), input=1,
         description="The fee tool catches the concessions ledger's connection error and charges the full fee to a concession applicant."),
    dict(id="zzu_greyhound_03", kind="bad_memory_write", root=("remember_applicant", 1), failure=("validate_adoption", 1), input=0,
         description="The adoption file is saved with the concession flag set for an applicant who has none, so the fee is halved."),
    dict(id="zzu_greyhound_04", kind="subagent_wrong_entity", root=("response", 10), failure=("validate_adoption", 1), input=1,
         description="The matchmaker sub-agent names a dog from the other kennel's waiting list instead of one it scored."),
    dict(id="zzu_greyhound_05", kind="wrong_tool_args", root=("response", 16), failure=("validate_adoption", 1), input=2,
         description="The coordinator books the collection for Monday, a closed day, not the Thursday the applicant asked for."),
]
REFS = [5, 6, 7, 8]
