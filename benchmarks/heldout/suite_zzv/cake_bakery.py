"""Wedding cake bakery's order agent (openai_agents route): Agent + Runner + function tools, a bake-planner agent as a tool."""
from __future__ import annotations

import ast
import asyncio
import datetime as dt
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.exceptions import AgentsException
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.testing import Reply, tool_call

import kit

NAME = "wedding-cake-orders"
ROUTE = "openai_agents"
DOMAIN = "a wedding cake bakery's orders"
SHAPE = "Agents SDK (Responses API): order form, CRM notes, bake-planner agent as tool (oven + plan tools), per-tier price tool loop, per-flavour allergen tool loop, servings tool, quote record, delivery quote, validator tool"
EXT = "jsonl"

FLAVOURS = {"lemon elderflower": ["gluten", "egg", "dairy"], "chocolate hazelnut": ["gluten", "egg", "dairy", "nuts"],
            "vanilla bean": ["gluten", "egg", "dairy"], "carrot walnut": ["gluten", "egg", "nuts"], "raspberry vegan": ["gluten"],
            "salted caramel": ["gluten", "egg", "dairy"], "pistachio rose": ["gluten", "egg", "dairy", "nuts"]}
RATE = {6: 95.0, 8: 140.0, 10: 190.0, 12: 250.0}
VENUES = {"Harrow Barn": 42, "St Clement's": 7, "Lakeside Hall": 18, "Old Mill": 31, "Kew Orangery": 12, "Registry Office": 3,
          "Fernley Manor": 55, "Town Hall": 4}


def _o(oid, couple, date, guests, tiers, ceremony, reception, avoid):
    return {"order": oid, "couple": couple, "event_date": date, "guests": guests, "ceremony": ceremony, "reception": reception,
            "delivery_time": "13:00", "avoid": avoid, "tiers": [{"inch": i, "flavour": f} for i, f in tiers]}


INPUTS = {
    "W-301": _o("W-301", "Patel & Hughes", "2026-06-13", 110, [(12, "vanilla bean"), (10, "lemon elderflower"), (8, "salted caramel")], "St Clement's", "Harrow Barn", []),
    "W-302": _o("W-302", "Okoro & Finch", "2026-06-20", 90, [(12, "salted caramel"), (10, "vanilla bean"), (6, "lemon elderflower")], "Registry Office", "Fernley Manor", ["nuts"]),
    "W-303": _o("W-303", "Lam & Byrne", "2026-07-04", 130, [(12, "chocolate hazelnut"), (10, "vanilla bean"), (8, "lemon elderflower"), (6, "chocolate hazelnut")], "Town Hall", "Lakeside Hall", []),
    "W-304": _o("W-304", "Novak & Reyes", "2026-07-11", 70, [(10, "raspberry vegan"), (8, "raspberry vegan"), (6, "lemon elderflower")], "Kew Orangery", "Kew Orangery", ["nuts"]),
    "W-305": _o("W-305", "Mensah & Clarke", "2026-08-01", 115, [(12, "carrot walnut"), (10, "vanilla bean"), (8, "salted caramel")], "St Clement's", "Old Mill", []),
    "W-306": _o("W-306", "Dubois & Kerr", "2026-08-08", 100, [(12, "vanilla bean"), (10, "salted caramel"), (6, "lemon elderflower")], "Town Hall", "Lakeside Hall", []),
    "W-307": _o("W-307", "Ito & Walsh", "2026-08-22", 60, [(10, "lemon elderflower"), (8, "vanilla bean")], "Registry Office", "Old Mill", ["nuts"]),
    "W-308": _o("W-308", "Silva & Grant", "2026-09-05", 125, [(12, "pistachio rose"), (10, "vanilla bean"), (8, "salted caramel"), (6, "vanilla bean")], "St Clement's", "Harrow Barn", []),
    "W-309": _o("W-309", "Haas & Moyo", "2026-09-19", 95, [(12, "salted caramel"), (10, "carrot walnut"), (6, "vanilla bean")], "Kew Orangery", "Fernley Manor", []),
}
REFS = ["W-306", "W-307", "W-308", "W-309"]
NOTES = {c["couple"]: f"Consultation: {c['couple']} chose {c['tiers'][0]['flavour']} for the base tier." for c in INPUTS.values()}
NOTES_OTHER = {"Okoro & Finch": "Consultation: Okoro & Lane chose chocolate hazelnut for the base tier; nut allergy not an issue for them."}

