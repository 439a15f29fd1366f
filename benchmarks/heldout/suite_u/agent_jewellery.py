"""Jewellery repair desk (route: openai_agents): the front desk reads the repair ticket and hands off to
the bench planner, which plans the job, retrieves the workshop guide, prices the metal, estimates
materials, has the stones checked by a specialist sub-agent (as a tool), quotes, orders metal and books
the bench."""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import FakeModelServer, Reply, tool_call

from . import kit


NAME = "jewellery-repair-desk"
ROUTE = "openai_agents"
DOMAIN = "jewellery repair workshop"
SHAPE = "front desk -> hand-off -> bench planner with a stated plan; guide retrieval, metal price, materials, stone-specialist sub-agent via as_tool, quote, metal order, bench booking"

SIZES = "HIJKLMNOPQRSTUVWXYZ"
GUIDES = {
    "18ct yellow gold": {"guide": "G-18Y-RS", "solder": "18ct yellow hard solder", "allowance_g_per_size": 0.22},
    "18ct white gold": {"guide": "G-18W-RS", "solder": "18ct white palladium solder", "allowance_g_per_size": 0.24},
    "9ct yellow gold": {"guide": "G-9Y-RS", "solder": "9ct yellow easy solder", "allowance_g_per_size": 0.18},
    "platinum": {"guide": "G-PT-RS", "solder": "platinum 1300 solder", "allowance_g_per_size": 0.35},
}
PRICES = {"18ct yellow gold": 78.40, "18ct white gold": 79.10, "9ct yellow gold": 39.20, "platinum": 31.60}
TICKETS = {
    "JR-3301": ("18ct yellow gold", "N", "P", "sapphire", 250),
    "JR-3302": ("9ct yellow gold", "K", "M", "garnet", 120),
    "JR-3303": ("platinum", "L", "O", "diamond", 300),
    "JR-3304": ("18ct white gold", "M", "N", "emerald", 150),
    "JR-3305": ("18ct yellow gold", "P", "R", "ruby", 250),
    "JR-3306": ("9ct yellow gold", "J", "L", "amethyst", 100),
    "JR-3307": ("18ct white gold", "O", "Q", "diamond", 250),
    "JR-3308": ("platinum", "N", "O", "sapphire", 200),
    "JR-3309": ("18ct yellow gold", "L", "N", "opal", 250),
}
HEAT_SAFE = {"sapphire": True, "garnet": True, "diamond": True, "ruby": True, "emerald": False, "amethyst": True, "opal": False}

INPUTS = {"j1": "JR-3301", "j2": "JR-3302", "j3": "JR-3303", "j4": "JR-3304", "j5": "JR-3305",
          "r1": "JR-3306", "r2": "JR-3307", "r3": "JR-3308", "r4": "JR-3309"}
REFS = ["r1", "r2", "r3", "r4"]

GEN = "generation repair-model"
CASES = {
    "jewellery_guide": ("jewel.guide", "wrong_retrieval", "j1", "search_repair_guides"),
    "jewellery_price": ("jewel.price", "stale_data", "j2", "get_metal_price"),
    "jewellery_grams": ("jewel.grams", "unit_error", "j3", "estimate_materials"),
    "jewellery_plan": ("jewel.plan", "plan_error", "j4", GEN),
    "jewellery_sizes": ("jewel.sizes", "wrong_tool_args", "j5", GEN),
}


class Refusal(RuntimeError):
    pass


Refusal.__module__ = "workshop_api"


@function_tool(failure_error_function=None)
def lookup_ticket(ticket_id: str) -> str:
    """The repair ticket."""
    metal, a, b, stone, limit = TICKETS[ticket_id]
    return json.dumps({"ticket": ticket_id, "item": "ring", "metal": metal, "size_from": a, "size_to": b,
                       "stones": [{"id": f"{ticket_id}-S1", "type": stone, "setting": "claw"}],
                       "job": "resize up and re-tip claws", "customer_limit_gbp": limit})


@function_tool(failure_error_function=None)
def search_repair_guides(query: str) -> str:
    """Search the workshop's repair guides; best match first."""
    metal = next(m for m in sorted(GUIDES, key=len, reverse=True) if m in query)
    hit = GUIDES[metal]
    if kit.active("jewel.guide"):
        hit = GUIDES["18ct white gold"]  # nearest embedding to the query
        kit.mark(hit["guide"])
    return json.dumps({"results": [{**hit, "score": 0.91}]})


