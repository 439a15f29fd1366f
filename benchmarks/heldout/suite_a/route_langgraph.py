"""Route 1: LangGraph graphs whose chat model is ``langchain_openai.ChatOpenAI`` on the fake server,
recorded with ``trajdebug.integrations.langchain.TrajdebugTracer``.

Three agents:

* ``flight_rebooker``  - hand-built StateGraph that moves a traveller to another flight and collects the fare difference.
* ``grocery_cart``     - a list parser, a payment hold, a prebuilt ReAct shopper sub-graph and checkout.
* ``mortgage_prequal`` - intake chain (prompt | model | lenient JSON parser), a routing call, quote branches, underwriting.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import uuid
import warnings
import zlib
from pathlib import Path
from typing import Any, TypedDict

from fakellm import (
    FakeModelServer,
    Reply,
    called,
    find,
    last_result,
    system_text,
    tool_results,
    user_text,
)
from harness import AgentSpec, Case
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer


warnings.filterwarnings("ignore", message=".*create_react_agent.*")
FAULTS: set[str] = set()


def _chat(server: FakeModelServer) -> ChatOpenAI:
    return ChatOpenAI(
        model="gpt-4o-mini",
        base_url=server.base_url,
        api_key="sk-fake-local",
        max_retries=0,
        timeout=10,
        temperature=0,
    )


def _invoke(graph: Any, state: dict[str, Any], out: Path, key: str) -> Any:
    tracer = TrajdebugTracer(path=out)
    rid = uuid.uuid5(uuid.NAMESPACE_URL, f"suite-a/{key}")
    return graph.invoke(state, config={"callbacks": [tracer], "run_id": rid, "recursion_limit": 30})


def _set_faults(fault: str | None) -> None:
    FAULTS.clear()
    if fault:
        FAULTS.add(fault)


# =====================================================================================
# flight_rebooker
# =====================================================================================

USD_PER = {"USD": 1.0, "EUR": 1.08, "GBP": 1.27}
CHANGE_FEE_USD = 75.0
BOOKINGS: dict[str, dict[str, Any]] = {
    "QK7ZP2": {
        "passenger": "Marta Silva",
        "origin": "LIS",
        "destination": "FRA",
        "fare_paid_usd": 286.0,
        "voucher_usd": 50.0,
        "waiver": ("2025-03-14", "2025-03-15"),
    },
    "RB3MXT": {
        "passenger": "Jonas Weber",
        "origin": "MUC",
        "destination": "LHR",
        "fare_paid_usd": 199.0,
        "voucher_usd": 0.0,
        "waiver": ("2025-04-02", "2025-04-03"),
    },
    "TT9QAL": {
        "passenger": "Aiko Tanaka",
        "origin": "CDG",
        "destination": "FCO",
        "fare_paid_usd": 240.0,
        "voucher_usd": 100.0,
        "waiver": ("2025-05-20", "2025-05-21"),
    },
    "HN4DKE": {
        "passenger": "Sam Okafor",
        "origin": "AMS",
        "destination": "MAD",
        "fare_paid_usd": 210.0,
        "voucher_usd": 25.0,
        "waiver": ("2025-06-11", "2025-06-12"),
    },
    "PW2LUV": {
        "passenger": "Lea Dubois",
        "origin": "LIS",
        "destination": "FRA",
        "fare_paid_usd": 320.0,
        "voucher_usd": 0.0,
        "waiver": ("2025-03-15", "2025-03-16"),
    },
    "ZC8NRF": {
        "passenger": "Omar Haddad",
        "origin": "MUC",
        "destination": "LHR",
        "fare_paid_usd": 150.0,
        "voucher_usd": 40.0,
        "waiver": ("2025-04-03", "2025-04-04"),
    },
    "VE1JQA": {
        "passenger": "Carla Ruiz",
        "origin": "CDG",
        "destination": "FCO",
        "fare_paid_usd": 275.0,
        "voucher_usd": 30.0,
        "waiver": ("2025-05-21", "2025-05-22"),
    },
    "MD5GHS": {
        "passenger": "Nina Berg",
        "origin": "CDG",
        "destination": "FCO",
        "fare_paid_usd": 180.0,
        "voucher_usd": 0.0,
        "waiver": ("2025-05-21", "2025-05-22"),
    },
    "KY6TBW": {
        "passenger": "Raul Soto",
        "origin": "AMS",
        "destination": "MAD",
        "fare_paid_usd": 260.0,
        "voucher_usd": 60.0,
        "waiver": ("2025-06-12", "2025-06-13"),
    },
}


def _fl(
    no: str,
    o: str,
    d: str,
    date: str,
    dep: str,
    fare: float,
    cur: str,
    nonstop: bool = True,
    cached: float | None = None,
) -> dict[str, Any]:
    return {
        "flight_no": no,
        "origin": o,
        "destination": d,
        "date": date,
        "dep": dep,
        "fare": fare,
        "currency": cur,
        "nonstop": nonstop,
        "_cached": cached,
    }


FLIGHTS = [
    _fl("LH1167", "LIS", "FRA", "2025-03-15", "06:40", 342.0, "EUR", cached=298.0),
    _fl("TP572", "LIS", "FRA", "2025-03-15", "10:05", 365.0, "EUR", cached=365.0),
    _fl("LH1173", "LIS", "FRA", "2025-03-15", "17:20", 389.0, "EUR", cached=389.0),
    _fl("TP578", "LIS", "FRA", "2025-03-16", "09:10", 301.0, "EUR"),
    _fl("LH1169", "LIS", "FRA", "2025-03-16", "12:30", 318.0, "EUR"),
    _fl("BA953", "MUC", "LHR", "2025-04-03", "07:25", 214.0, "GBP", cached=214.0),
    _fl("LH2472", "MUC", "LHR", "2025-04-03", "13:50", 238.0, "EUR", cached=171.0),
    _fl("LH2478", "MUC", "LHR", "2025-04-04", "18:40", 205.0, "EUR"),
    _fl("BA951", "MUC", "LHR", "2025-04-04", "09:15", 199.0, "GBP"),
    _fl("AF1204", "CDG", "FCO", "2025-05-21", "08:00", 236.0, "EUR"),
    _fl("AZ319", "CDG", "FCO", "2025-05-21", "14:35", 262.0, "EUR"),
    _fl("AF1404", "CDG", "FCO", "2025-05-22", "11:45", 219.0, "EUR"),
    _fl("KL1701", "AMS", "MAD", "2025-06-12", "07:05", 228.0, "EUR", cached=228.0),
    _fl("UX1094", "AMS", "MAD", "2025-06-12", "15:20", 251.0, "EUR", cached=179.0),
    _fl("IB3707", "AMS", "MAD", "2025-06-13", "12:00", 203.0, "EUR"),
]
ISSUED: dict[str, str] = {}

MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        1,
    )
}


@tool
def search_flights(origin: str, destination: str, date: str, nonstop_only: bool = True) -> str:
    """Search scheduled flights between two airports on a date (YYYY-MM-DD)."""
    rows = []
    for f in FLIGHTS:
        if (f["origin"], f["destination"], f["date"]) != (origin, destination, date):
            continue
        if nonstop_only and not f["nonstop"]:
            continue
        fare = f["_cached"] if ("stale_fare_cache" in FAULTS and f["_cached"] is not None) else f["fare"]
        rows.append({k: v for k, v in f.items() if not k.startswith("_")} | {"fare": fare})
    return json.dumps({"flights": rows, "count": len(rows)})


@tool
def fare_difference(new_fare: float, currency: str, fare_paid_usd: float) -> str:
    """Fare difference in USD between a new fare and what the traveller paid, plus the change fee."""
    rate = USD_PER[currency]
    new_usd = new_fare / rate if "fx_inverted" in FAULTS else new_fare * rate
    diff = max(0.0, new_usd - fare_paid_usd)
    return json.dumps(
        {
            "new_fare_usd": round(new_usd, 2),
            "difference_usd": round(diff, 2),
            "change_fee_usd": CHANGE_FEE_USD,
            "amount_due_usd": round(diff + CHANGE_FEE_USD, 2),
        }
    )


@tool
def apply_credit(amount_due_usd: float, voucher_usd: float) -> str:
    """Apply the traveller's travel voucher to an amount due."""
    used = min(amount_due_usd, voucher_usd)
    return json.dumps({"voucher_used_usd": round(used, 2), "to_charge_usd": round(amount_due_usd - used, 2)})


