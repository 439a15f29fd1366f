"""lookout-smoke-triangulator: a wildland fire dispatch desk takes lookout towers' smoke bearings,
cross-fixes the smoke, asks for fire danger and nearest engines, and issues initial-attack orders."""
from __future__ import annotations

import json
import math
import operator
import re
from typing import Annotated, TypedDict

from langchain_core.documents import Document
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from .common import last_user, system_text, tool_results

NAME = "lookout-smoke-triangulator"
ROUTE = "langgraph"
DOMAIN = "wildland fire dispatch: lookout tower smoke bearings to a cross-fix and initial-attack orders"
SHAPE = "StateGraph: retriever node -> prompt|llm|JSON parser -> cross-fix node -> tool-calling llm <-> ToolNode (parallel calls) -> conditional route -> air desk -> dispatch check"
SWITCH = None

TOWERS = {"Hawk Ridge": (0.0, 0.0), "Cedar Knob": (18.0, 4.0), "Bald Mountain": (6.0, 20.0)}
STATIONS = {"E-31 Pine Flat": (9.0, 3.0), "E-12 Rock Creek": (2.0, 14.0), "E-47 Mill Valley": (20.0, 16.0),
            "E-05 Hawk Ridge": (0.5, 0.5), "E-22 Dry Fork": (14.0, 10.0)}
LOG = [
    {"time": "06:55", "day": "prev", "tower": "Hawk Ridge", "text": "06:55 Hawk Ridge: smoke bearing 205, slash pile burn under permit 22-118"},
    {"time": "07:40", "day": "prev", "tower": "Cedar Knob", "text": "07:40 Cedar Knob: smoke bearing 250, dust from logging road"},
    {"time": "12:20", "day": "today", "tower": "Bald Mountain", "text": "12:20 Bald Mountain: haze to the north, no column"},
]
INPUTS = [
    {"task": "smoke report 13:42 Hawk Ridge 045 / Cedar Knob 300", "report": "Lookout report 13:42. Tower Hawk Ridge sees smoke bearing 045. Tower Cedar Knob sees smoke bearing 300. Column est 3 acres, white, drifting E."},
    {"task": "smoke report 14:05 Hawk Ridge 080 / Bald Mountain 130", "report": "Lookout report 14:05. Tower Hawk Ridge sees smoke bearing 080. Tower Bald Mountain sees smoke bearing 130. Column est 1 acres, grey, rising."},
    {"task": "smoke report 15:10 Cedar Knob 280 / Bald Mountain 150", "report": "Lookout report 15:10. Tower Cedar Knob sees smoke bearing 280. Tower Bald Mountain sees smoke bearing 150. Column est 2 acres, dark, leaning N."},
    {"task": "smoke report 16:25 Hawk Ridge 030 / Bald Mountain 190", "report": "Lookout report 16:25. Tower Hawk Ridge sees smoke bearing 030. Tower Bald Mountain sees smoke bearing 190. Column est 4 acres, white, leaning E."},
    {"task": "smoke report 17:50 Cedar Knob 330 / Bald Mountain 100", "report": "Lookout report 17:50. Tower Cedar Knob sees smoke bearing 330. Tower Bald Mountain sees smoke bearing 100. Column est 2 acres, white, drifting NE."},
]
CASES = [
    {"id": "zq_lookout_1", "input": 2, "fault_kind": "format_drift", "root": ("ChatOpenAI", 1), "root_kind": "llm",
     "failure": ("triangulate", 1),
     "description": "The extraction model gives Bald Mountain's bearing as the quadrant bearing S30E instead of 150, the parser reads 30, and the cross-fix lands outside the towers' sight range."},
    {"id": "zq_lookout_2", "input": 3, "fault_kind": "unit_error", "root": ("triangulate", 1), "root_kind": "other",
     "failure": ("dispatch", 1),
     "description": "The cross-fix node turns the 4 acre column into hectares by dividing by 0.4047 (9.9 ha instead of 1.6 ha), so dispatch finds two engines too few for that size."},
    {"id": "zq_lookout_3", "input": 0, "fault_kind": "wrong_tool_args", "root": ("ChatOpenAI", 2), "root_kind": "llm",
     "failure": ("dispatch", 1),
     "description": "The planning model asks nearest_engines for the reporting tower's grid instead of the smoke fix, so it orders E-05 Hawk Ridge and E-31 Pine Flat and dispatch finds they are not the closest units to the fire."},
    {"id": "zq_lookout_4", "input": 4, "fault_kind": "wrong_routing", "root": ("route_plan", 2), "root_kind": "other",
     "failure": ("dispatch", 1),
     "description": "The route after the tool round compares the danger rating in lower case, so an 'Extreme' rating goes straight to dispatch without the air desk, which dispatch then requires."},
    {"id": "zq_lookout_5", "input": 1, "fault_kind": "context_pollution", "root": ("TowerLog", 1), "root_kind": "retrieval",
     "failure": ("triangulate", 1),
     "description": "The tower log retriever returns yesterday's Hawk Ridge entry (bearing 205, a permitted burn) with today's, the extraction model takes that bearing, and the two bearings no longer cross."},
]