@function_tool(failure_error_function=None)
def get_metal_price(metal: str) -> str:
    """Today's bullion fix for an alloy, per gram."""
    fix, price = "FIX-2026-12-03", PRICES[metal]
    if kit.active("jewel.price"):
        fix, price = "FIX-2026-11-27", round(price * 0.96, 2)  # the price cache missed the last fixes
        kit.mark(fix)
    return json.dumps({"metal": metal, "gbp_per_g": price, "price_ref": fix})


@function_tool(failure_error_function=None)
def estimate_materials(metal: str, sizes_up: int, allowance_g_per_size: float, gbp_per_g: float) -> str:
    """Metal to add for a resize and its cost."""
    grams = round(sizes_up * allowance_g_per_size, 2)
    cost = round(grams * gbp_per_g, 2)
    if kit.active("jewel.grams"):
        cost = round(grams * gbp_per_g * 31.1035, 2)  # per-gram price taken as per troy ounce
        kit.mark(f"{cost}")
    return json.dumps({"metal": metal, "grams": grams, "metal_cost_gbp": cost})


@function_tool(failure_error_function=None)
def inspect_stone(stone_id: str, stone_type: str) -> str:
    """Loupe and UV inspection record for one stone."""
    return json.dumps({"stone_id": stone_id, "type": stone_type, "heat_safe": HEAT_SAFE[stone_type], "record": f"SC-{stone_id[-6:]}"})


@function_tool(failure_error_function=None)
def send_quote(ticket_id: str, total_gbp: float) -> str:
    """Send the customer the quote."""
    limit = TICKETS[ticket_id][4]
    if total_gbp <= 0:
        raise Refusal(f"quote service 422: total £{total_gbp:.2f} is not a valid amount")
    if total_gbp > limit:
        raise Refusal(f"quote service 422: £{total_gbp:,.2f} exceeds the £{limit} the customer pre-approved on {ticket_id}")
    return json.dumps({"quote": f"Q-{ticket_id[3:]}", "total_gbp": total_gbp, "status": "sent"})


@function_tool(failure_error_function=None)
def order_metal(metal: str, grams: float, price_ref: str) -> str:
    """Order the metal from the bullion supplier."""
    if grams <= 0:
        raise Refusal(f"bullion supplier 422: quantity {grams} g of {metal} cannot be ordered")
    if price_ref != "FIX-2026-12-03":
        raise Refusal(f"bullion supplier 409: price reference {price_ref} has expired; orders must carry today's fix")
    return json.dumps({"order": f"BO-{int(grams * 100)}", "metal": metal, "grams": grams})


@function_tool(failure_error_function=None)
def book_bench(ticket_id: str, solder: str, stone_check_ref: str) -> str:
    """Book the repair onto a bench."""
    metal = TICKETS[ticket_id][0]
    if solder != GUIDES[metal]["solder"]:
        raise Refusal(f"workshop system 422: {solder} issued against a {metal} shank on {ticket_id}")
    if not stone_check_ref.startswith("SC-"):
        raise Refusal(f"workshop system 409: {ticket_id} needs a stone check record before heat work (got '{stone_check_ref}')")
    return json.dumps({"bench": "B2", "ticket": ticket_id, "status": "booked"})


# ---- the scripted model -------------------------------------------------------------------------------

def _calls(msgs: list[dict]) -> list[dict]:
    return [{"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"] or "{}"), "id": c["id"]}
            for m in msgs for c in (m.get("tool_calls") or [])]


def _result(msgs: list[dict], name: str) -> dict | None:
    ids = {c["id"] for c in _calls(msgs) if c["name"] == name}
    for m in reversed(msgs):
        if m["role"] == "tool" and m.get("tool_call_id") in ids:
            try:
                return json.loads(m["content"])
            except (TypeError, ValueError):
                return {"text": m["content"]}
    return None


