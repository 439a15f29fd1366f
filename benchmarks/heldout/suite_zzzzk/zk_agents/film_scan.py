"""Archive film digitisation lab: plan and book the scan of a collection of reels (LangGraph route)."""

from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

import common
from trajdebug.integrations.langchain import TrajdebugTracer

RUN_NAME = "film-scan-lab"
ROUTE = "langgraph"
DOMAIN = "archive film digitisation lab: reel intake, condition, scan plan, scanner booking, storage"
SHAPE = "StateGraph: tool-calling intake with pagination, per-reel condition tool loop, planner LLM + JSON parser, conditional routing to two scanner nodes, storage estimate, reservation, checks, ticket LLM"
SWITCH = None

COLLECTIONS = {
    "COL-ORKNEY": [("R-101", "16mm", 400, 0.3, "2K access"), ("R-102", "16mm", 400, 0.5, "2K access"),
                   ("R-103", "16mm", 800, 0.4, "4K restoration master")],
    "COL-MILLTOWN": [("R-201", "35mm", 1000, 0.6, "4K restoration master"), ("R-202", "35mm", 1000, 1.4, "4K restoration master"),
                     ("R-203", "35mm", 600, 0.7, "2K access"), ("R-204", "35mm", 900, 0.5, "2K access")],
    "COL-HARBOUR": [("R-301", "16mm", 1200, 1.6, "2K access"), ("R-302", "16mm", 400, 0.2, "2K access"),
                    ("R-303", "16mm", 400, 0.3, "2K access"), ("R-304", "16mm", 800, 0.9, "4K restoration master")],
    "COL-VARIETY": [("R-401", "35mm", 1000, 0.2, "4K restoration master"), ("R-402", "35mm", 1000, 0.3, "4K restoration master")],
    "COL-DOCKS": [("R-501", "16mm", 400, 0.4, "2K access"), ("R-502", "16mm", 600, 1.2, "4K restoration master"),
                  ("R-503", "16mm", 400, 0.6, "2K access"), ("R-504", "16mm", 400, 0.8, "2K access"),
                  ("R-505", "16mm", 1200, 0.5, "2K access")],
}
ARCHIVED_REPORTS = {"R-202": 0.4, "R-301": 0.5, "R-502": 0.3}
INPUTS = [{"job": f"SCAN-{n}", "collection": c, "manifest_count": len(COLLECTIONS[c])}
          for n, c in zip((8801, 8802, 8803, 8804, 8805), COLLECTIONS)]
FRAMES_PER_FOOT = {"16mm": 40, "35mm": 16}
MB_PER_FRAME = {"2K": 12.5, "4K": 50.0}


@tool
def list_reels(collection_id: str, page: int = 1) -> dict:
    """List the reels of an archive collection, three per page."""
    reels = COLLECTIONS[collection_id]
    chunk = reels[(page - 1) * 3: page * 3]
    more = page * 3 < len(reels)
    if SWITCH == "zk-film-3":
        more = False
    return {"collection": collection_id, "page": page, "reels": [r[0] for r in chunk], "next_page": page + 1 if more else None}


@tool
def read_condition_report(reel_id: str) -> dict:
    """Read the latest condition report of a reel (gauge, length, shrinkage, deliverable)."""
    rec = next(r for rs in COLLECTIONS.values() for r in rs if r[0] == reel_id)
    shrink, dated = rec[3], "2025-03-11"
    if SWITCH == "zk-film-1" and reel_id in ARCHIVED_REPORTS:
        shrink, dated = ARCHIVED_REPORTS[reel_id], "2019-06-02"
    return {"reel": reel_id, "gauge": rec[1], "length_ft": rec[2], "shrinkage_pct": shrink,
            "deliverable": rec[4], "report_date": dated}


@tool
def mount_reel(reel_id: str, scanner: str, resolution: str) -> dict:
    """Mount a reel on a scanner; the scanner's gate measures the film before it runs."""
    rec = next(r for rs in COLLECTIONS.values() for r in rs if r[0] == reel_id)
    if scanner == "sprocket-10k" and rec[3] > 1.0:
        raise RuntimeError(f"sprocket-10k gate refused {reel_id}: measured shrinkage {rec[3]}% is above the 1.0% "
                           f"sprocket limit")
    return {"reel": reel_id, "scanner": scanner, "resolution": resolution, "mounted": True}