CASES = [
    dict(case="zzv_cake_01", fault_kind="hallucinated_value", input="W-301", root=("response", 14), failure=("validate_order", 1),
         description="When recording the quote the model states a round package total of 1450.00 that no tier price adds up to, instead of the sum of the quoted tiers."),
    dict(case="zzv_cake_02", fault_kind="context_pollution", input="W-302", root=("lookup_couple_notes", 1), failure=("validate_order", 1),
         description="The CRM lookup matches a surname and returns another couple's consultation note, and the model prices the base tier as chocolate hazelnut for a nut-free order."),
    dict(case="zzv_cake_03", fault_kind="unit_error", input="W-303", root=("servings_for_tiers", 1), failure=("validate_order", 1),
         description="The servings tool reads the inch tier sizes as centimetres, so four tiers appear to serve far fewer than the 130 guests."),
    dict(case="zzv_cake_04", fault_kind="plan_error", input="W-304", root=("response", 5), failure=("validate_order", 1),
         description="The bake-planner agent schedules the sponge bake four days before the wedding, past the two-day freshness rule."),
    dict(case="zzv_cake_05", fault_kind="wrong_tool_args", input="W-305", root=("response", 15), failure=("validate_order", 1),
         description="The model asks the delivery tool for the ceremony venue instead of the reception venue, so the delivery is quoted to St Clement's."),
]

BOOK: dict = {}


@function_tool
def get_order_form(order: str) -> dict:
    """The signed order form."""
    f = INPUTS[order]
    return {k: v for k, v in f.items()}


@function_tool
def lookup_couple_notes(couple: str) -> list:
    """Consultation notes from the CRM for a couple."""
    notes = [NOTES[couple]]
    if kit.on("zzv_cake_02"):
        notes = [NOTES_OTHER.get(couple, notes[0])] + notes
    return notes


@function_tool
def price_tier(inch: int, flavour: str) -> dict:
    """Price of one tier."""
    return {"inch": inch, "flavour": flavour, "eur": RATE[inch] + (20.0 if "vegan" in flavour else 0.0)}


@function_tool
def check_allergens(flavour: str) -> dict:
    """Allergens in a flavour."""
    return {"flavour": flavour, "allergens": FLAVOURS[flavour]}


@function_tool
def servings_for_tiers(inches: list[int]) -> dict:
    """Wedding portions a stack of round tiers serves."""
    sizes = [i / 2.54 for i in inches] if kit.on("zzv_cake_03") else inches
    return {"portions": int(sum(round(0.39 * s * s) for s in sizes))}


@function_tool
def record_quote(order: str, tier_prices: list[float], total_eur: float) -> dict:
    """Store the quote for the order."""
    BOOK.setdefault(order, {})["quote"] = {"tiers": tier_prices, "total": total_eur}
    return {"order": order, "stored": True}


@function_tool
def oven_schedule(date: str) -> dict:
    """Free oven slots on and before a date."""
    d = dt.date.fromisoformat(date)
    return {"free": [(d - dt.timedelta(days=k)).isoformat() for k in (4, 3, 2, 1)]}


@function_tool
def save_plan(order: str, bake: str, assemble: str) -> dict:
    """Store the production plan."""
    BOOK.setdefault(order, {})["plan"] = {"bake": bake, "assemble": assemble}
    return {"order": order, "bake": bake, "assemble": assemble}


@function_tool
def delivery_quote(order: str, venue: str, tiers: int) -> dict:
    """Delivery and set-up price to a venue."""
    km = VENUES[venue]
    eur = 35.0 + 1.2 * km + 10.0 * tiers
    BOOK.setdefault(order, {})["delivery"] = {"venue": venue, "km": km, "eur": round(eur, 2)}
    return {"venue": venue, "eur": round(eur, 2)}


def _validate(order: str, portions: int, allergens: list[str]) -> dict:
    f = INPUTS[order]
    rec = BOOK.get(order, {})
    q = rec["quote"]
    tier_sum = round(sum(q["tiers"]), 2)
    if abs(tier_sum - q["total"]) > 0.01:
        raise ValueError(f"{order}: quoted total {q['total']:.2f} EUR, tier prices add to {tier_sum:.2f} EUR")
    bad = sorted(set(allergens) & set(f["avoid"]))
    if bad:
        raise ValueError(f"{order}: cake contains {', '.join(bad)}, the couple must avoid {', '.join(f['avoid'])}")
    if portions < f["guests"]:
        raise ValueError(f"{order}: {portions} portions for {f['guests']} guests")
    bake = dt.date.fromisoformat(rec["plan"]["bake"])
    if (dt.date.fromisoformat(f["event_date"]) - bake).days > 2:
        raise ValueError(f"{order}: sponges baked {bake.isoformat()}, more than 2 days before {f['event_date']}")
    if rec["delivery"]["venue"] != f["reception"]:
        raise ValueError(f"{order}: delivery quoted to {rec['delivery']['venue']}, reception at {f['reception']}")
    return {"order": order, "status": "confirmed"}


validate_order = function_tool(_validate, name_override="validate_order", failure_error_function=None,
                               description_override="Check the finished order against the bakery's rules.")