class FireState(TypedDict, total=False):
    report: str
    context: list
    sightings: list
    fix: dict
    messages: Annotated[list[AnyMessage], add_messages]
    danger: dict
    engines: list
    air: dict
    orders: dict


@tool
def get_fire_danger(x_km: float, y_km: float) -> dict:
    """Fire danger rating and index for a grid point (km east, km north of Hawk Ridge)."""
    idx = int(40 + 2.2 * x_km + 1.1 * y_km)
    rating = "Extreme" if idx >= 75 else "High" if idx >= 55 else "Moderate"
    return {"x_km": x_km, "y_km": y_km, "index": idx, "rating": rating}


@tool
def nearest_engines(x_km: float, y_km: float, count: int) -> list:
    """The count nearest engines to a grid point, with road ETA in minutes."""
    rows = []
    for name, (sx, sy) in STATIONS.items():
        d = math.hypot(sx - x_km, sy - y_km)
        rows.append({"engine": name, "eta_min": round(4 + d * 1.9)})
    return sorted(rows, key=lambda r: r["eta_min"])[:count]


TOOLS = [get_fire_danger, nearest_engines]


class TowerLog(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager=None):
        towers = re.findall(r"Tower ([A-Z][a-z]+ [A-Z][a-z]+)", query)
        docs = [e for e in LOG if e["day"] == "today"]
        if SWITCH == "zq_lookout_5":
            docs = [e for e in LOG if e["tower"] in towers] + docs  # the log index is keyed by tower
        return [Document(page_content=e["text"], metadata={"tower": e["tower"], "time": e["time"]}) for e in docs]


def _extract(text):
    seen = {}
    for a, b, c, d in re.findall(r"([A-Z][a-z]+ [A-Z][a-z]+): smoke bearing (\d{3})|Tower ([A-Z][a-z]+ [A-Z][a-z]+) sees smoke bearing (\d{3})", text):
        seen.setdefault(a or c, b or d)
    return seen


def brain(request):
    sys_ = system_text(request)
    if "extract" in sys_:
        user = last_user(request)
        seen = _extract(user)
        acres = int(re.search(r"est (\d+) acres", user).group(1))
        out = []
        for tower, brg in seen.items():
            if tower not in TOWERS:
                continue
            b = int(brg)
            if SWITCH == "zq_lookout_1" and 90 < b < 180:
                out.append({"tower": tower, "bearing": f"S{180 - b}E"})
            else:
                out.append({"tower": tower, "bearing": f"{b:03d}"})
        return "```json\n" + json.dumps({"sightings": out, "size_acres": acres}) + "\n```"
    results = tool_results(request)
    if not results:
        fix = json.loads(last_user(request))
        x, y = fix["x_km"], fix["y_km"]
        if SWITCH == "zq_lookout_3":
            x, y = TOWERS[fix["towers"][0]]
        return Reply(tool_calls=(tool_call("get_fire_danger", {"x_km": fix["x_km"], "y_km": fix["y_km"]}),
                                 tool_call("nearest_engines", {"x_km": x, "y_km": y, "count": 2})))
    danger = next(v for n, v in results if n == "get_fire_danger")
    engines = next(v for n, v in results if n == "nearest_engines")
    return (f"Danger {danger['rating']} (index {danger['index']}). Send {engines[0]['engine']} "
            f"(ETA {engines[0]['eta_min']} min) and {engines[1]['engine']} (ETA {engines[1]['eta_min']} min).")


