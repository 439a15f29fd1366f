"""consignment-intake: a designer resale shop takes in consigned items and lists them (openai_agents)."""
from __future__ import annotations

import ast
import asyncio
import json
import statistics

from agents import (Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors)
from openai import AsyncOpenAI

from common import messages_of, server, system_of, user_of
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME, ROUTE = "consignment-intake", "openai_agents"
DOMAIN = "designer resale consignment shop: intake, comparables, pricing and listing of consigned items"
SHAPE = "Agents SDK: intake agent with a tool and two hand-offs; specialist with parallel tool calls, a pricing sub-agent run as a tool (with its own tool), listing tool"
SWITCH = None


def _on(case):
    return SWITCH == case


CONSIGNORS = {
    "C-204": {"name": "R. Okafor", "contract": "CT-204", "consignor_pct": 60, "items": ["CN-204-01", "CN-204-02", "CN-204-03"]},
    "C-311": {"name": "M. Lindqvist", "contract": "CT-311", "consignor_pct": 55, "items": ["CN-311-01"]},
    "C-372": {"name": "D. Ferreira", "contract": "CT-372", "consignor_pct": 65, "items": ["CN-372-01", "CN-372-02"]},
    "C-418": {"name": "A. Haddad", "contract": "CT-418", "consignor_pct": 60, "items": ["CN-418-01"]},
    "C-455": {"name": "J. Moreau", "contract": "CT-455", "consignor_pct": 50, "items": ["CN-455-01"]},
}
ITEMS = {
    "CN-204-02": {"brand": "Longchamp", "type": "handbag", "model": "Le Pliage large", "condition": "very good"},
    "CN-204-03": {"brand": "Coach", "type": "handbag", "model": "Tabby 26", "condition": "excellent"},
    "CN-311-01": {"brand": "Acne Studios", "type": "apparel", "model": "wool coat", "condition": "good", "size": "M"},
    "CN-372-02": {"brand": "Coach", "type": "handbag", "model": "Willow tote", "condition": "good"},
    "CN-418-01": {"brand": "Coach", "type": "handbag", "model": "Rogue 25", "condition": "very good"},
    "CN-455-01": {"brand": "Ganni", "type": "apparel", "model": "print dress", "condition": "excellent", "size": "S"},
}
COMPS = {
    ("Coach", "handbag"): [210.0, 245.0, 230.0], ("Longchamp", "handbag"): [95.0, 110.0, 90.0],
    ("Celine", "handbag"): [1450.0, 1620.0, 1380.0], ("Acne Studios", "apparel"): [180.0, 220.0, 205.0],
    ("Ganni", "apparel"): [85.0, 70.0, 95.0],
}
CEILING = {"Coach": 600.0, "Longchamp": 300.0, "Acne Studios": 500.0, "Ganni": 250.0}
CONDITION = {"excellent": 1.0, "very good": 0.9, "good": 0.8}

INPUTS = [
    {"task": "intake CN-204-03 for C-204", "text": "Consignor C-204 dropped off item CN-204-03: a Coach handbag, Tabby 26."},
    {"task": "intake CN-311-01 for C-311", "text": "Consignor C-311 dropped off item CN-311-01: an Acne Studios wool coat."},
    {"task": "intake CN-372-02 for C-372", "text": "Consignor C-372 dropped off item CN-372-02: a Coach handbag, Willow tote."},
    {"task": "intake CN-418-01 for C-418", "text": "Consignor C-418 dropped off item CN-418-01: a Coach handbag, Rogue 25."},
    {"task": "intake CN-455-01 for C-455", "text": "Consignor C-455 dropped off item CN-455-01: a Ganni print dress."},
]