@tool
def reserve_storage(job: str, terabytes: float) -> dict:
    """Reserve space in the archive's storage pool."""
    if terabytes > 40:
        raise RuntimeError(f"storage pool has 40 TB free; {job} asked for {terabytes:,.1f} TB")
    return {"job": job, "reserved_tb": terabytes, "pool": "ARCH-POOL-2"}


def brain(request):
    system = common.system_of(request)
    user = common.last_user(request)
    if system.startswith("You run intake"):
        return common.Reply(tool_calls=(common.tool_call("list_reels", {"collection_id": json.loads(user)["collection"]}),))
    if system.startswith("You plan film scans"):
        reels = json.loads(user)["reels"]
        plan = []
        for r in reels:
            res = "4K" if r["deliverable"].startswith("4K") else "2K"
            if SWITCH == "zk-film-5":
                res = "2K"
            plan.append({"reel": r["reel"], "resolution": res, "fps": 24 if r["gauge"] == "35mm" else 18})
        return json.dumps({"plan": plan, "note": "scan at native gauge"})
    if system.startswith("Write the job ticket"):
        return "Job ticket: reels mounted, storage reserved, deliverables confirmed."
    return "ok"


common.Reply = __import__("trajdebug.testing", fromlist=["Reply"]).Reply
common.tool_call = __import__("trajdebug.testing", fromlist=["tool_call"]).tool_call


class State(TypedDict, total=False):
    job: str
    collection: str
    manifest_count: int
    reels: list
    reports: Annotated[list, operator.add]
    plan: list
    mounted: list
    storage_tb: float
    reservation: dict
    ticket: str


def build(llm):
    parser = JsonOutputParser()

    def intake(state):
        ai = llm.bind_tools([list_reels]).invoke([
            SystemMessage("You run intake for the scan lab. Use list_reels."),
            HumanMessage(json.dumps({"job": state["job"], "collection": state["collection"]}))])
        call = ai.tool_calls[0]
        reels, page = [], 1
        while True:
            msg = list_reels.invoke({**call, "args": {**call["args"], "page": page}})
            answer = json.loads(msg.content)
            reels.extend(answer["reels"])
            if not answer["next_page"]:
                break
            page = answer["next_page"]
        return {"reels": reels}

    def inspect(state):
        out = []
        for reel in state["reels"]:
            out.append(read_condition_report.invoke({"reel_id": reel}))
        return {"reports": out}

    def plan(state):
        chain = llm | parser
        answer = chain.invoke([SystemMessage("You plan film scans. Answer JSON {plan: [{reel, resolution, fps}]}."),
                               HumanMessage(json.dumps({"reels": state["reports"]}))])
        return {"plan": answer["plan"]}

    def route_scanner(state):
        worst = max(r["shrinkage_pct"] for r in state["reports"])
        branch = "capstan_scan" if worst > 1.0 else "sprocket_scan"
        if SWITCH == "zk-film-4":
            branch = "sprocket_scan"
        return branch

    def mount_all(state, scanner):
        out = []
        for p in state["plan"]:
            out.append(mount_reel.invoke({"reel_id": p["reel"], "scanner": scanner, "resolution": p["resolution"]}))
        return {"mounted": out}

    def sprocket_scan(state):
        return mount_all(state, "sprocket-10k")

    def capstan_scan(state):
        return mount_all(state, "capstan-4k")

    def estimate_storage(state):
        by_reel = {r["reel"]: r for r in state["reports"]}
        mb = 0.0
        for p in state["plan"]:
            r = by_reel[p["reel"]]
            mb += r["length_ft"] * FRAMES_PER_FOOT[r["gauge"]] * MB_PER_FRAME[p["resolution"]]
        tb = mb / 1_000_000
        if SWITCH == "zk-film-2":
            tb = mb / 1_000
        return {"storage_tb": round(tb * 1.2, 2)}

    def reserve(state):
        return {"reservation": reserve_storage.invoke({"job": state["job"], "terabytes": state["storage_tb"]})}

    def reconcile_manifest(state):
        if len(state["reels"]) != state["manifest_count"]:
            raise ValueError(f"manifest for {state['collection']} lists {state['manifest_count']} reels; "
                             f"the job covers {len(state['reels'])}")
        return {}

    def deliverables_check(state):
        res = {p["reel"]: p["resolution"] for p in state["plan"]}
        for r in state["reports"]:
            if r["deliverable"].startswith("4K") and res[r["reel"]] != "4K":
                raise ValueError(f"{r['reel']} is due as a 4K restoration master but is planned at {res[r['reel']]}")
        return {}

    def ticket(state):
        ai = llm.invoke([SystemMessage("Write the job ticket."),
                         HumanMessage(json.dumps({"job": state["job"], "mounted": state["mounted"],
                                                  "reservation": state["reservation"]}))])
        return {"ticket": ai.content}

    g = StateGraph(State)
    for fn in (intake, inspect, plan, sprocket_scan, capstan_scan, estimate_storage, reserve, reconcile_manifest,
               deliverables_check, ticket):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "inspect")
    g.add_edge("inspect", "plan")
    g.add_conditional_edges("plan", route_scanner, ["sprocket_scan", "capstan_scan"])
    g.add_edge("sprocket_scan", "estimate_storage")
    g.add_edge("capstan_scan", "estimate_storage")
    g.add_edge("estimate_storage", "reserve")
    g.add_edge("reserve", "reconcile_manifest")
    g.add_edge("reconcile_manifest", "deliverables_check")
    g.add_edge("deliverables_check", "ticket")
    g.add_edge("ticket", END)
    return g.compile()


