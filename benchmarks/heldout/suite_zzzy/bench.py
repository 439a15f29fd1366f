"""Accordion repairer's bench: LangGraph StateGraph, ChatOpenAI with parallel tool calls through ToolNode,
a triage router, a loop node over reeds, graph-state only."""
from __future__ import annotations

import json
import re
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

NAME = "accordion-bench"
ROUTE = "langgraph"
DOMAIN = "accordion repairer's bench"
SHAPE = ("StateGraph: intake -> triage router -> diagnose (model, parallel tool calls) <-> ToolNode -> "
         "work plan parser -> loop node per reed -> quote -> release check; 20-26 steps")
SWITCH = None

# tuning tables of the workshop (Hz at A=440, per reed note)
EQUAL = {"C4": 261.63, "D4": 293.66, "E4": 329.63, "F4": 349.23, "G4": 392.0, "A4": 440.0, "B4": 493.88, "C5": 523.25}
NOTES = list(EQUAL)
# measured pitch on the bench, by instrument serial and reed
BENCH = {
    "HO-1187": {"C4": 259.9, "E4": 331.2, "G4": 390.1},
    "PA-2204": {"D4": 295.1, "F4": 347.0, "A4": 441.9, "C5": 520.8},
    "WE-0931": {"C4": 262.8, "D4": 292.0},
    "SC-4410": {"E4": 327.5, "G4": 393.6, "B4": 496.0},
    "HO-1550": {"F4": 350.9, "A4": 437.2},
}

INPUTS = [
    {"serial": "HO-1187", "owner": "Greta Lind", "ticket": "Hohner club model HO-1187: reeds C4, E4, G4 sound sour on the middle voice. Dry tuning.", "tuning": "dry"},
    {"serial": "PA-2204", "owner": "Luca Ferri", "ticket": "Paolo Soprani PA-2204: air leak from the bellows at rest, plus reeds D4, F4, A4, C5 off on musette. Musette tuning.", "tuning": "musette"},
    {"serial": "WE-0931", "owner": "Jan Novak", "ticket": "Weltmeister WE-0931: reeds C4, D4 need a touch. Dry tuning.", "tuning": "dry"},
    {"serial": "SC-4410", "owner": "Anne Morel", "ticket": "Scandalli SC-4410: sticky key valves and reeds E4, G4, B4 flat-ish. Musette tuning.", "tuning": "musette"},
    {"serial": "HO-1550", "owner": "Pia Koch", "ticket": "Hohner HO-1550: reeds F4, A4 buzz. Dry tuning.", "tuning": "dry"},
]

CASES = [
    {"id": "zzzy-bench-1", "input": 0, "switch": "args", "fault_kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 1), "failure": ("file_reed", 3),
     "description": "The diagnosing model asks the pitch meter for reed G4 with the low octave, so the bench works from a reading an octave below."},
    {"id": "zzzy-bench-2", "input": 1, "switch": "musette", "fault_kind": "tool_ignores_argument",
     "root": ("tuning_table", 1), "failure": ("release_check", 1),
     "description": "The tuning table tool returns the dry table whatever tuning it is asked for, so the musette voice is filed to zero beat."},
    {"id": "zzzy-bench-3", "input": 3, "switch": "triage", "fault_kind": "wrong_routing",
     "root": ("triage", 1), "failure": ("release_check", 1),
     "description": "Triage sends an instrument with sticky key valves to the tuning-only bench, so the valve work never enters the plan."},
    {"id": "zzzy-bench-4", "input": 2, "switch": "index", "fault_kind": "off_by_one",
     "root": ("measure_pitch", 1), "failure": ("file_reed", 1),
     "description": "The pitch meter reads the reed slot one position along, so C4 is reported with the pitch of the D4 slot."},
    {"id": "zzzy-bench-5", "input": 4, "switch": "format", "fault_kind": "format_drift",
     "root": ("ChatOpenAI", 2), "failure": ("file_reed", 1),
     "description": "The model's final work list gives the reeds as one semicolon-joined string instead of a list, which the plan parser keeps as one item."},
]


def _cents(f, ref):
    import math
    return round(1200 * math.log2(f / ref), 1)


@tool
def measure_pitch(serial: str, reed: str, octave: int = 4) -> str:
    """Measure the sounding frequency of one reed of an instrument on the bench."""
    table = BENCH[serial]
    notes = sorted(table, key=NOTES.index)
    if SWITCH == "index":
        i = notes.index(reed) + 1
        hz = table[notes[i]] if i < len(notes) else table[reed]
    else:
        hz = table[reed]
    if octave != 4:
        hz = round(hz * 2 ** (octave - 4), 2)
    return json.dumps({"serial": serial, "reed": reed, "hz": hz})


@tool
def tuning_table(tuning: str) -> str:
    """Target offsets in cents for the middle voice, for a tuning (dry or musette)."""
    if tuning == "musette" and SWITCH != "musette":
        return json.dumps({"tuning": tuning, "offset_cents": 14})
    return json.dumps({"tuning": tuning, "offset_cents": 0})


TOOLS = [measure_pitch, tuning_table]


