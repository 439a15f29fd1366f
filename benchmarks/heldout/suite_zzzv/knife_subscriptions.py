"""Knife-maker's sharpening subscriptions: openai_agents route. One desk agent: the subscriber's
record and the price list in parallel, then a steel-profiling sub-agent (an agent run as a tool,
with its own steel-sheet tool) once per knife, then the sharpening schedule and the month's bill.
Chat Completions against the fake server; the desk's tools raise, so Runner.run raises."""
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

NAME = "sharpening-subscriptions"
ROUTE = "openai_agents"
DOMAIN = "knife-maker's sharpening subscriptions"
SHAPE = "desk agent: 2 parallel tools -> steel-profiler sub-agent as a tool per knife (sub-agent: tool + answer) -> schedule -> bill; 22-54 steps"
SWITCHES = {"profiler_other_knife": False, "sheet_angle_text": False, "fee_in_pence": False,
            "bill_in_local_currency": False, "record_by_name_only": False}

SUBSCRIBERS = [
    {"subscriber_id": "KS-1001", "name": "Fairweather", "postcode": "S1 4DP", "plan": "chef", "currency": "GBP", "cap": 60.0,
     "knives": [{"knife_id": "K-11", "maker": "Sakai", "model": "gyuto 240"}, {"knife_id": "K-12", "maker": "Sheffield Forge", "model": "paring 90"}]},
    {"subscriber_id": "KS-1002", "name": "Okafor", "postcode": "LS6 2AB", "plan": "home", "currency": "GBP", "cap": 30.0,
     "knives": [{"knife_id": "K-21", "maker": "Solingen Works", "model": "chef 200"}]},
    {"subscriber_id": "KS-1003", "name": "Lindqvist", "postcode": "BT7 1NN", "plan": "chef", "currency": "EUR", "cap": 70.0,
     "knives": [{"knife_id": "K-31", "maker": "Sakai", "model": "santoku 180"}, {"knife_id": "K-32", "maker": "Seki", "model": "nakiri 165"},
                {"knife_id": "K-33", "maker": "Solingen Works", "model": "bread 230"}, {"knife_id": "K-34", "maker": "Sheffield Forge", "model": "carving 250"}]},
    {"subscriber_id": "KS-1004", "name": "Fairweather", "postcode": "YO1 7HH", "plan": "home", "currency": "GBP", "cap": 30.0,
     "knives": [{"knife_id": "K-41", "maker": "Seki", "model": "petty 150"}, {"knife_id": "K-42", "maker": "Solingen Works", "model": "boning 160"}]},
    {"subscriber_id": "KS-1005", "name": "Brandt", "postcode": "CF10 3AT", "plan": "trade", "currency": "GBP", "cap": 120.0,
     "knives": [{"knife_id": "K-51", "maker": "Sheffield Forge", "model": "butcher 300"}, {"knife_id": "K-52", "maker": "Sakai", "model": "yanagiba 270"},
                {"knife_id": "K-53", "maker": "Seki", "model": "deba 180"}]},
]
STEEL = {"Sakai": ("white #2", 15, 12, 17), "Seki": ("VG-10", 15, 13, 17), "Solingen Works": ("X50CrMoV15", 20, 18, 22),
         "Sheffield Forge": ("EN1095", 20, 17, 22)}
FEES = {"home": (12.0, 4.5), "chef": (18.0, 6.0), "trade": (30.0, 8.0)}
HOME_CURRENCY = {"BT7 1NN": "GBP"}

