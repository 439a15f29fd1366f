"""Snow-globe factory order desk (openai_agents route): triage hands off to a desk that calls tools, some in parallel."""
import ast
import asyncio
import json
import math

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "snowglobe-orders"
SHORT = "globe"
ROUTE = "openai_agents"
DOMAIN = "snow-globe factory orders"
SHAPE = "Agents SDK: triage agent -> hand-off -> production desk: order lookup, parallel stock checks, scheduling, carton count, freight booking (or the wholesale desk)"
ACTIVE = None

ORDERS = {
    "SG-4471": {"customer": "Bergdorf Gifts", "ship_by": "2027-01-10", "total_qty": 300,
                "lines": [{"sku": "ALPINE-VILLAGE", "qty": 180, "glitter": "gold"}, {"sku": "REINDEER-RUN", "qty": 120, "glitter": "silver"}]},
    "SG-4472": {"customer": "Kyoto Lantern Shop", "ship_by": "2027-02-01", "total_qty": 350,
                "lines": [{"sku": "PAGODA-SNOW", "qty": 100, "glitter": "white"}, {"sku": "KOI-POND", "qty": 100, "glitter": "gold"},
                          {"sku": "CRANE-FLIGHT", "qty": 90, "glitter": "silver"}, {"sku": "LANTERN-WALK", "qty": 60, "glitter": "red"}]},
    "SG-4473": {"customer": "Harbour Museum Store", "ship_by": "2027-01-25", "total_qty": 200,
                "lines": [{"sku": "LIGHTHOUSE", "qty": 200, "glitter": "blue"}]},
    "SG-4474": {"customer": "Polar Express Toys", "ship_by": "2027-03-05", "total_qty": 310,
                "lines": [{"sku": "NORTH-POLE", "qty": 150, "glitter": "white"}, {"sku": "TRAIN-DEPOT", "qty": 160, "glitter": "gold"}]},
    "SG-4475": {"customer": "Vienna Christmas Market", "ship_by": "2027-11-20", "total_qty": 264,
                "lines": [{"sku": "STEPHANSDOM", "qty": 144, "glitter": "gold"}, {"sku": "RIESENRAD", "qty": 96, "glitter": "silver"},
                          {"sku": "SACHER-CAFE", "qty": 24, "glitter": "gold"}]},
}
GLITTER_LIVE = {"gold": 420, "silver": 260, "white": 300, "blue": 250, "red": 80}
GLITTER_SNAPSHOT = {"gold": 520, "silver": 260, "white": 300, "blue": 250, "red": 80}
DOMES_LIVE = {"ALPINE-VILLAGE": 200, "REINDEER-RUN": 150, "PAGODA-SNOW": 120, "KOI-POND": 110, "CRANE-FLIGHT": 95,
              "LANTERN-WALK": 70, "LIGHTHOUSE": 210, "NORTH-POLE": 160, "TRAIN-DEPOT": 70, "STEPHANSDOM": 150,
              "RIESENRAD": 100, "SACHER-CAFE": 30}
DOMES_SNAPSHOT = dict(DOMES_LIVE, **{"TRAIN-DEPOT": 190})

INPUTS = [
    {"order_id": "SG-4471", "text": "Please confirm production of order SG-4471 for Bergdorf Gifts, shipping by 2027-01-10."},
    {"order_id": "SG-4472", "text": "Kyoto Lantern Shop asks us to make order SG-4472 in time for 2027-02-01."},
    {"order_id": "SG-4473", "text": "Schedule the custom lighthouse globes, order SG-4473, for the Harbour Museum Store."},
    {"order_id": "SG-4474", "text": "Polar Express Toys wants order SG-4474 produced and shipped by 2027-03-05."},
    {"order_id": "SG-4475", "text": "Book production and freight for order SG-4475 (Vienna Christmas Market)."},
]

