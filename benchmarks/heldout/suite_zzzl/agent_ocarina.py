"""Ocarina workshop: the OpenAI Agents SDK (Chat Completions), an order desk handing off to a kiln planner or a repair desk."""

from __future__ import annotations

import ast
import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "terracotta-ocarina-orders"
ROUTE = "openai_agents"
DOMAIN = "ocarina workshop"
SHAPE = "Agents SDK: order desk (two parallel tool calls) hands off to a kiln planner (schedule, reserve, structured output) or to a repair desk; 13-18 steps"
ON: set[str] = set()

CUSTOMERS = {"Ines Duarte": "C-101", "Tom Lacey": "C-102", "Yara Haddad": "C-103", "Piet de Wit": "C-104", "June Park": "C-105"}
INPUTS = [
    {"customer": "Ines Duarte", "text": "I'd like a 12-hole alto C ocarina in stoneware, two of them please.", "kind": "new", "chambers": 1, "key": "alto C", "clay": "stoneware", "qty": 2},
    {"customer": "Tom Lacey", "text": "A double-chamber soprano G in earthenware, just one.", "kind": "new", "chambers": 2, "key": "soprano G", "clay": "earthenware", "qty": 1},
    {"customer": "Yara Haddad", "text": "My bass C ocarina from you has a cracked windway, ticket R-77.", "kind": "repair", "ticket": "R-77"},
    {"customer": "Piet de Wit", "text": "Three tenor F ocarinas in stoneware for our trio.", "kind": "new", "chambers": 1, "key": "tenor F", "clay": "stoneware", "qty": 3},
    {"customer": "June Park", "text": "One triple-chamber alto C in stoneware.", "kind": "new", "chambers": 3, "key": "alto C", "clay": "stoneware", "qty": 1},
]
KILNS = {"stoneware": {"kiln": "K2", "cone": "6", "slot": "K2-2027-01-12"}, "earthenware": {"kiln": "K1", "cone": "06", "slot": "K1-2027-01-08"}}
KILN_MAX_C = {"K1": 1000, "K2": 1240}
CONE_C = {"6": 1222, "06": 999}
REPAIRS = {"R-77": {"customer": "Yara Haddad", "item": "bass C ocarina", "issue": "cracked windway"}}

CASES = [
    {"id": "oca-01", "input": 3, "switch": "a", "kind": "wrong_routing", "root": ("generation fake-model", 2, "llm"), "failure": ("open_repair_ticket", 1),
     "description": "The order desk's model hands a new three-ocarina order to the repair desk instead of the kiln planner, and the repair desk finds no ticket to open it under."},
    {"id": "oca-02", "input": 0, "switch": "b", "kind": "unit_error", "root": ("kiln_schedule", 1, "tool"), "failure": ("reserve_kiln", 1),
     "description": "The kiln schedule gives the firing temperature in Fahrenheit (2232) where the workshop works in Celsius, and the kiln refuses a firing above its rating."},
    {"id": "oca-03", "input": 1, "switch": "c", "kind": "format_drift", "root": ("price_ocarina", 1, "tool"), "failure": ("turn 5", 1),
     "description": "The pricing tool starts answering the order total as display text ('EUR 64,50') instead of a number, the kiln planner copies it into its order plan, and the plan's schema rejects the answer at the end."},
    {"id": "oca-04", "input": 4, "switch": "d", "kind": "tool_ignores_argument", "root": ("kiln_schedule", 1, "tool"), "failure": ("reserve_kiln", 1),
     "description": "The kiln schedule ignores the clay it is asked about and offers the earthenware kiln's slot for a stoneware piece, which that kiln cannot fire."},
    {"id": "oca-05", "input": 3, "switch": "e", "kind": "wrong_tool_args", "root": ("generation fake-model", 4, "llm"), "failure": ("reserve_kiln", 1),
     "description": "The kiln planner's model reserves the earthenware kiln's slot K1 instead of the K2 slot the schedule offered for stoneware, and the reservation is refused."},
]


class OrderPlan(BaseModel):
    customer: str
    key: str
    quantity: int
    price_eur: float
    kiln_slot: str
    ready: str


@function_tool(failure_error_function=None)
def lookup_customer(name: str) -> dict:
    """The customer's account."""
    return {"customer": name, "account": CUSTOMERS[name]}


@function_tool(failure_error_function=None)
def price_ocarina(chambers: int, qty: int) -> dict:
    """Price of an ocarina order by number of chambers and quantity, in euros."""
    each = 42.0 + 22.5 * (chambers - 1)
    total = each * qty
    if "c" in ON:
        total = "EUR " + f"{total:.2f}".replace(".", ",")
    return {"each_eur": each, "total_eur": total}


