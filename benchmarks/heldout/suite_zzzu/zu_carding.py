"""Wool carding mill intake (openai_agents route): intake agent hands off to a lot planner; parallel tool calls, a breed sub-agent as a tool, booking and a docket tool that enforces the mill's rules."""
import ast
import asyncio
import json

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "carding-intake-desk"
ROUTE = "openai_agents"
DOMAIN = "wool carding mill"
SHAPE = "intake agent -> hand-off -> planner: parallel weigh/yield/breed sub-agent -> capacity -> booking -> docket tool"
SWITCH = set()

BREEDS = {
    "Romeldale": {"micron": 23, "staple_mm": 100, "yield": 0.55},
    "Romney": {"micron": 33, "staple_mm": 150, "yield": 0.75},
    "Shetland": {"micron": 26, "staple_mm": 90, "yield": 0.70},
    "Corriedale": {"micron": 27, "staple_mm": 110, "yield": 0.60},
    "Jacob": {"micron": 30, "staple_mm": 120, "yield": 0.70},
    "Wensleydale": {"micron": 35, "staple_mm": 250, "yield": 0.78},
}
SCALE_KG = {"LOT-0412": 18.4, "LOT-0413": 31.0, "LOT-0415": 12.2, "LOT-0418": 24.6, "LOT-0421": 40.5}
CARDERS = {"Tatham 1": ["2025-05-12", "2025-05-13"], "Tatham 2": ["2025-05-12"]}
LAST_WEEK = {"Tatham 1": ["2025-05-05"], "Tatham 2": []}
PRICE_PER_KG = {"roving": 14.0, "batt": 11.0}

INPUTS = [
    {"farm": "Hollin Bank Farm", "lot": "LOT-0412", "breed": "Romeldale", "product": "roving", "declared_kg": 18.5},
    {"farm": "Scar Top Flock", "lot": "LOT-0413", "breed": "Wensleydale", "product": "roving", "declared_kg": 31.0},
    {"farm": "Garth Croft", "lot": "LOT-0415", "breed": "Shetland", "product": "batt", "declared_kg": 12.0},
    {"farm": "Low Moor Jacobs", "lot": "LOT-0418", "breed": "Jacob", "product": "batt", "declared_kg": 25.0},
    {"farm": "Brackenrigg", "lot": "LOT-0421", "breed": "Corriedale", "product": "roving", "declared_kg": 40.0},
]
CASES = [
    {"id": "zzzu_carding_breed", "input": 0, "switch": "breed_near", "kind": "subagent_wrong_entity",
     "root": ("generation fake-model", 3), "failure": "issue_docket",
     "desc": "The breed sub-agent described Romney when asked about Romeldale, so the docket carried the other breed's fibre."},
    {"id": "zzzu_carding_pounds", "input": 3, "switch": "scale_pounds", "kind": "unit_error",
     "root": ("weigh_fleece", 1), "failure": "issue_docket",
     "desc": "The platform scale reported the fleece in pounds (54.2) and it was taken as kilograms, more than double the declared weight."},
    {"id": "zzzu_carding_desk", "input": 2, "switch": "handoff_spinning", "kind": "wrong_routing",
     "root": ("generation fake-model", 1), "failure": "book_spinning",
     "desc": "The intake agent handed a carding lot to the spinning desk, which cannot book a lot that has no yarn count."},
    {"id": "zzzu_carding_diary", "input": 4, "switch": "diary_last_week", "kind": "stale_data",
     "root": ("check_capacity", 1), "failure": "book_carding",
     "desc": "The capacity check read last week's carder diary, offered 12 May on Tatham 1 that is already taken, and the booking was refused."},
    {"id": "zzzu_carding_price", "input": 1, "switch": "price_missing", "kind": "swallowed_error",
     "root": ("quote_carding", 1), "failure": "issue_docket",
     "desc": "The quote tool caught a missing long-wool surcharge entry and returned a zero quote, which the docket refused."},
]


def _results(msgs):
    names = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
    out = {}
    for m in msgs:
        if m["role"] == "tool":
            text = m["content"]
            try:
                val = ast.literal_eval(text)
            except Exception:
                try:
                    val = json.loads(text)
                except Exception:
                    val = text
            out[names.get(m["tool_call_id"], "?")] = val
    return out


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    user = [m for m in msgs if m["role"] == "user"][0]["content"]
    if system.startswith("You describe sheep breeds"):
        asked = user.split(":", 1)[1].strip()
        if "breed_near" in SWITCH:
            asked = "Romney"
        return json.dumps({"breed": asked, **{k: v for k, v in BREEDS[asked].items() if k != "yield"}})
    lot = json.loads(user.split("\n", 1)[1])
    res = _results(msgs)
    if system.startswith("You take lots in"):
        target = "transfer_to_spinning_desk" if "handoff_spinning" in SWITCH else "transfer_to_lot_planner"
        return Reply(tool_calls=(tool_call(target, {}),))
    if system.startswith("You book spinning"):
        return Reply(tool_calls=(tool_call("book_spinning", {"lot": lot["lot"], "yarn_count": ""}),))
    if "weigh_fleece" not in res:
        return Reply(tool_calls=(tool_call("weigh_fleece", {"lot": lot["lot"]}),
                                 tool_call("scour_yield", {"breed": lot["breed"]}),
                                 tool_call("breed_notes", {"input": f"Describe the breed: {lot['breed']}"})))
    clean = round(res["weigh_fleece"]["kg"] * res["scour_yield"]["yield"], 1)
    if "check_capacity" not in res:
        return Reply(tool_calls=(tool_call("check_capacity", {"clean_kg": clean}),))
    slot = res["check_capacity"]
    if "book_carding" not in res:
        return Reply(tool_calls=(tool_call("book_carding", {"lot": lot["lot"], "carder": slot["carder"],
                                                            "day": slot["day"], "clean_kg": clean}),
                                 tool_call("quote_carding", {"product": lot["product"], "clean_kg": clean,
                                                             "staple_mm": res["breed_notes"]["staple_mm"]})))
    if "issue_docket" not in res:
        notes = res["breed_notes"]
        return Reply(tool_calls=(tool_call("issue_docket", {
            "lot": lot["lot"], "breed": notes["breed"], "micron": notes["micron"], "raw_kg": res["weigh_fleece"]["kg"],
            "clean_kg": clean, "product": lot["product"], "carder": slot["carder"], "day": slot["day"],
            "quote": res["quote_carding"]["total"]}),))
    d = res["issue_docket"]
    return f"Lot {d['lot']} booked on {d['carder']} for {d['day']}: {d['product']}, {d['clean_kg']} kg clean, {d['quote']:.2f} GBP."


