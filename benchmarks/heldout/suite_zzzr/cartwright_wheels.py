"""A cartwright's wheel-order desk on the OpenAI Agents SDK (route openai_agents).

Shape: a desk agent looks the order up and hands off to a wheelwright agent; the
wheelwright calls two tools in parallel (spoke pattern, timber stock), then quotes and
books the forge for the iron tyre.  Chat Completions against the fake server, recorded by
trajdebug's trace processor.  Tools raise (no error function), which ends Runner.run.
"""

from __future__ import annotations

import asyncio
import json
import math

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "cartwright-wheel-desk"
ROUTE = "openai_agents"
DOMAIN = "a cartwright's wheel orders"
SHAPE = "two agents with a hand-off, parallel tool calls, quote then forge booking; 12-16 steps"
SWITCH = None

ORDERS = {
    "W-181": {"customer": "Penrose Carriers", "diameter_in": 44, "felloes": 7, "nave": "elm", "spokes": "oak"},
    "W-118": {"customer": "Hale Brewery", "diameter_in": 36, "felloes": 6, "nave": "elm", "spokes": "oak"},
    "W-207": {"customer": "Tamar Farms", "diameter_in": 52, "felloes": 8, "nave": "elm", "spokes": "oak"},
    "W-233": {"customer": "Lanyon Quarry", "diameter_in": 40, "felloes": 6, "nave": "elm", "spokes": "oak"},
    "W-240": {"customer": "St Erth Dairy", "diameter_in": 48, "felloes": 7, "nave": "elm", "spokes": "oak"},
    "W-256": {"customer": "Morvah Timber", "diameter_in": 56, "felloes": 8, "nave": "elm", "spokes": "oak"},
}
TIMBER = {"oak": {"lot": "OK-14", "moisture_pct": 16}, "elm": {"lot": "EL-07", "moisture_pct": 19},
          "ash": {"lot": "AS-22", "moisture_pct": 15}}
SEASONING = {"OK-14": "air-dried 4 years"}

INPUTS = [
    {"order": "W-181", "message": "Please price and book wheel order W-181 for Penrose Carriers."},
    {"order": "W-207", "message": "Tamar Farms need a price on wheel W-207 and a tyre slot."},
    {"order": "W-233", "message": "Quote and book the forge for order W-233, Lanyon Quarry."},
    {"order": "W-240", "message": "Can you get W-240 (St Erth Dairy) quoted and tyred?"},
    {"order": "W-256", "message": "Morvah Timber chasing W-256: quote and forge booking please."},
]

CASES = [
    {"id": "zzzr-cart-species", "input": 2, "switch": "nave_species", "kind": "wrong_tool_args",
     "root": ("generation wheel-desk-model", 3), "failure": ("quote_wheel", 1),
     "desc": "The wheelwright asked the timber stock for elm (the nave's timber) where the spokes are oak, and quoted with that lot."},
    {"id": "zzzr-cart-order", "input": 0, "switch": "transposed_order", "kind": "subagent_wrong_entity",
     "root": ("generation wheel-desk-model", 3), "failure": ("quote_wheel", 1),
     "desc": "The wheelwright agent asked for the spoke pattern of order W-118 instead of W-181 and quoted its 12 spokes."},
    {"id": "zzzr-cart-mortises", "input": 4, "switch": "short_pattern", "kind": "truncated_result",
     "root": ("spoke_pattern", 1), "failure": ("quote_wheel", 1),
     "desc": "The spoke pattern came back with only its first 10 mortises of 16, and the quote was made for 10 spokes."},
    {"id": "zzzr-cart-seasoning", "input": 3, "switch": "seasoning_gap", "kind": "swallowed_error",
     "root": ("timber_stock", 1), "failure": ("quote_wheel", 1),
     "desc": "The timber stock lookup hid a failed seasoning-record read and answered the oak lot with a moisture of 0%."},
    {"id": "zzzr-cart-forge-first", "input": 1, "switch": "forge_first", "kind": "plan_error",
     "root": ("generation wheel-desk-model", 3), "failure": ("book_forge", 1),
     "desc": "The wheelwright's plan put the forge booking before the quote, so the forge was asked for a tyre with no quote on file."},
]


def _tyre_in(diameter_in: float) -> float:
    return round(math.pi * diameter_in, 1)


def _history(messages):
    names, results = {}, {}
    for m in messages:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            content = m["content"]
            try:
                results[names.get(m["tool_call_id"])] = json.loads(content)
            except (TypeError, ValueError):
                results[names.get(m["tool_call_id"])] = content
    return results


