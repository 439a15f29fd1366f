"""outage-dispatch: an electric utility's outage desk (langgraph route).

A LangGraph StateGraph: customer calls parsed one by one (an output parser), meters located in a
batch of tool calls, affected load estimated, SCADA read, the shift log searched (retriever), the
model assesses the outage (JSON), a crew-finder sub-graph (depot tool + picking model) chooses a
crew, and the work order goes to the dispatch system.
"""
from __future__ import annotations

import json
import re
from typing import TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser, JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from common import last_user, system_text
from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "outage-dispatch"
ROUTE = "langgraph"
DOMAIN = "electric utility outage desk (calls, SCADA, crews)"
SHAPE = "StateGraph: loop of call parsers -> batched meter tools -> load estimate -> SCADA tool -> shift-log retriever -> assessing model + JSON parser -> crew-finder sub-graph (depot tool, picking model) -> dispatch tool"
SWITCH = None

FEEDERS = {
    "F-7": {"substation": "Elm Street", "open_device": "SW-121", "poles": ["P-1140", "P-1141", "P-1142A", "P-1143"]},
    "F-12": {"substation": "Harbor", "open_device": "SW-131", "poles": ["P-2210", "P-2214", "P-2219"]},
    "F-3": {"substation": "Elm Park", "open_device": "SW-044", "poles": ["P-0301", "P-0307", "P-0309B"]},
    "F-19": {"substation": "Northgate", "open_device": "SW-190", "poles": ["P-1902", "P-1905", "P-1911"]},
    "F-22": {"substation": "Quarry Road", "open_device": "SW-222", "poles": ["P-2201", "P-2203"]},
}
METERS = {}
for _f, _n, _kw in [("F-7", 5, 310), ("F-12", 4, 280), ("F-3", 3, 150), ("F-19", 6, 720), ("F-22", 4, 95)]:
    for _i in range(1, _n + 1):
        METERS[f"M{_f[2:]}-{_i:03d}"] = {"feeder": _f, "load_kw": _kw * _i, "critical": False}

INPUTS = [
    {"task": "outage calls Elm Street 10:31", "calls": [
        "Call 1: meter M7-001, no power since 10:20, whole street dark.",
        "Call 2: meter M7-002, lights out, neighbours too.",
        "Call 3: meter M7-003, heard a bang near pole P-1142A, sparks on the line.",
        "Call 4: meter M7-004, no power.",
        "Call 5: meter M7-005, power off at the bakery."]},
    {"task": "outage calls Harbor 11:05", "calls": [
        "Call 1: meter M12-001, outage at the marina office.",
        "Call 2: meter M12-002, tree on line by pole P-2214.",
        "Call 3: meter M12-003, no power.",
        "Call 4: meter M12-004, no power in the warehouse."]},
    {"task": "outage calls Elm Park 12:40", "calls": [
        "Call 1: meter M3-001, flicker then dark.",
        "Call 2: meter M3-002, transformer humming near pole P-0309B.",
        "Call 3: meter M3-003, no power."]},
    {"task": "outage calls Northgate 13:15", "calls": [
        "Call 1: meter M19-001, plant shut down, no power.",
        "Call 2: meter M19-002, car hit pole P-1905.",
        "Call 3: meter M19-003, no power.",
        "Call 4: meter M19-004, no power at the school.",
        "Call 5: meter M19-005, outage.",
        "Call 6: meter M19-006, whole estate dark."]},
    {"task": "outage calls Quarry Road 14:02", "calls": [
        "Call 1: meter M22-001, no power at the depot.",
        "Call 2: meter M22-002, line down near pole P-2203.",
        "Call 3: meter M22-003, no power.",
        "Call 4: meter M22-004, outage at the farm shop."]},
]
SHIFT_LOG = [
    {"time": "08:10", "feeder": "F-19", "text": "F-19 planned work at SW-190 finished, feeder restored."},
    {"time": "09:58", "feeder": "F-12", "text": "F-12 tripped at SW-118, crew requested for Harbor side."},
    {"time": "10:12", "feeder": "F-7", "text": "F-7 recloser operated twice, holding."},
    {"time": "10:40", "feeder": "F-12", "text": "F-12 patrol found nothing at first; crew requested again for F-12 Harbor, SW-131 opened."},
    {"time": "12:05", "feeder": "F-3", "text": "F-3 vegetation patrol scheduled for Thursday."},
    {"time": "13:00", "feeder": "F-22", "text": "F-22 load transfer to F-21 undone."},
]
CREWS = [
    {"crew": "C-19", "depot": "Elm Park", "serves": ["Elm Park"], "skills": ["overhead"]},
    {"crew": "C-07", "depot": "Elm Street", "serves": ["Elm Street"], "skills": ["overhead", "underground"]},
    {"crew": "C-12", "depot": "Harbor", "serves": ["Harbor"], "skills": ["overhead"]},
    {"crew": "C-21", "depot": "Northgate", "serves": ["Northgate", "Quarry Road"], "skills": ["overhead"]},
    {"crew": "C-22", "depot": "Quarry Road", "serves": ["Quarry Road"], "skills": ["overhead"]},
]


