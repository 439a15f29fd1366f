"""Tinker's mending route: openai_agents route. A dispatcher agent looks up the village's
customers and open mending tickets (two tools in parallel), then hands the day off either to the
route planner (on-site mending: time slots and the solder kit in parallel, then the booking tool)
or to the workshop intake (carry the pieces back to the bench). Chat Completions against the
fake server; the tools raise, so Runner.run raises and the run fails."""
from __future__ import annotations

import ast
import asyncio
import json

from agents import Agent, ModelSettings, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "mending-route"
ROUTE = "openai_agents"
DOMAIN = "tinker's mending route"
SHAPE = "dispatcher agent (2 parallel tools) -> hand-off to route planner (2 parallel tools -> booking) or workshop intake (bench log); 15-19 steps"
SWITCHES = {"ledger_all_years": False, "heavy_to_bench": False, "slots_from_second": False,
            "queue_first_page": False, "kit_standard_tin": False}

CUSTOMERS = {
    "Lower Brede": [("Hollins", "2 Mill Lane"), ("Ashby", "The Forge Cottage"), ("Pell", "Church Row 5")],
    "Catsfield": [("Varley", "Elm Farm"), ("Goring", "3 Pound Lane")],
    "Ewhurst": [("Tull", "Old Rectory"), ("Marsh", "Mill House"), ("Dene", "4 Green"), ("Ockley", "Ridge Farm"), ("Bram", "Lodge")],
    "Peasmarsh": [("Carew", "Hop Barn")],
    "Udimore": [("Fagg", "Kiln Cottage"), ("Hoad", "West End")],
}
TICKETS = {
    "Lower Brede": [("M-101", "Hollins", "copper boiler", 22, "copper"), ("M-102", "Ashby", "pewter jug", 2, "pewter"),
                    ("M-103", "Pell", "tin bath", 18, "tin"), ("M-104", "Hollins", "brass kettle", 3, "brass")],
    "Catsfield": [("M-111", "Varley", "saucepan", 1, "tin"), ("M-112", "Goring", "colander", 1, "tin")],
    "Ewhurst": [("M-121", "Tull", "copper still", 30, "copper"), ("M-122", "Marsh", "milk churn", 16, "tin"),
                ("M-123", "Dene", "watering can", 2, "tin"), ("M-124", "Ockley", "brass fender", 12, "brass"),
                ("M-125", "Bram", "pewter tankard", 1, "pewter"), ("M-126", "Tull", "preserving pan", 6, "copper")],
    "Peasmarsh": [("M-131", "Carew", "hop kiln cowl", 40, "copper")],
    "Udimore": [("M-141", "Fagg", "lantern", 1, "tin"), ("M-142", "Hoad", "coal scuttle", 18, "brass")],
}
SOLDER = {"copper": "silver solder", "brass": "silver solder", "tin": "soft tin solder", "pewter": "low-melt pewter solder"}
CONTEXT_LIMIT_CHARS = 24000

