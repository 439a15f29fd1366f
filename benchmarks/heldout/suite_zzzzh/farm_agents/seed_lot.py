"""Seed cleaning and certification plant: a cleaned seed lot is checked against the certification standard
of its crop and class, its variety is verified in the national register by a sub-graph, a lab model runs
germination, purity and noxious-weed tests (parallel tool calls), and certification tags are issued or the
lot is sent back for recleaning (LangGraph StateGraph)."""
from __future__ import annotations

import json
import operator
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from pydantic import BaseModel, Field

from trajdebug.integrations.langchain import TrajdebugTracer

from ._common import system, tool_results, user

NAME = "seed-lot-certifier"
ROUTE = "langgraph"
DOMAIN = "seed cleaning and certification plant"
SHAPE = "retriever, register search tool, hand-off to a variety sub-graph, model with parallel lab tool calls in a loop (ToolNode), JSON parser, schema validation, conditional routing, registry tool"
SWITCH = None


def active(case: str) -> bool:
    return SWITCH == case


INPUTS = [
    {"lot": "SL-25-118", "crop": "soybean", "variety": "Maverick", "class": "certified", "weight_kg": 18400},
    {"lot": "SL-25-121", "crop": "winter wheat", "variety": "Skagen", "class": "certified", "weight_kg": 24100},
    {"lot": "SL-25-124", "crop": "soybean", "variety": "Northstar", "class": "certified", "weight_kg": 9600},
    {"lot": "SL-25-127", "crop": "field pea", "variety": "Greenfeast", "class": "certified", "weight_kg": 12750},
    {"lot": "SL-25-130", "crop": "winter wheat", "variety": "Torridon", "class": "registered", "weight_kg": 15300},
]

CASES = [
    {"id": "zzzzh-seed-1", "input": 2, "kind": "wrong_retrieval", "root": ("StandardsRetriever", 1), "root_kind": "retrieval",
     "failure": "issue_certification_tags",
     "what": "The standards search for 'soybean certified' returns the sorghum standard (70% minimum, day-10 final count), so the 76% soybean lot is counted on day 10 and sent for tagging instead of recleaning, and the registry refuses the count against soybean's day-8 rule."},
    {"id": "zzzzh-seed-2", "input": 3, "kind": "wrong_tool_args", "root": ("ChatOpenAI", 1), "root_kind": "llm",
     "failure": "issue_certification_tags",
     "what": "The lab model asks for the purity analysis on a 90 g sample, the wheat working weight, instead of the 900 g field pea working sample, and the registry refuses the purity result."},
    {"id": "zzzzh-seed-3", "input": 1, "kind": "format_drift", "root": ("ChatOpenAI", 2), "root_kind": "llm",
     "failure": "validate_report",
     "what": "The lab model's summary gives germination and purity as fractions (0.94, 0.991) instead of percentages, which the report schema rejects."},
    {"id": "zzzzh-seed-4", "input": 0, "kind": "tool_ignores_argument", "root": ("run_germination_test", 1), "root_kind": "tool",
     "failure": "issue_certification_tags",
     "what": "The germination test tool ignores the requested count day 8 and reports its preset day-5 first count, which the registry does not accept as the final count."},
    {"id": "zzzzh-seed-5", "input": 0, "kind": "subagent_wrong_entity", "root": ("verify_variety", 1), "root_kind": "agent",
     "failure": "issue_certification_tags",
     "what": "The hand-off to the variety sub-graph passes the first register hit, Maverick II (VR-4471), instead of the exact match Maverick, so the breeder licence verified is for another variety and tagging is refused."},
]

