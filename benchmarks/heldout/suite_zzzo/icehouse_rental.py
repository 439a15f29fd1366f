"""Icehouse cold-storage rental: one OpenAI Agents SDK agent booking a cold bay (openai_agents route)."""
import ast
import asyncio
import json

from agents import (Agent, ModelSettings, RunConfig, Runner, function_tool, set_default_openai_api,
                    set_default_openai_client, set_tracing_disabled)
from agents.exceptions import UserError
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME, ROUTE, DOMAIN = "icehouse-bookings", "openai_agents", "icehouse cold-storage rental"
SHAPE = "single Agents-SDK agent, model-driven tool loop (client lookup, two parallel tool calls, rate, quote), reservation tool that refuses"
SWITCH = None

CLIENTS = {"IC-07": {"name": "Harbour Fish Co", "account": "open"},
           "IC-12": {"name": "Dale Creamery", "account": "open"},
           "IC-19": {"name": "Northgate Butchers", "account": "open"},
           "IC-23": {"name": "Marsh Berry Farm", "account": "open"},
           "IC-31": {"name": "Old Quay Brewers", "account": "open"}}
RULES_C = {"fish": (-25, -18), "dairy": (1, 4), "meat": (-2, 1), "berries": (-20, -15), "hops": (0, 4)}
BAYS = [{"bay": "A1", "capacity_t": 12, "range_c": (-25, -15)}, {"bay": "A2", "capacity_t": 30, "range_c": (-25, -15)},
        {"bay": "B1", "capacity_t": 18, "range_c": (-3, 5)}, {"bay": "B2", "capacity_t": 26, "range_c": (-3, 5)},
        {"bay": "C1", "capacity_t": 45, "range_c": (-25, 5)}, {"bay": "C2", "capacity_t": 60, "range_c": (-25, 5)}]
RATES = {"fish": 9.5, "dairy": 6.0, "meat": 7.25, "berries": 8.0, "hops": 5.5}
INPUTS = [
    {"client": "IC-07", "goods": "fish", "tonnes": 28, "weeks": 6},
    {"client": "IC-12", "goods": "dairy", "tonnes": 15, "weeks": 3},
    {"client": "IC-19", "goods": "meat", "tonnes": 40, "weeks": 2},
    {"client": "IC-23", "goods": "berries", "tonnes": 52, "weeks": 10},
    {"client": "IC-31", "goods": "hops", "tonnes": 20, "weeks": 8},
]
CASES = [
    {"id": "zzzo_i01", "input": 0, "switch": "weeks", "fault_kind": "wrong_tool_args",
     "root": ("generation fake-model", 4, "llm"), "failure": ("reserve_bay", 1),
     "description": "The clerk model asked for a quote of 1 week although the client wants the bay for 6 weeks."},
    {"id": "zzzo_i02", "input": 1, "switch": "fahrenheit", "fault_kind": "unit_error",
     "root": ("cold_chain_rules", 1, "tool"), "failure": ("reserve_bay", 1),
     "description": "The cold-chain rules gave the dairy holding range in Fahrenheit (34 to 39), read as Celsius."},
    {"id": "zzzo_i03", "input": 3, "switch": "page", "fault_kind": "truncated_result",
     "root": ("free_bays", 1, "tool"), "failure": ("reserve_bay", 1),
     "description": "The bay listing stopped after its first page of four bays, so the 60 t bay C2 was never offered for 52 t."},
    {"id": "zzzo_i04", "input": 4, "switch": "rate", "fault_kind": "swallowed_error",
     "root": ("storage_rate", 1, "tool"), "failure": ("reserve_bay", 1),
     "description": "The rate lookup hit a closed tariff sheet, caught the error and answered a rate of 0.0 per tonne-week."},
    {"id": "zzzo_i05", "input": 2, "switch": "enquiry", "fault_kind": "context_pollution",
     "root": ("client_record", 1, "tool"), "failure": ("reserve_bay", 1),
     "description": "The client record carried another customer's last enquiry of 14 t, which the clerk took as the tonnage to store."},
]


@function_tool(failure_error_function=None)
def client_record(client_id: str) -> dict:
    """The client's account record."""
    rec = dict(CLIENTS[client_id], client_id=client_id)
    if SWITCH == "enquiry":
        rec["last_enquiry"] = {"tonnes": 14, "goods": "meat", "weeks": 2}
    return rec


@function_tool(failure_error_function=None)
def cold_chain_rules(goods: str) -> dict:
    """Holding temperature range for a kind of goods."""
    lo, hi = RULES_C[goods]
    if SWITCH == "fahrenheit" and goods == "dairy":
        lo, hi = round(lo * 9 / 5 + 32), round(hi * 9 / 5 + 32)
    return {"goods": goods, "min_temp": lo, "max_temp": hi}


@function_tool(failure_error_function=None)
def free_bays(start_week: int) -> dict:
    """Cold bays free from a week on."""
    bays = [dict(b, range_c=list(b["range_c"])) for b in BAYS]
    if SWITCH == "page":
        bays = bays[:4]
    return {"from_week": start_week, "bays": bays}