INPUTS = [
    {"task": "mending day, Lower Brede, 9 Nov", "village": "Lower Brede", "date": "2026-11-09"},
    {"task": "mending day, Catsfield, 10 Nov", "village": "Catsfield", "date": "2026-11-10"},
    {"task": "mending day, Ewhurst, 11 Nov", "village": "Ewhurst", "date": "2026-11-11"},
    {"task": "mending day, Peasmarsh, 12 Nov", "village": "Peasmarsh", "date": "2026-11-12"},
    {"task": "mending day, Udimore, 13 Nov", "village": "Udimore", "date": "2026-11-13"},
]
CASES = [
    {"id": "zv21", "input": 0, "switch": "ledger_all_years", "kind": "context_pollution",
     "root": ("mend_queue", 1, "tool"), "failure": ("generation fake-model", 2),
     "description": "The mending queue returned the village's whole ledger, closed tickets of past years included, and the request that carried it was refused by the model API as too long."},
    {"id": "zv22", "input": 3, "switch": "heavy_to_bench", "kind": "wrong_routing",
     "root": ("generation fake-model", 2, "llm"), "failure": ("log_bench_jobs", 1),
     "description": "The dispatcher handed a 40 kg hop kiln cowl to the workshop intake instead of the route planner."},
    {"id": "zv23", "input": 2, "switch": "slots_from_second", "kind": "off_by_one",
     "root": ("day_slots", 1, "tool"), "failure": ("book_visits", 1),
     "description": "The slot tool started counting at the second slot of the day, so the fifth on-site visit was set to begin at 16:00 and overrun the 17:00 close."},
    {"id": "zv24", "input": 0, "switch": "queue_first_page", "kind": "truncated_result",
     "root": ("mend_queue", 1, "tool"), "failure": ("book_visits", 1),
     "description": "The mending queue returned only the first three tickets, so the booking left Hollins' brass kettle M-104 off the visit."},
    {"id": "zv25", "input": 4, "switch": "kit_standard_tin", "kind": "tool_ignores_argument",
     "root": ("pack_kit", 1, "tool"), "failure": ("book_visits", 1),
     "description": "The kit packer ignored the metals it was given and packed the standard tin solder kit, with no silver solder for Hoad's brass scuttle."},
]


@function_tool(failure_error_function=None)
def customer_lookup(village: str) -> list:
    """Customers of a village with their addresses."""
    return [{"customer": c, "address": a} for c, a in CUSTOMERS[village]]


@function_tool(failure_error_function=None)
def mend_queue(village: str) -> list:
    """Open mending tickets of a village."""
    rows = [{"ticket": t, "customer": c, "item": i, "kg": kg, "metal": m} for t, c, i, kg, m in TICKETS[village]]
    if SWITCHES["ledger_all_years"]:
        rows = rows + [{"ticket": f"M-{y}{n:03d}", "customer": CUSTOMERS[village][n % len(CUSTOMERS[village])][0],
                        "item": "kettle spout resoldered", "kg": 2, "metal": "tin", "closed": f"{y}-0{n % 9 + 1}-1{n % 9}"}
                       for y in range(2016, 2026) for n in range(30)]
    if SWITCHES["queue_first_page"]:
        rows = rows[:3]
    return rows


@function_tool(failure_error_function=None)
def day_slots(date: str, visits: int) -> list:
    """Start times of the on-site visits of a day, 90 minutes each from 08:30."""
    first = 1 if SWITCHES["slots_from_second"] else 0
    return [f"{(510 + 90 * i) // 60:02d}:{(510 + 90 * i) % 60:02d}" for i in range(first, first + visits)]


@function_tool(failure_error_function=None)
def pack_kit(metals: list[str]) -> list:
    """The solders to pack in the van for the metals of the day's pieces."""
    if SWITCHES["kit_standard_tin"]:
        metals = ["tin"]
    return sorted({SOLDER[m] for m in metals})


class Visit(BaseModel):
    customer: str
    slot: str
    tickets: list[str]


@function_tool(failure_error_function=None)
def book_visits(village: str, date: str, visits: list[Visit], kit: list[str]) -> dict:
    """Book the day's on-site visits: customer, slot and tickets each."""
    booked = {t for v in visits for t in v.tickets}
    for t, c, item, _kg, metal in TICKETS[village]:
        if t not in booked:
            raise ValueError(f"open ticket {t} ({c}, {item}) is not on any visit")
        if SOLDER[metal] not in kit:
            raise ValueError(f"{t} {item} needs {SOLDER[metal]}, the van kit has {kit}")
    for v in visits:
        h, m = (int(x) for x in v.slot.split(":"))
        end = h * 60 + m + 90
        if end > 17 * 60:
            raise ValueError(f"visit to {v.customer} at {v.slot} ends {end // 60}:{end % 60:02d}, after the 17:00 close")
    return {"booked": len(visits), "date": date}


