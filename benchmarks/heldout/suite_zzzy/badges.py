"""Enameller's badge orders: OpenAI Agents SDK (Chat Completions), an order desk agent that writes a plan,
follows it, and calls two sub-agents as tools (artwork desk, kiln planner), each with its own tools."""
from __future__ import annotations

import ast
import asyncio
import json
import re

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client, set_tracing_disabled
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "enamel-badge-orders"
ROUTE = "openai_agents"
DOMAIN = "enameller's badge orders"
SHAPE = ("Agents SDK: order desk writes a plan, then calls tools and two sub-agents as tools (artwork desk: "
         "search + colour lookup; kiln planner: slots + booking), last tool submits the proof; 39 spans")
SWITCH = None

ORDERS = {
    "EB-501": {"club": "Hale Harriers", "qty": 120, "size_mm": 25, "colours": ["navy", "gold"], "deadline": "2026-12-18"},
    "EB-502": {"club": "Kestrel Rowing Club", "qty": 60, "size_mm": 30, "colours": ["green", "white", "red"], "deadline": "2026-12-16"},
    "EB-503": {"club": "Brindle Bowls", "qty": 200, "size_mm": 20, "colours": ["maroon"], "deadline": "2026-12-22"},
    "EB-504": {"club": "Oakham Choral Society", "qty": 45, "size_mm": 35, "colours": ["black", "silver", "blue"], "deadline": "2026-12-17"},
    "EB-505": {"club": "Tarn Fell Runners", "qty": 80, "size_mm": 25, "colours": ["orange", "black"], "deadline": "2026-12-19"},
}
ARTWORK = {
    "AW-1201": ("Hale Harriers Veterans", ["navy", "gold", "white"]),
    "AW-1202": ("Hale Harriers", ["navy", "gold"]),
    "AW-1310": ("Kestrel Rowing Club", ["green", "white", "red"]),
    "AW-1401": ("Brindle Bowls", ["maroon"]),
    "AW-1522": ("Oakham Choral Society", ["black", "silver", "blue"]),
    "AW-1610": ("Tarn Fell Runners", ["orange", "black"]),
}
ENAMEL = {"navy": "E-28 cobalt", "gold": "E-07 amber flux", "white": "E-01 opal", "green": "E-33 emerald",
          "red": "E-41 carmine", "maroon": "E-44 garnet", "black": "E-60 jet", "silver": "E-02 flux",
          "blue": "E-27 azure", "orange": "E-12 saffron"}
SLOTS = ["2026-12-15 AM", "2026-12-15 PM", "2026-12-16 AM", "2026-12-17 AM", "2026-12-18 PM"]
TAKEN_LAST_WEEK = ["2026-12-16 AM"]
KILN: dict = {}

INPUTS = [{"order_no": o, "message": f"New badge order {o} came in, please get it to proof."} for o in ORDERS]

CASES = [
    {"id": "zzzy-badges-1", "input": 0, "switch": "pick", "fault_kind": "subagent_wrong_entity",
     "root": ("generation fake-model", 4), "failure": ("submit_proof", 1),
     "description": "The artwork desk sub-agent takes the first search hit, Hale Harriers Veterans, instead of the club on the order."},
    {"id": "zzzy-badges-2", "input": 1, "switch": "slots", "fault_kind": "stale_data",
     "root": ("kiln_slots", 1), "failure": ("book_kiln", 1),
     "description": "The kiln slot list is served from last week's copy, which still shows the 16 December morning firing as free."},
    {"id": "zzzy-badges-3", "input": 2, "switch": "price", "fault_kind": "hallucinated_value",
     "root": ("generation fake-model", 11), "failure": ("submit_proof", 1),
     "description": "The order desk model submits a unit price of its own instead of the one the price run gave."},
    {"id": "zzzy-badges-4", "input": 3, "switch": "archive", "fault_kind": "context_pollution",
     "root": ("enamel_colours", 1), "failure": ("generation fake-model", 5),
     "description": "The colour lookup pastes the whole firing archive of the artwork into its answer and the next model request is refused as too long."},
    {"id": "zzzy-badges-5", "input": 4, "switch": "plan", "fault_kind": "plan_error",
     "root": ("generation fake-model", 1), "failure": ("submit_proof", 1),
     "description": "The order desk model's plan leaves out the artwork desk, so the proof is submitted with no approved artwork."},
]


