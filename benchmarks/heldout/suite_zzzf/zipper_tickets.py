"""Zipper repair kiosk: a triage agent reads the item on a ticket and hands off to a jacket, bag or luggage
specialist; the specialist measures the chain and reads the repair history in parallel, asks a parts-clerk
agent (run as a tool) for a slider, quotes and opens the bench ticket.

Route: the real OpenAI Agents SDK (Chat Completions against the fake server), recorded with TrajdebugProcessor.
"""

from __future__ import annotations

import ast
import asyncio
import datetime as dt
import json
import re

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

import suite_common as sc

RUN_NAME = "zipper-kiosk-tickets"
ROUTE = "openai_agents"
DOMAIN = "zipper repair kiosk's tickets"
SHAPE = "Agents SDK: triage agent (item lookup) -> hand-off to one of three specialists -> parallel chain measurement + repair history -> parts-clerk agent as a tool (spec + slider search) -> quote tool -> ticket tool that raises (32-34 steps)"
ACTIVE = None

TODAY = dt.date(2026, 12, 6)
INPUTS = [
    {"ticket": "ZK-501", "text": "Ticket ZK-501: item IT-501, the zip on my winter coat has split at the bottom."},
    {"ticket": "ZK-502", "text": "Ticket ZK-502: item IT-502, tote bag zip slider is loose."},
    {"ticket": "ZK-503", "text": "Ticket ZK-503: item IT-503, suitcase zip will not close past the corner."},
    {"ticket": "ZK-504", "text": "Ticket ZK-504: item IT-504, leather jacket zip comes apart when I pull it up."},
    {"ticket": "ZK-505", "text": "Ticket ZK-505: item IT-505, backpack main zip keeps opening behind the slider."},
]
ITEMS = {
    "IT-501": {"item": "winter coat", "zip_type": "separating", "gauge": 5, "material": "nylon coil"},
    "IT-502": {"item": "tote bag", "zip_type": "closed-end", "gauge": 3, "material": "nylon coil"},
    "IT-503": {"item": "suitcase", "zip_type": "closed-end", "gauge": 10, "material": "molded plastic"},
    "IT-504": {"item": "leather jacket", "zip_type": "separating", "gauge": 8, "material": "metal"},
    "IT-505": {"item": "backpack", "zip_type": "closed-end", "gauge": 5, "material": "nylon coil"},
}
HISTORY = {
    "IT-501": [{"date": "2025-01-10", "work": "pull tab replaced"}],
    "IT-502": [],
    "IT-503": [{"date": "2024-06-02", "work": "corner stitching"}, {"date": "2025-08-19", "work": "wheel housing"}],
    "IT-504": [{"date": "2025-03-03", "work": "slider cleaned"}],
    "IT-505": [{"date": "2024-11-20", "work": "tape resewn"}, {"date": "2025-05-14", "work": "pull tab replaced"},
               {"date": "2026-10-28", "work": "slider replaced"}],
}
SLIDERS = [
    {"sku": "SL-5NC-AUTO", "gauge": 5, "material": "nylon coil", "fits": ["separating", "closed-end"]},
    {"sku": "SL-3NC", "gauge": 3, "material": "nylon coil", "fits": ["closed-end"]},
    {"sku": "SL-10MP-LUG", "gauge": 10, "material": "molded plastic", "fits": ["closed-end"]},
    {"sku": "SL-5MP", "gauge": 5, "material": "molded plastic", "fits": ["closed-end", "separating"]},
    {"sku": "SL-8MT", "gauge": 8, "material": "metal", "fits": ["separating", "closed-end"]},
]
REPAIRS = {"separating": ("box-and-pin with slider", 35), "closed-end": ("slider swap", 15)}
WARRANTY_DAYS = 90

CASES = [
    {"id": "zzzf_zipper_01", "input": 3, "switch": "route_by_item", "fault_kind": "wrong_routing",
     "root": ("generation fake-model", 2), "failure": "open_ticket",
     "description": "The triage model hands a separating leather-jacket zip to the bag specialist, who quotes a slider swap that cannot mend a separating zip."},
    {"id": "zzzf_zipper_02", "input": 0, "switch": "clerk_next_item", "fault_kind": "subagent_wrong_entity",
     "root": ("generation fake-model", 5), "failure": "open_ticket",
     "description": "The parts-clerk sub-agent reads the spec of item IT-502 instead of IT-501, and the coat's ticket is opened for the tote bag's closed-end zip."},
    {"id": "zzzf_zipper_03", "input": 4, "switch": "history_page", "fault_kind": "truncated_result",
     "root": ("repair_history", 1), "failure": "open_ticket",
     "description": "The repair history returns only its first two entries, so the specialist never sees the slider replaced in October and charges for work still under the kiosk's warranty."},
    {"id": "zzzf_zipper_04", "input": 1, "switch": "sku_made_up", "fault_kind": "hallucinated_value",
     "root": ("generation fake-model", 8), "failure": "open_ticket",
     "description": "The bag specialist model quotes a slider code of its own, SL-3NC-PRO, that the parts clerk never offered and the kiosk does not stock."},
    {"id": "zzzf_zipper_05", "input": 2, "switch": "calliper_quiet", "fault_kind": "swallowed_error",
     "root": ("measure_chain", 1), "failure": "open_ticket",
     "description": "The chain measurement hides a calliper read error and answers the default gauge 5, so the suitcase's 10-gauge chain gets a 5-gauge slider."},
]