INPUTS = [
    {"task": "sharpening cycle November, Fairweather S1 4DP", "name": "Fairweather", "postcode": "S1 4DP", "month": "2026-11"},
    {"task": "sharpening cycle November, Okafor LS6 2AB", "name": "Okafor", "postcode": "LS6 2AB", "month": "2026-11"},
    {"task": "sharpening cycle November, Lindqvist BT7 1NN", "name": "Lindqvist", "postcode": "BT7 1NN", "month": "2026-11"},
    {"task": "sharpening cycle November, Fairweather YO1 7HH", "name": "Fairweather", "postcode": "YO1 7HH", "month": "2026-11"},
    {"task": "sharpening cycle November, Brandt CF10 3AT", "name": "Brandt", "postcode": "CF10 3AT", "month": "2026-11"},
]
CASES = [
    {"id": "zv26", "input": 4, "switch": "profiler_other_knife", "kind": "subagent_wrong_entity",
     "root": ("generation fake-model", 6, "llm"), "failure": ("schedule_sharpening", 1),
     "description": "The steel profiler asked about the yanagiba K-52 looked up the butcher knife it had profiled before, and reported the Sheffield steel's 20 degree angle for the Sakai blade."},
    {"id": "zv27", "input": 2, "switch": "sheet_angle_text", "kind": "format_drift",
     "root": ("steel_sheet", 2, "tool"), "failure": ("schedule_sharpening", 1),
     "description": "The steel sheet for Seki gave its angle as a text under a new key ('15 deg per side') instead of the number under angle_deg, and the profiler fell back on the 20 degree house angle."},
    {"id": "zv28", "input": 1, "switch": "fee_in_pence", "kind": "unit_error",
     "root": ("price_list", 1, "tool"), "failure": ("bill_cycle", 1),
     "description": "The price list gave the per-knife fee in pence (450) where the desk works in pounds, so the month was billed 462.00 against a 30.00 cap."},
    {"id": "zv29", "input": 2, "switch": "bill_in_local_currency", "kind": "wrong_tool_args",
     "root": ("generation fake-model", 15, "llm"), "failure": ("bill_cycle", 1),
     "description": "The desk billed Lindqvist in GBP, the currency of the Belfast postcode, although the account is billed in EUR."},
    {"id": "zv30", "input": 3, "switch": "record_by_name_only", "kind": "wrong_retrieval",
     "root": ("subscriber_record", 1, "tool"), "failure": ("schedule_sharpening", 1),
     "description": "The subscriber lookup matched on the surname alone and returned the Sheffield Fairweather (KS-1001) for the York one, so the knives scheduled are not the York subscriber's."},
]


class KnifeAngle(BaseModel):
    knife_id: str
    angle_deg: int


@function_tool(failure_error_function=None)
def subscriber_record(name: str, postcode: str) -> dict:
    """The subscriber's account: plan, billing currency, monthly cap and registered knives."""
    for s in SUBSCRIBERS:
        if s["name"] == name and (SWITCHES["record_by_name_only"] or s["postcode"] == postcode):
            return s
    raise LookupError(f"no subscriber {name} at {postcode}")


@function_tool(failure_error_function=None)
def price_list(month: str) -> dict:
    """Plan fees of the month: base fee and fee per knife, in pounds."""
    fees = {p: {"base": b, "per_knife": k} for p, (b, k) in FEES.items()}
    if SWITCHES["fee_in_pence"]:
        fees = {p: {"base": v["base"], "per_knife": int(v["per_knife"] * 100)} for p, v in fees.items()}
    return {"month": month, "fees": fees}


@function_tool(failure_error_function=None)
def steel_sheet(maker: str, model: str) -> dict:
    """The maker's steel sheet for a knife: steel and edge angle per side."""
    steel, angle, _lo, _hi = STEEL[maker]
    if SWITCHES["sheet_angle_text"] and maker == "Seki":
        return {"maker": maker, "model": model, "steel": steel, "edge angle": f"{angle} deg per side"}
    return {"maker": maker, "model": model, "steel": steel, "angle_deg": angle}


@function_tool(failure_error_function=None)
def schedule_sharpening(subscriber_id: str, month: str, pickup_postcode: str, knives: list[KnifeAngle]) -> dict:
    """Put the knives on the sharpening bench schedule at their angles, with the courier pickup."""
    sub = next(s for s in SUBSCRIBERS if s["subscriber_id"] == subscriber_id)
    if pickup_postcode != sub["postcode"]:
        raise ValueError(f"courier pickup at {pickup_postcode} is not the address of {subscriber_id} ({sub['postcode']})")
    registered = {k["knife_id"]: k for k in sub["knives"]}
    for k in knives:
        knife = registered[k.knife_id]
        steel, _a, lo, hi = STEEL[knife["maker"]]
        if not lo <= k.angle_deg <= hi:
            raise ValueError(f"{k.knife_id} {knife['maker']} {knife['model']} ({steel}): {k.angle_deg} deg outside {lo}-{hi}")
    return {"subscriber_id": subscriber_id, "scheduled": [k.knife_id for k in knives], "bench_week": 2}


