"""Boatyard haul-out booking (langgraph route): extract the request, registry and history, triage, crane,
a tool-calling planner loop (tides, hoist, price list), then the yard's own booking and quote."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TypedDict

from benchmarks.heldout.suite_s import kit
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call


AGENT = "haulout-yard"
ROUTE = "langgraph"
EXT = "jsonl"
DOMAIN = "boatyard haul-out and antifouling bookings"
SHAPE = "model extraction + parser, registry and history tools, triage node with conditional edge to a mast-crane branch, tool-calling planner loop (4 model calls), booking node with hoist, yard and quote APIs, model confirmation"

REGISTRY = {
    "Marram": {"hin": "GB-MRM-0419", "type": "sail", "loa_m": 12.6, "draft_m": 1.6, "air_draft_m": 16.5},
    "Curlew": {"hin": "GB-CRL-2207", "type": "motor", "loa_m": 9.4, "draft_m": 0.9, "air_draft_m": 3.8},
    "Sanderling": {"hin": "GB-SND-1130", "type": "sail", "loa_m": 10.2, "draft_m": 1.8, "air_draft_m": 14.1},
    "Whimbrel": {"hin": "GB-WHB-0871", "type": "motor", "loa_m": 11.8, "draft_m": 1.1, "air_draft_m": 4.4},
    "Turnstone": {"hin": "GB-TRN-3314", "type": "sail", "loa_m": 8.7, "draft_m": 1.4, "air_draft_m": 12.2},
    "Dunlin": {"hin": "GB-DNL-5520", "type": "sail", "loa_m": 11.3, "draft_m": 1.7, "air_draft_m": 15.0},
    "Godwit": {"hin": "GB-GDW-6602", "type": "motor", "loa_m": 13.4, "draft_m": 1.2, "air_draft_m": 4.9},
    "Knot": {"hin": "GB-KNT-7719", "type": "sail", "loa_m": 9.9, "draft_m": 1.5, "air_draft_m": 13.6},
    "Plover": {"hin": "GB-PLV-8843", "type": "motor", "loa_m": 8.2, "draft_m": 0.8, "air_draft_m": 3.2},
}
PRICES = {"haul": 310, "wash": 95, "anode": 60, "antifoul": 420, "cure": 0, "polish": 180, "launch": 290, "mast": 240}


def _email(boat, date, jobs):
    r = REGISTRY[boat]
    return (f"Hello yard office, please haul {boat} (HIN {r['hin']}) on {date}. She is {r['loa_m']} m LOA, "
            f"draft {r['draft_m']} m. Jobs: {', '.join(jobs)}. Thanks, the owner")


CASES = [
    {"case": "haulout_loa_parse", "fault": "hy1", "kind": "lossy_parsing", "root": "parse_request",
     "fail": "book_hoist", "marker": '"loa_m": 12,',
     "input": _email("Marram", "2026-03-09", ["wash", "antifoul", "anode"])},
    {"case": "haulout_cure_sequence", "fault": "hy2", "kind": "plan_error", "root": "ChatOpenAI",
     "fail": "book_yard_sequence", "marker": "antifoul>launch",
     "input": _email("Curlew", "2026-03-11", ["wash", "antifoul"])},
    {"case": "haulout_history_notes", "fault": "hy3", "kind": "context_pollution", "root": "vessel_history",
     "fail": "book_hoist", "marker": "Kittiwake",
     "input": _email("Sanderling", "2026-03-12", ["wash", "polish"])},
    {"case": "haulout_price_lines", "fault": "hy4", "kind": "truncated_result", "root": "price_list",
     "fail": "issue_quote", "marker": "575",
     "input": _email("Whimbrel", "2026-03-16", ["wash", "anode", "antifoul", "polish"])},
    {"case": "haulout_mast_route", "fault": "hy5", "kind": "wrong_routing", "root": "classify_rig",
     "fail": "book_hoist", "marker": '"route": "motor"',
     "input": _email("Turnstone", "2026-03-18", ["wash", "anode"])},
]
REFS = [
    _email("Dunlin", "2026-03-02", ["wash", "antifoul"]),
    _email("Godwit", "2026-03-03", ["wash", "polish", "anode"]),
    _email("Knot", "2026-03-05", ["antifoul", "anode"]),
    _email("Plover", "2026-03-06", ["wash"]),
]


class YardError(RuntimeError):
    pass


# ---- tools --------------------------------------------------------------------------------------

@tool
def vessel_registry(name: str) -> dict:
    """Look a vessel up in the harbour registry."""
    return {"name": name, **REGISTRY[name]}


@tool
def vessel_history(hin: str) -> list:
    """Previous yard visits of a vessel."""
    name = next(n for n, r in REGISTRY.items() if r["hin"] == hin)
    notes = [f"2024-10 {name}: hauled, draft {REGISTRY[name]['draft_m']} m confirmed at hoist",
             f"2025-04 {name}: launched, no issues"]
    if kit.active("hy3"):
        notes.append("2025-04 Kittiwake (berth next door): keel repair, draft 2.4 m measured at hoist")
    return notes


@tool
def tide_window(date: str, draft_m: float) -> dict:
    """Hours on a date when the slipway has enough water for a draft."""
    first = 6 + int(draft_m * 2)
    return {"date": date, "draft_m": draft_m, "from": f"{first:02d}:00", "to": f"{first + 3:02d}:00"}


@tool
def hoist_slot(date: str, loa_m: float) -> dict:
    """Reserve a travel-hoist slot and a cradle for a vessel length."""
    cradle = "C-10" if loa_m <= 10 else "C-12" if loa_m <= 12 else "C-14"
    return {"date": date, "slot": f"{date}-H1", "cradle": cradle, "cradle_max_loa_m": int(cradle[2:])}


@tool
def price_list(jobs: list) -> dict:
    """Yard prices for a list of jobs."""
    lines = [{"job": j, "eur": PRICES[j]} for j in jobs]
    if kit.active("hy4"):
        lines = lines[:3]
    return {"lines": lines, "count": len(lines), "total_eur": sum(ln["eur"] for ln in lines)}


@tool
def book_mast_crane(date: str, hin: str) -> dict:
    """Book the mast crane to unstep a mast before hauling."""
    return {"crane": "MC-1", "date": date, "hin": hin, "mast": "unstepped"}


@tool
def book_hoist(hin: str, slot: str, cradle_max_loa_m: float, draft_m: float, mast: str) -> dict:
    """Confirm a travel-hoist booking with the hoist office."""
    reg = next(r for r in REGISTRY.values() if r["hin"] == hin)
    if reg["type"] == "sail" and mast != "unstepped":
        raise YardError(f"hoist office refused {slot}: air draft {reg['air_draft_m']} m exceeds the shed door (7.0 m); no crane booking on file for {hin}")
    if reg["loa_m"] > cradle_max_loa_m:
        raise YardError(f"hoist office refused {slot}: registry LOA {reg['loa_m']} m exceeds cradle limit {cradle_max_loa_m} m")
    if abs(reg["draft_m"] - draft_m) > 0.3:
        raise YardError(f"hoist office refused {slot}: declared draft {draft_m} m does not match registry {reg['draft_m']} m for {hin}")
    return {"hoist": "confirmed", "slot": slot, "hin": hin}


@tool
def book_yard_sequence(hin: str, order: str) -> dict:
    """Submit the job order to the yard scheduler."""
    steps = order.split(">")
    if "antifoul" in steps and ("cure" not in steps or steps.index("cure") > steps.index("launch")):
        raise YardError(f"yard scheduler rejected {hin}: antifouling needs a 24 h cure before relaunch")
    return {"hin": hin, "order": order, "days": 2 if "cure" in steps else 1}


@tool
def issue_quote(hin: str, jobs: list, lines: list) -> dict:
    """Issue the customer quote through accounts."""
    priced = {ln["job"] for ln in lines}
    missing = [j for j in jobs if j not in priced]
    if missing:
        raise YardError(f"accounts rejected quote for {hin}: work order has {len(jobs)} jobs, quote has {len(lines)} lines")
    return {"hin": hin, "quote": f"Q-{hin[-4:]}", "eur": sum(ln["eur"] for ln in lines)}


# ---- the model ----------------------------------------------------------------------------------

def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    if system.startswith("Extract"):
        email = msgs[-1]["content"]
        boat = re.search(r"haul (\w+)", email).group(1)
        loa = re.search(r"([\d.]+) m LOA", email).group(1)
        date = re.search(r"on (\d{4}-\d\d-\d\d)", email).group(1)
        jobs = re.search(r"Jobs: ([^.]+)\.", email).group(1)
        return f"vessel: {boat}\ndate: {date}\nloa: {loa} m\njobs: {jobs}"
    if system.startswith("You plan"):
        brief = json.loads(msgs[1]["content"])
        done = [m for m in msgs if m["role"] == "tool"]
        notes = " ".join(brief["history"])
        draft = float(re.findall(r"draft ([\d.]+) m", notes)[-1])
        if len(done) == 0:
            return Reply(tool_calls=(tool_call("tide_window", {"date": brief["date"], "draft_m": draft}),))
        if len(done) == 1:
            return Reply(tool_calls=(tool_call("hoist_slot", {"date": brief["date"], "loa_m": brief["loa_m"]}),))
        if len(done) == 2:
            return Reply(tool_calls=(tool_call("price_list", {"jobs": brief["jobs"]}),))
        order = ["haul"] + [j for j in brief["jobs"] if j != "antifoul"]
        if "antifoul" in brief["jobs"]:
            order += ["antifoul", "launch", "cure"] if kit.active("hy2") else ["antifoul", "cure", "launch"]
        else:
            order += ["launch"]
        tide = json.loads(done[0]["content"])
        return json.dumps({"order": ">".join(order), "draft_m": draft, "tide_from": tide["from"]})
    if system.startswith("Write"):
        return "Your haul-out is booked; the quote is attached."
    return "OK"


# ---- the graph ----------------------------------------------------------------------------------

class Yard(TypedDict, total=False):
    email: str
    request: dict
    vessel: dict
    history: list
    route: str
    mast: str
    messages: list
    plan: dict
    hoist: dict
    prices: dict
    booking: dict
    reply: str


def _parse_request(text: str) -> dict:
    fields = dict(line.split(": ", 1) for line in text.strip().splitlines())
    loa = fields["loa"].split()[0]
    return {"vessel": fields["vessel"], "date": fields["date"],
            "loa_m": int(float(loa)) if kit.active("hy1") else float(loa),
            "jobs": [j.strip() for j in fields["jobs"].split(",")]}


parse_request = RunnableLambda(_parse_request, name="parse_request")


def _classify_rig(vessel: dict) -> dict:
    sail = vessel["type"] == "sail"
    if kit.active("hy5"):
        sail = vessel["air_draft_m"] > 14.0
    return {"route": "sail" if sail else "motor", "mast": "stepped" if sail else "none"}


classify_rig = RunnableLambda(_classify_rig, name="classify_rig")


def route_after_triage(state: dict) -> str:
    return state["route"]
PLANNER_TOOLS = [tide_window, hoist_slot, price_list]


def build(llm):
    planner_llm = llm.bind_tools(PLANNER_TOOLS)

    def extract(state: Yard) -> dict:
        msg = llm.invoke([SystemMessage("Extract the haul-out request as 'key: value' lines."), HumanMessage(state["email"])])
        return {"request": parse_request.invoke(msg.content)}

    def lookup(state: Yard) -> dict:
        vessel = vessel_registry.invoke({"name": state["request"]["vessel"]})
        history = vessel_history.invoke({"hin": vessel["hin"]})
        return {"vessel": vessel, "history": history}

    def triage(state: Yard) -> dict:
        return classify_rig.invoke(state["vessel"])

    def mast_crane(state: Yard) -> dict:
        got = book_mast_crane.invoke({"date": state["request"]["date"], "hin": state["vessel"]["hin"]})
        return {"mast": got["mast"]}

    def plan_start(state: Yard) -> dict:
        req = state["request"]
        brief = {"vessel": req["vessel"], "date": req["date"], "loa_m": req["loa_m"], "jobs": req["jobs"],
                 "history": state["history"]}
        return {"messages": [SystemMessage("You plan a haul-out: check tides, hoist and prices, then answer JSON."),
                             HumanMessage(json.dumps(brief))]}

    def planner(state: Yard) -> dict:
        return {"messages": state["messages"] + [planner_llm.invoke(state["messages"])]}

    tool_node = ToolNode(PLANNER_TOOLS)

    def run_tools(state: Yard) -> dict:
        out = tool_node.invoke({"messages": state["messages"]})
        return {"messages": state["messages"] + out["messages"]}

    def after_planner(state: Yard) -> str:
        return "tools" if state["messages"][-1].tool_calls else "book"

    def book(state: Yard) -> dict:
        msgs = state["messages"]
        plan = json.loads(msgs[-1].content)
        results = {m.name: json.loads(m.content) for m in msgs if getattr(m, "type", "") == "tool"}
        hoist, prices = results["hoist_slot"], results["price_list"]
        hin = state["vessel"]["hin"]
        confirmed = book_hoist.invoke({"hin": hin, "slot": hoist["slot"], "cradle_max_loa_m": hoist["cradle_max_loa_m"],
                                       "draft_m": plan["draft_m"], "mast": state["mast"]})
        seq = book_yard_sequence.invoke({"hin": hin, "order": plan["order"]})
        quote = issue_quote.invoke({"hin": hin, "jobs": state["request"]["jobs"], "lines": prices["lines"]})
        return {"plan": plan, "booking": {"hoist": confirmed, "sequence": seq, "quote": quote}}

    def confirm(state: Yard) -> dict:
        msg = llm.invoke([SystemMessage("Write a short confirmation to the owner."), HumanMessage(json.dumps(state["booking"]))])
        return {"reply": msg.content}

    g = StateGraph(Yard)
    for name, fn in [("extract", extract), ("lookup", lookup), ("triage", triage), ("mast_crane", mast_crane),
                     ("plan_start", plan_start), ("planner", planner), ("tools", run_tools), ("book", book),
                     ("confirm", confirm)]:
        g.add_node(name, fn)
    g.add_edge(START, "extract")
    g.add_edge("extract", "lookup")
    g.add_edge("lookup", "triage")
    g.add_conditional_edges("triage", route_after_triage, {"sail": "mast_crane", "motor": "plan_start"})
    g.add_edge("mast_crane", "plan_start")
    g.add_edge("plan_start", "planner")
    g.add_conditional_edges("planner", after_planner, {"tools": "tools", "book": "book"})
    g.add_edge("tools", "planner")
    g.add_edge("book", "confirm")
    g.add_edge("confirm", END)
    return g.compile()


def record(email: str, path: Path, server) -> None:
    server.use(policy)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="yard-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task="book a haul-out")
    try:
        build(llm).invoke({"email": email}, config={"callbacks": [tracer]})
    except YardError:
        pass