class GdsRejected(RuntimeError):
    pass


@tool
def collect_payment(pnr: str, flight_no: str, amount_usd: float) -> str:
    """Charge the card on file; the GDS re-prices the change and must agree on the additional collection."""
    b = BOOKINGS[pnr]
    f = next(x for x in FLIGHTS if x["flight_no"] == flight_no)
    live = f["fare"] * USD_PER[f["currency"]]
    expected = max(0.0, max(0.0, live - b["fare_paid_usd"]) + CHANGE_FEE_USD - b["voucher_usd"])
    if abs(expected - amount_usd) > 0.5:
        raise GdsRejected(
            f"ADC mismatch on {pnr}: agent collects {amount_usd:.2f} USD, GDS re-price says {expected:.2f} USD"
        )
    return json.dumps(
        {"pnr": pnr, "charged_usd": amount_usd, "auth": f"A{zlib.crc32(pnr.encode()) % 10**6:06d}"}
    )


@tool
def issue_ticket(pnr: str, flight_no: str) -> str:
    """Reissue the ticket on the new flight under the schedule-change waiver."""
    b = BOOKINGS[pnr]
    f = next(x for x in FLIGHTS if x["flight_no"] == flight_no)
    lo, hi = b["waiver"]
    if not lo <= f["date"] <= hi:
        raise PermissionError(f"waiver for {pnr} covers travel {lo}..{hi}; {flight_no} departs {f['date']}")
    ISSUED[pnr] = flight_no
    return json.dumps(
        {"pnr": pnr, "ticket": f"220-{zlib.crc32((pnr + flight_no).encode()):010d}", "flight_no": flight_no}
    )


def rebooker_policy(body: dict[str, Any]) -> Reply:
    sys_txt = system_text(body)
    if "rebooking assistant" in sys_txt and "search_flights" not in called(body):
        req = user_text(body)
        bk = json.loads(re.search(r"BOOKING: (\{.*\})", req).group(1))  # type: ignore[union-attr]
        m = re.search(
            r"on (January|February|March|April|May|June|July|August|September|October|November|December) (\d{1,2})(?:st|nd|rd|th)? instead",
            req,
            re.I,
        )
        month, day = MONTHS[m.group(1).lower()], int(m.group(2))  # type: ignore[union-attr]
        if "misread_day" in FAULTS:
            day += 1
        return Reply(
            calls=[
                (
                    "search_flights",
                    {
                        "origin": bk["origin"],
                        "destination": bk["destination"],
                        "date": f"2025-{month:02d}-{day:02d}",
                        "nonstop_only": True,
                    },
                )
            ]
        )
    if "rebooking assistant" in sys_txt:
        res = last_result(body, "search_flights")
        best = min(res["flights"], key=lambda f: f["fare"] * USD_PER[f["currency"]])
        return Reply(
            text=json.dumps(
                {
                    "flight_no": best["flight_no"],
                    "reason": f"cheapest nonstop at {best['fare']} {best['currency']}",
                }
            )
        )
    raise ValueError("unexpected prompt")