@function_tool(failure_error_function=None)
def weigh_fleece(lot: str) -> dict:
    """Raw weight of a lot on the platform scale."""
    kg = SCALE_KG[lot]
    if "scale_pounds" in SWITCH:
        kg = round(kg * 2.20462, 1)
    return {"lot": lot, "kg": kg}


@function_tool(failure_error_function=None)
def scour_yield(breed: str) -> dict:
    """Expected clean yield after scouring for a breed."""
    return {"breed": breed, "yield": BREEDS[breed]["yield"]}


@function_tool(failure_error_function=None)
def check_capacity(clean_kg: float) -> dict:
    """First free carder day for a lot of this clean weight."""
    diary = LAST_WEEK if "diary_last_week" in SWITCH else CARDERS
    for day in ["2025-05-12", "2025-05-13", "2025-05-14", "2025-05-15"]:
        for carder, taken in diary.items():
            if day not in taken and (clean_kg <= 20 or carder == "Tatham 1"):
                return {"carder": carder, "day": day}
    return {"carder": "", "day": ""}


@function_tool(failure_error_function=None)
def book_carding(lot: str, carder: str, day: str, clean_kg: float) -> dict:
    """Book a carder for a lot on a day."""
    if day in CARDERS[carder]:
        raise RuntimeError(f"{carder} is already booked on {day}")
    return {"lot": lot, "carder": carder, "day": day, "booking": f"{carder[-1]}-{day[5:]}"}


@function_tool(failure_error_function=None)
def quote_carding(product: str, clean_kg: float, staple_mm: int) -> dict:
    """Price for carding a lot into the product."""
    surcharge = {"long": 2.5, "standard": 0.0}
    if "price_missing" in SWITCH:
        surcharge.pop("long")
    try:
        extra = surcharge["long" if staple_mm > 200 else "standard"]
        total = round(clean_kg * (PRICE_PER_KG[product] + extra), 2)
    except KeyError:
        total = 0.0
    return {"product": product, "total": total}


@function_tool(failure_error_function=None)
def book_spinning(lot: str, yarn_count: str) -> dict:
    """Book a lot onto the spinning frames."""
    if not yarn_count:
        raise ValueError(f"spinning booking for {lot} needs a yarn count")
    return {"lot": lot, "yarn_count": yarn_count}


@function_tool(failure_error_function=None)
def issue_docket(lot: str, breed: str, micron: int, raw_kg: float, clean_kg: float, product: str, carder: str,
                 day: str, quote: float) -> dict:
    """Issue the mill docket for a booked lot."""
    tag = TAGS[lot]
    if breed != tag["breed"]:
        raise ValueError(f"docket lists {breed} fibre; the lot tag on {lot} says {tag['breed']}")
    if raw_kg > tag["declared_kg"] * 1.1:
        raise ValueError(f"scale weight {raw_kg} kg is over the farm's declared {tag['declared_kg']} kg")
    if quote <= 0:
        raise ValueError(f"docket quote {quote:.2f} for {clean_kg} kg of {product}")
    return {"lot": lot, "carder": carder, "day": day, "product": product, "clean_kg": clean_kg, "quote": quote}


TAGS = {i["lot"]: i for i in INPUTS}


async def _go(server, inp):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    expert = Agent(name="breed_expert", instructions="You describe sheep breeds: micron and staple.", model=model)
    planner = Agent(name="lot_planner", instructions="You plan carding lots: weigh, yield, breed notes, capacity, book, quote, docket.",
                    model=model, tools=[weigh_fleece, scour_yield,
                                        expert.as_tool(tool_name="breed_notes", tool_description="Notes on a breed."),
                                        check_capacity, book_carding, quote_carding, issue_docket])
    spinning = Agent(name="spinning_desk", instructions="You book spinning for lots with a yarn count.", model=model,
                     tools=[book_spinning])
    intake = Agent(name="intake", instructions="You take lots in at the mill door and pass them to the right desk.",
                   model=model, handoffs=[planner, spinning])
    try:
        await Runner.run(intake, "Lot:\n" + json.dumps(inp), run_config=RunConfig(workflow_name=NAME))
    finally:
        await client.close()


def run_one(server, inp, path):
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"carding {inp['lot']} for {inp['farm']}")])
    try:
        asyncio.run(_go(server, inp))
    except Exception:
        pass
    finally:
        set_trace_processors([])