def policy(request):
    msgs = request.body["messages"]
    user = next(m["content"] for m in msgs if m["role"] == "user")
    serial = re.search(r"[A-Z]{2}-\d{4}", user).group(0)
    reeds = re.findall(r"\b([A-G]\d)\b", user)
    tuning = "musette" if "Musette" in user else "dry"
    results = [json.loads(m["content"]) for m in msgs if m["role"] == "tool"]
    if not results:
        calls = [tool_call("tuning_table", {"tuning": tuning})]
        for r in reeds:
            args = {"serial": serial, "reed": r}
            if SWITCH == "args" and r == "G4":
                args["octave"] = 3
            calls.append(tool_call("measure_pitch", args))
        return Reply(tool_calls=tuple(calls))
    pitches = {r["reed"]: r["hz"] for r in results if "hz" in r}
    offset = next(r["offset_cents"] for r in results if "offset_cents" in r)
    work = [{"reed": k, "hz": v} for k, v in pitches.items()]
    if SWITCH == "format":
        return json.dumps({"reeds": "; ".join(w["reed"] for w in work), "readings": pitches, "offset_cents": offset})
    return json.dumps({"reeds": [w["reed"] for w in work], "readings": pitches, "offset_cents": offset})


class Bench(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    serial: str
    ticket: str
    tuning: str
    complaints: list
    bench: str
    plan: dict
    cursor: int
    filed: list
    quote: dict


def intake(state: Bench) -> dict:
    t = state["ticket"]
    complaints = []
    if "leak" in t:
        complaints.append("bellows")
    if "valve" in t:
        complaints.append("valves")
    if "reeds" in t:
        complaints.append("reeds")
    return {"complaints": complaints, "cursor": 0, "filed": []}


def triage(state: Bench) -> dict:
    c = state["complaints"]
    bench = "full" if ("bellows" in c or "valves" in c) else "tuning"
    if SWITCH == "triage":
        bench = "tuning"
    return {"bench": bench,
            "messages": [SystemMessage("You diagnose accordion reeds. Measure every reed named, read the tuning table, then answer JSON."),
                         HumanMessage(state["ticket"])]}


def make_graph(llm):
    llm_tools = llm.bind_tools(TOOLS)

    def diagnose(state: Bench) -> dict:
        return {"messages": [llm_tools.invoke(state["messages"])]}

    def after_diagnose(state: Bench) -> str:
        last = state["messages"][-1]
        return "tools" if getattr(last, "tool_calls", None) else "work_plan"

    def work_plan(state: Bench) -> dict:
        data = json.loads(state["messages"][-1].content)
        reeds = data["reeds"]
        if isinstance(reeds, str):
            reeds = [r.strip() for r in reeds.split(",")]
        plan = {"reeds": reeds, "readings": data["readings"], "offset_cents": data["offset_cents"], "extra": []}
        if state["bench"] == "full":
            plan["extra"] = [c for c in state["complaints"] if c != "reeds"]
        return {"plan": plan}

    def file_reed(state: Bench) -> dict:
        plan = state["plan"]
        reed = plan["reeds"][state["cursor"]]
        hz = plan["readings"][reed]
        target = EQUAL[reed]
        off = _cents(hz, target) - plan["offset_cents"]
        if abs(off) > 60:
            raise ValueError(f"reed {reed}: {off:+.1f} cents to remove, more than filing can take on a {reed} reed")
        work = {"reed": reed, "cents": round(-off, 1), "method": "file tip" if off < 0 else "file root"}
        return {"filed": state["filed"] + [work], "cursor": state["cursor"] + 1}

    def more_reeds(state: Bench) -> str:
        return "file_reed" if state["cursor"] < len(state["plan"]["reeds"]) else "quote"

    def quote(state: Bench) -> dict:
        lines = [{"item": f"reed {w['reed']}", "eur": 18} for w in state["filed"]]
        lines += [{"item": x, "eur": 95} for x in state["plan"]["extra"]]
        return {"quote": {"lines": lines, "total_eur": sum(l["eur"] for l in lines)}}

    def release_check(state: Bench) -> dict:
        items = " ".join(l["item"] for l in state["quote"]["lines"])
        for c in state["complaints"]:
            if c != "reeds" and c not in items:
                raise AssertionError(f"{state['serial']}: complaint '{c}' from the ticket is not on the work sheet")
        for w in state["filed"]:
            if abs(w["cents"]) > 40:
                raise AssertionError(f"{state['serial']}: reed {w['reed']} moved {w['cents']} cents, beyond a touch-up")
        if state["tuning"] == "musette":
            if not all(w["cents"] != 0 and abs(_cents(state["plan"]["readings"][w["reed"]], EQUAL[w["reed"]]) + w["cents"]) >= 10 for w in state["filed"]):
                raise AssertionError(f"{state['serial']}: middle voice filed to zero beat, the musette tremolo is gone")
        return {}

    g = StateGraph(Bench)
    g.add_node("intake", intake)
    g.add_node("triage", triage)
    g.add_node("diagnose", diagnose)
    g.add_node("tools", ToolNode(TOOLS))
    g.add_node("work_plan", work_plan)
    g.add_node("file_reed", file_reed)
    g.add_node("quote", quote)
    g.add_node("release_check", release_check)
    g.add_edge(START, "intake")
    g.add_edge("intake", "triage")
    g.add_edge("triage", "diagnose")
    g.add_conditional_edges("diagnose", after_diagnose, ["tools", "work_plan"])
    g.add_edge("tools", "diagnose")
    g.add_edge("work_plan", "file_reed")
    g.add_conditional_edges("file_reed", more_reeds, ["file_reed", "quote"])
    g.add_edge("quote", "release_check")
    g.add_edge("release_check", END)
    return g.compile()


def run_one(inp, server, path):
    llm = ChatOpenAI(base_url=server.base_url, api_key="local", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"bench ticket {inp['serial']}")
    make_graph(llm).invoke({"serial": inp["serial"], "ticket": inp["ticket"], "tuning": inp["tuning"]},
                           config={"callbacks": [tracer], "recursion_limit": 60})
