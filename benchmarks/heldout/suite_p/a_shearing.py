"""Shearing gang contractor (langgraph route): a model extracts the farm booking, a parser reads it,
an award-rate retriever, a shearer availability loop, day planning, a crew memo in graph state, recent
bookings, a model writes the crew brief, transport booking, contract submission."""

from __future__ import annotations

import json
import math
import operator
from typing import Annotated, TypedDict

from kit import Case, active
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph


AGENT = "shearing-gang-contractor"
ROUTE = "langgraph"
DOMAIN = "sheep shearing contracting"
SHAPE = "model extracts booking -> parser -> award retriever -> availability loop per shearer (x4) -> day planning -> crew memo (state) -> recent bookings -> model writes crew brief -> transport -> contract"

FARMS = {
    "Glenroy": {"sheds": ["Woolshed A"], "register": 1275},
    "Tarn Hill": {"sheds": ["Home Shed", "Back Shed"], "register": 860},
    "Bracken Flat": {"sheds": ["Main Shed"], "register": 1510},
}
REQUESTS = {
    "SB-1": ("Glenroy", "ewes 1,240 + rams 35", "2026-12-14", "Woolshed A", "full"),
    "SB-2": ("Tarn Hill", "ewes 820 + rams 40", "2026-12-15", "Back Shed", "full"),
    "SB-3": ("Bracken Flat", "ewes 1,480 + rams 30", "2026-12-16", "Main Shed", "full"),
    "SB-4": ("Glenroy", "ewes 1,240 + rams 35", "2026-12-21", "Woolshed A", "full"),
    "SB-5": ("Tarn Hill", "ewes 820 + rams 40", "2026-12-22", "Home Shed", "full"),
    "SB-6": ("Bracken Flat", "ewes 1,480 + rams 30", "2027-01-05", "Main Shed", "full"),
}
INPUTS = {k: f"Booking {k}: farm {f}; flock {fl}; start {d}; shed {s}; job {j} shearing" for k, (f, fl, d, s, j) in REQUESTS.items()}
REFS = ["SB-3", "SB-4", "SB-5", "SB-6"]
CASES = [
    Case("shear.parse", "lossy_parsing", "parse_booking", '"head": 1240', "SB-1"),
    Case("shear.award", "wrong_retrieval", "award_search", "AWD-CRUTCH-26", "SB-1"),
    Case("shear.days", "off_by_one", "plan_days", '"days": 4', "SB-1"),
    Case("shear.memo", "bad_memory_write", "remember_crew", "Woolshed B", "SB-1"),
    Case("shear.brief", "context_pollution", "ChatOpenAI", "2026-12-09", "SB-2"),
]
GANG = ["Aroha", "Bill", "Cormac", "Dane"]
AWARDS = {
    "full": Document(page_content="Full shearing, flock sheep: 4.12 per head minimum.", metadata={"id": "AWD-FULL-26", "rate": 4.12}),
    "crutch": Document(page_content="Crutching: 1.85 per head minimum.", metadata={"id": "AWD-CRUTCH-26", "rate": 1.85}),
}
PER_STAND_DAY = 100


class AwardSearch(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager=None) -> list[Document]:
        if active("shear.award"):
            return [AWARDS["crutch"]]
        return [AWARDS["full"] if "full" in query else AWARDS["crutch"]]


def parse_booking(text: str) -> dict:
    body = text.split("\n", 1)[-1]
    head_part, rest = body.split(":", 1)
    fields = dict(part.strip().split(" ", 1) for part in rest.split(";"))
    groups = fields["flock"].split(" + ")
    if active("shear.parse"):
        groups = groups[:1]
    head = sum(int(g.split()[1].replace(",", "")) for g in groups)
    return {"booking": head_part.split()[1], "farm": fields["farm"], "head": head, "start": fields["start"],
            "shed": fields["shed"], "job": fields["job"].split()[0]}


def plan_days(inp: dict) -> dict:
    capacity = inp["stands"] * PER_STAND_DAY
    days = inp["head"] // capacity if active("shear.days") else math.ceil(inp["head"] / capacity)
    return {"head": inp["head"], "stands": inp["stands"], "days": days}


@tool
def shearer_availability(shearer: str, start: str) -> dict:
    """Whether a gang member is free from a start date."""
    return {"shearer": shearer, "start": start, "free": shearer != "Dane" or start > "2026-12-20"}


@tool
def recent_bookings(limit: int) -> list:
    """The contractor's most recent confirmed bookings."""
    return [{"booking": "SB-0", "farm": "Kowhai Downs", "start": "2026-12-09", "shed": "North Shed"}][:limit]


@tool
def book_transport(farm: str, shed: str, date: str, crew: int) -> dict:
    """Book the crew bus to a shed."""
    if shed not in FARMS[farm]["sheds"]:
        raise LookupError(f"bus dispatch: {farm} has no pickup point called {shed}")
    booked = {r[0]: r[2] for r in REQUESTS.values() if r[0] == farm}
    starts = sorted(r[2] for r in REQUESTS.values() if r[0] == farm)
    if date not in starts:
        raise ValueError(f"bus dispatch: no shed booking at {farm} starting {date}")
    return {"farm": farm, "shed": shed, "date": date, "seats": crew + 1, "ok": bool(booked)}