CASES = [
    {"id": "zzzzp_ci_previous_item", "input": 0, "fault_kind": "subagent_wrong_entity",
     "root": ("pricing_analyst", 2, "agent"), "failure": ("create_listing", 1),
     "description": "the pricing_analyst sub-agent prices CN-204-02 (the consignor's earlier Longchamp) instead of CN-204-03, and create_listing refuses a quote made for another item."},
    {"id": "zzzzp_ci_comps_minor_units", "input": 3, "fault_kind": "unit_error",
     "root": ("search_comparables", 1, "tool"), "failure": ("create_listing", 1),
     "description": "search_comparables answers sold prices from the resale feed in cents (21000, 24500, 23000) with no unit, so the quote is about 100x too high and create_listing refuses a price over the Coach ceiling."},
    {"id": "zzzzp_ci_split_order", "input": 1, "fault_kind": "format_drift",
     "root": ("lookup_consignor", 1, "tool"), "failure": ("create_listing", 1),
     "description": "lookup_consignor answers the split as 'shop/consignor' text '45/55' instead of the consignor_pct field, the intake model takes the first number as the consignor's share, and create_listing refuses 45% against contract CT-311's 55%."},
    {"id": "zzzzp_ci_brand_blind_comps", "input": 2, "fault_kind": "wrong_retrieval",
     "root": ("search_comparables", 1, "tool"), "failure": ("create_listing", 1),
     "description": "search_comparables ranks sold listings on the model name 'tote' alone and answers Celine totes for a Coach Willow tote, so the price is far over the Coach ceiling and create_listing refuses it."},
    {"id": "zzzzp_ci_dress_to_bags", "input": 4, "fault_kind": "wrong_routing",
     "root": ("generation fake-model", 2, "llm"), "failure": ("create_listing", 1),
     "description": "the intake desk model reads 'print' as a bag pattern and hands the Ganni print dress to the handbag specialist, which lists it under category handbag with no size, and create_listing refuses the category."},
]

INTAKE = "You are the intake desk of a consignment shop. Look up the consignor, then hand the item to the right specialist."
SPECIALIST = "You are the {kind} specialist. Search comparables and authenticate in parallel, ask pricing_analyst for a price, then create the listing."
ANALYST = "You are pricing_analyst. Fetch the item's record, then answer JSON {item_id, price} from the comparables you are given."


def _parse(out):
    try:
        return json.loads(out)
    except ValueError:
        return ast.literal_eval(out)


def _results(request):
    """Tool results in order, keyed by the tool name of the call they answer."""
    names, out = {}, []
    for m in messages_of(request):
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            out.append((names.get(m.get("tool_call_id")), m.get("content")))
    return out


def brain(request):
    sysmsg = system_of(request)
    text = user_of(request)
    res = _results(request)
    got = {name: _parse(c) for name, c in res if name and not name.startswith("transfer_to")}
    if sysmsg.startswith("You are pricing_analyst"):
        ask = json.loads(user_of_last(request))
        if "fetch_item_record" not in got:
            target = ask["item_id"]
            if _on("zzzzp_ci_previous_item"):
                target = ask["consignor_items"][-2]  # the consignor's item listed just before
            return Reply(tool_calls=(tool_call("fetch_item_record", {"item_id": target}),))
        rec = got["fetch_item_record"]
        price = round(statistics.median(ask["comparables"]) * CONDITION[rec["condition"]], 2)
        return json.dumps({"item_id": rec["item_id"], "brand": rec["brand"], "price": price})
    item_id = text.split("item ")[1].split(":")[0]
    consignor = text.split("Consignor ")[1].split(" ")[0]
    if sysmsg.startswith("You are the intake desk"):
        if "lookup_consignor" not in got:
            return Reply(tool_calls=(tool_call("lookup_consignor", {"consignor_id": consignor}),))
        kind = "apparel" if any(w in text for w in ("coat", "dress", "jacket")) else "handbag"
        if _on("zzzzp_ci_dress_to_bags") and "dress" in text:
            kind = "handbag"  # reads 'print' as a bag's print pattern
        return Reply(tool_calls=(tool_call(f"transfer_to_{kind}_specialist", {}),))
    if "specialist" in sysmsg:
        kind = "apparel" if "apparel specialist" in sysmsg else "handbag"
        if "search_comparables" not in got:
            brand, model = text.split(": a")[1].strip().lstrip("n ").split(" ", 1)
            brand = "Acne Studios" if brand == "Acne" else brand
            return Reply(tool_calls=(tool_call("search_comparables", {"brand": brand, "item_type": kind, "model": text.split(", ")[-1].rstrip(".") if ", " in text else model}),
                                     tool_call("authenticate_item", {"item_id": item_id})))
        if "pricing_analyst" not in got:
            cons = got["lookup_consignor"]
            comps = [c["sold_price"] for c in got["search_comparables"]["results"]]
            return Reply(tool_calls=(tool_call("pricing_analyst", {"input": json.dumps(
                {"item_id": item_id, "consignor_items": cons["items"], "comparables": comps})}),))
        if "create_listing" not in got:
            cons, quote = got["lookup_consignor"], got["pricing_analyst"]
            pct = cons.get("consignor_pct")
            if pct is None:
                pct = int(str(cons["split"]).split("/")[0])
            args = {"item_id": item_id, "quote_item_id": quote["item_id"], "category": kind, "list_price": quote["price"],
                    "consignor_pct": pct, "contract": cons["contract"]}
            if kind == "apparel":
                args["size"] = got["authenticate_item"].get("size", "")
            return Reply(tool_calls=(tool_call("create_listing", args),))
        return f"Listed {item_id}: {got['create_listing']['listing']}."
    return "OK"


