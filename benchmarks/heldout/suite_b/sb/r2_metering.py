"""Meter billing agent (OpenAI Agents SDK with a sub-agent as a tool, energy metering).

For a billing period the agent asks a premises analyst (a sub-agent) which
meter serves the account, reads the meter, settles the consumption into the
billing ledger, reads the settled figure back, prices it on the account's
tariff and posts the invoice.  The invoicing service checks meter ownership,
plausibility and the arithmetic.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents import Agent, function_tool

from sb.agkit import run_agent
from sb.fakellm import Conversation, Reply, call, say
from sb.harness import Case, failing, faulty, tick


AGENT = "meter-billing"
ROUTE = "openai-agents"
DOMAIN = "energy metering"

ACCOUNTS = {
    "EA-3001": {"address": "12 Quay Street, Flat 2", "meter": "MTR-5524", "plan": "FLEX-24"},
    "EA-3002": {"address": "12 Quay Street, Flat 4", "meter": "MTR-5521", "plan": "FLEX-24"},
    "EA-4110": {"address": "3 Orchard Lane", "meter": "MTR-6130", "plan": "GREEN-FIX"},
    "EA-4420": {"address": "88 Mill Road", "meter": "MTR-7702", "plan": "TOU-2"},
    "EA-5006": {"address": "5 Harbour View, Unit 1", "meter": "MTR-8841", "plan": "GREEN-FIX"},
    "EA-5007": {"address": "5 Harbour View, Unit 3", "meter": "MTR-8843", "plan": "TOU-2"},
    "EA-6120": {"address": "41 Elm Terrace", "meter": "MTR-9915", "plan": "FLEX-24"},
    "EA-7033": {"address": "7 Kiln Close", "meter": "MTR-1208", "plan": "TOU-2"},
}
READS = {  # meter -> (previous, current) register reads in kWh for 2025-06
    "MTR-5524": (18234.6, 18571.2),
    "MTR-5521": (40977.0, 41288.4),
    "MTR-6130": (7712.3, 8006.9),
    "MTR-7702": (55120.8, 55702.1),
    "MTR-8841": (1203.4, 1421.0),
    "MTR-8843": (9981.2, 10310.7),
    "MTR-9915": (23456.0, 23871.5),
    "MTR-1208": (31002.9, 31488.0),
}
SMART_WH = {"MTR-7702", "MTR-1208"}  # newer meters whose head-end reports registers in Wh
TARIFFS = {
    "FLEX-24": (0.2875, 0.52),
    "GREEN-FIX": (0.3110, 0.47),
    "TOU-2": (0.2540, 0.61),
}  # per kWh, per day
DAYS = 30
DOMESTIC_CAP_KWH = 5000
LEDGER: dict[tuple[str, str], dict[str, Any]] = {}


@function_tool(failure_error_function=None)
def find_meters(address: str) -> str:
    """Meters installed in the building of an address, with the unit they serve."""
    tick("find_meters")
    building = address.split(",")[0]
    rows = [
        {"meter_id": a["meter"], "unit": a["address"]}
        for a in ACCOUNTS.values()
        if a["address"].split(",")[0] == building
    ]
    rows.sort(key=lambda r: r["meter_id"])
    return json.dumps({"building": building, "meters": rows})


@function_tool(failure_error_function=None)
def read_meter(meter_id: str, period: str) -> str:
    """Previous and current register reads of a meter for a billing period, in kWh."""
    tick("read_meter")
    prev, cur = READS[meter_id]
    if meter_id in SMART_WH and faulty("head_end_wh", "read_meter"):
        prev, cur = round(prev * 1000), round(cur * 1000)  # Wh registers passed through unconverted
    return json.dumps(
        {"meter_id": meter_id, "period": period, "previous": prev, "current": cur, "unit": "kWh"}
    )


@function_tool(failure_error_function=None)
def settle_reading(meter_id: str, period: str, previous: float, current: float) -> str:
    """Settle a period's consumption (current - previous) into the billing ledger."""
    tick("settle_reading")
    kwh = round(current - previous, 1)
    if faulty("ledger_stores_register", "settle_reading"):
        kwh = current  # writes the register value into the consumption field
    LEDGER[(meter_id, period)] = {"meter_id": meter_id, "period": period, "kwh": kwh, "status": "settled"}
    return json.dumps({"meter_id": meter_id, "period": period, "settled": True})


