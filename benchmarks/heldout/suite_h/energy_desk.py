"""Day-ahead energy trading (route: otlp): a desk bids a small portfolio's output into tomorrow's auction.

The openai client is instrumented by OpenInference and every step is an OpenTelemetry span, exported
as OTLP JSON.  A model plans the session; the desk then runs the planned phases: fetch each plant's
generation forecast and normalize it to MW per 4-hour block, fetch the price curve and price the
blocks, read the bilateral contracts already sold, have a model set the markup, build and risk-check
the bids, and submit one bid per block to the exchange.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from benchmarks.heldout.suite_h._common import Agent, Fault, ModelReplyError, Otlp, active, last_user
from openai import OpenAI


NAME = "energy-desk"
PHASES = ["fetch_forecast", "fetch_prices", "check_positions", "build_bids", "submit_bids"]
BLOCKS = 6  # 4-hour blocks of the delivery day
CAPACITY_MW = 180.0

# plant -> (unit, per-block output in that unit)
PLANTS: dict[str, tuple[str, list[float]]] = {
    "wind-north": ("MW", [30, 35, 40, 45, 38, 32]),
    "solar-east": ("kW", [0, 8000, 42000, 38000, 6000, 0]),
    "hydro-river": ("MW", [20, 20, 20, 20, 20, 20]),
    "wind-coast": ("MW", [55, 50, 44, 41, 47, 52]),
    "solar-south": ("kW", [0, 12000, 51000, 47000, 9000, 0]),
    "biogas-farm": ("MW", [8, 8, 8, 8, 8, 8]),
}
HOURLY = [61.0, 58.5, 55.2, 54.8, 57.9, 66.3, 79.4, 88.1, 91.6, 84.2, 73.5, 66.8,
          62.1, 60.4, 63.9, 71.7, 86.5, 98.2, 104.6, 97.3, 88.9, 79.5, 71.2, 65.0]
PREVIOUS_DAY = [52.0, 49.8, 47.1, 46.5, 48.2, 55.0, 63.3, 70.2, 72.8, 68.1, 60.4, 55.3,
                51.9, 50.2, 52.8, 56.0, 55.4, 58.9, 60.8, 58.1, 60.2, 55.4, 50.9, 48.7]  # a mild, windy day
# contract id -> (block index, MW), by portfolio
CONTRACTS: dict[str, dict[str, tuple[int, float]]] = {
    "north": {"BC-101": (0, 10.0), "BC-102": (1, 12.0), "BC-103": (2, 25.0), "BC-104": (2, 15.0), "BC-105": (4, 8.0)},
    "coast": {"BC-201": (1, 20.0), "BC-202": (3, 10.0)},
    "south": {"BC-301": (2, 30.0)},
    "mixed": {"BC-401": (0, 5.0), "BC-402": (5, 5.0)},
}


class ExchangeRejected(RuntimeError):
    """The power exchange refused a bid."""


class RiskLimitBreached(RuntimeError):
    """The desk's own risk check stopped the session."""


for _cls in (ExchangeRejected, RiskLimitBreached):
    _cls.__module__ = "desk.errors"  # how the desk's service names them in its traces


def fetch_forecast(plant: str) -> dict[str, Any]:
    unit, values = PLANTS[plant]
    return {"plant": plant, "unit": unit, "blocks": values}


