"""Reel Props warehouse: a hire desk on the OpenAI Agents SDK (Chat Completions), recorded by TrajdebugProcessor.

Shape: a desk agent that fans out parallel catalogue searches, then parallel stock checks, consults a
period-advisor sub-agent (an agent used as a tool, with its own lookup tool), then hands off to a quote
agent that prices from the rate card and books the hire in the warehouse system.  ~20-30 steps.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re

from agents.exceptions import UserError
from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool,
                    set_tracing_disabled)
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from suite_common import messages_of, system_of, text_of

NAME = "reel-props-hire"
ROUTE = "openai_agents"
DOMAIN = "film prop-hire warehouse"
SHAPE = "desk agent: parallel catalogue searches -> parallel stock checks -> period-advisor sub-agent (as tool) -> hand-off to quote agent: rate card -> book_hire"

SEARCH_ARCHIVE_FIRST = False
WEEKLY_RATE_AS_DAILY = False
ADVISOR_CHECKS_SIBLING = False
STOCK_DATES_FROM_RETURN = False
SCANNER_TIMEOUT_SWALLOWED = False

CATALOGUE = {
    "rotary telephone": [("TEL-0192", "Bakelite rotary telephone, black, 1950s", "1950s")],
    "ship's wheel": [("NAU-0440", "Brass-hubbed oak ship's wheel, 36 in", "1890s")],
    "oil lamp": [("LMP-0031", "Victorian brass oil lamp, glass chimney", "1870s"),
                 ("LMP-0031A", "Victorian brass oil lamp, archive collection", "1870s")],
    "typewriter": [("TYP-0807", "Olivetti portable typewriter, teal", "1960s"),
                   ("TYP-0808", "Olivetti portable typewriter, red", "1960s")],
    "jukebox": [("JUK-0004", "Wurlitzer-style jukebox, working lights", "1950s")],
    "gas mask": [("MIL-0213", "Civilian gas mask with canvas bag", "1940s")],
    "gramophone": [("GRM-0118", "Horn gramophone, mahogany case", "1910s")],
    "cash register": [("REG-0050", "Brass cash register, crank handle", "1900s")],
}
DISPLAY_ONLY = {"LMP-0031A"}
STOCK = {"TEL-0192": 3, "NAU-0440": 1, "LMP-0031": 4, "LMP-0031A": 1, "TYP-0807": 2, "TYP-0808": 1,
         "JUK-0004": 1, "MIL-0213": 12, "GRM-0118": 2, "REG-0050": 1}
HOLDS = {"TYP-0808": ("2026-12-16", "2026-12-20"), "JUK-0004": ("2026-12-10", "2026-12-12"),
         "GRM-0118": ("2026-12-26", "2026-12-28")}
PENCILS: dict = {}
WEEKLY = {"TEL-0192": 70, "NAU-0440": 210, "LMP-0031": 56, "LMP-0031A": 56, "TYP-0807": 84, "TYP-0808": 84,
          "JUK-0004": 350, "MIL-0213": 21, "GRM-0118": 140, "REG-0050": 175}

INPUTS = [
    {"production": "Harbour Lights", "start": "2026-12-14", "end": "2026-12-18", "po_limit": 700,
     "items": [["rotary telephone", 1], ["ship's wheel", 1], ["oil lamp", 2]]},
    {"production": "The Night Desk", "start": "2026-12-17", "end": "2026-12-19", "po_limit": 300,
     "items": [["typewriter", 1], ["gas mask", 4]]},
    {"production": "Dance Hall Days", "start": "2026-12-13", "end": "2026-12-16", "po_limit": 600,
     "items": [["jukebox", 1], ["rotary telephone", 2], ["cash register", 1]]},
    {"production": "Blackout", "start": "2026-12-18", "end": "2026-12-22", "po_limit": 500,
     "items": [["gas mask", 6], ["gramophone", 1]]},
    {"production": "Scrivener", "start": "2026-12-10", "end": "2026-12-11", "po_limit": 250,
     "items": [["typewriter", 2], ["oil lamp", 1]]},
]
CASES = [
    {"id": "zzzc-props-archive", "input": 0, "switch": "SEARCH_ARCHIVE_FIRST", "fault_kind": "wrong_retrieval",
     "root": {"name": "search_catalogue", "occurrence": 3, "kind": "tool"},
     "failure": {"name": "book_hire", "occurrence": 1},
     "description": "The catalogue search for an oil lamp ranks the archive copy LMP-0031A first, a display-only piece the booking system will not hire out."},
    {"id": "zzzc-props-rates", "input": 3, "switch": "WEEKLY_RATE_AS_DAILY", "fault_kind": "unit_error",
     "root": {"name": "rate_card", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "book_hire", "occurrence": 1},
     "description": "The rate card returns each item's weekly rate in the per-day field, so the Blackout quote is seven times too high for its 500 EUR purchase order."},
    {"id": "zzzc-props-advisor", "input": 1, "switch": "ADVISOR_CHECKS_SIBLING", "fault_kind": "subagent_wrong_entity",
     "root": {"name": "period_advisor", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "book_hire", "occurrence": 1},
     "description": "The period advisor checks and names TYP-0808, the red sibling of the typewriter the desk found, and the desk books that one, which is on hold for 2026-12-16 to 2026-12-20."},
    {"id": "zzzc-props-dates", "input": 2, "switch": "STOCK_DATES_FROM_RETURN", "fault_kind": "wrong_tool_args",
     "root": {"name": "generation fake-model", "occurrence": 2, "kind": "llm"},
     "failure": {"name": "book_hire", "occurrence": 1},
     "description": "The desk model asks the stock check, which pencils each item in, for 2026-12-17 to 2026-12-20 instead of the shoot's own dates 2026-12-13 to 2026-12-16, so no pencil hold covers the shoot at booking."},
    {"id": "zzzc-props-scanner", "input": 4, "switch": "SCANNER_TIMEOUT_SWALLOWED", "fault_kind": "swallowed_error",
     "root": {"name": "check_stock", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "book_hire", "occurrence": 1},
     "description": "The stock check for the typewriter hits a shelf-scanner timeout and answers with the catalogue's nominal count of 2 instead of reporting it, though only one is on the shelf."},
]


# ---------------------------------------------------------------- the fake model's behaviour
def _tool_results(msgs):
    out = []
    for m in msgs:
        if m.get("role") == "tool":
            text = text_of(m)
            try:
                out.append(ast.literal_eval(text))
            except (ValueError, SyntaxError):
                out.append(text)
    return out


def policy(request):
    system = system_of(request)
    msgs = messages_of(request)
    results = _tool_results(msgs)
    first_user = next(text_of(m) for m in msgs if m.get("role") == "user")
    if system.startswith("You run the hire desk"):
        order = json.loads(first_user.split("Order:", 1)[1])
        found = [r for r in results if isinstance(r, dict) and "hits" in r]
        stock = [r for r in results if isinstance(r, dict) and "available" in r]
        advice = [r for r in results if isinstance(r, str) and r.startswith("ADVICE")]
        if not found:
            return Reply(tool_calls=tuple(tool_call("search_catalogue", {"query": q}) for q, _ in order["items"]))
        if not stock:
            start, end = order["start"], order["end"]
            if STOCK_DATES_FROM_RETURN:
                start, end = "2026-12-17", "2026-12-20"
            return Reply(tool_calls=tuple(
                tool_call("check_stock", {"sku": f["hits"][0]["sku"], "start": start, "end": end}) for f in found))
        if not advice:
            return Reply(tool_calls=(tool_call("period_advisor", {"input": json.dumps({"skus": [f["hits"][0]["sku"] for f in found]})}),))
        return Reply(tool_calls=(tool_call("transfer_to_quote_desk", {}),))
    if system.startswith("You confirm the period"):
        asked = json.loads(re.search(r"\{.*\}", first_user).group(0))["skus"]
        eras = [r for r in results if isinstance(r, dict) and "era" in r]
        if not eras:
            skus = list(asked)
            if ADVISOR_CHECKS_SIBLING:
                skus = ["TYP-0808" if s == "TYP-0807" else s for s in skus]
            return Reply(tool_calls=tuple(tool_call("era_lookup", {"sku": s}) for s in skus))
        return "ADVICE " + json.dumps({"cleared": [e["sku"] for e in eras], "eras": {e["sku"]: e["era"] for e in eras}})
    if system.startswith("You price and book"):
        order = json.loads(first_user.split("Order:", 1)[1])
        advice = next(json.loads(r[len("ADVICE "):]) for r in results if isinstance(r, str) and r.startswith("ADVICE"))
        stock = {r["sku"]: r for r in results if isinstance(r, dict) and "available" in r}
        rates = [r for r in results if isinstance(r, dict) and "per_day" in r]
        booked = [r for r in results if isinstance(r, dict) and "booking" in r]
        qty = {}
        for (q, n), sku in zip(order["items"], advice["cleared"]):
            qty[sku] = n
        if not rates:
            return Reply(tool_calls=(tool_call("rate_card", {"skus": list(qty), "days": order["days"]}),))
        if not booked:
            shelf = {s: stock.get(s, {}).get("available", n) for s, n in qty.items()}
            qty = {s: min(n, shelf[s]) for s, n in qty.items()}
            lines = [{"sku": s, "qty": n, "on_shelf": shelf[s]} for s, n in qty.items()]
            total = round(sum(rates[0]["per_day"][s] * n * order["days"] for s, n in qty.items()), 2)
            return Reply(tool_calls=(tool_call("book_hire", {"production": order["production"], "start": order["start"],
                                                             "end": order["end"], "lines": lines, "total_eur": total}),))
        return f"Booked {booked[0]['booking']} for {order['production']}: {booked[0]['total_eur']:.2f} EUR."
    return "I can only help with prop hire."


# ---------------------------------------------------------------- tools
@function_tool
def search_catalogue(query: str) -> dict:
    """Search the prop catalogue; best match first."""
    hits = [{"sku": s, "title": t, "era": e} for s, t, e in CATALOGUE[query]]
    if SEARCH_ARCHIVE_FIRST and query == "oil lamp":
        hits = hits[::-1]
    return {"query": query, "hits": hits}


def _overlaps(a0, a1, b0, b1):
    return not (a1 < b0 or b1 < a0)


@function_tool
def check_stock(sku: str, start: str, end: str) -> dict:
    """How many of a SKU are on the shelf and free between two dates."""
    try:
        if SCANNER_TIMEOUT_SWALLOWED and sku == "TYP-0807":
            raise TimeoutError("shelf scanner did not answer in 3 s")
        on_shelf = STOCK[sku] - (1 if sku == "TYP-0807" else 0)
    except TimeoutError:
        on_shelf = STOCK[sku]
    hold = HOLDS.get(sku)
    free = 0 if hold and _overlaps(start, end, *hold) else on_shelf
    pencil = None
    if free:
        pencil = PENCILS[sku] = {"pencil": f"PEN-{sku}-{start.replace('-', '')}", "start": start, "end": end}
    return {"sku": sku, "available": free, "start": start, "end": end, "pencil": pencil and pencil["pencil"]}


@function_tool
def era_lookup(sku: str) -> dict:
    """The period a prop dates from, from the provenance register."""
    for rows in CATALOGUE.values():
        for s, title, era in rows:
            if s == sku:
                return {"sku": sku, "era": era, "title": title}
    return {"sku": sku, "era": "unknown"}


@function_tool
def rate_card(skus: list[str], days: int) -> dict:
    """Hire rates per day for SKUs."""
    per_day = {s: (WEEKLY[s] if WEEKLY_RATE_AS_DAILY else round(WEEKLY[s] / 7, 2)) for s in skus}
    return {"per_day": per_day, "days": days, "currency": "EUR"}


class HireLine(BaseModel):
    sku: str
    qty: int
    on_shelf: int


@function_tool(failure_error_function=None)
def book_hire(production: str, start: str, end: str, lines: list[HireLine], total_eur: float) -> dict:
    """Book the hire in the warehouse system."""
    limit = {i["production"]: i["po_limit"] for i in INPUTS}[production]
    for line in lines:
        sku = line.sku
        if sku in DISPLAY_ONLY:
            raise PermissionError(f"warehouse: {sku} belongs to the archive collection and is display-only")
        hold = HOLDS.get(sku)
        if hold and _overlaps(start, end, *hold):
            raise RuntimeError(f"warehouse: {sku} is on hold {hold[0]} to {hold[1]}")
        pencil = PENCILS.get(sku)
        if not pencil or not (pencil["start"] <= start and end <= pencil["end"]):
            raise RuntimeError(f"warehouse: no pencil hold on {sku} covering {start} to {end}")
        real = STOCK[sku] - (1 if sku == "TYP-0807" else 0)
        if line.qty > real:
            raise RuntimeError(f"warehouse: {line.qty} x {sku} asked, {real} on the shelf")
    if total_eur > limit:
        raise ValueError(f"warehouse: quote {total_eur:.2f} EUR is over the purchase order limit of {limit} EUR")
    return {"booking": f"RP-{sum(map(ord, production)) * 7 % 9000 + 1000}", "total_eur": total_eur}


def build(model):
    advisor = Agent(name="period_advisor", instructions="You confirm the period of each prop with the provenance register.",
                    model=model, tools=[era_lookup], model_settings=ModelSettings(parallel_tool_calls=True))
    quote = Agent(name="quote_desk", instructions="You price and book the hire from the rate card.", model=model,
                  tools=[rate_card, book_hire])
    desk = Agent(name="hire_desk", instructions="You run the hire desk: find each prop, check stock, get period advice, then hand over to the quote desk.",
                 model=model, handoffs=[quote], model_settings=ModelSettings(parallel_tool_calls=True),
                 tools=[search_catalogue, check_stock,
                        advisor.as_tool(tool_name="period_advisor", tool_description="Confirm the period of props by SKU.")])
    return desk


def _days(a, b):
    from datetime import date

    return (date.fromisoformat(b) - date.fromisoformat(a)).days + 1


async def _run(server, text: str) -> None:
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    try:
        await Runner.run(build(model), text, run_config=RunConfig(workflow_name=NAME), max_turns=12)
    finally:
        await client.close()


def run_once(server, inp: dict, path: str) -> None:
    PENCILS.clear()
    order = dict(inp, days=_days(inp["start"], inp["end"]))
    processor = TrajdebugProcessor(path=path, name=NAME, task=f"hire props for {inp['production']}")
    set_tracing_disabled(False)
    set_trace_processors([processor])
    try:
        asyncio.run(_run(server, f"Please book these props. Order: {json.dumps(order)}"))
    except UserError:
        pass  # the booking system refused: the trace records it
    finally:
        set_trace_processors([])
