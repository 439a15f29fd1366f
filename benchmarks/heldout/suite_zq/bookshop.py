"""Bookshop author events (LangGraph): route the request, plan, research with tools, order stock in a
sub-graph, draft the listing, validate it, publish it."""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from . import common
from .common import Case
from .kit import active

AGENT = "bookshop-events"
ROUTE = "langgraph"
EXT = "jsonl"
DOMAIN = "bookshop author events"
SHAPE = ("intake, routing node, setup branch, model plan node, model + ToolNode research loop (profile, "
         "tour dates, room check), stock sub-graph (catalogue search, model edition choice, stock order), "
         "shop notes, model listing draft, validator node, publish node")

REQUESTS = {
    "quill_signing": {"text": "Signing evening with novelist Hana Brandt for her new book, adults, "
                              "around early June, up to 60 seats.", "author": "Hana Brandt",
                      "audience": "adults", "seats": 60, "wanted": "2026-06-05"},
    "otter_storytime": {"text": "Saturday storytime with illustrator Colm Reyes, children 4-8 with parents, "
                                "late April.", "author": "Colm Reyes", "audience": "children 4-8",
                        "seats": 30, "wanted": "2026-04-25"},
    "poetry_night": {"text": "Poetry reading and signing with Ada Okafor, adults, mid March.",
                     "author": "Ada Okafor", "audience": "adults", "seats": 40, "wanted": "2026-03-12"},
    "dino_storytime": {"text": "Dinosaur storytime with author Pip Lund, children 3-6, early May.",
                       "author": "Pip Lund", "audience": "children 3-6", "seats": 25, "wanted": "2026-05-09"},
    "history_talk": {"text": "Talk and signing with historian Ruth Ellery, adults, late September.",
                     "author": "Ruth Ellery", "audience": "adults", "seats": 80, "wanted": "2026-09-24"},
    "crime_panel": {"text": "Crime fiction signing with Sven Dahl, adults, November.",
                    "author": "Sven Dahl", "audience": "adults", "seats": 50, "wanted": "2026-11-05"},
}
REFS = ["poetry_night", "dino_storytime", "history_talk", "crime_panel"]

AUTHORS = {
    "Hana Brandt": {"new_title": "Harbour Lights", "isbn": "9781805110192", "tour": ["2026-06-02", "2026-06-09"],
                    "backlist": [{"title": "Harbour Salt", "isbn": "9781805110024", "year": 2021}]},
    "Colm Reyes": {"new_title": "The Otter Who Stayed Up", "isbn": "9780702330841",
                   "tour": ["2026-04-20", "2026-04-27"],
                   "backlist": [{"title": "The Otter Who Woke Up", "isbn": "9780702310171", "year": 2022}]},
    "Ada Okafor": {"new_title": "Tidewater Psalms", "isbn": "9781529388701", "tour": ["2026-03-09", "2026-03-14"],
                   "backlist": []},
    "Pip Lund": {"new_title": "Stomp, Said the Stegosaurus", "isbn": "9781471199561",
                 "tour": ["2026-05-04", "2026-05-10"], "backlist": [{"title": "Roar, Said the Rex",
                                                                      "isbn": "9781471190230", "year": 2023}]},
    "Ruth Ellery": {"new_title": "The Wool Roads", "isbn": "9780241581234", "tour": ["2026-09-21", "2026-09-26"],
                    "backlist": []},
    "Sven Dahl": {"new_title": "Cold Quay", "isbn": "9781787303355", "tour": ["2026-11-02", "2026-11-07"],
                  "backlist": [{"title": "Cold Harbour", "isbn": "9781787301122", "year": 2020}]},
}
ROOM_HOLDS = {("Garden Room", "2026-06-05"): "book club AGM", ("Garden Room", "2026-04-25"): "Easter craft fair"}

