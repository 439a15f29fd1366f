"""Freight quoting agent (LangGraph ReAct, logistics and shipping).

Given a shipment and the customer account, the agent reads the booking,
looks up the lane tariff for the shipment's weight, converts the euro price
to dollars and files the quote.  The quoting service re-prices the shipment
on its own and rejects quotes that are off or filed against the wrong booking.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.tools import tool

from sb.fakellm import Conversation, Reply, call, say
from sb.harness import Case, failing, faulty, tick
from sb.lgkit import ask, invoke, react_graph


AGENT = "freight-quoter"
ROUTE = "langgraph"
DOMAIN = "logistics and shipping"

SHIPMENTS = {
    "SHP-80913": {"account": "ACC-1190", "lane": "HAM-RTM", "pieces": 4, "weight_kg": 840.0},
    "SHP-80931": {"account": "ACC-0277", "lane": "MAD-LIS", "pieces": 7, "weight_kg": 1210.0},
    "SHP-71550": {"account": "ACC-3302", "lane": "GDN-HAM", "pieces": 9, "weight_kg": 2310.0},
    "SHP-66012": {"account": "ACC-1190", "lane": "RTM-ANR", "pieces": 1, "weight_kg": 95.0},
    "SHP-55478": {"account": "ACC-5120", "lane": "MIL-LYS", "pieces": 12, "weight_kg": 4600.0},
    "SHP-90021": {"account": "ACC-0277", "lane": "HAM-RTM", "pieces": 2, "weight_kg": 310.0},
    "SHP-44309": {"account": "ACC-8800", "lane": "LIS-MAD", "pieces": 6, "weight_kg": 1480.0},
    "SHP-38817": {"account": "ACC-3302", "lane": "ANR-HAM", "pieces": 3, "weight_kg": 760.0},
    "SHP-29930": {"account": "ACC-5120", "lane": "RTM-GDN", "pieces": 10, "weight_kg": 3120.0},
    "SHP-12004": {"account": "ACC-8800", "lane": "MIL-LYS", "pieces": 5, "weight_kg": 455.0},
}
LANE_FACTOR = {
    "HAM-RTM": 1.0,
    "MAD-LIS": 0.85,
    "GDN-HAM": 1.1,
    "RTM-ANR": 0.7,
    "MIL-LYS": 1.3,
    "LIS-MAD": 0.85,
    "ANR-HAM": 0.95,
    "RTM-GDN": 1.15,
}
BRACKETS = [(0, 100, 0.92), (100, 500, 0.61), (500, 1000, 0.44), (1000, 3000, 0.33), (3000, 20000, 0.27)]
MIN_CHARGE_EUR = 85.0
EURUSD_LIVE = {"rate": 1.0874, "as_of": "2025-06-11T09:00:00Z"}
EURUSD_CACHED = {"rate": 0.9581, "as_of": "2022-10-11T09:00:00Z"}
LB_PER_KG = 2.20462


def _bracket(weight: float) -> tuple[str, float]:
    for lo, hi, rate in BRACKETS:
        if lo <= weight < hi:
            return f"{lo}-{hi} kg", rate
    raise ValueError(f"no tariff bracket for {weight} kg")


def _price_eur(lane: str, weight: float) -> float:
    _, rate = _bracket(weight)
    return max(MIN_CHARGE_EUR, round(rate * LANE_FACTOR[lane] * weight, 2))


@tool
def get_shipment(shipment_id: str) -> str:
    """The booking record of a shipment: account, lane, pieces and gross weight in kg."""
    tick("get_shipment")
    rec = dict(SHIPMENTS[shipment_id])
    if faulty("manifest_pounds", "get_shipment"):
        rec["weight_kg"] = round(rec["weight_kg"] * LB_PER_KG, 1)  # carrier manifest weight, which is in lb
    return json.dumps({"shipment_id": shipment_id, **rec})


@tool
def lane_tariff(lane: str, weight_kg: float) -> str:
    """The euro tariff of a lane for a given weight: per-kg rate of the matching weight bracket and minimum charge."""
    tick("lane_tariff")
    if faulty("tariff_ignores_weight", "lane_tariff"):
        bracket, rate = "0-100 kg", BRACKETS[0][2]  # bracket lookup skipped: always the first row
    else:
        bracket, rate = _bracket(weight_kg)
    return json.dumps(
        {
            "lane": lane,
            "currency": "EUR",
            "bracket": bracket,
            "rate_per_kg": round(rate * LANE_FACTOR[lane], 4),
            "min_charge": MIN_CHARGE_EUR,
        }
    )


@tool
def fx_rate(base: str, quote: str) -> str:
    """The exchange rate base->quote."""
    tick("fx_rate")
    src = EURUSD_CACHED if faulty("fx_cache_stale", "fx_rate") else EURUSD_LIVE
    return json.dumps({"pair": f"{base}/{quote}", **src})


@tool
def create_quote(shipment_id: str, account: str, amount_usd: float) -> str:
    """File a customer quote in USD for a shipment."""
    tick("create_quote")
    rec = SHIPMENTS[shipment_id]
    if rec["account"] != account:
        failing("create_quote")
        raise PermissionError(
            f"quote refused: {shipment_id} was booked by {rec['account']}, not by {account}"
        )
    expected = round(_price_eur(rec["lane"], rec["weight_kg"]) * EURUSD_LIVE["rate"], 2)
    drift = abs(amount_usd - expected) / expected
    if drift > 0.02:
        failing("create_quote")
        raise ValueError(
            f"quote for {shipment_id} is USD {amount_usd:,.2f}; the pricing engine says USD {expected:,.2f} "
            f"({drift:.1%} apart, tolerance 2%)"
        )
    return json.dumps(
        {"quote_id": f"Q-{shipment_id[4:]}-{account[4:]}", "amount_usd": amount_usd, "valid_days": 14}
    )


TOOLS = [get_shipment, lane_tariff, fx_rate, create_quote]
SYSTEM = (
    "You are a freight quoting assistant. Read the shipment, get the lane tariff for its weight, price it in "
    "EUR as max(min_charge, rate_per_kg * weight), convert to USD with the current rate, and file the quote."
)


def _misread(sid: str) -> str:
    return sid[:-2] + sid[-1] + sid[-2]


def policy(conv: Conversation) -> Reply:
    t = conv.task
    if conv.called("get_shipment") == 0:
        if conv.fault == "misread_shipment_id":
            return call("get_shipment", faulty=True, shipment_id=_misread(t["shipment_id"]))
        return call("get_shipment", shipment_id=t["shipment_id"])
    shp = conv.result("get_shipment")
    if conv.called("lane_tariff") == 0:
        return call("lane_tariff", lane=shp["lane"], weight_kg=shp["weight_kg"])
    if conv.called("fx_rate") == 0:
        return call("fx_rate", base="EUR", quote="USD")
    if conv.called("create_quote") == 0:
        tariff, fx = conv.result("lane_tariff"), conv.result("fx_rate")
        eur = max(tariff["min_charge"], round(tariff["rate_per_kg"] * shp["weight_kg"], 2))
        return call(
            "create_quote",
            shipment_id=shp["shipment_id"],
            account=t["account"],
            amount_usd=round(eur * fx["rate"], 2),
        )
    q = conv.result("create_quote")
    return say(f"Quote {q['quote_id']} filed: USD {q['amount_usd']:,.2f}, valid {q['valid_days']} days.")


APP = react_graph(SYSTEM, TOOLS)


def run(task: dict[str, Any], path: Path) -> Any:
    text = f"Customer {task['account']} asks for a USD price on shipment {task['shipment_id']}. {task.get('note', '')}".strip()
    return invoke(APP, ask(text), path, run_name="freight-quote", tags=[task["account"]])


def _t(sid: str, note: str = "") -> dict[str, Any]:
    return {"shipment_id": sid, "account": SHIPMENTS[sid]["account"], "note": note}


PASSING = [
    _t("SHP-71550", "Urgent, they want it today."),
    _t("SHP-66012"),
    _t("SHP-90021", "Repeat customer."),
    _t("SHP-44309"),
    _t("SHP-12004", "Send by email afterwards."),
]

CASES = [
    Case(
        id="freight-manifest-pounds",
        task=_t("SHP-38817"),
        fault="manifest_pounds",
        fault_kind="unit_scale_error",
        description="get_shipment fills weight_kg from the carrier manifest, which is in pounds (760 kg becomes "
        "1675.5). The model prices the heavier weight and the quoting service, re-pricing from the booking, "
        "rejects a quote far above its own.",
        root="get_shipment",
        evidence='"weight_kg": 1675.5',
        path=["get_shipment", "llm", "create_quote"],
        failure="create_quote",
    ),
    Case(
        id="freight-misread-shipment",
        task=_t("SHP-80913", "They mentioned the Hamburg pallets."),
        fault="misread_shipment_id",
        fault_kind="wrong_tool_arguments",
        description="The model swaps the last two digits and fetches SHP-80931, another customer's booking, prices "
        "it and files the quote under that id; the quoting service refuses because SHP-80931 belongs to ACC-0277.",
        root="llm",
        evidence="SHP-80931",
        path=["llm", "get_shipment", "llm", "create_quote"],
        failure="create_quote",
    ),
    Case(
        id="freight-stale-fx",
        task=_t("SHP-55478"),
        fault="fx_cache_stale",
        fault_kind="stale_data",
        description="fx_rate serves EUR/USD from a cache entry of October 2022 (0.9581 instead of 1.0874). The "
        "converted quote is about 12% low and the quoting service rejects it.",
        root="fx_rate",
        evidence="0.9581",
        path=["fx_rate", "llm", "create_quote"],
        failure="create_quote",
    ),
    Case(
        id="freight-tariff-ignores-weight",
        task=_t("SHP-29930"),
        fault="tariff_ignores_weight",
        fault_kind="tool_ignores_argument",
        description="lane_tariff ignores weight_kg and always returns the 0-100 kg bracket, whose per-kg rate is "
        "more than three times the rate for 3 t; the quote is far too high and is rejected.",
        root="lane_tariff",
        evidence="0-100 kg",
        path=["lane_tariff", "llm", "create_quote"],
        failure="create_quote",
    ),
]