def _results(request):
    out = {}
    for name, content in sc.tool_results(request):
        try:
            out[name] = ast.literal_eval(content)
        except (ValueError, SyntaxError):
            try:
                out[name] = json.loads(content)
            except ValueError:
                out[name] = content
    return out


def policy(request):
    system = sc.system_of(request)
    res = _results(request)
    if system.startswith("You are the parts clerk"):
        item_id = re.search(r"IT-\d+", sc.last_user(request)).group(0)
        if "item_spec" not in res:
            if ACTIVE == "clerk_next_item":
                item_id = f"IT-{int(item_id[3:]) + 1}"
            return Reply(tool_calls=(tool_call("item_spec", {"item_id": item_id}),))
        spec = res["item_spec"]
        if "search_sliders" not in res:
            measured = re.search(r"chain gauge (\d+)", sc.last_user(request))
            gauge = int(measured.group(1)) if measured else spec["gauge"]
            return Reply(tool_calls=(tool_call("search_sliders", {"gauge": gauge, "material": spec["material"], "zip_type": spec["zip_type"]}),))
        hits = res["search_sliders"]
        return json.dumps({"item_id": spec["item_id"], "slider": hits[0]["sku"] if hits else None})
    first_user = next(m["content"] for m in request.body["messages"] if m["role"] == "user")
    ticket = re.search(r"ZK-\d+", first_user).group(0)
    item_id = re.search(r"IT-\d+", first_user).group(0)
    if system.startswith("You are the kiosk triage"):
        if "lookup_item" not in res:
            return Reply(tool_calls=(tool_call("lookup_item", {"item_id": item_id}),))
        it = res["lookup_item"]
        if ACTIVE == "route_by_item":
            target = "bag_specialist"
        elif it["zip_type"] == "separating":
            target = "jacket_specialist"
        elif it["gauge"] >= 10:
            target = "luggage_specialist"
        else:
            target = "bag_specialist"
        return Reply(tool_calls=(tool_call(f"transfer_to_{target}", {}),))
    if "specialist" in system:
        zip_type = "separating" if "separating" in system else "closed-end"
        if "measure_chain" not in res:
            return Reply(tool_calls=(tool_call("measure_chain", {"item_id": item_id}), tool_call("repair_history", {"item_id": item_id})))
        if "parts_clerk" not in res:
            return Reply(tool_calls=(tool_call("parts_clerk", {"input": f"Slider for item {item_id}, chain gauge {res['measure_chain']['gauge']}"}),))
        if "quote_repair" not in res:
            hist = res["repair_history"]["entries"]
            recent = [h for h in hist if h["work"] == "slider replaced" and (TODAY - dt.date.fromisoformat(h["date"])).days <= WARRANTY_DAYS]
            repair, minutes = REPAIRS[zip_type]
            slider = "SL-3NC-PRO" if ACTIVE == "sku_made_up" else res["parts_clerk"]["slider"]
            return Reply(tool_calls=(tool_call("quote_repair", {"item_id": res["parts_clerk"]["item_id"], "repair": repair, "slider_sku": slider,
                                                                "minutes": minutes, "warranty": bool(recent)}),))
        if "open_ticket" not in res:
            q = res["quote_repair"]
            return Reply(tool_calls=(tool_call("open_ticket", {"ticket": ticket, "item_id": q["item_id"], "repair": q["repair"],
                                                               "slider_sku": q["slider_sku"], "price_eur": q["price_eur"]}),))
        t = res["open_ticket"]
        return f"Ticket {ticket} is on bench {t['bench']}; ready {t['ready']}."
    return "Sorry."


@function_tool
def lookup_item(item_id: str) -> dict:
    """The item recorded on a ticket: what it is and its zip."""
    it = ITEMS[item_id]
    return {"item_id": item_id, "item": it["item"], "zip_type": it["zip_type"], "gauge": it["gauge"]}