def build(server):
    llm = ChatOpenAI(model=server.model, base_url=server.base_url, api_key="not-needed", max_retries=0)
    planner = llm.bind_tools(TOOLS)
    retriever = TowerLog()
    prompt = ChatPromptTemplate.from_messages([
        ("system", "You extract lookout sightings as JSON: sightings (tower, bearing in degrees true), size_acres."),
        ("user", "Tower log:\n{context}\n\nNew report:\n{report}"),
    ])
    extract_chain = prompt | llm | JsonOutputParser()

    def gather(state):
        docs = retriever.invoke(state["report"])
        return {"context": [d.page_content for d in docs]}

    def extract(state):
        out = extract_chain.invoke({"context": "\n".join(state["context"]), "report": state["report"]})
        return {"sightings": out["sightings"], "fix": {"size_acres": out["size_acres"]}}

    def triangulate(state):
        s = state["sightings"]
        if len(s) < 2:
            raise ValueError(f"cross-fix needs two towers, got {len(s)}")
        (t1, b1), (t2, b2) = [(x["tower"], float(re.sub(r"[^0-9.]", "", str(x["bearing"])))) for x in s[:2]]
        (x1, y1), (x2, y2) = TOWERS[t1], TOWERS[t2]
        d1 = (math.sin(math.radians(b1)), math.cos(math.radians(b1)))
        d2 = (math.sin(math.radians(b2)), math.cos(math.radians(b2)))
        den = d1[0] * d2[1] - d1[1] * d2[0]
        if abs(den) < 1e-6:
            raise ValueError(f"bearings {b1:.0f} from {t1} and {b2:.0f} from {t2} are parallel")
        r1 = ((x2 - x1) * d2[1] - (y2 - y1) * d2[0]) / den
        r2 = ((x2 - x1) * d1[1] - (y2 - y1) * d1[0]) / den
        if r1 <= 0 or r2 <= 0 or r1 > 30 or r2 > 30:
            raise ValueError(f"bearings {b1:.0f} from {t1} and {b2:.0f} from {t2} do not cross within 30 km of both towers")
        acres = state["fix"]["size_acres"]
        size_ha = acres / 0.4047 if SWITCH == "zq_lookout_2" else acres * 0.4047
        fix = {"x_km": round(x1 + r1 * d1[0], 1), "y_km": round(y1 + r1 * d1[1], 1), "size_ha": round(size_ha, 1),
               "towers": [t1, t2]}
        return {"fix": fix}

    def plan(state):
        msgs = state.get("messages") or [SystemMessage("You plan initial attack. Call the tools for danger and engines."),
                                          HumanMessage(json.dumps(state["fix"]))]
        reply = planner.invoke(msgs)
        new = [reply] if state.get("messages") else msgs + [reply]
        return {"messages": new}

    def route_plan(state):
        last = state["messages"][-1]
        if last.tool_calls:
            return "tools"
        danger = next(json.loads(m.content) for m in state["messages"] if getattr(m, "name", None) == "get_fire_danger")
        if SWITCH == "zq_lookout_4":
            return "air_desk" if danger["rating"] == "extreme" else "dispatch"
        return "air_desk" if danger["rating"].lower() == "extreme" else "dispatch"

    def air_desk(state):
        return {"air": {"ordered": "Tanker 910 and Helitack 3", "for": state["fix"]}}

    def dispatch(state):
        msgs = state["messages"]
        danger = next(json.loads(m.content) for m in msgs if getattr(m, "name", None) == "get_fire_danger")
        engines = next(json.loads(m.content) for m in msgs if getattr(m, "name", None) == "nearest_engines")
        fix = state["fix"]
        avl = sorted((4 + math.hypot(sx - fix["x_km"], sy - fix["y_km"]) * 1.9, n) for n, (sx, sy) in STATIONS.items())
        closest = [n for _, n in avl[:len(engines)]]
        if sorted(e["engine"] for e in engines) != sorted(closest):
            raise RuntimeError(f"dispatch refused: {', '.join(e['engine'] for e in engines)} are not the closest units to "
                               f"the fix ({', '.join(f'{n} {round(t)} min' for t, n in avl[:len(engines)])})")
        if fix["size_ha"] > 5 and len(engines) < 4:
            raise RuntimeError(f"dispatch refused: {fix['size_ha']} ha fire needs a strike team, {len(engines)} engines ordered")
        if danger["rating"] == "Extreme" and not state.get("air"):
            raise RuntimeError(f"dispatch refused: danger Extreme (index {danger['index']}) requires an air attack order")
        return {"orders": {"engines": [e["engine"] for e in engines], "air": state.get("air"), "fix": fix,
                           "summary": msgs[-1].content}}

    g = StateGraph(FireState)
    g.add_node("gather", gather)
    g.add_node("extract", extract)
    g.add_node("triangulate", triangulate)
    g.add_node("plan", plan)
    g.add_node("tools", ToolNode(TOOLS))
    g.add_node("air_desk", air_desk)
    g.add_node("dispatch", dispatch)
    g.add_edge(START, "gather")
    g.add_edge("gather", "extract")
    g.add_edge("extract", "triangulate")
    g.add_edge("triangulate", "plan")
    g.add_conditional_edges("plan", route_plan, ["tools", "air_desk", "dispatch"])
    g.add_edge("tools", "plan")
    g.add_edge("air_desk", "dispatch")
    g.add_edge("dispatch", END)
    return g.compile()


def record(inp, server, path):
    graph = build(server)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=inp["task"])
    graph.invoke({"report": inp["report"]}, config={"callbacks": [tracer]})