CASES = [
    {"input": 0, "switch": "stock_args", "kind": "wrong_tool_args", "root": ("generation fake-model", 5),
     "failure": ("book_freight", 1),
     "description": "The production desk model asks for the cartons of the Alpine Village line's 180 globes instead of the order's 300."},
    {"input": 1, "switch": "first_page", "kind": "truncated_result", "root": ("lookup_order", 1),
     "failure": ("schedule_production", 1),
     "description": "The order lookup returns only the first page of SG-4472, two of its four lines."},
    {"input": 2, "switch": "wholesale_route", "kind": "wrong_routing", "root": ("generation fake-model", 1),
     "failure": ("reserve_pallets", 1),
     "description": "The triage model hands the custom lighthouse order to the wholesale desk."},
    {"input": 3, "switch": "snapshot_stock", "kind": "stale_data", "root": ("check_dome_stock", 2),
     "failure": ("schedule_production", 1),
     "description": "The dome stock check for TRAIN-DEPOT answers from last week's count of 190 instead of the 70 on the shelf."},
    {"input": 4, "switch": "whole_cartons", "kind": "off_by_one", "root": ("cartons_needed", 1),
     "failure": ("book_freight", 1),
     "description": "The carton count for 264 globes at 24 per carton comes out one short."},
]


@function_tool(failure_error_function=None)
def lookup_order(order_id: str) -> dict:
    """Order header and lines."""
    o = ORDERS[order_id]
    lines = o["lines"][:2] if ACTIVE == "first_page" else o["lines"]
    return {"order_id": order_id, "customer": o["customer"], "ship_by": o["ship_by"], "lines": lines}


@function_tool(failure_error_function=None)
def check_dome_stock(sku: str) -> dict:
    """Glass domes and bases on the shelf for one design."""
    table = DOMES_SNAPSHOT if ACTIVE == "snapshot_stock" and sku == "TRAIN-DEPOT" else DOMES_LIVE
    return {"sku": sku, "domes": table[sku]}


@function_tool(failure_error_function=None)
def check_glitter(colour: str) -> dict:
    """Grams-equivalent glitter doses on the shelf, by colour (one dose per globe)."""
    return {"colour": colour, "doses": GLITTER_LIVE[colour]}


@function_tool(failure_error_function=None)
def schedule_production(order_id: str, lines_json: str) -> dict:
    """Put the order's lines on the filling line; the planner checks the warehouse itself."""
    lines = json.loads(lines_json)
    o = ORDERS[order_id]
    if sum(l["qty"] for l in lines) != o["total_qty"]:
        raise ValueError(f"{order_id}: scheduled lines add up to {sum(l['qty'] for l in lines)} globes, the order is for {o['total_qty']}")
    need = {}
    for l in lines:
        if DOMES_LIVE[l["sku"]] < l["qty"]:
            raise ValueError(f"{order_id}: {l['sku']} needs {l['qty']} domes, the shelf holds {DOMES_LIVE[l['sku']]}")
        need[l["glitter"]] = need.get(l["glitter"], 0) + l["qty"]
    for colour, n in need.items():
        if GLITTER_LIVE[colour] < n:
            raise ValueError(f"{order_id}: {colour} glitter for {n} globes, {GLITTER_LIVE[colour]} doses on the shelf")
    return {"order_id": order_id, "slot": "filling line 2, week " + o["ship_by"][5:7], "globes": o["total_qty"]}


@function_tool(failure_error_function=None)
def cartons_needed(globes: int) -> dict:
    """Cartons of 24 globes for a shipment."""
    n = (globes - 1) // 24 if ACTIVE == "whole_cartons" else (globes + 23) // 24
    return {"globes": globes, "cartons": n}


@function_tool(failure_error_function=None)
def book_freight(order_id: str, cartons: int) -> dict:
    """Book the carrier for the order's cartons."""
    globes = ORDERS[order_id]["total_qty"]
    if cartons * 24 < globes:
        raise ValueError(f"{order_id}: manifest of {cartons} cartons holds {cartons * 24} globes, the order ships {globes}")
    return {"order_id": order_id, "carrier": "Alpen Cargo", "cartons": cartons}


@function_tool(failure_error_function=None)
def reserve_pallets(order_id: str) -> dict:
    """Reserve catalogue globes from wholesale pallets."""
    if order_id in ("SG-4473",):
        raise LookupError(f"{order_id} carries custom artwork; wholesale pallets hold catalogue designs only")
    return {"order_id": order_id, "pallets": 2}


