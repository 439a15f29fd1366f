"""Event florist quotes (langgraph route): a client's brief -> extraction chain (prompt | model | JSON
parser) -> arrangement design by the model -> stem counts -> a buyer model with tools (price sheet,
stem reservations; parallel calls) -> quote -> budget check -> delivery booking -> order check."""

from __future__ import annotations

import json
import operator
import re
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from ._common import system_text, tool_results, user_text


NAME = "florist-event-quotes"
ROUTE = "langgraph"
DOMAIN = "event florist, wedding and dinner flower quotes"
SHAPE = "StateGraph: extraction chain with JSON parser, design model, stem counting node, buyer model <-> ToolNode loop (parallel reservations), quote, budget check, delivery tool node, order check"
SWITCH = None


def _switched(name: str) -> bool:
    return SWITCH == name


INPUTS = [
    {"task": "Alvarez wedding, 2026-05-16", "brief": "Wedding for Sofia Alvarez on 2026-05-16 at Quinta do Vale. We need 1 bridal bouquet, 4 bridesmaid bouquets and 10 table centrepieces. Blush and white, garden style. Budget 2400 EUR."},
    {"task": "Northwind gala dinner, 2026-04-22", "brief": "Northwind annual gala on 2026-04-22, Hotel Meridian ballroom: 18 table centrepieces and 2 entrance urns. Deep red and gold. Budget 3100 EUR."},
    {"task": "Chen-Moreau wedding, 2026-06-06", "brief": "Small wedding, Mei Chen and Luc Moreau, 2026-06-06, at the town hall: 1 bridal bouquet, 6 buttonholes, 3 table centrepieces. White and green only. Budget 900 EUR."},
    {"task": "Harbour bistro opening, 2026-03-28", "brief": "Opening night of Harbour Bistro on 2026-03-28: 12 table centrepieces and 1 entrance urn, coastal blues. Budget 1500 EUR."},
    {"task": "Okafor anniversary, 2026-05-02", "brief": "40th anniversary dinner for the Okafor family on 2026-05-02: 6 table centrepieces and 1 entrance urn, warm peach tones. Budget 700 EUR."},
]

RECIPES = {  # stems per piece
    "bridal bouquet": {"garden rose": 12, "ranunculus": 8, "eucalyptus": 6},
    "bridesmaid bouquet": {"garden rose": 6, "eucalyptus": 4},
    "buttonhole": {"spray rose": 1, "eucalyptus": 1},
    "table centrepiece": {"garden rose": 6, "spray rose": 6, "eucalyptus": 5, "astilbe": 3},
    "entrance urn": {"delphinium": 15, "eucalyptus": 12, "garden rose": 10},
}
SHEET = {  # EUR per stem, by grade
    "astilbe": {"standard": 1.6, "premium": 2.7}, "delphinium": {"standard": 2.2, "premium": 3.9},
    "eucalyptus": {"standard": 0.7, "premium": 1.2}, "garden rose": {"standard": 3.1, "premium": 5.6},
    "ranunculus": {"standard": 2.0, "premium": 3.4}, "spray rose": {"standard": 1.4, "premium": 2.5},
}
LABOUR_PER_PIECE = {"bridal bouquet": 90, "bridesmaid bouquet": 35, "buttonhole": 8, "table centrepiece": 28, "entrance urn": 120}


# ---- model -------------------------------------------------------------------------------------------

def brain(request):
    system = system_text(request)
    if system.startswith("Extract the event"):
        text = user_text(request)
        pieces = [{"piece": p.rstrip("s").replace("centrepiece", "centrepiece"), "count": int(n)}
                  for n, p in re.findall(r"(\d+) (bridal bouquets?|bridesmaid bouquets?|table centrepieces?|entrance urns?|buttonholes?)", text)]
        budget = int(re.search(r"Budget (\d+)", text).group(1))
        return json.dumps({"date": re.search(r"\d{4}-\d{2}-\d{2}", text).group(0), "pieces": pieces,
                           "palette": text.split(".")[-3].strip() if "Budget" in text else "",
                           "budget_eur": f"EUR {budget:,}" if _switched("budget-text") else budget})
    if system.startswith("Design the arrangements"):
        event = json.loads(user_text(request))
        design = [{"piece": p["piece"], "count": p["count"], "stems": RECIPES[p["piece"]]} for p in event["pieces"]]
        if _switched("design-skip"):
            design = [d for d in design if d["piece"] != "buttonhole"]
        return json.dumps({"arrangements": design})
    if system.startswith("You buy stems"):
        need = json.loads(user_text(request))
        done = tool_results(request)
        if not done:
            return Reply(tool_calls=(tool_call("price_sheet", {"flowers": sorted(need["stems"]), "grade": "standard",
                                                              "market_day": need["market_day"]}),))
        if len(done) == 1:
            calls = []
            for flower, n in sorted(need["stems"].items()):
                if _switched("per-piece") and flower == "garden rose":
                    n = RECIPES["table centrepiece"]["garden rose"]
                calls.append(tool_call("reserve_stems", {"flower": flower, "stems": n, "market_day": need["market_day"]}))
            return Reply(tool_calls=tuple(calls))
        return "Prices read and every stem reserved."
    return "Sorry, I only do flowers."