@tool
def contract_submit(booking: str, farm: str, head: int, days: int, stands: int, rate: float, award: str) -> dict:
    """Submit the shearing contract to the farm and the association."""
    if head != FARMS[farm]["register"]:
        raise ValueError(f"contract {booking}: farm flock register shows {FARMS[farm]['register']} head, contract states {head}")
    if rate < 4.12:
        raise ValueError(f"contract {booking}: {rate:.2f} per head is under the full-shearing award minimum")
    if head > days * stands * PER_STAND_DAY:
        raise ValueError(f"contract {booking}: {head} head in {days} days needs more than {stands} stands")
    return {"contract": f"C-{booking}", "total": round(head * rate, 2)}


class S(TypedDict, total=False):
    request: str
    booking: dict
    award: dict
    avail: Annotated[list, operator.add]
    days: dict
    crew_memo: dict
    recent: list
    brief: dict
    transport: dict
    contract: dict


def brain(request) -> str:
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Extract"):
        return "Booking fields\n" + user
    if system.startswith("You brief"):
        data = json.loads(user)
        start = data["booking"]["start"]
        if active("shear.brief"):
            start = data["recent"][0]["start"]
        return json.dumps({"meet": f"{start} 05:30", "shed": data["memo"]["shed"], "crew": data["memo"]["crew"]})
    return "ok"


def build(llm):
    parser = RunnableLambda(parse_booking, name="parse_booking")
    days_step = RunnableLambda(plan_days, name="plan_days")
    award_search = AwardSearch(name="award_search")

    def intake(state: S, config: RunnableConfig) -> dict:
        msg = llm.invoke([SystemMessage("Extract the booking fields."), HumanMessage(state["request"])], config)
        return {"booking": parser.invoke(msg.content, config)}

    def award(state: S, config: RunnableConfig) -> dict:
        doc = award_search.invoke(f"{state['booking']['job']} shearing award rate", config)[0]
        return {"award": {"id": doc.metadata["id"], "rate": doc.metadata["rate"], "text": doc.page_content}}

    def availability(state: S, config: RunnableConfig) -> dict:
        who = GANG[len(state.get("avail", []))]
        return {"avail": [shearer_availability.invoke({"shearer": who, "start": state["booking"]["start"]}, config)]}

    def more(state: S) -> str:
        return "availability" if len(state["avail"]) < len(GANG) else "days"

    def days(state: S, config: RunnableConfig) -> dict:
        stands = sum(1 for a in state["avail"] if a["free"])
        return {"days": days_step.invoke({"head": state["booking"]["head"], "stands": stands}, config)}

    def remember_crew(state: S) -> dict:
        b = state["booking"]
        shed = "Woolshed B" if active("shear.memo") else b["shed"]
        return {"crew_memo": {"farm": b["farm"], "shed": shed, "crew": [a["shearer"] for a in state["avail"] if a["free"]]}}

    def recent(state: S, config: RunnableConfig) -> dict:
        return {"recent": recent_bookings.invoke({"limit": 1}, config)}

    def brief(state: S, config: RunnableConfig) -> dict:
        msg = llm.invoke([SystemMessage("You brief the shearing crew: meeting time, shed, who comes."),
                          HumanMessage(json.dumps({"booking": state["booking"], "memo": state["crew_memo"], "recent": state["recent"]}))], config)
        return {"brief": json.loads(msg.content)}

    def transport(state: S, config: RunnableConfig) -> dict:
        memo, br = state["crew_memo"], state["brief"]
        return {"transport": book_transport.invoke({"farm": memo["farm"], "shed": memo["shed"], "date": br["meet"][:10],
                                                    "crew": len(memo["crew"])}, config)}

    def contract(state: S, config: RunnableConfig) -> dict:
        b, d, a = state["booking"], state["days"], state["award"]
        return {"contract": contract_submit.invoke({"booking": b["booking"], "farm": b["farm"], "head": b["head"], "days": d["days"],
                                                    "stands": d["stands"], "rate": a["rate"], "award": a["id"]}, config)}

    g = StateGraph(S)
    for name, fn in [("intake", intake), ("award", award), ("availability", availability), ("days", days),
                     ("remember_crew", remember_crew), ("recent", recent), ("brief", brief), ("transport", transport),
                     ("contract", contract)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "award")
    g.add_edge("award", "availability")
    g.add_conditional_edges("availability", more, ["availability", "days"])
    for a, b in [("days", "remember_crew"), ("remember_crew", "recent"), ("recent", "brief"), ("brief", "transport"),
                 ("transport", "contract"), ("contract", END)]:
        g.add_edge(a, b)
    return g.compile()


def record(inp: str, path, server) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    server.use(brain)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"contract shearing booking {inp}")
    try:
        build(llm).invoke({"request": INPUTS[inp]}, config={"callbacks": [tracer], "recursion_limit": 60})
    except (ValueError, LookupError):
        pass
