"""An event florist's order builder (LangGraph StateGraph with a tool-calling buyer loop and a ToolNode,
trajdebug's tracer): an event brief to a design, stem counts, parallel supplier quotes, cooler space,
deliveries, a budget check and the order."""

from __future__ import annotations

import ast
import datetime as dt
import json
import math
import re
from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from . import common

NAME = "petal-and-stem-events"
ROUTE = "langgraph"
DOMAIN = "event florist: brief to design, stems, supplier quotes, cooler, deliveries, order"
SHAPE = "StateGraph: recall style -> designer(llm) -> parse -> count stems -> buyer(llm+tools) <-> ToolNode (parallel quotes, cooler, deliveries) -> budget check -> place order(tool)"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


INPUTS = {
    "rosa": {"client": "Rosa & Ines", "kind": "wedding", "date": "2025-06-14", "venue": "Old Mill barn", "palette": ["blush", "ivory"],
             "pieces": {"bridal bouquet": 1, "bridesmaid bouquet": 4, "centrepiece": 12}, "budget": 1400.0},
    "harlow": {"client": "Harlow Trust", "kind": "gala", "date": "2025-06-20", "venue": "Harlow Hall", "palette": ["white", "green"],
               "pieces": {"centrepiece": 20, "urn": 2}, "budget": 2200.0},
    "chen": {"client": "Chen family", "kind": "funeral", "date": "2025-06-11", "venue": "St Brigid's", "palette": ["white", "lilac"],
             "pieces": {"casket spray": 1, "wreath": 3}, "budget": 700.0},
    "bloom": {"client": "Bloom Street Books", "kind": "shop launch", "date": "2025-06-17", "venue": "Bloom Street", "palette": ["yellow", "orange"],
              "pieces": {"arrangement": 6}, "budget": 600.0},
    "ada": {"client": "Ada Okoye", "kind": "birthday dinner", "date": "2025-06-21", "venue": "Old Mill barn", "palette": ["coral", "peach"],
            "pieces": {"centrepiece": 8}, "budget": 650.0},
}

CASES = [
    {"id": "florist_delivery_day", "input": "rosa", "switch": "delivery_day", "fault_kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 3), "failure": ("book_delivery", 1),
     "description": "The buyer model asked for delivery on the event day itself (2025-06-14) instead of two days before, and the wholesaler's delivery booking refused it."},
    {"id": "florist_design_keys", "input": "bloom", "switch": "design_keys", "fault_kind": "format_drift",
     "root": ("ChatOpenAI", 1), "failure": ("budget_check", 1),
     "description": "The designer model answered its stem counts under 'stems_each' instead of 'per', the parser read them as 0, and the budget check found an order with no stems."},
    {"id": "florist_quote_colour", "input": "chen", "switch": "colour_ignored", "fault_kind": "tool_ignores_argument",
     "root": ("supplier_quote", 2), "root_has": "lilac", "failure": ("budget_check", 1),
     "description": "The supplier quote for lilac stock ignored the colour and quoted the catalogue's first colour, apricot, which the palette check rejected."},
    {"id": "florist_venue_memory", "input": "ada", "switch": "venue_memory", "fault_kind": "context_pollution",
     "root": ("recall_style", 1), "failure": ("supplier_quote", 3), "failure_has": "amaryllis",
     "description": "Style memory was looked up by venue and brought back a December client's amaryllis board, the design added amaryllis, and the June quote for it was refused."},
    {"id": "florist_cooler_sensor", "input": "harlow", "switch": "cooler_sensor", "fault_kind": "swallowed_error",
     "root": ("cooler_space", 1), "failure": ("submit_order", 1),
     "description": "The cooler sensor read failed and the tool answered a default 40 free buckets, so the buyer booked one delivery that the cooler could not hold."},
]

STYLE_BY_CLIENT = {"Rosa & Ines": {"notes": "loose garden style, trailing greenery"}, "Harlow Trust": {"notes": "tall, formal"},
                   "Chen family": {"notes": "calm, classic"}, "Bloom Street Books": {"notes": "bright, books as props"},
                   "Ada Okoye": {"notes": "low, candlelit"}}
STYLE_BY_VENUE = {"Old Mill barn": {"client": "Marlow wedding, 2024-12-07", "notes": "deep red amaryllis, winter greenery, candlelit"}}
VARIETY = {"blush": "garden rose", "ivory": "ranunculus", "white": "lisianthus", "green": "eucalyptus", "lilac": "stock",
           "yellow": "tulip", "orange": "ranunculus", "coral": "garden rose", "peach": "carnation"}
PER = {"bridal bouquet": (12, 8), "bridesmaid bouquet": (6, 4), "centrepiece": (8, 5), "urn": (25, 15),
       "casket spray": (40, 30), "wreath": (20, 15), "arrangement": (10, 6)}