class State(TypedDict, total=False):
    calls: list
    reports: list
    meters: list
    load_mw: float
    scada: dict
    notes: list
    assessment: dict
    crew: dict
    result: dict


# ------------------------------------------------------------------ the model's side
def brain(request):
    system, user = system_text(request), last_user(request)
    if system.startswith("Assess"):
        p = json.loads(user)
        feeders = [m["feeder"] for m in p["meters"]]
        feeder = max(set(feeders), key=feeders.count)
        for note in p["notes"]:  # the latest crew request in the log is taken as the live job
            if "crew requested" in note["text"]:
                feeder = note["feeder"]
        pole = next((r["pole"] for r in p["reports"] if r["pole"]), None)
        priority = "P1" if p["load_mw"] >= 1.0 else "P3"
        return json.dumps({"feeder": feeder, "isolate_at": p["scada"]["open_device"], "pole": pole,
                           "priority": priority, "skill": "overhead"})
    if system.startswith("Pick"):
        p = json.loads(user)
        crews = [c for c in p["crews"] if p["skill"] in c["skills"]]
        return json.dumps({"crew": crews[0]["crew"], "depot": crews[0]["depot"]})
    return "{}"


# ------------------------------------------------------------------ parser, tools, retriever
class CallReportParser(BaseOutputParser[dict]):
    def parse(self, text: str) -> dict:
        call = re.match(r"Call (\d+): meter (\S+?),", text)
        pole_re = r"pole (P-\d+)" if SWITCH == "D3" else r"pole (P-\d+[A-Z]?)"
        pole = re.search(pole_re, text)
        return {"call": int(call.group(1)), "meter": call.group(2), "pole": pole.group(1) if pole else None,
                "note": text.split(", ", 1)[1]}


@tool
def meter_lookup(meter_id: str) -> dict:
    """Feeder, load and critical-customer flag of a meter."""
    return {"meter": meter_id, **METERS[meter_id]}


@tool
def scada_status(feeder: str) -> dict:
    """Live breaker and switch state of a feeder."""
    if SWITCH == "D2":
        return {"feeder": feeder, "open_device": "SW-118", "as_of": "09:58", "state": "de-energised"}
    return {"feeder": feeder, "open_device": FEEDERS[feeder]["open_device"], "as_of": "live", "state": "de-energised"}


class ShiftLogRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        rows = SHIFT_LOG if SWITCH == "D1" else [r for r in SHIFT_LOG if r["feeder"] == query]
        return [Document(page_content=r["text"], metadata={"time": r["time"], "feeder": r["feeder"]}) for r in rows]


@tool
def depot_crews(substation: str) -> list:
    """Crews whose depot serves a substation."""
    return [c for c in CREWS if substation in c["serves"]]


@tool
def dispatch_crew(order: dict) -> dict:
    """Send a work order to the dispatch system."""
    f = FEEDERS.get(order["feeder"])
    truth = next(m["feeder"] for m in METERS.values() if m is METERS[order["meters"][0]])
    if order["feeder"] != truth:
        raise ValueError(f"dispatch refused: feeder {order['feeder']} is energised per SCADA; the calls are on {truth}")
    if order["isolate_at"] != f["open_device"]:
        raise ValueError(f"dispatch refused: switch {order['isolate_at']} on {order['feeder']} is closed and tagged; "
                         f"the open device is {f['open_device']}")
    if order["pole"] and order["pole"] not in f["poles"]:
        raise ValueError(f"dispatch refused: pole {order['pole']} is not on feeder {order['feeder']}")
    if order["load_mw"] >= 1.0 and order["priority"] != "P1" or order["truth_mw"] >= 1.0 and order["priority"] != "P1":
        raise ValueError(f"dispatch refused: priority {order['priority']} for a feeder carrying "
                         f"{order['truth_mw']:.2f} MW; outages above 1 MW must be P1")
    if f["substation"] not in next(c for c in CREWS if c["crew"] == order["crew"])["serves"]:
        raise ValueError(f"dispatch refused: crew {order['crew']} is based at {order['depot']} and does not serve "
                         f"{f['substation']} within the 60 min response target")
    return {"work_order": f"WO-{order['feeder']}-{order['crew']}", "status": "dispatched"}


def build_crew_finder(llm):
    class Sub(TypedDict, total=False):
        substation: str
        skill: str
        crews: list
        crew: dict

    def crew_search(state: Sub) -> dict:
        area = state["substation"].split()[0] if SWITCH == "D5" else state["substation"]
        crews = depot_crews.invoke({"substation": area})
        if not crews:  # broaden to depots whose name shares the area
            crews = [c for c in CREWS if c["depot"].startswith(area)]
        return {"crews": crews}

    def crew_pick(state: Sub) -> dict:
        out = (llm | JsonOutputParser()).invoke([
            SystemMessage("Pick one crew for the job; answer JSON crew, depot."),
            HumanMessage(json.dumps({"crews": state["crews"], "skill": state["skill"]}))])
        return {"crew": out}

    g = StateGraph(Sub)
    g.add_node("crew_search", crew_search)
    g.add_node("crew_pick", crew_pick)
    g.add_edge(START, "crew_search")
    g.add_edge("crew_search", "crew_pick")
    g.add_edge("crew_pick", END)
    return g.compile()


