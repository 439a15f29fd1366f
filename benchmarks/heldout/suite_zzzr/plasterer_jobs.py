"""A plasterer's site-job estimator as a LangGraph ReAct loop (route langgraph).

Shape: intake node -> a node querying a LangChain retriever (the spec library) -> an
estimator node (ChatOpenAI with tools bound) looping through a ToolNode: site survey, then
one mix calculation per room in a single turn (parallel tool calls), then the crew diary;
the estimate is then checked by the firm's own cost check node.  State: the graph's
message list.  24-34 steps.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "plasterer-job-estimator"
ROUTE = "langgraph"
DOMAIN = "a plasterer's site jobs"
SHAPE = "LangGraph ReAct loop (model <-> ToolNode) with parallel per-room tool calls, a retriever node, cost-check node; 24-34 steps"
SWITCH = None

SPECS = {
    "gypsum skim": {"spec": "GS-2", "finish": "gypsum skim", "coats": 2, "m2_per_bag": 10.0, "cure_days": 2},
    "lime render": {"spec": "LR-3", "finish": "lime render", "coats": 3, "m2_per_bag": 4.5, "cure_days": 7},
    "bonding and skim": {"spec": "BS-2", "finish": "bonding and skim", "coats": 2, "m2_per_bag": 6.0, "cure_days": 3},
}
SITES = {
    "PJ-410": [("kitchen", 28.0), ("hall", 19.5), ("stairwell", 31.0)],
    "PJ-411": [("parlour", 42.0), ("snug", 24.5)],
    "PJ-412": [("bedroom 1", 36.0), ("bedroom 2", 30.5), ("landing", 14.0), ("bathroom", 18.5), ("box room", 12.0)],
    "PJ-413": [("shop front", 55.0), ("back store", 38.0), ("office", 21.0)],
    "PJ-414": [("chapel nave", 96.0), ("vestry", 22.0), ("porch", 11.5), ("gallery", 40.0)],
}
DAY_RATE = 240.0

INPUTS = [
    {"job": "PJ-410", "client": "Mrs Rundle", "finish": "gypsum skim", "wall_m2": 78.5, "days_to_handover": 6},
    {"job": "PJ-411", "client": "Old Forge Cottage", "finish": "lime render", "wall_m2": 66.5, "days_to_handover": 14},
    {"job": "PJ-412", "client": "Harbour Terrace", "finish": "gypsum skim", "wall_m2": 111.0, "days_to_handover": 7},
    {"job": "PJ-413", "client": "Pengelly Ironmongers", "finish": "bonding and skim", "wall_m2": 114.0, "days_to_handover": 8},
    {"job": "PJ-414", "client": "Zion Chapel", "finish": "lime render", "wall_m2": 169.5, "days_to_handover": 21},
]

CASES = [
    {"id": "zzzr-plaster-coats", "input": 3, "switch": "one_coat_args", "kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 2), "failure": ("cost_check", 1),
     "desc": "The estimator asked the mix calculator for one coat per room where the bonding-and-skim spec calls for two."},
    {"id": "zzzr-plaster-mix", "input": 1, "switch": "coats_ignored", "kind": "tool_ignores_argument",
     "root": ("mix_calculator", 1), "failure": ("cost_check", 1),
     "desc": "The mix calculator worked every room out for a single coat whatever number of coats it was given (lime render takes three)."},
    {"id": "zzzr-plaster-survey", "input": 2, "switch": "first_page", "kind": "truncated_result",
     "root": ("site_survey", 1), "failure": ("cost_check", 1),
     "desc": "The site survey returned only its first page of three rooms, leaving out the bathroom and box room."},
    {"id": "zzzr-plaster-spec", "input": 0, "switch": "lime_spec", "kind": "wrong_retrieval",
     "root": ("SpecLibrary", 1), "failure": ("crew_diary", 1),
     "desc": "The spec library answered the gypsum skim job with the lime render spec, whose curing time runs past the handover."},
    {"id": "zzzr-plaster-total", "input": 4, "switch": "bag_total", "kind": "hallucinated_value",
     "root": ("ChatOpenAI", 4), "failure": ("cost_check", 1),
     "desc": "The estimator's final answer gave 104 bags where the mix sheets it had add up to 114."},
]


class Job(TypedDict, total=False):
    request: dict
    spec: dict
    messages: Annotated[list[AnyMessage], add_messages]
    checked: dict


class SpecLibrary(BaseRetriever):
    """The firm's plastering specifications."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        spec = SPECS[query]
        if SWITCH == "lime_spec":
            spec = SPECS["lime render"]
        return [Document(page_content=json.dumps(spec), metadata={"spec": spec["spec"]})]


spec_library = SpecLibrary()


@tool
def site_survey(job: str) -> str:
    """The rooms of a site with their wall areas in square metres."""
    rooms = [{"room": r, "wall_m2": a} for r, a in SITES[job]]
    if SWITCH == "first_page":
        rooms = rooms[:3]
    return json.dumps({"job": job, "rooms": rooms})