@function_tool
def get_order(order_no: str) -> dict:
    """The badge order as the customer placed it."""
    return dict(ORDERS[order_no], order_no=order_no)


@function_tool
def find_artwork(club: str) -> dict:
    """Search the artwork archive by club name."""
    hits = [{"artwork_id": k, "club": v[0]} for k, v in ARTWORK.items() if club.split()[0] in v[0]]
    return {"hits": hits}


@function_tool
def enamel_colours(artwork_id: str) -> dict:
    """Enamel codes for the colours of an artwork."""
    club, colours = ARTWORK[artwork_id]
    out = {"artwork_id": artwork_id, "enamels": {c: ENAMEL[c] for c in colours}}
    if SWITCH == "archive":
        out["firings"] = [{"date": f"20{10 + i // 12}-{i % 12 + 1:02d}-14", "kiln": "K2", "temp_c": 780 + i % 7,
                           "pieces": 40 + i, "notes": "even flow, counter-enamel on reverse, no pinholes"} for i in range(160)]
    return out


@function_tool
def price_run(qty: int, size_mm: int, enamel_count: int) -> dict:
    """Unit price for a badge run."""
    unit = round(0.9 + size_mm * 0.045 + enamel_count * 0.35 + (1.2 if qty < 100 else 0.4), 2)
    return {"unit_gbp": unit, "qty": qty}


@function_tool
def kiln_slots(before: str) -> dict:
    """Free kiln slots before a date."""
    taken = TAKEN_LAST_WEEK if SWITCH != "slots" else []
    return {"free": [s for s in SLOTS if s[:10] <= before and s not in taken and s not in KILN]}


def _book(slot: str, pieces: int) -> dict:
    if slot in TAKEN_LAST_WEEK or slot in KILN:
        raise RuntimeError(f"kiln K2 slot {slot} is already booked")
    KILN[slot] = pieces
    return {"slot": slot, "pieces": pieces}


book_kiln = function_tool(_book, name_override="book_kiln", description_override="Book a kiln slot.",
                          failure_error_function=None)


def _submit(order_no: str, artwork_id: str, enamels: list[str], unit_gbp: float, slot: str) -> dict:
    o = ORDERS[order_no]
    if not artwork_id:
        raise ValueError(f"{order_no}: no approved artwork on the proof")
    club, colours = ARTWORK[artwork_id]
    if club != o["club"]:
        raise ValueError(f"{order_no}: artwork {artwork_id} is for {club}, the order is for {o['club']}")
    if len(enamels) != len(o["colours"]):
        raise ValueError(f"{order_no}: {len(enamels)} enamels on the proof for {len(o['colours'])} colours")
    expect = round(0.9 + o["size_mm"] * 0.045 + len(o["colours"]) * 0.35 + (1.2 if o["qty"] < 100 else 0.4), 2)
    if abs(unit_gbp - expect) > 0.005:
        raise ValueError(f"{order_no}: unit price {unit_gbp} GBP on the proof, price list gives {expect} GBP")
    return {"order_no": order_no, "proof": "sent"}


submit_proof = function_tool(_submit, name_override="submit_proof", description_override="Send the proof to the customer.",
                             failure_error_function=None)


def _lit(text):
    try:
        return ast.literal_eval(text)
    except Exception:
        try:
            return json.loads(text)
        except Exception:
            return text


