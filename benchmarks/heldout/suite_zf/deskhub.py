"""Coworking desk reservations: a LangGraph StateGraph with ChatOpenAI and a tool loop, traced by TrajdebugTracer."""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "desk-hub-reservations", "langgraph", "coworking desk reservations", "jsonl"
SHAPE = "intake -> recall_notes -> triage (solo/team) -> plan_visit (LLM) -> desk_agent <-> desk_tools loop -> choose_desk (LLM) -> price_booking -> reserve"

REQUESTS = {
    "m118_week": {"member": "M-118", "text": "Desk for M-118 from 2026-03-09, 4 days, needs a monitor, party of 1."},
    "m204_team": {"member": "M-204", "text": "Desk for M-204 from 2026-03-11, 1 days, needs a whiteboard, party of 4."},
    "m077_day": {"member": "M-077", "text": "Desk for M-077 from 2026-03-12, 1 days, needs a monitor, party of 1."},
    "m301_pair": {"member": "M-301", "text": "Desk for M-301 from 2026-03-16, 2 days, needs a standing desk, party of 1."},
    "m150_team": {"member": "M-150", "text": "Desk for M-150 from 2026-03-18, 1 days, needs a screen, party of 3."},
    "m118_day": {"member": "M-118", "text": "Desk for M-118 from 2026-03-20, 1 days, needs a monitor, party of 1."},
}
REFS = ["m077_day", "m301_pair", "m150_team", "m118_day"]
MEMBERS = {
    "M-118": {"plan": "Flex 5", "floors": [1, 2], "passes_left": 4},
    "M-204": {"plan": "Team 20", "floors": [1, 2, 3], "passes_left": 12},
    "M-077": {"plan": "Flex 5", "floors": [1, 2], "passes_left": 2},
    "M-301": {"plan": "Flex 10", "floors": [1, 2, 3], "passes_left": 6},
    "M-150": {"plan": "Team 20", "floors": [1, 2, 3], "passes_left": 9},
}
NOTES = {"M-118": "likes window seats", "M-204": "team lead, books pods", "M-077": "", "M-301": "", "M-150": "",
         "M-990": "prefers the standing desks on floor 4"}
DESKS = [
    {"id": "D-1F-03", "floor": 1, "seats": 1, "equipment": ["standing desk"]},
    {"id": "D-1F-08", "floor": 1, "seats": 1, "equipment": ["monitor"]},
    {"id": "D-2F-07", "floor": 2, "seats": 1, "equipment": ["monitor", "standing desk"]},
    {"id": "D-3F-05", "floor": 3, "seats": 1, "equipment": ["whiteboard", "monitor"]},
    {"id": "P-1F-04", "floor": 1, "seats": 4, "equipment": ["screen"]},
    {"id": "P-2F-01", "floor": 2, "seats": 4, "equipment": ["whiteboard", "screen"]},
    {"id": "P-3F-02", "floor": 3, "seats": 6, "equipment": ["screen", "whiteboard"]},
    {"id": "D-4F-02", "floor": 4, "seats": 1, "equipment": ["monitor", "standing desk"]},
]
DAY_PRICE = {"Flex 5": 0.0, "Flex 10": 0.0, "Team 20": 0.0}

CASES = [
    Case("zf_dh_1", "wrong_routing", "m204_team", "triage", 1, "reserve", 1,
         "triage sends a party of four down the solo track, so a one-seat desk is reserved for four people."),
    Case("zf_dh_2", "wrong_tool_args", "m118_week", "ChatOpenAI", 2, "reserve", 1,
         "the desk agent calls search_desks with the day before the requested start date."),
    Case("zf_dh_3", "context_pollution", "m118_week", "recall_notes", 1, "reserve", 1,
         "recall_notes mixes another member's note about floor 4 into M-118's context and the model picks a floor the plan does not include."),
    Case("zf_dh_4", "off_by_one", "m118_week", "price_booking", 1, "reserve", 1,
         "price_booking counts the days from start to end inclusively once more, charging five passes for a four-day booking."),
    Case("zf_dh_5", "tool_ignores_argument", "m204_team", "search_desks", 1, "reserve", 1,
         "search_desks ignores the equipment filter and the first pod returned has no whiteboard."),
]