def policy(request) -> Any:
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    user = next(m["content"] for m in msgs if m["role"] == "user")
    done = [c["name"] for c in _calls(msgs)]
    if system.startswith("You check stones"):
        ask = json.loads(user)
        if "inspect_stone" not in done:
            return Reply(tool_calls=(tool_call("inspect_stone", {"stone_id": ask["stone_id"], "stone_type": ask["type"]}),))
        rec = _result(msgs, "inspect_stone")
        return json.dumps({"stone_id": rec["stone_id"], "heat_safe": rec["heat_safe"], "record": rec["record"]})
    if system.startswith("You are the front desk"):
        if "lookup_ticket" not in done:
            return Reply(tool_calls=(tool_call("lookup_ticket", {"ticket_id": json.loads(user)["ticket"]}),))
        return Reply(tool_calls=(tool_call("transfer_to_bench_planner", {}),))
    t = _result(msgs, "lookup_ticket")
    if "search_repair_guides" not in done:
        plan = "Plan: guide -> metal price -> materials -> stone check -> quote -> order metal -> book bench"
        if kit.active("jewel.plan"):
            plan = "Plan: guide -> metal price -> materials -> quote -> order metal -> book bench"
            kit.mark("materials -> quote")
        return Reply(text=plan, tool_calls=(tool_call("search_repair_guides", {"query": f"resize {t['metal']} ring, claw setting"}),))
    plan = next(m["content"] for m in msgs if m["role"] == "assistant" and (m.get("content") or "").startswith("Plan:"))
    guide = _result(msgs, "search_repair_guides")["results"][0]
    if "get_metal_price" not in done:
        return Reply(tool_calls=(tool_call("get_metal_price", {"metal": t["metal"]}),))
    price = _result(msgs, "get_metal_price")
    if "estimate_materials" not in done:
        sizes = SIZES.index(t["size_to"]) - SIZES.index(t["size_from"])
        if kit.active("jewel.sizes"):
            sizes = SIZES.index(t["size_from"]) - SIZES.index(t["size_to"])  # direction of the resize flipped
            kit.mark(f'"sizes_up": {sizes}')
        return Reply(tool_calls=(tool_call("estimate_materials", {"metal": t["metal"], "sizes_up": sizes,
                                                                  "allowance_g_per_size": guide["allowance_g_per_size"],
                                                                  "gbp_per_g": price["gbp_per_g"]}),))
    mats = _result(msgs, "estimate_materials")
    if "stone check" in plan and "check_stones" not in done:
        s = t["stones"][0]
        return Reply(tool_calls=(tool_call("check_stones", {"input": json.dumps({"stone_id": s["id"], "type": s["type"]})}),))
    total = round(mats["metal_cost_gbp"] + 45.0, 2)
    if "send_quote" not in done:
        return Reply(tool_calls=(tool_call("send_quote", {"ticket_id": t["ticket"], "total_gbp": total}),))
    if "order_metal" not in done:
        return Reply(tool_calls=(tool_call("order_metal", {"metal": t["metal"], "grams": mats["grams"], "price_ref": price["price_ref"]}),))
    if "book_bench" not in done:
        chk = _result(msgs, "check_stones")
        ref = json.loads(chk["text"])["record"] if chk and "text" in chk else (chk or {}).get("record", "none")
        return Reply(tool_calls=(tool_call("book_bench", {"ticket_id": t["ticket"], "solder": guide["solder"], "stone_check_ref": ref}),))
    return f"{t['ticket']} booked on bench B2; quote £{total} sent."


_STATE: dict = {}


def _setup() -> dict:
    if not _STATE:
        server = FakeModelServer(policy, model="repair-model")
        server.start()
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
        stones = Agent(name="stone specialist", model=model, instructions="You check stones before heat work. Answer with JSON.",
                       tools=[inspect_stone])
        bench = Agent(name="bench planner", model=model,
                      instructions="You plan ring repairs at the bench: state a plan, then follow it with the tools.",
                      tools=[search_repair_guides, get_metal_price, estimate_materials,
                             stones.as_tool("check_stones", "Have a stone specialist check a stone before heat work.", failure_error_function=None),
                             send_quote, order_metal, book_bench])
        desk = Agent(name="front desk", model=model, instructions="You are the front desk of a jewellery repair workshop.",
                     tools=[lookup_ticket], handoffs=[bench])
        _STATE.update(server=server, desk=desk)
    return _STATE


def record(key: str, out: str) -> None:
    st = _setup()
    ticket = INPUTS[key]
    set_trace_processors([TrajdebugProcessor(path=out, name=NAME, task=f"repair ticket {ticket}")])
    try:
        Runner.run_sync(st["desk"], json.dumps({"ticket": ticket, "request": "resize and re-tip"}),
                        run_config=RunConfig(workflow_name=NAME, trace_include_sensitive_data=True), max_turns=20)
    except Exception as e:
        if not (isinstance(e, Refusal) or isinstance(e.__cause__, Refusal) or " 4" in str(e)):
            raise
    finally:
        set_trace_processors([])