def _calls(messages):
    names, outs = {}, {}
    for m in messages:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                names[c["id"]] = (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        if m.get("role") == "tool":
            outs[m["tool_call_id"]] = m["content"]
    done = {}
    for cid, (n, a) in names.items():
        if cid in outs:
            try:
                done.setdefault(n, []).append(ast.literal_eval(outs[cid]))
            except Exception:
                done.setdefault(n, []).append(outs[cid])
    return done


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
    user = next(m["content"] for m in msgs if m["role"] == "user")
    order_id = next(w.strip(",.") for w in user.split() if w.startswith("SG-"))
    done = _calls(msgs)
    if system.startswith("You triage"):
        if ACTIVE == "wholesale_route":
            return Reply(tool_calls=(tool_call("transfer_to_wholesale_desk", {}),))
        return Reply(tool_calls=(tool_call("transfer_to_production_desk", {}),))
    if system.startswith("You run wholesale"):
        if "reserve_pallets" not in done:
            return Reply(tool_calls=(tool_call("reserve_pallets", {"order_id": order_id}),))
        return "Pallets reserved."
    if "lookup_order" not in done:
        return Reply(tool_calls=(tool_call("lookup_order", {"order_id": order_id}),))
    order = done["lookup_order"][0]
    if "check_dome_stock" not in done:
        calls = [tool_call("check_dome_stock", {"sku": l["sku"]}) for l in order["lines"]]
        colours = []
        for l in order["lines"]:
            c = l["glitter"]
            if c not in colours:
                colours.append(c)
        calls += [tool_call("check_glitter", {"colour": c}) for c in colours]
        return Reply(tool_calls=tuple(calls))
    if "schedule_production" not in done:
        domes = {d["sku"]: d["domes"] for d in done["check_dome_stock"]}
        glitter = {g["colour"]: g["doses"] for g in done["check_glitter"]}
        need = {}
        for l in order["lines"]:
            c = l["glitter"]
            need[c] = need.get(c, 0) + l["qty"]
        short = [l["sku"] for l in order["lines"] if domes[l["sku"]] < l["qty"]] + [c for c, n in need.items() if glitter.get(c, 0) < n]
        if short:
            return f"Order {order_id} cannot be made: short of {', '.join(short)}."
        return Reply(tool_calls=(tool_call("schedule_production", {"order_id": order_id, "lines_json": json.dumps(order["lines"])}),))
    if "cartons_needed" not in done:
        globes = order["lines"][0]["qty"] if ACTIVE == "stock_args" else done["schedule_production"][0]["globes"]
        return Reply(tool_calls=(tool_call("cartons_needed", {"globes": globes}),))
    if "book_freight" not in done:
        return Reply(tool_calls=(tool_call("book_freight", {"order_id": order_id, "cartons": done["cartons_needed"][0]["cartons"]}),))
    f = done["book_freight"][0]
    return f"Order {order_id} is scheduled ({done['schedule_production'][0]['slot']}) and ships in {f['cartons']} cartons with {f['carrier']}."


def record(inp, ctx, path):
    client = AsyncOpenAI(base_url=ctx.server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    set_default_openai_api("chat_completions")
    model = "fake-model"
    production = Agent(name="production_desk", instructions="You schedule custom production. Check stock before scheduling.",
                       model=model, tools=[lookup_order, check_dome_stock, check_glitter, schedule_production, cartons_needed, book_freight])
    wholesale = Agent(name="wholesale_desk", instructions="You run wholesale pallet reservations.", model=model, tools=[reserve_pallets])
    triage = Agent(name="order_triage", instructions="You triage snow-globe orders to the right desk.", model=model,
                   handoffs=[production, wholesale])
    proc = TrajdebugProcessor(path=path, name=NAME, task=inp["text"])
    set_trace_processors([proc])
    try:
        asyncio.run(_go(triage, inp["text"], client))
    except Exception:
        pass
    finally:
        set_trace_processors([])


async def _go(agent, text, client):
    try:
        await Runner.run(agent, text, run_config=RunConfig(workflow_name=NAME))
    finally:
        await client.close()