STANDARDS = {
    "soybean certified": {"crop": "soybean", "class": "certified", "min_germination_pct": 80, "min_purity_pct": 98.0, "max_noxious_per_kg": 0, "working_sample_g": 500, "final_count_day": 8},
    "sorghum certified": {"crop": "sorghum", "class": "certified", "min_germination_pct": 70, "min_purity_pct": 98.0, "max_noxious_per_kg": 0, "working_sample_g": 90, "final_count_day": 10},
    "winter wheat certified": {"crop": "winter wheat", "class": "certified", "min_germination_pct": 85, "min_purity_pct": 99.0, "max_noxious_per_kg": 0, "working_sample_g": 120, "final_count_day": 8},
    "winter wheat registered": {"crop": "winter wheat", "class": "registered", "min_germination_pct": 85, "min_purity_pct": 99.0, "max_noxious_per_kg": 0, "working_sample_g": 120, "final_count_day": 8},
    "field pea certified": {"crop": "field pea", "class": "certified", "min_germination_pct": 80, "min_purity_pct": 98.0, "max_noxious_per_kg": 0, "working_sample_g": 900, "final_count_day": 8},
}
REGISTER = {
    "Maverick": [{"register_id": "VR-4471", "name": "Maverick II"}, {"register_id": "VR-3108", "name": "Maverick"}],
    "Skagen": [{"register_id": "VR-2950", "name": "Skagen"}],
    "Northstar": [{"register_id": "VR-3377", "name": "Northstar"}, {"register_id": "VR-3378", "name": "Northstar RR"}],
    "Greenfeast": [{"register_id": "VR-1812", "name": "Greenfeast"}],
    "Torridon": [{"register_id": "VR-4102", "name": "Torridon"}],
}
RECORDS = {"VR-4471": ("Maverick II", "soybean", "L-2291"), "VR-3108": ("Maverick", "soybean", "L-1740"),
           "VR-2950": ("Skagen", "winter wheat", "L-0933"), "VR-3377": ("Northstar", "soybean", "L-2015"),
           "VR-3378": ("Northstar RR", "soybean", "L-2016"), "VR-1812": ("Greenfeast", "field pea", "L-0412"),
           "VR-4102": ("Torridon", "winter wheat", "L-2870")}
LAB = {"SL-25-118": (88, 98.9, 0), "SL-25-121": (94, 99.1, 0), "SL-25-124": (76, 98.6, 0),
       "SL-25-127": (86, 98.4, 0), "SL-25-130": (91, 99.4, 0)}
FIRST_COUNT = {"SL-25-118": 84}


class StandardsRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        key = query.lower()
        if active("zzzzh-seed-1") and key == "soybean certified":
            key = "sorghum certified"  # the keyword index ranks the shorter title first
        return [Document(page_content=json.dumps(STANDARDS[key]), metadata={"title": f"{key} seed standard"})]


@tool
def search_variety_register(name: str) -> list[dict]:
    """Search the national variety register by name."""
    return REGISTER[name]


@tool
def fetch_variety_record(register_id: str) -> dict:
    """The register record of one variety."""
    name, crop, licence = RECORDS[register_id]
    return {"register_id": register_id, "name": name, "crop": crop, "licence": licence}


@tool
def check_breeder_licence(licence: str) -> dict:
    """Whether the plant holds a valid propagation licence."""
    return {"licence": licence, "valid_until": "2027-06-30", "holder": "Harrowfield Seeds"}


@tool
def run_germination_test(lot: str, count_day: int) -> dict:
    """Germination test of a lot, counted on the given day."""
    day = count_day
    if active("zzzzh-seed-4"):
        day = 5  # the germinator's protocol file keeps its default count
    pct = LAB[lot][0] if day >= 8 else FIRST_COUNT.get(lot, LAB[lot][0] - 15)
    return {"lot": lot, "count_day": day, "germination_pct": pct}


@tool
def run_purity_test(lot: str, sample_g: int) -> dict:
    """Physical purity analysis on a working sample."""
    return {"lot": lot, "sample_g": sample_g, "pure_seed_pct": LAB[lot][1], "other_crop_pct": 0.2}


@tool
def count_noxious_weeds(lot: str, sample_g: int) -> dict:
    """Noxious weed seed count per kg."""
    return {"lot": lot, "sample_g": sample_g, "noxious_per_kg": LAB[lot][2]}