class RebookState(TypedDict, total=False):
    pnr: str
    request: str
    booking: dict[str, Any]
    messages: list[Any]
    options: list[dict[str, Any]]
    choice: dict[str, Any]
    quote: dict[str, Any]
    credit: dict[str, Any]
    payment: dict[str, Any]
    ticket: dict[str, Any]


def build_rebooker(server: FakeModelServer) -> Any:
    llm = _chat(server)
    planner = llm.bind_tools([search_flights])
    system = SystemMessage(
        content="You are an airline rebooking assistant. Use search_flights to find options on the date the traveller asks for, then pick one."
    )

    def load_booking(state: RebookState) -> RebookState:
        b = BOOKINGS[state["pnr"]]
        return {"booking": {"pnr": state["pnr"], **{k: v for k, v in b.items() if k != "waiver"}}}

    def plan_search(state: RebookState, config: RunnableConfig) -> RebookState:
        msgs = [system, HumanMessage(content=f"{state['request']}\nBOOKING: {json.dumps(state['booking'])}")]
        ai = planner.invoke(msgs, config)
        return {"messages": [*msgs, ai]}

    def run_search(state: RebookState, config: RunnableConfig) -> RebookState:
        ai = state["messages"][-1]
        outs = [search_flights.invoke(call, config) for call in ai.tool_calls]
        options = json.loads(outs[-1].content)["flights"]
        return {"messages": [*state["messages"], *outs], "options": options}

    def choose(state: RebookState, config: RunnableConfig) -> RebookState:
        msgs = [
            *state["messages"],
            HumanMessage(content="Pick the best option. Answer as JSON with flight_no and reason."),
        ]
        ai = llm.invoke(msgs, config)
        pick = json.loads(ai.content)
        chosen = next(o for o in state["options"] if o["flight_no"] == pick["flight_no"])
        return {"choice": chosen}

    def quote(state: RebookState, config: RunnableConfig) -> RebookState:
        c = state["choice"]
        q = fare_difference.invoke(
            {
                "new_fare": c["fare"],
                "currency": c["currency"],
                "fare_paid_usd": state["booking"]["fare_paid_usd"],
            },
            config,
        )
        return {"quote": json.loads(q)}

    def credit(state: RebookState, config: RunnableConfig) -> RebookState:
        r = apply_credit.invoke(
            {
                "amount_due_usd": state["quote"]["amount_due_usd"],
                "voucher_usd": state["booking"]["voucher_usd"],
            },
            config,
        )
        return {"credit": json.loads(r)}

    def pay(state: RebookState, config: RunnableConfig) -> RebookState:
        r = collect_payment.invoke(
            {
                "pnr": state["pnr"],
                "flight_no": state["choice"]["flight_no"],
                "amount_usd": state["credit"]["to_charge_usd"],
            },
            config,
        )
        return {"payment": json.loads(r)}

    def ticket(state: RebookState, config: RunnableConfig) -> RebookState:
        r = issue_ticket.invoke({"pnr": state["pnr"], "flight_no": state["choice"]["flight_no"]}, config)
        return {"ticket": json.loads(r)}

    g = StateGraph(RebookState)
    names = ["load_booking", "plan_search", "run_search", "choose", "quote", "credit", "pay", "ticket"]
    for n, fn in zip(names, [load_booking, plan_search, run_search, choose, quote, credit, pay, ticket]):
        g.add_node(n, fn)
    g.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile(name="flight_rebooker")