@function_tool(failure_error_function=None)
def get_ledger(meter_id: str, period: str) -> str:
    """The settled consumption of a meter for a period, from the billing ledger."""
    tick("get_ledger")
    return json.dumps(LEDGER[(meter_id, period)])


@function_tool(failure_error_function=None)
def get_tariff(plan: str) -> str:
    """Unit rate (per kWh) and daily standing charge of a tariff plan, in GBP."""
    tick("get_tariff")
    rate, standing = TARIFFS[plan]
    return json.dumps({"plan": plan, "unit_rate": rate, "standing_charge_per_day": standing})


@function_tool(failure_error_function=None)
def post_invoice(account_id: str, meter_id: str, period: str, kwh: float, amount_gbp: float) -> str:
    """Post an electricity invoice for an account."""
    tick("post_invoice")
    acct = ACCOUNTS[account_id]
    if acct["meter"] != meter_id:
        failing("post_invoice")
        raise PermissionError(
            f"meter {meter_id} is not registered to {account_id} ({acct['address']} has {acct['meter']})"
        )
    if kwh > DOMESTIC_CAP_KWH:
        failing("post_invoice")
        raise ValueError(
            f"{kwh:,.1f} kWh in one month is implausible for a domestic supply (cap {DOMESTIC_CAP_KWH:,} kWh)"
        )
    rate, standing = TARIFFS[acct["plan"]]
    expected = round(kwh * rate + standing * DAYS, 2)
    if abs(expected - amount_gbp) > 0.01 * expected:
        failing("post_invoice")
        raise ValueError(
            f"invoice total {amount_gbp:.2f} does not match {kwh} kWh on {acct['plan']} ({expected:.2f})"
        )
    return json.dumps(
        {"invoice": f"INV-{account_id[3:]}-{period.replace('-', '')}", "amount_gbp": amount_gbp}
    )


def build(model: Any) -> Agent[Any]:
    analyst = Agent(
        name="premises_analyst",
        instructions="You are the premises analyst. Given an account's address, list the meters in the building "
        'and answer with JSON {"meter_id": ...} for the meter that serves that exact unit.',
        tools=[find_meters],
        model=model,
    )
    return Agent(
        name="billing_agent",
        instructions="You bill electricity. Ask the premises analyst for the account's meter, read it, settle the "
        "consumption, read the settled kWh back from the ledger, price it (kWh * unit rate + 30 days of standing "
        "charge) and post the invoice.",
        tools=[
            analyst.as_tool(
                tool_name="identify_meter",
                tool_description="Ask the premises analyst which meter serves an address.",
            ),
            read_meter,
            settle_reading,
            get_ledger,
            get_tariff,
            post_invoice,
        ],
        model=model,
    )