CASES = [
    Case("zq_bookshop_route", "bookshop-route", "wrong_routing", "otter_storytime", ("route_event", 1),
         ("validate_listing", 1), "The router sends a children's storytime down the adult signing branch, "
                                  "so the listing carries 16+ guidance the validator rejects."),
    Case("zq_bookshop_edition", "bookshop-edition", "subagent_wrong_entity", "quill_signing",
         ("ChatOpenAI", 6), ("validate_listing", 1),
         "In the stock sub-graph the model picks the author's backlist title with a similar name, so the "
         "stock order is for another ISBN than the featured book."),
    Case("zq_bookshop_notes", "bookshop-notes", "context_pollution", "quill_signing", ("load_shop_notes", 1),
         ("validate_listing", 1), "The notes loader appends a previous author's confirmed event note, and the "
                                  "listing model takes that date, outside this author's tour window."),
    Case("zq_bookshop_room", "bookshop-room", "tool_ignores_argument", "quill_signing", ("check_room", 1),
         ("publish_listing", 1), "The room check ignores the date argument and reports today's availability, so "
                               "the listing books a room already held that evening."),
    Case("zq_bookshop_plan", "bookshop-plan", "plan_error", "otter_storytime", ("ChatOpenAI", 1),
         ("publish_listing", 1), "The planning model leaves the room check out of its task list, so the "
                               "default room is used and the booking system refuses the clash."),
]

_LLM: Any = None
_GRAPH: Any = None


