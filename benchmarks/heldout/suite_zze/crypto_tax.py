"""Cryptocurrency tax reports (openai_agents route): a tax desk hands a client to a gains calculator,
which pulls exchange trades, FX rates and staking income (an income classifier agent as a tool), and files."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from . import kit
from .common import Agent, Case

FX = {f"2025-{m:02d}": r for m, r in zip(range(1, 13), (1.04, 1.05, 1.08, 1.13, 1.13, 1.15, 1.17, 1.16, 1.17,
                                                         1.16, 1.15, 1.17))}
FX.update({f"2024-{m:02d}": 1.08 for m in range(1, 13)})
FX_LATEST = 1.18
PAGE = 4


def _t(day: str, side: str, asset: str, qty: float, price: float) -> dict:
    return {"date": day, "side": side, "asset": asset, "qty": qty, "price_eur": price}


CLIENTS = {
    "CX-4410": {"name": "M. Okafor", "exchange": "Northwind", "wallet": "0x7a1c...e3", "trades": [
        _t("2024-11-03", "buy", "BTC", 0.40, 64000), _t("2025-01-14", "buy", "BTC", 0.20, 92000),
        _t("2025-02-20", "buy", "ETH", 3.0, 2600), _t("2025-04-09", "sell", "BTC", 0.30, 76000),
        _t("2025-06-18", "sell", "ETH", 1.5, 2300), _t("2025-09-02", "sell", "BTC", 0.20, 95000),
        _t("2025-11-21", "buy", "ETH", 1.0, 2900)],
        "staking": [("2025-03-31", 41.20), ("2025-06-30", 44.75), ("2025-09-30", 47.10), ("2025-12-31", 49.30)]},
    "CX-4432": {"name": "R. Lindqvist", "exchange": "Harbourline", "wallet": "0x19fe...0b", "trades": [
        _t("2024-08-12", "buy", "ETH", 5.0, 2400), _t("2025-01-30", "buy", "ETH", 2.0, 3100),
        _t("2025-03-11", "sell", "ETH", 4.0, 1900), _t("2025-05-27", "buy", "BTC", 0.10, 96000),
        _t("2025-08-14", "sell", "ETH", 2.0, 4000), _t("2025-10-06", "sell", "BTC", 0.05, 105000)],
        "staking": [("2025-06-30", 120.00), ("2025-12-31", 133.40)]},
    "CX-4451": {"name": "A. Ferreira", "exchange": "Northwind", "wallet": "0x55d0...91", "trades": [
        _t("2025-02-03", "buy", "BTC", 0.05, 95000), _t("2025-07-22", "sell", "BTC", 0.05, 101000)],
        "staking": []},
    "CX-4466": {"name": "J. Park", "exchange": "Harbourline", "wallet": "0x0c3b...7d", "trades": [
        _t("2025-01-09", "buy", "ETH", 2.0, 3200), _t("2025-03-19", "buy", "ETH", 1.0, 1800),
        _t("2025-05-05", "sell", "ETH", 2.5, 1700), _t("2025-12-01", "sell", "ETH", 0.5, 2800),
        _t("2025-12-15", "buy", "BTC", 0.02, 74000)],
        "staking": [("2025-12-31", 18.90)]},
    "CX-4478": {"name": "S. Nakamura", "exchange": "Northwind", "wallet": "0xa4e2...10", "trades": [
        _t("2024-12-20", "buy", "BTC", 0.10, 92000), _t("2025-04-28", "sell", "BTC", 0.10, 84000)],
        "staking": [("2025-09-30", 12.00)]},
    "CX-4490": {"name": "P. Dubois", "exchange": "Harbourline", "wallet": "0x8810...c2", "trades": [
        _t("2025-03-03", "buy", "ETH", 1.0, 2000), _t("2025-03-24", "buy", "ETH", 1.0, 1900),
        _t("2025-06-10", "buy", "BTC", 0.03, 95000), _t("2025-08-08", "sell", "ETH", 1.5, 3700),
        _t("2025-10-30", "sell", "BTC", 0.03, 98000)],
        "staking": [("2025-06-30", 7.25), ("2025-12-31", 8.05)]},
}


class ReportRejected(Exception):
    """The tax authority's e-filing error answer."""