def rebooker_agent(server: FakeModelServer) -> AgentSpec:
    graph = build_rebooker(server)

    def run(inp: dict[str, Any], fault: str | None, out: Path, key: str) -> None:
        _set_faults(fault)
        server.use(rebooker_policy)
        _invoke(graph, {"pnr": inp["pnr"], "request": inp["request"]}, out, key)

    def req(pnr: str, text: str) -> dict[str, Any]:
        return {"pnr": pnr, "request": text}

    passing = [
        req(
            "TT9QAL",
            "Bonjour, Aiko Tanaka, booking TT9QAL. The CDG-FCO schedule changed, please rebook me on May 21 instead.",
        ),
        req(
            "PW2LUV",
            "Hi, Lea Dubois (PW2LUV). Lisbon to Frankfurt moved; I'd like to fly on March 16 instead.",
        ),
        req(
            "MD5GHS",
            "Nina Berg, MD5GHS. Please switch my Paris-Rome trip to travel on May 22 instead, nonstop.",
        ),
        req(
            "ZC8NRF", "Omar Haddad, ZC8NRF here - schedule change on MUC-LHR, I can go on April 4th instead."
        ),
        req("KY6TBW", "Raul Soto (KY6TBW). The new AMS-MAD timing doesn't work, book me on June 13 instead."),
        req(
            "VE1JQA", "Carla Ruiz, VE1JQA: my Rome flight was retimed. Could you put me on May 22nd instead?"
        ),
    ]
    cases = [
        Case(
            "misread_day",
            req(
                "QK7ZP2",
                "Hi, this is Marta Silva, booking QK7ZP2. My LIS-FRA flight got moved; can you put me on a flight on March 15 instead? Nonstop please.",
            ),
            "misread_day",
            "wrong_tool_args",
            "The planning call searches 2025-03-16 instead of the requested 15 March; the cheapest flight that day is "
            "chosen, paid for, and ticket reissue is refused because the waiver ends on the 15th.",
            [("ChatOpenAI", 1), ("search_flights", 1), ("ChatOpenAI", 2), ("issue_ticket", 1)],
            "llm",
        ),
        Case(
            "fx_inverted",
            req(
                "RB3MXT",
                "Jonas Weber (RB3MXT). Since my flight was retimed, please rebook me on April 3rd instead, any nonstop is fine.",
            ),
            "fx_inverted",
            "unit_scale",
            "fare_difference divides the EUR fare by the USD rate instead of multiplying; the voucher is applied to the "
            "understated amount and the GDS re-price rejects the collection.",
            [("fare_difference", 1), ("apply_credit", 1), ("collect_payment", 1)],
            "tool",
        ),
        Case(
            "stale_fare_cache",
            req(
                "HN4DKE",
                "It's Sam Okafor again, HN4DKE. Actually I prefer to fly on June 12 instead, whichever nonstop is cheapest.",
            ),
            "stale_fare_cache",
            "stale_data",
            "search_flights answers from yesterday's fare cache (UX1094 at 179 EUR instead of 251); the model picks it, "
            "the quote and voucher are computed from the stale fare and the GDS refuses the amount.",
            [
                ("search_flights", 1),
                ("ChatOpenAI", 2),
                ("fare_difference", 1),
                ("apply_credit", 1),
                ("collect_payment", 1),
            ],
            "tool",
        ),
    ]
    return AgentSpec("flight_rebooker", "langgraph", "travel booking", "jsonl", run, passing, cases)


# =====================================================================================
# grocery_cart
# =====================================================================================

CATALOG = [
    # sku, name, unit price, pack size (units), tags, popularity
    {
        "sku": "BRD-BRI",
        "name": "Butter brioche loaf",
        "price": 5.49,
        "pack": 1,
        "tags": ["contains:milk", "contains:egg"],
        "pop": 98,
        "kw": "bread loaf",
    },
    {
        "sku": "BRD-SRD",
        "name": "Sourdough loaf",
        "price": 4.99,
        "pack": 1,
        "tags": ["vegan"],
        "pop": 90,
        "kw": "bread loaf sourdough",
    },
    {
        "sku": "BGL-6",
        "name": "Plain bagels 6-pack",
        "price": 3.99,
        "pack": 6,
        "tags": ["vegan"],
        "pop": 80,
        "kw": "bagels bagel",
    },
    {
        "sku": "BGL-EGG",
        "name": "Egg bagels 6-pack",
        "price": 4.29,
        "pack": 6,
        "tags": ["contains:egg"],
        "pop": 85,
        "kw": "bagels bagel",
    },
    {
        "sku": "CRC-PHL",
        "name": "Cream cheese 8oz",
        "price": 3.49,
        "pack": 1,
        "tags": ["contains:milk"],
        "pop": 95,
        "kw": "cream cheese spread",
    },
    {
        "sku": "CRC-OAT",
        "name": "Oat cream cheese 8oz",
        "price": 4.79,
        "pack": 1,
        "tags": ["vegan"],
        "pop": 60,
        "kw": "cream cheese spread",
    },
    {
        "sku": "EGG-12",
        "name": "Free-range eggs, dozen",
        "price": 4.59,
        "pack": 12,
        "tags": ["contains:egg"],
        "pop": 99,
        "kw": "eggs egg",
    },
    {
        "sku": "OAT-1L",
        "name": "Oat milk 1L",
        "price": 2.89,
        "pack": 1,
        "tags": ["vegan"],
        "pop": 88,
        "kw": "oat milk",
    },
    {
        "sku": "MLK-1L",
        "name": "Whole milk 1L",
        "price": 1.79,
        "pack": 1,
        "tags": ["contains:milk"],
        "pop": 97,
        "kw": "milk whole",
    },
    {
        "sku": "AVO-4",
        "name": "Hass avocados 4-pack",
        "price": 5.99,
        "pack": 4,
        "tags": ["vegan"],
        "pop": 75,
        "kw": "avocados avocado",
    },
    {
        "sku": "BAN-1",
        "name": "Bananas (each)",
        "price": 0.29,
        "pack": 1,
        "tags": ["vegan"],
        "pop": 70,
        "kw": "bananas banana",
    },
    {
        "sku": "CKY-CHO",
        "name": "Chocolate chip cookies",
        "price": 3.99,
        "pack": 12,
        "tags": ["contains:milk", "contains:egg"],
        "pop": 93,
        "kw": "cookies cookie",
    },
    {
        "sku": "CKY-VGN",
        "name": "Vegan oat cookies",
        "price": 4.49,
        "pack": 12,
        "tags": ["vegan"],
        "pop": 64,
        "kw": "cookies cookie",
    },
    {
        "sku": "COF-1K",
        "name": "Coffee beans 1kg",
        "price": 17.90,
        "pack": 1,
        "tags": ["vegan"],
        "pop": 82,
        "kw": "coffee beans",
    },
    {
        "sku": "OJ-2L",
        "name": "Orange juice 2L",
        "price": 4.20,
        "pack": 1,
        "tags": ["vegan"],
        "pop": 79,
        "kw": "orange juice",
    },
]
CUSTOMERS = {
    "C-301": {"name": "Priya N.", "diet": "vegan"},
    "C-302": {"name": "Tom H.", "diet": "none"},
    "C-303": {"name": "Ines K.", "diet": "vegan"},
    "C-304": {"name": "Marco D.", "diet": "none"},
    "C-305": {"name": "Office of Lumen Labs", "diet": "none"},
    "C-306": {"name": "Greenleaf Studio", "diet": "vegan"},
}
CARTS: dict[str, list[dict[str, Any]]] = {}
HOLDS: dict[str, float] = {}