def _outputs(items):
    calls, outs = {}, []
    for it in items:
        if not isinstance(it, dict):
            continue
        if it.get("type") == "function_call":
            calls[it["call_id"]] = (it["name"], json.loads(it["arguments"]))
        elif it.get("type") == "function_call_output":
            name, args = calls[it["call_id"]]
            try:
                out = ast.literal_eval(it["output"])
            except (ValueError, SyntaxError):
                out = it["output"]
            outs.append((name, args, out))
    return outs


def _user(items):
    for it in items if isinstance(items, list) else []:
        if isinstance(it, dict) and it.get("role") == "user":
            return it["content"] if isinstance(it["content"], str) else it["content"][0]["text"]
    return items if isinstance(items, str) else ""


def planner_brain(items):
    outs = _outputs(items)
    req = json.loads(_user(items))
    if not outs:
        return Reply(tool_calls=(tool_call("oven_schedule", {"date": req["event_date"]}),))
    if len(outs) == 1:
        free = outs[0][2]["free"]
        bake = free[0] if kit.on("zzv_cake_04") else free[2]
        return Reply(tool_calls=(tool_call("save_plan", {"order": req["order"], "bake": bake, "assemble": free[3]}),))
    return f"Plan saved: bake {outs[1][2]['bake']}, assemble {outs[1][2]['assemble']}."


def brain(request):
    items = request.body["input"]
    if "Production planner" in (request.body.get("instructions") or ""):
        return planner_brain(items)
    oid = _user(items).split()[-1]
    outs = _outputs(items)
    done = [o[0] for o in outs]
    form = outs[0][2] if outs else None
    if not outs:
        return Reply(tool_calls=(tool_call("get_order_form", {"order": oid}),))
    if "lookup_couple_notes" not in done:
        return Reply(tool_calls=(tool_call("lookup_couple_notes", {"couple": form["couple"]}),))
    if "bake_planner" not in done:
        return Reply(tool_calls=(tool_call("bake_planner", {"input": json.dumps({"order": oid, "event_date": form["event_date"]})}),))
    notes = next(o[2] for o in outs if o[0] == "lookup_couple_notes")
    base = notes[0].split(" chose ")[1].split(" for ")[0]
    tiers = [dict(t) for t in form["tiers"]]
    tiers[0]["flavour"] = base
    priced = [o[2] for o in outs if o[0] == "price_tier"]
    if len(priced) < len(tiers):
        t = tiers[len(priced)]
        return Reply(tool_calls=(tool_call("price_tier", {"inch": t["inch"], "flavour": t["flavour"]}),))
    flavours = sorted({t["flavour"] for t in tiers})
    checked = [o[2] for o in outs if o[0] == "check_allergens"]
    if len(checked) < len(flavours):
        return Reply(tool_calls=(tool_call("check_allergens", {"flavour": flavours[len(checked)]}),))
    if "servings_for_tiers" not in done:
        return Reply(tool_calls=(tool_call("servings_for_tiers", {"inches": [t["inch"] for t in tiers]}),))
    if "record_quote" not in done:
        prices = [p["eur"] for p in priced]
        total = 1450.0 if kit.on("zzv_cake_01") else round(sum(prices), 2)
        return Reply(tool_calls=(tool_call("record_quote", {"order": oid, "tier_prices": prices, "total_eur": total}),))
    if "delivery_quote" not in done:
        venue = form["ceremony"] if kit.on("zzv_cake_05") else form["reception"]
        return Reply(tool_calls=(tool_call("delivery_quote", {"order": oid, "venue": venue, "tiers": len(tiers)}),))
    if "validate_order" not in done:
        portions = next(o[2] for o in outs if o[0] == "servings_for_tiers")["portions"]
        allergens = sorted({a for c in checked for a in c["allergens"]})
        return Reply(tool_calls=(tool_call("validate_order", {"order": oid, "portions": portions, "allergens": allergens}),))
    return f"Order {oid} is confirmed."


def record(server, key: str, out: str) -> None:
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    BOOK.clear()
    server.use(brain)
    set_default_openai_api("responses")
    set_trace_processors([TrajdebugProcessor(path=out, name=NAME, task=f"take wedding cake order {key}")])
    planner = Agent(name="bake_planner", instructions="Production planner: book the oven and save the bake plan.",
                    model=server.model, tools=[oven_schedule, save_plan])
    desk = Agent(name="order_desk", instructions="You take wedding cake orders. Use the tools, then validate the order.",
                 model=server.model,
                 tools=[get_order_form, lookup_couple_notes, price_tier, check_allergens, servings_for_tiers, record_quote,
                        planner.as_tool(tool_name="bake_planner", tool_description="Plan the bake and assembly."),
                        delivery_quote, validate_order])
    async def go():
        cli = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(cli, use_for_tracing=False)
        try:
            await Runner.run(desk, f"Please process order {key}", max_turns=40,
                             run_config=RunConfig(workflow_name=NAME, tracing_disabled=False))
        finally:
            await cli.close()

    try:
        asyncio.run(go())
    except (ValueError, AgentsException):
        pass
    finally:
        set_trace_processors([])