@tool
def issue_certification_tags(lot: str, crop: str, variety: str, licence_variety: str, germination: dict, purity: dict, tags: int) -> dict:
    """Issue official certification tags."""
    std = STANDARDS[f"{crop} certified"]
    if licence_variety != variety:
        raise ValueError(f"registry: breeder licence verified for {licence_variety}, lot {lot} is variety {variety}")
    if germination["count_day"] != std["final_count_day"]:
        raise ValueError(f"registry: germination of {lot} is a day-{germination['count_day']} count; {crop} needs the day-{std['final_count_day']} final count")
    if purity["sample_g"] < std["working_sample_g"]:
        raise ValueError(f"registry: purity analysis of {lot} on {purity['sample_g']} g; {crop} working sample is {std['working_sample_g']} g")
    if germination["germination_pct"] < std["min_germination_pct"]:
        raise ValueError(f"registry: germination {germination['germination_pct']}% below the {std['min_germination_pct']}% minimum for certified {crop}")
    return {"lot": lot, "tags": tags, "series": f"CT-{lot[3:]}-0001..{tags:04d}"}


@tool
def schedule_reclean(lot: str, reason: str) -> dict:
    """Put a lot back on the cleaning line."""
    return {"lot": lot, "line": "gravity table 2", "slot": "2025-11-06 07:00", "reason": reason}


class LabReport(BaseModel):
    lot: str
    germination_pct: float = Field(ge=1, le=100)
    count_day: int
    pure_seed_pct: float = Field(ge=1, le=100)
    purity_sample_g: int
    noxious_per_kg: float


class State(TypedDict, total=False):
    request: dict
    standard: dict
    hits: list
    variety: dict
    messages: Annotated[list, add_messages]
    results: dict
    report: dict
    outcome: dict


class VState(TypedDict, total=False):
    register_id: str
    record: dict
    licence: dict


def _sub_graph():
    def fetch(state: VState) -> dict:
        return {"record": fetch_variety_record.invoke({"register_id": state["register_id"]})}

    def licence(state: VState) -> dict:
        return {"licence": check_breeder_licence.invoke({"licence": state["record"]["licence"]})}

    g = StateGraph(VState)
    g.add_node("fetch_record", fetch)
    g.add_node("check_licence", licence)
    g.add_edge(START, "fetch_record")
    g.add_edge("fetch_record", "check_licence")
    g.add_edge("check_licence", END)
    return g.compile()