def fifo(trades: list[dict], fx: dict[str, float], year: str, start: int = 0) -> dict:
    lots: dict[str, list[list[float]]] = {}
    proceeds = cost = 0.0
    for t in sorted(trades, key=lambda t: t["date"])[start:]:
        rate = fx[t["date"][:7]]
        if t["side"] == "buy":
            lots.setdefault(t["asset"], []).append([t["qty"], t["price_eur"] * rate])
            continue
        queue = lots.get(t["asset"], [])
        left = t["qty"]
        while left > 1e-12 and queue:
            take = min(left, queue[0][0])
            if t["date"].startswith(year):
                cost += take * queue[0][1]
            queue[0][0] -= take
            left -= take
            if queue[0][0] <= 1e-12:
                queue.pop(0)
        if t["date"].startswith(year):
            proceeds += t["qty"] * t["price_eur"] * rate
    return {"proceeds_usd": round(proceeds, 2), "cost_basis_usd": round(cost, 2), "gain_usd": round(proceeds - cost, 2)}


def authority_figures(client: str, year: str) -> dict:
    c = CLIENTS[client]
    fig = fifo(c["trades"], FX, year)
    fig["staking_income_usd"] = round(sum(v for d, v in c["staking"] if d.startswith(year)), 2)
    return fig


def _tools() -> dict[str, Any]:
    from agents import function_tool

    @function_tool
    def load_client_profile(client_id: str) -> str:
        """The client's profile: exchange account and staking wallet."""
        c = CLIENTS[client_id]
        return json.dumps({"client_id": client_id, "name": c["name"], "exchange": c["exchange"], "wallet": c["wallet"]})

    @function_tool
    def fetch_exchange_trades(client_id: str, exchange: str, year: int, page: int) -> str:
        """Trades of a client's exchange account in a tax year (paged, with the lots carried in)."""
        c = CLIENTS[client_id]
        rows = [t for t in c["trades"] if t["date"][:4] <= str(year)]
        chunk = rows[(page - 1) * PAGE: page * PAGE]
        more = page * PAGE < len(rows)
        if kit.active("tax.truncated_result"):
            more = False
        return json.dumps({"exchange": exchange, "year": year, "page": page, "trades": chunk, "has_more": more})

    @function_tool
    def get_fx_rate(currency: str, month: str) -> str:
        """EUR->USD monthly average rate (month as YYYY-MM)."""
        rate = FX_LATEST if kit.active("tax.tool_ignores_argument") else FX[month]
        return json.dumps({"pair": f"{currency}/USD", "month": month, "rate": rate})

    @function_tool
    def compute_lot_gains(trades_json: str, fx_json: str, year: int) -> str:
        """FIFO gains for the tax year from trades (JSON list) and monthly FX rates (JSON object)."""
        trades, fx = json.loads(trades_json), json.loads(fx_json)
        return json.dumps(fifo(trades, fx, str(year), start=1 if kit.active("tax.off_by_one") else 0))

    @function_tool
    def fetch_staking_rewards(wallet: str, year: int) -> str:
        """Staking rewards paid to a wallet in a year, valued in USD at receipt."""
        c = next(c for c in CLIENTS.values() if c["wallet"] == wallet)
        return json.dumps({"wallet": wallet, "rewards": [{"date": d, "usd": v} for d, v in c["staking"]
                                                         if d.startswith(str(year))]})

    def _file(client_id: str, year: int, proceeds_usd: float, cost_basis_usd: float, gain_usd: float,
              staking_income_usd: float) -> str:
        """File Form 8949 / Schedule D figures and staking income with the e-filing service."""
        fig = authority_figures(client_id, str(year))
        got = {"proceeds_usd": proceeds_usd, "cost_basis_usd": cost_basis_usd, "gain_usd": gain_usd,
               "staking_income_usd": staking_income_usd}
        errors = [f"{k} {got[k]:,.2f} does not match the 1099-DA / 1099-MISC figure {fig[k]:,.2f}"
                  for k in ("proceeds_usd", "cost_basis_usd", "staking_income_usd") if abs(got[k] - fig[k]) > 0.5]
        if errors:
            raise ReportRejected("HTTP 422 Unprocessable Entity: " + json.dumps({"client": client_id,
                                                                                 "errors": errors}))
        return json.dumps({"status": "accepted", "confirmation": f"EF-{client_id[3:]}-{year}"})

    file_tax_report = function_tool(_file, name_override="file_tax_report", failure_error_function=None)
    return {f.name: f for f in (load_client_profile, fetch_exchange_trades, get_fx_rate, compute_lot_gains,
                                fetch_staking_rewards, file_tax_report)}