class ShoppingListParser(BaseOutputParser[dict]):
    """Parses a customer's free-text shopping note: '- 12 eggs' lines and an optional 'budget $N'."""

    def parse(self, text: str) -> dict:
        items = []
        for ln in text.splitlines():
            m = re.match(r"\s*[-*]\s*(\d+)\s*(?:x\s*)?(.+?)\s*$", ln)
            if m:
                items.append({"item": m.group(2).lower(), "qty": int(m.group(1))})
        raw = find(r"budget[^$]*\$\s*([\d,]+(?:\.\d+)?)", text)
        if raw is None:
            budget = 150.0
        elif "budget_thousands_cut" in FAULTS:
            budget = float(raw.split(",")[0])
        else:
            budget = float(raw.replace(",", ""))
        return {"items": items, "budget": budget}

    @property
    def _type(self) -> str:
        return "shopping_list"


@tool
def authorize_payment(customer: str, amount: float) -> str:
    """Place a card pre-authorization hold for the order's budget."""
    hold = f"H-{customer}-{int(amount * 100)}"
    HOLDS[hold] = amount
    return json.dumps({"hold_id": hold, "amount": amount, "customer": customer})


@tool
def find_product(query: str, dietary: str = "none", max_results: int = 3) -> str:
    """Search the store catalog. dietary: 'vegan' or 'none'."""
    words = set(re.findall(r"[a-z]+", query.lower()))
    hits = [p for p in CATALOG if words & set(p["kw"].split())]
    if dietary == "vegan" and "diet_filter_dropped" not in FAULTS:
        hits = [p for p in hits if "vegan" in p["tags"]]
    hits.sort(key=lambda p: -p["pop"])
    return json.dumps(
        [{k: p[k] for k in ("sku", "name", "price", "pack", "tags")} for p in hits[:max_results]]
    )


@tool
def add_to_cart(cart_id: str, sku: str, packs: int) -> str:
    """Add packs of a product to the cart."""
    p = next(x for x in CATALOG if x["sku"] == sku)
    CARTS.setdefault(cart_id, []).append(
        {"sku": sku, "packs": packs, "line_total": round(p["price"] * packs, 2), "tags": p["tags"]}
    )
    return json.dumps(
        {"cart_id": cart_id, "lines": len(CARTS[cart_id]), "added": {"sku": sku, "packs": packs}}
    )


class CheckoutBlocked(RuntimeError):
    pass


@tool
def place_order(cart_id: str, customer: str, hold_id: str) -> str:
    """Check the cart against the customer's profile and the payment hold, then place the order."""
    lines = CARTS.get(cart_id, [])
    diet = CUSTOMERS[customer]["diet"]
    if diet == "vegan":
        bad = [ln["sku"] for ln in lines if any(t.startswith("contains:") for t in ln["tags"])]
        if bad:
            raise CheckoutBlocked(f"cart {cart_id} has non-vegan items {bad} for a vegan customer profile")
    total = round(sum(ln["line_total"] for ln in lines), 2)
    if total > HOLDS[hold_id]:
        raise CheckoutBlocked(
            f"cart total ${total:.2f} exceeds the ${HOLDS[hold_id]:.2f} pre-authorization {hold_id}"
        )
    return json.dumps({"order": f"O-{cart_id}", "total": total, "status": "placed"})


def shopper_policy(body: dict[str, Any]) -> Reply:
    brief = user_text(body)
    diet = find(r"diet: (\w+)", brief, "none")
    cart = find(r"cart (C-\d+)", brief)
    wanted = json.loads(re.search(r"LIST: (\[.*\])", brief).group(1))  # type: ignore[union-attr]
    done = called(body)
    if "find_product" not in done:
        return Reply(calls=[("find_product", {"query": w["item"], "dietary": diet}) for w in wanted])
    if "add_to_cart" not in done:
        found = [v for n, v in tool_results(body) if n == "find_product"]
        calls = []
        for w, res in zip(wanted, found):
            if not res:
                continue
            p = res[0]
            packs = (
                w["qty"] if ("qty_as_packs" in FAULTS and p["pack"] > 1) else math.ceil(w["qty"] / p["pack"])
            )
            calls.append(("add_to_cart", {"cart_id": cart, "sku": p["sku"], "packs": packs}))
        return Reply(calls=calls)
    return Reply(text="All items are in the cart.")


class CartState(TypedDict, total=False):
    customer: str
    note: str
    parsed: dict[str, Any]
    hold: dict[str, Any]
    messages: list[Any]
    order: dict[str, Any]