@function_tool(failure_error_function=None)
def storage_rate(goods: str, temp_c: int) -> dict:
    """Rate in GBP per tonne-week for goods held at a temperature."""
    try:
        if SWITCH == "rate":
            raise KeyError("tariff sheet 2026-Q4 closed")
        rate = RATES[goods] + (1.5 if temp_c < -10 else 0.0)
    except KeyError:
        rate = 0.0
    return {"goods": goods, "rate_per_tonne_week": rate}


@function_tool(failure_error_function=None)
def quote_rental(tonnes: float, weeks: int, rate_per_tonne_week: float) -> dict:
    """Quote a rental."""
    return {"tonnes": tonnes, "weeks": weeks, "total_gbp": round(tonnes * weeks * rate_per_tonne_week, 2)}


@function_tool(failure_error_function=None)
def reserve_bay(client_id: str, bay: str, tonnes: float, temp_c: int, weeks: int, quote_total_gbp: float) -> dict:
    """Reserve a bay; the icehouse's booking desk checks it against the bay and the tariff."""
    b = next(x for x in BAYS if x["bay"] == bay)
    if tonnes > b["capacity_t"]:
        raise ValueError(f"bay {bay} holds {b['capacity_t']} t, {tonnes} t asked")
    if not b["range_c"][0] <= temp_c <= b["range_c"][1]:
        raise ValueError(f"bay {bay} runs {b['range_c'][0]} to {b['range_c'][1]} C, {temp_c} C asked")
    floor = tonnes * weeks * 4.0
    if quote_total_gbp < floor:
        raise ValueError(f"quote {quote_total_gbp:.2f} GBP under the booking floor of {floor:.2f} GBP for {tonnes} t over {weeks} weeks")
    return {"booking": f"{client_id}-{bay}-W{weeks}", "bay": bay, "tonnes": tonnes, "weeks": weeks}


def _results(body):
    out = {}
    calls = {}
    for m in body["messages"]:
        if m["role"] == "assistant":
            for tc in m.get("tool_calls") or []:
                calls[tc["id"]] = tc["function"]["name"]
        if m["role"] == "tool":
            out[calls[m["tool_call_id"]]] = ast.literal_eval(m["content"])
    return out


def policy(request):
    body = request.body
    req = json.loads([m for m in body["messages"] if m["role"] == "user"][0]["content"])
    r = _results(body)
    if "client_record" not in r:
        return Reply(tool_calls=(tool_call("client_record", {"client_id": req["client"]}),))
    tonnes = r["client_record"].get("last_enquiry", {}).get("tonnes", req["tonnes"])
    if "cold_chain_rules" not in r:
        return Reply(tool_calls=(tool_call("cold_chain_rules", {"goods": req["goods"]}),
                                 tool_call("free_bays", {"start_week": 2})))
    rules = r["cold_chain_rules"]
    temp = (rules["min_temp"] + rules["max_temp"]) // 2
    if "storage_rate" not in r:
        return Reply(tool_calls=(tool_call("storage_rate", {"goods": req["goods"], "temp_c": temp}),))
    if "quote_rental" not in r:
        weeks = 1 if SWITCH == "weeks" else req["weeks"]
        return Reply(tool_calls=(tool_call("quote_rental", {"tonnes": tonnes, "weeks": weeks,
                     "rate_per_tonne_week": r["storage_rate"]["rate_per_tonne_week"]}),))
    if "reserve_bay" not in r:
        fits = [b for b in r["free_bays"]["bays"] if b["range_c"][0] <= temp <= b["range_c"][1]]
        roomy = [b for b in fits if b["capacity_t"] >= tonnes] or sorted(fits, key=lambda b: -b["capacity_t"])
        bay = (roomy or r["free_bays"]["bays"])[0]["bay"]
        return Reply(tool_calls=(tool_call("reserve_bay", {"client_id": req["client"], "bay": bay, "tonnes": req["tonnes"],
                     "temp_c": temp, "weeks": req["weeks"], "quote_total_gbp": r["quote_rental"]["total_gbp"]}),))
    return f"Booked bay {r['reserve_bay']['bay']} for {req['client']}: {r['reserve_bay']['booking']}."


def record(inp, server, path):
    set_tracing_disabled(False)
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client)
    set_default_openai_api("chat_completions")
    proc = TrajdebugProcessor(path=path, name=NAME, task=f"cold bay for {inp['client']}, {inp['tonnes']} t {inp['goods']}")
    set_trace_processors([proc])
    agent = Agent(name="icehouse_clerk", instructions="Book cold storage with the tools.", model=server.model,
                  tools=[client_record, cold_chain_rules, free_bays, storage_rate, quote_rental, reserve_bay],
                  model_settings=ModelSettings(parallel_tool_calls=True))
    try:
        async def go():
            try:
                return await Runner.run(agent, json.dumps(inp), run_config=RunConfig(workflow_name=NAME))
            finally:
                await client.close()

        asyncio.run(go())
    except UserError:
        pass
    finally:
        set_trace_processors([])