# ---- tools -------------------------------------------------------------------------------------------

@tool
def price_sheet(flowers: list[str], grade: str, market_day: str) -> dict:
    """Wholesale price per stem at the flower market for the given grade."""
    use = "premium" if _switched("grade-ignored") else grade
    rows = [{"flower": f, "grade": use, "eur_per_stem": SHEET[f][use]} for f in flowers]
    if _switched("sheet-page"):
        rows = rows[:3]
    return {"market_day": market_day, "rows": rows}


@tool
def reserve_stems(flower: str, stems: int, market_day: str) -> dict:
    """Reserve stems of one flower at the market for pick-up on market_day."""
    return {"flower": flower, "stems": stems, "market_day": market_day, "reservation": f"R-{flower[:3].upper()}-{stems}"}


@tool
def book_delivery(event_date: str, reservations: list[dict], stems: dict) -> dict:
    """Book the van and check that the reserved stems cover the order."""
    got = {r["flower"]: r["stems"] for r in reservations}
    for flower, n in stems.items():
        if got.get(flower, 0) < n:
            raise ValueError(f"reservations hold {got.get(flower, 0)} {flower} stems, the arrangements need {n}")
    return {"van": "V2", "date": event_date, "slot": "07:30"}


# ---- graph -------------------------------------------------------------------------------------------

class State(TypedDict, total=False):
    brief: str
    event: dict
    arrangements: list
    stems: dict
    messages: Annotated[list[BaseMessage], operator.add]
    prices: dict
    reservations: list
    quote: dict
    delivery: dict