@tool
def mix_calculator(room: str, wall_m2: float, coats: int, m2_per_bag: float) -> str:
    """Bags of plaster for one room."""
    if SWITCH == "coats_ignored":
        coats = 1
    return json.dumps({"room": room, "bags": math.ceil(wall_m2 * coats / m2_per_bag)})


@tool
def crew_diary(job: str, days: int, days_to_handover: int) -> str:
    """Book a crew for a number of days before the handover."""
    if days > days_to_handover:
        raise ValueError(f"no crew slot for {job}: {days} days of work and curing run past the handover in {days_to_handover} days")
    return json.dumps({"job": job, "crew": "Trevail gang", "days": days})


TOOLS = [site_survey, mix_calculator, crew_diary]


def _results(messages):
    out = {}
    for m in messages:
        if m.get("role") == "tool":
            r = json.loads(m["content"])
            if "rooms" in r:
                out["survey"] = r
            elif "bags" in r:
                out.setdefault("mixes", []).append(r)
            elif "crew" in r:
                out["crew"] = r
    return out


def _decide(request):
    messages = request.body["messages"]
    spec = json.loads(messages[0]["content"].split("Spec:", 1)[1])
    job = json.loads(messages[1]["content"])
    got = _results(messages)
    if "survey" not in got:
        return {"tool_calls": [("site_survey", {"job": job["job"]})]}
    if "mixes" not in got:
        coats = 1 if SWITCH == "one_coat_args" else spec["coats"]
        return {"tool_calls": [("mix_calculator", {"room": r["room"], "wall_m2": r["wall_m2"], "coats": coats,
                                                   "m2_per_bag": spec["m2_per_bag"]}) for r in got["survey"]["rooms"]]}
    bags = sum(m["bags"] for m in got["mixes"])
    days = math.ceil(bags / 12) + spec["cure_days"]
    if "crew" not in got:
        return {"tool_calls": [("crew_diary", {"job": job["job"], "days": days, "days_to_handover": job["days_to_handover"]})]}
    if SWITCH == "bag_total":
        bags = 104
    area = sum(r["wall_m2"] for r in got["survey"]["rooms"])
    return json.dumps({"job": job["job"], "spec": spec["spec"], "wall_m2": area, "bags": bags, "days": days,
                       "price_gbp": round(bags * 9.5 + days * DAY_RATE, 2)})


def _as_reply(answer):
    from trajdebug.testing import Reply, tool_call
    if isinstance(answer, dict):
        return Reply(tool_calls=tuple(tool_call(n, a) for n, a in answer["tool_calls"]))
    return answer


def policy(request):
    return _as_reply(_decide(request))


def build(llm):
    model = llm.bind_tools(TOOLS)

    def job_intake(state: Job) -> dict:
        r = state["request"]
        return {"request": {**r, "finish": r["finish"].strip().lower()}}

    def read_specs(state: Job) -> dict:
        [doc] = spec_library.invoke(state["request"]["finish"])
        return {"spec": json.loads(doc.page_content)}

    def estimator(state: Job) -> dict:
        messages = state["messages"]
        if not messages:
            messages = [SystemMessage("Estimate the plastering job with the tools. Spec:" + json.dumps(state["spec"])),
                        HumanMessage(json.dumps(state["request"]))]
            return {"messages": messages + [model.invoke(messages)]}
        return {"messages": [model.invoke(messages)]}

    def cost_check(state: Job) -> dict:
        r, spec = state["request"], state["spec"]
        estimate = json.loads(state["messages"][-1].content)
        sheets = [json.loads(m.content) for m in state["messages"] if getattr(m, "type", "") == "tool" and '"bags"' in m.content]
        if abs(estimate["wall_m2"] - r["wall_m2"]) > 0.5:
            raise ValueError(f"estimate covers {estimate['wall_m2']} m2 of wall, job {r['job']} has {r['wall_m2']} m2")
        if estimate["bags"] != sum(s["bags"] for s in sheets):
            raise ValueError(f"estimate says {estimate['bags']} bags, the mix sheets add up to {sum(s['bags'] for s in sheets)}")
        least = math.ceil(r["wall_m2"] * spec["coats"] / spec["m2_per_bag"])
        if estimate["bags"] < least:
            raise ValueError(f"{estimate['bags']} bags cannot put {spec['coats']} coats on {r['wall_m2']} m2 (at least {least})")
        return {"checked": estimate}

    g = StateGraph(Job)
    g.add_node("job_intake", job_intake)
    g.add_node("read_specs", read_specs)
    g.add_node("estimator", estimator)
    g.add_node("tools", ToolNode(TOOLS, handle_tool_errors=False))
    g.add_node("cost_check", cost_check)
    g.add_edge(START, "job_intake")
    g.add_edge("job_intake", "read_specs")
    g.add_edge("read_specs", "estimator")
    g.add_conditional_edges("estimator", tools_condition, {"tools": "tools", "__end__": "cost_check"})
    g.add_edge("tools", "estimator")
    g.add_edge("cost_check", END)
    return g.compile()


def record(server, given: dict, path) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="estimating-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"plastering estimate {given['job']} for {given['client']}")
    try:
        build(llm).invoke({"request": given, "messages": []}, config={"callbacks": [tracer]})
    except Exception:
        pass