@function_tool(failure_error_function=None)
def bill_cycle(subscriber_id: str, amount: float, currency: str) -> dict:
    """Charge the month's sharpening to the subscriber's account."""
    sub = next(s for s in SUBSCRIBERS if s["subscriber_id"] == subscriber_id)
    if currency != sub["currency"]:
        raise ValueError(f"account {subscriber_id} is billed in {sub['currency']}, charge was in {currency}")
    if amount > sub["cap"]:
        raise ValueError(f"charge {amount:.2f} {currency} exceeds the subscription cap of {sub['cap']:.2f}")
    return {"charged": amount, "currency": currency}


def _read(text):
    try:
        return json.loads(text)
    except ValueError:
        return ast.literal_eval(text)


def _outputs(msgs):
    calls = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            calls[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}"))
    out = []
    for m in msgs:
        if m.get("role") == "tool" and m["tool_call_id"] in calls:
            name, args = calls[m["tool_call_id"]]
            out.append((name, args, _read(m["content"])))
    return out


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    user = json.loads(next(m["content"] for m in msgs if m["role"] == "user"))
    got = _outputs(msgs)
    if system.startswith("You profile"):
        sheets = [o for n, _a, o in got if n == "steel_sheet"]
        if not sheets:
            knife = user
            if SWITCHES["profiler_other_knife"] and user["knife_id"] == "K-52":
                knife = {"knife_id": "K-51", "maker": "Sheffield Forge", "model": "butcher 300"}
            return Reply(tool_calls=(tool_call("steel_sheet", {"maker": knife["maker"], "model": knife["model"]}),))
        sheet = sheets[0]
        return json.dumps({"knife_id": user["knife_id"], "steel": sheet["steel"], "angle_deg": sheet.get("angle_deg", 20)})
    by = {}
    for n, a, o in got:
        by.setdefault(n, []).append(o)
    if "subscriber_record" not in by:
        return Reply(tool_calls=(tool_call("subscriber_record", {"name": user["name"], "postcode": user["postcode"]}),
                                 tool_call("price_list", {"month": user["month"]})))
    sub = by["subscriber_record"][0]
    profiles = by.get("steel_profiler", [])
    if len(profiles) < len(sub["knives"]):
        return Reply(tool_calls=(tool_call("steel_profiler", {"input": json.dumps(sub["knives"][len(profiles)])}),))
    if "schedule_sharpening" not in by:
        return Reply(tool_calls=(tool_call("schedule_sharpening", {
            "subscriber_id": sub["subscriber_id"], "month": user["month"], "pickup_postcode": user["postcode"],
            "knives": [{"knife_id": p["knife_id"], "angle_deg": p["angle_deg"]} for p in profiles]}),))
    if "bill_cycle" not in by:
        fee = by["price_list"][0]["fees"][sub["plan"]]
        amount = round(fee["base"] + fee["per_knife"] * len(sub["knives"]), 2)
        currency = sub["currency"]
        if SWITCHES["bill_in_local_currency"]:
            currency = HOME_CURRENCY.get(sub["postcode"], currency)
        return Reply(tool_calls=(tool_call("bill_cycle", {"subscriber_id": sub["subscriber_id"], "amount": amount, "currency": currency}),))
    bill = by["bill_cycle"][0]
    return f"{len(sub['knives'])} knives on the bench, {bill['charged']:.2f} {bill['currency']} charged."


def _desk(model):
    profiler = Agent(name="steel_profiler", model=model, tools=[steel_sheet],
                     instructions="You profile one knife: read its maker's steel sheet and answer JSON with knife_id, steel and angle_deg.")
    return Agent(name="subscription_desk", model=model,
                 tools=[subscriber_record, price_list,
                        profiler.as_tool(tool_name="steel_profiler", tool_description="Profile one knife's steel and edge angle.",
                                         failure_error_function=None),
                        schedule_sharpening, bill_cycle],
                 instructions="You run the sharpening subscription desk: read the account and prices, profile each knife, schedule, bill.",
                 model_settings=ModelSettings(parallel_tool_calls=True))


def record(inp, path, server):
    async def go():
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client, use_for_tracing=False)
        try:
            await Runner.run(_desk("fake-model"), json.dumps({k: inp[k] for k in ("name", "postcode", "month")}),
                             run_config=RunConfig(workflow_name=NAME), max_turns=20)
        finally:
            await client.close()

    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["task"])])
    try:
        asyncio.run(go())
    finally:
        set_trace_processors([])