def user_of_last(request):
    users = [m["content"] for m in messages_of(request) if m.get("role") == "user"]
    return users[-1]


@function_tool(failure_error_function=None)
def lookup_consignor(consignor_id: str) -> dict:
    """The consignor's contract, payout split and consigned items."""
    c = dict(CONSIGNORS[consignor_id])
    if _on("zzzzp_ci_split_order"):
        pct = c.pop("consignor_pct")
        c["split"] = f"{100 - pct}/{pct}"  # the new contracts service writes shop/consignor
    return c


@function_tool(failure_error_function=None)
def search_comparables(brand: str, item_type: str, model: str) -> dict:
    """Recently sold comparable listings."""
    if _on("zzzzp_ci_brand_blind_comps"):
        brand = "Celine" if "tote" in model.lower() else brand
    prices = COMPS.get((brand, item_type)) or next(v for (b, _), v in COMPS.items() if b == brand)
    if _on("zzzzp_ci_comps_minor_units"):
        prices = [int(p * 100) for p in prices]
    return {"query": {"brand": brand, "item_type": item_type},
            "results": [{"sold_price": p, "source": f"feed-{i}"} for i, p in enumerate(prices)]}


@function_tool(failure_error_function=None)
def authenticate_item(item_id: str) -> dict:
    """Authentication check of a consigned item (serial, stitching, hardware)."""
    it = ITEMS[item_id]
    return {"item_id": item_id, "authentic": True, "brand": it["brand"], "size": it.get("size", "")}


@function_tool(failure_error_function=None)
def fetch_item_record(item_id: str) -> dict:
    """The intake record of one consigned item."""
    return {"item_id": item_id, **ITEMS[item_id]}


@function_tool(failure_error_function=None)
def create_listing(item_id: str, quote_item_id: str, category: str, list_price: float, consignor_pct: int,
                   contract: str, size: str = "") -> dict:
    """Create the shop listing for a consigned item."""
    it = ITEMS[item_id]
    if quote_item_id != item_id:
        raise ValueError(f"price quote is for {quote_item_id}, not {item_id}")
    if category != it["type"]:
        raise ValueError(f"{item_id} is a {it['brand']} {it['model']}; it cannot be listed under category {category}")
    if list_price > CEILING[it["brand"]]:
        raise ValueError(f"list price {list_price:.2f} exceeds the {it['brand']} ceiling {CEILING[it['brand']]:.2f}")
    owner = next(c for c in CONSIGNORS.values() if c["contract"] == contract)
    if consignor_pct != owner["consignor_pct"]:
        raise ValueError(f"consignor share {consignor_pct}% differs from contract {contract} ({owner['consignor_pct']}%)")
    return {"listing": f"LST-{item_id[3:]}", "price": list_price, "payout": round(list_price * consignor_pct / 100, 2)}


def agents(client):
    model = OpenAIChatCompletionsModel(model=server().model,
                                       openai_client=client)
    analyst = Agent(name="pricing_analyst", instructions=ANALYST, model=model, tools=[fetch_item_record])
    tools = [search_comparables, authenticate_item,
             analyst.as_tool(tool_name="pricing_analyst", tool_description="Prices one item from comparables."),
             create_listing]
    bags = Agent(name="handbag_specialist", instructions=SPECIALIST.format(kind="handbag"), model=model, tools=tools)
    wear = Agent(name="apparel_specialist", instructions=SPECIALIST.format(kind="apparel"), model=model, tools=tools)
    desk = Agent(name="intake_desk", instructions=INTAKE, model=model, tools=[lookup_consignor], handoffs=[bags, wear])
    return desk


async def _go(inp: dict) -> None:
    client = AsyncOpenAI(base_url=server().base_url, api_key="not-needed", max_retries=0)
    try:
        await Runner.run(agents(client), inp["text"], run_config=RunConfig(workflow_name=NAME))
    finally:
        await client.close()  # closed inside its own event loop


def run(inp: dict, path: str) -> None:
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["task"])])
    try:
        asyncio.run(_go(inp))
    finally:
        set_trace_processors([])
