"""Cutler's knife sharpening service: roll intake (openai_agents route). One agent works through a knife roll
one tool call per turn: it writes a work order, then per knife identifies it, picks an edge profile and
sharpens it; then it prices the roll, schedules the pickup and takes the payment against the drop-off
pre-authorisation (the payment API refuses a charge above it)."""
import asyncio
import json

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "cutler-sharpening"
ROUTE = "openai_agents"
DOMAIN = "cutler's knife sharpening service"
SHAPE = "Agents SDK: single agent, long sequential loop (one tool per turn) over the knives of a roll, sharpening tool that refuses, payment API that refuses"
ACTIVE = None

KNIVES = {
    "K-101": {"style": "chef", "steel": "carbon", "length_cm": 21, "serrated": False},
    "K-102": {"style": "bread", "steel": "stainless", "length_cm": 25, "serrated": True},
    "K-103": {"style": "paring", "steel": "stainless", "length_cm": 9, "serrated": False},
    "JP-201": {"style": "gyuto", "steel": "carbon", "length_cm": 24, "serrated": False},
    "JP-202": {"style": "petty", "steel": "carbon", "length_cm": 15, "serrated": False},
    "K-104": {"style": "boning", "steel": "stainless", "length_cm": 15, "serrated": False},
    "K-105": {"style": "cleaver", "steel": "carbon", "length_cm": 18, "serrated": False},
}
RATES = {"per_cm": 0.6, "serrated": 6.0, "base": 3.0}
RATES_BEFORE_JANUARY = {"per_cm": 0.9, "serrated": 8.0, "base": 4.0}
SHARPENED = {}

INPUTS = [
    {"roll": "R-12", "customer": "Bistro Anka", "tags": ["K-101", "K-102", "K-103", "K-104"]},
    {"roll": "R-13", "customer": "Mr Haldane", "tags": ["JP-201", "JP-202"]},
    {"roll": "R-14", "customer": "Fishmonger Lyle", "tags": ["K-104", "K-105", "K-101"]},
    {"roll": "R-15", "customer": "Cookery school", "tags": ["K-101", "K-103", "JP-202", "K-102", "K-105"]},
    {"roll": "R-16", "customer": "Ms Adeyemi", "tags": ["K-102", "JP-201", "K-103"]},
]


def preauth(tags):
    """The estimate the customer pre-authorised at drop-off (the counter's rate sheet plus 10%)."""
    return round(sum(RATES["base"] + RATES["per_cm"] * KNIVES[t]["length_cm"] + (RATES["serrated"] if KNIVES[t]["serrated"] else 0)
                     for t in tags) * 1.1, 2)


@function_tool
def write_work_order(roll: str, tags: list[str]) -> str:
    """Open the work order for a roll with the knives to sharpen, in order."""
    SHARPENED[roll] = []
    return json.dumps({"roll": roll, "tags": tags, "opened": True})


@function_tool
def identify_knife(roll: str, position: int) -> str:
    """Identify the knife at a position (1-based) of the roll from the intake photo."""
    tags = ROLLS[roll]
    i = position - 1
    if ACTIVE == "off_by_one" and position > 1:
        i = min(position, len(tags) - 1)
    tag = tags[i]
    k = dict(KNIVES[tag], tag=tag)
    if ACTIVE == "unit_error" and tag.startswith("JP"):
        k["length_cm"] = k["length_cm"] * 10
    return json.dumps(k)


@function_tool
def edge_profile(steel: str, serrated: bool) -> str:
    """Edge profile and grit for a blade."""
    if serrated:
        return json.dumps({"profile": "tapered rod", "grit": 600})
    return json.dumps({"profile": "flat 15" if steel == "carbon" else "flat 20", "grit": 1000 if steel == "carbon" else 800})


def _sharpen(roll: str, position: int, tag: str, profile: str) -> str:
    real = ROLLS[roll][position - 1]
    if KNIVES[real]["serrated"] and profile != "tapered rod":
        raise RuntimeError(f"belt stopped: {profile} belt cannot take the serrated edge of knife {real}")
    if tag != real:
        raise RuntimeError(f"knife at position {position} of {roll} carries tag {real}, job card says {tag}")
    SHARPENED.setdefault(roll, []).append(tag)
    return json.dumps({"tag": tag, "profile": profile, "done": True})


sharpen = function_tool(_sharpen, name_override="sharpen", failure_error_function=None,
                        description_override="Sharpen one knife on the belt.")


class Knife(BaseModel):
    tag: str
    style: str
    steel: str
    length_cm: int
    serrated: bool


@function_tool
def price_roll(knives: list[Knife]) -> str:
    """Price the sharpened knives from the rate card."""
    rates = RATES_BEFORE_JANUARY if ACTIVE == "stale_data" else RATES
    lines = [{"tag": k.tag, "fee": round(rates["base"] + rates["per_cm"] * k.length_cm + (rates["serrated"] if k.serrated else 0), 2)}
             for k in knives]
    return json.dumps({"lines": lines, "total": round(sum(x["fee"] for x in lines), 2)})