def build(llm):
    parser = CallReportParser()
    retriever = ShiftLogRetriever().with_config(run_name="shift_log")
    finder = build_crew_finder(llm)

    def intake_calls(state: State) -> dict:
        return {"reports": [parser.invoke(c) for c in state["calls"]]}

    def locate(state: State) -> dict:
        return {"meters": meter_lookup.batch([{"meter_id": r["meter"]} for r in state["reports"]])}

    def estimate_load(state: State) -> dict:
        kw = sum(m["load_kw"] for m in state["meters"])
        divisor = 1_000_000 if SWITCH == "D4" else 1000
        return {"load_mw": round(kw / divisor, 4)}

    def read_scada(state: State) -> dict:
        feeders = [m["feeder"] for m in state["meters"]]
        return {"scada": scada_status.invoke({"feeder": max(set(feeders), key=feeders.count)})}

    def recall_notes(state: State) -> dict:
        docs = retriever.invoke(state["scada"]["feeder"])
        return {"notes": [{"text": d.page_content, **d.metadata} for d in docs]}

    def assess(state: State) -> dict:
        out = (llm | JsonOutputParser()).invoke([
            SystemMessage("Assess the outage; answer JSON feeder, isolate_at, pole, priority, skill."),
            HumanMessage(json.dumps({k: state[k] for k in ("reports", "meters", "load_mw", "scada", "notes")}))])
        return {"assessment": out}

    def find_crew(state: State) -> dict:
        sub = FEEDERS[state["assessment"]["feeder"]]["substation"]
        out = finder.invoke({"substation": sub, "skill": state["assessment"]["skill"]})
        return {"crew": out["crew"]}

    def dispatch(state: State) -> dict:
        a, c = state["assessment"], state["crew"]
        truth_mw = sum(m["load_kw"] for m in state["meters"]) / 1000
        out = dispatch_crew.invoke({"order": {**a, "crew": c["crew"], "depot": c["depot"], "load_mw": state["load_mw"],
                                              "truth_mw": truth_mw, "meters": [r["meter"] for r in state["reports"]]}})
        return {"result": out}

    g = StateGraph(State)
    nodes = [("intake_calls", intake_calls), ("locate", locate), ("estimate_load", estimate_load),
             ("read_scada", read_scada), ("recall_notes", recall_notes), ("assess", assess),
             ("find_crew", find_crew), ("dispatch", dispatch)]
    for name, fn in nodes:
        g.add_node(name, fn)
    g.add_edge(START, nodes[0][0])
    for (a, _), (b, _) in zip(nodes, nodes[1:]):
        g.add_edge(a, b)
    g.add_edge(nodes[-1][0], END)
    return g.compile()


def execute(inp, server, path):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["task"])
    try:
        build(llm).invoke({"calls": inp["calls"]}, config={"callbacks": [tracer]})
    except ValueError:
        pass


CASES = [
    {"id": "zc61-outage-1", "input": 0, "switch": "D1", "fault_kind": "context_pollution",
     "root": {"name": "shift_log", "occurrence": 1, "kind": "retrieval"},
     "failure": {"name": "dispatch_crew", "occurrence": 1},
     "description": "The shift-log search returns the whole shift's log instead of the notes for F-7, and the assessing model takes the Harbor crew request on F-12 in it as the live job."},
    {"id": "zc61-outage-2", "input": 1, "switch": "D2", "fault_kind": "stale_data",
     "root": {"name": "scada_status", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "dispatch_crew", "occurrence": 1},
     "description": "The SCADA read answers a 09:58 snapshot in which SW-118 is the open device on F-12, while the live open device is SW-131."},
    {"id": "zc61-outage-3", "input": 2, "switch": "D3", "fault_kind": "lossy_parsing",
     "root": {"name": "CallReportParser", "occurrence": 2, "kind": "parse"},
     "failure": {"name": "dispatch_crew", "occurrence": 1},
     "description": "The call parser's pole pattern drops the letter suffix, turning pole P-0309B into P-0309, which is on no feeder."},
    {"id": "zc61-outage-4", "input": 3, "switch": "D4", "fault_kind": "unit_error",
     "root": {"name": "estimate_load", "occurrence": 1, "kind": "other"},
     "failure": {"name": "dispatch_crew", "occurrence": 1},
     "description": "The load estimate divides the meters' kW by a million instead of a thousand, so 15.1 MW reads as 0.0151 MW and the outage is given priority P3."},
    {"id": "zc61-outage-5", "input": 0, "switch": "D5", "fault_kind": "subagent_wrong_entity",
     "root": {"name": "find_crew", "occurrence": 1, "kind": "agent"},
     "failure": {"name": "dispatch_crew", "occurrence": 1},
     "description": "The crew-finder sub-graph searches on the first word of the substation and returns crew C-19 of the Elm Park depot for an outage at Elm Street."},
]