def build_grocery(server: FakeModelServer) -> Any:
    from langgraph.prebuilt import create_react_agent

    shopper = create_react_agent(
        _chat(server),
        [find_product, add_to_cart],
        prompt="You fill grocery carts. Respect the customer's diet.",
        name="shopper",
    )
    parser = ShoppingListParser()

    def read_list(state: CartState, config: RunnableConfig) -> CartState:
        return {"parsed": parser.invoke(state["note"], config)}

    def hold_funds(state: CartState, config: RunnableConfig) -> CartState:
        r = authorize_payment.invoke(
            {"customer": state["customer"], "amount": state["parsed"]["budget"]}, config
        )
        return {"hold": json.loads(r)}

    def shop(state: CartState, config: RunnableConfig) -> CartState:
        c = state["customer"]
        brief = f"Customer {c} (diet: {CUSTOMERS[c]['diet']}), cart {c}. LIST: {json.dumps(state['parsed']['items'])}"
        res = shopper.invoke({"messages": [HumanMessage(content=brief)]}, config)
        return {"messages": res["messages"]}

    def checkout(state: CartState, config: RunnableConfig) -> CartState:
        r = place_order.invoke(
            {
                "cart_id": state["customer"],
                "customer": state["customer"],
                "hold_id": state["hold"]["hold_id"],
            },
            config,
        )
        return {"order": json.loads(r)}

    g = StateGraph(CartState)
    for n, fn in (
        ("read_list", read_list),
        ("hold_funds", hold_funds),
        ("shop", shop),
        ("checkout", checkout),
    ):
        g.add_node(n, fn)
    g.add_edge(START, "read_list")
    g.add_edge("read_list", "hold_funds")
    g.add_edge("hold_funds", "shop")
    g.add_edge("shop", "checkout")
    g.add_edge("checkout", END)
    return g.compile(name="grocery_cart")


def grocery_agent(server: FakeModelServer) -> AgentSpec:
    graph = build_grocery(server)

    def run(inp: dict[str, Any], fault: str | None, out: Path, key: str) -> None:
        _set_faults(fault)
        CARTS.clear()
        HOLDS.clear()
        server.use(shopper_policy)
        _invoke(graph, {"customer": inp["customer"], "note": inp["note"]}, out, key)

    passing = [
        {
            "customer": "C-302",
            "note": "Weekly shop, budget $60\n- 12 eggs\n- 2 whole milk\n- 1 bread loaf\n- 6 bananas",
        },
        {
            "customer": "C-303",
            "note": "Brunch for 4 (budget $45):\n- 6 bagels\n- 2 cream cheese\n- 4 avocados",
        },
        {"customer": "C-304", "note": "- 2 coffee beans\n- 3 orange juice\n- 12 cookies"},
        {"customer": "C-301", "note": "Hi! budget $30 please\n- 2 oat milk\n- 1 bread loaf\n- 8 bananas"},
        {"customer": "C-306", "note": "Studio snacks, budget $80\n- 24 cookies\n- 4 oat milk\n- 12 bagels"},
        {"customer": "C-302", "note": "Quick top-up\n- 1 coffee beans\n- 2 whole milk"},
    ]
    cases = [
        Case(
            "diet_filter_dropped",
            {
                "customer": "C-301",
                "note": "Dinner party, budget $50\n- 2 bread loaf\n- 4 avocados\n- 6 bananas",
            },
            "diet_filter_dropped",
            "tool_ignores_arg",
            "find_product ignores dietary='vegan'; the more popular butter brioche comes back first for 'bread loaf', "
            "the shopper adds it and checkout blocks the non-vegan item.",
            [("find_product", 1), ("ChatOpenAI", 2), ("add_to_cart", 1), ("place_order", 1)],
            "tool",
        ),
        Case(
            "qty_as_packs",
            {
                "customer": "C-304",
                "note": "Baking day, budget $40\n- 24 eggs\n- 2 whole milk\n- 1 bread loaf",
            },
            "qty_as_packs",
            "wrong_tool_args",
            "The shopper model passes the number of eggs (24) as the number of dozen-packs; the cart total blows "
            "through the $40 hold at checkout.",
            [("ChatOpenAI", 2), ("add_to_cart", 1), ("place_order", 1)],
            "llm",
        ),
        Case(
            "budget_thousands_cut",
            {
                "customer": "C-305",
                "note": "Office all-hands breakfast, total budget $1,200\n- 120 bagels\n- 20 cream cheese\n- 8 coffee beans\n- 12 orange juice",
            },
            "budget_thousands_cut",
            "lossy_parse",
            "ShoppingListParser stops the budget at the thousands separator ($1,200 -> $1); the card hold is placed "
            "for $1 and checkout refuses the $200+ cart.",
            [("ShoppingListParser", 1), ("authorize_payment", 1), ("place_order", 1)],
            "parse",
        ),
    ]
    return AgentSpec("grocery_cart", "langgraph", "retail orders (grocery)", "jsonl", run, passing, cases)


# =====================================================================================
# mortgage_prequal
# =====================================================================================

RATE_SHEET = {  # 30y fixed, by max LTV and min credit score -> annual rate (decimal)
    "conforming": [
        (0.80, 740, 0.06375),
        (0.80, 680, 0.06750),
        (0.90, 740, 0.06625),
        (0.90, 680, 0.07000),
        (0.97, 680, 0.07125),
    ],
    "jumbo": [(0.80, 720, 0.06875), (0.90, 740, 0.07250)],
}
JUMBO_LIMIT = 806500


class LenientJsonParser(BaseOutputParser[dict]):
    """JSON from a chat model, repaired when the model leaves a trailing comma or a stray note."""

    def parse(self, text: str) -> dict:
        s = text.strip()
        s = s[s.index("{") : s.rindex("}") + 1]
        try:
            return json.loads(s)
        except json.JSONDecodeError:
            pass
        if "json_repair_truncates" in FAULTS:
            # "repair": cut back to the last comma that closes a complete pair
            cut = s[: s.rstrip("} \n,").rfind(",")]
            return json.loads(cut + "}")
        return json.loads(re.sub(r",\s*}", "}", s))

    @property
    def _type(self) -> str:
        return "lenient_json"