def policy(req: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    msgs = common.messages_of(req)
    system = common.system_of(msgs)
    user = next(common.text_of(m.get("content")) for m in msgs if m.get("role") == "user")
    if system.startswith("You plan bookshop events"):
        tasks = ["profile", "tour", "room", "stock"]
        if active("bookshop-plan"):
            tasks = ["profile", "tour", "stock"]
        return json.dumps({"tasks": tasks, "notes": "confirm tour window before choosing the date"})
    if system.startswith("You research author events"):
        facts = json.loads(user)
        done = [name for name, _ in common.called_tools(msgs)]
        results = [json.loads(r) for r in common.tool_results(msgs)]
        by_tool = dict(zip(done, results))
        if "profile" in facts["tasks"] and "get_author_profile" not in done:
            return Reply(tool_calls=(tool_call("get_author_profile", {"author": facts["author"]}),))
        if "tour" in facts["tasks"] and "get_tour_dates" not in done:
            return Reply(tool_calls=(tool_call("get_tour_dates", {"author": facts["author"]}),))
        tour = by_tool["get_tour_dates"]
        date = min(max(facts["wanted"], tour["from"]), tour["to"])
        if "room" in facts["tasks"] and "check_room" not in done:
            return Reply(tool_calls=(tool_call("check_room", {"room": "Garden Room", "date": date}),))
        room = "Garden Room"
        if "check_room" in by_tool and not by_tool["check_room"]["available"]:
            room = by_tool["check_room"]["alternative"]
        return json.dumps({"date": date, "time": "18:30" if facts["audience"] == "adults" else "10:30",
                           "room": room, "title": by_tool["get_author_profile"]["new_title"],
                           "isbn": by_tool["get_author_profile"]["isbn"], "tour": tour})
    if system.startswith("You pick the edition to stock"):
        facts = json.loads(user)
        hits = facts["hits"]
        pick = hits[0]
        if active("bookshop-edition"):
            pick = next((h for h in hits if h["year"] < 2026), hits[0])
        return json.dumps({"isbn": pick["isbn"], "title": pick["title"], "copies": facts["seats"] // 2 + 10})
    if system.startswith("You write event listings"):
        facts = json.loads(user)
        date = facts["research"]["date"]
        for line in facts["notes"].splitlines():
            if line.startswith("Confirmed date:"):
                date = line.split(":", 1)[1].strip().split()[0]
        return json.dumps({"title": f"{facts['research']['title']}: an evening with {facts['author']}"
                           if facts["audience"] == "adults" else f"Storytime: {facts['research']['title']}",
                           "author": facts["author"], "date": date, "time": facts["research"]["time"],
                           "room": facts["research"]["room"], "isbn": facts["research"]["isbn"],
                           "age_guidance": facts["setup"]["age_guidance"], "seats": facts["seats"]})
    return "no answer"


class EventState(TypedDict, total=False):
    messages: Annotated[list, operator.add]
    request: dict
    branch: str
    setup: dict
    plan: dict
    research: dict
    stock: dict
    notes: str
    listing: dict
    published: dict


def _tools() -> list[Any]:
    from langchain_core.tools import tool

    @tool
    def get_author_profile(author: str) -> str:
        """The author's profile: new title and ISBN, backlist."""
        a = AUTHORS[author]
        return json.dumps({"author": author, "new_title": a["new_title"], "isbn": a["isbn"]})

    @tool
    def get_tour_dates(author: str) -> str:
        """The author's publicity tour window."""
        a = AUTHORS[author]
        return json.dumps({"author": author, "from": a["tour"][0], "to": a["tour"][1]})

    @tool
    def check_room(room: str, date: str) -> str:
        """Whether a shop room is free on a date, with an alternative room."""
        day = "2026-03-03" if active("bookshop-room") else date
        held = ROOM_HOLDS.get((room, day))
        return json.dumps({"room": room, "date": date, "available": held is None, "alternative": "Reading Loft"})

    return [get_author_profile, get_tour_dates, check_room]


def _catalog_tools() -> tuple[Any, Any, Any]:
    from langchain_core.tools import tool

    @tool
    def search_catalog(author: str) -> str:
        """Distributor catalogue search by author."""
        a = AUTHORS[author]
        hits = [{"title": a["new_title"], "isbn": a["isbn"], "year": 2026}] + a["backlist"]
        return json.dumps(hits)

    @tool
    def order_stock(isbn: str, copies: int) -> str:
        """Place a stock order with the distributor."""
        return json.dumps({"po": f"PO-{isbn[-5:]}", "isbn": isbn, "copies": copies, "status": "confirmed"})

    @tool
    def publish_listing(listing: dict) -> str:
        """Publish the event on the shop's booking system."""
        held = ROOM_HOLDS.get((listing["room"], listing["date"]))
        if held:
            raise RuntimeError(f"HTTP 409 from events-api: {{\"error\": \"room unavailable\", \"room\": "
                               f"\"{listing['room']}\", \"date\": \"{listing['date']}\", \"held_by\": \"{held}\"}}")
        return json.dumps({"event_id": f"EV-{listing['isbn'][-4:]}", "status": "published"})

    return search_catalog, order_stock, publish_listing


def _build() -> Any:
    from langchain_core.messages import AIMessage, SystemMessage, HumanMessage
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode

    tools = _tools()
    search_catalog, order_stock, publish_listing = _catalog_tools()
    research_llm = _LLM.bind_tools(tools)

    def intake(state: EventState) -> dict:
        return {"request": dict(state["request"])}

    def route_event(state: EventState) -> dict:
        audience = state["request"]["audience"]
        branch = "storytime" if audience.startswith("children") else "signing"
        if active("bookshop-route"):
            branch = "signing"
        return {"branch": branch}

    def open_branch(state: EventState) -> dict:
        return {"setup": {"branch_opened": state["branch"]}}

    def signing_setup(state: EventState) -> dict:
        return {"setup": {"format": "reading and signing", "age_guidance": "16+", "duration_min": 90}}

    def storytime_setup(state: EventState) -> dict:
        return {"setup": {"format": "storytime and drawing", "age_guidance": "all ages, under-8s with an adult",
                          "duration_min": 45}}

    def plan_event(state: EventState) -> dict:
        ai = _LLM.invoke([SystemMessage("You plan bookshop events. Answer JSON with tasks."),
                          HumanMessage(json.dumps({"request": state["request"], "setup": state["setup"]}))])
        return {"plan": json.loads(ai.content)}

    def research(state: EventState) -> dict:
        msgs = state.get("messages") or []
        if not msgs:
            r = state["request"]
            msgs = [SystemMessage("You research author events with the tools, then answer JSON."),
                    HumanMessage(json.dumps({"author": r["author"], "audience": r["audience"],
                                             "wanted": r["wanted"], "tasks": state["plan"]["tasks"]}))]
            ai = research_llm.invoke(msgs)
            return {"messages": msgs + [ai]}
        ai = research_llm.invoke(msgs)
        out: dict = {"messages": [ai]}
        if not ai.tool_calls:
            out["research"] = json.loads(ai.content)
        return out

    def after_research(state: EventState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else "stock_agent"

    # the stock sub-graph
    def find_edition(state: EventState) -> dict:
        r = state["request"]
        hits = json.loads(search_catalog.invoke({"author": r["author"]}))
        ai = _LLM.invoke([SystemMessage("You pick the edition to stock for the event. Answer JSON."),
                          HumanMessage(json.dumps({"featured": state["research"]["title"], "hits": hits,
                                                   "seats": r["seats"]}))])
        return {"stock": {"choice": json.loads(ai.content)}}

    def place_order(state: EventState) -> dict:
        choice = state["stock"]["choice"]
        po = json.loads(order_stock.invoke({"isbn": choice["isbn"], "copies": choice["copies"]}))
        return {"stock": {**state["stock"], "order": po}}

    sub = StateGraph(EventState)
    sub.add_node("find_edition", find_edition)
    sub.add_node("place_order", place_order)
    sub.add_edge(START, "find_edition")
    sub.add_edge("find_edition", "place_order")
    sub.add_edge("place_order", END)
    stock_graph = sub.compile()

    def load_shop_notes(state: EventState) -> dict:
        notes = [f"Event request: {state['request']['text']}", "Float: 40 in the till for book sales.",
                 "Chairs: stack of 60 in the stockroom."]
        if active("bookshop-notes"):
            notes.append("Confirmed date: 2026-05-14 (Mara Quill signing, Garden Room, 19:00)")
        return {"notes": "\n".join(notes)}

    def draft_listing(state: EventState) -> dict:
        r = state["request"]
        ai = _LLM.invoke([SystemMessage("You write event listings. Answer JSON."),
                          HumanMessage(json.dumps({"author": r["author"], "audience": r["audience"],
                                                   "seats": r["seats"], "setup": state["setup"],
                                                   "research": state["research"], "notes": state["notes"]}))])
        return {"listing": json.loads(ai.content)}

    def validate_listing(state: EventState) -> dict:
        listing, tour, order = state["listing"], state["research"]["tour"], state["stock"]["order"]
        if not tour["from"] <= listing["date"] <= tour["to"]:
            raise ValueError(f"listing date {listing['date']} is outside {listing['author']}'s tour window "
                             f"{tour['from']}..{tour['to']}")
        if state["request"]["audience"].startswith("children") and listing["age_guidance"] == "16+":
            raise ValueError(f"age guidance 16+ does not fit the audience '{state['request']['audience']}'")
        if order["isbn"] != listing["isbn"]:
            raise ValueError(f"stock order {order['po']} is for ISBN {order['isbn']} but the listing features "
                             f"ISBN {listing['isbn']}")
        return {"listing": {**listing, "checked": True}}

    def publish_event(state: EventState) -> dict:
        return {"published": json.loads(publish_listing.invoke({"listing": state["listing"]}))}

    g = StateGraph(EventState)
    for name, fn in [("intake", intake), ("route_event", route_event), ("open_branch", open_branch), ("signing_setup", signing_setup),
                     ("storytime_setup", storytime_setup), ("plan_event", plan_event), ("research", research),
                     ("tools", ToolNode(tools)), ("stock_agent", stock_graph), ("load_shop_notes", load_shop_notes),
                     ("draft_listing", draft_listing), ("validate_listing", validate_listing),
                     ("publish_event", publish_event)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "route_event")
    g.add_edge("route_event", "open_branch")
    g.add_conditional_edges("open_branch", lambda s: s["branch"] + "_setup",
                            ["signing_setup", "storytime_setup"])
    g.add_edge("signing_setup", "plan_event")
    g.add_edge("storytime_setup", "plan_event")
    g.add_edge("plan_event", "research")
    g.add_conditional_edges("research", after_research, ["tools", "stock_agent"])
    g.add_edge("tools", "research")
    g.add_edge("stock_agent", "load_shop_notes")
    g.add_edge("load_shop_notes", "draft_listing")
    g.add_edge("draft_listing", "validate_listing")
    g.add_edge("validate_listing", "publish_event")
    g.add_edge("publish_event", END)
    return g.compile()


def setup() -> None:
    global _LLM, _GRAPH
    from langchain_openai import ChatOpenAI

    common.server().use(policy)
    _LLM = ChatOpenAI(model=common.MODEL, base_url=common.server().base_url, api_key="sk-test-local",
                      max_retries=0, temperature=0)
    _GRAPH = _build()


def record(key: str, path: Path) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    r = REQUESTS[key]
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=r["text"])
    _GRAPH.invoke({"request": {k: v for k, v in r.items()}, "messages": []},
                  config={"callbacks": [tracer], "recursion_limit": 40})