def policy(conv: Conversation) -> Reply:
    t = conv.task
    acct = ACCOUNTS[t["account_id"]]
    if "You are the premises analyst" in conv.system:
        if conv.called("find_meters") == 0:
            return call("find_meters", address=acct["address"])
        meters = conv.result("find_meters")["meters"]
        if conv.fault == "analyst_first_meter":
            return say(json.dumps({"meter_id": meters[0]["meter_id"]}), faulty=True)
        pick = next(m for m in meters if m["unit"] == acct["address"])
        return say(json.dumps({"meter_id": pick["meter_id"]}))
    period = t["period"]
    if conv.called("identify_meter") == 0:
        return call("identify_meter", input=f"Which meter serves {acct['address']}?")
    meter = conv.result("identify_meter")["meter_id"]
    if conv.called("read_meter") == 0:
        return call("read_meter", meter_id=meter, period=period)
    rd = conv.result("read_meter")
    if conv.called("settle_reading") == 0:
        return call(
            "settle_reading", meter_id=meter, period=period, previous=rd["previous"], current=rd["current"]
        )
    if conv.called("get_ledger") == 0:
        return call("get_ledger", meter_id=meter, period=period)
    if conv.called("get_tariff") == 0:
        return call("get_tariff", plan=acct["plan"])
    if conv.called("post_invoice") == 0:
        kwh, tariff = conv.result("get_ledger")["kwh"], conv.result("get_tariff")
        amount = round(kwh * tariff["unit_rate"] + DAYS * tariff["standing_charge_per_day"], 2)
        return call(
            "post_invoice",
            account_id=t["account_id"],
            meter_id=meter,
            period=period,
            kwh=kwh,
            amount_gbp=amount,
        )
    inv = conv.result("post_invoice")
    return say(f"Invoice {inv['invoice']} posted for GBP {inv['amount_gbp']:.2f}.")


def run(task: dict[str, Any], path: Path) -> Any:
    LEDGER.clear()
    text = f"Bill account {task['account_id']} for {task['period']}."
    return run_agent(build, text, path, workflow="meter-billing", metadata={"period": task["period"]})


PASSING = [
    {"account_id": a, "period": "2025-06"} for a in ("EA-3002", "EA-4110", "EA-5006", "EA-6120", "EA-7033")
]

CASES = [
    Case(
        id="metering-head-end-wh",
        task={"account_id": "EA-4420", "period": "2025-06"},
        fault="head_end_wh",
        fault_kind="unit_scale_error",
        description="read_meter passes the smart meter's Wh registers through as kWh. The consumption settled "
        "and read back is 581,300 'kWh' and the invoicing service rejects it as implausible.",
        root="read_meter",
        evidence="55702100",
        path=["read_meter", "settle_reading", "get_ledger", "llm", "post_invoice"],
        failure="post_invoice",
    ),
    Case(
        id="metering-ledger-register-value",
        task={"account_id": "EA-5007", "period": "2025-06"},
        fault="ledger_stores_register",
        fault_kind="bad_memory_write",
        description="settle_reading writes the current register value (10,310.7) into the ledger's consumption "
        "field. The agent reads the ledger back, invoices 10,310.7 kWh and the invoicing service refuses it.",
        root="settle_reading",
        evidence='"settled": true',
        path=["settle_reading", "get_ledger", "llm", "post_invoice"],
        failure="post_invoice",
    ),
    Case(
        id="metering-analyst-wrong-flat",
        task={"account_id": "EA-3001", "period": "2025-06"},
        fault="analyst_first_meter",
        fault_kind="wrong_entity_subagent",
        description="The premises analyst lists both meters at 12 Quay Street and answers with the first one, "
        "MTR-5521 (Flat 4), for an account in Flat 2. The agent reads, settles and prices the neighbour's meter and "
        "the invoice is refused: the meter is not on the account.",
        root="llm",
        evidence="MTR-5521",
        path=["llm", "read_meter", "llm", "post_invoice"],
        failure="post_invoice",
    ),
    Case(
        id="metering-ledger-register-value-b",
        task={"account_id": "EA-4110", "period": "2025-07"},
        fault="ledger_stores_register",
        fault_kind="bad_memory_write",
        description="On another account, settle_reading stores the register (8,006.9) instead of the 294.6 kWh "
        "consumed; the invoice built from the ledger is rejected as implausible.",
        root="settle_reading",
        evidence='"settled": true',
        path=["settle_reading", "get_ledger", "llm", "post_invoice"],
        failure="post_invoice",
    ),
]