# ---- the model ---------------------------------------------------------------------------------------


def _history(body: dict) -> tuple[str, list[tuple[str, Any, Any]]]:
    msgs = body.get("messages") or []
    system = next((m.get("content") or "" for m in msgs if m.get("role") == "system"), "")
    calls: dict[str, tuple[str, Any]] = {}
    done: list[tuple[str, Any, Any]] = []
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            calls[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}"))
        if m.get("role") == "tool":
            name, args = calls.get(m.get("tool_call_id"), ("?", {}))
            try:
                out = json.loads(m.get("content") or "null")
            except ValueError:
                out = m.get("content")
            done.append((name, args, out))
    return system, done


def _user(body: dict) -> str:
    for m in body.get("messages") or []:
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def policy(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    body = request.body
    system, done = _history(body)
    names = [n for n, _, _ in done]
    if system.startswith("TAX DESK"):
        if "load_client_profile" not in names:
            client = json.loads(_user(body))["client_id"]
            return Reply(tool_calls=(tool_call("load_client_profile", {"client_id": client}),))
        if not any(n.startswith("transfer_to") for n in names):
            return Reply(tool_calls=(tool_call("transfer_to_gains_calculator", {}),))
        return "Handed over."
    if system.startswith("INCOME CLASSIFIER"):
        ask = json.loads(_user(body)) if _user(body).startswith("{") else {}
        if "fetch_staking_rewards" not in names:
            return Reply(tool_calls=(tool_call("fetch_staking_rewards", {"wallet": ask["wallet"], "year": ask["year"]}),))
        rewards = [o for n, _, o in done if n == "fetch_staking_rewards"][-1]["rewards"]
        return json.dumps({"staking_income_usd": round(sum(r["usd"] for r in rewards), 2), "rewards": len(rewards)})
    # gains calculator
    task = json.loads(_user(body))
    client, year = task["client_id"], task["year"]
    prof = next(o for n, _, o in done if n == "load_client_profile")
    pages = [o for n, _, o in done if n == "fetch_exchange_trades"]
    if not pages or pages[-1]["has_more"]:
        ask_year = year - 1 if kit.active("tax.wrong_tool_args") else year
        return Reply(tool_calls=(tool_call("fetch_exchange_trades", {"client_id": client, "exchange": prof["exchange"],
                                                                     "year": ask_year, "page": len(pages) + 1}),))
    trades = [t for p in pages for t in p["trades"]]
    rates = {o["month"]: o["rate"] for n, _, o in done if n == "get_fx_rate"}
    months = sorted({t["date"][:7] for t in trades})
    missing = [m for m in months if m not in rates]
    if missing:
        return Reply(tool_calls=(tool_call("get_fx_rate", {"currency": "EUR", "month": missing[0]}),))
    if "compute_lot_gains" not in names:
        return Reply(tool_calls=(tool_call("compute_lot_gains", {"trades_json": json.dumps(trades),
                                                                  "fx_json": json.dumps(rates), "year": year}),))
    if "income_classifier" not in names:
        return Reply(tool_calls=(tool_call("income_classifier", {"input": json.dumps(
            {"wallet": prof["wallet"], "year": year})}),))
    if "file_tax_report" not in names:
        gains = next(o for n, _, o in done if n == "compute_lot_gains")
        inc = next(o for n, _, o in done if n == "income_classifier")
        income = json.loads(inc)["staking_income_usd"] if isinstance(inc, str) else inc["staking_income_usd"]
        if kit.active("tax.hallucinated_value"):
            income = 1200.00
        return Reply(tool_calls=(tool_call("file_tax_report", {"client_id": client, "year": year, **{
            k: gains[k] for k in ("proceeds_usd", "cost_basis_usd", "gain_usd")}, "staking_income_usd": income}),))
    return "Report filed."


def record(inp: dict, out: Path, base_url: str) -> None:
    from agents import Agent as SdkAgent
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner, set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    out.unlink(missing_ok=True)
    proc = TrajdebugProcessor(path=str(out), name="crypto-tax-reports", task=f"{inp['client_id']} {inp['year']}")
    set_trace_processors([proc])
    client = AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    t = _tools()
    classifier = SdkAgent(name="Income classifier", model=model, tools=[t["fetch_staking_rewards"]],
                          instructions="INCOME CLASSIFIER. Total the staking income of the wallet for the year; "
                                       "answer JSON with staking_income_usd.")
    gains = SdkAgent(name="Gains calculator", model=model,
                     instructions="GAINS CALCULATOR. Pull all trades, the FX rate of every month, compute FIFO "
                                  "gains, get staking income from the income classifier, then file the report.",
                     tools=[t["fetch_exchange_trades"], t["get_fx_rate"], t["compute_lot_gains"],
                            classifier.as_tool(tool_name="income_classifier",
                                               tool_description="Classify and total staking income."),
                            t["file_tax_report"]])
    desk = SdkAgent(name="Tax desk", model=model, tools=[t["load_client_profile"]], handoffs=[gains],
                    instructions="TAX DESK. Load the client's profile, then hand off to the gains calculator.")
    async def main() -> None:
        try:
            await Runner.run(desk, json.dumps(inp), run_config=RunConfig(workflow_name="crypto-tax-reports"),
                             max_turns=40)
        finally:
            await client.close()

    try:
        asyncio.run(main())
    except ReportRejected:
        pass
    except Exception as e:  # the SDK may wrap the tool's exception
        if "HTTP 422" not in str(e):
            raise


INPUTS = {k: {"client_id": k, "year": 2025} for k in CLIENTS}

AGENT = Agent(
    name="crypto_tax", module="crypto_tax.py", route="openai_agents", domain="cryptocurrency tax reports",
    shape="Agents SDK: tax desk (profile tool) -> hand-off -> gains calculator (paged trades loop, FX rate per "
          "month loop, FIFO tool, income classifier agent-as-tool with its own tool) -> file_tax_report",
    inputs=INPUTS, refs=("CX-4451", "CX-4466", "CX-4478", "CX-4490"), policy=policy, record=record,
    cases=(
        Case("zze_tax_01", "tax.wrong_tool_args", "wrong_tool_args", "CX-4410", ("generation gpt-4o-mini", 3, "llm"),
             ("file_tax_report", 1), "The gains calculator asks the exchange for the prior tax year's trades."),
        Case("zze_tax_02", "tax.tool_ignores_argument", "tool_ignores_argument", "CX-4410", ("get_fx_rate", 1, "tool"),
             ("file_tax_report", 1), "The FX tool answers the latest rate whatever month it is asked for."),
        Case("zze_tax_03", "tax.off_by_one", "off_by_one", "CX-4432", ("compute_lot_gains", 1, "tool"),
             ("file_tax_report", 1), "The FIFO tool starts its loop at the second trade, losing the carried-in lot."),
        Case("zze_tax_04", "tax.truncated_result", "truncated_result", "CX-4410", ("fetch_exchange_trades", 1, "tool"),
             ("file_tax_report", 1), "The first page of trades says there are no more pages while there are."),
        Case("zze_tax_05", "tax.hallucinated_value", "hallucinated_value", "CX-4432", ("generation gpt-4o-mini", 15, "llm"),
             ("file_tax_report", 1), "The model files a staking income figure that no tool result holds."),
    ),
)