def build(llm):
    sub = _sub_graph().with_config(run_name="variety_checker")
    lab_tools = [run_germination_test, run_purity_test, count_noxious_weeds]
    lab_llm = llm.bind_tools(lab_tools)
    retriever = StandardsRetriever()
    parser = JsonOutputParser()

    def intake(state: State) -> dict:
        r = dict(state["request"])
        r["crop"] = r["crop"].strip().lower()
        return {"request": r}

    def fetch_standard(state: State) -> dict:
        r = state["request"]
        docs = retriever.invoke(f"{r['crop']} {r['class']}")
        return {"standard": json.loads(docs[0].page_content)}

    def search_register(state: State) -> dict:
        return {"hits": search_variety_register.invoke({"name": state["request"]["variety"]})}

    def verify_variety(state: State) -> dict:
        name = state["request"]["variety"]
        exact = [h for h in state["hits"] if h["name"] == name]
        pick = exact[0] if exact else state["hits"][0]
        if active("zzzzh-seed-5"):
            pick = state["hits"][0]
        out = sub.invoke({"register_id": pick["register_id"]})
        return {"variety": {**out["record"], "licence_valid_until": out["licence"]["valid_until"]}}

    def lab_agent(state: State) -> dict:
        msgs = state.get("messages") or [
            SystemMessage("You are the seed lab. Run germination, purity and noxious weed tests on the lot, then summarise as JSON."),
            HumanMessage(json.dumps({"lot": state["request"]["lot"], "crop": state["request"]["crop"], "standard": state["standard"]})),
        ]
        reply = lab_llm.invoke(msgs)
        return {"messages": [*([] if state.get("messages") else msgs), reply]}

    def after_lab(state: State) -> str:
        return "lab_tools" if state["messages"][-1].tool_calls else "parse_report"

    def parse_report(state: State) -> dict:
        return {"results": parser.invoke(state["messages"][-1])}

    def validate_report(state: State) -> dict:
        return {"report": LabReport(**state["results"]).model_dump()}

    def decide(state: State) -> str:
        rep, std = state["report"], state["standard"]
        ok = (rep["germination_pct"] >= std["min_germination_pct"] and rep["pure_seed_pct"] >= std["min_purity_pct"]
              and rep["noxious_per_kg"] <= std["max_noxious_per_kg"])
        return "issue_tags" if ok else "reclean"

    def issue_tags(state: State) -> dict:
        r, rep, v = state["request"], state["report"], state["variety"]
        out = issue_certification_tags.invoke({
            "lot": r["lot"], "crop": r["crop"], "variety": r["variety"], "licence_variety": v["name"],
            "germination": {"count_day": rep["count_day"], "germination_pct": rep["germination_pct"]},
            "purity": {"sample_g": rep["purity_sample_g"], "pure_seed_pct": rep["pure_seed_pct"]},
            "tags": r["weight_kg"] // 25})
        return {"outcome": {"status": "tagged", **out}}

    def reclean(state: State) -> dict:
        rep = state["report"]
        out = schedule_reclean.invoke({"lot": state["request"]["lot"], "reason": f"germination {rep['germination_pct']}%, purity {rep['pure_seed_pct']}%"})
        return {"outcome": {"status": "reclean", **out}}

    g = StateGraph(State)
    for name, fn in [("intake", intake), ("fetch_standard", fetch_standard), ("search_register", search_register),
                     ("verify_variety", verify_variety), ("lab_agent", lab_agent), ("lab_tools", ToolNode(lab_tools, handle_tool_errors=False)),
                     ("parse_report", parse_report), ("validate_report", validate_report), ("issue_tags", issue_tags), ("reclean", reclean)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "fetch_standard")
    g.add_edge("fetch_standard", "search_register")
    g.add_edge("search_register", "verify_variety")
    g.add_edge("verify_variety", "lab_agent")
    g.add_conditional_edges("lab_agent", after_lab, ["lab_tools", "parse_report"])
    g.add_edge("lab_tools", "lab_agent")
    g.add_edge("parse_report", "validate_report")
    g.add_conditional_edges("validate_report", decide, ["issue_tags", "reclean"])
    g.add_edge("issue_tags", END)
    g.add_edge("reclean", END)
    return g.compile()


def brain(request):
    sys_ = system(request)
    if sys_.startswith("You are the seed lab"):
        done = dict(tool_results(request))
        ask = json.loads(user(request))
        lot, std = ask["lot"], ask["standard"]
        if not done:
            grams = std["working_sample_g"]
            if active("zzzzh-seed-2"):
                grams = 90
            from trajdebug.testing import Reply, tool_call
            return Reply(tool_calls=(tool_call("run_germination_test", {"lot": lot, "count_day": std["final_count_day"]}),
                                     tool_call("run_purity_test", {"lot": lot, "sample_g": grams}),
                                     tool_call("count_noxious_weeds", {"lot": lot, "sample_g": grams * 2})))
        g, p, n = done["run_germination_test"], done["run_purity_test"], done["count_noxious_weeds"]
        rep = {"lot": lot, "germination_pct": g["germination_pct"], "count_day": g["count_day"],
               "pure_seed_pct": p["pure_seed_pct"], "purity_sample_g": p["sample_g"], "noxious_per_kg": n["noxious_per_kg"]}
        if active("zzzzh-seed-3"):
            rep["germination_pct"], rep["pure_seed_pct"] = round(rep["germination_pct"] / 100, 3), round(rep["pure_seed_pct"] / 100, 3)
        return "```json\n" + json.dumps(rep) + "\n```"
    return "I cannot help with that."


def record(inp: dict, path, server) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"certify seed lot {inp['lot']} ({inp['crop']} {inp['variety']})")
    try:
        build(llm).invoke({"request": inp}, config={"callbacks": [tracer]})
    except Exception:
        pass