@tool
def rate_sheet(product: str, ltv: float, credit_score: int) -> str:
    """Today's 30-year fixed rate (annual, decimal) for a product, LTV and credit score."""
    rows = [r for r in RATE_SHEET[product] if ltv <= r[0] + 1e-9 and credit_score >= r[1]]
    rate = min(r[2] for r in rows) if rows else RATE_SHEET[product][-1][2]
    if "jumbo_rate_percent" in FAULTS and product == "jumbo":
        rate = round(rate * 100, 3)  # the jumbo desk's feed publishes percent
    return json.dumps({"product": product, "annual_rate": rate, "ltv_bucket": round(ltv, 3)})


@tool
def payment_calc(principal: float, annual_rate: float, years: int = 30) -> str:
    """Monthly principal-and-interest payment."""
    r = annual_rate / 12
    n = years * 12
    pay = principal * r / (1 - (1 + r) ** -n)
    return json.dumps({"monthly_payment": round(pay, 2), "principal": principal})


@tool
def max_cash_out(appraised_value: float) -> str:
    """Largest cash-out refinance loan for an appraised value (80% LTV)."""
    return json.dumps({"max_loan": round(appraised_value * 0.8, 2)})


class UnderwritingDecline(RuntimeError):
    pass


def mortgage_policy(body: dict[str, Any]) -> Reply:
    sys_txt = system_text(body)
    txt = user_text(body)
    if "intake" in sys_txt:

        def money(label: str) -> int:
            v = find(f"(?:{label})" + r"[^$\d]*\$?([\d,]+)k?", txt)
            num = int(v.replace(",", ""))  # type: ignore[union-attr]
            return num * 1000 if re.search(f"(?:{label})" + r"[^$\d]*\$?[\d,]+k", txt, re.I) else num

        purpose = "refinance" if re.search(r"refinanc|cash[- ]out", txt, re.I) else "purchase"
        fields = [
            ("applicant", find(r"name: ([A-Za-z .]+)", txt)),
            ("purpose", purpose),
            ("annual_income", money("income")),
            ("monthly_debts", money("debts")),
            ("credit_score", int(find(r"credit score (\d{3})", txt))),  # type: ignore[arg-type]
            ("price", money("price|value")),
        ]
        if purpose == "purchase":
            fields.append(("down_payment", money("down")))
        else:
            fields.append(("current_balance", money("balance")))
        body_txt = ",\n  ".join(f'"{k}": {json.dumps(v)}' for k, v in fields)
        return Reply(
            text="Here is the profile:\n{\n  " + body_txt + ",\n}"
        )  # this model leaves a trailing comma
    if "loan officer" in sys_txt:
        prof = json.loads(re.search(r"PROFILE: (\{.*\})", txt).group(1))  # type: ignore[union-attr]
        track = prof["purpose"]
        if "track_misrouted" in FAULTS:
            track = "refinance" if track == "purchase" else "purchase"
        return Reply(text=f"TRACK: {track}")
    raise ValueError("unexpected prompt")


class MortgageState(TypedDict, total=False):
    application: str
    profile: dict[str, Any]
    track: str
    loan: float
    product: str
    rate: dict[str, Any]
    payment: dict[str, Any]
    decision: dict[str, Any]


def build_mortgage(server: FakeModelServer) -> Any:
    llm = _chat(server)
    intake_chain = (
        ChatPromptTemplate.from_messages(
            [
                ("system", "You are a mortgage intake assistant. Return the applicant profile as JSON."),
                ("human", "{application}"),
            ]
        )
        | llm
        | LenientJsonParser()
    )
    router = (
        ChatPromptTemplate.from_messages(
            [
                ("system", "You are a loan officer. Choose the track: purchase or refinance."),
                ("human", "PROFILE: {profile}"),
            ]
        )
        | llm
    )

    def intake(state: MortgageState, config: RunnableConfig) -> MortgageState:
        prof = intake_chain.invoke({"application": state["application"]}, config)
        prof.setdefault("down_payment", 0)
        prof.setdefault("current_balance", 0)
        return {"profile": prof}

    def route(state: MortgageState, config: RunnableConfig) -> MortgageState:
        ai = router.invoke({"profile": json.dumps(state["profile"])}, config)
        return {"track": re.search(r"TRACK: (\w+)", ai.content).group(1)}  # type: ignore[union-attr]

    def purchase_quote(state: MortgageState, config: RunnableConfig) -> MortgageState:
        p = state["profile"]
        loan = p["price"] - p["down_payment"]
        product = "jumbo" if loan > JUMBO_LIMIT else "conforming"
        rate = json.loads(
            rate_sheet.invoke(
                {"product": product, "ltv": loan / p["price"], "credit_score": p["credit_score"]}, config
            )
        )
        pay = json.loads(payment_calc.invoke({"principal": loan, "annual_rate": rate["annual_rate"]}, config))
        return {"loan": loan, "product": product, "rate": rate, "payment": pay}

    def refinance_quote(state: MortgageState, config: RunnableConfig) -> MortgageState:
        p = state["profile"]
        cap = json.loads(max_cash_out.invoke({"appraised_value": p["price"]}, config))
        loan = cap["max_loan"]
        product = "jumbo" if loan > JUMBO_LIMIT else "conforming"
        rate = json.loads(
            rate_sheet.invoke(
                {"product": product, "ltv": loan / p["price"], "credit_score": p["credit_score"]}, config
            )
        )
        pay = json.loads(payment_calc.invoke({"principal": loan, "annual_rate": rate["annual_rate"]}, config))
        return {"loan": loan, "product": product, "rate": rate, "payment": pay}

    def underwrite(state: MortgageState) -> MortgageState:
        p = state["profile"]
        loan = state["loan"]
        if p["purpose"] == "purchase" and abs(loan + p["down_payment"] - p["price"]) > 1:
            raise UnderwritingDecline(
                f"sources and uses do not balance: loan {loan:,.0f} + down {p['down_payment']:,.0f} vs price {p['price']:,.0f}"
            )
        if p["purpose"] == "refinance" and loan < p["current_balance"]:
            raise UnderwritingDecline(
                f"new loan {loan:,.0f} does not pay off the existing balance {p['current_balance']:,.0f}"
            )
        ltv = loan / p["price"]
        if ltv > 0.97:
            raise UnderwritingDecline(f"LTV {ltv:.1%} is above the 97% program maximum")
        dti = (state["payment"]["monthly_payment"] + p["monthly_debts"]) / (p["annual_income"] / 12)
        if dti > 0.45:
            raise UnderwritingDecline(
                f"debt-to-income {dti:.1%} exceeds 45% (payment {state['payment']['monthly_payment']:,.2f}/mo)"
            )
        return {
            "decision": {
                "status": "pre-qualified",
                "loan": loan,
                "dti": round(dti, 3),
                "rate": state["rate"]["annual_rate"],
            }
        }

    g = StateGraph(MortgageState)
    for n, fn in (
        ("intake", intake),
        ("route", route),
        ("purchase_quote", purchase_quote),
        ("refinance_quote", refinance_quote),
        ("underwrite", underwrite),
    ):
        g.add_node(n, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "route")
    g.add_conditional_edges(
        "route", lambda s: s["track"], {"purchase": "purchase_quote", "refinance": "refinance_quote"}
    )
    g.add_edge("purchase_quote", "underwrite")
    g.add_edge("refinance_quote", "underwrite")
    g.add_edge("underwrite", END)
    return g.compile(name="mortgage_prequal")