class ReservationRefused(RuntimeError):
    pass


class DeskState(TypedDict, total=False):
    request: str
    member_id: str
    fields: dict
    notes: list
    track: str
    plan: dict
    messages: Annotated[list, operator.add]
    candidates: list
    choice: dict
    price: dict
    result: dict


def _last_user_json(msgs: list) -> dict:
    return json.loads(msgs[-1]["content"])


def policy(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system = msgs[0]["content"]
    if system.startswith("Plan"):
        f = _last_user_json(msgs)
        return json.dumps({"start": f["start"], "days": f["days"], "needs": f["needs"], "seats": f["party"]})
    if system.startswith("You find desks"):
        ctx = json.loads(msgs[1]["content"])
        tool_msgs = [m for m in msgs if m["role"] == "tool"]
        if not tool_msgs:
            date = ctx["plan"]["start"]
            if active("zf_dh_2"):
                date = date[:-2] + f"{int(date[-2:]) - 1:02d}"
            return Reply(tool_calls=(tool_call("search_desks", {"date": date, "min_seats": ctx["seats"],
                                                                "equipment": ctx["plan"]["needs"]}),))
        if len(tool_msgs) == 1:
            return Reply(tool_calls=(tool_call("get_floor_rules", {"floors": ctx["floors"]}),))
        return "Candidates collected."
    if system.startswith("Choose"):
        ctx = _last_user_json(msgs)
        floors = ctx["floors"]
        if any("floor 4" in n for n in ctx["notes"]):
            floors = floors + [4]
        pick = next((d for d in ctx["candidates"] if d["floor"] == 4 and 4 in floors), None) or \
            next(d for d in ctx["candidates"] if d["floor"] in floors)
        return json.dumps({"desk": pick["id"], "floor": pick["floor"], "why": "matches the request"})
    return "ok"


HOLDS: dict[str, str] = {}


@tool
def lookup_member(member_id: str) -> dict:
    """Look up a coworking member's plan, allowed floors and remaining day passes."""
    return dict(MEMBERS[member_id], member=member_id)


@tool
def search_desks(date: str, min_seats: int, equipment: list[str]) -> list[dict]:
    """Search desks free on a date with at least min_seats seats and the given equipment."""
    hits = [d for d in DESKS if d["seats"] >= min_seats]
    if not active("zf_dh_5"):
        hits = [d for d in hits if all(e in d["equipment"] for e in equipment)]
    HOLDS["searched"] = date
    return [dict(d, date=date) for d in hits]


@tool
def get_floor_rules(floors: list[int]) -> dict:
    """Opening hours and quiet rules of the given floors."""
    return {str(f): {"open": "07:00", "close": "21:00", "quiet": f == 2} for f in floors}


def build(llm: ChatOpenAI) -> Any:
    tools = [search_desks, get_floor_rules]
    agent_llm = llm.bind_tools(tools)

    def intake(state: DeskState) -> dict:
        words = state["request"].replace(",", "").rstrip(".").split()
        fields = {"member": words[2], "start": words[4], "days": int(words[5]), "needs": [" ".join(words[9:words.index("party")])],
                  "party": int(words[-1])}
        member = lookup_member.invoke({"member_id": fields["member"]})
        return {"fields": fields, "member_id": fields["member"], "notes": [member]}

    def recall_notes(state: DeskState) -> dict:
        mid = state["member_id"]
        notes = [NOTES[mid]] if NOTES[mid] else []
        if active("zf_dh_3"):
            notes.append(NOTES["M-990"])
        return {"notes": state["notes"] + notes}

    def triage(state: DeskState) -> dict:
        party = state["fields"]["party"]
        track = "solo" if (party == 1 or (active("zf_dh_1") and party <= 4)) else "team"
        return {"track": track}

    def plan_visit(state: DeskState) -> dict:
        msg = llm.invoke([SystemMessage("Plan the visit: dates, needs and seats as JSON."),
                          HumanMessage(json.dumps(state["fields"]))])
        return {"plan": json.loads(msg.content)}

    def desk_agent(state: DeskState) -> dict:
        seats = 1 if state["track"] == "solo" else state["fields"]["party"]
        member = state["notes"][0]
        ctx = {"plan": state["plan"], "seats": seats, "floors": member["floors"]}
        msgs = [SystemMessage("You find desks with the tools."), HumanMessage(json.dumps(ctx))] + state.get("messages", [])
        return {"messages": [llm_call(msgs)]}

    def llm_call(msgs: list) -> AIMessage:
        return agent_llm.invoke(msgs)

    def after_agent(state: DeskState) -> str:
        last = state["messages"][-1]
        return "desk_tools" if getattr(last, "tool_calls", None) else "choose_desk"

    def choose_desk(state: DeskState) -> dict:
        found = next(json.loads(m.content) for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "search_desks")
        member = state["notes"][0]
        ctx = {"candidates": found, "floors": member["floors"], "notes": [n for n in state["notes"][1:] if isinstance(n, str)]}
        msg = llm.invoke([SystemMessage("Choose one desk; answer JSON."), HumanMessage(json.dumps(ctx))])
        choice = json.loads(msg.content)
        choice["date"] = next(d["date"] for d in found if d["id"] == choice["desk"])
        return {"candidates": found, "choice": choice}

    def price_booking(state: DeskState) -> dict:
        member = state["notes"][0]
        days = state["plan"]["days"]
        start_day = int(state["plan"]["start"][-2:])
        end_day = start_day + days - 1
        days = end_day - start_day + (2 if active("zf_dh_4") else 1)
        return {"price": {"plan": member["plan"], "days": days, "passes_used": days,
                          "amount_eur": DAY_PRICE[member["plan"]] * days}}

    def reserve(state: DeskState) -> dict:
        member = MEMBERS[state["member_id"]]
        f, choice, price = state["fields"], state["choice"], state["price"]
        desk = next(d for d in DESKS if d["id"] == choice["desk"])
        if choice["date"] != f["start"]:
            raise ReservationRefused(f"HTTP 409 {{\"error\": \"hold on {desk['id']} is for {choice['date']}, reservation "
                                     f"starts {f['start']}\"}}")
        if desk["floor"] not in member["floors"]:
            raise ReservationRefused(f"HTTP 403 {{\"error\": \"plan {member['plan']} does not include floor {desk['floor']}\"}}")
        if desk["seats"] < f["party"]:
            raise ReservationRefused(f"HTTP 422 {{\"error\": \"{desk['id']} seats {desk['seats']}; booking is for "
                                     f"{f['party']} people\"}}")
        if price["passes_used"] > member["passes_left"]:
            raise ReservationRefused(f"HTTP 402 {{\"error\": \"{state['member_id']} has {member['passes_left']} day passes "
                                     f"left; booking uses {price['passes_used']}\"}}")
        for need in f["needs"]:
            if need not in desk["equipment"]:
                raise ReservationRefused(f"HTTP 422 {{\"error\": \"{desk['id']} has no {need}\"}}")
        return {"result": {"reservation": f"RES-{desk['id']}-{f['start']}", "status": "confirmed"}}

    g = StateGraph(DeskState)
    for name, fn in [("intake", intake), ("recall_notes", recall_notes), ("triage", triage), ("plan_visit", plan_visit),
                     ("desk_agent", desk_agent), ("choose_desk", choose_desk), ("price_booking", price_booking),
                     ("reserve", reserve)]:
        g.add_node(name, fn)
    g.add_node("desk_tools", ToolNode(tools))
    g.add_edge(START, "intake")
    g.add_edge("intake", "recall_notes")
    g.add_edge("recall_notes", "triage")
    g.add_edge("triage", "plan_visit")
    g.add_edge("plan_visit", "desk_agent")
    g.add_conditional_edges("desk_agent", after_agent, ["desk_tools", "choose_desk"])
    g.add_edge("desk_tools", "desk_agent")
    g.add_edge("choose_desk", "price_booking")
    g.add_edge("price_booking", "reserve")
    g.add_edge("reserve", END)
    return g.compile()


def record(server: Any, key: str, path: Path) -> None:
    server.use(policy)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    req = REQUESTS[key]
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=req["text"])
    try:
        build(llm).invoke({"request": req["text"], "messages": []}, config={"callbacks": [tracer]})
    except ReservationRefused:
        pass