_GRAPH = None


def record(inp: dict, path: str) -> None:
    global _GRAPH
    if _GRAPH is None:
        llm = ChatOpenAI(base_url=common.SERVER.base_url, api_key="not-needed", model=common.MODEL, max_retries=0)
        _GRAPH = build(llm)
    tracer = TrajdebugTracer(path=path, name=RUN_NAME, task=f"digitise {inp['collection']} ({inp['job']})")
    try:
        _GRAPH.invoke(dict(inp), config={"callbacks": [tracer]})
    except (ValueError, RuntimeError):
        pass


CASES = [
    {"case": "zk-film-1", "input": 1, "switch": "zk-film-1", "fault_kind": "stale_data",
     "root": ("read_condition_report", 2, "tool"), "failure": ("mount_reel", 2),
     "description": "The condition lookup serves R-202's 2019 report (0.4% shrinkage) instead of the 2025 one "
                    "(1.4%), so the collection is routed to the sprocket scanner, whose gate refuses the reel."},
    {"case": "zk-film-2", "input": 3, "switch": "zk-film-2", "fault_kind": "unit_error",
     "root": ("estimate_storage", 1, "other"), "failure": ("reserve_storage", 1),
     "description": "The storage estimate divides megabytes by 1,000 and labels the gigabytes as terabytes, so "
                    "the reservation asks the pool for a thousand times the space."},
    {"case": "zk-film-3", "input": 4, "switch": "zk-film-3", "fault_kind": "truncated_result",
     "root": ("list_reels", 1, "tool"), "failure": ("reconcile_manifest", 1),
     "description": "The reel listing returns its first page of three without a next-page token, so two of the "
                    "five reels never enter the job and the manifest reconciliation stops it."},
    {"case": "zk-film-4", "input": 2, "switch": "zk-film-4", "fault_kind": "wrong_routing",
     "root": ("route_scanner", 1, "other"), "failure": ("mount_reel", 1),
     "description": "The scanner router sends a collection with a 1.6% shrunk reel to the sprocket scanner "
                    "instead of the capstan scanner, and the sprocket gate refuses it."},
    {"case": "zk-film-5", "input": 0, "switch": "zk-film-5", "fault_kind": "plan_error",
     "root": ("ChatOpenAI", 2, "llm"), "failure": ("deliverables_check", 1),
     "description": "The scan planner plans every reel at 2K, including R-103 which is due as a 4K restoration "
                    "master, and the deliverables check stops the job."},
]