def mortgage_agent(server: FakeModelServer) -> AgentSpec:
    graph = build_mortgage(server)

    def run(inp: dict[str, Any], fault: str | None, out: Path, key: str) -> None:
        _set_faults(fault)
        server.use(mortgage_policy)
        _invoke(graph, {"application": inp["application"]}, out, key)

    def app(name: str, body: str) -> dict[str, Any]:
        return {"application": f"name: {name}\n{body}"}

    passing = [
        app(
            "Dana Cruz",
            "Buying a condo, price $540,000, down payment $108,000. Household income $148,000 a year, other debts $650/month, credit score 752.",
        ),
        app(
            "Lee Park",
            "First home purchase. Price $385,000, down payment $40,000. Income $96,000; debts $420 per month; credit score 701.",
        ),
        app(
            "Rosa Vega",
            "Cash-out refinance. Home value $620,000, current balance $310,000. Income $165,000, debts $900/mo, credit score 768.",
        ),
        app(
            "Ken Abe",
            "Purchase of a townhouse: price $450k, down $90k. Income $120k, monthly debts $300, credit score 745.",
        ),
        app(
            "Mia Stone",
            "We want to refinance: value $500,000, balance $260,000, income $130,000, debts $500 monthly, credit score 721.",
        ),
        app(
            "Ola Nowak",
            "Price $1,150,000 family home, down payment $230,000. Income $420,000, debts $1,800 per month, credit score 781.",
        ),
    ]
    cases = [
        Case(
            "json_repair_truncates",
            app(
                "Eve Hart",
                "Purchase: price $410,000, down payment $61,500. Income $118,000 per year, debts $550/month, credit score 733.",
            ),
            "json_repair_truncates",
            "lossy_parse",
            "The model's JSON has a trailing comma; LenientJsonParser 'repairs' it by cutting back to the previous "
            "comma, dropping down_payment, which then defaults to 0; the loan becomes 100% of the price and "
            "underwriting declines it.",
            [("LenientJsonParser", 1), ("purchase_quote", 1), ("underwrite", 1)],
            "parse",
        ),
        Case(
            "jumbo_rate_percent",
            app(
                "Ola Nowak",
                "Price $1,240,000, down payment $248,000. Income $450,000, debts $2,100 per month, credit score 790.",
            ),
            "jumbo_rate_percent",
            "unit_scale",
            "rate_sheet returns the jumbo rate in percent (6.875) where a decimal is documented; the payment "
            "calculator produces an absurd monthly payment and the DTI check declines.",
            [("rate_sheet", 1), ("payment_calc", 1), ("underwrite", 1)],
            "tool",
        ),
        Case(
            "track_misrouted",
            app(
                "Ivan Petrov",
                "Purchasing a house: price $480,000 and down payment $72,000. Income $140,000, debts $700 a month, credit score 760.",
            ),
            "track_misrouted",
            "wrong_routing",
            "The routing call sends a purchase application down the refinance track; the cash-out cap sets the "
            "loan at 80% of value and the sources-and-uses check fails in underwriting.",
            [("ChatOpenAI", 2), ("max_cash_out", 1), ("underwrite", 1)],
            "llm",
        ),
    ]
    return AgentSpec(
        "mortgage_prequal",
        "langgraph",
        "real estate (mortgage pre-qualification)",
        "jsonl",
        run,
        passing,
        cases,
    )


def agents(server: FakeModelServer) -> list[AgentSpec]:
    return [rebooker_agent(server), grocery_agent(server), mortgage_agent(server)]