def normalize_forecast(forecasts: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for f in forecasts:
        scale = 1000.0 if f["unit"] == "kW" and not active("energy-kw-units") else 1.0
        out[f["plant"]] = [round(v / scale, 1) for v in f["blocks"]]
    return {"mw": out, "total_mw": [round(sum(v[b] for v in out.values()), 1) for b in range(BLOCKS)]}


def fetch_prices(day: str) -> dict[str, Any]:
    if active("energy-curve-previous"):
        return {"day": day, "hourly_eur_mwh": PREVIOUS_DAY}  # the price service's cache of the last auction
    return {"day": day, "hourly_eur_mwh": HOURLY}


def price_blocks(curve: dict[str, Any]) -> dict[str, Any]:
    hours = curve["hourly_eur_mwh"]
    count = BLOCKS - 1 if active("energy-last-block") else BLOCKS
    prices = [round(sum(hours[b * 4 : b * 4 + 4]) / 4, 2) for b in range(count)]
    return {"priced_blocks": len(prices), "indicative": prices}


def check_positions(portfolio: str) -> dict[str, Any]:
    rows = [{"contract": c, "block": b, "mw": mw} for c, (b, mw) in CONTRACTS[portfolio].items()]
    if active("energy-contract-page"):
        rows = rows[:3]  # the trading system's first page of contracts
    return {"portfolio": portfolio, "contracts": rows, "count": len(rows)}


def parse_strategy(text: str) -> dict[str, Any]:
    return {"markup": float(re.findall(r"markup ([\d.]+)%", text)[0]) / 100}


def build_bids(forecast: dict[str, Any], prices: dict[str, Any], positions: dict[str, Any],
               strategy: dict[str, Any]) -> list[dict[str, Any]]:
    sold = [0.0] * BLOCKS
    for row in positions.get("contracts", []):
        sold[row["block"]] += row["mw"]
    indicative = prices["indicative"]
    bids = []
    for b in range(BLOCKS):
        price = indicative[b] * (1 + strategy["markup"]) if b < len(indicative) else 0.0
        bids.append({"block": b, "mw": round(forecast["total_mw"][b] - sold[b], 1), "limit_eur_mwh": round(price, 2)})
    return bids


def risk_check(bids: list[dict[str, Any]]) -> dict[str, Any]:
    for bid in bids:
        if bid["mw"] > CAPACITY_MW:
            raise RiskLimitBreached(f"block {bid['block']}: offered {bid['mw']:,.1f} MW exceeds the portfolio "
                                    f"capacity of {CAPACITY_MW:.0f} MW")
    return {"bids": len(bids), "max_mw": max(b["mw"] for b in bids)}


def submit_bid(portfolio: str, bid: dict[str, Any], availability: float) -> dict[str, Any]:
    """The exchange: firm volume within what the grid operator declared available, price near indicative."""
    b = bid["block"]
    sold = sum(mw for blk, mw in CONTRACTS[portfolio].values() if blk == b)
    if bid["mw"] + sold > availability + 0.05:
        raise ExchangeRejected(f"block {b}: {bid['mw']:.1f} MW offered plus {sold:.1f} MW sold exceed the "
                               f"{availability:.1f} MW available")
    indicative = sum(HOURLY[b * 4 : b * 4 + 4]) / 4
    if abs(bid["limit_eur_mwh"] - indicative) > 0.3 * indicative:
        raise ExchangeRejected(f"block {b}: limit price {bid['limit_eur_mwh']:.2f} EUR/MWh is outside 30% of the "
                               f"indicative {indicative:.2f}")
    return {"block": b, "order": f"DA-{portfolio[:2].upper()}-{b}", "status": "accepted"}


def ask(client: OpenAI, system: str, prompt: str) -> str:
    reply = client.chat.completions.create(model="fake-model", messages=[
        {"role": "system", "content": system}, {"role": "user", "content": prompt}])
    return reply.choices[0].message.content or ""


def load_portfolio(portfolio: str, plants: list[str]) -> dict[str, Any]:
    return {"portfolio": portfolio, "plants": plants, "capacity_mw": CAPACITY_MW, "market": "day-ahead"}


def session(client: OpenAI, item: dict[str, Any]) -> None:
    ot = Otlp.get()
    ot.step("load_portfolio", "TOOL", {"portfolio": item["portfolio"]},
            lambda: load_portfolio(item["portfolio"], item["plants"]))
    text = ask(client, "You plan day-ahead trading sessions as JSON.", f"Plan the session for {item['portfolio']}. "
               f"Phases: {', '.join(PHASES)}.")
    plan = ot.step("parse_plan", "CHAIN", text, lambda: json.loads(text)["steps"])
    got: dict[str, Any] = {"positions": {"contracts": []}}
    for phase in plan:
        if phase == "fetch_forecast":
            raw = [ot.step("fetch_forecast", "TOOL", {"plant": p}, lambda p=p: fetch_forecast(p)) for p in item["plants"]]
            got["forecast"] = ot.step("normalize_forecast", "CHAIN", raw, lambda raw=raw: normalize_forecast(raw))
        elif phase == "fetch_prices":
            curve = ot.step("fetch_prices", "TOOL", {"day": item["day"]}, lambda: fetch_prices(item["day"]))
            got["prices"] = ot.step("price_blocks", "CHAIN", curve, lambda curve=curve: price_blocks(curve))
        elif phase == "check_positions":
            got["positions"] = ot.step("check_positions", "TOOL", {"portfolio": item["portfolio"]},
                                       lambda: check_positions(item["portfolio"]))
        elif phase == "build_bids":
            advice = ask(client, "You set bid markups.", f"Markup for {item['portfolio']} tomorrow?")
            strategy = ot.step("parse_strategy", "CHAIN", advice, lambda advice=advice: parse_strategy(advice))
            got["bids"] = ot.step("build_bids", "CHAIN", strategy, lambda strategy=strategy: build_bids(
                got["forecast"], got["prices"], got["positions"], strategy))
            ot.step("risk_check", "GUARDRAIL", got["bids"], lambda: risk_check(got["bids"]))
        elif phase == "submit_bids":
            for bid in got["bids"]:
                available = got["forecast"]["total_mw"][bid["block"]]
                ot.step("submit_bid", "TOOL", bid, lambda bid=bid, a=available: submit_bid(item["portfolio"], bid, a))


def policy(request: Any) -> str:
    prompt = last_user(request)
    if prompt.startswith("Plan the session"):
        phases = [p for p in PHASES if not (active("energy-plan-positions") and p == "check_positions")]
        return json.dumps({"steps": phases})
    if prompt.startswith("Markup for"):
        return "Use a markup 4% over indicative: evening scarcity is priced in."
    raise ModelReplyError(prompt)


def record(server: Any, item: dict[str, Any], path: Path) -> None:
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    task = f"bid portfolio {item['portfolio']} into the day-ahead auction for {item['day']}"
    Otlp.get().record(NAME, path, task, lambda: session(client, item))
    client.close()


AGENT = Agent(
    name=NAME,
    route="otlp",
    domain="energy trading",
    record=record,
    failing={"portfolio": "north", "day": "2026-12-03", "plants": ["wind-north", "solar-east", "hydro-river"]},
    references=(
        {"portfolio": "coast", "day": "2026-12-03", "plants": ["wind-coast", "biogas-farm"]},
        {"portfolio": "south", "day": "2026-12-03", "plants": ["solar-south", "hydro-river", "biogas-farm"]},
        {"portfolio": "mixed", "day": "2026-12-04", "plants": ["wind-north", "biogas-farm"]},
        {"portfolio": "coast", "day": "2026-12-04", "plants": ["wind-coast", "solar-east"]},
    ),
    faults=(
        Fault("energy-kw-units", "unit_error", "normalize_forecast", "42000.0", "risk_check",
              "normalize_forecast leaves the solar plant's kW forecast unconverted, so the bids offer thousands "
              "of MW and the risk check stops the session."),
        Fault("energy-contract-page", "truncated_result", "check_positions", '"count": 3', "submit_bid",
              "check_positions returns only the first page of bilateral contracts, so contracted volume is sold "
              "twice and the exchange refuses the block's bid."),
        Fault("energy-last-block", "off_by_one", "price_blocks", '"priced_blocks": 5', "submit_bid",
              "price_blocks prices only the first five of six blocks, so the last block is bid at a limit price "
              "of 0 that the exchange refuses."),
        Fault("energy-plan-positions", "plan_error", "ChatCompletion", '"fetch_prices", "build_bids"', "submit_bid",
              "The session planner drops the check_positions phase, so volume already sold bilaterally is offered "
              "again and the exchange refuses the first block."),
        Fault("energy-curve-previous", "stale_data", "fetch_prices", "52.0, 49.8", "submit_bid",
              "fetch_prices returns the previous auction's price curve for tomorrow, so the evening blocks are "
              "priced far under the exchange's indicative price and refused."),
    ),
)