def _pickup(roll: str) -> str:
    done, tags = SHARPENED.get(roll, []), ROLLS[roll]
    if sorted(done) != sorted(tags):
        raise RuntimeError(f"roll {roll} holds {len(tags)} knives, {len(done)} sharpened")
    return json.dumps({"roll": roll, "ready": "Thursday 16:00"})


schedule_pickup = function_tool(_pickup, name_override="schedule_pickup", failure_error_function=None,
                                description_override="Schedule the pickup of a finished roll.")


def _pay(roll: str, amount: float) -> str:
    limit = preauth(ROLLS[roll])
    if amount > limit:
        raise PermissionError(f"payment declined: {amount:.2f} exceeds the pre-authorised {limit:.2f} (code 51)")
    return json.dumps({"roll": roll, "charged": amount, "status": "captured"})


take_payment = function_tool(_pay, name_override="take_payment", failure_error_function=None,
                             description_override="Capture the payment against the pre-authorisation.")

ROLLS = {i["roll"]: i["tags"] for i in INPUTS}


def policy(request):
    msgs = request.body["messages"]
    req = json.loads(next(m["content"] for m in msgs if m["role"] == "user").split("\n", 1)[1])
    names, res = {}, []
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"]))
        if m.get("role") == "tool":
            name, args = names[m["tool_call_id"]]
            res.append((name, args, json.loads(m["content"])))
    roll, tags = req["roll"], req["tags"]
    if not res:
        planned = list(tags)
        if ACTIVE == "plan_error" and roll == "R-15":
            planned = [t for t in tags if not t.startswith("JP")]
        return Reply(tool_calls=(tool_call("write_work_order", {"roll": roll, "tags": planned}),))
    order = next(out for n, _, out in res if n == "write_work_order")
    knives = [out for n, _, out in res if n == "identify_knife"]
    last = res[-1]
    if last[0] in ("write_work_order", "sharpen"):
        if len(knives) < len(order["tags"]):
            return Reply(tool_calls=(tool_call("identify_knife", {"roll": roll, "position": len(knives) + 1}),))
        return Reply(tool_calls=(tool_call("price_roll", {"knives": knives}),))
    if last[0] == "identify_knife":
        k = last[2]
        serrated = k["serrated"]
        if ACTIVE == "wrong_tool_args" and k["style"] == "bread" and roll == "R-16":
            serrated = False
        return Reply(tool_calls=(tool_call("edge_profile", {"steel": k["steel"], "serrated": serrated}),))
    if last[0] == "edge_profile":
        return Reply(tool_calls=(tool_call("sharpen", {"roll": roll, "position": len(knives), "tag": knives[-1]["tag"],
                                                        "profile": last[2]["profile"]}),))
    if last[0] == "price_roll":
        return Reply(tool_calls=(tool_call("schedule_pickup", {"roll": roll}),))
    if last[0] == "schedule_pickup":
        total = next(out for n, _, out in res if n == "price_roll")["total"]
        return Reply(tool_calls=(tool_call("take_payment", {"roll": roll, "amount": total}),))
    return f"Roll {roll} sharpened, paid and ready {next(out for n, _, out in res if n == 'schedule_pickup')['ready']}."


def run_one(server, inp, path):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    agent = Agent(name="sharpening_bench", instructions="You run the sharpening bench: one tool at a time.", model=model,
                  tools=[write_work_order, identify_knife, edge_profile, sharpen, price_roll, schedule_pickup, take_payment],
                  model_settings=ModelSettings(parallel_tool_calls=False))
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"sharpen roll {inp['roll']}")])
    SHARPENED.pop(inp["roll"], None)

    async def main():
        try:
            return await Runner.run(agent, f"Sharpen the roll for {inp['customer']}.\n" + json.dumps(inp),
                                    run_config=RunConfig(workflow_name=NAME), max_turns=40)
        finally:
            await client.close()

    try:
        asyncio.run(main())
    finally:
        set_trace_processors([])


def _c(n, kind, inp, root, occ, rkind, failure, desc):
    return {"id": f"zzzq-cutler-{n}", "kind": kind, "switch": kind, "input": inp,
            "root": {"name": root, "occurrence": occ, "kind": rkind}, "failure": failure, "description": desc}


G = "generation fake-model"
CASES = [
    _c(1, "plan_error", 3, G, 1, "llm", "schedule_pickup",
       "The model's work order for roll R-15 leaves out the knife tagged JP-202."),
    _c(2, "off_by_one", 0, "identify_knife", 2, "tool", "sharpen",
       "The knife identification reads the roll one position ahead from the second knife on."),
    _c(3, "wrong_tool_args", 4, G, 3, "llm", "sharpen",
       "The model asks for the edge profile of the bread knife as if it were not serrated."),
    _c(4, "stale_data", 2, "price_roll", 1, "tool", "take_payment",
       "The pricing tool uses the rate card from before the January change."),
    _c(5, "unit_error", 1, "identify_knife", 1, "tool", "take_payment",
       "The identification of imported knives gives blade lengths in millimetres under a centimetre field."),
]