def policy(request):
    messages = request.body["messages"]
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    done = _history(messages)
    user = next(m["content"] for m in messages if m["role"] == "user")
    order_id = next(w.strip(",.():") for w in user.split() if w.startswith("W-"))
    if system.startswith("You take wheel orders"):
        if "lookup_order" not in done:
            return Reply(tool_calls=(tool_call("lookup_order", {"order_id": order_id}),))
        return Reply(tool_calls=(tool_call("transfer_to_wheelwright", {}),))
    order = done["lookup_order"]
    if "spoke_pattern" not in done:
        if SWITCH == "forge_first" and "book_forge" not in done:
            return Reply(tool_calls=(tool_call("book_forge", {"order_id": order_id, "tyre_in": _tyre_in(order["diameter_in"]), "quote_id": ""}),))
        subject = "W-118" if SWITCH == "transposed_order" else order_id
        species = order["nave"] if SWITCH == "nave_species" else order["spokes"]
        return Reply(tool_calls=(tool_call("spoke_pattern", {"order_id": subject}),
                                 tool_call("timber_stock", {"species": species, "count": order["felloes"] * 2})))
    pattern, timber = done["spoke_pattern"], done["timber_stock"]
    if "quote_wheel" not in done:
        return Reply(tool_calls=(tool_call("quote_wheel", {
            "order_id": order_id, "spokes": len(pattern["mortises"]), "diameter_in": pattern["diameter_in"],
            "timber_lot": timber["lot"], "species": timber["species"], "moisture_pct": timber["moisture_pct"]}),))
    quote = done["quote_wheel"]
    if "book_forge" not in done or isinstance(done["book_forge"], str):
        return Reply(tool_calls=(tool_call("book_forge", {"order_id": order_id, "tyre_in": quote["tyre_in"],
                                                          "quote_id": quote["quote_id"]}),))
    slot = done["book_forge"]
    return f"Order {order_id} quoted at {quote['price_gbp']} GBP; tyre {quote['tyre_in']} in booked at the forge for {slot['slot']}."


@function_tool(failure_error_function=None)
def lookup_order(order_id: str) -> str:
    """The wheel order: customer, diameter, felloes and timbers."""
    return json.dumps({"order_id": order_id, **ORDERS[order_id]})


@function_tool(failure_error_function=None)
def spoke_pattern(order_id: str) -> str:
    """The nave's mortise pattern for an order's wheel."""
    o = ORDERS[order_id]
    n = o["felloes"] * 2
    mortises = [{"mortise": i + 1, "angle_deg": round(360 / n * i, 1)} for i in range(n)]
    if SWITCH == "short_pattern":
        mortises = mortises[:10]
    return json.dumps({"order_id": order_id, "diameter_in": o["diameter_in"], "mortises": mortises})


@function_tool(failure_error_function=None)
def timber_stock(species: str, count: int) -> str:
    """A seasoned lot of riven spoke billets of a species."""
    lot = TIMBER[species]
    try:
        if SWITCH == "seasoning_gap":
            raise KeyError(lot["lot"])
        seasoning = SEASONING.get(lot["lot"], "air-dried 2 years")
        moisture = lot["moisture_pct"]
    except KeyError:
        seasoning, moisture = "", 0
    return json.dumps({"species": species, "lot": lot["lot"], "billets": count, "moisture_pct": moisture,
                       "seasoning": seasoning})


@function_tool(failure_error_function=None)
def quote_wheel(order_id: str, spokes: int, diameter_in: float, timber_lot: str, species: str, moisture_pct: float) -> str:
    """Price a wheel from its spokes, diameter and timber lot."""
    order = ORDERS[order_id]
    if species != order["spokes"]:
        raise ValueError(f"spokes for {order_id} are riven {order['spokes']}; lot {timber_lot} is {species}")
    if not 12 <= moisture_pct <= 18:
        raise ValueError(f"lot {timber_lot} moisture {moisture_pct}% is outside 12-18% for spoke work")
    if spokes != order["felloes"] * 2:
        raise ValueError(f"{order['felloes']} felloes take {order['felloes'] * 2} spokes; {spokes} quoted")
    price = round(14.5 * spokes + 3.2 * diameter_in, 2)
    return json.dumps({"quote_id": f"Q{order_id[2:]}", "price_gbp": price, "tyre_in": _tyre_in(diameter_in)})


@function_tool(failure_error_function=None)
def book_forge(order_id: str, tyre_in: float, quote_id: str) -> str:
    """Book the forge to shrink an iron tyre onto a quoted wheel."""
    if not quote_id:
        raise ValueError(f"no quote on file for {order_id}: the forge books quoted wheels only")
    need = _tyre_in(ORDERS[order_id]["diameter_in"])
    if abs(tyre_in - need) > 0.5:
        raise ValueError(f"tyre {tyre_in} in does not fit wheel {order_id} ({ORDERS[order_id]['diameter_in']} in needs {need} in)")
    return json.dumps({"order_id": order_id, "slot": "Thursday heat", "tyre_in": tyre_in})


def record(server, given: dict, path) -> None:
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model="wheel-desk-model", openai_client=client)
    wheelwright = Agent(name="wheelwright", model=model, tools=[spoke_pattern, timber_stock, quote_wheel, book_forge],
                        instructions="You are the wheelwright: pattern the nave, pick the timber, quote, then book the forge.")
    desk = Agent(name="wheel_desk", model=model, tools=[lookup_order], handoffs=[wheelwright],
                 instructions="You take wheel orders: look the order up, then hand it to the wheelwright.")
    processor = TrajdebugProcessor(path=str(path), name=NAME, task=f"wheel order {given['order']}")
    set_trace_processors([processor])

    async def go():
        try:
            await Runner.run(desk, given["message"], run_config=RunConfig(workflow_name=NAME))
        except Exception:
            pass
        finally:
            await client.close()

    try:
        asyncio.run(go())
    finally:
        set_trace_processors([])