def _results(msgs):
    names, out = {}, {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            out[names.get(m["tool_call_id"])] = _lit(m["content"])
    return out


def policy(request):
    msgs = request.body["messages"]
    if len(json.dumps(msgs)) > 12000:
        return Reply(status=400, error="This model's maximum context length is 4096 tokens; the messages exceed it.")
    system = msgs[0]["content"]
    user = next(m["content"] for m in msgs if m["role"] == "user")
    got = _results(msgs)
    if system.startswith("Artwork desk"):
        club = re.search(r"club '([^']+)'", user).group(1)
        if "find_artwork" not in got:
            return Reply(tool_calls=(tool_call("find_artwork", {"club": club}),))
        hits = got["find_artwork"]["hits"]
        if "enamel_colours" not in got:
            pick = hits[0] if SWITCH == "pick" else next(h for h in hits if h["club"] == club)
            return Reply(tool_calls=(tool_call("enamel_colours", {"artwork_id": pick["artwork_id"]}),))
        e = got["enamel_colours"]
        return json.dumps({"artwork_id": e["artwork_id"], "enamels": list(e["enamels"].values())})
    if system.startswith("Kiln planner"):
        pieces = int(re.search(r"(\d+) pieces", user).group(1))
        before = re.search(r"before (\S+)", user).group(1)
        if "kiln_slots" not in got:
            return Reply(tool_calls=(tool_call("kiln_slots", {"before": before}),))
        if "book_kiln" not in got:
            return Reply(tool_calls=(tool_call("book_kiln", {"slot": got["kiln_slots"]["free"][-1], "pieces": pieces}),))
        return json.dumps(got["book_kiln"])
    # order desk
    order_no = re.search(r"EB-\d+", user).group(0)
    if "get_order" not in got:
        plan = ["get_order", "artwork_desk", "price_run", "kiln_planner", "submit_proof"]
        if SWITCH == "plan":
            plan.remove("artwork_desk")
        return Reply(text="Plan: " + " -> ".join(plan), tool_calls=(tool_call("get_order", {"order_no": order_no}),))
    plan_text = next(m["content"] for m in msgs if m["role"] == "assistant" and (m.get("content") or "").startswith("Plan: "))
    plan = plan_text[len("Plan: "):].split(" -> ")
    o = got["get_order"]
    art = _lit(got["artwork_desk"]) if "artwork_desk" in got else {"artwork_id": "", "enamels": []}
    for item in plan:
        if item in got:
            continue
        if item == "artwork_desk":
            return Reply(tool_calls=(tool_call("artwork_desk", {"input": f"Find the artwork for club '{o['club']}' in colours {', '.join(o['colours'])}."}),))
        if item == "price_run":
            return Reply(tool_calls=(tool_call("price_run", {"qty": o["qty"], "size_mm": o["size_mm"], "enamel_count": len(o["colours"])}),))
        if item == "kiln_planner":
            spare = o["qty"] + o["qty"] // 10
            return Reply(tool_calls=(tool_call("kiln_planner", {"input": f"Book a firing of {spare} pieces before {o['deadline']}."}),))
        if item == "submit_proof":
            unit = got["price_run"]["unit_gbp"]
            if SWITCH == "price":
                unit = 2.85
            slot = _lit(got["kiln_planner"])["slot"]
            return Reply(tool_calls=(tool_call("submit_proof", {"order_no": order_no, "artwork_id": art["artwork_id"],
                                                                "enamels": art["enamels"], "unit_gbp": unit, "slot": slot}),))
    return f"Proof for {order_no} sent."


async def _run(agent, inp, server):
    client = AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    try:
        return await Runner.run(agent, inp["message"], run_config=RunConfig(workflow_name=NAME), max_turns=20)
    finally:
        await client.close()


def run_one(inp, server, path):
    set_tracing_disabled(False)
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, task=f"badge order {inp['order_no']}")])
    artwork = Agent(name="artwork_desk", model=server.model, tools=[find_artwork, enamel_colours],
                    instructions="Artwork desk: find the club's artwork and its enamel codes; answer JSON.")
    kiln = Agent(name="kiln_planner", model=server.model, tools=[kiln_slots, book_kiln],
                 instructions="Kiln planner: find a free slot before the deadline and book it; answer JSON.")
    desk = Agent(name="order_desk", model=server.model,
                 instructions="Order desk for enamel badges: write a plan, then follow it to a proof.",
                 tools=[get_order,
                        artwork.as_tool("artwork_desk", "Ask the artwork desk for the artwork and enamels.",
                                        failure_error_function=None),
                        price_run,
                        kiln.as_tool("kiln_planner", "Ask the kiln planner to book a firing.",
                                     failure_error_function=None),
                        submit_proof])
    try:
        asyncio.run(_run(desk, inp, server))
    finally:
        set_trace_processors([])
        KILN.clear()