@function_tool(failure_error_function=None)
def kiln_schedule(clay: str) -> dict:
    """Next firing slot for a clay body, with its cone and temperature in Celsius."""
    k = KILNS["earthenware" if "d" in ON else clay]
    temp = CONE_C[k["cone"]]
    if "b" in ON:
        temp = round(temp * 9 / 5 + 32)
    return {"slot": k["slot"], "cone": k["cone"], "temp": temp}


@function_tool(failure_error_function=None)
def reserve_kiln(slot: str, clay: str, temp: int, pieces: int) -> dict:
    """Reserve room in a kiln firing."""
    kiln = slot.split("-")[0]
    if temp > KILN_MAX_C[kiln]:
        raise ValueError(f"kiln {kiln} is rated to {KILN_MAX_C[kiln]} C, firing at {temp} refused")
    if clay == "stoneware" and kiln != "K2":
        raise ValueError(f"kiln {kiln} does not reach stoneware temperatures (cone 6); slot {slot} refused")
    return {"slot": slot, "pieces": pieces, "ready": "2027-01-" + str(int(slot[-2:]) + 4).zfill(2)}


@function_tool(failure_error_function=None)
def open_repair_ticket(customer: str, ticket: str) -> dict:
    """Open the bench ticket for a repair."""
    found = REPAIRS.get(ticket)
    if not found or found["customer"] != customer:
        raise LookupError(f"no repair ticket {ticket or '(none)'} on file for {customer}")
    return {"ticket": ticket, **found, "bench": "B-1"}


def _results(msgs):
    out = []
    for m in msgs:
        if m.get("role") == "tool":
            try:
                out.append(ast.literal_eval(m["content"]))
            except (ValueError, SyntaxError):
                out.append({"text": m["content"]})
    return out


def _order(msgs):
    text = next(m["content"] for m in msgs if m["role"] == "user")
    return next(i for i in INPUTS if i["text"] in text)


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    inp = _order(msgs)
    res = _results(msgs)
    if system.startswith("You are the order desk"):
        if not res:
            if inp["kind"] == "repair":
                return Reply(tool_calls=(tool_call("lookup_customer", {"name": inp["customer"]}),))
            return Reply(tool_calls=(tool_call("lookup_customer", {"name": inp["customer"]}),
                                     tool_call("price_ocarina", {"chambers": inp["chambers"], "qty": inp["qty"]})))
        target = "repair_desk" if inp["kind"] == "repair" else "kiln_planner"
        if "a" in ON:
            target = "repair_desk"
        return Reply(tool_calls=(tool_call(f"transfer_to_{target}", {}),))
    after = [r for r in res if isinstance(r, dict) and r.get("assistant") is None]
    if system.startswith("You are the repair desk"):
        if not any("bench" in r for r in after):
            return Reply(tool_calls=(tool_call("open_repair_ticket", {"customer": inp["customer"], "ticket": inp.get("ticket", "")}),))
        return f"Ticket {inp['ticket']} is on bench B-1."
    sched = next((r for r in after if "cone" in r), None)
    booked = next((r for r in after if "pieces" in r), None)
    if sched is None:
        return Reply(tool_calls=(tool_call("kiln_schedule", {"clay": inp["clay"]}),))
    if booked is None:
        slot = sched["slot"]
        if "e" in ON:
            slot = KILNS["earthenware"]["slot"]
        return Reply(tool_calls=(tool_call("reserve_kiln", {"slot": slot, "clay": inp["clay"], "temp": sched["temp"], "pieces": inp["qty"]}),))
    price = next(r for r in after if "total_eur" in r)["total_eur"]
    plan = {"customer": inp["customer"], "key": inp["key"], "quantity": inp["qty"], "price_eur": price, "kiln_slot": booked["slot"], "ready": booked["ready"]}
    return json.dumps(plan)


def _agents(model: str):
    kiln = Agent(name="kiln_planner", instructions="You are the kiln planner. Find a firing slot, reserve it, and answer with the order plan.",
                 model=model, tools=[kiln_schedule, reserve_kiln], output_type=OrderPlan)
    repair = Agent(name="repair_desk", instructions="You are the repair desk. Open the bench ticket for the repair.", model=model, tools=[open_repair_ticket])
    desk = Agent(name="order_desk", instructions="You are the order desk of an ocarina workshop. Look up the customer, price new orders, then hand off.",
                 model=model, tools=[lookup_customer, price_ocarina], handoffs=[kiln, repair])
    return desk


def record(inp: dict, path, ctx) -> None:
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=str(path), name=NAME, task=f"{inp['customer']}: {inp['text']}")])
    try:
        asyncio.run(_main(ctx.server.base_url, lambda: Runner.run(_agents("fake-model"), f"{inp['customer']}: {inp['text']}", run_config=RunConfig(workflow_name=NAME))))
    except Exception:
        pass
    finally:
        set_trace_processors([])


async def _main(base_url, start):
    client = AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    try:
        return await start()
    finally:
        await client.close()