CATALOG = {"garden rose": (["white", "blush", "coral"], 2.4), "ranunculus": (["white", "ivory", "orange"], 1.6),
           "lisianthus": (["white", "lilac"], 1.5), "eucalyptus": (["green"], 0.6), "stock": (["apricot", "white", "lilac"], 1.3),
           "tulip": (["yellow", "white"], 0.9), "carnation": (["white", "peach"], 0.7), "amaryllis": (["deep red"], 4.5)}
SEASON_OUT = {"amaryllis": "June"}
COOLER_FREE = {"2025-06-18": 10}

DESIGN_SYS = "You are a florist designing an event. Answer with JSON: {\"arrangements\": [{\"piece\", \"count\", \"stems\": [{\"variety\", \"color\", \"per\"}]}]}."
BUYER_SYS = ("You are the florist's buyer. Quote every line with supplier_quote (in parallel), check cooler_space for the delivery day "
             "(two days before the event), then book deliveries with book_delivery (25 stems per bucket; split over two days if the cooler is short).")


def _results(request):
    out = {}
    for name, text in common.tool_results(request):
        try:
            value = json.loads(text)
        except ValueError:
            value = ast.literal_eval(text)
        out.setdefault(name, []).append(value)
    return out


def brain(request):
    system = common.system_of(request)
    user = common.last_user(request)
    if system.startswith("You are a florist"):
        brief = json.loads(user)
        key = "stems_each" if _on("design_keys") else "per"
        extra = "amaryllis" in json.dumps(brief.get("style", {}))
        arrangements = []
        for piece, count in brief["pieces"].items():
            a, b = PER[piece]
            stems = [{"variety": VARIETY[brief["palette"][0]], "color": brief["palette"][0], key: a},
                     {"variety": VARIETY[brief["palette"][1]], "color": brief["palette"][1], key: b}]
            if extra:
                stems.append({"variety": "amaryllis", "color": "deep red", key: 2})
            arrangements.append({"piece": piece, "count": count, "stems": stems})
        return json.dumps({"arrangements": arrangements})
    if system.startswith("You are the florist's buyer"):
        first = next(m for m in common.messages_of(request) if m.get("role") == "user")
        order = json.loads(common._text(first["content"]))
        got = _results(request)
        event = dt.date.fromisoformat(order["event_date"])
        day = (event - dt.timedelta(days=2)).isoformat()
        if "cooler_space" not in got:
            calls = [tool_call("supplier_quote", {"variety": l["variety"], "color": l["color"], "stems": l["stems"]}) for l in order["lines"]]
            return Reply(tool_calls=tuple(calls) + (tool_call("cooler_space", {"date": day}),))
        if "book_delivery" not in got:
            stems = sum(q["stems"] for q in got.get("supplier_quote", []))
            buckets = max(1, math.ceil(stems / 25))
            free = got["cooler_space"][0]["free_buckets"]
            if _on("delivery_day"):
                day = order["event_date"]
            if free >= buckets:
                return Reply(tool_calls=(tool_call("book_delivery", {"date": day, "buckets": buckets}),))
            early = (event - dt.timedelta(days=3)).isoformat()
            return Reply(tool_calls=(tool_call("book_delivery", {"date": early, "buckets": buckets - free}),
                                     tool_call("book_delivery", {"date": day, "buckets": free})))
        total = round(sum(q["total"] for q in got.get("supplier_quote", [])), 2)
        return f"Quotes in, {total:.2f} for stems; deliveries booked: " + ", ".join(f"{d['date']} ({d['buckets']} buckets)" for d in got["book_delivery"])
    return "Noted."


@tool
def supplier_quote(variety: str, color: str, stems: int) -> dict:
    """Quote stems from the wholesaler."""
    if variety in SEASON_OUT and SEASON_OUT[variety] == CURRENT["month"]:
        raise ValueError(f"{variety} is not available from the wholesaler in {CURRENT['month']}")
    colors, price = CATALOG[variety]
    if _on("colour_ignored"):
        color = colors[0]
    return {"variety": variety, "color": color, "stems": stems, "unit_price": price, "total": round(price * stems, 2)}


@tool
def cooler_space(date: str) -> dict:
    """Free buckets in the walk-in cooler on a date."""
    try:
        if _on("cooler_sensor"):
            raise ConnectionError("cooler sensor hub unreachable")
        return {"date": date, "free_buckets": COOLER_FREE.get(date, 30)}
    except ConnectionError:
        return {"date": date, "free_buckets": 40}


@tool
def book_delivery(date: str, buckets: int) -> dict:
    """Book a wholesaler delivery slot."""
    if date >= CURRENT["event_date"]:
        raise ValueError(f"delivery on {date} leaves no conditioning time before the event on {CURRENT['event_date']}")
    return {"date": date, "buckets": buckets, "slot": "06:00-08:00"}


@tool
def submit_order(client: str, deliveries: list[dict], total: float) -> dict:
    """Submit the order to the wholesaler."""
    for d in deliveries:
        free = COOLER_FREE.get(d["date"], 30)
        if d["buckets"] > free:
            raise RuntimeError(f"cooler has {free} free buckets on {d['date']}, delivery needs {d['buckets']}")
    return {"order": f"WO-{sum(map(ord, client)) % 10000:04d}", "total": total}