def build(llm: ChatOpenAI):
    extract = ChatPromptTemplate.from_messages([("system", "Extract the event as JSON: date, pieces [{{piece, count}}], palette, budget_eur."),
                                                ("human", "{brief}")]) | llm | JsonOutputParser()
    buyer_llm = llm.bind_tools([price_sheet, reserve_stems])

    def read_brief(state: State) -> dict:
        return {"event": extract.invoke({"brief": state["brief"]})}

    def design(state: State) -> dict:
        answer = llm.invoke([SystemMessage("Design the arrangements for the event. Answer JSON."),
                             HumanMessage(json.dumps(state["event"]))])
        return {"arrangements": json.loads(answer.content)["arrangements"]}

    def count_stems(state: State) -> dict:
        stems: dict[str, int] = {}
        for a in state["arrangements"]:
            for flower, n in a["stems"].items():
                stems[flower] = stems.get(flower, 0) + n * a["count"]
        return {"stems": stems}

    def buyer(state: State) -> dict:
        y, m, d = state["event"]["date"].split("-")
        market_day = f"{y}-{m}-{int(d) - 2:02d}"
        msgs = state.get("messages") or [SystemMessage("You buy stems at the market. Price them, then reserve them."),
                                         HumanMessage(json.dumps({"stems": state["stems"], "market_day": market_day}))]
        new = [] if state.get("messages") else msgs
        return {"messages": [*new, buyer_llm.invoke(msgs)]}

    def compute_quote(state: State) -> dict:
        sheet = next(json.loads(m.content) for m in state["messages"] if getattr(m, "name", None) == "price_sheet")
        prices = {r["flower"]: r["eur_per_stem"] for r in sheet["rows"]}
        missing = [f for f in state["stems"] if f not in prices]
        if missing:
            raise KeyError(f"no market price for {', '.join(missing)}")
        flowers = round(sum(prices[f] * n for f, n in state["stems"].items()), 2)
        labour = sum(LABOUR_PER_PIECE[a["piece"]] * a["count"] for a in state["arrangements"])
        reservations = [json.loads(m.content) for m in state["messages"] if getattr(m, "name", None) == "reserve_stems"]
        return {"prices": prices, "reservations": reservations,
                "quote": {"flowers": flowers, "labour": labour, "total": round(flowers + labour, 2)}}

    def check_budget(state: State) -> dict:
        budget = float(state["event"]["budget_eur"])
        if state["quote"]["total"] > budget:
            raise ValueError(f"quote {state['quote']['total']:.2f} EUR is over the client's budget of {budget:.0f} EUR")
        return {"quote": {**state["quote"], "budget": budget, "margin": round(budget - state["quote"]["total"], 2)}}

    def deliver(state: State) -> dict:
        return {"delivery": book_delivery.invoke({"event_date": state["event"]["date"],
                                                  "reservations": state["reservations"], "stems": state["stems"]})}

    def check_order(state: State) -> dict:
        planned = {a["piece"]: a["count"] for a in state["arrangements"]}
        for p in state["event"]["pieces"]:
            if planned.get(p["piece"]) != p["count"]:
                raise ValueError(f"the brief asks for {p['count']} {p['piece']}, the design has {planned.get(p['piece'], 0)}")
        return {}

    g = StateGraph(State)
    for name, node in [("read_brief", read_brief), ("design", design), ("count_stems", count_stems), ("buyer", buyer),
                       ("tools", ToolNode([price_sheet, reserve_stems])), ("compute_quote", compute_quote),
                       ("check_budget", check_budget), ("deliver", deliver), ("check_order", check_order)]:
        g.add_node(name, node)
    g.add_edge(START, "read_brief")
    g.add_edge("read_brief", "design")
    g.add_edge("design", "count_stems")
    g.add_edge("count_stems", "buyer")
    g.add_conditional_edges("buyer", tools_condition, {"tools": "tools", "__end__": "compute_quote"})
    g.add_edge("tools", "buyer")
    g.add_edge("compute_quote", "check_budget")
    g.add_edge("check_budget", "deliver")
    g.add_edge("deliver", "check_order")
    g.add_edge("check_order", END)
    return g.compile()


_graph: dict[str, Any] = {}


def record(inp: dict, out: Path, ctx) -> None:
    if "g" not in _graph:
        _graph["g"] = build(ChatOpenAI(base_url=ctx.server.base_url, api_key="not-needed", model=ctx.model, max_retries=0))
    tracer = TrajdebugTracer(path=str(out), name=NAME, task=inp["task"])
    try:
        _graph["g"].invoke({"brief": inp["brief"]}, config={"callbacks": [tracer]})
    except (ValueError, KeyError):
        pass


CASES = [
    {"id": "florist_1", "input": 1, "switch": "sheet-page", "kind": "truncated_result",
     "root": ("price_sheet", 1), "failure": ("compute_quote", 1),
     "description": "The market price sheet answers only its first three rows, so the quote finds no price for garden rose and spray rose."},
    {"id": "florist_2", "input": 2, "switch": "design-skip", "kind": "plan_error",
     "root": ("ChatOpenAI", 2), "failure": ("check_order", 1),
     "description": "The design model leaves the six buttonholes out of the arrangements, and the order check at the end finds the brief not covered."},
    {"id": "florist_3", "input": 3, "switch": "budget-text", "kind": "format_drift",
     "root": ("ChatOpenAI", 1), "failure": ("check_budget", 1),
     "description": "The extraction model writes the budget as the text 'EUR 1,500' instead of a number, and the budget check cannot read it."},
    {"id": "florist_4", "input": 0, "switch": "per-piece", "kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 4), "failure": ("book_delivery", 1),
     "description": "The buyer model reserves 6 garden roses, the count of one centrepiece, instead of the total the arrangements need, and the delivery booking refuses."},
    {"id": "florist_5", "input": 4, "switch": "grade-ignored", "kind": "tool_ignores_argument",
     "root": ("price_sheet", 1), "failure": ("check_budget", 1),
     "description": "The price sheet ignores the standard grade it was asked for and answers premium prices, so the quote goes over the client's budget."},
]