@function_tool(failure_error_function=None)
def log_bench_jobs(village: str, tickets: list[str]) -> dict:
    """Log pieces carried back to the workshop bench."""
    for t, c, item, kg, _m in TICKETS[village]:
        if t in tickets and kg > 15:
            raise ValueError(f"{t} {item} ({kg} kg) is too heavy to carry to the bench")
    return {"logged": len(tickets)}


def _outputs(msgs):
    names = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
    out = {}
    for m in msgs:
        if m.get("role") == "tool" and m["tool_call_id"] in names:
            try:
                out[names[m["tool_call_id"]]] = ast.literal_eval(m["content"])
            except (ValueError, SyntaxError):
                out[names[m["tool_call_id"]]] = m["content"]
    return out


def policy(request):
    msgs = request.body["messages"]
    if sum(len(str(m.get("content") or "")) for m in msgs) > CONTEXT_LIMIT_CHARS:
        return Reply(status=400, error="This model's maximum context length was exceeded by the request's messages.")
    system = msgs[0]["content"]
    user = json.loads(next(m["content"] for m in msgs if m["role"] == "user"))
    got = _outputs(msgs)
    if system.startswith("You dispatch"):
        if "mend_queue" not in got:
            return Reply(tool_calls=(tool_call("customer_lookup", {"village": user["village"]}),
                                     tool_call("mend_queue", {"village": user["village"]})))
        heavy = any(r["kg"] > 15 for r in got["mend_queue"] if "closed" not in r)
        if SWITCHES["heavy_to_bench"]:
            heavy = False
        return Reply(tool_calls=(tool_call("transfer_to_route_planner" if heavy else "transfer_to_workshop_intake", {}),))
    queue = [r for r in got["mend_queue"] if "closed" not in r]
    if system.startswith("You log"):
        if "log_bench_jobs" not in got:
            return Reply(tool_calls=(tool_call("log_bench_jobs", {"village": user["village"], "tickets": [r["ticket"] for r in queue]}),))
        return f"{got['log_bench_jobs']['logged']} pieces logged for the bench."
    customers = []
    for r in queue:
        if r["customer"] not in customers:
            customers.append(r["customer"])
    if "day_slots" not in got:
        return Reply(tool_calls=(tool_call("day_slots", {"date": user["date"], "visits": len(customers)}),
                                 tool_call("pack_kit", {"metals": sorted({r["metal"] for r in queue})})))
    if "book_visits" not in got:
        visits = [{"customer": c, "slot": got["day_slots"][i], "tickets": [r["ticket"] for r in queue if r["customer"] == c]}
                  for i, c in enumerate(customers)]
        return Reply(tool_calls=(tool_call("book_visits", {"village": user["village"], "date": user["date"],
                                                           "visits": visits, "kit": got["pack_kit"]}),))
    return f"{got['book_visits']['booked']} visits booked for {user['date']}."


def _agents(model):
    planner = Agent(name="route_planner", model=model, tools=[day_slots, pack_kit, book_visits],
                    instructions="You plan the on-site mending visits: slots, the van kit, then book them.",
                    model_settings=ModelSettings(parallel_tool_calls=True))
    intake = Agent(name="workshop_intake", model=model, tools=[log_bench_jobs],
                   instructions="You log small pieces to be carried back to the workshop bench.")
    dispatcher = Agent(name="dispatcher", model=model, tools=[customer_lookup, mend_queue], handoffs=[planner, intake],
                       instructions="You dispatch the mending day: read the customers and open tickets, then hand off. Heavy pieces are mended on site.",
                       model_settings=ModelSettings(parallel_tool_calls=True))
    return dispatcher


def record(inp, path, server):
    async def go():
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client, use_for_tracing=False)
        try:
            await Runner.run(_agents("fake-model"), json.dumps({"village": inp["village"], "date": inp["date"]}),
                             run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()

    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["task"])])
    try:
        asyncio.run(go())
    finally:
        set_trace_processors([])