TOOLS = [supplier_quote, cooler_space, book_delivery]


class Event(TypedDict, total=False):
    brief: dict
    style: dict
    design: list
    lines: list
    messages: Annotated[list[AnyMessage], add_messages]
    checked: dict
    order: dict


def build(llm):
    buyer_llm = llm.bind_tools(TOOLS)

    def recall_style(state: Event) -> dict:
        b = state["brief"]
        style = STYLE_BY_VENUE.get(b["venue"]) if _on("venue_memory") else None
        return {"style": style or STYLE_BY_CLIENT[b["client"]]}

    def designer(state: Event) -> dict:
        b = state["brief"]
        reply = llm.invoke([SystemMessage(DESIGN_SYS), HumanMessage(json.dumps({**b, "style": state["style"]}))])
        return {"design": [reply.content]}

    def parse_design(state: Event) -> dict:
        data = json.loads(state["design"][0])
        rows = [{"piece": a["piece"], "count": int(a["count"]),
                 "stems": [{"variety": s["variety"], "color": s["color"], "per": int(s.get("per", 0))} for s in a["stems"]]}
                for a in data["arrangements"]]
        return {"design": rows}

    def count_stems(state: Event) -> dict:
        totals: dict = {}
        for a in state["design"]:
            for s in a["stems"]:
                k = (s["variety"], s["color"])
                totals[k] = totals.get(k, 0) + s["per"] * a["count"]
        lines = [{"variety": v, "color": c, "stems": n} for (v, c), n in totals.items() if n > 0]
        order = {"event_date": state["brief"]["date"], "palette": state["brief"]["palette"], "lines": lines}
        return {"lines": lines, "messages": [SystemMessage(BUYER_SYS), HumanMessage(json.dumps(order))]}

    def buyer(state: Event) -> dict:
        return {"messages": [buyer_llm.invoke(state["messages"])]}

    def budget_check(state: Event) -> dict:
        b = state["brief"]
        quotes, deliveries = [], []
        for m in state["messages"]:
            if getattr(m, "type", "") == "tool":
                v = json.loads(m.content)
                (quotes if m.name == "supplier_quote" else deliveries if m.name == "book_delivery" else []).append(v)
        pieces = sum(a["count"] for a in state["design"])
        stems = sum(q["stems"] for q in quotes)
        if stems == 0:
            raise ValueError(f"design covers {pieces} pieces but the order holds 0 stems")
        for q in quotes:
            if q["color"] not in b["palette"] and q["variety"] != "amaryllis":
                raise ValueError(f"quote for {q['variety']} is {q['color']}, palette is {'/'.join(b['palette'])}")
        total = round(sum(q["total"] for q in quotes) * 1.35 + 40 * pieces ** 0.5, 2)
        if total > b["budget"]:
            raise ValueError(f"order total {total:.2f} over the budget {b['budget']:.2f}")
        return {"checked": {"total": total, "deliveries": deliveries}}

    def place_order(state: Event) -> dict:
        c = state["checked"]
        return {"order": submit_order.invoke({"client": state["brief"]["client"], "deliveries": c["deliveries"], "total": c["total"]})}

    g = StateGraph(Event)
    for fn in (recall_style, designer, parse_design, count_stems, buyer, budget_check, place_order):
        g.add_node(fn.__name__, fn)
    g.add_node("tools", ToolNode(TOOLS, handle_tool_errors=False))
    g.add_edge(START, "recall_style")
    g.add_edge("recall_style", "designer")
    g.add_edge("designer", "parse_design")
    g.add_edge("parse_design", "count_stems")
    g.add_edge("count_stems", "buyer")
    g.add_conditional_edges("buyer", tools_condition, {"tools": "tools", END: "budget_check"})
    g.add_edge("tools", "buyer")
    g.add_edge("budget_check", "place_order")
    g.add_edge("place_order", END)
    return g.compile()


CURRENT: dict = {}
_GRAPH: dict = {}


def record(key: str, path: str) -> None:
    brief = INPUTS[key]
    CURRENT.update(event_date=brief["date"], month=dt.date.fromisoformat(brief["date"]).strftime("%B"))
    if _GRAPH.get("url") != common.SERVER.base_url:
        llm = ChatOpenAI(base_url=common.SERVER.base_url, api_key="not-needed", model=common.SERVER.model, max_retries=0)
        _GRAPH.update(graph=build(llm), url=common.SERVER.base_url)
    task = f"{brief['kind']} for {brief['client']} on {brief['date']}"
    tracer = TrajdebugTracer(path=path, name=NAME, task=task)
    try:
        _GRAPH["graph"].invoke({"brief": brief}, config={"callbacks": [tracer], "recursion_limit": 20})
    except Exception:
        pass