@function_tool
def measure_chain(item_id: str) -> dict:
    """Read the chain gauge with the digital calliper."""
    if ACTIVE == "calliper_quiet":
        try:
            raise OSError("calliper returned no reading")
        except OSError:
            return {"item_id": item_id, "gauge": 5}
    return {"item_id": item_id, "gauge": ITEMS[item_id]["gauge"]}


@function_tool
def repair_history(item_id: str) -> dict:
    """Earlier work on the item, oldest first."""
    entries = HISTORY[item_id]
    return {"item_id": item_id, "entries": entries[:2] if ACTIVE == "history_page" else list(entries)}


@function_tool
def item_spec(item_id: str) -> dict:
    """The item's zip specification from the intake card."""
    it = ITEMS[item_id]
    return {"item_id": item_id, "zip_type": it["zip_type"], "gauge": it["gauge"], "material": it["material"]}


@function_tool
def search_sliders(gauge: int, material: str, zip_type: str) -> list:
    """Sliders in stock that fit a chain."""
    return [dict(s) for s in SLIDERS if s["gauge"] == gauge and s["material"] == material and zip_type in s["fits"]]


@function_tool
def quote_repair(item_id: str, repair: str, slider_sku: str, minutes: int, warranty: bool) -> dict:
    """Price a repair: bench minutes at 0.9 EUR plus the slider, nothing under warranty."""
    price = 0.0 if warranty else round(minutes * 0.9 + 6.5, 2)
    return {"item_id": item_id, "repair": repair, "slider_sku": slider_sku, "price_eur": price}


@function_tool(failure_error_function=None)
def open_ticket(ticket: str, item_id: str, repair: str, slider_sku: str, price_eur: float) -> dict:
    """Open the bench ticket for a quoted repair."""
    it = ITEMS[item_id]
    if repair != REPAIRS[it["zip_type"]][0]:
        raise ValueError(f"{ticket}: a {repair} does not mend the {it['zip_type']} zip of the {it['item']}")
    stock = {s["sku"]: s for s in SLIDERS}
    if slider_sku not in stock:
        raise ValueError(f"{ticket}: slider {slider_sku} is not a stock item")
    s = stock[slider_sku]
    if s["gauge"] != it["gauge"] or s["material"] != it["material"]:
        raise ValueError(f"{ticket}: slider {slider_sku} ({s['gauge']} {s['material']}) does not fit the {it['gauge']} {it['material']} chain of {item_id}")
    recent = [h for h in HISTORY[item_id] if h["work"] == "slider replaced" and (TODAY - dt.date.fromisoformat(h["date"])).days <= WARRANTY_DAYS]
    if recent and price_eur > 0:
        raise ValueError(f"{ticket}: slider replaced on {recent[-1]['date']} is under the {WARRANTY_DAYS}-day warranty; quoted {price_eur:.2f} EUR")
    return {"ticket": ticket, "bench": 2 if it["gauge"] >= 8 else 1, "ready": (TODAY + dt.timedelta(days=2)).isoformat()}


def record(inp: dict, path: str) -> None:
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=RUN_NAME, task=f"ticket {inp['ticket']}")])
    clerk = Agent(name="parts_clerk", model=sc.model(), tools=[item_spec, search_sliders],
                  instructions="You are the parts clerk. Read the item's spec and find a slider in stock; answer JSON.")
    clerk_tool = clerk.as_tool(tool_name="parts_clerk", tool_description="Ask the parts clerk for a slider for an item.")
    common = [measure_chain, repair_history, clerk_tool, quote_repair, open_ticket]
    jacket = Agent(name="jacket_specialist", model=sc.model(), tools=common,
                   instructions="You are the jacket specialist for separating zips. Measure, check history, get a slider, quote, open the ticket.")
    bag = Agent(name="bag_specialist", model=sc.model(), tools=common,
                instructions="You are the bag specialist for closed-end zips. Measure, check history, get a slider, quote, open the ticket.")
    luggage = Agent(name="luggage_specialist", model=sc.model(), tools=common,
                    instructions="You are the luggage specialist for heavy closed-end zips. Measure, check history, get a slider, quote, open the ticket.")
    triage = Agent(name="kiosk_triage", model=sc.model(), tools=[lookup_item], handoffs=[jacket, bag, luggage],
                   instructions="You are the kiosk triage desk. Look up the item and hand the ticket to the right specialist.")

    async def go():
        client = AsyncOpenAI(base_url=sc.base_url(), api_key="not-needed", max_retries=0)
        set_default_openai_client(client)
        try:
            await Runner.run(triage, inp["text"], run_config=RunConfig(workflow_name=RUN_NAME))
        finally:
            await client.close()

    try:
        asyncio.run(go())
    finally:
        set_trace_processors([])
